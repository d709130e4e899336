/* Nearest-neighbour queries of the risk battery (R/battery.R) on the per-stratum kd-trees
 * of a rank index (rank_glue.c), and the query loops behind nn2_glue.c. Pure C: no R API;
 * the per-query functions are safe to call from OpenMP threads, the loops (nn2_run_*)
 * allocate and pause through the caller's host (host.h) on the calling thread only. */
#ifndef DETANON_NN2_H
#define DETANON_NN2_H

#include <stddef.h>
#include "kdtree.h"
#include "host.h"

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
 * categorical (ycat != NULL, codes 1..n_levels, missing values (< 1, as NA_INTEGER) ignored):
 *   *count = size of the set, *match = number whose code equals `target`, *top = count of
 *   the most frequent code. freq: n_levels + 1 zeros, left zeroed.
 * numeric (ynum): *match = number within `tol` of `target` (missing values never match),
 *   *top = the range (max - min) of the set's non-missing values, NaN if none. */
void nn_set_summary(const kd_tree *t, const double *q, double r2, ptrdiff_t skip,
                    const kd_heap *h, const int *ycat, int target, int *freq,
                    const double *ynum, double target_num, double tol,
                    kd_item *stack, double *count, double *match, double *top);

/* The query loops. trees[0..n_trees) are the trees of an index of n_index points (d
 * columns); xq the nq x d query points (column-major). tree_of[r] (1-based) names the tree
 * of query row r; a value < 1 (the glue's 0 or NA): not queried. `na` is the caller's
 * missing value, written for the rows not queried. The queries run over nt threads in
 * chunks, in an order that keeps consecutive queries in the same part of the same tree;
 * the host pauses between chunks (with the queries done). */

/* o (nq x 2): the distances (not squared) to the nearest and second-nearest points of the
 * row's tree, +Inf where the tree has fewer points. */
void nn2_run_nn2(const kd_tree *trees, ptrdiff_t n_trees, ptrdiff_t n_index, const int *tree_of,
                 const double *xq, ptrdiff_t nq, int d, int nt, double na, double *o,
                 const kernel_host *host);

/* The neighbour sets of the inference attack: for every queried row r, the points of its
 * tree at most as far from xq[r, ] as the m-th nearest (ties included), leaving out tree
 * row r itself when leave_out. Categorical when cat (ycat, tcat: codes 1..n_levels,
 * values < 1 missing), else numeric (ynum, tnum): the sensitive values of the tree rows and of the
 * queries. o (nq x 3): nn_set_summary()'s count, match and top. */
void nn2_run_neighbours(const kd_tree *trees, ptrdiff_t n_trees, ptrdiff_t n_index,
                        const int *tree_of, const double *xq, ptrdiff_t nq, int d, int m,
                        int leave_out, int cat, const int *ycat, const int *tcat, int n_levels,
                        const double *ynum, const double *tnum, double tol, int nt, double na,
                        double *o, const kernel_host *host);

/* The k nearest points of xt (Nt x d) to every point of xq (Nq x d) within cells: to, qo
 * the 1-based rows of xt / xq grouped by cell, toff, qoff the offsets of the n_cells cells.
 * idx (Nq x k, 1-based rows of xt, nearest first) and dd (their squared distances) are
 * written for the queried rows, up to the size of the cell; ties ordered as kd_knn_point()
 * orders them. One tree per cell (built serially), its queries in leaf order over nt
 * threads: the same output for any thread count. Returns NULL, or a message on bad offsets. */
/* With `pair` non-NULL, dd holds pair(pair_ctx, query point, query row, tree point, tree row)
 * (0-based rows; the points' d coordinates) instead of the squared distance, and d2 (when
 * not NULL; as dd) the squared distances. */
typedef double (*nn2_pair_fn)(const void *ctx, const double *q, ptrdiff_t r, const double *p, ptrdiff_t j);
const char *nn2_run_knn_cells(const double *xt, ptrdiff_t Nt, const double *xq, ptrdiff_t Nq, int d,
                              const int *to, const int *toff, const int *qo, const int *qoff,
                              ptrdiff_t n_cells, int k, nn2_pair_fn pair, const void *pair_ctx, int nt,
                              int *idx, double *dd, double *d2, const kernel_host *host);

/* The counts and distances of rank_query() (lazy, with nn2) of every row r with want[r] == 1
 * (of n), read from its k nearest tree points instead of a descent: dd (n x k, column-major)
 * the squared distances to them, ascending (nn2_run_knn_cells()'s),
 * size[r] the number of points of the row's tree (its own point among them), xq and xown
 * (n x d) the query point and the own point. o (n x 4): o[r] = the number of points
 * strictly closer than the own point (cap once it reaches cap), o[r + n] = the number at
 * most as close (only while o[r] < cap; else left), o[r + 2n], o[r + 3n] = the distances
 * (not squared) to the nearest and second-nearest points (Inf when the tree has fewer).
 * A row whose counts the list cannot decide (its k-th point at most as close as its own
 * point, in a tree of more than k points, or a second-nearest point past a list of one)
 * gets o[r] = na: the caller counts it on the tree. Other rows are left. buf: 2 d doubles. */
void nn2_list_ranks(const double *dd, ptrdiff_t n, int k, const int *size, const double *xq,
                    const double *xown, int d, const int *want, double cap, double na, double *buf,
                    double *o);

/* The neighbour sets of nn2_run_neighbours() (o: count, match, top) of every row r with
 * want[r] == 1 (of n), read from the k nearest points of its tree instead of a search: idx
 * (n x k, column-major) their 1-based tree rows and dd their squared distances, ascending
 * (nn2_run_knn_cells()'s, the same sums as the search's), size[r] the number of points of the
 * row's tree. The set and its summary are those of nn_set_radius() and nn_set_summary():
 * every point at most as far as the m-th nearest (other than tree row r itself when
 * leave_out), whatever the order of ties. A row whose set the list cannot decide (a tree of
 * more than k points whose k-th listed point is at most as far as the m-th, or an empty
 * tree) gets o[r] = na: the caller searches it on the tree. Other rows are left. freq:
 * n_levels + 1 zeros (categorical), left zeroed. */
void nn2_list_neighbours(const int *idx, const double *dd, ptrdiff_t n, int k, const int *size,
                         const int *want, int m, int leave_out, int cat, const int *ycat, const int *tcat,
                         const double *ynum, const double *tnum, double tol, int *freq, double na,
                         double *o);

#endif
