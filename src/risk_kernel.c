/* Kernels of risk_rmd() and risk_linkage(); see risk_kernel.h. */
#include <math.h>
#include <stdint.h>
#include "risk_kernel.h"

ptrdiff_t rk_count_within_dist(const kd_tree *t, const double *q, double w, ptrdiff_t stop_at,
                               kd_item *st)
{
    const int d = t->d;
    ptrdiff_t count = 0;
    int sp = 0;
    if (t->n == 0 || stop_at <= 0) return 0;
    /* Prune and accept whole boxes with bounds a little wider and narrower than w^2, so the
     * rounding of sqrt() can never matter there; points near the boundary are decided by
     * the exact test sqrt(d2) <= w. */
    const double w2 = w * w, hi2 = w2 * (1.0 + 1e-9) + 1e-300, lo2 = w2 * (1.0 - 1e-9);
    st[sp].node = 0; st[sp].bd = 0.0; sp++;
    while (sp > 0 && count < stop_at) {
        int id = st[--sp].node;
        const kd_node *nd = t->nodes + id;
        double near, far;
        kd_box_bounds(t, id, q, &near, &far);
        if (near > hi2) continue;
        if (far < lo2) { count += nd->end - nd->begin; continue; }
        if (nd->left < 0) {
            for (ptrdiff_t p = nd->begin; p < nd->end; p++)
                if (sqrt(kd_point_d2(q, t->pts + p * d, d)) <= w) count++;
            continue;
        }
        /* nearer child last, so it is searched first and an early stop comes sooner */
        double bl = kd_box_d2(t, nd->left, q), br = kd_box_d2(t, nd->right, q);
        if (bl <= br) {
            st[sp].node = nd->right; st[sp].bd = br; sp++;
            st[sp].node = nd->left; st[sp].bd = bl; sp++;
        } else {
            st[sp].node = nd->left; st[sp].bd = bl; sp++;
            st[sp].node = nd->right; st[sp].bd = br; sp++;
        }
    }
    return count < stop_at ? count : stop_at;
}

double rk_link_share(const kd_tree *t, const double *q, const double *self, kd_heap *h)
{
    const double ds = kd_point_d2(q, self, t->d);
    kd_knn_point(t, q, h);
    if (h->count < 1 || h->d2[0] < ds) return 0.0;
    /* self is in the tree at squared distance ds, so the count is >= 1 */
    ptrdiff_t c = kd_count_within(t, q, ds, PTRDIFF_MAX, h->stack);
    return c > 0 ? 1.0 / (double) c : 0.0;
}
