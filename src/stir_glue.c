/* Glue for cluster stirring: SEXP in/out; the kernels are in stir.c. */
#include "detanon.h"
#include <R_ext/Random.h>
#include "stir.h"

/* cl: 1-based cluster ids (no NA, R checked) -> start (C + 1) and rows (n), R_alloc'd */
static void group_rows(SEXP cl, int C, ptrdiff_t **start, ptrdiff_t **rows)
{
    ptrdiff_t n = XLENGTH(cl);
    const int *c1 = INTEGER_RO(cl);
    int *c0 = (int *) R_alloc((size_t) (n > 0 ? n : 1), sizeof(int));
    for (ptrdiff_t i = 0; i < n; i++) c0[i] = c1[i] - 1;
    *start = (ptrdiff_t *) R_alloc((size_t) C + 1, sizeof(ptrdiff_t));
    *rows = (ptrdiff_t *) R_alloc((size_t) (n > 0 ? n : 1), sizeof(ptrdiff_t));
    stir_group(c0, n, C, *start, *rows);
}

/* x: n x d double; nominal: d ints; cl: n cluster ids 1..C -> list(row = C x d int (1-based
 * row holding the centroid value), radius = C x d double) */
SEXP ffi_stir_centroids(SEXP x, SEXP nominal, SEXP cl, SEXP n_clusters)
{
    ptrdiff_t n = Rf_nrows(x);
    int d = Rf_ncols(x), C = Rf_asInteger(n_clusters);
    ptrdiff_t *start, *rows;
    group_rows(cl, C, &start, &rows);
    ptrdiff_t big = 1;
    for (int c = 0; c < C; c++) if (start[c + 1] - start[c] > big) big = start[c + 1] - start[c];
    stir_pair *pairs = (stir_pair *) R_alloc((size_t) big, sizeof(stir_pair));
    int np = 0;
    SEXP crow = PROTECT(Rf_allocMatrix(INTSXP, C, d)); np++;
    SEXP radius = PROTECT(Rf_allocMatrix(REALSXP, C, d)); np++;
    if ((ptrdiff_t) C * d > 0) {
        stir_centroid(n > 0 ? REAL_RO(x) : NULL, n, d, INTEGER_RO(nominal), start, rows, C,
                      pairs, INTEGER(crow), REAL(radius));
    }
    static const char *names[] = {"row", "radius"};
    SEXP out = PROTECT(detanon_named_list(2, names)); np++;
    SET_VECTOR_ELT(out, 0, crow);
    SET_VECTOR_ELT(out, 1, radius);
    UNPROTECT(np);
    return out;
}

/* xo: outliers (no x d), xc: centroids (L x d), knots: list of d lists (x, y) -> list(target
 * = 1-based cluster, dist = summed mapped distance) */
SEXP ffi_stir_nearest(SEXP xo, SEXP xc, SEXP nominal, SEXP knots)
{
    ptrdiff_t no = Rf_nrows(xo);
    int L = Rf_nrows(xc), d = Rf_ncols(xo);
    const double **kx = (const double **) R_alloc((size_t) (d > 0 ? d : 1), sizeof(double *));
    const double **ky = (const double **) R_alloc((size_t) (d > 0 ? d : 1), sizeof(double *));
    int *nk = (int *) R_alloc((size_t) (d > 0 ? d : 1), sizeof(int));
    for (int j = 0; j < d; j++) {
        SEXP kj = VECTOR_ELT(knots, j);
        kx[j] = REAL_RO(VECTOR_ELT(kj, 0));
        ky[j] = REAL_RO(VECTOR_ELT(kj, 1));
        nk[j] = (int) XLENGTH(VECTOR_ELT(kj, 0));
    }
    int np = 0;
    SEXP target = PROTECT(Rf_allocVector(INTSXP, no)); np++;
    SEXP dist = PROTECT(Rf_allocVector(REALSXP, no)); np++;
    if (no > 0 && L > 0) {
        /* outliers in chunks of about 2^22 distance terms, an interrupt check between */
        double per = (double) L * (d > 0 ? d : 1);
        ptrdiff_t chunk = per >= 4194304.0 ? 1 : (ptrdiff_t) (4194304.0 / per);
        for (ptrdiff_t from = 0; from < no; from += chunk) {
            ptrdiff_t to = no - from > chunk ? from + chunk : no;
            stir_nearest(REAL_RO(xo), no, from, to, REAL_RO(xc), L, d, INTEGER_RO(nominal), kx, ky, nk,
                         INTEGER(target), REAL(dist));
            R_CheckUserInterrupt();
        }
        int *t = INTEGER(target);
        for (ptrdiff_t o = 0; o < no; o++) t[o] += 1;
    }
    static const char *names[] = {"target", "dist"};
    SEXP out = PROTECT(detanon_named_list(2, names)); np++;
    SET_VECTOR_ELT(out, 0, target);
    SET_VECTOR_ELT(out, 1, dist);
    UNPROTECT(np);
    return out;
}

/* x: n x d double, nominal, eps (d), order (1-based processing order) -> 1-based clusters */
SEXP ffi_stir_clusters(SEXP x, SEXP nominal, SEXP eps, SEXP order)
{
    ptrdiff_t n = Rf_nrows(x);
    int d = Rf_ncols(x);
    SEXP cl = PROTECT(Rf_allocVector(INTSXP, n));
    if (n > 0 && d > 0) {
        int *ord = (int *) R_alloc((size_t) n, sizeof(int));
        const int *o1 = INTEGER_RO(order);
        for (ptrdiff_t i = 0; i < n; i++) ord[i] = o1[i] - 1;
        stir_greedy s;
        s.x = REAL_RO(x); s.n = n; s.d = d;
        s.nominal = INTEGER_RO(nominal); s.eps = REAL_RO(eps); s.order = ord;
        s.cl = INTEGER(cl);
        s.next = (ptrdiff_t *) R_alloc((size_t) n, sizeof(ptrdiff_t));
        s.prev = (ptrdiff_t *) R_alloc((size_t) n, sizeof(ptrdiff_t));
        s.lo = (double *) R_alloc((size_t) d, sizeof(double));
        s.hi = (double *) R_alloc((size_t) d, sizeof(double));
        stir_greedy_init(&s);
        while (!stir_greedy_step(&s, (ptrdiff_t) 1 << 22)) R_CheckUserInterrupt();
        int *c = INTEGER(cl);
        for (ptrdiff_t i = 0; i < n; i++) c[i] += 1;
    } else if (n > 0) {
        int *c = INTEGER(cl);
        for (ptrdiff_t i = 0; i < n; i++) c[i] = 1;
    }
    UNPROTECT(1);
    return cl;
}

/* An independent uniform permutation of each variable inside each cluster, from R's RNG:
 * cl (n ids 1..C), d variables -> n x d int matrix of 1-based source rows. The draws are
 * R_unif_index(i + 1) for i = m-1 .. 1 (as sample.int(i + 1, 1) - 1), variables outer,
 * clusters in id order inner. */
SEXP ffi_stir_shuffle(SEXP cl, SEXP n_clusters, SEXP n_vars)
{
    ptrdiff_t n = XLENGTH(cl);
    int C = Rf_asInteger(n_clusters), d = Rf_asInteger(n_vars);
    ptrdiff_t *start, *rows;
    group_rows(cl, C, &start, &rows);
    ptrdiff_t total = 0;
    for (int c = 0; c < C; c++) {
        ptrdiff_t m = start[c + 1] - start[c];
        if (m > 1) total += m - 1;
    }
    total *= d;
    int *draw = (int *) R_alloc((size_t) (total > 0 ? total : 1), sizeof(int));
    GetRNGstate();
    ptrdiff_t k = 0;
    for (int j = 0; j < d; j++) {
        for (int c = 0; c < C; c++) {
            ptrdiff_t m = start[c + 1] - start[c];
            for (ptrdiff_t i = m - 1; i >= 1; i--) draw[k++] = (int) R_unif_index((double) (i + 1));
        }
        R_CheckUserInterrupt();
    }
    PutRNGstate();
    ptrdiff_t *buf = (ptrdiff_t *) R_alloc((size_t) (n > 0 ? n : 1), sizeof(ptrdiff_t));
    SEXP src = PROTECT(Rf_allocMatrix(INTSXP, (int) n, d));
    if (n > 0 && d > 0) stir_shuffle(start, rows, C, n, d, draw, INTEGER(src), buf);
    UNPROTECT(1);
    return src;
}
