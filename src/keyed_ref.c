/* TEST-ONLY: the slow reference of the keyed k-means of anonymise_keyed() for the tests
 * (ffi_keyed_kmeans_ref in testing_glue.c): the plain algorithm, every point against every
 * centre on one thread, with no pruning by bounds. keyed_kmeans() (keyed.c) must give the
 * same groups and sum of squares bit for bit. Pure C: no R API. Compiled unless
 * DETANON_NO_TESTING is defined. */
#include <math.h>
#include <string.h>
#include "keyed.h"

#ifndef DETANON_NO_TESTING

static double sq_dist(const double *z, ptrdiff_t n, int d, ptrdiff_t i, const double *cen, int g)
{
    double s = 0;
    for (int j = 0; j < d; j++) {
        const double t = z[(ptrdiff_t) j * n + i] - cen[(ptrdiff_t) g * d + j];
        s += t * t;
    }
    return s;
}

/* centres of the groups (d values per group, in point order sums) and sizes */
static void centres(const double *z, ptrdiff_t n, int d, int c, const int *group, double *cen, ptrdiff_t *size)
{
    for (int g = 0; g < c; g++) size[g] = 0;
    for (ptrdiff_t t = 0; t < (ptrdiff_t) c * d; t++) cen[t] = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        const int g = group[i];
        size[g]++;
        for (int j = 0; j < d; j++) cen[(ptrdiff_t) g * d + j] += z[(ptrdiff_t) j * n + i];
    }
    for (int g = 0; g < c; g++)
        if (size[g] > 0) for (int j = 0; j < d; j++) cen[(ptrdiff_t) g * d + j] /= (double) size[g];
}

/* one keyed run; returns the SSE (group[] filled, 0..c-1, possibly with empty groups) */
static double one_run(const double *z, ptrdiff_t n, int d, int c, int kmin, int maxit, const uint64_t *h,
                      int *group, double *cen, ptrdiff_t *size, double *d2, const kernel_host *host)
{
    /* k-means++ seeds by the exponential race: the first uniform over the points, then
     * with weight D2 (points at a chosen centre have weight 0) */
    for (ptrdiff_t i = 0; i < n; i++) d2[i] = INFINITY;
    for (int s = 0; s < c; s++) {
        ptrdiff_t best = -1;
        double bk = INFINITY;
        for (ptrdiff_t i = 0; i < n; i++) {
            if (!(d2[i] > 0)) continue;
            const double e = -log(keyed_step_uniform(h[i], s));
            const double key = s == 0 ? e : e / d2[i];
            if (key < bk) { bk = key; best = i; }
        }
        if (best < 0) return -1; /* fewer distinct points than c */
        for (int j = 0; j < d; j++) cen[(ptrdiff_t) s * d + j] = z[(ptrdiff_t) j * n + best];
        for (ptrdiff_t i = 0; i < n; i++) {
            const double t = sq_dist(z, n, d, i, cen, s);
            if (t < d2[i]) d2[i] = t;
        }
    }
    /* Lloyd: the nearest centre (ties: the lowest group), then the means */
    for (ptrdiff_t i = 0; i < n; i++) group[i] = -1;
    for (int it = 0; it < maxit; it++) {
        int changed = 0;
        for (ptrdiff_t i = 0; i < n; i++) {
            int bg = 0;
            double bd = INFINITY;
            for (int g = 0; g < c; g++) {
                if (it > 0 && size[g] == 0) continue;
                const double t = sq_dist(z, n, d, i, cen, g);
                if (t < bd) { bd = t; bg = g; }
            }
            if (group[i] != bg) { group[i] = bg; changed = 1; }
        }
        if (!changed) break;
        centres(z, n, d, c, group, cen, size);
        host_pause(host, 0);
    }
    centres(z, n, d, c, group, cen, size);
    /* merge groups smaller than kmin, the smallest first (ties: the lowest), into the group
     * with the nearest centre (ties: the lowest) */
    for (;;) {
        int small = -1, n_groups = 0;
        for (int g = 0; g < c; g++) {
            if (size[g] == 0) continue;
            n_groups++;
            if (size[g] < kmin && (small < 0 || size[g] < size[small])) small = g;
        }
        if (small < 0 || n_groups < 2) break;
        int to = -1;
        double bd = INFINITY;
        for (int g = 0; g < c; g++) {
            if (g == small || size[g] == 0) continue;
            double t = 0;
            for (int j = 0; j < d; j++) {
                const double u = cen[(ptrdiff_t) g * d + j] - cen[(ptrdiff_t) small * d + j];
                t += u * u;
            }
            if (t < bd) { bd = t; to = g; }
        }
        for (ptrdiff_t i = 0; i < n; i++) if (group[i] == small) group[i] = to;
        centres(z, n, d, c, group, cen, size);
    }
    double sse = 0;
    for (ptrdiff_t i = 0; i < n; i++) sse += sq_dist(z, n, d, i, cen, group[i]);
    return sse;
}

double keyed_kmeans_ref(const double *z, ptrdiff_t n, int d, int c, int kmin, int restarts, int maxit,
                    uint64_t k0, uint64_t k1, int *group, const kernel_host *host)
{
    if (n < 1 || c < 1 || d < 1 || d > 64) return -1;
    if (c == 1) {
        double *cen = (double *) host->alloc((size_t) d, sizeof(double));
        ptrdiff_t size1;
        for (ptrdiff_t i = 0; i < n; i++) group[i] = 0;
        centres(z, n, d, 1, group, cen, &size1);
        double sse = 0;
        for (ptrdiff_t i = 0; i < n; i++) sse += sq_dist(z, n, d, i, cen, 0);
        return sse;
    }
    uint64_t *h = (uint64_t *) host->alloc((size_t) n, sizeof(uint64_t));
    int *g = (int *) host->alloc((size_t) n, sizeof(int));
    double *cen = (double *) host->alloc((size_t) c * (size_t) d, sizeof(double));
    ptrdiff_t *size = (ptrdiff_t *) host->alloc((size_t) c, sizeof(ptrdiff_t));
    double *d2 = (double *) host->alloc((size_t) n, sizeof(double));
    unsigned char *buf = (unsigned char *) host->alloc(8 * ((size_t) d + 1), 1);
    double best = -1;
    for (int r = 0; r < restarts; r++) {
        keyed_hashes(z, n, d, (uint64_t) r, k0, k1, buf, h);
        const double sse = one_run(z, n, d, c, kmin, maxit, h, g, cen, size, d2, host);
        if (sse < 0) return -1;
        if (best < 0 || sse < best) {
            best = sse;
            memcpy(group, g, (size_t) n * sizeof(int));
        }
    }
    /* number the groups by first appearance */
    int *map = (int *) host->alloc((size_t) c, sizeof(int));
    for (int t = 0; t < c; t++) map[t] = -1;
    int next = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        if (map[group[i]] < 0) map[group[i]] = next++;
        group[i] = map[group[i]];
    }
    return best;
}

#else
typedef int detanon_no_keyed_ref; /* ISO C: a translation unit is not empty */
#endif
