/* .Call entry point of distance_map() (kernel in distance_map.c). */
#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>
#include "detanon.h"
#include "distance_map.h"

static void poll_interrupt(void) { R_CheckUserInterrupt(); }

/* s: sorted finite doubles (length >= 2); n_knots >= 1. Returns list(distance, p). */
SEXP ffi_distmap_knots(SEXP s, SEXP n_knots)
{
    const ptrdiff_t n = XLENGTH(s);
    const int nk = Rf_asInteger(n_knots);
    double *u = (double *) R_alloc((size_t) nk + 2, sizeof(double));
    double *p = (double *) R_alloc((size_t) nk + 2, sizeof(double));
    int m = n >= 2 ? distmap_knots(REAL_RO(s), n, nk, u, p, poll_interrupt) : 0;
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
    SEXP du = PROTECT(Rf_allocVector(REALSXP, m));
    SEXP dp = PROTECT(Rf_allocVector(REALSXP, m));
    for (int i = 0; i < m; i++) {
        REAL(du)[i] = u[i];
        REAL(dp)[i] = p[i];
    }
    SET_VECTOR_ELT(out, 0, du);
    SET_VECTOR_ELT(out, 1, dp);
    UNPROTECT(3);
    return out;
}
