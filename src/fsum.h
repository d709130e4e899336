/* Order-independent column statistics. Pure C. */
#ifndef DETANON_FSUM_H
#define DETANON_FSUM_H

#include <stddef.h>

/* Correctly rounded sum of x[0], x[stride], ..., x[(n-1)*stride] (Shewchuk's algorithm,
 * as Python's math.fsum). The exact sum does not depend on the order of the terms, so
 * neither does its rounding: permuting rows cannot change a mean or SD by one bit. */
double fsum(const double *x, ptrdiff_t n, ptrdiff_t stride);

/* Mean and sample SD (n - 1 denominator) of n values, both order-independent. */
void col_mean_sd(const double *x, ptrdiff_t n, double *mean, double *sd);

#endif
