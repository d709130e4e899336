/* Glue for the rank index: ranks of a record's own point among the points of its stratum,
 * for risk_linkage() (top-m linkage and the expected re-identification probability),
 * risk_replay(), tune_release() and anonymise_adaptive(); the kernels are in rank.c.
 *
 * The points of every stratum are held in a reusable index: one kd-tree per stratum, kept
 * in R vectors (so R's garbage collector owns them and an error or interrupt leaks
 * nothing). tune_release() builds the index of the originals once and every candidate
 * release, and the adaptive kernel, query it; risk_linkage() builds one per call. A query
 * asks, for a row's "query" point (its masked record, or its replayed record), two
 * count-within-radius questions at the distance of the row's own indexed point. */
#include "detanon.h"
#include "rank.h"
#include "progress.h"

/* Slots of an index (an R list). */
enum { IX_PTS, IX_ROW, IX_LEAF_OF, IX_NODES, IX_BOX, IX_META, IX_OFFSETS,
       /* the groups of tied points (rank_distinct()): their trees' slots in the same order
        * (IX_G + IX_PTS, ...), then the points per position and per node */
       IX_G, IX_G_W = IX_G + IX_OFFSETS + 1, IX_G_NW, IX_N_SLOTS };

/* A vector of the index, zeroed, so that an index written to a file (saveRDS()) carries no
 * uninitialised bytes (a kd_node's padding, nodes and boxes a tree does not use). */
static SEXP zeroed(SEXP x)
{
    size_t bytes = (size_t) XLENGTH(x) * (TYPEOF(x) == RAWSXP ? 1 : TYPEOF(x) == INTSXP ? sizeof(int) : sizeof(double));
    if (bytes) memset(DATAPTR(x), 0, bytes);
    return x;
}

static void *raw_slot(SEXP idx, int slot, size_t n, size_t size)
{
    Rbyte *r = RAW(SET_VECTOR_ELT(idx, slot, zeroed(Rf_allocVector(RAWSXP, (R_xlen_t) (n * size)))));
    return r;
}

/* The groups of tied points of the built trees of idx, into its IX_G_ slots. */
static void rank_index_groups_build(SEXP idx, const kd_tree *trees, R_xlen_t n_strata, ptrdiff_t n, int d,
                                    const kernel_host *host)
{
    ptrdiff_t *rep = (ptrdiff_t *) R_alloc(n > 0 ? n : 1, sizeof(ptrdiff_t));
    double *mult = (double *) R_alloc(n > 0 ? n : 1, sizeof(double));
    int *goff = INTEGER(SET_VECTOR_ELT(idx, IX_G + IX_OFFSETS, zeroed(Rf_allocVector(INTSXP, n_strata + 1))));
    rank_distinct(trees, n_strata, n, rep, mult, goff, host);
    const ptrdiff_t ng = goff[n_strata];
    size_t total_nodes = 0;
    for (R_xlen_t s = 0; s < n_strata; s++)
        if (goff[s + 1] > goff[s])
            total_nodes += kd_max_nodes((ptrdiff_t) goff[s + 1] - goff[s], RANK_LEAF_SIZE);
    double *pts = REAL(SET_VECTOR_ELT(idx, IX_G + IX_PTS, zeroed(Rf_allocVector(REALSXP, (R_xlen_t) ng * d))));
    ptrdiff_t *row = (ptrdiff_t *) raw_slot(idx, IX_G + IX_ROW, ng, sizeof(ptrdiff_t));
    ptrdiff_t *leaf_of = (ptrdiff_t *) raw_slot(idx, IX_G + IX_LEAF_OF, ng, sizeof(ptrdiff_t));
    kd_node *nodes = (kd_node *) raw_slot(idx, IX_G + IX_NODES, total_nodes, sizeof(kd_node));
    double *box = REAL(SET_VECTOR_ELT(idx, IX_G + IX_BOX, 
                                      zeroed(Rf_allocVector(REALSXP, (R_xlen_t) total_nodes * 2 * d))));
    int *meta = INTEGER(SET_VECTOR_ELT(idx, IX_G + IX_META, zeroed(Rf_allocVector(INTSXP, 3 * n_strata))));
    double *w = REAL(SET_VECTOR_ELT(idx, IX_G_W, zeroed(Rf_allocVector(REALSXP, ng))));
    double *nw = REAL(SET_VECTOR_ELT(idx, IX_G_NW, zeroed(Rf_allocVector(REALSXP, (R_xlen_t) total_nodes))));
    rank_build_groups(trees, n_strata, rep, mult, goff, pts, row, leaf_of, nodes, box, w, nw, meta, host);
}

/* z: n x d points; order (1-based) lists the rows stratum by stratum, stratum s holding
 * order[off[s]..off[s+1]). Returns the index: a list of the trees' buffers, the per-stratum
 * node offsets, node counts and depths, the offsets, and the trees of the groups of tied
 * points of the strata that hold many (rank_distinct()). */
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
        total_nodes += kd_max_nodes(ns, RANK_LEAF_SIZE);
    }
    SEXP idx = PROTECT(Rf_allocVector(VECSXP, IX_N_SLOTS));
    double *pts = REAL(SET_VECTOR_ELT(idx, IX_PTS, zeroed(Rf_allocVector(REALSXP, (R_xlen_t) n * d))));
    ptrdiff_t *row = (ptrdiff_t *) RAW(SET_VECTOR_ELT(idx, IX_ROW, 
        zeroed(Rf_allocVector(RAWSXP, (R_xlen_t) n * (R_xlen_t) sizeof(ptrdiff_t)))));
    ptrdiff_t *leaf_of = (ptrdiff_t *) RAW(SET_VECTOR_ELT(idx, IX_LEAF_OF, 
        zeroed(Rf_allocVector(RAWSXP, (R_xlen_t) n * (R_xlen_t) sizeof(ptrdiff_t)))));
    kd_node *nodes = (kd_node *) raw_slot(idx, IX_NODES, (size_t) total_nodes, sizeof(kd_node));
    double *box = REAL(SET_VECTOR_ELT(idx, IX_BOX, zeroed(Rf_allocVector(REALSXP, (R_xlen_t) total_nodes * 2 * d))));
    int *meta = INTEGER(SET_VECTOR_ELT(idx, IX_META, zeroed(Rf_allocVector(INTSXP, 3 * n_strata))));
    SET_VECTOR_ELT(idx, IX_OFFSETS, Rf_duplicate(offsets));

    const kernel_host host = detanon_host(R_NilValue);
    const char *bad = rank_build(REAL_RO(z), n, d, ord, off, n_strata, pts, row, leaf_of, nodes, box,
                                 meta, &host);
    if (bad) Rf_error("internal error in ffi_rank_index: %s", bad);
    R_xlen_t ns_built;
    const kd_tree *trees = rank_index_trees(idx, d, &ns_built);
    rank_index_groups_build(idx, trees, ns_built, n, d, &host);
    static const char *slots[IX_N_SLOTS] = {"pts", "row", "leaf_of", "nodes", "box", "meta", "offsets",
                                           "g_pts", "g_row", "g_leaf_of", "g_nodes", "g_box", "g_meta",
                                           "g_offsets", "g_w", "g_nw"};
    SEXP names = PROTECT(Rf_allocVector(STRSXP, IX_N_SLOTS));
    for (int i = 0; i < IX_N_SLOTS; i++) SET_STRING_ELT(names, i, Rf_mkChar(slots[i]));
    Rf_setAttrib(idx, R_NamesSymbol, names);
    UNPROTECT(2);
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

/* The tree of stratum s whose buffers are the slots base + IX_PTS, ... of an index. */
static void slot_tree(SEXP idx, int base, int d, R_xlen_t s, kd_tree *t)
{
    const int *off = INTEGER_RO(VECTOR_ELT(idx, base + IX_OFFSETS));
    const int *meta = INTEGER_RO(VECTOR_ELT(idx, base + IX_META));
    const ptrdiff_t b = off[s], ns = (ptrdiff_t) off[s + 1] - off[s];
    kd_init(t, ns, d, RANK_LEAF_SIZE, REAL(VECTOR_ELT(idx, base + IX_PTS)) + (size_t) b * d,
            (ptrdiff_t *) RAW(VECTOR_ELT(idx, base + IX_ROW)) + b,
            (ptrdiff_t *) RAW(VECTOR_ELT(idx, base + IX_LEAF_OF)) + b,
            (kd_node *) RAW(VECTOR_ELT(idx, base + IX_NODES)) + meta[3 * s],
            REAL(VECTOR_ELT(idx, base + IX_BOX)) + (size_t) meta[3 * s] * 2 * d);
    t->n_nodes = meta[3 * s + 1];
    t->depth = meta[3 * s + 2];
}

/* The trees of an index (R_alloc'ed array of n_strata trees pointing into its vectors). */
kd_tree *rank_index_trees(SEXP idx, int d, R_xlen_t *n_strata)
{
    if (TYPEOF(idx) != VECSXP || XLENGTH(idx) != IX_N_SLOTS)
        Rf_error("internal error: not a rank index");
    const R_xlen_t ns_all = XLENGTH(VECTOR_ELT(idx, IX_OFFSETS)) - 1;
    kd_tree *trees = (kd_tree *) R_alloc(ns_all > 0 ? ns_all : 1, sizeof(kd_tree));
    for (R_xlen_t s = 0; s < ns_all; s++) slot_tree(idx, 0, d, s, &trees[s]);
    *n_strata = ns_all;
    return trees;
}

/* The groups of tied points of an index (R_alloc'ed array of n_strata, pointing into its
 * vectors; a stratum not grouped has an empty tree). */
static rank_groups *rank_index_groups(SEXP idx, int d, R_xlen_t n_strata)
{
    const double *w = REAL_RO(VECTOR_ELT(idx, IX_G_W)), *nw = REAL_RO(VECTOR_ELT(idx, IX_G_NW));
    const int *goff = INTEGER_RO(VECTOR_ELT(idx, IX_G + IX_OFFSETS));
    const int *meta = INTEGER_RO(VECTOR_ELT(idx, IX_G + IX_META));
    rank_groups *g = (rank_groups *) R_alloc(n_strata > 0 ? n_strata : 1, sizeof(rank_groups));
    for (R_xlen_t s = 0; s < n_strata; s++) {
        slot_tree(idx, IX_G, d, s, &g[s].t);
        g[s].w = w + goff[s];
        g[s].nw = nw + meta[3 * s];
    }
    return g;
}

/* The trees of index idx for the rank queries of the rows of zq (`query`: logical, one per
 * row of zq and of the index), checked, and the count cap as the kernels take it. */
static kd_tree *rank_query_input(SEXP idx, SEXP zq, SEXP query, SEXP cap_, R_xlen_t *n_strata,
                                 ptrdiff_t *cap)
{
    const ptrdiff_t n = Rf_nrows(zq);
    const int d = Rf_ncols(zq);
    const double capd = Rf_asReal(cap_);
    kd_tree *trees = rank_index_trees(idx, d, n_strata);
    if (TYPEOF(zq) != REALSXP || rank_index_d(idx) != (n > 0 ? d : 0) || rank_index_n(idx) != n ||
        TYPEOF(query) != LGLSXP || XLENGTH(query) != n || !(capd >= 0))
        Rf_error("internal error: bad input to a rank query");
    *cap = capd > (double) n ? (ptrdiff_t) n + 1 : (ptrdiff_t) capd;
    return trees;
}

/* idx: an index of the "tree" points; zq: n x d query points (same rows). `query`: logical
 * of length n, TRUE for the rows to rank. Returns an n x 2 matrix: column 1 the number of
 * tree points of the stratum strictly closer to the row's query point than its own tree
 * point (capped at `cap`), column 2 the number at most as close (capped at 2^14); NA for rows not
 * queried. `progress`: TRUE to show a progress bar (updated between chunks, on the main
 * thread). */
SEXP ffi_index_rank(SEXP idx, SEXP zq, SEXP query, SEXP cap_, SEXP nthreads, SEXP progress,
                    SEXP lazy)
{
    const ptrdiff_t n = Rf_nrows(zq);
    const int d = Rf_ncols(zq), nt = detanon_threads(nthreads);
    R_xlen_t n_strata;
    ptrdiff_t cap;
    kd_tree *trees = rank_query_input(idx, zq, query, cap_, &n_strata, &cap);
    const int *off = INTEGER_RO(VECTOR_ELT(idx, IX_OFFSETS));
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, n, 2));
    if (n == 0) { UNPROTECT(1); return out; }
    double *o = REAL(out);
    const double *xq = REAL_RO(zq);
    const int *want = LOGICAL_RO(query);
    for (ptrdiff_t i = 0; i < 2 * n; i++) o[i] = NA_REAL;
    SEXP bar = PROTECT(progress_new(progress, (double) n, "Linking"));
    const kernel_host host = detanon_host(bar);
    const rank_groups *groups = rank_index_groups(idx, d, n_strata);
    rank_query(trees, groups, n_strata, off, n, d, xq, want, cap, Rf_asLogical(lazy) == 1, 0, nt, o, &host);
    progress_done(bar);
    UNPROTECT(2);
    return out;
}

/* The lazy ranks of ffi_index_rank() and the nearest and second-nearest distances of the
 * same rows from the same descent (rank_query() with nn2): an n x 4 matrix, NA for rows
 * not queried. */
SEXP ffi_index_rank_nn2(SEXP idx, SEXP zq, SEXP query, SEXP cap_, SEXP nthreads)
{
    const ptrdiff_t n = Rf_nrows(zq);
    const int d = Rf_ncols(zq), nt = detanon_threads(nthreads);
    R_xlen_t n_strata;
    ptrdiff_t cap;
    kd_tree *trees = rank_query_input(idx, zq, query, cap_, &n_strata, &cap);
    const int *off = INTEGER_RO(VECTOR_ELT(idx, IX_OFFSETS));
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, n, 4));
    double *o = REAL(out);
    for (ptrdiff_t i = 0; i < 4 * n; i++) o[i] = NA_REAL;
    if (n == 0) { UNPROTECT(1); return out; }
    const kernel_host host = detanon_host(R_NilValue);
    rank_query(trees, rank_index_groups(idx, d, n_strata), n_strata, off, n, d, REAL_RO(zq), LOGICAL_RO(query),
               cap, 1, 1, nt, o, &host);
    UNPROTECT(1);
    return out;
}
