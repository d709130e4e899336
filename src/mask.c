/* Kernels of anonymise() around the search: see mask.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "mask.h"
#include "fsum.h"
#include "threads.h"
#include <stdint.h>
#include <string.h>

/* Block b of the nb blocks of rows (threads.h) of each of several columns of n rows, taken
 * column after column: its column (*j), first row (returned) and length (*m). */
static inline ptrdiff_t column_block(ptrdiff_t b, ptrdiff_t nb, ptrdiff_t n, int *j, ptrdiff_t *m)
{
    *j = (int) (b / nb);
    return threads_block(b % nb, n, m);
}

/* The exact means and sample SDs of the columns col[0..d) of n rows, the bits of
 * col_mean_sd(), in row blocks on nt threads (threads.h): two passes (the sums, then the
 * squared deviations from the mean), each thread adding its blocks to its own exact
 * accumulator of each column, merged after. */
static void cols_mean_sd(const double *const *col, int d, ptrdiff_t n, int nt, double *mean, double *sd,
                         const kernel_host *host)
{
    if (d < 1) return;
    if (n < 1) {
        for (int j = 0; j < d; j++) mean[j] = sd[j] = NAN;
        return;
    }
    const ptrdiff_t nb = threads_blocks(n);
    double *acc = (double *) host->alloc((size_t) nt * d * FSUM_ACC_LEN, sizeof(double));
    for (int pass = 0; pass < (n > 1 ? 2 : 1); pass++) {
        for (size_t a = 0; a < (size_t) nt * d; a++) fsum_acc_init(acc + a * FSUM_ACC_LEN);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
        for (ptrdiff_t b = 0; b < nb * d; b++) {
            int j;
            ptrdiff_t m;
            const ptrdiff_t i0 = column_block(b, nb, n, &j, &m);
            fsum_acc_add(acc + ((size_t) THREAD_ID * d + j) * FSUM_ACC_LEN, col[j] + i0, m,
                         pass ? mean + j : NULL);
        }
        for (int j = 0; j < d; j++) {
            double *a = acc + (size_t) j * FSUM_ACC_LEN;
            for (int t = 1; t < nt; t++) fsum_acc_merge(a, acc + ((size_t) t * d + j) * FSUM_ACC_LEN);
            if (pass) sd[j] = sqrt(fsum_acc_round(a, 0) / (double) (n - 1));
            else mean[j] = fsum_acc_round(a, 0) / (double) n;
        }
        host_pause(host, 0);
    }
    if (n < 2) for (int j = 0; j < d; j++) sd[j] = NAN;
}

void mask_step5(double *const *cent, int d, ptrdiff_t n, const double *mean, const double *sd,
                double *c_sd, int given_sd, int *flat, int nt, const kernel_host *host)
{
    nt = threads_for(nt, (double) n * d);
    if (!given_sd && d > 0) {
        double *c_mean = (double *) host->alloc(d, sizeof(double));
        cols_mean_sd((const double *const *) cent, d, n, nt, c_mean, c_sd, host);
    }
    /* a column whose centroids spread less than MASK_FLAT_SD is released as its mean */
    for (int j = 0; j < d; j++) flat[j] = !(c_sd[j] > MASK_FLAT_SD);
    const ptrdiff_t nb = threads_blocks(n);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (ptrdiff_t b = 0; b < nb * d; b++) {
        int j;
        ptrdiff_t m;
        const ptrdiff_t i0 = column_block(b, nb, n, &j, &m);
        double *c = cent[j] + i0;
        if (flat[j]) for (ptrdiff_t i = 0; i < m; i++) c[i] = mean[j];
        else for (ptrdiff_t i = 0; i < m; i++) c[i] = c[i] / c_sd[j] * sd[j] + mean[j];
    }
    host_pause(host, d);
}

void mask_col_stats(const double *x, ptrdiff_t n, int d, int nt, double *mean, double *sd,
                    const kernel_host *host)
{
    const double **col = (const double **) host->alloc(d > 0 ? d : 1, sizeof(double *));
    for (int j = 0; j < d; j++) col[j] = n > 0 ? x + (size_t) j * n : NULL;
    cols_mean_sd(col, d, n, threads_for(nt, (double) n * d), mean, sd, host);
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

/* Keep the kk smallest values seen in a[0..*c), sorted: v enters only when it beats the
 * worst kept one (rare after the first values). */
static inline void keep_smallest(double *a, ptrdiff_t *c, ptrdiff_t kk, double v)
{
    if (*c == kk && !(v < a[kk - 1])) return;
    ptrdiff_t j = *c < kk ? (*c)++ : kk - 1;
    while (j > 0 && v < a[j - 1]) { a[j] = a[j - 1]; j--; }
    a[j] = v;
}

#define FORM_FEW 64

void mask_form_stats(const double *x, ptrdiff_t n, ptrdiff_t kk, double *buf, double *out)
{
    /* one pass: the range, the whole-number flag, the counts at the min and the max, and
     * for small kk the kk smallest and (negated: exact) the kk largest values */
    const int few = kk > 0 && kk <= n && kk <= FORM_FEW;
    double *small = buf, *large = buf + (few ? kk : 0);
    ptrdiff_t n_small = 0, n_large = 0;
    double lo = x[0], hi = x[0], n_lo = 0.0, n_hi = 0.0;
    int whole = 1;
    for (ptrdiff_t i = 0; i < n; i++) {
        const double v = x[i];
        whole &= is_whole(v);
        if (v <= lo) { if (v < lo) { lo = v; n_lo = 0.0; } n_lo += 1.0; }
        if (v >= hi) { if (v > hi) { hi = v; n_hi = 0.0; } n_hi += 1.0; }
        if (few) {
            keep_smallest(small, &n_small, kk, v);
            keep_smallest(large, &n_large, kk, -v);
        }
    }
    out[0] = lo; out[1] = hi; out[2] = whole;
    out[5] = n_lo; out[6] = n_hi;
    out[3] = out[4] = NAN;
    if (!(kk > 0 && kk <= n && lo < hi)) return;
    double sd;
    if (few) {
        for (ptrdiff_t j = 0; j < kk; j++) large[j] = -large[j];
        col_mean_sd(small, kk, out + 3, &sd);
        col_mean_sd(large, kk, out + 4, &sd);
    } else {
        memcpy(buf, x, (size_t) n * sizeof(double));
        select_rank(buf, n, kk - 1);
        col_mean_sd(buf, kk, out + 3, &sd);
        select_rank(buf, n, n - kk);
        col_mean_sd(buf + (n - kk), kk, out + 4, &sd);
    }
}

/* a * b rounded on its own: kept from being fused with a following addition into one
 * rounding (an FMA), which R's arithmetic, one operation at a time, never does. */
static inline double mul1(double a, double b)
{
    volatile double p = a * b;
    return p;
}

void mask_form_scan_init(mask_form_scan *s)
{
    s->min = s->in_min = HUGE_VAL;
    s->max = s->in_max = -HUGE_VAL;
    s->any_in = 0;
    s->n = s->n_lo = s->n_hi = 0.0;
}

void mask_form_scan_add(mask_form_scan *s, const double *v, ptrdiff_t n, double lo, double hi)
{
    double n_lo = 0.0, n_hi = 0.0;
    for (ptrdiff_t i = 0; i < n; i++) {
        const double x = v[i];
        if (x < s->min) s->min = x;
        if (x > s->max) s->max = x;
        if (x < lo) n_lo += 1.0;
        else if (x > hi) n_hi += 1.0;
        else {
            s->any_in = 1;
            if (x < s->in_min) s->in_min = x;
            if (x > s->in_max) s->in_max = x;
        }
    }
    s->n += (double) n;
    s->n_lo += n_lo;
    s->n_hi += n_hi;
}

void mask_form_scan_merge(mask_form_scan *into, const mask_form_scan *from)
{
    if (from->min < into->min) into->min = from->min;
    if (from->max > into->max) into->max = from->max;
    if (from->in_min < into->in_min) into->in_min = from->in_min;
    if (from->in_max > into->in_max) into->in_max = from->in_max;
    into->any_in |= from->any_in;
    into->n += from->n;
    into->n_lo += from->n_lo;
    into->n_hi += from->n_hi;
}

void mask_form_apply(const double *v, double *out, ptrdiff_t n, double lo, double hi,
                     const mask_form_scan *s, int round0)
{
    const double m = s->min, M = s->max;
    /* a crowd beyond a bound (more than n / MASK_FORM_CROWD values) stays where it is: that
     * bound is then no limit (elo = -Inf, ehi = Inf) */
    const double elo = m < lo && s->n_lo * MASK_FORM_CROWD > s->n ? -HUGE_VAL : lo;
    const double ehi = M > hi && s->n_hi * MASK_FORM_CROWD > s->n ? HUGE_VAL : hi;
    const int squeeze = m < elo || M > ehi;
    /* below lo: lo + (v - m) * (((t - lo) / 2) / (lo - m)), t the smallest value inside
     * (else hi); above hi: hi - (M - v) * (((hi - t) / 2) / (M - hi)), t the largest value
     * inside (else lo); then pmin(pmax(v, elo), ehi) */
    const double c_lo = m < elo ? (((s->any_in ? s->in_min : hi) - lo) / 2) / (lo - m) : 0.0;
    const double c_hi = M > ehi ? ((hi - (s->any_in ? s->in_max : lo)) / 2) / (M - hi) : 0.0;
    for (ptrdiff_t i = 0; i < n; i++) {
        double x = v[i];
        if (squeeze) {
            if (x < elo) x = lo + mul1(x - m, c_lo);
            else if (x > ehi) x = hi - mul1(M - x, c_hi);
            if (elo > x) x = elo;
            if (ehi < x) x = ehi;
        }
        if (round0) {
            /* pmin(pmax(round(v), elo), ehi): R's round(x, 0) is rint() (half to even) */
            x = nearbyint(x);
            if (elo > x) x = elo;
            if (ehi < x) x = ehi;
        }
        out[i] = x;
    }
}

void mask_release_form(const double *v, double *out, ptrdiff_t n, double lo, double hi, int round0)
{
    mask_form_scan s;
    mask_form_scan_init(&s);
    mask_form_scan_add(&s, v, n, lo, hi);
    mask_form_apply(v, out, n, lo, hi, &s, round0);
}

static inline double fit_held(double v, const mask_fit *f)
{
    if (v < f->tL) return f->L + mul1(f->dL, (v - f->vmin) / (f->tL - f->vmin));
    return f->U - mul1(f->dU, (f->vmax - v) / (f->vmax - f->tU));
}

#define FIT_BUF 512
void mask_fit_sums(const double *v, ptrdiff_t n, const mask_fit *f, double centre, int dev,
                   double *out, double *const *acc)
{
    double in[FIT_BUF], held[FIT_BUF];
    int n_in = 0, n_held = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        const double x = v[i];
        if (x >= f->tL && x <= f->tU) {
            in[n_in++] = x;
            if (!dev) {
                if (x < out[2]) out[2] = x;
                if (x > out[3]) out[3] = x;
            }
        } else if (!dev) {
            out[x < f->tL ? 0 : 1] += 1.0;
            held[n_held++] = fit_held(x, f);
        }
        if (n_in == FIT_BUF || i == n - 1) {
            fsum_acc_add(acc[0], in, n_in, dev ? &centre : NULL);
            n_in = 0;
        }
        if (n_held == FIT_BUF || (i == n - 1 && n_held)) {
            fsum_acc_add(acc[1], held, n_held, NULL);
            fsum_acc_add(acc[2], held, n_held, &centre);
            n_held = 0;
        }
    }
}

void mask_fit_apply(const double *v, double *out, ptrdiff_t n, const mask_fit *f)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        const double x = v[i];
        double w = f->a + mul1(f->b, x);
        if (x < f->tL || x > f->tU) w = fit_held(x, f);
        if (f->L > w) w = f->L;
        if (f->U < w) w = f->U;
        out[i] = w;
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

/* The ordered key of a double: unsigned 64-bit integers in the order of the values (-0
 * just below +0; no NaN here). */
static inline uint64_t radix_key(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return (u >> 63) ? ~u : (u | ((uint64_t) 1 << 63));
}

void mask_radix_hist(const double *x, ptrdiff_t n, int pass, uint64_t prefix, double *counts)
{
    const int shift = 48 - 16 * pass;
    for (ptrdiff_t i = 0; i < n; i++) {
        const uint64_t key = radix_key(x[i]);
        if (pass == 0 || (key >> (shift + 16)) == prefix) counts[(key >> shift) & 0xffffu] += 1.0;
    }
}

double mask_radix_value(uint64_t key)
{
    uint64_t u = (key >> 63) ? (key & ~((uint64_t) 1 << 63)) : ~key;
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

void mask_record_checks(const double *x, ptrdiff_t n, int p, double *out)
{
    const uint64_t prime = 1048573u;
    for (ptrdiff_t i = 0; i < n; i++) out[i] = 0.0;
    for (int j = 0; j < p; j++) {
        const double *col = x + (ptrdiff_t) j * n;
        for (ptrdiff_t i = 0; i < n; i++) {
            double v = col[i];
            uint64_t u;
            if (v == 0) v = 0.0; /* -0 as 0 */
            memcpy(&u, &v, sizeof u);
            const uint64_t s = (uint64_t) out[i] + u % prime; /* out[i] < 2^20: exact */
            out[i] = (double) ((s * s + (uint64_t) (j + 1)) % prime);
        }
    }
}
