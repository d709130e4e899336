# The categorical family of tune_release() (R/tune_categorical.R), and the battery's
# wildcard count of suppressed keys.

# Slow references: the size of every record's exact cell (a missing value a value of its
# own), one record at a time.
ref_exact_size <- function(d, cols) {
  key <- apply(d[cols], 1L, function(r) paste(ifelse(is.na(r), "<NA>", r), collapse = "\r"))
  vapply(key, function(x) sum(key == x), 1L, USE.NAMES = FALSE)
}

# Singling out by the categorical keys with missing released values as wildcards: exactly
# one original agrees with the released keys wherever given, and it is the record's own.
ref_wildcard_single <- function(orig, rel, cols) {
  n <- nrow(rel)
  vapply(seq_len(n), function(i) {
    given <- cols[!is.na(unlist(rel[i, cols]))]
    if (length(given) == length(cols) || !length(given)) return(0)
    ok <- vapply(seq_len(n), function(j) all(as.character(unlist(orig[j, given])) ==
                                              as.character(unlist(rel[i, given]))), NA)
    as.numeric(sum(ok) == 1 && ok[i])
  }, 0)
}

test_that("local suppression within strata is suppress_local() cell for cell, in every stratum", {
  skip_if_not_installed("sdcMicro")
  data("testdata", package = "sdcMicro", envir = environment())
  keys <- c("water", "sex", "age")
  # one stratum: suppress_local() on the whole data
  direct <- suppressMessages(suppress_local(testdata, c("urbrur", keys), k = 3))
  cols <- detanon:::local_suppression(rep(1L, nrow(testdata)), as.list(testdata[c("urbrur", keys)]),
                                      rep(3L, nrow(testdata)))
  for (j in seq_along(cols)) expect_identical(is.na(cols[[j]]), is.na(direct[[c("urbrur", keys)[j]]]))
  expect_identical(sum(vapply(cols, function(v) sum(is.na(v)), 1L)), 47L) # 1 water, 46 age (sdcMicro: 674)
  # within the strata of urbrur: suppress_local() on each stratum alone
  sid <- as.integer(factor(testdata$urbrur))
  cols <- detanon:::local_suppression(sid, as.list(testdata[keys]), rep(3L, nrow(testdata)))
  for (u in unique(sid)) {
    part <- suppressMessages(suppress_local(testdata[sid == u, ], keys, k = 3))
    for (j in seq_along(keys)) expect_identical(is.na(cols[[j]][sid == u]), is.na(part[[keys[j]]]))
  }
})

test_that("the categorical step leaves no exact cell below k and counts the cells it changed", {
  skip_if_not_installed("sdcMicro")
  data("testdata", package = "sdcMicro", envir = environment())
  keys <- c("urbrur", "water", "sex", "age")
  d <- testdata[c(keys, "expend", "income")]
  # suppression only
  st <- detanon:::tune_categorical(d, d, NULL, keys, 3L, "suppress")
  expect_true(all(ref_exact_size(st$df, keys) >= 3))
  # with NA matching any value the counts only grow (sdcMicro's k-anonymity holds too)
  expect_true(all(risk_frequencies(st$df, keys)$fk >= 3))
  by_hand <- vapply(keys, function(v) sum(is.na(st$df[[v]]) & !is.na(d[[v]])), 1L, USE.NAMES = FALSE)
  expect_identical(st$changes$n_suppressed, by_hand)
  expect_identical(st$changes$n_recoded, rep(0L, 4))
  expect_gt(sum(by_hand), 0L)
  expect_identical(st$data, st$df) # a data.frame: the same columns changed in `data`
  expect_identical(st$df[c("expend", "income")], d[c("expend", "income")])
  # generalisation and suppression: age banded, no record in a small cell; every changed
  # column named, and only those
  gs <- detanon:::tune_categorical(d, d, NULL, keys, 10L, c("generalise", "suppress"))
  expect_true(all(ref_exact_size(gs$df, keys) >= 10))
  changed <- keys[vapply(keys, function(v) !identical(as.character(gs$df[[v]]), as.character(d[[v]])), NA)]
  ch <- gs$changes
  expect_setequal(ch$column[ch$n_recoded + ch$n_suppressed > 0], changed)
  expect_true("age" %in% changed)
  expect_lt(ch$categories_after[ch$column == "age"], ch$categories_before[ch$column == "age"])
  # a recoded value is one whose category merges two or more ages (the suppressed ones were
  # recoded before, or not)
  merged <- tapply(d$age, as.character(gs$df$age), function(v) length(unique(v)))
  kept <- !is.na(gs$df$age)
  n_rec <- ch$n_recoded[ch$column == "age"]
  expect_gte(n_rec, sum(merged[as.character(gs$df$age[kept])] > 1))
  expect_lte(n_rec, sum(merged[as.character(gs$df$age[kept])] > 1) + ch$n_suppressed[ch$column == "age"])
  # nothing to do: NULL; "none": NULL
  big <- data.frame(g = rep(c("a", "b"), each = 20), x = rnorm(40))
  expect_null(detanon:::tune_categorical(big, big, NULL, "g", 10L, c("generalise", "suppress")))
  expect_null(detanon:::tune_categorical(d, d, NULL, keys, 3L, "none"))
})

test_that("a stratum smaller than k caps the cells the step asks for, and never merges a key into one category", {
  set.seed(3)
  d <- data.frame(s = rep(c("a", "b"), c(6, 60)), key = sample(c("x", "y", "z"), 66, replace = TRUE),
                  v = rnorm(66))
  st <- detanon:::tune_categorical(d, d, "s", "key", 10L, c("generalise", "suppress"))
  size <- ref_exact_size(st$df, c("s", "key"))
  stratum <- ref_exact_size(st$df, "s")
  expect_true(all(size >= pmin(10, stratum)))
})

test_that("tune_release() on sdcMicro's testdata as a custodian publishes it: the keys changed, named, and the battery passes", {
  skip_if_not_installed("sdcMicro")
  skip_on_cran()
  data("testdata", package = "sdcMicro", envir = environment())
  cols <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age", "hhcivil",
            "expend", "income", "savings")
  v <- c("expend", "income", "savings")
  set.seed(11)
  td <- testdata[sort(sample(nrow(testdata), 1500)), cols]
  rownames(td) <- NULL
  tu <- suppressMessages(tune_release(td, vars = v, methods = "mdav", seed = 1, nthreads = 1))
  expect_false(is.null(tu$release))
  cat_step <- tu$categorical
  expect_false(is.null(cat_step))
  keys <- setdiff(cols, v)
  expect_identical(cat_step$changes$column, keys)
  # every key the release changed is named with its count of changed cells
  rel <- tu$release
  changed <- keys[vapply(keys, function(k) !identical(as.character(rel[[k]]), as.character(td[[k]])), NA)]
  ch <- cat_step$changes
  expect_setequal(ch$column[ch$n_recoded + ch$n_suppressed + ch$n_pram > 0], changed)
  for (k in changed) {
    expect_identical(ch$n_suppressed[ch$column == k], sum(is.na(rel[[k]]) & !is.na(td[[k]])))
  }
  # every cell of the published keys holds the cells' target (1 / worst = 10 records)
  expect_identical(cat_step$k, 10L)
  expect_true(all(ref_exact_size(rel, keys) >= 10))
  # the verification battery passes, the keys' global risk included
  expect_true(isTRUE(tu$chosen$verified))
  expect_lte(tu$battery$categorical$global_risk, 0.1)
  expect_output(print(tu), "Published keys changed before the masking")
  # the report lists the changed cells and the categorical risk
  f <- tempfile(fileext = ".html")
  on.exit(unlink(f))
  release_report(td, tu, f, release_seed = 1)
  txt <- paste(readLines(f), collapse = "\n")
  expect_match(txt, "Categorical keys", fixed = TRUE)
  expect_match(txt, "The cells the search changed, per key", fixed = TRUE)
  # categorical = "none": no release, the columns named (the behaviour before)
  none <- tune_release(td, vars = v, methods = "mdav", categorical = "none", seed = 1, nthreads = 1)
  expect_null(none$release)
  expect_null(none$categorical)
})

test_that("PRAM of the keys is reproducible from the seed and reported per column", {
  set.seed(5)
  d <- data.frame(a = sample(letters[1:4], 300, replace = TRUE), b = sample(1:3, 300, replace = TRUE),
                  x = rnorm(300), y = rnorm(300))
  one <- detanon:::tune_categorical(d, d, NULL, c("a", "b"), 10L, c("generalise", "suppress", "pram"), seed = 2)
  two <- detanon:::tune_categorical(d, d, NULL, c("a", "b"), 10L, c("generalise", "suppress", "pram"), seed = 2)
  expect_identical(one$df, two$df)
  expect_gt(sum(one$changes$n_pram), 0L)
  expect_true(all(ref_exact_size(one$df, c("a", "b")) >= 10))
  expect_match(one$settings, "PRAM")
  # the caller's random stream is left as it was
  set.seed(9)
  before <- runif(1)
  set.seed(9)
  detanon:::tune_categorical(d, d, NULL, c("a", "b"), 10L, "pram", seed = 2)
  expect_identical(runif(1), before)
})

test_that("tune_release() refuses a bad `categorical`", {
  d <- titanic_paper()[-1]
  expect_snapshot(error = TRUE, tune_release(d, vars = c("Age", "Fare"), categorical = "recode"))
  expect_error(tune_release(d, vars = c("Age", "Fare"), categorical = c("none", "suppress")),
               class = "detanon_error_argument")
  expect_error(tune_release(d, vars = c("Age", "Fare"), categorical = NA), class = "detanon_error_argument")
})

test_that("singling out counts a released record with suppressed keys as singled out when one original alone agrees", {
  # record 1's age suppressed: its sex and region hold for no one else; record 4's region
  # suppressed: two originals agree with what is given
  orig <- data.frame(sex = c("f", "m", "m", "f", "f", "m"), region = c("n", "s", "s", "s", "n", "n"),
                     age = c(30, 40, 40, 50, 60, 40), x = c(1, 2, 3, 4, 5, 6))
  rel <- orig
  rel$age[1] <- NA
  rel$region[4] <- NA
  rel$x <- c(1.1, 2.1, 2.9, 4.2, 4.9, 6.1)
  s <- detanon:::attack_view(orig, rel, intruder_published(vars = "x"), control = FALSE, seed = 1)$s
  got <- detanon:::wildcard_singled_out(s)
  expect_identical(got, ref_wildcard_single(orig, rel, c("sex", "region", "age")))
  expect_identical(got[1], 0) # records 1 and 5 are women of the north
  # a variant: record 5 differs in sex from record 1, so record 1 is unique on sex and region
  orig$sex[5] <- "m"
  rel$sex[5] <- "m"
  s <- detanon:::attack_view(orig, rel, intruder_published(vars = "x"), control = FALSE, seed = 1)$s
  expect_identical(detanon:::wildcard_singled_out(s), ref_wildcard_single(orig, rel, c("sex", "region", "age")))
  expect_identical(detanon:::wildcard_singled_out(s)[1], 1)
  # and the attack's success counts it
  so <- attack_singling_out(orig, rel, intruder = intruder_published(vars = "x"), control = FALSE, seed = 1)
  expect_identical(so$success[1], 1)
  b <- risk_battery(orig, rel, intruder = intruder_published(vars = "x"), attacks = "singling_out", seed = 1)
  expect_equal(b$categorical$fk, ref_freq(rel[c("sex", "region", "age")])$fk)
})

test_that("an sdcMicroObj's key variables are left to sdcMicro", {
  skip_if_not_installed("sdcMicro")
  data("testdata", package = "sdcMicro", envir = environment())
  sdc <- sdcMicro::createSdcObj(testdata[1:600, ], keyVars = c("urbrur", "roof", "sex"),
                                numVars = c("expend", "income", "savings"))
  expect_error(tune_release(sdc, strata = c("urbrur", "sex"), categorical = "suppress"),
               class = "detanon_error_argument")
  tu <- suppressMessages(tune_release(sdc, strata = c("urbrur", "sex"), methods = "anonymise", worst = 1,
                                      top_m = 1))
  expect_null(tu$categorical)
})

# sdcMicro's testdata with its sampling weights: 4 keys, the numeric variables, the weights
weighted_testdata <- function(n = NULL) {
  data("testdata", package = "sdcMicro", envir = environment())
  td <- testdata[c("urbrur", "water", "sex", "age", "expend", "income", "savings", "sampling_weight")]
  if (!is.null(n)) {
    set.seed(11)
    td <- td[sort(sample(nrow(td), n)), ]
  }
  rownames(td) <- NULL
  td
}

test_that("with weights, the battery's categorical risk is the negative-binomial risk of the released keys", {
  skip_if_not_installed("sdcMicro")
  td <- weighted_testdata()
  v <- c("expend", "income", "savings")
  keys <- c("urbrur", "sex", "water", "age")
  rel <- anonymise(td, vars = v, strata = c("urbrur", "sex"), k = 3, nthreads = 1)
  rel <- suppressMessages(suppress_local(rel, c("water", "age"), k = 3))
  expect_gt(sum(is.na(rel$age)), 0L) # suppressed cells, matching any value
  run <- function(o, r, ...) {
    risk_battery(o, r, vars = v, strata = c("urbrur", "sex"), attacks = c("linkage_released", "singling_out"),
                 control = FALSE, seed = 1, ...)
  }
  b <- run(td, rel, weights = "sampling_weight")
  cr <- b$categorical
  ri <- risk_individual(rel, keys, weights = "sampling_weight")
  expect_identical(cr$keys, keys)
  expect_identical(cr$weights, "sampling_weight")
  expect_equal(cr$risk, ri$risk, tolerance = 1e-12)
  expect_equal(cr$expected, ri$expected, tolerance = 1e-12)
  expect_equal(cr$global_risk, ri$global_risk, tolerance = 1e-12)
  expect_identical(c(cr$n_above, cr$threshold), c(ri$n_above, 0.1))
  expect_identical(cr$n_unique, sum(ri$fk == 1))
  # sdcMicro's measure_risk() on the same released data
  mr <- sdcMicro::measure_risk(as.data.frame(rel), keyVars = keys, w = "sampling_weight")
  expect_equal(cr$risk, unname(mr$Res[, "risk"]), tolerance = 1e-8)
  expect_equal(cr$expected, mr$global_risk_ER, tolerance = 1e-8)
  expect_output(print(b), "weighted by sampling_weight")
  # the weights are never a key: the attacks are those on the release without the column
  expect_false("sampling_weight" %in% b$intruder$held)
  drop <- function(d) d[setdiff(names(d), "sampling_weight")]
  b0 <- run(drop(td), drop(rel))
  for (a in names(b$attacks)) expect_identical(b$attacks[[a]]$success, b0$attacks[[a]]$success)
  # without weights: as before, the weight column a published key and 1 / fk the risk
  bn <- run(td, rel)
  expect_true("sampling_weight" %in% bn$intruder$held)
  expect_null(bn$categorical$weights)
  expect_equal(bn$categorical$expected, sum(1 / bn$categorical$fk))
  # an sdcMicroObj's weight variable flows into the battery
  sdc <- sdcMicro::createSdcObj(as.data.frame(rel), keyVars = keys, numVars = v, weightVar = "sampling_weight")
  bs <- suppressMessages(risk_battery(sdc, attacks = "linkage_released", control = FALSE, seed = 1))
  expect_identical(bs$categorical$weights, "sampling_weight")
  expect_equal(bs$categorical$risk, ri$risk, tolerance = 1e-12)
})

test_that("a bad weight column is refused, naming the function and `weights`", {
  d <- data.frame(g = rep(c("a", "b"), each = 10), x = seq_len(20) + 0.5, w = 2)
  m <- d
  m$x <- m$x + 0.1
  bad <- function(w) {
    out <- m
    out$w <- w
    out
  }
  expect_snapshot(error = TRUE, {
    risk_battery(d, m, vars = "x", strata = "g", weights = "nope")
    risk_battery(d, bad(rep("2", 20)), vars = "x", strata = "g", weights = "w")
    risk_battery(d, bad(c(-1, rep(2, 19))), vars = "x", strata = "g", weights = "w")
    risk_battery(d, bad(c(rep(2, 19), NA)), vars = "x", strata = "g", weights = "w")
    risk_battery(d, m, vars = "x", strata = "g", weights = c("w", "x"))
    risk_battery(d, m, intruder = intruder(vars = "x", strata = "g", held = "w"), weights = "w")
    tune_release(d, vars = "x", strata = "g", weights = "nope")
    tune_release(bad(c(-1, rep(2, 19))), vars = "x", strata = "g", weights = "w")
    tune_release(d, vars = c("x", "w"), strata = "g", weights = "w")
  })
  expect_error(risk_battery(d, bad(c(rep(2, 19), NA)), vars = "x", strata = "g", weights = "w"),
               class = "detanon_error_data")
  expect_error(risk_battery(d, bad(rep("2", 20)), vars = "x", strata = "g", weights = "w"),
               class = "detanon_error_column")
})

test_that("tune_release(weights = ) publishes the weights as given, and measures the keys' risk with them", {
  skip_if_not_installed("sdcMicro")
  skip_on_cran()
  td <- weighted_testdata(1500)
  v <- c("expend", "income", "savings")
  tu <- suppressMessages(tune_release(td, vars = v, strata = "urbrur", weights = "sampling_weight",
                                      methods = "mdav", seed = 1, nthreads = 1))
  expect_false(is.null(tu$release))
  expect_identical(tu$weights, "sampling_weight")
  expect_identical(tu$keys, c("water", "sex", "age"))
  expect_identical(tu$release$sampling_weight, td$sampling_weight)
  cr <- tu$battery$categorical
  expect_identical(cr$weights, "sampling_weight")
  ri <- risk_individual(tu$release, c("urbrur", "water", "sex", "age"), weights = "sampling_weight")
  expect_equal(cr$risk, ri$risk, tolerance = 1e-12)
  # the default masked variables (the numeric columns) leave the weights out
  tu_default <- suppressMessages(tune_release(td[c("urbrur", v, "sampling_weight")], strata = "urbrur",
                                              weights = "sampling_weight", methods = "mdav", seed = 1,
                                              nthreads = 1))
  expect_identical(release_info(tu_default$release)$settings$vars, v)
  expect_identical(tu_default$release$sampling_weight, td$sampling_weight)
  # an sdcMicroObj's weight variable flows through the search and the report
  sdc <- sdcMicro::createSdcObj(td, keyVars = c("urbrur", "sex"), numVars = v, weightVar = "sampling_weight")
  ts <- tune_release(sdc, methods = "anonymise", worst = 1, top_m = 1, tail = 1, seed = 1, nthreads = 1)
  expect_identical(ts$weights, "sampling_weight")
  expect_identical(ts$battery$categorical$weights, "sampling_weight")
  f <- tempfile(fileext = ".html")
  on.exit(unlink(f))
  release_report(ts, file = f, release_seed = 1)
  expect_match(paste(readLines(f), collapse = "\n"), "with the sampling weights sampling_weight", fixed = TRUE)
})

test_that("tune_release(risk_threshold = ) suppresses keys until no record's individual risk is above it", {
  skip_if_not_installed("sdcMicro")
  skip_on_cran()
  td <- weighted_testdata(1500)
  v <- c("expend", "income", "savings")
  keys <- c("water", "sex", "age")
  tune <- function(...) {
    suppressMessages(tune_release(td, vars = v, strata = "urbrur", weights = "sampling_weight", methods = "mdav",
                                  seed = 1, nthreads = 1, ...))
  }
  none <- tune()
  # cells of 10 records already bound the risk: above that bound the threshold changes nothing
  expect_lt(none$categorical$risk$max_risk, 0.01)
  loose <- tune(risk_threshold = 0.01)
  expect_identical(loose$categorical$n_threshold, 0L)
  expect_identical(loose$release, none$release)
  # below it, the threshold suppresses cells
  thr <- 2e-4
  expect_gt(none$categorical$risk$max_risk, thr)
  tu <- tune(risk_threshold = thr)
  rel <- tu$release
  expect_false(is.null(rel))
  expect_true(isTRUE(tu$chosen$verified))
  # every record of the release at or below the threshold, recomputed by risk_individual()
  r <- risk_individual(rel, c("urbrur", keys), weights = "sampling_weight")
  expect_lte(max(r$risk), thr)
  expect_equal(tu$categorical$risk$max_risk, max(r$risk))
  expect_equal(tu$categorical$risk$global_risk, r$global_risk)
  expect_identical(tu$categorical$risk$n_above, 0L)
  # the cells suppressed are reported exactly, per key and for the threshold
  ch <- tu$categorical$changes
  na_new <- vapply(keys, function(k) sum(is.na(rel[[k]]) & !is.na(td[[k]])), 1L)
  expect_identical(ch$n_suppressed, unname(na_new))
  expect_gt(tu$categorical$n_threshold, 0L)
  expect_identical(sum(ch$n_suppressed) - sum(none$categorical$changes$n_suppressed), tu$categorical$n_threshold)
  expect_match(tu$categorical$settings, "individual risk of at most 2e-04", fixed = TRUE)
  expect_output(print(tu), "individual risk with the weights")
})

test_that("tune_release(risk_threshold = ) is refused without weights, without suppression, or out of reach", {
  d <- data.frame(g = rep(c("a", "b"), each = 30), key = rep(c("x", "y", "z"), 20), x = seq_len(60) + 0.5,
                  w = 10)
  expect_snapshot(error = TRUE, {
    tune_release(d, vars = "x", strata = "g", risk_threshold = 0.01)
    tune_release(d, vars = "x", strata = "g", weights = "w", categorical = "generalise", risk_threshold = 0.01)
    tune_release(d, vars = "x", strata = "g", weights = "w", risk_threshold = 1.5)
    tune_release(d, vars = "x", strata = "g", weights = "w", risk_threshold = 1e-4)
  })
})

test_that("weights unique to most records are published with a warning, as CASC's would be", {
  d <- data.frame(g = rep(c("a", "b"), each = 10), x = seq_len(20) + 0.5, w = c(1:19, 19) + 10)
  m <- d
  m$x <- m$x + 0.1
  expect_warning(b <- risk_battery(d, m, vars = "x", strata = "g", weights = "w", attacks = "linkage_released",
                                   control = FALSE),
                 "unique to 18 of the 20 records", class = "detanon_warning_identifier")
  expect_false("w" %in% b$intruder$held)
  # fewer than half unique: no warning
  d$w <- rep(c(10, 20), 10)
  d$w[1:5] <- 31:35
  m$w <- d$w
  expect_no_warning(risk_battery(d, m, vars = "x", strata = "g", weights = "w", attacks = "linkage_released",
                                 control = FALSE))
})
