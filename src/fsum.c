#include <math.h>
#include "fsum.h"

#define MAX_PARTIALS 128 /* non-overlapping doubles span < 2100 bits: at most ~41 needed */

static void add_partial(double *p, int *np, double x)
{
    int i = 0;
    for (int j = 0; j < *np; j++) {
        double y = p[j];
        if (fabs(x) < fabs(y)) { double t = x; x = y; y = t; }
        double hi = x + y;
        double lo = y - (hi - x);
        if (lo != 0.0) p[i++] = lo;
        x = hi;
    }
    if (i < MAX_PARTIALS) p[i++] = x;
    *np = i;
}

double fsum(const double *x, ptrdiff_t n, ptrdiff_t stride)
{
    double p[MAX_PARTIALS];
    int np = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        double v = x[i * stride];
        if (!isfinite(v)) { /* callers validate; keep IEEE semantics if they did not */
            double s = 0.0;
            for (ptrdiff_t m = 0; m < n; m++) s += x[m * stride];
            return s;
        }
        add_partial(p, &np, v);
    }
    if (np == 0) return 0.0;
    /* sum the partials from the top, rounding half-way cases correctly */
    int k = np - 1;
    double hi = p[k], lo = 0.0;
    while (k > 0) {
        double xx = hi, y = p[--k];
        hi = xx + y;
        double yr = hi - xx;
        lo = y - yr;
        if (lo != 0.0) break;
    }
    if (k > 0 && ((lo < 0.0 && p[k - 1] < 0.0) || (lo > 0.0 && p[k - 1] > 0.0))) {
        double y = lo * 2.0, xx = hi + y, yr = xx - hi;
        if (y == yr) hi = xx;
    }
    return hi;
}

void col_mean_sd(const double *x, ptrdiff_t n, double *mean, double *sd)
{
    if (n < 1) { *mean = NAN; *sd = NAN; return; }
    double m = fsum(x, n, 1) / (double) n;
    *mean = m;
    if (n < 2) { *sd = NAN; return; }
    /* second pass on squared deviations; fsum per block keeps it exact and order-free */
    double p[MAX_PARTIALS];
    int np = 0;
    for (ptrdiff_t i = 0; i < n; i++) { double e = x[i] - m; add_partial(p, &np, e * e); }
    *sd = sqrt(fsum(p, np, 1) / (double) (n - 1));
}
