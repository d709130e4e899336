# anonymise_stats(): exact mergeable sums and the exact order statistics (C kernels of
# fsum.c and mask.c) against slow obviously correct references.

acc_of <- function(x, centre = NULL) .Call(detanon:::C_ffi_acc_add, NULL, matrix(x), centre)
acc_merge <- function(a, b) .Call(detanon:::C_ffi_acc_merge, a, b, NULL, NULL)
acc_total <- function(a, e = 0L) .Call(detanon:::C_ffi_acc_round, a, as.integer(e))

# adversarial values: cancellation, huge and tiny magnitudes, subnormals, ties, signed zeros
adversarial <- function(n) {
  c(stats::rnorm(n), 1e300, -1e300, 1, 1e-300, 5e-324, -5e-324, 0, -0, rep(0.1, 5), 2^60, -2^60 + 1)
}

test_that("merged accumulators give col_stats()'s sums, means and SDs bit for bit", {
  set.seed(11)
  for (rep in 1:30) {
    x <- sample(adversarial(sample(0:200, 1)))
    if (rep %% 3 == 0) x <- x[abs(x) < 1e200] # SDs that do not overflow
    ref <- detanon:::col_stats(matrix(x))
    cuts <- sort(sample(0:length(x), 4, TRUE))
    parts <- split(x, findInterval(seq_along(x), cuts))
    a <- Reduce(acc_merge, lapply(parts, acc_of))
    m <- acc_total(a) / length(x)
    expect_identical(m, unname(ref$mean))
    a2 <- Reduce(acc_merge, lapply(parts, acc_of, centre = m))
    expect_identical(sqrt(acc_total(a2) / (length(x) - 1)), unname(ref$sd))
    # the exact sum, against the correctly rounded sum in long arithmetic for small sets
    if (all(abs(x) < 1e200) && all(x == 0 | abs(x) > 1e-200)) {
      expect_identical(acc_total(a), sum(as.numeric(gmp_free_sum(x))))
    }
  }
})

# a slow reference sum: Shewchuk's exact partials in plain R (non-overlapping), added from
# the largest, which rounds the exact total once for these data
gmp_free_sum <- function(x) {
  # sorted by magnitude, Shewchuk's two-sum in R: exact partials, then summed from the top
  partials <- numeric()
  for (v in x) {
    i <- 1L
    kept <- numeric()
    for (p in partials) {
      if (abs(v) < abs(p)) { t <- v; v <- p; p <- t }
      hi <- v + p
      lo <- p - (hi - v)
      if (lo != 0) kept <- c(kept, lo)
      v <- hi
    }
    partials <- c(kept, v)
  }
  total <- 0
  for (p in rev(partials)) total <- total + p # partials are non-overlapping: this rounds once
  total
}

test_that("adding a value n times equals adding n copies", {
  a <- acc_of(c(1.5, 2.25))
  b <- .Call(detanon:::C_ffi_acc_merge, a, NULL, 0.1, 7)
  expect_identical(acc_total(b), acc_total(acc_of(c(1.5, 2.25, rep(0.1, 7)))))
})

test_that("a scaled total is the correctly rounded sum of the scaled values", {
  set.seed(12)
  x <- stats::runif(50) * 1e-310 # subnormal
  e <- 1100L
  expect_identical(acc_total(acc_of(x), e), acc_total(acc_of(detanon:::times_pow2(x, e))))
})

test_that("the radix select gives sort()'s order statistics over any chunks", {
  set.seed(13)
  for (rep in 1:25) {
    x <- sample(c(adversarial(sample(1:300, 1)), sample(c(-1, 1, 2.5), 30, TRUE)))
    x <- x[x != 0 | 1 / x > 0] # R's sort() does not order -0 and +0
    n <- length(x)
    r <- sort(unique(c(1, n, sample(n, 3))))
    parts <- split(x, sample(1:3, n, TRUE))
    sweep <- function(visit) for (p in parts) visit(list(p, -p))
    got <- detanon:::radix_select(sweep, list(r, r))
    expect_identical(got[[1]], sort(x)[r])
    expect_identical(got[[2]], sort(-x)[r])
  }
})

test_that("medians over chunks are stats::median()", {
  set.seed(14)
  for (n in c(1, 2, 3, 10, 11, 200)) {
    x <- round(stats::rnorm(n), 1)
    parts <- split(x, sample(1:4, n, TRUE))
    got <- detanon:::medians_by_select(function(visit) for (p in parts) visit(list(p)), n)
    expect_identical(got, stats::median(x))
  }
})

test_that("the statistics do not depend on the chunking and hold no records", {
  d <- titanic_paper()[c("Age", "Fare", "Sex", "Pclass")]
  a <- anonymise_stats(list(d), vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = 3)
  set.seed(15)
  b <- anonymise_stats(unname(split(d, sample(1:9, nrow(d), TRUE))), vars = c("Age", "Fare"),
                       strata = c("Sex", "Pclass"), k = 3)
  strip <- function(s) {
    s$strata_table <- s$strata_table[c("key", "n", "keep")]
    s
  }
  expect_identical(strip(a)[setdiff(names(a), "template")], strip(b)[setdiff(names(b), "template")])
  ms <- detanon:::col_stats(as.matrix(d[c("Age", "Fare")]))
  expect_identical(a$mean, ms$mean)
  expect_identical(a$sd, ms$sd)
  expect_identical(nrow(a$template), 0L)
  expect_identical(sum(a$strata_table$n), 891)
})

test_that("unsupported policies are classed errors", {
  d <- titanic_paper()
  expect_error(anonymise_stats(list(d), vars = "Age", na = "mean_stratum"), class = "detanon_error_argument")
  expect_error(anonymise_stats(list(d), vars = "Age", small_strata = "merge"), class = "detanon_error_argument")
  expect_snapshot(anonymise_stats(list(d), vars = "Age", small_strata = "merge"), error = TRUE)
})
