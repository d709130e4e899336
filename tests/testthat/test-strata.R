test_that("strata_table reproduces the paper's Table 2", {
  tab <- strata_table(titanic_paper(), c("Pclass", "Sex", "Family"), k = 3, sensitive = "Survived")
  # the paper's Table 2, as printed (frequency and survival ratio)
  expect_identical(tab$n, c(34L, 32L, 60L, 75L, 72L, 264L, 60L, 44L, 84L, 47L, 36L, 83L))
  expect_identical(tab$ratio, c("33/34", "29/32", "37/60", "25/75", "7/72", "32/264",
                                "58/60", "41/44", "35/84", "20/47", "10/36", "15/83"))
  expect_false(any(tab$below_k))
  expect_false(any(tab$uniform))
  expect_identical(as.character(tab$Sex[1:3]), rep("female", 3))
})

test_that("strata_table flags small and uniform strata, counts NA as a level", {
  d <- data.frame(g = c("a", "a", "a", "b", NA), s = c(1, 1, 1, 0, 1))
  tab <- strata_table(d, "g", k = 2, sensitive = "s")
  expect_identical(tab$n, c(3L, 1L, 1L))
  expect_identical(tab$below_k, c(FALSE, TRUE, TRUE))
  expect_identical(tab$uniform, c(TRUE, TRUE, TRUE))
  expect_output(print(tab), "3 strata, smallest has 1 records; 2 below k")
})

test_that("stratum ids do not depend on row order", {
  x <- data.frame(a = sample(c("x", "y", NA), 100, TRUE), b = sample(1:3, 100, TRUE))
  p <- sample(100)
  expect_identical(detanon:::stratum_ids(x, c("a", "b"))[p], detanon:::stratum_ids(x[p, ], c("a", "b")))
})

test_that("strata_table validates its arguments", {
  d <- titanic_paper()
  expect_snapshot(error = TRUE, {
    strata_table(d, "Nope")
    strata_table(d, "Sex", k = 0)
    strata_table(d, "Sex", sensitive = c("Survived", "Age"))
    strata_table(d, "Sex", sensitive = "Sex")
    strata_table(list(a = 1))
  })
})

test_that("stratum_keys() made once per stratum equals the key made row by row", {
  ref <- function(data, strata) {
    key <- function(v) {
      v <- detanon:::exact_values(v)
      ifelse(is.na(v), "\001", paste0("=", nchar(v, type = "bytes"), ":", v))
    }
    do.call(paste, c(lapply(data[strata], key), sep = "\r"))
  }
  set.seed(7)
  for (it in 1:100) {
    n <- sample(c(1:5, 60), 1)
    d <- data.frame(a = sample(c("x", "NA", NA), n, TRUE),
                    b = factor(sample(c("u", NA, "v"), n, TRUE), levels = c("v", "u", "w")),
                    c = sample(c(TRUE, NA), n, TRUE), e = sample(c(0.1 + 0.2, 0.3, NA, -0), n, TRUE))
    st <- sample(names(d), sample(1:4, 1))
    keys <- detanon:::stratum_keys(d, st)
    expect_identical(keys, ref(d, st))
    # the keys group the rows exactly as stratum_ids() does
    expect_identical(match(keys, unique(keys)), match(detanon:::stratum_ids(d, st), unique(detanon:::stratum_ids(d, st))))
  }
  expect_identical(detanon:::stratum_keys(data.frame(a = character()), "a"), character())
})

test_that("stratum_ids() numbers the occurring combinations 1..S in table() order (slow reference)", {
  ref_ids <- function(data, strata) {
    if (!nrow(data)) return(integer())
    codes <- lapply(data[strata], function(x) {
      if (is.factor(x)) ifelse(is.na(x), nlevels(x) + 1L, as.integer(x))
      else match(x, sort(unique(x), na.last = TRUE))
    })
    key <- do.call(paste, c(codes, sep = "\r"))
    u <- unique(as.data.frame(codes))
    u <- u[do.call(order, rev(as.list(u))), , drop = FALSE]
    match(key, do.call(paste, c(as.list(u), sep = "\r")))
  }
  set.seed(7)
  for (n in c(0, 1, 2, 3, 50, 400)) {
    d <- data.frame(
      f = factor(sample(c("x", "y", NA), n, TRUE), levels = c("w", "x", "y", "z")), # unused levels
      c = sample(c("b", "a", NA), n, TRUE), l = sample(c(TRUE, FALSE), n, TRUE),
      w = sample(c(3, 10, 1e6), n, TRUE), stringsAsFactors = FALSE
    )
    d$big <- factor(sample(1:2, n, TRUE), levels = 1:1000)
    for (s in list("f", "c", "w", "big", c("f", "c"), c("big", "w", "l"), c("c", "f", "l", "w")))
      expect_identical(detanon:::stratum_ids(d, s), ref_ids(d, s), info = paste(n, paste(s, collapse = ",")))
  }
})

test_that("exact_values() keeps distinct values apart and equal values together", {
  ev <- detanon:::exact_values
  expect_false(ev(0.1 + 0.2) == ev(0.3))
  expect_identical(ev(c(1L, NA)), ev(c(1, NA)))
  expect_identical(ev(0.3), "0.3")
  expect_identical(ev(-0), ev(0))
  expect_identical(ev(factor("a b")), ev("a b"))
  expect_identical(ev(c(NA, NaN)), c(NA, "NaN"))
  x <- as.POSIXct("2024-01-01", tz = "UTC") + c(0, 1e-6)
  expect_false(anyDuplicated(ev(x)) > 0L)
  skip_if_not_installed("bit64")
  expect_identical(ev(bit64::as.integer64(c("9007199254740993", "9007199254740992"))),
                   c("9007199254740993", "9007199254740992"))
})
