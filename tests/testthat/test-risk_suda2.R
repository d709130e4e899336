# risk_suda2(): the MSU search (src/suda2.c) against the brute-force reference
# (helper-suda2.R) and against sdcMicro's suda2().

expect_suda_ref <- function(x, strata = names(x), f = 0.01) {
  got <- risk_suda2(x, strata, dis_fraction = f)
  ref <- ref_suda2(x[strata])
  expect_identical(got$score, ref$score)
  expect_equal(unname(got$contribution), ref$share, tolerance = 1e-14)
  expect_identical(got$n_pairs, as.integer(ref$n_pairs))
  expect_identical(got$n_unique, as.integer(ref$n_unique))
  expect_equal(got$dis_score, ref_dis(ref$score, ref$n_pairs, length(strata), f), tolerance = 1e-14)
  invisible(got)
}

test_that("the MSU search equals the brute-force reference on random data", {
  set.seed(20261126)
  for (it in 1:150) {
    n <- sample(1:30, 1)
    m <- sample(1:6, 1)
    x <- as.data.frame(lapply(seq_len(m), function(j) sample(seq_len(sample(1:4, 1)), n, TRUE)))
    names(x) <- paste0("v", seq_len(m))
    if (it %% 3 == 0) x[matrix(runif(n * m) < 0.2, n)] <- NA
    expect_suda_ref(x)
  }
})

test_that("the MSU search equals the reference on adversarial data", {
  # all records equal: no MSU
  x <- data.frame(a = rep(1, 6), b = rep("x", 6), c = rep(TRUE, 6))
  s <- expect_suda_ref(x)
  expect_true(all(s$score == 0) && all(s$dis_score == 0))
  expect_identical(s$attribute_contributions$contribution, c(0, 0, 0))
  # all records unique on every key: every key is a 1-MSU of weight (m - 1)!
  x <- data.frame(a = 1:7, b = letters[7:1], c = factor(11:17), d = (1:7) * 2)
  s <- expect_suda_ref(x)
  expect_identical(s$score, rep(4 * factorial(3), 7))
  # one record: each key is an MSU
  s <- expect_suda_ref(data.frame(a = 1, b = 2, c = 3))
  expect_identical(s$score, 3 * factorial(2))
  s <- expect_suda_ref(data.frame(a = 1, b = NA, c = 3))
  expect_identical(s$score, 2 * factorial(2))
  # ties: pairs and triples of equal records, one key
  x <- data.frame(a = c(1, 1, 2, 2, 2, 3))
  expect_identical(expect_suda_ref(x)$score, c(0, 0, 0, 0, 0, 1))
  # missing values match nothing, not even each other
  x <- data.frame(a = c(1, 1, NA, NA, 2), b = c(NA, 5, 5, NA, 5), c = c(1, 1, 1, 1, 1))
  expect_suda_ref(x)
  x <- data.frame(a = c(NA, NA, NA), b = c(NA, NA, NA))
  expect_identical(expect_suda_ref(x)$score, c(0, 0, 0))
  # two values on exactly the same records (sdcMicro's "correlated" items)
  x <- data.frame(a = c(1, 1, 2, 2, 3, 3), b = c(5, 5, 6, 6, 7, 8), c = c(1, 2, 1, 2, 1, 1))
  expect_suda_ref(x)
  # a wide set of keys
  set.seed(3)
  x <- as.data.frame(matrix(sample(1:2, 40 * 9, TRUE), 40))
  expect_suda_ref(x)
})

test_that("the MSU search equals the reference on keys with one value, all missing, or many levels", {
  set.seed(37)
  # a key with one value is in no MSU, but weighs in m
  x <- data.frame(a = rep("k", 12), b = sample(1:3, 12, TRUE), c = sample(c("p", "q"), 12, TRUE))
  s <- expect_suda_ref(x)
  expect_identical(s$contribution[, "a"], rep(0, 12))
  # a key missing everywhere
  x$a <- NA
  expect_suda_ref(x)
  # equal records, some with the same missing values: none of them has an MSU
  x <- data.frame(a = c(1, 1, 2, 2, 3, 4), b = c(NA, NA, 5, 5, 6, 6), c = c(7, 7, NA, NA, 8, 8))
  s <- expect_suda_ref(x)
  expect_identical(s$score[1:4], rep(0, 4))
  # more key bits than fit one 64-bit word (the kernel's other grouping), with equal records
  x <- as.data.frame(matrix(sample(1:40, 40 * 13, TRUE), 40))
  x[36:40, ] <- x[1:5, ]
  n_levels <- vapply(x, function(z) length(unique(z)), 1)
  expect_gt(sum(ceiling(log2(n_levels + 1))), 64)
  s <- expect_suda_ref(x)
  expect_identical(s$score[c(1:5, 36:40)], rep(0, 10))
})

test_that("whole numbers, other numbers, text and factors coding the same keys give the same result", {
  set.seed(41)
  n <- 300
  x <- data.frame(a = sample(c(-3L, 0L, 2L, 9L), n, TRUE), b = sample(c(1e9, 2e9, 5), n, TRUE),
                  c = sample(1:6, n, TRUE))
  x[matrix(runif(n * 3) < 0.1, n)] <- NA
  s <- risk_suda2(x, names(x), missing = 9)
  # integers, whole doubles (counted) and doubles too far apart (matched) against text
  y <- data.frame(a = as.double(x$a), b = x$b, c = as.character(x$c))
  sy <- risk_suda2(y, names(y), missing = 9)
  z <- data.frame(a = factor(x$a, levels = c(9, 2, 0, -3, 4)), b = format(x$b), c = x$c + 0.5)
  z$b[is.na(x$b)] <- NA
  sz <- risk_suda2(z, names(z), missing = 9)
  for (o in list(sy, sz)) {
    expect_identical(o$score, s$score)
    expect_identical(o$contribution, s$contribution)
    expect_identical(o$attribute_contributions, s$attribute_contributions)
  }
  lc <- s$attribute_level_contributions
  expect_identical(lc$attribute[lc$variable == "a"], c("-3", "0", "2"))
  expect_identical(lc$attribute[lc$variable == "b"], c("5", "1e+09", "2e+09"))
  expect_identical(sz$attribute_level_contributions$attribute[lc$variable == "a"], c("2", "0", "-3"))
  x$a[x$a == 9] <- NA
  expect_identical(risk_suda2(x, names(x))$score, s$score)
})

test_that("risk_suda2() gives the saved results of the kernel before its rebuild", {
  # fixtures/suda2-results.rds: made by detanon at commit a6247a8 (helper-suda2.R)
  want <- readRDS(test_path("fixtures", "suda2-results.rds"))
  calls <- suda2_fixture_calls()
  expect_named(want, names(calls))
  for (nm in names(calls)) expect_identical(calls[[nm]](), want[[nm]], info = nm)
})

test_that("values listed in `missing` are missing values", {
  x <- data.frame(a = c(1, -999, 2, 2), b = c(3, 3, -999, 4), c = c(1, 1, 2, 2))
  y <- x
  y[y == -999] <- NA
  expect_identical(risk_suda2(x, missing = -999, strata = names(x))$score,
                   risk_suda2(y, names(y))$score)
  f <- data.frame(a = factor(c("u", "?", "v", "v")), b = c("p", "p", "q", "?"))
  g <- f
  g$a[g$a == "?"] <- NA
  g$b[g$b == "?"] <- NA
  expect_identical(risk_suda2(f, c("a", "b"), missing = "?")$score, risk_suda2(g, c("a", "b"))$score)
})

test_that("scores do not depend on the row order, key order or value coding", {
  set.seed(7)
  x <- data.frame(a = sample(1:3, 60, TRUE), b = sample(letters[1:4], 60, TRUE),
                  c = sample(c(TRUE, FALSE), 60, TRUE), d = sample(1:5, 60, TRUE))
  s <- risk_suda2(x, names(x))
  p <- sample(60)
  sp <- risk_suda2(x[p, ], names(x))
  expect_identical(sp$score, s$score[p])
  expect_identical(sp$dis_score, s$dis_score[p])
  so <- risk_suda2(x, c("d", "b", "a", "c"))
  expect_identical(so$score, s$score)
  expect_equal(so$contribution[, names(x)], s$contribution)
  x2 <- x
  x2$a <- factor(x2$a, levels = 3:1)
  x2$b <- toupper(x2$b)
  expect_identical(risk_suda2(x2, names(x2))$score, s$score)
})

test_that("scores equal the published examples", {
  tab <- data.frame(age = c(rep("20s", 7), "60s"),
                    gender = c(rep("male", 4), rep("female", 3), "male"),
                    income = c("50k+", "50k+", rep("50k-", 6)),
                    education = c(rep("highschool", 4), "university", "highschool", "middleschool",
                                  "university"))
  expect_identical(risk_suda2(tab, names(tab))$score[5:8], c(4, 2, 6, 8))
  d <- data.frame(Residence = c("Urban", "Urban", "Urban", "Urban", "Rural", "Urban", "Urban",
                                "Urban", "Urban", "Urban"),
                  Gender = c("Female", "Female", "Female", "Male", "Female", "Male", "Female",
                             "Male", "Female", "Female"),
                  Education = c("Secondary incomplete", "Secondary incomplete", "Primary incomplete",
                                "Secondary complete", "Secondary complete", "Secondary complete",
                                "Primary complete", "Post-secondary", "Secondary incomplete",
                                "Secondary incomplete"),
                  Labor = c("Employed", "Employed", "Non-LF", "Employed", "Unemployed",
                            "Employed", "Non-LF", "Unemployed", "Non-LF", "Non-LF"))
  expect_identical(risk_suda2(d, names(d))$score, c(0, 0, 6, 0, 12, 0, 6, 10, 0, 0))
})

expect_same_as_sdcmicro <- function(x, strata, f = 0.01, contributions = TRUE) {
  s <- suppressWarnings(sdcMicro::suda2(x, variables = strata, DisFraction = f))
  d <- risk_suda2(x, strata, dis_fraction = f)
  expect_identical(d$score, s$score)
  # sdcMicro computes part of the DIS formula in single precision (its DIS fraction and
  # the term T): the scores agree to float rounding, about 1e-7 relative
  expect_equal(d$dis_score, s$disScore, tolerance = 1e-6)
  pos <- s$disScore > 0
  expect_lt(max(abs(d$dis_score[pos] / s$disScore[pos] - 1)), 3e-7)
  expect_identical(d$dis_score == 0, s$disScore == 0)
  if (contributions) {
    expect_equal(unname(d$contribution), unname(as.matrix(s$contributionPercent)), tolerance = 1e-12)
    expect_equal(d$attribute_contributions$contribution, s$attribute_contributions$contribution,
                 tolerance = 1e-12)
    lc <- s$attribute_level_contributions
    expect_identical(d$attribute_level_contributions$variable, lc$variable)
    expect_identical(d$attribute_level_contributions$attribute, as.character(lc$attribute))
    # sdcMicro gives NaN for the values of a key that is in no MSU; detanon gives 0
    expect_equal(d$attribute_level_contributions$contribution,
                 ifelse(is.nan(lc$contribution), 0, lc$contribution), tolerance = 1e-12)
  }
  invisible(d)
}

test_that("scores and contributions equal sdcMicro's suda2() on its test data", {
  skip_if_not_installed("sdcMicro")
  env <- new.env()
  utils::data("testdata", "francdat", package = "sdcMicro", envir = env)
  td <- env$testdata
  d <- expect_same_as_sdcmicro(td, c("urbrur", "water", "sex", "age"))
  expect_identical(d$n_unique, 330L)
  expect_same_as_sdcmicro(td, c("urbrur", "water", "sex", "age", "roof"))
  expect_same_as_sdcmicro(td, c("urbrur", "water", "sex", "age", "roof", "relat"), f = 0.05)
  expect_same_as_sdcmicro(td, c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex"))
  expect_same_as_sdcmicro(env$francdat, c("Key1", "Key2", "Key3", "Key4"))
  # and the reference on the 4 keys (a slice, to keep it quick)
  expect_suda_ref(td[seq(1, 4580, by = 23), c("urbrur", "water", "sex", "age")])
})

test_that("scores equal sdcMicro's suda2() on random data with missing values", {
  skip_if_not_installed("sdcMicro")
  set.seed(11)
  for (it in 1:40) {
    n <- sample(5:200, 1)
    m <- sample(3:7, 1)
    x <- as.data.frame(lapply(seq_len(m), function(j) sample(seq_len(sample(2:6, 1)), n, TRUE)))
    names(x) <- paste0("v", seq_len(m))
    if (it %% 2 == 0) x[matrix(runif(n * m) < 0.1, n)] <- NA
    # sdcMicro's per-record contributions miss the keys of MSUs built from two values on
    # exactly the same records; its scores do not
    expect_same_as_sdcmicro(x, names(x), contributions = FALSE)
  }
})

test_that("the print method fits 80 columns", {
  d <- data.frame(age = c("20s", "20s", "20s", "30s", "30s", "60s"),
                  sex = c("m", "m", "f", "f", "f", "m"), job = c("a", "a", "b", "b", "c", "a"))
  out <- capture.output(print(risk_suda2(d, names(d))))
  expect_true(all(nchar(out) <= 80))
  expect_match(out[1], "SUDA2 on age, sex, job")
})

test_that("bad input is refused with classed errors naming the argument", {
  d <- data.frame(a = 1:3, b = c("x", "y", "y"), z = I(list(1, 2, 3)))
  expect_error(risk_suda2(d, "q"), class = "detanon_error_column")
  expect_error(risk_suda2(d, "a", dis_fraction = 0), class = "detanon_error_argument")
  expect_error(risk_suda2(d, "a", missing = list(1)), class = "detanon_error_argument")
  expect_snapshot(error = TRUE, {
    risk_suda2(list(a = 1), "a")
    risk_suda2(d, c("a", "q"))
    risk_suda2(d, character())
    risk_suda2(d, "a", dis_fraction = 1.5)
    risk_suda2(d, "a", missing = list(1))
    risk_suda2(d, "z")
  })
  wide <- as.data.frame(matrix(1L, 2, 65))
  expect_snapshot(error = TRUE, risk_suda2(wide, names(wide)))
})
