/* The glue layer: every entry point called from R with .Call (registered in init.c) and the
 * helpers the glue files share. Glue files (<feature>_glue.c) hold only ffi_* functions
 * (SEXP in and out: convert, allocate, dispatch) and include this header; kernels
 * (<feature>.c and .h) take plain pointers, never include it or any R header, and get
 * memory and interrupt checks through a kernel_host (host.h) from detanon_host(). */
#ifndef DETANON_H
#define DETANON_H

#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>
#include <stdint.h>
#include "kdtree.h"
#include "host.h"

/* anonymise_glue.c: anonymise(), and step 5 of every masking path (kernels: knn.c, mask.c) */
SEXP ffi_anonymise(SEXP x, SEXP id, SEXP k, SEXP mean, SEXP sd, SEXP nthreads, SEXP progress);
void anonymise_scratch_free(void);
SEXP ffi_rescale(SEXP centroids, SEXP mean, SEXP sd, SEXP centroid_sd, SEXP nthreads);
SEXP ffi_col_stats(SEXP x, SEXP nthreads);
SEXP ffi_form_stats(SEXP x, SEXP kk);
SEXP ffi_form_stats_cols(SEXP x, SEXP kk, SEXP nthreads);
SEXP ffi_squeeze(SEXP v, SEXP lo, SEXP hi, SEXP round0);
SEXP ffi_form_scan(SEXP v, SEXP lo, SEXP hi, SEXP scan);
SEXP ffi_form_apply(SEXP v, SEXP lo, SEXP hi, SEXP scan, SEXP round0);
SEXP ffi_fit_sums(SEXP state, SEXP v, SEXP fit, SEXP centre, SEXP dev, SEXP nthreads);
SEXP ffi_fit_apply(SEXP v, SEXP fit, SEXP nthreads, SEXP into);
SEXP ffi_col_maxabs(SEXP x);
SEXP ffi_mask_strata(SEXP x, SEXP id, SEXP k, SEXP mean, SEXP sd, SEXP nthreads);
SEXP ffi_acc_add(SEXP acc, SEXP x, SEXP centre);
SEXP ffi_acc_merge(SEXP a, SEXP b, SEXP values, SEXP times);
SEXP ffi_acc_round(SEXP acc, SEXP e);
SEXP ffi_radix_hist(SEXP x, SEXP pass, SEXP prefix, SEXP counts);
SEXP ffi_radix_value(SEXP prefix, SEXP low);
SEXP ffi_record_checks(SEXP x);

/* form_glue.c: the masking verbs' passes over their columns on threads: the release form's
 * squeeze, the matrix of vars, the finite check, the fingerprint (kernels: mask.c, fsum.c) */
SEXP ffi_form_squeeze(SEXP v, SEXP lo, SEXP hi, SEXP nthreads);
SEXP ffi_cols_finite(SEXP cols, SEXP nthreads);
SEXP ffi_checksums(SEXP cols, SEXP nthreads);
SEXP ffi_cols_matrix(SEXP cols, SEXP n, SEXP nthreads);

/* adaptive_glue.c: adaptive k per record, anonymise_adaptive() (kernel: adaptive.c) */
SEXP ffi_adaptive_k(SEXP idx, SEXP k_init, SEXP cap, SEXP m, SEXP target, SEXP xs, SEXP wr,
                    SEXP nthreads, SEXP state);
SEXP ffi_adaptive_centroids(SEXP idx, SEXP k, SEXP rows, SEXP nthreads);
SEXP ffi_adaptive_tests(SEXP idx, SEXP cent, SEXP rows, SEXP csd, SEXP m, SEXP nthreads);
SEXP ffi_adaptive_ladder(SEXP z, SEXP order, SEXP offsets, SEXP k, SEXP nthreads);

/* risk_glue.c: risk_rmd() (kernel: risk.c) */
SEXP ffi_rmd_count(SEXP z, SEXP query, SEXP w, SEXP m, SEXP nthreads, SEXP progress);
/* nn2_glue.c: neighbour queries of the risk battery on a rank index */
SEXP ffi_knn_cells(SEXP zt, SEXP zq, SEXP t_order, SEXP t_off, SEXP q_order, SEXP q_off, SEXP k,
                   SEXP nthreads);
SEXP ffi_fs_candidates(SEXP num_o, SEXP num_m, SEXP cat_o, SEXP cat_m, SEXP t_order, SEXP t_off, SEXP q_order,
                       SEXP q_off, SEXP k, SEXP bands, SEXP mult, SEXP nthreads, SEXP with_d2);
SEXP ffi_battery_nn2(SEXP idx, SEXP zq, SEXP tree_of, SEXP nthreads);
SEXP ffi_knn_ranks(SEXP dd, SEXP size, SEXP zq, SEXP zown, SEXP want, SEXP cap);
SEXP ffi_battery_neighbours(SEXP idx, SEXP zq, SEXP tree_of, SEXP m, SEXP leave_out,
                            SEXP y, SEXP target, SEXP tol, SEXP n_levels, SEXP nthreads);
SEXP ffi_knn_neighbours(SEXP index, SEXP dd, SEXP size, SEXP want, SEXP m, SEXP leave_out, SEXP y,
                        SEXP target, SEXP tol, SEXP n_levels);


/* rank_glue.c: a reusable index of per-stratum kd-trees, and ranks of own records in it
 * (top-m linkage, re-identification, replay; kernel: rank.c); the index's trees for other
 * glue */
SEXP ffi_rank_index(SEXP z, SEXP order, SEXP offsets);
SEXP ffi_distmap_knots(SEXP s, SEXP n_knots);
SEXP ffi_index_rank_nn2(SEXP idx, SEXP zq, SEXP query, SEXP cap, SEXP nthreads);
SEXP ffi_index_rank(SEXP idx, SEXP zq, SEXP query, SEXP cap, SEXP nthreads, SEXP progress,
                    SEXP lazy);
ptrdiff_t rank_index_n(SEXP idx);
int rank_index_d(SEXP idx);
kd_tree *rank_index_trees(SEXP idx, int d, R_xlen_t *n_strata);

/* mondrian_glue.c: Mondrian equivalence classes (kernel: mondrian.c) */
SEXP ffi_mondrian(SEXP x, SEXP order, SEXP offsets, SEXP k, SEXP inv_range, SEXP progress);

/* keps_glue.c: (k, epsilon)-anonymisation around its classes (kernel: keps.c) */
SEXP ffi_keps_noise(SEXP y, SEXP cls, SEXP n_classes, SEXP eps);
SEXP ffi_keps_link(SEXP o, SEXP q, SEXP order, SEXP offsets, SEXP scale, SEXP progress);
SEXP ffi_keps_confident(SEXP o, SEXP q, SEXP order, SEXP offsets, SEXP r, SEXP cap,
                        SEXP progress);

/* stir_glue.c: cluster stirring (kernel: stir.c) */
SEXP ffi_stir_centroids(SEXP x, SEXP nominal, SEXP cl, SEXP n_clusters);
SEXP ffi_stir_nearest(SEXP xo, SEXP xc, SEXP nominal, SEXP knots);
SEXP ffi_stir_clusters(SEXP x, SEXP nominal, SEXP eps, SEXP order);
SEXP ffi_stir_shuffle(SEXP cl, SEXP n_clusters, SEXP n_vars);

/* suda2_glue.c: minimal sample uniques and SUDA/DIS-SUDA scores, risk_suda2() (kernel:
 * suda2.c) */
SEXP ffi_suda2(SEXP codes, SEXP n_levels, SEXP fraction);

/* ola_glue.c: optimal lattice anonymisation, one lattice node (kernel: ola.c) */
SEXP ffi_ola_node(SEXP lat, SEXP level, SEXP k, SEXP want_slot);

/* assign_glue.c: one-to-one assignment within cells (attack_assignment) */
SEXP ffi_assign(SEXP zr, SEXP zc, SEXP r_order, SEXP r_off, SEXP c_order, SEXP c_off,
                SEXP limit, SEXP cand, SEXP rounds, SEXP nthreads);

/* fellegi_glue.c: comparison patterns and claims of attack_fellegi_sunter() (kernel: fellegi.c) */
SEXP ffi_fs_levels(SEXP num_o, SEXP num_m, SEXP cat_o, SEXP cat_m, SEXP i, SEXP j, SEXP bands,
                   SEXP mult, SEXP counts, SEXP nthreads);
SEXP ffi_fs_claims(SEXP i, SEXP j, SEXP at, SEXP w, SEXP post, SEXP n);
SEXP ffi_fs_block_pairs(SEXP rows, SEXP id, SEXP size);

/* knn_glue.c: the search of anonymise() on given points: centroids (attack_recipe()), or
 * (want_index, for the tests) the neighbour rows */
SEXP ffi_knn_centroids(SEXP z, SEXP order, SEXP offsets, SEXP k, SEXP nthreads);
SEXP ffi_knn_centroids_multi(SEXP z, SEXP order, SEXP offsets, SEXP ks, SEXP nthreads);
SEXP knn_run(SEXP z, SEXP order, SEXP offsets, SEXP k_, SEXP nthreads, int want_index);

/* keyed_glue.c: the keyed k-means of one stratum (anonymise_keyed()) */
SEXP ffi_keyed_kmeans(SEXP z, SEXP c, SEXP kmin, SEXP restarts, SEXP maxit, SEXP secret, SEXP nthreads);
SEXP ffi_keyed_grid(SEXP z, SEXP off, SEXP grid, SEXP goff, SEXP kmin, SEXP restarts, SEXP maxit, SEXP secret,
                    SEXP nthreads);
SEXP ffi_keyed_partition(SEXP z, SEXP off, SEXP count, SEXP gmax, SEXP seeds, SEXP kmin, SEXP restarts,
                         SEXP maxit, SEXP nthreads);
/* the keyed uniforms of groups of rows (the noise of shared centroids, R/centroid_noise.R) */
SEXP ffi_keyed_group_uniforms(SEXP x, SEXP off, SEXP nout, SEXP secret);
/* freq_glue.c: sums per key combination (risk_frequencies(), risk_individual(), ...) */
SEXP ffi_group_sums(SEXP x, SEXP g, SEXP n_groups);
/* the 128-bit working key of a raw secret (keyed.c's keyed_derive()) */
void keyed_secret_key(SEXP secret, uint64_t *k0, uint64_t *k1);

/* mdav_glue.c: MDAV microaggregation, anonymise_mdav() (kernel: mdav.c) */
SEXP ffi_mdav(SEXP x, SEXP cols, SEXP mean, SEXP sd, SEXP id, SEXP k, SEXP nthreads, SEXP progress);

/* testing_glue.c: TEST-ONLY entry points, called from tests/testthat only; compiled unless
 * DETANON_NO_TESTING is defined (CONTRIBUTING section 2) */
#ifndef DETANON_NO_TESTING
SEXP ffi_knn_index(SEXP z, SEXP order, SEXP offsets, SEXP k, SEXP nthreads);
SEXP ffi_kd_tree(SEXP z, SEXP leaf_size);
SEXP ffi_rlaplace(SEXP n, SEXP b);
SEXP ffi_threads(SEXP nthreads, SEXP work);
SEXP ffi_siphash(SEXP msg, SEXP key);
SEXP ffi_keyed_uniforms(SEXP z, SEXP salt, SEXP secret, SEXP steps);
#endif

/* glue.c: shared helpers */
/* A named list of n elements, unprotected. */
SEXP detanon_named_list(int n, const char **names);
/* R_alloc for kernels: never NULL (at least one byte), freed by R after the .Call. */
void *detanon_alloc(size_t n, size_t size);
/* The host of a kernel (host.h): detanon_alloc, and pauses that check for an interrupt and
 * set the progress bar `bar` (R_NilValue: none; the caller PROTECTs it). */
kernel_host detanon_host(SEXP bar);
/* The buffers a kernel grows (host.h, grow): malloc'd, each freed when the next replaces it,
 * all by detanon_blocks_free() (the cleanup of R_ExecWithCleanup(), which runs also after an
 * error or interrupt). Past DETANON_BLOCKS live buffers, R_alloc'd (held to the .Call's end). */
#define DETANON_BLOCKS 16
typedef struct {
    void *p[DETANON_BLOCKS];
} detanon_blocks;
void *detanon_grow(void *blocks, void *old, size_t n, size_t size);
void detanon_blocks_free(void *blocks);
/* An integer or double vector of length len as ptrdiff_t values (R_alloc'd). */
ptrdiff_t *detanon_index(SEXP x, R_xlen_t len);
/* `nthreads` from R under the thread policy of threads.h (1 without OpenMP) */
int detanon_threads(SEXP nthreads);

/* memory_glue.c: the allocator's free memory returned to the system before a fork */
SEXP ffi_heap_trim(void);

#endif
