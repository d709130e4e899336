# Benchmark: anonymise() (default settings: the natural form and the release metadata
# included) against the obvious alternative, an R implementation of the same five steps
# with a kd-tree per stratum (nabor::knn() and RANN::nn2()), on 4 continuous variables,
# 4 strata, k = 5.
# Run from the package root after installing detanon:
#   Rscript bench/anonymise.R            # n = 1e5 and 1e6
#   Rscript bench/anonymise.R 1e7        # one large size, peak memory of anonymise() only
#   Rscript bench/anonymise.R large-k    # one stratum with large k: n = k = 4000, and k near n/2
# Peak memory is the process's maximum resident set size (Linux /proc/self/status VmHWM),
# measured in a fresh R process per engine so one run cannot hide another's peak.
library(detanon)
args <- commandArgs(trailingOnly = TRUE)

make_data <- function(n, seed = 1) {
  set.seed(seed)
  data.frame(
    g = factor(sample(c("a", "b", "c", "d"), n, replace = TRUE)),
    x1 = rnorm(n), x2 = rexp(n), x3 = rgamma(n, 2), x4 = round(runif(n, 20, 80))
  )
}

# The alternatives: the paper's five steps in R with a kd-tree search in each stratum,
# RANN::nn2() (ANN) or nabor::knn() (libnabo), one thread each.
r_anonymise <- function(data, vars, strata, k, knn) {
  x <- as.matrix(data[vars])
  z <- scale(x)
  cen <- z
  for (rows in split(seq_len(nrow(z)), data[[strata]], drop = TRUE)) {
    nn <- knn(z[rows, , drop = FALSE], k)
    for (j in seq_along(vars)) cen[rows, j] <- rowMeans(matrix(z[rows, j][nn], ncol = k))
  }
  out <- sweep(sweep(cen, 2, apply(cen, 2, sd), "/"), 2, apply(x, 2, sd), "*")
  data[vars] <- as.data.frame(sweep(out, 2, colMeans(x), "+"))
  data
}
rann_anonymise <- function(data, vars, strata, k) {
  r_anonymise(data, vars, strata, k, function(z, k) RANN::nn2(z, k = k)$nn.idx)
}
nabor_anonymise <- function(data, vars, strata, k) {
  r_anonymise(data, vars, strata, k, function(z, k) nabor::knn(z, k = k)$nn.idx)
}

# Best of `reps` elapsed times of each function, run in turns (a, b, c, a, b, c, ...) so that
# a slow spell of a shared machine does not fall on one contender only. Each run starts
# after a full garbage collection (untimed): otherwise a run collects the garbage of the run
# before it, and how much depends on the order of the turns (measured at 1e6: the two-thread
# run, after the one-thread run, made 5 to 6 collections, the one-thread run, after the
# R + nabor run, 3; 0.05 s more of them).
# Attribute "cpu": the best user + system times (the fairer measure when other jobs share
# the machine; the same as elapsed on one thread of an idle machine).
time_turns <- function(fns, reps) {
  t <- cpu <- matrix(NA_real_, reps, length(fns), dimnames = list(NULL, names(fns)))
  for (i in seq_len(reps)) for (f in names(fns)) {
    invisible(gc())
    st <- system.time(fns[[f]]())
    t[i, f] <- st[["elapsed"]]
    cpu[i, f] <- st[["user.self"]] + st[["sys.self"]]
  }
  structure(apply(t, 2L, min), cpu = apply(cpu, 2L, min))
}

peak_rss_mb <- function() {
  s <- readLines("/proc/self/status")
  as.numeric(gsub("[^0-9]", "", s[grepl("^VmHWM", s)])) / 1024
}

vars <- c("x1", "x2", "x3", "x4")
if (length(args) == 0L) {
  cat(sprintf("machine: %d cores, %s; R %s\n", parallel::detectCores(),
              sub("model name\t: ", "", grep("model name", readLines("/proc/cpuinfo"), value = TRUE)[1]),
              getRversion()))
  rows <- list()
  for (n in c(1e5, 1e6)) {
    d <- make_data(n)
    reps <- if (n <= 1e5) 5L else 3L
    t <- time_turns(list(
      rann = function() rann_anonymise(d, vars, "g", 5),
      nabor = function() nabor_anonymise(d, vars, "g", 5),
      t1 = function() anonymise(d, k = 5, vars = vars, strata = "g", nthreads = 1),
      t2 = function() anonymise(d, k = 5, vars = vars, strata = "g", nthreads = 2)
    ), reps)
    rows[[length(rows) + 1L]] <- data.frame(n = n, r_rann_s = t[["rann"]], r_nabor_s = t[["nabor"]],
                                            detanon_1t_s = t[["t1"]], detanon_2t_s = t[["t2"]],
                                            vs_nabor_1t = t[["nabor"]] / t[["t1"]],
                                            vs_rann_1t = t[["rann"]] / t[["t1"]],
                                            threads_gain = t[["t1"]] / t[["t2"]],
                                            cpu_vs_nabor_1t = attr(t, "cpu")[["nabor"]] / attr(t, "cpu")[["t1"]],
                                            cpu_vs_rann_1t = attr(t, "cpu")[["rann"]] / attr(t, "cpu")[["t1"]])
  }
  cat("Times: best of the runs (elapsed s) on the same data, in turns; ratios > 1: anonymise() faster.\n")
  cat("CPU times are printed too: on a shared machine they are the fairer measure.\n")
  print(do.call(rbind, rows), digits = 3, row.names = FALSE)
  cat("load average at the end (1, 5, 15 min):", readLines("/proc/loadavg"), "\n")
} else if (args[1] == "large-k") {
  # one stratum of 4 variables; k = n makes every record's k points the whole stratum
  d <- make_data(4000)
  for (k in c(4000, 3999, 2000, 100)) {
    t <- time_turns(list(
      t1 = function() suppressWarnings(anonymise(d, k = k, vars = vars, strata = character(), nthreads = 1)),
      t2 = function() suppressWarnings(anonymise(d, k = k, vars = vars, strata = character(), nthreads = 2))
    ), 3L)
    cat(sprintf("n = 4000, k = %4d, one stratum: %.2f s on one thread, %.2f s on two\n", k, t[["t1"]], t[["t2"]]))
  }
} else {
  n <- as.numeric(args[1])
  d <- make_data(n)
  gc(reset = TRUE)
  base <- peak_rss_mb()
  t <- system.time(m <- anonymise(d, k = 5, vars = vars, strata = "g",
                                  nthreads = as.integer(if (length(args) > 1) args[2] else 2)))
  cat(sprintf("n = %.0f: anonymise() %.1f s elapsed; peak RSS %.0f MB (data alone: %.0f MB, %.0f MB before the call)\n",
              n, t[["elapsed"]], peak_rss_mb(), as.numeric(object.size(d)) / 2^20, base))
}
