/* One-to-one assignment of points to points at least squared Euclidean cost (the
 * maximum-knowledge intruder's matching, attack_assignment()). Pure C: no R API. The caller
 * owns every buffer.
 *
 * Both solvers are the shortest augmenting path method of Jonker and Volgenant (1987) in the
 * form of Crouse (2016) for rectangular problems (nr <= nc rows x columns): rows are added
 * one at a time, each by a Dijkstra search on reduced costs c(i, j) - u(i) - v(j) >= 0 for
 * the shortest path to a free column, after which the duals u, v are updated and the path is
 * flipped. Column duals v start at 0 and only decrease, so v <= 0 throughout (the dual of a
 * rectangular problem needs v <= 0 to give a lower bound).
 * - assign_dense(): every column is a candidate; the costs are computed from the points on
 *   the fly (O(nr + nc) memory, O(nr * nc * path length) time). Exact.
 * - assign_sparse(): the candidate edges only (a CSR list per row), with a binary heap.
 *   Exact for the sparse problem; a row with no augmenting path over the candidate edges is
 *   left unmatched (col4row = -1) for the caller's fallback. */
#ifndef DETANON_ASSIGN_H
#define DETANON_ASSIGN_H

#include <stddef.h>

/* Polled on the main thread about every 2^20 units of work when not NULL (it may jump
 * back to R; every buffer must then be freed by R). */
typedef void (*assign_poll)(void);

/* Work space for problems of up to nr rows and nc columns. */
typedef struct {
    double *shortest;       /* nc */
    ptrdiff_t *path;        /* nc */
    ptrdiff_t *row4col;     /* nc */
    ptrdiff_t *remaining;   /* nc (dense) */
    ptrdiff_t *heap;        /* nc (sparse) */
    ptrdiff_t *heap_pos;    /* nc (sparse), -1 when not in the heap */
    ptrdiff_t *sc_list;     /* nc */
    ptrdiff_t *touched;     /* nc (sparse) */
    ptrdiff_t *sr_list;     /* nr */
    unsigned char *sc;      /* nc */
    unsigned char *sr;      /* nr (dense) */
    unsigned char *fail;    /* nr (sparse) or NULL: set to 1 for the rows a failed search
                               reached (their edges lead only to columns they hold) */
    assign_poll poll;
    double since_poll;
} assign_work;

/* Squared distance between the d-vectors a and b, summed in dimension order. */
static inline double assign_d2(const double *a, const double *b, int d)
{
    double s = 0.0;
    for (int j = 0; j < d; j++) { double e = a[j] - b[j]; s += e * e; }
    return s;
}

/* Rows a[nr * d] and columns b[nc * d] (point-major), nr <= nc. Fills col4row[nr] (0-based
 * column of each row), the duals u[nr], v[nc]. Returns the number of rows left unmatched
 * (0 unless a cost is not finite). */
ptrdiff_t assign_dense(ptrdiff_t nr, ptrdiff_t nc, int d, const double *a, const double *b,
                       ptrdiff_t *col4row, double *u, double *v, assign_work *w);

/* The candidate edges of row i are col[ptr[i] .. ptr[i + 1]) with costs cost[...]; columns
 * 0..nc-1. Fills col4row (-1: no augmenting path for that row over the candidate edges),
 * u, v; w->fail marks the rows that need more edges. Returns the number of rows left
 * unmatched. warm: continue from a previous call (its col4row, u, v and w->row4col kept),
 * adding the unmatched rows; new edges must then have reduced costs >= 0. */
ptrdiff_t assign_sparse(ptrdiff_t nr, ptrdiff_t nc, const ptrdiff_t *ptr, const int *col,
                        const double *cost, ptrdiff_t *col4row, double *u, double *v,
                        assign_work *w, int warm);

/* The dual bound over every column, not only the candidates. With column weights w(j) =
 * -v(j) >= 0 at tree positions (wpos), the least and second least |q - b(j)|^2 + w(j) over
 * all tree points (b1, b2; p1: the tree position of the least), by a best-first kd-tree search
 * pruned by box distance + the least weight in the box (nodew, from assign_node_weights()).
 * st: a stack of KD_STACK_MAX items. */
#include "kdtree.h"
void assign_node_weights(const kd_tree *t, const double *wpos, double *nodew);
void assign_weighted_nn2(const kd_tree *t, const double *nodew, const double *wpos, const double *q,
                         double *b1, ptrdiff_t *p1, double *b2, kd_item *st);

/* Tree positions of up to `cap` points at squared distance exactly r2 from q (ties at the
 * boundary of a k-nearest list), into out; returns their number. st: KD_STACK_MAX items. */
ptrdiff_t assign_ties_at(const kd_tree *t, const double *q, double r2, ptrdiff_t cap, ptrdiff_t *out,
                         kd_item *st);

#endif
