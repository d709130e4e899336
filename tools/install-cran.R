# Installs the suggested packages that Debian does not ship, from CRAN (their own
# dependencies come from Debian, see tools/debian-packages.txt). Quiet when nothing is missing;
# on failure it prints why (install.packages' warnings) and exits non-zero.
needed <- c("sdcMicro", "synthpop", "nabor")
have <- function(p) vapply(p, requireNamespace, logical(1), quietly = TRUE)
missing <- needed[!have(needed)]
if (length(missing)) {
  message("install-deps: installing from CRAN: ", paste(missing, collapse = ", "))
  options(repos = c(CRAN = "https://cloud.r-project.org"))
  why <- character()
  withCallingHandlers(
    utils::install.packages(missing, Ncpus = 2L, quiet = TRUE),
    warning = function(w) {
      why <<- c(why, conditionMessage(w))
      invokeRestart("muffleWarning")
    }
  )
  still <- missing[!have(missing)]
  if (length(still)) {
    message(paste(why, collapse = "\n"))
    message("install-deps: could not install from CRAN: ", paste(still, collapse = ", "))
    quit(status = 1)
  }
  message("install-deps: CRAN packages installed")
}
