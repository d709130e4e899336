/* Helpers shared by the glue files (SEXP in and out). */
#include "detanon.h"

/* A list of n elements (R_NilValue) named names[0..n). Unprotected, like Rf_allocVector. */
SEXP detanon_named_list(int n, const char **names)
{
    SEXP out = PROTECT(Rf_allocVector(VECSXP, n));
    SEXP nm = Rf_allocVector(STRSXP, n);
    Rf_setAttrib(out, R_NamesSymbol, nm);
    for (int i = 0; i < n; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
    UNPROTECT(1);
    return out;
}
