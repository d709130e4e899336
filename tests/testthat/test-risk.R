# risk_rmd() and risk_linkage() against slow R transcriptions, sdcMicro and the paper.

# dRiskRMD's formula written out with a full distance matrix (m generalised).
ref_rmd <- function(x, xm, w1 = 0.01, w2 = 0.05, m = 1, cov_fun = robustbase::covMcd) {
  x <- scale(as.matrix(x)); xm <- scale(as.matrix(xm))
  n <- nrow(x)
  covs <- cov_fun(x)$cov
  rmd <- 0.05 * sqrt(stats::mahalanobis(x, colMeans(x), covs))
  r1 <- integer()
  for (i in seq_len(n)) {
    inside <- FALSE
    for (j in seq_len(ncol(x))) {
      lo <- x[i, j] - w1 * rmd[i]; hi <- x[i, j] + w1 * rmd[i]
      if (xm[i, j] > lo && xm[i, j] < hi) inside <- TRUE
    }
    if (inside) r1 <- c(r1, i)
  }
  D <- as.matrix(stats::dist(xm)); diag(D) <- Inf
  r2 <- r1[vapply(r1, function(i) sum(D[i, ] <= w2) < m, logical(1))]
  list(rows_risk1 = r1, rows_risk2 = r2, risk1 = length(r1) / n, risk2 = length(r2) / n,
       wrisk1 = length(r1) * sum(rmd[r1]) / n, wrisk2 = length(r2) * sum(rmd[r2]) / n)
}

expect_rmd_equal <- function(got, want) {
  expect_identical(got$rows_risk1, as.integer(want$rows_risk1))
  expect_identical(got$rows_risk2, as.integer(want$rows_risk2))
  expect_equal(got$risk1, want$risk1)
  expect_equal(got$risk2, want$risk2)
  expect_equal(got$wrisk1, want$wrisk1)
  expect_equal(got$wrisk2, want$wrisk2)
  expect_identical(got$n_risk1, length(want$rows_risk1))
  expect_identical(got$n_risk2, length(want$rows_risk2))
}

# masked data in the style of anonymise(): small moves, many shared centroids
fake_masked <- function(x, move = 0.05, dup = 0.3) {
  xm <- x
  for (j in seq_along(x)) xm[[j]] <- x[[j]] + stats::rnorm(nrow(x), sd = move * stats::sd(x[[j]]))
  k <- sample(nrow(x), floor(dup * nrow(x)))
  xm[k, ] <- xm[pmax(1L, k - 1L), ]
  xm
}

test_that("risk_rmd equals the slow reference on random and adversarial data", {
  set.seed(11)
  for (rep in 1:4) {
    n <- c(60, 200, 333, 25)[rep]; p <- c(2, 3, 1, 4)[rep]
    x <- as.data.frame(matrix(stats::rexp(n * p), n, p))
    if (rep == 2) x[[1]] <- round(x[[1]], 1) # ties
    xm <- fake_masked(x)
    for (w1 in c(0.01, 0.5, 3)) for (w2 in c(0, 0.05, 0.4)) for (m in c(1, 3)) {
      want <- ref_rmd(x, xm, w1, w2, m, function(z) robustbase::covMcd(z, nsamp = "deterministic"))
      got <- risk_rmd(x, xm, w1 = w1, w2 = w2, neighbours = m, deterministic = TRUE)
      expect_rmd_equal(got, want)
    }
  }
})

test_that("risk_rmd uses the random seed like covMcd, and deterministic = TRUE ignores it", {
  set.seed(3)
  x <- data.frame(a = stats::rnorm(150), b = stats::rt(150, 2), c = stats::rexp(150))
  xm <- fake_masked(x, move = 0.02)
  set.seed(99); want <- ref_rmd(x, xm, w1 = 0.3)
  set.seed(99); got <- risk_rmd(x, xm, w1 = 0.3)
  expect_rmd_equal(got, want)
  set.seed(1); d1 <- risk_rmd(x, xm, w1 = 0.3, deterministic = TRUE)
  set.seed(2); d2 <- risk_rmd(x, xm, w1 = 0.3, deterministic = TRUE)
  expect_identical(d1, d2)
  # arguments in ... reach covMcd
  set.seed(5); want <- ref_rmd(x, xm, w1 = 0.3, cov_fun = function(z) robustbase::covMcd(z, alpha = 0.75))
  set.seed(5); expect_rmd_equal(risk_rmd(x, xm, w1 = 0.3, alpha = 0.75), want)
})

test_that("identical and duplicated masked records are handled", {
  set.seed(4)
  x <- data.frame(a = stats::rnorm(80), b = stats::rnorm(80))
  # masked == original: every record is in its interval; none has a neighbour unless duplicated
  r <- risk_rmd(x, x, vars = c("a", "b"), deterministic = TRUE)
  expect_equal(r$n_risk1, 80L)
  expect_rmd_equal(r, ref_rmd(x, x, cov_fun = function(z) robustbase::covMcd(z, nsamp = "deterministic")))
  # exact duplicates in masked are neighbours at distance 0, so w2 = 0 keeps them safe
  xm <- x; xm[2, ] <- xm[1, ]
  r0 <- risk_rmd(x, xm, w2 = 0, w1 = 100, deterministic = TRUE)
  expect_false(1L %in% r0$rows_risk2)
  expect_false(2L %in% r0$rows_risk2)
  expect_rmd_equal(r0, ref_rmd(x, xm, w1 = 100, w2 = 0,
                               cov_fun = function(z) robustbase::covMcd(z, nsamp = "deterministic")))
})

test_that("risk_rmd returns row positions whatever the row names, and any data frame class", {
  set.seed(8)
  x <- data.frame(a = stats::rnorm(120), b = stats::rexp(120))
  xm <- fake_masked(x, move = 0.01)
  base <- risk_rmd(x, xm, w1 = 1, deterministic = TRUE)
  expect_gt(base$n_risk2, 0L)
  rownames(x) <- rownames(xm) <- paste0("id", 1000 + 120:1)
  expect_identical(risk_rmd(x, xm, w1 = 1, deterministic = TRUE), base)
  x2 <- x; xm2 <- xm
  rownames(x2) <- rownames(xm2) <- as.character(sample(5000, 120))
  expect_identical(risk_rmd(x2, xm2, w1 = 1, deterministic = TRUE), base)
  skip_if_not_installed("tibble")
  expect_identical(risk_rmd(tibble::as_tibble(x), tibble::as_tibble(xm), w1 = 1, deterministic = TRUE), base)
})

test_that("risk_rmd gives the same result for every thread count", {
  set.seed(21)
  x <- data.frame(a = stats::rnorm(5000), b = stats::rnorm(5000))
  xm <- fake_masked(x, move = 0.01, dup = 0)
  r1 <- risk_rmd(x, xm, w1 = 2, w2 = 0.02, neighbours = 2, deterministic = TRUE, nthreads = 1)
  r2 <- risk_rmd(x, xm, w1 = 2, w2 = 0.02, neighbours = 2, deterministic = TRUE, nthreads = 2)
  expect_gt(r1$n_risk1, 2048L) # enough queries for the parallel path
  expect_identical(r1, r2)
})

test_that("risk_rmd agrees with sdcMicro::dRiskRMD on the same inputs and seed", {
  skip_if_not_installed("sdcMicro")
  set.seed(31)
  for (n in c(100, 700)) {
    x <- data.frame(a = stats::rlnorm(n), b = stats::rnorm(n), c = stats::runif(n))
    xm <- fake_masked(x, move = 0.03)
    for (w in list(c(0.01, 0.05), c(0.5, 0.1))) {
      set.seed(n); s <- sdcMicro::dRiskRMD(x, xm, k = w[1], k2 = w[2])
      set.seed(n); r <- risk_rmd(x, xm, w1 = w[1], w2 = w[2])
      expect_identical(r$rows_risk1, as.integer(unname(s$indexRisk1)))
      expect_identical(r$rows_risk2, as.integer(if (is.null(s$indexRisk2)) integer() else s$indexRisk2))
      expect_equal(r$risk1, s$risk1)
      expect_equal(r$risk2, s$risk2)
      expect_equal(r$wrisk1, s$wrisk1)
      expect_equal(r$wrisk2, s$wrisk2)
    }
  }
})

test_that("risk_rmd reproduces dRiskRMD on the paper's Titanic run", {
  skip_if_not_installed("RANN")
  d <- titanic_paper()
  m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                 engine = "rann", check_identifiers = FALSE)
  set.seed(1)
  r <- risk_rmd(d, m)
  expect_identical(r$vars, c("Age", "Fare"))
  # the paper prints risk1 0.0426 (38 records) and risk2 0.009 (8 records)
  expect_identical(r$n_risk1, 38L)
  expect_identical(r$n_risk2, 8L)
  expect_equal(round(r$risk1, 4), 0.0426)
  expect_equal(round(r$risk2, 3), 0.009)
  for (seed in c(42, 2022)) {
    set.seed(seed)
    expect_identical(c(risk_rmd(d, m)$n_risk1, risk_rmd(d, m)$n_risk2), c(38L, 8L))
  }
  skip_if_not_installed("sdcMicro")
  set.seed(1)
  s <- sdcMicro::dRiskRMD(d[c("Age", "Fare")], m[c("Age", "Fare")])
  expect_identical(r$rows_risk1, as.integer(unname(s$indexRisk1)))
  expect_identical(r$rows_risk2, as.integer(s$indexRisk2))
  expect_equal(r$wrisk1, s$wrisk1)
  expect_equal(r$wrisk2, s$wrisk2)
})

test_that("risk_rmd rejects bad input with a message naming the argument", {
  x <- data.frame(a = c(1, 5, 2, 8, 3, 9, 4), b = c(2, 1, 4, 3, 6, 5, 7))
  xm <- x + 0.1
  expect_error(risk_rmd(x, xm[-1, ]), "`original` has 7 rows but `masked` has 6")
  expect_error(risk_rmd(x, xm, vars = "zz"), "`vars` names columns that are not in the data: `zz`")
  expect_error(risk_rmd(x, xm[, "a", drop = FALSE], vars = c("a", "b")), "`vars` names columns that are not in the data: `b`")
  xn <- x; xn$a[2] <- NA
  expect_error(risk_rmd(xn, xm), "column `a` of `original` has 1 missing or infinite value")
  xi <- xm; xi$b[3] <- Inf
  expect_error(risk_rmd(x, xi), "column `b` of `masked` has 1 missing or infinite value")
  xc <- x; xc$b <- as.character(xc$b)
  expect_error(risk_rmd(xc, xm, vars = c("a", "b")), "must name numeric columns; in `original` `b` is not \\(character\\)")
  expect_error(risk_rmd(x, xm, w1 = 0), "`w1` must be a single finite number > 0, not 0")
  expect_error(risk_rmd(x, xm, w1 = -1), "`w1` must be a single finite number > 0")
  expect_error(risk_rmd(x, xm, w2 = -0.1), "`w2` must be a single finite number >= 0")
  expect_error(risk_rmd(x, xm, neighbours = 0), "`neighbours` must be a single whole number >= 1, not 0")
  expect_error(risk_rmd(x, xm, neighbours = 1.5), "`neighbours` must be a single whole number >= 1")
  expect_error(risk_rmd(x, xm, deterministic = NA), "`deterministic` must be TRUE or FALSE")
  expect_error(risk_rmd(as.matrix(x), xm), "`original` must be a data frame")
  xk <- x; xk$b <- 3
  expect_error(risk_rmd(xk, xm), "`b` is constant in `original`")
  expect_error(risk_rmd(x[1:3, ], xm[1:3, ]), "more records than variables are needed")
  expect_error(risk_rmd(x[1, ], xm[1, ]), "more records than variables are needed")
  expect_error(risk_rmd(x, x), "No continuous variable to assess")
})

# ---- risk_linkage --------------------------------------------------------------------

# Slow linkage: per stratum, all distances between masked and original records.
ref_linkage <- function(x, xm, g) {
  x <- as.matrix(x); xm <- as.matrix(xm)
  mu <- colMeans(x); s <- apply(x, 2, stats::sd)
  keep <- s > 0
  if (!any(keep)) { x <- matrix(0, nrow(x), 1); xm <- x } else {
    x <- scale(x[, keep, drop = FALSE], mu[keep], s[keep])
    xm <- scale(xm[, keep, drop = FALSE], mu[keep], s[keep])
  }
  share <- numeric(nrow(x))
  for (i in seq_len(nrow(x))) {
    cand <- which(g == g[i])
    d2 <- vapply(cand, function(j) sum((xm[i, ] - x[j, ])^2), 0)
    own <- d2[cand == i]
    share[i] <- if (own <= min(d2)) 1 / sum(d2 <= own) else 0
  }
  share
}

test_that("risk_linkage equals the slow reference, with ties, strata and constant columns", {
  set.seed(5)
  n <- 400
  d <- data.frame(a = stats::rnorm(n), b = round(stats::rexp(n), 1), c = 7,
                  g1 = sample(c("x", "y", NA), n, TRUE), g2 = factor(sample(1:3, n, TRUE)))
  d$a[1:40] <- d$a[41:80]; d$b[1:40] <- d$b[41:80] # duplicated records
  d$g1[1:40] <- d$g1[41:80]; d$g2[1:40] <- d$g2[41:80]
  masked <- d
  masked[c("a", "b")] <- fake_masked(d[c("a", "b")], move = 0.3)
  masked$a[1:40] <- masked$a[41:80]; masked$b[1:40] <- masked$b[41:80]
  masked$a[100] <- d$a[100]; masked$b[100] <- d$b[100]  # an unmasked record
  g <- interaction(addNA(factor(d$g1)), d$g2, drop = TRUE)
  for (vars in list(c("a", "b"), c("a", "b", "c"), "c")) {
    got <- risk_linkage(d, masked, vars = vars, strata = c("g1", "g2"))
    want <- ref_linkage(d[vars], masked[vars], g)
    expect_equal(got$rate, mean(want))
    expect_equal(got$n_linked, sum(want))
    expect_equal(got$blind_rate, nlevels(g) / n)
    by <- got$by_stratum
    expect_equal(sum(by$n), n)
    expect_equal(nrow(by), nlevels(g))
    want_by <- tapply(want, g, mean)
    key <- interaction(addNA(factor(by$g1, levels = c("x", "y"))), by$g2, drop = TRUE)
    expect_equal(unname(by$rate), unname(as.vector(want_by[as.character(key)])))
    expect_equal(by$blind_rate, 1 / by$n)
  }
  expect_gt(risk_linkage(d, masked, vars = c("a", "b"), strata = c("g1", "g2"))$rate, 0)
  # one stratum, and a single record
  got <- risk_linkage(d, masked, vars = c("a", "b"), strata = character())
  expect_equal(got$rate, mean(ref_linkage(d[c("a", "b")], masked[c("a", "b")], rep(1, n))))
  one <- risk_linkage(d[1, ], masked[1, ], vars = c("a", "b"))
  expect_equal(one$rate, 1)
  expect_equal(one$blind_rate, 1)
})

test_that("risk_linkage is invariant to thread count and row order", {
  set.seed(6)
  n <- 6000
  d <- data.frame(a = stats::rnorm(n), b = stats::rnorm(n), g = sample(c("u", "v"), n, TRUE, c(0.9, 0.1)))
  masked <- d
  masked[c("a", "b")] <- fake_masked(d[c("a", "b")], move = 0.1, dup = 0)
  r1 <- risk_linkage(d, masked, vars = c("a", "b"), strata = "g", nthreads = 1)
  r2 <- risk_linkage(d, masked, vars = c("a", "b"), strata = "g", nthreads = 2)
  expect_identical(r1, r2)
  p <- sample(n)
  r3 <- risk_linkage(d[p, ], masked[p, ], vars = c("a", "b"), strata = "g")
  expect_equal(r3$rate, r1$rate)
})

test_that("risk_linkage takes vars and strata from anonymise() and checks its input", {
  d <- titanic_paper()
  m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                 check_identifiers = FALSE)
  r <- risk_linkage(d, m)
  expect_s3_class(r, "detanon_linkage")
  expect_identical(r$vars, c("Age", "Fare"))
  expect_identical(r$strata, c("Pclass", "Sex", "Family"))
  expect_equal(r$blind_rate, 12 / 891)
  expect_gt(r$rate, r$blind_rate)
  expect_output(print(r), "correct links")
  m2 <- m; m2$Sex <- rev(m2$Sex)
  expect_error(risk_linkage(d, m2, vars = c("Age", "Fare"), strata = "Sex"), "`strata` column `Sex` differs between `original` and `masked`")
  # the edited release no longer supplies the defaults
  expect_warning(r2 <- risk_linkage(d, m2), class = "detanon_warning_stale_release")
  expect_identical(r2$strata, character())
  expect_error(risk_linkage(d, m, strata = "nope"), "`strata` names columns that are not in the data")
  expect_error(risk_linkage(d, m, strata = "Age"), "Columns cannot be in both `vars` and `strata`")
  expect_error(risk_linkage(d, m[1:5, ]), "`original` has 891 rows")
  expect_error(risk_linkage(d, m, nthreads = 0), "`nthreads` must be a single whole number >= 1")
})

# ---- top-m linkage, re-identification probability, replay ------------------------------

# Slow ranks: for every queried row i, the points of its stratum (rows of zt) strictly
# nearer to zq[i, ] than zt[i, ], and those at most as near; squared distances summed over
# the columns in order, as the C code does.
ref_ranks <- function(zt, zq, g, rows = seq_len(nrow(zt))) {
  out <- matrix(NA_real_, nrow(zt), 2L)
  for (i in rows) {
    cand <- which(g == g[i])
    d2 <- numeric(length(cand))
    for (j in seq_len(ncol(zt))) d2 <- d2 + (zq[i, j] - zt[cand, j])^2
    own <- d2[cand == i]
    out[i, ] <- c(sum(d2 < own), sum(d2 <= own))
  }
  out
}

# The intruder's chances from the ranks, written out: a random order of the tied points.
ref_top_m <- function(r, m) {
  vapply(seq_len(nrow(r)), function(i) {
    l <- r[i, 1]; t <- r[i, 2] - l
    if (is.na(l)) return(NA_real_)
    # P(own position among the t tied ones <= m - l), the positions equally likely
    sum(seq_len(t) <= m - l) / t
  }, 0)
}

# z-scores of a pair by the means and SDs of x, as risk_linkage() makes them.
ref_z <- function(x, xm) {
  x <- as.matrix(x); xm <- as.matrix(xm)
  st <- detanon:::col_stats(x)
  keep <- !is.na(st$sd) & st$sd > 0
  if (!any(keep)) return(list(x = matrix(0, nrow(x), 1), xm = matrix(0, nrow(x), 1)))
  f <- function(m) sweep(sweep(m[, keep, drop = FALSE], 2L, st$mean[keep]), 2L, st$sd[keep], "/")
  list(x = f(x), xm = f(xm))
}

adversarial_pair <- function(n, seed) {
  set.seed(seed)
  d <- data.frame(a = round(stats::rnorm(n), 1), b = round(stats::rexp(n), 1), c = 7,
                  g1 = sample(c("x", "y", NA), n, TRUE), g2 = factor(sample(1:3, n, TRUE)))
  if (n >= 80) {
    d[1:40, ] <- d[41:80, ] # duplicated records
  }
  masked <- d
  move <- sample(c(0.05, 0.3, 2), 1L)
  masked$a <- d$a + stats::rnorm(n, sd = move)
  masked$b <- d$b + stats::rnorm(n, sd = move)
  if (n >= 80) masked[1:30, c("a", "b")] <- masked[31:60, c("a", "b")] # shared masked values
  masked$a <- round(masked$a, sample(1:3, 1L)) # ties among masked values
  if (n >= 100) masked[100, c("a", "b")] <- d[100, c("a", "b")] # an unmasked record
  list(d = d, masked = masked,
       g = as.integer(interaction(addNA(factor(d$g1)), d$g2, drop = TRUE)))
}

test_that("top-m linkage and re-identification probabilities equal brute force", {
  for (case in 1:6) {
    n <- c(400, 150, 60, 7, 2, 1)[case]
    p <- adversarial_pair(n, case)
    for (vars in list(c("a", "b"), c("a", "b", "c"), "c")) {
      zz <- ref_z(p$d[vars], p$masked[vars])
      r <- ref_ranks(zz$x, zz$xm, p$g)
      for (m in c(1, 2, 3, 5, 50)) {
        got <- risk_linkage(p$d, p$masked, vars = vars, strata = c("g1", "g2"), m = m)
        want <- ref_top_m(r, m)
        want1 <- ref_top_m(r, 1)
        expect_equal(got$linked_m, want)
        expect_equal(got$rate_m, mean(want))
        expect_equal(got$n_linked_m, sum(want))
        # `rate` is the nearest-neighbour link whatever `m`, as in the attacks
        expect_equal(got$linked, want1)
        expect_equal(got$rate, mean(want1))
        expect_equal(got$n_linked, sum(want1))
        expect_equal(got$reid_prob, 1 / r[, 2])
        expect_equal(got$reid, mean(1 / r[, 2]))
        expect_equal(got$reid_max, max(1 / r[, 2]))
        sizes <- tabulate(p$g)
        expect_equal(got$blind_rate_m, sum(pmin(m, sizes[sizes > 0])) / n)
        expect_equal(got$blind_rate, sum(sizes > 0) / n)
        by <- got$by_stratum
        expect_equal(sum(by$n * by$rate_m), sum(want))
        expect_equal(sum(by$n * by$rate), sum(want1))
        expect_equal(sum(by$n * by$reid), sum(1 / r[, 2]))
        expect_equal(by$blind_rate_m, pmin(m, by$n) / by$n)
        expect_equal(by$blind_rate, 1 / by$n)
        # a list as long as the largest stratum always holds the own original
        if (m >= max(sizes)) expect_equal(got$rate_m, 1)
      }
    }
  }
})

test_that("m = 1 is the nearest-neighbour link of before, and rates grow with m", {
  p <- adversarial_pair(300, 11)
  # the share of before: 0 when an original is strictly nearer, else 1 / (number as near)
  zz <- ref_z(p$d[c("a", "b")], p$masked[c("a", "b")])
  r <- ref_ranks(zz$x, zz$xm, p$g)
  old <- ifelse(r[, 1] > 0, 0, 1 / r[, 2])
  got <- risk_linkage(p$d, p$masked, vars = c("a", "b"), strata = c("g1", "g2"))
  expect_identical(got$linked, old)
  expect_identical(got$rate, sum(old) / 300)
  expect_equal(got$rate, mean(ref_linkage(p$d[c("a", "b")], p$masked[c("a", "b")], p$g)))
  expect_identical(got$m, 1L)
  rates <- vapply(1:6, function(m) risk_linkage(p$d, p$masked, vars = c("a", "b"),
                                                strata = c("g1", "g2"), m = m)$rate_m, 0)
  expect_true(all(diff(rates) >= 0))
  # the re-identification probability is never below the nearest-neighbour share
  expect_true(all(got$reid_prob >= got$linked))
  expect_true(all(got$reid_prob > 0 & got$reid_prob <= 1))
})

test_that("a masking that moves every record one rank fools m = 1 but not m = 2 or reid", {
  # originals on a line, each masked value put on the nearest other original
  d <- data.frame(a = c(0, 1, 2.5, 4.5, 7, 10), g = "s")
  masked <- d
  masked$a <- c(0.6, 0.4, 1.6, 3.2, 5.5, 8.3)
  l1 <- risk_linkage(d, masked, vars = "a", strata = "g")
  l2 <- risk_linkage(d, masked, vars = "a", strata = "g", m = 2)
  expect_equal(l1$rate, 0)
  expect_equal(l2$rate_m, 1)
  expect_equal(l2$rate, 0)
  expect_equal(l1$reid, 0.5)
})

test_that("risk_linkage(m) is invariant to thread count and row order, and checks m", {
  set.seed(6)
  n <- 6000
  d <- data.frame(a = stats::rnorm(n), b = stats::rnorm(n), g = sample(c("u", "v"), n, TRUE, c(0.9, 0.1)))
  masked <- d
  masked[c("a", "b")] <- fake_masked(d[c("a", "b")], move = 0.1, dup = 0.2)
  r1 <- risk_linkage(d, masked, vars = c("a", "b"), strata = "g", m = 3, nthreads = 1)
  r2 <- risk_linkage(d, masked, vars = c("a", "b"), strata = "g", m = 3, nthreads = 2)
  expect_identical(r1, r2)
  p <- sample(n)
  r3 <- risk_linkage(d[p, ], masked[p, ], vars = c("a", "b"), strata = "g", m = 3)
  expect_equal(r3$rate, r1$rate)
  expect_equal(r3$reid_prob, r1$reid_prob[p])
  expect_output(print(r1), "Top-3 linkage")
  expect_output(print(r1), "expected re-identification probability")
  for (bad in list(0, 1.5, NA, "2", c(1, 2))) {
    expect_error(risk_linkage(d, masked, vars = c("a", "b"), m = bad),
                 "`m` must be a single whole number >= 1")
  }
})

# The replay written out: the same known rows, the same mask, brute-force ranks.
ref_replay <- function(d, masked, vars, g, mask, p, m, seed) {
  set.seed(seed)
  n <- nrow(d)
  vapply(p, function(pp) {
    known <- if (pp == 1) seq_len(n) else sort(sample.int(n, max(1L, round(pp * n))))
    rep <- mask(d[known, , drop = FALSE])
    zz <- ref_z(d[vars], masked[vars])
    full <- matrix(0, n, ncol(zz$x))
    full[known, ] <- ref_z(d[vars], rep[vars])$xm
    r <- ref_ranks(zz$xm, full, g, known)[known, , drop = FALSE]
    mean(ref_top_m(r, m))
  }, 0)
}

test_that("risk_replay equals the written-out replay, for anonymise() and a given mask", {
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  g <- detanon:::stratum_ids(d, st)
  masked <- anonymise(d, k = 5, vars = v, strata = st)
  rep <- risk_replay(d, masked, seed = 3)
  expect_s3_class(rep, "detanon_replay")
  expect_identical(rep$by_p$p, c(1, 0.5, 0.1))
  expect_identical(rep$by_p$n_known, c(891L, 446L, 89L))
  mask <- function(x) suppressMessages(anonymise(x, k = 5, vars = v, strata = st,
                                                 small_strata = "merge", check_identifiers = FALSE))
  expect_equal(rep$by_p$rate, ref_replay(d, masked, v, g, mask, c(1, 0.5, 0.1), 1, 3))
  # p = 1 replays a deterministic release exactly: only identical released records escape
  key <- do.call(paste, masked[c(v, st)])
  expect_equal(rep$by_p$rate[1], mean(1 / table(key)[key]))
  expect_equal(rep$by_p$reid[1], rep$by_p$rate[1])
  # same seed, same answer; the caller's random stream is left alone
  set.seed(9); before <- stats::runif(1); set.seed(9)
  expect_identical(risk_replay(d, masked, seed = 3), rep)
  expect_identical(stats::runif(1), before)
  # an intruder whose replay is the identity links originals to the release (m = 2)
  ident <- function(x) x
  got <- risk_replay(d, masked, mask = ident, p = c(0.3, 1), m = 2, seed = 4)
  expect_equal(got$by_p$rate_m, ref_replay(d, masked, v, g, ident, c(0.3, 1), 2, 4))
  # `rate` is the nearest-neighbour link whatever m, as in risk_linkage() and the attacks
  expect_equal(got$by_p$rate, ref_replay(d, masked, v, g, ident, c(0.3, 1), 1, 4))
  expect_equal(got$by_p$rate, risk_replay(d, masked, mask = ident, p = c(0.3, 1), seed = 4)$by_p$rate)
  expect_true(all(got$by_p$rate_m >= got$by_p$rate))
  expect_output(print(got), "Replay attack")
})

test_that("risk_replay handles tiny shares, n = 1 and random masks, and checks its input", {
  p <- adversarial_pair(60, 21)
  d <- p$d[c("a", "b", "g1", "g2")]
  masked <- anonymise(d, k = 3, vars = c("a", "b"), strata = c("g1", "g2"),
                      small_strata = "suppress", check_identifiers = FALSE) |> suppressMessages()
  # drop the suppressed records from the original as the pair needs
  keep <- detanon:::stratum_ids(d, c("g1", "g2"))
  keep <- tabulate(keep)[keep] >= 3
  d <- d[keep, ]
  r <- risk_replay(d, masked, p = c(1, 0.05, 1 / nrow(d)), seed = 1)
  expect_true(all(r$by_p$rate >= 0 & r$by_p$rate <= 1))
  expect_identical(r$by_p$n_known[3], 1L)
  noisy <- function(x) { x$a <- x$a + stats::rnorm(nrow(x)); x }
  g <- as.integer(interaction(addNA(factor(d$g1)), d$g2, drop = TRUE))
  got <- risk_replay(d, masked, mask = noisy, p = c(1, 0.5), seed = 2)
  expect_equal(got$by_p$rate, ref_replay(d, masked, c("a", "b"), g, noisy, c(1, 0.5), 1, 2))
  one <- risk_replay(d[1, ], masked[1, ], mask = function(x) x, vars = c("a", "b"),
                     strata = c("g1", "g2"), p = 1)
  expect_equal(one$by_p$rate, 1)

  plain <- as.data.frame(masked)
  attr(plain, "detanon") <- NULL
  expect_error(risk_replay(d, plain), "pass the intruder's replay as `mask`")
  expect_error(risk_replay(d, masked, mask = 3), "`mask` must be NULL or a function")
  for (bad in list(0, 1.5, NA, c(0.5, 0.5), "1", numeric())) {
    expect_error(risk_replay(d, masked, p = bad), "`p` must be distinct shares in \\(0, 1\\]")
  }
  expect_error(risk_replay(d, masked, mask = function(x) x[-1, ]),
               "`mask` must return a data frame with the rows of its input")
  expect_error(risk_replay(d, masked, mask = function(x) stop("boom")),
               "`mask` failed on the intruder's share p = 1 .*boom")
  expect_error(risk_replay(d, masked, seed = 1.5), "`seed` must be a single whole number")
})

test_that("risk_rmd() falls back from a singular robust covariance with a classed warning", {
  set.seed(4)
  n <- 200
  # more than half of the records on a hyperplane: z = x + y exactly, and a zero-inflated w
  x <- rnorm(n)
  y <- rnorm(n)
  d <- data.frame(x = x, y = y, z = x + y, w = c(rep(0, 150), rexp(50)))
  m <- d + 0.01
  expect_warning(r <- risk_rmd(d, m, vars = c("x", "y", "z")), class = "detanon_warning_covariance")
  expect_identical(r$cov_method, "diagonal")
  # the fallback intervals: per-variable robust variances of the scaled originals
  xs <- scale(as.matrix(d[c("x", "y", "z")]))
  s2 <- apply(xs, 2L, stats::mad)^2
  rmd <- 0.05 * sqrt(rowSums(sweep(sweep(xs, 2L, colMeans(xs))^2, 2L, s2, "/")))
  ms <- scale(as.matrix(m[c("x", "y", "z")]))
  inside <- ms > xs - 0.01 * rmd & ms < xs + 0.01 * rmd
  expect_identical(r$rows_risk1, which(rowSums(inside) > 0L))
  # zero-inflation alone: the classical covariance is regular
  d2 <- data.frame(x = x, w = d$w, v = c(rep(1, 120), rnorm(80)))
  expect_warning(r2 <- risk_rmd(d2, d2 + 0.5), class = "detanon_warning_covariance")
  expect_identical(r2$cov_method, "classical")
  expect_equal(r2$cov, unname(stats::cov(scale(as.matrix(d2)))), ignore_attr = TRUE)
  # regular data: the robust covariance, no warning
  expect_no_warning(r3 <- risk_rmd(d[c("x", "y")], m[c("x", "y")]))
  expect_identical(r3$cov_method, "mcd")
})

test_that("risk_rmd(): `m` is the deprecated name of `neighbours`; `seed` reproduces covMcd's draws", {
  d <- titanic_paper()[-1]
  m <- anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3)
  expect_warning(old <- risk_rmd(d, m, m = 2, deterministic = TRUE), "`m` is deprecated; use `neighbours`",
                 class = "detanon_warning_deprecated")
  expect_identical(old, risk_rmd(d, m, neighbours = 2, deterministic = TRUE))
  expect_error(risk_rmd(d, m, m = 2, neighbours = 2), "give `neighbours` only")
  set.seed(5)
  before <- .Random.seed
  a <- risk_rmd(d, m, seed = 3)
  expect_identical(.Random.seed, before)
  set.seed(3)
  expect_identical(a, risk_rmd(d, m))
})

test_that("risk_replay() on small w1 releases and tiny data: results, not failures", {
  for (n in c(5L, 8L, 15L)) {
    set.seed(n)
    d <- data.frame(x = stats::rnorm(n), y = stats::rnorm(n), z = stats::rnorm(n), g = rep(c("a", "b"), length.out = n))
    for (st in list(character(), "g")) {
      m <- suppressWarnings(anonymise_adaptive(d, vars = c("x", "y", "z"), strata = st, k = 2, m = 2, w1 = 0.01,
                                               check_identifiers = FALSE))
      r <- risk_replay(d, m, seed = 1)
      expect_s3_class(r, "detanon_replay")
      expect_identical(r$by_p$n_known, as.integer(pmax(1L, round(c(1, 0.5, 0.1) * n))))
      expect_false(anyNA(r$by_p))
      expect_true(all(r$by_p$rate >= 0 & r$by_p$rate <= 1))
      # the full share (n >= nvars + 2) replays the release's own masking, w1 included
      full <- risk_replay(d, m, p = 1, seed = 1)
      same <- function(x) suppressWarnings(anonymise_adaptive(x, vars = c("x", "y", "z"), strata = st, k = 2, m = 2,
                                                              w1 = 0.01, check_identifiers = FALSE))
      expect_identical(full$by_p, risk_replay(d, m, p = 1, mask = same, seed = 1)$by_p)
    }
  }
  # a failing replay function of the caller's is named as `mask`, classed
  d <- data.frame(x = stats::rnorm(10), y = stats::rnorm(10))
  m <- anonymise(d, k = 2, strata = character())
  expect_error(risk_replay(d, m, mask = function(x) stop("no"), seed = 1), "`mask` failed.*p = 1 \\(10 records\\): no",
               class = "detanon_error_argument")
})

test_that("risk_linkage(): a release far from its originals answers Ctrl-C within a second", {
  expect_interruptible(
    c("set.seed(1); n <- 4e5",
      "d <- data.frame(g = rep(1:2, length.out = n), x1 = rnorm(n), x2 = rnorm(n), x3 = rnorm(n))",
      "m <- d; for (v in c('x1', 'x2', 'x3')) m[[v]] <- ave(m[[v]], m$g, FUN = sample)"),
    "for (i in 1:20) risk_linkage(d, m, vars = c('x1', 'x2', 'x3'), strata = 'g')")
})

test_that("risk_linkage(): the count 'at most as close' stops at 2^14 (an upper bound on reid)", {
  set.seed(2)
  n <- 40000
  d <- data.frame(x = stats::rnorm(n), y = stats::rnorm(n))
  m <- d[sample.int(n), ]
  rownames(m) <- NULL
  r <- risk_linkage(d, m, vars = c("x", "y"))
  # by brute force for some records: the capped count gives 1 / min(count, 2^14)
  z <- scale(as.matrix(d))
  zm <- sweep(sweep(as.matrix(m), 2, attr(z, "scaled:center")), 2, attr(z, "scaled:scale"), "/")
  for (i in c(1, 17, 500, 9999)) {
    d2 <- colSums((t(z) - zm[i, ])^2)
    le <- sum(d2 <= d2[i])
    expect_equal(r$reid_prob[i], 1 / min(le, 2^14), tolerance = 1e-12)
  }
  expect_true(all(r$reid_prob >= 2^-14))
})

test_that("rmd_sample_rows(): evenly spaced rows in the order of the values, the same values for any row order", {
  set.seed(39)
  x <- cbind(a = round(stats::rnorm(1000), 1), b = sample(1:4, 1000, TRUE))
  expect_null(detanon:::rmd_sample_rows(x, 1000))
  rows <- detanon:::rmd_sample_rows(x, 300)
  expect_length(rows, 300L)
  expect_false(anyDuplicated(rows) > 0)
  # by hand: the rows sorted on a, then b; positions 1, 1 + 1000/300, ... rounded down
  o <- order(x[, "a"], x[, "b"])
  expect_identical(x[rows, ], x[o[floor((0:299) * 1000 / 300) + 1], ])
  for (s in 1:3) {
    perm <- sample(1000)
    expect_identical(x[perm, ][detanon:::rmd_sample_rows(x[perm, ], 300), ], x[rows, ])
  }
  # n x size beyond the integers: the positions in doubles
  big <- matrix(as.double(100000:1), ncol = 1L)
  far <- detanon:::rmd_sample_rows(big, 30000L)
  expect_false(anyNA(far))
  expect_identical(big[far, 1], floor((0:29999) * 100000 / 30000) + 1)
  # the covariance of the sample, the distances of every row
  core <- detanon:::rmd_core(x, TRUE, rows = rows)
  xs <- scale(x)
  cov_s <- robustbase::covMcd(xs[rows, ], nsamp = "deterministic")$cov
  expect_equal(core$cov, cov_s)
  expect_equal(core$rmd, 0.05 * sqrt(stats::mahalanobis(xs, colMeans(xs), cov_s)))
})

test_that("the rank index counts tied points as groups: the counts of a plain R loop, capped and lazy (issue 39)", {
  set.seed(39)
  # three strata: heavily tied (grouped), no ties (not grouped), and one of 20,000 points
  # nearly all at one place, whose counts pass the 2^14 where "at most as near" stops
  n1 <- 600; n2 <- 200; n3 <- 20000
  zt <- rbind(matrix(sample(c(-1, -0.5, 0, 0.5, 1), 2 * n1, TRUE), n1, 2),
              matrix(stats::rnorm(2 * n2), n2, 2),
              cbind(c(rep(0, n3 - 100), stats::rnorm(100)), c(rep(0.25, n3 - 100), stats::rnorm(100))))
  zt[1, ] <- c(-0, 0) # -0 ties with 0
  zt[2, ] <- c(NaN, 0) # a NaN point is never tied (and never counted)
  g <- rep(1:3, c(n1, n2, n3))
  zq <- zt + matrix(sample(c(0, 0, 0.5, -0.25), 2 * length(g), TRUE), ncol = 2)
  zq[3:6, ] <- zt[3:6, ] # on their own point
  s <- detanon:::cell_setup(g)
  index <- detanon:::rank_index(zt, s)
  # the groups: the distinct points of the tied strata, with their multiplicities
  go <- index$g_offsets
  expect_identical(diff(go)[2], 0L)
  distinct <- function(i) nrow(unique(zt[g == i, ] + 0)) + sum(is.nan(zt[g == i, 1])) - any(is.nan(zt[g == i, 1]))
  expect_identical(diff(go)[c(1, 3)], c(distinct(1), distinct(3)))
  w <- index$g_w
  expect_identical(c(sum(w[seq(go[1] + 1, go[2])]), sum(w[seq(go[3] + 1, go[4])])), c(n1, n3) + 0)
  # the counts by brute force (distances summed in column order, as the kernel sums them)
  rows <- c(1:n1, n1 + sample(n2, 50), n1 + n2 + c(1:5, sample(n3, 60)))
  want <- seq_along(g) %in% rows
  ref <- matrix(NA_real_, length(g), 2)
  for (i in rows) {
    tr <- which(g == g[i])
    d2 <- numeric(length(tr))
    for (j in 1:2) d2 <- d2 + (zq[i, j] - zt[tr, j])^2
    self <- sum((zq[i, ] - zt[i, ])^2)
    ref[i, ] <- c(sum(d2 < self, na.rm = TRUE), sum(d2 <= self, na.rm = TRUE))
  }
  expect_true(any(ref[want, 2] > 2^14))
  for (cap in c(1, 3, 1e6)) {
    got <- detanon:::link_ranks(s, zt, zq, want, cap, 2L, index = index)
    expect_identical(got[want, 1], pmin(ref[want, 1], cap))
    expect_identical(got[want, 2], pmin(ref[want, 2], 2^14))
    expect_true(all(is.na(got[!want, ])))
    lazy <- detanon:::battery_ranks(index, zq, want, cap, 2L)
    below <- want & ref[, 1] < cap
    expect_identical(lazy[below, 2], ref[below, 2]) # exact beyond 2^14
    expect_true(all(is.na(lazy[want & !below, 2])))
  }
  # the same counts for any row order and without the groups (a plain index of each row alone)
  perm <- sample(length(g))
  sp <- detanon:::cell_setup(g[perm])
  gotp <- detanon:::link_ranks(sp, zt[perm, ], zq[perm, ], want[perm], 3, 1L)
  expect_identical(gotp[order(perm), ], detanon:::link_ranks(s, zt, zq, want, 3, 1L, index = index))
})

test_that("rank queries sharing a query point, tied trees and extreme magnitudes: the counts of a plain R loop (issue 39)", {
  for (nm in names(rank_cases())) {
    cs <- rank_cases()[[nm]]
    zt <- cs$zt
    zq <- cs$zq
    n <- nrow(zt)
    s <- detanon:::cell_setup(cs$cell)
    index <- detanon:::rank_index(zt, s)
    want <- stats::runif(n) < 0.9
    want[1] <- TRUE
    ref <- matrix(NA_real_, n, 2)
    for (i in which(want)) {
      r <- ref_rank_d2(zt, zq, s$id, i)
      ref[i, ] <- c(sum(r$d2 < r$own), sum(r$d2 <= r$own))
    }
    perm <- sample(n)
    sp <- detanon:::cell_setup(cs$cell[perm])
    for (cap in c(1, 3, 1e6)) {
      expect_ref <- cbind(pmin(ref[, 1], cap), pmin(ref[, 2], 2^14))
      for (nt in 1:2) {
        got <- detanon:::link_ranks(s, zt, zq, want, cap, nt, index = index)
        expect_identical(got, expect_ref, info = paste(nm, cap, nt))
        lazy <- detanon:::battery_ranks(index, zq, want, cap, nt)
        expect_identical(lazy[, 1], expect_ref[, 1], info = paste(nm, cap, nt))
        below <- want & ref[, 1] < cap
        expect_identical(lazy[below, 2], ref[below, 2], info = paste(nm, cap, nt))
        expect_true(all(is.na(lazy[!below, 2])))
      }
      # any row order: the same counts
      gotp <- detanon:::link_ranks(sp, zt[perm, , drop = FALSE], zq[perm, , drop = FALSE], want[perm], cap, 2L)
      expect_identical(gotp[order(perm), , drop = FALSE], expect_ref, info = paste(nm, cap))
    }
  }
})

test_that("queries sharing a point over balls of many points: the caps reached just, not and far over, as a plain R loop (issue 39)", {
  set.seed(395)
  # a stratum of distinct points and one of lattice points (heavily tied: searched as its
  # groups), each larger than the 2^14 where "at most as near" stops; a few groups of rows
  # share a query point (a noisy centroid, as MDAV's releases make them), each group's own
  # points chosen by their rank from it: the first, around 2^14 and far beyond
  n1 <- 70000; n2 <- 20000
  zt <- rbind(matrix(round(stats::rnorm(3 * n1), 4), n1, 3),
              matrix(sample(0:12, 3 * n2, TRUE) / 4, n2, 3))
  g <- rep(1:2, c(n1, n2))
  zq <- zt + matrix(stats::rnorm(length(zt), sd = 0.01), ncol = 3)
  cap_le <- 2^14
  used <- integer()
  for (cell in 1:2) {
    rows <- which(g == cell)
    for (j in 1:4) {
      centre <- if (j == 4) zt[rows[1], ] else stats::rnorm(3, sd = 0.5) # j = 4: on a tree point
      d2 <- numeric(length(rows))
      for (v in 1:3) d2 <- d2 + (centre[v] - zt[rows, v])^2
      o <- order(d2)
      at <- c(1, 2, 5000, cap_le - 1, cap_le, cap_le + 1, length(rows) - j)
      pick <- setdiff(rows[o[at]], used)
      used <- c(used, pick)
      zq[pick, ] <- rep(centre, each = length(pick))
    }
  }
  # single queries far from their points (each alone at its query point), in both strata
  far <- sample(setdiff(seq_along(g), used), 40)
  zq[far, ] <- zq[far, ] + 1.5
  want <- seq_along(g) %in% c(used, far, sample(length(g), 40))
  ref <- matrix(NA_real_, length(g), 2)
  for (i in which(want)) {
    r <- ref_rank_d2(zt, zq, g, i)
    ref[i, ] <- c(sum(r$d2 < r$own), sum(r$d2 <= r$own))
  }
  # the caps are reached just (2^14), missed by one and passed many times over
  expect_true(all(c(cap_le - 1, cap_le, cap_le + 1) %in% ref[, 2]))
  expect_true(any(ref[want, 2] > 4 * cap_le))
  s <- detanon:::cell_setup(g)
  index <- detanon:::rank_index(zt, s)
  expect_identical(diff(index$g_offsets) > 0, c(FALSE, TRUE))
  perm <- sample(length(g))
  sp <- detanon:::cell_setup(g[perm])
  for (cap in c(1, 3, 1e6)) {
    expect_ref <- cbind(pmin(ref[, 1], cap), pmin(ref[, 2], cap_le))
    for (nt in 1:2) {
      expect_identical(detanon:::link_ranks(s, zt, zq, want, cap, nt, index = index), expect_ref, info = paste(cap, nt))
      lazy <- detanon:::battery_ranks(index, zq, want, cap, nt)
      below <- want & ref[, 1] < cap
      expect_identical(lazy[, 1], expect_ref[, 1], info = paste(cap, nt))
      expect_identical(lazy[below, 2], ref[below, 2], info = paste(cap, nt)) # exact beyond 2^14
      expect_true(all(is.na(lazy[!below, 2])))
    }
    gotp <- detanon:::link_ranks(sp, zt[perm, ], zq[perm, ], want[perm], cap, 2L)
    expect_identical(gotp[order(perm), ], expect_ref, info = cap)
  }
})
