/* Ranks of a record's own point among the points of its stratum: the kernels of the rank
 * index (rank_glue.c) behind risk_linkage() (top-m linkage and the expected
 * re-identification probability), risk_replay(), tune_release() and anonymise_adaptive().
 * Pure C: no R API; interrupt checks and progress come from the caller's host (host.h). */
#ifndef DETANON_RANK_H
#define DETANON_RANK_H

#include <stddef.h>
#include "kdtree.h"
#include "host.h"

#define RANK_LEAF_SIZE 8

/* The trees of an index: x is n x d (column-major); ord (1-based) lists the rows stratum
 * by stratum, stratum s holding ord[off[s]..off[s + 1]). The trees go into caller-owned
 * buffers sized for all strata (pts n * d, row and leaf_of n, and per stratum
 * kd_max_nodes(ns, RANK_LEAF_SIZE) nodes and 2 * d box doubles per node, strata in order);
 * meta (3 per stratum) receives each tree's first node, node count and depth. Returns NULL,
 * or a message for an internal error (a row out of range). */
const char *rank_build(const double *x, ptrdiff_t n, int d, const int *ord, const int *off,
                       ptrdiff_t n_strata, double *pts, ptrdiff_t *row, ptrdiff_t *leaf_of,
                       kd_node *nodes, double *box, int *meta, const kernel_host *host);

/* The tied points of a stratum as groups: a tree over its distinct points, each with the
 * number of points it stands for, so that a count within a radius visits a run of tied
 * points once (on data with many duplicate records, or a release of shared centroids, the
 * counts "at most as near" otherwise walk every tied point on the ball's edge). */
typedef struct {
    kd_tree t;         /* over the distinct points; t.n == 0: the stratum is not grouped */
    const double *w;   /* per tree position: the number of points there */
    const double *nw;  /* per node: the number of points in its box */
} rank_groups;

/* Strata with at least a stratum's size / RANK_GROUP_SHARE tied points are grouped. */
#define RANK_GROUP_SHARE 8

/* The groups of tied points of every stratum of a built index (trees[s], positions
 * off[s]..off[s + 1)): a stratum whose tree order holds at least ns / RANK_GROUP_SHARE
 * points equal to the one before them is grouped, with every set of equal points (equal
 * coordinates, -0 equal to 0; a point with a NaN is never equal to another) one group.
 * rep[goff[s]..goff[s + 1]) receive the tree positions (within the stratum) of one point
 * of each group and mult[] the sizes of the groups; goff[s + 1] == goff[s] for a stratum
 * not grouped. rep and mult hold n entries, goff n_strata + 1. */
void rank_distinct(const kd_tree *trees, ptrdiff_t n_strata, ptrdiff_t n, ptrdiff_t *rep, double *mult,
                   int *goff, const kernel_host *host);

/* The group trees of rank_distinct()'s groups, into caller-owned buffers sized as for
 * rank_build() over goff[n_strata] points (pts, row, leaf_of; kd_max_nodes() nodes of each
 * grouped stratum, in order), with w (one per point) and nw (one per node); meta (3 per
 * stratum) as in rank_build(). */
void rank_build_groups(const kd_tree *trees, ptrdiff_t n_strata, const ptrdiff_t *rep, const double *mult,
                       const int *goff, double *pts, ptrdiff_t *row, ptrdiff_t *leaf_of, kd_node *nodes,
                       double *box, double *w, double *nw, int *meta, const kernel_host *host);

/* For every row r with want[r] == 1 (of n; other values: skipped), whose query point is
 * row r of xq (n x d) and whose own point is in trees[s] (stratum s at positions
 * off[s]..off[s + 1) of the index): o[r] = the number of tree points of the stratum
 * strictly closer to the query point than its own point (counted up to cap), o[r + n] =
 * the number at most as close (capped at 2^14; with `lazy`, exact but only while o[r] < cap,
 * as the battery's top-m shares need it). With nn2 (then o is n x 4, and lazy), o[r + 2n]
 * and o[r + 3n] = the distances (not squared) to the nearest and second-nearest points of
 * the row's own tree (Inf when it holds fewer). Rows and counts not computed keep their
 * value. groups (NULL, or one per stratum, from rank_build_groups()): a grouped stratum's
 * tree of distinct points is searched instead, each counted with its multiplicity.
 * Queries with equal query points (as a shared-centroid release makes them) share one
 * descent of the tree; the counts are those of each query alone, the same numbers for any
 * grouping, order and thread count. The groups run in the order of the leaf their query
 * point falls in, over nt threads; the host pauses between chunks (with the queries done). */
void rank_query(const kd_tree *trees, const rank_groups *groups, ptrdiff_t n_strata, const int *off,
                ptrdiff_t n, int d, const double *xq, const int *want, ptrdiff_t cap, int lazy, int nn2,
                int nt, double *o, const kernel_host *host);

#endif
