/* Glue for the neighbour search of anonymise() on points given as they are (no
 * standardisation, no step 5): the candidate centroids of attack_recipe(), and (through
 * testing_glue.c) the kernel tests. The kernel is knn.c. */
#include <limits.h>
#include "detanon.h"
#include "knn.h"
#include "threads.h"

/* The search of anonymise() on given points (no standardisation): z an n x d matrix,
 * `order` the 1-based rows stratum by stratum, `offsets` the S + 1 stratum boundaries in
 * it. An n x k matrix of 1-based neighbour rows, or the n x d centroids. */
SEXP knn_run(SEXP z, SEXP order, SEXP offsets, SEXP k_, SEXP nthreads, int want_index)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), k = Rf_asInteger(k_);
    if (TYPEOF(z) != REALSXP || k < 1 || XLENGTH(order) != n || XLENGTH(offsets) < 1)
        Rf_error("internal error: bad input to ffi_knn_*");
    SEXP out = PROTECT(want_index ? Rf_allocMatrix(INTSXP, n, k) : Rf_allocMatrix(REALSXP, n, d));
    if (n == 0) { UNPROTECT(1); return out; }
    ptrdiff_t *rows = detanon_index(order, n);
    for (ptrdiff_t i = 0; i < n; i++) {
        if (rows[i] < 1 || rows[i] > n) Rf_error("internal error: row out of range in ffi_knn_*");
        rows[i] -= 1;
    }
    const ptrdiff_t n_strata = XLENGTH(offsets) - 1;
    const ptrdiff_t *off = detanon_index(offsets, n_strata + 1);
    const char *bad = knn_check_strata(off, n_strata, n, k);
    if (bad) Rf_error("internal error in ffi_knn_*: %s", bad);

    const double *zx = REAL_RO(z);
    double **cent = want_index ? NULL : (double **) R_alloc(d > 0 ? d : 1, sizeof(double *));
    if (cent) for (int j = 0; j < d; j++) cent[j] = REAL(out) + (ptrdiff_t) j * n;
    const kernel_host host = detanon_host(R_NilValue);
    knn_job job = { n, d, k, detanon_threads(nthreads), &zx, NULL, NULL, rows, off, n_strata,
                    cent, want_index ? INTEGER(out) : NULL, &host };
    knn_all(&job);
    UNPROTECT(1);
    return out;
}

/* The n x d centroids of every row and its k - 1 nearest neighbours in its stratum. */
SEXP ffi_knn_centroids(SEXP z, SEXP order, SEXP offsets, SEXP k, SEXP nthreads)
{
    return knn_run(z, order, offsets, k, nthreads, 0);
}

/* The centroids at every k of `ks` (integer, strictly increasing, >= 1) of the rows of
 * `order` (1-based rows of z, stratum by stratum; `offsets` the S + 1 stratum boundaries in
 * it): a list of n x d matrices, the j-th equal to the centroids of ffi_knn_centroids() at
 * ks[j] on the strata that hold ks[j] records, NA on the other rows. */
SEXP ffi_knn_centroids_multi(SEXP z, SEXP order, SEXP offsets, SEXP ks, SEXP nthreads)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z);
    const R_xlen_t n_rows = XLENGTH(order), n_strata = XLENGTH(offsets) - 1;
    if (TYPEOF(z) != REALSXP || TYPEOF(ks) != INTSXP || XLENGTH(ks) < 1 || XLENGTH(ks) > INT_MAX ||
        n_rows > n || n_strata < 0)
        Rf_error("internal error: bad input to ffi_knn_centroids_multi");
    const int n_k = (int) XLENGTH(ks), *k = INTEGER_RO(ks);
    for (int j = 0; j < n_k; j++)
        if (k[j] < 1 || (j > 0 && k[j] <= k[j - 1])) Rf_error("internal error: bad k in ffi_knn_centroids_multi");
    ptrdiff_t *rows = detanon_index(order, n_rows);
    for (R_xlen_t i = 0; i < n_rows; i++) {
        if (rows[i] < 1 || rows[i] > n) Rf_error("internal error: row out of range in ffi_knn_centroids_multi");
        rows[i] -= 1;
    }
    const ptrdiff_t *off = detanon_index(offsets, n_strata + 1);
    if (off[0] != 0 || off[n_strata] != n_rows) Rf_error("internal error: bad offsets in ffi_knn_centroids_multi");
    for (R_xlen_t s = 0; s < n_strata; s++)
        if (off[s + 1] < off[s]) Rf_error("internal error: bad offsets in ffi_knn_centroids_multi");
    SEXP out = PROTECT(Rf_allocVector(VECSXP, n_k));
    double **cols = (double **) R_alloc((size_t) n_k * (d > 0 ? d : 1), sizeof(double *));
    for (int j = 0; j < n_k; j++) {
        SEXP m = SET_VECTOR_ELT(out, j, Rf_allocMatrix(REALSXP, n, d));
        double *v = REAL(m);
        for (R_xlen_t i = 0; i < XLENGTH(m); i++) v[i] = NA_REAL;
        for (int c = 0; c < d; c++) cols[(ptrdiff_t) j * d + c] = v + (ptrdiff_t) c * n;
    }
    const kernel_host host = detanon_host(R_NilValue);
    knn_centroids_multi(REAL_RO(z), n, d, rows, off, n_strata, k, n_k, detanon_threads(nthreads), cols, &host);
    UNPROTECT(1);
    return out;
}
