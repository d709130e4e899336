/* Progress bars from native loops, through the cli package's C API. R decides whether to
 * show one (R/progress.R) and passes a flag. Every function here runs on the main thread
 * only, between chunks of work and never inside a parallel region. */
#ifndef DETANON_PROGRESS_H
#define DETANON_PROGRESS_H

#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>
#include <stddef.h>

/* A bar for `total` units named `name`, or R_NilValue when `show` is not TRUE (then every
 * call below does nothing). The caller PROTECTs the result. */
SEXP progress_new(SEXP show, double total, const char *name);

/* Set the bar (an SEXP passed as void *, so it fits knn_progress) to `done` units when an
 * update is due (cli's timer); cheap otherwise. */
void progress_update(void *bar, ptrdiff_t done);

/* Terminate the bar. */
void progress_done(SEXP bar);

/* Start cli's timer (from R_init_detanon). */
void progress_init(void);

#endif
