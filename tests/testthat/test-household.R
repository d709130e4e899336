# Households in the masking verbs (R/household.R): household-level columns stay constant
# within households, equal to the verb run on the household table; person-level columns
# are masked record by record; without `household` nothing changes.

hh_testdata <- function() {
  e <- new.env()
  utils::data("testdata", package = "sdcMicro", envir = e)
  d <- e$testdata
  d$hh_income <- stats::ave(d$income, d$ori_hid, FUN = sum) # a household-level numeric column
  d
}

# Is `x` constant within every household of `h`?
constant_within <- function(x, h) {
  all(tapply(seq_along(x), h, function(i) length(unique(as.character(x[i]))) == 1L))
}

# Random households of 1 to 6 members with household-level and person-level columns.
hh_random <- function(n_hh, seed) {
  set.seed(seed)
  size <- sample(1:6, n_hh, TRUE)
  h <- rep(sample(1e6, n_hh), size) # ids in no particular order
  n <- length(h)
  hh_x <- stats::rlnorm(n_hh)[match(h, unique(h))]
  region <- sample(c("a", "b"), n_hh, TRUE)[match(h, unique(h))]
  roof <- sample(c("tile", "iron", "straw"), n_hh, TRUE)[match(h, unique(h))]
  o <- sample(n) # members not next to each other
  data.frame(hid = h, region = region, roof = roof, sex = sample(c("f", "m"), n, TRUE),
             age = sample(20:70, n, TRUE), hh_x = hh_x, x = stats::rnorm(n), y = stats::rexp(n))[o, ]
}

test_that("continuous verbs keep a household-level column constant in testdata's households", {
  skip_if_not_installed("sdcMicro")
  d <- hh_testdata()
  vars <- c("expend", "income", "savings", "hh_income")
  first <- !duplicated(d$ori_hid)
  for (verb in c("anonymise", "anonymise_mdav", "anonymise_adaptive", "anonymise_keyed")) {
    f <- getExportedValue("detanon", verb)
    extra <- if (verb == "anonymise_keyed") list(key = "a secret of sixteen chars") else list()
    run <- function(...) do.call(f, c(list(...), extra, list(strata = "urbrur", k = 3, check_identifiers = FALSE,
                                                               nthreads = 1)))
    out <- run(d, vars = vars, household = "ori_hid")
    expect_true(constant_within(out$hh_income, out$ori_hid), info = verb)
    expect_false(constant_within(out$income, out$ori_hid), info = verb)
    expect_false(identical(out$hh_income, d$hh_income), info = verb)
    info <- release_info(out)
    expect_identical(info$settings$household, "ori_hid")
    expect_identical(info$settings$household_vars, "hh_income")
    expect_identical(info$settings$vars, vars)
    expect_identical(info$counts$n_households, 1000L)
    # the household-level column is the verb's release of the household table
    tab <- run(d[first, ], vars = "hh_income")
    expect_equal(out$hh_income, tab$hh_income[match(out$ori_hid, tab$ori_hid)], info = verb)
    # the person-level columns are the verb's release without the household-level one
    per <- run(d, vars = c("expend", "income", "savings"))
    expect_equal(out[c("expend", "income", "savings")], as.data.frame(per)[c("expend", "income", "savings")],
                 ignore_attr = TRUE, info = verb)
    # the other columns are untouched
    expect_identical(out[c("roof", "sex", "ori_hid")], d[c("roof", "sex", "ori_hid")], ignore_attr = TRUE)
  }
})

test_that("without `household` the release is the one of before", {
  skip_if_not_installed("sdcMicro")
  d <- hh_testdata()
  vars <- c("expend", "income", "hh_income")
  a <- anonymise(d, vars = vars, strata = "urbrur", nthreads = 1)
  expect_identical(anonymise(d, vars = vars, strata = "urbrur", household = NULL, nthreads = 1), a)
  expect_false(constant_within(a$hh_income, a$ori_hid))
  expect_null(release_info(a)$settings$household)
  # households of one record each: the same values as the plain verb
  d1 <- d[!duplicated(d$ori_hid), ]
  b <- anonymise(d1, vars = vars, strata = "urbrur", household = "ori_hid", check_identifiers = FALSE,
                 nthreads = 1)
  expect_identical(release_info(b)$settings$household_vars, character())
  expect_equal(b[vars], anonymise(d1, vars = vars, strata = "urbrur", check_identifiers = FALSE,
                                                nthreads = 1)[vars], ignore_attr = TRUE)
})

test_that("household-level columns are found on random households, in any row order", {
  for (seed in 1:3) {
    d <- hh_random(300, seed)
    out <- anonymise(d, vars = c("hh_x", "x", "y"), strata = "region", k = 3, household = "hid", nthreads = 1)
    expect_true(constant_within(out$hh_x, out$hid))
    expect_identical(release_info(out)$settings$household_vars, "hh_x")
    # permuting the records permutes the release
    o <- sample(nrow(d))
    out2 <- anonymise(d[o, ], vars = c("hh_x", "x", "y"), strata = "region", k = 3, household = "hid",
                      nthreads = 1)
    expect_equal(out2$hh_x, out$hh_x[o])
    # a person-level stratum does not split households in the household pass
    out3 <- anonymise(d, vars = c("hh_x", "x"), strata = c("region", "sex"), k = 3, household = "hid",
                      nthreads = 1)
    expect_true(constant_within(out3$hh_x, out3$hid))
    expect_identical(release_info(out3)$counts$household_counts$n_strata, 2L)
  }
})

test_that("records removed by a verb take their households' values with them", {
  d <- hh_random(200, 7)
  d$x[c(3, 10)] <- NA
  out <- anonymise(d, vars = c("hh_x", "x"), strata = "region", k = 3, na = "complete", household = "hid",
                   nthreads = 1)
  expect_identical(nrow(out), nrow(d) - 2L)
  expect_true(constant_within(out$hh_x, out$hid))
  expect_identical(release_info(out)$counts$n, nrow(d) - 2L)
})

test_that("anonymise_pram() post-randomises household-level columns per household", {
  skip_if_not_installed("sdcMicro")
  d <- hh_testdata()
  vars <- c("roof", "walls", "water", "sex", "relat")
  out <- suppressMessages(anonymise_pram(d, vars = vars, strata = "urbrur", pd = 0.5, household = "ori_hid",
                                         seed = 3))
  for (v in c("roof", "walls", "water")) expect_true(constant_within(out[[v]], out$ori_hid), info = v)
  expect_false(constant_within(out$sex, out$ori_hid))
  info <- release_info(out)
  expect_identical(info$settings$household_vars, c("roof", "walls", "water"))
  changed <- sum(vapply(vars, function(v) sum(out[[v]] != d[[v]]), integer(1)))
  expect_identical(info$counts$n_changed, as.numeric(changed))
  expect_gt(sum(out$roof != d$roof), 0L)
  # reproducible from `seed`, and the caller's stream is restored
  set.seed(99)
  before <- .Random.seed
  again <- suppressMessages(anonymise_pram(d, vars = vars, strata = "urbrur", pd = 0.5, household = "ori_hid",
                                           seed = 3))
  expect_identical(.Random.seed, before)
  expect_identical(again, out)
  # random households
  r <- hh_random(400, 11)
  out <- suppressMessages(anonymise_pram(r, vars = c("roof", "sex"), pd = 0.2, household = "hid", seed = 1))
  expect_true(constant_within(out$roof, out$hid))
  expect_false(constant_within(out$sex, out$hid))
})

test_that("suppress_local() suppresses household-level keys for whole households and stays k-anonymous", {
  skip_if_not_installed("sdcMicro")
  d <- hh_testdata()
  keys <- c("urbrur", "water", "roof", "sex", "age")
  for (k in c(2, 3, 5)) {
    out <- suppressMessages(suppress_local(d, keys, k = k, household = "ori_hid"))
    for (v in c("urbrur", "water", "roof")) expect_true(constant_within(out[[v]], out$ori_hid), info = v)
    fk <- risk_frequencies(out, keys)$fk
    expect_gte(min(fk), k)
    info <- release_info(out)
    expect_equal(info$counts$min_size, min(fk))
    expect_identical(info$settings$household_vars, c("urbrur", "water", "roof"))
    by_key <- vapply(keys, function(v) sum(is.na(out[[v]])), integer(1))
    expect_identical(info$counts$changed_by_key, by_key)
    expect_identical(info$counts$n_changed, sum(by_key))
  }
  r <- hh_random(300, 5)
  out <- suppressMessages(suppress_local(r, c("region", "roof", "sex", "age"), k = 3, household = "hid"))
  expect_true(constant_within(out$roof, out$hid))
  expect_gte(min(risk_frequencies(out, c("region", "roof", "sex", "age"))$fk), 3)
})

test_that("tibbles and data.tables come back in their class", {
  skip_if_not_installed("tibble")
  skip_if_not_installed("data.table")
  d <- hh_random(150, 3)
  ref <- anonymise(d, vars = c("hh_x", "x"), strata = "region", household = "hid", nthreads = 1)
  for (as_cls in list(tibble::as_tibble, data.table::as.data.table)) {
    x <- as_cls(d)
    out <- anonymise(x, vars = c("hh_x", "x"), strata = "region", household = "hid", nthreads = 1)
    expect_identical(class(out), class(x))
    expect_equal(as.data.frame(out)$hh_x, ref$hh_x)
    expect_false(is.null(release_info(out)))
  }
})

test_that("bad `household` is refused with a classed error", {
  d <- hh_random(20, 1)
  expect_snapshot(error = TRUE, {
    anonymise(d, vars = "x", strata = "region", household = "nope")
    anonymise(d, vars = "x", strata = "region", household = c("hid", "region"))
    anonymise(d, vars = c("x", "hid"), strata = "region", household = "hid")
    suppress_local(d, c("region", "hid"), household = "hid")
  })
  d$hid[2] <- NA
  expect_error(anonymise_pram(d, vars = "roof", household = "hid"), class = "detanon_error_data")
})

test_that("a household release is replayed by household, bit for bit (the recipe intruder's replay)", {
  skip_if_not_installed("sdcMicro")
  d <- hh_testdata()[1:1500, ]
  vars <- c("expend", "income", "savings", "hh_income")
  for (verb in c("anonymise", "anonymise_mdav", "anonymise_adaptive")) {
    f <- getExportedValue("detanon", verb)
    out <- f(d, vars = vars, strata = "urbrur", k = 3, household = "ori_hid", check_identifiers = FALSE,
             nthreads = 1)
    info <- release_info(out)
    again <- detanon:::replay_mask(info)(d)
    expect_identical(as.list(again[vars]), as.list(out[vars]), info = verb)
    # replayed record by record (the household ids left out), the household-level column differs
    info$settings$household <- NULL
    apart <- detanon:::replay_mask(info)(d)
    expect_false(identical(apart$hh_income, out$hh_income), info = verb)
  }
})
