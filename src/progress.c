/* Progress bars through cli's C API (progress.h). cli's tick flag is per compilation unit,
 * so every use of the API is in this file. */
#include "progress.h"
#include <cli/progress.h>

SEXP progress_new(SEXP show, double total, const char *name)
{
    if (Rf_asLogical(show) != TRUE) return R_NilValue;
    SEXP bar = PROTECT(cli_progress_bar(total, R_NilValue));
    cli_progress_set_name(bar, name);
    UNPROTECT(1);
    return bar;
}

void progress_update(void *bar, ptrdiff_t done)
{
    SEXP b = (SEXP) bar;
    if (!Rf_isNull(b) && CLI_SHOULD_TICK) cli_progress_set(b, (double) done);
}

void progress_done(SEXP bar)
{
    if (!Rf_isNull(bar)) cli_progress_done(bar);
}

void progress_init(void)
{
    cli_progress_init_timer();
}
