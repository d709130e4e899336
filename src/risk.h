/* Kernels of risk_rmd() on a kd-tree (kdtree.h). Pure C: no R API, safe
 * to call from OpenMP threads; the caller owns every buffer. */
#ifndef DETANON_RISK_KERNEL_H
#define DETANON_RISK_KERNEL_H

#include "kdtree.h"

/* The largest r2 with sqrt(r2) <= w (-1 for w < 0 or NaN). stats::dist() and
 * sdcMicro::dRiskRMD() compare sqrt(|q - p|^2) <= w; sqrt is monotone, so that holds exactly
 * when |q - p|^2 <= r2, and kd_count_within() with r2 agrees with them bit for bit. */
double rk_sqrt_threshold(double w);

#endif
