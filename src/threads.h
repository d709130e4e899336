/* The one thread policy of detanon, and the one shim for builds without OpenMP. */
#ifndef DETANON_THREADS_H
#define DETANON_THREADS_H

#include <stddef.h>

#ifdef _OPENMP
#include <omp.h>
#define THREAD_ID omp_get_thread_num()
#else
/* Without OpenMP every region runs on the calling thread: the pragmas are compiled out
 * (each is guarded by #ifdef _OPENMP) and thread 0 does all the work. */
#define THREAD_ID 0
#endif

/* Inputs with less work than this (in queries, records or values) run on one thread: a
 * parallel region costs more than it saves on them. */
#define THREADS_MIN_WORK 2048

/* Threads for a job: the caller's request (from `nthreads`, validated in R; at least 1),
 * capped by omp_get_max_threads() (OMP_NUM_THREADS, or the number of cores) and
 * omp_get_thread_limit() (OMP_THREAD_LIMIT), so a large request cannot oversubscribe the
 * machine. 1 without OpenMP. Pure C: no R API. */
int threads_cap(int requested);

/* Threads for a region over `work` units: 1 below THREADS_MIN_WORK, else nt. */
static inline int threads_for(int nt, double work)
{
    return work < THREADS_MIN_WORK ? 1 : nt;
}

/* Bytes apart that two threads' often written data must lie, so that no cache line (nor
 * the pair of lines a core fetches together) holds both. */
#define THREAD_LINE 128

/* Passes over the rows of columns run as blocks of THREADS_BLOCK rows that the threads take
 * one at a time (schedule(dynamic, 1)): a thread waits at most about one block (tens of
 * microseconds) for the other at the end of a pass, however their speeds differ (another
 * job on a core, cache misses, page faults), where halves fixed in advance make the faster
 * thread wait for the slower half. Each thread combines its blocks' results exactly (exact
 * sums, counts, minima and maxima), so they do not depend on which thread took which
 * block. threads_blocks(): the number of blocks of n rows; threads_block(): the first row
 * of block b, and its length in *m. */
#define THREADS_BLOCK ((ptrdiff_t) 8192)
static inline ptrdiff_t threads_blocks(ptrdiff_t n)
{
    return n > 0 ? (n - 1) / THREADS_BLOCK + 1 : 0;
}
static inline ptrdiff_t threads_block(ptrdiff_t b, ptrdiff_t n, ptrdiff_t *m)
{
    const ptrdiff_t i0 = b * THREADS_BLOCK;
    *m = n - i0 < THREADS_BLOCK ? n - i0 : THREADS_BLOCK;
    return i0;
}

#endif
