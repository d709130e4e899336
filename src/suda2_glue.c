/* Glue for SUDA2 (R/risk_suda2.R): the MSU search and the scores of every record.
 * Inputs are validated in R; the kernel is in suda2.c. */
#include <limits.h>
#include "detanon.h"
#include "suda2.h"

/* codes: a list of m integer vectors of n category codes each, 1 .. n_levels[j] or NA
 * (missing); n_levels: integer m; fraction: the DIS sampling fraction in (0, 1).
 * Returns list(score = double n, contrib = double n x m (the share of each key in the
 * record's score: the summed weights of its MSUs that hold the key over the score, 0 when
 * the score is 0), dis = double n, scored = integer (1-based, increasing: the records with
 * a positive score), raw = double length(scored) x m (their summed weights per key),
 * counts = double c(n_unique, n_pairs, n_msu), msu_by_size = double m). */
SEXP ffi_suda2(SEXP codes, SEXP n_levels, SEXP fraction)
{
    const int m = Rf_length(codes);
    if (m > SUDA2_MAX_KEYS) Rf_error("ffi_suda2: at most %d keys", SUDA2_MAX_KEYS);
    if (Rf_length(n_levels) != m) Rf_error("ffi_suda2: n_levels must have one entry per key");
    const ptrdiff_t n = m > 0 ? XLENGTH(VECTOR_ELT(codes, 0)) : 0;
    if (n > INT_MAX) Rf_error("ffi_suda2: too many records");
    const size_t nm = (size_t) n * (size_t) m;
    const int **cols = (const int **) R_alloc(m > 0 ? (size_t) m : 1, sizeof(int *));
    const int *lv = m > 0 ? INTEGER_RO(n_levels) : NULL;
    for (int j = 0; j < m; j++) {
        SEXP col = VECTOR_ELT(codes, j);
        if (TYPEOF(col) != INTSXP || XLENGTH(col) != n) Rf_error("ffi_suda2: codes must be integer vectors of one length");
        cols[j] = INTEGER_RO(col);
    }
    int nprot = 0;
    const char *names[] = {"score", "contrib", "dis", "scored", "raw", "counts", "msu_by_size"};
    SEXP out = PROTECT(detanon_named_list(7, names)); nprot++;
    SEXP score = Rf_allocVector(REALSXP, n);
    SET_VECTOR_ELT(out, 0, score);
    SEXP contrib = Rf_allocMatrix(REALSXP, (int) n, m);
    SET_VECTOR_ELT(out, 1, contrib);
    SEXP dis = Rf_allocVector(REALSXP, n);
    SET_VECTOR_ELT(out, 2, dis);
    SEXP counts = Rf_allocVector(REALSXP, 3);
    SET_VECTOR_ELT(out, 5, counts);
    SEXP by_size = Rf_allocVector(REALSXP, m);
    SET_VECTOR_ELT(out, 6, by_size);
    double dummy = 0.0;
    double *ps = n > 0 ? REAL(score) : &dummy;
    double *pc = nm > 0 ? REAL(contrib) : &dummy;
    double *pd = n > 0 ? REAL(dis) : &dummy;
    kernel_host h = detanon_host(R_NilValue);
    suda2_result res;
    suda2_msu(cols, n, m, lv, ps, pc, &res, &h);
    suda2_dis(ps, n, m, res.n_pairs, Rf_asReal(fraction), pd);
    ptrdiff_t k = 0;
    for (ptrdiff_t i = 0; i < n; i++) k += ps[i] > 0;
    SEXP scored = Rf_allocVector(INTSXP, k);
    SET_VECTOR_ELT(out, 3, scored);
    SEXP raw = Rf_allocMatrix(REALSXP, (int) k, m);
    SET_VECTOR_ELT(out, 4, raw);
    for (ptrdiff_t i = 0, a = 0; i < n; i++) {
        if (!(ps[i] > 0)) continue;
        INTEGER(scored)[a] = (int) i + 1;
        for (int j = 0; j < m; j++) {
            double *c = pc + (size_t) j * (size_t) n + (size_t) i;
            REAL(raw)[(size_t) j * (size_t) k + (size_t) a] = *c;
            *c /= ps[i];
        }
        a++;
    }
    REAL(counts)[0] = (double) res.n_unique;
    REAL(counts)[1] = (double) res.n_pairs;
    REAL(counts)[2] = (double) res.n_msu;
    for (int j = 0; j < m; j++) REAL(by_size)[j] = (double) res.msu_by_size[j];
    UNPROTECT(nprot);
    return out;
}
