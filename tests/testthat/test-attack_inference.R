# attack_inference() against the slow transcription of helper-battery.R, and its C kernel
# (ffi_battery_neighbours in src/nn2_glue.c).

test_that("attack_inference equals brute force for categorical and numeric columns", {
  for (seed in 1:3) {
    bd <- battery_data(160, seed = seed)
    o <- bd$o; m <- bd$m
    m$g2 <- o$g2 <- sample(c("k", "l", NA), 160, TRUE) # a categorical sensitive column with NA
    m$g2[1:30] <- "k"
    for (keys in list(character(), "s")) {
      vars <- c("a", "b", "c")
      it <- intruder(vars = vars, strata = "g", keys = if (length(keys)) keys)
      v <- ref_view(o, m, vars, "g", keys)
      for (mm in c(1, 3, 10, 30)) {
        # categorical
        got <- attack_inference(o, m, sensitive = "g2", intruder = it, m = mm)
        want <- ref_inference(v, o$g2, m$g2, m = mm)
        ctrl <- ref_inference(v, o$g2, m$g2, m = mm, leave_out = TRUE)
        expect_equal(got$success, want$success)
        expect_equal(got$confidence, want$confidence)
        expect_equal(got$baseline, want$baseline)
        expect_equal(got$control_rate, mean(ctrl$success, na.rm = TRUE))
        expect_equal(got$n_attacked, sum(!is.na(o$g2)))
        una <- !is.na(want$confidence) & want$confidence == 1
        expect_equal(got$details$tcap, mean(want$success[una]))
        expect_equal(got$details$n_tcap, sum(una))
        # numeric, with a tolerance and exactly
        for (tol in c(0, 0.25)) {
          got <- attack_inference(o, m, sensitive = "y", intruder = it, m = mm, tolerance = tol)
          want <- ref_inference(v, o$y, m$y, m = mm, tol = tol * stats::sd(o$y))
          ctrl <- ref_inference(v, o$y, m$y, m = mm, tol = tol * stats::sd(o$y), leave_out = TRUE)
          expect_equal(got$success, want$success)
          expect_equal(got$confidence, want$confidence)
          expect_equal(got$baseline, want$baseline)
          expect_equal(got$control_rate, mean(ctrl$success))
          expect_equal(got$advantage, ref_advantage(mean(want$success), mean(ctrl$success)))
        }
      }
    }
  }
})

test_that("attack_inference with a share p of originals, and strata of 1", {
  bd <- battery_data(100, seed = 9)
  it <- intruder(vars = c("a", "b"), strata = "g", p = 0.3)
  got <- attack_inference(bd$o, bd$m, sensitive = "s", intruder = it, seed = 2)
  known <- detanon:::intruder_view(bd$o, bd$m, it, seed = 2)$known
  expect_equal(sum(known), 30L)
  # people with a missing sensitive value are not attacked
  expect_equal(!is.na(got$success), known & !is.na(bd$o$s))
  expect_true(any(known & is.na(bd$o$s)))
  want <- ref_inference(ref_view(bd$o, bd$m, c("a", "b"), "g", known = known), bd$o$s, bd$m$s)
  expect_equal(got$success, want$success)
  # the stratum of one ("p", row 1): the control leaves its only released record out
  it1 <- intruder(vars = c("a", "b"), strata = "g")
  one <- attack_inference(bd$o, bd$m, sensitive = "s", intruder = it1)
  expect_equal(one$success[1], as.numeric(bd$o$s[1] == bd$m$s[1]))
})

test_that("attack_inference on an unmasked release with one neighbour is always right", {
  set.seed(2)
  d <- data.frame(a = stats::rnorm(50), b = stats::rnorm(50), y = sample(c("p", "q"), 50, TRUE))
  got <- attack_inference(d, d, sensitive = "y", intruder = intruder(vars = c("a", "b"), strata = character()), m = 1)
  expect_equal(got$rate, 1)
  expect_equal(got$precision_top10, 1)
})

test_that("attack_inference reads a 0/1 or small whole-number column as categorical", {
  set.seed(3)
  d <- data.frame(a = stats::rnorm(80), g = sample(c("x", "y"), 80, TRUE), y = sample(0:1, 80, TRUE))
  m <- d
  m$a <- m$a + stats::rnorm(80, sd = 0.3)
  it <- intruder(vars = "a", strata = "g")
  auto <- attack_inference(d, m, sensitive = "y", intruder = it)
  want <- ref_inference(ref_view(d, m, "a", "g"), as.character(d$y), as.character(m$y))
  expect_equal(auto$success, want$success)
  expect_equal(auto$confidence, want$confidence)
  expect_false(is.na(auto$details$tcap))
  expect_equal(attack_inference(d, m, sensitive = "y", intruder = it, type = "categorical")$confidence, want$confidence)
  num <- attack_inference(d, m, sensitive = "y", intruder = it, type = "numeric", tolerance = 0)
  expect_equal(num$success, want$success)
  expect_true(is.na(num$details$tcap))
  d$s <- m$s <- letters[1:80 %% 3 + 1]
  expect_error(attack_inference(d, m, sensitive = "s", intruder = it, type = "numeric"), class = "detanon_error_column")
})

test_that("attack_inference refuses a sensitive column the intruder holds or that is missing", {
  bd <- battery_data(40, seed = 1)
  it <- intruder(vars = c("a", "b"), strata = "g", keys = "s")
  expect_error(attack_inference(bd$o, bd$m, sensitive = "s", intruder = it), class = "detanon_error_column")
  expect_error(attack_inference(bd$o, bd$m, sensitive = "a", intruder = it), class = "detanon_error_column")
  expect_error(attack_inference(bd$o, bd$m, sensitive = "nope", intruder = it), class = "detanon_error_column")
  expect_error(attack_inference(bd$o, bd$m, sensitive = c("y", "s"), intruder = it), class = "detanon_error_argument")
  expect_error(attack_inference(bd$o, bd$m, sensitive = "y", intruder = it, tolerance = -1), class = "detanon_error_argument")
})
