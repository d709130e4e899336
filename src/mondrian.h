/* Pure kernels for (k, epsilon)-anonymisation: Mondrian partitioning, the Laplace
 * transform of a uniform draw, and the per-class linking and c-confidence counts of
 * section V of the seed paper. No R API: safe to call from threads and testable alone.
 * The caller owns every buffer (R_alloc in glue code). */
#ifndef DETANON_MONDRIAN_H
#define DETANON_MONDRIAN_H

#include <stddef.h>

typedef struct {
    ptrdiff_t begin, end;
} mdr_range;

/* Strict multidimensional Mondrian (LeFevre, DeWitt & Ramakrishnan 2006) over the n rows
 * rows[0..n) of the column-major matrix x (leading dimension ldx, d columns).
 * A partition is cut on the column with the widest normalised range
 * (max - min) * inv_range[j] (ties: lowest j). Two cuts are candidates: A puts x <= m on
 * the left, m the lower median (rank floor((size - 1) / 2), 0-based); B puts x < u on the
 * left, u the upper median (rank floor(size / 2)), which is the same cut as A unless
 * u == m. A cut is allowed only if both parts keep >= k rows; of two allowed cuts the
 * more balanced one is taken (ties: A). Reversing the coding of x (x -> -x) swaps A and
 * B, so the partition does not depend on the coding except at exact balance ties. If
 * neither cut is allowed,
 * the next widest column (with a positive range) is tried, and a partition with no
 * allowed cut becomes an equivalence class. Rows are permuted in place so that every
 * class is contiguous; ends[c] is the end position of class c, classes in depth-first
 * order (left before right), which depends on the values only, not on the row order.
 * Returns the number of classes. Requires n >= 1, k >= 1.
 * Scratch: vals (n doubles), tmp (n), stack (n / k + 2 ranges), ends (n / k + 1),
 * order (d ints), width (d doubles). `poll` (or NULL) is called about every 2^20 records
 * handled, on the calling thread. */
ptrdiff_t mondrian_partition(const double *x, ptrdiff_t ldx, int d, const double *inv_range,
                             ptrdiff_t *rows, ptrdiff_t n, ptrdiff_t k, double *vals,
                             ptrdiff_t *tmp, mdr_range *stack, ptrdiff_t *ends, int *order,
                             double *width, void (*poll)(void));

/* Smallest and largest of xj[rows[i]] for i in [b, e), e > b. */
void mdr_rows_range(const double *xj, const ptrdiff_t *rows, ptrdiff_t b, ptrdiff_t e,
                    double *lo, double *hi);

/* The value of rank r (0-based) among v[0..n), reordering v. Expected O(n). */
double mdr_select(double *v, ptrdiff_t n, ptrdiff_t r);

/* Laplace(0, b) draw from a uniform u in (0, 1) by the inverse CDF. */
double laplace_from_unif(double u, double b);

typedef struct {
    double v;
    ptrdiff_t i;
} mdr_pair;

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
                mdr_pair *pairs, int *linked);
void confident_counts(const double *o, const double *q, ptrdiff_t m, int p, const double *r,
                      ptrdiff_t cap, mdr_pair *pairs, int *l);

#endif
