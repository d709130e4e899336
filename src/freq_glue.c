/* .Call entry points of the categorical risk measures (kernels in freq.c). */
#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>
#include "detanon.h"
#include "freq.h"

static void poll_interrupt(void) { R_CheckUserInterrupt(); }

/* x: doubles; g: integer group ids in 1..n_groups, same length (checked by the caller).
 * Returns the sums of x per group (0 for an empty group). */
SEXP ffi_group_sums(SEXP x, SEXP g, SEXP n_groups)
{
    const R_xlen_t n = XLENGTH(x);
    const int ng = Rf_asInteger(n_groups);
    if (XLENGTH(g) != n) Rf_error("ffi_group_sums: x and g differ in length");
    SEXP out = PROTECT(Rf_allocVector(REALSXP, ng));
    double *sum = REAL(out);
    for (int j = 0; j < ng; j++) sum[j] = 0.0;
    if (n > 0) {
        const int *gi = INTEGER_RO(g);
        for (R_xlen_t i = 0; i < n; i++) {
            if (gi[i] < 1 || gi[i] > ng) {
                UNPROTECT(1);
                Rf_error("ffi_group_sums: group id out of range");
            }
        }
        freq_group_sums(REAL_RO(x), gi, n, sum, poll_interrupt);
    }
    UNPROTECT(1);
    return out;
}
