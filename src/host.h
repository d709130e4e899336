/* What a kernel asks of its caller when it allocates or runs for long. Pure C: kernels see
 * only function pointers, so they never touch the R API; the glue passes R's
 * (detanon_host() in glue.c: R_alloc, and R_CheckUserInterrupt with a progress bar). */
#ifndef DETANON_HOST_H
#define DETANON_HOST_H

#include <stddef.h>

typedef struct {
    /* Scratch memory owned by the caller: n objects of `size` bytes, never NULL (R_alloc in
     * glue: freed by R when the .Call returns, also after an error or interrupt, so a
     * kernel never frees). Called on the calling thread only, never in a parallel region. */
    void *(*alloc)(size_t n, size_t size);
    /* Called on the calling thread between chunks of work, never in a parallel region,
     * with the units of work done so far: the glue checks for an interrupt (which does not
     * return) and updates a progress bar. May be NULL. */
    void (*pause)(void *ctx, ptrdiff_t done);
    void *ctx;
    /* Polled inside long serial work (a kd-tree build): nonzero stops it. May be NULL. */
    int (*interrupted)(void);
    /* A buffer that replaces one grown too small (a store of edges made again larger, its
     * contents not kept): n objects of `size` bytes in place of `old` (NULL: none), which is
     * freed (unless alloc made it) and must not be used again; never NULL. Owned by the
     * caller, freed when the .Call returns, also after an error or interrupt (glue:
     * detanon_blocks). Calling thread only. May be NULL: then alloc, and every block is held
     * until the .Call returns. Use host_grow(). */
    void *(*grow)(void *gctx, void *old, size_t n, size_t size);
    void *gctx;
} kernel_host;

static inline void host_pause(const kernel_host *h, ptrdiff_t done)
{
    if (h->pause) h->pause(h->ctx, done);
}

/* host->grow(), or host->alloc() when the host has none. */
static inline void *host_grow(const kernel_host *h, void *old, size_t n, size_t size)
{
    return h->grow ? h->grow(h->gctx, old, n, size) : h->alloc(n, size);
}

#endif
