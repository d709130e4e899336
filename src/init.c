/* The one registration table of the .Call entry points (declared in detanon.h; one
 * section per glue file, <feature>_glue.c), with exact argument counts. */
#include <R_ext/Rdynload.h>
#include <R_ext/Visibility.h>
#include "detanon.h"
#include "progress.h"

static const R_CallMethodDef call_methods[] = {
    /* anonymise_glue.c: anonymise(), step 5 of every masking path */
    {"ffi_anonymise",      (DL_FUNC) &ffi_anonymise,      7},
    {"ffi_rescale",        (DL_FUNC) &ffi_rescale,        5},
    {"ffi_col_stats",      (DL_FUNC) &ffi_col_stats,      2},
    {"ffi_form_stats",     (DL_FUNC) &ffi_form_stats,     2},
    {"ffi_form_stats_cols", (DL_FUNC) &ffi_form_stats_cols, 3},
    {"ffi_squeeze",        (DL_FUNC) &ffi_squeeze,        4},
    {"ffi_form_scan",      (DL_FUNC) &ffi_form_scan,      4},
    {"ffi_form_apply",     (DL_FUNC) &ffi_form_apply,     5},
    {"ffi_fit_sums",       (DL_FUNC) &ffi_fit_sums,       6},
    {"ffi_fit_apply",      (DL_FUNC) &ffi_fit_apply,      4},
    {"ffi_col_maxabs",     (DL_FUNC) &ffi_col_maxabs,     1},
    {"ffi_mask_strata",    (DL_FUNC) &ffi_mask_strata,    6},
    {"ffi_acc_add",        (DL_FUNC) &ffi_acc_add,        3},
    {"ffi_acc_merge",      (DL_FUNC) &ffi_acc_merge,      4},
    {"ffi_acc_round",      (DL_FUNC) &ffi_acc_round,      2},
    {"ffi_radix_hist",     (DL_FUNC) &ffi_radix_hist,     4},
    {"ffi_radix_value",    (DL_FUNC) &ffi_radix_value,    2},
    {"ffi_record_checks",  (DL_FUNC) &ffi_record_checks,  1},
    /* form_glue.c: the masking verbs' passes over their columns on threads */
    {"ffi_form_squeeze",   (DL_FUNC) &ffi_form_squeeze,   4},
    {"ffi_cols_finite",    (DL_FUNC) &ffi_cols_finite,    2},
    {"ffi_checksums",      (DL_FUNC) &ffi_checksums,      2},
    {"ffi_cols_matrix",    (DL_FUNC) &ffi_cols_matrix,    3},
    /* adaptive_glue.c: adaptive k per record (anonymise_adaptive) */
    {"ffi_adaptive_k",     (DL_FUNC) &ffi_adaptive_k,     9},
    {"ffi_adaptive_centroids", (DL_FUNC) &ffi_adaptive_centroids, 4},
    {"ffi_adaptive_tests", (DL_FUNC) &ffi_adaptive_tests, 6},
    {"ffi_adaptive_ladder", (DL_FUNC) &ffi_adaptive_ladder, 5},
    /* risk_glue.c: risk_rmd */
    {"ffi_rmd_count",      (DL_FUNC) &ffi_rmd_count,      6},
    /* rank_glue.c: ranks of own records (top-m linkage, re-identification, replay) */
    {"ffi_rank_index",     (DL_FUNC) &ffi_rank_index,     3},
    {"ffi_index_rank",     (DL_FUNC) &ffi_index_rank,     7},
    {"ffi_index_rank_nn2", (DL_FUNC) &ffi_index_rank_nn2, 5},
    /* mondrian_glue.c: Mondrian equivalence classes */
    {"ffi_mondrian",       (DL_FUNC) &ffi_mondrian,       6},
    /* keps_glue.c: (k, epsilon)-anonymisation */
    {"ffi_keps_noise",     (DL_FUNC) &ffi_keps_noise,     4},
    {"ffi_keps_link",      (DL_FUNC) &ffi_keps_link,      6},
    {"ffi_keps_confident", (DL_FUNC) &ffi_keps_confident, 7},
    /* stir_glue.c: cluster stirring */
    {"ffi_stir_centroids", (DL_FUNC) &ffi_stir_centroids, 4},
    {"ffi_stir_nearest",   (DL_FUNC) &ffi_stir_nearest,   4},
    {"ffi_stir_clusters",  (DL_FUNC) &ffi_stir_clusters,  4},
    {"ffi_stir_shuffle",   (DL_FUNC) &ffi_stir_shuffle,   3},
    /* ola_glue.c: optimal lattice anonymisation */
    {"ffi_ola_node",       (DL_FUNC) &ffi_ola_node,       4},
    /* distance_map_glue.c: knots of distance_map() */
    {"ffi_distmap_knots",  (DL_FUNC) &ffi_distmap_knots,  2},
    /* nn2_glue.c: neighbour queries of the risk battery */
    {"ffi_battery_nn2",        (DL_FUNC) &ffi_battery_nn2,        4},
    {"ffi_knn_cells",          (DL_FUNC) &ffi_knn_cells,          8},
    {"ffi_knn_ranks",          (DL_FUNC) &ffi_knn_ranks,          6},
    {"ffi_fs_candidates",      (DL_FUNC) &ffi_fs_candidates,      13},
    {"ffi_battery_neighbours", (DL_FUNC) &ffi_battery_neighbours, 10},
    {"ffi_knn_neighbours",     (DL_FUNC) &ffi_knn_neighbours,     10},
    /* assign_glue.c: one-to-one assignment within cells (attack_assignment) */
    {"ffi_assign",         (DL_FUNC) &ffi_assign,         10},
    /* fellegi_glue.c: comparison patterns and claims (attack_fellegi_sunter) */
    {"ffi_fs_levels",      (DL_FUNC) &ffi_fs_levels,      10},
    {"ffi_fs_claims",      (DL_FUNC) &ffi_fs_claims,      6},
    {"ffi_fs_block_pairs", (DL_FUNC) &ffi_fs_block_pairs, 3},
    /* knn_glue.c: candidate centroids on given points (attack_recipe) */
    {"ffi_knn_centroids",  (DL_FUNC) &ffi_knn_centroids,  5},
    {"ffi_knn_centroids_multi", (DL_FUNC) &ffi_knn_centroids_multi, 5},
    /* keyed_glue.c: the keyed k-means of anonymise_keyed() */
    {"ffi_keyed_kmeans",   (DL_FUNC) &ffi_keyed_kmeans,   7},
    {"ffi_keyed_grid",     (DL_FUNC) &ffi_keyed_grid,     9},
    {"ffi_keyed_partition", (DL_FUNC) &ffi_keyed_partition, 9},
    {"ffi_keyed_group_uniforms", (DL_FUNC) &ffi_keyed_group_uniforms, 4},
    /* mdav_glue.c: anonymise_mdav() */
    {"ffi_mdav",           (DL_FUNC) &ffi_mdav,           8},
    /* freq_glue.c: sums per key combination (categorical risk measures) */
    {"ffi_group_sums",     (DL_FUNC) &ffi_group_sums,     3},
    /* suda2_glue.c: minimal sample uniques and SUDA scores (risk_suda2) */
    {"ffi_suda2",          (DL_FUNC) &ffi_suda2,          3},
    /* memory_glue.c: the free memory of the allocator returned before the search forks */
    {"ffi_heap_trim",      (DL_FUNC) &ffi_heap_trim,      0},
#ifndef DETANON_NO_TESTING
    /* testing_glue.c: TEST-ONLY entry points (tests/testthat), not on any user path; left
     * out of a build with -DDETANON_NO_TESTING (CONTRIBUTING section 2) */
    {"ffi_knn_index",      (DL_FUNC) &ffi_knn_index,      5},
    {"ffi_kd_tree",        (DL_FUNC) &ffi_kd_tree,        2},
    {"ffi_rlaplace",       (DL_FUNC) &ffi_rlaplace,       2},
    {"ffi_threads",        (DL_FUNC) &ffi_threads,        2},
    {"ffi_siphash",        (DL_FUNC) &ffi_siphash,        2},
    {"ffi_keyed_uniforms", (DL_FUNC) &ffi_keyed_uniforms, 4},
#endif
    {NULL, NULL, 0}
};

void attribute_visible R_init_detanon(DllInfo *dll)
{
    R_registerRoutines(dll, NULL, call_methods, NULL, NULL);
    R_useDynamicSymbols(dll, FALSE);
    R_forceSymbols(dll, TRUE);
    progress_init();
}

void attribute_visible R_unload_detanon(DllInfo *dll)
{
    (void) dll;
    anonymise_scratch_free();
}
