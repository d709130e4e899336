# The one-to-one assignment of attack_assignment() at scale on plain and shared-centroid
# releases: CPU time, cost, bound, gap and rate.
# Usage: Rscript bench/attack_assignment.R [n] [release] [rounds]
#   release: plain (anonymise(k = 3)), mdav3 / mdav5 (anonymise_mdav(k, noise = TRUE, key)),
#   mdav3x (anonymise_mdav(k = 3) without noise: exact shared centroids),
#   keyed (anonymise_keyed(k = 3, key)), titanic (Titanic resampled to n rows, tie-heavy:
#   anonymise_mdav(k = 3, noise = TRUE, key) on Age and Fare within Pclass x Sex),
#   sim-plain / sim-mdav<k> / sim-mdav<k>n (bench/tune_steps.R's data: 3 rounded variables in 4
#   strata of n / 4; anonymise(k = 3), anonymise_mdav(k) exact, or noisy with a key as
#   tune_release() makes its MDAV candidates by default).
# Data (all but titanic): 4 continuous variables (log-normal income, normal, whole-number
# age, uniform) in 4 strata; the intruder holds every original. Peak memory: run under
# `/usr/bin/time -f %M`. Results: bench/results/assignment.txt.
library(detanon)
args <- commandArgs(TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 1e5
release <- if (length(args) >= 2) args[2] else "plain"
rounds <- if (length(args) >= 3) as.integer(args[3]) else 10L
set.seed(1)
key <- "bench-assignment-key-0123456789"
sim <- sub("^sim-", "", release)
if (sim != release) {
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
mask <- if (sim != release) {
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
tm <- system.time(a <- attack_assignment(d, masked, intruder = intruder(vars = vars, strata = strata),
                                         rounds = rounds, control = FALSE, nthreads = 1))
det <- a$details
cat(sprintf("assignment: %.2f s CPU (%.2f s elapsed); rate %.6f; cost %.10g, bound %.10g, gap %.3g; %d sparse cells; %d records needed more candidates\n",
            tm[["user.self"]] + tm[["sys.self"]], tm[["elapsed"]], a$rate, det$cost, det$bound, det$gap,
            det$n_sparse, det$n_expanded))
if (nzchar(out <- Sys.getenv("ASSIGN_BENCH_OUT"))) saveRDS(a[c("rate", "success", "confidence")], out)
