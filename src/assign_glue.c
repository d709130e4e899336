/* Glue of attack_assignment(): one-to-one assignment of the intruder's original records
 * to released records within cells (strata x categorical keys), see assign.h.
 *
 * Per cell of nr rows and nc columns (the smaller side is taken as the rows): exact dense
 * assignment when max(nr, nc) <= `limit`; above it the sparse assignment over candidate
 * edges, the `cand` nearest columns of every row and the `cand` nearest rows of every column
 * (kd-trees); when a row cannot be matched over the candidate edges, it and every row its
 * search reached get twice as many nearest columns, and the cell is solved again (rarely
 * more than a few rounds; in the end every row of a component can reach every column). Every cell reports its cost and a lower bound of the optimal
 * cost of the full (dense) problem: the dual objective of the sparse duals v with every u(i)
 * the least c(i, j) - v(j) over all columns (a weighted nearest-neighbour search on a
 * kd-tree), which is feasible for every edge, candidate or not. With the exact solver the
 * bound is the dual of the optimum, equal to the cost up to rounding. All memory is R_alloc'd, so an interrupt (R_CheckUserInterrupt between pieces of
 * work, never inside a parallel region) frees it. */
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include <stdlib.h>
#include "detanon.h"
#include "assign.h"
#include "kdtree.h"
#include "threads.h"

#define ASSIGN_LEAF_SIZE 8
/* Candidates per point, at most, as a multiple of `cand`, when there are ties. */
#define TIE_FACTOR 4
#define QUERY_CHUNK ((ptrdiff_t) 1 << 15)

static void poll_interrupt(void) { R_CheckUserInterrupt(); }

typedef struct {
    int d;
    const double *x;   /* global column-major matrix */
    ptrdiff_t ldx;     /* its rows */
    const int *rows;   /* the cell's rows, 1-based */
    ptrdiff_t n;
} side;

/* Point-major copy of a side. */
static void gather(const side *s, double *out)
{
    for (ptrdiff_t i = 0; i < s->n; i++) {
        ptrdiff_t r = s->rows[i] - 1;
        for (int j = 0; j < s->d; j++) out[(size_t) i * s->d + j] = s->x[r + j * s->ldx];
    }
}

/* The k nearest points of side ts (its rows0, 0-based rows of ts->x; tree t is built here)
 * to every query point (point-major q), and up to (TIE_FACTOR - 1) k more at the distance of
 * the k-th: their local indices into nb[i * k * TIE_FACTOR ...], padded with -1. `loc` maps
 * rows of ts->x to local indices. */
static void knn_edges(kd_tree *t, const side *ts, const ptrdiff_t *rows0, const double *q,
                      ptrdiff_t nq, int k, kd_heap *heaps, int nt, const int *loc, int *nb)
{
    ptrdiff_t *tie_buf = (ptrdiff_t *) R_alloc((size_t) nt * k * TIE_FACTOR, sizeof(ptrdiff_t));
    kd_reuse(t, ts->n);
    t->interrupted = NULL;
    kd_build(t, ts->x, ts->ldx, rows0);
    R_CheckUserInterrupt();
    for (ptrdiff_t c0 = 0; c0 < nq; c0 += QUERY_CHUNK) {
        ptrdiff_t c1 = c0 + QUERY_CHUNK < nq ? c0 + QUERY_CHUNK : nq;
        int ntc = threads_for(nt, (double) (c1 - c0));
        (void) ntc;
#ifdef _OPENMP
#pragma omp parallel for num_threads(ntc) schedule(static)
#endif
        for (ptrdiff_t i = c0; i < c1; i++) {
            kd_heap *h = heaps + THREAD_ID;
            kd_heap_init(h, k, h->pos, h->d2, h->seq, h->stack);
            const double *qi = q + (size_t) i * ts->d;
            kd_knn_point(t, qi, h);
            int *out = nb + (size_t) i * k * TIE_FACTOR;
            for (int m = 0; m < k; m++) out[m] = loc[t->row[h->pos[m]]];
            int m = k;
            const double r2 = h->d2[k - 1];
            if (k < t->n && kd_count_within(t, qi, r2, k + 1, h->stack) > k) {
                /* points tied with the k-th: identical released records (shared centroids)
                 * must all be candidates, or rows near them compete for k of them */
                ptrdiff_t *tie = tie_buf + (size_t) THREAD_ID * k * TIE_FACTOR;
                ptrdiff_t nt2 = assign_ties_at(t, qi, r2, (ptrdiff_t) k * TIE_FACTOR, tie, h->stack);
                for (ptrdiff_t e = 0; e < nt2 && m < k * TIE_FACTOR; e++) {
                    int c = loc[t->row[tie[e]]];
                    int dup = 0;
                    for (int f = 0; f < k; f++) if (out[f] == c) { dup = 1; break; }
                    if (!dup) out[m++] = c;
                }
            }
            for (; m < k * TIE_FACTOR; m++) out[m] = -1;
        }
        R_CheckUserInterrupt();
    }
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *) a, y = *(const int *) b;
    return (x > y) - (x < y);
}

typedef struct {
    ptrdiff_t *ptr;
    int *col;
    double *cost;
} csr;

/* The edges of g and the extra edges (xr[t], xc[t]), t < nx (rows increasing), per row
 * sorted and unique, with their costs; in new R_alloc memory. */
static csr csr_add(const csr *g, ptrdiff_t nr, const ptrdiff_t *xr, const int *xc, ptrdiff_t nx,
                   const double *A, const double *B, int d)
{
    csr h;
    ptrdiff_t nnz = g->ptr[nr] + nx;
    h.ptr = (ptrdiff_t *) R_alloc(nr + 1, sizeof(ptrdiff_t));
    h.col = (int *) R_alloc(nnz > 0 ? nnz : 1, sizeof(int));
    h.cost = (double *) R_alloc(nnz > 0 ? nnz : 1, sizeof(double));
    ptrdiff_t e2 = 0, t = 0;
    for (ptrdiff_t i = 0; i < nr; i++) {
        h.ptr[i] = e2;
        ptrdiff_t b0 = e2;
        for (ptrdiff_t e = g->ptr[i]; e < g->ptr[i + 1]; e++) h.col[e2++] = g->col[e];
        int added = 0;
        while (t < nx && xr[t] == i) { h.col[e2++] = xc[t++]; added = 1; }
        if (added) {
            qsort(h.col + b0, (size_t) (e2 - b0), sizeof(int), cmp_int);
            ptrdiff_t e3 = b0;
            for (ptrdiff_t e = b0; e < e2; e++)
                if (e == b0 || h.col[e] != h.col[e - 1]) h.col[e3++] = h.col[e];
            e2 = e3;
            for (ptrdiff_t e = b0; e < e2; e++)
                h.cost[e] = assign_d2(A + (size_t) i * d, B + (size_t) h.col[e] * d, d);
        } else {
            for (ptrdiff_t e = b0, f = g->ptr[i]; e < e2; e++, f++) h.cost[e] = g->cost[f];
        }
        if ((i & 0xFFFF) == 0xFFFF) R_CheckUserInterrupt();
    }
    h.ptr[nr] = e2;
    return h;
}

/* While rows are unmatched (left > 0): every unmatched row gets twice as many nearest
 * columns (kr[i] per row; tree: the columns) and is added again (warm: its u is 0 and every
 * v <= 0, so its new edges have reduced costs >= 0). A row with every column as a candidate
 * is always matched, so this ends. Returns 0. */
static ptrdiff_t expand_until_matched(csr *g, ptrdiff_t left, ptrdiff_t nr, ptrdiff_t nc, int d,
                                      const double *A, const double *B, const kd_tree *tree,
                                      const int *loc_c, int *kr, ptrdiff_t *col4row, double *u,
                                      double *v, assign_work *w)
{
    while (left > 0) {
        ptrdiff_t extra = 0;
        int kmax = 0;
        for (ptrdiff_t i = 0; i < nr; i++) {
            w->fail[i] = 0;
            if (col4row[i] >= 0) continue;
            kr[i] = 2 * kr[i] < nc ? 2 * kr[i] : (int) nc;
            extra += kr[i];
            if (kr[i] > kmax) kmax = kr[i];
        }
        kd_heap h1 = kd_heap_new(kmax, detanon_alloc);
        ptrdiff_t *xr = (ptrdiff_t *) R_alloc(extra, sizeof(ptrdiff_t));
        int *xc = (int *) R_alloc(extra, sizeof(int));
        ptrdiff_t nx = 0;
        for (ptrdiff_t i = 0; i < nr; i++) {
            if (col4row[i] >= 0) continue;
            u[i] = 0.0;
            kd_heap_init(&h1, kr[i], h1.pos, h1.d2, h1.seq, h1.stack);
            kd_knn_point(tree, A + (size_t) i * d, &h1);
            for (int m = 0; m < kr[i]; m++) { xr[nx] = i; xc[nx++] = loc_c[tree->row[h1.pos[m]]]; }
            if ((nx & 0xFFF) == 0xFFF) R_CheckUserInterrupt();
        }
        *g = csr_add(g, nr, xr, xc, nx, A, B, d);
        ptrdiff_t before = left;
        left = assign_sparse(nr, nc, g->ptr, g->col, g->cost, col4row, u, v, w, 1);
        if (left > before) Rf_error("internal error: the sparse assignment lost rows");
    }
    return 0;
}

/* zr, zc: the row and column points (numeric matrices with the same columns); r_order,
 * c_order: 1-based rows of zr / zc grouped by cell, r_off, c_off: offsets of the cells
 * (same number of cells); limit: the largest cell solved exactly; cand: candidate edges per
 * point in the sparse assignment; rounds: rounds of column generation at most. Returns list(col: for every row of zr in a cell, the
 * 1-based row of zc it is assigned (NA when none), regret: a lower bound of the cost
 * increase of assigning the row elsewhere, cost, bound, sparse, fallback: per cell). */
SEXP ffi_assign(SEXP zr, SEXP zc, SEXP r_order, SEXP r_off, SEXP c_order, SEXP c_off,
                SEXP limit_, SEXP cand_, SEXP rounds_, SEXP nthreads)
{
    const int d = Rf_ncols(zr);
    const ptrdiff_t Nr = Rf_nrows(zr), Nc = Rf_nrows(zc);
    const R_xlen_t n_cells = XLENGTH(r_off) - 1;
    if (TYPEOF(zr) != REALSXP || TYPEOF(zc) != REALSXP || Rf_ncols(zc) != d || d < 1 ||
        TYPEOF(r_order) != INTSXP || TYPEOF(c_order) != INTSXP || TYPEOF(r_off) != INTSXP ||
        TYPEOF(c_off) != INTSXP || XLENGTH(c_off) != XLENGTH(r_off) || n_cells < 0)
        Rf_error("internal error: bad input to ffi_assign");
    const double limit = Rf_asReal(limit_);
    const int cand = Rf_asInteger(cand_), max_rounds = Rf_asInteger(rounds_);
    const int nt = detanon_threads(nthreads);
    if (!(limit >= 1) || cand < 1 || max_rounds < 0) Rf_error("internal error: bad limit or cand in ffi_assign");
    const int *ro = INTEGER_RO(r_order), *co = INTEGER_RO(c_order);
    const int *roff = INTEGER_RO(r_off), *coff = INTEGER_RO(c_off);
    if (n_cells > 0 && (roff[0] != 0 || roff[n_cells] != XLENGTH(r_order) || coff[0] != 0 ||
                        coff[n_cells] != XLENGTH(c_order)))
        Rf_error("internal error: bad offsets in ffi_assign");
    for (R_xlen_t i = 0; i < XLENGTH(r_order); i++)
        if (ro[i] < 1 || ro[i] > Nr) Rf_error("internal error: row out of range in ffi_assign");
    for (R_xlen_t i = 0; i < XLENGTH(c_order); i++)
        if (co[i] < 1 || co[i] > Nc) Rf_error("internal error: column out of range in ffi_assign");

    static const char *names[] = {"col", "regret", "cost", "bound", "sparse", "fallback", "rounds"};
    SEXP out = PROTECT(detanon_named_list(7, names));
    int *res_col = INTEGER(SET_VECTOR_ELT(out, 0, Rf_allocVector(INTSXP, Nr)));
    double *res_reg = REAL(SET_VECTOR_ELT(out, 1, Rf_allocVector(REALSXP, Nr)));
    double *res_cost = REAL(SET_VECTOR_ELT(out, 2, Rf_allocVector(REALSXP, n_cells)));
    double *res_bound = REAL(SET_VECTOR_ELT(out, 3, Rf_allocVector(REALSXP, n_cells)));
    int *res_sparse = LOGICAL(SET_VECTOR_ELT(out, 4, Rf_allocVector(LGLSXP, n_cells)));
    int *res_fb = INTEGER(SET_VECTOR_ELT(out, 5, Rf_allocVector(INTSXP, n_cells)));
    int *res_rounds = INTEGER(SET_VECTOR_ELT(out, 6, Rf_allocVector(INTSXP, n_cells)));
    for (ptrdiff_t i = 0; i < Nr; i++) { res_col[i] = NA_INTEGER; res_reg[i] = NA_REAL; }

    /* buffers for the largest cell */
    ptrdiff_t max_n = 1, max_sparse = 1;
    for (R_xlen_t s = 0; s < n_cells; s++) {
        ptrdiff_t a = roff[s + 1] - roff[s], b = coff[s + 1] - coff[s];
        if (a < 0 || b < 0) Rf_error("internal error: decreasing offsets in ffi_assign");
        ptrdiff_t mx = a > b ? a : b;
        if (mx > max_n) max_n = mx;
        if (mx > limit && mx > max_sparse) max_sparse = mx;
    }
    const int sparse_any = max_sparse > 1 || limit < 1.5;
    double *A = (double *) R_alloc((size_t) max_n * d, sizeof(double));
    double *B = (double *) R_alloc((size_t) max_n * d, sizeof(double));
    ptrdiff_t *col4row = (ptrdiff_t *) R_alloc(max_n, sizeof(ptrdiff_t));
    double *u = (double *) R_alloc(max_n, sizeof(double));
    double *v = (double *) R_alloc(max_n, sizeof(double));
    assign_work w;
    w.shortest = (double *) R_alloc(max_n, sizeof(double));
    w.path = (ptrdiff_t *) R_alloc(max_n, sizeof(ptrdiff_t));
    w.row4col = (ptrdiff_t *) R_alloc(max_n, sizeof(ptrdiff_t));
    w.remaining = (ptrdiff_t *) R_alloc(max_n, sizeof(ptrdiff_t));
    w.heap = (ptrdiff_t *) R_alloc(max_n, sizeof(ptrdiff_t));
    w.heap_pos = (ptrdiff_t *) R_alloc(max_n, sizeof(ptrdiff_t));
    w.sc_list = (ptrdiff_t *) R_alloc(max_n, sizeof(ptrdiff_t));
    w.touched = (ptrdiff_t *) R_alloc(max_n, sizeof(ptrdiff_t));
    w.sr_list = (ptrdiff_t *) R_alloc(max_n, sizeof(ptrdiff_t));
    w.sc = (unsigned char *) R_alloc(max_n, 1);
    w.sr = (unsigned char *) R_alloc(max_n, 1);
    w.fail = NULL;
    w.poll = poll_interrupt;
    w.since_poll = 0.0;
    /* sparse-only buffers */
    kd_tree tree;
    kd_heap *heaps = NULL;
    int *kr = NULL, *loc_r = NULL, *loc_c = NULL, *nb_r = NULL, *nb_c = NULL, *ecol = NULL;
    double *ecost = NULL;
    ptrdiff_t *ptr = NULL, *rows0 = NULL, *rows1 = NULL, *fill = NULL;
    double *wpos = NULL, *nodew = NULL;
    ptrdiff_t *xr = NULL;
    int *xc = NULL;
    kd_item *stack = NULL;
    kd_tree tree2;
    if (sparse_any) {
        tree = kd_new(max_sparse, d, ASSIGN_LEAF_SIZE, detanon_alloc);
        heaps = (kd_heap *) R_alloc(nt, sizeof(kd_heap));
        for (int t = 0; t < nt; t++) heaps[t] = kd_heap_new(cand, detanon_alloc);
        /* indexed by rows of zr or zc, whichever side is the rows of a cell */
        loc_r = (int *) R_alloc(Nr > Nc ? Nr : Nc, sizeof(int));
        loc_c = (int *) R_alloc(Nr > Nc ? Nr : Nc, sizeof(int));
        nb_r = (int *) R_alloc((size_t) max_sparse * cand * TIE_FACTOR, sizeof(int));
        nb_c = (int *) R_alloc((size_t) max_sparse * cand * TIE_FACTOR, sizeof(int));
        ecol = (int *) R_alloc((size_t) max_sparse * cand * TIE_FACTOR * 2, sizeof(int));
        ecost = (double *) R_alloc((size_t) max_sparse * cand * TIE_FACTOR * 2, sizeof(double));
        ptr = (ptrdiff_t *) R_alloc(max_sparse + 1, sizeof(ptrdiff_t));
        fill = (ptrdiff_t *) R_alloc(max_sparse + 1, sizeof(ptrdiff_t));
        rows0 = (ptrdiff_t *) R_alloc(max_sparse, sizeof(ptrdiff_t));
        rows1 = (ptrdiff_t *) R_alloc(max_sparse, sizeof(ptrdiff_t));
        tree2 = kd_new(max_sparse, d, ASSIGN_LEAF_SIZE, detanon_alloc);
        wpos = (double *) R_alloc(max_sparse, sizeof(double));
        nodew = (double *) R_alloc(kd_max_nodes(max_sparse, ASSIGN_LEAF_SIZE), sizeof(double));
        stack = (kd_item *) R_alloc(KD_STACK_MAX, sizeof(kd_item));
        xr = (ptrdiff_t *) R_alloc(max_sparse, sizeof(ptrdiff_t));
        xc = (int *) R_alloc(max_sparse, sizeof(int));
        kr = (int *) R_alloc(max_sparse, sizeof(int));
        w.fail = (unsigned char *) R_alloc(max_sparse, 1);
    }

    for (R_xlen_t s = 0; s < n_cells; s++) {
        side R = {d, REAL_RO(zr), Nr, ro + roff[s], roff[s + 1] - roff[s]};
        side C = {d, REAL_RO(zc), Nc, co + coff[s], coff[s + 1] - coff[s]};
        res_sparse[s] = 0;
        res_fb[s] = 0;
        res_rounds[s] = 0;
        res_cost[s] = 0.0;
        res_bound[s] = 0.0;
        if (R.n == 0 || C.n == 0) continue;
        /* the smaller side is assigned into the larger */
        const int swap = R.n > C.n;
        const side *P = swap ? &C : &R, *Q = swap ? &R : &C;
        const ptrdiff_t nr = P->n, nc = Q->n;
        gather(P, A);
        gather(Q, B);
        double cost = 0.0, bound;
        if ((double) nc <= limit) {
            assign_dense(nr, nc, d, A, B, col4row, u, v, &w);
            double dual = 0.0;
            for (ptrdiff_t i = 0; i < nr; i++) {
                cost += assign_d2(A + (size_t) i * d, B + (size_t) col4row[i] * d, d);
                dual += u[i];
            }
            for (ptrdiff_t j = 0; j < nc; j++) dual += v[j] < 0 ? v[j] : 0.0;
            bound = dual;
            if (!swap) {
                /* regret: best alternative column by c - v, against the assigned one
                 * (an interrupt check about every 2^20 distances) */
                ptrdiff_t polls = 0;
                for (ptrdiff_t i = 0; i < nr; i++) {
                    const double *ai = A + (size_t) i * d;
                    ptrdiff_t a = col4row[i];
                    double own = assign_d2(ai, B + (size_t) a * d, d) - v[a], alt = INFINITY;
                    for (ptrdiff_t j = 0; j < nc; j++) {
                        if (j == a) continue;
                        double r = assign_d2(ai, B + (size_t) j * d, d) - v[j];
                        if (r < alt) alt = r;
                    }
                    res_reg[R.rows[i] - 1] = isfinite(alt) ? (alt > own ? alt - own : 0.0) : R_PosInf;
                    if ((double) nc * (i + 1) >= 1048576.0 * (double) (polls + 1)) { polls++; R_CheckUserInterrupt(); }
                }
                R_CheckUserInterrupt();
            }
        } else {
            res_sparse[s] = 1;
            const int kq = cand < nc ? cand : (int) nc; /* columns per row */
            const int kp = cand < nr ? cand : (int) nr; /* rows per column */
            for (ptrdiff_t i = 0; i < nr; i++) loc_r[P->rows[i] - 1] = (int) i;
            for (ptrdiff_t j = 0; j < nc; j++) loc_c[Q->rows[j] - 1] = (int) j;
            /* nearest columns of every row (tree: the columns, kept for the cell) */
            for (ptrdiff_t j = 0; j < nc; j++) rows0[j] = Q->rows[j] - 1;
            knn_edges(&tree, Q, rows0, A, nr, kq, heaps, nt, loc_c, nb_r);
            /* nearest rows of every column (tree2: the rows) */
            for (ptrdiff_t i = 0; i < nr; i++) rows1[i] = P->rows[i] - 1;
            knn_edges(&tree2, P, rows1, B, nc, kp, heaps, nt, loc_r, nb_c);
            /* CSR by row: own kq edges, then the reverse edges, sorted and unique */
            const int wq = kq * TIE_FACTOR, wp = kp * TIE_FACTOR;
            for (ptrdiff_t i = 0; i <= nr; i++) ptr[i] = 0;
            for (ptrdiff_t i = 0; i < nr; i++)
                for (int m = 0; m < wq; m++) if (nb_r[(size_t) i * wq + m] >= 0) ptr[i + 1]++;
            for (ptrdiff_t j = 0; j < nc; j++)
                for (int m = 0; m < wp; m++) {
                    int i = nb_c[(size_t) j * wp + m];
                    if (i >= 0) ptr[i + 1]++;
                }
            for (ptrdiff_t i = 0; i < nr; i++) ptr[i + 1] += ptr[i];
            for (ptrdiff_t i = 0; i < nr; i++) fill[i] = ptr[i];
            for (ptrdiff_t i = 0; i < nr; i++)
                for (int m = 0; m < wq; m++) {
                    int j = nb_r[(size_t) i * wq + m];
                    if (j >= 0) ecol[fill[i]++] = j;
                }
            for (ptrdiff_t j = 0; j < nc; j++)
                for (int m = 0; m < wp; m++) {
                    int i = nb_c[(size_t) j * wp + m];
                    if (i >= 0) ecol[fill[i]++] = (int) j;
                }
            ptrdiff_t e_out = 0;
            for (ptrdiff_t i = 0; i < nr; i++) {
                ptrdiff_t b0 = ptr[i], b1 = ptr[i + 1];
                qsort(ecol + b0, (size_t) (b1 - b0), sizeof(int), cmp_int);
                ptr[i] = e_out;
                for (ptrdiff_t e = b0; e < b1; e++) {
                    if (e > b0 && ecol[e] == ecol[e - 1]) continue;
                    ecol[e_out] = ecol[e];
                    ecost[e_out] = assign_d2(A + (size_t) i * d, B + (size_t) ecol[e] * d, d);
                    e_out++;
                }
                if ((i & 0xFFFF) == 0xFFFF) R_CheckUserInterrupt();
            }
            ptr[nr] = e_out;
            csr g = {ptr, ecol, ecost};
            for (ptrdiff_t i = 0; i < nr; i++) { w.fail[i] = 0; kr[i] = kq; }
            ptrdiff_t left = assign_sparse(nr, nc, g.ptr, g.col, g.cost, col4row, u, v, &w, 0);
            res_fb[s] = (int) left;
            left = expand_until_matched(&g, left, nr, nc, d, A, B, &tree, loc_c, kr, col4row, u, v, &w);
            /* column generation: the least c(i, j) - v(j) over every column (a weighted
             * nearest-neighbour search) below u(i) is an edge of negative reduced cost
             * missing from the candidates; add those edges and solve again, until there is
             * none (the assignment is then optimal for the full problem) or `rounds`
             * rounds. Every round also gives a feasible dual of the full problem: v (<= 0)
             * and u'(i) = that least value, whose objective is a lower bound. */
            const int square = nr == nc;
            double best = -INFINITY;
            for (int round = 0;; round++) {
                for (ptrdiff_t p = 0; p < nc; p++) wpos[p] = v[loc_c[tree.row[p]]] < 0 ? -v[loc_c[tree.row[p]]] : 0.0;
                assign_node_weights(&tree, wpos, nodew);
                double dual = 0.0;
                for (ptrdiff_t j = 0; j < nc; j++) dual += v[j] < 0 ? v[j] : 0.0;
                ptrdiff_t nx = 0;
                cost = 0.0;
                for (ptrdiff_t i = 0; i < nr; i++) {
                    double b1, b2;
                    ptrdiff_t p1;
                    const double *ai = A + (size_t) i * d;
                    assign_weighted_nn2(&tree, nodew, wpos, ai, &b1, &p1, &b2, stack);
                    ptrdiff_t a = col4row[i];
                    const int j1 = loc_c[tree.row[p1]];
                    double ca = assign_d2(ai, B + (size_t) a * d, d);
                    double own = ca - (v[a] < 0 ? v[a] : 0.0), alt = j1 == a ? b2 : b1;
                    cost += ca;
                    dual += b1;
                    if (!swap) res_reg[P->rows[i] - 1] = isfinite(alt) ? (alt > own ? alt - own : 0.0) : R_PosInf;
                    if (b1 < own - 1e-12 * (1.0 + fabs(own))) { xr[nx] = i; xc[nx] = j1; nx++; }
                    if ((i & 0xFFFF) == 0xFFFF) R_CheckUserInterrupt();
                }
                if (dual > best) best = dual;
                if (!nx || round >= max_rounds) break;
                g = csr_add(&g, nr, xr, xc, nx, A, B, d);
                if (square) {
                    /* warm: free the rows with a better edge, then add them again */
                    for (ptrdiff_t t = 0; t < nx; t++) {
                        ptrdiff_t i = xr[t];
                        w.row4col[col4row[i]] = -1;
                        col4row[i] = -1;
                        double m = INFINITY;
                        for (ptrdiff_t e = g.ptr[i]; e < g.ptr[i + 1]; e++) {
                            double r = g.cost[e] - v[g.col[e]];
                            if (r < m) m = r;
                        }
                        u[i] = m;
                    }
                    left = assign_sparse(nr, nc, g.ptr, g.col, g.cost, col4row, u, v, &w, 1);
                } else {
                    left = assign_sparse(nr, nc, g.ptr, g.col, g.cost, col4row, u, v, &w, 0);
                }
                left = expand_until_matched(&g, left, nr, nc, d, A, B, &tree, loc_c, kr, col4row, u, v, &w);
                res_rounds[s] = round + 1;
            }
            bound = best;
        }
        /* a lower bound above the cost is rounding: the assignment is optimal */
        res_cost[s] = cost;
        res_bound[s] = bound < cost ? bound : cost;
        for (ptrdiff_t i = 0; i < nr; i++) {
            ptrdiff_t a = col4row[i];
            if (a < 0) continue;
            if (!swap) res_col[P->rows[i] - 1] = Q->rows[a];
            else res_col[Q->rows[a] - 1] = P->rows[i];
        }
        R_CheckUserInterrupt();
    }
    UNPROTECT(1);
    return out;
}

/* The k nearest points of zt to every point of zq within cells (the lookup of
 * attack_recipe(), the candidates of attack_fellegi_sunter()): t_order, q_order the 1-based
 * rows of zt / zq grouped by cell, t_off, q_off the offsets of the cells (same number).
 * Returns list(index: an Nq x k matrix of 1-based rows of zt, nearest first, NA where the
 * cell has fewer points; d2: their squared distances, Inf where missing). Ties are ordered
 * as kd_knn_point() orders them (by coordinates). */
SEXP ffi_nearest_in_cells(SEXP zt, SEXP zq, SEXP t_order, SEXP t_off, SEXP q_order, SEXP q_off,
                          SEXP k_)
{
    const int d = Rf_ncols(zt), k = Rf_asInteger(k_);
    const ptrdiff_t Nt = Rf_nrows(zt), Nq = Rf_nrows(zq);
    const R_xlen_t n_cells = XLENGTH(t_off) - 1;
    if (TYPEOF(zt) != REALSXP || TYPEOF(zq) != REALSXP || Rf_ncols(zq) != d || d < 1 || k < 1 ||
        TYPEOF(t_order) != INTSXP || TYPEOF(q_order) != INTSXP || TYPEOF(t_off) != INTSXP ||
        TYPEOF(q_off) != INTSXP || XLENGTH(q_off) != XLENGTH(t_off) || n_cells < 0)
        Rf_error("internal error: bad input to ffi_nearest_in_cells");
    const int *to = INTEGER_RO(t_order), *qo = INTEGER_RO(q_order);
    const int *toff = INTEGER_RO(t_off), *qoff = INTEGER_RO(q_off);
    if (n_cells > 0 && (toff[0] != 0 || toff[n_cells] != XLENGTH(t_order) || qoff[0] != 0 ||
                        qoff[n_cells] != XLENGTH(q_order)))
        Rf_error("internal error: bad offsets in ffi_nearest_in_cells");
    for (R_xlen_t i = 0; i < XLENGTH(t_order); i++)
        if (to[i] < 1 || to[i] > Nt) Rf_error("internal error: row out of range in ffi_nearest_in_cells");
    for (R_xlen_t i = 0; i < XLENGTH(q_order); i++)
        if (qo[i] < 1 || qo[i] > Nq) Rf_error("internal error: row out of range in ffi_nearest_in_cells");
    static const char *names[] = {"index", "d2"};
    SEXP out = PROTECT(detanon_named_list(2, names));
    int *idx = INTEGER(SET_VECTOR_ELT(out, 0, Rf_allocMatrix(INTSXP, Nq, k)));
    double *dd = REAL(SET_VECTOR_ELT(out, 1, Rf_allocMatrix(REALSXP, Nq, k)));
    for (ptrdiff_t i = 0; i < Nq * (ptrdiff_t) k; i++) { idx[i] = NA_INTEGER; dd[i] = R_PosInf; }
    ptrdiff_t max_t = 1;
    for (R_xlen_t s = 0; s < n_cells; s++) {
        ptrdiff_t a = toff[s + 1] - toff[s];
        if (a < 0 || qoff[s + 1] < qoff[s]) Rf_error("internal error: decreasing offsets in ffi_nearest_in_cells");
        if (a > max_t) max_t = a;
    }
    kd_tree t = kd_new(max_t, d, ASSIGN_LEAF_SIZE, detanon_alloc);
    kd_heap h = kd_heap_new(k, detanon_alloc);
    ptrdiff_t *rows = (ptrdiff_t *) R_alloc(max_t, sizeof(ptrdiff_t));
    double *q = (double *) R_alloc(d, sizeof(double));
    const double *xt = REAL_RO(zt), *xq = REAL_RO(zq);
    ptrdiff_t done = 0;
    for (R_xlen_t s = 0; s < n_cells; s++) {
        const ptrdiff_t nt = toff[s + 1] - toff[s];
        if (nt == 0) continue;
        for (ptrdiff_t i = 0; i < nt; i++) rows[i] = to[toff[s] + i] - 1;
        kd_reuse(&t, nt);
        t.interrupted = NULL;
        kd_build(&t, xt, Nt, rows);
        const int kk = nt < k ? (int) nt : k;
        for (ptrdiff_t e = qoff[s]; e < qoff[s + 1]; e++) {
            ptrdiff_t r = qo[e] - 1;
            for (int j = 0; j < d; j++) q[j] = xq[r + j * Nq];
            kd_heap_init(&h, kk, h.pos, h.d2, h.seq, h.stack);
            kd_knn_point(&t, q, &h);
            for (int m = 0; m < kk; m++) {
                idx[r + (ptrdiff_t) m * Nq] = (int) (t.row[h.pos[m]] + 1);
                dd[r + (ptrdiff_t) m * Nq] = h.d2[m];
            }
            if ((++done & 0xFFFF) == 0) R_CheckUserInterrupt();
        }
        R_CheckUserInterrupt();
    }
    UNPROTECT(1);
    return out;
}
