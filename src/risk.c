/* Glue for risk_rmd() and risk_linkage(): neighbour counts and nearest-neighbour links on a
 * kd-tree, memory O(n), on standardised matrices prepared and validated in R. */
#include <stdint.h>
#include "detanon.h"
#include "kdtree.h"
#include "risk_kernel.h"
#include "knn.h"
#include "threads.h"
#include "progress.h"

#define RISK_LEAF_SIZE 8
/* Queries between two interrupt checks (and progress updates). */
#define RISK_CHUNK ((ptrdiff_t) 1 << 16)

/* For each 1-based row i in `query`: the number of OTHER rows of z (n x d) within Euclidean
 * distance w of row i, capped at m. `progress`: TRUE to show a progress bar. */
SEXP ffi_rmd_count(SEXP z, SEXP query, SEXP w_, SEXP m_, SEXP nthreads, SEXP progress)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), m = Rf_asInteger(m_), nt = detanon_threads(nthreads);
    const double r2 = rk_sqrt_threshold(Rf_asReal(w_));
    const R_xlen_t nq = XLENGTH(query);
    SEXP out = PROTECT(Rf_allocVector(INTSXP, nq));
    if (nq == 0) { UNPROTECT(1); return out; }
    int *o = INTEGER(out);
    const int *qi = INTEGER_RO(query);
    if (n == 0 || d == 0 || m < 1) Rf_error("internal error: bad input to ffi_rmd_count");
    const double *zx = REAL_RO(z);

    kd_tree t = detanon_tree(n, d, RISK_LEAF_SIZE);
    kd_build(&t, zx, n, NULL);
    R_CheckUserInterrupt();
    /* slot[r] = index of row r in `query` + 1 (0: not queried); queries are then run in
     * tree order, so that consecutive queries touch the same part of the tree */
    R_xlen_t *slot = (R_xlen_t *) R_alloc(n, sizeof(R_xlen_t));
    for (ptrdiff_t r = 0; r < n; r++) slot[r] = 0;
    for (R_xlen_t i = 0; i < nq; i++) {
        if (qi[i] < 1 || qi[i] > n) Rf_error("internal error: query row out of range");
        slot[qi[i] - 1] = i + 1;
    }
    for (R_xlen_t i = 0; i < nq; i++) o[i] = 0;
    kd_item *stacks = (kd_item *) R_alloc((size_t) nt * KD_STACK_MAX, sizeof(kd_item));
    const int ntq = threads_for(nt, (double) nq);
    SEXP bar = PROTECT(progress_new(progress, (double) n, "Counting neighbours"));
    for (ptrdiff_t from = 0; from < n; from += RISK_CHUNK) {
        ptrdiff_t to = from + RISK_CHUNK < n ? from + RISK_CHUNK : n;
#ifdef _OPENMP
#pragma omp parallel for num_threads(ntq) schedule(dynamic, 256)
#endif
        for (ptrdiff_t p = from; p < to; p++) {
            R_xlen_t s = slot[t.row[p]];
            if (s == 0) continue;
            /* the query itself is in the tree at distance 0: count m + 1, drop it */
            ptrdiff_t c = kd_count_within(&t, t.pts + (size_t) p * d, r2, (ptrdiff_t) m + 1,
                                          stacks + (size_t) THREAD_ID * KD_STACK_MAX);
            o[s - 1] = (int) (c > 0 ? c - 1 : 0);
        }
        R_CheckUserInterrupt();
        progress_update(bar, to);
    }
    progress_done(bar);
    /* a row queried more than once was answered in its last slot: copy it to the others */
    for (R_xlen_t i = 0; i < nq; i++) o[i] = o[slot[qi[i] - 1] - 1];
    UNPROTECT(2);
    return out;
}

/* Nearest-neighbour linking: zo and zm are n x d (original and masked, same rows); id the
 * stratum (1..S) of every row. Returns for every row the share of a successful link (see
 * rk_link_share). `progress`: TRUE to show a progress bar. */
SEXP ffi_link_share(SEXP zo, SEXP zm, SEXP id_, SEXP nthreads, SEXP progress)
{
    const ptrdiff_t n = Rf_nrows(zo);
    const int d = Rf_ncols(zo), nt = detanon_threads(nthreads);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    if (n == 0) { UNPROTECT(1); return out; }
    if (d == 0 || Rf_nrows(zm) != n || Rf_ncols(zm) != d || TYPEOF(id_) != INTSXP ||
        XLENGTH(id_) != n)
        Rf_error("internal error: bad input to ffi_link_share");
    double *o = REAL(out);
    const double *xo = REAL_RO(zo), *xm = REAL_RO(zm);
    const int *id = INTEGER_RO(id_);
    ptrdiff_t n_strata = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        if (id[i] < 1 || id[i] > n) Rf_error("internal error: stratum id out of range in ffi_link_share");
        if (id[i] > n_strata) n_strata = id[i];
    }
    ptrdiff_t *off = (ptrdiff_t *) R_alloc((size_t) n_strata + 1, sizeof(ptrdiff_t));
    ptrdiff_t *rows = (ptrdiff_t *) R_alloc(n, sizeof(ptrdiff_t));
    knn_group_rows(id, n, n_strata, rows, off);
    ptrdiff_t max_s = 0;
    for (ptrdiff_t s = 0; s < n_strata; s++) if (off[s + 1] - off[s] > max_s) max_s = off[s + 1] - off[s];

    /* one tree, sized for the largest stratum, reused stratum by stratum */
    kd_tree t = detanon_tree(max_s, d, RISK_LEAF_SIZE);
    kd_heap *heaps = (kd_heap *) R_alloc(nt, sizeof(kd_heap));
    double *buf = (double *) R_alloc((size_t) nt * d, sizeof(double));
    for (int i = 0; i < nt; i++) heaps[i] = detanon_heap(1);
    SEXP bar = PROTECT(progress_new(progress, (double) n, "Linking"));
    ptrdiff_t since_check = 0;
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        const ptrdiff_t b = off[s], ns = off[s + 1] - off[s];
        if (ns == 0) continue;
        kd_reuse(&t, ns);
        kd_build(&t, xo, n, rows + b);
        const int nts = threads_for(nt, (double) ns);
        for (ptrdiff_t from = 0; from < ns; from += RISK_CHUNK) {
            ptrdiff_t to = from + RISK_CHUNK < ns ? from + RISK_CHUNK : ns;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nts) schedule(dynamic, 64)
#endif
            for (ptrdiff_t p = from; p < to; p++) {
                /* in tree order: a masked record lies near its original, so consecutive
                 * queries visit the same part of the tree */
                int tid = THREAD_ID;
                double *q = buf + (size_t) tid * d;
                ptrdiff_t r = t.row[p];
                for (int j = 0; j < d; j++) q[j] = xm[r + (size_t) j * n];
                o[r] = rk_link_share(&t, q, t.pts + (size_t) p * d, &heaps[tid]);
            }
            since_check += to - from;
            if (since_check >= RISK_CHUNK) {
                R_CheckUserInterrupt();
                progress_update(bar, b + to);
                since_check = 0;
            }
        }
    }
    progress_done(bar);
    UNPROTECT(2);
    return out;
}
