/* Knots of distance_map(): the distribution of the pairwise distances |s[j] - s[i]| of a
 * sorted sample, by counting (never materialising the n(n-1)/2 distances, never squaring
 * them). Pure C: no R API; the caller passes a function polled between passes. */
#ifndef DETANON_DISTANCE_MAP_H
#define DETANON_DISTANCE_MAP_H

#include <stddef.h>

/* s[0..n) sorted ascending, finite, n >= 2. Writes at most n_knots + 1 knots (positive
 * distances u[], increasing, and their mid-distribution values p[]) and returns their
 * number: every distinct positive distance when there are at most n_knots, else those
 * selected as findInterval((1:n_knots - 0.5) / n_knots, p) (at least the first) and the
 * largest. `poll` is called once per pass over s (O(n) work). */
int distmap_knots(const double *s, ptrdiff_t n, int n_knots, double *u, double *p,
                  void (*poll)(void));

#endif
