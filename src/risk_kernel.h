/* Kernels of risk_rmd() and risk_linkage() on a kd-tree (kdtree.h). Pure C: no R API, safe
 * to call from OpenMP threads; the caller owns every buffer. */
#ifndef DETANON_RISK_KERNEL_H
#define DETANON_RISK_KERNEL_H

#include "kdtree.h"

/* The largest r2 with sqrt(r2) <= w (-1 for w < 0 or NaN). stats::dist() and
 * sdcMicro::dRiskRMD() compare sqrt(|q - p|^2) <= w; sqrt is monotone, so that holds exactly
 * when |q - p|^2 <= r2, and kd_count_within() with r2 agrees with them bit for bit. */
double rk_sqrt_threshold(double w);

/* Share of a successful nearest-neighbour link for the query q (a masked record) whose own
 * original record, a point of the tree, has coordinates `self`: 0 when some tree point is
 * strictly closer to q than `self`, else 1 / (number of tree points as close as `self`).
 * `h` is a heap with k = 1. */
double rk_link_share(const kd_tree *t, const double *q, const double *self, kd_heap *h);

#endif
