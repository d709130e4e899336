# Benchmark: anonymise_keyed() against plain anonymise() in the same run, on 3 continuous
# variables in 4 strata (k = 3, size = 10; anonymise() with k = 5 as bench/anonymise.R),
# with 1 and 2 threads. The target of issue 39: keyed <= 10x anonymise() at 1e6.
# Times are elapsed seconds (user CPU in brackets), the best of `reps` runs; the machine
# load (uptime) is printed beside them.
# Run from the package root after installing detanon:
#   Rscript bench/keyed.R                # n = 1e4, 1e5, 1e6
#   Rscript bench/keyed.R 1e5 3          # one size, 3 repetitions
#   Rscript bench/keyed.R 1e6 1 1        # one size, one repetition, one thread only
library(detanon)
args <- commandArgs(trailingOnly = TRUE)
sizes <- if (length(args) >= 1L) as.numeric(args[1L]) else c(1e4, 1e5, 1e6)
reps <- if (length(args) >= 2L) as.integer(args[2L]) else 1L
threads <- if (length(args) >= 3L) as.integer(strsplit(args[3L], ",")[[1L]]) else c(1L, 2L)

make_data <- function(n, seed = 1) {
  set.seed(seed)
  data.frame(
    g = factor(sample(c("a", "b", "c", "d"), n, replace = TRUE)),
    x1 = rnorm(n), x2 = rexp(n), x3 = round(runif(n, 20, 80))
  )
}
key <- "bench-key-not-a-secret-0001"
best_time <- function(expr, reps) {
  e <- substitute(expr)
  env <- parent.frame()
  t <- lapply(seq_len(reps), function(i) system.time(eval(e, env)))
  t <- t[[which.min(vapply(t, `[[`, 0, "elapsed"))]]
  c(elapsed = t[["elapsed"]], user = t[["user.self"]])
}
load <- function() sub(".*load average: ", "", system("uptime", intern = TRUE))
for (n in sizes) {
  d <- make_data(n)
  for (nt in threads) {
    ta <- best_time(anonymise(d, vars = c("x1", "x2", "x3"), strata = "g", k = 5, nthreads = nt,
                              check_identifiers = FALSE), reps)
    tk <- best_time(anonymise_keyed(d, vars = c("x1", "x2", "x3"), strata = "g", k = 3, key = key,
                                    size = 10, nthreads = nt, check_identifiers = FALSE), reps)
    cat(sprintf(paste0("n = %.0e, nthreads = %d: anonymise %.2f s (%.2f), keyed %.2f s (%.2f), ",
                       "ratio %.1f  [load %s]\n"),
                n, nt, ta[1], ta[2], tk[1], tk[2], tk[1] / ta[1], load()))
  }
}
