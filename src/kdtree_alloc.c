/* Glue for the kd-tree: buffers from R_alloc (so an R error or interrupt frees them),
 * shared by every entry point that searches a kd-tree, and the tree itself for tests. */
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

/* The tree over the rows of an n x d matrix z, for tests of the build: list(row = rows
 * (1-based) in tree order, node = n_nodes x 4 matrix of 0-based begin, end (exclusive),
 * left, right (-1 for a leaf), box = n_nodes x 2d matrix of lower then upper corners). */
SEXP ffi_kd_tree(SEXP z, SEXP leaf_size)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), ls = Rf_asInteger(leaf_size);
    if (TYPEOF(z) != REALSXP || n < 1 || d < 1 || ls < 1)
        Rf_error("internal error: bad input to ffi_kd_tree");
    kd_tree t = detanon_tree(n, d, ls);
    kd_build(&t, REAL_RO(z), n, NULL);
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 3));
    SEXP row = SET_VECTOR_ELT(out, 0, Rf_allocVector(REALSXP, n));
    SEXP node = SET_VECTOR_ELT(out, 1, Rf_allocMatrix(REALSXP, t.n_nodes, 4));
    SEXP box = SET_VECTOR_ELT(out, 2, Rf_allocMatrix(REALSXP, t.n_nodes, 2 * d));
    SEXP names = Rf_allocVector(STRSXP, 3);
    Rf_setAttrib(out, R_NamesSymbol, names);
    SET_STRING_ELT(names, 0, Rf_mkChar("row"));
    SET_STRING_ELT(names, 1, Rf_mkChar("node"));
    SET_STRING_ELT(names, 2, Rf_mkChar("box"));
    for (ptrdiff_t i = 0; i < n; i++) REAL(row)[i] = (double) t.row[i] + 1;
    for (int v = 0; v < t.n_nodes; v++) {
        const kd_node *nd = t.nodes + v;
        double f[4] = { (double) nd->begin, (double) nd->end, nd->left, nd->right };
        for (int c = 0; c < 4; c++) REAL(node)[v + (ptrdiff_t) c * t.n_nodes] = f[c];
        for (int c = 0; c < 2 * d; c++)
            REAL(box)[v + (ptrdiff_t) c * t.n_nodes] = t.box[(size_t) v * 2 * d + c];
    }
    UNPROTECT(1);
    return out;
}
