/* Kernels of anonymise() around the search: see mask.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "mask.h"
#include "fsum.h"
#include "threads.h"

/* Step 5 on one column; returns 1 when it is released as its mean. */
static int rescale(double *cent, ptrdiff_t n, double mean, double sd, double c_sd)
{
    if (c_sd > MASK_FLAT_SD) {
        for (ptrdiff_t i = 0; i < n; i++) cent[i] = cent[i] / c_sd * sd + mean;
        return 0;
    }
    for (ptrdiff_t i = 0; i < n; i++) cent[i] = mean;
    return 1;
}

void mask_step5(double *const *cent, int d, ptrdiff_t n, const double *mean, const double *sd,
                double *c_sd, int given_sd, int *flat, int nt, const kernel_host *host)
{
    const int nt5 = threads_for(nt, (double) n * (d > 1 ? d : 0));
    for (int j0 = 0; j0 < d; j0 += nt5) {
        const int j1 = j0 + nt5 < d ? j0 + nt5 : d;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt5) schedule(static, 1)
#endif
        for (int j = j0; j < j1; j++) {
            if (!given_sd) {
                double cm;
                col_mean_sd(cent[j], n, &cm, c_sd + j);
            }
            flat[j] = rescale(cent[j], n, mean[j], sd[j], c_sd[j]);
        }
        host_pause(host, j1);
    }
}

void mask_col_stats(const double *x, ptrdiff_t n, int d, int nt, double *mean, double *sd)
{
    nt = threads_for(nt, (double) n * (d > 1 ? d : 0));
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (int j = 0; j < d; j++) col_mean_sd(n > 0 ? x + (size_t) j * n : NULL, n, mean + j, sd + j);
}

/* ---- the release form (format_masked()) ---------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static inline double median3(double a, double b, double c)
{
    if (a > b) { double t = a; a = b; b = t; }
    return c < a ? a : c > b ? b : c;
}

/* Rearrange a[0..n) (no NaN) so that a[m] holds the value of rank m, smaller or equal
 * values before it and greater or equal after: Wirth's selection with a median-of-three
 * pivot (its scans stop at keys equal to the pivot, so runs of ties stay linear), and a
 * sort of what is left after too many rounds (an adversarial order cannot make it
 * quadratic). */
static void select_rank(double *a, ptrdiff_t n, ptrdiff_t m)
{
    ptrdiff_t l = 0, r = n - 1;
    int rounds = 0;
    while (r > l) {
        if (++rounds > 200) {
            qsort(a + l, (size_t) (r - l + 1), sizeof(double), cmp_double);
            return;
        }
        const double x = median3(a[l], a[l + (r - l) / 2], a[r]);
        ptrdiff_t i = l, j = r;
        do {
            while (a[i] < x) i++;
            while (x < a[j]) j--;
            if (i <= j) { double t = a[i]; a[i] = a[j]; a[j] = t; i++; j--; }
        } while (i <= j);
        if (j < m) l = i;
        if (m < i) r = j;
    }
}

/* Is v a whole number? (Values of 2^52 and beyond all are; below, the conversion to a
 * 64-bit integer truncates, and is cheaper than floor() where that is a library call.) */
static inline int is_whole(double v)
{
    return fabs(v) >= 4503599627370496.0 || v == (double) (long long) v;
}

/* The kk smallest (sign = 1) or largest (sign = -1) values of x[0..n), kk <= n, into
 * out[0..kk) in one pass: a sorted array that a value enters only when it beats the worst
 * kept one (rare after the first values), for small kk. */
static void extreme_values(const double *x, ptrdiff_t n, ptrdiff_t kk, double sign, double *out)
{
    ptrdiff_t c = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        const double v = sign * x[i];
        if (c == kk && !(v < out[kk - 1])) continue;
        ptrdiff_t j = c < kk ? c++ : kk - 1;
        while (j > 0 && v < out[j - 1]) { out[j] = out[j - 1]; j--; }
        out[j] = v;
    }
    for (ptrdiff_t j = 0; j < kk; j++) out[j] *= sign;
}

#define FORM_FEW 64

void mask_form_stats(const double *x, ptrdiff_t n, ptrdiff_t kk, int middle, double *buf,
                     double *out)
{
    double lo = x[0], hi = x[0];
    int whole = 1;
    for (ptrdiff_t i = 0; i < n; i++) {
        const double v = x[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        whole &= is_whole(v);
    }
    out[0] = lo; out[1] = hi; out[2] = whole;
    out[3] = out[4] = out[5] = out[6] = NAN;
    const int bounds = kk > 0 && kk <= n && lo < hi;
    double sd;
    if (bounds && kk <= FORM_FEW) {
        /* (the negation by sign = -1 is exact, so these are the same values) */
        extreme_values(x, n, kk, 1.0, buf);
        col_mean_sd(buf, kk, out + 3, &sd);
        extreme_values(x, n, kk, -1.0, buf);
        col_mean_sd(buf, kk, out + 4, &sd);
    } else if (bounds) {
        memcpy(buf, x, (size_t) n * sizeof(double));
        select_rank(buf, n, kk - 1);
        col_mean_sd(buf, kk, out + 3, &sd);
        select_rank(buf, n, n - kk);
        col_mean_sd(buf + (n - kk), kk, out + 4, &sd);
    }
    if (middle) {
        /* after the selection of rank (n - 1) / 2, rank n / 2 (the same when n is odd) is
         * the smallest value after it */
        memcpy(buf, x, (size_t) n * sizeof(double));
        ptrdiff_t h = (n - 1) / 2;
        select_rank(buf, n, h);
        out[5] = buf[h];
        double next = buf[h];
        if (n % 2 == 0) {
            next = buf[h + 1];
            for (ptrdiff_t i = h + 2; i < n; i++) if (buf[i] < next) next = buf[i];
        }
        out[6] = next;
    }
}

/* a * b rounded on its own: kept from being fused with a following addition into one
 * rounding (an FMA), which R's arithmetic, one operation at a time, never does. */
static inline double mul1(double a, double b)
{
    volatile double p = a * b;
    return p;
}

void mask_squeeze(double *v, ptrdiff_t n, double lo, double hi, double med, int round0)
{
    if (n < 1) return;
    double m = v[0], M = v[0];
    for (ptrdiff_t i = 1; i < n; i++) { if (v[i] < m) m = v[i]; if (v[i] > M) M = v[i]; }
    if (m < lo || M > hi) {
        /* min(med, lo + 4 * (lo - m)) and max(med, hi - 4 * (M - hi)) as R's min(), max() */
        if (m < lo) {
            double t = med, b = lo + mul1(4, lo - m);
            if (b < t) t = b;
            if (t > lo) {
                const double c = (t - lo) / (t - m);
                for (ptrdiff_t i = 0; i < n; i++) if (v[i] < t) v[i] = t - mul1(t - v[i], c);
            }
        }
        M = v[0];
        for (ptrdiff_t i = 1; i < n; i++) if (v[i] > M) M = v[i];
        if (M > hi) {
            double t = med, b = hi - mul1(4, M - hi);
            if (b > t) t = b;
            if (t < hi) {
                const double c = (hi - t) / (M - t);
                for (ptrdiff_t i = 0; i < n; i++) if (v[i] > t) v[i] = t + mul1(v[i] - t, c);
            }
        }
        /* pmin(pmax(v, lo), hi) */
        for (ptrdiff_t i = 0; i < n; i++) {
            if (lo > v[i]) v[i] = lo;
            if (hi < v[i]) v[i] = hi;
        }
    }
    if (!round0) return;
    /* pmin(pmax(round(v), lo), hi): R's round(x, 0) is rint() (half to even) */
    for (ptrdiff_t i = 0; i < n; i++) {
        double r = v[i] == 0.0 ? v[i] : nearbyint(v[i]);
        if (lo > r) r = lo;
        if (hi < r) r = hi;
        v[i] = r;
    }
}

double mask_max_abs(const double *x, ptrdiff_t n)
{
    double m = -1.0;
    for (ptrdiff_t i = 0; i < n; i++) {
        const double a = fabs(x[i]);
        if (a > m) m = a; /* false for NaN */
    }
    return m < 0.0 ? HUGE_VAL : m;
}
