/* Kernels of risk_rmd() on a kd-tree (kdtree.h). Pure C: no R API; memory and interrupt
 * checks come from the caller's host (host.h). */
#ifndef DETANON_RISK_H
#define DETANON_RISK_H

#include "kdtree.h"
#include "host.h"

/* The largest r2 with sqrt(r2) <= w (-1 for w < 0 or NaN). stats::dist() and
 * sdcMicro::dRiskRMD() compare sqrt(|q - p|^2) <= w; sqrt is monotone, so that holds exactly
 * when |q - p|^2 <= r2, and kd_count_within() with r2 agrees with them bit for bit. */
double rk_sqrt_threshold(double w);

/* For each 1-based row query[i] (i < nq) of z (n x d, column-major; n, d >= 1): the number
 * of OTHER rows of z within Euclidean distance w of it, capped at m (>= 1), into out[i].
 * Queries run in tree order over nt threads, in chunks between which the host pauses (with
 * the number of tree positions done, of n). Returns NULL, or a message for an internal
 * error found before any work (a query row out of range). */
const char *rk_rmd_count(const double *z, ptrdiff_t n, int d, const int *query, ptrdiff_t nq,
                         double w, int m, int nt, int *out, const kernel_host *host);

#endif
