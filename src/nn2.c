/* Nearest-neighbour queries of the risk battery: the two nearest points (the NNDR
 * confidence of the linkage attacks) and the neighbour sets of the inference attack.
 * Pure C kernels over the kd-trees of kdtree.h; see nn2.h. */
#include <math.h>
#include <stdint.h>
#include "nn2.h"
#include "threads.h"

void nn2_query(const kd_tree *t, const double *q, kd_heap *h, double *d1, double *d2)
{
    *d1 = *d2 = INFINITY;
    if (t->n == 0) return;
    if (t->n == 1) { *d1 = kd_point_d2(q, t->pts, t->d); return; }
    kd_knn_point(t, q, h);
    *d1 = h->d2[0];
    *d2 = h->d2[1];
}

double nn_set_radius(const kd_tree *t, const double *q, int m, ptrdiff_t skip, kd_heap *h)
{
    if (t->n == 0) return -1.0;
    /* k = m + 1 covers the left-out point; with fewer points, all of them */
    const ptrdiff_t k = (ptrdiff_t) m + 1 <= t->n ? (ptrdiff_t) m + 1 : t->n;
    if (k <= m) return INFINITY; /* m or fewer points: all (the left-out one is skipped later) */
    kd_heap *hh = h; /* k == m + 1 == h->k here */
    kd_knn_point(t, q, hh);
    /* the m-th nearest point other than the left-out one */
    int seen = 0;
    for (int i = 0; i < hh->k; i++) {
        if (skip >= 0 && t->row[hh->pos[i]] == skip) continue;
        if (++seen == m) return hh->d2[i];
    }
    return INFINITY;
}

/* The running summary of a neighbour set (see nn_set_summary()). */
typedef struct {
    const int *ycat;
    int target;
    int *freq;
    const double *ynum;
    double target_num, tol;
    double cnt, mat, tp, lo, hi;
} nn_acc;

static inline void nn_add(nn_acc *a, ptrdiff_t r, int pass)
{
    if (a->ycat) {
        const int c = a->ycat[r];
        if (pass == 0) {
            a->cnt++;
            if (c == a->target && c >= 1) a->mat++;
            if (c >= 1 && ++a->freq[c] > a->tp) a->tp = a->freq[c];
        } else if (c >= 1) {
            a->freq[c] = 0;
        }
    } else {
        const double y = a->ynum[r];
        a->cnt++;
        if (fabs(y - a->target_num) <= a->tol) a->mat++;
        if (!isnan(y)) { a->lo = y < a->lo ? y : a->lo; a->hi = y > a->hi ? y : a->hi; }
    }
}

void nn_set_summary(const kd_tree *t, const double *q, double r2, ptrdiff_t skip,
                    const kd_heap *h, const int *ycat, int target, int *freq,
                    const double *ynum, double target_num, double tol,
                    kd_item *st, double *count, double *match, double *top)
{
    const int d = t->d;
    nn_acc a = {ycat, target, freq, ynum, target_num, tol, 0, 0, 0, INFINITY, -INFINITY};
    *count = *match = *top = 0;
    if (t->n == 0 || !(r2 >= 0)) return;
    /* the heap of the radius search holds the whole set when its farthest point lies
     * beyond the radius (no point outside it can be as near) */
    const int in_heap = h != NULL && h->count == h->k && h->d2[h->k - 1] > r2;
    /* categorical: a second pass resets the frequencies */
    for (int pass = 0; pass < (ycat ? 2 : 1); pass++) {
        if (in_heap) {
            for (int i = 0; i < h->k; i++) {
                const ptrdiff_t r = t->row[h->pos[i]];
                if (r != skip && h->d2[i] <= r2) nn_add(&a, r, pass);
            }
            continue;
        }
        int sp = 0;
        st[sp].node = 0; st[sp].bd = kd_box_d2(t, 0, q); sp++;
        while (sp > 0) {
            kd_item it = st[--sp];
            const kd_node *nd = t->nodes + it.node;
            if (it.bd > r2) continue;
            if (nd->left < 0) {
                for (ptrdiff_t p = nd->begin; p < nd->end; p++) {
                    const ptrdiff_t r = t->row[p];
                    if (r == skip || kd_point_d2(q, t->pts + p * d, d) > r2) continue;
                    nn_add(&a, r, pass);
                }
                continue;
            }
            /* depth first: a stack of at most depth + 2 items */
            st[sp].node = nd->left; st[sp].bd = kd_box_d2(t, nd->left, q); sp++;
            st[sp].node = nd->right; st[sp].bd = kd_box_d2(t, nd->right, q); sp++;
        }
    }
    *count = a.cnt;
    *match = a.mat;
    *top = ycat ? a.tp : (a.hi >= a.lo ? a.hi - a.lo : NAN);
}

/* ---- the query loops (nn2_glue.c) ------------------------------------------------------- */

/* Queries between two pauses. */
#define NN2_CHUNK ((ptrdiff_t) 1 << 15)

/* The order in which to run the queries: by the leaf of its tree each query point falls
 * in (descending to the nearer child box), so that consecutive queries visit the same part
 * of the same tree: several times faster than row order on trees too large for the cache,
 * whether a query lies near its own point (a successful attack) or not (the control).
 * A counting sort over the trees' positions, O(nq + n_index). From host->alloc; queries not
 * run come last. */
static ptrdiff_t *nn2_order(const kd_tree *trees, ptrdiff_t n_trees, ptrdiff_t n_index,
                            const int *tree_of, const double *xq, ptrdiff_t nq, int d,
                            const kernel_host *host)
{
    ptrdiff_t *ord = (ptrdiff_t *) host->alloc(nq > 0 ? nq : 1, sizeof(ptrdiff_t));
    ptrdiff_t *key = (ptrdiff_t *) host->alloc(nq > 0 ? nq : 1, sizeof(ptrdiff_t));
    ptrdiff_t *base = (ptrdiff_t *) host->alloc(n_trees + 1, sizeof(ptrdiff_t));
    ptrdiff_t *count = (ptrdiff_t *) host->alloc(n_index + 2, sizeof(ptrdiff_t));
    double *q = (double *) host->alloc(d > 0 ? d : 1, sizeof(double));
    base[0] = 0;
    for (ptrdiff_t s = 0; s < n_trees; s++) base[s + 1] = base[s] + trees[s].n;
    for (ptrdiff_t i = 0; i < n_index + 2; i++) count[i] = 0;
    for (ptrdiff_t r = 0; r < nq; r++) {
        const int t_id = tree_of[r];
        if (t_id < 1 || trees[t_id - 1].n == 0) {
            key[r] = n_index; /* not run: last */
            count[n_index + 1]++;
            continue;
        }
        const kd_tree *t = &trees[t_id - 1];
        for (int j = 0; j < d; j++) q[j] = xq[r + (size_t) j * nq];
        key[r] = base[t_id - 1] + t->nodes[kd_query_leaf(t, q)].begin;
        count[key[r] + 1]++;
    }
    for (ptrdiff_t i = 0; i < n_index + 1; i++) count[i + 1] += count[i];
    for (ptrdiff_t r = 0; r < nq; r++) ord[count[key[r]]++] = r;
    return ord;
}

void nn2_run_nn2(const kd_tree *trees, ptrdiff_t n_trees, ptrdiff_t n_index, const int *tree_of,
                 const double *xq, ptrdiff_t nq, int d, int nt, double na, double *o,
                 const kernel_host *host)
{
    kd_heap *heaps = (kd_heap *) host->alloc(nt, sizeof(kd_heap));
    for (int i = 0; i < nt; i++) heaps[i] = kd_heap_new(2, host->alloc);
    double *buf = (double *) host->alloc((size_t) nt * (d > 0 ? d : 1), sizeof(double));
    const ptrdiff_t *ord = nn2_order(trees, n_trees, n_index, tree_of, xq, nq, d, host);
    for (ptrdiff_t from = 0; from < nq; from += NN2_CHUNK) {
        const ptrdiff_t to_ = from + NN2_CHUNK < nq ? from + NN2_CHUNK : nq;
        const int nts = threads_for(nt, (double) (to_ - from));
        (void) nts;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nts) schedule(dynamic, 64)
#endif
        for (ptrdiff_t i = from; i < to_; i++) {
            const ptrdiff_t r = ord[i];
            if (tree_of[r] < 1) { o[r] = o[r + nq] = na; continue; }
            const int tid = THREAD_ID;
            double *q = buf + (size_t) tid * d;
            for (int j = 0; j < d; j++) q[j] = xq[r + (size_t) j * nq];
            double d1, d2;
            nn2_query(&trees[tree_of[r] - 1], q, &heaps[tid], &d1, &d2);
            o[r] = sqrt(d1);
            o[r + nq] = sqrt(d2);
        }
        host_pause(host, to_);
    }
}

void nn2_run_neighbours(const kd_tree *trees, ptrdiff_t n_trees, ptrdiff_t n_index,
                        const int *tree_of, const double *xq, ptrdiff_t nq, int d, int m,
                        int leave_out, int cat, const int *ycat, const int *tcat, int n_levels,
                        const double *ynum, const double *tnum, double tol, int nt, double na,
                        double *o, const kernel_host *host)
{
    kd_heap *heaps = (kd_heap *) host->alloc(nt, sizeof(kd_heap));
    for (int i = 0; i < nt; i++) heaps[i] = kd_heap_new(m + 1, host->alloc);
    double *buf = (double *) host->alloc((size_t) nt * (d > 0 ? d : 1), sizeof(double));
    kd_item *stacks = (kd_item *) host->alloc((size_t) nt * KD_STACK_MAX, sizeof(kd_item));
    int *freq = (int *) host->alloc((size_t) nt * (cat ? n_levels + 1 : 1), sizeof(int));
    for (size_t i = 0; i < (size_t) nt * (cat ? n_levels + 1 : 1); i++) freq[i] = 0;
    const ptrdiff_t *ord = nn2_order(trees, n_trees, n_index, tree_of, xq, nq, d, host);
    for (ptrdiff_t from = 0; from < nq; from += NN2_CHUNK) {
        const ptrdiff_t to_ = from + NN2_CHUNK < nq ? from + NN2_CHUNK : nq;
        const int nts = threads_for(nt, (double) (to_ - from));
        (void) nts;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nts) schedule(dynamic, 64)
#endif
        for (ptrdiff_t i = from; i < to_; i++) {
            const ptrdiff_t r = ord[i];
            if (tree_of[r] < 1) {
                o[r] = o[r + nq] = o[r + 2 * nq] = na;
                continue;
            }
            const int tid = THREAD_ID;
            double *q = buf + (size_t) tid * d;
            for (int j = 0; j < d; j++) q[j] = xq[r + (size_t) j * nq];
            const kd_tree *t = &trees[tree_of[r] - 1];
            const ptrdiff_t skip = leave_out ? r : -1;
            const double r2 = nn_set_radius(t, q, m, skip, &heaps[tid]);
            nn_set_summary(t, q, r2, skip, isinf(r2) ? NULL : &heaps[tid], ycat, cat ? tcat[r] : 0,
                           cat ? freq + (size_t) tid * (n_levels + 1) : NULL,
                           ynum, cat ? 0.0 : tnum[r], tol, stacks + (size_t) tid * KD_STACK_MAX,
                           o + r, o + r + nq, o + r + 2 * nq);
        }
        host_pause(host, to_);
    }
}

void nn2_list_neighbours(const int *idx, const double *dd, ptrdiff_t n, int k, const int *size,
                         const int *want, int m, int leave_out, int cat, const int *ycat, const int *tcat,
                         const double *ynum, const double *tnum, double tol, int *freq, double na,
                         double *o)
{
    for (ptrdiff_t r = 0; r < n; r++) {
        if (want[r] != 1) continue;
        const ptrdiff_t sz = size[r], kk = sz < k ? sz : k;
        if (sz < 1) { o[r] = na; continue; }
        /* the squared radius of nn_set_radius(): the m-th nearest point other than the
         * left-out one (row r itself), +Inf when the tree holds fewer (all of them) */
        double r2 = INFINITY;
        int seen = 0;
        for (ptrdiff_t j = 0; j < kk; j++) {
            if (leave_out && idx[r + j * n] - 1 == r) continue;
            if (++seen == m) { r2 = dd[r + j * n]; break; }
        }
        /* the list holds the whole set when it holds the whole tree, or when its last point
         * lies beyond the radius (no point outside it can be as near); else the caller
         * searches the tree (with r2 = +Inf here: the m-th point lies past the list) */
        if (sz > k && !(dd[r + (ptrdiff_t) (k - 1) * n] > r2)) { o[r] = na; continue; }
        nn_acc a = {ycat, cat ? tcat[r] : 0, freq, ynum, cat ? 0.0 : tnum[r], tol, 0, 0, 0, INFINITY, -INFINITY};
        for (int pass = 0; pass < (cat ? 2 : 1); pass++) {
            for (ptrdiff_t j = 0; j < kk; j++) {
                const ptrdiff_t row = idx[r + j * n] - 1;
                if ((leave_out && row == r) || !(dd[r + j * n] <= r2)) continue;
                nn_add(&a, row, pass);
            }
        }
        o[r] = a.cnt;
        o[r + n] = a.mat;
        o[r + 2 * n] = cat ? a.tp : (a.hi >= a.lo ? a.hi - a.lo : NAN);
    }
}

/* The leaf size of the trees of nn2_run_knn_cells(): that of the trees the lookup had before
 * (assign.c), so that identical points come in the same order. */
#define KNN_CELLS_LEAF 8

const char *nn2_run_knn_cells(const double *xt, ptrdiff_t Nt, const double *xq, ptrdiff_t Nq, int d,
                              const int *to, const int *toff, const int *qo, const int *qoff,
                              ptrdiff_t n_cells, int k, nn2_pair_fn pair, const void *pair_ctx, int nt,
                              int *idx, double *dd, double *d2, const kernel_host *host)
{
    ptrdiff_t max_t = 1, max_q = 1;
    for (ptrdiff_t s = 0; s < n_cells; s++) {
        const ptrdiff_t a = toff[s + 1] - toff[s], b = qoff[s + 1] - qoff[s];
        if (a < 0 || b < 0) return "decreasing offsets";
        if (a > max_t) max_t = a;
        if (b > max_q) max_q = b;
    }
    kd_tree t = kd_new_fast(max_t, d, KNN_CELLS_LEAF, host->alloc);
    kd_heap *heaps = (kd_heap *) host->alloc(nt, sizeof(kd_heap));
    for (int i = 0; i < nt; i++) heaps[i] = kd_heap_new(k, host->alloc);
    ptrdiff_t *rows = (ptrdiff_t *) host->alloc(max_t, sizeof(ptrdiff_t));
    ptrdiff_t *key = (ptrdiff_t *) host->alloc(max_q, sizeof(ptrdiff_t));
    ptrdiff_t *ord = (ptrdiff_t *) host->alloc(max_q, sizeof(ptrdiff_t));
    ptrdiff_t *count = (ptrdiff_t *) host->alloc(max_t + 1, sizeof(ptrdiff_t));
    /* a cell's query points and answers in the order the queries run (contiguous reads and
     * writes in the search; the answers go to the caller's columns once, in row order) */
    double *qpts = (double *) host->alloc((size_t) max_q * d, sizeof(double));
    int *bidx = (int *) host->alloc((size_t) max_q * k, sizeof(int));
    double *bdd = (double *) host->alloc((size_t) max_q * k, sizeof(double));
    double *bd2 = d2 ? (double *) host->alloc((size_t) max_q * k, sizeof(double)) : NULL;
    double *buf = (double *) host->alloc((size_t) d, sizeof(double));
    for (ptrdiff_t s = 0; s < n_cells; s++) {
        const ptrdiff_t n_t = toff[s + 1] - toff[s], n_q = qoff[s + 1] - qoff[s];
        if (n_t == 0 || n_q == 0) continue;
        for (ptrdiff_t i = 0; i < n_t; i++) rows[i] = to[toff[s] + i] - 1;
        kd_reuse(&t, n_t);
        t.interrupted = NULL;
        kd_build(&t, xt, Nt, rows);
        /* the queries in the order of the leaf each falls in (kd_query_leaf()) */
        for (ptrdiff_t i = 0; i <= n_t; i++) count[i] = 0;
        for (ptrdiff_t e = 0; e < n_q; e++) {
            const ptrdiff_t r = qo[qoff[s] + e] - 1;
            for (int j = 0; j < d; j++) buf[j] = xq[r + (size_t) j * Nq];
            key[e] = t.nodes[kd_query_leaf(&t, buf)].begin;
            count[key[e] + 1]++;
        }
        for (ptrdiff_t i = 0; i < n_t; i++) count[i + 1] += count[i];
        for (ptrdiff_t e = 0; e < n_q; e++) {
            const ptrdiff_t r = qo[qoff[s] + e] - 1, at = count[key[e]]++;
            ord[at] = r;
            key[e] = at; /* from here: where query e runs */
            for (int j = 0; j < d; j++) qpts[at * d + j] = xq[r + (size_t) j * Nq];
        }
        const int kk = n_t < k ? (int) n_t : k;
        for (ptrdiff_t from = 0; from < n_q; from += NN2_CHUNK) {
            const ptrdiff_t to_ = from + NN2_CHUNK < n_q ? from + NN2_CHUNK : n_q;
            const int nts = threads_for(nt, (double) (to_ - from));
            (void) nts;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nts) schedule(dynamic, 64)
#endif
            for (ptrdiff_t e = from; e < to_; e++) {
                const double *q = qpts + e * d;
                kd_heap *h = &heaps[THREAD_ID];
                kd_heap_init(h, kk, h->pos, h->d2, h->seq, h->stack);
                kd_knn_point(&t, q, h);
                for (int m = 0; m < kk; m++) {
                    const ptrdiff_t j = t.row[h->pos[m]];
                    bidx[e * kk + m] = (int) (j + 1);
                    bdd[e * kk + m] = pair ? pair(pair_ctx, q, ord[e], t.pts + h->pos[m] * d, j) : h->d2[m];
                    if (bd2) bd2[e * kk + m] = h->d2[m];
                }
            }
            host_pause(host, 0);
        }
        for (ptrdiff_t e = 0; e < n_q; e++) {
            const ptrdiff_t r = qo[qoff[s] + e] - 1, at = key[e];
            for (int m = 0; m < kk; m++) {
                idx[r + (ptrdiff_t) m * Nq] = bidx[at * kk + m];
                dd[r + (ptrdiff_t) m * Nq] = bdd[at * kk + m];
                if (d2) d2[r + (ptrdiff_t) m * Nq] = bd2[at * kk + m];
            }
        }
    }
    return NULL;
}

void nn2_list_ranks(const double *dd, ptrdiff_t n, int k, const int *size, const double *xq,
                    const double *xown, int d, const int *want, double cap, double na, double *buf,
                    double *o)
{
    double *q = buf, *own = buf + d;
    for (ptrdiff_t r = 0; r < n; r++) {
        if (want[r] != 1) continue;
        const ptrdiff_t kk = size[r] < k ? size[r] : k;
        for (int j = 0; j < d; j++) {
            q[j] = xq[r + (size_t) j * n];
            own[j] = xown[r + (size_t) j * n];
        }
        /* the same sum as the descents' (kd_point_d2()), hence the same comparisons */
        const double down = kd_point_d2(q, own, d);
        double lt = 0, le = 0;
        for (ptrdiff_t m = 0; m < kk; m++) {
            const double x = dd[r + m * n];
            lt += x < down;
            le += x <= down;
        }
        const int whole = size[r] <= k;
        if ((lt < cap && !whole && le >= kk) || (kk < 2 && size[r] >= 2)) {
            o[r] = na;
            continue;
        }
        o[r] = lt < cap ? lt : cap;
        if (lt < cap) o[r + n] = le;
        o[r + 2 * n] = kk >= 1 ? sqrt(dd[r]) : INFINITY;
        o[r + 3 * n] = kk >= 2 ? sqrt(dd[r + n]) : INFINITY;
    }
}
