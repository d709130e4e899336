/* Glue for anonymise(): the k nearest neighbours of every record inside its stratum, their
 * centroids, and step 5 (rescaling), on data validated in R. */
#include "detanon.h"
#include "kdtree.h"
#include "fsum.h"
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#define THREAD_ID omp_get_thread_num()
#else
#define THREAD_ID 0
#endif

#define LEAF_SIZE 16
/* Strata smaller than this are searched one per thread (a tree each); larger ones one at
 * a time with the queries spread over threads. So are strata with much work per query
 * (ns * k >= HEAVY_STRATUM), so that their queries too come in chunks between interrupt
 * checks, whatever k. */
#define SMALL_STRATUM 4096
#define HEAVY_STRATUM ((double) (1 << 20))
/* Work between two interrupt checks, in units of about one candidate offered to a heap: a
 * query costs about k + 16 (a few milliseconds of work in all at any k). */
#define CHUNK_WORK ((ptrdiff_t) 1 << 20)
#define CHUNK_MAX ((ptrdiff_t) 1 << 16)

static inline int is_large(ptrdiff_t ns, int k)
{
    return ns >= SMALL_STRATUM || (double) ns * k >= HEAVY_STRATUM;
}

/* Queries between two interrupt checks. */
static inline ptrdiff_t chunk_queries(int k)
{
    ptrdiff_t q = CHUNK_WORK / ((ptrdiff_t) k + 16);
    return q < 64 ? 64 : q > CHUNK_MAX ? CHUNK_MAX : q;
}

/* One search: the points, their strata, and where the results go. */
typedef struct {
    ptrdiff_t n;
    int d, k, nt;
    const double *const *col;     /* column j of the data */
    const double *center, *scale; /* both NULL, or the search runs on (col - center) / scale */
    const ptrdiff_t *rows;        /* 0-based rows, stratum by stratum */
    const ptrdiff_t *off;         /* stratum s holds rows[off[s] .. off[s + 1]) */
    R_xlen_t n_strata;
    double **cent;                /* d output columns of n centroids, or NULL */
    int *idx;                     /* or an n x k matrix of 1-based neighbour rows */
} knn_job;

/* (Re)build tree t, allocated for at least ns points, over rows[0..ns). */
static void build(kd_tree *t, const knn_job *job, const ptrdiff_t *rows, ptrdiff_t ns,
                  int (*interrupted)(void))
{
    kd_reuse(t, ns);
    t->interrupted = interrupted;
    if (job->center) kd_build_scaled(t, job->col, job->center, job->scale, rows);
    else kd_build(t, job->col[0], job->n, rows); /* the columns of one n x d matrix */
}

/* Polled by a serial build on the main thread: a Ctrl-C jumps straight back to R as an
 * interrupt condition. Safe there: no parallel region is running, and every buffer is
 * R_alloc memory, freed by R. */
static int interrupt_now(void) { R_CheckUserInterrupt(); return 0; }

/* The centroid of the k points found for a query, into out[0..d). The k points are uniquely
 * defined (see kdtree.h), but their order in the heap depends on the query; summing them in
 * lexicographic order instead makes the centroid a function of the k points alone, so
 * records that share their k points get bit-identical centroids (their last bits cannot
 * tell which record a centroid came from, and with k equal to a stratum's size the
 * centroids are all equal, not equal up to rounding noise that step 5 would blow up).
 * Reorders h->pos: O(k log k) (kd_sort_lex). */
static inline void centroid(const kd_tree *t, kd_heap *h, double *out)
{
    const int d = t->d, k = h->k;
    ptrdiff_t *pos = h->pos;
    kd_sort_lex(t, pos, k);
    for (int j = 0; j < d; j++) {
        double s = 0.0;
        for (int m = 0; m < k; m++) s += t->pts[pos[m] * d + j];
        out[j] = s / k;
    }
}

/* The same centroid when k is a large share of the stratum: `lex` lists the stratum's tree
 * positions in lexicographic order (once per stratum), `mark` holds ns zero bytes. The k
 * points are marked, then summed in the stratum's lexicographic order: the same points in
 * the same order as centroid() sums them (identical points are interchangeable), so the
 * same bits, in O(ns) instead of O(k log k). */
static inline void centroid_marked(const kd_tree *t, const kd_heap *h, const ptrdiff_t *lex,
                                   unsigned char *mark, double *out)
{
    const int d = t->d, k = h->k;
    for (int m = 0; m < k; m++) mark[h->pos[m]] = 1;
    for (int j = 0; j < d; j++) out[j] = 0.0;
    for (ptrdiff_t i = 0; i < t->n; i++) {
        ptrdiff_t p = lex[i];
        if (!mark[p]) continue;
        for (int j = 0; j < d; j++) out[j] += t->pts[p * d + j];
    }
    for (int j = 0; j < d; j++) out[j] /= k;
    for (int m = 0; m < k; m++) mark[h->pos[m]] = 0;
}

/* Write the result for the query at tree position `self` straight into the output.
 * `work` holds d doubles. */
static inline void emit(const kd_tree *t, kd_heap *h, ptrdiff_t self, const knn_job *job,
                        double *work)
{
    const int d = t->d, k = h->k;
    const ptrdiff_t r = t->row[self];
    if (job->cent) {
        centroid(t, h, work);
        for (int j = 0; j < d; j++) job->cent[j][r] = work[j];
    } else {
        for (int m = 0; m < k; m++) job->idx[r + m * job->n] = (int) (t->row[h->pos[m]] + 1);
    }
}

static void search_small_strata(const knn_job *job, ptrdiff_t max_small, kd_heap *heaps,
                                double **work)
{
    kd_tree *trees = (kd_tree *) R_alloc(job->nt, sizeof(kd_tree));
    for (int t = 0; t < job->nt; t++) trees[t] = detanon_tree(max_small, job->d, LEAF_SIZE);
    const ptrdiff_t *off = job->off;
    R_xlen_t s = 0;
    while (s < job->n_strata) {
        R_xlen_t s_end = s;
        for (ptrdiff_t w = 0; s_end < job->n_strata && w < CHUNK_WORK; s_end++) {
            ptrdiff_t ns = off[s_end + 1] - off[s_end];
            if (!is_large(ns, job->k)) w += ns * ((ptrdiff_t) job->k + 16);
        }
#ifdef _OPENMP
#pragma omp parallel for num_threads(job->nt) schedule(dynamic, 1)
#endif
        for (R_xlen_t i = s; i < s_end; i++) {
            ptrdiff_t ns = off[i + 1] - off[i];
            if (ns == 0 || is_large(ns, job->k)) continue;
            int tid = THREAD_ID;
            kd_tree *tree = &trees[tid];
            build(tree, job, job->rows + off[i], ns, NULL);
            for (ptrdiff_t p = 0; p < ns; p++) {
                kd_knn_self(tree, p, &heaps[tid]);
                emit(tree, &heaps[tid], p, job, work[tid]);
            }
        }
        R_CheckUserInterrupt();
        s = s_end;
    }
}

/* Large strata: trees built up front (several strata: one per thread, in rounds of nt
 * between interrupt checks; a single stratum: serially, polling for interrupts), then one
 * stratum at a time with its queries in parallel, in tree order for locality. */
static void search_large_strata(const knn_job *job, kd_heap *heaps, double **work)
{
    const ptrdiff_t *off = job->off;
    const int nt = job->nt;
    R_xlen_t n_large = 0;
    for (R_xlen_t s = 0; s < job->n_strata; s++) if (is_large(off[s + 1] - off[s], job->k)) n_large++;
    R_xlen_t *large = (R_xlen_t *) R_alloc(n_large, sizeof(R_xlen_t));
    kd_tree *trees = (kd_tree *) R_alloc(n_large, sizeof(kd_tree));
    for (R_xlen_t s = 0, i = 0; s < job->n_strata; s++) {
        if (!is_large(off[s + 1] - off[s], job->k)) continue;
        large[i] = s;
        trees[i] = detanon_tree(off[s + 1] - off[s], job->d, LEAF_SIZE);
        i++;
    }
    if (n_large == 1) {
        build(&trees[0], job, job->rows + off[large[0]], trees[0].n, interrupt_now);
    } else {
        for (R_xlen_t from = 0; from < n_large; from += nt) {
            R_xlen_t to = from + nt < n_large ? from + nt : n_large;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
            for (R_xlen_t i = from; i < to; i++)
                build(&trees[i], job, job->rows + off[large[i]], trees[i].n, NULL);
            R_CheckUserInterrupt();
        }
    }
    /* Centroids go to a buffer in tree order, then to the output one column at a time:
     * written straight to their rows, scattered over n-long columns, they cost a cache miss
     * per value in the middle of the search and push the tree out of the cache. */
    const int d = job->d;
    double *buf = NULL;
    if (job->cent) {
        ptrdiff_t max_ns = 0;
        for (R_xlen_t i = 0; i < n_large; i++) if (trees[i].n > max_ns) max_ns = trees[i].n;
        buf = (double *) R_alloc((size_t) max_ns * d, sizeof(double));
    }
    const ptrdiff_t chunk = chunk_queries(job->k);
    const int grain = chunk >= 1024 * nt ? 256 : (int) (chunk / (4 * nt) > 0 ? chunk / (4 * nt) : 1);
    ptrdiff_t *lex = NULL;
    unsigned char **mark = NULL;
    for (R_xlen_t i = 0; i < n_large; i++) {
        const kd_tree *tree = &trees[i];
        const ptrdiff_t ns = tree->n;
        /* k a large share of the stratum: sum the k points in the stratum's order */
        const int by_mark = buf && (ptrdiff_t) job->k * 8 >= ns;
        if (by_mark) {
            lex = (ptrdiff_t *) R_alloc(ns, sizeof(ptrdiff_t));
            mark = (unsigned char **) R_alloc(nt, sizeof(unsigned char *));
            for (ptrdiff_t p = 0; p < ns; p++) lex[p] = p;
            kd_sort_lex(tree, lex, ns);
            for (int t = 0; t < nt; t++) {
                mark[t] = (unsigned char *) R_alloc(ns, 1);
                memset(mark[t], 0, ns);
            }
        }
        for (ptrdiff_t from = 0; from < ns; from += chunk) {
            ptrdiff_t to = from + chunk < ns ? from + chunk : ns;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, grain)
#endif
            for (ptrdiff_t p = from; p < to; p++) {
                int tid = THREAD_ID;
                kd_knn_self(tree, p, &heaps[tid]);
                if (by_mark) centroid_marked(tree, &heaps[tid], lex, mark[tid], buf + p * d);
                else if (buf) centroid(tree, &heaps[tid], buf + p * d);
                else emit(tree, &heaps[tid], p, job, work[tid]);
            }
            R_CheckUserInterrupt();
        }
        if (!buf) continue;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static, 1)
#endif
        for (int j = 0; j < d; j++) {
            double *out = job->cent[j];
            for (ptrdiff_t p = 0; p < ns; p++) out[tree->row[p]] = buf[p * d + j];
        }
    }
}

/* Every record's k nearest neighbours inside its stratum (each non-empty stratum holds at
 * least k records; checked by the callers). */
static void knn_all(const knn_job *job)
{
    const ptrdiff_t *off = job->off;
    if (job->d == 0) {
        /* no coordinates: all points coincide, so any k points of the stratum are nearest */
        if (job->idx) {
            for (R_xlen_t s = 0; s < job->n_strata; s++)
                for (ptrdiff_t p = off[s]; p < off[s + 1]; p++)
                    for (int m = 0; m < job->k; m++)
                        job->idx[job->rows[p] + (ptrdiff_t) m * job->n] = (int) (job->rows[off[s] + m] + 1);
        }
        return;
    }
    ptrdiff_t max_small = 0, max_large = 0;
    for (R_xlen_t s = 0; s < job->n_strata; s++) {
        ptrdiff_t ns = off[s + 1] - off[s];
        if (!is_large(ns, job->k)) { if (ns > max_small) max_small = ns; }
        else if (ns > max_large) max_large = ns;
    }
    kd_heap *heaps = (kd_heap *) R_alloc(job->nt, sizeof(kd_heap));
    double **work = (double **) R_alloc(job->nt, sizeof(double *));
    for (int t = 0; t < job->nt; t++) {
        heaps[t] = detanon_heap(job->k);
        heaps[t].any_order = job->cent != NULL; /* centroids sort the k points themselves */
        work[t] = (double *) R_alloc(job->d > 0 ? job->d : 1, sizeof(double));
    }
    if (max_small > 0) search_small_strata(job, max_small, heaps, work);
    if (max_large > 0) search_large_strata(job, heaps, work);
}

/* Cheap checks of the contract R guarantees, so that a bad call errors instead of reading
 * out of bounds: every non-empty stratum holds >= k rows. */
static void check_strata(const ptrdiff_t *off, R_xlen_t n_strata, ptrdiff_t n, int k)
{
    if (k < 1) Rf_error("internal error: bad input to detanon (k < 1)");
    if (off[0] != 0 || off[n_strata] != n) Rf_error("internal error: bad offsets in detanon");
    for (R_xlen_t s = 0; s < n_strata; s++) {
        ptrdiff_t ns = off[s + 1] - off[s];
        if (ns < 0 || (ns > 0 && ns < k)) Rf_error("internal error: stratum smaller than k in detanon");
    }
}

static ptrdiff_t *as_offsets(SEXP x, R_xlen_t len)
{
    ptrdiff_t *o = (ptrdiff_t *) R_alloc(len, sizeof(ptrdiff_t));
    if (TYPEOF(x) == INTSXP) { const int *p = INTEGER_RO(x); for (R_xlen_t i = 0; i < len; i++) o[i] = p[i]; }
    else { const double *p = REAL_RO(x); for (R_xlen_t i = 0; i < len; i++) o[i] = (ptrdiff_t) p[i]; }
    return o;
}

/* The searches of ffi_knn_*: z an n x d matrix, `order` the 1-based rows stratum by
 * stratum, `offsets` the S + 1 stratum boundaries in it. */
static SEXP knn_run(SEXP z, SEXP order, SEXP offsets, SEXP k_, SEXP nthreads, int want_index)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), k = Rf_asInteger(k_);
    if (k < 1 || XLENGTH(order) != n || XLENGTH(offsets) < 1)
        Rf_error("internal error: bad input to ffi_knn_*");
    SEXP out = PROTECT(want_index ? Rf_allocMatrix(INTSXP, n, k) : Rf_allocMatrix(REALSXP, n, d));
    if (n == 0) { UNPROTECT(1); return out; }
    ptrdiff_t *rows = as_offsets(order, n);
    for (ptrdiff_t i = 0; i < n; i++) {
        if (rows[i] < 1 || rows[i] > n) Rf_error("internal error: row out of range in ffi_knn_*");
        rows[i] -= 1;
    }
    const R_xlen_t n_strata = XLENGTH(offsets) - 1;
    const ptrdiff_t *off = as_offsets(offsets, n_strata + 1);
    check_strata(off, n_strata, n, k);

    const double *zx = REAL_RO(z);
    double **cent = want_index ? NULL : (double **) R_alloc(d > 0 ? d : 1, sizeof(double *));
    if (cent) for (int j = 0; j < d; j++) cent[j] = REAL(out) + (ptrdiff_t) j * n;
    knn_job job = { n, d, k, detanon_threads(nthreads), &zx, NULL, NULL, rows, off, n_strata,
                    cent, want_index ? INTEGER(out) : NULL };
    knn_all(&job);
    UNPROTECT(1);
    return out;
}

SEXP ffi_knn_centroids(SEXP z, SEXP order, SEXP offsets, SEXP k, SEXP nthreads)
{
    return knn_run(z, order, offsets, k, nthreads, 0);
}

SEXP ffi_knn_index(SEXP z, SEXP order, SEXP offsets, SEXP k, SEXP nthreads)
{
    return knn_run(z, order, offsets, k, nthreads, 1);
}

/* The whole of steps 1 and 3-5 for anonymise(): x is the n x p data, `cols` the 1-based
 * columns to mask (SD > 0), mean/sd the p column means and SDs, `id` the stratum (1..S)
 * of each row. Columns not in `cols` are copied. A masked column whose centroids have
 * an SD <= flat_sd is released as its mean. Returns list(columns, centroid SDs). */
SEXP ffi_mask(SEXP x, SEXP cols_, SEXP mean_, SEXP sd_, SEXP id_, SEXP k_, SEXP nthreads,
              SEXP flat_sd_)
{
    if (TYPEOF(x) != REALSXP || TYPEOF(cols_) != INTSXP || TYPEOF(id_) != INTSXP ||
        TYPEOF(mean_) != REALSXP || TYPEOF(sd_) != REALSXP)
        Rf_error("internal error: bad input types to ffi_mask");
    const ptrdiff_t n = Rf_nrows(x);
    const int p = Rf_ncols(x), d = (int) XLENGTH(cols_), k = Rf_asInteger(k_);
    const int nt = detanon_threads(nthreads);
    const double flat_sd = Rf_asReal(flat_sd_);
    const int *cols = INTEGER_RO(cols_), *id = INTEGER_RO(id_);
    const double *mean = REAL_RO(mean_), *sd = REAL_RO(sd_), *px = REAL_RO(x);
    if (n < 1 || XLENGTH(id_) != n || XLENGTH(mean_) != p || XLENGTH(sd_) != p || d > p)
        Rf_error("internal error: bad input to ffi_mask");

    /* strata by counting sort: rows stay in their order inside a stratum */
    int n_strata = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        if (id[i] < 1 || id[i] > n) Rf_error("internal error: stratum id out of range in ffi_mask");
        if (id[i] > n_strata) n_strata = id[i];
    }
    ptrdiff_t *off = (ptrdiff_t *) R_alloc((size_t) n_strata + 1, sizeof(ptrdiff_t));
    ptrdiff_t *next = (ptrdiff_t *) R_alloc((size_t) n_strata + 1, sizeof(ptrdiff_t));
    ptrdiff_t *rows = (ptrdiff_t *) R_alloc(n, sizeof(ptrdiff_t));
    for (int s = 0; s <= n_strata; s++) off[s] = 0;
    for (ptrdiff_t i = 0; i < n; i++) off[id[i]]++;
    for (int s = 0; s < n_strata; s++) off[s + 1] += off[s];
    for (int s = 0; s <= n_strata; s++) next[s] = off[s];
    for (ptrdiff_t i = 0; i < n; i++) rows[next[id[i] - 1]++] = i;
    check_strata(off, n_strata, n, k);

    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
    SEXP columns = Rf_allocVector(VECSXP, p);
    SET_VECTOR_ELT(out, 0, columns);
    SEXP c_sd_ = Rf_allocVector(REALSXP, d);
    SET_VECTOR_ELT(out, 1, c_sd_);
    double *c_sd = REAL(c_sd_);
    for (int j = 0; j < p; j++) SET_VECTOR_ELT(columns, j, Rf_allocVector(REALSXP, n));
    const double **src = (const double **) R_alloc(d > 0 ? d : 1, sizeof(double *));
    double **cent = (double **) R_alloc(d > 0 ? d : 1, sizeof(double *));
    double *m_d = (double *) R_alloc(d > 0 ? d : 1, sizeof(double));
    double *s_d = (double *) R_alloc(d > 0 ? d : 1, sizeof(double));
    int *masked = (int *) R_alloc(p, sizeof(int));
    for (int j = 0; j < p; j++) masked[j] = 0;
    for (int j = 0; j < d; j++) {
        int c = cols[j] - 1;
        if (c < 0 || c >= p || masked[c]) Rf_error("internal error: bad columns in ffi_mask");
        masked[c] = 1;
        src[j] = px + (ptrdiff_t) c * n;
        cent[j] = REAL(VECTOR_ELT(columns, c));
        m_d[j] = mean[c];
        s_d[j] = sd[c];
    }
    /* constant columns keep their single value */
    for (int j = 0; j < p; j++) {
        if (masked[j]) continue;
        double *o = REAL(VECTOR_ELT(columns, j));
        const double *xj = px + (ptrdiff_t) j * n;
        for (ptrdiff_t i = 0; i < n; i++) o[i] = xj[i];
    }

    knn_job job = { n, d, k, nt, src, m_d, s_d, rows, off, n_strata, cent, NULL };
    knn_all(&job);

    /* step 5 over the whole data: centroid SDs (exact, so order-free), then
     * centroid / sd(centroids) * sd(original) + mean(original) */
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (int j = 0; j < d; j++) {
        double cm;
        col_mean_sd(cent[j], n, &cm, &c_sd[j]);
        double *o = cent[j];
        if (c_sd[j] > flat_sd) {
            for (ptrdiff_t i = 0; i < n; i++) o[i] = o[i] / c_sd[j] * s_d[j] + m_d[j];
        } else {
            for (ptrdiff_t i = 0; i < n; i++) o[i] = m_d[j];
        }
    }
    UNPROTECT(1);
    return out;
}

/* Column means and SDs that do not depend on row order: a 2 x d matrix. Columns are
 * independent, so they are spread over threads. */
SEXP ffi_col_stats(SEXP x, SEXP nthreads)
{
    const ptrdiff_t n = Rf_nrows(x);
    const int d = Rf_ncols(x), nt = detanon_threads(nthreads);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, 2, d));
    double *o = REAL(out);
    const double *px = n > 0 ? REAL_RO(x) : NULL;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (d > 1)
#endif
    for (int j = 0; j < d; j++) col_mean_sd(px ? px + (size_t) j * n : NULL, n, o + 2 * j, o + 2 * j + 1);
    UNPROTECT(1);
    return out;
}
