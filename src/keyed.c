/* Kernels of anonymise_keyed(): SipHash-2-4, keyed uniforms, and the keyed k-means of one
 * stratum (keyed.h). Pure C: no R API. Deterministic: the same points, settings and key
 * give the same groups bit for bit, whatever their order (the caller passes the points of
 * a stratum in a canonical order: sorted by their coordinates). */
#include <math.h>
#include <string.h>
#include "keyed.h"
#include "threads.h"

#define ROTL(x, b) (uint64_t) (((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                  \
    do {                                                                          \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);                 \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                    \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                    \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);                 \
    } while (0)

static uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void store_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) { p[i] = (unsigned char) (v & 0xff); v >>= 8; }
}

uint64_t keyed_siphash(const unsigned char *in, size_t len, uint64_t k0, uint64_t k1)
{
    uint64_t v0 = UINT64_C(0x736f6d6570736575) ^ k0;
    uint64_t v1 = UINT64_C(0x646f72616e646f6d) ^ k1;
    uint64_t v2 = UINT64_C(0x6c7967656e657261) ^ k0;
    uint64_t v3 = UINT64_C(0x7465646279746573) ^ k1;
    const size_t full = len - len % 8;
    for (size_t i = 0; i < full; i += 8) {
        const uint64_t m = load_le64(in + i);
        v3 ^= m;
        SIPROUND; SIPROUND;
        v0 ^= m;
    }
    uint64_t b = ((uint64_t) len) << 56;
    for (size_t i = full; i < len; i++) b |= ((uint64_t) in[i]) << (8 * (i - full));
    v3 ^= b;
    SIPROUND; SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND; SIPROUND; SIPROUND; SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

void keyed_derive(const unsigned char *secret, size_t len, uint64_t *k0, uint64_t *k1)
{
    /* two public domain-separation keys ("detanon keyed k0/k1") */
    *k0 = keyed_siphash(secret, len, UINT64_C(0x6e61746564), UINT64_C(0x306b2064657965));
    *k1 = keyed_siphash(secret, len, UINT64_C(0x6e61746564), UINT64_C(0x316b2064657965));
}

/* (h >> 11 + 1/2) / 2^53: a double in (0, 1), never 0 or 1 */
static double to_unit(uint64_t h)
{
    return ((double) (h >> 11) + 0.5) * 0x1p-53;
}

/* splitmix64's finaliser */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30; x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27; x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

double keyed_step_uniform(uint64_t h, int step)
{
    return to_unit(mix64(h + (uint64_t) (step + 1) * UINT64_C(0x9e3779b97f4a7c15)));
}

static void point_hashes(const double *z, ptrdiff_t n, int d, uint64_t salt, uint64_t k0, uint64_t k1,
                         unsigned char *buf, uint64_t *h)
{
    store_le64(buf, salt);
    for (ptrdiff_t i = 0; i < n; i++) {
        for (int j = 0; j < d; j++) {
            double v = z[(ptrdiff_t) j * n + i];
            if (v == 0) v = 0; /* -0 as +0 */
            uint64_t bits;
            memcpy(&bits, &v, sizeof bits);
            store_le64(buf + 8 * (j + 1), bits);
        }
        h[i] = keyed_siphash(buf, 8 * ((size_t) d + 1), k0, k1);
    }
}

static uint64_t row_hash(const double *row, int d, uint64_t salt, uint64_t k0, uint64_t k1)
{
    unsigned char buf[8 * 65];
    uint64_t h;
    point_hashes(row, 1, d, salt, k0, k1, buf, &h);
    return h;
}

void keyed_uniforms(const double *z, ptrdiff_t n, int d, uint64_t salt, uint64_t k0, uint64_t k1,
                    double *u)
{
    double row[64];
    for (ptrdiff_t i = 0; i < n; i++) {
        for (int j = 0; j < d; j++) row[j] = z[(ptrdiff_t) j * n + i];
        u[i] = to_unit(row_hash(row, d, salt, k0, k1));
    }
}

double keyed_row_step(const double *row, int d, uint64_t salt, uint64_t k0, uint64_t k1, int step)
{
    return keyed_step_uniform(row_hash(row, d, salt, k0, k1), step);
}

void keyed_group_uniforms(const double *x, ptrdiff_t n, int d, const int *off, int ngroups, int nout,
                          uint64_t salt, uint64_t k0, uint64_t k1, unsigned char *buf, double *u)
{
    for (int g = 0; g < ngroups; g++) {
        const ptrdiff_t from = off[g], to = off[g + 1];
        store_le64(buf, salt);
        store_le64(buf + 8, (uint64_t) (to - from));
        size_t len = 16;
        for (ptrdiff_t i = from; i < to; i++) {
            for (int j = 0; j < d; j++) {
                double v = x[(ptrdiff_t) j * n + i];
                if (v == 0) v = 0; /* -0 as +0 */
                uint64_t bits;
                memcpy(&bits, &v, sizeof bits);
                store_le64(buf + len, bits);
                len += 8;
            }
        }
        const uint64_t h = keyed_siphash(buf, len, k0, k1);
        for (int j = 0; j < nout; j++) u[(ptrdiff_t) j * ngroups + g] = keyed_step_uniform(h, j);
    }
}

static double sq_dist(const double *z, ptrdiff_t n, int d, ptrdiff_t i, const double *cen, int g)
{
    double s = 0;
    for (int j = 0; j < d; j++) {
        const double t = z[(ptrdiff_t) j * n + i] - cen[(ptrdiff_t) g * d + j];
        s += t * t;
    }
    return s;
}

/* centres of the groups (d values per group, in point order sums) and sizes; with `dirty`
 * (not NULL), only of the groups marked there */
static void centres(const double *z, ptrdiff_t n, int d, int c, const int *group, const unsigned char *dirty,
                    double *cen, ptrdiff_t *size)
{
    for (int g = 0; g < c; g++) {
        if (dirty && !dirty[g]) continue;
        size[g] = 0;
        for (int j = 0; j < d; j++) cen[(ptrdiff_t) g * d + j] = 0;
    }
    for (ptrdiff_t i = 0; i < n; i++) {
        const int g = group[i];
        if (dirty && !dirty[g]) continue;
        size[g]++;
        for (int j = 0; j < d; j++) cen[(ptrdiff_t) g * d + j] += z[(ptrdiff_t) j * n + i];
    }
    for (int g = 0; g < c; g++)
        if (size[g] > 0 && (!dirty || dirty[g]))
            for (int j = 0; j < d; j++) cen[(ptrdiff_t) g * d + j] /= (double) size[g];
}

/* The nearest and second nearest seeds of a point change at few of the seeds (about
 * 2 log c of them): each change is kept, up to SEED_EVENTS per point, so that the first
 * Lloyd assignment of any count c is read from them instead of a scan of the c centres. */
#define SEED_EVENTS 24

/* The scratch memory of one run (one per thread). */
typedef struct {
    uint64_t *h;       /* the points' keyed hashes of the restart */
    int *group;        /* the run's groups */
    double *cen;       /* c x d centres */
    double *old;       /* c x d centres before the last update */
    ptrdiff_t *size;   /* group sizes */
    double *d2;        /* seeding: squared distance to the nearest chosen centre */
    double *t;         /* seeding: squared distance to the newest centre */
    double *sec;       /* seeding: squared distance to the second nearest centre */
    int *bg;           /* seeding: the nearest centre */
    int ev_cap;        /* events kept per point: SEED_EVENTS, or c when fewer (at most one per seed) */
    int *nev;          /* seeding: the number of events of each point (may exceed ev_cap) */
    int *ev_s, *ev_g;  /* its events (n x ev_cap): the seed, the nearest seed after it */
    double *ev_bd, *ev_sec; /* and the nearest and second nearest squared distances after it */
    int *seeds;        /* the seeds of the restart */
    double *ub, *lb;   /* Lloyd: bounds on the distance to the own centre and to any other */
    double *shift;     /* how far each centre moved in the last update */
    double *cc;        /* c x c distances between the centres (NULL when c is large) */
    double *half;      /* half the distance from each centre to the nearest other */
    int *row_it;       /* the iteration whose centres cand[a], half[a] and farmin[a] hold */
    int *cc_it;        /* the iteration whose centres row a of cc holds (-1: none) */
    int *moved_it;     /* the iteration from which centre g has held its value */
    double *maxub;     /* the largest ub of each group's points at the start of an iteration */
    unsigned char *dirty; /* the groups that gained or lost a point in the iteration */
    int *cand;         /* row a: the groups a point of a may be nearer to (c x c) */
    int *ncand;        /* their number */
    double *farmin;    /* the smallest scaled distance from a to a group left out of cand */
    unsigned char *buf;
    int *keep;         /* the groups of this thread's best restart */
    double keep_sse;   /* its SSE (-1: none yet) */
    int keep_r;        /* its restart */
    int failed;        /* a run found fewer distinct points than c */
} run_scratch;

/* Bounds are used only with margins far above their rounding errors (relative RELTOL,
 * absolute ABSTOL times the diameter of the points), so that a point is left in its group
 * only when the plain scan of every centre would certainly put it there too. */
#define RELTOL 1e-9
#define ABSTOL 1e-9

/* the centres' distances and candidates are kept for at most this many groups (12 MB) */
#define KEYED_CC_MAX 1024

static int bound_holds(double ub, double lb, double abstol)
{
    return ub * (1 + RELTOL) + abstol < lb;
}

/* Scratch for runs of up to n points and c groups. */
static void scratch_alloc(run_scratch *w, ptrdiff_t n, int d, int c, const kernel_host *host)
{
    w->h = (uint64_t *) host->alloc((size_t) n, sizeof(uint64_t));
    w->group = (int *) host->alloc((size_t) n, sizeof(int));
    w->keep = (int *) host->alloc((size_t) n, sizeof(int));
    w->cen = (double *) host->alloc((size_t) c * (size_t) d, sizeof(double));
    w->old = (double *) host->alloc((size_t) c * (size_t) d, sizeof(double));
    w->size = (ptrdiff_t *) host->alloc((size_t) c, sizeof(ptrdiff_t));
    w->d2 = (double *) host->alloc((size_t) n, sizeof(double));
    w->t = (double *) host->alloc((size_t) n, sizeof(double));
    w->sec = (double *) host->alloc((size_t) n, sizeof(double));
    w->bg = (int *) host->alloc((size_t) n, sizeof(int));
    w->nev = (int *) host->alloc((size_t) n, sizeof(int));
    w->ev_cap = c < SEED_EVENTS ? c : SEED_EVENTS;
    w->ev_s = (int *) host->alloc((size_t) n * (size_t) w->ev_cap, sizeof(int));
    w->ev_g = (int *) host->alloc((size_t) n * (size_t) w->ev_cap, sizeof(int));
    w->ev_bd = (double *) host->alloc((size_t) n * (size_t) w->ev_cap, sizeof(double));
    w->ev_sec = (double *) host->alloc((size_t) n * (size_t) w->ev_cap, sizeof(double));
    w->seeds = (int *) host->alloc((size_t) c, sizeof(int));
    w->ub = (double *) host->alloc((size_t) n, sizeof(double));
    w->lb = (double *) host->alloc((size_t) n, sizeof(double));
    w->shift = (double *) host->alloc((size_t) c, sizeof(double));
    w->cc = c <= KEYED_CC_MAX ? (double *) host->alloc((size_t) c * (size_t) c, sizeof(double)) : NULL;
    w->half = (double *) host->alloc((size_t) c, sizeof(double));
    w->row_it = (int *) host->alloc((size_t) c, sizeof(int));
    w->cc_it = (int *) host->alloc((size_t) c, sizeof(int));
    w->moved_it = (int *) host->alloc((size_t) c, sizeof(int));
    w->maxub = (double *) host->alloc((size_t) c, sizeof(double));
    w->dirty = (unsigned char *) host->alloc((size_t) c, 1);
    w->cand = c <= KEYED_CC_MAX ? (int *) host->alloc((size_t) c * (size_t) c, sizeof(int)) : NULL;
    w->ncand = (int *) host->alloc((size_t) c, sizeof(int));
    w->farmin = (double *) host->alloc((size_t) c, sizeof(double));
    w->buf = (unsigned char *) host->alloc(8 * ((size_t) d + 1), 1);
    w->keep_sse = -1;
    w->keep_r = -1;
    w->failed = 0;
}

/* The k-means++ seeds of a restart (hashes w->h) by the exponential race: the first
 * uniform over the points, then with weight D2 (points at a chosen centre have weight 0).
 * A seed does not depend on how many follow it, so the seeds of c groups are the first c
 * of any longer run. Writes up to c seed indices; returns how many were found (fewer than
 * c when the points have fewer distinct values). A point whose key e / D2 is certainly
 * above the best so far (from the bound e = -log(u) >= 1 - u) is not given a log(). Every
 * point's squared distances to the seeds, in seed order, go through the comparisons of the
 * plain scan of the first Lloyd assignment; each change of its nearest (ties: the first)
 * or second nearest distance is an event (w->ev_*). */
static int seed_race(const double *restrict z, ptrdiff_t n, int d, int c, run_scratch *w, int *seeds)
{
    const uint64_t *h = w->h;
    double *restrict d2 = w->d2, *restrict t = w->t, *restrict sec = w->sec;
    for (ptrdiff_t i = 0; i < n; i++) { d2[i] = INFINITY; sec[i] = INFINITY; w->nev[i] = 0; w->bg[i] = 0; }
    for (int s = 0; s < c; s++) {
        ptrdiff_t best = -1;
        double bk = INFINITY;
        for (ptrdiff_t i = 0; i < n; i++) {
            if (!(d2[i] > 0)) continue;
            const double u = keyed_step_uniform(h[i], s);
            if (best >= 0) {
                /* -log(u) >= 1 - u: a point whose key is certainly above bk cannot win */
                const double lo = s == 0 ? 1 - u : (1 - u) / d2[i];
                if (lo > bk * (1 + RELTOL)) continue;
            }
            const double e = -log(u);
            const double key = s == 0 ? e : e / d2[i];
            if (key < bk) { bk = key; best = i; }
        }
        if (best < 0) return s;
        seeds[s] = (int) best;
        /* the squared distance of every point to the new centre, the coordinates added in
         * order (as sq_dist()), one coordinate at a time over all points */
        const double c0 = z[best];
#ifdef _OPENMP
#pragma omp simd
#endif
        for (ptrdiff_t i = 0; i < n; i++) t[i] = (z[i] - c0) * (z[i] - c0);
        for (int j = 1; j < d; j++) {
            const double *restrict zj = z + (ptrdiff_t) j * n;
            const double cj = zj[best];
#ifdef _OPENMP
#pragma omp simd
#endif
            for (ptrdiff_t i = 0; i < n; i++) t[i] += (zj[i] - cj) * (zj[i] - cj);
        }
        for (ptrdiff_t i = 0; i < n; i++) {
            if (!(t[i] < sec[i])) continue;
            if (t[i] < d2[i]) { sec[i] = d2[i]; d2[i] = t[i]; w->bg[i] = s; }
            else sec[i] = t[i];
            const int e = w->nev[i]++;
            if (e < w->ev_cap) {
                const ptrdiff_t k = i * w->ev_cap + e;
                w->ev_s[k] = s;
                w->ev_g[k] = w->bg[i];
                w->ev_bd[k] = d2[i];
                w->ev_sec[k] = sec[i];
            }
        }
    }
    return c;
}

/* Row a of the distances between the live centres and half the distance to the nearest
 * other, for the centres of iteration it (a distance is recomputed only when one of its two
 * centres moved since the row was last computed); and the groups a point of group a is
 * compared with: a itself and every live centre within the reach of the largest ub of a's
 * points (with margins), in increasing order. The others are farther than the own centre for
 * every point of a (Elkan's lemma below); farmin[a] is the smallest of their scaled
 * distances, which gives their part of a point's lower bound. */
static void centre_row(run_scratch *w, int c, int d, int a, int it, double abstol)
{
    const double *cen = w->cen;
    const double reach = (2 * w->maxub[a] * (1 + RELTOL) + 2 * abstol) * (1 + RELTOL) + abstol;
    int *cand = w->cand + (ptrdiff_t) a * c, nc = 0;
    double *row = w->cc + (ptrdiff_t) a * c;
    const int since = w->moved_it[a] > w->cc_it[a] ? -1 : w->cc_it[a];
    double m = INFINITY, far = INFINITY;
    for (int g = 0; g < c; g++) {
        if (w->size[g] == 0) continue;
        if (g == a) { cand[nc++] = g; continue; }
        double t;
        if (w->moved_it[g] > since) {
            t = 0;
            for (int j = 0; j < d; j++) {
                const double v = cen[(ptrdiff_t) a * d + j] - cen[(ptrdiff_t) g * d + j];
                t += v * v;
            }
            t = sqrt(t);
            row[g] = t;
        } else t = row[g];
        if (t < m) m = t;
        const double cg = t * (1 - RELTOL);
        if (cg > reach) { if (cg < far) far = cg; }
        else cand[nc++] = g;
    }
    row[a] = 0;
    w->cc_it[a] = it;
    w->half[a] = 0.5 * m * (1 - RELTOL) - abstol;
    w->ncand[a] = nc;
    w->farmin[a] = far;
    w->row_it[a] = it;
}

/* Lloyd iterations from the centres at the seeds, the merge of small groups and the SSE;
 * returns the SSE (w->group filled, 0..c-1, possibly with empty groups). The same
 * iterations, groups and SSE as the plain algorithm (every point against every centre:
 * the R reference in tests/testthat/helper-keyed.R), computed with exact shortcuts:
 * Hamerly's bounds (an upper bound on the distance to the own centre, a lower bound on
 * the distance to every other), moved by the centres' shifts, and the distances between
 * the centres, a row computed only for a group with a point whose bounds do not hold (a
 * point nearer its centre than half the distance to the nearest other centre stays;
 * Elkan's lemma: a centre at least twice the point's distance away from the point's
 * centre is farther). A point whose bounds separate (with the margins above) keeps its
 * group without a scan; any other is compared with every centre not certainly farther,
 * in the plain order with the plain comparisons. The means are recomputed, from all their
 * points in point order, only for the groups that gained or lost a point (the others keep
 * the same sums, bit for bit). diam: an upper bound on the distance between any two
 * points; no bounds are used when it is 0, below 1e-100 (squared distances could
 * underflow) or above 1e100. */
static double lloyd_run(const double *z, ptrdiff_t n, int d, int c, int kmin, int maxit, double diam,
                        const int *seeds, int events, run_scratch *w, const kernel_host *host)
{
    int *group = w->group;
    double *cen = w->cen, *ub = w->ub, *lb = w->lb;
    ptrdiff_t *size = w->size;
    const double abstol = ABSTOL * diam;
    const int bounds = diam > 1e-100 && diam < 1e100;
    for (int s = 0; s < c; s++)
        for (int j = 0; j < d; j++) cen[(ptrdiff_t) s * d + j] = z[(ptrdiff_t) j * n + seeds[s]];
    for (int a = 0; a < c; a++) { w->row_it[a] = -1; w->cc_it[a] = -1; w->moved_it[a] = 0; }
    /* Lloyd: the nearest centre (ties: the lowest group), then the means */
    for (ptrdiff_t i = 0; i < n; i++) group[i] = -1;
    unsigned char *dirty = w->dirty;
    memset(dirty, 1, (size_t) c);
    for (int it = 0; it < maxit; it++) {
        int changed = 0;
        const int near = it > 0 && bounds && w->cc;
        for (ptrdiff_t i = 0; i < n; i++) {
            if (it == 0 && events) {
                /* the plain scan's result from the seeding's events before seed c */
                const ptrdiff_t k = i * w->ev_cap;
                const int m = w->nev[i] < w->ev_cap ? w->nev[i] : w->ev_cap;
                int e = 0;
                while (e < m && w->ev_s[k + e] < c) e++;
                if (e < m || w->nev[i] <= w->ev_cap) {
                    ub[i] = e ? sqrt(w->ev_bd[k + e - 1]) : INFINITY;
                    lb[i] = e ? sqrt(w->ev_sec[k + e - 1]) : INFINITY;
                    group[i] = e ? w->ev_g[k + e - 1] : 0;
                    changed = 1;
                    continue;
                }
            }
            const int a = group[i];
            if (it > 0 && bounds) {
                /* the bounds first, then with the exact distance to the own centre, then
                 * with half the distance from the own centre to the nearest other */
                if (bound_holds(ub[i], lb[i], abstol)) continue;
                ub[i] = sqrt(sq_dist(z, n, d, i, cen, a));
                if (bound_holds(ub[i], lb[i], abstol)) continue;
                if (near && w->row_it[a] != it) centre_row(w, c, d, a, it, abstol);
                if (near && bound_holds(ub[i], w->half[a], abstol)) continue;
            }
            /* with the centres' distances: a centre g at least 2 ub from the own centre is
             * farther than it (|x - g| >= |a - g| - |x - a| > ub), so not scanned */
            const double *cca = near ? w->cc + (ptrdiff_t) a * c : NULL;
            const double ubi = near ? ub[i] * (1 + RELTOL) : 0;
            const double reach = 2 * ubi + 2 * abstol;
            double lbskip = INFINITY;
            int bg = 0;
            double bd = INFINITY, second = INFINITY;
            if (near) {
                /* the candidates of row a, in the plain order; the groups left out of it
                 * are all skipped, the nearest giving their bound */
                const int *cand = w->cand + (ptrdiff_t) a * c;
                for (int q = 0; q < w->ncand[a]; q++) {
                    const int g = cand[q];
                    if (g != a) {
                        const double cg = cca[g] * (1 - RELTOL);
                        if (cg > reach) {
                            const double b = cg - ubi - 2 * abstol;
                            if (b < lbskip) lbskip = b;
                            continue;
                        }
                    }
                    const double t = sq_dist(z, n, d, i, cen, g);
                    if (t < bd) { second = bd; bd = t; bg = g; }
                    else if (t < second) second = t;
                }
                if (w->farmin[a] < INFINITY) {
                    const double b = w->farmin[a] - ubi - 2 * abstol;
                    if (b < lbskip) lbskip = b;
                }
            } else {
                for (int g = 0; g < c; g++) {
                    if (it > 0 && size[g] == 0) continue;
                    const double t = sq_dist(z, n, d, i, cen, g);
                    if (t < bd) { second = bd; bd = t; bg = g; }
                    else if (t < second) second = t;
                }
            }
            ub[i] = sqrt(bd);
            lb[i] = sqrt(second);
            if (lbskip < lb[i]) lb[i] = lbskip;
            if (group[i] != bg) {
                if (group[i] >= 0) dirty[group[i]] = 1;
                dirty[bg] = 1;
                group[i] = bg;
                changed = 1;
            }
        }
        if (!changed) break;
        memcpy(w->old, cen, (size_t) c * (size_t) d * sizeof(double));
        centres(z, n, d, c, group, dirty, cen, size);
        if (bounds) {
            /* the shifts of the live centres, the largest two */
            double m1 = 0, m2 = 0;
            int g1 = -1;
            for (int g = 0; g < c; g++) {
                double t = 0;
                if (size[g] > 0 && dirty[g]) {
                    int moved = 0;
                    for (int j = 0; j < d; j++) {
                        const double v = cen[(ptrdiff_t) g * d + j] - w->old[(ptrdiff_t) g * d + j];
                        t += v * v;
                        moved |= v != 0;
                    }
                    t = sqrt(t) * (1 + RELTOL);
                    if (moved) w->moved_it[g] = it + 1;
                }
                w->shift[g] = t;
                if (t > m1) { m2 = m1; m1 = t; g1 = g; }
                else if (t > m2) m2 = t;
            }
            /* and the largest ub of every group for the next iteration */
            for (int a = 0; a < c; a++) w->maxub[a] = 0;
            for (ptrdiff_t i = 0; i < n; i++) {
                const int a = group[i];
                ub[i] += w->shift[a];
                lb[i] -= a == g1 ? m2 : m1;
                if (ub[i] > w->maxub[a]) w->maxub[a] = ub[i];
            }
        }
        memset(dirty, 0, (size_t) c);
        if (host) host_pause(host, 0);
    }
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
        centres(z, n, d, c, group, NULL, cen, size);
    }
    double sse = 0;
    for (ptrdiff_t i = 0; i < n; i++) sse += sq_dist(z, n, d, i, cen, group[i]);
    return sse;
}

/* one keyed run; returns the SSE, or -1 when the points have fewer than c distinct values */
static double one_run(const double *z, ptrdiff_t n, int d, int c, int kmin, int maxit, double diam,
                      run_scratch *w, const kernel_host *host)
{
    if (seed_race(z, n, d, c, w, w->seeds) < c) return -1;
    return lloyd_run(z, n, d, c, kmin, maxit, diam, w->seeds, 1, w, host);
}

/* sqrt(sum of the squared ranges of the columns), a little enlarged: an upper bound on the
 * distance between any two points, or means of points */
static double diameter(const double *z, ptrdiff_t n, int d)
{
    double s = 0;
    for (int j = 0; j < d; j++) {
        double lo = INFINITY, hi = -INFINITY;
        for (ptrdiff_t i = 0; i < n; i++) {
            const double v = z[(ptrdiff_t) j * n + i];
            if (v < lo) lo = v;
            if (v > hi) hi = v;
        }
        s += (hi - lo) * (hi - lo);
    }
    return sqrt(s) * 1.01;
}

/* All n points in one group: group[] = 0, returns the SSE (centre and sum in point order) */
static double one_group(const double *z, ptrdiff_t n, int d, int *group)
{
    double cen[64];
    ptrdiff_t size1;
    for (ptrdiff_t i = 0; i < n; i++) group[i] = 0;
    centres(z, n, d, 1, group, NULL, cen, &size1);
    double sse = 0;
    for (ptrdiff_t i = 0; i < n; i++) sse += sq_dist(z, n, d, i, cen, 0);
    return sse;
}

/* out[i]: the group of in[i] (0..c-1) renumbered by first appearance; map: c ints */
static void number_groups(const int *in, ptrdiff_t n, int c, int *map, int *out)
{
    for (int t = 0; t < c; t++) map[t] = -1;
    int next = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        if (map[in[i]] < 0) map[in[i]] = next++;
        out[i] = map[in[i]];
    }
}

/* restart r in the scratch w; keeps the run when it is the best of w's so far: the lowest
 * SSE, ties to the lowest restart (so that the best over all threads' keeps is the first
 * lowest SSE of the restarts in order, whichever thread ran which) */
static void restart(const double *z, ptrdiff_t n, int d, int c, int kmin, int maxit, double diam,
                    uint64_t k0, uint64_t k1, int r, run_scratch *w, const kernel_host *host)
{
    point_hashes(z, n, d, (uint64_t) r, k0, k1, w->buf, w->h);
    const double sse = one_run(z, n, d, c, kmin, maxit, diam, w, host);
    if (sse < 0) { w->failed = 1; return; }
    if (w->keep_sse < 0 || sse < w->keep_sse || (sse == w->keep_sse && r < w->keep_r)) {
        w->keep_sse = sse;
        w->keep_r = r;
        memcpy(w->keep, w->group, (size_t) n * sizeof(int));
    }
}

double keyed_kmeans(const double *z, ptrdiff_t n, int d, int c, int kmin, int restarts, int maxit,
                    uint64_t k0, uint64_t k1, int nthreads, int *group, const kernel_host *host)
{
    if (n < 1 || c < 1 || d < 1 || d > 64) return -1;
    if (c == 1) return one_group(z, n, d, group);
    int nt = threads_for(nthreads, (double) n * (double) c * (double) restarts);
    if (nt > restarts) nt = restarts;
    if (nt < 1) nt = 1;
    run_scratch *w = (run_scratch *) host->alloc((size_t) nt, sizeof(run_scratch));
    for (int t = 0; t < nt; t++) scratch_alloc(w + t, n, d, c, host);
    const double diam = diameter(z, n, d);
    if (nt == 1) {
        for (int r = 0; r < restarts; r++) {
            restart(z, n, d, c, kmin, maxit, diam, k0, k1, r, w, host);
            if (w->failed) return -1;
        }
    } else {
        /* the restarts in parallel, each thread in its own scratch; no R API, no pause */
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
        for (int r = 0; r < restarts; r++)
            restart(z, n, d, c, kmin, maxit, diam, k0, k1, r, w + THREAD_ID, NULL);
        host_pause(host, 0);
    }
    /* the best over the threads: the lowest SSE, ties to the lowest restart */
    int bt = -1;
    for (int t = 0; t < nt; t++) {
        if (w[t].failed) return -1;
        if (w[t].keep_sse < 0) continue;
        if (bt < 0 || w[t].keep_sse < w[bt].keep_sse ||
            (w[t].keep_sse == w[bt].keep_sse && w[t].keep_r < w[bt].keep_r)) bt = t;
    }
    if (bt < 0) return -1;
    const double best = w[bt].keep_sse;
    number_groups(w[bt].keep, n, c, (int *) host->alloc((size_t) c, sizeof(int)), group);
    return best;
}

/* The scratch of the blocks' runs, one per thread, for blocks of up to nmax points and
 * cmax groups. */
static run_scratch *blocks_scratch(int nt, ptrdiff_t nmax, int d, int cmax, const kernel_host *host)
{
    run_scratch *w = (run_scratch *) host->alloc((size_t) nt, sizeof(run_scratch));
    for (int t = 0; t < nt; t++) scratch_alloc(w + t, nmax, d, cmax, host);
    return w;
}

/* Blocks are run in chunks of BLOCK_CHUNK, each chunk's blocks on up to nt threads (one
 * block per thread at a time, so the result does not depend on nt), with a pause between
 * chunks. */
#define BLOCK_CHUNK 64

/* block b's points (rows off[b] .. off[b + 1] - 1 of z, n x d) copied to zt, d columns */
static ptrdiff_t block_points(const double *z, ptrdiff_t n, int d, const int *off, int b, double *zt)
{
    const ptrdiff_t m = off[b + 1] - off[b];
    for (int j = 0; j < d; j++) memcpy(zt + (ptrdiff_t) j * m, z + (ptrdiff_t) j * n + off[b], (size_t) m * sizeof(double));
    return m;
}

/* One block's grid (keyed_kmeans_grid()): its points' hashes once per restart, the seeds
 * once per restart for the largest count, and the Lloyd runs of every count from them. */
static void block_grid(const double *z, ptrdiff_t n, int d, const int *grid, int ng, int kmin, int restarts,
                       int maxit, uint64_t k0, uint64_t k1, run_scratch *w, int *seeds, double *sse)
{
    const int gmax = grid[ng - 1];
    const double diam = diameter(z, n, d);
    for (int r = 0; r < restarts; r++) {
        int *sr = seeds + (ptrdiff_t) r * gmax;
        int found = 0;
        if (gmax > 1) {
            point_hashes(z, n, d, (uint64_t) r, k0, k1, w->buf, w->h);
            found = seed_race(z, n, d, gmax, w, sr);
        }
        for (int q = found; q < gmax; q++) sr[q] = -1;
        for (int q = 0; q < ng; q++) {
            const int c = grid[q];
            if (c == 1) {
                if (r == 0) sse[q] = one_group(z, n, d, w->group);
            } else if (found < c) {
                sse[q] = -1;
            } else {
                /* the lowest SSE, ties to the lowest restart */
                const double e = lloyd_run(z, n, d, c, kmin, maxit, diam, sr, 1, w, NULL);
                if (r == 0 || e < sse[q]) sse[q] = e;
            }
        }
    }
}

/* One block's partition (keyed_kmeans_partition()): the Lloyd runs of c groups from the
 * saved seeds of every restart, the best kept. */
static void block_partition(const double *z, ptrdiff_t n, int d, int c, int gmax, int kmin, int restarts,
                            int maxit, const int *seeds, run_scratch *w, int *map, int *group)
{
    if (c == 1) {
        for (ptrdiff_t i = 0; i < n; i++) group[i] = 0;
        return;
    }
    const double diam = diameter(z, n, d);
    double best = -1;
    for (int r = 0; r < restarts; r++) {
        const double e = lloyd_run(z, n, d, c, kmin, maxit, diam, seeds + (ptrdiff_t) r * gmax, 0, w, NULL);
        if (best < 0 || e < best) {
            best = e;
            memcpy(w->keep, w->group, (size_t) n * sizeof(int));
        }
    }
    number_groups(w->keep, n, c, map, group);
}

/* The blocks' grids (count == NULL) or partitions (count: each block's count), the
 * arguments of keyed_kmeans_grid() and keyed_kmeans_partition(). */
typedef struct {
    const double *z;
    ptrdiff_t n;
    int d, nb;
    const int *off, *grid, *goff, *count, *gmax;
    int kmin, restarts, maxit;
    uint64_t k0, k1;
    int *seeds;
    double *sse;
    int *group;
} blocks_job;

static void blocks_run(const blocks_job *j, int nthreads, const kernel_host *host)
{
    const int nb = j->nb, d = j->d, restarts = j->restarts;
    ptrdiff_t nmax = 1;
    int cmax = 1;
    ptrdiff_t *soff = (ptrdiff_t *) host->alloc((size_t) nb + 1, sizeof(ptrdiff_t));
    soff[0] = 0;
    for (int b = 0; b < nb; b++) {
        /* the block's seeds: restarts x its largest grid count */
        const int gmax = j->count ? j->gmax[b] : j->grid[j->goff[b + 1] - 1];
        const int width = j->count ? j->count[b] : gmax;
        if (j->off[b + 1] - j->off[b] > nmax) nmax = j->off[b + 1] - j->off[b];
        if (width > cmax) cmax = width;
        soff[b + 1] = soff[b] + (ptrdiff_t) restarts * gmax;
    }
    int nt = threads_for(nthreads, (double) j->n * (double) cmax * (double) restarts);
    if (nt > nb) nt = nb;
    if (nt < 1) nt = 1;
    run_scratch *w = blocks_scratch(nt, nmax, d, cmax, host);
    double *zb = (double *) host->alloc((size_t) nt * (size_t) nmax * (size_t) d, sizeof(double));
    int *map = (int *) host->alloc((size_t) nt * (size_t) cmax, sizeof(int));
    for (int from = 0; from < nb; from += BLOCK_CHUNK) {
        const int to = from + BLOCK_CHUNK < nb ? from + BLOCK_CHUNK : nb;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
        for (int b = from; b < to; b++) {
            const int t = THREAD_ID;
            double *zt = zb + (ptrdiff_t) t * nmax * d;
            const ptrdiff_t m = block_points(j->z, j->n, d, j->off, b, zt);
            if (j->count)
                block_partition(zt, m, d, j->count[b], j->gmax[b], j->kmin, restarts, j->maxit, j->seeds + soff[b],
                                w + t, map + (ptrdiff_t) t * cmax, j->group + j->off[b]);
            else
                block_grid(zt, m, d, j->grid + j->goff[b], j->goff[b + 1] - j->goff[b], j->kmin, restarts, j->maxit,
                           j->k0, j->k1, w + t, j->seeds + soff[b], j->sse + j->goff[b]);
        }
        host_pause(host, 0);
    }
}

void keyed_kmeans_grid(const double *z, ptrdiff_t n, int d, int nb, const int *off, const int *grid,
                       const int *goff, int kmin, int restarts, int maxit, uint64_t k0, uint64_t k1,
                       int nthreads, int *seeds, double *sse, const kernel_host *host)
{
    const blocks_job j = { z, n, d, nb, off, grid, goff, NULL, NULL, kmin, restarts, maxit, k0, k1, seeds, sse, NULL };
    blocks_run(&j, nthreads, host);
}

void keyed_kmeans_partition(const double *z, ptrdiff_t n, int d, int nb, const int *off, const int *count,
                            const int *gmax, const int *seeds, int kmin, int restarts, int maxit, int nthreads,
                            int *group, const kernel_host *host)
{
    const blocks_job j = { z, n, d, nb, off, NULL, NULL, count, gmax, kmin, restarts, maxit, 0, 0, (int *) seeds,
                           NULL, group };
    blocks_run(&j, nthreads, host);
}
