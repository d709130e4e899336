/* Kernel of optimal lattice anonymisation: counts the equivalence classes of one lattice
 * node on integer codes and sums the information loss. No R API (see ola.h). */
#include <string.h>
#include "ola.h"

#define KEY_LIMIT ((double) ((uint64_t) 1 << 62))

static inline uint64_t hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ULL;
    x ^= x >> 33;
    return x;
}

/* The cell of `key` (inserted empty if new); direct indexing when `direct`. */
static inline ptrdiff_t find_cell(ola_cell *table, uint64_t mask, int direct, uint64_t key)
{
    if (direct) return (ptrdiff_t) key;
    uint64_t s = hash64(key) & mask;
    for (;;) {
        ola_cell *c = table + s;
        if (c->count == 0 || c->key == key) return (ptrdiff_t) s;
        s = (s + 1) & mask;
    }
}

static void clear(ola_cell *table, ptrdiff_t size)
{
    memset(table, 0, (size_t) size * sizeof(ola_cell));
}

/* Replace key[0..n) by dense ids 0..m-1 (in order of first appearance); returns m. */
static uint64_t compress(uint64_t *key, ptrdiff_t n, ola_cell *table, ptrdiff_t size)
{
    const uint64_t mask = (uint64_t) size - 1;
    uint64_t m = 0;
    clear(table, size);
    for (ptrdiff_t i = 0; i < n; i++) {
        ptrdiff_t s = find_cell(table, mask, 0, key[i]);
        ola_cell *c = table + s;
        if (c->count == 0) { c->key = key[i]; c->count = 1; c->delta = (double) m++; }
        key[i] = (uint64_t) c->delta;
    }
    return m;
}

void ola_node(const int *codes, ptrdiff_t n, int d, const int *const *gen, const int *card,
              const double *const *cost, const double *const *sup, ptrdiff_t k,
              uint64_t *key, double *dlt, ola_cell *table, ptrdiff_t table_size,
              ptrdiff_t *used, int *slot, ola_result *out)
{
    double total = 0.0, radix = 1.0;
    for (ptrdiff_t i = 0; i < n; i++) { key[i] = 0; dlt[i] = 0.0; }
    for (int j = 0; j < d; j++) {
        const int *cj = codes + (size_t) j * n, *gj = gen[j];
        const double *kc = cost[j], *sc = sup[j];
        double col = 0.0;
        for (ptrdiff_t i = 0; i < n; i++) {
            const int c = cj[i];
            col += kc[c];
            dlt[i] += sc[c] - kc[c];
        }
        total += col;
        if (card[j] <= 1) continue;
        if (radix * (double) card[j] >= KEY_LIMIT) radix = (double) compress(key, n, table, table_size);
        const uint64_t r = (uint64_t) card[j];
        for (ptrdiff_t i = 0; i < n; i++) key[i] = key[i] * r + (uint64_t) gj[cj[i]];
        radix *= (double) card[j];
    }
    const int direct = radix <= (double) (table_size / 2);
    const uint64_t mask = (uint64_t) table_size - 1;
    ptrdiff_t n_used = 0;
    clear(table, direct ? (ptrdiff_t) radix : table_size);
    for (ptrdiff_t i = 0; i < n; i++) {
        const ptrdiff_t s = find_cell(table, mask, direct, key[i]);
        ola_cell *c = table + s;
        if (c->count == 0) { c->key = key[i]; used[n_used++] = s; }
        c->count++;
        c->delta += dlt[i];
        if (slot) slot[i] = (int) s;
    }
    ptrdiff_t n_sup = 0, n_cls = 0;
    double dm = 0.0, dm_all = 0.0;
    for (ptrdiff_t u = 0; u < n_used; u++) {
        const ola_cell *c = table + used[u];
        const double m = (double) c->count;
        dm_all += m * m;
        if (c->count >= k) { dm += m * m; n_cls++; }
        else { n_sup += c->count; total += c->delta; }
    }
    out->n_suppressed = n_sup;
    out->n_classes = n_cls;
    out->cost = total;
    out->dm = dm + (double) n * (double) n_sup;
    out->dm_all = dm_all;
    out->n_all = n_used;
}
