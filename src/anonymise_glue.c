/* Glue for anonymise() and for step 5 of every masking path: converts R's arguments and
 * dispatches to the kernels (column statistics and step 5 in mask.c, grouping rows by
 * stratum and the search in knn.c), on data validated in R. */
#include "detanon.h"
#include "knn.h"
#include "mask.h"
#include "progress.h"
#include "fsum.h"
#include "threads.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The scaling factors of step 5: sd / c_sd, NA for a column released as its mean. */
static SEXP step5_scale(int d, const double *sd, const double *c_sd, const int *flat)
{
    SEXP out = Rf_allocVector(REALSXP, d);
    for (int j = 0; j < d; j++) REAL(out)[j] = flat[j] ? NA_REAL : sd[j] / c_sd[j];
    return out;
}

/* The scratch memory of ffi_anonymise()'s search (the rows by stratum, nthreads kd-trees of
 * the largest strata and their centroid buffer: about 70 bytes per record at d = 4 and 2
 * threads), kept between calls in one malloc'd block. From R's heap it would be faulted in
 * page by page at every call and bring on garbage collections of the whole session, all on
 * the calling thread (at 1e6 records: 70 MB, 30-100 ms a call). A call takes what does not
 * fit in the block with R_alloc (freed by R, also after an error or interrupt) and counts
 * all it needed; the block is then resized to that: kept up to SCRATCH_KEEP bytes, shrunk
 * when a call needed less than a quarter of it. */
#define SCRATCH_KEEP ((size_t) 256 << 20)
#define SCRATCH_ALIGN ((size_t) 64)
static struct {
    char *base;     /* the block, SCRATCH_ALIGN-aligned; NULL: none */
    void *raw;      /* what malloc() returned */
    size_t cap, used, need;
    int busy;       /* a call is using it (a nested call takes R_alloc memory) */
} scratch;

static void *scratch_alloc(size_t n, size_t size)
{
    n = n > 0 ? n : 1;
    size = size > 0 ? size : 1;
    if (n <= SIZE_MAX / size - SCRATCH_ALIGN) {
        const size_t bytes = (n * size + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
        scratch.need += bytes;
        if (scratch.base && bytes <= scratch.cap - scratch.used) {
            void *p = scratch.base + scratch.used;
            scratch.used += bytes;
            return p;
        }
    }
    return detanon_alloc(n, size);
}

/* At the end of a call (also after an error or interrupt): the block resized to what the
 * call needed. */
static void scratch_done(void *unused)
{
    (void) unused;
    scratch.busy = 0;
    const size_t need = scratch.need;
    if (need <= scratch.cap && need >= scratch.cap / 4) return;
    free(scratch.raw);
    scratch.raw = NULL;
    scratch.base = NULL;
    scratch.cap = 0;
    if (need > SCRATCH_KEEP) return;
    scratch.raw = malloc(need + SCRATCH_ALIGN);
    if (!scratch.raw) return;
    scratch.base = (char *) scratch.raw + (SCRATCH_ALIGN - (uintptr_t) scratch.raw % SCRATCH_ALIGN) % SCRATCH_ALIGN;
    scratch.cap = need;
}

/* The block given back when the package's library is unloaded. */
void anonymise_scratch_free(void)
{
    free(scratch.raw);
    scratch.raw = NULL;
    scratch.base = NULL;
    scratch.cap = 0;
}

/* Steps 3 and 4 of ffi_anonymise(): the rows grouped by stratum and the search. */
typedef struct {
    const int *id;
    knn_job job;
    const char *bad;
} search_call;

static SEXP run_search(void *data)
{
    search_call *c = (search_call *) data;
    knn_job *job = &c->job;
    ptrdiff_t *off = (ptrdiff_t *) job->host->alloc((size_t) job->n_strata + 1, sizeof(ptrdiff_t));
    ptrdiff_t *rows = (ptrdiff_t *) job->host->alloc(job->n, sizeof(ptrdiff_t));
    knn_group_rows(c->id, job->n, job->n_strata, rows, off);
    job->rows = rows;
    job->off = off;
    c->bad = knn_check_strata(off, job->n_strata, job->n, job->k);
    if (!c->bad) knn_all(job);
    return R_NilValue;
}

/* Steps 3-5 of anonymise(): x the n x p data, `id` the stratum (1..S) of each row (empty
 * strata allowed), k, mean and sd the p columns' z-scale (column_scale() in R/scale.R, all
 * finite), nthreads, progress (TRUE: show a progress bar). Columns with SD 0 are copied; a
 * masked column whose centroids are all equal is released as its mean (mask.h). Returns
 * list(columns, scale): the p output columns, and the scaling factors of step 5 of the
 * masked columns (those with SD > 0, in order; NA for one released as its mean). */
SEXP ffi_anonymise(SEXP x, SEXP id_, SEXP k_, SEXP mean_, SEXP sd_, SEXP nthreads, SEXP progress_)
{
    if (TYPEOF(x) != REALSXP || TYPEOF(id_) != INTSXP || TYPEOF(mean_) != REALSXP || TYPEOF(sd_) != REALSXP)
        Rf_error("internal error: bad input types to ffi_anonymise");
    const ptrdiff_t n = Rf_nrows(x);
    const int p = Rf_ncols(x), k = Rf_asInteger(k_), nt = detanon_threads(nthreads);
    if (n < 1 || XLENGTH(id_) != n || XLENGTH(mean_) != p || XLENGTH(sd_) != p)
        Rf_error("internal error: bad input to ffi_anonymise");
    const int *id = INTEGER_RO(id_);
    const double *px = REAL_RO(x), *mean = REAL_RO(mean_), *sd = REAL_RO(sd_);
    int d = 0;
    for (int j = 0; j < p; j++) {
        if (!R_FINITE(mean[j]) || !R_FINITE(sd[j]))
            Rf_error("internal error: a non-finite column scale in ffi_anonymise");
        if (sd[j] > 0) d++;
    }

    const char *names[] = { "columns", "scale" };
    SEXP out = PROTECT(detanon_named_list(2, names));

    ptrdiff_t n_strata = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        if (id[i] < 1 || id[i] > n) Rf_error("internal error: stratum id out of range in ffi_anonymise");
        if (id[i] > n_strata) n_strata = id[i];
    }

    /* output columns: the masked ones receive the centroids, the others a copy */
    SEXP columns = SET_VECTOR_ELT(out, 0, Rf_allocVector(VECSXP, p));
    double *c_sd = (double *) R_alloc(d > 0 ? d : 1, sizeof(double));
    int *flat = (int *) R_alloc(d > 0 ? d : 1, sizeof(int));
    const double **src = (const double **) R_alloc(d > 0 ? d : 1, sizeof(double *));
    double **cent = (double **) R_alloc(d > 0 ? d : 1, sizeof(double *));
    double *m_d = (double *) R_alloc(d > 0 ? d : 1, sizeof(double));
    double *s_d = (double *) R_alloc(d > 0 ? d : 1, sizeof(double));
    for (int j = 0, m = 0; j < p; j++) {
        double *o = REAL(SET_VECTOR_ELT(columns, j, Rf_allocVector(REALSXP, n)));
        const double *xj = px + (ptrdiff_t) j * n;
        if (sd[j] > 0) {
            src[m] = xj; cent[m] = o; m_d[m] = mean[j]; s_d[m] = sd[j]; m++;
        } else {
            for (ptrdiff_t i = 0; i < n; i++) o[i] = xj[i];
        }
    }

    /* steps 3 and 4: the k nearest neighbours on z-scores, and their centroids */
    SEXP bar = PROTECT(progress_new(progress_, (double) n, "Masking"));
    kernel_host host = detanon_host(bar);
    search_call call = { id, { n, d, k, nt, src, m_d, s_d, NULL, NULL, n_strata, cent, NULL, &host }, NULL };
    if (scratch.busy) {
        run_search(&call);
    } else {
        scratch.busy = 1;
        scratch.used = scratch.need = 0;
        host.alloc = scratch_alloc;
        R_ExecWithCleanup(run_search, &call, scratch_done, NULL);
    }
    if (call.bad) Rf_error("internal error in ffi_anonymise: %s", call.bad);
    progress_done(bar);
    UNPROTECT(1);

    /* step 5 over the whole data */
    const kernel_host quiet = detanon_host(R_NilValue);
    mask_step5(cent, d, n, m_d, s_d, c_sd, 0, flat, nt, &quiet);
    SET_VECTOR_ELT(out, 1, step5_scale(d, s_d, c_sd, flat));
    UNPROTECT(1);
    return out;
}

/* Step 5 for the R paths (the rann engine of anonymise(), anonymise_adaptive()):
 * centroids n x d on the z-scale; mean and sd: the d original columns' means and SDs;
 * centroid_sd: the centroids' SDs (d), or NULL to compute them exactly. Returns
 * list(columns, scale): the d rescaled columns, and the scaling factors (NA for a column
 * released as its mean). */
SEXP ffi_rescale(SEXP centroids, SEXP mean, SEXP sd, SEXP centroid_sd, SEXP nthreads)
{
    const ptrdiff_t n = Rf_nrows(centroids);
    const int d = Rf_ncols(centroids), nt = detanon_threads(nthreads);
    const int given_sd = !Rf_isNull(centroid_sd);
    if (TYPEOF(centroids) != REALSXP || TYPEOF(mean) != REALSXP || XLENGTH(mean) != d ||
        TYPEOF(sd) != REALSXP || XLENGTH(sd) != d ||
        (given_sd && (TYPEOF(centroid_sd) != REALSXP || XLENGTH(centroid_sd) != d)))
        Rf_error("internal error: bad input to ffi_rescale");
    const char *names[] = { "columns", "scale" };
    SEXP out = PROTECT(detanon_named_list(2, names));
    SEXP columns = SET_VECTOR_ELT(out, 0, Rf_allocVector(VECSXP, d));
    double **cent = (double **) R_alloc(d > 0 ? d : 1, sizeof(double *));
    double *c_sd = (double *) R_alloc(d > 0 ? d : 1, sizeof(double));
    int *flat = (int *) R_alloc(d > 0 ? d : 1, sizeof(int));
    for (int j = 0; j < d; j++) {
        cent[j] = REAL(SET_VECTOR_ELT(columns, j, Rf_allocVector(REALSXP, n)));
        if (n > 0) {
            const double *cj = REAL_RO(centroids) + (size_t) j * n;
            for (ptrdiff_t i = 0; i < n; i++) cent[j][i] = cj[i];
        }
        if (given_sd) c_sd[j] = REAL_RO(centroid_sd)[j];
    }
    const kernel_host host = detanon_host(R_NilValue);
    mask_step5(cent, d, n, REAL_RO(mean), REAL_RO(sd), c_sd, given_sd, flat, nt, &host);
    SET_VECTOR_ELT(out, 1, step5_scale(d, REAL_RO(sd), c_sd, flat));
    UNPROTECT(1);
    return out;
}

/* Column means and SDs that do not depend on row order: a 2 x d matrix. */
SEXP ffi_col_stats(SEXP x, SEXP nthreads)
{
    const ptrdiff_t n = Rf_nrows(x);
    const int d = Rf_ncols(x), nt = detanon_threads(nthreads);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, 2, d));
    double *mean = (double *) R_alloc(d > 0 ? d : 1, sizeof(double));
    double *sd = (double *) R_alloc(d > 0 ? d : 1, sizeof(double));
    const kernel_host host = detanon_host(R_NilValue);
    mask_col_stats(n > 0 ? REAL_RO(x) : NULL, n, d, nt, mean, sd, &host);
    for (int j = 0; j < d; j++) { REAL(out)[2 * j] = mean[j]; REAL(out)[2 * j + 1] = sd[j]; }
    UNPROTECT(1);
    return out;
}

/* The release form (format_masked()): statistics of a column x (double, finite, not
 * empty): c(min, max, whole, lo, hi, n_min, n_max), see mask_form_stats(); kk = 0 skips lo
 * and hi. */
SEXP ffi_form_stats(SEXP x, SEXP kk_)
{
    if (TYPEOF(x) != REALSXP || XLENGTH(x) < 1) Rf_error("internal error: bad input to ffi_form_stats");
    const ptrdiff_t n = XLENGTH(x), kk = (ptrdiff_t) Rf_asReal(kk_);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, 7));
    double *buf = (double *) R_alloc(kk > 64 ? (size_t) n : 128, sizeof(double));
    mask_form_stats(REAL_RO(x), n, kk, buf, REAL(out));
    UNPROTECT(1);
    return out;
}

/* ffi_form_stats() of every column of the n x p double matrix x (finite, n >= 1): a 7 x p
 * matrix, the columns on nthreads. */
SEXP ffi_form_stats_cols(SEXP x, SEXP kk_, SEXP nthreads)
{
    if (TYPEOF(x) != REALSXP || !Rf_isMatrix(x) || Rf_nrows(x) < 1)
        Rf_error("internal error: bad input to ffi_form_stats_cols");
    const ptrdiff_t n = Rf_nrows(x), kk = (ptrdiff_t) Rf_asReal(kk_);
    const int p = Rf_ncols(x), nt = threads_for(detanon_threads(nthreads), (double) n * (p > 1 ? p : 0));
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, 7, p));
    const size_t len = kk > 64 ? (size_t) n : 128;
    double *buf = (double *) R_alloc((size_t) nt * len, sizeof(double));
    const double *px = REAL_RO(x);
    double *o = REAL(out);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (int j = 0; j < p; j++)
        mask_form_stats(px + (size_t) j * n, n, kk, buf + (size_t) THREAD_ID * len, o + (size_t) 7 * j);
    UNPROTECT(1);
    return out;
}

/* squeeze_range() of a masked column v (double, finite; a new vector), then, when round0
 * is TRUE, rounded to whole numbers inside [lo, hi] (mask_release_form()). */
SEXP ffi_squeeze(SEXP v, SEXP lo, SEXP hi, SEXP round0)
{
    if (TYPEOF(v) != REALSXP) Rf_error("internal error: bad input to ffi_squeeze");
    const ptrdiff_t n = XLENGTH(v);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    mask_release_form(REAL_RO(v), REAL(out), n, Rf_asReal(lo), Rf_asReal(hi), Rf_asLogical(round0) == 1);
    UNPROTECT(1);
    return out;
}

/* The scan of the release form (mask_form_scan) as 8 doubles: min, max, in_min, in_max,
 * any_in (0/1), n, n_lo, n_hi, so that a column in pieces is scanned piece by piece
 * (partitioned anonymise()). */
#define SCAN_LEN 8
static void scan_from_sexp(SEXP s, mask_form_scan *out)
{
    if (TYPEOF(s) != REALSXP || XLENGTH(s) != SCAN_LEN) Rf_error("internal error: bad scan of the release form");
    const double *p = REAL_RO(s);
    out->min = p[0]; out->max = p[1]; out->in_min = p[2]; out->in_max = p[3]; out->any_in = p[4] != 0.0;
    out->n = p[5]; out->n_lo = p[6]; out->n_hi = p[7];
}

/* The scan of the masked values v (double, finite) inside [lo, hi], merged with `scan`
 * (NULL: none) by mask_form_scan_merge(). */
SEXP ffi_form_scan(SEXP v, SEXP lo_, SEXP hi_, SEXP scan)
{
    if (TYPEOF(v) != REALSXP) Rf_error("internal error: bad input to ffi_form_scan");
    mask_form_scan s;
    mask_form_scan_init(&s);
    mask_form_scan_add(&s, REAL_RO(v), XLENGTH(v), Rf_asReal(lo_), Rf_asReal(hi_));
    if (!Rf_isNull(scan)) {
        mask_form_scan prev;
        scan_from_sexp(scan, &prev);
        mask_form_scan_merge(&s, &prev);
    }
    SEXP out = PROTECT(Rf_allocVector(REALSXP, SCAN_LEN));
    double *o = REAL(out);
    o[0] = s.min; o[1] = s.max; o[2] = s.in_min; o[3] = s.in_max; o[4] = s.any_in ? 1.0 : 0.0;
    o[5] = s.n; o[6] = s.n_lo; o[7] = s.n_hi;
    UNPROTECT(1);
    return out;
}

/* squeeze_range() of one piece v of a column whose merged scan is `scan` (then rounded to
 * whole numbers when round0): mask_form_apply(), into a new vector. */
SEXP ffi_form_apply(SEXP v, SEXP lo, SEXP hi, SEXP scan, SEXP round0)
{
    if (TYPEOF(v) != REALSXP) Rf_error("internal error: bad input to ffi_form_apply");
    mask_form_scan s;
    scan_from_sexp(scan, &s);
    const ptrdiff_t n = XLENGTH(v);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    mask_form_apply(REAL_RO(v), REAL(out), n, Rf_asReal(lo), Rf_asReal(hi), &s, Rf_asLogical(round0) == 1);
    UNPROTECT(1);
    return out;
}

/* The largest magnitude of each column of a double matrix, missing values left out (Inf
 * for a column without any other value, as max(abs(range(x, na.rm = TRUE))) gives): the
 * powers of two of pow2_factors() without a copy of each column. */
SEXP ffi_col_maxabs(SEXP x)
{
    if (TYPEOF(x) != REALSXP) Rf_error("internal error: bad input to ffi_col_maxabs");
    const ptrdiff_t n = Rf_isMatrix(x) ? Rf_nrows(x) : XLENGTH(x);
    const int p = Rf_isMatrix(x) ? Rf_ncols(x) : 1;
    SEXP out = PROTECT(Rf_allocVector(REALSXP, p));
    for (int j = 0; j < p; j++) REAL(out)[j] = mask_max_abs(REAL_RO(x) + (size_t) j * n, n);
    UNPROTECT(1);
    return out;
}

/* ---- partitioned anonymise(): the pieces of ffi_anonymise() on chunks of rows ---------- */

/* Steps 3-4 of anonymise() on the rows of whole strata: x the n x d masked columns, id the
 * stratum (1..S, empty ones allowed) of each row, mean and sd the d global column
 * statistics. The n x d centroids on the z-scale, as ffi_anonymise() makes them. */
SEXP ffi_mask_strata(SEXP x, SEXP id_, SEXP k_, SEXP mean, SEXP sd, SEXP nthreads)
{
    const ptrdiff_t n = Rf_nrows(x);
    const int d = Rf_ncols(x), k = Rf_asInteger(k_), nt = detanon_threads(nthreads);
    if (TYPEOF(x) != REALSXP || TYPEOF(id_) != INTSXP || XLENGTH(id_) != n ||
        TYPEOF(mean) != REALSXP || XLENGTH(mean) != d || TYPEOF(sd) != REALSXP || XLENGTH(sd) != d)
        Rf_error("internal error: bad input to ffi_mask_strata");
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, n, d));
    if (n == 0 || d == 0) { UNPROTECT(1); return out; }
    const int *id = INTEGER_RO(id_);
    ptrdiff_t n_strata = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        if (id[i] < 1 || id[i] > n) Rf_error("internal error: stratum id out of range in ffi_mask_strata");
        if (id[i] > n_strata) n_strata = id[i];
    }
    ptrdiff_t *off = (ptrdiff_t *) R_alloc((size_t) n_strata + 1, sizeof(ptrdiff_t));
    ptrdiff_t *rows = (ptrdiff_t *) R_alloc(n, sizeof(ptrdiff_t));
    knn_group_rows(id, n, n_strata, rows, off);
    const char *bad = knn_check_strata(off, n_strata, n, k);
    if (bad) Rf_error("internal error in ffi_mask_strata: %s", bad);
    const double **src = (const double **) R_alloc(d, sizeof(double *));
    double **cent = (double **) R_alloc(d, sizeof(double *));
    for (int j = 0; j < d; j++) {
        src[j] = REAL_RO(x) + (ptrdiff_t) j * n;
        cent[j] = REAL(out) + (ptrdiff_t) j * n;
    }
    const kernel_host host = detanon_host(R_NilValue);
    knn_job job = { n, d, k, nt, src, REAL_RO(mean), REAL_RO(sd), rows, off, n_strata, cent, NULL, &host };
    knn_all(&job);
    UNPROTECT(1);
    return out;
}

/* The exact accumulator (fsum.h) of each column of the n x p matrix x, added to `acc`
 * (FSUM_ACC_LEN x p, or NULL for empty ones): the sums (centre NULL) or the squared
 * deviations from centre[j]. Returns the new FSUM_ACC_LEN x p state. */
SEXP ffi_acc_add(SEXP acc, SEXP x, SEXP centre)
{
    const ptrdiff_t n = Rf_nrows(x);
    const int p = Rf_ncols(x);
    if (TYPEOF(x) != REALSXP || (!Rf_isNull(acc) && (TYPEOF(acc) != REALSXP ||
        XLENGTH(acc) != (R_xlen_t) FSUM_ACC_LEN * p)) ||
        (!Rf_isNull(centre) && (TYPEOF(centre) != REALSXP || XLENGTH(centre) != p)))
        Rf_error("internal error: bad input to ffi_acc_add");
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, FSUM_ACC_LEN, p));
    for (int j = 0; j < p; j++) {
        double *a = REAL(out) + (ptrdiff_t) j * FSUM_ACC_LEN;
        if (Rf_isNull(acc)) fsum_acc_init(a);
        else memcpy(a, REAL_RO(acc) + (ptrdiff_t) j * FSUM_ACC_LEN, FSUM_ACC_LEN * sizeof(double));
        if (n > 0) fsum_acc_add(a, REAL_RO(x) + (ptrdiff_t) j * n, n, Rf_isNull(centre) ? NULL : REAL_RO(centre) + j);
        if (j % 16 == 15) R_CheckUserInterrupt();
    }
    UNPROTECT(1);
    return out;
}

/* Two accumulator states merged (FSUM_ACC_LEN x p each); `times` (p, or NULL): add
 * values[j] times[j] times to column j of a instead of merging b. */
SEXP ffi_acc_merge(SEXP a, SEXP b, SEXP values, SEXP times)
{
    const int p = Rf_ncols(a);
    if (TYPEOF(a) != REALSXP || XLENGTH(a) != (R_xlen_t) FSUM_ACC_LEN * p)
        Rf_error("internal error: bad input to ffi_acc_merge");
    const int rep = Rf_isNull(b);
    if (!rep && (TYPEOF(b) != REALSXP || XLENGTH(b) != XLENGTH(a)))
        Rf_error("internal error: bad input to ffi_acc_merge");
    if (rep && (TYPEOF(values) != REALSXP || XLENGTH(values) != p || TYPEOF(times) != REALSXP ||
        XLENGTH(times) != p))
        Rf_error("internal error: bad input to ffi_acc_merge");
    SEXP out = PROTECT(Rf_duplicate(a));
    for (int j = 0; j < p; j++) {
        double *o = REAL(out) + (ptrdiff_t) j * FSUM_ACC_LEN;
        if (rep) fsum_acc_add_rep(o, REAL_RO(values)[j], REAL_RO(times)[j]);
        else fsum_acc_merge(o, REAL_RO(b) + (ptrdiff_t) j * FSUM_ACC_LEN);
    }
    UNPROTECT(1);
    return out;
}

/* The correctly rounded totals of an accumulator state (FSUM_ACC_LEN x p), column j
 * scaled by 2^e[j]. */
SEXP ffi_acc_round(SEXP acc, SEXP e)
{
    const int p = Rf_ncols(acc);
    if (TYPEOF(acc) != REALSXP || XLENGTH(acc) != (R_xlen_t) FSUM_ACC_LEN * p ||
        TYPEOF(e) != INTSXP || XLENGTH(e) != p)
        Rf_error("internal error: bad input to ffi_acc_round");
    SEXP out = PROTECT(Rf_allocVector(REALSXP, p));
    for (int j = 0; j < p; j++)
        REAL(out)[j] = fsum_acc_round(REAL_RO(acc) + (ptrdiff_t) j * FSUM_ACC_LEN, INTEGER_RO(e)[j]);
    UNPROTECT(1);
    return out;
}

/* The map of the natural form (mask_fit) from fit = c(L, U, a, b, tL, tU, dL, dU, vmin,
 * vmax). */
static mask_fit fit_from_sexp(SEXP fit)
{
    if (TYPEOF(fit) != REALSXP || XLENGTH(fit) != 10) Rf_error("internal error: bad map of the release form");
    const double *p = REAL_RO(fit);
    mask_fit f = { p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9] };
    return f;
}

/* mask_fit_sums() of a piece v of a column, added to `state` (NULL: none yet): with `dev`
 * FALSE, c(n below tL, n above tU, least and largest value inside, then the three
 * accumulators); with `dev` TRUE, the accumulator of the squared deviations from centre of
 * the values inside. Threads over blocks of v. */
SEXP ffi_fit_sums(SEXP state, SEXP v, SEXP fit, SEXP centre, SEXP dev_, SEXP nthreads)
{
    const int dev = Rf_asLogical(dev_) == 1, n_acc = dev ? 1 : 3, off = dev ? 0 : 4;
    const R_xlen_t len = off + n_acc * FSUM_ACC_LEN;
    if (TYPEOF(v) != REALSXP || (!Rf_isNull(state) && (TYPEOF(state) != REALSXP || XLENGTH(state) != len)))
        Rf_error("internal error: bad input to ffi_fit_sums");
    const mask_fit f = fit_from_sexp(fit);
    const double c = Rf_asReal(centre);
    const ptrdiff_t n = XLENGTH(v);
    const int nt = threads_for(detanon_threads(nthreads), (double) n);
    /* each thread sums its blocks of rows into its own state; the states are merged
     * exactly, so the sums do not depend on the number of threads */
    double *part = (double *) R_alloc((size_t) nt * (size_t) len, sizeof(double));
    for (int t = 0; t < nt; t++) {
        double *o = part + (size_t) t * len;
        if (t == 0 && !Rf_isNull(state)) {
            memcpy(o, REAL_RO(state), (size_t) len * sizeof(double));
            continue;
        }
        if (!dev) { o[0] = o[1] = 0.0; o[2] = HUGE_VAL; o[3] = -HUGE_VAL; }
        for (int a = 0; a < n_acc; a++) fsum_acc_init(o + off + a * FSUM_ACC_LEN);
    }
    const double *x = REAL_RO(v);
    const ptrdiff_t nb = threads_blocks(n);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (ptrdiff_t b = 0; b < nb; b++) {
        double *o = part + (size_t) THREAD_ID * len;
        double *acc[3];
        for (int a = 0; a < 3; a++) acc[a] = o + off + (a < n_acc ? a : 0) * FSUM_ACC_LEN;
        ptrdiff_t m;
        const ptrdiff_t i0 = threads_block(b, n, &m);
        mask_fit_sums(x + i0, m, &f, c, dev, o, acc);
    }
    SEXP out = PROTECT(Rf_allocVector(REALSXP, len));
    double *o = REAL(out);
    memcpy(o, part, (size_t) len * sizeof(double));
    for (int t = 1; t < nt; t++) {
        const double *p = part + (size_t) t * len;
        if (!dev) {
            o[0] += p[0];
            o[1] += p[1];
            if (p[2] < o[2]) o[2] = p[2];
            if (p[3] > o[3]) o[3] = p[3];
        }
        for (int a = 0; a < n_acc; a++) fsum_acc_merge(o + off + a * FSUM_ACC_LEN, p + off + a * FSUM_ACC_LEN);
    }
    UNPROTECT(1);
    return out;
}

/* mask_fit_apply() of v into a new vector, or with `into` TRUE over v itself (which the
 * caller guarantees nothing else refers to). */
SEXP ffi_fit_apply(SEXP v, SEXP fit, SEXP nthreads, SEXP into)
{
    if (TYPEOF(v) != REALSXP) Rf_error("internal error: bad input to ffi_fit_apply");
    const mask_fit f = fit_from_sexp(fit);
    const ptrdiff_t n = XLENGTH(v);
    const int nt = threads_for(detanon_threads(nthreads), (double) n);
    SEXP out = PROTECT(Rf_asLogical(into) == 1 ? v : Rf_allocVector(REALSXP, n));
    const double *x = REAL_RO(v);
    double *o = REAL(out);
    const ptrdiff_t nb = threads_blocks(n);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (ptrdiff_t b = 0; b < nb; b++) {
        ptrdiff_t m;
        const ptrdiff_t i0 = threads_block(b, n, &m);
        mask_fit_apply(x + i0, o + i0, m, &f);
    }
    UNPROTECT(1);
    return out;
}

/* One pass of the exact order statistic (mask.h): `counts` (65536, added to) of the values
 * of x whose key starts with `prefix` (the top 16 * pass bits, < 2^48, exact as a double). */
SEXP ffi_radix_hist(SEXP x, SEXP pass_, SEXP prefix_, SEXP counts)
{
    const int pass = Rf_asInteger(pass_);
    const double prefix = Rf_asReal(prefix_);
    if (TYPEOF(x) != REALSXP || pass < 0 || pass > 3 || !(prefix >= 0) || prefix >= 281474976710656.0 ||
        TYPEOF(counts) != REALSXP || XLENGTH(counts) != 65536)
        Rf_error("internal error: bad input to ffi_radix_hist");
    SEXP out = PROTECT(Rf_duplicate(counts));
    if (XLENGTH(x) > 0) mask_radix_hist(REAL_RO(x), XLENGTH(x), pass, (uint64_t) prefix, REAL(out));
    UNPROTECT(1);
    return out;
}

/* The value whose key is prefix * 2^16 + low (prefix: the top 48 bits). */
SEXP ffi_radix_value(SEXP prefix_, SEXP low_)
{
    const double prefix = Rf_asReal(prefix_);
    const int low = Rf_asInteger(low_);
    if (!(prefix >= 0) || prefix >= 281474976710656.0 || low < 0 || low > 65535)
        Rf_error("internal error: bad input to ffi_radix_value");
    return Rf_ScalarReal(mask_radix_value(((uint64_t) prefix << 16) | (uint64_t) low));
}

/* The check number of each record (row) of a double matrix (mask.h). */
SEXP ffi_record_checks(SEXP x)
{
    SEXP dim = Rf_getAttrib(x, R_DimSymbol);
    if (TYPEOF(x) != REALSXP || TYPEOF(dim) != INTSXP || XLENGTH(dim) != 2)
        Rf_error("internal error: bad input to ffi_record_checks");
    const R_xlen_t n = INTEGER_RO(dim)[0];
    const int p = INTEGER_RO(dim)[1];
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    if (n > 0) mask_record_checks(REAL_RO(x), n, p, REAL(out));
    UNPROTECT(1);
    return out;
}
