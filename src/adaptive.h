/* Adaptive k per record for anonymise_adaptive(): k-nearest-neighbour centroids where
 * every record whose released point is still linkable gets a larger neighbourhood. Pure C:
 * memory and interrupt checks come from the caller's host (host.h). */
#ifndef DETANON_ADAPTIVE_H
#define DETANON_ADAPTIVE_H

#include <stddef.h>
#include "kdtree.h"
#include "host.h"

typedef struct {
    /* input */
    ptrdiff_t n;           /* records */
    int d;                 /* masked columns */
    int nt;                /* threads (threads.h policy) */
    const kd_tree *trees;  /* the per-stratum trees of the original z-scores (a rank index) */
    ptrdiff_t n_strata;
    const int *k_init;     /* n: first k per record, 1 <= k_init <= cap */
    const int *cap;        /* n: largest k per record, <= the record's stratum size */
    int m;                 /* linkage list length (0: no rank test) */
    double target;         /* top-m linkable records allowed (>= 0) */
    const double *xs;      /* n x d scale() of the originals, or NULL: no interval test */
    const double *wr;      /* n: w1 * rmd per record (with xs) */
    int resume;            /* 1: centroids, rank, cost and iflag hold on entry the centroids at
                              k_init and the test of every record on them, as a previous call
                              that ended with `tested` left them (a stage's start) */
    /* output */
    double *centroids;     /* n x d, z-scale, before step 5 */
    int *k;                /* n: final k per record */
    int *rank;             /* n: the last test of every record: its rank (ad_rank()), */
    double *cost;          /* n: its squared distance to its own original, */
    int *iflag;            /* n: and the interval test (0 without xs) */
    int rounds;
    ptrdiff_t n_capped;    /* records still flagged at their cap */
    int tested;            /* 1: the rounds ended with a test of every record on the final
                              centroids (not on columns with no spread) */
} adaptive_job;

/* Run the rounds (see adaptive.c). Returns NULL, or a message for an internal error found
 * before any work (a tree row out of range, k out of range). */
const char *adaptive_k(adaptive_job *job, const kernel_host *host);

/* The steps of a round on one group of strata (the trees of its rank index, n rows), for
 * the partitioned method: the centroids of rows[0..n_rows) (0-based) with k[row] points
 * each, into out (n_rows x d); and their rank tests on their centroids c (n_rows x d)
 * divided by step 5's column SDs csd, into rank and cost (n_rows each). NULL, or a message
 * for an internal error found before any work. */
const char *adaptive_centroids(const kd_tree *trees, ptrdiff_t n_strata, ptrdiff_t n, int d,
                               const int *k, const ptrdiff_t *rows, ptrdiff_t n_rows, int nt,
                               double *out, const kernel_host *host);
const char *adaptive_tests(const kd_tree *trees, ptrdiff_t n_strata, ptrdiff_t n, int d,
                           const double *c, const ptrdiff_t *rows, ptrdiff_t n_rows,
                           const double *csd, int m, int nt, int *rank, double *cost,
                           const kernel_host *host);

/* The centroids of every record at several k (tune_release()'s ladder of k per stratum):
 * z the n x d original z-scores (column-major), rows (0-based) stratum by stratum with
 * stratum s at rows[off[s] .. off[s + 1]), k the n x n_rungs k per record (per record
 * nondecreasing, at most its stratum's size), into out[j] (n x d each): rung j's centroids,
 * bit-identical to those of adaptive_k() at k[, j] (m = 0). NULL, or a message for an
 * internal error found before any work. */
const char *adaptive_ladder(const double *z, ptrdiff_t n, int d, const ptrdiff_t *rows,
                            const ptrdiff_t *off, ptrdiff_t n_strata, const int *k, int n_rungs,
                            int nt, double *const *out, const kernel_host *host);

#endif
