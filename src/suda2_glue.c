/* Glue for SUDA2 (R/risk_suda2.R): the MSU search and the scores of every record.
 * Inputs are validated in R; the kernel is in suda2.c. */
#include "detanon.h"
#include "suda2.h"

/* codes: n x m integer matrix of category codes 1 .. n_levels[j] or NA (missing);
 * n_levels: integer m; fraction: the DIS sampling fraction in (0, 1).
 * Returns list(score = double n, contrib = double n x m (the summed weights of the MSUs that
 * hold each key), dis = double n, counts = double c(n_unique, n_pairs, n_msu),
 * msu_by_size = double m). */
SEXP ffi_suda2(SEXP codes, SEXP n_levels, SEXP fraction)
{
    const ptrdiff_t n = Rf_nrows(codes);
    const int m = Rf_ncols(codes);
    if (m > SUDA2_MAX_KEYS) Rf_error("ffi_suda2: at most %d keys", SUDA2_MAX_KEYS);
    if (Rf_length(n_levels) != m) Rf_error("ffi_suda2: n_levels must have one entry per key");
    const size_t nm = (size_t) n * (size_t) m;
    /* 0-based codes, -1 for a missing value */
    int *x = (int *) R_alloc(nm > 0 ? nm : 1, sizeof(int));
    const int *src = nm > 0 ? INTEGER_RO(codes) : NULL;
    const int *lv = m > 0 ? INTEGER_RO(n_levels) : NULL;
    for (int j = 0; j < m; j++) {
        for (ptrdiff_t i = 0; i < n; i++) {
            const int v = src[(size_t) j * (size_t) n + (size_t) i];
            if (v != NA_INTEGER && (v < 1 || v > lv[j])) Rf_error("ffi_suda2: code out of range");
            x[(size_t) j * (size_t) n + (size_t) i] = v == NA_INTEGER ? -1 : v - 1;
        }
    }
    int nprot = 0;
    const char *names[] = {"score", "contrib", "dis", "counts", "msu_by_size"};
    SEXP out = PROTECT(detanon_named_list(5, names)); nprot++;
    SEXP score = Rf_allocVector(REALSXP, n);
    SET_VECTOR_ELT(out, 0, score);
    SEXP contrib = Rf_allocMatrix(REALSXP, (int) n, m);
    SET_VECTOR_ELT(out, 1, contrib);
    SEXP dis = Rf_allocVector(REALSXP, n);
    SET_VECTOR_ELT(out, 2, dis);
    SEXP counts = Rf_allocVector(REALSXP, 3);
    SET_VECTOR_ELT(out, 3, counts);
    SEXP by_size = Rf_allocVector(REALSXP, m);
    SET_VECTOR_ELT(out, 4, by_size);
    double dummy = 0.0;
    double *ps = n > 0 ? REAL(score) : &dummy;
    double *pc = nm > 0 ? REAL(contrib) : &dummy;
    double *pd = n > 0 ? REAL(dis) : &dummy;
    kernel_host h = detanon_host(R_NilValue);
    suda2_result res;
    suda2_msu(x, n, m, lv, ps, pc, &res, &h);
    suda2_dis(ps, n, m, res.n_pairs, Rf_asReal(fraction), pd);
    REAL(counts)[0] = (double) res.n_unique;
    REAL(counts)[1] = (double) res.n_pairs;
    REAL(counts)[2] = (double) res.n_msu;
    for (int j = 0; j < m; j++) REAL(by_size)[j] = (double) res.msu_by_size[j];
    UNPROTECT(nprot);
    return out;
}
