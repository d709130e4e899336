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
 * as its mean. In row blocks on nt threads (threads.h), the host pausing between the
 * passes (scratch memory from host->alloc). */
void mask_step5(double *const *cent, int d, ptrdiff_t n, const double *mean, const double *sd,
                double *c_sd, int given_sd, int *flat, int nt, const kernel_host *host);

/* Means and sample SDs of the d columns of the n x d matrix x (column-major), exact and
 * order-free (col_mean_sd() in fsum.h), in row blocks on nt threads (scratch memory from
 * host->alloc). */
void mask_col_stats(const double *x, ptrdiff_t n, int d, int nt, double *mean, double *sd,
                    const kernel_host *host);

/* The release form of a masked column (format_masked() in R/anonymise.R), the parts that
 * pass over whole columns. mask_form_stats: of x[0..n) (finite, n >= 1), out[0..2] = min,
 * max and 1 if every value is whole (0 otherwise); when 0 < kk <= n and min < max, out[3]
 * and out[4] = the exact means (fsum.h) of the kk smallest and of the kk largest values
 * (else NAN); out[5] and out[6] = the numbers of values equal to the min and to the max.
 * buf: 2 kk doubles of scratch, n when kk > 64. */
void mask_form_stats(const double *x, ptrdiff_t n, ptrdiff_t kk, double *buf, double *out);

/* squeeze_range() of R/anonymise.R: the masked values v[0..n) (finite) mapped into
 * [lo, hi] keeping their order, only those beyond a bound moved (into half the gap between
 * the bound and the nearest value inside, or onto the bound when none is inside on that
 * side), into out[0..n) (may be v); except that the values beyond a bound are left where
 * they are when they are a crowd, more than 1 / MASK_FORM_CROWD of all n values (lo or hi
 * is then no limit on that side); then, when `round0`, every value rounded to a whole
 * number (half to even, as R's round()) kept inside the bounds that apply. The same
 * operations, in the same order and rounding, as the R code (products never fused into
 * one rounding).
 * mask_release_form() is one scan and one map; a column in chunks can instead merge the
 * scans of its chunks (mask_form_scan_add() on each chunk, or _merge() of scans made
 * apart), then map each chunk with mask_form_apply(). */
#define MASK_FORM_CROWD 10.0
typedef struct {
    double min, max;       /* of all values */
    double in_min, in_max; /* of the values inside [lo, hi] */
    int any_in;            /* is any value inside [lo, hi]? */
    double n, n_lo, n_hi;  /* counts: all values, those below lo, those above hi */
} mask_form_scan;
void mask_form_scan_init(mask_form_scan *s);
void mask_form_scan_add(mask_form_scan *s, const double *v, ptrdiff_t n, double lo, double hi);
void mask_form_scan_merge(mask_form_scan *into, const mask_form_scan *from);
void mask_form_apply(const double *v, double *out, ptrdiff_t n, double lo, double hi,
                     const mask_form_scan *s, int round0);
void mask_release_form(const double *v, double *out, ptrdiff_t n, double lo, double hi, int round0);

/* The map of the natural form (finish_fit(), fit_moments() and apply_fit() in R/finish.R):
 * the affine map a + b * v of the values inside [tL, tU], the values below tL held in
 * [L, L + dL) by their distance from vmin, those above tU in (U - dU, U], then everything
 * kept inside [L, U]. The same operations, in the same order and rounding, as the R code.
 * mask_fit_sums() adds to the exact accumulators (fsum.h) of a column in pieces, for one
 * piece v[0..n): with `dev` 0, the counts below tL and above tU, the least and largest of
 * the values inside (out[0..3], out[0..1] added to, out[2..3] merged), the sum of the
 * values inside (acc[0]), of the held values (acc[1]) and of their squared deviations from
 * `centre` (acc[2]); with `dev` 1, only the squared deviations of the values inside from
 * `centre` (acc[0]). mask_fit_apply() maps v[0..n) into out[0..n). */
typedef struct { double L, U, a, b, tL, tU, dL, dU, vmin, vmax; } mask_fit;
void mask_fit_sums(const double *v, ptrdiff_t n, const mask_fit *f, double centre, int dev,
                   double *out, double *const *acc);
void mask_fit_apply(const double *v, double *out, ptrdiff_t n, const mask_fit *f);

/* The largest |x[i]| of x[0..n), NaN left out; HUGE_VAL when nothing is left. */
double mask_max_abs(const double *x, ptrdiff_t n);
/* An exact order statistic over chunks, by four passes of 16 bits on the ordered bit
 * pattern of the values (partitioned anonymise()): pass p (0..3) adds to counts[65536]
 * the number of values whose key's top 16 p bits equal `prefix`, by their next 16 bits.
 * mask_radix_value() turns a whole 64-bit key back into its value. */
void mask_radix_hist(const double *x, ptrdiff_t n, int pass, uint64_t prefix, double *counts);
double mask_radix_value(uint64_t key);
/* Check numbers of records (partitioned anonymise(): a check sum per stratum): for each row
 * i of the n x p column-major x, each value's 64-bit pattern (-0 as 0) modulo 1048573,
 * mixed column by column, r = ((r + h)^2 + j) mod 1048573 for j = 1..p, into out[i]
 * (< 2^20, so sums over up to 2^33 records are exact doubles in any order). */
void mask_record_checks(const double *x, ptrdiff_t n, int p, double *out);

#endif
