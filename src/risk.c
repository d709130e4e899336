/* Kernels of risk_rmd(); see risk.h. */
#include <math.h>
#include <stdint.h>
#include "risk.h"

double rk_sqrt_threshold(double w)
{
    if (!(w >= 0.0)) return -1.0; /* negative or NaN: no distance qualifies */
    double r2 = w * w;
    /* w * w is within an ulp or two of the answer: step to it */
    while (sqrt(r2) > w) r2 = nextafter(r2, 0.0);
    while (r2 < HUGE_VAL && sqrt(nextafter(r2, HUGE_VAL)) <= w) r2 = nextafter(r2, HUGE_VAL);
    return r2;
}
