/* TEST-ONLY entry points. Nothing in R/ calls these: they expose kernels to the tests in
 * tests/testthat (through test_call() in helper-reference.R) so that each can be compared
 * with a slow R reference on its own. They validate only what keeps them from reading out
 * of bounds, and their interfaces may change without notice. The user path is in the
 * other *_glue.c files.
 *
 * The one switch (CONTRIBUTING section 2): they are compiled and registered unless
 * DETANON_NO_TESTING is defined (e.g. `CPPFLAGS += -DDETANON_NO_TESTING` in ~/.R/Makevars);
 * the tests that need them skip in such a build. */
#include "detanon.h"
#include "keyed.h"

#ifndef DETANON_NO_TESTING

#include "knn.h"
#include "keps.h"
#include "threads.h"

/* The neighbour rows of the search of anonymise() on given points (knn_run() in
 * knn_glue.c). */
SEXP ffi_knn_index(SEXP z, SEXP order, SEXP offsets, SEXP k, SEXP nthreads)
{
    return knn_run(z, order, offsets, k, nthreads, 1);
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
    kd_tree t = kd_new(n, d, ls, detanon_alloc);
    kd_build(&t, REAL_RO(z), n, NULL);
    static const char *names[] = {"row", "node", "box"};
    SEXP out = PROTECT(detanon_named_list(3, names));
    SEXP row = SET_VECTOR_ELT(out, 0, Rf_allocVector(REALSXP, n));
    SEXP node = SET_VECTOR_ELT(out, 1, Rf_allocMatrix(REALSXP, t.n_nodes, 4));
    SEXP box = SET_VECTOR_ELT(out, 2, Rf_allocMatrix(REALSXP, t.n_nodes, 2 * d));
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

/* n Laplace(0, b) draws with R's RNG. */
SEXP ffi_rlaplace(SEXP n_, SEXP b_)
{
    const R_xlen_t n = (R_xlen_t) Rf_asReal(n_);
    const double b = Rf_asReal(b_);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    double *o = n > 0 ? REAL(out) : NULL;
    GetRNGstate();
    for (R_xlen_t i = 0; i < n; i++) o[i] = laplace_from_unif(unif_rand(), b);
    PutRNGstate();
    UNPROTECT(1);
    return out;
}

/* The thread policy (threads.h) for a request of `nthreads` and `work` units. */
SEXP ffi_threads(SEXP nthreads, SEXP work)
{
    return Rf_ScalarInteger(threads_for(detanon_threads(nthreads), Rf_asReal(work)));
}

/* SipHash-2-4 of the raw `msg` under the 16 raw bytes `key`: 8 raw bytes, little-endian. */
SEXP ffi_siphash(SEXP msg, SEXP key)
{
    if (TYPEOF(msg) != RAWSXP || TYPEOF(key) != RAWSXP || XLENGTH(key) != 16)
        Rf_error("internal error: bad input to ffi_siphash");
    const Rbyte *k = RAW_RO(key);
    uint64_t k0 = 0, k1 = 0;
    for (int i = 7; i >= 0; i--) { k0 = (k0 << 8) | k[i]; k1 = (k1 << 8) | k[8 + i]; }
    uint64_t h = keyed_siphash(XLENGTH(msg) ? RAW_RO(msg) : NULL, (size_t) XLENGTH(msg), k0, k1);
    SEXP out = PROTECT(Rf_allocVector(RAWSXP, 8));
    for (int i = 0; i < 8; i++) { RAW(out)[i] = (Rbyte) (h & 0xff); h >>= 8; }
    UNPROTECT(1);
    return out;
}

/* The keyed uniforms of the rows of z (salt = the restart), and the step uniforms used
 * by the seeding: an n x (steps + 1) matrix, column 1 the point's uniform, column s + 2 the
 * uniform of seeding step s. */
SEXP ffi_keyed_uniforms(SEXP z, SEXP salt, SEXP secret, SEXP steps_)
{
    const ptrdiff_t n = Rf_nrows(z);
    const int d = Rf_ncols(z), steps = Rf_asInteger(steps_);
    if (TYPEOF(z) != REALSXP || d < 1 || d > 64 || steps < 0) Rf_error("internal error: bad input to ffi_keyed_uniforms");
    uint64_t k0, k1;
    keyed_secret_key(secret, &k0, &k1);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, n, steps + 1));
    keyed_uniforms(REAL_RO(z), n, d, (uint64_t) Rf_asInteger(salt), k0, k1, REAL(out));
    for (int s = 0; s < steps; s++) {
        for (ptrdiff_t i = 0; i < n; i++) {
            /* recover the hash from the row: recompute it */
            double row[64];
            for (int j = 0; j < d; j++) row[j] = REAL_RO(z)[(ptrdiff_t) j * n + i];
            REAL(out)[(ptrdiff_t) (s + 1) * n + i] = keyed_row_step(row, d, (uint64_t) Rf_asInteger(salt), k0, k1, s);
        }
    }
    UNPROTECT(1);
    return out;
}


#else
typedef int detanon_no_testing; /* ISO C: a translation unit is not empty */
#endif
