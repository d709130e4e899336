/* Glue for the passes of the masking verbs over their columns that run on nthreads: the
 * squeeze of the release form of a masked column in blocks of rows (kernels:
 * mask_form_scan_add(), _merge() and mask_form_apply() in mask.c), and column by column the
 * matrix of `vars`, the check that columns are finite and the checksums of the release
 * fingerprint (checksum_weighted() in fsum.c). Every result is the same for any number of
 * threads: the scans of the blocks merge exactly (minima, maxima and counts), and each
 * column's checksum is its sum in its order on one thread. */
#include "detanon.h"
#include "mask.h"
#include "fsum.h"
#include "threads.h"
#include <math.h>
#include <string.h>

/* squeeze_range() of a masked column v (double, finite) with bounds lo and hi, as
 * ffi_form_scan() then ffi_form_apply() give it, over blocks of rows on nthreads:
 * list(values, scan), `scan` the 8 numbers of ffi_form_scan(). */
SEXP ffi_form_squeeze(SEXP v, SEXP lo_, SEXP hi_, SEXP nthreads)
{
    if (TYPEOF(v) != REALSXP) Rf_error("internal error: bad input to ffi_form_squeeze");
    const ptrdiff_t n = XLENGTH(v);
    const double lo = Rf_asReal(lo_), hi = Rf_asReal(hi_);
    const int nt = threads_for(detanon_threads(nthreads), (double) n);
    mask_form_scan *part = (mask_form_scan *) R_alloc(nt, sizeof(mask_form_scan));
    const double *x = REAL_RO(v);
    for (int t = 0; t < nt; t++) mask_form_scan_init(&part[t]);
    const ptrdiff_t nb = threads_blocks(n);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (ptrdiff_t b = 0; b < nb; b++) {
        ptrdiff_t m;
        const ptrdiff_t i0 = threads_block(b, n, &m);
        mask_form_scan_add(&part[THREAD_ID], x + i0, m, lo, hi);
    }
    mask_form_scan s = part[0];
    for (int t = 1; t < nt; t++) mask_form_scan_merge(&s, &part[t]);

    const char *names[] = { "values", "scan" };
    SEXP out = PROTECT(detanon_named_list(2, names));
    double *o = REAL(SET_VECTOR_ELT(out, 0, Rf_allocVector(REALSXP, n)));
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (ptrdiff_t b = 0; b < nb; b++) {
        ptrdiff_t m;
        const ptrdiff_t i0 = threads_block(b, n, &m);
        mask_form_apply(x + i0, o + i0, m, lo, hi, &s, 0);
    }
    double *sc = REAL(SET_VECTOR_ELT(out, 1, Rf_allocVector(REALSXP, 8)));
    sc[0] = s.min; sc[1] = s.max; sc[2] = s.in_min; sc[3] = s.in_max; sc[4] = s.any_in ? 1.0 : 0.0;
    sc[5] = s.n; sc[6] = s.n_lo; sc[7] = s.n_hi;
    UNPROTECT(1);
    return out;
}

/* The data of column j of the list `cols`, read on the calling thread (an ALTREP column is
 * expanded there, never inside a parallel region): `type` REALSXP, INTSXP or LGLSXP and its
 * values, or 0 for a column of any other type or (with `plain`) one with a dim attribute. */
typedef struct {
    int type;
    ptrdiff_t n;
    const double *x;
    const int *xi;
} column_data;

static column_data column_at(SEXP cols, int j, int plain)
{
    SEXP v = VECTOR_ELT(cols, j);
    column_data c = { TYPEOF(v), XLENGTH(v), NULL, NULL };
    if (plain && !Rf_isNull(Rf_getAttrib(v, R_DimSymbol))) c.type = 0;
    if (c.type == REALSXP) c.x = REAL_RO(v);
    else if (c.type == INTSXP) c.xi = INTEGER_RO(v);
    else if (c.type == LGLSXP) c.xi = LOGICAL_RO(v);
    else c.type = 0;
    return c;
}

/* The columns of the list `cols` (column_at()) and the threads for one pass over them. */
static column_data *columns_of(SEXP cols, int plain, SEXP nthreads, int *nt)
{
    if (TYPEOF(cols) != VECSXP) Rf_error("internal error: bad input to a pass over columns");
    const int p = (int) XLENGTH(cols);
    column_data *c = (column_data *) R_alloc(p > 0 ? p : 1, sizeof(column_data));
    double work = 0;
    for (int j = 0; j < p; j++) {
        c[j] = column_at(cols, j, plain);
        if (c[j].type) work += (double) c[j].n;
    }
    *nt = threads_for(detanon_threads(nthreads), p > 1 ? work : 0);
    return c;
}

/* The n x p double matrix of the columns of the list `cols` (each double, integer or
 * logical, of length n; NA of an integer column as NA_real_, as as.double() gives it), the
 * columns copied on nthreads. */
SEXP ffi_cols_matrix(SEXP cols, SEXP n_, SEXP nthreads)
{
    int nt;
    const column_data *c = columns_of(cols, 0, nthreads, &nt);
    const int p = (int) XLENGTH(cols);
    const ptrdiff_t n = (ptrdiff_t) Rf_asReal(n_);
    for (int j = 0; j < p; j++)
        if (!c[j].type || c[j].n != n) Rf_error("internal error: bad column in ffi_cols_matrix");
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int) n, p));
    double *o = REAL(out);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (int j = 0; j < p; j++) {
        double *oj = o + (size_t) j * n;
        if (c[j].type == REALSXP) { if (n > 0) memcpy(oj, c[j].x, (size_t) n * sizeof(double)); }
        else for (ptrdiff_t i = 0; i < n; i++) oj[i] = c[j].xi[i] == NA_INTEGER ? NA_REAL : (double) c[j].xi[i];
    }
    UNPROTECT(1);
    return out;
}

/* f() of each column of the list `cols` (column_at(); `plain`: a column with a dim
 * attribute is of no type), the columns on nthreads: a double vector. */
static SEXP map_columns(SEXP cols, int plain, SEXP nthreads, double (*f)(const column_data *))
{
    int nt;
    const column_data *c = columns_of(cols, plain, nthreads, &nt);
    const int p = (int) XLENGTH(cols);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, p));
    double *o = REAL(out);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (int j = 0; j < p; j++) o[j] = f(&c[j]);
    UNPROTECT(1);
    return out;
}

/* 1 when a column holds only finite values (double: no NA, NaN or infinite value; integer
 * or logical: no NA), else 0 (also for any other type). */
static double column_finite(const column_data *c)
{
    if (c->type == REALSXP) {
        /* a double is not finite when its exponent bits are all ones */
        int bad = 0;
        for (ptrdiff_t i = 0; i < c->n; i++) {
            uint64_t b;
            memcpy(&b, c->x + i, sizeof b);
            bad |= ((b >> 52) & 0x7ff) == 0x7ff;
        }
        return !bad;
    }
    if (c->type == INTSXP || c->type == LGLSXP) {
        for (ptrdiff_t i = 0; i < c->n; i++) if (c->xi[i] == NA_INTEGER) return 0;
        return 1;
    }
    return 0;
}

/* column_finite() of each column of the list `cols`, the columns on nthreads. */
SEXP ffi_cols_finite(SEXP cols, SEXP nthreads)
{
    return map_columns(cols, 0, nthreads, column_finite);
}

/* The checksum of the release fingerprint (column_checksum() in R; checksum_weighted() in
 * fsum.c) of a double, integer or logical column without missing or infinite values; NA
 * for the others and for a column with a dim attribute, which R computes. */
static double column_checksum(const column_data *c)
{
    double s = NAN;
    if (c->type == REALSXP) s = checksum_weighted(c->x, NULL, c->n, 0);
    else if (c->type) s = checksum_weighted(NULL, c->xi, c->n, c->type == INTSXP ? NA_INTEGER : NA_LOGICAL);
    return isnan(s) ? NA_REAL : s + 0.0;
}

/* column_checksum() of each column of the list `cols`, the columns on nthreads. */
SEXP ffi_checksums(SEXP cols, SEXP nthreads)
{
    return map_columns(cols, 1, nthreads, column_checksum);
}
