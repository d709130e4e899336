# Determinism and privacy invariants on random data.
#
# Determinism: identical output across repeated runs, thread counts (1, 2) and row
# permutations (up to the permutation).
# Privacy: no original value of a masked variable appears anywhere in a released object:
# columns, attributes, row names, or the environments of function and formula components.

# Random data with ties, several strata of very different sizes (one large enough for the
# parallel code paths) and an unmasked integer column.
inv_data <- function(n = 6000, seed = 1) {
  set.seed(seed)
  g <- sample(c("a", "b", "c", "d"), n, replace = TRUE, prob = c(0.85, 0.1, 0.04, 0.01))
  d <- data.frame(
    g = g,
    h = sample(c(TRUE, FALSE), n, replace = TRUE),
    count = sample(0:9, n, replace = TRUE),
    x = stats::rnorm(n, 50, 10),
    y = stats::rexp(n) * 1000,
    z = round(stats::rnorm(n), 1), # many ties
    stringsAsFactors = FALSE
  )
  d$y[sample(n, n %/% 10)] <- d$y[1] # duplicated values
  d
}

# Undo a row permutation: rows of `out` (computed on data[perm, ]) back in data's order.
unpermute <- function(out, perm) {
  back <- out[order(perm), , drop = FALSE]
  rownames(back) <- NULL
  back
}
# release metadata without the fingerprint (which is tied to the row order by design)
meta <- function(x) {
  info <- attr(x, "detanon")
  info$fingerprint <- NULL
  info
}
plain <- function(x) {
  x <- as.data.frame(x)
  attr(x, "detanon") <- NULL
  rownames(x) <- NULL
  x
}

test_that("anonymise() is identical across runs, thread counts and row permutations", {
  d <- inv_data()
  run <- function(data, nt, ...) {
    anonymise(data, k = 5, vars = c("x", "y", "z"), strata = c("g", "h"), nthreads = nt,
              check_identifiers = FALSE, ...)
  }
  a1 <- run(d, 1L)
  expect_identical(run(d, 1L), a1)
  expect_identical(run(d, 2L), a1)
  set.seed(99)
  perm <- sample(nrow(d))
  ap <- run(d[perm, ], 2L)
  expect_identical(plain(unpermute(ap, perm)), plain(a1))
  expect_identical(meta(ap), meta(a1))
  # the masking did happen
  expect_false(any(a1$x == d$x))
})

test_that("anonymise() paths with imputation, suppression and merging are permutation-invariant", {
  d <- inv_data(n = 800, seed = 2)
  d$x[sample(800, 40)] <- NA
  d$rid <- seq_len(nrow(d))
  set.seed(7)
  perm <- sample(nrow(d))
  for (small in c("suppress", "merge")) {
    for (na in c("median", "mean_stratum", "complete")) {
      run <- function(data, nt) suppressMessages(
        anonymise(data, k = 12, vars = c("x", "y"), strata = c("g", "h"), na = na,
                  small_strata = small, nthreads = nt, check_identifiers = FALSE))
      a1 <- run(d, 1L)
      expect_identical(run(d, 2L), a1, info = paste(small, na))
      ap <- run(d[perm, ], 1L)
      # rows are dropped (complete, suppress) in both runs alike: compare by original row
      # (the release has no row names, `rid` is an unmasked column)
      key1 <- a1$rid
      keyp <- ap$rid
      expect_setequal(keyp, key1)
      expect_identical(plain(ap[order(keyp), ]), plain(a1[order(key1), ]), info = paste(small, na))
      expect_identical(meta(ap), meta(a1), info = paste(small, na))
    }
  }
})

test_that("anonymise_mdav() is identical across runs, thread counts and row permutations, on every path", {
  d <- inv_data()
  run <- function(data, nt) {
    anonymise_mdav(data, k = 5, vars = c("x", "y", "z"), strata = c("g", "h"), nthreads = nt,
                   check_identifiers = FALSE)
  }
  a1 <- run(d, 1L)
  expect_identical(run(d, 1L), a1)
  expect_identical(run(d, 2L), a1)
  set.seed(98)
  perm <- sample(nrow(d))
  ap <- run(d[perm, ], 2L)
  expect_identical(plain(unpermute(ap, perm)), plain(a1))
  expect_identical(meta(ap), meta(a1))
  expect_false(any(a1$x == d$x))
  d <- inv_data(n = 800, seed = 3)
  d$x[sample(800, 40)] <- NA
  d$rid <- seq_len(nrow(d))
  perm <- sample(nrow(d))
  for (small in c("suppress", "merge")) {
    for (na in c("median", "mean_stratum", "complete")) {
      run <- function(data, nt) suppressMessages(
        anonymise_mdav(data, k = 12, vars = c("x", "y"), strata = c("g", "h"), na = na,
                       small_strata = small, nthreads = nt, check_identifiers = FALSE))
      a1 <- run(d, 1L)
      expect_identical(run(d, 2L), a1, info = paste(small, na))
      ap <- run(d[perm, ], 1L)
      expect_setequal(ap$rid, a1$rid)
      expect_identical(plain(ap[order(ap$rid), ]), plain(a1[order(a1$rid), ]), info = paste(small, na))
      expect_identical(meta(ap), meta(a1), info = paste(small, na))
    }
  }
})

test_that("anonymise() output does not depend on the data frame class", {
  skip_if_not_installed("data.table")
  skip_if_not_installed("tibble")
  d <- inv_data(n = 500, seed = 3)
  run <- function(data) anonymise(data, k = 4, vars = c("x", "y"), strata = "g", check_identifiers = FALSE)
  a <- run(d)
  expect_identical(plain(run(tibble::as_tibble(d))), plain(a))
  expect_identical(plain(run(data.table::as.data.table(d))), plain(a))
})

test_that("risk_rmd(deterministic = TRUE) is identical across runs, threads and permutations", {
  d <- inv_data(n = 3000, seed = 4)
  m <- anonymise(d, k = 3, vars = c("x", "y"), strata = "g", check_identifiers = FALSE)
  run <- function(o, mm, nt) risk_rmd(o, mm, vars = c("x", "y"), w1 = 2, w2 = 0.05,
                                      deterministic = TRUE, nthreads = nt)
  r1 <- run(d, m, 1L)
  expect_gt(r1$n_risk1, 2048) # the parallel path of the neighbour counts is used
  expect_identical(run(d, m, 1L), r1)
  expect_identical(run(d, m, 2L), r1)
  set.seed(5)
  perm <- sample(nrow(d))
  rp <- run(d[perm, ], m[perm, ], 2L)
  expect_identical(sort(perm[rp$rows_risk1]), r1$rows_risk1)
  expect_identical(sort(perm[rp$rows_risk2]), r1$rows_risk2)
  expect_equal(rp$cov, r1$cov, tolerance = 1e-12)
})

test_that("risk_linkage() and risk_class_link() are identical across runs, threads and permutations", {
  d <- inv_data(n = 5000, seed = 6)
  m <- anonymise(d, k = 3, vars = c("x", "y", "z"), strata = "g", check_identifiers = FALSE)
  run <- function(o, mm, nt) risk_linkage(o, mm, vars = c("x", "y", "z"), strata = "g", nthreads = nt)
  l1 <- run(d, m, 1L)
  expect_identical(run(d, m, 1L), l1)
  expect_identical(run(d, m, 2L), l1)
  set.seed(8)
  perm <- sample(nrow(d))
  lp <- run(d[perm, ], m[perm, ], 2L)
  expect_equal(lp$rate, l1$rate, tolerance = 1e-14)
  expect_equal(lp$n_linked, l1$n_linked, tolerance = 1e-12)
  expect_equal(lp$by_stratum, l1$by_stratum, tolerance = 1e-14)

  c1 <- risk_class_link(d, m, vars = c("x", "y"), strata = "g")
  expect_identical(risk_class_link(d, m, vars = c("x", "y"), strata = "g"), c1)
  cp <- risk_class_link(d[perm, ], m[perm, ], vars = c("x", "y"), strata = "g")
  expect_identical(cp$linked[order(perm)], c1$linked)
  expect_identical(cp$n_linked, c1$n_linked)
})

test_that("equivalence_classes() and keps_error() are permutation-invariant", {
  d <- inv_data(n = 600, seed = 9)
  e1 <- equivalence_classes(d, k = 5, quasi = c("x", "y"), strata = "g")
  set.seed(10)
  perm <- sample(nrow(d))
  ep <- equivalence_classes(d[perm, ], k = 5, quasi = c("x", "y"), strata = "g")
  expect_identical(ep$classes, e1$classes)
  expect_identical(ep$row_class[order(perm)], e1$row_class)
  k1 <- keps_error(d, epsilon = c(1, 5), k = 5, vars = "z", quasi = c("x", "y"), strata = "g")
  kp <- keps_error(d[perm, ], epsilon = c(1, 5), k = 5, vars = "z", quasi = c("x", "y"), strata = "g")
  expect_equal(kp, k1, tolerance = 1e-14)
})

# ---- privacy --------------------------------------------------------------------------

# (reachable_values() and leaked_values() are in helper-privacy.R)

test_that("the leak detector finds original values in attributes, row names and environments", {
  d <- data.frame(x = c(1.2345678, 2.3456789, 3.4567891))
  expect_length(leaked_values(data.frame(x = 0), d, "x"), 0L)
  expect_length(leaked_values(structure(data.frame(x = 0), meta = list(a = d$x[2])), d, "x"), 1L)
  expect_length(leaked_values(data.frame(x = 0, row.names = format(d$x[1], digits = 15)), d, "x"), 1L)
  f <- local({ cache <- d$x; function() cache })
  expect_length(leaked_values(list(fun = f), d, "x"), 3L)
  fo <- local({ keep <- d; y ~ x })
  expect_length(leaked_values(list(model = fo), d, "x"), 3L)
  expect_length(leaked_values(list(txt = "value 2.3456789"), d, "x"), 0L)
  expect_length(leaked_values(list(txt = "2.3456789"), d, "x"), 1L)
  expect_length(leaked_values(list(lev = factor("3.4567891")), d, "x"), 1L)
})

test_that("anonymise() releases no original value of a masked variable, on every path", {
  d <- inv_data(n = 700, seed = 11)
  d$x[sample(700, 30)] <- NA
  for (small in c("suppress", "merge")) {
    for (na in c("median", "complete")) {
      out <- suppressMessages(anonymise(d, k = 12, vars = c("x", "y"), strata = c("g", "h"), na = na,
                                        small_strata = small, check_identifiers = FALSE))
      expect_identical(leaked_values(out, d, c("x", "y")), character(), info = paste(small, na))
    }
  }
  skip_if_not_installed("RANN")
  out <- anonymise(d[!is.na(d$x), ], k = 3, vars = c("x", "y"), strata = "g", engine = "rann",
                   check_identifiers = FALSE)
  expect_identical(leaked_values(out, d, c("x", "y")), character())
})

test_that("anonymise() keeps tibble and data.table releases free of original values", {
  skip_if_not_installed("data.table")
  skip_if_not_installed("tibble")
  d <- inv_data(n = 1000, seed = 12)
  for (data in list(tibble::as_tibble(d), data.table::as.data.table(d))) {
    out <- anonymise(data, k = 3, vars = c("x", "y"), strata = "g", check_identifiers = FALSE)
    expect_identical(leaked_values(out, d, c("x", "y")), character())
  }
})

test_that("anonymise_keps() releases no original value of its noised variables", {
  d <- inv_data(n = 600, seed = 13)
  set.seed(14)
  for (conf in list(NULL, 0.9)) {
    res <- anonymise_keps_with_key(d, epsilon = 4, k = 5, vars = c("x", "y"), quasi = "z", strata = "g",
                                   confidence = conf)
    released <- res[c("data", "classes", "info")]
    expect_identical(leaked_values(attributes(res$data), d, c("x", "y")), character())
    expect_identical(leaked_values(released, d, c("x", "y")), character())
  }
})

test_that("the assess() object and the risk/utility results carry no original values", {
  d <- inv_data(n = 400, seed = 15)
  m <- anonymise(d, k = 3, vars = c("x", "y"), strata = "g", check_identifiers = FALSE)
  f <- x ~ y + g # a formula whose environment is this test's frame (holding `d`)
  a <- assess(d, m, vars = c("x", "y"), strata = "g", formula = f, deterministic = TRUE)
  expect_identical(leaked_values(a, d, c("x", "y")), character())
  expect_identical(leaked_values(summary(a), d, c("x", "y")), character())
  expect_identical(leaked_values(as.data.frame(a), d, c("x", "y")), character())
  expect_identical(leaked_values(risk_class_link(d, m, vars = c("x", "y"), strata = "g"), d, c("x", "y")),
                   character())
  expect_identical(leaked_values(strata_table(m, "g"), d, c("x", "y")), character())
})

test_that("the release form (format) commutes with row order and threads; tiny columns scale out", {
  d <- inv_data(n = 900, seed = 31)
  d$count <- as.integer(d$count)
  d$p <- d$x * 1e-250
  d$rid <- seq_len(nrow(d))
  set.seed(32)
  perm <- sample(nrow(d))
  for (format in c("natural", "precision")) {
    run <- function(data, nt) anonymise(data, k = 5, vars = c("x", "y", "count", "p"), strata = "g", format = format,
                                        nthreads = nt, check_identifiers = FALSE)
    a <- run(d, 1L)
    expect_identical(run(d, 2L), a)
    ap <- run(d[perm, ], 1L)
    expect_identical(plain(ap[order(ap$rid), ]), plain(a[order(a$rid), ]), info = format)
    # (counts of small spread keep their decimals in the natural form, see round_whole())
    expect_type(a$count, if (format == "precision") "integer" else "double")
    # a tiny column is masked exactly as its rescaled copy (powers of two are exact)
    b <- anonymise(transform(d, p = p * 2^830), k = 5, vars = c("x", "y", "count", "p"), strata = "g",
                   format = format, check_identifiers = FALSE)
    expect_equal(a$p * 2^830, b$p, tolerance = 1e-14, info = format)
  }
})

test_that("assess() measures the release as released (integers, tiny values, bounds)", {
  d <- inv_data(n = 600, seed = 33)
  d$count <- as.integer(d$count)
  d$p <- stats::runif(600) * 1e-250
  m <- anonymise(d, k = 3, vars = c("x", "y", "count", "p"), strata = "g", check_identifiers = FALSE)
  a <- assess(d, m, vars = c("x", "p", "count"), strata = "g", deterministic = TRUE)
  b <- assess(transform(d, p = p * 2^830), transform(m, p = p * 2^830), vars = c("x", "p", "count"),
              strata = "g", deterministic = TRUE)
  expect_equal(a$delta, b$delta)
  expect_equal(a$linkage$rate, b$linkage$rate)
  expect_equal(a$rmd$risk1, b$rmd$risk1)
  expect_gt(a$delta[["p"]], 0)
})
