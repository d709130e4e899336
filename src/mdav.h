/* MDAV microaggregation (anonymise_mdav()): groups of k records within strata, formed
 * around the records farthest from the centre, and the exact group means. Pure C: no R
 * API (the glue is mdav_glue.c).
 *
 * The algorithm (Domingo-Ferrer and Mateo-Sanz 2002, as sdcMicro's Mdav.cpp), on the
 * z-scores of each stratum's records: while at least 3k records remain, c is their centroid,
 * r the remaining record farthest from c, and r with its k - 1 nearest remaining records
 * form a group; then s, the remaining record farthest from r, with its k - 1 nearest forms
 * another. With 2k to 3k - 1 left, one more group around the record farthest from their
 * centroid; the rest form the last group. Squared Euclidean distance.
 *
 * The canonical tie rule, so that the groups are a function of the multiset of points and
 * not of the row order, the thread count or the kd-tree's shape:
 * - the nearest records are ordered by squared distance, then by the lexicographic order
 *   of their coordinates (as the search of anonymise()); the farthest record is the one of
 *   largest squared distance, then lexicographically smallest;
 * - a group never splits records that are equal in every coordinate: when the k-th
 *   nearest record has copies left, they join its group (a group of more than k);
 * - when fewer than k records would be left after a group, they join it;
 * - centroids are exact (sums kept exactly, fsum.h) over the remaining records.
 * Where no two distances tie and no records are equal, the groups are those of sdcMicro. */
#ifndef DETANON_MDAV_H
#define DETANON_MDAV_H

#include <stddef.h>
#include "host.h"

typedef struct {
    ptrdiff_t n;               /* rows */
    int d;                     /* columns of the distances (those that vary over the data) */
    const double *const *col;  /* d columns of n values */
    const double *center;      /* d means and SDs: z = (x - center) / scale, as R's sweep() */
    const double *scale;
    const ptrdiff_t *rows;     /* 0-based rows, stratum by stratum */
    const ptrdiff_t *off;      /* n_strata + 1 boundaries in rows */
    ptrdiff_t n_strata;
    const int *k;              /* k of each stratum (>= 1; a stratum of fewer than 2k records
                                  is one group) */
    int nthreads;              /* strata run in parallel, one per thread */
    int *group;                /* out: n group ids, 0-based, stratum by stratum, in the
                                  order the groups were formed */
    ptrdiff_t n_groups;        /* out */
    const kernel_host *host;   /* alloc; pause between strata (and inside a stratum run
                                  alone), with the records grouped so far */
} mdav_job;

/* Group every stratum. Returns NULL, or an internal error message. */
const char *mdav_run(mdav_job *job);

/* The mean of every group (ids 0..n_groups-1 in `group`) for each of the p columns
 * col[0..p) of n values, into means (n_groups x p, column-major), and the group sizes
 * into size. Each mean is the correctly rounded exact sum divided by the size; a group
 * whose values of a column are all equal has that value as its mean. The groups are
 * split over nthreads (each mean is computed alone: the same bits for any count). */
void mdav_means(const double *const *col, int p, ptrdiff_t n, const int *group,
                ptrdiff_t n_groups, double *means, int *size, int nthreads, const kernel_host *host);

#endif
