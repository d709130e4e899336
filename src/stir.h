/* Pure kernels for cluster stirring (Rowe et al.); no R API, see stir_glue.c for glue. */
#ifndef DETANON_STIR_KERNEL_H
#define DETANON_STIR_KERNEL_H

#include <stddef.h>

/* Members of clusters 0..C-1 (cl[i] in 0..C-1): rows[start[c] .. start[c+1]) in increasing
 * row order (a stable counting sort). */
void stir_group(const int *cl, ptrdiff_t n, int C, ptrdiff_t *start, ptrdiff_t *rows);

/* Equation (3) per cluster and variable: the member value minimising the summed distance to
 * the members. Ordinal (nominal[j] == 0): |a - b|, the lower median; nominal: 0/1
 * mismatch, the mode with ties to the smallest code. crow[c + C * j] is the row of a member
 * holding that value (ordinal: the element of rank (m-1)/2 in value-then-row order;
 * nominal: the first row of the mode in that order), radius[c + C * j] the
 * largest member-to-centroid distance. `pairs` has room for the largest cluster. */
typedef struct { double v; ptrdiff_t r; } stir_pair;
void stir_centroid(const double *x, ptrdiff_t n, int d, const int *nominal,
                   const ptrdiff_t *start, const ptrdiff_t *rows, int C, stir_pair *pairs,
                   int *crow, double *radius);

/* Piecewise-linear map of a raw distance onto the Euclidean reference (section 3.2):
 * knots kx (increasing, kx[0] = 0) and ky; beyond the last knot the last segment is
 * extended (slope 1 when there is one knot). */
double stir_map_value(const double *kx, const double *ky, int nk, double dd);

/* Equation (4): for each outlier row o in [from, to) of xo (no x d), the cluster l of xc
 * (L x d) with the smallest sum of mapped distances; ties go to the smaller l. */
void stir_nearest(const double *xo, ptrdiff_t no, ptrdiff_t from, ptrdiff_t to,
                  const double *xc, int L, int d,
                  const int *nominal, const double *const *kx, const double *const *ky,
                  const int *nk, int *target, double *dist);

/* Equation (2), greedily: state of the leader clustering over the records in `order`. */
typedef struct {
    const double *x; ptrdiff_t n; int d;
    const int *nominal; const double *eps; const int *order;
    int *cl;                 /* output, 0-based cluster of each row */
    ptrdiff_t *next, *prev;  /* unassigned records as a list over positions in `order` */
    double *lo, *hi;         /* ranges of the open cluster */
    ptrdiff_t head;          /* first unassigned position, -1 when done */
    int n_clusters;
} stir_greedy;
void stir_greedy_init(stir_greedy *s);
/* Open and fill clusters until about `max_work` records were scanned (at least one
 * cluster); returns 1 when every record is assigned. */
int stir_greedy_step(stir_greedy *s, ptrdiff_t max_work);

/* Fisher-Yates inside each cluster with pre-drawn indices: for each variable j (outer) and
 * cluster c (inner), positions i = m-1 .. 1 of its members swap with draw[next++]
 * (0 <= draw <= i). src (n x d) receives the 1-based source row of each released value. */
void stir_shuffle(const ptrdiff_t *start, const ptrdiff_t *rows, int C, ptrdiff_t n, int d,
                  const int *draw, int *src, ptrdiff_t *buf);

#endif
