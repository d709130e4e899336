/* Kernels of risk_rmd(); see risk.h. */
#include <math.h>
#include <stdint.h>
#include "risk.h"
#include "threads.h"

#define RISK_LEAF_SIZE 8
/* Queries between two pauses (interrupt checks and progress updates). */
#define RISK_CHUNK ((ptrdiff_t) 1 << 16)

double rk_sqrt_threshold(double w)
{
    if (!(w >= 0.0)) return -1.0; /* negative or NaN: no distance qualifies */
    double r2 = w * w;
    /* w * w is within an ulp or two of the answer: step to it */
    while (sqrt(r2) > w) r2 = nextafter(r2, 0.0);
    while (r2 < HUGE_VAL && sqrt(nextafter(r2, HUGE_VAL)) <= w) r2 = nextafter(r2, HUGE_VAL);
    return r2;
}

const char *rk_rmd_count(const double *z, ptrdiff_t n, int d, const int *query, ptrdiff_t nq,
                         double w, int m, int nt, int *o, const kernel_host *host)
{
    const double r2 = rk_sqrt_threshold(w);
    /* slot[r] = index of row r in `query` + 1 (0: not queried); queries are then run in
     * tree order, so that consecutive queries touch the same part of the tree */
    ptrdiff_t *slot = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    for (ptrdiff_t r = 0; r < n; r++) slot[r] = 0;
    for (ptrdiff_t i = 0; i < nq; i++) {
        if (query[i] < 1 || query[i] > n) return "query row out of range";
        slot[query[i] - 1] = i + 1;
    }
    for (ptrdiff_t i = 0; i < nq; i++) o[i] = 0;
    kd_tree t = kd_new(n, d, RISK_LEAF_SIZE, host->alloc);
    kd_build(&t, z, n, NULL);
    host_pause(host, 0);
    kd_item *stacks = (kd_item *) host->alloc((size_t) nt * KD_STACK_MAX, sizeof(kd_item));
    const int ntq = threads_for(nt, (double) nq);
    for (ptrdiff_t from = 0; from < n; from += RISK_CHUNK) {
        ptrdiff_t to = from + RISK_CHUNK < n ? from + RISK_CHUNK : n;
#ifdef _OPENMP
#pragma omp parallel for num_threads(ntq) schedule(dynamic, 256)
#endif
        for (ptrdiff_t p = from; p < to; p++) {
            ptrdiff_t s = slot[t.row[p]];
            if (s == 0) continue;
            /* the query itself is in the tree at distance 0: count m + 1, drop it */
            ptrdiff_t c = kd_count_within(&t, t.pts + (size_t) p * d, r2, (ptrdiff_t) m + 1,
                                          stacks + (size_t) THREAD_ID * KD_STACK_MAX);
            o[s - 1] = (int) (c > 0 ? c - 1 : 0);
        }
        host_pause(host, to);
    }
    /* a row queried more than once was answered in its last slot: copy it to the others */
    for (ptrdiff_t i = 0; i < nq; i++) o[i] = o[slot[query[i] - 1] - 1];
    return NULL;
}
