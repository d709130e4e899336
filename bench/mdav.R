# Benchmark: anonymise_mdav() (src/mdav.c) against sdcMicro's MDAV, and against anonymise().
# Run once:  R_LIBS=<lib with detanon> Rscript bench/mdav.R [sdc_n]
# Prints, in one run:
#  (a) n = 1e5 x 3 in one stratum, k = 3: anonymise_mdav() against
#      sdcMicro::microaggregation(method = "mdav") (at sdc_n records, default 1e5; pass a smaller
#      sdc_n, e.g. 3e4, on a slow machine: its time grows as n^2 / k) and the groups compared;
#  (b) n = 1e6 x 3 in 4 strata, k = 3: anonymise_mdav() against anonymise(), both at nthreads = 1,
#      then both at nthreads = 2 (CPU and elapsed seconds);
#  (c) the ratios the targets are stated in (>= 50x sdcMicro at 1e5; within 5x of anonymise()).
# One thread (nthreads = 1) except the second half of (b); the release form "none" (the group means
# as computed). The load average is printed at the start and the end (a loaded machine stretches
# the elapsed times, and two threads gain little when both cores are busy).
library(detanon)

args <- commandArgs(trailingOnly = TRUE)
sdc_n <- if (length(args)) as.numeric(args[1]) else 1e5

# elapsed seconds; the CPU seconds (user + system, all threads) of the last call in `cpu`
# (on a loaded machine the elapsed time also holds the waits for a core)
cpu <- NA_real_
timeit <- function(expr) {
  gc(FALSE)
  t <- system.time(expr)
  cpu <<- t[["user.self"]] + t[["sys.self"]]
  t[["elapsed"]]
}

sim <- function(n, n_strata = 1, seed = 1) {
  set.seed(seed)
  d <- data.frame(a = rnorm(n), b = rexp(n), c = rnorm(n, 10, 3))
  d$g <- factor(sample(seq_len(n_strata), n, replace = TRUE))
  d
}

vars <- c("a", "b", "c")
groups_of <- function(m) as.integer(factor(do.call(paste, unname(as.data.frame(m)[vars]))))
# the same partition: every group of a within one group of b and the same number of groups
same_partition <- function(a, b) {
  length(unique(a)) == length(unique(b)) && length(unique(paste(a, b))) == length(unique(a))
}
mdav <- function(d, strata) {
  anonymise_mdav(d, vars = vars, strata = strata, k = 3, format = "none", check_identifiers = FALSE,
                 nthreads = 1)
}

cat(sprintf("detanon %s, sdcMicro %s, R %s, %s\n", packageVersion("detanon"),
            if (requireNamespace("sdcMicro", quietly = TRUE)) format(packageVersion("sdcMicro")) else "-",
            getRversion(), format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC")))
if (file.exists("/proc/loadavg")) {
  cat(sprintf("load average (1, 5, 15 min) at the start: %s\n", paste(readLines("/proc/loadavg", warn = FALSE), collapse = " ")))
}

# (a) one stratum
d1 <- sim(1e5)
t_mdav <- timeit(m1 <- mdav(d1, character()))
cat(sprintf("(a) anonymise_mdav(), n = 1e5 x 3, one stratum, k = 3: %.2f s (CPU %.2f s)\n", t_mdav, cpu))
t_sdc <- NA_real_
if (requireNamespace("sdcMicro", quietly = TRUE)) {
  ds <- d1[seq_len(sdc_n), ]
  t_sdc <- timeit(sm <- sdcMicro::microaggregation(ds[vars], variables = vars, aggr = 3, method = "mdav")$mx)
  cpu_sdc <- cpu
  t_ours_n <- if (sdc_n == 1e5) t_mdav else timeit(ms <- mdav(ds, character()))
  if (sdc_n == 1e5) ms <- m1
  cat(sprintf("    sdcMicro MDAV at n = %g: %.2f s (CPU %.2f s); anonymise_mdav() at the same n: %.2f s; ratio %.0fx\n",
              sdc_n, t_sdc, cpu_sdc, t_ours_n, t_sdc / t_ours_n))
  cat(sprintf("    same groups as sdcMicro: %s\n", same_partition(groups_of(ms), groups_of(sm))))
}

# (b) 1e6 in 4 strata, at one and at two threads, each against anonymise() at the same nthreads
d4 <- sim(1e6, n_strata = 4)
# three runs of each, interleaved, and their medians (elapsed and CPU)
ratio <- list()
for (nt in 1:2) {
  tm <- matrix(NA_real_, 3, 4, dimnames = list(NULL, c("mdav", "mdav_cpu", "an", "an_cpu")))
  for (r in 1:3) {
    tm[r, "mdav"] <- timeit(anonymise_mdav(d4, vars = vars, strata = "g", k = 3, format = "none",
                                           check_identifiers = FALSE, nthreads = nt))
    tm[r, "mdav_cpu"] <- cpu
    tm[r, "an"] <- timeit(anonymise(d4, vars = vars, strata = "g", k = 3, format = "none",
                                    check_identifiers = FALSE, nthreads = nt))
    tm[r, "an_cpu"] <- cpu
  }
  m <- apply(tm, 2, median)
  ratio[[nt]] <- c(elapsed = m[["mdav"]] / m[["an"]], cpu = m[["mdav_cpu"]] / m[["an_cpu"]])
  cat(sprintf("(b) n = 1e6 x 3, 4 strata, k = 3, nthreads = %d (medians of 3): anonymise_mdav() %.2f s, anonymise() %.2f s, ratio %.2f\n",
              nt, m[["mdav"]], m[["an"]], ratio[[nt]][["elapsed"]]))
  cat(sprintf("    CPU: anonymise_mdav() %.2f s, anonymise() %.2f s, ratio %.2f\n", m[["mdav_cpu"]], m[["an_cpu"]],
              ratio[[nt]][["cpu"]]))
}

# (c) the targets
if (!is.na(t_sdc)) {
  cat(sprintf("(c) sdcMicro / anonymise_mdav() at n = %g: %.0fx (target >= 50x at 1e5)\n", sdc_n,
              t_sdc / (if (sdc_n == 1e5) t_mdav else t_ours_n)))
}
for (nt in 1:2) {
  cat(sprintf("    anonymise_mdav() / anonymise() at 1e6, 4 strata, nthreads = %d: %.2f elapsed, %.2f CPU (target <= 5)\n",
              nt, ratio[[nt]][["elapsed"]], ratio[[nt]][["cpu"]]))
}
if (file.exists("/proc/loadavg")) {
  cat(sprintf("load average (1, 5, 15 min) at the end: %s\n", paste(readLines("/proc/loadavg", warn = FALSE), collapse = " ")))
}
