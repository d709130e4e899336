/* Step 5 of anonymise() and anonymise_adaptive(), and the column statistics of step 1.
 * Pure C: no R API; interrupt checks come from the caller's host (host.h). */
#ifndef DETANON_MASK_H
#define DETANON_MASK_H

#include <stddef.h>
#include "host.h"

/* On the z-scale (SD 1) a spread of centroids this small is rounding noise, not
 * information: such a column is released as its mean (R warns). The one threshold of step
 * 5, for every masking path. */
#define MASK_FLAT_SD 1e-10

/* Step 5 over the whole data for d columns of n centroids (z-scale), in place: column j
 * becomes cent[j] / c_sd[j] * sd[j] + mean[j] (the original column's mean and SD), or, when
 * c_sd[j] <= MASK_FLAT_SD (all centroids equal up to rounding), mean[j] everywhere.
 * given_sd: c_sd holds the centroids' SDs (the rann engine's own arithmetic); else they are
 * computed exactly (order-free, fsum.h) into c_sd. flat[j] receives 1 for a column released
 * as its mean. Columns run nt at a time in parallel (threads.h policy), the host pausing
 * between groups (with the columns done). */
void mask_step5(double *const *cent, int d, ptrdiff_t n, const double *mean, const double *sd,
                double *c_sd, int given_sd, int *flat, int nt, const kernel_host *host);

/* Means and sample SDs of the d columns of the n x d matrix x (column-major), exact and
 * order-free, spread over nt threads. */
void mask_col_stats(const double *x, ptrdiff_t n, int d, int nt, double *mean, double *sd);

/* The release form of a masked column (format_masked() in R/anonymise.R), the parts that
 * pass over whole columns. mask_form_stats: of x[0..n) (finite), out[0..2] = min, max and
 * 1 if every value is whole (0 otherwise); when 0 < kk <= n and min < max, out[3] and
 * out[4] = the exact means (fsum.h) of the kk smallest and of the kk largest values; when
 * `middle`, out[5] and out[6] = the values of ranks floor((n - 1) / 2) and floor(n / 2)
 * (0-based: the one or two middle values, whose mean R's median() takes). buf: n doubles
 * of scratch. */
void mask_form_stats(const double *x, ptrdiff_t n, ptrdiff_t kk, int middle, double *buf,
                     double *out);

/* squeeze_range() of R/anonymise.R on v[0..n) in place, given med = median(v) (used only
 * when some value lies outside [lo, hi]); then, when `round0`, every value rounded to a
 * whole number (half to even, as R's round()) and kept inside [lo, hi]. The same
 * operations, in the same order and rounding, as the R code (products never fused into
 * one rounding). */
void mask_squeeze(double *v, ptrdiff_t n, double lo, double hi, double med, int round0);

/* The largest |x[i]| of x[0..n), NaN left out; HUGE_VAL when nothing is left. */
double mask_max_abs(const double *x, ptrdiff_t n);

#endif
