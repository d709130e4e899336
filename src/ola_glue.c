/* Glue for optimal lattice anonymisation (R/ola.R): one lattice node per call.
 * Inputs are validated in R; the kernel is in ola.c. */
#include "detanon.h"
#include "ola.h"

/* lat: list(codes = n x d 0-based integer matrix, gen = list of d integer matrices
 * (card0 x levels: generalised 0-based code of each base code at each level), card = list
 * of d integer vectors (number of generalised codes per level), cost = list of d double
 * matrices (card0 x (levels + 1): per-record cost at each level, then if suppressed)).
 * level: d 0-based levels; k; want_slot: also return the class slot of each record.
 * Returns list(stats = c(n_suppressed, n_classes, cost, dm, dm_all, n_all), slot = NULL or
 * integer n, 1-based slot ids (records share a slot iff they share a class)). */
SEXP ffi_ola_node(SEXP lat, SEXP level, SEXP k_, SEXP want_slot)
{
    SEXP codes = VECTOR_ELT(lat, 0), gen = VECTOR_ELT(lat, 1), card = VECTOR_ELT(lat, 2),
         cost = VECTOR_ELT(lat, 3);
    const ptrdiff_t n = Rf_nrows(codes), k = Rf_asInteger(k_);
    const int d = Rf_ncols(codes);
    const int *lv = INTEGER_RO(level);
    const int *pc = n > 0 && d > 0 ? INTEGER_RO(codes) : NULL;
    const int dd = d > 0 ? d : 1;
    const int **g = (const int **) R_alloc(dd, sizeof(int *));
    const double **cs = (const double **) R_alloc(dd, sizeof(double *));
    const double **sp = (const double **) R_alloc(dd, sizeof(double *));
    int *cl = (int *) R_alloc(dd, sizeof(int));
    double cells = 1.0;
    for (int j = 0; j < d; j++) {
        SEXP gj = VECTOR_ELT(gen, j), cj = VECTOR_ELT(cost, j);
        const ptrdiff_t c0 = Rf_nrows(gj), h = Rf_ncols(gj);
        g[j] = INTEGER_RO(gj) + (size_t) lv[j] * c0;
        cs[j] = REAL_RO(cj) + (size_t) lv[j] * c0;
        sp[j] = REAL_RO(cj) + (size_t) h * c0;
        cl[j] = INTEGER_RO(VECTOR_ELT(card, j))[lv[j]];
        if (cl[j] > 1) cells *= cl[j];
    }
    /* a power of two >= 2 min(n, cells), at least 16 */
    const double need = 2.0 * (cells < (double) n ? cells : (double) n);
    ptrdiff_t size = 16;
    while ((double) size < need) size <<= 1;
    const ptrdiff_t nn = n > 0 ? n : 1;
    uint64_t *key = (uint64_t *) R_alloc(nn, sizeof(uint64_t));
    double *dlt = (double *) R_alloc(nn, sizeof(double));
    ptrdiff_t *used = (ptrdiff_t *) R_alloc(nn, sizeof(ptrdiff_t));
    ola_cell *table = (ola_cell *) R_alloc(size, sizeof(ola_cell));
    const int want = Rf_asLogical(want_slot) == TRUE;
    int *slot = want ? (int *) R_alloc(nn, sizeof(int)) : NULL;
    ola_result r;
    ola_node(pc, n, d, g, cl, cs, sp, k, key, dlt, table, size, used, slot, &r);

    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
    SEXP stats = Rf_allocVector(REALSXP, 6);
    SET_VECTOR_ELT(out, 0, stats);
    double *ps = REAL(stats);
    ps[0] = (double) r.n_suppressed;
    ps[1] = (double) r.n_classes;
    ps[2] = r.cost;
    ps[3] = r.dm;
    ps[4] = r.dm_all;
    ps[5] = (double) r.n_all;
    if (want) {
        SEXP s = Rf_allocVector(INTSXP, n);
        SET_VECTOR_ELT(out, 1, s);
        int *p = INTEGER(s);
        for (ptrdiff_t i = 0; i < n; i++) p[i] = slot[i] + 1;
    }
    UNPROTECT(1);
    return out;
}
