test_that("the Laplace sampler has the right moments and distribution", {
  set.seed(42)
  b <- 2.5
  x <- test_call("rlaplace", 2e5, b)
  expect_equal(mean(x), 0, tolerance = 0.03)
  expect_equal(var(x), 2 * b^2, tolerance = 0.02)
  expect_equal(mean(abs(x)), b, tolerance = 0.01)
  ks <- suppressWarnings(ks.test(x[1:5000], plaplace, b = b))
  expect_gt(ks$p.value, 0.01)
  # the same test rejects a wrong scale
  expect_lt(suppressWarnings(ks.test(x[1:5000], plaplace, b = 1.5 * b))$p.value, 1e-6)
  set.seed(42)
  expect_identical(test_call("rlaplace", 2e5, b), x)
  expect_identical(test_call("rlaplace", 10, 0), rep(0, 10))
})

test_that("noise is Laplace(0, diam / eps_v) per class and set.seed() reproduces", {
  df <- sim_people(3000, seed = 5)
  set.seed(7)
  res <- anonymise_keps_with_key(df, epsilon = 2, k = 5, vars = c("height", "weight"),
                        quasi = c("age", "income"), strata = "sex", budget = c(3, 1))
  expect_equal(unname(res$info$eps), c(1.5, 0.5))
  o <- df[res$origin_row, ]
  ec <- equivalence_classes(df, k = 5, quasi = c("age", "income"), strata = "sex")
  expect_identical(res$class, ec$class[res$origin_row])
  for (v in c("height", "weight")) {
    diam <- as.vector(tapply(df[[v]], ec$class, function(z) diff(range(z))))
    expect_equal(res$classes[[paste0("diam_", v)]], diam)
    b <- diam[res$class] / res$info$eps[[v]]
    z <- (res$data[[v]] - o[[v]]) / b
    expect_gt(suppressWarnings(ks.test(z, plaplace))$p.value, 0.01)
    expect_equal(mean(abs(z)), 1, tolerance = 0.05)
  }
  set.seed(7)
  again <- anonymise_keps_with_key(df, epsilon = 2, k = 5, vars = c("height", "weight"),
                          quasi = c("age", "income"), strata = "sex", budget = c(3, 1))
  expect_identical(again, res)
  set.seed(8)
  other <- anonymise_keps_with_key(df, epsilon = 2, k = 5, vars = c("height", "weight"),
                          quasi = c("age", "income"), strata = "sex", budget = c(3, 1))
  expect_false(identical(other$data$height, res$data$height))
})

test_that("`weights`, the old name of `budget`, still works for one release and warns", {
  df <- sim_people(300, seed = 2)
  args <- list(df, epsilon = 2, k = 5, vars = c("height", "weight"), quasi = c("age", "income"), seed = 3)
  new <- do.call(anonymise_keps_with_key, c(args, list(budget = c(3, 1))))
  expect_warning(old <- do.call(anonymise_keps_with_key, c(args, list(weights = c(3, 1)))),
                 "anonymise_keps_with_key\\(\\): `weights` is deprecated; use `budget`",
                 class = "detanon_warning_deprecated")
  expect_identical(old, new)
  expect_warning(old <- do.call(anonymise_keps, c(args, list(weights = c(3, 1)))),
                 "anonymise_keps\\(\\): `weights` is deprecated", class = "detanon_warning_deprecated")
  expect_identical(old, new$data)
  expect_warning(old <- keps_error(df, vars = "height", quasi = "age", k = 5, epsilon = 1:2, weights = 1),
                 "keps_error\\(\\): `weights` is deprecated", class = "detanon_warning_deprecated")
  expect_identical(old, keps_error(df, vars = "height", quasi = "age", k = 5, epsilon = 1:2, budget = 1))
  # both at once is refused; a bad old value gets the new name's error
  expect_error(suppressWarnings(do.call(anonymise_keps, c(args, list(budget = c(3, 1), weights = c(3, 1))))),
               "give `budget` only", class = "detanon_error_argument")
  expect_error(suppressWarnings(do.call(anonymise_keps, c(args, list(weights = c(-1, 1))))),
               "`budget` must be 2 positive numbers", class = "detanon_error_argument")
})

test_that("the release is shuffled and carries no key to the input order", {
  df <- sim_people(500)
  rownames(df) <- paste0("person", 1:500)
  attr(df, "secret") <- "input-level attribute"
  set.seed(1)
  res <- anonymise_keps_with_key(df, epsilon = 5, k = 3, vars = "height", quasi = "age",
                        strata = "sex", generalise = "midpoint")
  rel <- res$data
  expect_identical(sort(names(attributes(rel))), c("class", "detanon", "names", "row.names"))
  # the release metadata hold settings, aggregate counts and a fingerprint of the release
  # in its own (shuffled) order: nothing that follows the input order
  fp <- attr(rel, "detanon")$fingerprint
  expect_identical(fp$n, 500L)
  expect_false(any(grepl("person", unlist(attr(rel, "detanon")))))
  expect_identical(class(rel), "data.frame")
  expect_identical(.row_names_info(rel), -500L)  # automatic row names 1..n
  expect_identical(sort(res$origin_row), 1:500)
  expect_false(identical(res$origin_row, 1:500))
  # the key is correct: untouched columns match, noise is where it should be
  expect_identical(rel$weight, df$weight[res$origin_row])
  expect_identical(rel$region, df$region[res$origin_row])
  expect_identical(rel$sex, df$sex[res$origin_row])
  lo <- res$classes$lo_age[res$class]
  hi <- res$classes$hi_age[res$class]
  expect_equal(rel$age, (lo + hi) / 2)
  expect_true(all(df$age[res$origin_row] >= lo & df$age[res$origin_row] <= hi))
  expect_true(all(vapply(rel, function(col) is.null(names(col)), logical(1))))
  # interval release: a factor of the class ranges
  set.seed(1)
  res2 <- anonymise_keps_with_key(df, epsilon = 5, k = 3, vars = "height", quasi = "age", strata = "sex",
                         generalise = "interval")
  expect_s3_class(res2$data$age, "factor")
  expect_identical(as.character(res2$data$age),
                   sprintf("[%.6g, %.6g]", lo, hi))
  expect_output(print(res2), "keep `\\$origin_row` apart")
})

test_that("data.table and tibble come back as such", {
  skip_if_not_installed("tibble")
  skip_if_not_installed("data.table")
  df <- sim_people(60)
  set.seed(1)
  t1 <- anonymise_keps_with_key(tibble::as_tibble(df), epsilon = 1, k = 3, vars = "height", strata = "sex")
  expect_s3_class(t1$data, "tbl_df")
  d1 <- anonymise_keps_with_key(data.table::as.data.table(df), epsilon = 1, k = 3, vars = "height", strata = "sex")
  expect_s3_class(d1$data, "data.table")
})

test_that("formula (8) matches a direct computation and Monte Carlo", {
  df <- sim_people(400, seed = 9)
  df$income <- df$income + 1
  e <- keps_error(df, epsilon = c(1, 4), k = 4, vars = c("height", "income"), quasi = "age",
                  strata = "region")
  ec <- equivalence_classes(df, k = 4, quasi = "age", strata = "region")
  direct <- function(v, eps) {
    terms <- vapply(split(df[[v]], ec$class), function(z) {
      H <- length(z) / sum(1 / abs(z))
      diff(range(z)) / H * length(z) / nrow(df)
    }, numeric(1))
    sum(terms) / eps
  }
  expect_equal(e$error, c(direct("height", 0.5), direct("income", 0.5),
                          direct("height", 2), direct("income", 2)))
  expect_equal(e$eps_v, c(0.5, 0.5, 2, 2))
  set.seed(123)
  sims <- replicate(300, {
    r <- anonymise_keps_with_key(df, epsilon = 4, k = 4, vars = c("height", "income"), quasi = "age",
                        strata = "region")
    o <- df[r$origin_row, ]
    c(mean(abs(r$data$height - o$height) / abs(o$height)),
      mean(abs(r$data$income - o$income) / abs(o$income)))
  })
  expect_equal(rowMeans(sims), e$error[3:4], tolerance = 0.03)
  expect_equal(unname(r_err <- anonymise_keps_with_key(df, epsilon = 4, k = 4, vars = c("height", "income"), quasi = "age",
                                               strata = "region")$info$expected_error), e$error[3:4])
  # zero values make the relative error infinite; constant classes add nothing
  z <- data.frame(g = rep(c("a", "b"), each = 3), v = c(0, 1, 2, 5, 5, 5))
  expect_identical(keps_error(z, epsilon = 1, k = 3, vars = "v", strata = "g")$error, Inf)
  z$v[1] <- 3
  expect_equal(keps_error(z, epsilon = 2, k = 3, vars = "v", strata = "g")$error,
               (2 * (1 / 3 + 1 + 1 / 2)) / 6 / 2)
})

test_that("linking risk matches the reference and falls as epsilon falls", {
  df <- sim_people(600, seed = 2)
  df$height <- round(df$height)  # ties
  set.seed(4)
  res <- anonymise_keps_with_key(df, epsilon = 3, k = 4, vars = c("height", "weight"), quasi = "age",
                        strata = "sex")
  o <- as.matrix(df[res$origin_row, c("height", "weight")])
  q <- as.matrix(res$data[c("height", "weight")])
  s <- as.matrix(res$classes[c("diam_height", "diam_weight")])
  s[s == 0] <- 1
  ref <- ref_link(o, q, res$class, s)
  expect_equal(res$info$linking_risk, mean(ref))
  rl <- risk_class_link(df[res$origin_row, ], res$data, vars = c("height", "weight"), classes = res$class)
  expect_identical(rl$linked, ref)
  expect_output(print(rl), "records linked")
  # duplicates count as linked (the paper's indicator); no noise -> everything linked
  dup <- data.frame(v = c(1, 1, 1, 2, 2, 2))
  expect_identical(risk_class_link(dup, dup)$rate, 1)
  expect_identical(risk_class_link(dup, data.frame(v = c(2, 1, 1, 1, 2, 2)))$linked,
                   c(FALSE, TRUE, TRUE, FALSE, TRUE, TRUE))
  # monotone in epsilon on simulated data
  sim <- sim_people(4000, seed = 6)
  risk <- vapply(c(0.25, 1, 4, 16, 64), function(eps) {
    set.seed(10)
    release_info(anonymise_keps(sim, epsilon = eps, k = 5, vars = "height", quasi = c("age", "income"),
                                strata = "sex"))$stats$linking_risk
  }, numeric(1))
  expect_true(all(diff(risk) > 0))
  expect_gt(risk[5], 0.5)
  expect_lt(risk[1], 0.35)
})

test_that("c-confident suppression follows section V-C", {
  df <- sim_people(800, seed = 12)
  for (eps in c(2, 20)) {
    set.seed(5)
    full <- anonymise_keps_with_key(df, epsilon = eps, k = 4, vars = c("height", "weight"), quasi = "age",
                           strata = "sex")
    set.seed(5)
    sup <- anonymise_keps_with_key(df, epsilon = eps, k = 4, vars = c("height", "weight"), quasi = "age",
                          strata = "sex", confidence = 0.9)
    # same draws: the suppressed release is a subset of the full one
    o <- as.matrix(df[full$origin_row, c("height", "weight")])
    q <- as.matrix(full$data[c("height", "weight")])
    r <- -as.matrix(full$classes[c("scale_height", "scale_weight")]) * log(1 - sqrt(0.9))
    l <- ref_counts(o, q, full$class, r)
    risky <- l > 0 & l < 4
    bad <- tapply(l >= 4, full$class, sum) < 4
    drop <- risky | bad[full$class]
    expect_identical(sort(sup$origin_row), sort(full$origin_row[!drop]))
    i <- sup$info
    expect_identical(i$n_suppressed_classes, sum(bad))
    expect_identical(i$n_suppressed_class_records, sum(bad[full$class]))
    expect_identical(i$n_suppressed_records, sum(risky & !bad[full$class]))
    expect_identical(i$n_released, sum(!drop))
    expect_identical(sum(sup$classes$suppressed), sum(drop))
    expect_equal(sup$info$linking_risk, full$info$linking_risk)
  }
})

test_that("deterministic masking followed by noise works on anonymise() output", {
  d <- titanic_paper()
  m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                 check_identifiers = FALSE)
  set.seed(1)
  res <- anonymise_keps_with_key(m, epsilon = 8, k = 3, vars = c("Age", "Fare"),
                        strata = c("Pclass", "Sex", "Family"))
  # the release describes the noise step, not the masking it was applied to
  expect_identical(release_info(res$data)$verb, "anonymise_keps")
  expect_identical(res$data$PassengerId, d$PassengerId[res$origin_row])
})

test_that("anonymise_keps() returns the release that anonymise_keps_with_key() returns, and no key", {
  df <- sim_people(300, seed = 21)
  set.seed(5)
  rel <- anonymise_keps(df, vars = c("height", "weight"), strata = "sex", quasi = "age", k = 4, epsilon = 2,
                        confidence = 0.9)
  set.seed(5)
  res <- anonymise_keps_with_key(df, vars = c("height", "weight"), strata = "sex", quasi = "age", k = 4,
                                 epsilon = 2, confidence = 0.9)
  expect_identical(rel, res$data)
  expect_s3_class(rel, "data.frame")
  info <- release_info(rel)
  expect_identical(info$counts$n_released, nrow(rel))
  # only aggregates: no per-record vector (origin rows, classes) in the metadata
  flat <- unlist(info[c("settings", "counts", "stats")], recursive = FALSE)
  expect_true(all(lengths(flat) < nrow(rel)))
  expect_identical(res$info$n_released, nrow(rel))
  # positional calls in the old order fail clearly instead of binding epsilon to `vars`
  expect_error(anonymise_keps(df, 2), "`vars` must be a character vector of column names, not 2.*`k = 2`")
})

test_that("missing values and small strata", {
  df <- sim_people(50)
  df$height[c(2, 9)] <- NA
  expect_error(anonymise_keps(df, epsilon = 1, vars = "height", strata = "sex"),
               "`vars`/`quasi` have missing values \\(`height`: 2\\)")
  expect_message(res <- anonymise_keps_with_key(df, epsilon = 1, vars = "height", strata = "sex", na = "complete"),
                 "dropped 2 incomplete records")
  expect_false(any(res$origin_row %in% c(2, 9)))
  expect_identical(res$info$n_dropped, 2L)
  expect_identical(length(res$origin_row), 48L)
})

test_that("bad input is rejected and names the argument", {
  df <- sim_people(30)
  expect_error(anonymise_keps(df, epsilon = 0, vars = "height"), "`epsilon` must be a single finite number > 0, not 0")
  expect_error(anonymise_keps(df, epsilon = -1, vars = "height"), "`epsilon` must be a single finite number > 0")
  expect_error(anonymise_keps(df, epsilon = NA, vars = "height"), "`epsilon`")
  expect_error(anonymise_keps(df, epsilon = c(1, 2), vars = "height"), "`epsilon`")
  expect_error(keps_error(df, epsilon = c(1, 0), vars = "height"), "`epsilon` must be finite numbers > 0")
  expect_error(anonymise_keps(df, epsilon = 1, k = 31, vars = "height", strata = character()),
               "`k` \\(31\\) is larger than the number of records \\(30\\)")
  expect_error(anonymise_keps(df, epsilon = 1, vars = "height", quasi = "region"), "`quasi` must be numeric columns; `region`")
  df2 <- df
  df2$height[4] <- Inf
  expect_error(anonymise_keps(df2, epsilon = 1, vars = "height"), "`vars` column `height` contains NaN or infinite")
  expect_error(anonymise_keps(df, epsilon = 1, vars = "sex", strata = "region"), "`vars` must be numeric columns; `sex`")
  expect_error(anonymise_keps(df, epsilon = 1, vars = "height", quasi = "height"), "both noised")
  expect_error(anonymise_keps(df, epsilon = 1, vars = "height", confidence = 1), "`confidence` must be below 1")
  expect_error(anonymise_keps(df, epsilon = 1, vars = "height", confidence = 0), "`confidence` must be a single finite number > 0")
  expect_error(anonymise_keps(df, epsilon = 1, vars = c("height", "weight"), budget = 1), "`budget` must be 2 positive numbers")
  expect_error(anonymise_keps(df, epsilon = 1, vars = "height", generalise = "box"), "`generalise` must be one of")
  expect_error(anonymise_keps(df[0], epsilon = 1), "no epsilon-quasi-identifier")
  expect_error(risk_class_link(df, df[-1, ]), "same rows in the same order")
  expect_error(risk_class_link(df, df, vars = "height", classes = 1:3), "`classes` must be a vector with one class per row")
})

test_that("assess() measures work on the release with the key", {
  d <- titanic_paper()
  set.seed(3)
  res <- anonymise_keps_with_key(d, epsilon = 1e6, k = 3, vars = c("Age", "Fare"),
                        strata = c("Pclass", "Sex", "Family"))
  o <- d[res$origin_row, ]
  a <- assess(o, res$data, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
              deterministic = TRUE)
  expect_s3_class(a, "detanon_assess")
  # almost no noise: with the key records link as well as the originals to themselves
  # (duplicated records limit both); without it, blind
  with_key <- risk_linkage(o, res$data, vars = c("Age", "Fare"), strata = character())$rate
  without <- risk_linkage(d, res$data, vars = c("Age", "Fare"),
                          strata = character())$rate
  ceiling <- risk_linkage(o, o, vars = c("Age", "Fare"), strata = character())$rate
  expect_equal(with_key, ceiling, tolerance = 0.01)
  expect_gt(with_key, 0.7)
  expect_lt(without, 0.02)
  expect_equal(unname(utility_delta(o, res$data, vars = "Age")$delta), 0, tolerance = 1e-6)
})

test_that("anonymise_keps() takes a `seed`, as every verb that draws random numbers", {
  d <- titanic_paper()
  set.seed(9)
  before <- .Random.seed
  a <- anonymise_keps(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3, epsilon = 8,
                      seed = 1)
  expect_identical(.Random.seed, before)
  set.seed(1)
  b <- anonymise_keps(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3, epsilon = 8)
  expect_identical(a, b)
  w <- anonymise_keps_with_key(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3,
                               epsilon = 8, seed = 1)
  expect_identical(w$data, a)
  expect_error(anonymise_keps(d, vars = "Age", epsilon = 8, seed = 1.5), "`seed` must be")
})

test_that("risk_class_link(): `strata` takes column names; `classes` as names is deprecated", {
  d <- titanic_paper()
  m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                 check_identifiers = FALSE)
  new <- risk_class_link(d, m, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  expect_warning(old <- risk_class_link(d, m, vars = c("Age", "Fare"), classes = c("Pclass", "Sex", "Family")),
                 class = "detanon_warning_deprecated")
  expect_identical(old, new)
  ids <- as.integer(interaction(d[c("Pclass", "Sex", "Family")], drop = TRUE))
  expect_identical(new, risk_class_link(d, m, vars = c("Age", "Fare"), classes = ids))
})
