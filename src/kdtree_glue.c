/* Glue for the kd-tree: buffers from R_alloc (so an R error or interrupt frees them),
 * shared by every entry point that searches a kd-tree. */
#include <stdint.h>
#include "detanon.h"

/* n doubles starting on a 64-byte boundary (a cache line), so that a node's box of 2 * d
 * doubles spans as few lines as it can: the search reads two boxes per node it opens. */
static double *cache_aligned(size_t n)
{
    char *p = R_alloc(n * sizeof(double) + 64, 1);
    return (double *) (p + (64 - (uintptr_t) p % 64) % 64);
}

kd_tree detanon_tree(ptrdiff_t n, int d, int leaf_size)
{
    size_t nn = kd_max_nodes(n, leaf_size);
    kd_tree t;
    kd_init(&t, n, d, leaf_size,
            (double *) R_alloc((size_t) n * d, sizeof(double)),
            (ptrdiff_t *) R_alloc(n, sizeof(ptrdiff_t)),
            (ptrdiff_t *) R_alloc(n, sizeof(ptrdiff_t)),
            (kd_node *) R_alloc(nn, sizeof(kd_node)),
            cache_aligned(nn * 2 * d));
    return t;
}

kd_heap detanon_heap(int k)
{
    kd_heap h;
    kd_heap_init(&h, k, (ptrdiff_t *) R_alloc(k, sizeof(ptrdiff_t)),
                 (double *) R_alloc(k, sizeof(double)),
                 k > KD_HEAP_MIN ? (ptrdiff_t *) R_alloc(k, sizeof(ptrdiff_t)) : NULL,
                 (kd_item *) R_alloc(KD_STACK_MAX, sizeof(kd_item)));
    return h;
}
