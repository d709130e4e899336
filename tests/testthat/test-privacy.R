# The privacy suite: every masking verb, on every path, is run on data with identifying
# row names, a tiny-valued column, missing values, a rare stratum and a category that the
# verb removes; then every part of the released object (values, row names, factor levels,
# attributes, environments, printed and str() output) is searched for what must not be
# there. A new masking verb is added by one line in `privacy_verbs` below.

# NHS-number-like row names (valid modulus-11 check digits)
nhs_numbers <- function(n) {
  out <- character()
  i <- 0L
  while (length(out) < n) {
    i <- i + 1L
    body <- as.integer(strsplit(sprintf("943476%03d", i), "")[[1L]])
    chk <- 11L - sum(body * (10:2)) %% 11L
    if (chk == 11L) chk <- 0L
    if (chk != 10L) out <- c(out, paste0(c(body, chk), collapse = ""))
  }
  stopifnot(all(detanon:::is_nhs_number(out)))
  out
}

priv_data <- function(n = 120, seed = 1) {
  set.seed(seed)
  d <- data.frame(
    g = factor(sample(c("north", "south"), n, replace = TRUE), levels = c("north", "south", "rareisle")),
    h = sample(c(TRUE, FALSE), n, replace = TRUE),
    x = stats::rnorm(n, 50, 10) + stats::runif(n, 0, 1e-6),
    y = stats::rexp(n) * 1000 + stats::runif(n, 0, 1e-6),
    p = stats::runif(n, 1, 9) * 1e-200, # squared deviations underflow
    z = stats::rnorm(n) + 10,
    site = factor(sample(c("alpha", "beta"), n, replace = TRUE), levels = c("alpha", "beta", "solitary")),
    stringsAsFactors = FALSE
  )
  d$g[1:2] <- "rareisle"           # a stratum of 2 records: below k = 3
  d$site[5] <- "solitary"          # a category whose only record is incomplete
  d$x[c(5, 17, 40)] <- NA
  rownames(d) <- nhs_numbers(n)
  d
}

# One line per verb and path: `run` makes the release from the data, `secret` names the
# columns whose original values must not appear anywhere in it. Rows whose categories the
# verb removes (suppression, dropping, merging) are found by comparing with the input.
masked <- c("x", "y", "p")
complete_rows <- function(d) d[!is.na(d$x), ]
no_rare <- function(d) droplevels(d[d$g != "rareisle", ])
an <- function(...) function(d) suppressMessages(anonymise(d, k = 3, vars = masked, strata = c("g", "h"),
                                                           check_identifiers = FALSE, ...))
privacy_verbs <- list(
  anonymise_fail_median  = list(run = function(d) an(na = "median")(no_rare(d)), secret = masked),
  anonymise_suppress_med = list(run = an(na = "median", small_strata = "suppress"), secret = masked),
  anonymise_suppress_cc  = list(run = an(na = "complete", small_strata = "suppress"), secret = masked),
  anonymise_merge_mean   = list(run = an(na = "mean_stratum", small_strata = "merge"), secret = masked),
  anonymise_merge_cc     = list(run = an(na = "complete", small_strata = "merge"), secret = masked),
  anonymise_precision    = list(run = an(na = "median", small_strata = "suppress", format = "precision"),
                                secret = masked),
  anonymise_none         = list(run = an(na = "median", small_strata = "suppress", format = "none"),
                                secret = masked),
  anonymise_rann         = list(run = function(d) an(na = "complete", small_strata = "suppress", engine = "rann")(d),
                                secret = masked, needs = "RANN"),
  anonymise_tibble       = list(run = function(d) an(na = "median", small_strata = "suppress")(tibble::as_tibble(d)),
                                secret = masked, needs = "tibble"),
  anonymise_data.table   = list(run = function(d) an(na = "complete", small_strata = "suppress")(data.table::as.data.table(d)),
                                secret = masked, needs = "data.table"),
  anonymise_partitioned  = list(run = function(d) suppressMessages(anonymise_partitioned(
                                  unname(split(d, rep(1:3, length.out = nrow(d)))), vars = masked, strata = c("g", "h"),
                                  k = 3, na = "median", small_strata = "suppress", check_identifiers = FALSE,
                                  future = FALSE)), secret = masked),
  anonymise_keps         = list(run = function(d) anonymise_keps(d, epsilon = 5, k = 4, vars = c("y", "p"), quasi = "x",
                                                                 strata = "g", na = "complete", small_strata = "suppress"),
                                secret = c("y", "p", "x")),
  anonymise_keps_conf    = list(run = function(d) anonymise_keps(d, epsilon = 5, k = 4, vars = c("y", "p"), quasi = "x",
                                                                 strata = "g", confidence = 0.9, na = "complete",
                                                                 small_strata = "suppress"),
                                secret = c("y", "p", "x")),
  anonymise_keps_ola     = list(run = function(d) {
                                  d <- complete_rows(d)
                                  ec <- equivalence_classes(d, strata = "g", quasi = "x", k = 4, method = "ola",
                                                            hierarchies = list(x = hierarchy_bands(d$x, width = 4)),
                                                            small_strata = "suppress")
                                  anonymise_keps(d, epsilon = 5, vars = c("y", "p"), classes = ec)
                                }, secret = c("y", "p", "x")),
  merge_small_strata     = list(run = function(d) suppressMessages(merge_small_strata(complete_rows(d), k = 3,
                                                                   vars = masked, strata = c("g", "h"))),
                                secret = character()),
  generalise_strata      = list(run = function(d) suppressMessages(generalise_strata(d, "g", strata = c("g", "h"),
                                                                                     k = 3)),
                                secret = character()),
  # stirring releases original values by design: shuffle moves them between the records
  # of a cluster, flatten gives every record the cluster's median member's value; only
  # row names, removed categories and the metadata are checked
  stir_shuffle           = list(run = function(d) stir(complete_rows(d), vars = c("x", "y"), strata = "g", k = 3,
                                                       small_strata = "merge", seed = 1), secret = character()),
  stir_flatten           = list(run = function(d) stir(complete_rows(d), vars = c("x", "y"), strata = "g", k = 3,
                                                       method = "flatten", small_strata = "merge", seed = 1),
                                secret = character()),
  blend_outliers_noise   = list(run = function(d) blend_outliers(complete_rows(d), vars = c("x", "y"), strata = "g",
                                                                 k = 3, method = "noise", seed = 1),
                                secret = character()),
  anonymise_keyed        = list(run = function(d) anonymise_keyed(droplevels(no_rare(complete_rows(d))), vars = masked,
                                                                  strata = c("g", "h"), k = 3, size = 5,
                                                                  key = "privacy-suite-key-00000001",
                                                                  check_identifiers = FALSE),
                                secret = masked),
  anonymise_keyed_none   = list(run = function(d) anonymise_keyed(d, vars = masked, strata = c("g", "h"), k = 3,
                                                                  key = "privacy-suite-key-00000002", na = "median",
                                                                  small_strata = "suppress", format = "none",
                                                                  check_identifiers = FALSE),
                                secret = masked),
  anonymise_mdav         = list(run = function(d) suppressMessages(anonymise_mdav(d, vars = masked, strata = c("g", "h"),
                                                                 k = 3, na = "median", small_strata = "suppress",
                                                                 check_identifiers = FALSE)),
                                secret = masked),
  anonymise_mdav_merge   = list(run = function(d) suppressMessages(anonymise_mdav(d, vars = masked, strata = c("g", "h"),
                                                                 k = 3, na = "complete", small_strata = "merge",
                                                                 format = "none", check_identifiers = FALSE)),
                                secret = masked),
  anonymise_adaptive     = list(run = function(d) anonymise_adaptive(droplevels(no_rare(complete_rows(d))),
                                                                     vars = masked, strata = c("g", "h"), k = 3,
                                                                     m = 2, rate = 0.2, w1 = 0.01,
                                                                     check_identifiers = FALSE),
                                secret = masked),
  anonymise_adaptive_tab = list(run = function(d) {
                                  d <- droplevels(no_rare(complete_rows(d)))
                                  tab <- unique(d[c("g", "h")])
                                  tab$k <- 2L + seq_len(nrow(tab)) %% 2L
                                  anonymise_adaptive(d, vars = masked, strata = c("g", "h"), k = tab, m = 0,
                                                     check_identifiers = FALSE)
                                }, secret = masked),
  tune_release           = list(run = function(d) tune_release(droplevels(no_rare(complete_rows(d))), vars = masked,
                                                               strata = c("g", "h"), worst = 1, linkage = 0.5, top_m = 0.9,
                                                               m = 2, risk1 = 1, risk2 = 1, k = 2, seed = 1,
                                                               intruder = intruder())$release,
                                secret = masked),
  remove_identifiers     = list(run = function(d) remove_identifiers(d, cols = c("x", "y", "p")), secret = masked),
  remove_identifiers_ps  = list(run = function(d) remove_identifiers(d, cols = c("x", "y", "p"),
                                                                     method = "pseudonymise"), secret = masked)
)

# Words and numbers as printed: split on blanks and punctuation that never ends a number.
printed_tokens <- function(obj) {
  text <- c(utils::capture.output(print(obj)), utils::capture.output(utils::str(obj)),
            utils::capture.output(print(attributes(obj)[setdiff(names(attributes(obj)), "row.names")])))
  unique(unlist(strsplit(text, "[\\s,;:()\\[\\]\"'=<>]+", perl = TRUE)))
}

# Categories (of factor, character or logical columns) that have records in `original` but
# none in the release.
removed_categories <- function(original, release) {
  out <- character()
  for (v in intersect(names(original), names(release))) {
    a <- original[[v]]
    if (!(is.factor(a) || is.character(a))) next
    out <- c(out, setdiff(unique(as.character(a[!is.na(a)])), as.character(release[[v]])))
  }
  unique(out)
}

# Everything an intruder can read from the release, checked against the original data:
# the names of the problems found (empty when none).
privacy_problems <- function(release, original, secret) {
  problems <- character()
  vals <- reachable_values(release)
  chr <- unlist(lapply(vals, function(v) if (is.character(v) || is.factor(v)) as.character(v)), use.names = FALSE)
  tokens <- printed_tokens(release)
  # 1. original values of the masked variables: not as numbers, not as text, not printed
  if (length(secret) && length(leaked_values(release, original, secret))) problems <- c(problems, "values")
  # (a printed number with 6 or more significant digits that is an original rounded to them)
  num_tok <- grep("^-?[0-9]*\\.?[0-9]+(e[-+]?[0-9]+)?$", tokens, value = TRUE)
  mant <- sub("e.*$", "", sub("^-", "", num_tok))
  n_sig <- nchar(sub("^0*\\.?0*", "", gsub("\\.", "", sub("^0+\\.", "0.", mant))))
  p <- as.numeric(num_tok[n_sig >= 6L])
  n_sig <- n_sig[n_sig >= 6L]
  for (v in secret) {
    o <- original[[v]]
    o <- o[is.finite(o)]
    hit <- vapply(seq_along(p), function(i) any(abs(signif(o, n_sig[i]) - p[i]) <= 1e-12 * abs(p[i])), logical(1))
    if (any(hit)) problems <- c(problems, paste("printed", v))
  }
  # 2. row names (identifiers; their gaps tell which records were removed)
  if (any(rownames(original) %in% c(chr, tokens)) ||
      !identical(rownames(as.data.frame(release)), as.character(seq_len(nrow(release))))) {
    problems <- c(problems, "row names")
  }
  # 3. categories whose records were all removed or moved: no level, no label, no print
  for (lev in removed_categories(original, release)) {
    if (lev %in% c(chr, tokens)) problems <- c(problems, paste("removed category", lev))
  }
  # 4. the attribute: no aggregate of the originals (means or SDs of any variable over
  #    all records, the released ones, or any stratum)
  info <- attr(release, "detanon", exact = TRUE)
  if (!is.null(info)) {
    nums <- unlist(lapply(reachable_values(info), function(v) if (is.numeric(v)) as.double(v)), use.names = FALSE)
    nums <- nums[is.finite(nums) & nums != 0]
    aggs <- numeric()
    for (v in secret) {
      o <- original[[v]]
      groups <- list(all = rep(1L, length(o)), kept = as.integer(original$g != "rareisle"),
                     g = as.integer(original$g))
      for (grp in groups) {
        for (s in unique(grp)) {
          w <- o[grp == s & !is.na(o)]
          if (length(w) >= 2L) aggs <- c(aggs, mean(w), stats::sd(w), stats::sd(w) * sqrt((length(w) - 1) / length(w)))
        }
      }
    }
    if (any(vapply(nums, function(a) any(abs(a - aggs) <= 1e-9 * abs(aggs)), logical(1)))) {
      problems <- c(problems, "aggregates in the attribute")
    }
  }
  problems
}

test_that("the privacy checks catch what they look for", {
  d <- priv_data()
  expect_true(all(c("values", "printed x", "row names") %in% privacy_problems(d, d, "x")))
  ok <- anonymise(no_rare(d[!is.na(d$x), ]), k = 3, vars = masked, strata = c("g", "h"), check_identifiers = FALSE)
  expect_identical(privacy_problems(ok, d, masked), character())
  # original row names, a leftover level, a mean in the attribute, printed text: each caught
  bad <- ok
  rownames(bad) <- rownames(d)[seq_len(nrow(ok))]
  expect_identical(privacy_problems(bad, d, masked), "row names")
  bad <- ok
  bad$g <- factor(bad$g, levels = c(levels(bad$g), "rareisle"))
  expect_identical(privacy_problems(bad, d, masked), "removed category rareisle")
  bad <- ok
  attr(bad, "detanon")$mean <- mean(d$y)
  expect_identical(privacy_problems(bad, d, masked), "aggregates in the attribute")
  bad <- ok
  attr(bad, "detanon")$sd <- stats::sd(d$z[d$g == "south"]) # a stratum's SD
  expect_true("aggregates in the attribute" %in% privacy_problems(bad, d, c(masked, "z")))
  bad <- ok
  bad$note <- format(d$y[seq_len(nrow(ok))], digits = 7)
  expect_true("printed y" %in% privacy_problems(bad, d, masked))
})

for (name in names(privacy_verbs)) {
  test_that(paste("privacy:", name), {
    verb <- privacy_verbs[[name]]
    for (pkg in verb$needs) skip_if_not_installed(pkg)
    d <- priv_data()
    before <- d
    release <- verb$run(d)
    expect_identical(d, before) # the input is unchanged
    expect_gt(nrow(release), 0L)
    expect_identical(privacy_problems(release, d, verb$secret), character())
    # the caller's own attributes (na.omit()'s row names and positions, stored means,
    # a label naming people) stay out of the release, with a data.frame, tibble or data.table
    dd <- with_caller_attributes(d)
    release <- verb$run(dd)
    expect_identical(foreign_attributes(release), character())
    expect_identical(privacy_problems(release, d, verb$secret), character())
    for (cls in c("tibble", "data.table")) {
      if (!requireNamespace(cls, quietly = TRUE)) next
      as_cls <- if (cls == "tibble") tibble::as_tibble else data.table::as.data.table
      di <- with_caller_attributes(as_cls(d))
      release <- verb$run(di)
      expect_identical(foreign_attributes(release), character(), info = cls)
    }
  })
}

test_that("anonymise_keyed(): the key is in no reachable value, attribute or printed form", {
  d <- droplevels(no_rare(complete_rows(priv_data())))
  secret <- "privacy-suite-secret-key-98765"
  m <- suppressMessages(anonymise_keyed(d, vars = masked, strata = c("g", "h"), k = 3, size = 5, key = secret,
                                        check_identifiers = FALSE))
  expect_identical(key_leaks(m, secret), character())
  expect_identical(key_leaks(assess(d, m), secret), character())
  # the detector can fail: a release that carries the key is caught
  bad <- m
  attr(bad, "detanon")$settings$key <- secret
  expect_setequal(key_leaks(bad, secret), c("value", "print", "serialised"))
  bad <- m
  attr(bad, "detanon")$settings$key <- charToRaw(secret)
  expect_true("value" %in% key_leaks(bad, secret))
  expect_true(release_info(m)$settings$keyed)
})

test_that("the attribute check catches a caller's attribute", {
  d <- with_caller_attributes(complete_rows(no_rare(priv_data())))
  expect_setequal(foreign_attributes(d), c("na.action", "cohort", "means"))
  expect_identical(foreign_attributes(complete_rows(no_rare(priv_data()))), character())
})

test_that("na.omit() data: the release has no na.action (it names the dropped records)", {
  d <- data.frame(x = c(3.1, 4.7, 2.2, 8.9, NA, 5.5, 6.1, 7.3), y = c(1, 4, 2, 8, 3, 9, 5, 6))
  rownames(d) <- paste0("NHS", 1:8)
  m <- anonymise(stats::na.omit(d), k = 3, strata = character())
  expect_null(attr(m, "na.action"))
  expect_false(any(grepl("NHS", unlist(lapply(attributes(m), as.character)))))
})

test_that("a tiny-valued column is masked, not released as constant, and measured", {
  d <- data.frame(x = c(1, 5, 2, 8, 3, 9, 4, 7, 6, 2, 5, 1) * 1e-200, y = c(3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8))
  m <- anonymise(d, k = 3, vars = c("x", "y"), strata = character(), format = "none")
  expect_false(any(m$x %in% d$x))
  expect_gt(length(unique(m$x)), 1L)
  # it is masked exactly as the same column at ordinary magnitude
  big <- anonymise(transform(d, x = x * 2^664), k = 3, vars = c("x", "y"), strata = character(), format = "none")
  expect_equal(m$x * 2^664, big$x, tolerance = 1e-14)
  # subnormal values too
  s <- anonymise(transform(d, x = x * 1e-110), k = 3, vars = c("x", "y"), strata = character(), format = "none")
  expect_false(any(s$x %in% (d$x * 1e-110)))
  expect_gt(length(unique(s$x)), 1L)
  # the risk and utility measures see it (not dropped as constant)
  dd <- priv_data()
  dd <- dd[!is.na(dd$x), ]
  mm <- anonymise(dd, k = 3, vars = c("p", "y"), strata = "g", small_strata = "suppress", check_identifiers = FALSE) |>
    suppressMessages()
  keep <- dd$g != "rareisle"
  scaled <- transform(dd[keep, ], p = p * 2^664)
  mscaled <- transform(mm, p = p * 2^664)
  expect_equal(utility_delta(dd[keep, ], mm, vars = c("p", "y")), utility_delta(scaled, mscaled, vars = c("p", "y")))
  l1 <- risk_linkage(dd[keep, ], mm, vars = c("p", "y"), strata = "g")
  l2 <- risk_linkage(scaled, mscaled, vars = c("p", "y"), strata = "g")
  expect_equal(l1$rate, l2$rate)
  expect_equal(risk_rmd(dd[keep, ], mm, vars = c("p", "y"), deterministic = TRUE)$risk1,
               risk_rmd(scaled, mscaled, vars = c("p", "y"), deterministic = TRUE)$risk1)
})

test_that("two records: the release and its attribute do not give both values back", {
  d <- data.frame(x = c(31.4159265, 27.1828183), y = c(1.6180339, 1.4142136))
  m <- suppressWarnings(anonymise(d, k = 2, vars = c("x", "y"), strata = character()))
  nums <- unlist(lapply(reachable_values(m), function(v) if (is.numeric(v)) as.double(v)), use.names = FALSE)
  nums <- unique(nums[is.finite(nums)])
  for (v in c("x", "y")) {
    cand <- c(outer(nums, nums, "+"), outer(nums, nums / sqrt(2), "+"), outer(nums, nums / sqrt(2), "-"),
              outer(nums, nums, "-"))
    expect_false(all(vapply(d[[v]], function(o) any(abs(cand - o) < 1e-6), logical(1))), info = v)
  }
})

test_that("the release drops row names and emptied levels, and keeps groups and keys", {
  d <- priv_data()
  out <- suppressMessages(anonymise(d, k = 3, vars = masked, strata = c("g", "h"), na = "complete",
                                    small_strata = "suppress", check_identifiers = FALSE))
  expect_identical(levels(out$g), c("north", "south"))
  expect_identical(levels(out$site), c("alpha", "beta"))
  # a level already empty in the input (records removed by the caller) is dropped too
  d2 <- d[d$g != "rareisle", ]
  expect_identical(levels(d2$g), c("north", "south", "rareisle"))
  out2 <- suppressMessages(anonymise(d2, k = 3, vars = masked, strata = c("g", "h"), na = "median",
                                     check_identifiers = FALSE))
  expect_identical(levels(out2$g), c("north", "south"))
  skip_if_not_installed("dplyr")
  gd <- dplyr::group_by(tibble::as_tibble(d2), g)
  og <- suppressMessages(anonymise(gd, k = 3, vars = masked, strata = c("g", "h"), na = "median",
                                   check_identifiers = FALSE))
  expect_s3_class(og, "grouped_df")
  expect_identical(dplyr::group_vars(og), "g")
  skip_if_not_installed("data.table")
  dt <- data.table::as.data.table(d2)
  data.table::setkeyv(dt, "g")
  od <- suppressMessages(anonymise(dt, k = 3, vars = masked, strata = c("g", "h"), na = "median",
                                   check_identifiers = FALSE))
  expect_identical(data.table::key(od), "g")
  # `:=` from a data.table-aware environment: no "invalid .internal.selfref" warning
  env <- list2env(list(od = od), parent = globalenv())
  expect_silent(eval(quote(od[, w := 1]), env))
  expect_identical(env$od$w, rep(1, nrow(od)))
  expect_false(is.null(attr(od, "detanon")))
})

test_that("a data.table release prints at the console like any other", {
  skip_if_not_installed("data.table")
  dt <- data.table::as.data.table(complete_rows(no_rare(priv_data())))
  expect_true(withVisible(anonymise(dt, k = 3, vars = masked, strata = c("g", "h"), check_identifiers = FALSE))$visible)
})
