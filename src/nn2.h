/* Nearest-neighbour queries of the risk battery (R/battery.R) on the per-stratum kd-trees
 * of a rank index (rank_glue.c). Pure C: no R API, safe to call from OpenMP threads. */
#ifndef DETANON_NN2_H
#define DETANON_NN2_H

#include <stddef.h>
#include "kdtree.h"

/* The squared distances from q to its nearest and second-nearest points of tree t (h: a
 * heap of k = 2). A missing neighbour (t holds fewer than two points) is +Inf. */
void nn2_query(const kd_tree *t, const double *q, kd_heap *h, double *d1, double *d2);

/* The neighbour set of q in t: every tree point at most as far as the m-th nearest, ties
 * at that distance included, leaving out the point of caller row `skip` (-1: none); all
 * points when t holds m or fewer (besides the left-out one). h: a heap of k = m + 1
 * (t may hold fewer). Returns the squared radius (+Inf for "all", -1 for an
 * empty tree). */
double nn_set_radius(const kd_tree *t, const double *q, int m, ptrdiff_t skip, kd_heap *h);

/* Summaries of the sensitive values of the neighbour set {tree points p with
 * |q - p|^2 <= r2, row(p) != skip}, read from h (the heap nn_set_radius() filled, or NULL)
 * when it holds the whole set, else found by a radius search:
 * categorical (ycat != NULL, codes 1..n_levels, NA_INTEGER-like values < 1 ignored):
 *   *count = size of the set, *match = number whose code equals `target`, *top = count of
 *   the most frequent code. freq: n_levels + 1 zeros, left zeroed.
 * numeric (ynum): *match = number within `tol` of `target` (missing values never match),
 *   *top = the range (max - min) of the set's non-missing values, NaN if none. */
void nn_set_summary(const kd_tree *t, const double *q, double r2, ptrdiff_t skip,
                    const kd_heap *h, const int *ycat, int target, int *freq,
                    const double *ynum, double target_num, double tol,
                    kd_item *stack, double *count, double *match, double *top);

/* The rank of a query's own point `self` among the points of t: *lt = number of points
 * strictly closer to q than self, counted up to `cap`; *le = number at most as close
 * (self included), counted only when *lt < cap (else NaN: a top-m share with m <= cap is 0
 * whatever it is). Unlike an uncapped count, a query far from its own point (the control
 * of an attack) costs no more than one near it. */
void nn_rank(const kd_tree *t, const double *q, const double *self, ptrdiff_t cap,
             double *lt, double *le, kd_item *stack);

#endif
