# Benchmark of the risk battery (risk_battery(): linkage in both directions, singling out,
# attribute inference on a categorical column), each attack with its control, on 1e5 records
# (2 masked variables, 4 strata) and 1e6 records x 4 masked variables in 4 strata, one
# core by default. Reports the time of the intruder's view (shared by the attacks), of every
# attack alone with its control (risk_battery(attacks = a), view included) and of the whole
# battery: elapsed seconds and CPU seconds (user + system; on a shared machine the CPU time
# is the steadier figure).
# Run from the package root with detanon installed:
#   Rscript bench/battery.R            (add nthreads as an argument, e.g. Rscript bench/battery.R 2;
#                                       add --small for the 1e5 case only)
suppressPackageStartupMessages(library(detanon))
args <- commandArgs(trailingOnly = TRUE)
small <- "--small" %in% args
args <- setdiff(args, "--small")
nthreads <- if (length(args)) as.integer(args[1]) else 1L

make_data <- function(n, d, seed = 1) {
  set.seed(seed)
  x <- as.data.frame(matrix(round(stats::rnorm(n * d, 50, 10), 1), n, d))
  names(x) <- paste0("x", seq_len(d))
  x$g <- factor(sample(c("a", "b", "c", "d"), n, TRUE))
  x$y <- factor(ifelse(x$x1 + stats::rnorm(n, sd = 10) > 50, "yes", "no")) # sensitive, released unchanged
  vars <- paste0("x", seq_len(d))
  t <- system.time(m <- anonymise(x, k = 3, vars = vars, strata = "g", nthreads = nthreads))[["elapsed"]]
  list(d = x, m = m, vars = vars, anonymise_s = t)
}

timed <- function(expr) {
  t <- system.time(val <- force(expr))
  list(value = val, elapsed = t[["elapsed"]], cpu = t[["user.self"]] + t[["sys.self"]])
}

cat(sprintf("detanon risk battery benchmark, nthreads = %d, %s\n", nthreads,
            format(Sys.time(), tz = "UTC", usetz = TRUE)))
w <- make_data(2000, 2)
invisible(risk_battery(w$d, w$m, sensitive = "y", seed = 1, nthreads = nthreads)) # warm up

cases <- list(c(n = 1e5, d = 2))
if (!small) cases <- c(cases, list(c(n = 1e6, d = 4)))
for (cs in cases) {
  p <- make_data(cs[["n"]], cs[["d"]])
  cat(sprintf("\nn = %g, %d masked variables, 4 strata (anonymise k = 3: %.1f s)\n",
              cs[["n"]], cs[["d"]], p$anonymise_s))
  tv <- timed(detanon:::intruder_view(p$d, p$m, intruder(), seed = 1))
  cat(sprintf("  %-18s %7.2f s elapsed %7.2f s cpu\n", "intruder view", tv$elapsed, tv$cpu))
  for (a in names(battery_attacks())) {
    t <- timed(risk_battery(p$d, p$m, attacks = a, sensitive = "y", seed = 1, nthreads = nthreads))
    r <- t$value$attacks[[1]]
    cat(sprintf("  %-18s %7.2f s elapsed %7.2f s cpu   rate %.4f  control %.4f  advantage %.4f\n", a,
                t$elapsed, t$cpu, r$rate, r$control_rate, r$advantage))
  }
  t <- timed(risk_battery(p$d, p$m, sensitive = "y", seed = 1, nthreads = nthreads))
  cat(sprintf("  %-18s %7.2f s elapsed %7.2f s cpu\n", "whole battery", t$elapsed, t$cpu))
}
