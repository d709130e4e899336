/* Kernels of (k, epsilon)-anonymisation around its classes; see keps.h. */
#include <math.h>
#include <stdlib.h>
#include "keps.h"

/* Rows between two pauses. */
#define KEPS_CHUNK ((ptrdiff_t) 1 << 20)

double laplace_from_unif(double u, double b)
{
    /* F^{-1}(u) = -b sign(u - 1/2) log(1 - 2 |u - 1/2|) */
    double t = u - 0.5;
    return t < 0 ? b * log1p(2.0 * t) : -b * log1p(-2.0 * t);
}

static int cmp_pair(const void *a, const void *b)
{
    const keps_pair *x = (const keps_pair *) a, *y = (const keps_pair *) b;
    if (x->v < y->v) return -1;
    if (x->v > y->v) return 1;
    return (x->i > y->i) - (x->i < y->i);
}

static void sort_first(const double *o, ptrdiff_t m, int p, keps_pair *pairs)
{
    for (ptrdiff_t i = 0; i < m; i++) { pairs[i].v = o[i * p]; pairs[i].i = i; }
    qsort(pairs, (size_t) m, sizeof(keps_pair), cmp_pair);
}

static inline double sq_term(double q, double o, double s)
{
    double t = (q - o) / s;
    return t * t;
}

static inline double dist(const double *q, const double *o, int p, const double *s)
{
    double acc = 0.0;
    for (int v = 0; v < p; v++) acc += sq_term(q[v], o[v], s[v]);
    return acc;
}

void link_class(const double *o, const double *q, ptrdiff_t m, int p, const double *s,
                keps_pair *pairs, int *linked)
{
    sort_first(o, m, p, pairs);
    for (ptrdiff_t i = 0; i < m; i++) {
        const double *qi = q + i * p;
        const double D = dist(qi, o + i * p, p, s);
        int ok = 1;
        if (D > 0) {
            /* first sorted position with o_j0 >= q_i0 */
            ptrdiff_t lo = 0, hi = m;
            while (lo < hi) {
                ptrdiff_t mid = lo + (hi - lo) / 2;
                if (pairs[mid].v < qi[0]) lo = mid + 1; else hi = mid;
            }
            /* any j with dist < D has its first term < D (the sum only grows) */
            for (ptrdiff_t a = lo; ok && a < m && sq_term(qi[0], pairs[a].v, s[0]) < D; a++) {
                ptrdiff_t j = pairs[a].i;
                if (j != i && dist(qi, o + j * p, p, s) < D) ok = 0;
            }
            for (ptrdiff_t a = lo - 1; ok && a >= 0 && sq_term(qi[0], pairs[a].v, s[0]) < D; a--) {
                ptrdiff_t j = pairs[a].i;
                if (j != i && dist(qi, o + j * p, p, s) < D) ok = 0;
            }
        }
        linked[i] = ok;
    }
}

void confident_counts(const double *o, const double *q, ptrdiff_t m, int p, const double *r,
                      ptrdiff_t cap, keps_pair *pairs, int *l)
{
    sort_first(o, m, p, pairs);
    for (ptrdiff_t i = 0; i < m; i++) {
        const double *qi = q + i * p;
        /* first sorted position with q_i0 - o_j0 <= r0 (monotone in o_j0) */
        ptrdiff_t lo = 0, hi = m;
        while (lo < hi) {
            ptrdiff_t mid = lo + (hi - lo) / 2;
            if (qi[0] - pairs[mid].v > r[0]) lo = mid + 1; else hi = mid;
        }
        ptrdiff_t count = 0;
        for (ptrdiff_t a = lo; a < m && count < cap && pairs[a].v - qi[0] <= r[0]; a++) {
            const double *oj = o + pairs[a].i * p;
            int in = 1;
            for (int v = 1; v < p && in; v++) in = fabs(qi[v] - oj[v]) <= r[v];
            count += in;
        }
        l[i] = (int) count;
    }
}

void keps_diameters(const double *y, ptrdiff_t n, int p, const int *cls, ptrdiff_t C,
                    double *diam, const kernel_host *host)
{
    double *lo = (double *) host->alloc((size_t) C * p, sizeof(double));
    double *hi = (double *) host->alloc((size_t) C * p, sizeof(double));
    for (ptrdiff_t i = 0; i < (ptrdiff_t) C * p; i++) { lo[i] = HUGE_VAL; hi[i] = -HUGE_VAL; }
    for (int v = 0; v < p; v++) {
        for (ptrdiff_t i = 0; i < n; i++) {
            double t = y[i + (size_t) v * n];
            ptrdiff_t c = cls[i] - 1 + (ptrdiff_t) v * C;
            if (t < lo[c]) lo[c] = t;
            if (t > hi[c]) hi[c] = t;
        }
    }
    for (ptrdiff_t i = 0; i < (ptrdiff_t) C * p; i++) diam[i] = hi[i] >= lo[i] ? hi[i] - lo[i] : 0.0;
}

/* Gather the rows of one class into row-major buffers. */
static void gather(const double *x, ptrdiff_t n, int p, const ptrdiff_t *rows, ptrdiff_t m, double *buf)
{
    for (ptrdiff_t i = 0; i < m; i++)
        for (int v = 0; v < p; v++) buf[i * p + v] = x[rows[i] + (size_t) v * n];
}

static ptrdiff_t max_class(const ptrdiff_t *off, ptrdiff_t C)
{
    ptrdiff_t mx = 1;
    for (ptrdiff_t c = 0; c < C; c++) if (off[c + 1] - off[c] > mx) mx = off[c + 1] - off[c];
    return mx;
}

void keps_per_class(const double *po, const double *pq, ptrdiff_t n, int p, const ptrdiff_t *rows,
                    const ptrdiff_t *off, ptrdiff_t C, const double *pp, ptrdiff_t cap,
                    int *pout, const kernel_host *host)
{
    const ptrdiff_t mx = max_class(off, C);
    double *ob = (double *) host->alloc((size_t) mx * p, sizeof(double));
    double *qb = (double *) host->alloc((size_t) mx * p, sizeof(double));
    double *pv = (double *) host->alloc(p, sizeof(double));
    int *res = (int *) host->alloc(mx, sizeof(int));
    keps_pair *pairs = (keps_pair *) host->alloc(mx, sizeof(keps_pair));
    ptrdiff_t done = 0;
    for (ptrdiff_t c = 0; c < C; c++) {
        ptrdiff_t m = off[c + 1] - off[c];
        if (m <= 0) continue;
        const ptrdiff_t *r = rows + off[c];
        gather(po, n, p, r, m, ob);
        gather(pq, n, p, r, m, qb);
        for (int v = 0; v < p; v++) pv[v] = pp[c + (ptrdiff_t) v * C];
        if (cap < 0) link_class(ob, qb, m, p, pv, pairs, res);
        else confident_counts(ob, qb, m, p, pv, cap, pairs, res);
        for (ptrdiff_t i = 0; i < m; i++) pout[r[i]] = res[i];
        done += m;
        if (done >= KEPS_CHUNK) {
            host_pause(host, off[c + 1]);
            done = 0;
        }
    }
}
