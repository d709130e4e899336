/* Glue for anonymise_keyed(): the keyed k-means of one stratum (kernel: keyed.c). The
 * secret arrives as a raw vector and is never stored or returned. (The test-only entry
 * points of the keyed hash and uniforms are in testing_glue.c.) */
#include "detanon.h"
#include "keyed.h"

void keyed_secret_key(SEXP secret, uint64_t *k0, uint64_t *k1)
{
    if (TYPEOF(secret) != RAWSXP || XLENGTH(secret) < 1) Rf_error("internal error: bad key in ffi_keyed_*");
    keyed_derive(RAW_RO(secret), (size_t) XLENGTH(secret), k0, k1);
}

/* z: the n x d points of one stratum (canonical order), c groups, kmin, restarts, maxit,
 * secret (raw), nthreads. Returns list(group = 1-based groups, sse), sse -1 (and groups NA)
 * when the points have fewer than c distinct values. */
SEXP ffi_keyed_kmeans(SEXP z, SEXP c_, SEXP kmin_, SEXP restarts_, SEXP maxit_, SEXP secret, SEXP nthreads)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), c = Rf_asInteger(c_), kmin = Rf_asInteger(kmin_);
    const int restarts = Rf_asInteger(restarts_), maxit = Rf_asInteger(maxit_);
    if (TYPEOF(z) != REALSXP || n < 1 || d < 1 || d > 64 || c < 1 || c > n || kmin < 1 ||
        restarts < 1 || maxit < 1)
        Rf_error("internal error: bad input to ffi_keyed_kmeans");
    uint64_t k0, k1;
    keyed_secret_key(secret, &k0, &k1);
    const char *names[] = { "group", "sse" };
    SEXP out = PROTECT(detanon_named_list(2, names));
    SEXP group = SET_VECTOR_ELT(out, 0, Rf_allocVector(INTSXP, n));
    const kernel_host host = detanon_host(R_NilValue);
    const double sse = keyed_kmeans(REAL_RO(z), n, d, c, kmin, restarts, maxit, k0, k1, detanon_threads(nthreads),
                                    INTEGER(group), &host);
    /* 1-based groups; none (NA) when the points have fewer than c distinct values */
    for (ptrdiff_t i = 0; i < n; i++) INTEGER(group)[i] = sse >= 0 ? INTEGER(group)[i] + 1 : NA_INTEGER;
    SET_VECTOR_ELT(out, 1, Rf_ScalarReal(sse));
    UNPROTECT(1);
    return out;
}

/* The block offsets off (nb + 1 of them, 0 .. n, increasing) of the n rows of z. */
static int keyed_blocks_in(SEXP z, SEXP off, int *nb)
{
    const ptrdiff_t n = Rf_nrows(z);
    if (TYPEOF(z) != REALSXP || TYPEOF(off) != INTSXP || XLENGTH(off) < 2 || n < 1 || Rf_ncols(z) < 1 ||
        Rf_ncols(z) > 64)
        return 0;
    const int *o = INTEGER_RO(off);
    *nb = (int) (XLENGTH(off) - 1);
    if (o[0] != 0 || o[*nb] != n) return 0;
    for (int b = 0; b < *nb; b++) if (o[b + 1] <= o[b]) return 0;
    return 1;
}

/* z: the points of nb blocks (n x d, the rows of each block together, in a canonical
 * order), off: the nb + 1 block offsets, grid: the counts of every block (increasing, at
 * most the block's size), goff: their nb + 1 offsets in grid; kmin, restarts, maxit,
 * secret (raw), nthreads. Returns list(sse = the SSE of every count (keyed_kmeans()'s, -1
 * for too few distinct points), seeds = the seeds of the blocks' restarts for their
 * largest count, 0-based, for ffi_keyed_partition()). */
SEXP ffi_keyed_grid(SEXP z, SEXP off, SEXP grid, SEXP goff, SEXP kmin_, SEXP restarts_, SEXP maxit_, SEXP secret,
                    SEXP nthreads)
{
    int nb = 0;
    const int kmin = Rf_asInteger(kmin_), restarts = Rf_asInteger(restarts_), maxit = Rf_asInteger(maxit_);
    if (!keyed_blocks_in(z, off, &nb) || TYPEOF(grid) != INTSXP || TYPEOF(goff) != INTSXP ||
        XLENGTH(goff) != nb + 1 || kmin < 1 || restarts < 1 || maxit < 1)
        Rf_error("internal error: bad input to ffi_keyed_grid");
    const int *o = INTEGER_RO(off), *g = INTEGER_RO(grid), *go = INTEGER_RO(goff);
    if (go[0] != 0 || go[nb] != XLENGTH(grid)) Rf_error("internal error: bad grid in ffi_keyed_grid");
    double nseeds = 0;
    for (int b = 0; b < nb; b++) {
        if (go[b + 1] <= go[b] || g[go[b]] < 1 || g[go[b + 1] - 1] > o[b + 1] - o[b])
            Rf_error("internal error: bad grid in ffi_keyed_grid");
        for (int q = go[b] + 1; q < go[b + 1]; q++)
            if (g[q] <= g[q - 1]) Rf_error("internal error: bad grid in ffi_keyed_grid");
        nseeds += (double) restarts * g[go[b + 1] - 1];
    }
    if (nseeds > (double) R_XLEN_T_MAX) Rf_error("internal error: too many seeds in ffi_keyed_grid");
    uint64_t k0, k1;
    keyed_secret_key(secret, &k0, &k1);
    const char *names[] = { "sse", "seeds" };
    SEXP out = PROTECT(detanon_named_list(2, names));
    SEXP sse = SET_VECTOR_ELT(out, 0, Rf_allocVector(REALSXP, XLENGTH(grid)));
    SEXP seeds = SET_VECTOR_ELT(out, 1, Rf_allocVector(INTSXP, (R_xlen_t) nseeds));
    const kernel_host host = detanon_host(R_NilValue);
    keyed_kmeans_grid(REAL_RO(z), Rf_nrows(z), Rf_ncols(z), nb, o, g, go, kmin, restarts, maxit, k0, k1,
                      detanon_threads(nthreads), INTEGER(seeds), REAL(sse), &host);
    UNPROTECT(1);
    return out;
}

/* z, off, kmin, restarts, maxit and nthreads as ffi_keyed_grid() was given them; count:
 * the number of groups of every block, gmax: its largest count in the grid, seeds: the
 * grid's. Returns the group of every row, 1-based within its block. */
SEXP ffi_keyed_partition(SEXP z, SEXP off, SEXP count, SEXP gmax, SEXP seeds, SEXP kmin_, SEXP restarts_,
                         SEXP maxit_, SEXP nthreads)
{
    int nb = 0;
    const int kmin = Rf_asInteger(kmin_), restarts = Rf_asInteger(restarts_), maxit = Rf_asInteger(maxit_);
    if (!keyed_blocks_in(z, off, &nb) || TYPEOF(count) != INTSXP || TYPEOF(gmax) != INTSXP ||
        TYPEOF(seeds) != INTSXP || XLENGTH(count) != nb || XLENGTH(gmax) != nb || kmin < 1 || restarts < 1 ||
        maxit < 1)
        Rf_error("internal error: bad input to ffi_keyed_partition");
    const int *o = INTEGER_RO(off), *cnt = INTEGER_RO(count), *gm = INTEGER_RO(gmax), *sd = INTEGER_RO(seeds);
    R_xlen_t at = 0;
    for (int b = 0; b < nb; b++) {
        if (cnt[b] < 1 || gm[b] < cnt[b] || at + (R_xlen_t) restarts * gm[b] > XLENGTH(seeds))
            Rf_error("internal error: bad counts in ffi_keyed_partition");
        /* every restart's first count seeds are points of the block */
        for (int r = 0; r < restarts && cnt[b] > 1; r++)
            for (int q = 0; q < cnt[b]; q++) {
                const int s = sd[at + (R_xlen_t) r * gm[b] + q];
                if (s < 0 || s >= o[b + 1] - o[b]) Rf_error("internal error: bad seeds in ffi_keyed_partition");
            }
        at += (R_xlen_t) restarts * gm[b];
    }
    if (at != XLENGTH(seeds)) Rf_error("internal error: bad seeds in ffi_keyed_partition");
    SEXP group = PROTECT(Rf_allocVector(INTSXP, Rf_nrows(z)));
    const kernel_host host = detanon_host(R_NilValue);
    keyed_kmeans_partition(REAL_RO(z), Rf_nrows(z), Rf_ncols(z), nb, o, cnt, gm, sd, kmin, restarts, maxit,
                           detanon_threads(nthreads), INTEGER(group), &host);
    for (R_xlen_t i = 0; i < XLENGTH(group); i++) INTEGER(group)[i]++;
    UNPROTECT(1);
    return group;
}

/* x: the n x d values of the masked columns with the rows of every group together, in a
 * canonical order; off: the G + 1 group offsets (0, ..., n); nout: uniforms per group;
 * secret (raw). Returns the G x nout keyed uniforms of the groups (keyed_group_uniforms()),
 * from which centroid_noise() (R/centroid_noise.R) draws the noise of the group means. */
SEXP ffi_keyed_group_uniforms(SEXP x, SEXP off_, SEXP nout_, SEXP secret)
{
    const ptrdiff_t n = Rf_nrows(x);
    const int d = Rf_ncols(x), nout = Rf_asInteger(nout_);
    const R_xlen_t ng1 = XLENGTH(off_);
    if (TYPEOF(x) != REALSXP || TYPEOF(off_) != INTSXP || ng1 < 1 || d < 1 || nout < 1)
        Rf_error("internal error: bad input to ffi_keyed_group_uniforms");
    const int ngroups = (int) (ng1 - 1);
    const int *off = INTEGER_RO(off_);
    ptrdiff_t largest = 0;
    if (off[0] != 0 || off[ngroups] != n) Rf_error("internal error: bad offsets in ffi_keyed_group_uniforms");
    for (int g = 0; g < ngroups; g++) {
        if (off[g + 1] < off[g]) Rf_error("internal error: bad offsets in ffi_keyed_group_uniforms");
        if (off[g + 1] - off[g] > largest) largest = off[g + 1] - off[g];
    }
    uint64_t k0, k1;
    keyed_secret_key(secret, &k0, &k1);
    unsigned char *buf = (unsigned char *) detanon_alloc((size_t) (16 + 8 * (size_t) d * (size_t) largest), 1);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, ngroups, nout));
    if (ngroups > 0) {
        const double *xp = n > 0 ? REAL_RO(x) : NULL;
        keyed_group_uniforms(xp, n, d, off, ngroups, nout, UINT64_C(0x6573696f6e), k0, k1, buf, REAL(out));
    }
    UNPROTECT(1);
    return out;
}
