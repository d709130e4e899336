/* Glue for Mondrian equivalence classes (R/mondrian.R, and the classes of R/keps.R):
 * inputs validated in R; the kernels are in mondrian.c. */
#include "detanon.h"
#include "mondrian.h"
#include "progress.h"

/* x: n x d numeric quasi-identifiers; order: 1-based rows grouped by stratum; offsets:
 * stratum boundaries in `order` (length S + 1); k; inv_range: d reciprocals of the global
 * ranges (0 for a constant column). Every stratum has >= k rows (checked in R).
 * Returns list(class = 1-based class per row, lo = C x d, hi = C x d, size = C). */
SEXP ffi_mondrian(SEXP x, SEXP order, SEXP offsets, SEXP k_, SEXP inv_range, SEXP progress)
{
    const ptrdiff_t n = Rf_nrows(x), k = Rf_asInteger(k_);
    const int d = Rf_ncols(x);
    const R_xlen_t n_strata = XLENGTH(offsets) - 1;
    const double *px = n > 0 && d > 0 ? REAL_RO(x) : NULL;
    const double *ir = d > 0 ? REAL_RO(inv_range) : NULL;
    /* `order` lists the rows kept (suppressed strata left out): it can be shorter than n */
    const ptrdiff_t n_kept = XLENGTH(order);
    ptrdiff_t *rows = detanon_index(order, n_kept);
    for (ptrdiff_t i = 0; i < n_kept; i++) rows[i] -= 1;
    const ptrdiff_t *off = detanon_index(offsets, n_strata + 1);
    if (n_kept > n || off[n_strata] != n_kept) Rf_error("internal error: bad order or offsets in ffi_mondrian");

    /* class boundaries over all strata, as positions in rows[] */
    ptrdiff_t *ends = (ptrdiff_t *) R_alloc(n / k + n_strata + 1, sizeof(ptrdiff_t));
    SEXP bar = PROTECT(progress_new(progress, (double) off[n_strata], "Building classes"));
    const kernel_host host = detanon_host(bar);
    const ptrdiff_t n_classes = mondrian_strata(px, n, d, ir, rows, off, n_strata, k, ends, &host);
    progress_done(bar);
    UNPROTECT(1);

    static const char *names[] = {"class", "lo", "hi", "size"};
    SEXP out = PROTECT(detanon_named_list(4, names));
    SEXP cls = SET_VECTOR_ELT(out, 0, Rf_allocVector(INTSXP, n));
    SEXP lo = SET_VECTOR_ELT(out, 1, Rf_allocMatrix(REALSXP, n_classes, d));
    SEXP hi = SET_VECTOR_ELT(out, 2, Rf_allocMatrix(REALSXP, n_classes, d));
    SEXP size = SET_VECTOR_ELT(out, 3, Rf_allocVector(INTSXP, n_classes));
    int *pc = INTEGER(cls);
    for (ptrdiff_t i = 0; i < n; i++) pc[i] = NA_INTEGER; /* rows of suppressed strata */
    mondrian_boxes(px, n, d, rows, ends, n_classes, pc, INTEGER(size), REAL(lo), REAL(hi));
    UNPROTECT(1);
    return out;
}
