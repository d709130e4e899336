/* Step 5 of anonymise() and anonymise_adaptive(), and the column statistics of step 1.
 * Pure C: no R API; interrupt checks come from the caller's host (host.h). */
#ifndef DETANON_MASK_H
#define DETANON_MASK_H

#include <stddef.h>
#include <stdint.h>
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

/* An exact order statistic over chunks, by four passes of 16 bits on the ordered bit
 * pattern of the values (partitioned anonymise()): pass p (0..3) adds to counts[65536]
 * the number of values whose key's top 16 p bits equal `prefix`, by their next 16 bits.
 * mask_radix_value() turns a whole 64-bit key back into its value. */
void mask_radix_hist(const double *x, ptrdiff_t n, int pass, uint64_t prefix, double *counts);
double mask_radix_value(uint64_t key);

#endif
