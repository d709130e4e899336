#' detanon: deterministic anonymisation of personal data
#'
#' The package masks continuous variables by the five-step procedure of Avraam, Jones
#' and Burton (2022): standardise; stratify by the categorical variables; find each
#' record's k - 1 nearest neighbours inside its stratum; replace it by the centroid of
#' the k points; rescale to the original SDs and means. See [anonymise()].
#'
#' @section Options:
#' \describe{
#'   \item{`detanon.nthreads`}{The default of every `nthreads` argument (else 1). The
#'     native code runs on at most that many OpenMP threads, capped by
#'     `omp_get_max_threads()` (the environment variable `OMP_NUM_THREADS`, else the number
#'     of cores) and `omp_get_thread_limit()` (`OMP_THREAD_LIMIT`); inputs too small to
#'     gain from threads (fewer than about 2000 queries or values) run on one thread.
#'     Results are bit-for-bit the same for every thread count.}
#'   \item{`detanon.progress`}{Progress bars (through the cli package) for long runs of
#'     [anonymise()], [anonymise_keps()], [risk_rmd()] and [risk_linkage()]. Unset, a bar
#'     is shown in interactive sessions when a run is expected to take more than a second
#'     or so; `TRUE` asks for bars in every session (also non-interactive ones, e.g. under
#'     Rscript), `FALSE` never shows them. cli draws a bar only once a run has lasted
#'     `getOption("cli.progress_show_after", 2)` seconds. Bars never change results.}
#' }
#'
#' @keywords internal
#' @importFrom cli cli_progress_cleanup
#' @useDynLib detanon, .registration = TRUE, .fixes = "C_"
"_PACKAGE"

# The compiled code is unloaded with the namespace, which gives back the memory anonymise()
# keeps between calls (see "Memory" in ?anonymise).
.onUnload <- function(libpath) {
  library.dynam.unload("detanon", libpath)
}
