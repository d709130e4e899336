# inst/scripts/sensitivity.R: the design, one data set's metrics, and the stored results.

load_script <- function() {
  path <- system.file("scripts", "sensitivity.R", package = "detanon")
  expect_true(nzchar(path))
  e <- new.env()
  sys.source(path, envir = e)
  e
}

test_that("the design is the paper's", {
  e <- load_script()
  des <- e$sensitivity_design()
  expect_equal(des$k[des$design == "k"], c(3, 5, 7, 10, 15, 20, 25, 30, 35, 40, 46))
  expect_true(all(des$n[des$design == "k"] == 500))
  expect_equal(des$n[des$design == "n"], c(50, 100, 200, 500, 1000, 1500, 2000, 2500, 3000))
  expect_true(all(des$k[des$design == "n"] == 5))
  # the largest k equals the smallest stratum at n = 500, and k = 5 fits n = 50
  expect_equal(min(table(simulate_ncds(500, seed = 1)[c("Sex", "Smoker")])), 46L)
  expect_equal(min(table(simulate_ncds(50, seed = 1)[c("Sex", "Smoker")])), 5L)
})

test_that("one data set's metrics agree with a direct computation", {
  e <- load_script()
  v <- e$sensitivity_one(200, 5, seed = 11)
  expect_named(v, c("U", paste0("delta_", c("Glucose", "HDL", "Height", "Weight")),
                    paste0("diff_", c("(Intercept)", "Sex1", "Smoker1", "HDL", "Height", "Weight")),
                    "risk1", "risk2"))
  d <- simulate_ncds(200, seed = 11)
  m <- anonymise(d, k = 5, vars = c("Glucose", "HDL", "Height", "Weight"), strata = c("Sex", "Smoker"),
                 format = "none", check_identifiers = FALSE)
  # delta by its definition: mean squared change over the variance
  for (x in c("Glucose", "HDL", "Height", "Weight")) {
    expect_equal(v[[paste0("delta_", x)]],
                 mean((d[[x]] - m[[x]])^2) / stats::var(d[[x]]), tolerance = 1e-6)
  }
  # standardised coefficient difference by its definition
  f <- Glucose ~ Sex + Smoker + HDL + Height + Weight
  s_or <- summary(stats::lm(f, d))$coefficients
  b_an <- stats::coef(stats::lm(f, m))
  expect_equal(unname(v[grep("^diff_", names(v))]),
               unname(abs(s_or[, 1] - b_an) / s_or[, 2]), tolerance = 1e-8)
  expect_true(all(v[c("risk1", "risk2")] >= 0 & v[c("risk1", "risk2")] <= 1))
  expect_lte(v[["risk2"]], v[["risk1"]])
  expect_identical(e$sensitivity_one(200, 5, seed = 11), v)
})

test_that("a reduced run has the stored results' layout and summary", {
  e <- load_script()
  des <- e$sensitivity_design()[c(1, 12), ]
  res <- e$sensitivity_run(reps = 2L, design = des, progress = FALSE)
  expect_equal(nrow(res$results), 2L * 2L * 13L)
  sm <- e$sensitivity_summary(res)
  expect_equal(nrow(sm), 2L * 13L)
  expect_true(all(sm$count == 2L))
  one <- res$results[res$results$design == "k" & res$results$metric == "U", "value"]
  expect_equal(sm$mean[sm$design == "k" & sm$metric == "U"], mean(one))
  expect_equal(sm$sd[sm$design == "k" & sm$metric == "U"], stats::sd(one))
})

test_that("the stored results are complete and regenerable", {
  path <- system.file("extdata", "sensitivity.rds", package = "detanon")
  skip_if(!nzchar(path), "no stored sensitivity results")
  e <- load_script()
  res <- readRDS(path)
  des <- e$sensitivity_design()
  expect_equal(res$design, des)
  expect_equal(nrow(res$results), nrow(des) * res$reps * 13L)
  expect_false(anyNA(res$results$value))
  # regenerate one stored data set (the first at n = 50, k = 5) from its seed
  row <- which(des$design == "n" & des$n == 50)
  stored <- res$results[res$results$design == "n" & res$results$n == 50 & res$results$rep == 1L, ]
  expect_equal(stored$seed[1], 1000L * row + 1L)
  again <- e$sensitivity_one(50, 5, stored$seed[1])
  expect_equal(unname(again[stored$metric]), stored$value, tolerance = 1e-8)
})
