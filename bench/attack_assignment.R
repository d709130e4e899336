# The one-to-one assignment of attack_assignment() at scale on plain and shared-centroid
# releases: CPU time, cost, bound, gap and rate.
# Usage: Rscript bench/attack_assignment.R [n] [release] [rounds]
#   release: plain (anonymise(k = 3)), mdav3 / mdav5 (anonymise_mdav(k, noise = TRUE, key)),
#   mdav3x (anonymise_mdav(k = 3) without noise: exact shared centroids),
#   keyed (anonymise_keyed(k = 3, key)), titanic (Titanic resampled to n rows, tie-heavy:
#   anonymise_mdav(k = 3, noise = TRUE, key) on Age and Fare within Pclass x Sex),
#   sim-plain / sim-mdav<k> / sim-mdav<k>n (bench/tune_steps.R's data: 3 rounded variables in 4
#   strata of n / 4; anonymise(k = 3), anonymise_mdav(k) exact, or noisy with a key as
#   tune_release() makes its MDAV candidates by default),
#   tt-<release> (bench/tune_scale.R's tie-heavy Titanic resampled to n rows, strata Pclass x Sex x
#   Family, vars Age and Fare): tt-k3 / tt-k10 (anonymise()), tt-mdav<k>x / tt-mdav<k>n
#   (anonymise_mdav() exact / with the keyed noise), tt-stratum (anonymise_adaptive() with a k per
#   stratum from 3, 5, 10, 20 and m = 0), tt-adaptive (anonymise_adaptive(k = 3, k_max = 33,
#   m = 1, rate = 0.5), the search's first adaptive stage).
# Peak memory of the attack alone: VmHWM after resetting it (/proc/self/clear_refs) just before.
# ASSIGN_BENCH_CELLS=1 prints per cell: records, distinct points and tied groups on either side,
# the solver's path (sparse, first unmatched, auction, rounds).
# Data (all but titanic): 4 continuous variables (log-normal income, normal, whole-number
# age, uniform) in 4 strata; the intruder holds every original. Peak memory of the whole
# process: run under `/usr/bin/time -f %M`. Results: bench/results/assignment.txt.
library(detanon)
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE))), "tune_data.R"))
args <- commandArgs(TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 1e5
release <- if (length(args) >= 2) args[2] else "plain"
rounds <- if (length(args) >= 3) as.integer(args[3]) else 10L
set.seed(1)
key <- "bench-assignment-key-0123456789"
sim <- sub("^sim-", "", release)
tt <- sub("^tt-", "", release)
if (tt != release) {
  tt_data <- tune_bench_data("titanic", n) # set.seed(1) and the same draws
  d <- tt_data$d
  vars <- tt_data$vars
  strata <- tt_data$strata
} else if (sim != release) {
  d <- data.frame(g = factor(rep(c("a", "b", "c", "d"), each = n / 4)), x1 = round(stats::rnorm(n, 50, 10), 1),
                  x2 = round(stats::rexp(n, 0.1), 1), x3 = round(stats::runif(n, 20, 80)))
  vars <- c("x1", "x2", "x3")
  strata <- "g"
} else if (release == "titanic") {
  ti <- titanic_paper()[-1]
  d <- ti[sample(nrow(ti), n, replace = TRUE), ]
  vars <- c("Age", "Fare")
  strata <- c("Pclass", "Sex")
} else {
  d <- data.frame(income = stats::rlnorm(n, 10, 0.6), x = stats::rnorm(n),
                  age = round(stats::runif(n, 18, 90)), u = stats::runif(n),
                  g = factor(sample(1:4, n, replace = TRUE)))
  vars <- c("income", "x", "age", "u")
  strata <- "g"
}
mask <- if (tt != release) {
  k <- as.integer(gsub("[^0-9]", "", tt))
  if (startsWith(tt, "mdav")) {
    function() anonymise_mdav(d, k = k, vars = vars, strata = strata, noise = endsWith(tt, "n"),
                              key = if (endsWith(tt, "n")) key, check_identifiers = FALSE)
  } else if (tt == "stratum") {
    function() {
      ks <- unique(d[strata])
      ks$k <- rep_len(c(3L, 5L, 10L, 20L), nrow(ks))
      anonymise_adaptive(d, k = ks, vars = vars, strata = strata, k_max = 33, m = 0, check_identifiers = FALSE)
    }
  } else if (tt == "adaptive") {
    function() anonymise_adaptive(d, k = 3, vars = vars, strata = strata, k_max = 33, m = 1, rate = 0.5,
                                  check_identifiers = FALSE)
  } else function() anonymise(d, k = k, vars = vars, strata = strata, check_identifiers = FALSE)
} else if (sim != release) {
  k <- as.integer(gsub("[^0-9]", "", sim))
  noise <- grepl("n$", sim)
  if (sim == "plain") function() anonymise(d, k = 3, vars = vars, strata = strata, check_identifiers = FALSE)
  else function() anonymise_mdav(d, k = k, vars = vars, strata = strata, noise = noise, key = if (noise) key,
                                 check_identifiers = FALSE)
} else switch(release,
  plain = function() anonymise(d, k = 3, vars = vars, strata = strata),
  mdav3 = function() anonymise_mdav(d, k = 3, vars = vars, strata = strata, noise = TRUE, key = key),
  mdav5 = function() anonymise_mdav(d, k = 5, vars = vars, strata = strata, noise = TRUE, key = key),
  mdav3x = function() anonymise_mdav(d, k = 3, vars = vars, strata = strata),
  keyed = function() anonymise_keyed(d, k = 3, vars = vars, strata = strata, key = key),
  titanic = function() anonymise_mdav(d, k = 3, vars = vars, strata = strata, noise = TRUE, key = key,
                                      check_identifiers = FALSE),
  stop("unknown release ", release))
tm <- system.time(masked <- mask())
cat(sprintf("n = %g, %s: masking %.1f s CPU\n", n, release, tm[["user.self"]] + tm[["sys.self"]]))
vm <- function(f) as.numeric(sub("[^0-9]*([0-9]+).*", "\\1", grep(f, readLines("/proc/self/status"), value = TRUE))) / 1024
cells <- Sys.getenv("ASSIGN_BENCH_CELLS") == "1"
if (cells) { # the per-cell result of the kernel (solver path), kept on exit
  solved <- NULL
  keep <- quote(solved <<- list(res = returnValue(), zo = zo, zm = zm, rows = rows, co = co, cm = cm))
  invisible(suppressMessages(trace(detanon:::assign_cells, exit = keep, print = FALSE, where = asNamespace("detanon"))))
}
invisible(gc())
rss0 <- vm("^VmRSS")
reset <- tryCatch({ writeLines("5", "/proc/self/clear_refs"); TRUE }, error = function(e) FALSE)
tm <- system.time(a <- attack_assignment(d, masked, intruder = intruder(vars = vars, strata = strata),
                                         rounds = rounds, control = FALSE, nthreads = 1))
det <- a$details
cat(sprintf("assignment: %.2f s CPU (%.2f s elapsed); rate %.6f; cost %.10g, bound %.10g, gap %.3g; %d sparse cells; %d records needed more candidates\n",
            tm[["user.self"]] + tm[["sys.self"]], tm[["elapsed"]], a$rate, det$cost, det$bound, det$gap,
            det$n_sparse, det$n_expanded))
cat(sprintf("memory: RSS before the attack %.0f MB, peak during it (VmHWM%s) %.0f MB\n", rss0,
            if (reset) ", reset before" else ", whole process", vm("^VmHWM")))
if (cells) {
  zo <- solved$zo[solved$rows, , drop = FALSE]
  key_of <- function(z) do.call(paste, as.data.frame(z))
  side <- function(z, r) { g <- table(key_of(z[r, , drop = FALSE])); c(length(g), sum(g > 1), max(g)) }
  st <- t(sapply(seq_along(solved$res$cost), function(l) {
    ro <- which(solved$co == l); cm <- which(solved$cm == l)
    c(n_o = length(ro), n_m = length(cm), setNames(side(zo, ro), c("o_points", "o_tied", "o_maxtie")),
      setNames(side(solved$zm, cm), c("m_points", "m_tied", "m_maxtie")))
  }))
  print(cbind(st, as.data.frame(solved$res[c("sparse", "fallback", "rounds", "auction")])))
}
if (nzchar(out <- Sys.getenv("ASSIGN_BENCH_OUT"))) saveRDS(a[c("rate", "success", "confidence", "details")], out)
