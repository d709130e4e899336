/* The k nearest neighbours of every record inside its stratum, and their centroids: the
 * search driver of anonymise() on kd-trees (kdtree.h). It runs on the calling thread,
 * spreads the queries over OpenMP threads, and between chunks of queries (never inside a
 * parallel region) lets the caller's host (host.h) check for interrupts and report
 * progress. Pure C: memory comes from the host too, so it never touches the R API. */
#ifndef DETANON_KNN_H
#define DETANON_KNN_H

#include <stddef.h>
#include "host.h"

/* One search: the points, their strata, and where the results go. */
typedef struct {
    ptrdiff_t n;
    int d, k, nt;
    const double *const *col;     /* column j of the data */
    const double *center, *scale; /* both NULL, or the search runs on (col - center) / scale */
    const ptrdiff_t *rows;        /* 0-based rows, stratum by stratum */
    const ptrdiff_t *off;         /* stratum s holds rows[off[s] .. off[s + 1]) */
    ptrdiff_t n_strata;
    double **cent;                /* d output columns of n centroids, or NULL */
    int *idx;                     /* or an n x k matrix of 1-based neighbour rows */
    const kernel_host *host;      /* memory; pauses with the number of queries done (of n) */
} knn_job;

/* Every record's k nearest neighbours inside its stratum; each non-empty stratum holds at
 * least k records (knn_check_strata). */
void knn_all(const knn_job *job);

/* Rows grouped by stratum, keeping their order inside a stratum (a counting sort, the same
 * order as R's order(id, method = "radix")): id[i] in 1..n_strata; rows (n) receives the
 * 0-based rows, off (n_strata + 1) the stratum boundaries in it. Pure C. */
void knn_group_rows(const int *id, ptrdiff_t n, ptrdiff_t n_strata, ptrdiff_t *rows, ptrdiff_t *off);

/* Is the stratum contract broken (k < 1, offsets not from 0 to n, a non-empty stratum
 * smaller than k)? A message for an internal error, or NULL. */
const char *knn_check_strata(const ptrdiff_t *off, ptrdiff_t n_strata, ptrdiff_t n, int k);

/* The centroids of every record at several k (attack_recipe()'s candidates at every plausible
 * k): the points z (n x d, column-major), `rows` (0-based, off[n_strata] of them) stratum by stratum
 * with stratum s at rows[off[s] .. off[s + 1]), k[0..n_k) strictly increasing and >= 1. For
 * every k[j] <= its stratum's size, a record's centroid at k[j] goes to out[j * d + c][row]
 * (c < d); the other rows of out are not written. Every centroid has the bits of the search
 * of anonymise() at that k alone (knn_all()). Pure C. */
void knn_centroids_multi(const double *z, ptrdiff_t n, int d, const ptrdiff_t *rows,
                         const ptrdiff_t *off, ptrdiff_t n_strata, const int *k, int n_k, int nt,
                         double *const *out, const kernel_host *host);

#endif
