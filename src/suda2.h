/* Pure kernel for SUDA2 (R/risk_suda2.R): the minimal sample uniques (MSUs) of every
 * record, searched as in Manning, Haglin and Keane (2008), and the SUDA and DIS-SUDA
 * scores of Elliot et al. computed from them as sdcMicro's suda2() does. No R API. */
#ifndef DETANON_SUDA2_H
#define DETANON_SUDA2_H

#include <stddef.h>
#include <stdint.h>
#include "host.h"

/* The largest number of key variables (an MSU is kept as a 64-bit set of variables). */
#define SUDA2_MAX_KEYS 64

typedef struct {
    ptrdiff_t n_unique; /* records unique on all the keys (missing values compared as a code) */
    ptrdiff_t n_pairs;  /* records in groups of exactly two equal records on all the keys */
    ptrdiff_t n_msu;    /* MSUs found, over all records */
    ptrdiff_t msu_by_size[SUDA2_MAX_KEYS]; /* MSUs of 1, 2, ..., m keys */
} suda2_result;

/* cols[j]: the n category codes of key j, 1 .. n_levels[j]; any other code (R's NA) is a
 * missing value (which matches no value, not even another missing one, and is never part
 * of an MSU). m <= SUDA2_MAX_KEYS.
 * A set S of keys is a sample unique of record r when r has no missing value in S and no
 * other record has r's values on S; it is minimal (an MSU) when no proper subset of S is.
 * An MSU of s keys weighs (m - s)!; score[r] is the sum of the weights of r's MSUs and
 * contrib[r + j n] the sum of the weights of those that hold key j (both n and n x m,
 * written in full). Scratch memory from h->alloc; h->pause between chunks. */
void suda2_msu(const int *const *cols, ptrdiff_t n, int m, const int *n_levels, double *score,
               double *contrib, suda2_result *res, const kernel_host *h);

/* DIS-SUDA scores as sdcMicro computes them: with Q = 1 + (8 - m) / 20 (evaluated in single
 * precision, as sdcMicro does), A = sum over records with score > 0 of score^-Q and
 * T = n_pairs (1 - fraction) / fraction, dis[r] = 1 / (1 + T / (score[r]^Q A)) when
 * score[r] > 0, else 0. */
void suda2_dis(const double *score, ptrdiff_t n, int m, ptrdiff_t n_pairs, double fraction,
               double *dis);

#endif
