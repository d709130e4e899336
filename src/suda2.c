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

/* The distinct records (items): rep[g] is the first record of item g and cnt[g] its
 * records. */
typedef struct {
    ptrdiff_t n, cap;
    int *rep, *cnt;
} suda2_items;

static int add_item(suda2_items *it, int record, const kernel_host *h)
{
    if (it->n == it->cap) {
        const ptrdiff_t cap = it->cap ? 2 * it->cap : 1024;
        int *rep = (int *) h->alloc((size_t) cap, sizeof(int));
        int *cnt = (int *) h->alloc((size_t) cap, sizeof(int));
        if (it->n) {
            memcpy(rep, it->rep, (size_t) it->n * sizeof(int));
            memcpy(cnt, it->cnt, (size_t) it->n * sizeof(int));
        }
        it->rep = rep;
        it->cnt = cnt;
        it->cap = cap;
    }
    it->rep[it->n] = record;
    it->cnt[it->n] = 0;
    return (int) it->n++;
}

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

typedef struct {
    uint64_t key;
    int item; /* -1: empty */
} suda2_slot;

/* Groups the records equal on all the keys (a missing value as one more code), items in the
 * order of their first records. When the codes of a record fit one 64-bit word, the words go
 * through a hash table (its size follows the items, not the records); else the records are
 * counting-sorted by one key at a time. */
static void group_records(const int *const *cols, ptrdiff_t n, int m, const int *n_levels,
                          suda2_items *it, const kernel_host *h)
{
    int total = 0, shift[SUDA2_MAX_KEYS];
    for (int j = 0; j < m; j++) {
        shift[j] = total;
        total += bits_for(n_levels[j]);
    }
    it->n = it->cap = 0;
    if (total <= 64) {
        ptrdiff_t cap = 1024;
        suda2_slot *tab = (suda2_slot *) h->alloc((size_t) cap, sizeof(suda2_slot));
        for (ptrdiff_t t = 0; t < cap; t++) tab[t].item = -1;
        for (ptrdiff_t i = 0; i < n; i++) {
            uint64_t key = 0;
            for (int j = 0; j < m; j++) key |= (uint64_t) code_of(cols[j][i], n_levels[j]) << shift[j];
            ptrdiff_t t = (ptrdiff_t) (mix64(key) & (uint64_t) (cap - 1));
            while (tab[t].item >= 0 && tab[t].key != key) t = (t + 1) & (cap - 1);
            if (tab[t].item < 0) {
                tab[t].key = key;
                tab[t].item = add_item(it, (int) i, h);
            }
            it->cnt[tab[t].item]++;
            if (2 * it->n > cap) { /* keep the table at most half full */
                const ptrdiff_t cap2 = 2 * cap;
                suda2_slot *tab2 = (suda2_slot *) h->alloc((size_t) cap2, sizeof(suda2_slot));
                for (ptrdiff_t u = 0; u < cap2; u++) tab2[u].item = -1;
                for (ptrdiff_t u = 0; u < cap; u++) {
                    if (tab[u].item < 0) continue;
                    ptrdiff_t v = (ptrdiff_t) (mix64(tab[u].key) & (uint64_t) (cap2 - 1));
                    while (tab2[v].item >= 0) v = (v + 1) & (cap2 - 1);
                    tab2[v] = tab[u];
                }
                tab = tab2;
                cap = cap2;
            }
            if ((i & 0xfffff) == 0xfffff) host_pause(h, 0);
        }
        return;
    }
    int max_level = 1;
    for (int j = 0; j < m; j++) if (n_levels[j] + 1 > max_level) max_level = n_levels[j] + 1;
    ptrdiff_t *count = (ptrdiff_t *) h->alloc((size_t) max_level, sizeof(ptrdiff_t));
    int *ord = (int *) h->alloc((size_t) n, sizeof(int));
    int *tmp = (int *) h->alloc((size_t) n, sizeof(int));
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
    /* the sort is stable: the first record of each run is its smallest */
    for (ptrdiff_t i = 0; i < n; i++) {
        int eq = i > 0;
        for (int j = 0; j < m && eq; j++) {
            eq = code_of(cols[j][ord[i]], n_levels[j]) == code_of(cols[j][ord[i - 1]], n_levels[j]);
        }
        if (!eq) add_item(it, ord[i], h);
        it->cnt[it->n - 1]++;
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
    suda2_items it;
    group_records(cols, n, m, n_levels, &it, h);
    const ptrdiff_t n_item = it.n;
    const int *rep = it.rep;
    unsigned char *cand = (unsigned char *) h->alloc((size_t) n_item, 1);
    for (ptrdiff_t g = 0; g < n_item; g++) {
        cand[g] = it.cnt[g] == 1;
        if (it.cnt[g] == 1) res->n_unique++;
        if (it.cnt[g] == 2) res->n_pairs += 2;
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
