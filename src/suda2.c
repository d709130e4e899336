/* SUDA2 kernel (see suda2.h). The search runs on the distinct records (items) and follows
 * SUDA2's recursion over the lattice of key sets: the items sharing their values on a set S
 * of keys (taken in increasing key order) form a group, which is split by each later key.
 * A candidate (an item that is one record) alone in its part is unique on S plus that key,
 * and leaves that branch: every larger set is unique for it as well, and it cannot make
 * another record's set less unique. A part of two or more items is split further, unless
 * none of them is a candidate (nothing below can give them an MSU). Every unique set found
 * this way is recorded with its item; an item's MSUs are the minimal ones among its
 * recorded sets, since every set it is unique on contains one of them. */
#include <math.h>
#include <string.h>
#include "suda2.h"

typedef struct {
    uint64_t mask;
    int item;
} suda2_event;

typedef struct {
    const int *codes;           /* n x m codes of the items */
    ptrdiff_t n;                /* items */
    int m;
    const unsigned char *cand;  /* 1: the item is one record (only those have MSUs) */
    int **buf;                  /* buf[d]: items of the groups at depth d (n each, lazily) */
    ptrdiff_t *count;           /* per code of the key being split (all zero between splits) */
    int *touched;               /* codes met in the current split */
    suda2_event *ev;
    ptrdiff_t n_ev, cap_ev;
    ptrdiff_t work, next_pause;
    const kernel_host *h;
} suda2_ctx;

static void add_event(suda2_ctx *c, uint64_t mask, int item)
{
    if (c->n_ev == c->cap_ev) {
        ptrdiff_t cap = c->cap_ev ? 2 * c->cap_ev : 1024;
        suda2_event *ev = (suda2_event *) c->h->alloc((size_t) cap, sizeof(suda2_event));
        if (c->n_ev) memcpy(ev, c->ev, (size_t) c->n_ev * sizeof(suda2_event));
        c->ev = ev;
        c->cap_ev = cap;
    }
    c->ev[c->n_ev].mask = mask;
    c->ev[c->n_ev].item = item;
    c->n_ev++;
}

/* Splits the group src[0 .. len) by key v into dst (items with a missing value in v are
 * left out: they share no value of v); the parts are runs of equal codes. Returns the
 * items placed. */
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
            if (b - a == 1 && c->cand[dst[a]]) {
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

/* The code of a value, 1 .. L, or 0 for a missing value (any code outside 1 .. L). */
static inline int code_of(int v, int L)
{
    return v >= 1 && v <= L ? v : 0;
}

/* Bits that hold the values 0 .. L. */
static int bits_for(int L)
{
    int b = 0;
    while (b < 31 && (1 << b) <= L) b++;
    return b;
}

/* ord: the records 0 .. n-1 sorted so that records equal on all the keys (a missing value as
 * one more code) are adjacent, equal ones in increasing record order; same[i] = 1 when
 * ord[i] equals ord[i - 1] on all the keys. Packs each record into one 64-bit word and sorts
 * the words by LSD radix when the codes fit, else counting-sorts by one key at a time. */
static void group_records(const int *const *cols, ptrdiff_t n, int m, const int *n_levels, int *ord,
                          unsigned char *same, const kernel_host *h)
{
    int total = 0, shift[SUDA2_MAX_KEYS];
    for (int j = 0; j < m; j++) {
        shift[j] = total;
        total += bits_for(n_levels[j]);
    }
    if (total <= 64) {
        enum { DIGIT = 11 };
        uint64_t *key = (uint64_t *) h->alloc((size_t) n, sizeof(uint64_t));
        uint64_t *key2 = (uint64_t *) h->alloc((size_t) n, sizeof(uint64_t));
        int *tmp = (int *) h->alloc((size_t) n, sizeof(int));
        for (ptrdiff_t i = 0; i < n; i++) { key[i] = 0; ord[i] = (int) i; }
        for (int j = 0; j < m; j++) {
            const int *x = cols[j];
            const int L = n_levels[j];
            for (ptrdiff_t i = 0; i < n; i++) key[i] |= (uint64_t) code_of(x[i], L) << shift[j];
        }
        host_pause(h, 0);
        ptrdiff_t count[1 << DIGIT];
        for (int lo = 0; lo < total; lo += DIGIT) {
            const uint64_t mask = ((uint64_t) 1 << DIGIT) - 1;
            memset(count, 0, sizeof(count));
            for (ptrdiff_t i = 0; i < n; i++) count[key[i] >> lo & mask]++;
            ptrdiff_t pos = 0;
            for (int t = 0; t < (1 << DIGIT); t++) { const ptrdiff_t k = count[t]; count[t] = pos; pos += k; }
            for (ptrdiff_t i = 0; i < n; i++) {
                const ptrdiff_t at = count[key[i] >> lo & mask]++;
                key2[at] = key[i];
                tmp[at] = ord[i];
            }
            uint64_t *sk = key; key = key2; key2 = sk;
            int *so = ord; ord = tmp; tmp = so;
            host_pause(h, 0);
        }
        /* after an odd number of passes the result is in the scratch array */
        if ((total + DIGIT - 1) / DIGIT % 2) memcpy(tmp, ord, (size_t) n * sizeof(int));
        for (ptrdiff_t i = 0; i < n; i++) same[i] = i > 0 && key[i] == key[i - 1];
        return;
    }
    int max_level = 1;
    for (int j = 0; j < m; j++) if (n_levels[j] + 1 > max_level) max_level = n_levels[j] + 1;
    ptrdiff_t *count = (ptrdiff_t *) h->alloc((size_t) max_level, sizeof(ptrdiff_t));
    int *tmp = (int *) h->alloc((size_t) n, sizeof(int));
    int *out = ord;
    for (ptrdiff_t i = 0; i < n; i++) ord[i] = (int) i;
    for (int j = m - 1; j >= 0; j--) {
        const int *x = cols[j];
        const int L = n_levels[j];
        memset(count, 0, ((size_t) L + 1) * sizeof(ptrdiff_t));
        for (ptrdiff_t i = 0; i < n; i++) count[code_of(x[i], L)]++;
        ptrdiff_t pos = 0;
        for (int t = 0; t <= L; t++) { const ptrdiff_t k = count[t]; count[t] = pos; pos += k; }
        for (ptrdiff_t i = 0; i < n; i++) tmp[count[code_of(x[ord[i]], L)]++] = ord[i];
        int *sw = ord; ord = tmp; tmp = sw;
        host_pause(h, 0);
    }
    if (ord != out) memcpy(out, ord, (size_t) n * sizeof(int));
    for (ptrdiff_t i = 0; i < n; i++) {
        int eq = i > 0;
        for (int j = 0; j < m && eq; j++) {
            const int *x = cols[j];
            eq = code_of(x[out[i]], n_levels[j]) == code_of(x[out[i - 1]], n_levels[j]);
        }
        same[i] = (unsigned char) eq;
    }
}

void suda2_msu(const int *const *cols, ptrdiff_t n, int m, const int *n_levels, double *score,
               double *contrib, suda2_result *res, const kernel_host *h)
{
    memset(res, 0, sizeof(*res));
    for (ptrdiff_t i = 0; i < n; i++) score[i] = 0.0;
    for (ptrdiff_t i = 0; i < n * (ptrdiff_t) m; i++) contrib[i] = 0.0;
    if (n <= 0 || m <= 0) return;

    /* The search runs on the distinct records (equal on all the keys, a missing value as one
     * more code). Records in a group of two or more equal records have no MSU: on any set of
     * keys without their missing values, the others match them. So only a distinct record
     * of its own (a candidate) can have one, and the others only count. */
    int *ord = (int *) h->alloc((size_t) n, sizeof(int));
    unsigned char *same = (unsigned char *) h->alloc((size_t) n, 1);
    group_records(cols, n, m, n_levels, ord, same, h);
    ptrdiff_t n_item = 0;
    for (ptrdiff_t i = 0; i < n; i++) n_item += !same[i];
    int *rep = (int *) h->alloc((size_t) n_item, sizeof(int));   /* a record of each item */
    unsigned char *cand = (unsigned char *) h->alloc((size_t) n_item, 1);
    for (ptrdiff_t i = 0, g = -1; i < n; i++) {
        if (!same[i]) { rep[++g] = ord[i]; cand[g] = 1; }
        else cand[g] = 0;
    }
    for (ptrdiff_t i = 0; i < n;) {
        ptrdiff_t k = 1;
        while (i + k < n && same[i + k]) k++;
        if (k == 1) res->n_unique++;
        if (k == 2) res->n_pairs += 2;
        i += k;
    }
    int *item_codes = (int *) h->alloc((size_t) n_item * (size_t) m, sizeof(int));
    int max_level = 1;
    for (int j = 0; j < m; j++) {
        const int *x = cols[j];
        int *y = item_codes + (size_t) j * (size_t) n_item;
        for (ptrdiff_t g = 0; g < n_item; g++) y[g] = code_of(x[rep[g]], n_levels[j]) - 1;
        if (n_levels[j] + 1 > max_level) max_level = n_levels[j] + 1;
    }
    ptrdiff_t *count = (ptrdiff_t *) h->alloc((size_t) max_level, sizeof(ptrdiff_t));
    memset(count, 0, (size_t) max_level * sizeof(ptrdiff_t));
    int *items = (int *) h->alloc((size_t) n_item, sizeof(int));
    for (ptrdiff_t g = 0; g < n_item; g++) items[g] = (int) g;

    /* The search, from the group of all items (the empty set of keys). */
    suda2_ctx c;
    c.codes = item_codes;
    c.n = n_item;
    c.m = m;
    c.cand = cand;
    c.buf = (int **) h->alloc((size_t) m + 1, sizeof(int *));
    for (int d = 0; d <= m; d++) c.buf[d] = NULL;
    c.buf[0] = items;
    c.count = count;
    c.touched = (int *) h->alloc((size_t) max_level, sizeof(int));
    c.ev = NULL;
    c.n_ev = c.cap_ev = 0;
    c.work = 0;
    c.next_pause = (ptrdiff_t) 1 << 20;
    c.h = h;
    search(&c, 0, c.buf[0], n_item, 0, 0);

    /* Each candidate's unique sets, smallest first; the MSUs are those that hold no other. */
    double fact[SUDA2_MAX_KEYS];
    fact[0] = 1.0;
    for (int s = 1; s < m; s++) fact[s] = fact[s - 1] * (double) s;
    ptrdiff_t *start = (ptrdiff_t *) h->alloc((size_t) n_item + 1, sizeof(ptrdiff_t));
    for (ptrdiff_t g = 0; g <= n_item; g++) start[g] = 0;
    for (ptrdiff_t e = 0; e < c.n_ev; e++) start[c.ev[e].item + 1]++;
    for (ptrdiff_t g = 0; g < n_item; g++) start[g + 1] += start[g];
    ptrdiff_t *fill = (ptrdiff_t *) h->alloc((size_t) n_item + 1, sizeof(ptrdiff_t));
    memcpy(fill, start, ((size_t) n_item + 1) * sizeof(ptrdiff_t));
    const ptrdiff_t n_ev = c.n_ev;
    uint64_t *sets = (uint64_t *) h->alloc((size_t) (n_ev > 0 ? n_ev : 1), sizeof(uint64_t));
    for (ptrdiff_t e = 0; e < n_ev; e++) sets[fill[c.ev[e].item]++] = c.ev[e].mask;
    int *size = (int *) h->alloc((size_t) (n_ev > 0 ? n_ev : 1), sizeof(int));
    for (ptrdiff_t e = 0; e < n_ev; e++) size[e] = popcount64(sets[e]);
    ptrdiff_t done = 0;
    for (ptrdiff_t g = 0; g < n_item; g++) {
        const ptrdiff_t a = start[g], b = start[g + 1];
        if (a == b) continue;
        const ptrdiff_t r = rep[g];
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
