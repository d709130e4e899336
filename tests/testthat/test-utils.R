# Shared helpers: classed conditions, plurals, release metadata.

test_that("errors are classed and name the exported function that was called", {
  d <- titanic_paper()[-1]
  e <- tryCatch(anonymise(d, k = 1.5), error = identity)
  expect_s3_class(e, c("detanon_error_argument", "detanon_error", "error", "condition"), exact = TRUE)
  expect_match(conditionMessage(e), "^anonymise\\(\\): `k` must be a single whole number >= 2, not 1.5.$")
  expect_null(conditionCall(e))
  expect_identical(e$fn, "anonymise")
  # through `::`, do.call() and a user function: still the exported verb
  e2 <- tryCatch(do.call(detanon::anonymise, list(d, k = 1.5)), error = identity)
  expect_identical(conditionMessage(e2), conditionMessage(e))
  f <- function(x) anonymise(x, k = 1.5)
  expect_identical(conditionMessage(tryCatch(f(d), error = identity)), conditionMessage(e))
  # a verb called by another verb: the outer one is named
  e3 <- tryCatch(assess(d, d, vars = "nope"), error = identity)
  expect_s3_class(e3, "detanon_error_column")
  expect_match(conditionMessage(e3), "^assess\\(\\): `vars` names columns that are not in the data")
  # kinds
  expect_error(anonymise(d, vars = "Pclass", strata = "Pclass"), class = "detanon_error_column")
  expect_error(anonymise(transform(d, Age = NA_real_), vars = c("Age", "Fare"), strata = "Pclass"),
               class = "detanon_error_data")
  expect_error(anonymise(d[1:2, ], vars = "Fare", strata = character(), k = 3),
               class = "detanon_error_small_strata")
  # an S3 method names its generic
  a <- assess(d, anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                            na = "median"), vars = c("Age", "Fare"))
  expect_error(plot(a, type = "nope"), "^plot\\(\\): `type`", class = "detanon_error_argument")
  # an internal helper called directly gets no prefix
  expect_error(detanon:::check_whole(1.5, "k"), "^`k` must be", class = "detanon_error_argument")
})

test_that("warnings and messages are classed too", {
  d <- titanic_paper()
  expect_warning(anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), na = "median"),
                 "^anonymise\\(\\): `PassengerId` would be released", class = "detanon_warning_identifier")
  x <- data.frame(g = c(rep("a", 5), "b"), v = as.double(1:6))
  expect_message(anonymise(x, vars = "v", strata = "g", k = 3, small_strata = "suppress"),
                 "^anonymise\\(\\): suppressed 1 record in 1 stratum smaller than k = 3.",
                 class = "detanon_message_suppress")
  expect_silent(suppressMessages(anonymise(x, vars = "v", strata = "g", k = 3, small_strata = "suppress"),
                                 classes = "detanon_message"))
})

test_that("plural() counts", {
  expect_identical(detanon:::plural(1, "record"), "1 record")
  expect_identical(detanon:::plural(0:2, "stratum", "strata"), c("0 strata", "1 stratum", "2 strata"))
  expect_identical(detanon:::plural(1e6, "record"), "1000000 records")
  expect_identical(detanon:::plural(2L, "is", "are", count = FALSE), "are")
})

release_fixture <- function() {
  d <- titanic_paper()[-1]
  anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3)
}

test_that("release_info() describes a release and withdraws it once the rows change", {
  m <- release_fixture()
  info <- release_info(m)
  expect_s3_class(info, "detanon_release")
  expect_identical(info$verb, "anonymise")
  expect_identical(info$settings$k, 3L)
  expect_identical(info$settings$vars, c("Age", "Fare"))
  expect_identical(info$counts$n, 891L)
  expect_identical(info$counts$n_strata, 12L)
  expect_output(print(info), "made by anonymise\\(\\)")
  # only aggregates: nothing in the attribute has one entry per record
  expect_true(all(lengths(unlist(info[c("settings", "counts", "stats")], recursive = FALSE)) < nrow(m)))
  stale <- function(x) {
    expect_warning(r <- release_info(x), "subset, reordered or edited after anonymise",
                   class = "detanon_warning_stale_release")
    expect_null(r)
  }
  stale(m[1:10, ])                   # subset
  stale(m[-5, ])                     # one row removed
  stale(m[c(2, 1, 3:891), ])         # reordered
  e <- m; e$Age[7] <- e$Age[7] + 1    # edited masked value
  stale(e)
  e <- m; e$Sex[1] <- if (e$Sex[1] == "male") "female" else "male" # edited stratum
  stale(e)
  e <- m; e$Fare <- NULL               # column dropped
  stale(e)
  # edits elsewhere, and copies, keep it
  e <- m; e$Survived <- 0L
  expect_identical(release_info(e), info)
  expect_identical(release_info(m[seq_len(nrow(m)), ]), info)
  expect_null(release_info(titanic_paper()))
})

test_that("release metadata survive tibble and data.table and are checked there too", {
  skip_if_not_installed("tibble")
  skip_if_not_installed("data.table")
  d <- titanic_paper()[-1]
  for (x in list(tibble::as_tibble(d), data.table::as.data.table(d))) {
    m <- anonymise(x, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3)
    expect_s3_class(release_info(m), "detanon_release")
    sub <- m[2:5, ]
    if (!is.null(attr(sub, "detanon"))) {
      expect_warning(release_info(sub), class = "detanon_warning_stale_release")
    }
  }
})

test_that("the risk measures take defaults only from a valid release", {
  d <- titanic_paper()[-1]
  m <- release_fixture()
  expect_identical(risk_linkage(d, m)$strata, c("Pclass", "Sex", "Family"))
  e <- m; e$Age[1] <- e$Age[1] + 1
  expect_warning(r <- risk_linkage(d, e), class = "detanon_warning_stale_release")
  expect_identical(r$strata, character())
  # one warning per call, also when a verb calls others
  w <- 0L
  withCallingHandlers(assess(d, e), detanon_warning_stale_release = function(c) {
    w <<- w + 1L
    invokeRestart("muffleWarning")
  })
  expect_identical(w, 1L)
})

test_that("messages of the verbs are pinned", {
  d <- titanic_paper()[-1]
  x <- data.frame(g = c(rep("a", 5), "b"), h = "u", v = as.double(1:6))
  expect_snapshot(error = TRUE, {
    anonymise(d, 3)
    anonymise(d, vars = "Age", strata = "Sex", k = 1000)
    anonymise(x, vars = "v", strata = "g", k = 3)
    merge_small_strata(d, 50)
    equivalence_classes(d, 3)
    kanon_check(d, "nope")
    safe_table(d, "Sex", "round")
    generalise_strata(d, "Pclass", strata = "Sex")
    nhs_gate(d, roles = c(Sex = "gender"), strata = "Sex", k = 400)
  })
  expect_snapshot({
    m <- merge_small_strata(x, vars = "v", strata = c("g", "h"), k = 3)
    g <- generalise_strata(x, "g", strata = c("g", "h"), k = 3)
    m2 <- anonymise(x, vars = "v", strata = "g", k = 3, small_strata = "suppress")
    release_info(m[-1, ])
  })
})

test_that("deprecated argument names warn and give identical results", {
  d <- titanic_paper()
  expect_warning(old <- kanon_check(d, keys = c("Sex", "Pclass"), k = 3), "`keys` is deprecated; use `strata`",
                 class = "detanon_warning_deprecated")
  expect_identical(old, kanon_check(d, strata = c("Sex", "Pclass"), k = 3))
  expect_warning(old <- generalise_rare(c("a", "a", "b"), min_count = 2), class = "detanon_warning_deprecated")
  expect_identical(old, generalise_rare(c("a", "a", "b"), k = 2))
  d$Age5 <- generalise_bands(d$Age, width = 5)
  new <- suppressMessages(generalise_strata(d, column = "Age5", strata = c("Sex", "Age5"), k = 5))
  expect_warning(old <- suppressMessages(generalise_strata(d, var = "Age5", strata = c("Sex", "Age5"), k = 5)),
                 "`var` is deprecated; use `column`", class = "detanon_warning_deprecated")
  expect_identical(old, new)
  expect_error(suppressWarnings(kanon_check(d, strata = "Sex", keys = "Sex")), "give `strata` only")
})

test_that("positional calls in the old order fail clearly instead of binding k to a column argument", {
  d <- titanic_paper()[-1]
  expect_error(anonymise(d, 3), "`vars` must be a character vector of column names, not 3.*`k = 3`",
               class = "detanon_error_argument")
  expect_error(merge_small_strata(d, 50), "`vars` must be a character vector.*`k = 50`")
  expect_error(equivalence_classes(d, 3), "`strata` must be a character vector.*`k = 3`")
  expect_error(keps_error(d, 2), "`vars` must be a character vector.*`k = 2`")
})

test_that("every exported function takes `nthreads` before `seed`, as CONTRIBUTING orders them", {
  ns <- asNamespace("detanon")
  both <- Filter(function(f) all(c("seed", "nthreads") %in% names(formals(get(f, ns)))),
                 getNamespaceExports("detanon"))
  expect_true(all(c("risk_battery", "attack_linkage", "attack_inference", "risk_replay") %in% both))
  late <- Filter(function(f) {
    a <- names(formals(get(f, ns)))
    match("seed", a) < match("nthreads", a)
  }, both)
  expect_identical(late, character())
})

test_that("the passes of the partitioned path and the simulation helpers are internal", {
  internal <- c("anonymise_stats", "anonymise_stratum", "anonymise_rescale", "anonymise_release",
                "strata_groups", "fleishman_coef", "vale_maurelli_cor", "rvale_maurelli")
  expect_identical(intersect(internal, getNamespaceExports("detanon")), character())
  expect_true(all(vapply(internal, exists, logical(1), envir = asNamespace("detanon"), inherits = FALSE)))
  expect_true(all(c("anonymise_partitioned", "anonymise_db", "simulate_ncds") %in% getNamespaceExports("detanon")))
})

test_that("the masking verbs return their input's class with release metadata", {
  d <- titanic_paper()[-1]
  d$Age5 <- generalise_bands(d$Age, width = 5)
  x <- data.frame(g = c(rep("a", 5), "b"), h = "u", v = as.double(1:6))
  releases <- list(
    anonymise = anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family")),
    anonymise_keps = anonymise_keps(d, vars = "Fare", strata = c("Pclass", "Sex"), epsilon = 1),
    merge_small_strata = suppressMessages(merge_small_strata(x, vars = "v", strata = c("g", "h"), k = 3)),
    generalise_strata = suppressMessages(generalise_strata(d, "Age5", strata = c("Sex", "Age5"), k = 5)),
    remove_identifiers = remove_identifiers(titanic, c("Name", "Ticket"))
  )
  for (verb in names(releases)) {
    r <- releases[[verb]]
    expect_s3_class(r, "data.frame")
    info <- release_info(r)
    expect_s3_class(info, "detanon_release")
    expect_identical(info$verb, verb)
    expect_identical(info$counts$n, nrow(r))
    expect_true(all(lengths(info$counts) == 1L), info = verb)
  }
  expect_identical(release_info(releases$merge_small_strata)$counts$n_moved, 1L)
  expect_identical(release_info(releases$merge_small_strata)$counts$min_size, 6L)
})

test_that("every classed result prints", {
  d <- titanic_paper()[-1]
  m <- anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3)
  expect_output(print(utility_delta(d, m)), "Information loss \\(delta\\) over 891 records")
  e <- keps_error(d[d$Fare > 0, ], vars = "Fare", strata = c("Pclass", "Sex"), k = 3, epsilon = c(1, 8))
  expect_s3_class(e, "detanon_keps_error")
  expect_output(print(e), "formula 8")
  expect_output(print(equivalence_classes(d, strata = "Sex", quasi = "Age", k = 50)), "class")
})

test_that("the fingerprint's checksum in C equals column_checksum() in R", {
  set.seed(3)
  n <- 5000
  w <- detanon:::position_weights(n)
  cols <- list(rnorm(n) * 1e6, sample(1:9, n, TRUE), factor(sample(letters, n, TRUE)), runif(n) < 0.5,
               as.Date("2020-01-01") + sample(100, n, TRUE), c(rnorm(n - 1), NA), c(1:(n - 1), NA),
               c(Inf, rnorm(n - 1)), sample(c("a", "b"), n, TRUE), rep(-0, n), .Machine$double.xmax * c(1, 1, rep(0, n - 2)))
  for (v in cols) {
    fast <- detanon:::fast_checksums(list(v))
    if (!is.na(fast)) expect_identical(fast, detanon:::column_checksum(v, w))
  }
  expect_true(is.na(detanon:::fast_checksums(cols[6])))
  expect_true(is.na(detanon:::fast_checksums(cols[9])))
  d <- data.frame(a = cols[[1]], b = cols[[3]], c = cols[[6]], e = cols[[9]])
  fp <- detanon:::release_fingerprint(d, names(d))
  expect_identical(fp$checksum, unname(vapply(d, detanon:::column_checksum, 0, w = w)))
  # every column at once, on 1 and 2 threads: the same sums; NA where R computes them
  ref <- vapply(cols, function(v) {
    s <- detanon:::column_checksum(v, w)
    if (anyNA(v) || is.character(v) || any(is.infinite(v))) NA_real_ else s
  }, 0)
  for (nt in 1:2) expect_identical(detanon:::fast_checksums(cols, nt), ref)
  # a matrix column is left to R, as are columns of other types
  expect_identical(detanon:::fast_checksums(list(matrix(1, 4, 2), list(1, 2), 1:4 + 0.5), 2L),
                   c(NA, NA, detanon:::column_checksum(1:4 + 0.5, detanon:::position_weights(4))))
  dm <- data.frame(a = 1:3)
  dm$m <- matrix(1:6, 3)
  expect_identical(detanon:::release_fingerprint(dm, c("a", "m"), 2L)$checksum,
                   unname(vapply(c("a", "m"), function(v) detanon:::column_checksum(dm[[v]], detanon:::position_weights(3)), 0)))
})

test_that("numeric_matrix() equals the columns as as.double() gives them, on 1 and 2 threads", {
  set.seed(5)
  n <- 5000
  d <- data.frame(a = rnorm(n), b = sample(c(1:9, NA), n, TRUE), c = as.difftime(runif(n), units = "hours"),
                  e = c(NA, NaN, Inf, -Inf, rnorm(n - 4)), f = sample(c(TRUE, FALSE, NA), n, TRUE),
                  s = sample(c("1.5", "2"), n, TRUE))
  ref <- function(data, cols) {
    x <- vapply(as.list(data)[cols], as.double, numeric(nrow(data)))
    dim(x) <- c(nrow(data), length(cols))
    colnames(x) <- cols
    x
  }
  for (cols in list(names(d), c("e", "a"), "b", character())) for (nt in 1:2) {
    expect_identical(detanon:::numeric_matrix(d, cols, nt), ref(d, cols))
    expect_identical(detanon:::numeric_matrix(d[0, ], cols, nt), ref(d[0, ], cols))
  }
  # integer NA becomes the double NA (not a NaN of another payload)
  expect_true(all(is.na(detanon:::numeric_matrix(data.frame(b = NA_integer_), "b")) &
                  !is.nan(detanon:::numeric_matrix(data.frame(b = NA_integer_), "b"))))
})
