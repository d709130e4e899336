/* Order-independent column statistics. Pure C. */
#ifndef DETANON_FSUM_H
#define DETANON_FSUM_H

#include <stddef.h>
#include <stdint.h>

/* Correctly rounded sum of x[0], x[stride], ..., x[(n-1)*stride] (Shewchuk's algorithm,
 * as Python's math.fsum). The exact sum does not depend on the order of the terms, so
 * neither does its rounding: permuting rows cannot change a mean or SD by one bit. */
double fsum(const double *x, ptrdiff_t n, ptrdiff_t stride);

/* Mean and sample SD (n - 1 denominator) of n values, both order-independent. */
void col_mean_sd(const double *x, ptrdiff_t n, double *mean, double *sd);

/* The release fingerprint's checksum of a column (column_checksum() in R/utils.R, for a
 * column without missing or infinite values): sum(v * w) with the position weights
 * w[i] = frac(i * 0.618...) + 0.5 (i = 1..n), made and summed exactly as R's vector
 * arithmetic and sum() do (each product rounded to double, accumulated in long double, in
 * order). v is x (doubles) or, when x is NULL, xi (integers, int_na their missing value).
 * Returns NAN when a value is missing or infinite (then R computes it). */
double checksum_weighted(const double *x, const int *xi, ptrdiff_t n, int int_na);
/* The exact accumulator of col_mean_sd() as FSUM_ACC_LEN plain doubles, so that sums over
 * chunks of rows can be merged without changing a bit (partitioned anonymise()). */
#define FSUM_ACC_LEN 70
void fsum_acc_init(double *acc);
/* adds x[0..n) (centre NULL) or their squared deviations (x[i] - *centre)^2, each squared
 * deviation rounded as col_mean_sd() rounds it */
void fsum_acc_add(double *acc, const double *x, ptrdiff_t n, const double *centre);
/* adds v `times` times */
void fsum_acc_add_rep(double *acc, double v, double times);
/* acc += other */
void fsum_acc_merge(double *acc, const double *other);
/* the correctly rounded total times 2^e (e >= 0) */
double fsum_acc_round(const double *acc, int e);

/* The same exact accumulator kept as its integer digits between calls, for a sum that
 * changes by a few terms at a time and is rounded after each change (the centroid of the
 * records MDAV has not grouped yet): no conversion of the state per call. Same exact total,
 * so fsum_run_round() gives the bits fsum_acc_round(, 0) gives for the same terms. */
#define FSUM_RUN_DIGITS 68
typedef struct {
    int64_t d[FSUM_RUN_DIGITS];
    int pending;
    int special;    /* an Inf or NaN was added */
    double inf_nan; /* their IEEE sum */
} fsum_run;
void fsum_run_init(fsum_run *a);
/* adds x[0..n) */
void fsum_run_add(fsum_run *a, const double *x, ptrdiff_t n);
/* the correctly rounded total (a is not changed) */
double fsum_run_round(const fsum_run *a);

#endif
