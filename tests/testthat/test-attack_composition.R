# attack_composition(): against a plain-R transcription (nearest released points in each
# release, candidate sets intersected when the rows can be joined).

comp_vars <- c("Age", "Fare")
comp_strata <- c("Pclass", "Sex", "Family")

# The transcription: for every person, the rows of each release in its stratum at the
# released point nearest to its original (z-scale of the originals); intersected when
# `aligned`; the success is 1 / |candidates| when its own row is among them.
ref_composition <- function(original, masked, previous, vars, strata, aligned) {
  x <- as.matrix(original[vars])
  mu <- colMeans(x)
  sdv <- apply(x, 2L, sd)
  z <- function(m) sweep(sweep(as.matrix(m[vars]), 2L, mu), 2L, sdv, "/")
  zo <- z(original)
  zm <- z(masked)
  zp <- z(previous)
  st <- function(d) apply(d[strata], 1L, paste, collapse = "|")
  so <- st(original)
  sm <- st(masked)
  sp <- st(previous)
  nearest <- function(zr, sr, i) {
    rows <- which(sr == so[i])
    d2 <- vapply(rows, function(r) sum((zr[r, ] - zo[i, ])^2), 0)
    rows[d2 <= min(d2) * (1 + 1e-9) + 1e-12]
  }
  vapply(seq_len(nrow(original)), function(i) {
    cand <- nearest(zm, sm, i)
    if (aligned) {
      both <- intersect(cand, nearest(zp, sp, i))
      if (length(both)) cand <- both
    }
    (i %in% cand) / length(cand)
  }, 0)
}

keyed20 <- function(d, key) {
  suppressMessages(anonymise_keyed(d, vars = comp_vars, strata = comp_strata, key = key, size = 20))
}

test_that("two keyed releases joined row by row: the transcription's candidate sets, and a gain", {
  d <- titanic_paper()[-1]
  a <- keyed20(d, "the-first-key-of-the-custodian")
  b <- keyed20(d, "the-second-key-of-the-custodian")
  it <- intruder(vars = comp_vars, strata = comp_strata)
  att <- attack_composition(d, a, previous = b, intruder = it, seed = 1)
  expect_true(att$details$aligned)
  expect_equal(att$success, ref_composition(d, a, b, comp_vars, comp_strata, TRUE))
  alone <- attack_linkage(d, a, intruder = it, direction = "original", seed = 1)
  expect_gt(att$rate, alone$rate)
})

test_that("the other release shuffled: no join, the rate of the nearest-point linkage on `masked`", {
  d <- titanic_paper()[-1]
  a <- keyed20(d, "the-first-key-of-the-custodian")
  b <- keyed20(d, "the-second-key-of-the-custodian")
  set.seed(5)
  bs <- b[sample(nrow(b)), ]
  it <- intruder(vars = comp_vars, strata = comp_strata)
  att <- attack_composition(d, a, previous = bs, intruder = it, seed = 1)
  expect_false(att$details$aligned)
  expect_equal(att$success, ref_composition(d, a, bs, comp_vars, comp_strata, FALSE))
  expect_equal(att$rate, attack_linkage(d, a, intruder = it, direction = "original", seed = 1)$rate)
})

test_that("a variant: MDAV-like and kNN releases of random data, an intruder with a key column", {
  set.seed(11)
  n <- 300
  d <- data.frame(g = sample(c("a", "b", "c"), n, TRUE), v1 = rnorm(n), v2 = rexp(n))
  a <- suppressMessages(anonymise(d, vars = c("v1", "v2"), strata = "g", k = 3, check_identifiers = FALSE))
  b <- suppressMessages(anonymise_keyed(d, vars = c("v1", "v2"), strata = "g", k = 3, size = 6,
                                        key = "a-key-of-the-random-custodian", check_identifiers = FALSE))
  att <- attack_composition(d, a, previous = b, intruder = intruder(vars = c("v1", "v2"), strata = "g"),
                            control = FALSE)
  expect_equal(att$success, ref_composition(d, a, b, c("v1", "v2"), "g", TRUE))
  # a release of other rows (another number of records) is not joined
  att2 <- attack_composition(d, a, previous = b[-1, ], intruder = intruder(vars = c("v1", "v2"), strata = "g"),
                             control = FALSE)
  expect_false(att2$details$aligned)
  expect_equal(att2$success, ref_composition(d, a, b, c("v1", "v2"), "g", FALSE))
})

test_that("bad input is refused with a classed error naming the argument", {
  d <- titanic_paper()[-1]
  a <- keyed20(d, "the-first-key-of-the-custodian")
  expect_snapshot(error = TRUE, attack_composition(d, a))
  expect_snapshot(error = TRUE, attack_composition(d, a, previous = 1:3))
  expect_snapshot(error = TRUE, attack_composition(d, a, previous = a[c("Age", "Pclass")]))
})
