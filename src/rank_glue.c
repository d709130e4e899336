/* Ranks of a record's own point among the points of its stratum, for risk_linkage() (top-m
 * linkage and the expected re-identification probability), risk_replay(), tune_release()
 * and anonymise_adaptive().
 *
 * The points of every stratum are held in a reusable index: one kd-tree per stratum, kept
 * in R vectors (so R's garbage collector owns them and an error or interrupt leaks
 * nothing). tune_release() builds the index of the originals once and every candidate
 * release, and the adaptive kernel, query it; risk_linkage() builds one per call. A query
 * asks, for a row's "query" point (its masked record, or its replayed record), two
 * count-within-radius questions at the distance of the row's own indexed point. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "detanon.h"
#include "kdtree.h"
#include "threads.h"
#include "progress.h"

#define INDEX_LEAF_SIZE 8
/* Queries between two interrupt checks: each query counts at most RANK_LE_CAP points, so
 * a chunk is bounded work (well under a second) however far the query points lie. */
#define RANK_CHUNK ((ptrdiff_t) 1 << 8)
/* The count "at most as close" stops here: it only feeds 1 / count (the re-identification
 * probability, then at most 2^-14 = 6.1e-5 above its exact value: an upper bound) and the
 * tie share of a top-m link (at most m / (RANK_LE_CAP - m) then). Uncapped, a release far
 * from its originals (stirred, shuffled) makes every query count a large share of its
 * stratum: quadratic time. */
#define RANK_LE_CAP ((ptrdiff_t) 1 << 14)

/* Slots of an index (an R list). */
enum { IX_PTS, IX_ROW, IX_LEAF_OF, IX_NODES, IX_BOX, IX_META, IX_OFFSETS, IX_N_SLOTS };

/* ---- kernel (pure C) ---------------------------------------------------------------- */

/* For the query point q whose own point `self` is a point of tree t:
 * *le = number of tree points p with |q - p|^2 <= |q - self|^2 (self included, so >= 1),
 *       counted up to RANK_LE_CAP
 * *lt = number of tree points strictly closer than self, counted up to `cap` (a count of
 *       `cap` means "cap or more").
 * Both distances are summed by kd_point_d2() in the same order, so self is counted in *le
 * and never in *lt, and equal distances are equal bit for bit. */
static void rank_counts(const kd_tree *t, const double *q, const double *self, ptrdiff_t cap,
                        double *lt, double *le, kd_item *stack)
{
    const double ds = kd_point_d2(q, self, t->d);
    *le = (double) kd_count_within(t, q, ds, RANK_LE_CAP, stack);
    /* squared distances are doubles: d2 < ds exactly when d2 <= the next double below ds */
    *lt = ds > 0.0 && cap > 0 ? (double) kd_count_within(t, q, nextafter(ds, 0.0), cap, stack) : 0.0;
}

/* ---- the index ------------------------------------------------------------------------ */

/* Polled by a serial build on the main thread: a Ctrl-C jumps back to R (the index lives in
 * R vectors, scratch memory is R_alloc'd). */
static int rank_poll(void) { R_CheckUserInterrupt(); return 0; }

/* z: n x d points; order (1-based) lists the rows stratum by stratum, stratum s holding
 * order[off[s]..off[s+1]). Returns the index: a list of the trees' buffers, the per-stratum
 * node offsets, node counts and depths, and the offsets. */
SEXP ffi_rank_index(SEXP z, SEXP order, SEXP offsets)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z);
    const R_xlen_t n_strata = XLENGTH(offsets) - 1;
    if (TYPEOF(z) != REALSXP || d < 1 || XLENGTH(order) != n || TYPEOF(order) != INTSXP ||
        TYPEOF(offsets) != INTSXP || n_strata < 0)
        Rf_error("internal error: bad input to ffi_rank_index");
    const int *ord = INTEGER_RO(order), *off = INTEGER_RO(offsets);
    if (n_strata > 0 && (off[0] != 0 || off[n_strata] != n))
        Rf_error("internal error: bad offsets in ffi_rank_index");
    size_t total_nodes = 0;
    for (R_xlen_t s = 0; s < n_strata; s++) {
        const ptrdiff_t ns = (ptrdiff_t) off[s + 1] - off[s];
        if (ns < 0) Rf_error("internal error: decreasing offsets");
        total_nodes += kd_max_nodes(ns, INDEX_LEAF_SIZE);
    }
    SEXP idx = PROTECT(Rf_allocVector(VECSXP, IX_N_SLOTS));
    double *pts = REAL(SET_VECTOR_ELT(idx, IX_PTS, Rf_allocVector(REALSXP, (R_xlen_t) n * d)));
    ptrdiff_t *row = (ptrdiff_t *) RAW(SET_VECTOR_ELT(idx, IX_ROW,
        Rf_allocVector(RAWSXP, (R_xlen_t) n * (R_xlen_t) sizeof(ptrdiff_t))));
    ptrdiff_t *leaf_of = (ptrdiff_t *) RAW(SET_VECTOR_ELT(idx, IX_LEAF_OF,
        Rf_allocVector(RAWSXP, (R_xlen_t) n * (R_xlen_t) sizeof(ptrdiff_t))));
    kd_node *nodes = (kd_node *) RAW(SET_VECTOR_ELT(idx, IX_NODES,
        Rf_allocVector(RAWSXP, (R_xlen_t) total_nodes * (R_xlen_t) sizeof(kd_node))));
    double *box = REAL(SET_VECTOR_ELT(idx, IX_BOX, Rf_allocVector(REALSXP, (R_xlen_t) total_nodes * 2 * d)));
    int *meta = INTEGER(SET_VECTOR_ELT(idx, IX_META, Rf_allocVector(INTSXP, 3 * n_strata)));
    SET_VECTOR_ELT(idx, IX_OFFSETS, Rf_duplicate(offsets));

    ptrdiff_t *rows = (ptrdiff_t *) R_alloc(n > 0 ? n : 1, sizeof(ptrdiff_t));
    for (ptrdiff_t i = 0; i < n; i++) {
        if (ord[i] < 1 || ord[i] > n) Rf_error("internal error: row out of range");
        rows[i] = ord[i] - 1;
    }
    const double *x = REAL_RO(z);
    size_t node_off = 0;
    for (R_xlen_t s = 0; s < n_strata; s++) {
        const ptrdiff_t b = off[s], ns = (ptrdiff_t) off[s + 1] - off[s];
        kd_tree t;
        kd_init(&t, ns, d, INDEX_LEAF_SIZE, pts + (size_t) b * d, row + b, leaf_of + b,
                nodes + node_off, box + node_off * 2 * d);
        t.interrupted = rank_poll; /* a large stratum's build polls (serial, main thread) */
        if (ns > 0) kd_build(&t, x, n, rows + b);
        meta[3 * s] = (int) node_off;
        meta[3 * s + 1] = t.n_nodes;
        meta[3 * s + 2] = t.depth;
        node_off += kd_max_nodes(ns, INDEX_LEAF_SIZE);
        if (s % 64 == 63) R_CheckUserInterrupt();
    }
    UNPROTECT(1);
    return idx;
}

/* Number of points of an index, and their dimension (0 for an empty index). */
ptrdiff_t rank_index_n(SEXP idx)
{
    return (ptrdiff_t) (XLENGTH(VECTOR_ELT(idx, IX_ROW)) / (R_xlen_t) sizeof(ptrdiff_t));
}

int rank_index_d(SEXP idx)
{
    const ptrdiff_t n = rank_index_n(idx);
    return n > 0 ? (int) (XLENGTH(VECTOR_ELT(idx, IX_PTS)) / n) : 0;
}

/* The trees of an index (R_alloc'ed array of n_strata trees pointing into its vectors). */
kd_tree *rank_index_trees(SEXP idx, int d, R_xlen_t *n_strata)
{
    if (TYPEOF(idx) != VECSXP || XLENGTH(idx) != IX_N_SLOTS)
        Rf_error("internal error: not a rank index");
    SEXP offsets = VECTOR_ELT(idx, IX_OFFSETS);
    const int *off = INTEGER_RO(offsets), *meta = INTEGER_RO(VECTOR_ELT(idx, IX_META));
    const R_xlen_t ns_all = XLENGTH(offsets) - 1;
    double *pts = REAL(VECTOR_ELT(idx, IX_PTS)), *box = REAL(VECTOR_ELT(idx, IX_BOX));
    ptrdiff_t *row = (ptrdiff_t *) RAW(VECTOR_ELT(idx, IX_ROW));
    ptrdiff_t *leaf_of = (ptrdiff_t *) RAW(VECTOR_ELT(idx, IX_LEAF_OF));
    kd_node *nodes = (kd_node *) RAW(VECTOR_ELT(idx, IX_NODES));
    kd_tree *trees = (kd_tree *) R_alloc(ns_all > 0 ? ns_all : 1, sizeof(kd_tree));
    for (R_xlen_t s = 0; s < ns_all; s++) {
        const ptrdiff_t b = off[s], ns = (ptrdiff_t) off[s + 1] - off[s];
        kd_init(&trees[s], ns, d, INDEX_LEAF_SIZE, pts + (size_t) b * d, row + b, leaf_of + b,
                nodes + meta[3 * s], box + (size_t) meta[3 * s] * 2 * d);
        trees[s].n_nodes = meta[3 * s + 1];
        trees[s].depth = meta[3 * s + 2];
    }
    *n_strata = ns_all;
    return trees;
}

/* idx: an index of the "tree" points; zq: n x d query points (same rows). `query`: logical
 * of length n, TRUE for the rows to rank. Returns an n x 2 matrix: column 1 the number of
 * tree points of the stratum strictly closer to the row's query point than its own tree
 * point (capped at `cap`), column 2 the number at most as close (capped at RANK_LE_CAP); NA for rows not
 * queried. `progress`: TRUE to show a progress bar (updated between chunks, on the main
 * thread). */
SEXP ffi_index_rank(SEXP idx, SEXP zq, SEXP query, SEXP cap_, SEXP nthreads, SEXP progress)
{
    const ptrdiff_t n = Rf_nrows(zq);
    const int d = Rf_ncols(zq), nt = detanon_threads(nthreads);
    const double capd = Rf_asReal(cap_);
    R_xlen_t n_strata;
    kd_tree *trees = rank_index_trees(idx, d, &n_strata);
    const int *off = INTEGER_RO(VECTOR_ELT(idx, IX_OFFSETS));
    if (TYPEOF(zq) != REALSXP || rank_index_d(idx) != (n > 0 ? d : 0) || rank_index_n(idx) != n ||
        TYPEOF(query) != LGLSXP || XLENGTH(query) != n || !(capd >= 0))
        Rf_error("internal error: bad input to ffi_index_rank");
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, n, 2));
    if (n == 0) { UNPROTECT(1); return out; }
    const ptrdiff_t cap = capd > (double) n ? (ptrdiff_t) n + 1 : (ptrdiff_t) capd;
    double *o = REAL(out);
    const double *xq = REAL_RO(zq);
    const int *want = LOGICAL_RO(query);
    for (ptrdiff_t i = 0; i < 2 * n; i++) o[i] = NA_REAL;
    kd_item *stacks = (kd_item *) R_alloc((size_t) nt * KD_STACK_MAX, sizeof(kd_item));
    double *buf = (double *) R_alloc((size_t) nt * d, sizeof(double));
    SEXP bar = PROTECT(progress_new(progress, (double) n, "Linking"));
    ptrdiff_t since_check = 0;
    for (R_xlen_t s = 0; s < n_strata; s++) {
        const kd_tree *t = &trees[s];
        const ptrdiff_t b = off[s], ns = t->n;
        const int nts = threads_for(nt, (double) ns);
        for (ptrdiff_t from = 0; from < ns; from += RANK_CHUNK) {
            const ptrdiff_t to = from + RANK_CHUNK < ns ? from + RANK_CHUNK : ns;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nts) schedule(dynamic, 64)
#endif
            for (ptrdiff_t p = from; p < to; p++) {
                /* in tree order: a query point lies near its own tree point, so consecutive
                 * queries visit the same part of the tree */
                ptrdiff_t r = t->row[p];
                if (!want[r] || want[r] == NA_LOGICAL) continue;
                int tid = THREAD_ID;
                double *q = buf + (size_t) tid * d;
                for (int j = 0; j < d; j++) q[j] = xq[r + (size_t) j * n];
                rank_counts(t, q, t->pts + (size_t) p * d, cap, o + r, o + r + n,
                            stacks + (size_t) tid * KD_STACK_MAX);
            }
            since_check += to - from;
            if (since_check >= RANK_CHUNK) {
                R_CheckUserInterrupt();
                progress_update(bar, b + to);
                since_check = 0;
            }
        }
    }
    progress_done(bar);
    UNPROTECT(2);
    return out;
}
