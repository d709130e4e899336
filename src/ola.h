/* Pure kernel for optimal lattice anonymisation (R/ola.R): the equivalence classes of one
 * node of the generalisation lattice, counted on integer codes. No R API. */
#ifndef DETANON_OLA_H
#define DETANON_OLA_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    ptrdiff_t n_suppressed; /* records in classes smaller than k */
    ptrdiff_t n_classes;    /* classes of at least k records */
    double cost;            /* sum of per-record costs (suppressed records at their suppression cost) */
    double dm;              /* discernibility: sum of squared kept class sizes + n * n_suppressed */
    double dm_all;          /* sum of squared sizes of all classes (no suppression) */
    ptrdiff_t n_all;        /* classes, including the suppressed ones */
} ola_result;

typedef struct {
    uint64_t key;   /* mixed-radix key of the class */
    ptrdiff_t count; /* records (0: empty cell) */
    double delta;   /* sum over its records of (suppression cost - kept cost) */
} ola_cell;

/* codes: n x d column-major base codes (0-based, codes of column j < the length of gen[j]).
 * gen[j]: the code at the node's level of each base code of column j, card[j] distinct
 * generalised codes; cost[j], sup[j]: per-base-code cost of a kept and of a suppressed
 * record. The classes are the distinct tuples of generalised codes; classes with fewer
 * than k records are suppressed.
 * Each record gets a mixed-radix key over the columns with card > 1 (keys are compressed
 * to dense ids by hashing whenever the radix product would pass 2^62); the classes are
 * then counted in `table` (table_size cells, a power of two >= 2 min(n, product), or
 * directly indexed when the product is at most table_size / 2), one random access per
 * record; the suppression cost is summed per class on the way, so no second pass over
 * the records is needed. Scratch: key (n), dlt (n), table, used (n). slot: NULL or n ints
 * that receive each record's table cell. */
void ola_node(const int *codes, ptrdiff_t n, int d, const int *const *gen, const int *card,
              const double *const *cost, const double *const *sup, ptrdiff_t k,
              uint64_t *key, double *dlt, ola_cell *table, ptrdiff_t table_size,
              ptrdiff_t *used, int *slot, ola_result *out);

#endif
