# inst/scripts/adult-keps.R: the design, the height model, one run, and the stored results.

load_adult_script <- function() {
  path <- system.file("scripts", "adult-keps.R", package = "detanon")
  expect_true(nzchar(path))
  e <- new.env()
  sys.source(path, envir = e)
  e
}

test_that("the design and hierarchies are the paper's", {
  e <- load_adult_script()
  des <- e$adult_design()
  expect_equal(des$k, c(2, 5, 10, 20, 50, 100))
  expect_equal(des$epsilon, c(0.05, 0.5, 1, 2, 4, 8, 16))
  h <- e$adult_hierarchies(adult)
  expect_identical(unname(vapply(h, function(x) ncol(x$table), 1L)), c(5L, 2L, 2L, 3L))  # Table I
})

test_that("the synthetic height follows its table", {
  e <- load_adult_script()
  age <- rep(c(25, 45, 85), each = 4000)
  sex <- rep(c("Male", "Female"), 6000)
  ht <- e$adult_height(age, sex, seed = 1)
  t <- e$adult_height_table()
  m <- tapply(ht, list(age, sex), mean)
  expect_equal(unname(m["25", "Male"]), t$male[2], tolerance = 0.01)
  expect_equal(unname(m["85", "Female"]), t$female[8], tolerance = 0.01)
  expect_equal(sd(ht[age == 45 & sex == "Male"]), t$sd_male[1], tolerance = 0.05)
})

test_that("one run agrees with a direct computation, and the stored results are complete", {
  e <- load_adult_script()
  d <- e$adult_data()[1:3000, ]
  ec <- e$adult_classes(d, "ola", 10)
  v <- e$adult_one(d, ec, 2, seed = 5)
  set.seed(5)
  r <- anonymise_keps_with_key(d[c("height", ec$quasi)], epsilon = 2, vars = "height", classes = ec, confidence = 0.99)
  expect_equal(v[["rel_error"]], mean(abs(r$data$height - d$height[r$origin_row]) / d$height[r$origin_row]))
  expect_equal(v[["linking_risk"]], r$info$linking_risk)
  res <- readRDS(system.file("extdata", "adult_keps.rds", package = "detanon"))
  expect_identical(nrow(res$runs), 2L * 6L * 7L * res$reps)
  expect_identical(res$reps, 30L)
  expect_true(all(res$classes$suppression[res$classes$method == "ola"] <= 0.05))
})
