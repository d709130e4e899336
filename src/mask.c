/* Kernels of anonymise() around the search: see mask.h. */
#include "mask.h"
#include "fsum.h"
#include "threads.h"

double mask_rescale(double *cent, ptrdiff_t n, double mean, double sd, double flat_sd)
{
    double cm, c_sd;
    col_mean_sd(cent, n, &cm, &c_sd);
    if (c_sd > flat_sd) {
        for (ptrdiff_t i = 0; i < n; i++) cent[i] = cent[i] / c_sd * sd + mean;
    } else {
        for (ptrdiff_t i = 0; i < n; i++) cent[i] = mean;
    }
    return c_sd;
}

void mask_col_stats(const double *x, ptrdiff_t n, int d, int nt, double *mean, double *sd)
{
    nt = threads_for(nt, (double) n * (d > 1 ? d : 0));
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (int j = 0; j < d; j++) col_mean_sd(n > 0 ? x + (size_t) j * n : NULL, n, mean + j, sd + j);
}
