/* Glue for anonymise(): the k nearest neighbours of every record inside its stratum and
 * their centroids, on z-scores prepared and validated in R. */
#include "detanon.h"
#include "kdtree.h"
#include "fsum.h"
#ifdef _OPENMP
#include <omp.h>
#define THREAD_ID omp_get_thread_num()
#else
#define THREAD_ID 0
#endif

#define LEAF_SIZE 16
/* Strata smaller than this are searched one per thread (a tree each); larger ones one at
 * a time with the queries spread over threads. */
#define SMALL_STRATUM 4096
/* Queries between two interrupt checks (a few milliseconds of work). */
#define CHUNK ((ptrdiff_t) 1 << 16)

typedef struct {
    double *cent; /* n x d centroids, or NULL */
    int *idx;     /* n x k 1-based neighbour rows, or NULL */
    ptrdiff_t ld;
    int d, k;
} knn_output;

/* (Re)build tree t, allocated for at least ns points, over rows[0..ns) of z. */
static void build(kd_tree *t, const double *z, ptrdiff_t n_all, const ptrdiff_t *rows, ptrdiff_t ns,
                  int (*interrupted)(void))
{
    kd_reuse(t, ns);
    t->interrupted = interrupted;
    kd_build(t, z, n_all, rows);
}

/* Asks R whether the user pressed Ctrl-C without jumping out of C: R_CheckUserInterrupt
 * runs inside R_ToplevelExec, which catches the jump (and consumes the interrupt). */
static void check_interrupt(void *unused) { (void) unused; R_CheckUserInterrupt(); }
static int interrupt_pending(void) { return !R_ToplevelExec(check_interrupt, NULL); }

/* Write the result for the query at tree position `self`. Centroid sums are exact (fsum),
 * so records with the same k points get bit-identical centroids: with k equal to a
 * stratum's size its centroids are all equal, not equal up to rounding noise that step 5
 * would then blow up. `work` holds k doubles. */
static inline void emit(const kd_tree *t, const kd_heap *h, ptrdiff_t self, const knn_output *o,
                        double *work)
{
    ptrdiff_t r = t->row[self];
    if (o->cent) {
        for (int j = 0; j < o->d; j++) {
            for (int m = 0; m < o->k; m++) work[m] = t->pts[h->pos[m] * o->d + j];
            o->cent[r + j * o->ld] = fsum(work, o->k, 1) / o->k;
        }
    } else {
        for (int m = 0; m < o->k; m++) o->idx[r + m * o->ld] = (int) (t->row[h->pos[m]] + 1);
    }
}

static ptrdiff_t *as_offsets(SEXP x, R_xlen_t len)
{
    ptrdiff_t *o = (ptrdiff_t *) R_alloc(len, sizeof(ptrdiff_t));
    if (TYPEOF(x) == INTSXP) { const int *p = INTEGER_RO(x); for (R_xlen_t i = 0; i < len; i++) o[i] = p[i]; }
    else { const double *p = REAL_RO(x); for (R_xlen_t i = 0; i < len; i++) o[i] = (ptrdiff_t) p[i]; }
    return o;
}

static SEXP knn_run(SEXP z, SEXP order, SEXP offsets, SEXP k_, SEXP nthreads, int want_index)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), k = Rf_asInteger(k_), nt = detanon_threads(nthreads);
    /* cheap checks of the contract R guarantees: a bad call errors instead of reading out
     * of bounds (every non-empty stratum needs >= k points, rows a permutation of 1..n) */
    if (k < 1 || XLENGTH(order) != n || XLENGTH(offsets) < 1)
        Rf_error("internal error: bad input to ffi_knn_*");
    SEXP out = PROTECT(want_index ? Rf_allocMatrix(INTSXP, n, k) : Rf_allocMatrix(REALSXP, n, d));
    if (n == 0) { UNPROTECT(1); return out; }

    ptrdiff_t *rows = as_offsets(order, n); /* 1-based from R */
    for (ptrdiff_t i = 0; i < n; i++) {
        if (rows[i] < 1 || rows[i] > n) Rf_error("internal error: row out of range in ffi_knn_*");
        rows[i] -= 1;
    }
    const R_xlen_t n_strata = XLENGTH(offsets) - 1;
    const ptrdiff_t *off = as_offsets(offsets, n_strata + 1);
    if (off[0] != 0 || off[n_strata] != n) Rf_error("internal error: bad offsets in ffi_knn_*");
    for (R_xlen_t s = 0; s < n_strata; s++) {
        ptrdiff_t ns = off[s + 1] - off[s];
        if (ns < 0 || (ns > 0 && ns < k)) Rf_error("internal error: stratum smaller than k in ffi_knn_*");
    }
    if (d == 0) {
        /* no coordinates: all points coincide, so any k points of the stratum are nearest */
        if (want_index) {
            int *ix = INTEGER(out);
            for (R_xlen_t s = 0; s < n_strata; s++)
                for (ptrdiff_t p = off[s]; p < off[s + 1]; p++)
                    for (int m = 0; m < k; m++) ix[rows[p] + (ptrdiff_t) m * n] = (int) (rows[off[s] + m] + 1);
        }
        UNPROTECT(1);
        return out;
    }
    const double *zx = REAL_RO(z);
    knn_output o = { want_index ? NULL : REAL(out), want_index ? INTEGER(out) : NULL, n, d, k };

    ptrdiff_t max_small = 0, max_large = 0;
    for (R_xlen_t s = 0; s < n_strata; s++) {
        ptrdiff_t ns = off[s + 1] - off[s];
        if (ns < SMALL_STRATUM) { if (ns > max_small) max_small = ns; }
        else if (ns > max_large) max_large = ns;
    }
    kd_heap *heaps = (kd_heap *) R_alloc(nt, sizeof(kd_heap));
    double **work = (double **) R_alloc(nt, sizeof(double *));
    for (int t = 0; t < nt; t++) {
        heaps[t] = detanon_heap(k);
        work[t] = (double *) R_alloc(k, sizeof(double));
    }

    /* small strata: one per thread, each with its own tree */
    if (max_small > 0) {
        kd_tree *trees = (kd_tree *) R_alloc(nt, sizeof(kd_tree));
        for (int t = 0; t < nt; t++) trees[t] = detanon_tree(max_small, d, LEAF_SIZE);
        R_xlen_t s = 0;
        while (s < n_strata) {
            R_xlen_t s_end = s;
            for (ptrdiff_t work = 0; s_end < n_strata && work < CHUNK; s_end++)
                work += off[s_end + 1] - off[s_end];
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
            for (R_xlen_t i = s; i < s_end; i++) {
                ptrdiff_t ns = off[i + 1] - off[i];
                if (ns == 0 || ns >= SMALL_STRATUM) continue;
                int tid = THREAD_ID;
                kd_tree *tree = &trees[tid];
                build(tree, zx, n, rows + off[i], ns, NULL);
                for (ptrdiff_t p = 0; p < ns; p++) {
                    kd_knn_self(tree, p, &heaps[tid]);
                    emit(tree, &heaps[tid], p, &o, work[tid]);
                }
            }
            R_CheckUserInterrupt();
            s = s_end;
        }
    }

    /* large strata: trees built up front (several strata: one per thread, in rounds of nt
     * between interrupt checks; a single stratum: serially, polling for interrupts), then
     * one stratum at a time with its queries in parallel, in tree order for locality */
    if (max_large > 0) {
        R_xlen_t n_large = 0;
        for (R_xlen_t s = 0; s < n_strata; s++) if (off[s + 1] - off[s] >= SMALL_STRATUM) n_large++;
        R_xlen_t *large = (R_xlen_t *) R_alloc(n_large, sizeof(R_xlen_t));
        kd_tree *trees = (kd_tree *) R_alloc(n_large, sizeof(kd_tree));
        for (R_xlen_t s = 0, i = 0; s < n_strata; s++) {
            if (off[s + 1] - off[s] < SMALL_STRATUM) continue;
            large[i] = s;
            trees[i] = detanon_tree(off[s + 1] - off[s], d, LEAF_SIZE);
            i++;
        }
        if (n_large == 1) {
            build(&trees[0], zx, n, rows + off[large[0]], trees[0].n, interrupt_pending);
            if (trees[0].aborted) Rf_error("interrupted by the user");
        } else {
            for (R_xlen_t from = 0; from < n_large; from += nt) {
                R_xlen_t to = from + nt < n_large ? from + nt : n_large;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
                for (R_xlen_t i = from; i < to; i++) {
                    R_xlen_t s = large[i];
                    build(&trees[i], zx, n, rows + off[s], trees[i].n, NULL);
                }
                R_CheckUserInterrupt();
            }
        }
        for (R_xlen_t i = 0; i < n_large; i++) {
            const kd_tree *tree = &trees[i];
            const ptrdiff_t ns = tree->n;
            for (ptrdiff_t from = 0; from < ns; from += CHUNK) {
                ptrdiff_t to = from + CHUNK < ns ? from + CHUNK : ns;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 256)
#endif
                for (ptrdiff_t p = from; p < to; p++) {
                    int tid = THREAD_ID;
                    kd_knn_self(tree, p, &heaps[tid]);
                    emit(tree, &heaps[tid], p, &o, work[tid]);
                }
                R_CheckUserInterrupt();
            }
        }
    }
    UNPROTECT(1);
    return out;
}

SEXP ffi_knn_centroids(SEXP z, SEXP order, SEXP offsets, SEXP k, SEXP nthreads)
{
    return knn_run(z, order, offsets, k, nthreads, 0);
}

SEXP ffi_knn_index(SEXP z, SEXP order, SEXP offsets, SEXP k, SEXP nthreads)
{
    return knn_run(z, order, offsets, k, nthreads, 1);
}

/* Column means and SDs that do not depend on row order: a 2 x d matrix. */
SEXP ffi_col_stats(SEXP x)
{
    const ptrdiff_t n = Rf_nrows(x);
    const int d = Rf_ncols(x);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, 2, d));
    double *o = REAL(out);
    const double *px = n > 0 ? REAL_RO(x) : NULL;
    for (int j = 0; j < d; j++) col_mean_sd(px ? px + (size_t) j * n : NULL, n, o + 2 * j, o + 2 * j + 1);
    UNPROTECT(1);
    return out;
}
