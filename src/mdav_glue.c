/* Glue for MDAV microaggregation, anonymise_mdav() (kernel: mdav.c). */
#include "detanon.h"
#include "knn.h"
#include "mdav.h"
#include "progress.h"
#include "threads.h"

/* MDAV groups within strata and their exact means. x: the n x p data (complete, finite);
 * cols: the 1-based columns of the distances (those that vary), with their means and SDs
 * (z = (x - mean) / sd); id: the stratum of each row (1..S, empty strata allowed); k: the
 * k of each stratum (length S); nthreads; progress (TRUE: a progress bar). Returns
 * list(group = 1-based group ids, size = the group sizes, means = the n_groups x p group
 * means of every column of x). */
SEXP ffi_mdav(SEXP x, SEXP cols, SEXP mean, SEXP sd, SEXP id_, SEXP k_, SEXP nthreads, SEXP progress_)
{
    if (TYPEOF(x) != REALSXP || TYPEOF(cols) != INTSXP || TYPEOF(mean) != REALSXP ||
        TYPEOF(sd) != REALSXP || TYPEOF(id_) != INTSXP || TYPEOF(k_) != INTSXP)
        Rf_error("internal error: bad input types to ffi_mdav");
    const ptrdiff_t n = Rf_nrows(x);
    const int p = Rf_ncols(x), d = (int) XLENGTH(cols);
    const ptrdiff_t n_strata = XLENGTH(k_);
    if (XLENGTH(id_) != n || XLENGTH(mean) != d || XLENGTH(sd) != d || d > p)
        Rf_error("internal error: bad input lengths to ffi_mdav");
    const char *names[] = { "group", "size", "means" };
    SEXP out = PROTECT(detanon_named_list(3, names));
    SEXP group_ = SET_VECTOR_ELT(out, 0, Rf_allocVector(INTSXP, n));
    if (n == 0) {
        SET_VECTOR_ELT(out, 1, Rf_allocVector(INTSXP, 0));
        SET_VECTOR_ELT(out, 2, Rf_allocMatrix(REALSXP, 0, p));
        UNPROTECT(1);
        return out;
    }
    const int *id = INTEGER_RO(id_), *k = INTEGER_RO(k_), *ci = INTEGER_RO(cols);
    for (ptrdiff_t i = 0; i < n; i++)
        if (id[i] < 1 || id[i] > n_strata) Rf_error("internal error: stratum id out of range in ffi_mdav");
    for (ptrdiff_t s = 0; s < n_strata; s++)
        if (k[s] == NA_INTEGER || k[s] < 1) Rf_error("internal error: bad k in ffi_mdav");
    const double *px = REAL_RO(x);
    const double **all = (const double **) R_alloc(p > 0 ? p : 1, sizeof(double *));
    for (int j = 0; j < p; j++) all[j] = px + (ptrdiff_t) j * n;
    const double **src = (const double **) R_alloc(d > 0 ? d : 1, sizeof(double *));
    for (int j = 0; j < d; j++) {
        if (ci[j] < 1 || ci[j] > p) Rf_error("internal error: column out of range in ffi_mdav");
        src[j] = all[ci[j] - 1];
    }
    ptrdiff_t *off = (ptrdiff_t *) R_alloc((size_t) n_strata + 1, sizeof(ptrdiff_t));
    ptrdiff_t *rows = (ptrdiff_t *) R_alloc(n, sizeof(ptrdiff_t));
    knn_group_rows(id, n, n_strata, rows, off);

    int *group = INTEGER(group_);
    SEXP bar = PROTECT(progress_new(progress_, (double) n, "MDAV"));
    const kernel_host host = detanon_host(bar);
    mdav_job job = { n, d, src, REAL_RO(mean), REAL_RO(sd), rows, off, n_strata, k,
                     detanon_threads(nthreads), group, 0, &host };
    const char *bad = mdav_run(&job);
    progress_done(bar);
    UNPROTECT(1);
    if (bad) Rf_error("internal error in ffi_mdav: %s", bad);

    const ptrdiff_t G = job.n_groups;
    SEXP size_ = SET_VECTOR_ELT(out, 1, Rf_allocVector(INTSXP, G));
    SEXP means_ = SET_VECTOR_ELT(out, 2, Rf_allocMatrix(REALSXP, G, p));
    const kernel_host quiet = detanon_host(R_NilValue);
    mdav_means((const double *const *) all, p, n, group, G, REAL(means_), INTEGER(size_), job.nthreads, &quiet);
    for (ptrdiff_t i = 0; i < n; i++) group[i] += 1;
    UNPROTECT(1);
    return out;
}
