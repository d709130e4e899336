/* Kernels of attack_fellegi_sunter() (fellegi.h). */
#include <math.h>
#include "fellegi.h"
#include "threads.h"

#define FS_CHUNK 65536

/* The levels of the pair whose numeric fields are xo[f * so], xm[f * sm] and categorical
 * fields co[f * so], cm[f * sm], and its code and counts as fs_pair_levels() describes them. */
static inline void pair_levels(const double *xo, ptrdiff_t so, const double *xm, ptrdiff_t sm, int nnum,
                               const int *co, ptrdiff_t sco, const int *cm, ptrdiff_t scm, int ncat, int na,
                               const double *bands, int nb, const double *mult, double *code, double *counts)
{
    double c = 1;
    ptrdiff_t off = 0;
    for (int f = 0; f < nnum; f++) {
        const double x = fabs(xo[f * so] - xm[f * sm]);
        int l = 0;
        if (isnan(x)) l = 1;
        else while (l < nb && bands[l] < x) l++;
        if (code) c = c + l * mult[f];
        if (counts) counts[off + l] += 1;
        off += nb + 1;
    }
    for (int f = 0; f < ncat; f++) {
        const int a = co[f * sco], b = cm[f * scm];
        const int l = !(a != na && b != na && a == b);
        if (code) c = c + l * mult[nnum + f];
        if (counts) counts[off + l] += 1;
        off += 2;
    }
    if (code) *code = c;
}

double fs_pair_code(const void *fields, const double *q, ptrdiff_t i, const double *p, ptrdiff_t j)
{
    const fs_fields *F = (const fs_fields *) fields;
    double c;
    const int ncat = F->ncat;
    pair_levels(q, 1, p, 1, F->nnum, ncat ? F->cat_o + i : NULL, F->no, ncat ? F->cat_m + j : NULL, F->nm, ncat,
                F->na, F->bands, F->nb, F->mult, &c, NULL);
    return c;
}

void fs_pair_levels(const double *num_o, ptrdiff_t no, const double *num_m, ptrdiff_t nm, int nnum,
                    const int *cat_o, const int *cat_m, int ncat, int na,
                    const int *pi, const int *pj, ptrdiff_t np, const double *bands, int nb,
                    const double *mult, double *code, double *counts, int nt, const kernel_host *host)
{
    for (ptrdiff_t from = 0; from < np; from += FS_CHUNK) {
        const ptrdiff_t to = from + FS_CHUNK < np ? from + FS_CHUNK : np;
        /* the codes are per pair: any thread count gives the same; the counts add up serially */
        const int nts = counts ? 1 : threads_for(nt, (double) (to - from));
        (void) nts;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nts) schedule(static)
#endif
        for (ptrdiff_t p = from; p < to; p++) {
            const ptrdiff_t i = pi[p] - 1, j = pj[p] - 1;
            pair_levels(num_o + i, no, num_m + j, nm, nnum, ncat ? cat_o + i : NULL, no, ncat ? cat_m + j : NULL,
                        nm, ncat, na, bands, nb, mult, code ? code + p : NULL, counts);
        }
        host_pause(host, to);
    }
}

void fs_claims(const int *pi, const int *pj, const int *at, ptrdiff_t np, const double *w,
               const double *post, ptrdiff_t n, double *success, double *confidence,
               const kernel_host *host)
{
    double *top = host->alloc((size_t) n, sizeof(double));
    double *conf = host->alloc((size_t) n, sizeof(double));
    int *n_top = host->alloc((size_t) n, sizeof(int));
    char *own = host->alloc((size_t) n, 1);
    for (ptrdiff_t i = 0; i < n; i++) {
        top[i] = conf[i] = -INFINITY;
        n_top[i] = 0;
        own[i] = 0;
    }
    for (ptrdiff_t p = 0; p < np; p++) {
        const double x = w[at[p] - 1];
        if (x > top[pi[p] - 1]) top[pi[p] - 1] = x;
    }
    host_pause(host, np);
    for (ptrdiff_t p = 0; p < np; p++) {
        const ptrdiff_t i = pi[p] - 1;
        const double x = w[at[p] - 1];
        if (!(x >= top[i] - 1e-12 * (1 + fabs(x)))) continue;
        n_top[i]++;
        if (pj[p] == pi[p]) own[i] = 1;
        if (post[at[p] - 1] > conf[i]) conf[i] = post[at[p] - 1];
    }
    for (ptrdiff_t i = 0; i < n; i++) {
        if (!n_top[i]) continue;
        success[i] = own[i] ? 1.0 / n_top[i] : 0;
        confidence[i] = conf[i];
    }
}

void fs_block_pairs(const int *rows, ptrdiff_t nrows, const int *id, ptrdiff_t n, int n_blocks, ptrdiff_t size,
                    double (*unif_index)(double), int *pi, int *pj, const kernel_host *host)
{
    /* counting sorts: block b's records at members[start[b]..start[b + 1]) in increasing row
     * order, its pairs at order[first[b]..first[b + 1]) in increasing t */
    ptrdiff_t *start = host->alloc((size_t) n_blocks + 2, sizeof(ptrdiff_t));
    ptrdiff_t *first = host->alloc((size_t) n_blocks + 2, sizeof(ptrdiff_t));
    ptrdiff_t *fill = host->alloc((size_t) n_blocks + 2, sizeof(ptrdiff_t));
    int *members = host->alloc((size_t) n, sizeof(int));
    int *order = host->alloc((size_t) size, sizeof(int));
    for (int b = 0; b <= n_blocks + 1; b++) start[b] = first[b] = 0;
    for (ptrdiff_t r = 0; r < n; r++) start[id[r] + 1]++;
    for (ptrdiff_t t = 0; t < size; t++) {
        pi[t] = rows[(ptrdiff_t) unif_index((double) nrows)];
        first[id[pi[t] - 1] + 1]++;
    }
    for (int b = 0; b <= n_blocks; b++) {
        start[b + 1] += start[b];
        first[b + 1] += first[b];
    }
    for (int b = 0; b <= n_blocks; b++) fill[b] = start[b];
    for (ptrdiff_t r = 0; r < n; r++) members[fill[id[r]]++] = (int) r + 1;
    for (int b = 0; b <= n_blocks; b++) fill[b] = first[b];
    for (ptrdiff_t t = 0; t < size; t++) order[fill[id[pi[t] - 1]]++] = (int) t;
    host_pause(host, size);
    for (ptrdiff_t e = 0; e < size; e++) {
        const int t = order[e], b = id[pi[t] - 1];
        pj[t] = members[start[b] + (ptrdiff_t) unif_index((double) (start[b + 1] - start[b]))];
    }
}
