/* Pure kernels for (k, epsilon)-anonymisation; see mondrian.h. No R API. */
#include <math.h>
#include <stdlib.h>
#include "mondrian.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* Quickselect with a median-of-three pivot and three-way partitioning (ties gather in the
 * middle, so runs of equal values cost one pass). After 64 rounds without finishing it
 * sorts what is left, which bounds the worst case by O(n log n). */
double mdr_select(double *v, ptrdiff_t n, ptrdiff_t r)
{
    ptrdiff_t lo = 0, hi = n; /* the answer is in v[lo, hi) */
    for (int round = 0; hi - lo > 1; round++) {
        if (round >= 64) {
            qsort(v + lo, (size_t) (hi - lo), sizeof(double), cmp_double);
            return v[r];
        }
        double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1], pivot;
        if (a < b) pivot = b < c ? b : (a < c ? c : a);
        else pivot = a < c ? a : (b < c ? c : b);
        /* v[lo, lt) < pivot, v[lt, i) == pivot, v[gt, hi) > pivot */
        ptrdiff_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            double t = v[i];
            if (t < pivot) { v[i] = v[lt]; v[lt] = t; lt++; i++; }
            else if (t > pivot) { gt--; v[i] = v[gt]; v[gt] = t; }
            else i++;
        }
        if (r < lt) hi = lt;
        else if (r >= gt) lo = gt;
        else return pivot;
    }
    return v[r];
}

void mdr_rows_range(const double *xj, const ptrdiff_t *rows, ptrdiff_t b, ptrdiff_t e,
                    double *lo, double *hi)
{
    double l = xj[rows[b]], h = l;
    for (ptrdiff_t i = b + 1; i < e; i++) {
        double t = xj[rows[i]];
        if (t < l) l = t;
        if (t > h) h = t;
    }
    *lo = l; *hi = h;
}

ptrdiff_t mondrian_partition(const double *x, ptrdiff_t ldx, int d, const double *inv_range,
                             ptrdiff_t *rows, ptrdiff_t n, ptrdiff_t k, double *vals,
                             ptrdiff_t *tmp, mdr_range *stack, ptrdiff_t *ends, int *order,
                             double *width, void (*poll)(void))
{
    ptrdiff_t n_classes = 0, top = 0, work = 0;
    stack[top].begin = 0; stack[top].end = n; top++;
    while (top > 0) {
        top--;
        const ptrdiff_t b = stack[top].begin, e = stack[top].end, m = e - b;
        /* about 2^20 records handled between two polls (a large stratum takes seconds) */
        work += m;
        if (poll && work >= ((ptrdiff_t) 1 << 20)) { poll(); work = 0; }
        int cut = 0;
        if (m >= 2 * k) {
            /* normalised widths, then columns by decreasing width (stable: ties by index) */
            for (int j = 0; j < d; j++) {
                double lo, hi;
                mdr_rows_range(x + (size_t) j * ldx, rows, b, e, &lo, &hi);
                width[j] = (hi - lo) * inv_range[j];
                int pos = j;
                while (pos > 0 && width[order[pos - 1]] < width[j]) { order[pos] = order[pos - 1]; pos--; }
                order[pos] = j;
            }
            for (int o = 0; o < d && !cut; o++) {
                const int j = order[o];
                if (!(width[j] > 0)) break;
                const double *xj = x + (size_t) j * ldx;
                for (ptrdiff_t i = 0; i < m; i++) vals[i] = xj[rows[b + i]];
                const double med = mdr_select(vals, m, (m - 1) / 2);
                /* cut A: x <= med; cut B: x < upper median, which is cut A unless the
                 * upper median equals med, and then x < med (see mondrian.h) */
                ptrdiff_t na = 0, nb = 0;
                for (ptrdiff_t i = b; i < e; i++) {
                    const double t = xj[rows[i]];
                    na += t <= med;
                    nb += t < med;
                }
                if (na <= m / 2) nb = na;
                const int ok_a = na >= k && m - na >= k, ok_b = nb >= k && m - nb >= k;
                if (!ok_a && !ok_b) continue;
                const ptrdiff_t da = 2 * na - m, db = 2 * nb - m;
                const int use_b = !ok_a || (ok_b && (db < 0 ? -db : db) < (da < 0 ? -da : da));
                const ptrdiff_t nl = use_b ? nb : na;
                ptrdiff_t l = 0, r = nl;
                for (ptrdiff_t i = b; i < e; i++) {
                    const double t = xj[rows[i]];
                    if (use_b ? t < med : t <= med) tmp[l++] = rows[i];
                    else tmp[r++] = rows[i];
                }
                for (ptrdiff_t i = 0; i < m; i++) rows[b + i] = tmp[i];
                /* right pushed first so the left part is finished first */
                stack[top].begin = b + nl; stack[top].end = e; top++;
                stack[top].begin = b; stack[top].end = b + nl; top++;
                cut = 1;
            }
        }
        if (!cut) ends[n_classes++] = e;
    }
    return n_classes;
}

double laplace_from_unif(double u, double b)
{
    /* F^{-1}(u) = -b sign(u - 1/2) log(1 - 2 |u - 1/2|) */
    double t = u - 0.5;
    return t < 0 ? b * log1p(2.0 * t) : -b * log1p(-2.0 * t);
}

static int cmp_pair(const void *a, const void *b)
{
    const mdr_pair *x = (const mdr_pair *) a, *y = (const mdr_pair *) b;
    if (x->v < y->v) return -1;
    if (x->v > y->v) return 1;
    return (x->i > y->i) - (x->i < y->i);
}

static void sort_first(const double *o, ptrdiff_t m, int p, mdr_pair *pairs)
{
    for (ptrdiff_t i = 0; i < m; i++) { pairs[i].v = o[i * p]; pairs[i].i = i; }
    qsort(pairs, (size_t) m, sizeof(mdr_pair), cmp_pair);
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
                mdr_pair *pairs, int *linked)
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
                      ptrdiff_t cap, mdr_pair *pairs, int *l)
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
