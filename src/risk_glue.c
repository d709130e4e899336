/* Glue for risk_rmd(): neighbour counts on a kd-tree (risk.c), memory O(n), on
 * standardised matrices prepared and validated in R (the links of risk_linkage() are in
 * rank_glue.c). */
#include "detanon.h"
#include "risk.h"
#include "progress.h"

/* For each 1-based row i in `query`: the number of OTHER rows of z (n x d) within Euclidean
 * distance w of row i, capped at m. `progress`: TRUE to show a progress bar. */
SEXP ffi_rmd_count(SEXP z, SEXP query, SEXP w, SEXP m_, SEXP nthreads, SEXP progress)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), m = Rf_asInteger(m_), nt = detanon_threads(nthreads);
    const R_xlen_t nq = XLENGTH(query);
    SEXP out = PROTECT(Rf_allocVector(INTSXP, nq));
    if (nq == 0) { UNPROTECT(1); return out; }
    if (n == 0 || d == 0 || m < 1) Rf_error("internal error: bad input to ffi_rmd_count");
    SEXP bar = PROTECT(progress_new(progress, (double) n, "Counting neighbours"));
    const kernel_host host = detanon_host(bar);
    const char *bad = rk_rmd_count(REAL_RO(z), n, d, INTEGER_RO(query), nq, Rf_asReal(w), m, nt,
                                   INTEGER(out), &host);
    if (bad) Rf_error("internal error in ffi_rmd_count: %s", bad);
    progress_done(bar);
    UNPROTECT(2);
    return out;
}
