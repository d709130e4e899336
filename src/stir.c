/* Pure kernels for cluster stirring; see stir.h. No R API. */
#include <math.h>
#include <stdlib.h>
#include "stir.h"

void stir_group(const int *cl, ptrdiff_t n, int C, ptrdiff_t *start, ptrdiff_t *rows)
{
    for (int c = 0; c <= C; c++) start[c] = 0;
    for (ptrdiff_t i = 0; i < n; i++) start[cl[i] + 1]++;
    for (int c = 0; c < C; c++) start[c + 1] += start[c];
    /* fill with a moving cursor per cluster, then restore start */
    for (ptrdiff_t i = 0; i < n; i++) rows[start[cl[i]]++] = i;
    for (int c = C; c > 0; c--) start[c] = start[c - 1];
    start[0] = 0;
}

static int cmp_pair(const void *a, const void *b)
{
    const stir_pair *p = a, *q = b;
    if (p->v < q->v) return -1;
    if (p->v > q->v) return 1;
    return (p->r > q->r) - (p->r < q->r);
}

static int pair_less(stir_pair a, stir_pair b) { return a.v < b.v || (a.v == b.v && a.r < b.r); }

/* The element of rank k (0-based) of p[0..m) in (value, row) order, by quickselect with a
 * median-of-three pivot; the pairs are distinct (rows are), so a two-way partition is
 * enough. After 64 rounds it sorts what is left, bounding the worst case by O(m log m). */
static stir_pair select_pair(stir_pair *p, ptrdiff_t m, ptrdiff_t k)
{
    ptrdiff_t lo = 0, hi = m; /* the answer is in p[lo, hi) */
    for (int round = 0; hi - lo > 1; round++) {
        if (round >= 64) {
            qsort(p + lo, (size_t) (hi - lo), sizeof(stir_pair), cmp_pair);
            return p[k];
        }
        stir_pair a = p[lo], b = p[lo + (hi - lo) / 2], c = p[hi - 1], pivot;
        if (pair_less(a, b)) pivot = pair_less(b, c) ? b : (pair_less(a, c) ? c : a);
        else pivot = pair_less(a, c) ? a : (pair_less(b, c) ? c : b);
        /* p[lo, lt) < pivot, p[gt, hi) > pivot, the pivot itself in between */
        ptrdiff_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            stir_pair t = p[i];
            if (pair_less(t, pivot)) { p[i] = p[lt]; p[lt] = t; lt++; i++; }
            else if (pair_less(pivot, t)) { gt--; p[i] = p[gt]; p[gt] = t; }
            else i++;
        }
        if (k < lt) hi = lt;
        else if (k >= gt) lo = gt;
        else return pivot;
    }
    return p[k];
}

void stir_centroid(const double *x, ptrdiff_t n, int d, const int *nominal,
                   const ptrdiff_t *start, const ptrdiff_t *rows, int C, stir_pair *pairs,
                   int *crow, double *radius)
{
    for (int j = 0; j < d; j++) {
        const double *xj = x + n * (ptrdiff_t) j;
        for (int c = 0; c < C; c++) {
            ptrdiff_t b = start[c], m = start[c + 1] - b;
            ptrdiff_t out = c + (ptrdiff_t) C * j;
            if (m == 0) { crow[out] = 0; radius[out] = 0; continue; }
            for (ptrdiff_t i = 0; i < m; i++) {
                pairs[i].r = rows[b + i];
                pairs[i].v = xj[rows[b + i]];
            }
            if (!nominal[j]) {
                double mn = pairs[0].v, mx = mn;
                for (ptrdiff_t i = 1; i < m; i++) {
                    if (pairs[i].v < mn) mn = pairs[i].v;
                    if (pairs[i].v > mx) mx = pairs[i].v;
                }
                stir_pair med = select_pair(pairs, m, (m - 1) / 2);
                double lo = med.v - mn, hi = mx - med.v;
                crow[out] = (int) (med.r + 1);
                radius[out] = lo > hi ? lo : hi;
            } else {
                qsort(pairs, (size_t) m, sizeof(stir_pair), cmp_pair);
                ptrdiff_t best = 0, best_n = 0;
                for (ptrdiff_t i = 0; i < m;) {
                    ptrdiff_t e = i + 1;
                    while (e < m && pairs[e].v == pairs[i].v) e++;
                    if (e - i > best_n) { best_n = e - i; best = i; }
                    i = e;
                }
                crow[out] = (int) (pairs[best].r + 1);
                radius[out] = best_n < m ? 1.0 : 0.0;
            }
        }
    }
}

double stir_map_value(const double *kx, const double *ky, int nk, double dd)
{
    if (nk < 2) return ky[0] + (dd - kx[0]);
    if (dd >= kx[nk - 1]) {
        double slope = (ky[nk - 1] - ky[nk - 2]) / (kx[nk - 1] - kx[nk - 2]);
        return ky[nk - 1] + slope * (dd - kx[nk - 1]);
    }
    if (dd <= kx[0]) return ky[0];
    int lo = 0, hi = nk - 1; /* kx[lo] <= dd < kx[hi] */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (kx[mid] <= dd) lo = mid; else hi = mid;
    }
    double t = (dd - kx[lo]) / (kx[hi] - kx[lo]);
    return ky[lo] + t * (ky[hi] - ky[lo]);
}

void stir_nearest(const double *xo, ptrdiff_t no, ptrdiff_t from, ptrdiff_t to,
                  const double *xc, int L, int d,
                  const int *nominal, const double *const *kx, const double *const *ky,
                  const int *nk, int *target, double *dist)
{
    for (ptrdiff_t o = from; o < to; o++) {
        int best = -1;
        double best_d = 0;
        for (int l = 0; l < L; l++) {
            double s = 0;
            for (int j = 0; j < d; j++) {
                double a = xo[o + no * (ptrdiff_t) j], c = xc[l + (ptrdiff_t) L * j];
                double raw = nominal[j] ? (double) (a != c) : fabs(a - c);
                s += raw == 0 ? 0 : stir_map_value(kx[j], ky[j], nk[j], raw);
            }
            if (best < 0 || s < best_d) { best = l; best_d = s; }
        }
        target[o] = best;
        dist[o] = best_d;
    }
}

void stir_greedy_init(stir_greedy *s)
{
    for (ptrdiff_t p = 0; p < s->n; p++) {
        s->next[p] = p + 1 < s->n ? p + 1 : -1;
        s->prev[p] = p - 1;
    }
    s->head = s->n > 0 ? 0 : -1;
    s->n_clusters = 0;
}

static void unlink_pos(stir_greedy *s, ptrdiff_t p)
{
    ptrdiff_t a = s->prev[p], b = s->next[p];
    if (a >= 0) s->next[a] = b; else s->head = b;
    if (b >= 0) s->prev[b] = a;
}

int stir_greedy_step(stir_greedy *s, ptrdiff_t max_work)
{
    const double *x = s->x;
    ptrdiff_t n = s->n;
    int d = s->d;
    /* work = records scanned: with a nominal first column (or a wide radius) one leader
     * can scan every open record, so a count of leaders alone does not bound the work */
    for (ptrdiff_t work = 0; work < max_work && s->head >= 0; work++) {
        ptrdiff_t p = s->head;
        ptrdiff_t r = s->order[p];
        int c = s->n_clusters++;
        s->cl[r] = c;
        for (int j = 0; j < d; j++) s->lo[j] = s->hi[j] = x[r + n * (ptrdiff_t) j];
        ptrdiff_t q = s->next[p];
        unlink_pos(s, p);
        while (q >= 0) {
            ptrdiff_t nq = s->next[q], rq = s->order[q];
            work++;
            /* the records are sorted by the columns in order: while the leading nominal
             * columns (radius < 1) equal the leader's, the next column is nondecreasing, so
             * once a record leaves the leader's radius on it, every later one does too */
            int stop = 0;
            for (int j = 0; j < d; j++) {
                double v = x[rq + n * (ptrdiff_t) j], l = x[r + n * (ptrdiff_t) j];
                if (s->nominal[j]) {
                    if (s->eps[j] >= 1) break;
                    if (v != l) { stop = 1; break; }
                } else {
                    stop = v - l > s->eps[j];
                    break;
                }
            }
            if (stop) break;
            int ok = 1;
            for (int j = 0; j < d && ok; j++) {
                double v = x[rq + n * (ptrdiff_t) j];
                if (s->nominal[j]) {
                    ok = s->eps[j] >= 1 || v == s->lo[j];
                } else {
                    double lo = v < s->lo[j] ? v : s->lo[j], hi = v > s->hi[j] ? v : s->hi[j];
                    ok = hi - lo <= s->eps[j];
                }
            }
            if (ok) {
                s->cl[rq] = c;
                for (int j = 0; j < d; j++) {
                    double v = x[rq + n * (ptrdiff_t) j];
                    if (v < s->lo[j]) s->lo[j] = v;
                    if (v > s->hi[j]) s->hi[j] = v;
                }
                unlink_pos(s, q);
            }
            q = nq;
        }
    }
    return s->head < 0;
}

void stir_shuffle(const ptrdiff_t *start, const ptrdiff_t *rows, int C, ptrdiff_t n, int d,
                  const int *draw, int *src, ptrdiff_t *buf)
{
    ptrdiff_t next = 0;
    for (int j = 0; j < d; j++) {
        int *sj = src + n * (ptrdiff_t) j;
        for (int c = 0; c < C; c++) {
            ptrdiff_t b = start[c], m = start[c + 1] - b;
            for (ptrdiff_t i = 0; i < m; i++) buf[i] = rows[b + i];
            for (ptrdiff_t i = m - 1; i >= 1; i--) {
                ptrdiff_t k = draw[next++];
                ptrdiff_t t = buf[i]; buf[i] = buf[k]; buf[k] = t;
            }
            for (ptrdiff_t i = 0; i < m; i++) sj[rows[b + i]] = (int) (buf[i] + 1);
        }
    }
}
