# The saved battery results (tests/testthat/fixtures/battery-results.rds; the releases made
# by detanon at commit 406d332, before the battery's ties were handled as groups, the
# results re-made when the release form began to keep means and signs): the pairs it was run
# on (the releases are saved too, so that a change of a masking method does not move
# them) and the battery's calls. Every optimisation of the attacks must give the same
# tables and the same per-record results.
battery_saved_pairs <- function() {
  ti <- titanic_paper()[-1]
  set.seed(20261126)
  n <- 3000
  # tie-heavy: few distinct values, many duplicate records, one large stratum (the sparse
  # assignment above 2000 records per cell)
  tie <- data.frame(
    g = factor(sample(c("a", "b"), n, replace = TRUE, prob = c(0.8, 0.2))),
    x1 = round(stats::rnorm(n, 5, 2)), x2 = sample(c(1, 2, 3, 5, 8), n, replace = TRUE),
    y = factor(sample(c("p", "q", "r"), n, replace = TRUE))
  )
  list(
    titanic = list(original = ti, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                   sensitive = "Survived",
                   mask = function(d) anonymise(d, k = 3, vars = c("Age", "Fare"),
                                                strata = c("Pclass", "Sex", "Family"))),
    titanic_mdav = list(original = ti, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"),
                        sensitive = "Survived",
                        mask = function(d) anonymise_mdav(d, k = 3, vars = c("Age", "Fare"),
                                                          strata = c("Pclass", "Sex"))),
    ties = list(original = tie, vars = c("x1", "x2"), strata = "g", sensitive = "y",
                mask = function(d) anonymise(d, k = 3, vars = c("x1", "x2"), strata = "g",
                                             check_identifiers = FALSE)),
    ties_keyed = list(original = tie, vars = c("x1", "x2"), strata = "g", sensitive = "y",
                      mask = function(d) anonymise_keyed(d, k = 3, vars = c("x1", "x2"), strata = "g",
                                                         key = "fixture-key-of-the-battery-01", size = 10,
                                                         format = "none", noise = FALSE,
                                                         check_identifiers = FALSE))
  )
}

# The battery on a saved pair: its table and, per attack, the per-record results.
battery_saved_run <- function(p, masked, nthreads = 1L) {
  b <- risk_battery(p$original, masked, vars = p$vars, strata = p$strata, sensitive = p$sensitive,
                    seed = 7, nthreads = nthreads)
  list(table = as.data.frame(b),
       records = lapply(b$attacks, function(a) a[c("success", "success_m", "confidence")]))
}
