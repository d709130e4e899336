# Benchmark of tune_release(): the whole search on Titanic and on n = 1e5 records, one core,
# against the same candidates made and measured one by one with the public verbs (what a
# user without tune_release() would run: anonymise() / anonymise_adaptive() from scratch
# for every candidate, then risk_linkage() with m = 1 and m, risk_rmd() and utility_delta(),
# each building its own kd-trees and robust covariance). Same data, same run; the chosen
# losses are checked equal.
# Run once from the package root with detanon installed:
#   Rscript bench/tune.R            (add n as an argument, e.g. Rscript bench/tune.R 2e5)
suppressPackageStartupMessages(library(detanon))
args <- commandArgs(trailingOnly = TRUE)
n_big <- if (length(args)) as.numeric(args[1]) else 1e5
v <- c("Age", "Fare")
st <- c("Pclass", "Sex", "Family")

# Titanic resampled to n records, ages and fares jittered (whole ages, fares in pence).
titanic_n <- function(n, seed = 1) {
  set.seed(seed)
  d <- titanic_paper()[-1]
  out <- d[sample(nrow(d), n, TRUE), ]
  out$Age <- round(pmax(0.5, out$Age + stats::rnorm(n, 0, 3)))
  out$Fare <- round(pmax(0, out$Fare * exp(stats::rnorm(n, 0, 0.2))), 2)
  rownames(out) <- NULL
  out
}

# The candidates of a search, one by one through the public verbs.
one_by_one <- function(d, tu) {
  t <- tu$tried
  lim <- tu$limits
  losses <- numeric()
  for (i in seq_len(nrow(t))) {
    s <- t$settings[i]
    rel <- switch(t$method[i],
      anonymise = anonymise(d, vars = v, strata = st, k = as.integer(sub("k = ", "", s)),
                            check_identifiers = FALSE),
      adaptive = {
        if (grepl("nearest only", s)) {
          anonymise_adaptive(d, vars = v, strata = st, k = 3, k_max = 33, m = 1, check_identifiers = FALSE)
        } else {
          stages <- strsplit(strsplit(sub(".*stages rate/k_max: ", "", s), " > ")[[1]], "/")
          rates <- as.numeric(vapply(stages, `[`, "", 1L))
          kmax <- as.integer(vapply(stages, `[`, "", 2L))
          anonymise_adaptive(d, vars = v, strata = st, k = 2, k_max = kmax, m = lim$m, rate = rates,
                             w1 = if (grepl("w1", s)) 0.01, check_identifiers = FALSE)
        }
      },
      NULL) # k per stratum and stirred candidates: not redone here (their settings are tables)
    if (is.null(rel)) next
    risk_linkage(d, rel, vars = v, strata = st)
    risk_linkage(d, rel, vars = v, strata = st, m = lim$m)
    risk_rmd(d, rel, vars = v, deterministic = TRUE)
    losses[i] <- max(utility_delta(d, rel, vars = v)$delta)
  }
  losses
}

cat(sprintf("detanon tune_release() benchmark, one core, %s\n", format(Sys.time(), tz = "UTC", usetz = TRUE)))
runs <- list(
  list(name = "Titanic (891), the vignette's limits", d = titanic_paper()[-1],
       limits = list(linkage = 0.01, top_m = 0.15, m = 3, risk1 = 0.005, risk2 = 0)),
  list(name = sprintf("Titanic resampled to %g, the vignette's limits", n_big), d = titanic_n(n_big),
       limits = list(linkage = 0.01, top_m = 0.15, m = 3, risk1 = 0.005, risk2 = 0)),
  list(name = sprintf("Titanic resampled to %g, linkage limits only", n_big), d = titanic_n(n_big),
       limits = list(linkage = 0.05, top_m = 0.2, m = 3, risk1 = 1, risk2 = 1))
)
for (r in runs) {
  t_search <- system.time(tu <- do.call(tune_release, c(list(r$d, vars = v, strata = st, nthreads = 1L),
                                                         r$limits)))[["elapsed"]]
  t_one <- system.time(loss <- one_by_one(r$d, tu))[["elapsed"]]
  redone <- !is.na(loss)
  same <- isTRUE(all.equal(loss[redone], tu$tried$loss[which(redone)]))
  ch <- tu$chosen
  cat(sprintf("\n%s\n  tune_release: %.1f s for %d candidates (%s)\n", r$name, t_search, nrow(tu$tried),
              if (is.null(ch)) "none met every limit" else
                sprintf("chosen %s: linkage %.4f, top-3 %.4f, risk1 %.4f, risk2 %.4f, delta %.4f",
                        ch$method, ch$linkage, ch$top_m, ch$risk1, ch$risk2, ch$loss)))
  cat(sprintf("  the %d fixed-k and adaptive candidates one by one with the public verbs: %.1f s (%.1fx the whole search); same losses: %s\n",
              sum(redone), t_one, t_one / t_search, same))
  slow <- tu$tried[order(-tu$tried$seconds), c("method", "seconds")][1:3, ]
  cat("  slowest candidates:", paste(sprintf("%s %.1f s", slow$method, slow$seconds), collapse = ", "), "\n")
}
