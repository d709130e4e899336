# The one z-scale (R/scale.R): column_scale() and z_scores() against a slow reference,
# the rule for constant, near-constant and tiny columns, and its users.

# The slow reference: each column times its power of two, then (x - mean) / sd with R's own
# mean() and sd(); a column is kept when that SD is finite and > 0.
ref_scale <- function(x) {
  out <- lapply(seq_len(ncol(x)), function(j) {
    v <- x[, j]
    big <- max(abs(v))
    e <- if (is.finite(big) && big > 0 && big < 1e-100) -floor(log2(big)) else 0
    h <- trunc(e / 2)
    v <- v * 2^h * 2^(e - h)
    s <- stats::sd(v)
    list(e = e, keep = is.finite(s) && s > 0, z = (v - mean(v)) / s)
  })
  list(e = vapply(out, `[[`, 0, "e"), keep = vapply(out, `[[`, NA, "keep"),
       z = do.call(cbind, lapply(out[vapply(out, `[[`, NA, "keep")], `[[`, "z")))
}

scale_data <- function(n = 300, seed = 1) {
  set.seed(seed)
  cbind(ties = sample(1:4, n, TRUE) * 1.0, normal = rnorm(n, 50, 10), const = rep(7, n),
        near = 1 + sample(0:1, n, TRUE) * 2^-50, tiny = sample(1:9, n, TRUE) * 1e-300,
        subnormal = sample(1:9, n, TRUE) * 1e-310, huge = c(1e300, -1e300, rep(0, n - 2)))
}

test_that("column_scale() and z_scores() agree with the slow reference", {
  for (seed in 1:5) {
    x <- scale_data(seed = seed)
    ref <- ref_scale(x)
    sc <- detanon:::column_scale(x)
    expect_identical(unname(sc$e), ref$e)
    expect_identical(unname(sc$keep), ref$keep)
    expect_equal(unname(detanon:::z_scores(x, sc)), unname(ref$z), tolerance = 1e-12)
  }
})

test_that("the rule: constant and overflowing columns are left out, near-constant and tiny ones kept", {
  sc <- detanon:::column_scale(scale_data())
  expect_identical(names(sc$keep)[sc$keep], c("ties", "normal", "near", "tiny", "subnormal"))
  expect_true(all(sc$e[c("tiny", "subnormal")] > 0))
  expect_true(all(sc$e[c("ties", "normal", "const", "near", "huge")] == 0))
  # on the z-scale every kept column has mean 0 and SD 1, whatever its units; the
  # near-constant one only roughly: its values and its mean lie a few ulps apart
  z <- detanon:::z_scores(scale_data(), sc)
  fine <- colnames(z) != "near"
  expect_equal(unname(colMeans(z)[fine]), rep(0, 4), tolerance = 1e-12)
  expect_equal(unname(apply(z, 2L, stats::sd)[fine]), rep(1, 4), tolerance = 1e-12)
  expect_lt(abs(mean(z[, "near"])), 0.1)
  expect_equal(stats::sd(z[, "near"]), 1, tolerance = 0.01)
})

test_that("the z-scale is the same bits for any row order and power-of-two units", {
  x <- scale_data(seed = 3)
  sc <- detanon:::column_scale(x)
  p <- sample(nrow(x))
  expect_identical(detanon:::column_scale(x[p, ])[c("mean", "sd", "keep")], sc[c("mean", "sd", "keep")])
  expect_identical(detanon:::z_scores(x[p, ], sc), detanon:::z_scores(x, sc)[p, ])
  # a tiny column is an exact power-of-two multiple of an ordinary one: the same z-scores
  y <- x[, "ties", drop = FALSE] * 2^-1000
  expect_identical(unname(detanon:::z_scores(y, detanon:::column_scale(y))),
                   unname(detanon:::z_scores(x[, "ties", drop = FALSE],
                                             detanon:::column_scale(x[, "ties", drop = FALSE]))))
})

test_that("z_scale() is the arithmetic of scale() (the rann engine reproduces it)", {
  x <- scale_data(seed = 4)[, 1:2]
  ctr <- colMeans(x)
  spr <- apply(x, 2L, stats::sd)
  expect_identical(unname(detanon:::z_scale(x, ctr, spr)), unname(scale(x, center = ctr, scale = spr)[, ]))
})

test_that("a global scale restricted to columns is the scale of those columns", {
  x <- scale_data(seed = 5)
  sc <- detanon:::column_scale(x)
  sub <- detanon:::scale_columns(sc, c("normal", "tiny"))
  expect_identical(sub, detanon:::column_scale(x[, c("normal", "tiny")]))
})

# the data of the measures below: a tie-heavy set with a constant, a near-constant and a
# tiny column
key_data <- function(n = 240, seed = 42) {
  set.seed(seed)
  data.frame(g = sample(c("a", "b"), n, TRUE), x = sample(1:6, n, TRUE) * 1.0, y = round(rnorm(n), 1),
             tiny = sample(1:3, n, TRUE) * 1e-300, const = 7, near = 1 + sample(0:1, n, TRUE) * 1e-15,
             w = sample(c(1, 1, 1, 2, 50), n, TRUE), stringsAsFactors = FALSE)
}

test_that("the masking verbs and the linkage measure share the rule", {
  d <- key_data()
  vars <- c("x", "y", "tiny", "const", "near")
  m <- anonymise(d, vars = vars, strata = "g", k = 3, format = "none", nthreads = 1)
  # the constant column is released unchanged (no scaling factor); the others are masked
  expect_identical(m$const, d$const)
  f <- release_info(m)$stats$scale
  expect_identical(names(f)[!is.na(f)], c("x", "y", "tiny", "near"))
  s <- detanon:::linkage_setup(d, m, vars, "g")
  expect_identical(s$z_vars, c("x", "y", "tiny", "near"))
  sc <- detanon:::column_scale(as.matrix(d[vars]))
  expect_identical(unname(s$zo), unname(detanon:::z_scores(as.matrix(d[vars]), sc)))
})

test_that("numeric keys follow the rule: a tiny key counts as its power-of-two multiple", {
  d <- key_data()
  m <- suppressWarnings(anonymise(d, vars = c("x", "y", "tiny", "w"), strata = "g", k = 3, nthreads = 1))
  it <- intruder(vars = c("x", "y"), strata = "g", held = "tiny")
  a <- attack_linkage(d, m, intruder = it, seed = 1, nthreads = 1)
  # the same key in ordinary units (an exact power-of-two multiple): the same attack
  d2 <- d
  m2 <- m
  d2$tiny <- d$tiny * 2^500 * 2^500
  m2$tiny <- m$tiny * 2^500 * 2^500
  a2 <- attack_linkage(d2, m2, intruder = it, seed = 1, nthreads = 1)
  expect_identical(a$success, a2$success)
  expect_identical(a$rate, a2$rate)
  # and the key does count: without it the attack differs
  a0 <- attack_linkage(d, m, intruder = intruder(vars = c("x", "y"), strata = "g"), seed = 1, nthreads = 1)
  expect_false(identical(a$success, a0$success))
  for (dir in c("released", "original")) {
    w <- attack_linkage(d, m, intruder = intruder(vars = c("x", "y"), strata = "g", held = "w"),
                        direction = dir, seed = 1, nthreads = 1)
    w2 <- attack_linkage(transform(d, w = w * 1024), transform(m, w = w * 1024),
                         intruder = intruder(vars = c("x", "y"), strata = "g", held = "w"),
                         direction = dir, seed = 1, nthreads = 1)
    expect_identical(w$success, w2$success)
  }
})

test_that("a key constant among the originals carries no information, even where the release changed it", {
  d <- key_data()
  m <- anonymise(d, vars = c("x", "y"), strata = "g", k = 3, nthreads = 1)
  m$const[1:5] <- 8
  for (dir in c("released", "original")) {
    a <- attack_linkage(d, m, intruder = intruder(vars = c("x", "y"), strata = "g", held = "const"),
                        direction = dir, seed = 1, nthreads = 1)
    a0 <- attack_linkage(d, m, intruder = intruder(vars = c("x", "y"), strata = "g"),
                         direction = dir, seed = 1, nthreads = 1)
    expect_identical(a$success, a0$success)
    expect_identical(a$confidence, a0$confidence)
  }
})
