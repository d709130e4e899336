/* Glue for optimal lattice anonymisation (R/ola.R): one lattice node per call.
 * Inputs are validated in R; the kernel is in ola.c. */
#include "detanon.h"
#include "ola.h"

/* lat: list(codes = n x d 0-based integer matrix, gen = list of d integer matrices
 * (card0 x levels: generalised 0-based code of each base code at each level), card = list
 * of d integer vectors (number of generalised codes per level), cost = list of d double
 * matrices (card0 x (levels + 1): per-record cost at each level, then if suppressed)).
 * level: d 0-based levels; k; want_slot: also return the class slot of each record.
 * Returns list(stats = c(n_suppressed, n_classes, cost, dm, dm_all), slot = NULL or
 * integer n, 1-based slot ids (records share a slot iff they share a class)). */
SEXP ffi_ola_node(SEXP lat, SEXP level, SEXP k_, SEXP want_slot)
{
    SEXP codes = VECTOR_ELT(lat, 0), gen = VECTOR_ELT(lat, 1), card = VECTOR_ELT(lat, 2),
         cost = VECTOR_ELT(lat, 3);
    const ptrdiff_t n = Rf_nrows(codes), k = Rf_asInteger(k_);
    const int d = Rf_ncols(codes);
    const int *lv = INTEGER_RO(level);
    const int *pc = n > 0 && d > 0 ? INTEGER_RO(codes) : NULL;
    const int **g = (const int **) R_alloc(d > 0 ? d : 1, sizeof(int *));
    const double **cs = (const double **) R_alloc(d > 0 ? d : 1, sizeof(double *));
    const double **sp = (const double **) R_alloc(d > 0 ? d : 1, sizeof(double *));
    ptrdiff_t *stride = (ptrdiff_t *) R_alloc(d > 0 ? d : 1, sizeof(ptrdiff_t));
    double cells = 1.0;
    for (int j = 0; j < d; j++) {
        SEXP gj = VECTOR_ELT(gen, j), cj = VECTOR_ELT(cost, j);
        const ptrdiff_t c0 = Rf_nrows(gj), h = Rf_ncols(gj);
        g[j] = INTEGER_RO(gj) + (size_t) lv[j] * c0;
        cs[j] = REAL_RO(cj) + (size_t) lv[j] * c0;
        sp[j] = REAL_RO(cj) + (size_t) h * c0;
        const int cl = INTEGER_RO(VECTOR_ELT(card, j))[lv[j]];
        stride[j] = cl > 1 ? (ptrdiff_t) cells : 0;
        if (cl > 1) cells *= cl;
    }
    const double dense_limit = n > 16384 ? 4.0 * (double) n : 65536.0;
    int *slot = (int *) R_alloc(n > 0 ? n : 1, sizeof(int));
    ptrdiff_t n_slots;
    int *counts;
    if (cells <= dense_limit) {
        n_slots = (ptrdiff_t) cells;
        counts = (int *) R_alloc(n_slots, sizeof(int));
        ola_count_dense(pc, n, d, g, stride, n_slots, slot, counts);
    } else {
        n_slots = 1;
        while (n_slots < 2 * n) n_slots <<= 1;
        counts = (int *) R_alloc(n_slots, sizeof(int));
        ptrdiff_t *reps = (ptrdiff_t *) R_alloc(n_slots, sizeof(ptrdiff_t));
        ola_count_hash(pc, n, d, g, n_slots, slot, counts, reps);
    }
    ola_result r;
    ola_summarise(pc, n, d, cs, sp, slot, counts, n_slots, k, &r);

    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
    SEXP stats = Rf_allocVector(REALSXP, 5);
    SET_VECTOR_ELT(out, 0, stats);
    double *ps = REAL(stats);
    ps[0] = (double) r.n_suppressed;
    ps[1] = (double) r.n_classes;
    ps[2] = r.cost;
    ps[3] = r.dm;
    ps[4] = r.dm_all;
    if (Rf_asLogical(want_slot) == TRUE) {
        SEXP s = Rf_allocVector(INTSXP, n);
        SET_VECTOR_ELT(out, 1, s);
        int *p = INTEGER(s);
        for (ptrdiff_t i = 0; i < n; i++) p[i] = slot[i] + 1;
    }
    UNPROTECT(1);
    return out;
}
