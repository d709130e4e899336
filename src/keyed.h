/* Keyed (Kerckhoffs) masking of anonymise_keyed(): the keyed hash and the keyed k-means of
 * one stratum. Pure C: no R API; memory and interrupts through a kernel_host. */
#ifndef DETANON_KEYED_H
#define DETANON_KEYED_H

#include <stddef.h>
#include <stdint.h>
#include "host.h"

/* SipHash-2-4 (Aumasson and Bernstein 2012) of `len` bytes under the 128-bit key k0, k1
 * (the little-endian halves of the 16 key bytes). */
uint64_t keyed_siphash(const unsigned char *in, size_t len, uint64_t k0, uint64_t k1);

/* The 128-bit working key from the custodian's secret (any length): two SipHash values of
 * it under fixed public keys. */
void keyed_derive(const unsigned char *secret, size_t len, uint64_t *k0, uint64_t *k1);

/* For every row i of z (n x d, column-major): the keyed hash of (salt, the d coordinates'
 * IEEE bit patterns, -0 as +0), all as little-endian 8-byte words, mapped to (0, 1). Equal
 * rows get equal values; the value does not depend on the row's position. */
void keyed_uniforms(const double *z, ptrdiff_t n, int d, uint64_t salt, uint64_t k0, uint64_t k1,
                    double *u);

/* The step-th keyed uniform (0, 1) of a point from its hash value h; of a row of d values. */
double keyed_step_uniform(uint64_t h, int step);
double keyed_row_step(const double *row, int d, uint64_t salt, uint64_t k0, uint64_t k1, int step);

/* For every group g of the rows of x (n x d, column-major; group g = rows off[g] ..
 * off[g + 1] - 1, in a canonical order): the keyed hash h of (salt, the group's size, the
 * IEEE bit patterns of its rows' values, row after row, -0 as +0), all as little-endian
 * 8-byte words, and u[g + ngroups * j] = keyed_step_uniform(h, j) for j < nout. A group
 * with the same rows gets the same uniforms; one row more or fewer, independent ones.
 * `buf` holds at least 16 + 8 * d * (largest group) bytes. */
void keyed_group_uniforms(const double *x, ptrdiff_t n, int d, const int *off, int ngroups, int nout,
                          uint64_t salt, uint64_t k0, uint64_t k1, unsigned char *buf, double *u);

/* k-means of the n points z (n x d, column-major) into at most c groups of at least kmin
 * points, best of `restarts` keyed k-means++ starts (Lloyd iterations, at most maxit):
 * seeds are drawn by the exponential race argmin E_i / D2_i with E_i = -log(u_i) from the
 * keyed uniforms of the points (salt = the restart), so the result depends on the points'
 * values and the key, not on their order; ties go to the lowest index (equal points are
 * interchangeable). Groups smaller than kmin are merged, smallest first, into the group
 * with the nearest centre. Writes the group (0-based, numbered by first appearance) of
 * every point to `group`; returns the within-group sum of squares, or -1 when the points
 * have fewer than c distinct values. The restarts run on up to `nthreads` threads (the
 * thread policy of threads.h); the result is the same bit for bit for every thread count.
 * Exact shortcuts (keyed.c) make it fast; tests/testthat/helper-keyed.R has the plain
 * algorithm in R. */
double keyed_kmeans(const double *z, ptrdiff_t n, int d, int c, int kmin, int restarts, int maxit,
                    uint64_t k0, uint64_t k1, int nthreads, int *group, const kernel_host *host);

/* The keyed k-means of anonymise_keyed()'s blocks: nb blocks of points, block b the rows
 * off[b] .. off[b + 1] - 1 of z (n x d, column-major), each in a canonical order.
 * keyed_kmeans_grid(): for every count c of block b's grid (grid[goff[b]] ..
 * grid[goff[b + 1] - 1], increasing) writes to sse[] what keyed_kmeans() returns for the
 * block and c, and to seeds[] the k-means++ seeds of each restart for the largest count
 * (restarts x that count per block, blocks in order; -1 past the distinct points), from
 * which the seeds of every smaller count are the first ones. keyed_kmeans_partition():
 * the groups keyed_kmeans() gives block b with count[b] groups (at most gmax[b], the
 * block's largest count in the grid; seeds as written by keyed_kmeans_grid()), 0-based
 * within the block, to group[off[b]] .. group[off[b + 1] - 1]. Blocks run on up to
 * `nthreads` threads (one block per thread, the same bits for every thread count). */
void keyed_kmeans_grid(const double *z, ptrdiff_t n, int d, int nb, const int *off, const int *grid,
                       const int *goff, int kmin, int restarts, int maxit, uint64_t k0, uint64_t k1,
                       int nthreads, int *seeds, double *sse, const kernel_host *host);
void keyed_kmeans_partition(const double *z, ptrdiff_t n, int d, int nb, const int *off, const int *count,
                            const int *gmax, const int *seeds, int kmin, int restarts, int maxit, int nthreads,
                            int *group, const kernel_host *host);

#endif
