/* Kernels of (k, epsilon)-anonymisation (anonymise_keps()) around its Mondrian classes
 * (mondrian.h): the Laplace transform of a uniform draw, the per-class diameters, and the
 * linking and c-confidence counts of section V of the (k, epsilon) paper. Pure C: no R
 * API (the uniform draws come from R's RNG in keps_glue.c); memory and interrupt checks
 * come from the caller's host (host.h). */
#ifndef DETANON_KEPS_H
#define DETANON_KEPS_H

#include <stddef.h>
#include "host.h"

/* Laplace(0, b) draw from a uniform u in (0, 1) by the inverse CDF. */
double laplace_from_unif(double u, double b);

typedef struct {
    double v;
    ptrdiff_t i;
} keps_pair;

/* One equivalence class of m records, p variables, row-major: o[i * p + v] original
 * values, q[i * p + v] released values.
 *
 * link_class: linked[i] = 1 when no original o_j (j != i) is strictly closer to q_i than
 * o_i is, in squared Euclidean distance sum_v ((q_iv - o_jv) / s[v])^2 (s[v] > 0), else 0.
 * Ties count as links, as in the indicator of section V-B.
 *
 * confident_counts: l[i] = number of j with |q_iv - o_jv| <= r[v] for every v, counted up
 * to `cap` (the count stops there).
 *
 * Both sort the originals by their first variable: pairs is scratch of m entries. */
void link_class(const double *o, const double *q, ptrdiff_t m, int p, const double *s,
                keps_pair *pairs, int *linked);
void confident_counts(const double *o, const double *q, ptrdiff_t m, int p, const double *r,
                      ptrdiff_t cap, keps_pair *pairs, int *l);


/* Per class and column of y (n x p): the diameter max - min (0 for an empty class) into
 * diam (C x p, column-major); cls[i] is the 1-based class of row i (1..C). */
void keps_diameters(const double *y, ptrdiff_t n, int p, const int *cls, ptrdiff_t C,
                    double *diam, const kernel_host *host);

/* link_class() (cap < 0) or confident_counts() (cap >= 0) on every class: o, q n x p
 * original and released values (column-major, rows aligned); rows (0-based) grouped by
 * class, class c at rows[off[c]..off[c + 1]); par C x p per-class scales (link) or
 * half-widths (confident). out (n) receives the result per row. The host pauses every
 * so many rows (with off[c + 1] rows done). */
void keps_per_class(const double *o, const double *q, ptrdiff_t n, int p, const ptrdiff_t *rows,
                    const ptrdiff_t *off, ptrdiff_t C, const double *par, ptrdiff_t cap,
                    int *out, const kernel_host *host);

#endif
