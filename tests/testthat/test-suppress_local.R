# suppress_local(): greedy local suppression to k-anonymity with missing values as
# wildcards, against a brute-force count (helper-suda2.R) and sdcMicro's localSuppression().

quiet_suppress <- function(...) suppressMessages(suppress_local(...), classes = "detanon_message_suppress")

expect_k_anonymous <- function(out, data, strata, k, combs = NULL) {
  sets <- if (is.null(combs)) list(strata) else
    unlist(lapply(combs, function(s) utils::combn(strata, s, simplify = FALSE)), recursive = FALSE)
  for (s in sets) expect_gte(min(ref_wildcard_counts(as.data.frame(out)[s])), k)
  # only key cells changed, and only to NA
  other <- setdiff(names(data), strata)
  expect_identical(as.data.frame(out)[other], as.data.frame(data)[other])
  for (v in strata) {
    same <- is.na(out[[v]]) | (as.character(out[[v]]) == as.character(data[[v]]))
    expect_true(all(same %in% TRUE))
    expect_true(all(is.na(out[[v]][is.na(data[[v]])])))
  }
  added <- vapply(strata, function(v) sum(is.na(out[[v]]) & !is.na(data[[v]])), numeric(1))
  info <- release_info(out)
  expect_identical(info$counts$n_changed, as.integer(sum(added)))
  expect_identical(unname(info$counts$changed_by_key), as.integer(added))
  invisible(sum(added))
}

test_that("the counts with missing values as wildcards equal the brute-force reference", {
  set.seed(5)
  for (it in 1:40) {
    n <- sample(1:60, 1)
    m <- sample(1:4, 1)
    x <- as.data.frame(lapply(seq_len(m), function(j) sample(1:3, n, TRUE)))
    x[matrix(runif(n * m) < 0.25, n)] <- NA
    codes <- matrix(unlist(lapply(x, function(z) match(z, sort(unique(z[!is.na(z)]))))), n, m)
    expect_identical(as.numeric(detanon:::wildcard_counts(codes)), ref_wildcard_counts(x))
  }
})

test_that("the reference counts are sdcMicro's freqCalc() counts", {
  skip_if_not_installed("sdcMicro")
  set.seed(3)
  for (it in 1:30) {
    n <- sample(2:60, 1)
    m <- sample(1:4, 1)
    x <- as.data.frame(lapply(seq_len(m), function(j) sample(1:3, n, TRUE)))
    names(x) <- paste0("v", seq_len(m))
    x[matrix(runif(n * m) < 0.25, n)] <- NA
    fk <- sdcMicro::freqCalc(x, keyVars = names(x), alpha = 1)$fk
    expect_identical(as.numeric(fk), ref_wildcard_counts(x))
  }
})

test_that("the result is k-anonymous on random and adversarial data", {
  set.seed(9)
  for (it in 1:40) {
    n <- sample(3:80, 1)
    m <- sample(1:4, 1)
    x <- as.data.frame(lapply(seq_len(m), function(j) sample(seq_len(sample(2:6, 1)), n, TRUE)))
    names(x) <- paste0("k", seq_len(m))
    x$y <- runif(n)
    if (it %% 2 == 0) x[1:m][matrix(runif(n * m) < 0.1, n)] <- NA
    k <- sample(1:min(n, 5), 1)
    out <- quiet_suppress(x, paste0("k", seq_len(m)), k = k)
    expect_k_anonymous(out, x, paste0("k", seq_len(m)), k)
  }
  # records emptied of all their keys (which records without missing keys do not count)
  set.seed(4)
  emptied <- 0
  for (it in 1:30) {
    x <- data.frame(a = sample(1:6, 8, TRUE), b = sample(1:6, 8, TRUE))
    x$a[1] <- NA
    out <- quiet_suppress(x, c("a", "b"), k = sample(3:6, 1))
    expect_k_anonymous(out, x, c("a", "b"), release_info(out)$settings$k)
    emptied <- emptied + sum(is.na(out$a) & is.na(out$b))
  }
  expect_gt(emptied, 0)
  # all unique, k = n: every record must match every other
  x <- data.frame(a = 1:4, b = letters[1:4])
  out <- quiet_suppress(x, c("a", "b"), k = 4)
  expect_k_anonymous(out, x, c("a", "b"), 4)
  # one record, k = 1: nothing to do, and no message
  x <- data.frame(a = "x", b = 2)
  expect_silent(out <- suppress_local(x, c("a", "b"), k = 1))
  expect_identical(release_info(out)$counts$n_changed, 0L)
  # all equal
  x <- data.frame(a = rep(1, 5), b = rep("u", 5))
  out <- suppress_local(x, c("a", "b"), k = 5)
  expect_identical(release_info(out)$counts$n_changed, 0L)
  attr(out, "detanon") <- NULL
  expect_identical(out, x)
  # factors keep their class (levels without a record are dropped)
  x <- data.frame(a = factor(c("p", "p", "q", "r")), b = c(TRUE, TRUE, FALSE, TRUE))
  out <- quiet_suppress(x, c("a", "b"), k = 2)
  expect_s3_class(out$a, "factor")
  expect_type(out$b, "logical")
  expect_k_anonymous(out, x, c("a", "b"), 2)
})

test_that("`combs` makes every subset of the given sizes k-anonymous", {
  set.seed(12)
  for (it in 1:20) {
    n <- sample(10:60, 1)
    x <- as.data.frame(lapply(1:4, function(j) sample(1:4, n, TRUE)))
    names(x) <- c("a", "b", "c", "d")
    combs <- sort(sample(1:3, sample(1:2, 1)))
    out <- quiet_suppress(x, names(x), k = 2, combs = combs)
    expect_k_anonymous(out, x, names(x), 2, combs = combs)
  }
})

test_that("`importance` is a strict priority", {
  # suppressing `b` alone can make every record safe: the least important key is used
  x <- data.frame(a = c(1, 1, 1, 2, 2, 2), b = c(1, 2, 3, 1, 2, 3), c = c(5, 5, 5, 6, 6, 6))
  out <- quiet_suppress(x, c("a", "b", "c"), k = 3, importance = c(2, 3, 1))
  by_key <- release_info(out)$counts$changed_by_key
  expect_identical(unname(by_key[c("a", "c")]), c(0L, 0L))
  expect_gt(by_key[["b"]], 0L)
  expect_k_anonymous(out, x, c("a", "b", "c"), 3)
  # either key can do: the less important one is used
  x <- data.frame(a = c(1, 1, 2, 2, 3, 3), b = c(1, 2, 1, 2, 1, 2))
  out <- quiet_suppress(x, c("a", "b"), k = 2, importance = c(2, 1))
  expect_identical(release_info(out)$counts$changed_by_key[["b"]], 0L)
  expect_k_anonymous(out, x, c("a", "b"), 2)
  out <- quiet_suppress(x, c("a", "b"), k = 2, importance = c(1, 2))
  expect_identical(release_info(out)$counts$changed_by_key[["a"]], 0L)
  expect_k_anonymous(out, x, c("a", "b"), 2)
})

test_that("it suppresses fewer cells than sdcMicro's localSuppression() on its test data", {
  skip_if_not_installed("sdcMicro")
  env <- new.env()
  utils::data("testdata", package = "sdcMicro", envir = env)
  td <- env$testdata
  keys <- c("urbrur", "water", "sex", "age")
  for (k in c(3, 5)) {
    sdc <- sdcMicro::localSuppression(td[keys], keyVars = keys, k = k)
    n_sdc <- sum(unlist(sdc$totalSupps))
    out <- quiet_suppress(td, keys, k = k)
    n_ours <- release_info(out)$counts$n_changed
    # k = 3: sdcMicro 674 (water 7, age 667), detanon 47 (water 1, age 46);
    # k = 5: sdcMicro 1288, detanon 94
    if (k == 3) expect_identical(n_sdc, 674L)
    expect_lt(n_ours, n_sdc / 5)
    # k-anonymous as sdcMicro counts
    ff <- sdcMicro::freqCalc(as.data.frame(out), keyVars = keys, alpha = 1)
    expect_gte(min(ff$fk), k)
    expect_identical(release_info(out)$counts$min_size, as.integer(min(ff$fk)))
  }
  expect_identical(release_info(quiet_suppress(td, keys, k = 3))$counts$changed_by_key,
                   c(urbrur = 0L, water = 1L, sex = 0L, age = 46L))
  # with an importance order and with combs
  sdc <- sdcMicro::localSuppression(td[keys], keyVars = keys, k = 3, importance = c(4, 3, 2, 1))
  out <- quiet_suppress(td, keys, k = 3, importance = c(4, 3, 2, 1))
  expect_lt(release_info(out)$counts$n_changed, sum(unlist(sdc$totalSupps)))
  sdc <- sdcMicro::localSuppression(td[keys], keyVars = keys, k = 3, combs = c(2, 3))
  out <- quiet_suppress(td, keys, k = 3, combs = c(2, 3))
  expect_lt(release_info(out)$counts$n_changed, sum(unlist(sdc$totalSupps)))
})

test_that("`threshold`: every record's individual risk ends at most the threshold, on random data", {
  set.seed(21)
  for (it in 1:30) {
    n <- sample(5:120, 1)
    m <- sample(1:4, 1)
    x <- as.data.frame(lapply(seq_len(m), function(j) sample(seq_len(sample(2:6, 1)), n, TRUE)))
    keys <- paste0("k", seq_len(m))
    names(x) <- keys
    x$w <- 1 + stats::rexp(n, 1 / sample(c(1, 5, 50), 1))
    if (it %% 3 == 0) x[keys][matrix(runif(n * m) < 0.1, n)] <- NA
    t <- sample(c(0.02, 0.1, 0.3, 0.6), 1)
    imp <- if (it %% 2) sample(m) else NULL
    out <- quiet_suppress(x, keys, threshold = t, weights = "w", importance = imp)
    expect_k_anonymous(out, x, keys, 1)
    r <- risk_individual(out, keys, weights = "w")$risk
    expect_lte(max(r), t)
    expect_equal(release_info(out)$counts$max_risk, max(r), tolerance = 1e-12)
    expect_identical(release_info(out)$settings$threshold, t)
  }
})

test_that("`threshold` without weights is k-anonymity with k = 1 / threshold", {
  set.seed(22)
  for (it in 1:20) {
    n <- sample(5:80, 1)
    x <- data.frame(a = sample(1:4, n, TRUE), b = sample(1:5, n, TRUE), c = sample(1:3, n, TRUE))
    if (it %% 2) x$a[sample(n, 3)] <- NA
    k <- sample(2:min(n, 5), 1)
    by_k <- quiet_suppress(x, c("a", "b", "c"), k = k)
    by_t <- quiet_suppress(x, c("a", "b", "c"), threshold = 1 / k)
    expect_identical(as.data.frame(by_t), as.data.frame(by_k), ignore_attr = "detanon")
  }
})

test_that("`threshold` with weights on testdata: fewer cells than sdcMicro's localSupp(), none left above", {
  skip_if_not_installed("sdcMicro")
  env <- new.env()
  utils::data("testdata", package = "sdcMicro", envir = env)
  td <- env$testdata
  keys <- c("urbrur", "water", "sex", "age")
  obj <- sdcMicro::createSdcObj(td, keyVars = keys, w = "sampling_weight")
  above <- function(manip, t) {
    m <- sdcMicro::measure_risk(cbind(manip[keys], sampling_weight = td$sampling_weight), keyVars = keys,
                                w = "sampling_weight")
    sum(m$Res[, "risk"] > t)
  }
  # threshold 0.01: sdcMicro 330 cells of age, 1 record still above; detanon 24 (water 1, age 23), none
  # threshold 0.005: sdcMicro 674, 1 record above; detanon 47 (water 1, age 46), none
  for (t in c(0.01, 0.005)) {
    sdc <- sdcMicro::localSupp(obj, threshold = t, keyVar = "age")
    n_sdc <- sum(is.na(sdc@manipKeyVars))
    out <- quiet_suppress(td, keys, threshold = t, weights = "sampling_weight")
    n_ours <- release_info(out)$counts$n_changed
    expect_identical(n_sdc, c(330L, 674L)[match(t, c(0.01, 0.005))])
    expect_identical(n_ours, c(24L, 47L)[match(t, c(0.01, 0.005))])
    expect_gt(above(sdc@manipKeyVars, t), 0L)
    expect_identical(above(out, t), 0L)
    # the same through the sdcMicroObj, whose weights are used
    s2 <- quiet_suppress(obj, threshold = t)
    for (v in keys) expect_identical(as.vector(s2@manipKeyVars[[v]]), as.vector(out[[v]]))
    expect_lte(max(s2@risk$individual[, "risk"]), t)
  }
  # importance: the most important keys are kept
  out <- quiet_suppress(td, keys, threshold = 0.01, weights = "sampling_weight", importance = 1:4)
  expect_identical(release_info(out)$counts$changed_by_key, c(urbrur = 0L, water = 0L, sex = 1L, age = 23L))
  # households: household-level keys suppressed for whole households
  out <- quiet_suppress(td, keys, threshold = 0.01, weights = "sampling_weight", household = "ori_hid")
  expect_true(all(tapply(seq_len(nrow(td)), td$ori_hid, function(i) length(unique(out$water[i])) == 1L)))
  expect_lte(max(risk_individual(out, keys, weights = "sampling_weight")$risk), 0.01)
  expect_lte(release_info(out)$counts$max_risk, 0.01)
})

test_that("the message is classed and carries the counts per key", {
  x <- data.frame(a = c(1, 1, 2), b = c("u", "v", "v"))
  cnd <- tryCatch(suppress_local(x, c("a", "b"), k = 2), detanon_message_suppress = identity)
  expect_s3_class(cnd, "detanon_message")
  expect_identical(sum(cnd$suppressed), 2L)
  expect_match(conditionMessage(cnd), "^suppress_local\\(\\): suppressed 2 cells")
})

test_that("bad input is refused with classed errors naming the argument", {
  x <- data.frame(a = c(1, 1, 2), b = c("u", "v", "v"))
  expect_error(suppress_local(x, c("a", "b"), k = 4), class = "detanon_error_data")
  expect_error(suppress_local(x, c("a", "b"), importance = 1), class = "detanon_error_argument")
  expect_snapshot(error = TRUE, {
    suppress_local(x, c("a", "b"), k = 4)
    suppress_local(x, c("a", "b"), k = 0)
    suppress_local(x, c("a", "b"), importance = c(1, 3))
    suppress_local(x, c("a", "b"), combs = 3)
    suppress_local(x, "zz")
    suppress_local(x, c("a", "b"), threshold = 0)
    suppress_local(x, c("a", "b"), threshold = 0.5, combs = 1)
    suppress_local(x, c("a", "b"), weights = "a")
    suppress_local(cbind(x, w = 0.5), c("a", "b"), threshold = 0.5, weights = "w")
    suppress_local(x, c("a", "b"), threshold = 0.3)
    suppress_local(cbind(x, w = 1), c("a", "b"), threshold = 0.3, weights = "w")
  })
})

test_that("tibbles and data.tables come back in their class, the input unchanged", {
  x <- data.frame(a = c(1, 1, 2, 2, 3), b = c("u", "u", "v", "v", "v"), y = 1:5)
  for (cls in c("tibble", "data.table")) {
    skip_if_not_installed(cls)
    d <- if (cls == "tibble") tibble::as_tibble(x) else data.table::as.data.table(x)
    copy <- if (cls == "tibble") d else data.table::copy(d)
    out <- quiet_suppress(d, c("a", "b"), k = 2)
    expect_s3_class(out, class(d)[1])
    expect_identical(d, copy)
    expect_k_anonymous(out, x, c("a", "b"), 2)
    p <- suppressMessages(anonymise_pram(d, vars = "b", strata = "a", seed = 1))
    expect_s3_class(p, class(d)[1])
    expect_identical(d, copy)
  }
})
