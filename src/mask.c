/* Kernels of anonymise() around the search: see mask.h. */
#include "mask.h"
#include "fsum.h"
#include "threads.h"
#include <stdint.h>
#include <string.h>

/* Step 5 on one column; returns 1 when it is released as its mean. */
static int rescale(double *cent, ptrdiff_t n, double mean, double sd, double c_sd)
{
    if (c_sd > MASK_FLAT_SD) {
        for (ptrdiff_t i = 0; i < n; i++) cent[i] = cent[i] / c_sd * sd + mean;
        return 0;
    }
    for (ptrdiff_t i = 0; i < n; i++) cent[i] = mean;
    return 1;
}

void mask_step5(double *const *cent, int d, ptrdiff_t n, const double *mean, const double *sd,
                double *c_sd, int given_sd, int *flat, int nt, const kernel_host *host)
{
    const int nt5 = threads_for(nt, (double) n * (d > 1 ? d : 0));
    for (int j0 = 0; j0 < d; j0 += nt5) {
        const int j1 = j0 + nt5 < d ? j0 + nt5 : d;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt5) schedule(static, 1)
#endif
        for (int j = j0; j < j1; j++) {
            if (!given_sd) {
                double cm;
                col_mean_sd(cent[j], n, &cm, c_sd + j);
            }
            flat[j] = rescale(cent[j], n, mean[j], sd[j], c_sd[j]);
        }
        host_pause(host, j1);
    }
}

void mask_col_stats(const double *x, ptrdiff_t n, int d, int nt, double *mean, double *sd)
{
    nt = threads_for(nt, (double) n * (d > 1 ? d : 0));
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (int j = 0; j < d; j++) col_mean_sd(n > 0 ? x + (size_t) j * n : NULL, n, mean + j, sd + j);
}

/* The ordered key of a double: unsigned 64-bit integers in the order of the values (-0
 * just below +0; no NaN here). */
static inline uint64_t radix_key(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return (u >> 63) ? ~u : (u | ((uint64_t) 1 << 63));
}

void mask_radix_hist(const double *x, ptrdiff_t n, int pass, uint64_t prefix, double *counts)
{
    const int shift = 48 - 16 * pass;
    for (ptrdiff_t i = 0; i < n; i++) {
        const uint64_t key = radix_key(x[i]);
        if (pass == 0 || (key >> (shift + 16)) == prefix) counts[(key >> shift) & 0xffffu] += 1.0;
    }
}

double mask_radix_value(uint64_t key)
{
    uint64_t u = (key >> 63) ? (key & ~((uint64_t) 1 << 63)) : ~key;
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}
