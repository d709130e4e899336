/* MDAV microaggregation on a kd-tree with deletion (see mdav.h for the contract).
 *
 * Why these choices:
 * - Every query of MDAV is among the records not yet grouped. The kd-tree of kdtree.c is
 *   built once over a stratum's z-scores; grouped records are marked dead, and every node
 *   keeps the number of live records below it, so that empty subtrees are skipped. When
 *   fewer than half of the records it was built over are alive, the tree is rebuilt over
 *   the live ones (boxes tight again; O(n log n) in all).
 * - The k nearest live records of a point: a depth-first search pruned by the box distance
 *   (a lower bound of every distance in the box, kdtree.h), nearest child first, with a
 *   max-heap of k under the total order (squared distance, then coordinates).
 * - The live record farthest from the centroid: the records in decreasing distance from a
 *   reference point (a past centroid, renewed when the scans grow long), scanned until the
 *   triangle inequality rules the rest out. Only the farthest part of that order is sorted
 *   (a quickselect, then a radix sort); the next part when a scan reaches its end.
 * - The live record farthest from r (a record on the rim): the kd-tree search turned round,
 *   pruned by the distance to a box's farthest corner (an upper bound), farthest child
 *   first; boxes shrink to their live records.
 * - The centroid of the live records: their coordinates are summed exactly (the fixed-point
 *   accumulator of fsum.c, a group's values subtracted when it is formed) and rounded once,
 *   so it does not depend on the order in which records were grouped or stored.
 * All three answers are exact under the total order, so the groups do not depend on the
 * tree's shape, the rebuilds, the row order or the thread. */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include "mdav.h"
#include "kdtree.h"
#include "fsum.h"
#include "threads.h"

#define MDAV_LEAF 16

/* the fewest records sorted by distance from a reference point at a time */
#define MDAV_TOP_MIN ((ptrdiff_t) 4096)
/* records between pauses of a stratum run alone, and records per parallel batch */
#define MDAV_PAUSE_EVERY ((ptrdiff_t) 1 << 14)
#define MDAV_BATCH ((ptrdiff_t) 1 << 17)

typedef struct {
    double r;
    ptrdiff_t i;
} mdav_key;

typedef struct {
    kd_tree t;
    int d;
    ptrdiff_t ns;           /* records of the stratum */
    ptrdiff_t nlive;        /* records not yet grouped */
    int *live;              /* per node: live records below it */
    int *parent;            /* per node: its parent (-1 for the root) */
    unsigned char *alive;   /* per tree position */
    double *z;              /* ns x d z-scores, column-major, local rows */
    ptrdiff_t *lrows;       /* live local rows, for a rebuild */
    ptrdiff_t *hpos;        /* heap of the k nearest (tree positions) */
    double *hd2;
    ptrdiff_t *grp;         /* local rows of the group being formed */
    ptrdiff_t ngrp;
    double *gneg;           /* the negated z-scores of the group's records, column j at
                               gneg + j * cap (read from the tree's points, in cache) */
    ptrdiff_t cap;
    int *lgroup;            /* per local row: its group id in the stratum */
    fsum_run *acc;          /* d exact sums of the live records' coordinates */
    double *cen, *q, *w;    /* d each: centroid, query point, the k-th nearest point */
    kd_item *stack;
    /* the farthest-record queries: the live records in decreasing distance from a
     * reference point c0 (a past centroid), their local rows, distances and z-scores side
     * by side, so that a scan reads memory in order */
    unsigned char *alive_l; /* per local row */
    ptrdiff_t *ord;         /* local rows by decreasing distance from c0 */
    double *ordr;           /* per entry of ord: the distance from c0 */
    double *ordz;           /* per entry of ord: the d z-scores (row-major) */
    ptrdiff_t n_ord, head;  /* entries of ord; the first that may be alive */
    /* the live records not yet in ord, keys[tail .. tail_end) (local rows), every one no
     * farther from c0 than the last entry of ord: ord holds the farthest records only and
     * grows when a scan reaches its end */
    ptrdiff_t tail, tail_end;
    double *c0;
    mdav_key *keys, *keys2; /* scratch of the sort: (distance, tree position), in the tail
                               (distance, local row) */
} mdav_ws;

static void ws_new(mdav_ws *w, ptrdiff_t cap, int d, int kmax, const kernel_host *host)
{
    void *(*alloc)(size_t, size_t) = host->alloc;
    size_t nn = kd_max_nodes(cap, MDAV_LEAF);
    w->t = kd_new(cap, d > 0 ? d : 1, MDAV_LEAF, alloc);
    w->d = d;
    w->live = (int *) alloc(nn, sizeof(int));
    w->parent = (int *) alloc(nn, sizeof(int));
    w->alive = (unsigned char *) alloc(cap, 1);
    w->z = (double *) alloc((size_t) cap * (d > 0 ? d : 1), sizeof(double));
    w->lrows = (ptrdiff_t *) alloc(cap, sizeof(ptrdiff_t));
    w->hpos = (ptrdiff_t *) alloc(kmax, sizeof(ptrdiff_t));
    w->hd2 = (double *) alloc(kmax, sizeof(double));
    w->grp = (ptrdiff_t *) alloc(cap, sizeof(ptrdiff_t));
    w->gneg = (double *) alloc((size_t) cap * (d > 0 ? d : 1), sizeof(double));
    w->cap = cap;
    w->lgroup = (int *) alloc(cap, sizeof(int));
    w->acc = (fsum_run *) alloc(d > 0 ? d : 1, sizeof(fsum_run));
    w->cen = (double *) alloc(3 * (size_t) (d > 0 ? d : 1), sizeof(double));
    w->q = w->cen + (d > 0 ? d : 1);
    w->w = w->q + (d > 0 ? d : 1);
    w->stack = (kd_item *) alloc(KD_STACK_MAX, sizeof(kd_item));
    w->alive_l = (unsigned char *) alloc(cap, 1);
    w->ord = (ptrdiff_t *) alloc(cap, sizeof(ptrdiff_t));
    w->ordr = (double *) alloc(cap, sizeof(double));
    w->ordz = (double *) alloc((size_t) cap * (d > 0 ? d : 1), sizeof(double));
    w->c0 = (double *) alloc(d > 0 ? d : 1, sizeof(double));
    w->keys = (mdav_key *) alloc(cap, sizeof(mdav_key));
    w->keys2 = (mdav_key *) alloc(cap, sizeof(mdav_key));
}

/* (Re)build the tree over the live local rows lrows[0..m) and reset the live counts. */
static void ws_build(mdav_ws *w, ptrdiff_t m)
{
    kd_tree *t = &w->t;
    kd_reuse(t, m);
    kd_build(t, w->z, w->ns, w->lrows);
    for (int v = 0; v < t->n_nodes; v++) {
        w->live[v] = (int) (t->nodes[v].end - t->nodes[v].begin);
        w->parent[v] = -1;
    }
    for (int v = 0; v < t->n_nodes; v++) {
        if (t->nodes[v].left >= 0) {
            w->parent[t->nodes[v].left] = v;
            w->parent[t->nodes[v].right] = v;
        }
    }
    memset(w->alive, 1, (size_t) m);
}

static inline const double *pt(const mdav_ws *w, ptrdiff_t pos)
{
    return w->t.pts + pos * w->d;
}

/* A point of d coordinates copied (memcpy() of a size known only at run time is a library
 * call, measured at 3% of the time here) */
static inline void copy_pt(double *dst, const double *src, int d)
{
    for (int j = 0; j < d; j++) dst[j] = src[j];
}

/* Is (da, a) after (db, b) in the order of nearness (squared distance, then coordinates)? */
static inline int after(const mdav_ws *w, double da, ptrdiff_t a, double db, ptrdiff_t b)
{
    if (da != db) return da > db;
    return kd_lex_less(pt(w, b), pt(w, a), w->d);
}

static void heap_down(mdav_ws *w, int n, int i)
{
    ptrdiff_t *hp = w->hpos;
    double *hd = w->hd2;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && after(w, hd[l], hp[l], hd[m], hp[m])) m = l;
        if (r < n && after(w, hd[r], hp[r], hd[m], hp[m])) m = r;
        if (m == i) return;
        ptrdiff_t tp = hp[i]; hp[i] = hp[m]; hp[m] = tp;
        double td = hd[i]; hd[i] = hd[m]; hd[m] = td;
        i = m;
    }
}

static void heap_up(mdav_ws *w, int i)
{
    ptrdiff_t *hp = w->hpos;
    double *hd = w->hd2;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!after(w, hd[i], hp[i], hd[p], hp[p])) return;
        ptrdiff_t tp = hp[i]; hp[i] = hp[p]; hp[p] = tp;
        double td = hd[i]; hd[i] = hd[p]; hd[p] = td;
        i = p;
    }
}

/* The k nearest live records of q (k <= nlive) into the heap, the k-th nearest at its root.
 * Returns the smallest squared distance of a live record it looked at and left out (INFINITY
 * if none). Every live copy of the k-th nearest is looked at (its box is never farther than
 * the heap's root), so when this is above the k-th's distance the k-th has no copy left. */
static double knn_live(mdav_ws *w, const double *q, int k)
{
    const kd_tree *t = &w->t;
    const int d = w->d;
    double out = INFINITY;
    int cnt = 0, top = 0;
    kd_item *st = w->stack;
    st[top].node = 0; st[top].bd = 0.0; top++;
    while (top) {
        kd_item it = st[--top];
        if (cnt == k && it.bd > w->hd2[0]) continue;
        const kd_node *nd = t->nodes + it.node;
        if (nd->left < 0) {
            for (ptrdiff_t pos = nd->begin; pos < nd->end; pos++) {
                if (!w->alive[pos]) continue;
                double d2 = kd_point_d2(q, pt(w, pos), d);
                if (cnt < k) {
                    w->hpos[cnt] = pos; w->hd2[cnt] = d2;
                    heap_up(w, cnt);
                    cnt++;
                } else if (d2 < w->hd2[0] || (d2 == w->hd2[0] && kd_lex_less(pt(w, pos), pt(w, w->hpos[0]), d))) {
                    out = kd_min(out, w->hd2[0]);
                    w->hpos[0] = pos; w->hd2[0] = d2;
                    heap_down(w, k, 0);
                } else {
                    out = kd_min(out, d2);
                }
            }
            continue;
        }
        int a = nd->left, b = nd->right;
        double ba = w->live[a] ? kd_box_d2(t, a, q) : -1.0, bb = w->live[b] ? kd_box_d2(t, b, q) : -1.0;
        /* the nearer child on top of the stack */
        if (ba > bb) { int tn = a; a = b; b = tn; double tb = ba; ba = bb; bb = tb; }
        if (bb >= 0.0 && !(cnt == k && bb > w->hd2[0])) { st[top].node = b; st[top].bd = bb; top++; }
        if (ba >= 0.0 && !(cnt == k && ba > w->hd2[0])) { st[top].node = a; st[top].bd = ba; top++; }
    }
    return out;
}

static int key_desc(const void *a, const void *b)
{
    const double ra = ((const mdav_key *) a)->r, rb = ((const mdav_key *) b)->r;
    if (ra != rb) return ra > rb ? -1 : 1;
    const ptrdiff_t ia = ((const mdav_key *) a)->i, ib = ((const mdav_key *) b)->i;
    return (ia > ib) - (ia < ib);
}

/* Sort keys[0..m) by decreasing r (r >= 0, so the bits of r order as r does): a radix sort
 * on the complemented bits, a byte per pass, passes where every key has the same byte
 * skipped (qsort() with a comparator took an eighth of the time on skewed data, where the
 * centroid moves and the order is renewed often). Returns the buffer (keys or tmp) that
 * holds the result; equal r keep the order they came in (which does not matter to the scan). */
static const mdav_key *radix_desc(mdav_key *keys, mdav_key *tmp, ptrdiff_t m)
{
    ptrdiff_t count[256];
    mdav_key *src = keys, *dst = tmp;
    for (int pass = 0; pass < 8; pass++) {
        const int sh = 8 * pass;
        memset(count, 0, sizeof count);
        for (ptrdiff_t a = 0; a < m; a++) {
            uint64_t u;
            memcpy(&u, &src[a].r, sizeof u);
            count[(~u >> sh) & 0xff]++;
        }
        int one = 0;
        for (int b = 0; b < 256; b++) if (count[b] == m) one = 1;
        if (one) continue;
        ptrdiff_t pos = 0;
        for (int b = 0; b < 256; b++) { ptrdiff_t c = count[b]; count[b] = pos; pos += c; }
        for (ptrdiff_t a = 0; a < m; a++) {
            uint64_t u;
            memcpy(&u, &src[a].r, sizeof u);
            dst[count[(~u >> sh) & 0xff]++] = src[a];
        }
        mdav_key *t = src; src = dst; dst = t;
    }
    return src;
}

/* Rearrange keys[0..m) so that keys[0..top) hold the top largest r (in any order): a
 * quickselect with a three-way partition (many records can be at one distance). */
static void select_top(mdav_key *keys, ptrdiff_t m, ptrdiff_t top)
{
    ptrdiff_t lo = 0, hi = m;
    while (hi - lo > 1 && top > lo && top < hi) {
        const double x = keys[lo].r, y = keys[lo + (hi - lo) / 2].r, z = keys[hi - 1].r;
        const double p = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        /* [lo, lt) farther than p, [lt, gt) at p, [gt, hi) nearer */
        ptrdiff_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            mdav_key t = keys[i];
            if (t.r > p) { keys[i++] = keys[lt]; keys[lt++] = t; }
            else if (t.r < p) { keys[i] = keys[--gt]; keys[gt] = t; }
            else i++;
        }
        if (top < lt) hi = lt;
        else if (top > gt) lo = gt;
        else return;
    }
}

/* How many of m records to sort at a time: all of a few, else a sixteenth (at least
 * MDAV_TOP_MIN): the scans rarely go deeper before the reference point is renewed. */
static ptrdiff_t top_part(ptrdiff_t m)
{
    if (m <= 2 * MDAV_TOP_MIN) return m;
    return m / 16 > MDAV_TOP_MIN ? m / 16 : MDAV_TOP_MIN;
}

/* keys[0..m) by decreasing r, in keys or tmp (returned) */
static const mdav_key *sort_desc(mdav_key *keys, mdav_key *tmp, ptrdiff_t m)
{
    if (m >= 256) return radix_desc(keys, tmp, m);
    qsort(keys, (size_t) m, sizeof(mdav_key), key_desc);
    return keys;
}

/* The live records in decreasing distance from c (the new reference point c0), the
 * farthest of them in ord. */
static void reference(mdav_ws *w, const double *c)
{
    const int d = w->d;
    ptrdiff_t m = 0;
    for (ptrdiff_t pos = 0; pos < w->t.n; pos++) {
        if (!w->alive[pos]) continue;
        w->keys[m].r = sqrt(kd_point_d2(c, pt(w, pos), d));
        w->keys[m].i = pos;
        m++;
    }
    /* the scans read the top of the order only: that part is sorted, the rest waits */
    const ptrdiff_t top = top_part(m);
    select_top(w->keys, m, top);
    for (ptrdiff_t a = top; a < m; a++) w->keys[a].i = w->t.row[w->keys[a].i];
    const mdav_key *sorted = sort_desc(w->keys, w->keys2, top);
    for (ptrdiff_t a = 0; a < top; a++) {
        const ptrdiff_t pos = sorted[a].i;
        w->ord[a] = w->t.row[pos];
        w->ordr[a] = sorted[a].r;
        copy_pt(w->ordz + a * d, pt(w, pos), d);
    }
    w->n_ord = top;
    w->head = 0;
    w->tail = top;
    w->tail_end = m;
    copy_pt(w->c0, c, d);
}

/* The next part of the order: the tail's live records, the farthest of them sorted onto the
 * end of ord. */
static void extend(mdav_ws *w)
{
    const int d = w->d;
    ptrdiff_t m = w->tail;
    for (ptrdiff_t a = w->tail; a < w->tail_end; a++)
        if (w->alive_l[w->keys[a].i]) w->keys[m++] = w->keys[a];
    w->tail_end = m;
    m -= w->tail;
    const ptrdiff_t top = top_part(m);
    mdav_key *part = w->keys + w->tail;
    select_top(part, m, top);
    const mdav_key *sorted = sort_desc(part, w->keys2, top);
    for (ptrdiff_t a = 0; a < top; a++) {
        const ptrdiff_t i = sorted[a].i, e = w->n_ord + a;
        w->ord[e] = i;
        w->ordr[e] = sorted[a].r;
        for (int j = 0; j < d; j++) w->ordz[e * d + j] = w->z[i + (ptrdiff_t) j * w->ns];
    }
    w->n_ord += top;
    w->tail += top;
}

/* The live record farthest from q (largest squared distance, then lexicographically
 * smallest): its entry in ord (nlive > 0). The records are scanned in decreasing distance r
 * from c0 and the scan stops at the first whose r + |q - c0| (the triangle inequality: an
 * upper bound of its distance from q) is below the best distance found, with a relative
 * margin of 1e-9 that covers every rounding of the distances (a few units in the last
 * place), so that the answer is exact. `scanned` receives the records scanned. */
static ptrdiff_t farthest_live(mdav_ws *w, const double *q, ptrdiff_t *scanned)
{
    const int d = w->d;
    const double dq = sqrt(kd_point_d2(q, w->c0, d));
    double best = -1.0, stop = -1.0;
    ptrdiff_t bi = -1, a = w->head, cnt = 0;
    while (a < w->n_ord && !w->alive_l[w->ord[a]]) a++;
    w->head = a;
    for (;; a++) {
        if (a == w->n_ord) {
            /* the end of ord: the tail is no farther from c0 than its last entry */
            if (w->tail == w->tail_end || (a > 0 && (w->ordr[a - 1] + dq) * (1.0 + 1e-9) < stop)) break;
            extend(w);
            if (a == w->n_ord) break;
        }
        if (!w->alive_l[w->ord[a]]) continue;
        if ((w->ordr[a] + dq) * (1.0 + 1e-9) < stop) break;
        cnt++;
        const double *p = w->ordz + a * d;
        double d2 = kd_point_d2(q, p, d);
        if (d2 > best || (d2 == best && kd_lex_less(p, w->ordz + bi * d, d))) {
            best = d2; bi = a; stop = sqrt(best);
        }
    }
    *scanned = cnt;
    return bi;
}

/* The same by the kd-tree, for s, the record farthest from r (on the rim of the records
 * left, where the bound of the scan above is loose: on skewed data it scanned thousands of
 * records per query): a depth-first search, farthest child first, pruned by the distance
 * to a box's farthest corner (an upper bound of every distance in the box, kdtree.h). Its
 * tree position. */
static ptrdiff_t farthest_tree(mdav_ws *w, const double *q)
{
    const kd_tree *t = &w->t;
    const int d = w->d;
    double best = -1.0;
    ptrdiff_t bp = -1;
    int top = 0;
    kd_item *st = w->stack;
    st[top].node = 0; st[top].bd = kd_box_far_d2(t, 0, q); top++;
    while (top) {
        kd_item it = st[--top];
        if (it.bd < best) continue;
        const kd_node *nd = t->nodes + it.node;
        if (nd->left < 0) {
            for (ptrdiff_t pos = nd->begin; pos < nd->end; pos++) {
                if (!w->alive[pos]) continue;
                double d2 = kd_point_d2(q, pt(w, pos), d);
                if (d2 > best || (d2 == best && kd_lex_less(pt(w, pos), pt(w, bp), d))) {
                    best = d2; bp = pos;
                }
            }
            continue;
        }
        int a = nd->left, b = nd->right;
        double fa = w->live[a] ? kd_box_far_d2(t, a, q) : -1.0, fb = w->live[b] ? kd_box_far_d2(t, b, q) : -1.0;
        /* the farther child on top of the stack */
        if (fa < fb) { int tn = a; a = b; b = tn; double tb = fa; fa = fb; fb = tb; }
        if (fb >= 0.0 && fb >= best) { st[top].node = b; st[top].bd = fb; top++; }
        if (fa >= 0.0 && fa >= best) { st[top].node = a; st[top].bd = fa; top++; }
    }
    return bp;
}

/* Shrink the box of leaf v to its live records, and its ancestors' boxes to the union of
 * their live children's, up to the first that does not change: MDAV groups the outer
 * records first, and boxes that kept their old extent would weaken every bound. */
static void refit(mdav_ws *w, int v)
{
    kd_tree *t = &w->t;
    const int d = w->d;
    if (w->live[v] > 0) {
        double *lo = t->box + (size_t) v * 2 * d, *hi = lo + d;
        const kd_node *nd = t->nodes + v;
        int first = 1;
        for (ptrdiff_t pos = nd->begin; pos < nd->end; pos++) {
            if (!w->alive[pos]) continue;
            const double *p = pt(w, pos);
            if (first) { copy_pt(lo, p, d); copy_pt(hi, p, d); first = 0; }
            else for (int j = 0; j < d; j++) { lo[j] = kd_min(lo[j], p[j]); hi[j] = kd_max(hi[j], p[j]); }
        }
    }
    for (int u = w->parent[v]; u >= 0; u = w->parent[u]) {
        if (w->live[u] == 0) continue;
        const kd_node *nd = t->nodes + u;
        int a = nd->left, b = nd->right;
        if (w->live[a] == 0) a = b;
        if (w->live[b] == 0) b = a;
        double *lo = t->box + (size_t) u * 2 * d, *hi = lo + d;
        const double *la = t->box + (size_t) a * 2 * d, *ha = la + d;
        const double *lb = t->box + (size_t) b * 2 * d, *hb = lb + d;
        int changed = 0;
        for (int j = 0; j < d; j++) {
            double l = kd_min(la[j], lb[j]), h = kd_max(ha[j], hb[j]);
            changed |= l != lo[j] || h != hi[j];
            lo[j] = l; hi[j] = h;
        }
        if (!changed) return;
    }
}

/* Mark the record at tree position pos grouped, and add its local row and negated
 * z-scores to the group. */
static inline void kill(mdav_ws *w, ptrdiff_t pos)
{
    const int leaf = (int) w->t.leaf_of[pos];
    const ptrdiff_t r = w->t.row[pos];
    const double *p = pt(w, pos);
    w->alive[pos] = 0;
    w->alive_l[r] = 0;
    for (int v = leaf; v >= 0; v = w->parent[v]) w->live[v]--;
    for (int j = 0; j < w->d; j++) w->gneg[(ptrdiff_t) j * w->cap + w->ngrp] = -p[j];
    w->grp[w->ngrp++] = r;
    w->nlive--;
    refit(w, leaf);
}

static inline int inside(const kd_tree *t, int node, const double *q)
{
    const int d = t->d;
    const double *lo = t->box + (size_t) node * 2 * d, *hi = lo + d;
    for (int j = 0; j < d; j++) if (q[j] < lo[j] || q[j] > hi[j]) return 0;
    return 1;
}

/* Group every live record equal to q in every coordinate. */
static void kill_copies(mdav_ws *w, const double *q)
{
    const kd_tree *t = &w->t;
    const int d = w->d;
    int top = 0;
    kd_item *st = w->stack;
    st[top].node = 0; st[top].bd = 0.0; top++;
    while (top) {
        int v = st[--top].node;
        if (!w->live[v] || !inside(t, v, q)) continue;
        const kd_node *nd = t->nodes + v;
        if (nd->left < 0) {
            for (ptrdiff_t pos = nd->begin; pos < nd->end; pos++) {
                if (!w->alive[pos]) continue;
                const double *p = pt(w, pos);
                int same = 1;
                for (int j = 0; j < d && same; j++) same = p[j] == q[j];
                if (same) kill(w, pos);
            }
            continue;
        }
        st[top].node = nd->left; top++;
        st[top].node = nd->right; top++;
    }
}

/* Group every live record. */
static void kill_all(mdav_ws *w)
{
    for (ptrdiff_t pos = 0; pos < w->t.n; pos++) if (w->alive[pos]) kill(w, pos);
}

/* The group around q: its k nearest live records and the live copies of the k-th; all
 * the live records when fewer than k would be left. Then the accumulators lose the
 * group's coordinates, its records get group id `gid`, and the tree is rebuilt when
 * fewer than half of its records are alive. */
static void take(mdav_ws *w, const double *q, int k, int gid)
{
    const int d = w->d;
    w->ngrp = 0;
    if (w->nlive < 2 * (ptrdiff_t) k) {
        kill_all(w);
    } else {
        const double out = knn_live(w, q, k);
        copy_pt(w->w, pt(w, w->hpos[0]), d);
        const int copies = out <= w->hd2[0];
        for (int i = 0; i < k; i++) kill(w, w->hpos[i]);
        if (copies) kill_copies(w, w->w);
        if (w->nlive < k) kill_all(w);
    }
    for (int j = 0; j < d; j++) fsum_run_add(w->acc + j, w->gneg + (ptrdiff_t) j * w->cap, w->ngrp);
    for (ptrdiff_t i = 0; i < w->ngrp; i++) w->lgroup[w->grp[i]] = gid;
    if (w->nlive > 0 && w->nlive < w->t.n / 2) {
        ptrdiff_t m = 0;
        for (ptrdiff_t pos = 0; pos < w->t.n; pos++) if (w->alive[pos]) w->lrows[m++] = w->t.row[pos];
        ws_build(w, m);
    }
}

static void centroid(mdav_ws *w)
{
    for (int j = 0; j < w->d; j++)
        w->cen[j] = fsum_run_round(w->acc + j) / (double) w->nlive;
}

/* MDAV on stratum s: local group ids 0.. written (before the offsets) into job->group;
 * returns the number of groups. `host` (NULL inside a parallel region) is paused every
 * MDAV_PAUSE_EVERY records with done + the records grouped. */
static ptrdiff_t mdav_stratum(mdav_ws *w, const mdav_job *job, ptrdiff_t s, const kernel_host *host,
                              ptrdiff_t done)
{
    const ptrdiff_t *rows = job->rows + job->off[s];
    const ptrdiff_t ns = job->off[s + 1] - job->off[s];
    const int k = job->k[s] < 1 ? 1 : job->k[s], d = job->d;
    if (ns == 0) return 0;
    if (ns < 2 * (ptrdiff_t) k || d == 0) {
        for (ptrdiff_t i = 0; i < ns; i++) job->group[rows[i]] = 0;
        return 1;
    }
    w->ns = ns;
    for (int j = 0; j < d; j++) {
        const double *c = job->col[j];
        double *zj = w->z + (ptrdiff_t) j * ns;
        const double m = job->center[j], sd = job->scale[j];
        for (ptrdiff_t i = 0; i < ns; i++) zj[i] = (c[rows[i]] - m) / sd;
        fsum_run_init(w->acc + j);
        fsum_run_add(w->acc + j, zj, ns);
    }
    for (ptrdiff_t i = 0; i < ns; i++) {
        w->lrows[i] = i;
        w->alive_l[i] = 1;
    }
    ws_build(w, ns);
    w->nlive = ns;
    int gid = 0;
    ptrdiff_t next_pause = MDAV_PAUSE_EVERY, scanned;
    centroid(w);
    reference(w, w->cen);
    while (w->nlive >= 3 * (ptrdiff_t) k) {
        centroid(w);
        copy_pt(w->q, w->ordz + farthest_live(w, w->cen, &scanned) * d, d);
        /* a long scan: the centroid has moved away from the reference point */
        if (scanned > 64 && scanned > w->nlive / 256) reference(w, w->cen);
        take(w, w->q, k, gid++);
        if (w->nlive == 0) break;
        copy_pt(w->q, pt(w, farthest_tree(w, w->q)), d);
        take(w, w->q, k, gid++);
        if (host && ns - w->nlive >= next_pause) {
            host_pause(host, done + ns - w->nlive);
            next_pause = ns - w->nlive + MDAV_PAUSE_EVERY;
        }
    }
    if (w->nlive >= 2 * (ptrdiff_t) k) {
        centroid(w);
        copy_pt(w->q, w->ordz + farthest_live(w, w->cen, &scanned) * d, d);
        take(w, w->q, k, gid++);
    }
    if (w->nlive > 0) {
        w->ngrp = 0;
        kill_all(w);
        for (ptrdiff_t i = 0; i < w->ngrp; i++) w->lgroup[w->grp[i]] = gid;
        gid++;
    }
    for (ptrdiff_t i = 0; i < ns; i++) job->group[rows[i]] = w->lgroup[i];
    return gid;
}

const char *mdav_run(mdav_job *job)
{
    const ptrdiff_t S = job->n_strata;
    const kernel_host *host = job->host;
    job->n_groups = 0;
    if (S < 1 || job->n < 1) return NULL;
    if (job->off[0] != 0 || job->off[S] != job->n) return "the strata do not cover the rows";
    ptrdiff_t cap = 1;
    int kmax = 1;
    for (ptrdiff_t s = 0; s < S; s++) {
        ptrdiff_t ns = job->off[s + 1] - job->off[s];
        if (ns < 0) return "the stratum boundaries decrease";
        if (ns > cap) cap = ns;
        if (job->k[s] > kmax) kmax = job->k[s];
    }
    for (ptrdiff_t i = 0; i < job->n; i++)
        if (job->rows[i] < 0 || job->rows[i] >= job->n) return "a row out of range";
    if (kmax > cap) kmax = (int) cap;
    int nws = job->nthreads < 1 ? 1 : job->nthreads;
    if (nws > S) nws = (int) S;
    mdav_ws *ws = (mdav_ws *) host->alloc(nws, sizeof(mdav_ws));
    for (int i = 0; i < nws; i++) ws_new(ws + i, cap, job->d, kmax, host);
    ptrdiff_t *ng = (ptrdiff_t *) host->alloc(S, sizeof(ptrdiff_t));

    /* batches of consecutive strata: at least nws strata and MDAV_BATCH records (or the
     * rest); a batch of one stratum runs alone, paused inside, the others in parallel */
    ptrdiff_t done = 0;
    for (ptrdiff_t s0 = 0; s0 < S;) {
        ptrdiff_t s1 = s0, cum = 0;
        while (s1 < S && (s1 - s0 < nws || cum < MDAV_BATCH)) { cum += job->off[s1 + 1] - job->off[s1]; s1++; }
        if (s1 - s0 == 1 || nws == 1) {
            for (ptrdiff_t s = s0; s < s1; s++) {
                ng[s] = mdav_stratum(ws, job, s, host, done);
                done += job->off[s + 1] - job->off[s];
            }
        } else {
            int nt = threads_for(nws, (double) cum);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
#endif
            for (ptrdiff_t s = s0; s < s1; s++) ng[s] = mdav_stratum(ws + THREAD_ID, job, s, NULL, 0);
            (void) nt;
            done += cum;
        }
        host_pause(host, done);
        s0 = s1;
    }
    /* the ids over all strata, stratum by stratum */
    ptrdiff_t base = 0;
    for (ptrdiff_t s = 0; s < S; s++) {
        for (ptrdiff_t i = job->off[s]; i < job->off[s + 1]; i++) job->group[job->rows[i]] += (int) base;
        base += ng[s];
    }
    job->n_groups = base;
    return NULL;
}

void mdav_means(const double *const *col, int p, ptrdiff_t n, const int *group,
                ptrdiff_t n_groups, double *means, int *size, int nthreads, const kernel_host *host)
{
    if (n_groups < 1) return;
    ptrdiff_t *start = (ptrdiff_t *) host->alloc((size_t) n_groups + 1, sizeof(ptrdiff_t));
    ptrdiff_t *member = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    for (ptrdiff_t g = 0; g < n_groups; g++) size[g] = 0;
    for (ptrdiff_t i = 0; i < n; i++) size[group[i]]++;
    start[0] = 0;
    ptrdiff_t largest = 1;
    for (ptrdiff_t g = 0; g < n_groups; g++) {
        start[g + 1] = start[g] + size[g];
        if (size[g] > largest) largest = size[g];
    }
    ptrdiff_t *fill = (ptrdiff_t *) host->alloc((size_t) n_groups, sizeof(ptrdiff_t));
    for (ptrdiff_t g = 0; g < n_groups; g++) fill[g] = start[g];
    for (ptrdiff_t i = 0; i < n; i++) member[fill[group[i]]++] = i;
    /* every group's means on their own: the groups split over the threads, a buffer each */
    const int nt = threads_for(nthreads < 1 ? 1 : nthreads, (double) n * p);
    double *bufs = (double *) host->alloc((size_t) nt * largest, sizeof(double));
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt)
#endif
    for (ptrdiff_t g = 0; g < n_groups; g++) {
        double *buf = bufs + (ptrdiff_t) THREAD_ID * largest;
        const ptrdiff_t b = start[g], m = start[g + 1] - b;
        for (int j = 0; j < p; j++) {
            double *out = means + (ptrdiff_t) j * n_groups;
            if (m == 0) { out[g] = 0.0; continue; }
            const double *c = col[j];
            int equal = 1;
            const double v0 = c[member[b]];
            for (ptrdiff_t i = 0; i < m; i++) {
                buf[i] = c[member[b + i]];
                equal &= buf[i] == v0;
            }
            out[g] = equal ? v0 : fsum(buf, m, 1) / (double) m;
        }
    }
    (void) nt;
}
