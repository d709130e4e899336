/* Helpers shared by the glue files (SEXP in and out), and the host (host.h) through which
 * kernels allocate and pause. */
#include <stdint.h>
#include <stdlib.h>
#include "detanon.h"
#include "progress.h"
#include "threads.h"

/* A list of n elements (R_NilValue) named names[0..n). Unprotected, like Rf_allocVector. */
SEXP detanon_named_list(int n, const char **names)
{
    SEXP out = PROTECT(Rf_allocVector(VECSXP, n));
    SEXP nm = Rf_allocVector(STRSXP, n);
    Rf_setAttrib(out, R_NamesSymbol, nm);
    for (int i = 0; i < n; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
    UNPROTECT(1);
    return out;
}

void *detanon_alloc(size_t n, size_t size)
{
    /* R_alloc returns NULL for 0 bytes; kernels are promised memory */
    return R_alloc(n > 0 ? n : 1, size > 0 ? size : 1);
}

/* Between chunks, on the main thread: an interrupt jumps back to R (every buffer is
 * R_alloc'd, so nothing leaks), then the bar (if any) is updated. */
static void pause_r(void *bar, ptrdiff_t done)
{
    R_CheckUserInterrupt();
    progress_update(bar, done);
}

/* Polled by a serial kd-tree build on the main thread: a Ctrl-C jumps straight back to R
 * as an interrupt condition (safe: no parallel region is running). */
static int interrupted_r(void)
{
    R_CheckUserInterrupt();
    return 0;
}

void *detanon_grow(void *blocks, void *old, size_t n, size_t size)
{
    detanon_blocks *b = (detanon_blocks *) blocks;
    int slot = -1;
    if (old) {
        for (int i = 0; i < DETANON_BLOCKS; i++) {
            if (b->p[i] == old) {
                free(old);
                b->p[i] = NULL;
                slot = i;
                break;
            }
        }
    }
    for (int i = 0; slot < 0 && i < DETANON_BLOCKS; i++) if (!b->p[i]) slot = i;
    if (slot < 0) return detanon_alloc(n, size); /* (old, if R_alloc'd, is R's to free) */
    if (n < 1) n = 1;
    if (size < 1) size = 1;
    if (n > SIZE_MAX / size) Rf_error("cannot allocate a buffer of %.0f x %.0f bytes", (double) n, (double) size);
    void *p = malloc(n * size);
    if (!p) Rf_error("cannot allocate a buffer of %.1f MB", (double) n * (double) size / 1e6);
    b->p[slot] = p;
    return p;
}

void detanon_blocks_free(void *blocks)
{
    detanon_blocks *b = (detanon_blocks *) blocks;
    for (int i = 0; i < DETANON_BLOCKS; i++) {
        free(b->p[i]);
        b->p[i] = NULL;
    }
}

kernel_host detanon_host(SEXP bar)
{
    kernel_host h = { detanon_alloc, pause_r, (void *) bar, interrupted_r, NULL, NULL };
    return h;
}

/* An integer or double vector of length len as ptrdiff_t values (R_alloc'd). */
ptrdiff_t *detanon_index(SEXP x, R_xlen_t len)
{
    ptrdiff_t *o = (ptrdiff_t *) detanon_alloc(len, sizeof(ptrdiff_t));
    if (TYPEOF(x) == INTSXP) { const int *p = INTEGER_RO(x); for (R_xlen_t i = 0; i < len; i++) o[i] = p[i]; }
    else { const double *p = REAL_RO(x); for (R_xlen_t i = 0; i < len; i++) o[i] = (ptrdiff_t) p[i]; }
    return o;
}

/* `nthreads` as R passes it (an integer validated by check_nthreads()), under the thread
 * policy of threads.h. */
int detanon_threads(SEXP nthreads)
{
    int n = Rf_asInteger(nthreads);
    return threads_cap(n == NA_INTEGER ? 1 : n);
}
