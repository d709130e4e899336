/* memory_glue.c: the search's process hands its allocator's free memory back to the system
 * before it forks (tune_poll() in R/tune.R). glibc's malloc keeps the chunks the search's
 * kernels and R's large vectors have freed; a forked child shares those pages and copies
 * each one it (or the search) writes again, so that memory freed before the fork is held
 * twice. malloc_trim() returns the free pages (madvise: they read as zeros when reused) and
 * the free top of each arena. A no-op where the C library has no malloc_trim(). */
#include "detanon.h"
#if defined(__GLIBC__)
#include <malloc.h>
#endif

SEXP ffi_heap_trim(void)
{
#if defined(__GLIBC__)
    return Rf_ScalarLogical(malloc_trim(0) != 0);
#else
    return Rf_ScalarLogical(0);
#endif
}
