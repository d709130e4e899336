/* Rank of a record's own point among the points of its stratum, for risk_linkage() (top-m
 * linkage and the expected re-identification probability) and risk_replay(): per stratum a
 * kd-tree over the "tree" points (the originals, or the released records for a replay),
 * and for every queried row two count-within-radius queries around its "query" point (its
 * masked record, or its replayed record) at the distance of its own tree point. */
#include <math.h>
#include <stdint.h>
#include "detanon.h"
#include "kdtree.h"
#ifdef _OPENMP
#include <omp.h>
#define THREAD_ID omp_get_thread_num()
#else
#define THREAD_ID 0
#endif

#define RANK_LEAF_SIZE 8
/* Queries between two interrupt checks. */
#define RANK_CHUNK ((ptrdiff_t) 1 << 16)
/* Smallest number of queries in a stratum worth a parallel region. */
#define RANK_PAR_MIN 2048

/* Kernel (pure C). For the query point q whose own point `self` is a point of tree t:
 * *le = number of tree points p with |q - p|^2 <= |q - self|^2 (self included, so >= 1)
 * *lt = number of tree points strictly closer than self, counted up to `cap` (a count of
 *       `cap` means "cap or more").
 * Both distances are summed by kd_point_d2() in the same order, so self is counted in *le
 * and never in *lt, and equal distances are equal bit for bit. */
static void rank_counts(const kd_tree *t, const double *q, const double *self, ptrdiff_t cap,
                        double *lt, double *le, kd_item *stack)
{
    const double ds = kd_point_d2(q, self, t->d);
    *le = (double) kd_count_within(t, q, ds, PTRDIFF_MAX, stack);
    /* squared distances are doubles: d2 < ds exactly when d2 <= the next double below ds */
    *lt = ds > 0.0 && cap > 0 ? (double) kd_count_within(t, q, nextafter(ds, 0.0), cap, stack) : 0.0;
}

/* zt, zq: n x d (tree points and query points, same rows). `order` (1-based) lists the rows
 * stratum by stratum, stratum s holding order[off[s]..off[s+1]). `query`: logical of length
 * n, TRUE for the rows to rank. Returns an n x 2 matrix: column 1 the number of tree points
 * of the stratum strictly closer to the row's query point than its own tree point (capped
 * at `cap`), column 2 the number at most as close (exact); NA for rows not queried. */
SEXP ffi_link_rank(SEXP zt, SEXP zq, SEXP order, SEXP offsets, SEXP query, SEXP cap_,
                   SEXP nthreads)
{
    const ptrdiff_t n = Rf_nrows(zt);
    const int d = Rf_ncols(zt), nt = detanon_threads(nthreads);
    const double capd = Rf_asReal(cap_);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, n, 2));
    if (n == 0) { UNPROTECT(1); return out; }
    if (d == 0 || TYPEOF(zt) != REALSXP || TYPEOF(zq) != REALSXP || Rf_nrows(zq) != n ||
        Rf_ncols(zq) != d || XLENGTH(order) != n || TYPEOF(query) != LGLSXP ||
        XLENGTH(query) != n || !(capd >= 0))
        Rf_error("internal error: bad input to ffi_link_rank");
    const ptrdiff_t cap = capd > (double) n ? (ptrdiff_t) n + 1 : (ptrdiff_t) capd;
    double *o = REAL(out);
    const double *xt = REAL_RO(zt), *xq = REAL_RO(zq);
    const int *ord = INTEGER_RO(order), *off = INTEGER_RO(offsets), *want = LOGICAL_RO(query);
    const R_xlen_t n_strata = XLENGTH(offsets) - 1;
    if (n_strata < 1 || off[0] != 0 || off[n_strata] != n)
        Rf_error("internal error: bad offsets in ffi_link_rank");

    ptrdiff_t *rows = (ptrdiff_t *) R_alloc(n, sizeof(ptrdiff_t));
    for (ptrdiff_t i = 0; i < n; i++) {
        if (ord[i] < 1 || ord[i] > n) Rf_error("internal error: row out of range");
        rows[i] = ord[i] - 1;
        o[i] = NA_REAL;
        o[i + n] = NA_REAL;
    }
    ptrdiff_t max_s = 0;
    for (R_xlen_t s = 0; s < n_strata; s++) {
        ptrdiff_t ns = (ptrdiff_t) off[s + 1] - off[s];
        if (ns < 0) Rf_error("internal error: decreasing offsets");
        if (ns > max_s) max_s = ns;
    }
    /* one tree, sized for the largest stratum, reused stratum by stratum */
    kd_tree t = detanon_tree(max_s, d, RANK_LEAF_SIZE);
    kd_item *stacks = (kd_item *) R_alloc((size_t) nt * KD_STACK_MAX, sizeof(kd_item));
    double *buf = (double *) R_alloc((size_t) nt * d, sizeof(double));
    ptrdiff_t since_check = 0;
    for (R_xlen_t s = 0; s < n_strata; s++) {
        const ptrdiff_t b = off[s], ns = (ptrdiff_t) off[s + 1] - off[s];
        if (ns == 0) continue;
        kd_reuse(&t, ns);
        kd_build(&t, xt, n, rows + b);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 64) if (ns >= RANK_PAR_MIN)
#endif
        for (ptrdiff_t p = 0; p < ns; p++) {
            /* in tree order: a query point lies near its own tree point, so consecutive
             * queries visit the same part of the tree */
            ptrdiff_t r = t.row[p];
            if (!want[r] || want[r] == NA_LOGICAL) continue;
            int tid = THREAD_ID;
            double *q = buf + (size_t) tid * d;
            for (int j = 0; j < d; j++) q[j] = xq[r + (size_t) j * n];
            rank_counts(&t, q, t.pts + (size_t) p * d, cap, o + r, o + r + n,
                        stacks + (size_t) tid * KD_STACK_MAX);
        }
        since_check += ns;
        if (since_check >= RANK_CHUNK) { R_CheckUserInterrupt(); since_check = 0; }
    }
    UNPROTECT(1);
    return out;
}
