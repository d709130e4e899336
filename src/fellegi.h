/* Kernels of attack_fellegi_sunter(): the comparison pattern of pairs and the claims from
 * the pairs' weights. Pure C: no R API; interrupt checks come from the caller's host
 * (host.h). */
#ifndef DETANON_FELLEGI_H
#define DETANON_FELLEGI_H

#include <stddef.h>
#include "host.h"

/* For pair p (p < np) of original row pi[p] and released row pj[p] (1-based, as R gives them): the level of
 * every field, numeric fields first (f < nnum: the number of the nb increasing bands below
 * |num_o[pi, f] - num_m[pj, f]|, columns of no rows and nm rows; 1 when the distance is
 * NaN), then categorical (f < ncat: 0 when cat_o[pi, f] and cat_m[pj, f] are equal and
 * neither is missing, `na`; else 1). With `code` non-NULL: code[p] = 1 + sum over fields
 * of level * mult[f] (the sum taken in field order). With `counts` non-NULL: the pairs at
 * each level of each field, counts[off[f] + level] (off: the fields' levels one after
 * another, numeric fields nb + 1 levels, categorical 2), added to what counts holds. The
 * codes are computed over nt threads (the counts on one). */
void fs_pair_levels(const double *num_o, ptrdiff_t no, const double *num_m, ptrdiff_t nm, int nnum,
                    const int *cat_o, const int *cat_m, int ncat, int na,
                    const int *pi, const int *pj, ptrdiff_t np, const double *bands, int nb,
                    const double *mult, double *code, double *counts, int nt, const kernel_host *host);

/* The fields of fs_pair_levels() for fs_pair_code(): categorical codes cat_o (no rows) and
 * cat_m (nm rows), ncat columns each, missing `na`; nnum numeric fields; bands and mult. */
typedef struct {
    const int *cat_o, *cat_m;
    ptrdiff_t no, nm;
    int nnum, ncat, na, nb;
    const double *bands, *mult;
} fs_fields;

/* The code of fs_pair_levels() of the pair of original row i and released row j (0-based)
 * whose numeric fields are q[0..nnum) and p[0..nnum) (the same values as num_o[i, ] and
 * num_m[j, ], so the same code, bit for bit); `fields` points to an fs_fields. The pair
 * function of nn2_run_knn_cells() for the candidates of the attack. */
double fs_pair_code(const void *fields, const double *q, ptrdiff_t i, const double *p, ptrdiff_t j);

/* The claim of every original from its pairs (pair p: original pi[p], released pj[p],
 * 1-based rows <= n; weight w[at[p] - 1] and posterior post[at[p] - 1] of its pattern):
 * the pairs at the top weight of their original (w >= top - 1e-12 (1 + |w|)) are claimed,
 * success[i - 1] = 1 / (their number) when i's own record (pj = pi) is among them, else 0,
 * and confidence[i - 1] the largest posterior among them. Originals without a pair keep the values
 * the arrays hold. Scratch O(n) from the host. */
void fs_claims(const int *pi, const int *pj, const int *at, ptrdiff_t np, const double *w,
               const double *post, ptrdiff_t n, double *success, double *confidence,
               const kernel_host *host);

/* `size` random pairs of the same blocks (random_block_pairs()): first pi[t] = rows[u(nrows)]
 * for t = 0..size (rows: 1-based rows of the n records, whose block ids id[] are in
 * 1..n_blocks), then, block by block in increasing id and within a block in increasing t,
 * pj[t] = the u(m)-th of the m records of pi[t]'s block in increasing row order (1-based).
 * u(m): a uniform whole number in 0..m-1 from the caller's stream, drawn in this order (R's
 * R_unif_index(), as sample.int(m, replace = TRUE) draws). Scratch from the host. */
void fs_block_pairs(const int *rows, ptrdiff_t nrows, const int *id, ptrdiff_t n, int n_blocks, ptrdiff_t size,
                    double (*unif_index)(double), int *pi, int *pj, const kernel_host *host);

#endif
