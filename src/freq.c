/* Kernels of the frequency counts of categorical keys (see freq.h). */
#include "freq.h"

void freq_group_sums(const double *x, const int *g, ptrdiff_t n, double *sum, void (*poll)(void))
{
    for (ptrdiff_t i = 0; i < n; i++) {
        if (poll && (i & 0xFFFFF) == 0xFFFFF) poll();
        sum[g[i] - 1] += x[i];
    }
}
