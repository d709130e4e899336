/* R entry points of the risk battery's neighbour queries (kernels in nn2.c) on a rank
 * index (rank_glue.c): one kd-tree per stratum or cell. A query row names its tree with
 * `tree_of` (1-based; 0 or NA: not queried), so a query may search another cell than its
 * own point's (a categorical key the release changed). The glue only checks, allocates and
 * dispatches; the query loops (OpenMP) are the kernels nn2_run_*() of nn2.c. NA_INTEGER in
 * tree_of is < 1, which the kernels read as "not queried"; NA_REAL is passed as their
 * missing value. */
#include "detanon.h"
#include "nn2.h"
#include "fellegi.h"

static kd_tree *nn2_trees(SEXP idx, SEXP zq, SEXP tree_of, R_xlen_t *n_trees)
{
    const int d = Rf_ncols(zq);
    if (TYPEOF(zq) != REALSXP || TYPEOF(tree_of) != INTSXP || XLENGTH(tree_of) != Rf_nrows(zq) ||
        (rank_index_n(idx) > 0 && rank_index_d(idx) != d))
        Rf_error("internal error: bad input to a battery neighbour query");
    kd_tree *trees = rank_index_trees(idx, d, n_trees);
    const int *to = INTEGER_RO(tree_of);
    for (R_xlen_t i = 0; i < XLENGTH(tree_of); i++)
        if (to[i] != NA_INTEGER && (to[i] < 0 || to[i] > *n_trees))
            Rf_error("internal error: tree out of range");
    return trees;
}

/* The distances (not squared) from every queried row of zq to its nearest and second-nearest
 * points of its tree: an nq x 2 matrix, Inf where the tree has fewer points, NA for rows
 * not queried. */
SEXP ffi_battery_nn2(SEXP idx, SEXP zq, SEXP tree_of, SEXP nthreads)
{
    const ptrdiff_t nq = Rf_nrows(zq);
    const int d = Rf_ncols(zq), nt = detanon_threads(nthreads);
    R_xlen_t n_trees;
    kd_tree *trees = nn2_trees(idx, zq, tree_of, &n_trees);
    const int *to = INTEGER_RO(tree_of);
    const double *xq = REAL_RO(zq);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, nq, 2));
    double *o = REAL(out);
    const kernel_host host = detanon_host(R_NilValue);
    nn2_run_nn2(trees, n_trees, rank_index_n(idx), to, xq, nq, d, nt, NA_REAL, o, &host);
    UNPROTECT(1);
    return out;
}

/* The neighbour sets of the inference attack: for every queried row r, the points of its
 * tree at most as far from zq[r, ] as the m-th nearest (ties included), leaving out tree
 * row r itself when `leave_out` (the query's own released record). `y`: the sensitive
 * value of every tree row (integer codes 1..n_levels, NA; or doubles), `target` the
 * query's own value. Returns an nq x 3 matrix: the set's size, the number of matching
 * values (equal codes; numeric: within `tol`), and the count of the most frequent code
 * (numeric: the range of the set's values, NaN when none is known); NA for rows not
 * queried. */
SEXP ffi_battery_neighbours(SEXP idx, SEXP zq, SEXP tree_of, SEXP m_, SEXP leave_out,
                            SEXP y, SEXP target, SEXP tol_, SEXP n_levels_, SEXP nthreads)
{
    const ptrdiff_t nq = Rf_nrows(zq);
    const int d = Rf_ncols(zq), nt = detanon_threads(nthreads), m = Rf_asInteger(m_);
    const int lo = Rf_asLogical(leave_out), n_levels = Rf_asInteger(n_levels_);
    const double tol = Rf_asReal(tol_);
    R_xlen_t n_trees;
    kd_tree *trees = nn2_trees(idx, zq, tree_of, &n_trees);
    const int cat = TYPEOF(y) == INTSXP;
    if (m < 1 || m == NA_INTEGER || lo == NA_LOGICAL || TYPEOF(y) != TYPEOF(target) ||
        (!cat && TYPEOF(y) != REALSXP) || XLENGTH(y) != rank_index_n(idx) ||
        XLENGTH(target) != nq || (cat && (n_levels < 0 || n_levels == NA_INTEGER)) || ISNAN(tol))
        Rf_error("internal error: bad input to ffi_battery_neighbours");
    const int *to = INTEGER_RO(tree_of);
    const double *xq = REAL_RO(zq);
    const int *ycat = cat ? INTEGER_RO(y) : NULL, *tcat = cat ? INTEGER_RO(target) : NULL;
    const double *ynum = cat ? NULL : REAL_RO(y), *tnum = cat ? NULL : REAL_RO(target);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, nq, 3));
    double *o = REAL(out);
    const kernel_host host = detanon_host(R_NilValue);
    nn2_run_neighbours(trees, n_trees, rank_index_n(idx), to, xq, nq, d, m, lo, cat, ycat, tcat, n_levels,
                       ynum, tnum, tol, nt, NA_REAL, o, &host);
    UNPROTECT(1);
    return out;
}

/* The neighbour sets of ffi_battery_neighbours() (an nq x 3 matrix) from the k nearest tree
 * points of every row with `want` (nn2_list_neighbours()): index and dd (nq x k) their 1-based
 * tree rows and squared distances (ffi_fs_candidates()'s index and d2, tree rows of y), size
 * the number of points of each row's tree. NA in the first column where the list cannot
 * decide, and in every column of the rows not wanted. */
SEXP ffi_knn_neighbours(SEXP index, SEXP dd, SEXP size, SEXP want, SEXP m_, SEXP leave_out, SEXP y,
                        SEXP target, SEXP tol_, SEXP n_levels_)
{
    const ptrdiff_t n = Rf_nrows(dd);
    const int k = Rf_ncols(dd), m = Rf_asInteger(m_), lo = Rf_asLogical(leave_out);
    const int n_levels = Rf_asInteger(n_levels_), cat = TYPEOF(y) == INTSXP;
    const double tol = Rf_asReal(tol_);
    if (TYPEOF(index) != INTSXP || TYPEOF(dd) != REALSXP || TYPEOF(size) != INTSXP || TYPEOF(want) != LGLSXP ||
        !Rf_isMatrix(index) || !Rf_isMatrix(dd) || Rf_nrows(index) != n || Rf_ncols(index) != k || k < 1 ||
        XLENGTH(size) != n || XLENGTH(want) != n || XLENGTH(target) != n || TYPEOF(y) != TYPEOF(target) ||
        (!cat && TYPEOF(y) != REALSXP) || m < 1 || m == NA_INTEGER || lo == NA_LOGICAL ||
        (cat && (n_levels < 0 || n_levels == NA_INTEGER)) || ISNAN(tol))
        Rf_error("internal error: bad input to ffi_knn_neighbours");
    const int *ix = INTEGER_RO(index), *w = LOGICAL_RO(want), *sz = INTEGER_RO(size);
    const R_xlen_t ny = XLENGTH(y);
    const int *ycat = cat ? INTEGER_RO(y) : NULL;
    for (ptrdiff_t r = 0; r < n; r++) {
        if (w[r] != 1 || sz[r] == NA_INTEGER) continue;
        const ptrdiff_t kk = sz[r] < k ? sz[r] : k;
        for (ptrdiff_t j = 0; j < kk; j++) {
            const int v = ix[r + j * n];
            if (v == NA_INTEGER || v < 1 || v > ny)
                Rf_error("internal error: row out of range in ffi_knn_neighbours");
            if (cat && ycat[v - 1] > n_levels)
                Rf_error("internal error: code out of range in ffi_knn_neighbours");
        }
    }
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, n, 3));
    double *o = REAL(out);
    for (ptrdiff_t i = 0; i < 3 * n; i++) o[i] = NA_REAL;
    int *freq = NULL;
    if (cat) {
        freq = (int *) R_alloc((size_t) n_levels + 1, sizeof(int));
        for (int i = 0; i <= n_levels; i++) freq[i] = 0;
    }
    nn2_list_neighbours(ix, REAL_RO(dd), n, k, sz, w, m, lo, cat, ycat, cat ? INTEGER_RO(target) : NULL,
                        cat ? NULL : REAL_RO(y), cat ? NULL : REAL_RO(target), tol, freq, NA_REAL, o);
    UNPROTECT(1);
    return out;
}

/* The k nearest points of zt to every point of zq within cells (the lookup of
 * attack_recipe(), the candidates of attack_fellegi_sunter()): t_order, q_order the 1-based
 * rows of zt / zq grouped by cell, t_off, q_off the offsets of the cells (same number).
 * Returns list(index: an Nq x k matrix of 1-based rows of zt, nearest first, NA where the
 * cell has fewer points; d2: their squared distances, Inf where missing). */
/* The k nearest rows of zt within cells for the rows of zq that q_order lists (see
 * nn2_run_knn_cells()): list(index, d2), or list(index, code) with the pair function, and
 * list(index, code, d2) with it and `with_d2`. */
static SEXP knn_cells(SEXP zt, SEXP zq, SEXP t_order, SEXP t_off, SEXP q_order, SEXP q_off, SEXP k_,
                      SEXP nthreads, nn2_pair_fn pair, const void *pair_ctx, int with_d2)
{
    const int d = Rf_ncols(zt), k = Rf_asInteger(k_), nt = detanon_threads(nthreads);
    const ptrdiff_t Nt = Rf_nrows(zt), Nq = Rf_nrows(zq);
    const R_xlen_t n_cells = XLENGTH(t_off) - 1;
    if (TYPEOF(zt) != REALSXP || TYPEOF(zq) != REALSXP || Rf_ncols(zq) != d || d < 1 || k < 1 ||
        k == NA_INTEGER || TYPEOF(t_order) != INTSXP || TYPEOF(q_order) != INTSXP ||
        TYPEOF(t_off) != INTSXP || TYPEOF(q_off) != INTSXP || XLENGTH(q_off) != XLENGTH(t_off) ||
        n_cells < 0)
        Rf_error("internal error: bad input to ffi_knn_cells");
    const int *to = INTEGER_RO(t_order), *qo = INTEGER_RO(q_order);
    const int *toff = INTEGER_RO(t_off), *qoff = INTEGER_RO(q_off);
    if (n_cells > 0 && (toff[0] != 0 || toff[n_cells] != XLENGTH(t_order) || qoff[0] != 0 ||
                        qoff[n_cells] != XLENGTH(q_order)))
        Rf_error("internal error: bad offsets in ffi_knn_cells");
    for (R_xlen_t i = 0; i < XLENGTH(t_order); i++)
        if (to[i] < 1 || to[i] > Nt) Rf_error("internal error: row out of range in ffi_knn_cells");
    for (R_xlen_t i = 0; i < XLENGTH(q_order); i++)
        if (qo[i] < 1 || qo[i] > Nq) Rf_error("internal error: row out of range in ffi_knn_cells");
    with_d2 = with_d2 && pair;
    const char *names[] = {"index", pair ? "code" : "d2", "d2"};
    SEXP out = PROTECT(detanon_named_list(2 + with_d2, names));
    int *idx = INTEGER(SET_VECTOR_ELT(out, 0, Rf_allocMatrix(INTSXP, Nq, k)));
    double *dd = REAL(SET_VECTOR_ELT(out, 1, Rf_allocMatrix(REALSXP, Nq, k)));
    double *d2 = with_d2 ? REAL(SET_VECTOR_ELT(out, 2, Rf_allocMatrix(REALSXP, Nq, k))) : NULL;
    for (ptrdiff_t i = 0; i < Nq * (ptrdiff_t) k; i++) {
        idx[i] = NA_INTEGER;
        dd[i] = pair ? NA_REAL : R_PosInf;
        if (d2) d2[i] = R_PosInf;
    }
    const kernel_host host = detanon_host(R_NilValue);
    const char *bad = nn2_run_knn_cells(REAL_RO(zt), Nt, REAL_RO(zq), Nq, d, to, toff, qo, qoff, n_cells,
                                        k, pair, pair_ctx, nt, idx, dd, d2, &host);
    if (bad) Rf_error("internal error in ffi_knn_cells: %s", bad);
    UNPROTECT(1);
    return out;
}

SEXP ffi_knn_cells(SEXP zt, SEXP zq, SEXP t_order, SEXP t_off, SEXP q_order, SEXP q_off, SEXP k_,
                   SEXP nthreads)
{
    return knn_cells(zt, zq, t_order, t_off, q_order, q_off, k_, nthreads, NULL, NULL, 0);
}

/* The candidates of attack_fellegi_sunter(): the k nearest released records (num_m, cells
 * by t_order and t_off) of the originals q_order lists (num_o, cells by q_off), with the
 * code of fs_pair_levels() of every pair (categorical fields cat_o, cat_m; bands, mult):
 * list(index, code), n_original x k, NA where a cell holds fewer records or for rows not
 * queried; with `with_d2` TRUE also d2, their squared distances (+Inf there). The same codes
 * as ffi_fs_levels() on the pairs, from the points the search has just read. */
SEXP ffi_fs_candidates(SEXP num_o, SEXP num_m, SEXP cat_o, SEXP cat_m, SEXP t_order, SEXP t_off, SEXP q_order,
                       SEXP q_off, SEXP k_, SEXP bands, SEXP mult, SEXP nthreads, SEXP with_d2)
{
    const int nnum = Rf_ncols(num_o), ncat = Rf_ncols(cat_o);
    if (TYPEOF(cat_o) != INTSXP || TYPEOF(cat_m) != INTSXP || Rf_ncols(cat_m) != ncat ||
        Rf_nrows(cat_o) != Rf_nrows(num_o) || Rf_nrows(cat_m) != Rf_nrows(num_m) || TYPEOF(bands) != REALSXP ||
        TYPEOF(mult) != REALSXP || Rf_length(mult) != nnum + ncat)
        Rf_error("internal error: bad input to ffi_fs_candidates");
    const fs_fields fields = {INTEGER_RO(cat_o), INTEGER_RO(cat_m), Rf_nrows(num_o), Rf_nrows(num_m), nnum, ncat,
                              NA_INTEGER, Rf_length(bands), REAL_RO(bands), REAL_RO(mult)};
    return knn_cells(num_m, num_o, t_order, t_off, q_order, q_off, k_, nthreads, fs_pair_code, &fields,
                     Rf_asLogical(with_d2) == TRUE);
}

/* The linkage counts of ffi_index_rank_nn2() (an n x 4 matrix) from the k nearest points of
 * every row with `want` (nn2_list_ranks()): dd the squared distances (ffi_knn_cells()'s d2),
 * size the number of points of each row's tree, zq and zown the query and own points. NA in
 * the first column where the list cannot decide, and in every column of the rows not wanted. */
SEXP ffi_knn_ranks(SEXP dd, SEXP size, SEXP zq, SEXP zown, SEXP want, SEXP cap_)
{
    const ptrdiff_t n = Rf_nrows(zq);
    const int d = Rf_ncols(zq), k = Rf_ncols(dd);
    if (TYPEOF(dd) != REALSXP || TYPEOF(zq) != REALSXP || TYPEOF(zown) != REALSXP || TYPEOF(size) != INTSXP ||
        TYPEOF(want) != LGLSXP || Rf_nrows(dd) != n || Rf_nrows(zown) != n || Rf_ncols(zown) != d ||
        XLENGTH(size) != n || XLENGTH(want) != n || k < 1 || d < 1)
        Rf_error("internal error: bad input to ffi_knn_ranks");
    const int *w = LOGICAL_RO(want), *sz = INTEGER_RO(size);
    for (ptrdiff_t r = 0; r < n; r++)
        if (w[r] == 1 && (sz[r] == NA_INTEGER || sz[r] < 1))
            Rf_error("internal error: empty tree in ffi_knn_ranks");
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, n, 4));
    double *o = REAL(out);
    for (ptrdiff_t i = 0; i < 4 * n; i++) o[i] = NA_REAL;
    double *buf = (double *) R_alloc(2 * (size_t) d, sizeof(double));
    nn2_list_ranks(REAL_RO(dd), n, k, sz, REAL_RO(zq), REAL_RO(zown), d, w, Rf_asReal(cap_), NA_REAL, buf, o);
    UNPROTECT(1);
    return out;
}
