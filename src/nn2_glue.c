/* R entry points of the risk battery's neighbour queries (kernels in nn2.c) on a rank
 * index (rank_glue.c): one kd-tree per stratum or cell. A query row names its tree with
 * `tree_of` (1-based; 0 or NA: not queried), so a query may search another cell than its
 * own point's (a categorical key the release changed). */
#include <math.h>
#include "detanon.h"
#include "nn2.h"
#include "threads.h"

/* Queries between two interrupt checks. */
#define NN2_CHUNK ((ptrdiff_t) 1 << 15)

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

/* The order in which to run the queries: by the leaf of its tree each query point falls
 * in (descending to the nearer child box), so that consecutive queries visit the same part
 * of the same tree: several times faster than row order on trees too large for the cache,
 * whether a query lies near its own point (a successful attack) or not (the control).
 * A counting sort over the trees' positions, O(nq + n_index). R_alloc'ed; queries not run
 * come last. */
static ptrdiff_t *nn2_order(const kd_tree *trees, R_xlen_t n_trees, ptrdiff_t n_index,
                            const int *tree_of, const double *xq, ptrdiff_t nq, int d)
{
    ptrdiff_t *ord = (ptrdiff_t *) R_alloc(nq > 0 ? nq : 1, sizeof(ptrdiff_t));
    ptrdiff_t *key = (ptrdiff_t *) R_alloc(nq > 0 ? nq : 1, sizeof(ptrdiff_t));
    ptrdiff_t *base = (ptrdiff_t *) R_alloc(n_trees + 1, sizeof(ptrdiff_t));
    ptrdiff_t *count = (ptrdiff_t *) R_alloc(n_index + 2, sizeof(ptrdiff_t));
    double *q = (double *) R_alloc(d > 0 ? d : 1, sizeof(double));
    base[0] = 0;
    for (R_xlen_t s = 0; s < n_trees; s++) base[s + 1] = base[s] + trees[s].n;
    for (ptrdiff_t i = 0; i < n_index + 2; i++) count[i] = 0;
    for (ptrdiff_t r = 0; r < nq; r++) {
        const int t_id = tree_of[r];
        if (t_id == NA_INTEGER || t_id == 0 || trees[t_id - 1].n == 0) {
            key[r] = n_index; /* not run: last */
            count[n_index + 1]++;
            continue;
        }
        const kd_tree *t = &trees[t_id - 1];
        for (int j = 0; j < d; j++) q[j] = xq[r + (size_t) j * nq];
        int node = 0;
        while (t->nodes[node].left >= 0) {
            const int l = t->nodes[node].left, rr = t->nodes[node].right;
            node = kd_box_d2(t, rr, q) < kd_box_d2(t, l, q) ? rr : l;
        }
        key[r] = base[t_id - 1] + t->nodes[node].begin;
        count[key[r] + 1]++;
    }
    for (ptrdiff_t i = 0; i < n_index + 1; i++) count[i + 1] += count[i];
    for (ptrdiff_t r = 0; r < nq; r++) ord[count[key[r]]++] = r;
    return ord;
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
    kd_heap *heaps = (kd_heap *) R_alloc(nt, sizeof(kd_heap));
    for (int i = 0; i < nt; i++) heaps[i] = kd_heap_new(2, detanon_alloc);
    double *buf = (double *) R_alloc((size_t) nt * (d > 0 ? d : 1), sizeof(double));
    const ptrdiff_t *ord = nn2_order(trees, n_trees, rank_index_n(idx), to, xq, nq, d);
    for (ptrdiff_t from = 0; from < nq; from += NN2_CHUNK) {
        const ptrdiff_t to_ = from + NN2_CHUNK < nq ? from + NN2_CHUNK : nq;
        const int nts = threads_for(nt, (double) (to_ - from));
#ifdef _OPENMP
#pragma omp parallel for num_threads(nts) schedule(dynamic, 64)
#endif
        for (ptrdiff_t i = from; i < to_; i++) {
            const ptrdiff_t r = ord[i];
            if (to[r] == NA_INTEGER || to[r] == 0) { o[r] = o[r + nq] = NA_REAL; continue; }
            const int tid = THREAD_ID;
            double *q = buf + (size_t) tid * d;
            for (int j = 0; j < d; j++) q[j] = xq[r + (size_t) j * nq];
            double d1, d2;
            nn2_query(&trees[to[r] - 1], q, &heaps[tid], &d1, &d2);
            o[r] = sqrt(d1);
            o[r + nq] = sqrt(d2);
        }
        R_CheckUserInterrupt();
    }
    UNPROTECT(1);
    return out;
}

/* The ranks of the linkage attacks: for every row r with want[r], its own point (row r of
 * the indexed points) and its query point zq[r, ]; an n x 2 matrix of lt and le as
 * nn_rank() counts them (le NA when lt reached `cap`), NA for rows not wanted. The rows
 * are visited tree by tree in tree order (a query lies near its own point when the attack
 * works, so consecutive queries visit the same part of the tree). */
SEXP ffi_battery_rank(SEXP idx, SEXP zq, SEXP want_, SEXP cap_, SEXP nthreads)
{
    const ptrdiff_t n = Rf_nrows(zq);
    const int d = Rf_ncols(zq), nt = detanon_threads(nthreads);
    const double capd = Rf_asReal(cap_);
    R_xlen_t n_trees;
    if (TYPEOF(zq) != REALSXP || TYPEOF(want_) != LGLSXP || XLENGTH(want_) != n ||
        rank_index_n(idx) != n || (n > 0 && rank_index_d(idx) != d) || !(capd >= 1))
        Rf_error("internal error: bad input to ffi_battery_rank");
    kd_tree *trees = rank_index_trees(idx, d, &n_trees);
    const ptrdiff_t cap = capd > (double) n ? (ptrdiff_t) n + 1 : (ptrdiff_t) capd;
    const int *want = LOGICAL_RO(want_);
    const double *xq = REAL_RO(zq);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, n, 2));
    double *o = REAL(out);
    for (ptrdiff_t i = 0; i < 2 * n; i++) o[i] = NA_REAL;
    kd_item *stacks = (kd_item *) R_alloc((size_t) nt * KD_STACK_MAX, sizeof(kd_item));
    double *buf = (double *) R_alloc((size_t) nt * (d > 0 ? d : 1), sizeof(double));
    for (R_xlen_t s = 0; s < n_trees; s++) {
        const kd_tree *t = &trees[s];
        for (ptrdiff_t from = 0; from < t->n; from += NN2_CHUNK) {
            const ptrdiff_t to_ = from + NN2_CHUNK < t->n ? from + NN2_CHUNK : t->n;
            const int nts = threads_for(nt, (double) (to_ - from));
#ifdef _OPENMP
#pragma omp parallel for num_threads(nts) schedule(dynamic, 64)
#endif
            for (ptrdiff_t p = from; p < to_; p++) {
                const ptrdiff_t r = t->row[p];
                if (want[r] != 1) continue;
                const int tid = THREAD_ID;
                double *q = buf + (size_t) tid * d;
                for (int j = 0; j < d; j++) q[j] = xq[r + (size_t) j * n];
                double lt, le;
                nn_rank(t, q, t->pts + (size_t) p * d, cap, &lt, &le, stacks + (size_t) tid * KD_STACK_MAX);
                o[r] = lt;
                o[r + n] = ISNAN(le) ? NA_REAL : le;
            }
            R_CheckUserInterrupt();
        }
    }
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
    kd_heap *heaps = (kd_heap *) R_alloc(nt, sizeof(kd_heap));
    for (int i = 0; i < nt; i++) heaps[i] = kd_heap_new(m + 1, detanon_alloc);
    double *buf = (double *) R_alloc((size_t) nt * (d > 0 ? d : 1), sizeof(double));
    kd_item *stacks = (kd_item *) R_alloc((size_t) nt * KD_STACK_MAX, sizeof(kd_item));
    int *freq = (int *) R_alloc((size_t) nt * (cat ? n_levels + 1 : 1), sizeof(int));
    for (size_t i = 0; i < (size_t) nt * (cat ? n_levels + 1 : 1); i++) freq[i] = 0;
    const ptrdiff_t *ord = nn2_order(trees, n_trees, rank_index_n(idx), to, xq, nq, d);
    for (ptrdiff_t from = 0; from < nq; from += NN2_CHUNK) {
        const ptrdiff_t to_ = from + NN2_CHUNK < nq ? from + NN2_CHUNK : nq;
        const int nts = threads_for(nt, (double) (to_ - from));
#ifdef _OPENMP
#pragma omp parallel for num_threads(nts) schedule(dynamic, 64)
#endif
        for (ptrdiff_t i = from; i < to_; i++) {
            const ptrdiff_t r = ord[i];
            if (to[r] == NA_INTEGER || to[r] == 0) {
                o[r] = o[r + nq] = o[r + 2 * nq] = NA_REAL;
                continue;
            }
            const int tid = THREAD_ID;
            double *q = buf + (size_t) tid * d;
            for (int j = 0; j < d; j++) q[j] = xq[r + (size_t) j * nq];
            const kd_tree *t = &trees[to[r] - 1];
            const ptrdiff_t skip = lo ? r : -1;
            const double r2 = nn_set_radius(t, q, m, skip, &heaps[tid]);
            nn_set_summary(t, q, r2, skip, isinf(r2) ? NULL : &heaps[tid], ycat, cat ? tcat[r] : 0,
                           cat ? freq + (size_t) tid * (n_levels + 1) : NULL,
                           ynum, cat ? 0.0 : tnum[r], tol, stacks + (size_t) tid * KD_STACK_MAX,
                           o + r, o + r + nq, o + r + 2 * nq);
        }
        R_CheckUserInterrupt();
    }
    UNPROTECT(1);
    return out;
}
