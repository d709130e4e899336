# Inputs of the saved keyed releases (tests/testthat/fixtures/keyed-releases.rds, made by
# the keyed kernel before its rebuild for speed, detanon at commit 852db9f): the rebuilt
# kernel must give the same releases bit for bit. They are exact group means (noise = FALSE;
# the keyed noise of the default is tested in test-centroid_noise.R).
keyed_fixture_key <- "fixture-key-of-the-keyed-release-01"
keyed_fixture_calls <- function() {
  d <- titanic_paper()[-1]
  set.seed(20261126)
  n <- 1e4
  sim <- data.frame(
    g = factor(sample(c("a", "b", "c", "d"), n, replace = TRUE, prob = c(0.4, 0.3, 0.2, 0.1))),
    x1 = stats::rnorm(n), x2 = round(stats::rexp(n), 1), x3 = round(stats::runif(n, 20, 80))
  )
  list(
    titanic = function(nthreads = 1L) {
      anonymise_keyed(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 2,
                      key = keyed_fixture_key, size = 14, noise = FALSE, nthreads = nthreads)
    },
    titanic_keys = function(nthreads = 1L) {
      anonymise_keyed(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3,
                      key = keyed_fixture_key, size = 8, held = "Survived", format = "none",
                      noise = FALSE, nthreads = nthreads)
    },
    sim1e4 = function(nthreads = 1L) {
      anonymise_keyed(sim, vars = c("x1", "x2", "x3"), strata = "g", k = 3,
                      key = keyed_fixture_key, size = 10, format = "none", check_identifiers = FALSE,
                      noise = FALSE, nthreads = nthreads)
    }
  )
}
