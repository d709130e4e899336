/* The thread policy (threads.h). Pure C; its glue, detanon_threads(), is in glue.c. */
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
