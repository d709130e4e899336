# centroid_noise(): the keyed noise of shared-centroid releases (R/centroid_noise.R), its
# kernel (keyed_group_uniforms() in src/keyed.c) against a transcription, and the
# differencing defence on the Titanic data.

titanic_vars <- c("Age", "Fare")
titanic_strata <- c("Pclass", "Sex", "Family")

# A slow transcription of the noise scale: (SD rounded down to a power of two + the group's
# range + the distance of its mean from the median rounded to that unit) / size.
ref_noise_scale <- function(x, group, means) {
  out <- matrix(0, nrow(means), ncol(x))
  for (j in seq_len(ncol(x))) {
    unit <- 2^floor(log2(sd(x[, j])))
    centre <- unit * round(median(x[, j]) / unit)
    for (g in seq_len(nrow(means))) {
      v <- x[group == g, j]
      out[g, j] <- (unit + max(v) - min(v) + abs(means[g, j] - centre)) / length(v)
    }
  }
  out
}

group_means <- function(x, g) rowsum(x, g, reorder = TRUE) / tabulate(g)

test_that("the noise scale is the documented one, and the noise is uniform on [-2 b, 2 b]", {
  set.seed(1)
  x <- cbind(a = rexp(600, 0.1), b = rnorm(600, 50, 7))
  g <- rep(1:60, each = 10)[sample(600)]
  m <- group_means(x, g)
  expect_equal(detanon:::noise_scale(x, g, m, tabulate(g)), ref_noise_scale(x, g, m))
  # the standardised noise of many groups: uniform on (-2, 2), the variables independent
  x <- cbind(a = rnorm(20000), b = runif(20000))
  g <- rep(1:5000, each = 4)
  m <- group_means(x, g)
  e <- (detanon:::centroid_noise(x, g, m, charToRaw("a test secret of 16+ bytes")) - m) /
    detanon:::noise_scale(x, g, m, tabulate(g))
  expect_true(all(abs(e) < 2))
  expect_lt(abs(mean(e)), 0.05)
  expect_gt(ks.test(as.vector(e), "punif", -2, 2)$p.value, 1e-3)
  expect_lt(abs(cor(e[, 1], e[, 2])), 0.05)
})

test_that("the same members and secret give the same noise; another member or secret, fresh noise", {
  set.seed(2)
  x <- cbind(rnorm(40), rnorm(40))
  g <- rep(1:4, each = 10)
  m <- group_means(x, g)
  s1 <- charToRaw("the first secret, 16+ bytes")
  s2 <- charToRaw("the second secret, 16+ bytes")
  a <- detanon:::centroid_noise(x, g, m, s1)
  # rows in another order: the same noise
  p <- sample(40)
  expect_identical(detanon:::centroid_noise(x[p, ], g[p], m, s1), a)
  # groups numbered otherwise: each group keeps its noise
  expect_identical(detanon:::centroid_noise(x, 5L - g, m[4:1, ], s1), a[4:1, ])
  # record 1 withdrawn: groups 2-4 keep their noise, group 1 gets fresh noise
  m1 <- group_means(x[-1, ], g[-1])
  b <- detanon:::centroid_noise(x[-1, ], g[-1], m1, s1)
  expect_identical(b[2:4, ] - m1[2:4, ], a[2:4, ] - m[2:4, ])
  expect_true(all(abs((b[1, ] - m1[1, ]) - (a[1, ] - m[1, ])) > 1e-8))
  # another secret: fresh noise everywhere
  c2 <- detanon:::centroid_noise(x, g, m, s2)
  expect_true(all(abs(c2 - a) > 1e-8))
  # -0 and +0 are the same value
  x0 <- x
  x0[1, 1] <- 0
  xn <- x0
  xn[1, 1] <- -0
  m0 <- group_means(x0, g)
  expect_identical(detanon:::centroid_noise(xn, g, m0, s1), detanon:::centroid_noise(x0, g, m0, s1))
})

test_that("the keyed group uniforms depend on the group's rows and the secret, not on its position", {
  set.seed(3)
  x <- matrix(rnorm(12), 6, 2)
  off <- c(0L, 2L, 6L)
  secret <- charToRaw("a secret of the custodian")
  u <- .Call(detanon:::C_ffi_keyed_group_uniforms, x, off, 3L, secret)
  expect_true(is.numeric(u) && all(u > 0 & u < 1))
  expect_equal(dim(u), c(2L, 3L))
  # equal groups give equal uniforms whatever their position; a changed value, other ones
  x2 <- rbind(x[3:6, ], x[1:2, ])
  u2 <- .Call(detanon:::C_ffi_keyed_group_uniforms, x2, c(0L, 4L, 6L), 3L, secret)
  expect_identical(u2[1, ], u[2, ])
  expect_identical(u2[2, ], u[1, ])
  x2[6, 1] <- x2[6, 1] + 1e-12
  u3 <- .Call(detanon:::C_ffi_keyed_group_uniforms, x2, c(0L, 4L, 6L), 3L, secret)
  expect_identical(u3[1, ], u[2, ])
  expect_true(all(u3[2, ] != u[1, ]))
  # the same rows, one fewer: other uniforms
  u4 <- .Call(detanon:::C_ffi_keyed_group_uniforms, x[1:5, ], c(0L, 2L, 5L), 3L, secret)
  expect_identical(u4[1, ], u[1, ])
  expect_true(all(u4[2, ] != u[2, ]))
  # another secret: other uniforms
  u5 <- .Call(detanon:::C_ffi_keyed_group_uniforms, x, off, 3L, charToRaw("another secret of the custodian"))
  expect_true(all(u5 != u))
  # uniforms of many groups: uniform on (0, 1)
  y <- matrix(rnorm(4000), 2000, 2)
  uu <- .Call(detanon:::C_ffi_keyed_group_uniforms, y, seq(0L, 2000L, by = 2L), 2L, secret)
  expect_gt(ks.test(as.vector(uu), "punif")$p.value, 1e-3)
})

# The differencing attack in plain R: the difference of the two releases' column sums.
difference_of_sums <- function(a, b, vars) colSums(a[vars]) - colSums(b[vars])

recovered <- function(claim, x, tol = 0.05) all(abs(claim - x) <= tol * abs(x))

titanic_targets <- function(n_random) {
  d <- titanic_paper()[-1]
  set.seed(36)
  unique(c(which.max(d$Fare), which.max(d$Age), sample(setdiff(seq_len(nrow(d)), c(which.max(d$Fare), which.max(d$Age))), n_random)))
}

test_that("exact shared centroids give a withdrawn person's values away (noise = FALSE, the issue's figure)", {
  d <- titanic_paper()[-1]
  key <- "a-secret-of-the-custodian-0f3c9"
  rel <- function(x, key) suppressMessages(anonymise_keyed(x, vars = titanic_vars, strata = titanic_strata,
                                                           key = key, size = 10, noise = FALSE))
  a <- rel(d, key)
  targets <- titanic_targets(28)
  expect_length(targets, 30L)
  exact <- vapply(targets, function(t) {
    claim <- difference_of_sums(a, rel(d[-t, ], key), titanic_vars)
    isTRUE(all.equal(unname(claim), unname(unlist(d[t, titanic_vars])), tolerance = 1e-9))
  }, logical(1))
  expect_equal(sum(exact), 30L)
  # a new key does not help
  t <- which.max(d$Fare)
  claim <- difference_of_sums(a, rel(d[-t, ], "another-secret-of-the-custodian"), titanic_vars)
  expect_equal(unname(claim), c(d$Age[t], d$Fare[t]), tolerance = 1e-9)
})

test_that("the keyed noise (the default) keeps a withdrawn person's values: at most 1 in 20 within 5%", {
  d <- titanic_paper()[-1]
  key <- "a-secret-of-the-custodian-0f3c9"
  rel <- function(x, key) suppressMessages(anonymise_keyed(x, vars = titanic_vars, strata = titanic_strata,
                                                           key = key, size = 10))
  a <- rel(d, key)
  expect_true(release_info(a)$settings$noise)
  targets <- titanic_targets(28)
  got <- vapply(targets, function(t) {
    claim <- difference_of_sums(a, rel(d[-t, ], key), titanic_vars)
    x <- unlist(d[t, titanic_vars])
    c(all = recovered(claim, x), age = recovered(claim[1], x[1]), fare = recovered(claim[2], x[2]))
  }, logical(3))
  expect_lte(sum(got["all", ]), 30 / 20)
  expect_lte(sum(got["age", ]), 30 / 20)
  expect_lte(sum(got["fare", ]), 30 / 20)
  # the 512.33 fare and the 80-year-old are not recovered
  expect_false(got["fare", 1])
  expect_false(got["age", 2])
})

# Groups of 10 (the last of a stratum up to 19) within strata, in the order of the values:
# a plain shared-centroid partition.
sorted_groups <- function(x, id, k) {
  g <- integer(nrow(x))
  next_id <- 0L
  for (s in unique(id)) {
    r <- which(id == s)
    r <- r[order(x[r, 2L], x[r, 1L])]
    n_g <- max(1L, length(r) %/% k)
    g[r] <- next_id + pmin(n_g, (seq_along(r) - 1L) %/% k + 1L)
    next_id <- next_id + n_g
  }
  g
}

test_that("noise on shared centroids: the worst case (only the target's group changes) stays below 1 in 20", {
  d <- titanic_paper()[-1]
  x <- as.matrix(d[titanic_vars])
  id <- as.integer(interaction(d[titanic_strata], drop = TRUE))
  g <- sorted_groups(x, id, 10L)
  exact_sums <- function(x, g) colSums(group_means(x, g)[match(g, sort(unique(g))), , drop = FALSE])
  top <- order(-x[, "Fare"])[1:10]
  old <- order(-x[, "Age"])[1:10]
  tails <- 0
  for (secret in c("0123456789abcdef-secret", "another-secret-xyz-0000", "third-secret-abcdefghij")) {
    noisy_sums <- function(x, g) {
      g <- match(g, sort(unique(g)))
      colSums(detanon:::centroid_noise(x, g, group_means(x, g), charToRaw(secret))[g, , drop = FALSE])
    }
    a <- noisy_sums(x, g)
    # every person of the strata, the others' groups unchanged (fresh noise only for the
    # target's group): the hardest case for the defence
    within <- vapply(seq_len(nrow(x)), function(t) {
      claim <- a - noisy_sums(x[-t, , drop = FALSE], g[-t])
      abs(claim - x[t, ]) <= 0.05 * abs(x[t, ])
    }, logical(2))
    expect_lte(mean(within[1, ]), 0.05)
    expect_lte(mean(within[2, ]), 0.05)
    expect_lte(mean(within[1, ] & within[2, ]), 0.01)
    tails <- tails + sum(within[2, top]) + sum(within[1, old])
  }
  # the 10 largest fares and the 10 oldest ages, under three secrets: at most 1 in 20
  expect_lte(tails, 60 / 20)
  # without the noise, every one of them is exact
  t <- c(top[1], old[1], 100L)
  for (i in t) expect_equal(unname(exact_sums(x, g) - exact_sums(x[-i, ], g[-i])), unname(x[i, ]))
})

test_that("anonymise_mdav(noise = TRUE): the groups of noise = FALSE, noisy points, the difference defeated", {
  d <- titanic_paper()[-1]
  key <- "a-secret-of-the-custodian-0f3c9"
  rel <- function(x, noise) suppressMessages(anonymise_mdav(x, vars = titanic_vars, strata = titanic_strata, k = 10,
                                                            noise = noise, key = key, format = "none"))
  a0 <- rel(d, FALSE)
  a1 <- rel(d, TRUE)
  expect_true(release_info(a1)$settings$noise)
  expect_false(release_info(a0)$settings$noise)
  # the same groups (records sharing a released point), every point moved
  g0 <- as.integer(factor(do.call(paste, c(d[titanic_strata], a0[titanic_vars]))))
  g1 <- as.integer(factor(do.call(paste, c(d[titanic_strata], a1[titanic_vars]))))
  expect_identical(match(g0, g0), match(g1, g1))
  expect_true(all(a1$Age != a0$Age))
  # the same key: the same release; reproducible without a key under set.seed()
  expect_identical(rel(d, TRUE), a1)
  set.seed(5)
  r1 <- suppressMessages(anonymise_mdav(d, vars = titanic_vars, strata = titanic_strata, k = 10, noise = TRUE))
  set.seed(5)
  expect_identical(suppressMessages(anonymise_mdav(d, vars = titanic_vars, strata = titanic_strata, k = 10,
                                                   noise = TRUE)), r1)
  # one person withdrawn: exact without the noise, far off with it
  for (t in c(which.max(d$Fare), which.max(d$Age), 100L)) {
    x <- unlist(d[t, titanic_vars])
    expect_equal(unname(difference_of_sums(a0, rel(d[-t, ], FALSE), titanic_vars)), unname(x), tolerance = 1e-9)
    expect_false(recovered(difference_of_sums(a1, rel(d[-t, ], TRUE), titanic_vars), x))
  }
})
