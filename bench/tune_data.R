# The data of the benchmarks (bench/tune_steps.R, bench/tune_memory.R, bench/battery_ties.R,
# bench/recipe_many_k.R, bench/attack_assignment.R's tt-* releases), as bench/tune_scale.R makes them:
#   sim:     n records x 3 continuous variables, 4 strata;
#   titanic: Titanic resampled to n records (ages and fares jittered and rounded: tie-heavy).
# Returns list(d, vars, strata); draws from R's stream after set.seed(1).
tune_bench_data <- function(case, n) {
  set.seed(1)
  if (case == "titanic") {
    t0 <- titanic_paper()[-1]
    d <- t0[sample(nrow(t0), n, TRUE), ]
    d$Age <- round(pmax(0.5, d$Age + stats::rnorm(n, 0, 3)))
    d$Fare <- round(pmax(0, d$Fare * exp(stats::rnorm(n, 0, 0.2))), 2); rownames(d) <- NULL
    list(d = d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  } else {
    d <- data.frame(g = factor(rep(c("a", "b", "c", "d"), each = n / 4)), x1 = round(rnorm(n, 50, 10), 1),
                    x2 = round(rexp(n, 0.1), 1), x3 = round(runif(n, 20, 80)))
    list(d = d, vars = c("x1", "x2", "x3"), strata = "g")
  }
}
