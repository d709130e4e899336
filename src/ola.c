/* Kernel of optimal lattice anonymisation: counts the equivalence classes of one lattice
 * node on integer codes, by dense counting or hashing, and sums the information loss.
 * No R API (see ola.h). */
#include <stdint.h>
#include <string.h>
#include "ola.h"

void ola_count_dense(const int *codes, ptrdiff_t n, int d, const int *const *gen,
                     const ptrdiff_t *stride, ptrdiff_t n_cells, int *slot, int *counts)
{
    memset(counts, 0, (size_t) n_cells * sizeof(int));
    for (ptrdiff_t i = 0; i < n; i++) slot[i] = 0;
    for (int j = 0; j < d; j++) {
        const int *cj = codes + (size_t) j * n, *gj = gen[j];
        const ptrdiff_t s = stride[j];
        if (s == 0) continue; /* fully generalised column: one value */
        for (ptrdiff_t i = 0; i < n; i++) slot[i] += (int) (gj[cj[i]] * s);
    }
    for (ptrdiff_t i = 0; i < n; i++) counts[slot[i]]++;
}

static inline uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    return h * 0xBF58476D1CE4E5B9ULL;
}

static inline int same_tuple(const int *codes, ptrdiff_t n, int d, const int *const *gen,
                             ptrdiff_t a, ptrdiff_t b)
{
    for (int j = 0; j < d; j++) {
        const int *cj = codes + (size_t) j * n;
        if (gen[j][cj[a]] != gen[j][cj[b]]) return 0;
    }
    return 1;
}

void ola_count_hash(const int *codes, ptrdiff_t n, int d, const int *const *gen,
                    ptrdiff_t table_size, int *slot, int *counts, ptrdiff_t *reps)
{
    const uint64_t mask = (uint64_t) table_size - 1;
    memset(counts, 0, (size_t) table_size * sizeof(int));
    for (ptrdiff_t s = 0; s < table_size; s++) reps[s] = -1;
    for (ptrdiff_t i = 0; i < n; i++) {
        uint64_t h = 0x243F6A8885A308D3ULL;
        for (int j = 0; j < d; j++) h = mix(h, (uint64_t) (uint32_t) gen[j][codes[(size_t) j * n + i]]);
        h ^= h >> 31;
        uint64_t s = h & mask;
        for (;;) {
            const ptrdiff_t r = reps[s];
            if (r < 0) { reps[s] = i; break; }
            if (same_tuple(codes, n, d, gen, r, i)) break;
            s = (s + 1) & mask;
        }
        slot[i] = (int) s;
        counts[s]++;
    }
}

void ola_summarise(const int *codes, ptrdiff_t n, int d, const double *const *cost,
                   const double *const *sup, const int *slot, const int *counts,
                   ptrdiff_t n_slots, ptrdiff_t k, ola_result *out)
{
    ptrdiff_t n_sup = 0, n_cls = 0;
    double dm = 0.0, dm_all = 0.0, total = 0.0;
    for (ptrdiff_t s = 0; s < n_slots; s++) {
        const double c = (double) counts[s];
        if (counts[s] == 0) continue;
        dm_all += c * c;
        if (counts[s] >= k) { dm += c * c; n_cls++; }
        else n_sup += counts[s];
    }
    dm += (double) n * (double) n_sup;
    for (ptrdiff_t i = 0; i < n; i++) {
        const double *const *t = counts[slot[i]] >= k ? cost : sup;
        double r = 0.0;
        for (int j = 0; j < d; j++) r += t[j][codes[(size_t) j * n + i]];
        total += r;
    }
    out->n_suppressed = n_sup;
    out->n_classes = n_cls;
    out->cost = total;
    out->dm = dm;
    out->dm_all = dm_all;
}
