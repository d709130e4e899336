/* Shortest augmenting path assignment, dense and sparse: see assign.h. */
#include <math.h>
#include <stdlib.h>
#include "assign.h"
#include "kdtree.h"
#include "threads.h"

#define POLL_WORK ((double) (1 << 20))

static inline void work_done(assign_work *w, double units)
{
    w->since_poll += units;
    if (w->since_poll >= POLL_WORK) {
        w->since_poll = 0.0;
        if (w->host) host_pause(w->host, 0);
    }
}

/* Update the duals after a search for row `cur` that ended at distance min_val, then flip
 * the path ending at column `sink`. */
static void augment(ptrdiff_t cur, ptrdiff_t sink, double min_val, ptrdiff_t n_sr,
                    ptrdiff_t n_sc, ptrdiff_t *col4row, double *u, double *v, assign_work *w)
{
    u[cur] += min_val;
    for (ptrdiff_t t = 0; t < n_sr; t++) {
        ptrdiff_t i = w->sr_list[t];
        if (i != cur) u[i] += min_val - w->shortest[col4row[i]];
    }
    for (ptrdiff_t t = 0; t < n_sc; t++) {
        ptrdiff_t j = w->sc_list[t];
        v[j] -= min_val - w->shortest[j];
    }
    ptrdiff_t j = sink;
    for (;;) {
        ptrdiff_t i = w->path[j];
        w->row4col[j] = i;
        ptrdiff_t t = col4row[i];
        col4row[i] = j;
        j = t;
        if (i == cur) break;
    }
}

/* ---- dense ------------------------------------------------------------------------------ */

ptrdiff_t assign_dense(ptrdiff_t nr, ptrdiff_t nc, int d, const double *a, const double *b,
                       ptrdiff_t *col4row, double *u, double *v, assign_work *w)
{
    ptrdiff_t unmatched = 0;
    for (ptrdiff_t i = 0; i < nr; i++) { u[i] = 0.0; col4row[i] = -1; w->sr[i] = 0; }
    for (ptrdiff_t j = 0; j < nc; j++) {
        v[j] = 0.0; w->row4col[j] = -1; w->path[j] = -1; w->sc[j] = 0;
        w->shortest[j] = INFINITY;
    }
    for (ptrdiff_t cur = 0; cur < nr; cur++) {
        ptrdiff_t n_rem = nc, n_sr = 0, n_sc = 0, sink = -1, i = cur;
        double min_val = 0.0;
        /* columns in increasing order, taken from the back: ties go to the lowest index */
        for (ptrdiff_t t = 0; t < nc; t++) w->remaining[t] = nc - 1 - t;
        while (sink < 0) {
            w->sr[i] = 1;
            w->sr_list[n_sr++] = i;
            ptrdiff_t best = -1;
            double lowest = INFINITY;
            const double *ai = a + (size_t) i * d;
            for (ptrdiff_t t = 0; t < n_rem; t++) {
                ptrdiff_t j = w->remaining[t];
                double r = min_val + assign_d2(ai, b + (size_t) j * d, d) - u[i] - v[j];
                if (r < w->shortest[j]) { w->path[j] = i; w->shortest[j] = r; }
                if (w->shortest[j] < lowest || (w->shortest[j] == lowest && w->row4col[j] < 0 &&
                                                (best < 0 || w->row4col[w->remaining[best]] >= 0))) {
                    lowest = w->shortest[j];
                    best = t;
                }
            }
            work_done(w, (double) n_rem * (d + 4));
            if (best < 0 || !isfinite(lowest)) break; /* no finite path: leave the row */
            min_val = lowest;
            ptrdiff_t j = w->remaining[best];
            w->sc[j] = 1;
            w->sc_list[n_sc++] = j;
            w->remaining[best] = w->remaining[--n_rem];
            if (w->row4col[j] < 0) sink = j; else i = w->row4col[j];
        }
        if (sink >= 0) augment(cur, sink, min_val, n_sr, n_sc, col4row, u, v, w);
        else unmatched++;
        for (ptrdiff_t t = 0; t < n_sr; t++) w->sr[w->sr_list[t]] = 0;
        for (ptrdiff_t j = 0; j < nc; j++) { w->sc[j] = 0; w->shortest[j] = INFINITY; }
    }
    return unmatched;
}

/* ---- sparse ----------------------------------------------------------------------------- */

/* A group with a free slot (it ends a search). */
static inline int group_free(const assign_work *w, ptrdiff_t g)
{
    return w->used[g] < w->goff[g + 1] - w->goff[g];
}

/* Heap order: shorter distance first; at equal distance a free group first (it ends the
 * search), then the lower index. Keys do not change during one search except by decrease. */
static inline int heap_before(const assign_work *w, ptrdiff_t a, ptrdiff_t b)
{
    double da = w->shortest[a], db = w->shortest[b];
    if (da != db) return da < db;
    int fa = group_free(w, a), fb = group_free(w, b);
    if (fa != fb) return fa;
    return a < b;
}

static void heap_up(assign_work *w, ptrdiff_t p)
{
    ptrdiff_t *h = w->heap, x = h[p];
    while (p > 0) {
        ptrdiff_t q = (p - 1) / 2;
        if (!heap_before(w, x, h[q])) break;
        h[p] = h[q];
        w->heap_pos[h[p]] = p;
        p = q;
    }
    h[p] = x;
    w->heap_pos[x] = p;
}

static void heap_down(assign_work *w, ptrdiff_t p, ptrdiff_t n)
{
    ptrdiff_t *h = w->heap, x = h[p];
    for (;;) {
        ptrdiff_t c = 2 * p + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_before(w, h[c + 1], h[c])) c++;
        if (!heap_before(w, h[c], x)) break;
        h[p] = h[c];
        w->heap_pos[h[p]] = p;
        p = c;
    }
    h[p] = x;
    w->heap_pos[x] = p;
}

/* Update the duals after a search for row group `cur` that ended at distance min_val, then
 * move one record along the path ending at group `sink`: each row group of the path moves
 * one of its records from the column group it was reached through (its slot there, via_slot)
 * to the group that follows it; the sink takes one into a free slot. */
static void augment_groups(ptrdiff_t cur, ptrdiff_t sink, double min_val, ptrdiff_t n_sr,
                           ptrdiff_t n_sc, double *u, double *v, assign_work *w)
{
    u[cur] += min_val;
    for (ptrdiff_t t = 0; t < n_sr; t++) {
        ptrdiff_t h = w->sr_list[t];
        if (h != cur) u[h] += min_val - w->shortest[w->via[h]];
    }
    for (ptrdiff_t t = 0; t < n_sc; t++) {
        ptrdiff_t g = w->sc_list[t];
        v[g] -= min_val - w->shortest[g];
    }
    ptrdiff_t g = sink, s = w->goff[sink] + w->used[sink]++;
    for (;;) {
        ptrdiff_t h = w->path[g];
        w->mem[s] = h;
        if (h == cur) break;
        g = w->via[h];
        s = w->via_slot[h];
    }
    w->rem[cur]--;
}

ptrdiff_t assign_sparse(ptrdiff_t nr, ptrdiff_t nc, const ptrdiff_t *ptr, const int *col,
                        const double *cost, double *u, double *v, assign_work *w, int warm)
{
    ptrdiff_t unmatched = 0;
    if (!warm) {
        for (ptrdiff_t h = 0; h < nr; h++) { u[h] = 0.0; w->rem[h] = w->rsize[h]; w->sr[h] = 0; }
        for (ptrdiff_t j = 0; j < nc; j++) {
            v[j] = 0.0; w->used[j] = 0; w->path[j] = -1; w->sc[j] = 0;
            w->shortest[j] = INFINITY; w->heap_pos[j] = -1;
        }
    }
    for (ptrdiff_t j = 0; j < nc; j++) w->dead[j] = 0;
    for (ptrdiff_t t = 0; t < nr; t++) {
        const ptrdiff_t cur = w->order ? w->order[t] : t;
        while (w->rem[cur] > 0) {
            ptrdiff_t e = ptr[cur];
            while (e < ptr[cur + 1] && w->dead[col[e]]) e++;
            if (e == ptr[cur + 1]) { unmatched += w->rem[cur]; break; } /* as the search would */
            ptrdiff_t n_sr = 0, n_sc = 0, n_touched = 0, n_heap = 0, sink = -1, next = 0;
            double min_val = 0.0, scanned = 0.0;
            w->sr_list[n_sr++] = cur;
            w->sr[cur] = 1;
            for (;;) {
                /* the row groups reached (at min_val): cur, or those of the group last taken */
                while (next < n_sr) {
                    ptrdiff_t h = w->sr_list[next++];
                    for (ptrdiff_t e = ptr[h]; e < ptr[h + 1]; e++) {
                        ptrdiff_t j = col[e];
                        if (w->sc[j]) continue;
                        double r = min_val + cost[e] - u[h] - v[j];
                        if (r < w->shortest[j]) {
                            if (w->heap_pos[j] < 0) {
                                if (!isfinite(w->shortest[j])) w->touched[n_touched++] = j;
                                w->shortest[j] = r;
                                w->path[j] = h;
                                w->heap[n_heap] = j;
                                w->heap_pos[j] = n_heap;
                                heap_up(w, n_heap++);
                            } else {
                                w->shortest[j] = r;
                                w->path[j] = h;
                                heap_up(w, w->heap_pos[j]);
                            }
                        }
                    }
                    scanned += (double) (ptr[h + 1] - ptr[h]) + 1.0;
                }
                if (!n_heap) break; /* no augmenting path over the candidate edges */
                ptrdiff_t j = w->heap[0];
                w->heap_pos[j] = -1;
                if (--n_heap) {
                    w->heap[0] = w->heap[n_heap];
                    w->heap_pos[w->heap[0]] = 0;
                    heap_down(w, 0, n_heap);
                }
                min_val = w->shortest[j];
                w->sc[j] = 1;
                w->sc_list[n_sc++] = j;
                if (group_free(w, j)) { sink = j; break; }
                for (ptrdiff_t s = w->goff[j]; s < w->goff[j] + w->used[j]; s++) {
                    ptrdiff_t h = w->mem[s];
                    if (w->sr[h]) continue;
                    w->sr[h] = 1;
                    w->via[h] = j;
                    w->via_slot[h] = s;
                    w->sr_list[n_sr++] = h;
                }
            }
            for (ptrdiff_t t = 0; t < n_sr; t++) w->sr[w->sr_list[t]] = 0;
            if (sink >= 0) augment_groups(cur, sink, min_val, n_sr, n_sc, u, v, w);
            else {
                unmatched += w->rem[cur];
                for (ptrdiff_t t = 0; t < n_sc; t++) w->dead[w->sc_list[t]] = 1;
            }
            for (ptrdiff_t t = 0; t < n_sc; t++) w->sc[w->sc_list[t]] = 0;
            for (ptrdiff_t t = 0; t < n_heap; t++) w->heap_pos[w->heap[t]] = -1;
            for (ptrdiff_t t = 0; t < n_touched; t++) w->shortest[w->touched[t]] = INFINITY;
            work_done(w, scanned * 8.0);
            if (sink < 0) break;
        }
    }
    return unmatched;
}

/* ---- the dual bound over every column -------------------------------------------------- */

void assign_node_weights(const kd_tree *t, const double *wpos, double *nodew)
{
    for (int v = 0; v < t->n_nodes; v++) {
        double m = INFINITY;
        for (ptrdiff_t p = t->nodes[v].begin; p < t->nodes[v].end; p++) if (wpos[p] < m) m = wpos[p];
        nodew[v] = m;
    }
}

/* Insert value x of tree position p into the sorted list val, pos of K: equal values keep
 * the order they came in. */
static inline void knn_insert(double *val, ptrdiff_t *pos, int K, double x, ptrdiff_t p)
{
    int m = K - 1;
    while (m > 0 && x < val[m - 1]) { val[m] = val[m - 1]; pos[m] = pos[m - 1]; m--; }
    val[m] = x;
    pos[m] = p;
}

/* assign_weighted_knn(), the ns tree positions `seed` (distinct) taken first, their points
 * skipped in the search (mark: a byte per tree position, all 0, left so): the same K least
 * values; at equal values the order may differ (the seeds come first). */
static void weighted_knn(const kd_tree *t, const double *nodew, const double *wpos, const double *q,
                         int K, double *val, ptrdiff_t *pos, kd_item *st, const ptrdiff_t *seed, int ns,
                         unsigned char *mark)
{
    const int d = t->d;
    for (int m = 0; m < K; m++) { val[m] = INFINITY; pos[m] = -1; }
    if (t->n == 0) return;
    for (int e = 0; e < ns; e++) {
        const ptrdiff_t p = seed[e];
        const double x = kd_point_d2(q, t->pts + p * d, d) + wpos[p];
        mark[p] = 1;
        if (x < val[K - 1]) knn_insert(val, pos, K, x, p);
    }
    int sp = 0;
    st[sp].node = 0;
    st[sp].bd = kd_box_d2(t, 0, q) + nodew[0];
    sp++;
    while (sp) {
        kd_item it = st[--sp];
        if (!(it.bd < val[K - 1])) continue;
        const kd_node *nd = t->nodes + it.node;
        if (nd->left < 0) {
            for (ptrdiff_t p = nd->begin; p < nd->end; p++) {
                double x = kd_point_d2(q, t->pts + p * d, d) + wpos[p];
                /* equal values keep the tree order */
                if (x < val[K - 1] && !(ns && mark[p])) knn_insert(val, pos, K, x, p);
            }
        } else {
            double bl = kd_box_d2(t, nd->left, q) + nodew[nd->left];
            double br = kd_box_d2(t, nd->right, q) + nodew[nd->right];
            /* the nearer child is popped first */
            if (bl <= br) {
                st[sp].node = nd->right; st[sp].bd = br; sp++;
                st[sp].node = nd->left; st[sp].bd = bl; sp++;
            } else {
                st[sp].node = nd->left; st[sp].bd = bl; sp++;
                st[sp].node = nd->right; st[sp].bd = br; sp++;
            }
        }
    }
    for (int e = 0; e < ns; e++) mark[seed[e]] = 0;
}

void assign_weighted_knn(const kd_tree *t, const double *nodew, const double *wpos, const double *q,
                         int K, double *val, ptrdiff_t *pos, kd_item *st)
{
    weighted_knn(t, nodew, wpos, q, K, val, pos, st, NULL, 0, NULL);
}

ptrdiff_t assign_ties_at(const kd_tree *t, const double *q, double r2, ptrdiff_t cap, ptrdiff_t *out,
                         kd_item *st)
{
    const int d = t->d;
    ptrdiff_t count = 0;
    if (t->n == 0 || cap <= 0) return 0;
    int sp = 0;
    st[sp].node = 0;
    st[sp].bd = kd_box_d2(t, 0, q);
    sp++;
    while (sp && count < cap) {
        kd_item it = st[--sp];
        if (it.bd > r2) continue;
        const kd_node *nd = t->nodes + it.node;
        if (nd->left < 0) {
            for (ptrdiff_t p = nd->begin; p < nd->end && count < cap; p++)
                if (kd_point_d2(q, t->pts + p * d, d) == r2) out[count++] = p;
        } else {
            st[sp].node = nd->left; st[sp].bd = kd_box_d2(t, nd->left, q); sp++;
            st[sp].node = nd->right; st[sp].bd = kd_box_d2(t, nd->right, q); sp++;
        }
    }
    return count;
}

/* ---- the cells of attack_assignment() and the nearest points within cells --------------- */

#define ASSIGN_LEAF_SIZE 8
/* Candidates per point, at most, as a multiple of `cand`, when there are ties. */
#define TIE_FACTOR 4
#define QUERY_CHUNK ((ptrdiff_t) 1 << 15)

typedef struct {
    int d;
    const double *x;   /* global column-major matrix */
    ptrdiff_t ldx;     /* its rows */
    const int *rows;   /* the cell's rows, 1-based */
    ptrdiff_t n;
} side;

/* Point-major copy of a side. */
static void gather(const side *s, double *out)
{
    for (ptrdiff_t i = 0; i < s->n; i++) {
        ptrdiff_t r = s->rows[i] - 1;
        for (int j = 0; j < s->d; j++) out[(size_t) i * s->d + j] = s->x[r + j * s->ldx];
    }
}

/* Tree t over the points of side ts: its rows0, 0-based rows of ts->x. */
static void build_side(kd_tree *t, const side *ts, const ptrdiff_t *rows0, const kernel_host *host)
{
    kd_reuse(t, ts->n);
    t->interrupted = NULL;
    kd_build(t, ts->x, ts->ldx, rows0);
    host_pause(host, 0);
}

/* The k nearest points of tree t (over side ts, built by build_side()) to every query point
 * (point-major q), and up to (TIE_FACTOR - 1) k more at the distance of the k-th: their
 * local indices into nb[i * k * TIE_FACTOR ...], padded with -1. `loc` maps rows of ts->x to
 * local indices. The queries run in the order `order` (a permutation of 0..nq-1, NULL for
 * 0, 1, ...; the leaf order of the queries' own tree keeps consecutive searches in the same
 * branches), which the results do not depend on. One search of the k + 1 nearest tells whether there are
 * such ties (the order is total, so its first k are the k nearest). next_d2 (or NULL): per
 * query, the least distance of a point not among its k nearest (Inf when there is none), a
 * lower bound of the distance of every point off its list. heaps: room for k + 1. */
static void knn_edges(const kd_tree *t, const side *ts, const ptrdiff_t *order, const double *q,
                      ptrdiff_t nq, int k, kd_heap *heaps, int nt, const int *loc, int *nb,
                      double *next_d2, const kernel_host *host)
{
    ptrdiff_t *tie_buf = (ptrdiff_t *) host->alloc((size_t) nt * k * TIE_FACTOR, sizeof(ptrdiff_t));
    for (ptrdiff_t c0 = 0; c0 < nq; c0 += QUERY_CHUNK) {
        ptrdiff_t c1 = c0 + QUERY_CHUNK < nq ? c0 + QUERY_CHUNK : nq;
        int ntc = threads_for(nt, (double) (c1 - c0));
        (void) ntc;
#ifdef _OPENMP
#pragma omp parallel for num_threads(ntc) schedule(static)
#endif
        for (ptrdiff_t c = c0; c < c1; c++) {
            const ptrdiff_t i = order ? order[c] : c;
            kd_heap *h = heaps + THREAD_ID;
            const int more = k < t->n;
            kd_heap_init(h, k + more, h->pos, h->d2, h->seq, h->stack);
            const double *qi = q + (size_t) i * ts->d;
            kd_knn_point(t, qi, h);
            int *out = nb + (size_t) i * k * TIE_FACTOR;
            for (int m = 0; m < k; m++) out[m] = loc[t->row[h->pos[m]]];
            int m = k;
            const double r2 = h->d2[k - 1];
            if (next_d2) next_d2[i] = more ? h->d2[k] : INFINITY;
            if (more && h->d2[k] == r2) {
                /* points tied with the k-th (identical rows, or column groups at the same
                 * distance) are candidates too, or rows near them compete for k of them */
                ptrdiff_t *tie = tie_buf + (size_t) THREAD_ID * k * TIE_FACTOR;
                ptrdiff_t nt2 = assign_ties_at(t, qi, r2, (ptrdiff_t) k * TIE_FACTOR, tie, h->stack);
                for (ptrdiff_t e = 0; e < nt2 && m < k * TIE_FACTOR; e++) {
                    int c = loc[t->row[tie[e]]];
                    int dup = 0;
                    for (int f = 0; f < k; f++) if (out[f] == c) { dup = 1; break; }
                    if (!dup) out[m++] = c;
                }
            }
            for (; m < k * TIE_FACTOR; m++) out[m] = -1;
        }
        host_pause(host, 0);
    }
}

/* The kpr least values |q - b|^2 - v (v <= 0, the weights wpos by tree position) over every
 * column group of the tree, into vh, and their column groups into jh (-1 past the groups). */
static void price_group(const kd_tree *tree, const double *nodew, const double *wpos, const int *loc_c,
                        const double *q, int kpr, double *vh, int *jh, ptrdiff_t *pk, kd_item *stack)
{
    assign_weighted_knn(tree, nodew, wpos, q, kpr, vh, pk, stack);
    for (int m = 0; m < kpr; m++) jh[m] = pk[m] >= 0 ? loc_c[tree->row[pk[m]]] : -1;
}

/* Point order for grouping: by coordinates, then by index (a total order). */
static inline int point_before(const double *B, int d, ptrdiff_t a, ptrdiff_t b)
{
    const double *pa = B + (size_t) a * d, *pb = B + (size_t) b * d;
    for (int j = 0; j < d; j++) if (pa[j] != pb[j]) return pa[j] < pb[j];
    return a < b;
}

/* The groups of identical points of B (n points, point-major): gid[j] the group of point j,
 * groups numbered by their first point; goff (ng + 1 offsets) and gcol (the points of each
 * group in increasing order) its slots. Sorts by a bottom-up merge sort on idx and tmp (n
 * each). Returns the number of groups. */
static ptrdiff_t group_points(const double *B, ptrdiff_t n, int d, ptrdiff_t *gid, ptrdiff_t *goff,
                              ptrdiff_t *gcol, ptrdiff_t *idx, ptrdiff_t *tmp)
{
    for (ptrdiff_t j = 0; j < n; j++) idx[j] = j;
    for (ptrdiff_t width = 1; width < n; width *= 2) {
        for (ptrdiff_t lo = 0; lo < n; lo += 2 * width) {
            ptrdiff_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            ptrdiff_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) tmp[o++] = point_before(B, d, idx[b], idx[a]) ? idx[b++] : idx[a++];
            while (a < mid) tmp[o++] = idx[a++];
            while (b < hi) tmp[o++] = idx[b++];
        }
        ptrdiff_t *t = idx; idx = tmp; tmp = t;
    }
    /* runs of equal points: the first of a run (its least index) names it */
    for (ptrdiff_t t = 0; t < n; t++) {
        ptrdiff_t j = idx[t];
        int same = t > 0;
        for (int c = 0; same && c < d; c++) same = B[(size_t) j * d + c] == B[(size_t) idx[t - 1] * d + c];
        tmp[j] = same ? tmp[idx[t - 1]] : j;
    }
    ptrdiff_t ng = 0;
    for (ptrdiff_t j = 0; j < n; j++) gid[j] = tmp[j] == j ? ng++ : -1;
    for (ptrdiff_t g = 0; g <= ng; g++) goff[g] = 0;
    for (ptrdiff_t j = 0; j < n; j++) { gid[j] = gid[tmp[j]]; goff[gid[j] + 1]++; }
    for (ptrdiff_t g = 0; g < ng; g++) goff[g + 1] += goff[g];
    for (ptrdiff_t g = 0; g < ng; g++) idx[g] = goff[g];
    for (ptrdiff_t j = 0; j < n; j++) gcol[idx[gid[j]]++] = j;
    return ng;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *) a, y = *(const int *) b;
    return (x > y) - (x < y);
}

typedef struct {
    ptrdiff_t *ptr;
    int *col;
    double *cost;
} csr;

/* Two stores of edges that csr_add() writes in turn (the one its input is not in), each
 * grown by half again when too small: the memory of the edges stays within a few times that
 * of the largest edge set, whatever the rounds of expansion and column generation and the
 * cells (new memory at every call held them all until the call returns: 2.5 GB on noisy
 * MDAV of groups of 30 at 1e6). ptr: max_rows + 1 each. */
typedef struct {
    ptrdiff_t *ptr[2];
    int *col[2];
    double *cost[2];
    ptrdiff_t cap[2];
} csr_pool;

/* The edges of g and the extra edges (xr[t], xc[t]), t < nx (rows increasing), per row
 * sorted and unique, with their costs; in the store of pool that g is not in. */
static csr csr_add(const csr *g, ptrdiff_t nr, const ptrdiff_t *xr, const int *xc, ptrdiff_t nx,
                   const double *A, const double *B, int d, csr_pool *pool, const kernel_host *host)
{
    const int o = g->col == pool->col[0] ? 1 : 0;
    const ptrdiff_t nnz = g->ptr[nr] + nx;
    if (nnz >= pool->cap[o]) { /* (never NULL: the stores stay apart) */
        pool->cap[o] = nnz + nnz / 2 + 1;
        pool->col[o] = (int *) host_grow(host, pool->col[o], pool->cap[o], sizeof(int));
        pool->cost[o] = (double *) host_grow(host, pool->cost[o], pool->cap[o], sizeof(double));
    }
    csr h = {pool->ptr[o], pool->col[o], pool->cost[o]};
    ptrdiff_t e2 = 0, t = 0;
    for (ptrdiff_t i = 0; i < nr; i++) {
        h.ptr[i] = e2;
        ptrdiff_t b0 = e2;
        for (ptrdiff_t e = g->ptr[i]; e < g->ptr[i + 1]; e++) h.col[e2++] = g->col[e];
        int added = 0;
        while (t < nx && xr[t] == i) { h.col[e2++] = xc[t++]; added = 1; }
        if (added) {
            qsort(h.col + b0, (size_t) (e2 - b0), sizeof(int), cmp_int);
            ptrdiff_t e3 = b0;
            for (ptrdiff_t e = b0; e < e2; e++)
                if (e == b0 || h.col[e] != h.col[e - 1]) h.col[e3++] = h.col[e];
            e2 = e3;
            for (ptrdiff_t e = b0; e < e2; e++)
                h.cost[e] = assign_d2(A + (size_t) i * d, B + (size_t) h.col[e] * d, d);
        } else {
            for (ptrdiff_t e = b0, f = g->ptr[i]; e < e2; e++, f++) h.cost[e] = g->cost[f];
        }
        if ((i & 0xFFFF) == 0xFFFF) host_pause(host, 0);
    }
    h.ptr[nr] = e2;
    return h;
}

/* Take every record of the flagged row groups (flag[h]) out of the column groups (the
 * other records keep their order) and give each flagged group the dual u = its least
 * c - v over its edges, so that all its edges have reduced costs >= 0. */
static void unplace(const csr *g, ptrdiff_t nr, ptrdiff_t nc, const unsigned char *flag, double *u,
                    const double *v, assign_work *w)
{
    for (ptrdiff_t j = 0; j < nc; j++) {
        ptrdiff_t o = w->goff[j];
        for (ptrdiff_t s = w->goff[j]; s < w->goff[j] + w->used[j]; s++)
            if (!flag[w->mem[s]]) w->mem[o++] = w->mem[s];
        w->used[j] = o - w->goff[j];
    }
    for (ptrdiff_t h = 0; h < nr; h++) {
        if (!flag[h]) continue;
        w->rem[h] = w->rsize[h];
        double m = INFINITY;
        for (ptrdiff_t e = g->ptr[h]; e < g->ptr[h + 1]; e++) {
            double r = g->cost[e] - v[g->col[e]];
            if (r < m) m = r;
        }
        u[h] = m;
    }
}

/* Extra edges (row, column) of cap pairs, grown half as large again when too small. */
typedef struct {
    ptrdiff_t cap;
    ptrdiff_t *xr;
    int *xc;
} edge_buf;

/* While records are unmatched (left > 0): every row group with unmatched records gets twice
 * as many nearest column groups (kr[h] per row group; tree: the column groups' points, nc of
 * them; the new pairs in ex) and is placed again: warm when none of its records is placed (its
 * u is 0 and every v <= 0, so its new edges have reduced costs >= 0), else the whole cell
 * again. A row group with every column group as a candidate is always placed, so this ends.
 * Returns 0, or -1 if a solve lost records (an internal error). */
static ptrdiff_t expand_until_matched(csr *g, ptrdiff_t left, ptrdiff_t nr, ptrdiff_t nc, int d,
                                      const double *A, const double *B, const kd_tree *tree,
                                      const int *loc_c, int *kr, double *u, double *v,
                                      assign_work *w, csr_pool *pool, edge_buf *ex,
                                      const kernel_host *host)
{
    while (left > 0) {
        ptrdiff_t extra = 0;
        int kmax = 0, cold = 0;
        for (ptrdiff_t h = 0; h < nr; h++) {
            if (w->rem[h] == 0) continue;
            if (w->rem[h] < w->rsize[h]) cold = 1;
            kr[h] = 2 * kr[h] < nc ? 2 * kr[h] : (int) nc;
            extra += kr[h];
            if (kr[h] > kmax) kmax = kr[h];
        }
        kd_heap h1 = kd_heap_new(kmax, host->alloc);
        if (extra > ex->cap) {
            ex->cap = extra + extra / 2;
            ex->xr = (ptrdiff_t *) host_grow(host, ex->xr, ex->cap, sizeof(ptrdiff_t));
            ex->xc = (int *) host_grow(host, ex->xc, ex->cap, sizeof(int));
        }
        ptrdiff_t *xr = ex->xr, nx = 0;
        int *xc = ex->xc;
        for (ptrdiff_t h = 0; h < nr; h++) {
            if (w->rem[h] == 0) continue;
            u[h] = 0.0;
            kd_heap_init(&h1, kr[h], h1.pos, h1.d2, h1.seq, h1.stack);
            kd_knn_point(tree, A + (size_t) h * d, &h1);
            for (int m = 0; m < kr[h]; m++) { xr[nx] = h; xc[nx++] = loc_c[tree->row[h1.pos[m]]]; }
            if ((nx & 0xFFF) == 0xFFF) host_pause(host, 0);
        }
        *g = csr_add(g, nr, xr, xc, nx, A, B, d, pool, host);
        ptrdiff_t before = left;
        left = assign_sparse(nr, nc, g->ptr, g->col, g->cost, u, v, w, !cold);
        if (!cold && left > before) return -1; /* an internal error */
    }
    return 0;
}

/* A round of column generation in a square cell solves the cell again from zero duals (not
 * warm) when at least 1 record in COLD_SHARE has a better edge or the round did not lower the
 * cost (and the auction did not run). */
#define COLD_SHARE 8.0

/* The edges of a row group of hsz records in a round of column generation: kpr per record,
 * doubled sh times, at most ng (every column group). */
static inline ptrdiff_t round_edges(int kpr, ptrdiff_t hsz, int sh, ptrdiff_t ng)
{
    ptrdiff_t kh = (ptrdiff_t) kpr * hsz;
    for (int t = 0; t < sh && kh < ng; t++) kh *= 2;
    return kh < ng ? kh : ng;
}

/* ---- the auction start ------------------------------------------------------------------ */

/* The auction runs in a square cell whose first sparse solve leaves at least 1 record in
 * AUCTION_SHARE unmatched. */
#define AUCTION_SHARE 20.0
/* Groups of the candidate lists of the auction, per row group, as a multiple of `cand`. */
#define AUCTION_LIST 2
/* Epsilon-scaling: the first epsilon is AUCTION_FIRST times the mean cost of the last group
 * of a row group's first list, each phase divides it by AUCTION_FACTOR, the last is
 * AUCTION_LAST times the first (the exact solve that follows needs near-optimal duals, not
 * optimal ones: it and the rounds of column generation prove the optimum whatever the duals;
 * 1e-3 takes 5 phases instead of 9, and half the bids, on noisy MDAV at 1e5, for the same
 * optimum). */
#define AUCTION_FIRST 4.0
#define AUCTION_FACTOR 8.0
#define AUCTION_LAST 1e-3

typedef struct {
    ptrdiff_t nh, ng, nr;
    int d, L;
    const double *Ag, *Bg;       /* row and column group points */
    const ptrdiff_t *hid, *goff; /* row group of each record; column group slots */
    double *price;               /* per slot, a min-heap per column group */
    ptrdiff_t *owner;            /* per slot: the record holding it, or -1 */
    ptrdiff_t *taken;            /* per record: its column group, or -1 */
    double *paid;                /* per record: the price of its slot */
    /* the column groups' tree; wpos the least price of the group at each tree position,
     * nodew its least per node, kept exact as prices rise */
    const kd_tree *tree;
    const int *loc_c;            /* tree rows -> column group */
    double *wpos, *nodew;
    int *parent;                 /* per tree node, -1 for the root */
    ptrdiff_t *gpos;             /* column group -> tree position */
    int *lst;                    /* per row group: L column groups, -1 past the end */
    double *lc, *thr;            /* their costs; the least value of any group off the list */
    double *val;
    ptrdiff_t *pos;
    kd_item *stack;
    /* the prices' quadratic trend f(y) = sum_j gam[j] y_j^2 + bet[j] y_j (auction_fit(); fitted
     * 0 while there is none) and the tree tq of the groups' points scaled by
     * sqrt(1 + gam[j]), with a last coordinate sqrt(price - f - low) at the fit, weighted by
     * the price's rise since (wq per position, nq per node, kept exact as prices rise):
     * |q - y|^2 + price(y) is the distance in tq from a point of q (last coordinate 0), plus
     * that weight, plus low and a term of q alone */
    int fitted;
    double *gam, *bet, *fg;      /* d, d; per column group: f + low + its lift^2 */
    double low;                  /* the least price - f at the fit */
    kd_tree tq;
    double *tx, *wq, *nq;        /* ng x (d + 1), column-major; per position; per node */
    int *parent_q;
    ptrdiff_t *gq, *rows;        /* column group -> tq position; 0 .. ng - 1 */
    unsigned char *mark;         /* per tq position, 0 but in a search (weighted_knn()) */
    double *fval;                /* L + 1 values of a search of tq, their positions in fpos, */
    ptrdiff_t *fpos;             /* their exact values and groups in eval, egrp */
    double *eval;
    ptrdiff_t *egrp;
    double *feat, *qm;           /* 2 d + 1 and d + 1 of scratch */
    double *fit_a, *fit_b;       /* (2 d + 1)^2 and 2 d + 1 of scratch */
    ptrdiff_t since_fit;         /* lists made since the last fit */
    /* the buffers above, made by auction_alloc() for every cell of the call; the lists' and
     * the candidates' (queue, first, xr, xc: the auction_restart()'s own) grown when a cell
     * needs more */
    ptrdiff_t cap, cap_lst, cap_x;
    ptrdiff_t *queue, *xr;
    double *first;
    int *xc;
} auction;

/* Buffers of the auction for cells of up to n records on either side (and so up to n row
 * groups, column groups and slots), lists of up to Lmax groups and trees of up to `nodes`
 * nodes, made once on the first auction of assign_cells() and used by each cell after:
 * memory from host->alloc is held until assign_cells() returns, so buffers made per cell
 * added up over the cells. The lists (row groups x L) and the candidates (row groups x L +
 * records) are made for the first cell's row groups and made again, half as large again
 * as needed, when a cell has more (their memory: at most 4.5 times the largest cell's need). */
static void auction_alloc(auction *a, ptrdiff_t n, int d, int Lmax, size_t nodes, const kernel_host *host)
{
    a->cap = n;
    a->price = (double *) host->alloc(n, sizeof(double));
    a->owner = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    a->taken = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    a->paid = (double *) host->alloc(n, sizeof(double));
    a->parent = (int *) host->alloc(nodes, sizeof(int));
    a->gpos = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    a->thr = (double *) host->alloc(n, sizeof(double));
    a->val = (double *) host->alloc(Lmax, sizeof(double));
    a->pos = (ptrdiff_t *) host->alloc(Lmax, sizeof(ptrdiff_t));
    a->queue = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    a->first = (double *) host->alloc(n, sizeof(double));
    a->gam = (double *) host->alloc(d, sizeof(double));
    a->bet = (double *) host->alloc(d, sizeof(double));
    a->fg = (double *) host->alloc(n, sizeof(double));
    a->tq = kd_new(n, d + 1, ASSIGN_LEAF_SIZE, host->alloc);
    a->tx = (double *) host->alloc((size_t) n * (d + 1), sizeof(double));
    a->wq = (double *) host->alloc(n, sizeof(double));
    a->nq = (double *) host->alloc(kd_max_nodes(n, ASSIGN_LEAF_SIZE), sizeof(double));
    a->parent_q = (int *) host->alloc(kd_max_nodes(n, ASSIGN_LEAF_SIZE), sizeof(int));
    a->gq = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    a->rows = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    a->mark = (unsigned char *) host->alloc(n, 1);
    for (ptrdiff_t p = 0; p < n; p++) a->mark[p] = 0;
    a->fval = (double *) host->alloc(Lmax + 1, sizeof(double));
    a->fpos = (ptrdiff_t *) host->alloc(Lmax + 1, sizeof(ptrdiff_t));
    a->eval = (double *) host->alloc(Lmax + 1, sizeof(double));
    a->egrp = (ptrdiff_t *) host->alloc(Lmax + 1, sizeof(ptrdiff_t));
    const int nf = 2 * d + 1;
    a->fit_a = (double *) host->alloc((size_t) nf * nf, sizeof(double));
    a->fit_b = (double *) host->alloc(nf, sizeof(double));
    a->feat = (double *) host->alloc(nf, sizeof(double));
    a->qm = (double *) host->alloc(d + 1, sizeof(double));
    a->cap_lst = a->cap_x = 0;
}

/* The least weight of the leaf holding tree position q (its weight just changed), and of
 * the nodes above it, as far as it changes. */
static void weight_up(const kd_tree *t, const int *parent, const double *wpos, double *nodew, ptrdiff_t q)
{
    int v = (int) t->leaf_of[q];
    double m = INFINITY;
    for (ptrdiff_t r = t->nodes[v].begin; r < t->nodes[v].end; r++) if (wpos[r] < m) m = wpos[r];
    nodew[v] = m;
    while ((v = parent[v]) >= 0) {
        double l = nodew[t->nodes[v].left], r = nodew[t->nodes[v].right];
        m = l < r ? l : r;
        if (m == nodew[v]) break;
        nodew[v] = m;
    }
}

static void tree_parents(const kd_tree *t, int *parent)
{
    parent[0] = -1;
    for (int p = 0; p < t->n_nodes; p++)
        if (t->nodes[p].left >= 0) parent[t->nodes[p].left] = parent[t->nodes[p].right] = p;
}

/* Restore the min-heap of column group g after the price of its top slot rose. */
static void slot_down(auction *a, ptrdiff_t g)
{
    const ptrdiff_t b = a->goff[g], n = a->goff[g + 1] - b;
    double *pr = a->price + b;
    ptrdiff_t *ow = a->owner + b, p = 0;
    const double x = pr[0];
    const ptrdiff_t o = ow[0];
    for (;;) {
        ptrdiff_t c = 2 * p + 1;
        if (c >= n) break;
        if (c + 1 < n && pr[c + 1] < pr[c]) c++;
        if (!(pr[c] < x)) break;
        pr[p] = pr[c];
        ow[p] = ow[c];
        p = c;
    }
    pr[p] = x;
    ow[p] = o;
    /* the node weights on the path of the group's tree positions */
    a->wpos[a->gpos[g]] = pr[0];
    weight_up(a->tree, a->parent, a->wpos, a->nodew, a->gpos[g]);
    if (a->fitted) {
        a->wq[a->gq[g]] = pr[0] - a->fg[g];
        weight_up(&a->tq, a->parent_q, a->wq, a->nq, a->gq[g]);
    }
}

/* Fit the trend f of the groups' least prices by least squares (features y_j^2, y_j and a
 * constant; Cholesky of the normal equations, nf = 2 d + 1 unknowns: A nf x nf and b nf of
 * scratch) and build tq for it. Leaves a->fitted 0 when the equations are singular (a
 * constant column) or the trend makes 1 + gam[j] < AUCTION_FIT_MIN. */
#define AUCTION_FIT_MIN 0.05
/* The trend is fitted again at the start of every phase and after AUCTION_REFIT x (column
 * groups) lists (prices rise most in the first phases; a list the trend cannot prove is
 * searched in the plain tree, so a stale trend costs time, never exactness). */
#define AUCTION_REFIT 0.5
static void auction_fit(auction *a)
{
    const int d = a->d, nf = 2 * d + 1;
    const ptrdiff_t ng = a->ng;
    double *A = a->fit_a, *b = a->fit_b;
    a->fitted = 0;
    a->since_fit = 0;
    for (int i = 0; i < nf * nf; i++) A[i] = 0.0;
    for (int i = 0; i < nf; i++) b[i] = 0.0;
    double *x = a->feat;
    for (ptrdiff_t g = 0; g < ng; g++) {
        const double *y = a->Bg + (size_t) g * d;
        for (int j = 0; j < d; j++) { x[j] = y[j] * y[j]; x[d + j] = y[j]; }
        x[2 * d] = 1.0;
        const double p = a->price[a->goff[g]];
        for (int i = 0; i < nf; i++) {
            b[i] += x[i] * p;
            for (int k = 0; k <= i; k++) A[i * nf + k] += x[i] * x[k];
        }
    }
    /* Cholesky, lower triangle in place, then the two triangular solves */
    for (int i = 0; i < nf; i++) {
        for (int k = 0; k <= i; k++) {
            double sum = A[i * nf + k];
            for (int m = 0; m < k; m++) sum -= A[i * nf + m] * A[k * nf + m];
            if (i == k) {
                if (!(sum > 1e-9 * (1.0 + fabs(A[i * nf + i])))) return;
                A[i * nf + i] = sqrt(sum);
            } else {
                A[i * nf + k] = sum / A[k * nf + k];
            }
        }
    }
    for (int i = 0; i < nf; i++) {
        double sum = b[i];
        for (int m = 0; m < i; m++) sum -= A[i * nf + m] * b[m];
        b[i] = sum / A[i * nf + i];
    }
    for (int i = nf - 1; i >= 0; i--) {
        double sum = b[i];
        for (int m = i + 1; m < nf; m++) sum -= A[m * nf + i] * b[m];
        b[i] = sum / A[i * nf + i];
    }
    for (int j = 0; j < d; j++) {
        if (!isfinite(b[j]) || !isfinite(b[d + j]) || !(1.0 + b[j] >= AUCTION_FIT_MIN)) return;
        a->gam[j] = b[j];
        a->bet[j] = b[d + j];
    }
    double low = INFINITY;
    for (ptrdiff_t g = 0; g < ng; g++) {
        const double *y = a->Bg + (size_t) g * d;
        double f = 0.0;
        for (int j = 0; j < d; j++) {
            f += (a->gam[j] * y[j] + a->bet[j]) * y[j];
            a->tx[g + (size_t) j * ng] = sqrt(1.0 + a->gam[j]) * y[j];
        }
        a->fg[g] = f;
        if (a->price[a->goff[g]] - f < low) low = a->price[a->goff[g]] - f;
    }
    /* the rest of the price above the trend, r >= 0, lifts each point by a last
     * coordinate sqrt(r), so that the tree splits groups of high and low rest apart */
    for (ptrdiff_t g = 0; g < ng; g++) {
        const double r = a->price[a->goff[g]] - a->fg[g] - low, lift = sqrt(r > 0.0 ? r : 0.0);
        a->tx[g + (size_t) d * ng] = lift;
        a->fg[g] += low + lift * lift;
    }
    a->low = low;
    kd_reuse(&a->tq, ng);
    a->tq.interrupted = NULL;
    kd_build(&a->tq, a->tx, ng, a->rows);
    for (ptrdiff_t q = 0; q < ng; q++) {
        const ptrdiff_t g = a->tq.row[q];
        a->gq[g] = q;
        a->wq[q] = a->price[a->goff[g]] - a->fg[g];
    }
    assign_node_weights(&a->tq, a->wq, a->nq);
    tree_parents(&a->tq, a->parent_q);
    a->fitted = 1;
}

/* The list of row group h from tq (a->fitted): the L + 1 least values of tq, their exact
 * values cost + least price computed as auction_list()'s search computes them, and sorted.
 * Returns 0 unless their first L are provably the L least over every column group, with no
 * tie among the first L + 1 (the plain search's order of equal values is its visiting
 * order): every group off the search has a value at least its (L + 1)-th, up to rounding. */
static int auction_list_fit(auction *a, ptrdiff_t h, const double *q)
{
    const int d = a->d, L = a->L;
    /* the row group's last list starts the search, which then prunes from its values: the
     * same L + 1 least values; where groups tie at the (L + 1)-th, another of them may come
     * last, which can change whether the list is proven here, not the list (a list proven
     * here is the plain search's) */
    const int *lh = a->lst + (size_t) h * L;
    int ns = 0;
    for (int t = 0; t < L; t++) if (lh[t] >= 0) a->pos[ns++] = a->gq[lh[t]];
    double *m = a->qm, kq = 0.0;
    for (int j = 0; j < d; j++) {
        const double c = 1.0 + a->gam[j], mj = (2.0 * q[j] - a->bet[j]) / (2.0 * c);
        m[j] = sqrt(c) * mj;
        kq += q[j] * q[j] - c * mj * mj;
    }
    m[d] = 0.0;
    kq += a->low;
    weighted_knn(&a->tq, a->nq, a->wq, m, L + 1, a->fval, a->fpos, a->stack, a->pos, ns, a->mark);
    if (a->fpos[L] < 0) return 0;
    for (int t = 0; t <= L; t++) {
        const ptrdiff_t g = a->tq.row[a->fpos[t]];
        const double x = kd_point_d2(q, a->Bg + (size_t) g * d, d) + a->price[a->goff[g]];
        int u = t;
        while (u > 0 && x < a->eval[u - 1]) { a->eval[u] = a->eval[u - 1]; a->egrp[u] = a->egrp[u - 1]; u--; }
        a->eval[u] = x;
        a->egrp[u] = g;
    }
    for (int t = 1; t <= L; t++) if (!(a->eval[t - 1] < a->eval[t])) return 0;
    const double off = a->fval[L] + kq, last = a->eval[L - 1];
    return last < off - 1e-9 * (1.0 + fabs(off) + fabs(kq) + fabs(last));
}

/* The list of row group h: its L least cost + least slot price over every column group, and
 * the L-th value as the bound of every group off the list (prices only rise). */
static void auction_list(auction *a, ptrdiff_t h)
{
    const int L = a->L;
    const double *q = a->Ag + (size_t) h * a->d;
    int *lh = a->lst + (size_t) h * L;
    double *ch = a->lc + (size_t) h * L;
    if (++a->since_fit >= AUCTION_REFIT * a->ng) auction_fit(a);
    if (a->fitted && (ptrdiff_t) L < a->ng && auction_list_fit(a, h, q)) {
        for (int m = 0; m < L; m++) {
            lh[m] = (int) a->egrp[m];
            ch[m] = assign_d2(q, a->Bg + (size_t) lh[m] * a->d, a->d);
        }
        a->thr[h] = a->eval[L - 1];
        return;
    }
    assign_weighted_knn(a->tree, a->nodew, a->wpos, q, L, a->val, a->pos, a->stack);
    for (int m = 0; m < L; m++) {
        if (a->pos[m] < 0) { lh[m] = -1; continue; }
        lh[m] = a->loc_c[a->tree->row[a->pos[m]]];
        ch[m] = assign_d2(q, a->Bg + (size_t) lh[m] * a->d, a->d);
    }
    a->thr[h] = a->pos[L - 1] >= 0 && (ptrdiff_t) L < a->ng ? a->val[L - 1] : INFINITY;
}

/* The least value (cost + least slot price) of row group h over every column group. */
static double auction_best(auction *a, ptrdiff_t h)
{
    for (int fresh = 0;; fresh = 1) {
        const int *lh = a->lst + (size_t) h * a->L;
        const double *ch = a->lc + (size_t) h * a->L;
        double best = INFINITY;
        for (int m = 0; m < a->L && lh[m] >= 0; m++) {
            double x = ch[m] + a->price[a->goff[lh[m]]];
            if (x < best) best = x;
        }
        if (fresh || best <= a->thr[h]) return best;
        auction_list(a, h);
    }
}

/* One phase of the forward auction (Bertsekas) at epsilon eps: the records whose slot is not
 * within eps of their best value bid again, one at a time; a record takes the cheapest slot
 * of the column group of least cost + price and raises its price by the margin over the
 * second best + eps, and the record it displaces bids again. queue: nr entries. */
static void auction_phase(auction *a, double eps, ptrdiff_t *queue, assign_work *w)
{
    const int L = a->L;
    ptrdiff_t n_queue = 0;
    /* records whose slot is no longer within eps of their best value bid again */
    for (ptrdiff_t i = 0; i < a->nr; i++) {
        const ptrdiff_t g = a->taken[i], h = a->hid[i];
        if (g >= 0 && assign_d2(a->Ag + (size_t) h * a->d, a->Bg + (size_t) g * a->d, a->d) + a->paid[i] <=
            auction_best(a, h) + eps) continue;
        if (g >= 0) {
            for (ptrdiff_t s = a->goff[g]; s < a->goff[g + 1]; s++) if (a->owner[s] == i) { a->owner[s] = -1; break; }
            a->taken[i] = -1;
        }
        queue[n_queue++] = i;
    }
    ptrdiff_t head = 0;
    while (n_queue > 0) {
        const ptrdiff_t i = queue[head];
        head = head + 1 < a->nr ? head + 1 : 0;
        n_queue--;
        const ptrdiff_t h = a->hid[i];
        double best, second, c1 = 0.0;
        ptrdiff_t g1;
        for (int fresh = 0;; fresh = 1) {
            const int *lh = a->lst + (size_t) h * L;
            const double *ch = a->lc + (size_t) h * L;
            best = second = INFINITY;
            g1 = -1;
            for (int m = 0; m < L && lh[m] >= 0; m++) {
                double x = ch[m] + a->price[a->goff[lh[m]]];
                if (x < best) { second = best; best = x; g1 = lh[m]; c1 = ch[m]; }
                else if (x < second) second = x;
            }
            const ptrdiff_t b = a->goff[g1], n = a->goff[g1 + 1] - b;
            if (n > 1) {
                double p2 = a->price[b + 1];
                if (n > 2 && a->price[b + 2] < p2) p2 = a->price[b + 2];
                if (c1 + p2 < second) second = c1 + p2;
            }
            if (fresh || second <= a->thr[h]) break;
            auction_list(a, h);
        }
        const ptrdiff_t b = a->goff[g1];
        a->price[b] += (isfinite(second) ? second - best : 0.0) + eps;
        const ptrdiff_t prev = a->owner[b];
        a->owner[b] = i;
        a->taken[i] = g1;
        a->paid[i] = a->price[b];
        slot_down(a, g1);
        if (prev >= 0) {
            a->taken[prev] = -1;
            ptrdiff_t t = head + n_queue;
            queue[t < a->nr ? t : t - a->nr] = prev;
            n_queue++;
        }
        work_done(w, (double) L + 8.0);
    }
}

/* Near-optimal duals for a square cell whose candidate edges did not prove optimality: an
 * epsilon-scaling auction over every column group (each bid's best and second best value
 * from the record's list of the L groups of least cost + price, searched again in the
 * column groups' tree, weighted by the prices, when a value off the list could beat them).
 * The edges of each row group's final list and of the auction's assignment are added to g
 * and the cell is solved again, exactly, by the augmenting paths started from v = minus the
 * groups' least prices (shifted to <= 0) and u = the least c - v over each row group's
 * edges. tree, wpos, nodew, stack: the column groups' tree and its buffers. Returns the
 * records left unmatched. */
static ptrdiff_t auction_restart(auction *ap, csr *g, ptrdiff_t nh, ptrdiff_t ng, ptrdiff_t nr, int d, int cand,
                                 const double *Ag, const double *Bg, const ptrdiff_t *hid,
                                 const ptrdiff_t *hoff, const ptrdiff_t *hcol, const kd_tree *tree,
                                 const int *loc_c, double *wpos, double *nodew, kd_item *stack,
                                 double *u, double *v, assign_work *w, csr_pool *pool,
                                 const kernel_host *host)
{
    auction a = *ap;
    const ptrdiff_t slots = w->goff[ng];
    a.nh = nh; a.ng = ng; a.nr = nr; a.d = d;
    a.L = (ptrdiff_t) cand * AUCTION_LIST < ng ? cand * AUCTION_LIST : (int) ng;
    a.Ag = Ag; a.Bg = Bg; a.hid = hid; a.goff = w->goff;
    a.tree = tree; a.loc_c = loc_c; a.wpos = wpos; a.nodew = nodew; a.stack = stack;
    if ((ptrdiff_t) nh * a.L > a.cap_lst) {
        a.cap_lst = (ptrdiff_t) nh * a.L + (ptrdiff_t) nh * a.L / 2;
        a.lst = (int *) host_grow(host, a.lst, a.cap_lst, sizeof(int));
        a.lc = (double *) host_grow(host, a.lc, a.cap_lst, sizeof(double));
    }
    if ((ptrdiff_t) nh * a.L + nr > a.cap_x) {
        a.cap_x = (ptrdiff_t) nh * a.L + nr + ((ptrdiff_t) nh * a.L + nr) / 2;
        a.xr = (ptrdiff_t *) host_grow(host, a.xr, a.cap_x, sizeof(ptrdiff_t));
        a.xc = (int *) host_grow(host, a.xc, a.cap_x, sizeof(int));
    }
    *ap = a; /* the buffers, for the next cell */
    ptrdiff_t *queue = a.queue;
    /* first prices: the dual of the affine map of the originals' means and deviations onto
     * the released records' (per variable, x -> m_c + a (x - m_r)): |x - y|^2 + w(y) is
     * least at that map's image for w(y) = (1/a - 1) y^2 + 2 (m_r - m_c / a) y, shifted
     * to a least price of 0 (where the released records spread wider than the originals,
     * as noisy releases do, the auction from zero prices raised them by about that trend) */
    double *first = a.first;
    for (ptrdiff_t g = 0; g < ng; g++) first[g] = 0.0;
    for (int j = 0; j < d; j++) {
        double sr = 0.0, sr2 = 0.0, sc = 0.0, sc2 = 0.0;
        for (ptrdiff_t h = 0; h < nh; h++) {
            const double y = Ag[(size_t) h * d + j], n = (double) w->rsize[h];
            sr += n * y;
            sr2 += n * y * y;
        }
        for (ptrdiff_t g = 0; g < ng; g++) {
            const double y = Bg[(size_t) g * d + j], n = (double) (w->goff[g + 1] - w->goff[g]);
            sc += n * y;
            sc2 += n * y * y;
        }
        const double mr = sr / (double) nr, mc = sc / (double) slots;
        const double vr = sr2 / (double) nr - mr * mr, vc = sc2 / (double) slots - mc * mc;
        if (!(vr > 0.0) || !(vc > 0.0)) continue;
        const double sa = sqrt(vc / vr), gam = 1.0 / sa - 1.0, bet = 2.0 * (mr - mc / sa);
        for (ptrdiff_t g = 0; g < ng; g++) {
            const double y = Bg[(size_t) g * d + j];
            first[g] += (gam * y + bet) * y;
        }
    }
    double least = INFINITY;
    for (ptrdiff_t g = 0; g < ng; g++) if (first[g] < least) least = first[g];
    for (ptrdiff_t g = 0; g < ng; g++)
        for (ptrdiff_t s = w->goff[g]; s < w->goff[g + 1]; s++) { a.price[s] = first[g] - least; a.owner[s] = -1; }
    for (ptrdiff_t i = 0; i < nr; i++) a.taken[i] = -1;
    for (ptrdiff_t p = 0; p < ng; p++) {
        const ptrdiff_t g = loc_c[tree->row[p]];
        a.gpos[g] = p;
        wpos[p] = a.price[w->goff[g]];
    }
    assign_node_weights(tree, wpos, nodew);
    tree_parents(tree, a.parent);
    a.fitted = 0;
    a.since_fit = 0;
    for (ptrdiff_t g = 0; g < ng; g++) a.rows[g] = g;
    for (ptrdiff_t t = 0; t < (ptrdiff_t) nh * a.L; t++) a.lst[t] = -1; /* no list yet */
    double eps0 = 0.0;
    for (ptrdiff_t t = 0; t < nh; t++) {
        const ptrdiff_t h = w->order ? w->order[t] : t;
        auction_list(&a, h);
        eps0 += a.lc[(size_t) h * a.L + a.L - 1];
        if ((t & 0xFFFF) == 0xFFFF) host_pause(host, 0);
    }
    eps0 = eps0 > 0.0 ? AUCTION_FIRST * eps0 / (double) nh : 1.0;
    const double last = eps0 * AUCTION_LAST;
    for (double eps = eps0;; eps /= AUCTION_FACTOR) {
        if (eps < last) eps = last;
        auction_fit(&a);
        auction_phase(&a, eps, queue, w);
        host_pause(host, 0);
        if (eps <= last) break;
    }
    /* the candidates: each row group's list and the groups its records took */
    ptrdiff_t *xr = a.xr, nx = 0;
    int *xc = a.xc;
    for (ptrdiff_t h = 0; h < nh; h++) {
        for (int m = 0; m < a.L && a.lst[(size_t) h * a.L + m] >= 0; m++) { xr[nx] = h; xc[nx++] = a.lst[(size_t) h * a.L + m]; }
        for (ptrdiff_t t = hoff[h]; t < hoff[h + 1]; t++) { xr[nx] = h; xc[nx++] = (int) a.taken[hcol[t]]; }
    }
    *g = csr_add(g, nh, xr, xc, nx, Ag, Bg, d, pool, host);
    double low = INFINITY;
    for (ptrdiff_t j = 0; j < ng; j++) if (a.price[w->goff[j]] < low) low = a.price[w->goff[j]];
    for (ptrdiff_t j = 0; j < ng; j++) {
        v[j] = low - a.price[w->goff[j]];
        w->used[j] = 0; w->path[j] = -1; w->sc[j] = 0; w->shortest[j] = INFINITY; w->heap_pos[j] = -1;
    }
    for (ptrdiff_t h = 0; h < nh; h++) {
        double m = INFINITY;
        for (ptrdiff_t e = g->ptr[h]; e < g->ptr[h + 1]; e++) {
            double r = g->cost[e] - v[g->col[e]];
            if (r < m) m = r;
        }
        u[h] = m;
        w->rem[h] = w->rsize[h];
        w->sr[h] = 0;
    }
    return assign_sparse(nh, ng, g->ptr, g->col, g->cost, u, v, w, 1);
}

/* ---- the greatest optimal dual ---------------------------------------------------------- */

/* Pops of a column group allowed beyond its first before the labels are taken to diverge (a
 * cycle of negative cost: the assignment is not optimal over every column). */
#define CANON_POPS 4

/* The greatest optimal dual v* <= 0 of an optimal assignment, as weights wt = -v* >= 0: the
 * least wt >= 0 with wt(j) >= u(h) - c(h, j) for every row group h and column group j, where
 * u(h) = the largest c(h, k) + wt(k) over the column groups k holding a record of h. It is
 * a function of the cell's points only (the optimal duals are the same set for every optimal
 * assignment, and v* is their greatest), whatever solved it. Computed by a Dijkstra over the
 * column groups from wt = 0: popping k, each row group h in k whose u(h) rose raises to
 * u(h) - c(h, j) every column group j with c(h, j) + wt(j) < u(h) (found by a search of the
 * column groups' tree weighted by wt, or every group when there is no tree; the test in
 * this form, not u(h) - c(h, j) > wt(j), so that rounding cannot raise k itself again and
 * again). The labels are popped in the order of -v0 - wt (v0 <= 0: the solver's optimal
 * dual, for which every raise is a reduced cost >= 0, so a group is popped about once); a
 * group raised after its pop is pushed again. The labels end at the same values whatever
 * the order of the pops, and so whatever v0 and the order of the rows (tested to the bit
 * against permuted rows and columns, and against a Bellman-Ford to rounding). */
typedef struct {
    int d;
    ptrdiff_t ng;
    const double *A, *B;                /* row and column group points, point-major */
    const ptrdiff_t *goff, *used, *mem; /* column group g holds row groups mem[goff[g] .. goff[g] + used[g]) */
    const double *v0;
    const kd_tree *tree;                /* the column groups' tree (tree rows -> group: loc_c), or NULL */
    /* with the tree: the candidate edges of the row groups (c(h, j) = cost[e], as the tree's
     * search computes it) and lb[h], at most c(h, j) for every column group j off them */
    const ptrdiff_t *ptr;
    const int *col;
    const double *cost, *lb;
    const int *loc_c, *parent;
    const ptrdiff_t *gpos;              /* column group -> tree position */
    double *wpos, *nodew;               /* wt by tree position; its least per node */
    double *wt, *uh, *key;              /* ng, row groups, ng */
    ptrdiff_t *heap, *hpos;             /* ng, ng (-1: not in the heap) */
    ptrdiff_t n_heap;
    kd_item *stack;
} canon;

static inline int canon_before(const canon *c, ptrdiff_t a, ptrdiff_t b)
{
    return c->key[a] < c->key[b] || (c->key[a] == c->key[b] && a < b);
}

static void canon_up(canon *c, ptrdiff_t p)
{
    ptrdiff_t x = c->heap[p];
    while (p > 0) {
        ptrdiff_t q = (p - 1) / 2;
        if (!canon_before(c, x, c->heap[q])) break;
        c->heap[p] = c->heap[q];
        c->hpos[c->heap[p]] = p;
        p = q;
    }
    c->heap[p] = x;
    c->hpos[x] = p;
}

static ptrdiff_t canon_pop(canon *c)
{
    ptrdiff_t top = c->heap[0], p = 0, n = --c->n_heap;
    c->hpos[top] = -1;
    if (!n) return top;
    ptrdiff_t x = c->heap[n];
    for (;;) {
        ptrdiff_t q = 2 * p + 1;
        if (q >= n) break;
        if (q + 1 < n && canon_before(c, c->heap[q + 1], c->heap[q])) q++;
        if (!canon_before(c, c->heap[q], x)) break;
        c->heap[p] = c->heap[q];
        c->hpos[c->heap[p]] = p;
        p = q;
    }
    c->heap[p] = x;
    c->hpos[x] = p;
    return top;
}

/* wt(j) rises to x: its key falls (pushed again if popped) and the tree's weights follow. */
static void canon_raise(canon *c, ptrdiff_t j, double x)
{
    c->wt[j] = x;
    c->key[j] = (c->v0[j] < 0 ? -c->v0[j] : 0.0) - x;
    if (c->hpos[j] < 0) {
        c->heap[c->n_heap] = j;
        c->hpos[j] = c->n_heap++;
    }
    canon_up(c, c->hpos[j]);
    if (c->tree) {
        c->wpos[c->gpos[j]] = x;
        weight_up(c->tree, c->parent, c->wpos, c->nodew, c->gpos[j]);
    }
}

/* Raise every column group j with c(h, j) + wt(j) < u (q: the point of row group h). When
 * u <= lb[h], only candidate edges can (c(h, j) <= c(h, j) + wt(j) in floating point, wt >= 0).
 * In the tree, a node is skipped when its box distance + least weight exceeds u (both are
 * lower bounds, monotone in floating point). */
static void canon_relax(canon *c, ptrdiff_t h, const double *q, double u)
{
    const int d = c->d;
    if (c->tree && u <= c->lb[h]) {
        for (ptrdiff_t e = c->ptr[h]; e < c->ptr[h + 1]; e++) {
            const ptrdiff_t j = c->col[e];
            const double dj = c->cost[e];
            if (dj + c->wt[j] < u && u - dj > c->wt[j]) canon_raise(c, j, u - dj);
        }
        return;
    }
    if (!c->tree) {
        for (ptrdiff_t j = 0; j < c->ng; j++) {
            const double dj = assign_d2(q, c->B + (size_t) j * d, d);
            if (dj + c->wt[j] < u && u - dj > c->wt[j]) canon_raise(c, j, u - dj);
        }
        return;
    }
    const kd_tree *t = c->tree;
    const double lim = u * (1.0 + 1e-12);
    kd_item *st = c->stack;
    int sp = 0;
    st[sp].node = 0;
    st[sp].bd = kd_box_d2(t, 0, q) + c->nodew[0];
    sp++;
    while (sp) {
        kd_item it = st[--sp];
        if (it.bd > lim) continue;
        const kd_node *nd = t->nodes + it.node;
        if (nd->left < 0) {
            for (ptrdiff_t p = nd->begin; p < nd->end; p++) {
                const ptrdiff_t j = c->loc_c[t->row[p]];
                const double dj = kd_point_d2(q, t->pts + p * d, d);
                if (dj + c->wt[j] < u && u - dj > c->wt[j]) canon_raise(c, j, u - dj);
            }
        } else {
            st[sp].node = nd->left; st[sp].bd = kd_box_d2(t, nd->left, q) + c->nodew[nd->left]; sp++;
            st[sp].node = nd->right; st[sp].bd = kd_box_d2(t, nd->right, q) + c->nodew[nd->right]; sp++;
        }
    }
}

/* Fills c->wt (and c->uh); returns 0, or -1 when the labels diverge (then wt is not a dual). */
static int canon_dual(canon *c, ptrdiff_t nh, assign_work *w)
{
    const int d = c->d;
    const ptrdiff_t ng = c->ng;
    for (ptrdiff_t h = 0; h < nh; h++) c->uh[h] = -INFINITY;
    c->n_heap = 0;
    for (ptrdiff_t j = 0; j < ng; j++) {
        c->wt[j] = 0.0;
        c->key[j] = c->v0[j] < 0 ? -c->v0[j] : 0.0;
        c->heap[c->n_heap] = j;
        c->hpos[j] = c->n_heap++;
        canon_up(c, c->hpos[j]);
    }
    if (c->tree) {
        for (ptrdiff_t p = 0; p < ng; p++) c->wpos[p] = 0.0;
        assign_node_weights(c->tree, c->wpos, c->nodew);
    }
    double pops = 0.0;
    while (c->n_heap) {
        const ptrdiff_t k = canon_pop(c);
        if (++pops > (CANON_POPS + 1.0) * (double) ng) return -1;
        const double *bk = c->B + (size_t) k * d;
        for (ptrdiff_t s = c->goff[k]; s < c->goff[k] + c->used[k]; s++) {
            const ptrdiff_t h = c->mem[s];
            const double *ah = c->A + (size_t) h * d;
            const double u = assign_d2(ah, bk, d) + c->wt[k];
            if (u > c->uh[h]) {
                c->uh[h] = u;
                canon_relax(c, h, ah, u);
                work_done(w, c->tree ? 64.0 : (double) ng * (d + 2));
            }
        }
        work_done(w, 4.0);
    }
    return 0;
}

/* Row groups (numbered by their first record by group_points(): hid, hoff, hcol) numbered
 * again in the order of their tree t (built over their first records), so that groups near
 * in space are near in memory (a search reads the edges of the records of a column group
 * together, and they are near each other); then their sizes hsz, points Ag (from the
 * records' points A), and loc_r (rows of P->x -> group). order[t]: the new number of the
 * group first numbered t (the groups are placed in that order, as before). tmp: nr. */
static void renumber_rows(const kd_tree *t, const side *P, ptrdiff_t nr, ptrdiff_t nh, int d, const double *A,
                          ptrdiff_t *hid, ptrdiff_t *hoff, ptrdiff_t *hcol, ptrdiff_t *hsz, double *Ag,
                          int *loc_r, ptrdiff_t *order, ptrdiff_t *tmp)
{
    for (ptrdiff_t i = 0; i < nr; i++) loc_r[P->rows[i] - 1] = (int) hid[i];
    ptrdiff_t o = 0;
    for (ptrdiff_t p = 0; p < nh; p++) {
        const ptrdiff_t h = loc_r[t->row[p]];
        order[h] = p;
        hsz[p] = hoff[h + 1] - hoff[h];
        for (ptrdiff_t r = hoff[h]; r < hoff[h + 1]; r++) tmp[o++] = hcol[r];
    }
    hoff[0] = 0;
    for (ptrdiff_t p = 0; p < nh; p++) hoff[p + 1] = hoff[p] + hsz[p];
    for (ptrdiff_t r = 0; r < nr; r++) hcol[r] = tmp[r];
    for (ptrdiff_t i = 0; i < nr; i++) {
        hid[i] = order[hid[i]];
        loc_r[P->rows[i] - 1] = (int) hid[i];
    }
    for (ptrdiff_t p = 0; p < nh; p++)
        for (int c = 0; c < d; c++) Ag[(size_t) p * d + c] = A[(size_t) hcol[hoff[p]] * d + c];
}

const char *assign_cells(const double *zr, ptrdiff_t Nr, const double *zc, ptrdiff_t Nc, int d,
                         const int *ro, const int *roff, const int *co, const int *coff,
                         ptrdiff_t n_cells, double limit, int cand, int max_rounds, int nt,
                         const assign_out *res, const kernel_host *host)
{
    int *res_col = res->col, *res_sparse = res->sparse, *res_fb = res->fallback;
    int *res_rounds = res->rounds, *res_auction = res->auction;
    double *res_reg = res->regret, *res_cost = res->cost, *res_bound = res->bound;
    /* buffers for the largest cell */
    ptrdiff_t max_n = 1, max_sparse = 1;
    for (ptrdiff_t s = 0; s < n_cells; s++) {
        ptrdiff_t a = roff[s + 1] - roff[s], b = coff[s + 1] - coff[s];
        if (a < 0 || b < 0) return "decreasing offsets";
        ptrdiff_t mx = a > b ? a : b;
        if (mx > max_n) max_n = mx;
        if (mx > limit && mx > max_sparse) max_sparse = mx;
    }
    const int sparse_any = max_sparse > 1 || limit < 1.5;
    double *A = (double *) host->alloc((size_t) max_n * d, sizeof(double));
    double *B = (double *) host->alloc((size_t) max_n * d, sizeof(double));
    ptrdiff_t *col4row = (ptrdiff_t *) host->alloc(max_n, sizeof(ptrdiff_t));
    double *u = (double *) host->alloc(max_n, sizeof(double));
    double *v = (double *) host->alloc(max_n, sizeof(double));
    assign_work w;
    w.shortest = (double *) host->alloc(max_n, sizeof(double));
    w.path = (ptrdiff_t *) host->alloc(max_n, sizeof(ptrdiff_t));
    w.row4col = (ptrdiff_t *) host->alloc(max_n, sizeof(ptrdiff_t));
    w.remaining = (ptrdiff_t *) host->alloc(max_n, sizeof(ptrdiff_t));
    w.heap = (ptrdiff_t *) host->alloc(max_n, sizeof(ptrdiff_t));
    w.heap_pos = (ptrdiff_t *) host->alloc(max_n, sizeof(ptrdiff_t));
    w.sc_list = (ptrdiff_t *) host->alloc(max_n, sizeof(ptrdiff_t));
    w.touched = (ptrdiff_t *) host->alloc(max_n, sizeof(ptrdiff_t));
    w.sr_list = (ptrdiff_t *) host->alloc(max_n, sizeof(ptrdiff_t));
    w.sc = (unsigned char *) host->alloc(max_n, 1);
    w.sr = (unsigned char *) host->alloc(max_n, 1);
    w.dead = NULL;
    w.order = NULL;
    w.goff = w.rsize = NULL;
    w.used = w.mem = w.rem = w.via = w.via_slot = NULL;
    w.host = host;
    w.since_poll = 0.0;
    /* the greatest optimal dual (canon_dual()): per column group, per row group; the dense
     * cells' columns as groups of one (slots cgoff, used cused) */
    double *cwt = (double *) host->alloc(max_n, sizeof(double));
    double *cuh = (double *) host->alloc(max_n, sizeof(double));
    double *ckey = (double *) host->alloc(max_n, sizeof(double));
    ptrdiff_t *cheap = (ptrdiff_t *) host->alloc(max_n, sizeof(ptrdiff_t));
    ptrdiff_t *chpos = (ptrdiff_t *) host->alloc(max_n, sizeof(ptrdiff_t));
    ptrdiff_t *cgoff = (ptrdiff_t *) host->alloc(max_n + 1, sizeof(ptrdiff_t));
    ptrdiff_t *cused = (ptrdiff_t *) host->alloc(max_n, sizeof(ptrdiff_t));
    for (ptrdiff_t j = 0; j <= max_n; j++) cgoff[j] = j;
    ptrdiff_t *cgpos = NULL;
    int *cparent = NULL;
    /* sparse-only buffers */
    kd_tree tree;
    kd_heap *heaps = NULL;
    int *kr = NULL, *loc_r = NULL, *loc_c = NULL, *nb_r = NULL, *nb_c = NULL, *ecol = NULL;
    double *ecost = NULL;
    ptrdiff_t *ptr = NULL, *rows0 = NULL, *rows1 = NULL, *fill = NULL;
    double *wpos = NULL, *nodew = NULL;
    ptrdiff_t *xr = NULL;
    int *xc = NULL;
    kd_item *stack = NULL;
    ptrdiff_t *gid = NULL, *goff = NULL, *gcol = NULL, *gsort = NULL, *gtmp = NULL;
    ptrdiff_t *hid = NULL, *hoff = NULL, *hcol = NULL, *hsz = NULL, *next_m = NULL;
    double *Bg = NULL, *Ag = NULL, *vk = NULL;
    int *jk = NULL;
    ptrdiff_t *pk = NULL;
    /* the edges of a row group of several records in a round: up to its column groups */
    double *vbig = NULL;
    int *jbig = NULL;
    ptrdiff_t *pbig = NULL;
    unsigned char *nflag = NULL; /* per row group: the earlier rounds that added it edges */
    /* edges priced per row group and round of column generation (>= 2: the second least
     * value is the regret's alternative) */
    const int kpr = cand > 2 ? cand : 2;
    unsigned char *flag = NULL, *lazy = NULL;
    double *lb_off = NULL, *below_h = NULL;
    ptrdiff_t *ord_r = NULL, *ord_c = NULL;
    kd_tree tree2;
    csr_pool pool = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {0, 0}};
    auction auc = {.cap = 0};
    edge_buf ex = {0, NULL, NULL};
    if (sparse_any) {
        for (int b = 0; b < 2; b++) pool.ptr[b] = (ptrdiff_t *) host->alloc(max_sparse + 1, sizeof(ptrdiff_t));
        tree = kd_new(max_sparse, d, ASSIGN_LEAF_SIZE, host->alloc);
        heaps = (kd_heap *) host->alloc(nt, sizeof(kd_heap));
        for (int t = 0; t < nt; t++) heaps[t] = kd_heap_new(cand + 1, host->alloc);
        /* indexed by rows of zr or zc, whichever side is the rows of a cell */
        loc_r = (int *) host->alloc(Nr > Nc ? Nr : Nc, sizeof(int));
        loc_c = (int *) host->alloc(Nr > Nc ? Nr : Nc, sizeof(int));
        nb_r = (int *) host->alloc((size_t) max_sparse * cand * TIE_FACTOR, sizeof(int));
        nb_c = (int *) host->alloc((size_t) max_sparse * cand * TIE_FACTOR, sizeof(int));
        ecol = (int *) host->alloc((size_t) max_sparse * cand * TIE_FACTOR * 2, sizeof(int));
        ecost = (double *) host->alloc((size_t) max_sparse * cand * TIE_FACTOR * 2, sizeof(double));
        ptr = (ptrdiff_t *) host->alloc(max_sparse + 1, sizeof(ptrdiff_t));
        fill = (ptrdiff_t *) host->alloc(max_sparse + 1, sizeof(ptrdiff_t));
        rows0 = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        rows1 = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        tree2 = kd_new(max_sparse, d, ASSIGN_LEAF_SIZE, host->alloc);
        cgpos = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        cparent = (int *) host->alloc(kd_max_nodes(max_sparse, ASSIGN_LEAF_SIZE), sizeof(int));
        wpos = (double *) host->alloc(max_sparse, sizeof(double));
        nodew = (double *) host->alloc(kd_max_nodes(max_sparse, ASSIGN_LEAF_SIZE), sizeof(double));
        stack = (kd_item *) host->alloc(KD_STACK_MAX, sizeof(kd_item));
        xr = (ptrdiff_t *) host->alloc((size_t) max_sparse * kpr, sizeof(ptrdiff_t));
        xc = (int *) host->alloc((size_t) max_sparse * kpr, sizeof(int));
        kr = (int *) host->alloc(max_sparse, sizeof(int));
        w.dead = (unsigned char *) host->alloc(max_sparse, 1);
        gid = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        goff = (ptrdiff_t *) host->alloc(max_sparse + 1, sizeof(ptrdiff_t));
        gcol = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        gsort = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        gtmp = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        Bg = (double *) host->alloc((size_t) max_sparse * d, sizeof(double));
        hid = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        hoff = (ptrdiff_t *) host->alloc(max_sparse + 1, sizeof(ptrdiff_t));
        hcol = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        hsz = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        next_m = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        Ag = (double *) host->alloc((size_t) max_sparse * d, sizeof(double));
        vk = (double *) host->alloc((size_t) max_sparse * kpr, sizeof(double));
        jk = (int *) host->alloc((size_t) max_sparse * kpr, sizeof(int));
        pk = (ptrdiff_t *) host->alloc(kpr, sizeof(ptrdiff_t));
        vbig = (double *) host->alloc(max_sparse, sizeof(double));
        jbig = (int *) host->alloc(max_sparse, sizeof(int));
        pbig = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        nflag = (unsigned char *) host->alloc(max_sparse, 1);
        flag = (unsigned char *) host->alloc(max_sparse, 1);
        lazy = (unsigned char *) host->alloc(max_sparse, 1);
        lb_off = (double *) host->alloc(max_sparse, sizeof(double));
        below_h = (double *) host->alloc(max_sparse, sizeof(double));
        ord_r = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        ord_c = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        w.goff = goff;
        w.rsize = hsz;
        w.used = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        w.mem = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        w.rem = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        w.via = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
        w.via_slot = (ptrdiff_t *) host->alloc(max_sparse, sizeof(ptrdiff_t));
    }

    for (ptrdiff_t s = 0; s < n_cells; s++) {
        side R = {d, zr, Nr, ro + roff[s], roff[s + 1] - roff[s]};
        side C = {d, zc, Nc, co + coff[s], coff[s + 1] - coff[s]};
        res_sparse[s] = 0;
        res_fb[s] = 0;
        res_rounds[s] = 0;
        res_auction[s] = 0;
        res_cost[s] = 0.0;
        res_bound[s] = 0.0;
        if (R.n == 0 || C.n == 0) continue;
        /* the smaller side is assigned into the larger */
        const int swap = R.n > C.n;
        const side *P = swap ? &C : &R, *Q = swap ? &R : &C;
        const ptrdiff_t nr = P->n, nc = Q->n;
        gather(P, A);
        gather(Q, B);
        double cost = 0.0, bound;
        if ((double) nc <= limit) {
            assign_dense(nr, nc, d, A, B, col4row, u, v, &w);
            double dual = 0.0;
            for (ptrdiff_t i = 0; i < nr; i++) {
                cost += assign_d2(A + (size_t) i * d, B + (size_t) col4row[i] * d, d);
                dual += u[i];
            }
            for (ptrdiff_t j = 0; j < nc; j++) dual += v[j] < 0 ? v[j] : 0.0;
            bound = dual;
            if (!swap) {
                /* the regrets under the greatest optimal dual (the solver's own if the
                 * labels diverge, which an optimal assignment excludes) */
                for (ptrdiff_t j = 0; j < nc; j++) cused[j] = w.row4col[j] >= 0;
                canon c = {.d = d, .ng = nc, .A = A, .B = B, .goff = cgoff, .used = cused, .mem = w.row4col,
                           .v0 = v, .wt = cwt, .uh = cuh, .key = ckey, .heap = cheap, .hpos = chpos};
                if (canon_dual(&c, nr, &w) == 0) for (ptrdiff_t j = 0; j < nc; j++) v[j] = -cwt[j];
                /* regret: best alternative column by c - v, against the assigned one
                 * (a host pause about every 2^20 distances) */
                ptrdiff_t polls = 0;
                for (ptrdiff_t i = 0; i < nr; i++) {
                    const double *ai = A + (size_t) i * d;
                    ptrdiff_t a = col4row[i];
                    double own = assign_d2(ai, B + (size_t) a * d, d) - v[a], alt = INFINITY;
                    for (ptrdiff_t j = 0; j < nc; j++) {
                        if (j == a) continue;
                        double r = assign_d2(ai, B + (size_t) j * d, d) - v[j];
                        if (r < alt) alt = r;
                    }
                    res_reg[R.rows[i] - 1] = isfinite(alt) ? (alt > own ? alt - own : 0.0) : INFINITY;
                    if ((double) nc * (i + 1) >= 1048576.0 * (double) (polls + 1)) { polls++; host_pause(host, 0); }
                }
                host_pause(host, 0);
            }
        } else {
            res_sparse[s] = 1;
            /* identical points are one group: a column group takes as many records as it
             * has (its point, Bg, is a candidate once, whatever the number of ties), a row
             * group (Ag) places as many as it has */
            const ptrdiff_t ng = group_points(B, nc, d, gid, goff, gcol, gsort, gtmp);
            const ptrdiff_t nh = group_points(A, nr, d, hid, hoff, hcol, gsort, gtmp);
            for (ptrdiff_t g = 0; g < ng; g++) {
                ptrdiff_t j = gcol[goff[g]];
                rows0[g] = Q->rows[j] - 1;
                for (int c = 0; c < d; c++) Bg[(size_t) g * d + c] = B[(size_t) j * d + c];
            }
            for (ptrdiff_t h = 0; h < nh; h++) rows1[h] = P->rows[hcol[hoff[h]]] - 1;
            const int kq = cand < ng ? cand : (int) ng; /* column groups per row group */
            const int kp = cand < nh ? cand : (int) nh; /* row groups per column group */
            for (ptrdiff_t j = 0; j < nc; j++) loc_c[Q->rows[j] - 1] = (int) gid[j];
            /* nearest column groups of every row group (tree: the column groups' points,
             * kept for the cell) */
            const side QG = {d, Q->x, Q->ldx, NULL, ng}, PG = {d, P->x, P->ldx, NULL, nh};
            build_side(&tree, &QG, rows0, host);
            /* nearest row groups of every column group (tree2: the row groups' points) */
            build_side(&tree2, &PG, rows1, host);
            renumber_rows(&tree2, P, nr, nh, d, A, hid, hoff, hcol, hsz, Ag, loc_r, ord_r, gsort);
            w.order = ord_r;
            for (ptrdiff_t p = 0; p < ng; p++) ord_c[p] = loc_c[tree.row[p]];
            knn_edges(&tree, &QG, NULL, Ag, nh, kq, heaps, nt, loc_c, nb_r, lb_off, host);
            knn_edges(&tree2, &PG, ord_c, Bg, ng, kp, heaps, nt, loc_r, nb_c, NULL, host);
            /* CSR by row group: own kq edges, then the reverse edges, sorted and unique */
            const int wq = kq * TIE_FACTOR, wp = kp * TIE_FACTOR;
            for (ptrdiff_t h = 0; h <= nh; h++) ptr[h] = 0;
            for (ptrdiff_t h = 0; h < nh; h++)
                for (int m = 0; m < wq; m++) if (nb_r[(size_t) h * wq + m] >= 0) ptr[h + 1]++;
            for (ptrdiff_t j = 0; j < ng; j++)
                for (int m = 0; m < wp; m++) {
                    int h = nb_c[(size_t) j * wp + m];
                    if (h >= 0) ptr[h + 1]++;
                }
            for (ptrdiff_t h = 0; h < nh; h++) ptr[h + 1] += ptr[h];
            for (ptrdiff_t h = 0; h < nh; h++) fill[h] = ptr[h];
            for (ptrdiff_t h = 0; h < nh; h++)
                for (int m = 0; m < wq; m++) {
                    int j = nb_r[(size_t) h * wq + m];
                    if (j >= 0) ecol[fill[h]++] = j;
                }
            for (ptrdiff_t j = 0; j < ng; j++)
                for (int m = 0; m < wp; m++) {
                    int h = nb_c[(size_t) j * wp + m];
                    if (h >= 0) ecol[fill[h]++] = (int) j;
                }
            ptrdiff_t e_out = 0;
            for (ptrdiff_t h = 0; h < nh; h++) {
                ptrdiff_t b0 = ptr[h], b1 = ptr[h + 1];
                qsort(ecol + b0, (size_t) (b1 - b0), sizeof(int), cmp_int);
                ptr[h] = e_out;
                for (ptrdiff_t e = b0; e < b1; e++) {
                    if (e > b0 && ecol[e] == ecol[e - 1]) continue;
                    ecol[e_out] = ecol[e];
                    ecost[e_out] = assign_d2(Ag + (size_t) h * d, Bg + (size_t) ecol[e] * d, d);
                    e_out++;
                }
                if ((h & 0xFFFF) == 0xFFFF) host_pause(host, 0);
            }
            ptr[nh] = e_out;
            csr g = {ptr, ecol, ecost};
            for (ptrdiff_t h = 0; h < nh; h++) kr[h] = kq;
            ptrdiff_t left = assign_sparse(nh, ng, g.ptr, g.col, g.cost, u, v, &w, 0);
            res_fb[s] = (int) left;
            const int square = nr == nc;
            /* a square cell whose candidates leave at least 1 record in AUCTION_SHARE
             * unmatched is solved again, once, from the auction's duals (where the nearest
             * candidates are that far from the optimum, the augmenting paths and the rounds
             * of column generation from them take minutes) */
            if (square && max_rounds > 0 && (double) left * AUCTION_SHARE >= (double) nr) {
                if (!auc.cap) auction_alloc(&auc, max_sparse, d, (ptrdiff_t) cand * AUCTION_LIST < max_sparse ?
                                            cand * AUCTION_LIST : (int) max_sparse,
                                            kd_max_nodes(max_sparse, ASSIGN_LEAF_SIZE), host);
                left = auction_restart(&auc, &g, nh, ng, nr, d, cand, Ag, Bg, hid, hoff, hcol, &tree, loc_c, wpos,
                                       nodew, stack, u, v, &w, &pool, host);
                res_auction[s] = 1;
            }
            left = expand_until_matched(&g, left, nh, ng, d, Ag, Bg, &tree, loc_c, kr, u, v, &w, &pool, &ex, host);
            if (left < 0) return "the sparse assignment lost rows";
            /* column generation: the least c(h, g) - v(g) over every column group (a
             * weighted nearest-neighbour search) below the cost of a record of row group h
             * is an edge of negative reduced cost missing from the candidates; the `kpr`
             * least such edges of every row group are added and the cell solved again,
             * until there is none (the assignment is then optimal for the full problem) or
             * `rounds` rounds. Every round also gives a feasible dual of
             * the full problem: v (<= 0, one per column group, shared by its records) and
             * u'(i) = that least value, whose objective is a lower bound. */
            double best = -INFINITY, last_cost = INFINITY;
            for (int round = 0;; round++) {
                for (ptrdiff_t p = 0; p < ng; p++) wpos[p] = v[loc_c[tree.row[p]]] < 0 ? -v[loc_c[tree.row[p]]] : 0.0;
                assign_node_weights(&tree, wpos, nodew);
                for (ptrdiff_t h = 0; h < nh; h++) {
                    /* the two least values over the candidate edges are the two least over
                     * every column group when neither exceeds the distance of the nearest
                     * group off the edges (its value is at least that): the search is then
                     * needed only if a record of the group has a better column (below) */
                    double *vh = vk + (size_t) h * kpr;
                    int *jh = jk + (size_t) h * kpr;
                    const double *ah = Ag + (size_t) h * d;
                    double m1 = INFINITY, m2 = INFINITY;
                    int j1 = -1;
                    for (ptrdiff_t e = g.ptr[h]; e < g.ptr[h + 1]; e++) {
                        const int j = g.col[e];
                        double x = kd_point_d2(ah, Bg + (size_t) j * d, d) + (v[j] < 0 ? -v[j] : 0.0);
                        if (x < m1) { m2 = m1; m1 = x; j1 = j; }
                        else if (x < m2) m2 = x;
                    }
                    lazy[h] = m2 <= lb_off[h];
                    if (lazy[h]) {
                        vh[0] = m1; vh[1] = m2; jh[0] = j1;
                    } else {
                        price_group(&tree, nodew, wpos, loc_c, ah, kpr, vh, jh, pk, stack);
                    }
                    next_m[h] = 0;
                    flag[h] = 0;
                    if (round == 0) nflag[h] = 0;
                    if ((h & 0xFFFF) == 0xFFFF) host_pause(host, 0);
                }
                /* every record takes a column of its group's slots: one column per record */
                for (ptrdiff_t j = 0; j < ng; j++)
                    for (ptrdiff_t t = goff[j]; t < goff[j] + w.used[j]; t++) {
                        ptrdiff_t h = w.mem[t];
                        col4row[hcol[hoff[h] + next_m[h]++]] = gcol[t];
                    }
                double dual = 0.0;
                for (ptrdiff_t j = 0; j < ng; j++) dual += v[j] < 0 ? (double) (goff[j + 1] - goff[j]) * v[j] : 0.0;
                ptrdiff_t nx = 0;
                cost = 0.0;
                for (ptrdiff_t i = 0; i < nr; i++) {
                    const ptrdiff_t h = hid[i], a = gid[col4row[i]];
                    double ca = assign_d2(A + (size_t) i * d, Bg + (size_t) a * d, d);
                    /* the other records of the own column group are alternatives at its cost */
                    double own = ca - (v[a] < 0 ? v[a] : 0.0);
                    const double *vh = vk + (size_t) h * kpr;
                    const int *jh = jk + (size_t) h * kpr;
                    double alt = jh[0] != a || goff[a + 1] - goff[a] > 1 ? vh[0] : vh[1];
                    cost += ca;
                    dual += vh[0];
                    if (!swap) res_reg[P->rows[i] - 1] = isfinite(alt) ? (alt > own ? alt - own : 0.0) : INFINITY;
                    /* a row group's new edges are those below the value of its first record
                     * with one (of a group of several records: of any of its records, the
                     * greatest) */
                    const double below = own - 1e-12 * (1.0 + fabs(own));
                    if (!flag[h] && vh[0] < below) {
                        if (lazy[h]) {
                            price_group(&tree, nodew, wpos, loc_c, Ag + (size_t) h * d, kpr, vk + (size_t) h * kpr, jk + (size_t) h * kpr, pk, stack);
                            lazy[h] = 0;
                        }
                        flag[h] = 1;
                        below_h[h] = below;
                        nx++;
                    } else if (flag[h] && hsz[h] > 1 && vh[0] < below && below > below_h[h]) {
                        below_h[h] = below;
                    }
                }
                if (dual > best) best = dual;
                if (!nx || round >= max_rounds) break;
                nx = 0; /* by row group (csr_add()) */
                /* a row group gets kpr edges per record (its records may need as many column
                 * groups as they are: kpr per round left groups of hundreds of identical
                 * originals far from the optimum after the rounds), doubled for every
                 * earlier round it had some (its optimal edges lie further out than its
                 * reduced costs showed); the doubling is halved for all until the round
                 * adds at most kpr x nr edges */
                int shift = round < 20 ? round : 20;
                for (;; shift--) {
                    ptrdiff_t need = 0;
                    for (ptrdiff_t h = 0; h < nh; h++)
                        if (flag[h]) need += round_edges(kpr, hsz[h], nflag[h] < shift ? nflag[h] : shift, ng);
                    if (need <= (ptrdiff_t) kpr * nr || shift == 0) break;
                }
                for (ptrdiff_t h = 0; h < nh; h++) {
                    if (!flag[h]) continue;
                    ptrdiff_t kh = round_edges(kpr, hsz[h], nflag[h] < shift ? nflag[h] : shift, ng);
                    if (kh < kpr) kh = kpr; /* (ng < kpr: the kpr priced) */
                    if (nflag[h] < 255) nflag[h]++;
                    const double *vh = vk + (size_t) h * kpr;
                    const int *jh = jk + (size_t) h * kpr;
                    if (kh > kpr) {
                        price_group(&tree, nodew, wpos, loc_c, Ag + (size_t) h * d, (int) kh, vbig, jbig, pbig, stack);
                        vh = vbig;
                        jh = jbig;
                    }
                    for (ptrdiff_t m = 0; m < kh && vh[m] < below_h[h]; m++) { xr[nx] = h; xc[nx] = jh[m]; nx++; }
                    if ((h & 0xFFF) == 0xFFF) host_pause(host, 0);
                }
                g = csr_add(&g, nh, xr, xc, nx, Ag, Bg, d, &pool, host);
                /* the records of the row groups with a better edge; the cost of the
                 * round before (a round that did not lower it leaves the duals, not the
                 * assignment, to improve) */
                ptrdiff_t moved = 0;
                for (ptrdiff_t h = 0; h < nh; h++) if (flag[h]) moved += hsz[h];
                const int stalled = round > 0 && !(cost < last_cost - 1e-12 * fabs(last_cost));
                last_cost = cost;
                if (square && (res_auction[s] || (!stalled && (double) moved * COLD_SHARE < (double) nr))) {
                    /* warm: take them out, then place them again (always after the
                     * auction: from zero duals its cells take minutes) */
                    unplace(&g, nh, ng, flag, u, v, &w);
                    left = assign_sparse(nh, ng, g.ptr, g.col, g.cost, u, v, &w, 1);
                } else {
                    /* cold, from zero duals: when 1 record in COLD_SHARE or more has a better
                     * edge, the duals are far from optimal (raised by the records that
                     * expansion placed far off, on tied releases: then v down to -1.5 on
                     * costs of 1e-4 a record, and the kpr least c - v of a row group lie
                     * towards the raised groups, not its optimal ones; warm, column
                     * generation stopped at its 10 rounds far from the optimum); and when
                     * the round did not lower the cost (on degenerate costs the warm duals
                     * kept showing better edges round after round at the optimal cost) */
                    left = assign_sparse(nh, ng, g.ptr, g.col, g.cost, u, v, &w, 0);
                }
                left = expand_until_matched(&g, left, nh, ng, d, Ag, Bg, &tree, loc_c, kr, u, v, &w, &pool, &ex, host);
                if (left < 0) return "the sparse assignment lost rows";
                res_rounds[s] = round + 1;
            }
            bound = best;
            /* a record in a column group of several records has regret 0 whatever the dual
             * (shared centroids): the dual is needed when a group of one holds a record */
            int single = 0;
            for (ptrdiff_t j = 0; j < ng && !single; j++) single = goff[j + 1] - goff[j] == 1 && w.used[j] > 0;
            if (!swap && single) {
                /* the regrets again under the greatest optimal dual, searched as in the
                 * rounds (kept from the last round if the labels diverge) */
                for (ptrdiff_t p = 0; p < ng; p++) cgpos[loc_c[tree.row[p]]] = p;
                tree_parents(&tree, cparent);
                canon c = {.d = d, .ng = ng, .A = Ag, .B = Bg, .goff = goff, .used = w.used, .mem = w.mem,
                           .v0 = v, .tree = &tree, .ptr = g.ptr, .col = g.col, .cost = g.cost, .lb = lb_off,
                           .loc_c = loc_c, .parent = cparent, .gpos = cgpos, .wpos = wpos, .nodew = nodew,
                           .wt = cwt, .uh = cuh, .key = ckey, .heap = cheap, .hpos = chpos, .stack = stack};
                if (canon_dual(&c, nh, &w) == 0) {
                    for (ptrdiff_t h = 0; h < nh; h++) {
                        /* the two least values over the candidate edges, when the second is
                         * at most lb_off (every other value is at least that), else searched */
                        double *vh = vk + (size_t) h * kpr;
                        int *jh = jk + (size_t) h * kpr;
                        vh[0] = vh[1] = INFINITY;
                        jh[0] = -1;
                        for (ptrdiff_t e = g.ptr[h]; e < g.ptr[h + 1]; e++) {
                            const double x = g.cost[e] + cwt[g.col[e]];
                            if (x < vh[0]) { vh[1] = vh[0]; vh[0] = x; jh[0] = g.col[e]; }
                            else if (x < vh[1]) vh[1] = x;
                        }
                        if (!(vh[1] <= lb_off[h]))
                            price_group(&tree, nodew, wpos, loc_c, Ag + (size_t) h * d, 2, vh, jh, pk, stack);
                        if ((h & 0xFFFF) == 0xFFFF) host_pause(host, 0);
                    }
                    for (ptrdiff_t i = 0; i < nr; i++) {
                        const ptrdiff_t h = hid[i], a = gid[col4row[i]];
                        const double own = kd_point_d2(Ag + (size_t) h * d, Bg + (size_t) a * d, d) + cwt[a];
                        const double *vh = vk + (size_t) h * kpr;
                        const double alt = jk[(size_t) h * kpr] != a || goff[a + 1] - goff[a] > 1 ? vh[0] : vh[1];
                        res_reg[P->rows[i] - 1] = isfinite(alt) ? (alt > own ? alt - own : 0.0) : INFINITY;
                    }
                }
            }
        }
        /* a lower bound above the cost is rounding: the assignment is optimal */
        res_cost[s] = cost;
        res_bound[s] = bound < cost ? bound : cost;
        for (ptrdiff_t i = 0; i < nr; i++) {
            ptrdiff_t a = col4row[i];
            if (a < 0) continue;
            if (!swap) res_col[P->rows[i] - 1] = Q->rows[a];
            else res_col[Q->rows[a] - 1] = P->rows[i];
        }
        host_pause(host, s + 1);
    }
    return NULL;
}
