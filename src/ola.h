/* Pure kernel for optimal lattice anonymisation (R/ola.R): the equivalence classes of one
 * node of the generalisation lattice, counted on integer codes. No R API. */
#ifndef DETANON_OLA_H
#define DETANON_OLA_H

#include <stddef.h>

typedef struct {
    ptrdiff_t n_suppressed; /* records in classes smaller than k */
    ptrdiff_t n_classes;    /* classes of at least k records */
    double cost;            /* sum of per-record costs (suppressed records at their suppression cost) */
    double dm;              /* discernibility: sum of squared kept class sizes + n * n_suppressed */
    double dm_all;          /* sum of squared sizes of all classes (no suppression) */
} ola_result;

/* codes: n x d column-major base codes (0-based, codes of column j < card0[j]).
 * gen[j]: the code at the node's level of each base code of column j (length card0[j]),
 * with card[j] distinct generalised codes. cost[j], sup[j]: per-base-code cost of a kept
 * and of a suppressed record for column j. The classes are the distinct tuples of
 * generalised codes; a class with fewer than k records is suppressed.
 * Dense counting (an array of prod(card) counters) when that product is at most
 * dense_limit, otherwise an open-addressing hash table of 2^b >= 2n slots keyed by the
 * tuple (one representative row per slot, table_size a power of two > n). slot (n)
 * receives each record's class slot and counts[slot] the class sizes; counts has n_cells
 * (dense: prod card over columns with card > 1, stride their mixed-radix strides, 0 for
 * a column with one value) or table_size entries, reps table_size.
 * ola_summarise: the result of a node from the slots and counts (n_slots entries). */
void ola_count_dense(const int *codes, ptrdiff_t n, int d, const int *const *gen,
                     const ptrdiff_t *stride, ptrdiff_t n_cells, int *slot, int *counts);
void ola_count_hash(const int *codes, ptrdiff_t n, int d, const int *const *gen,
                    ptrdiff_t table_size, int *slot, int *counts, ptrdiff_t *reps);
void ola_summarise(const int *codes, ptrdiff_t n, int d, const double *const *cost,
                   const double *const *sup, const int *slot, const int *counts,
                   ptrdiff_t n_slots, ptrdiff_t k, ola_result *out);

#endif
