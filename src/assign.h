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
 * - assign_sparse(): the candidate edges only (a CSR list per row), with a binary heap,
 *   between groups: identical rows are one row group with a supply (its size), identical
 *   columns one column group with a capacity (a transportation problem, solved one record
 *   at a time; a search passes through a group once, so ties cost one node, not one per
 *   record and one edge per record from every row). With every group of one point it is
 *   the record-level method. Exact for the sparse problem; records with no augmenting path
 *   over the candidate edges are left unmatched for the caller's fallback. */
#ifndef DETANON_ASSIGN_H
#define DETANON_ASSIGN_H

#include <stddef.h>
#include "host.h"
#include "kdtree.h"

/* Work space for problems of up to nr rows and nc columns. */
typedef struct {
    double *shortest;       /* nc */
    ptrdiff_t *path;        /* nc */
    ptrdiff_t *row4col;     /* nc (dense) */
    ptrdiff_t *remaining;   /* nc (dense) */
    ptrdiff_t *heap;        /* nc (sparse) */
    ptrdiff_t *heap_pos;    /* nc (sparse), -1 when not in the heap */
    ptrdiff_t *sc_list;     /* nc */
    ptrdiff_t *touched;     /* nc (sparse) */
    ptrdiff_t *sr_list;     /* nr */
    unsigned char *sc;      /* nc */
    unsigned char *sr;      /* nr */
    unsigned char *dead;    /* nc (sparse): 1 for the column groups a failed search reached
                               (set and used within one assign_sparse() call) */
    /* sparse: column group g has the slots goff[g] .. goff[g + 1]) (its capacity), of which
     * the first used[g] hold the row group of one record each (mem[slot]); row group h has
     * rsize[h] records, rem[h] of them not yet placed; via[h], via_slot[h]: the column
     * group and slot a search reached it through */
    const ptrdiff_t *goff, *rsize;
    const ptrdiff_t *order; /* the order the row groups are placed in (NULL: 0, 1, ...) */
    ptrdiff_t *used;        /* nc */
    ptrdiff_t *mem;         /* total capacity */
    ptrdiff_t *rem, *via, *via_slot; /* nr */
    /* when not NULL, paused (host_pause(), on the calling thread) about every 2^20 units of
     * work: the glue's host may jump back to R, so every buffer comes from host->alloc */
    const kernel_host *host;
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

/* The candidate edges of row group h are col[ptr[h] .. ptr[h + 1]) with costs cost[...];
 * row groups 0..nr-1 with the sizes w->rsize, column groups 0..nc-1 with the capacities of
 * w->goff. Fills the duals u, v (one per group), w->used, w->mem and w->rem (records of a
 * row group left without an augmenting path over the candidate edges). A search that fails
 * changes nothing; the column groups it reached are closed (every edge of their records
 * leads back into them) and full, and stay so while the call lasts (no augmenting path can
 * pass through them), so a later search whose edges all lead into them fails without
 * searching (w->dead). Returns the number of records left unmatched. warm:
 * continue from a previous call (its u, v, w->rem and the groups' slots kept), placing the
 * records left; new edges must then have reduced costs >= 0. */
ptrdiff_t assign_sparse(ptrdiff_t nr, ptrdiff_t nc, const ptrdiff_t *ptr, const int *col,
                        const double *cost, double *u, double *v, assign_work *w, int warm);

/* The dual bound over every column, not only the candidates, and the pricing of column
 * generation. With column weights w(j) = -v(j) >= 0 at tree positions (wpos), the K least
 * |q - b(j)|^2 + w(j) over all tree points (K >= 2), in increasing order (val, and pos their
 * tree positions; Inf and -1 past the tree's points), by a depth-first kd-tree search pruned
 * by box distance + the least weight in the box (nodew, from assign_node_weights()).
 * st: a stack of KD_STACK_MAX items. */
void assign_node_weights(const kd_tree *t, const double *wpos, double *nodew);
void assign_weighted_knn(const kd_tree *t, const double *nodew, const double *wpos, const double *q,
                         int K, double *val, ptrdiff_t *pos, kd_item *st);

/* Tree positions of up to `cap` points at squared distance exactly r2 from q (ties at the
 * boundary of a k-nearest list), into out; returns their number. st: KD_STACK_MAX items. */
ptrdiff_t assign_ties_at(const kd_tree *t, const double *q, double r2, ptrdiff_t cap, ptrdiff_t *out,
                         kd_item *st);

/* The result of assign_cells() (caller-owned): per row of zr, col (1-based row of zc it is
 * assigned) and regret (a lower bound of the cost increase of assigning it elsewhere, the
 * least reduced cost of another column under the greatest optimal dual; only for cells whose
 * rows are zr's), left untouched for rows not assigned; per cell, cost,
 * bound (a lower bound of the optimal cost of the dense problem), sparse (1 when solved over
 * candidate edges), fallback (rows the first sparse solve left unmatched), rounds (of
 * column generation) and auction (1 when solved again from the auction's duals). */
typedef struct {
    int *col;
    double *regret, *cost, *bound;
    int *sparse, *fallback, *rounds, *auction;
} assign_out;

/* attack_assignment(): zr (Nr x d) and zc (Nc x d), column-major; ro, co: 1-based rows of
 * zr / zc grouped by cell, cell s holding ro[roff[s]..roff[s + 1]) and co[coff[s]..]. Per
 * cell the smaller side is assigned into the larger: exactly (assign_dense()) when the larger
 * side has at most `limit` points, else over candidate edges (the `cand` nearest columns of
 * every row and rows of every column, kd-trees, OpenMP over nt threads), with expansion of
 * the rows a search cannot match and up to max_rounds rounds of column generation, each also
 * giving a dual lower bound. A square cell (max_rounds > 0) whose candidates leave 1 row
 * in 20 or more unmatched is solved again, once, from the prices of an epsilon-scaling
 * auction over every column group (serial). Scratch from host->alloc; host pauses between
 * pieces of work (never in a parallel region). Returns NULL, or a message for an internal error. */
const char *assign_cells(const double *zr, ptrdiff_t Nr, const double *zc, ptrdiff_t Nc, int d,
                         const int *ro, const int *roff, const int *co, const int *coff,
                         ptrdiff_t n_cells, double limit, int cand, int max_rounds, int nt,
                         const assign_out *res, const kernel_host *host);

#endif
