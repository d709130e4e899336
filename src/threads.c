/* The thread policy (threads.h) and its glue. */
#include "detanon.h"
#include "threads.h"

int threads_cap(int requested)
{
    int n = requested < 1 ? 1 : requested;
#ifdef _OPENMP
    int max = omp_get_max_threads(), limit = omp_get_thread_limit();
    if (max >= 1 && n > max) n = max;
    if (limit >= 1 && n > limit) n = limit;
    return n;
#else
    return 1;
#endif
}

/* `nthreads` as R passes it (an integer validated by check_nthreads()). */
int detanon_threads(SEXP nthreads)
{
    int n = Rf_asInteger(nthreads);
    return threads_cap(n == NA_INTEGER ? 1 : n);
}
