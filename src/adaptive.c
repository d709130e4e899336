/* Adaptive k per record for anonymise_adaptive(): k-nearest-neighbour centroids where
 * every record whose released point is still linkable gets a larger neighbourhood.
 *
 * The per-stratum kd-trees of the original z-scores come from a rank index (rank_glue.c),
 * built once by the caller (adaptive_glue.c unpacks it); the rounds search copies of them
 * with the search copies of kd_new_fast() (ad_fast_trees()), which serve both the neighbour
 * search (kd_knn_self) and the linkability test (kd_count_within, the rank of the record's
 * own original among the originals nearest to its released point). Rounds: compute every centroid that changed,
 * the exact column SDs of all centroids (step 5's scale), test the records whose centroid
 * changed, give every flagged record more neighbours (one more up to k = 8, then a quarter
 * more, up to its cap). The other records keep their last test, which only step 5's scale
 * has moved since; so when no record is left to grow, every record is tested again on the
 * current centroids, and the rounds go on if any is flagged. The release therefore always
 * passes the tests it is returned with. A record that grows is searched once at its cap
 * and its neighbours kept for its later centroids; a call may go on from where an earlier
 * one ended (the next stage of a path: its centroids and tests are not computed again).
 * Each round depends only on the previous one,
 * records are processed independently, ties are broken by coordinates and sums are exact or
 * in coordinate order, so the result is the same for every thread count and row order. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "adaptive.h"
#include "fsum.h"
#include "threads.h"

/* Records per chunk of a round: a pause (an interrupt check) between chunks. */
#define ADAPT_CHUNK ((ptrdiff_t) 1 << 13)

/* Rank test of a record: q is its released point, self its own original (a tree point).
 * Returns the number of originals strictly nearer to q than self, counted up to m (so
 * the own original is among the m nearest with positive probability when it is < m), and
 * in *cost the squared distance between q and self. */
static int ad_rank(const kd_tree *t, const double *q, const double *self, int m, double *cost,
                   kd_item *stack)
{
    const double ds = kd_point_d2(q, self, t->d);
    *cost = ds;
    if (!(ds > 0.0)) return 0;
    return (int) kd_count_within(t, q, nextafter(ds, 0.0), m, stack);
}

/* sdcMicro's interval test (risk1): some variable of the released record, standardised by
 * the released columns' own mean and SD, lies strictly inside original +/- w1 * rmd. */
static int ad_interval(const double *xs_row, ptrdiff_t n, const double *c_row, ptrdiff_t ldc,
                       const double *cmean, const double *csd, int d, double w) {
    for (int j = 0; j < d; j++) {
        double xm = (c_row[(size_t) j * ldc] - cmean[j]) / csd[j];
        double x = xs_row[(size_t) j * n];
        if (xm > x - w && xm < x + w) return 1;
    }
    return 0;
}

/* For every row its stratum and tree position, and (order not NULL) the rows in tree order,
 * stratum by stratum; NULL, or a message for a row out of range. */
static const char *ad_locate(const kd_tree *trees, ptrdiff_t n_strata, ptrdiff_t n, int *stratum,
                             ptrdiff_t *pos, ptrdiff_t *order)
{
    ptrdiff_t i = 0;
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        for (ptrdiff_t p = 0; p < trees[s].n; p++) {
            ptrdiff_t r = trees[s].row[p];
            if (r < 0 || r >= n) return "row out of range";
            stratum[r] = (int) s;
            pos[r] = p;
            if (order && i < n) order[i++] = r;
        }
    }
    return order && i != n ? "rows missing from the trees" : NULL;
}

/* Leaves of the trees the rounds search (as anonymise()'s). */
#define AD_LEAF 32

/* Copies of the rank index's trees with the search copies of kd_new_fast() (the same
 * points and rows; each its own shape): the neighbour searches take the SSE2 path. The k
 * nearest points and the counts of the rank test depend on the points alone, not on the
 * tree, so the rounds give the same bits on either. */
static kd_tree *ad_fast_trees(const kd_tree *src, ptrdiff_t n_strata, const kernel_host *host)
{
    kd_tree *t = (kd_tree *) host->alloc(n_strata > 0 ? n_strata : 1, sizeof(kd_tree));
    ptrdiff_t max_n = 0;
    for (ptrdiff_t s = 0; s < n_strata; s++) if (src[s].n > max_n) max_n = src[s].n;
    ptrdiff_t *at = (ptrdiff_t *) host->alloc(max_n > 0 ? max_n : 1, sizeof(ptrdiff_t));
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        const ptrdiff_t ns = src[s].n;
        const int d = src[s].d;
        if (ns == 0) { t[s] = src[s]; continue; }
        t[s] = kd_new_fast(ns, d, AD_LEAF, host->alloc);
        /* point i of the source at pts[i * d + j]: "rows" i * d with a column stride of 1 */
        for (ptrdiff_t i = 0; i < ns; i++) at[i] = i * d;
        kd_build(&t[s], src[s].pts, 1, at);
        for (ptrdiff_t p = 0; p < ns; p++) t[s].row[p] = src[s].row[t[s].row[p] / d];
    }
    return t;
}

/* The centroid of the k nearest originals of the point at tree position `self`, into w. */
static inline void ad_centroid(const kd_tree *t, ptrdiff_t self, int k, kd_heap *h, double *w)
{
    h->k = k;
    kd_knn_self(t, self, h);
    kd_centroid_lex(t, h->pos, h->k, w);
}

/* The rank test of the record at tree position `self` on its centroid c[j * ldc] (j < d)
 * divided by step 5's column SDs csd: the rank of ad_rank() (1 when m = 0: no test), its
 * squared distance in *cost; q is scratch of d doubles. */
static inline int ad_test(const kd_tree *t, ptrdiff_t self, const double *c, ptrdiff_t ldc,
                          const double *csd, int m, double *q, double *cost, kd_item *stack)
{
    const int d = t->d;
    for (int j = 0; j < d; j++) q[j] = c[(size_t) j * ldc] / csd[j];
    return m > 0 ? ad_rank(t, q, t->pts + (size_t) self * d, m, cost, stack) : 1;
}

/* The (k+1)-th smallest of v[0..n) (k < n), v reordered (Hoare's selection). */
static double ad_select(double *v, ptrdiff_t n, ptrdiff_t k)
{
    ptrdiff_t lo = 0, hi = n - 1;
    while (lo < hi) {
        const double pivot = v[lo + (hi - lo) / 2];
        ptrdiff_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) { double t = v[i]; v[i] = v[j]; v[j] = t; i++; j--; }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return v[k];
    }
    return v[k];
}


/* Neighbours kept per grown record (see ad_grown_centroid()): at most this many, 4 bytes
 * each (256 MB at 1e6 records). */
#define AD_KEEP_MAX 64

/* The centroid of a record that has grown (at tree position `self`, k points): from the
 * neighbours kept for it (kept[0..*n_kept), tree positions best first in the total order
 * of kdtree.h), searched once at `want` (>= k) when fewer than k are kept. The k nearest
 * are the first k of the `want` nearest in that order (identical points, the only ones it
 * may take in another order, are interchangeable), summed in lexicographic order as
 * ad_centroid() sums them: the same bits. pb: scratch of k positions. */
static inline void ad_grown_centroid(const kd_tree *t, ptrdiff_t self, int k, int want, int32_t *kept,
                                     int *n_kept, kd_heap *h, ptrdiff_t *pb, double *w)
{
    if (*n_kept < k) {
        h->k = want;
        kd_knn_self(t, self, h);
        for (int i = 0; i < want; i++) kept[i] = (int32_t) h->pos[i];
        *n_kept = want;
    }
    for (int i = 0; i < k; i++) pb[i] = kept[i];
    kd_centroid_lex(t, pb, k, w);
}

const char *adaptive_k(adaptive_job *job, const kernel_host *host)
{
    const ptrdiff_t n = job->n, n_strata = job->n_strata;
    const int d = job->d, nt = job->nt, m = job->m;
    const double target = job->target;
    const kd_tree *trees = ad_fast_trees(job->trees, n_strata, host);
    const int *k0 = job->k_init, *cap = job->cap;
    const int use_int = job->xs != NULL;
    const double *pxs = job->xs, *pwr = job->wr;
    double *c = job->centroids;
    int *k = job->k, *rank = job->rank, *iflag = job->iflag;
    double *cost = job->cost;

    /* for every row its stratum and tree position, and the rows in tree order: every loop
     * over records runs in that order, so that neighbouring queries share the tree's cache */
    int *stratum = (int *) host->alloc(n, sizeof(int));
    ptrdiff_t *pos = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    ptrdiff_t *order = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    const char *bad = ad_locate(trees, n_strata, n, stratum, pos, order);
    if (bad) return bad;
    int kmax = 1;
    for (ptrdiff_t r = 0; r < n; r++) {
        if (k0[r] < 1 || cap[r] < k0[r] || cap[r] > trees[stratum[r]].n) return "k out of range";
        k[r] = k0[r];
        if (cap[r] > kmax) kmax = cap[r];
    }

    kd_heap *heaps = (kd_heap *) host->alloc(nt, sizeof(kd_heap));
    for (int i = 0; i < nt; i++) heaps[i] = kd_heap_new(kmax, host->alloc);
    double *buf = (double *) host->alloc((size_t) nt * d, sizeof(double));
    double *cmean = (double *) host->alloc(d, sizeof(double)), *csd = (double *) host->alloc(d, sizeof(double));
    /* rows whose centroid must be (re)computed and tested */
    ptrdiff_t *todo = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    char *flag = (char *) host->alloc(n, 1);
    double *pick = (double *) host->alloc(n, sizeof(double));
    /* A record that grows usually grows again, round after round, up to its cap: the first
     * time it grows it is searched once at its cap (up to AD_KEEP_MAX) and its neighbours
     * are kept, so that its later centroids need no search (made at the first growth). */
    const int keep = kmax < AD_KEEP_MAX ? kmax : AD_KEEP_MAX;
    int32_t *kept = NULL;
    int *n_kept = NULL;
    ptrdiff_t *pbuf = (ptrdiff_t *) host->alloc((size_t) nt * keep, sizeof(ptrdiff_t));
    ptrdiff_t n_todo = n;
    for (ptrdiff_t i = 0; i < n; i++) todo[i] = order[i];
    int rounds = 0, full = 1; /* full: every record is tested this round */
    /* resuming: the first round's centroids and tests are those the caller passed */
    int given = job->resume;
    ptrdiff_t n_capped = 0;
    job->tested = 0;
    for (;;) {
        rounds++;
        /* in chunks, with a pause (an interrupt check) between them: a round over 1e6
         * records with k up to k_max takes seconds */
        for (ptrdiff_t from = 0; !given && from < n_todo; from += ADAPT_CHUNK) {
            const ptrdiff_t to = n_todo - from > ADAPT_CHUNK ? from + ADAPT_CHUNK : n_todo;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads_for(nt, (double) (to - from))) schedule(dynamic, 64)
#endif
            for (ptrdiff_t i = from; i < to; i++) {
                const ptrdiff_t r = todo[i];
                const int tid = THREAD_ID;
                const kd_tree *t = &trees[stratum[r]];
                double *w = buf + (size_t) tid * d;
                if (kept && k[r] > k0[r] && k[r] <= keep)
                    ad_grown_centroid(t, pos[r], k[r], cap[r] < keep ? cap[r] : keep, kept + (size_t) r * keep,
                                      n_kept + r, &heaps[tid], pbuf + (size_t) tid * keep, w);
                else ad_centroid(t, pos[r], k[r], &heaps[tid], w);
                for (int j = 0; j < d; j++) c[r + (size_t) j * n] = w[j];
            }
            host_pause(host, rounds);
        }
        /* step 5's scale: exact (order-independent) column means and SDs of the centroids */
        int flat = 0;
        for (int j = 0; j < d; j++) {
            col_mean_sd(c + (size_t) j * n, n, cmean + j, csd + j);
            if (!(csd[j] > 0.0)) flat = 1;
        }
        if (flat) break; /* nothing left to tell apart: R warns and releases the mean */
        /* the rank and interval tests of the records tested this round */
        const ptrdiff_t n_test = given ? 0 : full ? n : n_todo;
        for (ptrdiff_t from = 0; from < n_test; from += ADAPT_CHUNK) {
            const ptrdiff_t to = n_test - from > ADAPT_CHUNK ? from + ADAPT_CHUNK : n_test;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads_for(nt, (double) (to - from))) schedule(dynamic, 256)
#endif
            for (ptrdiff_t i = from; i < to; i++) {
                const ptrdiff_t r = full ? order[i] : todo[i];
                const int tid = THREAD_ID;
                const kd_tree *t = &trees[stratum[r]];
                rank[r] = ad_test(t, pos[r], c + r, n, csd, m, buf + (size_t) tid * d, cost + r, heaps[tid].stack);
                iflag[r] = use_int && ad_interval(pxs + r, n, c + r, n, cmean, csd, d, pwr[r]);
            }
            host_pause(host, rounds);
        }
        given = 0;
        /* the nearest-linked records always grow; of the other top-m linkable ones, while
         * more than `target` records are top-m linkable, the cheapest: those whose released
         * point is nearest to their original (the least moved), as many as are too many,
         * with every record tied at the cut-off (so the choice depends on no row order) */
        ptrdiff_t n_m = 0, n_nn = 0, n_cand = 0;
        for (ptrdiff_t r = 0; r < n; r++) {
            flag[r] = (char) iflag[r];
            if (m == 0) continue;
            if (rank[r] == 0) { n_nn++; flag[r] = 1; }
            else if (rank[r] < m && k[r] < cap[r]) pick[n_cand++] = cost[r];
            n_m += rank[r] < m;
        }
        const double need = (double) n_m - target - (double) n_nn;
        if (need > 0 && n_cand > 0) {
            double cut;
            if (need >= (double) n_cand) cut = HUGE_VAL;
            else cut = ad_select(pick, n_cand, (ptrdiff_t) need - 1);
            for (ptrdiff_t r = 0; r < n; r++)
                if (rank[r] > 0 && rank[r] < m && cost[r] <= cut) flag[r] = 1;
        }
        host_pause(host, rounds);
        n_todo = 0;
        n_capped = 0;
        for (ptrdiff_t i = 0; i < n; i++) {
            const ptrdiff_t r = order[i];
            if (!flag[r]) continue;
            if (k[r] < cap[r]) {
                /* one more point up to k = 8, then a quarter more: O(log k_max) rounds */
                int step = k[r] / 4 > 1 ? k[r] / 4 : 1;
                k[r] = k[r] + step < cap[r] ? k[r] + step : cap[r];
                todo[n_todo++] = r;
            } else n_capped++;
        }
        if (n_todo == 0) {
            if (full) { job->tested = 1; break; } /* every record passed (or is capped) on these centroids */
            full = 1;        /* test every record again on the current centroids */
        } else {
            full = 0;
            if (!kept) {
                kept = (int32_t *) host->alloc((size_t) n * keep, sizeof(int32_t));
                n_kept = (int *) host->alloc(n, sizeof(int));
                for (ptrdiff_t r = 0; r < n; r++) n_kept[r] = 0;
            }
        }
    }
    job->rounds = rounds;
    job->n_capped = n_capped;
    return NULL;
}

/* ---- the rounds' steps one group of strata at a time (anonymise_partitioned()) ----------
 * The partitioned adaptive method runs the rounds above in R (adaptive_plan()), which holds
 * every record's k, last test and centroid, and calls these two on each group's own index:
 * the same per-record steps as adaptive_k(). */

/* The centroids of rows[0..n_rows) (0-based rows of the index) with k[row] points each, into
 * out (n_rows x d, column-major). */
const char *adaptive_centroids(const kd_tree *trees, ptrdiff_t n_strata, ptrdiff_t n, int d,
                               const int *k, const ptrdiff_t *rows, ptrdiff_t n_rows, int nt,
                               double *out, const kernel_host *host)
{
    int *stratum = (int *) host->alloc(n, sizeof(int));
    ptrdiff_t *pos = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    const char *bad = ad_locate(trees, n_strata, n, stratum, pos, NULL);
    if (bad) return bad;
    int kmax = 1;
    for (ptrdiff_t i = 0; i < n_rows; i++) {
        const ptrdiff_t r = rows[i];
        if (r < 0 || r >= n) return "row out of range";
        if (k[r] < 1 || k[r] > trees[stratum[r]].n) return "k out of range";
        if (k[r] > kmax) kmax = k[r];
    }
    kd_heap *heaps = (kd_heap *) host->alloc(nt, sizeof(kd_heap));
    for (int i = 0; i < nt; i++) heaps[i] = kd_heap_new(kmax, host->alloc);
    double *buf = (double *) host->alloc((size_t) nt * d, sizeof(double));
    for (ptrdiff_t from = 0; from < n_rows; from += ADAPT_CHUNK) {
        const ptrdiff_t to = n_rows - from > ADAPT_CHUNK ? from + ADAPT_CHUNK : n_rows;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads_for(nt, (double) (to - from))) schedule(dynamic, 64)
#endif
        for (ptrdiff_t i = from; i < to; i++) {
            const ptrdiff_t r = rows[i];
            const int tid = THREAD_ID;
            double *w = buf + (size_t) tid * d;
            ad_centroid(&trees[stratum[r]], pos[r], k[r], &heaps[tid], w);
            for (int j = 0; j < d; j++) out[i + (size_t) j * n_rows] = w[j];
        }
        host_pause(host, to);
    }
    return NULL;
}

/* The rank tests of rows[0..n_rows) on their centroids c (n_rows x d, column-major) divided
 * by csd: rank[i] (ad_test()) and cost[i] (with m > 0). */
const char *adaptive_tests(const kd_tree *trees, ptrdiff_t n_strata, ptrdiff_t n, int d,
                           const double *c, const ptrdiff_t *rows, ptrdiff_t n_rows,
                           const double *csd, int m, int nt, int *rank, double *cost,
                           const kernel_host *host)
{
    int *stratum = (int *) host->alloc(n, sizeof(int));
    ptrdiff_t *pos = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    const char *bad = ad_locate(trees, n_strata, n, stratum, pos, NULL);
    if (bad) return bad;
    for (ptrdiff_t i = 0; i < n_rows; i++)
        if (rows[i] < 0 || rows[i] >= n) return "row out of range";
    kd_item *stacks = (kd_item *) host->alloc((size_t) nt * KD_STACK_MAX, sizeof(kd_item));
    double *buf = (double *) host->alloc((size_t) nt * d, sizeof(double));
    for (ptrdiff_t from = 0; from < n_rows; from += ADAPT_CHUNK) {
        const ptrdiff_t to = n_rows - from > ADAPT_CHUNK ? from + ADAPT_CHUNK : n_rows;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads_for(nt, (double) (to - from))) schedule(dynamic, 256)
#endif
        for (ptrdiff_t i = from; i < to; i++) {
            const ptrdiff_t r = rows[i];
            const int tid = THREAD_ID;
            rank[i] = ad_test(&trees[stratum[r]], pos[r], c + i, n_rows, csd, m, buf + (size_t) tid * d,
                              cost + i, stacks + (size_t) tid * KD_STACK_MAX);
        }
        host_pause(host, to);
    }
    return NULL;
}

/* ---- several k at once (tune_release()'s ladder of k per stratum) ------------------------
 * In the total order of kdtree.h (squared distance, then coordinates) the k nearest points
 * at a smaller k are the first of those at a larger k, so one search at a record's largest
 * k gives the points of every rung. They are copied out and sorted once in lexicographic
 * order, and each rung sums its own in that order: the same points in the same order as
 * kd_centroid_lex() sums them (identical points are interchangeable), so every rung's
 * centroids have the bits of ad_centroid() at that k alone. A rung's points are those
 * nearer than its k-th distance, and of the points at that distance the lexicographically
 * first (as the total order takes them). The search runs on a tree with the search copies
 * (kd_new_fast()), one stratum at a time, its queries in tree order. */

#define LADDER_LEAF 32

/* Sort idx[0..n) by the lexicographic order of the points pts[idx * d ..] (a merge sort
 * through tmp, n entries). */
static void ladder_sort_lex(int *idx, int *tmp, int n, const double *pts, int d)
{
    for (int i = 1; i < n; i += 2)
        if (kd_lex_less(pts + (size_t) idx[i] * d, pts + (size_t) idx[i - 1] * d, d)) {
            int t = idx[i]; idx[i] = idx[i - 1]; idx[i - 1] = t;
        }
    for (int w = 2; w < n; w *= 2) {
        for (int a = 0; a < n; a += 2 * w) {
            const int mid = a + w < n ? a + w : n, end = a + 2 * w < n ? a + 2 * w : n;
            int i = a, j = mid, o = a;
            while (i < mid && j < end)
                tmp[o++] = kd_lex_less(pts + (size_t) idx[j] * d, pts + (size_t) idx[i] * d, d) ? idx[j++] : idx[i++];
            while (i < mid) tmp[o++] = idx[i++];
            while (j < end) tmp[o++] = idx[j++];
        }
        for (int i = 0; i < n; i++) idx[i] = tmp[i];
    }
}

/* Per thread: the heap and the scratch of a query of up to kmax points. */
typedef struct {
    kd_heap h;
    double *pts, *d2, *sel;
    int *idx, *tmp;
} ladder_work;

const char *adaptive_ladder(const double *z, ptrdiff_t n, int d, const ptrdiff_t *rows,
                            const ptrdiff_t *off, ptrdiff_t n_strata, const int *k, int n_rungs,
                            int nt, double *const *out, const kernel_host *host)
{
    if (n_rungs < 1 || off[0] != 0 || off[n_strata] != n) return "bad strata or rungs";
    ptrdiff_t max_ns = 0;
    int kmax = 1;
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        const ptrdiff_t ns = off[s + 1] - off[s];
        if (ns < 0) return "bad strata";
        if (ns > max_ns) max_ns = ns;
        for (ptrdiff_t i = off[s]; i < off[s + 1]; i++) {
            const ptrdiff_t r = rows[i];
            if (r < 0 || r >= n) return "row out of range";
            for (int j = 0; j < n_rungs; j++) {
                const int kj = k[r + (size_t) j * n];
                if (kj < 1 || kj > ns || (j > 0 && kj < k[r + (size_t) (j - 1) * n])) return "k out of range";
                if (kj > kmax) kmax = kj;
            }
        }
    }
    if (max_ns == 0) return NULL;
    kd_tree tree = kd_new_fast(max_ns, d, LADDER_LEAF, host->alloc);
    ladder_work *work = (ladder_work *) host->alloc(nt, sizeof(ladder_work));
    for (int i = 0; i < nt; i++) {
        work[i].h = kd_heap_new(kmax, host->alloc);
        work[i].h.any_order = 1; /* the rungs sort the points themselves */
        work[i].pts = (double *) host->alloc((size_t) kmax * d, sizeof(double));
        work[i].d2 = (double *) host->alloc(kmax, sizeof(double));
        work[i].sel = (double *) host->alloc(kmax, sizeof(double));
        work[i].idx = (int *) host->alloc(kmax, sizeof(int));
        work[i].tmp = (int *) host->alloc(kmax, sizeof(int));
    }
    /* a stratum's centroids in tree order (rung by rung, then coordinates), then to the
     * output columns: written straight to their rows they would miss the cache every time */
    double *buf = (double *) host->alloc((size_t) max_ns * n_rungs * d, sizeof(double));
    ptrdiff_t done = 0;
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        const ptrdiff_t ns = off[s + 1] - off[s];
        if (ns == 0) continue;
        kd_reuse(&tree, ns);
        tree.interrupted = host->interrupted;
        kd_build(&tree, z, n, rows + off[s]);
        host_pause(host, done);
        const double *x = tree.soa ? tree.soa : tree.pts;
        const ptrdiff_t step = tree.soa ? 1 : d, ld = tree.soa ? tree.soa_ld : 1;
        for (ptrdiff_t from = 0; from < ns; from += ADAPT_CHUNK) {
            const ptrdiff_t to = ns - from > ADAPT_CHUNK ? from + ADAPT_CHUNK : ns;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads_for(nt, (double) (to - from))) schedule(dynamic, 64)
#endif
            for (ptrdiff_t p = from; p < to; p++) {
                ladder_work *wk = &work[THREAD_ID];
                const ptrdiff_t r = tree.row[p];
                const int K = k[r + (size_t) (n_rungs - 1) * n];
                wk->h.k = K;
                kd_knn_self(&tree, p, &wk->h);
                for (int m = 0; m < K; m++) {
                    for (int c = 0; c < d; c++) wk->pts[m * d + c] = x[wk->h.pos[m] * step + c * ld];
                    wk->d2[m] = wk->h.d2[m];
                    wk->idx[m] = m;
                }
                ladder_sort_lex(wk->idx, wk->tmp, K, wk->pts, d);
                double *w = buf + (size_t) p * n_rungs * d;
                for (int j = 0; j < n_rungs; j++) {
                    const int kj = k[r + (size_t) j * n];
                    /* the rung's k-th distance, and how many of the points at it are in */
                    double cut = HUGE_VAL;
                    int at_cut = 0;
                    if (kj < K) {
                        for (int m = 0; m < K; m++) wk->sel[m] = wk->d2[m];
                        cut = ad_select(wk->sel, K, kj - 1);
                        at_cut = kj;
                        for (int m = 0; m < K; m++) at_cut -= wk->d2[m] < cut;
                    }
                    for (int c = 0; c < d; c++) w[j * d + c] = 0.0;
                    for (int m = 0; m < K; m++) {
                        const int i = wk->idx[m];
                        const double di = wk->d2[i];
                        if (!(di < cut || (di == cut && at_cut-- > 0))) continue;
                        for (int c = 0; c < d; c++) w[j * d + c] += wk->pts[i * d + c];
                    }
                    for (int c = 0; c < d; c++) w[j * d + c] /= kj;
                }
            }
            done += to - from;
            host_pause(host, done);
        }
        for (int j = 0; j < n_rungs; j++)
            for (int c = 0; c < d; c++) {
                double *o = out[j] + (size_t) c * n;
                for (ptrdiff_t p = 0; p < ns; p++) o[tree.row[p]] = buf[((size_t) p * n_rungs + j) * d + c];
            }
    }
    return NULL;
}
