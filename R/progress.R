# Progress bars for long native loops. R decides whether a run gets a bar; the C code
# (src/progress.c) draws it through cli's C API between chunks of work, on the main thread.

# Should a run of about `work` units (one unit: roughly a microsecond of native work) show a
# bar? The option `detanon.progress` decides: TRUE always asks for one, FALSE never, and
# unset (NULL) asks for one in interactive sessions when the run may take more than a
# second or so. cli then shows the bar only once the run has lasted
# `getOption("cli.progress_show_after", 2)` seconds, so short runs stay quiet either way.
# Progress never changes results: the native loops do the same work in the same order.
show_progress <- function(work) {
  opt <- getOption("detanon.progress")
  if (isTRUE(opt)) return(TRUE)
  if (isFALSE(opt)) return(FALSE)
  interactive() && work >= 1e6
}

# Evaluate `expr`, a .Call that may draw a bar when `show` is TRUE. A bar created in C is not
# terminated when an interrupt or error leaves the C code, so then cli's bars are cleaned up.
with_progress <- function(show, expr) {
  if (!show) return(expr)
  done <- FALSE
  on.exit(if (!done) cli::cli_progress_cleanup())
  res <- expr
  done <- TRUE
  res
}

# Progress of work spread over tasks that may run in other processes (the partitioned and
# database passes, on `future` workers), where a native bar cannot be drawn: a progressr
# progressor of `steps` steps, shown inside progressr::with_progress(), or a function that
# does nothing without progressr. Call it with `amount =` to advance by more than one.
task_progress <- function(steps) {
  if (requireNamespace("progressr", quietly = TRUE)) progressr::progressor(steps = steps) else function(...) NULL
}
