/* Glue for attack_fellegi_sunter(): the pairs' comparison patterns and the claims
 * (kernels: fellegi.c), on matrices and indices prepared and validated in R. */
#include "detanon.h"
#include "fellegi.h"
#include <R_ext/Random.h>

/* The pattern code of every pair (i, j) (1-based rows of num_o/cat_o and num_m/cat_m),
 * or with `counts` TRUE the number of pairs at each level of each field (the fields'
 * levels one after another). num_*: double matrices of the numeric fields; cat_*: integer
 * matrices of the categorical fields' value codes (NA missing). */
SEXP ffi_fs_levels(SEXP num_o, SEXP num_m, SEXP cat_o, SEXP cat_m, SEXP i, SEXP j, SEXP bands,
                   SEXP mult, SEXP counts, SEXP nthreads)
{
    const int nnum = Rf_ncols(num_o), ncat = Rf_ncols(cat_o), nb = Rf_length(bands);
    const R_xlen_t np = XLENGTH(i);
    if (Rf_ncols(num_m) != nnum || Rf_ncols(cat_m) != ncat || XLENGTH(j) != np ||
        Rf_length(mult) != nnum + ncat)
        Rf_error("internal error: bad input to ffi_fs_levels");
    const kernel_host host = detanon_host(R_NilValue);
    const int want_counts = Rf_asLogical(counts) == TRUE;
    SEXP out = PROTECT(Rf_allocVector(REALSXP, want_counts ? (R_xlen_t) nnum * (nb + 1) + 2 * ncat : np));
    if (want_counts) for (R_xlen_t k = 0; k < XLENGTH(out); k++) REAL(out)[k] = 0;
    fs_pair_levels(REAL_RO(num_o), Rf_nrows(num_o), REAL_RO(num_m), Rf_nrows(num_m), nnum,
                   INTEGER_RO(cat_o), INTEGER_RO(cat_m), ncat, NA_INTEGER, INTEGER_RO(i), INTEGER_RO(j), np,
                   REAL_RO(bands), nb, REAL_RO(mult), want_counts ? NULL : REAL(out),
                   want_counts ? REAL(out) : NULL, detanon_threads(nthreads), &host);
    UNPROTECT(1);
    return out;
}

/* The claims of the originals: list(success, confidence), n values each, NA for an
 * original without a pair (fs_claims()). */
SEXP ffi_fs_claims(SEXP i, SEXP j, SEXP at, SEXP w, SEXP post, SEXP n_)
{
    const R_xlen_t np = XLENGTH(i);
    const ptrdiff_t n = (ptrdiff_t) Rf_asReal(n_);
    if (XLENGTH(j) != np || XLENGTH(at) != np || XLENGTH(w) != XLENGTH(post) || n < 0)
        Rf_error("internal error: bad input to ffi_fs_claims");
    const kernel_host host = detanon_host(R_NilValue);
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
    SEXP success = Rf_allocVector(REALSXP, n);
    SET_VECTOR_ELT(out, 0, success);
    SEXP confidence = Rf_allocVector(REALSXP, n);
    SET_VECTOR_ELT(out, 1, confidence);
    for (ptrdiff_t k = 0; k < n; k++) REAL(success)[k] = REAL(confidence)[k] = NA_REAL;
    fs_claims(INTEGER_RO(i), INTEGER_RO(j), INTEGER_RO(at), np, REAL_RO(w), REAL_RO(post), n,
              REAL(success), REAL(confidence), &host);
    UNPROTECT(1);
    return out;
}

/* `size` random pairs of the same blocks, list(i, j) (fs_block_pairs(), drawn from R's
 * stream as random_block_pairs() documents): rows (1-based) and id (block ids >= 1 of all
 * records) checked here. */
SEXP ffi_fs_block_pairs(SEXP rows, SEXP id, SEXP size_)
{
    const R_xlen_t nrows = XLENGTH(rows), n = XLENGTH(id);
    const double size = Rf_asReal(size_);
    if (TYPEOF(rows) != INTSXP || TYPEOF(id) != INTSXP || !R_FINITE(size) || size < 0 || size > R_XLEN_T_MAX ||
        (size > 0 && nrows == 0))
        Rf_error("internal error: bad input to ffi_fs_block_pairs");
    const int *r = INTEGER_RO(rows), *g = INTEGER_RO(id);
    int n_blocks = 0;
    for (R_xlen_t i = 0; i < n; i++) {
        if (g[i] == NA_INTEGER || g[i] < 1) Rf_error("internal error: bad block in ffi_fs_block_pairs");
        if (g[i] > n_blocks) n_blocks = g[i];
    }
    for (R_xlen_t i = 0; i < nrows; i++)
        if (r[i] == NA_INTEGER || r[i] < 1 || r[i] > n) Rf_error("internal error: row out of range in ffi_fs_block_pairs");
    const char *names[] = {"i", "j"};
    SEXP out = PROTECT(detanon_named_list(2, names));
    int *pi = INTEGER(SET_VECTOR_ELT(out, 0, Rf_allocVector(INTSXP, (R_xlen_t) size)));
    int *pj = INTEGER(SET_VECTOR_ELT(out, 1, Rf_allocVector(INTSXP, (R_xlen_t) size)));
    const kernel_host host = detanon_host(R_NilValue);
    GetRNGstate();
    fs_block_pairs(r, nrows, g, n, n_blocks, (ptrdiff_t) size, R_unif_index, pi, pj, &host);
    PutRNGstate();
    UNPROTECT(1);
    return out;
}
