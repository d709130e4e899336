/* Step 5 of anonymise() on one column, and the column statistics of step 1. Pure C. */
#ifndef DETANON_MASK_H
#define DETANON_MASK_H

#include <stddef.h>

/* Rescale n centroids in place to the original column's spread:
 * centroid / sd(centroids) * sd + mean, where sd(centroids) is exact (order-free); when
 * that SD is <= flat_sd (all centroids equal up to rounding) every value becomes `mean`.
 * Returns sd(centroids). */
double mask_rescale(double *cent, ptrdiff_t n, double mean, double sd, double flat_sd);

/* Means and sample SDs of the d columns of the n x d matrix x (column-major), exact and
 * order-free, spread over nt threads. */
void mask_col_stats(const double *x, ptrdiff_t n, int d, int nt, double *mean, double *sd);

#endif
