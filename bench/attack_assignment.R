# The sparse one-to-one assignment of attack_assignment() at scale: time, gap and rate.
# Usage: Rscript bench/attack_assignment.R [n] [strata] [rounds]
# Data: 4 continuous variables (log-normal income, normal, whole-number age, uniform) in
# `strata` strata, masked by anonymise(k = 3); the intruder holds every original.
# Measured (one core, a shared 2-core machine, rounds <= 10):
#   n = 1e5, 4 strata: 1.6 s, rate 0.838, gap 0 (proven optimal); risk_linkage() 0.2 s
#   n = 1e6, 4 strata: 25 s, rate 0.834, gap 5e-12 (proven optimal); anonymise() 2.4 s, risk_linkage() 2.2 s
library(detanon)
args <- commandArgs(TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 1e5
n_strata <- if (length(args) >= 2) as.integer(args[2]) else 4L
rounds <- if (length(args) >= 3) as.integer(args[3]) else 10L
set.seed(1)
d <- data.frame(income = stats::rlnorm(n, 10, 0.6), x = stats::rnorm(n),
                age = round(stats::runif(n, 18, 90)), u = stats::runif(n),
                g = factor(sample(seq_len(n_strata), n, replace = TRUE)))
tm <- system.time(masked <- anonymise(d, k = 3, vars = c("income", "x", "age", "u"), strata = "g"))
cat(sprintf("n = %g, %d strata: anonymise %.1f s\n", n, n_strata, tm[["elapsed"]]))
tm <- system.time(a <- attack_assignment(d, masked, rounds = rounds, control = FALSE, nthreads = 1))
det <- a$details
cat(sprintf("assignment (sparse, rounds <= %d): %.1f s; rate %.4f; cost %.6g, bound %.6g, gap %.3g (%.2g%% of the cost); %d records needed more candidates\n",
            rounds, tm[["elapsed"]], a$rate, det$cost, det$bound, det$gap, 100 * det$gap / det$cost, det$n_expanded))
tm <- system.time(l <- risk_linkage(d, masked, vars = c("income", "x", "age", "u"), strata = "g"))
cat(sprintf("nearest linkage (risk_linkage()) for comparison: %.1f s; rate %.4f\n", tm[["elapsed"]], l$rate))
