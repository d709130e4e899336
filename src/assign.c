/* Shortest augmenting path assignment, dense and sparse: see assign.h. */
#include <math.h>
#include "assign.h"
#include "kdtree.h"

#define POLL_WORK ((double) (1 << 20))

static inline void work_done(assign_work *w, double units)
{
    w->since_poll += units;
    if (w->since_poll >= POLL_WORK) {
        w->since_poll = 0.0;
        if (w->poll) w->poll();
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

/* Heap order: shorter distance first; at equal distance a free column first (it ends the
 * search), then the lower index. Keys do not change during one search except by decrease. */
static inline int heap_before(const assign_work *w, ptrdiff_t a, ptrdiff_t b)
{
    double da = w->shortest[a], db = w->shortest[b];
    if (da != db) return da < db;
    int fa = w->row4col[a] < 0, fb = w->row4col[b] < 0;
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

ptrdiff_t assign_sparse(ptrdiff_t nr, ptrdiff_t nc, const ptrdiff_t *ptr, const int *col,
                        const double *cost, ptrdiff_t *col4row, double *u, double *v,
                        assign_work *w, int warm)
{
    ptrdiff_t unmatched = 0;
    if (!warm) {
        for (ptrdiff_t i = 0; i < nr; i++) { u[i] = 0.0; col4row[i] = -1; }
        for (ptrdiff_t j = 0; j < nc; j++) {
            v[j] = 0.0; w->row4col[j] = -1; w->path[j] = -1; w->sc[j] = 0;
            w->shortest[j] = INFINITY; w->heap_pos[j] = -1;
        }
    }
    for (ptrdiff_t cur = 0; cur < nr; cur++) {
        if (col4row[cur] >= 0) continue;
        ptrdiff_t n_sr = 0, n_sc = 0, n_touched = 0, n_heap = 0, sink = -1, i = cur;
        double min_val = 0.0, scanned = 0.0;
        for (;;) {
            w->sr_list[n_sr++] = i;
            for (ptrdiff_t e = ptr[i]; e < ptr[i + 1]; e++) {
                ptrdiff_t j = col[e];
                if (w->sc[j]) continue;
                double r = min_val + cost[e] - u[i] - v[j];
                if (r < w->shortest[j]) {
                    if (w->heap_pos[j] < 0) {
                        if (!isfinite(w->shortest[j])) w->touched[n_touched++] = j;
                        w->shortest[j] = r;
                        w->path[j] = i;
                        w->heap[n_heap] = j;
                        w->heap_pos[j] = n_heap;
                        heap_up(w, n_heap++);
                    } else {
                        w->shortest[j] = r;
                        w->path[j] = i;
                        heap_up(w, w->heap_pos[j]);
                    }
                }
            }
            scanned += (double) (ptr[i + 1] - ptr[i]) + 1.0;
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
            if (w->row4col[j] < 0) { sink = j; break; }
            i = w->row4col[j];
        }
        if (sink >= 0) augment(cur, sink, min_val, n_sr, n_sc, col4row, u, v, w);
        else {
            unmatched++;
            if (w->fail) for (ptrdiff_t t = 0; t < n_sr; t++) w->fail[w->sr_list[t]] = 1;
        }
        for (ptrdiff_t t = 0; t < n_sc; t++) w->sc[w->sc_list[t]] = 0;
        for (ptrdiff_t t = 0; t < n_heap; t++) w->heap_pos[w->heap[t]] = -1;
        for (ptrdiff_t t = 0; t < n_touched; t++) w->shortest[w->touched[t]] = INFINITY;
        work_done(w, scanned * 8.0);
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

void assign_weighted_nn2(const kd_tree *t, const double *nodew, const double *wpos, const double *q,
                         double *b1, ptrdiff_t *p1, double *b2, kd_item *st)
{
    const int d = t->d;
    *b1 = *b2 = INFINITY;
    *p1 = -1;
    if (t->n == 0) return;
    int sp = 0;
    st[sp].node = 0;
    st[sp].bd = kd_box_d2(t, 0, q) + nodew[0];
    sp++;
    while (sp) {
        kd_item it = st[--sp];
        if (!(it.bd < *b2)) continue;
        const kd_node *nd = t->nodes + it.node;
        if (nd->left < 0) {
            for (ptrdiff_t p = nd->begin; p < nd->end; p++) {
                double val = kd_point_d2(q, t->pts + p * d, d) + wpos[p];
                if (val < *b1) { *b2 = *b1; *b1 = val; *p1 = p; }
                else if (val < *b2) *b2 = val;
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
