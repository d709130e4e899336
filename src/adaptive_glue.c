/* Glue for anonymise_adaptive(): unpacks the rank index and the settings, allocates the
 * result and runs the kernel (adaptive.c). */
#include "detanon.h"
#include "adaptive.h"

/* idx: the rank index of the original z-scores (rank_glue.c); k_init, cap: first and
 * largest k per record (1 <= k_init <= cap <= the record's stratum size); m: linkage list
 * length (0: no rank test); target: records whose own original is among the m nearest are
 * grown while more than `target` of them remain (records whose own original is the
 * nearest are always grown, when m >= 1); xs (n x d, scale() of the originals) and wr (n:
 * w1 * rmd per record), or NULL: the interval test. Returns list(centroids (n x d, z-scale,
 * before step 5), k (per record), rounds, n_capped (records still flagged at their cap)). */
SEXP ffi_adaptive_k(SEXP idx, SEXP k_init, SEXP cap, SEXP m, SEXP target, SEXP xs, SEXP wr,
                    SEXP nthreads)
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
    job.k_init = INTEGER_RO(k_init);
    job.cap = INTEGER_RO(cap);
    job.xs = use_int ? REAL_RO(xs) : NULL;
    job.wr = use_int ? REAL_RO(wr) : NULL;

    SEXP out = PROTECT(Rf_allocVector(VECSXP, 4));
    job.centroids = REAL(SET_VECTOR_ELT(out, 0, Rf_allocMatrix(REALSXP, n, d)));
    job.k = INTEGER(SET_VECTOR_ELT(out, 1, Rf_allocVector(INTSXP, n)));
    const kernel_host host = detanon_host(R_NilValue);
    const char *bad = adaptive_k(&job, &host);
    if (bad) Rf_error("internal error in ffi_adaptive_k: %s", bad);
    SET_VECTOR_ELT(out, 2, Rf_ScalarInteger(job.rounds));
    SET_VECTOR_ELT(out, 3, Rf_ScalarReal((double) job.n_capped));
    UNPROTECT(1);
    return out;
}
