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

#endif
