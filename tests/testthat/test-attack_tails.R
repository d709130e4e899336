# attack_tails(): the most outlying records and the extreme values, against plain-R
# transcriptions; the issue's figures of keyed releases with groups of 2 in the tails.

tail_vars <- c("Age", "Fare")
tail_strata <- c("Pclass", "Sex", "Family")
tail_key <- "a-secret-of-the-custodian-0f3c9"

# The outlying records: the n farthest from their stratum's mean, on the z-scale of the
# originals (mean and SD over all records).
ref_outlying <- function(d, vars, strata, n_tail) {
  z <- scale(as.matrix(d[vars]))
  st <- interaction(d[strata], drop = TRUE)
  cen <- apply(z, 2L, function(v) ave(v, st))
  dist <- sqrt(rowSums((z - cen)^2))
  sort(order(-dist, seq_len(nrow(d)))[seq_len(n_tail)])
}

# The nearest released record of the person's stratum is its own (ties shared).
ref_nearest_own <- function(d, masked, vars, strata, rows) {
  x <- as.matrix(d[vars])
  mu <- colMeans(x)
  sdv <- apply(x, 2L, sd)
  zo <- sweep(sweep(x, 2L, mu), 2L, sdv, "/")
  zm <- sweep(sweep(as.matrix(masked[vars]), 2L, mu), 2L, sdv, "/")
  st <- interaction(d[strata], drop = TRUE)
  vapply(rows, function(i) {
    cand <- which(st == st[i])
    d2 <- rowSums((zm[cand, , drop = FALSE] - matrix(zo[i, ], length(cand), ncol(zo), byrow = TRUE))^2)
    best <- cand[d2 == min(d2)]
    (i %in% best) / length(best)
  }, 0)
}

# Extreme values: the n largest and smallest of every variable, recovered when the own
# released value is within tol (relative); per record, the share of its extreme values.
ref_extremes <- function(d, masked, vars, n_ext, tol) {
  hit <- cnt <- numeric(nrow(d))
  for (v in vars) {
    x <- d[[v]]
    ext <- unique(c(order(-x, seq_along(x))[1:n_ext], order(x, seq_along(x))[1:n_ext]))
    cnt[ext] <- cnt[ext] + 1
    hit[ext] <- hit[ext] + (abs(masked[[v]][ext] - x[ext]) <= tol * abs(x[ext]))
  }
  ifelse(cnt > 0, hit / pmax(cnt, 1), NA)
}

# the narrower intruder of the transcriptions and of the issue's figures (strata only)
tail_it <- intruder(vars = tail_vars, strata = tail_strata)

keyed_titanic <- function(k, size, noise) {
  d <- titanic_paper()[-1]
  suppressMessages(anonymise_keyed(d, vars = tail_vars, strata = tail_strata, k = k, key = tail_key, size = size,
                                   noise = noise))
}

test_that("the outlying records and their re-identification agree with the transcription", {
  d <- titanic_paper()[-1]
  a <- keyed_titanic(2, 10, FALSE)
  att <- attack_tails(d, a, intruder = tail_it, part = "outliers", control = FALSE)
  rows <- ref_outlying(d, tail_vars, tail_strata, 10L)
  expect_equal(att$details$tail_rows, rows)
  expect_equal(which(!is.na(att$success)), rows)
  expect_equal(att$success[rows], ref_nearest_own(d, a, tail_vars, tail_strata, rows))
  # a variant: 25 outlying records of a kNN release
  b <- suppressMessages(anonymise(d, vars = tail_vars, strata = tail_strata, k = 3))
  att <- attack_tails(d, b, intruder = tail_it, part = "outliers", n_tail = 25, control = FALSE)
  rows <- ref_outlying(d, tail_vars, tail_strata, 25L)
  expect_equal(att$success[rows], ref_nearest_own(d, b, tail_vars, tail_strata, rows))
})

test_that("the extreme values recovered agree with the transcription", {
  d <- titanic_paper()[-1]
  a <- keyed_titanic(2, 10, FALSE)
  att <- attack_tails(d, a, intruder = tail_it, part = "extremes", control = FALSE)
  expect_equal(att$success, ref_extremes(d, a, tail_vars, 10L, 0.05))
  set.seed(4)
  n <- 200
  r <- data.frame(g = sample(c("a", "b"), n, TRUE), v1 = rlnorm(n), v2 = rnorm(n, 10))
  m <- suppressMessages(anonymise(r, vars = c("v1", "v2"), strata = "g", k = 3, check_identifiers = FALSE))
  att <- attack_tails(r, m, part = "extremes", n_extreme = 5, tolerance = 0.1, control = FALSE)
  expect_equal(att$success, ref_extremes(r, m, c("v1", "v2"), 5L, 0.1))
})

test_that("the issue's figures: keyed groups of 2 in the tails give the largest fares and oldest ages away", {
  d <- titanic_paper()[-1]
  a <- keyed_titanic(2, 10, FALSE)
  expect_equal(release_info(a)$counts$min_group, 2L)
  top <- order(-d$Fare)[1:10]
  old <- order(-d$Age)[1:10]
  lo <- attack_linkage(d, a, intruder = tail_it, direction = "original", control = FALSE)
  expect_gte(mean(lo$success[top]), 0.25)
  expect_lte(lo$rate, 0.1)
  expect_gte(sum(abs(a$Age[old] - d$Age[old]) <= 0.05 * d$Age[old]), 3L)
  expect_gt(attack_tails(d, a, intruder = tail_it, part = "outliers", control = FALSE)$rate, 0.3)
})

test_that("the tail limit: groups of at least 1 / tail records keep the tails below it", {
  d <- titanic_paper()[-1]
  a <- keyed_titanic(5, 10, TRUE)
  expect_gte(release_info(a)$counts$min_group, 5L)
  top <- order(-d$Fare)[1:10]
  old <- order(-d$Age)[1:10]
  lo <- attack_linkage(d, a, intruder = tail_it, direction = "original", control = FALSE)
  expect_lte(mean(lo$success[top]), 0.2)
  expect_lte(sum(abs(a$Age[old] - d$Age[old]) <= 0.05 * d$Age[old]), 2L)
  expect_lte(attack_tails(d, a, intruder = tail_it, part = "outliers", control = FALSE)$rate, 0.2)
  expect_lte(attack_tails(d, a, intruder = tail_it, part = "extremes", control = FALSE)$rate, 0.2)
})

test_that("the battery runs both parts by default, and the verdict of tune_release() bounds them by `tail`", {
  d <- titanic_paper()[-1]
  a <- keyed_titanic(2, 10, FALSE)
  bat <- risk_battery(d, a, intruder = tail_it, seed = 1)
  expect_true(all(c("tail_outliers", "tail_extremes") %in% names(bat$attacks)))
  v <- detanon:::tune_verdict(bat, list(worst = 0.5, top_m = 0.9, tail = 0.2))
  expect_false(v$pass)
  expect_match(v$fails, "^tail \\(tail_outliers")
  expect_equal(v$tail, max(bat$attacks$tail_outliers$rate, bat$attacks$tail_extremes$rate))
  # `worst` no longer counts the tails
  others <- setdiff(names(bat$attacks), c("tail_outliers", "tail_extremes"))
  expect_equal(v$worst, max(vapply(bat$attacks[others], `[[`, 0, "rate")))
  expect_true(detanon:::tune_verdict(bat, list(worst = 0.5, top_m = 0.9, tail = 0.9))$pass)
})

test_that("bad input is refused with a classed error naming the argument", {
  d <- titanic_paper()[-1]
  a <- keyed_titanic(2, 10, FALSE)
  expect_snapshot(error = TRUE, attack_tails(d, a, part = "middle"))
  expect_snapshot(error = TRUE, attack_tails(d, a, n_tail = 0))
  expect_snapshot(error = TRUE, attack_tails(d, a, part = "extremes", tolerance = -1))
  expect_snapshot(error = TRUE, tune_release(d, vars = tail_vars, strata = tail_strata, tail = 0))
})

test_that("the rows of the k smallest values equal a full order(), ties by row", {
  set.seed(31)
  for (rep in 1:30) {
    n <- sample(c(1, 2, 10, 500), 1)
    x <- sample(c(round(stats::rnorm(n), 1), rep(0, 3), -0))[seq_len(n)] # ties, 0 and -0
    if (rep %% 5 == 0) x[sample(n, 1)] <- NA
    if (rep %% 7 == 0) x[] <- 2 # constant
    for (k in unique(c(0L, 1L, min(n, 10L), n))) {
      expect_identical(detanon:::first_rows(x, k), order(x, seq_len(n))[seq_len(k)])
      expect_identical(detanon:::first_rows(-x, k), order(-x, seq_len(n))[seq_len(k)])
    }
  }
})
