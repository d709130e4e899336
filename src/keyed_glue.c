/* Glue for anonymise_keyed(): the keyed k-means of one stratum (kernel: keyed.c), and
 * TEST-ONLY entry points for the keyed hash and uniforms (tests/testthat). The secret
 * arrives as a raw vector and is never stored or returned. */
#include "detanon.h"
#include "keyed.h"

static void secret_key(SEXP secret, uint64_t *k0, uint64_t *k1)
{
    if (TYPEOF(secret) != RAWSXP || XLENGTH(secret) < 1) Rf_error("internal error: bad key in ffi_keyed_*");
    keyed_derive(RAW_RO(secret), (size_t) XLENGTH(secret), k0, k1);
}

/* z: the n x d points of one stratum (canonical order), c groups, kmin, restarts, maxit,
 * secret (raw). Returns list(group = 1-based groups, sse), sse -1 when the points have
 * fewer than c distinct values. */
SEXP ffi_keyed_kmeans(SEXP z, SEXP c_, SEXP kmin_, SEXP restarts_, SEXP maxit_, SEXP secret)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), c = Rf_asInteger(c_), kmin = Rf_asInteger(kmin_);
    const int restarts = Rf_asInteger(restarts_), maxit = Rf_asInteger(maxit_);
    if (TYPEOF(z) != REALSXP || n < 1 || d < 1 || d > 64 || c < 1 || c > n || kmin < 1 ||
        restarts < 1 || maxit < 1)
        Rf_error("internal error: bad input to ffi_keyed_kmeans");
    uint64_t k0, k1;
    secret_key(secret, &k0, &k1);
    const char *names[] = { "group", "sse" };
    SEXP out = PROTECT(detanon_named_list(2, names));
    SEXP group = SET_VECTOR_ELT(out, 0, Rf_allocVector(INTSXP, n));
    const kernel_host host = detanon_host(R_NilValue);
    const double sse = keyed_kmeans(REAL_RO(z), n, d, c, kmin, restarts, maxit, k0, k1, INTEGER(group), &host);
    if (sse >= 0) for (ptrdiff_t i = 0; i < n; i++) INTEGER(group)[i] += 1;
    SET_VECTOR_ELT(out, 1, Rf_ScalarReal(sse));
    UNPROTECT(1);
    return out;
}

#ifndef DETANON_NO_TESTING
/* SipHash-2-4 of the raw `msg` under the 16 raw bytes `key`: 8 raw bytes, little-endian. */
SEXP ffi_siphash(SEXP msg, SEXP key)
{
    if (TYPEOF(msg) != RAWSXP || TYPEOF(key) != RAWSXP || XLENGTH(key) != 16)
        Rf_error("internal error: bad input to ffi_siphash");
    const Rbyte *k = RAW_RO(key);
    uint64_t k0 = 0, k1 = 0;
    for (int i = 7; i >= 0; i--) { k0 = (k0 << 8) | k[i]; k1 = (k1 << 8) | k[8 + i]; }
    uint64_t h = keyed_siphash(XLENGTH(msg) ? RAW_RO(msg) : NULL, (size_t) XLENGTH(msg), k0, k1);
    SEXP out = PROTECT(Rf_allocVector(RAWSXP, 8));
    for (int i = 0; i < 8; i++) { RAW(out)[i] = (Rbyte) (h & 0xff); h >>= 8; }
    UNPROTECT(1);
    return out;
}

/* The keyed uniforms of the rows of z (salt = the restart), and the step uniforms used
 * by the seeding: an n x (steps + 1) matrix, column 1 the point's uniform, column s + 2 the
 * uniform of seeding step s. */
SEXP ffi_keyed_uniforms(SEXP z, SEXP salt, SEXP secret, SEXP steps_)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), steps = Rf_asInteger(steps_);
    if (TYPEOF(z) != REALSXP || d < 1 || d > 64 || steps < 0) Rf_error("internal error: bad input to ffi_keyed_uniforms");
    uint64_t k0, k1;
    secret_key(secret, &k0, &k1);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, n, steps + 1));
    keyed_uniforms(REAL_RO(z), n, d, (uint64_t) Rf_asInteger(salt), k0, k1, REAL(out));
    for (int s = 0; s < steps; s++) {
        for (ptrdiff_t i = 0; i < n; i++) {
            /* recover the hash from the row: recompute it */
            double row[64];
            for (int j = 0; j < d; j++) row[j] = REAL_RO(z)[(ptrdiff_t) j * n + i];
            REAL(out)[(ptrdiff_t) (s + 1) * n + i] = keyed_row_step(row, d, (uint64_t) Rf_asInteger(salt), k0, k1, s);
        }
    }
    UNPROTECT(1);
    return out;
}
#endif
