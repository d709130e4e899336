/* Kernels of the frequency counts of categorical keys (risk_frequencies(),
 * risk_individual(), risk_ldiversity(), risk_tcloseness()). Pure C: no R API. */
#ifndef DETANON_FREQ_H
#define DETANON_FREQ_H

#include <stddef.h>

/* Sums of x[i] by group g[i] (1-based ids in 1..n_groups) into sum[0..n_groups), which
 * the caller zeroes; records are added in row order. `poll` is called every 2^20 records. */
void freq_group_sums(const double *x, const int *g, ptrdiff_t n, double *sum, void (*poll)(void));

#endif
