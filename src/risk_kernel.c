/* Kernels of risk_rmd() and risk_linkage(); see risk_kernel.h. */
#include <math.h>
#include <stdint.h>
#include "risk_kernel.h"

double rk_sqrt_threshold(double w)
{
    if (!(w >= 0.0)) return -1.0; /* negative or NaN: no distance qualifies */
    double r2 = w * w;
    /* w * w is within an ulp or two of the answer: step to it */
    while (sqrt(r2) > w) r2 = nextafter(r2, 0.0);
    while (r2 < HUGE_VAL && sqrt(nextafter(r2, HUGE_VAL)) <= w) r2 = nextafter(r2, HUGE_VAL);
    return r2;
}

double rk_link_share(const kd_tree *t, const double *q, const double *self, kd_heap *h)
{
    const double ds = kd_point_d2(q, self, t->d);
    kd_knn_point(t, q, h);
    if (h->count < 1 || h->d2[0] < ds) return 0.0;
    /* self is in the tree at squared distance ds, so the count is >= 1 */
    ptrdiff_t c = kd_count_within(t, q, ds, PTRDIFF_MAX, h->stack);
    return c > 0 ? 1.0 / (double) c : 0.0;
}
