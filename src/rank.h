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

/* For every row r with want[r] == 1 (of n; other values: skipped), whose query point is
 * row r of xq (n x d) and whose own point is in trees[s] (stratum s at positions
 * off[s]..off[s + 1) of the index): o[r] = the number of tree points of the stratum
 * strictly closer to the query point than its own point (counted up to cap), o[r + n] =
 * the number at most as close (capped at 2^14; with `lazy`, exact but only while o[r] < cap,
 * as the battery's top-m shares need it). Rows and counts not computed keep their value.
 * Queries run in tree order over nt threads; the host pauses between chunks (with rows done). */
void rank_query(const kd_tree *trees, ptrdiff_t n_strata, const int *off, ptrdiff_t n, int d,
                const double *xq, const int *want, ptrdiff_t cap, int lazy, int nt, double *o,
                const kernel_host *host);

/* rank_query() with `lazy`, and the two nearest tree points of every queried row (nn2.c)
 * from the same descent: o is n x 4, columns 1 and 2 the counts of rank_query(), 3 and 4
 * the distances (not squared) to the nearest and second-nearest points of the row's own
 * tree (Inf when it holds fewer). Rows and counts not computed keep their value. */
void rank_nn2_query(const kd_tree *trees, ptrdiff_t n_strata, const int *off, ptrdiff_t n, int d,
                    const double *xq, const int *want, ptrdiff_t cap, int nt, double *o,
                    const kernel_host *host);

#endif
