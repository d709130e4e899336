# Slow, independent reference: moments of a + bZ + cZ^2 + dZ^3 by numerical integration.
poly_moments <- function(cf) {
  f <- function(z) cf[["a"]] + cf[["b"]] * z + cf[["c"]] * z^2 + cf[["d"]] * z^3
  m <- function(k) stats::integrate(function(z) f(z)^k * stats::dnorm(z), -Inf, Inf,
                                    rel.tol = 1e-12)$value
  mu <- m(1)
  cm <- function(k) stats::integrate(function(z) (f(z) - mu)^k * stats::dnorm(z), -Inf, Inf,
                                     rel.tol = 1e-12)$value
  v <- cm(2)
  c(mean = mu, var = v, skew = cm(3) / v^1.5, kurt = cm(4) / v^2 - 3)
}

test_that("Fleishman coefficients reproduce the target skewness and kurtosis", {
  targets <- rbind(c(0, 0), c(0.5, 0), c(0.5, 1), c(1, 1.5), c(-1, 1.5), c(1.5, 3),
                   c(0, -0.5), c(0, 3), c(2, 7), c(0.8, 1.0), c(0.6, 0.7))
  for (i in seq_len(nrow(targets))) {
    cf <- fleishman_coef(targets[i, 1], targets[i, 2])
    expect_named(cf, c("a", "b", "c", "d"))
    expect_equal(cf[["a"]], -cf[["c"]])
    mom <- poly_moments(cf)
    expect_equal(unname(mom), c(0, 1, targets[i, 1], targets[i, 2]), tolerance = 1e-7,
                 info = paste(targets[i, ], collapse = ", "))
  }
  expect_equal(fleishman_coef(0, 0), c(a = 0, b = 1, c = 0, d = 0))
  # negative skewness mirrors positive skewness
  expect_equal(fleishman_coef(-1, 1.5)[c("b", "d")], fleishman_coef(1, 1.5)[c("b", "d")])
  expect_equal(fleishman_coef(-1, 1.5)[["c"]], -fleishman_coef(1, 1.5)[["c"]])
})

test_that("fleishman_coef rejects unreachable moments and bad input", {
  expect_error(fleishman_coef(2, 0), "No Fleishman polynomial has skewness 2")
  expect_error(fleishman_coef(0, -3), "No Fleishman polynomial")
  expect_error(fleishman_coef(NA, 0), "`skewness` must be a single finite number")
  expect_error(fleishman_coef(1, "a"), "`kurtosis` must be a single finite number")
  expect_error(fleishman_coef(c(1, 2), 1), "`skewness`")
})

test_that("intermediate correlations solve the Vale-Maurelli cubic", {
  cf <- rbind(fleishman_coef(1, 1.5), fleishman_coef(1.5, 3), fleishman_coef(0, 0))
  r <- matrix(c(1, 0.5, -0.3, 0.5, 1, 0.2, -0.3, 0.2, 1), 3)
  inter <- vale_maurelli_cor(r, cf)
  expect_equal(diag(inter), rep(1, 3))
  expect_equal(inter, t(inter))
  # correlation of the transformed normals, by the formula E[f_i(Z_i) f_j(Z_j)] under
  # the bivariate normal, computed by 2-D quadrature on a grid (independent of the cubic)
  biv_cor <- function(ci, cj, rho) {
    gh <- seq(-8, 8, length.out = 801)
    w <- stats::dnorm(gh) * (gh[2] - gh[1])
    fi <- function(z) ci[["a"]] + ci[["b"]] * z + ci[["c"]] * z^2 + ci[["d"]] * z^3
    fj <- function(z) cj[["a"]] + cj[["b"]] * z + cj[["c"]] * z^2 + cj[["d"]] * z^3
    tot <- 0
    for (k in seq_along(gh)) {
      z2 <- rho * gh[k] + sqrt(1 - rho^2) * gh
      tot <- tot + w[k] * sum(w * fi(gh[k]) * fj(z2))
    }
    tot
  }
  for (p in list(c(1, 2), c(1, 3), c(2, 3))) {
    expect_equal(biv_cor(cf[p[1], ], cf[p[2], ], inter[p[1], p[2]]), r[p[1], p[2]], tolerance = 1e-6)
  }
  # normal margins: intermediate = target
  n2 <- rbind(c(0, 1, 0, 0), c(0, 1, 0, 0))
  expect_equal(vale_maurelli_cor(matrix(c(1, 0.7, 0.7, 1), 2), n2), matrix(c(1, 0.7, 0.7, 1), 2))
})

test_that("vale_maurelli_cor reports unreachable or inconsistent targets", {
  skewed <- rbind(fleishman_coef(2, 7), fleishman_coef(-2, 7))
  expect_error(vale_maurelli_cor(matrix(c(1, 0.99, 0.99, 1), 2), skewed), "cannot be reached")
  expect_error(vale_maurelli_cor(matrix(c(1, 2, 2, 1), 2), skewed), "`cor` must be a symmetric")
  expect_error(vale_maurelli_cor(diag(2), skewed[1, , drop = FALSE]), "`coef` must be a numeric matrix")
  bad <- matrix(c(1, 0.9, -0.9, 0.9, 1, 0.9, -0.9, 0.9, 1), 3)
  expect_error(vale_maurelli_cor(bad, rbind(c(0, 1, 0, 0), c(0, 1, 0, 0), c(0, 1, 0, 0))),
               "not positive definite")
})

test_that("rvale_maurelli reproduces moments and correlations on a large sample", {
  set.seed(42)
  r <- matrix(c(1, 0.5, -0.3, 0.5, 1, 0.2, -0.3, 0.2, 1), 3)
  x <- rvale_maurelli(2e5, mean = c(a = 5, b = -1, c = 100), sd = c(1, 2, 10),
                      skewness = c(1, 1.5, 0), kurtosis = c(1.5, 3, 0), cor = r)
  expect_named(x, c("a", "b", "c"))
  expect_equal(nrow(x), 2e5)
  expect_equal(unname(colMeans(x)), c(5, -1, 100), tolerance = 0.01)
  expect_equal(unname(apply(x, 2, stats::sd)), c(1, 2, 10), tolerance = 0.02)
  skew <- function(v) mean((v - mean(v))^3) / stats::sd(v)^3
  expect_equal(unname(apply(x, 2, skew)), c(1, 1.5, 0), tolerance = 0.1)
  expect_equal(unname(stats::cor(x)), r, tolerance = 0.02)
  # off-diagonals within 0.01 of the targets
  expect_lt(max(abs(stats::cor(x) - r)), 0.01)
  # the seed makes the draws reproducible
  set.seed(1); a <- rvale_maurelli(10, 0, 1, 1, 1.5)
  set.seed(1); b <- rvale_maurelli(10, 0, 1, 1, 1.5)
  expect_identical(a, b)
})

test_that("rvale_maurelli validates its arguments", {
  expect_error(rvale_maurelli(0, 0, 1), "`n` must be a single whole number")
  expect_error(rvale_maurelli(5, c(0, 1), c(1, 2, 3)), "`sd` must be a numeric vector of length 1 or 2")
  expect_error(rvale_maurelli(5, 0, -1), "`sd` must be .* values > 0")
  expect_error(rvale_maurelli(5, c(0, 1), 1, cor = diag(3)), "`cor` must be a 2 x 2 matrix")
  expect_error(rvale_maurelli(5, NA_real_, 1), "`mean` must be a numeric vector")
  expect_error(rvale_maurelli(5, c(0, 1), 1, names = c("x", "x")), "`names` must be 2 distinct")
})

test_that("simulate_ncds has the paper's strata and is labelled SYNTHETIC", {
  d <- simulate_ncds(seed = 1958)
  expect_equal(nrow(d), 1211L)
  expect_equal(as.vector(table(d$Sex, d$Smoker)), c(492L, 468L, 111L, 140L))
  expect_named(d, c("ID", "Sex", "Smoker", "Glucose", "HDL", "Height", "Weight"))
  expect_match(attr(d, "synthetic"), "SYNTHETIC")
  expect_false(anyNA(d))
  # deterministic given the seed, and the caller's RNG stream is left alone
  set.seed(3); before <- stats::runif(1)
  set.seed(3); d2 <- simulate_ncds(seed = 1958); after <- stats::runif(1)
  expect_identical(d, d2)
  expect_identical(before, after)
  # sizes of the paper's sensitivity analyses (n = 500 and n = 50)
  expect_equal(as.vector(table(simulate_ncds(500, seed = 1)[c("Sex", "Smoker")])), c(203L, 193L, 46L, 58L))
  expect_equal(as.vector(table(simulate_ncds(50, seed = 1)[c("Sex", "Smoker")])), c(20L, 19L, 5L, 6L))
})

test_that("simulate_ncds follows its targets and the Table 4 regression", {
  tg <- ncds_targets()
  d <- simulate_ncds(60000, seed = 7)
  fit <- stats::lm(Glucose ~ Sex + Smoker + HDL + Height + Weight, data = d)
  expect_equal(unname(stats::coef(fit)), unname(tg$beta), tolerance = 0.05)
  expect_equal(stats::sigma(fit), tg$sigma, tolerance = 0.02)
  men <- d[d$Sex == "0" & d$Smoker == "0", ]
  m <- tg$margins[tg$margins$sex == "male" & tg$margins$smoker == 0L, ]
  expect_equal(unname(colMeans(men[m$variable])), m$mean, tolerance = 0.01)
  expect_equal(unname(apply(men[m$variable], 2, stats::sd)), m$sd, tolerance = 0.03)
  expect_lt(max(abs(stats::cor(men[c("HDL", "Height", "Weight")]) - tg$cor)), 0.03)
  expect_error(simulate_ncds(3), "`n` must be a single whole number between 4")
  expect_error(simulate_ncds(10, seed = "a"), "`seed`")
})

test_that("whenever fleishman_coef returns, the moments are right (grid incl. the boundary)", {
  grid <- expand.grid(skew = c(-2.5, -1.2, 0, 0.3, 1.2, 2.5), kurt = c(-1.1, -0.5, 0.5, 2, 5, 12, 25))
  solved <- 0L
  for (i in seq_len(nrow(grid))) {
    cf <- tryCatch(fleishman_coef(grid$skew[i], grid$kurt[i]), error = function(e) conditionMessage(e))
    if (is.character(cf)) {
      expect_match(cf, "No Fleishman polynomial has skewness")
    } else {
      solved <- solved + 1L
      expect_equal(unname(poly_moments(cf)), c(0, 1, grid$skew[i], grid$kurt[i]), tolerance = 1e-6,
                   info = paste(grid$skew[i], grid$kurt[i]))
    }
  }
  expect_gt(solved, nrow(grid) / 2)
})

test_that("rvale_maurelli handles n = 1 and a single variable", {
  set.seed(5)
  one <- rvale_maurelli(1, mean = c(a = 1, b = 2), sd = 1)
  expect_equal(dim(one), c(1L, 2L))
  single <- rvale_maurelli(50, mean = 3, sd = 2, skewness = 1, kurtosis = 1.5)
  expect_named(single, "V1")
  expect_equal(nrow(single), 50L)
  expect_true(all(is.finite(single$V1)))
})
