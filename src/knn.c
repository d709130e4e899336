/* The search driver of anonymise(): see knn.h. */
#include <stdint.h>
#include <string.h>
#include "knn.h"
#include "kdtree.h"
#include "threads.h"

/* Leaves of 16 to 32 points: with two distances per operation in the leaves (kd_new_fast),
 * fewer and larger leaves than 8 to 16 searched 3% faster at k = 2 to 30 (measured). */
#define LEAF_SIZE 32
/* Strata smaller than this are searched one per thread (a tree each); larger ones one at
 * a time with the queries spread over threads. So are strata with much work per query
 * (ns * k >= HEAVY_STRATUM), so that their queries too come in chunks between interrupt
 * checks, whatever k. */
#define SMALL_STRATUM 4096
#define HEAVY_STRATUM ((double) (1 << 20))
/* Work between two interrupt checks, in units of about one heap operation: a query costs
 * about k log2(k) (candidates kept, and the centroid's sort) plus a constant for the search
 * (a few milliseconds of work in all, at any k). */
#define CHUNK_WORK ((double) (1 << 20))
#define CHUNK_MAX ((ptrdiff_t) 1 << 16)

static inline int is_large(ptrdiff_t ns, int k)
{
    return ns >= SMALL_STRATUM || (double) ns * k >= HEAVY_STRATUM;
}

static inline double query_cost(int k)
{
    double lg = 1.0;
    for (int m = k; m > 1; m >>= 1) lg += 1.0;
    return (double) k * lg + 16.0;
}

/* Queries between two interrupt checks. */
static inline ptrdiff_t chunk_queries(int k)
{
    double q = CHUNK_WORK / query_cost(k);
    return q < 64 ? 64 : q > CHUNK_MAX ? CHUNK_MAX : (ptrdiff_t) q;
}

/* (Re)build tree t, allocated for at least ns points, over rows[0..ns). */
static void build(kd_tree *t, const knn_job *job, const ptrdiff_t *rows, ptrdiff_t ns,
                  int (*interrupted)(void))
{
    kd_reuse(t, ns);
    t->interrupted = interrupted;
    if (job->center) kd_build_scaled(t, job->col, job->center, job->scale, rows);
    else kd_build(t, job->col[0], job->n, rows); /* the columns of one n x d matrix */
}

/* The same centroid when k is a large share of the stratum: `lex` lists the stratum's tree
 * positions in lexicographic order (once per stratum), `mark` holds ns zero bytes. The k
 * points are marked, then summed in the stratum's lexicographic order: the same points in
 * the same order as kd_centroid_lex() sums them (identical points are interchangeable), so the
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
        kd_centroid_lex(t, h->pos, h->k, work);
        for (int j = 0; j < d; j++) job->cent[j][r] = work[j];
    } else {
        for (int m = 0; m < k; m++) job->idx[r + m * job->n] = (int) (t->row[h->pos[m]] + 1);
    }
}

/* Between two chunks, on the main thread: the host checks for an interrupt and reports
 * progress. */
static void between_chunks(const knn_job *job, ptrdiff_t done)
{
    host_pause(job->host, done);
}

/* Memory for n objects of `size` bytes that n threads write often, each starting on a
 * THREAD_LINE boundary of its own (returned: the first; *stride: the bytes between two), so
 * that no cache line holds two threads' objects: a line written by two cores moves between
 * them at every write of either (false sharing). */
static char *thread_slots(const kernel_host *host, int n, size_t size, size_t *stride)
{
    *stride = (size + THREAD_LINE - 1) / THREAD_LINE * THREAD_LINE;
    char *raw = (char *) host->alloc((size_t) (n > 0 ? n : 1) * *stride + THREAD_LINE, 1);
    return raw + (THREAD_LINE - (uintptr_t) raw % THREAD_LINE) % THREAD_LINE;
}

/* nt kd-trees (kd_new_fast()) for up to cap[t] points each, in thread_slots(): a build
 * writes to its tree's fields at every node. */
static kd_tree **new_trees(const knn_job *job, int nt, const ptrdiff_t *cap)
{
    size_t stride;
    char *base = thread_slots(job->host, nt, sizeof(kd_tree), &stride);
    kd_tree **trees = (kd_tree **) job->host->alloc(nt > 0 ? nt : 1, sizeof(kd_tree *));
    for (int t = 0; t < nt; t++) {
        trees[t] = (kd_tree *) (base + (size_t) t * stride);
        *trees[t] = kd_new_fast(cap[t], job->d, LEAF_SIZE, job->host->alloc);
    }
    return trees;
}

static ptrdiff_t search_small_strata(const knn_job *job, ptrdiff_t max_small, kd_heap *const *heaps,
                                     double **work)
{
    ptrdiff_t done = 0;
    ptrdiff_t *cap = (ptrdiff_t *) job->host->alloc(job->nt, sizeof(ptrdiff_t));
    for (int t = 0; t < job->nt; t++) cap[t] = max_small;
    kd_tree **trees = new_trees(job, job->nt, cap);
    const ptrdiff_t *off = job->off;
    ptrdiff_t s = 0;
    while (s < job->n_strata) {
        ptrdiff_t s_end = s;
        const double cost = query_cost(job->k);
        for (double w = 0; s_end < job->n_strata && w < CHUNK_WORK; s_end++) {
            ptrdiff_t ns = off[s_end + 1] - off[s_end];
            if (is_large(ns, job->k)) continue;
            w += (double) ns * cost;
            done += ns;
        }
#ifdef _OPENMP
#pragma omp parallel for num_threads(job->nt) schedule(dynamic, 1)
#endif
        for (ptrdiff_t i = s; i < s_end; i++) {
            ptrdiff_t ns = off[i + 1] - off[i];
            if (ns == 0 || is_large(ns, job->k)) continue;
            int tid = THREAD_ID;
            kd_tree *tree = trees[tid];
            build(tree, job, job->rows + off[i], ns, NULL);
            for (ptrdiff_t p = 0; p < ns; p++) {
                kd_knn_self(tree, p, heaps[tid]);
                emit(tree, heaps[tid], p, job, work[tid]);
            }
        }
        between_chunks(job, done);
        s = s_end;
    }
    return done;
}

/* Large strata in rounds of nt: the round's trees built (several: one per thread, then an
 * interrupt check; a single stratum: serially, polling for interrupts), then one stratum
 * at a time with its queries in parallel, in tree order for locality. Slot t of a round
 * holds the tree of its (t + 1)-th stratum, in memory reused from round to round (allocated
 * for the largest stratum it holds): nt trees live at once, not one per stratum. */
static void search_large_strata(const knn_job *job, kd_heap *const *heaps, double **work,
                                ptrdiff_t done)
{
    const ptrdiff_t *off = job->off;
    const int nt = job->nt;
    ptrdiff_t n_large = 0;
    for (ptrdiff_t s = 0; s < job->n_strata; s++) if (is_large(off[s + 1] - off[s], job->k)) n_large++;
    ptrdiff_t *large = (ptrdiff_t *) job->host->alloc(n_large, sizeof(ptrdiff_t));
    const int n_slots = n_large < nt ? (int) n_large : nt;
    ptrdiff_t *cap = (ptrdiff_t *) job->host->alloc(n_slots, sizeof(ptrdiff_t));
    for (int t = 0; t < n_slots; t++) cap[t] = 0;
    for (ptrdiff_t s = 0, i = 0; s < job->n_strata; s++) {
        const ptrdiff_t ns = off[s + 1] - off[s];
        if (!is_large(ns, job->k)) continue;
        if (ns > cap[i % n_slots]) cap[i % n_slots] = ns;
        large[i++] = s;
    }
    kd_tree **trees = new_trees(job, n_slots, cap);
    /* Centroids go to a buffer in tree order, then to the output one column at a time:
     * written straight to their rows, scattered over n-long columns, they cost a cache miss
     * per value in the middle of the search and push the tree out of the cache. */
    const int d = job->d;
    double *buf = NULL;
    if (job->cent) {
        ptrdiff_t max_ns = 0;
        for (int t = 0; t < n_slots; t++) if (cap[t] > max_ns) max_ns = cap[t];
        buf = (double *) job->host->alloc((size_t) max_ns * d, sizeof(double));
    }
    const ptrdiff_t chunk = chunk_queries(job->k);
    const int grain = chunk >= 1024 * nt ? 256 : (int) (chunk / (4 * nt) > 0 ? chunk / (4 * nt) : 1);
    ptrdiff_t *lex = NULL;
    unsigned char **mark = NULL;
    for (ptrdiff_t i = 0; i < n_large; i++) {
        const int slot = (int) (i % n_slots);
        if (slot == 0) {
            const int to = n_large - i < n_slots ? (int) (n_large - i) : n_slots;
            if (n_large == 1) {
                build(trees[0], job, job->rows + off[large[0]], off[large[0] + 1] - off[large[0]],
                      job->host->interrupted);
            } else {
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
                for (int t = 0; t < to; t++) {
                    const ptrdiff_t s = large[i + t];
                    build(trees[t], job, job->rows + off[s], off[s + 1] - off[s], NULL);
                }
                between_chunks(job, done);
            }
        }
        const kd_tree *tree = trees[slot];
        const ptrdiff_t ns = tree->n;
        /* k a large share of the stratum: sum the k points in the stratum's order */
        const int by_mark = buf && (ptrdiff_t) job->k * 8 >= ns;
        if (by_mark) {
            lex = (ptrdiff_t *) job->host->alloc(ns, sizeof(ptrdiff_t));
            mark = (unsigned char **) job->host->alloc(nt, sizeof(unsigned char *));
            for (ptrdiff_t p = 0; p < ns; p++) lex[p] = p;
            kd_sort_lex(tree, lex, ns);
            for (int t = 0; t < nt; t++) {
                mark[t] = (unsigned char *) job->host->alloc(ns, 1);
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
                kd_knn_self(tree, p, heaps[tid]);
                if (by_mark) centroid_marked(tree, heaps[tid], lex, mark[tid], buf + p * d);
                else if (buf) kd_centroid_lex(tree, heaps[tid]->pos, heaps[tid]->k, buf + p * d);
                else emit(tree, heaps[tid], p, job, work[tid]);
            }
            done += to - from;
            between_chunks(job, done);
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
void knn_all(const knn_job *job)
{
    const ptrdiff_t *off = job->off;
    if (job->d == 0) {
        /* no coordinates: all points coincide, so any k points of the stratum are nearest */
        if (job->idx) {
            for (ptrdiff_t s = 0; s < job->n_strata; s++)
                for (ptrdiff_t p = off[s]; p < off[s + 1]; p++)
                    for (int m = 0; m < job->k; m++)
                        job->idx[job->rows[p] + (ptrdiff_t) m * job->n] = (int) (job->rows[off[s] + m] + 1);
        }
        return;
    }
    ptrdiff_t max_small = 0, max_large = 0;
    for (ptrdiff_t s = 0; s < job->n_strata; s++) {
        ptrdiff_t ns = off[s + 1] - off[s];
        if (!is_large(ns, job->k)) { if (ns > max_small) max_small = ns; }
        else if (ns > max_large) max_large = ns;
    }
    /* each thread's heap and work buffer in thread_slots(): a search writes to its heap at
     * every candidate */
    size_t stride;
    char *base = thread_slots(job->host, job->nt, sizeof(kd_heap) + (size_t) job->d * sizeof(double), &stride);
    kd_heap **heaps = (kd_heap **) job->host->alloc(job->nt, sizeof(kd_heap *));
    double **work = (double **) job->host->alloc(job->nt, sizeof(double *));
    for (int t = 0; t < job->nt; t++) {
        heaps[t] = (kd_heap *) (base + (size_t) t * stride);
        *heaps[t] = kd_heap_new(job->k, job->host->alloc);
        heaps[t]->any_order = job->cent != NULL; /* centroids sort the k points themselves */
        work[t] = (double *) (heaps[t] + 1);
    }
    ptrdiff_t done = 0;
    if (max_small > 0) done = search_small_strata(job, max_small, heaps, work);
    if (max_large > 0) search_large_strata(job, heaps, work, done);
}

void knn_group_rows(const int *id, ptrdiff_t n, ptrdiff_t n_strata, ptrdiff_t *rows, ptrdiff_t *off)
{
    for (ptrdiff_t s = 0; s <= n_strata; s++) off[s] = 0;
    for (ptrdiff_t i = 0; i < n; i++) off[id[i]]++;
    for (ptrdiff_t s = 0; s < n_strata; s++) off[s + 1] += off[s];
    /* off[s] is now the end of stratum s - 1 = the start of stratum s: fill from there */
    for (ptrdiff_t i = 0; i < n; i++) rows[off[id[i] - 1]++] = i;
    for (ptrdiff_t s = n_strata; s > 0; s--) off[s] = off[s - 1];
    off[0] = 0;
}

const char *knn_check_strata(const ptrdiff_t *off, ptrdiff_t n_strata, ptrdiff_t n, int k)
{
    if (k < 1) return "k < 1";
    if (off[0] != 0 || off[n_strata] != n) return "bad offsets";
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        ptrdiff_t ns = off[s + 1] - off[s];
        if (ns < 0 || (ns > 0 && ns < k)) return "a stratum smaller than k";
    }
    return NULL;
}

/* ---- several k at once (knn_centroids_multi()) ---------------------------------------------
 * In the total order of kdtree.h (squared distance, then coordinates, then arrival) the k
 * nearest points at a smaller k are the first of those at a larger k, so one search at the
 * largest k a stratum holds gives the points of every k. They are sorted once in
 * lexicographic order (kd_sort_lex()), each carrying its place in the total order, and the
 * centroid at k sums those of place < k in that order: the points and the order in which
 * kd_centroid_lex() sums them at k alone (identical points are interchangeable), so the same
 * bits. MULTI_GROUP k at a time are summed in one pass over the points of the largest of
 * them, a point outside a k adding +0.0 to that k's sum: a sum that starts at +0.0 is never
 * -0.0 (IEEE 754: a zero sum of two values is -0.0 only when both are), so adding +0.0 leaves
 * it unchanged, bit for bit (the points are finite), and the MULTI_GROUP sums are independent
 * chains of additions instead of one. */
#define MULTI_GROUP 8

/* Per thread: the heap and the scratch of one query of up to kmax points. */
typedef struct {
    kd_heap h;
    ptrdiff_t *lex; /* kmax tree positions, in lexicographic order */
    double *place;  /* kmax: their places in the total order */
    int *place_of;  /* per tree position of the stratum: its place (the query's points only) */
    double *acc;    /* MULTI_GROUP * d sums */
} multi_work;

/* The centroids at k[0..n_k) (k[n_k - 1] = w->h.k) of the query just searched (best first),
 * into res[j * d + c]. */
static void centroids_every_k(const kd_tree *t, multi_work *w, const int *k, int n_k, double *res)
{
    const int d = t->d, K = w->h.k;
    const double *x = t->soa ? t->soa : t->pts;
    const ptrdiff_t step = t->soa ? 1 : d, ld = t->soa ? t->soa_ld : 1;
    for (int m = 0; m < K; m++) {
        w->lex[m] = w->h.pos[m];
        w->place_of[w->h.pos[m]] = m;
    }
    kd_sort_lex(t, w->lex, K);
    for (int m = 0; m < K; m++) w->place[m] = w->place_of[w->lex[m]];
    double *acc = w->acc;
    int len = K; /* the list holds the points of k[top] */
    for (int top = n_k - 1; top >= 0; top -= MULTI_GROUP) {
        const int lo = top - MULTI_GROUP + 1 > 0 ? top - MULTI_GROUP + 1 : 0, g_n = top - lo + 1;
        double kg[MULTI_GROUP];
        for (int g = 0; g < MULTI_GROUP; g++) kg[g] = g < g_n ? k[lo + g] : 0.0;
        for (int i = 0; i < MULTI_GROUP * d; i++) acc[i] = 0.0;
        for (int m = 0; m < len; m++) {
            const double pl = w->place[m];
            const ptrdiff_t p = w->lex[m];
#ifdef __SSE2__
            /* the same additions two at a time: v where pl < kg, else +0.0 (all bits 0) */
            __m128d in[MULTI_GROUP / 2];
            const __m128d pp = _mm_set1_pd(pl);
            for (int g = 0; g < MULTI_GROUP; g += 2) in[g / 2] = _mm_cmplt_pd(pp, _mm_loadu_pd(kg + g));
            for (int c = 0; c < d; c++) {
                const __m128d v = _mm_set1_pd(x[p * step + c * ld]);
                double *a = acc + c * MULTI_GROUP;
                for (int g = 0; g < MULTI_GROUP; g += 2)
                    _mm_storeu_pd(a + g, _mm_add_pd(_mm_loadu_pd(a + g), _mm_and_pd(in[g / 2], v)));
            }
#else
            for (int c = 0; c < d; c++) {
                const double v = x[p * step + c * ld];
                double *a = acc + c * MULTI_GROUP;
                for (int g = 0; g < MULTI_GROUP; g++) a[g] += pl < kg[g] ? v : 0.0;
            }
#endif
        }
        for (int g = 0; g < g_n; g++)
            for (int c = 0; c < d; c++) res[(ptrdiff_t) (lo + g) * d + c] = acc[c * MULTI_GROUP + g] / k[lo + g];
        if (lo == 0) break;
        /* the points of the next group's largest k, in the same order */
        const double next = k[lo - 1];
        int keep = 0;
        for (int m = 0; m < len; m++) {
            if (w->place[m] >= next) continue;
            w->lex[keep] = w->lex[m];
            w->place[keep++] = w->place[m];
        }
        len = keep;
    }
}

/* A chunk's centroids go to a buffer in tree order (MULTI_BUF doubles, or one query's when
 * more), then to their rows one column at a time: written straight to n-long columns they
 * would miss the cache at every value. */
#define MULTI_BUF ((ptrdiff_t) 1 << 20)

void knn_centroids_multi(const double *z, ptrdiff_t n, int d, const ptrdiff_t *rows,
                         const ptrdiff_t *off, ptrdiff_t n_strata, const int *k, int n_k, int nt,
                         double *const *out, const kernel_host *host)
{
    ptrdiff_t max_ns = 0;
    for (ptrdiff_t s = 0; s < n_strata; s++)
        if (off[s + 1] - off[s] > max_ns) max_ns = off[s + 1] - off[s];
    int n_top = 0; /* the k a stratum of max_ns points holds */
    while (n_top < n_k && k[n_top] <= max_ns) n_top++;
    if (d == 0 || n_top == 0) return;
    const int kmax = k[n_top - 1];
    kd_tree tree = kd_new_fast(max_ns, d, LEAF_SIZE, host->alloc);
    size_t stride;
    char *base = thread_slots(host, nt, sizeof(multi_work), &stride);
    multi_work **work = (multi_work **) host->alloc(nt, sizeof(multi_work *));
    for (int t = 0; t < nt; t++) {
        multi_work *w = work[t] = (multi_work *) (base + (size_t) t * stride);
        w->h = kd_heap_new(kmax, host->alloc);
        w->lex = (ptrdiff_t *) host->alloc(kmax, sizeof(ptrdiff_t));
        w->place = (double *) host->alloc(kmax, sizeof(double));
        w->place_of = (int *) host->alloc(max_ns, sizeof(int));
        w->acc = (double *) host->alloc((size_t) MULTI_GROUP * d, sizeof(double));
    }
    const ptrdiff_t per_query = (ptrdiff_t) n_top * d;
    double *buf = (double *) host->alloc(per_query > MULTI_BUF ? per_query : MULTI_BUF, sizeof(double));
    ptrdiff_t done = 0;
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        const ptrdiff_t ns = off[s + 1] - off[s];
        int nk = 0;
        while (nk < n_k && k[nk] <= ns) nk++;
        if (nk == 0) continue;
        const int K = k[nk - 1];
        kd_reuse(&tree, ns);
        tree.interrupted = host->interrupted;
        kd_build(&tree, z, n, rows + off[s]);
        host_pause(host, done);
        /* about the work of chunk_queries() at K, and the chunk's centroids in the buffer */
        double sum_k = 0.0;
        for (int j = 0; j < nk; j++) sum_k += k[j];
        ptrdiff_t chunk = (ptrdiff_t) (CHUNK_WORK / (query_cost(K) + sum_k));
        if (chunk < 64) chunk = 64;
        if (chunk > MULTI_BUF / ((ptrdiff_t) nk * d)) chunk = MULTI_BUF / ((ptrdiff_t) nk * d);
        if (chunk < 1) chunk = 1;
        const ptrdiff_t width = (ptrdiff_t) nk * d;
        for (ptrdiff_t from = 0; from < ns; from += chunk) {
            const ptrdiff_t to = ns - from > chunk ? from + chunk : ns;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads_for(nt, (double) (to - from) * nk)) schedule(dynamic, 16)
#endif
            for (ptrdiff_t p = from; p < to; p++) {
                multi_work *w = work[THREAD_ID];
                w->h.k = K;
                kd_knn_self(&tree, p, &w->h);
                centroids_every_k(&tree, w, k, nk, buf + (p - from) * width);
            }
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads_for(nt, (double) (to - from) * width)) schedule(static, 1)
#endif
            for (ptrdiff_t jc = 0; jc < width; jc++) {
                double *o = out[jc];
                for (ptrdiff_t p = from; p < to; p++) o[tree.row[p]] = buf[(p - from) * width + jc];
            }
            done += to - from;
            host_pause(host, done);
        }
    }
}
