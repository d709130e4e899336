/* Glue for risk_rmd(): neighbour counts on a kd-tree, memory O(n), on standardised matrices
 * prepared and validated in R (the links of risk_linkage() are in rank_glue.c). */
#include <stdint.h>
#include "detanon.h"
#include "kdtree.h"
#include "risk.h"
#include "knn.h"
#include "threads.h"
#include "progress.h"

#define RISK_LEAF_SIZE 8
/* Queries between two interrupt checks (and progress updates). */
#define RISK_CHUNK ((ptrdiff_t) 1 << 16)

/* For each 1-based row i in `query`: the number of OTHER rows of z (n x d) within Euclidean
 * distance w of row i, capped at m. `progress`: TRUE to show a progress bar. */
SEXP ffi_rmd_count(SEXP z, SEXP query, SEXP w_, SEXP m_, SEXP nthreads, SEXP progress)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), m = Rf_asInteger(m_), nt = detanon_threads(nthreads);
    const double r2 = rk_sqrt_threshold(Rf_asReal(w_));
    const R_xlen_t nq = XLENGTH(query);
    SEXP out = PROTECT(Rf_allocVector(INTSXP, nq));
    if (nq == 0) { UNPROTECT(1); return out; }
    int *o = INTEGER(out);
    const int *qi = INTEGER_RO(query);
    if (n == 0 || d == 0 || m < 1) Rf_error("internal error: bad input to ffi_rmd_count");
    const double *zx = REAL_RO(z);

    kd_tree t = detanon_tree(n, d, RISK_LEAF_SIZE);
    kd_build(&t, zx, n, NULL);
    R_CheckUserInterrupt();
    /* slot[r] = index of row r in `query` + 1 (0: not queried); queries are then run in
     * tree order, so that consecutive queries touch the same part of the tree */
    R_xlen_t *slot = (R_xlen_t *) R_alloc(n, sizeof(R_xlen_t));
    for (ptrdiff_t r = 0; r < n; r++) slot[r] = 0;
    for (R_xlen_t i = 0; i < nq; i++) {
        if (qi[i] < 1 || qi[i] > n) Rf_error("internal error: query row out of range");
        slot[qi[i] - 1] = i + 1;
    }
    for (R_xlen_t i = 0; i < nq; i++) o[i] = 0;
    kd_item *stacks = (kd_item *) R_alloc((size_t) nt * KD_STACK_MAX, sizeof(kd_item));
    const int ntq = threads_for(nt, (double) nq);
    SEXP bar = PROTECT(progress_new(progress, (double) n, "Counting neighbours"));
    for (ptrdiff_t from = 0; from < n; from += RISK_CHUNK) {
        ptrdiff_t to = from + RISK_CHUNK < n ? from + RISK_CHUNK : n;
#ifdef _OPENMP
#pragma omp parallel for num_threads(ntq) schedule(dynamic, 256)
#endif
        for (ptrdiff_t p = from; p < to; p++) {
            R_xlen_t s = slot[t.row[p]];
            if (s == 0) continue;
            /* the query itself is in the tree at distance 0: count m + 1, drop it */
            ptrdiff_t c = kd_count_within(&t, t.pts + (size_t) p * d, r2, (ptrdiff_t) m + 1,
                                          stacks + (size_t) THREAD_ID * KD_STACK_MAX);
            o[s - 1] = (int) (c > 0 ? c - 1 : 0);
        }
        R_CheckUserInterrupt();
        progress_update(bar, to);
    }
    progress_done(bar);
    /* a row queried more than once was answered in its last slot: copy it to the others */
    for (R_xlen_t i = 0; i < nq; i++) o[i] = o[slot[qi[i] - 1] - 1];
    UNPROTECT(2);
    return out;
}
