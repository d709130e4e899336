#include "detanon.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* R validated the request; cap it by what OpenMP allows so that an over-large request
 * (or OMP_THREAD_LIMIT) cannot oversubscribe the machine. */
int detanon_threads(SEXP nthreads)
{
    int n = Rf_asInteger(nthreads);
    if (n == NA_INTEGER || n < 1) n = 1;
#ifdef _OPENMP
    int procs = omp_get_num_procs(), limit = omp_get_thread_limit();
    if (n > procs) n = procs;
    if (n > limit) n = limit;
    return n < 1 ? 1 : n;
#else
    return 1;
#endif
}
