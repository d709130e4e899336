/* Glue for anonymise_adaptive(): unpacks the rank index and the settings, allocates the
 * result and runs the kernel (adaptive.c). */
#include <string.h>
#include "detanon.h"
#include "adaptive.h"

/* idx: the rank index of the original z-scores (rank_glue.c); k_init, cap: first and
 * largest k per record (1 <= k_init <= cap <= the record's stratum size); m: linkage list
 * length (0: no rank test); target: records whose own original is among the m nearest are
 * grown while more than `target` of them remain (records whose own original is the
 * nearest are always grown, when m >= 1); xs (n x d, scale() of the originals) and wr (n:
 * w1 * rmd per record), or NULL: the interval test; state: NULL, or the end of an earlier
 * call on the same index, m, xs and wr whose final k is k_init and that ended with every
 * record tested (`tested`): list(centroids, rank, cost, iflag), from which the rounds go
 * on without computing or testing them again (the next stage of a path). Returns
 * list(centroids (n x d, z-scale, before step 5), k (per record), rounds, n_capped (records
 * still flagged at their cap), rank, cost, iflag (the last test of every record), tested). */
SEXP ffi_adaptive_k(SEXP idx, SEXP k_init, SEXP cap, SEXP m, SEXP target, SEXP xs, SEXP wr,
                    SEXP nthreads, SEXP state)
{
    adaptive_job job;
    job.n = XLENGTH(k_init);
    job.d = rank_index_d(idx);
    job.nt = detanon_threads(nthreads);
    job.m = Rf_asInteger(m);
    job.target = Rf_asReal(target);
    const int use_int = !Rf_isNull(xs);
    R_xlen_t n_strata;
    job.trees = rank_index_trees(idx, job.d, &n_strata);
    job.n_strata = n_strata;
    const ptrdiff_t n = job.n;
    const int d = job.d;
    if (n < 1 || d < 1 || TYPEOF(k_init) != INTSXP || TYPEOF(cap) != INTSXP ||
        XLENGTH(cap) != n || job.m < 0 || job.m == NA_INTEGER || !(job.target >= 0) ||
        rank_index_n(idx) != n ||
        (use_int && (TYPEOF(xs) != REALSXP || Rf_nrows(xs) != n || Rf_ncols(xs) != d ||
                     TYPEOF(wr) != REALSXP || XLENGTH(wr) != n)))
        Rf_error("internal error: bad input to ffi_adaptive_k");
    job.resume = !Rf_isNull(state);
    if (job.resume) {
        if (TYPEOF(state) != VECSXP || XLENGTH(state) != 4) Rf_error("internal error: bad state in ffi_adaptive_k");
        SEXP c0 = VECTOR_ELT(state, 0), r0 = VECTOR_ELT(state, 1), s0 = VECTOR_ELT(state, 2),
             f0 = VECTOR_ELT(state, 3);
        if (TYPEOF(c0) != REALSXP || Rf_nrows(c0) != n || Rf_ncols(c0) != d || TYPEOF(r0) != INTSXP ||
            XLENGTH(r0) != n || TYPEOF(s0) != REALSXP || XLENGTH(s0) != n || TYPEOF(f0) != INTSXP ||
            XLENGTH(f0) != n)
            Rf_error("internal error: bad state in ffi_adaptive_k");
    }
    job.k_init = INTEGER_RO(k_init);
    job.cap = INTEGER_RO(cap);
    job.xs = use_int ? REAL_RO(xs) : NULL;
    job.wr = use_int ? REAL_RO(wr) : NULL;

    SEXP out = PROTECT(Rf_allocVector(VECSXP, 8));
    job.centroids = REAL(SET_VECTOR_ELT(out, 0, Rf_allocMatrix(REALSXP, n, d)));
    job.k = INTEGER(SET_VECTOR_ELT(out, 1, Rf_allocVector(INTSXP, n)));
    job.rank = INTEGER(SET_VECTOR_ELT(out, 4, Rf_allocVector(INTSXP, n)));
    job.cost = REAL(SET_VECTOR_ELT(out, 5, Rf_allocVector(REALSXP, n)));
    job.iflag = INTEGER(SET_VECTOR_ELT(out, 6, Rf_allocVector(INTSXP, n)));
    if (job.resume) {
        memcpy(job.centroids, REAL_RO(VECTOR_ELT(state, 0)), (size_t) n * d * sizeof(double));
        memcpy(job.rank, INTEGER_RO(VECTOR_ELT(state, 1)), (size_t) n * sizeof(int));
        memcpy(job.cost, REAL_RO(VECTOR_ELT(state, 2)), (size_t) n * sizeof(double));
        memcpy(job.iflag, INTEGER_RO(VECTOR_ELT(state, 3)), (size_t) n * sizeof(int));
    }
    const kernel_host host = detanon_host(R_NilValue);
    const char *bad = adaptive_k(&job, &host);
    if (bad) Rf_error("internal error in ffi_adaptive_k: %s", bad);
    SET_VECTOR_ELT(out, 2, Rf_ScalarInteger(job.rounds));
    SET_VECTOR_ELT(out, 3, Rf_ScalarReal((double) job.n_capped));
    SET_VECTOR_ELT(out, 7, Rf_ScalarLogical(job.tested));
    UNPROTECT(1);
    return out;
}

/* The rows (1-based integers) of an index of n records, as 0-based positions (R_alloc). */
static ptrdiff_t *adaptive_rows(SEXP rows, ptrdiff_t n)
{
    if (TYPEOF(rows) != INTSXP) Rf_error("internal error: bad rows in the adaptive steps");
    const R_xlen_t nr = XLENGTH(rows);
    const int *r = INTEGER_RO(rows);
    ptrdiff_t *out = (ptrdiff_t *) R_alloc(nr > 0 ? nr : 1, sizeof(ptrdiff_t));
    for (R_xlen_t i = 0; i < nr; i++) {
        if (r[i] == NA_INTEGER || r[i] < 1 || r[i] > n) Rf_error("internal error: row out of range in the adaptive steps");
        out[i] = (ptrdiff_t) r[i] - 1;
    }
    return out;
}

/* A step of the partitioned rounds on one group's index idx (rank_glue.c): the centroids of
 * the rows `rows` (1-based) with k (per row of the index) points each, a length(rows) x d
 * matrix on the z-scale. */
SEXP ffi_adaptive_centroids(SEXP idx, SEXP k, SEXP rows, SEXP nthreads)
{
    const ptrdiff_t n = rank_index_n(idx);
    const int d = rank_index_d(idx), nt = detanon_threads(nthreads);
    R_xlen_t n_strata;
    const kd_tree *trees = rank_index_trees(idx, d, &n_strata);
    if (d < 1 || TYPEOF(k) != INTSXP || XLENGTH(k) != n) Rf_error("internal error: bad input to ffi_adaptive_centroids");
    const ptrdiff_t *r = adaptive_rows(rows, n);
    const ptrdiff_t nr = XLENGTH(rows);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, nr, d));
    const kernel_host host = detanon_host(R_NilValue);
    const char *bad = adaptive_centroids(trees, n_strata, n, d, INTEGER_RO(k), r, nr, nt, REAL(out), &host);
    if (bad) Rf_error("internal error in ffi_adaptive_centroids: %s", bad);
    UNPROTECT(1);
    return out;
}

/* The other step: the rank tests of the rows `rows` on their centroids cent
 * (length(rows) x d, z-scale) divided by step 5's column SDs csd, with the linkage list
 * length m. Returns list(rank (integer), cost (squared distance to the own original)). */
SEXP ffi_adaptive_tests(SEXP idx, SEXP cent, SEXP rows, SEXP csd, SEXP m, SEXP nthreads)
{
    const ptrdiff_t n = rank_index_n(idx);
    const int d = rank_index_d(idx), nt = detanon_threads(nthreads), mm = Rf_asInteger(m);
    R_xlen_t n_strata;
    const kd_tree *trees = rank_index_trees(idx, d, &n_strata);
    const ptrdiff_t nr = XLENGTH(rows);
    if (d < 1 || TYPEOF(cent) != REALSXP || Rf_nrows(cent) != nr || Rf_ncols(cent) != d ||
        TYPEOF(csd) != REALSXP || XLENGTH(csd) != d || mm == NA_INTEGER || mm < 0)
        Rf_error("internal error: bad input to ffi_adaptive_tests");
    const ptrdiff_t *r = adaptive_rows(rows, n);
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
    int *rank = INTEGER(SET_VECTOR_ELT(out, 0, Rf_allocVector(INTSXP, nr)));
    double *cost = REAL(SET_VECTOR_ELT(out, 1, Rf_allocVector(REALSXP, nr)));
    for (ptrdiff_t i = 0; i < nr; i++) cost[i] = 0.0;
    const kernel_host host = detanon_host(R_NilValue);
    const char *bad = adaptive_tests(trees, n_strata, n, d, REAL_RO(cent), r, nr, REAL_RO(csd), mm, nt, rank, cost,
                                     &host);
    if (bad) Rf_error("internal error in ffi_adaptive_tests: %s", bad);
    UNPROTECT(1);
    return out;
}

/* The centroids of every record at several k (tune_release()'s rungs of k per stratum): z
 * the n x d original z-scores, order (1-based rows, stratum by stratum) and offsets (the
 * strata's starts in it, from 0 to n: adaptive_setup()), k an n x R integer matrix (per row
 * nondecreasing, each at most the row's stratum size). Returns a list of R n x d matrices
 * (z-scale, before step 5), rung j's equal to the centroids of ffi_adaptive_k() at k[, j]. */
SEXP ffi_adaptive_ladder(SEXP z, SEXP order, SEXP offsets, SEXP k, SEXP nthreads)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), nt = detanon_threads(nthreads);
    const R_xlen_t n_strata = XLENGTH(offsets) - 1;
    if (TYPEOF(z) != REALSXP || TYPEOF(order) != INTSXP || TYPEOF(offsets) != INTSXP ||
        TYPEOF(k) != INTSXP || n < 1 || d < 1 || XLENGTH(order) != n || n_strata < 1 ||
        Rf_nrows(k) != n || Rf_ncols(k) < 1)
        Rf_error("internal error: bad input to ffi_adaptive_ladder");
    const int n_rungs = Rf_ncols(k);
    ptrdiff_t *rows = adaptive_rows(order, n);
    ptrdiff_t *off = (ptrdiff_t *) R_alloc(n_strata + 1, sizeof(ptrdiff_t));
    for (R_xlen_t s = 0; s <= n_strata; s++) off[s] = INTEGER_RO(offsets)[s];
    SEXP out = PROTECT(Rf_allocVector(VECSXP, n_rungs));
    double **cols = (double **) R_alloc(n_rungs, sizeof(double *));
    for (int j = 0; j < n_rungs; j++) cols[j] = REAL(SET_VECTOR_ELT(out, j, Rf_allocMatrix(REALSXP, n, d)));
    const kernel_host host = detanon_host(R_NilValue);
    const char *bad = adaptive_ladder(REAL_RO(z), n, d, rows, off, n_strata, INTEGER_RO(k), n_rungs, nt, cols,
                                      &host);
    if (bad) Rf_error("internal error in ffi_adaptive_ladder: %s", bad);
    UNPROTECT(1);
    return out;
}
