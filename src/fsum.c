#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "fsum.h"

#define MAX_PARTIALS 128 /* non-overlapping doubles span < 2100 bits: at most ~41 needed */

static void add_partial(double *p, int *np, double x)
{
    int i = 0;
    for (int j = 0; j < *np; j++) {
        double y = p[j];
        if (fabs(x) < fabs(y)) { double t = x; x = y; y = t; }
        double hi = x + y;
        double lo = y - (hi - x);
        if (lo != 0.0) p[i++] = lo;
        x = hi;
    }
    if (i < MAX_PARTIALS) p[i++] = x;
    *np = i;
}

double fsum(const double *x, ptrdiff_t n, ptrdiff_t stride)
{
    double p[MAX_PARTIALS];
    int np = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        double v = x[i * stride];
        if (!isfinite(v)) { /* callers validate; keep IEEE semantics if they did not */
            double s = 0.0;
            for (ptrdiff_t m = 0; m < n; m++) s += x[m * stride];
            return s;
        }
        add_partial(p, &np, v);
    }
    if (np == 0) return 0.0;
    /* sum the partials from the top, rounding half-way cases correctly */
    int k = np - 1;
    double hi = p[k], lo = 0.0;
    while (k > 0) {
        double xx = hi, y = p[--k];
        hi = xx + y;
        double yr = hi - xx;
        lo = y - yr;
        if (lo != 0.0) break;
    }
    if (k > 0 && ((lo < 0.0 && p[k - 1] < 0.0) || (lo > 0.0 && p[k - 1] > 0.0))) {
        double y = lo * 2.0, xx = hi + y, yr = xx - hi;
        if (y == yr) hi = xx;
    }
    return hi;
}

/* ---- long sums: an exact fixed-point accumulator ------------------------------------
 * Shewchuk's partials cost tens of nanoseconds per term. For long columns this adds each
 * finite double exactly into 32-bit digits (held in 64-bit integers so carries can wait),
 * a few nanoseconds per term, then rounds the digits once with fsum(). Same exact sum,
 * so the same correctly rounded result. A double is mag * 2^(e - 1074) with mag < 2^53
 * and 0 <= e <= 2045: digit c = e / 32 takes the low part, digit c + 1 the high part. */
#define XS_DIGITS FSUM_RUN_DIGITS /* digit 67 starts at 2^1070: anything there overflows a double */
#define XS_SPARE 512  /* adds between carry propagations: each adds < 2^53 to a digit */

typedef fsum_run xsum;

static void xs_init(xsum *a)
{
    memset(a->d, 0, sizeof a->d);
    a->pending = 0; a->special = 0; a->inf_nan = 0.0;
}

static void xs_carry(xsum *a)
{
    for (int i = 0; i < XS_DIGITS - 1; i++) {
        int64_t low = (int64_t) ((uint64_t) a->d[i] & 0xffffffffu);
        a->d[i + 1] += (a->d[i] - low) / ((int64_t) 1 << 32);
        a->d[i] = low;
    }
    a->pending = 0;
}

static inline void xs_add(xsum *a, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    int e = (int) ((u >> 52) & 0x7ff);
    if (e == 0x7ff) { a->special = 1; a->inf_nan += v; return; }
    uint64_t mag = u & (((uint64_t) 1 << 52) - 1);
    if (e > 0) { mag |= (uint64_t) 1 << 52; e -= 1; }
    int c = e >> 5, sh = e & 31;
    int64_t lo = (int64_t) ((mag << sh) & 0xffffffffu), hi = (int64_t) (mag >> (32 - sh));
    /* negated for a negative v without a branch (the signs of centred data come at
     * random): neg is 0 or -1, and (x ^ neg) - neg is x or -x */
    const int64_t neg = -(int64_t) (u >> 63);
    a->d[c] += (lo ^ neg) - neg;
    a->d[c + 1] += (hi ^ neg) - neg;
    if (++a->pending == XS_SPARE) xs_carry(a);
}

static double xs_round(xsum *a)
{
    if (a->special) return a->inf_nan;
    xs_carry(a);
    /* digits 0..66 are now in [0, 2^32) and the top one carries the sign: make the total
     * non-negative so that every part is at most the total (no spurious overflow) */
    int top = XS_DIGITS - 1;
    while (top > 0 && a->d[top] == 0) top--;
    double sign = 1.0;
    if (a->d[top] < 0) {
        sign = -1.0;
        for (int i = 0; i < XS_DIGITS; i++) a->d[i] = -a->d[i];
        xs_carry(a);
    }
    if (a->d[XS_DIGITS - 1] != 0) return sign * INFINITY;
    /* each digit is an integer below 2^32 times a power of two: exact as a double, so
     * fsum rounds the exact total once */
    double part[XS_DIGITS];
    int np = 0;
    for (int i = 0; i < XS_DIGITS - 1; i++)
        if (a->d[i] != 0) part[np++] = ldexp((double) a->d[i], 32 * i - 1074);
    return sign * fsum(part, np, 1);
}

void col_mean_sd(const double *x, ptrdiff_t n, double *mean, double *sd)
{
    if (n < 1) { *mean = NAN; *sd = NAN; return; }
    xsum a;
    xs_init(&a);
    for (ptrdiff_t i = 0; i < n; i++) xs_add(&a, x[i]);
    double m = xs_round(&a) / (double) n;
    *mean = m;
    if (n < 2) { *sd = NAN; return; }
    xs_init(&a);
    for (ptrdiff_t i = 0; i < n; i++) { double e = x[i] - m; xs_add(&a, e * e); }
    *sd = sqrt(xs_round(&a) / (double) (n - 1));
}

double checksum_weighted(const double *x, const int *xi, ptrdiff_t n, int int_na)
{
    long double s = 0.0;
    for (ptrdiff_t i = 0; i < n; i++) {
        double v;
        if (x) {
            v = x[i];
            if (isnan(v) || isinf(v)) return NAN;
        } else {
            if (xi[i] == int_na) return NAN;
            v = (double) xi[i];
        }
        const double a = (double) (i + 1) * 0.6180339887498949;
        /* floor(a) of a >= 0: truncation below 2^52, a itself beyond (already whole);
         * cheaper than floor() where that is a library call */
        const double fl = a >= 4503599627370496.0 ? a : (double) (long long) a;
        const double w = (a - fl) + 0.5;
        s += (double) (v * w);
    }
    if (s > DBL_MAX) return INFINITY;
    if (s < -DBL_MAX) return -INFINITY;
    return (double) s;
}

/* ---- the accumulator as plain doubles, for partitioned runs ---------------------------
 * State: FSUM_ACC_LEN doubles: the XS_DIGITS digits after a carry (digits 0..66 in
 * [0, 2^32), the top one signed; each an integer exact as a double), the flag of an Inf or
 * NaN and their IEEE sum. Adding two states digit by digit and carrying gives the state of
 * all their terms: merging chunks does not change a bit of the rounded sum. */
static void xs_load(xsum *a, const double *acc)
{
    for (int i = 0; i < XS_DIGITS; i++) a->d[i] = (int64_t) acc[i];
    a->pending = 0;
    a->special = acc[XS_DIGITS] != 0.0;
    a->inf_nan = acc[XS_DIGITS + 1];
}

static void xs_store(xsum *a, double *acc)
{
    xs_carry(a);
    for (int i = 0; i < XS_DIGITS; i++) acc[i] = (double) a->d[i];
    acc[XS_DIGITS] = a->special ? 1.0 : 0.0;
    acc[XS_DIGITS + 1] = a->inf_nan;
}

void fsum_acc_init(double *acc)
{
    for (int i = 0; i < FSUM_ACC_LEN; i++) acc[i] = 0.0;
}

void fsum_acc_add(double *acc, const double *x, ptrdiff_t n, const double *centre)
{
    xsum a;
    xs_load(&a, acc);
    if (centre) {
        const double m = *centre;
        for (ptrdiff_t i = 0; i < n; i++) { double e = x[i] - m; xs_add(&a, e * e); }
    } else {
        for (ptrdiff_t i = 0; i < n; i++) xs_add(&a, x[i]);
    }
    xs_store(&a, acc);
}

void fsum_acc_add_rep(double *acc, double v, double times)
{
    xsum a;
    xs_load(&a, acc);
    for (double t = 0; t < times; t++) xs_add(&a, v);
    xs_store(&a, acc);
}

void fsum_acc_merge(double *acc, const double *other)
{
    xsum a, b;
    xs_load(&a, acc);
    xs_load(&b, other);
    for (int i = 0; i < XS_DIGITS; i++) a.d[i] += b.d[i];
    a.special = a.special || b.special;
    a.inf_nan += b.inf_nan;
    xs_store(&a, acc);
}

double fsum_acc_round(const double *acc, int e)
{
    xsum a;
    xs_load(&a, acc);
    if (a.special) return a.inf_nan;
    xs_carry(&a);
    int top = XS_DIGITS - 1;
    while (top > 0 && a.d[top] == 0) top--;
    double sign = 1.0;
    if (a.d[top] < 0) {
        sign = -1.0;
        for (int i = 0; i < XS_DIGITS; i++) a.d[i] = -a.d[i];
        xs_carry(&a);
    }
    if (a.d[XS_DIGITS - 1] != 0) return sign * INFINITY;
    /* the exact total times 2^e (e >= 0 only for columns of tiny values, whose parts
     * then stay in range): every part is exact, fsum rounds the scaled total once */
    double part[XS_DIGITS];
    int np = 0;
    for (int i = 0; i < XS_DIGITS - 1; i++)
        if (a.d[i] != 0) part[np++] = ldexp((double) a.d[i], 32 * i - 1074 + e);
    return sign * fsum(part, np, 1);
}

void fsum_run_init(fsum_run *a)
{
    xs_init(a);
}

void fsum_run_add(fsum_run *a, const double *x, ptrdiff_t n)
{
    for (ptrdiff_t i = 0; i < n; i++) xs_add(a, x[i]);
}

double fsum_run_round(const fsum_run *a)
{
    xsum b = *a;
    return xs_round(&b);
}
