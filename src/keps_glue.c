/* Glue for (k, epsilon)-anonymisation (R/keps.R): Mondrian equivalence classes, Laplace
 * noise per class with R's RNG, and the linking / c-confidence counts of section V.
 * Inputs are validated in R; kernels are in mondrian.c. */
#include "detanon.h"
#include "mondrian.h"
#include "progress.h"
#include <math.h>

#define CHUNK ((ptrdiff_t) 1 << 20)

/* Polled by a kernel on the main thread: a Ctrl-C jumps back to R (scratch memory is
 * R_alloc'd). */
static void poll_interrupt(void) { R_CheckUserInterrupt(); }

static ptrdiff_t *as_index(SEXP x, R_xlen_t len)
{
    ptrdiff_t *o = (ptrdiff_t *) R_alloc(len > 0 ? len : 1, sizeof(ptrdiff_t));
    if (TYPEOF(x) == INTSXP) { const int *p = INTEGER_RO(x); for (R_xlen_t i = 0; i < len; i++) o[i] = p[i]; }
    else { const double *p = REAL_RO(x); for (R_xlen_t i = 0; i < len; i++) o[i] = (ptrdiff_t) p[i]; }
    return o;
}

/* x: n x d numeric quasi-identifiers; order: 1-based rows grouped by stratum; offsets:
 * stratum boundaries in `order` (length S + 1); k; inv_range: d reciprocals of the global
 * ranges (0 for a constant column). Every stratum has >= k rows (checked in R).
 * Returns list(class = 1-based class per row, lo = C x d, hi = C x d, size = C). */
SEXP ffi_mondrian(SEXP x, SEXP order, SEXP offsets, SEXP k_, SEXP inv_range, SEXP progress)
{
    const ptrdiff_t n = Rf_nrows(x), k = Rf_asInteger(k_);
    const int d = Rf_ncols(x);
    const R_xlen_t n_strata = XLENGTH(offsets) - 1;
    const double *px = n > 0 && d > 0 ? REAL_RO(x) : NULL;
    const double *ir = d > 0 ? REAL_RO(inv_range) : NULL;
    /* `order` lists the rows kept (suppressed strata left out): it can be shorter than n */
    const ptrdiff_t n_kept = XLENGTH(order);
    ptrdiff_t *rows = as_index(order, n_kept);
    for (ptrdiff_t i = 0; i < n_kept; i++) rows[i] -= 1;
    const ptrdiff_t *off = as_index(offsets, n_strata + 1);
    if (n_kept > n || off[n_strata] != n_kept) Rf_error("internal error: bad order or offsets in ffi_mondrian");

    ptrdiff_t max_ns = 1;
    for (R_xlen_t s = 0; s < n_strata; s++) if (off[s + 1] - off[s] > max_ns) max_ns = off[s + 1] - off[s];
    double *vals = (double *) R_alloc(max_ns, sizeof(double));
    ptrdiff_t *tmp = (ptrdiff_t *) R_alloc(max_ns, sizeof(ptrdiff_t));
    mdr_range *stack = (mdr_range *) R_alloc(max_ns / k + 2, sizeof(mdr_range));
    ptrdiff_t *ends_s = (ptrdiff_t *) R_alloc(max_ns / k + 1, sizeof(ptrdiff_t));
    int *ord = (int *) R_alloc(d > 0 ? d : 1, sizeof(int));
    double *width = (double *) R_alloc(d > 0 ? d : 1, sizeof(double));
    /* class boundaries over all strata, as positions in rows[] */
    ptrdiff_t *ends = (ptrdiff_t *) R_alloc(n / k + n_strata + 1, sizeof(ptrdiff_t));
    ptrdiff_t n_classes = 0;
    SEXP bar = PROTECT(progress_new(progress, (double) off[n_strata], "Building classes"));
    for (R_xlen_t s = 0; s < n_strata; s++) {
        ptrdiff_t ns = off[s + 1] - off[s];
        if (ns <= 0) continue;
        ptrdiff_t c = d > 0 ? mondrian_partition(px, n, d, ir, rows + off[s], ns, k, vals, tmp,
                                                 stack, ends_s, ord, width, poll_interrupt)
                            : (ends_s[0] = ns, 1);
        for (ptrdiff_t i = 0; i < c; i++) ends[n_classes++] = off[s] + ends_s[i];
        if ((s & 1023) == 0 || ns >= CHUNK) {
            R_CheckUserInterrupt();
            progress_update(bar, off[s + 1]);
        }
    }
    progress_done(bar);
    UNPROTECT(1);

    static const char *names[] = {"class", "lo", "hi", "size"};
    SEXP out = PROTECT(detanon_named_list(4, names));
    SEXP cls = Rf_allocVector(INTSXP, n);
    SET_VECTOR_ELT(out, 0, cls);
    SEXP lo = Rf_allocMatrix(REALSXP, n_classes, d);
    SET_VECTOR_ELT(out, 1, lo);
    SEXP hi = Rf_allocMatrix(REALSXP, n_classes, d);
    SET_VECTOR_ELT(out, 2, hi);
    SEXP size = Rf_allocVector(INTSXP, n_classes);
    SET_VECTOR_ELT(out, 3, size);
    int *pc = INTEGER(cls), *psz = INTEGER(size);
    double *plo = REAL(lo), *phi = REAL(hi);
    for (ptrdiff_t i = 0; i < n; i++) pc[i] = NA_INTEGER; /* rows of suppressed strata */
    ptrdiff_t b = 0;
    for (ptrdiff_t c = 0; c < n_classes; c++) {
        ptrdiff_t e = ends[c];
        psz[c] = (int) (e - b);
        for (ptrdiff_t i = b; i < e; i++) pc[rows[i]] = (int) (c + 1);
        for (int j = 0; j < d; j++) {
            mdr_rows_range(px + (size_t) j * n, rows, b, e, plo + c + j * n_classes,
                           phi + c + j * n_classes);
        }
        b = e;
    }
    UNPROTECT(1);
    return out;
}

/* y: n x p epsilon-quasi-identifiers; cls: 1-based class per row (1..C); eps: p budgets.
 * Per class and column the diameter max - min; every value gets Laplace(0, diam / eps)
 * noise, drawn in row order, column by column within a row (so set.seed() reproduces).
 * Returns list(y = noisy n x p, diam = C x p). */
SEXP ffi_keps_noise(SEXP y, SEXP cls, SEXP n_classes_, SEXP eps)
{
    const ptrdiff_t n = Rf_nrows(y), C = Rf_asInteger(n_classes_);
    const int p = Rf_ncols(y);
    static const char *names[] = {"y", "diam"};
    SEXP out = PROTECT(detanon_named_list(2, names));
    SEXP res = Rf_allocMatrix(REALSXP, n, p);
    SET_VECTOR_ELT(out, 0, res);
    SEXP diam = Rf_allocMatrix(REALSXP, C, p);
    SET_VECTOR_ELT(out, 1, diam);
    if (n == 0 || p == 0 || C == 0) { UNPROTECT(1); return out; }

    const double *py = REAL_RO(y), *pe = REAL_RO(eps);
    const int *pc = INTEGER_RO(cls);
    double *pr = REAL(res), *pd = REAL(diam);
    double *lo = (double *) R_alloc((size_t) C * p, sizeof(double));
    double *hi = (double *) R_alloc((size_t) C * p, sizeof(double));
    for (ptrdiff_t i = 0; i < (ptrdiff_t) C * p; i++) { lo[i] = R_PosInf; hi[i] = R_NegInf; }
    for (int v = 0; v < p; v++) {
        for (ptrdiff_t i = 0; i < n; i++) {
            double t = py[i + (size_t) v * n];
            ptrdiff_t c = pc[i] - 1 + (ptrdiff_t) v * C;
            if (t < lo[c]) lo[c] = t;
            if (t > hi[c]) hi[c] = t;
        }
    }
    for (ptrdiff_t i = 0; i < (ptrdiff_t) C * p; i++) pd[i] = hi[i] >= lo[i] ? hi[i] - lo[i] : 0.0;
    GetRNGstate();
    for (ptrdiff_t i = 0; i < n; i++) {
        ptrdiff_t c = pc[i] - 1;
        for (int v = 0; v < p; v++) {
            double b = pd[c + (ptrdiff_t) v * C] / pe[v];
            pr[i + (size_t) v * n] = py[i + (size_t) v * n] + laplace_from_unif(unif_rand(), b);
        }
        if ((i & (CHUNK - 1)) == CHUNK - 1) R_CheckUserInterrupt();
    }
    PutRNGstate();
    UNPROTECT(1);
    return out;
}

/* Gather the rows of one class into row-major buffers. */
static void gather(const double *x, ptrdiff_t n, int p, const ptrdiff_t *rows, ptrdiff_t m, double *buf)
{
    for (ptrdiff_t i = 0; i < m; i++)
        for (int v = 0; v < p; v++) buf[i * p + v] = x[rows[i] + (size_t) v * n];
}

static ptrdiff_t max_class(const ptrdiff_t *off, R_xlen_t C)
{
    ptrdiff_t mx = 1;
    for (R_xlen_t c = 0; c < C; c++) if (off[c + 1] - off[c] > mx) mx = off[c + 1] - off[c];
    return mx;
}

/* o, q: n x p original and released values (rows aligned); order/offsets: rows grouped by
 * class; par: C x p per-class scales (link) or half-widths (confident); cap: count limit
 * (confident only, < 0 for link). Returns an integer per row. */
static SEXP per_class(SEXP o, SEXP q, SEXP order, SEXP offsets, SEXP par, ptrdiff_t cap,
                      SEXP progress)
{
    const ptrdiff_t n = Rf_nrows(o);
    const int p = Rf_ncols(o);
    const R_xlen_t C = XLENGTH(offsets) - 1;
    SEXP out = PROTECT(Rf_allocVector(INTSXP, n));
    if (n == 0 || p == 0 || C <= 0) {
        for (ptrdiff_t i = 0; i < n; i++) INTEGER(out)[i] = cap < 0 ? 1 : 0;
        UNPROTECT(1);
        return out;
    }
    ptrdiff_t *rows = as_index(order, n);
    for (ptrdiff_t i = 0; i < n; i++) rows[i] -= 1;
    const ptrdiff_t *off = as_index(offsets, C + 1);
    const ptrdiff_t mx = max_class(off, C);
    double *ob = (double *) R_alloc((size_t) mx * p, sizeof(double));
    double *qb = (double *) R_alloc((size_t) mx * p, sizeof(double));
    double *pv = (double *) R_alloc(p, sizeof(double));
    int *res = (int *) R_alloc(mx, sizeof(int));
    mdr_pair *pairs = (mdr_pair *) R_alloc(mx, sizeof(mdr_pair));
    const double *po = REAL_RO(o), *pq = REAL_RO(q), *pp = REAL_RO(par);
    int *pout = INTEGER(out);
    ptrdiff_t done = 0;
    SEXP bar = PROTECT(progress_new(progress, (double) n, cap < 0 ? "Linking" : "Checking confidence"));
    for (R_xlen_t c = 0; c < C; c++) {
        ptrdiff_t m = off[c + 1] - off[c];
        if (m <= 0) continue;
        const ptrdiff_t *r = rows + off[c];
        gather(po, n, p, r, m, ob);
        gather(pq, n, p, r, m, qb);
        for (int v = 0; v < p; v++) pv[v] = pp[c + (ptrdiff_t) v * C];
        if (cap < 0) link_class(ob, qb, m, p, pv, pairs, res);
        else confident_counts(ob, qb, m, p, pv, cap, pairs, res);
        for (ptrdiff_t i = 0; i < m; i++) pout[r[i]] = res[i];
        done += m;
        if (done >= CHUNK) {
            R_CheckUserInterrupt();
            progress_update(bar, off[c + 1]);
            done = 0;
        }
    }
    progress_done(bar);
    UNPROTECT(2);
    return out;
}

SEXP ffi_keps_link(SEXP o, SEXP q, SEXP order, SEXP offsets, SEXP scale, SEXP progress)
{
    return per_class(o, q, order, offsets, scale, -1, progress);
}

SEXP ffi_keps_confident(SEXP o, SEXP q, SEXP order, SEXP offsets, SEXP r, SEXP cap, SEXP progress)
{
    return per_class(o, q, order, offsets, r, (ptrdiff_t) Rf_asInteger(cap), progress);
}
