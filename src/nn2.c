/* Nearest-neighbour queries of the risk battery: the two nearest points (the NNDR
 * confidence of the linkage attacks) and the neighbour sets of the inference attack.
 * Pure C kernels over the kd-trees of kdtree.h; see nn2.h. */
#include <math.h>
#include <stdint.h>
#include "nn2.h"

void nn2_query(const kd_tree *t, const double *q, kd_heap *h, double *d1, double *d2)
{
    *d1 = *d2 = INFINITY;
    if (t->n == 0) return;
    if (t->n == 1) { *d1 = kd_point_d2(q, t->pts, t->d); return; }
    kd_knn_point(t, q, h);
    *d1 = h->d2[0];
    *d2 = h->d2[1];
}

void nn_rank(const kd_tree *t, const double *q, const double *self, ptrdiff_t cap,
             double *lt, double *le, kd_item *stack)
{
    const double ds = kd_point_d2(q, self, t->d);
    /* squared distances are doubles: d2 < ds exactly when d2 <= the next double below ds */
    const ptrdiff_t l = ds > 0.0 && cap > 0 ? kd_count_within(t, q, nextafter(ds, 0.0), cap, stack) : 0;
    *lt = (double) l;
    *le = l >= cap ? NAN : (double) kd_count_within(t, q, ds, PTRDIFF_MAX, stack);
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
