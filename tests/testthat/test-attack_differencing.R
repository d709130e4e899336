# attack_differencing(): against a plain-R transcription (the difference of the two
# releases' sums per stratum), on releases of exact and of noisy shared centroids.

diff_vars <- c("Age", "Fare")
diff_strata <- c("Pclass", "Sex", "Family")
diff_key <- "a-secret-of-the-custodian-0f3c9"

# the narrower intruder of the transcription: the strata only (the default one also holds
# the published columns, whose finer cells only add claims)
diff_it <- intruder(vars = diff_vars, strata = diff_strata)

keyed_release <- function(x, noise, key = diff_key, size = 10) {
  suppressMessages(anonymise_keyed(x, vars = diff_vars, strata = diff_strata, key = key, size = size,
                                   noise = noise))
}

# The transcription: for every record of `original` whose row (all columns) is not in
# `prev_original`, the difference of the releases' sums in its stratum when the stratum's
# count differs by one, right when every variable is within `tol` (relative); NA for the
# records in both.
ref_differencing <- function(original, masked, previous, prev_original, vars, strata, tol = 0.05) {
  key_of <- function(d) apply(d[names(original)], 1L, function(r) paste(trimws(format(r, digits = 17)), collapse = "|"))
  ko <- key_of(original)
  kp <- key_of(prev_original)
  left <- table(kp)
  stratum <- function(d) apply(d[strata], 1L, paste, collapse = "|")
  sm <- stratum(masked)
  sp <- stratum(previous)
  out <- rep(NA_real_, nrow(original))
  for (i in seq_len(nrow(original))) {
    if (!is.na(left[ko[i]]) && left[ko[i]] > 0) {
      left[ko[i]] <- left[ko[i]] - 1L
      next
    }
    s <- sm[i]
    dn <- sum(sm == s) - sum(sp == s)
    claim <- colSums(masked[sm == s, vars, drop = FALSE]) - colSums(previous[sp == s, vars, drop = FALSE])
    x <- unlist(original[i, vars])
    out[i] <- as.numeric(dn == 1 && all(abs(claim - x) <= tol * abs(x)))
  }
  out
}

test_that("exact shared centroids: every person added in a stratum of its own is recovered", {
  d <- titanic_paper()[-1]
  gone <- c(259L, 631L, 1L, 2L) # the 512.33 fare, the 80-year-old, two more
  a <- keyed_release(d, FALSE)
  b <- keyed_release(d[-gone, ], FALSE)
  att <- attack_differencing(d, a, previous = b, previous_original = d[-gone, ], intruder = diff_it, control = FALSE)
  ref <- ref_differencing(d, a, b, d[-gone, ], diff_vars, diff_strata)
  expect_equal(att$success, ref)
  expect_equal(which(!is.na(att$success)), sort(gone))
  # strata of the four: 1 and 2 share none with 259 and 631? each stratum that lost one is exact
  st <- interaction(d[diff_strata], drop = TRUE)
  one <- gone[table(st[gone])[as.character(st[gone])] == 1L]
  expect_equal(att$success[one], rep(1, length(one)))
  expect_equal(att$details$n_targets, 4L)
  # the other way round: the people who left are reported in details
  rev <- attack_differencing(d[-gone, ], b, previous = a, previous_original = d, intruder = diff_it,
                             control = FALSE)
  expect_true(all(is.na(rev$success)))
  expect_equal(rev$details$n_removed, 4L)
  expect_equal(rev$details$removed_recovered, length(one))
})

test_that("two people of one stratum: the difference is their sum, not recovered", {
  d <- titanic_paper()[-1]
  st <- interaction(d[diff_strata], drop = TRUE)
  pair <- which(st == st[1L])[1:2]
  a <- keyed_release(d, FALSE)
  b <- keyed_release(d[-pair, ], FALSE)
  att <- attack_differencing(d, a, previous = b, previous_original = d[-pair, ], intruder = diff_it, control = FALSE)
  expect_equal(att$success[pair], c(0, 0))
  expect_equal(att$success, ref_differencing(d, a, b, d[-pair, ], diff_vars, diff_strata))
  expect_equal(att$details$claims$count_difference, 2L)
})

test_that("the keyed noise (the default) defeats the difference; the attack agrees with the transcription", {
  d <- titanic_paper()[-1]
  gone <- c(259L, 631L, 100L)
  a <- keyed_release(d, TRUE)
  b <- keyed_release(d[-gone, ], TRUE)
  att <- attack_differencing(d, a, previous = b, previous_original = d[-gone, ], intruder = diff_it, seed = 1)
  expect_equal(att$success, ref_differencing(d, a, b, d[-gone, ], diff_vars, diff_strata))
  expect_equal(att$rate, 0)
  # the control: the stratum's mean in the release alone
  expect_true(is.finite(att$control_rate))
})

test_that("a variant: random data, strata of two columns, a tolerance of 1%", {
  set.seed(7)
  n <- 400
  d <- data.frame(g1 = sample(c("a", "b"), n, TRUE), g2 = sample(c("x", "y", "z"), n, TRUE),
                  v1 = round(rlnorm(n, 3, 1), 2), v2 = rnorm(n, 100, 15))
  rel <- function(x, noise) suppressMessages(anonymise_keyed(x, vars = c("v1", "v2"), strata = c("g1", "g2"), k = 3,
                                                             key = "another-custodian-secret!", size = 8,
                                                             noise = noise, check_identifiers = FALSE))
  gone <- c(5L, 17L, 33L)
  for (noise in c(FALSE, TRUE)) {
    a <- rel(d, noise)
    b <- rel(d[-gone, ], noise)
    att <- attack_differencing(d, a, previous = b, previous_original = d[-gone, ], tolerance = 0.01,
                               intruder = intruder(vars = c("v1", "v2"), strata = c("g1", "g2")), control = FALSE)
    expect_equal(att$success, ref_differencing(d, a, b, d[-gone, ], c("v1", "v2"), c("g1", "g2"), tol = 0.01))
    if (!noise) expect_gt(sum(att$success, na.rm = TRUE), 0) else expect_equal(sum(att$success, na.rm = TRUE), 0)
  }
})

test_that("the battery runs it with `previous` and `previous_original`, and leaves it out without", {
  d <- titanic_paper()[-1]
  a <- keyed_release(d, FALSE)
  b <- keyed_release(d[-259, ], FALSE)
  bat <- risk_battery(d, a, intruder = diff_it, previous = b, previous_original = d[-259, ],
                      attacks = c("differencing", "composition", "linkage_original"), seed = 1)
  expect_setequal(names(bat$attacks), c("differencing", "composition", "linkage_original"))
  expect_equal(bat$attacks$differencing$rate, 1)
  bat2 <- risk_battery(d, a, intruder = diff_it, previous = b,
                       attacks = c("differencing", "composition"), seed = 1)
  expect_equal(names(bat2$attacks), "composition")
  bat3 <- risk_battery(d, a, intruder = diff_it, attacks = c("differencing", "linkage_original"),
                       seed = 1)
  expect_equal(names(bat3$attacks), "linkage_original")
})

test_that("bad input is refused with a classed error naming the argument", {
  d <- titanic_paper()[-1]
  a <- keyed_release(d, FALSE)
  expect_snapshot(error = TRUE, attack_differencing(d, a))
  expect_snapshot(error = TRUE, attack_differencing(d, a, previous = as.list(a), previous_original = d))
  expect_snapshot(error = TRUE, attack_differencing(d, a, previous = a, previous_original = d[-1, ]))
  expect_snapshot(error = TRUE, attack_differencing(d, a, previous = a[-5], previous_original = d))
  expect_snapshot(error = TRUE, attack_differencing(d, a, previous = a, previous_original = d, tolerance = 2))
  expect_error(attack_differencing(d, a, previous = a), class = "detanon_error_argument")
  expect_error(tune_release(d, vars = diff_vars, strata = diff_strata, verify = "differencing"),
               class = "detanon_error_argument")
})

test_that("sdcMicro's MDAV on testdata: 8 of 8 withdrawn people recovered (the issue's figure)", {
  skip_on_cran()
  skip_if_not_installed("sdcMicro")
  e <- new.env()
  utils::data("testdata", package = "sdcMicro", envir = e)
  d <- e$testdata[c("urbrur", "sex", "expend", "income", "savings")]
  d$urbrur <- factor(d$urbrur)
  d$sex <- factor(d$sex)
  v <- c("expend", "income", "savings")
  mdav <- function(x) {
    out <- x
    cell <- interaction(x[c("urbrur", "sex")], drop = TRUE)
    for (lv in levels(cell)) {
      r <- which(cell == lv)
      res <- suppressWarnings(sdcMicro::microaggregation(as.data.frame(x[r, v]), variables = v, aggr = 10,
                                                         method = "mdav"))
      out[r, v] <- res$mx[, v]
    }
    out
  }
  a <- mdav(d)
  set.seed(36)
  big <- unique(vapply(v, function(col) which.max(d[[col]]), 1L))
  targets <- c(big, sample(setdiff(seq_len(nrow(d)), big), 8L - length(big)))
  got <- vapply(targets, function(t) {
    b <- mdav(d[-t, ])
    att <- attack_differencing(d, a, previous = b, previous_original = d[-t, ], control = FALSE,
                               intruder = intruder(vars = v, strata = c("urbrur", "sex")))
    max(att$success, na.rm = TRUE)
  }, 0)
  expect_equal(sum(got), 8)
})

test_that("two people of one stratum told apart by a published column: the finer cells give both away", {
  d <- titanic_paper()[-1]
  d$Survived <- factor(d$Survived)
  st <- interaction(d[diff_strata], drop = TRUE)
  r <- which(st == st[1L])
  pair <- c(r[d$Survived[r] == "0"][1L], r[d$Survived[r] == "1"][1L])
  # groups formed within Survived: the sums of every stratum x Survived cell are kept
  rel <- function(x) suppressMessages(anonymise_keyed(x, vars = diff_vars, strata = diff_strata, held = "Survived",
                                                      key = diff_key, size = 10, noise = FALSE))
  a <- rel(d)
  b <- rel(d[-pair, ])
  # the strata alone differ by two: no claim
  narrow <- attack_differencing(d, a, previous = b, previous_original = d[-pair, ], intruder = diff_it,
                                control = FALSE)
  # (the two attacked records are the pair, or a copy with the same values)
  expect_equal(sum(!is.na(narrow$success)), 2L)
  expect_equal(sum(narrow$success, na.rm = TRUE), 0)
  # with Survived (the published intruder holds it), each cell differs by one
  wide <- attack_differencing(d, a, previous = b, previous_original = d[-pair, ], control = FALSE,
                              intruder = intruder(vars = diff_vars, strata = diff_strata, held = "Survived"))
  expect_equal(sum(!is.na(wide$success)), 2L)
  expect_equal(sum(wide$success, na.rm = TRUE), 2)
  # the default intruder (every published column) does at least as well
  dflt <- attack_differencing(d, a, previous = b, previous_original = d[-pair, ], control = FALSE)
  expect_gte(sum(dflt$success, na.rm = TRUE), sum(narrow$success, na.rm = TRUE))
})
