# Categorical risk measures (R/risk_categorical.R): sdcMicro's freqCalc(), indivRisk(),
# measure_risk() and ldiversity() on its data sets, and slow R references
# (helper-categorical.R) on random and adversarial data.

sdc_data <- function(name) {
  e <- new.env()
  utils::data(list = name, package = "sdcMicro", envir = e)
  as.data.frame(e[[name]])
}

# ---- sdcMicro ---------------------------------------------------------------------------

test_that("testdata: the issue's numbers (0.54 %, 24.8 re-identifications) on urbrur, water, sex, age", {
  skip_if_not_installed("sdcMicro")
  d <- sdc_data("testdata")
  keys <- c("urbrur", "water", "sex", "age")
  r <- risk_individual(d, keys, weights = "sampling_weight", household = "ori_hid")
  expect_equal(r$expected, 24.78387218, tolerance = 1e-8)
  expect_equal(100 * r$global_risk, 0.5411326, tolerance = 1e-7)
  expect_equal(r$household_expected, 117.2022, tolerance = 1e-6)
  s <- sdcMicro::measure_risk(d, keyVars = keys, w = "sampling_weight", hid = "ori_hid")
  expect_equal(r$risk, unname(s$Res[, "risk"]), tolerance = 1e-8)
  expect_equal(r$fk, unname(s$Res[, "fk"]), tolerance = 1e-8)
  expect_equal(r$Fk, unname(s$Res[, "Fk"]), tolerance = 1e-8)
  expect_equal(r$household_risk, unname(s$Res[, "hier_risk"]), tolerance = 1e-8)
  expect_equal(r$expected, s$global_risk_ER, tolerance = 1e-8)
  x <- s$Res[, 1] # the count print.measure_risk() reports
  expect_identical(r$n_outlying, sum(x > median(x) + 3 * mad(x) & x > 0.1))
  expect_equal(r$global_risk, s$global_risk, tolerance = 1e-8)
  expect_equal(r$household_expected, s$hier_risk_ER, tolerance = 1e-8)
  expect_equal(r$household_global_risk, s$hier_risk, tolerance = 1e-8)
  expect_equal(r$global_threshold, as.numeric(s$global_threshold), tolerance = 1e-8)
  # the sdcMicroObj route reports the same global risk
  obj <- sdcMicro::createSdcObj(d, keyVars = keys, w = "sampling_weight", hhId = "ori_hid")
  expect_equal(r$global_risk, obj@risk$global$risk, tolerance = 1e-8)
  # without weights: the data are the population, risk = 1 / fk
  r0 <- risk_individual(d, keys)
  s0 <- sdcMicro::measure_risk(d, keyVars = keys)
  expect_equal(r0$risk, unname(s0$Res[, "risk"]), tolerance = 1e-8)
  expect_equal(r0$expected, s0$global_risk_ER, tolerance = 1e-8)
  expect_equal(r0$risk, 1 / r0$fk)
})

test_that("other key sets of testdata, free1, francdat and CASCrefmicrodata equal measure_risk()", {
  skip_if_not_installed("sdcMicro")
  compare <- function(d, keys, w = NULL, hid = NULL, g = 0.01) {
    r <- risk_individual(d, keys, weights = w, household = hid, max_global_risk = g)
    s <- sdcMicro::measure_risk(d, keyVars = keys, w = w, hid = hid, max_global_risk = g)
    expect_equal(r$risk, unname(s$Res[, 1]), tolerance = 1e-8)
    expect_equal(r$fk, unname(s$Res[, 2]), tolerance = 1e-8)
    expect_equal(r$Fk, unname(s$Res[, 3]), tolerance = 1e-8)
    expect_equal(r$expected, s$global_risk_ER, tolerance = 1e-8)
    expect_equal(r$global_threshold, as.numeric(s$global_threshold), tolerance = 1e-8)
    if (!is.null(hid)) expect_equal(r$household_risk, unname(s$Res[, 4]), tolerance = 1e-8)
    f <- risk_frequencies(d, keys, weights = w)
    fc <- sdcMicro::freqCalc(d, keyVars = keys, w = w)
    expect_equal(f$fk, fc$fk, tolerance = 1e-8)
    expect_equal(f$Fk, fc$Fk, tolerance = 1e-8)
    expect_identical(f$n_unique, fc$n1)
    expect_identical(f$n_two, fc$n2)
  }
  td <- sdc_data("testdata")
  compare(td, c("urbrur", "roof", "walls", "water", "electcon"), "sampling_weight", "ori_hid")
  compare(td, c("urbrur", "roof", "walls", "water", "sex"), "sampling_weight", g = 1e-4)
  fr <- sdc_data("free1")
  compare(fr, c("REGION", "SEX", "AGE", "MARSTAT"), "WEIGHT") # a global threshold of 0.0086
  compare(fr, c("REGION", "SEX", "AGE", "MARSTAT"), "WEIGHT", g = 1e-4) # and of 0
  compare(fr, c("SEX", "AGE", "KINDPERS"), NULL)
  fd <- sdc_data("francdat")
  compare(fd, c("Key1", "Key2", "Key3", "Key4"), "w")
  cr <- sdc_data("CASCrefmicrodata")
  cr$agi <- cut(cr$AGI, quantile(cr$AGI, 0:8 / 8), include.lowest = TRUE)
  cr$tax <- cut(cr$FEDTAX, quantile(cr$FEDTAX, 0:5 / 5), include.lowest = TRUE)
  cr$int <- cr$INTVAL %% 7
  cr$w <- 1 + cr$AFNLWGT / 1e4
  compare(cr, c("agi", "tax", "int"), "w")
})

test_that("missing key values are wildcards exactly as in freqCalc()", {
  skip_if_not_installed("sdcMicro")
  # the example of freqCalc()'s help page
  fd <- sdc_data("francdat")
  x <- fd
  x[3, 5] <- NA
  x[4, 2] <- x[4, 4] <- NA
  x[5, 6] <- NA
  x[6, 2] <- NA
  keys <- names(fd)[c(2, 4, 5, 6)]
  fc <- sdcMicro::freqCalc(x, keyVars = keys, w = "w")
  f <- risk_frequencies(x, keys, weights = "w")
  expect_equal(f$fk, fc$fk)
  expect_equal(f$Fk, fc$Fk)
  # testdata after random suppression, with rows of all missing keys, one and several keys
  td <- sdc_data("testdata")
  keys <- c("urbrur", "water", "sex", "age")
  set.seed(11)
  for (v in keys) td[[v]][sample(nrow(td), 200)] <- NA
  td[c(5, 900), keys] <- NA
  for (k in list(keys, keys[1:2], "age")) {
    fc <- sdcMicro::freqCalc(td, keyVars = k, w = "sampling_weight")
    f <- risk_frequencies(td, k, weights = "sampling_weight")
    expect_equal(f$fk, fc$fk, tolerance = 1e-8)
    expect_equal(f$Fk, fc$Fk, tolerance = 1e-8)
    s <- sdcMicro::measure_risk(td, keyVars = k, w = "sampling_weight", hid = "ori_hid")
    r <- risk_individual(td, k, weights = "sampling_weight", household = "ori_hid")
    expect_equal(r$risk, unname(s$Res[, 1]), tolerance = 1e-8)
    expect_equal(r$household_risk, unname(s$Res[, 4]), tolerance = 1e-8)
  }
})

test_that("weights within rounding of 1 give sdcMicro's numbers, cancellation included", {
  skip_if_not_installed("sdcMicro")
  d <- data.frame(k = c(1, 1, 2, 3, 3, 3), w = c(1 + 1e-13, 1, 1 + 1e-14, 1, 1, 1 + 1e-15),
                  h = c(1, 1, 1, 2, 2, 2))
  r <- risk_individual(d, "k", weights = "w", household = "h")
  s <- sdcMicro::measure_risk(d, keyVars = "k", w = "w", hid = "h")
  expect_equal(r$risk, unname(s$Res[, 1]), tolerance = 1e-8)
  expect_gt(max(r$risk), 1) # the fk = 2 formula cancels: sdcMicro's value, not a probability
  expect_equal(r$household_risk, unname(s$Res[, 4]), tolerance = 1e-8)
  expect_equal(r$household_risk, ref_household(r$risk, d$h), tolerance = 1e-12)
  expect_null(names(r$household_risk))
})

test_that("risk_ldiversity() equals ldiversity() on testdata and free1", {
  skip_if_not_installed("sdcMicro")
  compare <- function(d, keys, s, c = 2) {
    l <- sdcMicro::ldiversity(d, keyVars = keys, ldiv_index = s, l_recurs_c = c)
    r <- risk_ldiversity(d, keys, sensitive = s, c = c)
    expect_equal(r$distinct, unname(l[, 1]), tolerance = 1e-8)
    expect_equal(r$entropy, unname(l[, 2]), tolerance = 1e-8)
    expect_equal(r$recursive, unname(l[, 3]), tolerance = 1e-8)
  }
  td <- sdc_data("testdata")
  compare(td, c("urbrur", "water", "sex"), "relat")
  compare(td, c("urbrur", "water", "sex", "age"), "electcon", c = 3)
  compare(td, c("roof", "walls"), "relat", c = 1.5)
  fr <- sdc_data("free1")
  compare(fr, c("REGION", "SEX"), "EDUC1")
  compare(fr, c("SEX", "MARSTAT"), "EDUC1", c = 0.5)
})

# ---- slow references --------------------------------------------------------------------

random_keys <- function(n, levels = c(3, 2, 4), p_na = 0.15, seed = 1) {
  set.seed(seed)
  d <- as.data.frame(lapply(levels, function(l) sample(l, n, TRUE)))
  names(d) <- paste0("k", seq_along(levels))
  for (v in names(d)) d[[v]][runif(n) < p_na] <- NA
  if (length(levels) > 1) d$k2 <- letters[d$k2] # a character key
  d$w <- round(runif(n, 1, 60), 2)
  d$h <- sample(ceiling(n / 3), n, TRUE)
  d$s <- sample(c("x", "y", "z", "u"), n, TRUE, prob = c(0.5, 0.3, 0.15, 0.05))
  d$num <- sample(c(1.5, 2, 7, 10, 11), n, TRUE)
  d
}

test_that("fk, Fk, risks and household risks equal the references on random data with missing keys", {
  for (seed in 1:4) {
    d <- random_keys(150, p_na = c(0, 0.1, 0.3, 0.6)[seed], seed = seed)
    if (seed == 3) d[1:4, c("k1", "k2", "k3")] <- NA
    keys <- c("k1", "k2", "k3")
    ref <- ref_freq(d[keys], d$w)
    r <- risk_individual(d, keys, weights = "w", household = "h", max_global_risk = 0.05)
    expect_equal(r$fk, ref$fk)
    expect_equal(r$Fk, ref$Fk, tolerance = 1e-12)
    rr <- ref_risk(ref$fk, ref$Fk)
    expect_equal(r$risk, rr, tolerance = 1e-12)
    expect_equal(r$household_risk, ref_household(rr, d$h), tolerance = 1e-12)
    expect_equal(r$expected, sum(rr), tolerance = 1e-12)
    expect_identical(r$n_above, sum(rr > 0.1))
    expect_identical(r$n_outlying, sum(rr > median(rr) + 3 * mad(rr) & rr > 0.1))
    expect_identical(r$global_threshold, ref_threshold(rr, 0.05))
    r1 <- risk_individual(d, "k1")
    expect_equal(r1$fk, ref_freq(d["k1"])$fk)
    expect_equal(r1$risk, 1 / r1$fk)
  }
})

test_that("adversarial keys: one record, all unique, all equal, all missing", {
  one <- data.frame(a = 1, b = "x", w = 5)
  r <- risk_individual(one, c("a", "b"), weights = "w")
  expect_equal(r$fk, 1)
  expect_equal(r$Fk, 5)
  expect_equal(r$risk, ref_risk(1, 5))
  uniq <- data.frame(a = 1:20, b = 20:1, w = rep(c(1, 3), 10))
  r <- risk_individual(uniq, c("a", "b"), weights = "w")
  expect_equal(r$fk, rep(1, 20))
  expect_equal(r$risk[uniq$w == 1], rep(1, 10)) # Fk = fk: sampled with certainty
  expect_equal(r$risk, ref_risk(r$fk, r$Fk))
  same <- data.frame(a = rep(2, 30), b = rep("q", 30), w = 10)
  r <- risk_individual(same, c("a", "b"), weights = "w")
  expect_equal(r$fk, rep(30, 30))
  expect_equal(r$Fk, rep(300, 30))
  expect_equal(r$risk, ref_risk(r$fk, r$Fk))
  allna <- data.frame(a = c(NA, NA, 1), b = c(NA, NA, "x"), w = c(2, 3, 4))
  ref <- ref_freq(allna[c("a", "b")], allna$w)
  f <- risk_frequencies(allna, c("a", "b"), weights = "w")
  expect_equal(f$fk, ref$fk)
  expect_equal(f$Fk, ref$Fk)
  expect_equal(f$fk, c(3, 3, 1)) # all-missing keys count everyone; not counted for complete keys
  nan <- data.frame(a = c(0.5, NA, NaN, 0.5, 1.5), b = c("x", "x", "x", NA, "y"), w = 1:5)
  ref <- ref_freq(nan[c("a", "b")], nan$w)
  f <- risk_frequencies(nan, c("a", "b"), weights = "w")
  expect_equal(f$fk, ref$fk) # NaN is missing too: a wildcard like NA
  expect_equal(f$Fk, ref$Fk)
  nokeys <- data.frame(a = c(NA, NA), w = c(2, 3))
  expect_equal(risk_frequencies(nokeys, "a", weights = "w")$Fk, c(5, 5))
  empty <- data.frame(a = integer(), w = numeric())
  r <- risk_individual(empty, "a", weights = "w")
  expect_identical(r$n, 0L)
  expect_identical(r$risk, numeric())
})

test_that("results do not depend on row order", {
  d <- random_keys(120, p_na = 0.2, seed = 9)
  keys <- c("k1", "k2", "k3")
  p <- sample(nrow(d))
  r <- risk_individual(d, keys, weights = "w", household = "h")
  rp <- risk_individual(d[p, ], keys, weights = "w", household = "h")
  expect_equal(rp$risk, r$risk[p])
  expect_equal(rp$household_risk, r$household_risk[p])
  l <- risk_ldiversity(d, keys, sensitive = "s")
  expect_equal(risk_ldiversity(d[p, ], keys, sensitive = "s")$entropy, l$entropy[p])
  t <- risk_tcloseness(d, keys, sensitive = "num")
  expect_equal(risk_tcloseness(d[p, ], keys, sensitive = "num")$t, t$t[p])
})

test_that("l-diversity and t-closeness equal the references, with missing keys and sensitive values", {
  for (seed in 1:3) {
    d <- random_keys(200, levels = c(2, 3, 2)[seq_len(seed)], p_na = 0.1, seed = seed)
    keys <- grep("^k", names(d), value = TRUE)
    d$s[c(3, 9, 27)] <- NA
    for (cc in c(0.5, 1, 2, 3.5)) {
      ref <- ref_ldiversity(d[keys], d$s, c = cc)
      l <- risk_ldiversity(d, keys, sensitive = "s", c = cc)
      expect_equal(l$distinct, ref$distinct)
      expect_equal(l$entropy, ref$entropy, tolerance = 1e-12)
      expect_equal(l$recursive, ref$recursive)
      expect_equal(l$l_entropy, min(ref$entropy), tolerance = 1e-12)
    }
    t <- risk_tcloseness(d, keys, sensitive = "s")
    expect_identical(t$distance, "equal")
    expect_equal(t$t, ref_tcloseness(d[keys], d$s, "equal"), tolerance = 1e-12)
    t <- risk_tcloseness(d, keys, sensitive = "num")
    expect_identical(t$distance, "ordered")
    expect_equal(t$t, ref_tcloseness(d[keys], d$num, "ordered"), tolerance = 1e-12)
    expect_equal(t$t_max, max(t$t))
    t <- risk_tcloseness(d, keys, sensitive = "num", distance = "equal")
    expect_equal(t$t, ref_tcloseness(d[keys], d$num, "equal"), tolerance = 1e-12)
  }
  # an ordered factor: the order of its levels, not of the labels
  d <- data.frame(g = rep(1:3, each = 4), s = factor(rep(c("lo", "mid", "hi"), 4), c("lo", "mid", "hi"),
                                                     ordered = TRUE))
  d$s[1:4] <- "hi"
  expect_equal(risk_tcloseness(d, "g", sensitive = "s")$t,
               ref_tcloseness(d["g"], as.integer(d$s), "ordered"), tolerance = 1e-12)
  # one class holding everything: distance 0; every record its own class; one value
  d <- data.frame(g = 1, s = c(1, 2, 2, 5))
  expect_equal(risk_tcloseness(d, "g", sensitive = "s")$t, rep(0, 4))
  d <- data.frame(g = 1:4, s = c(1, 2, 2, 5))
  expect_equal(risk_tcloseness(d, "g", sensitive = "s")$t, ref_tcloseness(d["g"], d$s, "ordered"))
  d <- data.frame(g = 1:4, s = 1)
  expect_equal(risk_tcloseness(d, "g", sensitive = "s")$t, rep(0, 4))
  l <- risk_ldiversity(d, "g", sensitive = "s")
  expect_equal(c(l$l_distinct, l$l_entropy, l$l_recursive), c(1, 1, 1))
})

test_that("key_ids() gives the partition of stratum_ids() for every kind of key column", {
  set.seed(5)
  n <- 500
  d <- data.frame(
    int = sample(c(1:5, NA), n, TRUE), big = sample(c(1e9, -3e9, 7, NA), n, TRUE),
    dbl = sample(c(0.5, 1.25, NA, -2), n, TRUE), chr = sample(c("a", "b", NA), n, TRUE),
    lgl = sample(c(TRUE, FALSE, NA), n, TRUE),
    fac = factor(sample(c("x", "y", NA), n, TRUE), levels = c("z", "y", "x")),
    wide = sample(1e6, n, TRUE), stringsAsFactors = FALSE
  )
  same_partition <- function(a, b) {
    expect_identical(length(unique(a)), length(unique(b)))
    expect_identical(length(unique(paste(a, b))), length(unique(a)))
  }
  for (cols in list("int", "big", "dbl", "chr", "lgl", "fac", names(d), c("wide", "int", "chr"))) {
    same_partition(detanon:::key_ids(d, cols), detanon:::stratum_ids(d, cols))
  }
  expect_identical(detanon:::key_ids(d[0, ], "int"), integer())
})

test_that("the C sums per group equal rowsum()", {
  set.seed(3)
  g <- sample(50, 1e4, TRUE)
  x <- rexp(1e4)
  expect_equal(detanon:::group_sums(x, g, 60), c(as.vector(rowsum(x, g)), rep(0, 10)), tolerance = 1e-13)
  expect_identical(detanon:::group_sums(numeric(), integer(), 2), c(0, 0))
  # input that breaks the R layer's contract is refused, not written out of bounds
  expect_error(.Call(detanon:::C_ffi_group_sums, c(1, 2), c(1L, 3L), 2L), "out of range")
  expect_error(.Call(detanon:::C_ffi_group_sums, c(1, 2), c(0L, 1L), 2L), "out of range")
  expect_error(.Call(detanon:::C_ffi_group_sums, c(1, 2), c(NA, 1L), 2L), "out of range")
  expect_error(.Call(detanon:::C_ffi_group_sums, c(1, 2), 1L, 2L), "differ in length")
  # sums in row order, as R adds them
  x <- c(1e16, 1, -1e16, 1)
  expect_identical(detanon:::group_sums(x, rep(1L, 4), 1), ((1e16 + 1) + -1e16) + 1)
})

# ---- bad input --------------------------------------------------------------------------

test_that("bad input is refused with classed errors naming the function and argument", {
  d <- random_keys(10, p_na = 0)
  bad_w <- function(v) {
    d$w[2] <- v
    d
  }
  expect_snapshot(error = TRUE, {
    risk_individual(d, c("k1", "nope"))
    risk_individual(d, character())
    risk_individual(bad_w(0), "k1", weights = "w")
    risk_individual(bad_w(-3), "k1", weights = "w")
    risk_individual(bad_w(NA), "k1", weights = "w")
    risk_individual(bad_w(0.5), "k1", weights = "w")
    risk_individual(d, "k1", weights = "k2")
    risk_individual(d, "k1", weights = c("w", "w"))
    risk_individual(d, "k1", weights = "k1")
    risk_individual(d, "k1", household = "k1")
    risk_individual(d, "k1", threshold = 0)
    risk_individual(d, "k1", max_global_risk = 1)
    risk_frequencies(list(a = 1), "a")
    risk_ldiversity(d, "k1")
    risk_ldiversity(d, "k1", sensitive = "k1")
    risk_ldiversity(d, "k1", sensitive = "s", c = 0)
    risk_tcloseness(d, "k1", sensitive = "s", distance = "hierarchical")
  })
  e <- tryCatch(risk_individual(bad_w(0), "k1", weights = "w"), error = identity)
  expect_s3_class(e, c("detanon_error_data", "detanon_error"))
  e <- tryCatch(risk_individual(d, "k1", weights = "k2"), error = identity)
  expect_s3_class(e, "detanon_error_column")
  dh <- d
  dh$h[3] <- NA
  expect_error(risk_individual(dh, "k1", household = "h"), class = "detanon_error_data")
  dn <- d
  dn$num[2] <- NA
  expect_error(risk_tcloseness(dn, "k1", sensitive = "num"), class = "detanon_error_data")
  # nothing changed: the data are untouched
  d0 <- d
  try(risk_individual(bad_w(0), "k1", weights = "w"), silent = TRUE)
  expect_identical(d, d0)
})

test_that("print methods fit 80 columns", {
  d <- random_keys(60, seed = 4)
  keys <- c("k1", "k2", "k3")
  out <- c(capture.output(print(risk_individual(d, keys, weights = "w", household = "h"))),
           capture.output(print(risk_frequencies(d, keys))),
           capture.output(print(risk_ldiversity(d, keys, sensitive = "s"))),
           capture.output(print(risk_tcloseness(d, keys, sensitive = "num"))))
  expect_true(all(nchar(out) <= 80))
  expect_snapshot(print(risk_individual(d, keys, weights = "w", household = "h")))
})

# ---- population uniqueness ----------------------------------------------------------------

test_that("risk_population_uniques(): Zayatz and Pitman equal the slow references", {
  for (seed in 1:3) {
    set.seed(seed)
    x <- sample(1e5, c(3000, 800, 5000)[seed], TRUE, prob = 1 / (1:1e5)^c(1.1, 1.3, 1.05)[seed])
    d <- data.frame(key = x, w = 40)
    sizes <- as.vector(table(x))
    r <- risk_population_uniques(d, "key", weights = "w")
    expect_equal(r$population, 40 * nrow(d))
    expect_identical(r$n_sample_uniques, sum(sizes == 1))
    expect_equal(r$zayatz, ref_zayatz(sizes, r$population, nrow(d)), tolerance = 1e-10)
    p <- ref_pitman(sizes)
    expect_equal(c(r$pitman_theta, r$pitman_alpha), p, tolerance = 1e-5)
    expect_equal(r$pitman, exp(lgamma(p[1] + 1) - lgamma(p[1] + p[2])) * r$population^p[2], tolerance = 1e-4)
    # another population size: Zayatz moves, Pitman's parameters do not
    r2 <- risk_population_uniques(d, "key", population = 1e6)
    expect_equal(r2$zayatz, ref_zayatz(sizes, 1e6, nrow(d)), tolerance = 1e-10)
    expect_equal(r2$pitman_theta, r$pitman_theta, tolerance = 1e-8)
  }
  # no sample uniques: no population uniques; a finite number of categories: no Pitman maximum
  d <- data.frame(a = rep(1:3, each = 4))
  r <- risk_population_uniques(d, "a", population = 100)
  expect_identical(c(r$zayatz, r$pitman), c(0, 0))
  set.seed(4)
  d <- data.frame(a = sample(1:6, 400, TRUE), b = sample(1:3, 400, TRUE))
  d$a[1:5] <- 100 + 1:5
  r <- risk_population_uniques(d, c("a", "b"), population = 4e4)
  expect_equal(r$zayatz, ref_zayatz(as.vector(table(paste(d$a, d$b))), 4e4, 400), tolerance = 1e-10)
  expect_identical(r$pitman, NA_real_)
  expect_snapshot(error = TRUE, {
    risk_population_uniques(d, c("a", "b"))
    risk_population_uniques(d, c("a", "b"), population = 10)
  })
})

# A sample with fraction `f` of a population of K classes of sizes 1 + NB(a, b).
snb_sample <- function(a, b, K, f, seed) {
  set.seed(seed)
  sz <- 1 + stats::rnbinom(K, size = a, prob = b)
  pop <- rep(seq_len(K), sz)
  list(data = data.frame(key = pop[stats::runif(length(pop)) < f]), population = length(pop),
       uniques = sum(sz == 1))
}

test_that("risk_population_uniques(): SNB equals the slow reference and finds an SNB population's uniques", {
  for (cfg in list(c(0.5, 0.3, 20000, 0.1, 1), c(2, 0.6, 30000, 0.2, 2), c(0.2, 0.05, 10000, 0.3, 3))) {
    s <- snb_sample(cfg[1], cfg[2], cfg[3], cfg[4], cfg[5])
    r <- risk_population_uniques(s$data, "key", population = s$population)
    ref <- ref_snb(as.vector(table(s$data$key)), nrow(s$data) / s$population)
    expect_equal(r$snb_classes, ref[4], tolerance = 1e-12)
    expect_equal(c(r$snb, r$snb_alpha, r$snb_beta), ref[1:3], tolerance = 1e-5)
    expect_equal(r$snb_share, r$snb / s$population)
  }
  # at a large sampling fraction the model recovers the population's uniques
  expect_lt(abs(r$snb / s$uniques - 1), 0.1)
  # testdata's sample of 1 % (weights 100)
  skip_if_not_installed("sdcMicro")
  d <- sdc_data("testdata")
  keys <- c("urbrur", "water", "sex", "age")
  r <- risk_population_uniques(d, keys, weights = "sampling_weight")
  ref <- ref_snb(as.vector(table(do.call(paste, d[keys]))), 0.01)
  expect_equal(c(r$snb, r$snb_alpha, r$snb_beta), ref[1:3], tolerance = 1e-5)
})

test_that("risk_population_uniques(): SNB's limits (the population itself, no class of size 2, no unique)", {
  d <- data.frame(key = c(1, 2, 3, 4, 4, 4, 5, 5, 5))
  r <- risk_population_uniques(d, "key", population = 9)
  expect_identical(r$snb, 3)
  r <- risk_population_uniques(d, "key", population = 900)
  expect_identical(r$snb, NA_real_)
  expect_identical(risk_population_uniques(data.frame(key = rep(1:3, 2)), "key", population = 60)$snb, 0)
})

test_that("tibbles and data.tables give the numbers of a data.frame", {
  d <- random_keys(80, p_na = 0.1, seed = 12)
  keys <- c("k1", "k2", "k3")
  r <- risk_individual(d, keys, weights = "w", household = "h")
  l <- risk_ldiversity(d, keys, sensitive = "s")
  t <- risk_tcloseness(d, keys, sensitive = "num")
  for (pkg in c("tibble", "data.table")) {
    skip_if_not_installed(pkg)
    x <- if (pkg == "tibble") tibble::as_tibble(d) else data.table::as.data.table(d)
    expect_identical(risk_individual(x, keys, weights = "w", household = "h")$risk, r$risk)
    expect_identical(risk_ldiversity(x, keys, sensitive = "s")$entropy, l$entropy)
    expect_identical(risk_tcloseness(x, keys, sensitive = "num")$t, t$t)
  }
})

test_that("an sdcMicroObj: the risk sdcMicro holds, before and after local suppression", {
  skip_if_not_installed("sdcMicro")
  d <- sdc_data("testdata")
  keys <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex")
  obj <- sdcMicro::createSdcObj(d, keyVars = keys, numVars = c("expend", "income"),
                                w = "sampling_weight", hhId = "ori_hid")
  check <- function(obj) {
    r <- risk_individual(obj)
    ind <- obj@risk$individual
    expect_equal(r$risk, unname(ind[, "risk"]), tolerance = 1e-8)
    expect_equal(r$fk, unname(ind[, "fk"]), tolerance = 1e-8)
    expect_equal(r$Fk, unname(ind[, "Fk"]), tolerance = 1e-8)
    expect_equal(r$household_risk, unname(ind[, "hier_risk"]), tolerance = 1e-8)
    expect_equal(r$expected, obj@risk$global$risk_ER, tolerance = 1e-8)
    expect_equal(r$household_expected, obj@risk$global$hier_risk_ER, tolerance = 1e-8)
    expect_equal(risk_frequencies(obj)$fk, r$fk)
    r
  }
  before <- check(obj)
  obj <- sdcMicro::localSuppression(obj, k = 3)
  after <- check(obj)
  expect_true(anyNA(sdcMicro::get.sdcMicroObj(obj, "manipKeyVars")))
  expect_lt(after$expected, before$expected)
  # explicit arguments win over the object's
  expect_null(risk_individual(obj, weights = NULL, household = NULL)$household_risk)
  expect_equal(risk_individual(obj, weights = NULL)$risk, 1 / after$fk)
})

test_that("the keys' codes are combined as a plain R reference combines them, past the integer range too", {
  ref_ids <- function(data, strata) {
    # every record's combination of key values, numbered in the order of the combinations
    # (each key's values in their sorted order, NA last; the first key varying fastest)
    codes <- lapply(data[strata], function(x) {
      u <- sort(unique(x), na.last = TRUE)
      match(x, u)
    })
    o <- do.call(order, rev(codes))
    key <- do.call(paste, c(codes, sep = "\r"))
    match(key, unique(key[o]))
  }
  set.seed(5)
  for (n in c(1, 7, 2000)) {
    d <- data.frame(a = sample(c(1:5, NA), n, TRUE), b = factor(sample(c("p", "q", NA), n, TRUE), levels = c("p", "q", "r")),
                    e = sample(c("x", "y", NA), n, TRUE), f = round(stats::rnorm(n) * 1e5))
    for (ks in list("a", c("a", "b"), c("b", "e", "a"), c("f", "a"))) {
      expect_identical(detanon:::key_ids(d, ks), ref_ids(d, ks), info = paste(n, paste(ks, collapse = ",")))
    }
  }
  # two keys of 50,000 distinct values each: their product passes the integer range
  n <- 5e4
  d <- data.frame(f = stats::rnorm(n), g = stats::rnorm(n))
  expect_true(all(risk_frequencies(d, c("f", "g"))$fk == 1))
  d[1:10, ] <- d[11:20, ]
  expect_identical(sum(risk_frequencies(d, c("f", "g"))$fk == 2), 20L)
})
