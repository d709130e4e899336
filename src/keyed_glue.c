/* Glue for anonymise_keyed(): the keyed k-means of one stratum (kernel: keyed.c). The
 * secret arrives as a raw vector and is never stored or returned. (The test-only entry
 * points of the keyed hash and uniforms are in testing_glue.c.) */
#include "detanon.h"
#include "keyed.h"

void keyed_secret_key(SEXP secret, uint64_t *k0, uint64_t *k1)
{
    if (TYPEOF(secret) != RAWSXP || XLENGTH(secret) < 1) Rf_error("internal error: bad key in ffi_keyed_*");
    keyed_derive(RAW_RO(secret), (size_t) XLENGTH(secret), k0, k1);
}

/* z: the n x d points of one stratum (canonical order), c groups, kmin, restarts, maxit,
 * secret (raw), nthreads. Returns list(group = 1-based groups, sse), sse -1 (and groups NA)
 * when the points have fewer than c distinct values. */
SEXP ffi_keyed_kmeans(SEXP z, SEXP c_, SEXP kmin_, SEXP restarts_, SEXP maxit_, SEXP secret, SEXP nthreads)
{
    return keyed_kmeans_run(z, c_, kmin_, restarts_, maxit_, secret, detanon_threads(nthreads), 0);
}

/* The unpacking and result of ffi_keyed_kmeans(); `ref` (the tests' ffi_keyed_kmeans_ref)
 * runs keyed_kmeans_ref(), the plain kernel kept as the reference. */
SEXP keyed_kmeans_run(SEXP z, SEXP c_, SEXP kmin_, SEXP restarts_, SEXP maxit_, SEXP secret, int nt, int ref)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), c = Rf_asInteger(c_), kmin = Rf_asInteger(kmin_);
    const int restarts = Rf_asInteger(restarts_), maxit = Rf_asInteger(maxit_);
    if (TYPEOF(z) != REALSXP || n < 1 || d < 1 || d > 64 || c < 1 || c > n || kmin < 1 ||
        restarts < 1 || maxit < 1)
        Rf_error("internal error: bad input to ffi_keyed_kmeans");
    uint64_t k0, k1;
    keyed_secret_key(secret, &k0, &k1);
    const char *names[] = { "group", "sse" };
    SEXP out = PROTECT(detanon_named_list(2, names));
    SEXP group = SET_VECTOR_ELT(out, 0, Rf_allocVector(INTSXP, n));
    const kernel_host host = detanon_host(R_NilValue);
    double sse;
#ifdef DETANON_NO_TESTING
    (void) ref;
#else
    if (ref)
        sse = keyed_kmeans_ref(REAL_RO(z), n, d, c, kmin, restarts, maxit, k0, k1, INTEGER(group), &host);
    else
#endif
        sse = keyed_kmeans(REAL_RO(z), n, d, c, kmin, restarts, maxit, k0, k1, nt, INTEGER(group), &host);
    /* 1-based groups; none (NA) when the points have fewer than c distinct values */
    for (ptrdiff_t i = 0; i < n; i++) INTEGER(group)[i] = sse >= 0 ? INTEGER(group)[i] + 1 : NA_INTEGER;
    SET_VECTOR_ELT(out, 1, Rf_ScalarReal(sse));
    UNPROTECT(1);
    return out;
}

/* x: the n x d values of the masked columns with the rows of every group together, in a
 * canonical order; off: the G + 1 group offsets (0, ..., n); nout: uniforms per group;
 * secret (raw). Returns the G x nout keyed uniforms of the groups (keyed_group_uniforms()),
 * from which centroid_noise() (R/centroid_noise.R) draws the noise of the group means. */
SEXP ffi_keyed_group_uniforms(SEXP x, SEXP off_, SEXP nout_, SEXP secret)
{
    const ptrdiff_t n = Rf_nrows(x);
    const int d = Rf_ncols(x), nout = Rf_asInteger(nout_);
    const R_xlen_t ng1 = XLENGTH(off_);
    if (TYPEOF(x) != REALSXP || TYPEOF(off_) != INTSXP || ng1 < 1 || d < 1 || nout < 1)
        Rf_error("internal error: bad input to ffi_keyed_group_uniforms");
    const int ngroups = (int) (ng1 - 1);
    const int *off = INTEGER_RO(off_);
    ptrdiff_t largest = 0;
    if (off[0] != 0 || off[ngroups] != n) Rf_error("internal error: bad offsets in ffi_keyed_group_uniforms");
    for (int g = 0; g < ngroups; g++) {
        if (off[g + 1] < off[g]) Rf_error("internal error: bad offsets in ffi_keyed_group_uniforms");
        if (off[g + 1] - off[g] > largest) largest = off[g + 1] - off[g];
    }
    uint64_t k0, k1;
    keyed_secret_key(secret, &k0, &k1);
    unsigned char *buf = (unsigned char *) detanon_alloc((size_t) (16 + 8 * (size_t) d * (size_t) largest), 1);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, ngroups, nout));
    if (ngroups > 0) {
        const double *xp = n > 0 ? REAL_RO(x) : NULL;
        keyed_group_uniforms(xp, n, d, off, ngroups, nout, UINT64_C(0x6573696f6e), k0, k1, buf, REAL(out));
    }
    UNPROTECT(1);
    return out;
}
