/* Glue for (k, epsilon)-anonymisation (R/keps.R): Laplace noise per class with R's RNG, and
 * the linking / c-confidence counts of section V. Inputs are validated in R; the kernels
 * are in keps.c (the classes come from ffi_mondrian, mondrian_glue.c). */
#include "detanon.h"
#include "keps.h"
#include "progress.h"

/* Draws between two interrupt checks. */
#define KEPS_DRAWS ((ptrdiff_t) 1 << 20)

/* y: n x p epsilon-quasi-identifiers; cls: 1-based class per row (1..C); eps: p budgets.
 * Per class and column the diameter max - min; every value gets Laplace(0, diam / eps)
 * noise, drawn in row order, column by column within a row (so set.seed() reproduces).
 * Returns list(y = noisy n x p, diam = C x p). */
SEXP ffi_keps_noise(SEXP y, SEXP cls, SEXP n_classes_, SEXP eps)
{
    const ptrdiff_t n = Rf_nrows(y), C = Rf_asInteger(n_classes_);
    const int p = Rf_ncols(y);
    static const char *names[] = {"y", "diam"};
    SEXP out = PROTECT(detanon_named_list(2, names));
    SEXP res = SET_VECTOR_ELT(out, 0, Rf_allocMatrix(REALSXP, n, p));
    SEXP diam = SET_VECTOR_ELT(out, 1, Rf_allocMatrix(REALSXP, C, p));
    if (n == 0 || p == 0 || C == 0) { UNPROTECT(1); return out; }

    const double *py = REAL_RO(y), *pe = REAL_RO(eps);
    const int *pc = INTEGER_RO(cls);
    double *pr = REAL(res), *pd = REAL(diam);
    const kernel_host host = detanon_host(R_NilValue);
    keps_diameters(py, n, p, pc, C, pd, &host);
    GetRNGstate();
    for (ptrdiff_t i = 0; i < n; i++) {
        ptrdiff_t c = pc[i] - 1;
        for (int v = 0; v < p; v++) {
            double b = pd[c + (ptrdiff_t) v * C] / pe[v];
            pr[i + (size_t) v * n] = py[i + (size_t) v * n] + laplace_from_unif(unif_rand(), b);
        }
        if ((i & (KEPS_DRAWS - 1)) == KEPS_DRAWS - 1) R_CheckUserInterrupt();
    }
    PutRNGstate();
    UNPROTECT(1);
    return out;
}

/* o, q: n x p original and released values (rows aligned); order/offsets: rows grouped by
 * class; par: C x p per-class scales (link) or half-widths (confident); cap: count limit
 * (confident only, < 0 for link). Returns an integer per row. */
static SEXP per_class(SEXP o, SEXP q, SEXP order, SEXP offsets, SEXP par, ptrdiff_t cap,
                      SEXP progress)
{
    const ptrdiff_t n = Rf_nrows(o);
    const int p = Rf_ncols(o);
    const R_xlen_t C = XLENGTH(offsets) - 1;
    SEXP out = PROTECT(Rf_allocVector(INTSXP, n));
    if (n == 0 || p == 0 || C <= 0) {
        for (ptrdiff_t i = 0; i < n; i++) INTEGER(out)[i] = cap < 0 ? 1 : 0;
        UNPROTECT(1);
        return out;
    }
    ptrdiff_t *rows = detanon_index(order, n);
    for (ptrdiff_t i = 0; i < n; i++) rows[i] -= 1;
    const ptrdiff_t *off = detanon_index(offsets, C + 1);
    SEXP bar = PROTECT(progress_new(progress, (double) n, cap < 0 ? "Linking" : "Checking confidence"));
    const kernel_host host = detanon_host(bar);
    keps_per_class(REAL_RO(o), REAL_RO(q), n, p, rows, off, C, REAL_RO(par), cap, INTEGER(out), &host);
    progress_done(bar);
    UNPROTECT(2);
    return out;
}

SEXP ffi_keps_link(SEXP o, SEXP q, SEXP order, SEXP offsets, SEXP scale, SEXP progress)
{
    return per_class(o, q, order, offsets, scale, -1, progress);
}

SEXP ffi_keps_confident(SEXP o, SEXP q, SEXP order, SEXP offsets, SEXP r, SEXP cap, SEXP progress)
{
    return per_class(o, q, order, offsets, r, (ptrdiff_t) Rf_asInteger(cap), progress);
}
