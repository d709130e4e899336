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
  expect_snapshot(anonymise_partitioned(list(d), vars = "Age", small_strata = "merge"), error = TRUE)
})

# ---- the stage functions check values, not only counts (issue 34) -----------------------

stage_data <- function(seed = 21) {
  set.seed(seed)
  d <- titanic_paper()[c("Age", "Fare", "Sex", "Pclass")]
  d$Age[sample(nrow(d), 40)] <- NA
  d
}

test_that("anonymise_stratum() refuses statistics of other data with the same stratum sizes", {
  d <- stage_data()
  st <- anonymise_stats(list(d), vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = 3, na = "median")
  women1 <- d$Sex == "female" & d$Pclass == 1
  # the data it was made of: fine, in any row order
  expect_s3_class(anonymise_stratum(d[rev(which(women1)), ], stats = st), "detanon_anonymise_piece")
  # the reported case: other data, the same counts (Fare values swapped between strata)
  other <- d
  men3 <- which(d$Sex == "male" & d$Pclass == 3)
  other$Fare[c(which(women1)[1], men3[1])] <- other$Fare[c(men3[1], which(women1)[1])]
  expect_error(anonymise_stratum(other[women1, ], stats = st),
               "`data` holds other values than the statistics in `stats` were made of, in stratum `Pclass=1, Sex=female`|`data` holds other values than the statistics in `stats` were made of, in stratum `Sex=female, Pclass=1`",
               class = "detanon_error_data")
  # a variant: one value one ulp away, a missing value filled in, a column swap
  one_ulp <- d
  r <- which(women1)[2]
  one_ulp$Fare[r] <- one_ulp$Fare[r] * (1 + .Machine$double.eps)
  expect_error(anonymise_stratum(one_ulp[women1, ], stats = st), class = "detanon_error_data")
  filled <- d
  filled$Age[which(women1 & is.na(d$Age))[1]] <- 30
  if (any(women1 & is.na(d$Age))) expect_error(anonymise_stratum(filled[women1, ], stats = st), "other values")
  swapped <- d
  swapped[r, c("Age", "Fare")] <- d[r, c("Fare", "Age")]
  expect_error(anonymise_stratum(swapped[women1, ], stats = st), "other values")
  # -0 is 0 (anonymise() does not tell them apart)
  zero <- d
  zero$Fare[zero$Fare == 0 & !is.na(zero$Fare)] <- -0
  pieces <- lapply(split(zero, list(zero$Sex, zero$Pclass), drop = TRUE), anonymise_stratum, stats = st)
  expect_length(pieces, 6L)
})

test_that("anonymise_stats() refuses a source that returns other records when read again", {
  d <- stage_data()
  chunks <- unname(split(d, rep(1:3, length.out = nrow(d))))
  # reads after the first pass (the first chunk is read once before it) see one Fare
  # changed (the reported case), or two Fares
  # swapped between strata (the same counts and sums: a variant)
  for (change in c("value", "swap")) {
    reads <- 0L
    source <- function(i) {
      if (i == 1L) reads <<- reads + 1L
      if (i > length(chunks)) return(NULL)
      ch <- chunks[[i]]
      if (reads > 2L && i == 2L) {
        if (change == "value") {
          ch$Fare[1] <- ch$Fare[1] + 1
        } else {
          a <- which(ch$Sex == "female" & ch$Pclass == 1)[1]
          b <- which(ch$Sex == "male" & ch$Pclass == 3 & ch$Fare != ch$Fare[a])[1]
          ch$Fare[c(a, b)] <- ch$Fare[c(b, a)]
        }
      }
      ch
    }
    expect_error(anonymise_stats(source, vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = 3, na = "mean"),
                 "`chunks` gave other records when read again", class = "detanon_error_data")
  }
  # the same chunks each time: fine, and the statistics of the data in one piece
  same <- function(i) if (i <= length(chunks)) chunks[[i]]
  a <- anonymise_stats(same, vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = 3, na = "mean")
  b <- anonymise_stats(list(d), vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = 3, na = "mean")
  expect_identical(a$check, b$check)
})

test_that("anonymise_partitioned() refuses a strata_source whose values changed", {
  d <- stage_data()
  d$Age[is.na(d$Age)] <- 29
  chunks <- unname(split(d, rep(1:3, length.out = nrow(d))))
  args <- list(vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = 3, check_identifiers = FALSE, future = FALSE)
  key_of <- function(x) paste(x$Sex, x$Pclass)
  # an honest source gives anonymise()'s release (strata group by group)
  honest <- function(tab) d[key_of(d) %in% key_of(tab), ]
  out <- do.call(anonymise_partitioned, c(list(chunks, strata_source = honest), args))
  expect_identical(nrow(out), nrow(d))
  # the reported case: the source's values changed since the statistics
  changed <- function(tab) {
    x <- honest(tab)
    x$Age <- x$Age + 0.5
    x
  }
  expect_error(do.call(anonymise_partitioned, c(list(chunks, strata_source = changed), args)),
               "other values than the statistics", class = "detanon_error_worker")
  # a variant: each stratum's records and values, but the Fares moved to other records of
  # the stratum (the same sums of each column)
  shifted <- function(tab) {
    x <- honest(tab)
    x$Fare <- x$Fare[c(seq_len(nrow(x))[-1L], 1L)]
    x
  }
  expect_error(do.call(anonymise_partitioned, c(list(chunks, strata_source = shifted), args)),
               "other values than the statistics", class = "detanon_error_worker")
})

test_that("the record check numbers (C) are the slow reference's, on random and adversarial values", {
  set.seed(31)
  special <- c(0, -0, NA, NaN, Inf, -Inf, 5e-324, -5e-324, .Machine$double.xmax, 1, -1, 0.1, 2^53, 1e-300)
  for (rep in 1:20) {
    n <- sample(0:40, 1)
    p <- sample(1:4, 1)
    x <- matrix(sample(c(stats::rnorm(50), special), n * p, TRUE), n, p)
    got <- detanon:::record_checks(x)
    expect_identical(got, record_checks_ref(x))
    expect_true(all(got >= 0 & got < 2^20 & got == round(got)))
  }
  # -0 is 0; a value moved to another record or column changes the check
  expect_identical(detanon:::record_checks(matrix(c(-0, 1), 1)), detanon:::record_checks(matrix(c(0, 1), 1)))
  x <- matrix(c(1, 2, 3, 4), 2)
  expect_false(identical(sum(detanon:::record_checks(x)), sum(detanon:::record_checks(x[, 2:1]))))
  expect_false(identical(sum(detanon:::record_checks(x)), sum(detanon:::record_checks(cbind(x[, 1], x[2:1, 2])))))
})

test_that("the errors of the value checks are pinned", {
  d <- data.frame(g = rep(c("a", "b"), each = 5), x = c(1:10) / 4, y = c(10:1) / 8)
  st <- anonymise_stats(list(d), vars = c("x", "y"), strata = "g", k = 3)
  other <- d
  other$y[c(1, 6)] <- other$y[c(6, 1)]
  expect_snapshot(error = TRUE, anonymise_stratum(other[other$g == "a", ], stats = st))
  reads <- 0L
  source <- function(i) {
    if (i == 1L) reads <<- reads + 1L
    if (i > 1L) return(NULL)
    if (reads > 2L) other else d
  }
  expect_snapshot(error = TRUE, anonymise_partitioned(source, vars = c("x", "y"), strata = "g", k = 3,
                                                     strata_source = function(s) d, future = FALSE))
})
