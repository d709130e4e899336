# The standard's example (ISB 1523, section 6.4.1): "The following record-level data set
# exhibits 3-anonymity"
nhs_example <- function() {
  data.frame(
    record = 1:13,
    age_range = c("0 to 10", "20 to 35", "0 to 10", "51 to 65", "20 to 35", "51 to 65", "0 to 10",
                  "20 to 35", "51 to 65", "20 to 35", "20 to 35", "20 to 35", "0 to 10"),
    gender = c("M", "F", "M", "F", "M", "F", "M", "F", "F", "F", "M", "M", "M"),
    icd10 = "F106", stringsAsFactors = FALSE
  )
}

kanon_ref <- function(data, keys, k) {
  key <- do.call(paste, c(lapply(data[keys], function(x) ifelse(is.na(x), "<NA>", as.character(x))), sep = "\r"))
  sizes <- table(key)
  list(min = min(sizes), n_small = sum(sizes < k), affected = sum(sizes[sizes < k]))
}

test_that("the standard's example table is 3-anonymous and not 4-anonymous", {
  d <- nhs_example()
  r3 <- kanon_check(d, c("age_range", "gender", "icd10"), k = 3)
  expect_true(r3$conforms)
  expect_equal(r3$min_size, 3L)
  expect_equal(r3$n_classes, 4L)
  expect_equal(nrow(r3$small), 0L)
  r4 <- kanon_check(d, c("age_range", "gender", "icd10"), k = 4)
  expect_false(r4$conforms)
  expect_equal(r4$n_small, 3L)
  expect_equal(r4$n_affected, 9L)
  expect_equal(r4$share_affected, 9 / 13)
  expect_equal(r4$small$n, c(3L, 3L, 3L))
  expect_setequal(paste(r4$small$age_range, r4$small$gender),
                  c("20 to 35 F", "51 to 65 F", "20 to 35 M"))
  expect_output(print(r4), "NOT 4-anonymous: 3 classes below k hold 9 records")
  expect_output(print(r3), "verdict: 3-anonymous")
  # adding the record number as a key breaks it: every class has one record
  expect_equal(kanon_check(d, c("record", "gender"), k = 2)$n_affected, 13L)
})

test_that("kanon_check() agrees with a slow reference on random and adversarial data", {
  set.seed(7)
  for (it in 1:30) {
    n <- sample(c(1, 2, 5, 50, 200), 1)
    d <- data.frame(a = sample(c("x", "y", NA), n, TRUE), b = sample(1:4, n, TRUE),
                    c = factor(sample(c("u", "v"), n, TRUE), levels = c("u", "v", "w")),
                    l = sample(c(TRUE, FALSE, NA), n, TRUE))
    keys <- sample(names(d), sample(1:4, 1))
    k <- sample(1:6, 1)
    res <- kanon_check(d, keys, k)
    ref <- kanon_ref(d, keys, k)
    expect_equal(res$min_size, ref$min)
    expect_equal(res$n_small, ref$n_small)
    expect_equal(res$n_affected, ref$affected)
    expect_equal(res$conforms, ref$n_small == 0)
    expect_equal(sum(res$small$n), ref$affected)
  }
  # row order does not matter
  d <- titanic_paper()
  a <- kanon_check(d, c("Pclass", "Sex", "Family"), 40)
  b <- kanon_check(d[rev(seq_len(nrow(d))), ], c("Pclass", "Sex", "Family"), 40)
  expect_identical(a, b)
})

test_that("kanon_check() handles zero rows, constant keys and tibbles", {
  d <- nhs_example()
  expect_false(kanon_check(d[0, ], "gender", 3)$conforms)
  expect_silent(kanon_check(d[0, ], c("gender", "age_range"), 3))
  expect_output(print(kanon_check(d[0, ], "gender", 3)), "no records")
  expect_true(kanon_check(d, "icd10", 13)$conforms)
  expect_false(kanon_check(d, "icd10", 14)$conforms)
  skip_if_not_installed("tibble")
  expect_equal(kanon_check(tibble::as_tibble(d), "gender", 7)$n_small, 1L)
})

test_that("kanon_check() rejects bad input", {
  d <- nhs_example()
  expect_error(kanon_check(as.matrix(d), "gender"), "`data` must be a data frame")
  expect_error(kanon_check(d, "sex"), "`strata` names columns that are not in the data: `sex`")
  expect_error(kanon_check(d, "gender", k = 0), "`k` must be a single whole number >= 1")
  expect_error(kanon_check(d, "gender", k = 2.5), "`k` must be a single whole number")
  expect_error(kanon_check(d, character()), "`strata` is empty")
  expect_error(kanon_check(data.frame(x = 1:3), NULL), "`strata` is empty")
})

test_that("kanon_check() agrees with sdcMicro's frequency counts on complete keys", {
  skip_if_not_installed("sdcMicro")
  d <- titanic_paper()
  d$Age5 <- generalise_bands(d$Age, width = 5)
  keys <- c("Pclass", "Sex", "Family", "Age5")
  x <- as.data.frame(lapply(d[keys], as.integer))
  fk <- sdcMicro::freqCalc(x, keyVars = keys)$fk
  for (k in c(2, 3, 5)) {
    res <- kanon_check(d, keys, k)
    expect_equal(res$n_affected, sum(fk < k))
    expect_equal(res$min_size, min(fk))
  }
})
