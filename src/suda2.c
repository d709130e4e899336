/* SUDA2 kernel (see suda2.h). The search follows SUDA2's recursion over the lattice of key
 * sets: the records sharing their values on a set S of keys (taken in increasing key order)
 * form a group, which is split by each later key. A record alone in its part is unique on
 * S plus that key, and leaves that branch: every larger set is unique for it as well, and
 * it cannot make another record's set less unique. A part of two or more records is split
 * further, unless none of its records is unique on all its keys (those records have no
 * MSU, and nothing below can give them one). Every unique set found this way is recorded
 * with its record; a record's MSUs are the minimal ones among its recorded sets, since
 * every set it is unique on contains one of them. */
#include <math.h>
#include <string.h>
#include "suda2.h"

typedef struct {
    uint64_t mask;
    int record;
} suda2_event;

typedef struct {
    const int *codes;
    ptrdiff_t n;
    int m;
    const unsigned char *cand;  /* 1: the record may have an MSU */
    int **buf;                  /* buf[d]: records of the groups at depth d (n each, lazily) */
    ptrdiff_t *count;           /* per code of the key being split (all zero between splits) */
    int *touched;               /* codes met in the current split */
    suda2_event *ev;
    ptrdiff_t n_ev, cap_ev;
    ptrdiff_t work, next_pause;
    const kernel_host *h;
} suda2_ctx;

static void add_event(suda2_ctx *c, uint64_t mask, int record)
{
    if (c->n_ev == c->cap_ev) {
        ptrdiff_t cap = c->cap_ev ? 2 * c->cap_ev : 1024;
        suda2_event *ev = (suda2_event *) c->h->alloc((size_t) cap, sizeof(suda2_event));
        if (c->n_ev) memcpy(ev, c->ev, (size_t) c->n_ev * sizeof(suda2_event));
        c->ev = ev;
        c->cap_ev = cap;
    }
    c->ev[c->n_ev].mask = mask;
    c->ev[c->n_ev].record = record;
    c->n_ev++;
}

/* Splits the group src[0 .. len) by key v into dst (records with a missing value in v are
 * left out: they share no value of v); the parts are runs of equal codes. Returns the
 * records placed. */
static ptrdiff_t split(suda2_ctx *c, const int *src, ptrdiff_t len, int v, int *dst)
{
    const int *x = c->codes + (size_t) v * (size_t) c->n;
    ptrdiff_t *count = c->count;
    int nt = 0;
    for (ptrdiff_t i = 0; i < len; i++) {
        const int code = x[src[i]];
        if (code < 0) continue;
        if (count[code]++ == 0) c->touched[nt++] = code;
    }
    ptrdiff_t pos = 0;
    for (int t = 0; t < nt; t++) {
        const ptrdiff_t k = count[c->touched[t]];
        count[c->touched[t]] = pos;
        pos += k;
    }
    for (ptrdiff_t i = 0; i < len; i++) {
        const int code = x[src[i]];
        if (code >= 0) dst[count[code]++] = src[i];
    }
    for (int t = 0; t < nt; t++) count[c->touched[t]] = 0;
    c->work += len;
    return pos;
}

/* The group grp[0 .. len) (at depth d) shares its values on the keys of `mask`; split it by
 * every key from `first` on. */
static void search(suda2_ctx *c, int d, const int *grp, ptrdiff_t len, uint64_t mask, int first)
{
    if (c->work >= c->next_pause) {
        host_pause(c->h, c->work);
        c->next_pause = c->work + ((ptrdiff_t) 1 << 20);
    }
    if (!c->buf[d + 1]) c->buf[d + 1] = (int *) c->h->alloc((size_t) c->n, sizeof(int));
    const ptrdiff_t off = grp - c->buf[d];
    int *dst = c->buf[d + 1] + off;
    for (int v = first; v < c->m; v++) {
        const ptrdiff_t placed = split(c, grp, len, v, dst);
        const int *x = c->codes + (size_t) v * (size_t) c->n;
        const uint64_t sub = mask | ((uint64_t) 1 << v);
        ptrdiff_t a = 0;
        while (a < placed) {
            ptrdiff_t b = a + 1;
            const int code = x[dst[a]];
            int any = c->cand[dst[a]];
            while (b < placed && x[dst[b]] == code) any |= c->cand[dst[b++]];
            if (b - a == 1) {
                add_event(c, sub, dst[a]);
            } else if (any && v + 1 < c->m) {
                search(c, d + 1, dst + a, b - a, sub, v + 1);
            }
            a = b;
        }
    }
}

static int popcount64(uint64_t x)
{
    int k = 0;
    while (x) { x &= x - 1; k++; }
    return k;
}

void suda2_msu(const int *codes, ptrdiff_t n, int m, const int *n_levels, double *score,
               double *contrib, suda2_result *res, const kernel_host *h)
{
    memset(res, 0, sizeof(*res));
    for (ptrdiff_t i = 0; i < n; i++) score[i] = 0.0;
    for (ptrdiff_t i = 0; i < n * (ptrdiff_t) m; i++) contrib[i] = 0.0;
    if (n <= 0 || m <= 0) return;

    int max_level = 1;
    for (int j = 0; j < m; j++) if (n_levels[j] + 1 > max_level) max_level = n_levels[j] + 1;
    ptrdiff_t *count = (ptrdiff_t *) h->alloc((size_t) max_level, sizeof(ptrdiff_t));
    memset(count, 0, (size_t) max_level * sizeof(ptrdiff_t));

    /* The groups of equal records on all the keys (a missing value as one more code): a
     * stable counting sort by each key from the last to the first. */
    int *ord = (int *) h->alloc((size_t) n, sizeof(int));
    int *tmp = (int *) h->alloc((size_t) n, sizeof(int));
    unsigned char *cand = (unsigned char *) h->alloc((size_t) n, 1);
    memset(cand, 0, (size_t) n);
    for (ptrdiff_t i = 0; i < n; i++) ord[i] = (int) i;
    for (int j = m - 1; j >= 0; j--) {
        const int *x = codes + (size_t) j * (size_t) n;
        const int L = n_levels[j] + 1;
        memset(count, 0, (size_t) L * sizeof(ptrdiff_t));
        for (ptrdiff_t i = 0; i < n; i++) {
            if (x[i] < 0) cand[i] = 1; /* a record with a missing value is kept as a candidate */
            count[x[i] + 1]++;
        }
        ptrdiff_t pos = 0;
        for (int t = 0; t < L; t++) { const ptrdiff_t k = count[t]; count[t] = pos; pos += k; }
        for (ptrdiff_t i = 0; i < n; i++) tmp[count[x[ord[i]] + 1]++] = ord[i];
        int *sw = ord; ord = tmp; tmp = sw;
        host_pause(h, 0);
    }
    memset(count, 0, (size_t) max_level * sizeof(ptrdiff_t));
    for (ptrdiff_t a = 0; a < n;) {
        ptrdiff_t b = a + 1;
        while (b < n) {
            int same = 1;
            for (int j = 0; j < m && same; j++) {
                const int *x = codes + (size_t) j * (size_t) n;
                same = x[ord[a]] == x[ord[b]];
            }
            if (!same) break;
            b++;
        }
        if (b - a == 1) { res->n_unique++; cand[ord[a]] = 1; }
        if (b - a == 2) res->n_pairs += 2;
        a = b;
    }

    /* The search, from the group of all records (the empty set of keys). */
    suda2_ctx c;
    c.codes = codes;
    c.n = n;
    c.m = m;
    c.cand = cand;
    c.buf = (int **) h->alloc((size_t) m + 1, sizeof(int *));
    for (int d = 0; d <= m; d++) c.buf[d] = NULL;
    c.buf[0] = ord; /* any order of all the records */
    c.count = count;
    c.touched = (int *) h->alloc((size_t) max_level, sizeof(int));
    c.ev = NULL;
    c.n_ev = c.cap_ev = 0;
    c.work = 0;
    c.next_pause = (ptrdiff_t) 1 << 20;
    c.h = h;
    search(&c, 0, c.buf[0], n, 0, 0);

    /* Each record's unique sets, smallest first; the MSUs are those that hold no other. */
    double fact[SUDA2_MAX_KEYS];
    fact[0] = 1.0;
    for (int s = 1; s < m; s++) fact[s] = fact[s - 1] * (double) s;
    ptrdiff_t *start = (ptrdiff_t *) h->alloc((size_t) n + 1, sizeof(ptrdiff_t));
    for (ptrdiff_t i = 0; i <= n; i++) start[i] = 0;
    for (ptrdiff_t e = 0; e < c.n_ev; e++) start[c.ev[e].record + 1]++;
    for (ptrdiff_t i = 0; i < n; i++) start[i + 1] += start[i];
    ptrdiff_t *fill = (ptrdiff_t *) h->alloc((size_t) n + 1, sizeof(ptrdiff_t));
    memcpy(fill, start, ((size_t) n + 1) * sizeof(ptrdiff_t));
    const ptrdiff_t n_ev = c.n_ev;
    uint64_t *sets = (uint64_t *) h->alloc((size_t) (n_ev > 0 ? n_ev : 1), sizeof(uint64_t));
    for (ptrdiff_t e = 0; e < n_ev; e++) sets[fill[c.ev[e].record]++] = c.ev[e].mask;
    int *size = (int *) h->alloc((size_t) (n_ev > 0 ? n_ev : 1), sizeof(int));
    for (ptrdiff_t e = 0; e < n_ev; e++) size[e] = popcount64(sets[e]);
    ptrdiff_t done = 0;
    for (ptrdiff_t r = 0; r < n; r++) {
        const ptrdiff_t a = start[r], b = start[r + 1];
        if (a == b) continue;
        /* insertion sort by size (the lists are short) */
        for (ptrdiff_t i = a + 1; i < b; i++) {
            const uint64_t s = sets[i];
            const int z = size[i];
            ptrdiff_t j = i;
            while (j > a && size[j - 1] > z) { sets[j] = sets[j - 1]; size[j] = size[j - 1]; j--; }
            sets[j] = s;
            size[j] = z;
        }
        /* the MSUs are moved to the front, a .. k */
        ptrdiff_t k = a;
        for (ptrdiff_t i = a; i < b; i++) {
            int minimal = 1;
            for (ptrdiff_t j = a; j < k && minimal; j++) minimal = (sets[j] & sets[i]) != sets[j];
            if (!minimal) continue;
            sets[k] = sets[i];
            size[k] = size[i];
            k++;
            const double w = fact[m - size[i]];
            score[r] += w;
            res->n_msu++;
            res->msu_by_size[size[i] - 1]++;
            for (int j = 0; j < m; j++) {
                if (sets[i] >> j & 1u) contrib[r + (ptrdiff_t) j * n] += w;
            }
        }
        done += b - a;
        if (done >= ((ptrdiff_t) 1 << 20)) { host_pause(h, c.work); done = 0; }
    }
}

void suda2_dis(const double *score, ptrdiff_t n, int m, ptrdiff_t n_pairs, double fraction,
               double *dis)
{
    const double q = (double) (1.0f + (8.0f - (float) m) / 20.0f);
    const double t = (double) n_pairs * (1.0 - fraction) / fraction;
    double adj = 0.0;
    for (ptrdiff_t i = 0; i < n; i++) if (score[i] > 0) adj += 1.0 / pow(score[i], q);
    for (ptrdiff_t i = 0; i < n; i++) {
        dis[i] = score[i] > 0 ? 1.0 / (1.0 + t / (pow(score[i], q) * adj)) : 0.0;
    }
}
