/* Kernel of distance_map(): see distance_map.h.
 *
 * With s sorted, d(i, j) = s[j] - s[i] (j > i) is non-decreasing in j and non-increasing
 * in i, so the number of pairs below (or equal to) a value v is counted in one O(n) pass
 * with two pointers, and so are the next realised distance above v and the last one at
 * or below v. g(v) = #(d < v) + #(d == v) / 2 is non-decreasing in v over all doubles; the
 * knot for a target t is the largest realised distance u with g(u) / N <= t, found by
 * bisection over the bit patterns of the non-negative doubles (which order like the
 * values). */
#include <stdint.h>
#include <string.h>
#include "distance_map.h"

/* #(d < v) and #(d == v) over all pairs. */
static void count_pairs(const double *s, ptrdiff_t n, double v, double *lt, double *eq)
{
    ptrdiff_t a = 1, b = 1; /* first j > i with d >= v, with d > v */
    double nlt = 0, neq = 0;
    for (ptrdiff_t i = 0; i < n - 1; i++) {
        if (a < i + 1) a = i + 1;
        if (b < a) b = a;
        while (a < n && s[a] - s[i] < v) a++;
        if (b < a) b = a;
        while (b < n && s[b] - s[i] <= v) b++;
        nlt += (double) (a - i - 1);
        neq += (double) (b - a);
    }
    *lt = nlt;
    *eq = neq;
}

/* The smallest realised distance > v; -1 when there is none. */
static double next_above(const double *s, ptrdiff_t n, double v)
{
    ptrdiff_t b = 1;
    double best = -1;
    for (ptrdiff_t i = 0; i < n - 1; i++) {
        if (b < i + 1) b = i + 1;
        while (b < n && s[b] - s[i] <= v) b++;
        if (b == n) break; /* for larger i, every d <= v too */
        double d = s[b] - s[i];
        if (best < 0 || d < best) best = d;
    }
    return best;
}

/* The largest realised distance <= v; -1 when there is none. */
static double last_at_most(const double *s, ptrdiff_t n, double v)
{
    ptrdiff_t b = 1;
    double best = -1;
    for (ptrdiff_t i = 0; i < n - 1; i++) {
        if (b < i + 1) b = i + 1;
        while (b < n && s[b] - s[i] <= v) b++;
        if (b > i + 1) {
            double d = s[b - 1] - s[i];
            if (d > best) best = d;
        }
    }
    return best;
}

static uint64_t bits_of(double x) { uint64_t b; memcpy(&b, &x, sizeof b); return b; }
static double of_bits(uint64_t b) { double x; memcpy(&x, &b, sizeof x); return x; }

static double mid_p(const double *s, ptrdiff_t n, double v, double N)
{
    double lt, eq;
    count_pairs(s, n, v, &lt, &eq);
    return (lt + eq / 2) / N;
}

int distmap_knots(const double *s, ptrdiff_t n, int n_knots, double *u, double *p,
                  void (*poll)(void))
{
    const double N = (double) n * (double) (n - 1) / 2;
    /* the distinct positive distances, while there are at most n_knots of them */
    int D = 0;
    double cur = 0;
    while (D <= n_knots) {
        double nx = next_above(s, n, cur);
        poll();
        if (nx < 0) break;
        u[D] = nx;
        p[D] = mid_p(s, n, nx, N);
        poll();
        D++;
        cur = nx;
    }
    if (D <= n_knots) return D;
    /* more than n_knots: the largest u with p(u) <= t for each target t (else the first) */
    const double first = u[0];
    const double last = s[n - 1] - s[0];
    int m = 0;
    uint64_t lo = 0; /* p(of_bits(lo)) <= t holds (checked), answers grow with t */
    int lo_ok = 0;
    for (int q = 1; q <= n_knots; q++) {
        const double t = (q - 0.5) / n_knots;
        double pick;
        if (!lo_ok) {
            lo_ok = mid_p(s, n, 0, N) <= t;
            poll();
        }
        if (!lo_ok) {
            pick = first;
        } else {
            uint64_t hi = bits_of(last);
            if (mid_p(s, n, last, N) <= t) {
                lo = hi;
            } else {
                while (hi - lo > 1) { /* p(lo) <= t < p(hi) */
                    uint64_t mid = lo + (hi - lo) / 2;
                    if (mid_p(s, n, of_bits(mid), N) <= t) lo = mid; else hi = mid;
                    poll();
                }
            }
            pick = last_at_most(s, n, of_bits(lo));
            if (!(pick > 0)) pick = first;
        }
        poll();
        if (m == 0 || pick > u[m - 1]) {
            u[m] = pick;
            m++;
        }
    }
    if (u[m - 1] < last) {
        u[m] = last;
        m++;
    }
    for (int i = 0; i < m; i++) {
        p[i] = mid_p(s, n, u[i], N);
        poll();
    }
    return m;
}
