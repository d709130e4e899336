# Installs the suggested packages that Debian does not ship, from CRAN (their own
# dependencies come from Debian, see tools/debian-packages.txt).
needed <- c("sdcMicro", "synthpop")
missing <- needed[!vapply(needed, requireNamespace, logical(1), quietly = TRUE)]
if (length(missing)) {
  message("install-deps: installing from CRAN: ", paste(missing, collapse = ", "))
  options(repos = c(CRAN = "https://cloud.r-project.org"))
  utils::install.packages(missing, Ncpus = 2L, quiet = TRUE)
  still <- missing[!vapply(missing, requireNamespace, logical(1), quietly = TRUE)]
  if (length(still)) stop("could not install: ", paste(still, collapse = ", "))
}
