/* Kernels of risk_rmd() and risk_linkage() on a kd-tree (kdtree.h). Pure C: no R API, safe
 * to call from OpenMP threads; the caller owns every buffer. */
#ifndef DETANON_RISK_KERNEL_H
#define DETANON_RISK_KERNEL_H

#include "kdtree.h"

/* Number of tree points p with sqrt(|q - p|^2) <= w, the comparison stats::dist() and
 * sdcMicro::dRiskRMD() make (so boundary cases agree bit for bit), stopping once
 * `stop_at` points are found. `stack` needs KD_STACK_MAX items. */
ptrdiff_t rk_count_within_dist(const kd_tree *t, const double *q, double w, ptrdiff_t stop_at,
                               kd_item *stack);

/* Share of a successful nearest-neighbour link for the query q (a masked record) whose own
 * original record, a point of the tree, has coordinates `self`: 0 when some tree point is
 * strictly closer to q than `self`, else 1 / (number of tree points as close as `self`).
 * `h` is a heap with k = 1. */
double rk_link_share(const kd_tree *t, const double *q, const double *self, kd_heap *h);

#endif
