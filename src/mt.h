/* R's Mersenne-Twister stream, bit for bit, on a copy of its state (pure C: the glue reads
 * the state from .Random.seed and writes it back). As R draws (src/main/RNG.c, R >= 3.6):
 * unif_rand() is MT_genrand(), a tempered 32-bit word y as y * 2^-32 (moved off 0 by
 * fixup()), and R_unif_index(dn) under sample.kind "Rejection" draws rbits(bits) with
 * bits = ceil(log2(dn)) until the value is below dn, rbits() taking floor(unif_rand() *
 * 65536) per 16 bits, which is y >> 16 (y * 2^-32 * 2^16 is exact; fixup() moves only
 * y = 0, to a value whose 16 bits are 0 too). Used where many uniform indices are drawn at
 * once (random_block_pairs()): the same numbers as R_unif_index() without R's call and
 * log2() per number. */
#ifndef DETANON_MT_H
#define DETANON_MT_H

#include <math.h>
#include <stdint.h>

#define DETANON_MT_N 624
#define DETANON_MT_M 397

typedef struct {
    uint32_t mt[DETANON_MT_N];
    int mti;       /* R's dummy[0]: the next word; 1..624 (624: the words are used up) */
    double last_dn; /* the last dn of mt_unif_index() and its bits */
    int last_bits;
} detanon_mt;

static inline uint32_t mt_next(detanon_mt *s)
{
    static const uint32_t mag01[2] = {0x0u, 0x9908b0dfu};
    uint32_t y;
    if (s->mti >= DETANON_MT_N) {
        int kk;
        for (kk = 0; kk < DETANON_MT_N - DETANON_MT_M; kk++) {
            y = (s->mt[kk] & 0x80000000u) | (s->mt[kk + 1] & 0x7fffffffu);
            s->mt[kk] = s->mt[kk + DETANON_MT_M] ^ (y >> 1) ^ mag01[y & 0x1u];
        }
        for (; kk < DETANON_MT_N - 1; kk++) {
            y = (s->mt[kk] & 0x80000000u) | (s->mt[kk + 1] & 0x7fffffffu);
            s->mt[kk] = s->mt[kk + (DETANON_MT_M - DETANON_MT_N)] ^ (y >> 1) ^ mag01[y & 0x1u];
        }
        y = (s->mt[DETANON_MT_N - 1] & 0x80000000u) | (s->mt[0] & 0x7fffffffu);
        s->mt[DETANON_MT_N - 1] = s->mt[DETANON_MT_M - 1] ^ (y >> 1) ^ mag01[y & 0x1u];
        s->mti = 0;
    }
    y = s->mt[s->mti++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= (y >> 18);
    return y;
}

/* R_unif_index(dn) under sample.kind "Rejection": a whole number in 0..dn-1. */
static inline double mt_unif_index(detanon_mt *s, double dn)
{
    if (dn <= 0) return 0.0;
    if (dn != s->last_dn) {
        s->last_dn = dn;
        s->last_bits = (int) ceil(log2(dn));
    }
    const int bits = s->last_bits;
    const int64_t mask = (((int64_t) 1) << bits) - 1;
    double dv;
    do {
        int64_t v = 0;
        for (int n = 0; n <= bits; n += 16) v = 65536 * v + (int64_t) (mt_next(s) >> 16);
        dv = (double) (v & mask);
    } while (dn <= dv);
    return dv;
}

#endif
