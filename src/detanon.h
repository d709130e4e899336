/* Entry points called from R with .Call (registered in init.c) and shared glue helpers. */
#ifndef DETANON_H
#define DETANON_H

#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>
#include "kdtree.h"

/* anonymise_glue.c */
SEXP ffi_anonymise(SEXP x, SEXP id, SEXP k, SEXP nthreads, SEXP flat_sd, SEXP progress);
SEXP ffi_col_stats(SEXP x, SEXP nthreads);

/* risk_glue.c (risk_rmd) */
SEXP ffi_rmd_count(SEXP z, SEXP query, SEXP w, SEXP m, SEXP nthreads, SEXP progress);
/* keps: (k, epsilon)-anonymisation (keps_glue.c) */
SEXP ffi_mondrian(SEXP x, SEXP order, SEXP offsets, SEXP k, SEXP inv_range, SEXP progress);
SEXP ffi_keps_noise(SEXP y, SEXP cls, SEXP n_classes, SEXP eps);
SEXP ffi_keps_link(SEXP o, SEXP q, SEXP order, SEXP offsets, SEXP scale, SEXP progress);
SEXP ffi_keps_confident(SEXP o, SEXP q, SEXP order, SEXP offsets, SEXP r, SEXP cap,
                        SEXP progress);

/* ola_glue.c: optimal lattice anonymisation (one lattice node) */
SEXP ffi_ola_node(SEXP lat, SEXP level, SEXP k, SEXP want_slot);

/* kdtree_glue.c: a tree with room for n points, and a heap of k neighbours, in R_alloc memory */
kd_tree detanon_tree(ptrdiff_t n, int d, int leaf_size);
kd_heap detanon_heap(int k);

/* glue.c: a named list of n elements, unprotected */
SEXP detanon_named_list(int n, const char **names);

/* threads.c: `nthreads` from R under the thread policy of threads.h (1 without OpenMP) */
int detanon_threads(SEXP nthreads);

/* stir_glue.c: cluster stirring */
SEXP ffi_stir_centroids(SEXP x, SEXP nominal, SEXP cl, SEXP n_clusters);
SEXP ffi_stir_nearest(SEXP xo, SEXP xc, SEXP nominal, SEXP knots);
SEXP ffi_stir_clusters(SEXP x, SEXP nominal, SEXP eps, SEXP order);
SEXP ffi_stir_shuffle(SEXP cl, SEXP n_clusters, SEXP n_vars);

/* rank_glue.c: a reusable index of per-stratum kd-trees, and ranks of own records in it
 * (top-m linkage, re-identification, replay) */
SEXP ffi_rank_index(SEXP z, SEXP order, SEXP offsets);
SEXP ffi_index_rank(SEXP idx, SEXP zq, SEXP query, SEXP cap, SEXP nthreads, SEXP progress);
ptrdiff_t rank_index_n(SEXP idx);
int rank_index_d(SEXP idx);
kd_tree *rank_index_trees(SEXP idx, int d, R_xlen_t *n_strata);

/* adaptive_glue.c: adaptive k per record (anonymise_adaptive) */
SEXP ffi_adaptive_k(SEXP idx, SEXP k_init, SEXP cap, SEXP m, SEXP target, SEXP xs, SEXP wr,
                    SEXP nthreads);

/* assign_glue.c: one-to-one assignment within cells (attack_assignment) */
SEXP ffi_assign(SEXP zr, SEXP zc, SEXP r_order, SEXP r_off, SEXP c_order, SEXP c_off,
                SEXP limit, SEXP cand, SEXP rounds, SEXP nthreads);
SEXP ffi_nearest_in_cells(SEXP zt, SEXP zq, SEXP t_order, SEXP t_off, SEXP q_order, SEXP q_off,
                          SEXP k);

/* testing_glue.c: TEST-ONLY entry points, called from tests/testthat only */
SEXP ffi_knn_centroids(SEXP z, SEXP order, SEXP offsets, SEXP k, SEXP nthreads);
SEXP ffi_knn_index(SEXP z, SEXP order, SEXP offsets, SEXP k, SEXP nthreads);
SEXP ffi_kd_tree(SEXP z, SEXP leaf_size);
SEXP ffi_rlaplace(SEXP n, SEXP b);
SEXP ffi_threads(SEXP nthreads, SEXP work);

#endif
