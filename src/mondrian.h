/* Mondrian equivalence classes (mondrian(), and the classes of anonymise_keps()). Pure C:
 * no R API; memory and interrupt checks come from the caller's host (host.h). */
#ifndef DETANON_MONDRIAN_H
#define DETANON_MONDRIAN_H

#include <stddef.h>
#include "host.h"

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
 * order (d ints), width (d doubles). The host (or NULL) is polled (host->interrupted) about
 * every 2^20 records handled, on the calling thread. */
ptrdiff_t mondrian_partition(const double *x, ptrdiff_t ldx, int d, const double *inv_range,
                             ptrdiff_t *rows, ptrdiff_t n, ptrdiff_t k, double *vals,
                             ptrdiff_t *tmp, mdr_range *stack, ptrdiff_t *ends, int *order,
                             double *width, const kernel_host *host);

/* Smallest and largest of xj[rows[i]] for i in [b, e), e > b. */
void mdr_rows_range(const double *xj, const ptrdiff_t *rows, ptrdiff_t b, ptrdiff_t e,
                    double *lo, double *hi);

/* The value of rank r (0-based) among v[0..n), reordering v. Expected O(n). */
double mdr_select(double *v, ptrdiff_t n, ptrdiff_t r);

/* Every stratum partitioned by mondrian_partition(): rows[0..n) are the 0-based rows grouped
 * by stratum (stratum s at rows[off[s]..off[s + 1]), each non-empty one with >= k rows; x
 * is n x d; they are permuted in place so that every class is contiguous. ends (n / k +
 * n_strata + 1) receives the end position in rows of every class, strata in order. The host
 * pauses between strata now and then (with off[s + 1] rows done). Returns the number of
 * classes. */
ptrdiff_t mondrian_strata(const double *x, ptrdiff_t n, int d, const double *inv_range,
                          ptrdiff_t *rows, const ptrdiff_t *off, ptrdiff_t n_strata,
                          ptrdiff_t k, ptrdiff_t *ends, const kernel_host *host);

/* The classes of mondrian_strata() as results: cls[rows[i]] = 1-based class (n), size
 * (n_classes), and per class and column the smallest and largest value, lo and hi
 * (n_classes x d, column-major). */
void mondrian_boxes(const double *x, ptrdiff_t n, int d, const ptrdiff_t *rows,
                    const ptrdiff_t *ends, ptrdiff_t n_classes, int *cls, int *size,
                    double *lo, double *hi);

#endif
