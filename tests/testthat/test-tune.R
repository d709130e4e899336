# tune_release(): limits met on the release it returns, measured by the public functions.

titanic_tuned <- local({
  cache <- NULL
  function() {
    if (is.null(cache)) {
      d <- titanic_paper()[-1]
      cache <<- list(d = d, t = tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                                            linkage = 0.01, top_m = 0.15, m = 3, risk1 = 0.005,
                                            risk2 = 0, keps_epsilon = c(16, 64)))
    }
    cache
  }
})

test_that("the Titanic limits are met, measured on the returned release", {
  x <- titanic_tuned(); d <- x$d; tu <- x$t
  rel <- tu$release
  expect_false(is.null(rel))
  l1 <- risk_linkage(d, rel, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  l3 <- risk_linkage(d, rel, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), m = 3)
  r <- risk_rmd(d, rel, vars = c("Age", "Fare"), deterministic = TRUE)
  delta <- utility_delta(d, rel, vars = c("Age", "Fare"))$delta
  u <- utility_pmse(d, rel)$U
  expect_lte(l3$rate, 0.15)
  expect_lte(l1$rate, 0.01)
  expect_lte(r$risk1, 0.005)
  expect_identical(r$risk2, 0)
  expect_true(all(delta <= 0.1))
  expect_lt(u, 0.001)
  # the report holds exactly these measurements
  expect_equal(tu$chosen$linkage, l1$rate)
  expect_equal(tu$chosen$top_m, l3$rate)
  expect_equal(tu$chosen$risk1, r$risk1)
  expect_equal(tu$chosen$loss, max(delta))
  # the replay attack is reported beside it, for p = 1, 0.5, 0.1
  expect_identical(tu$replay$by_p$p, c(1, 0.5, 0.1))
  out <- paste(utils::capture.output(print(tu)), collapse = "\n")
  expect_match(out, "replay attack \\(not limited\\)")
  expect_false(grepl("\\bsafe\\b", gsub("does not prove the release safe", "", out)))
  # only masked values and unchanged columns are released
  expect_identical(rel[setdiff(names(d), c("Age", "Fare"))], d[setdiff(names(d), c("Age", "Fare"))])
  # the numbers of the note and the vignette
  expect_equal(c(tu$chosen$linkage, tu$chosen$top_m, tu$chosen$loss), c(0.00561, 0.1369, 0.08346),
               tolerance = 2e-3)
  expect_equal(unname(delta), c(0.0331, 0.0835), tolerance = 5e-3)
  # the release carries the metadata of the verb that made it: a user replays it alike
  info <- release_info(rel)
  expect_identical(info$verb, "anonymise_adaptive")
  again <- risk_replay(d, rel, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), seed = 1)
  expect_identical(again$by_p, tu$replay$by_p)
  expect_identical(as.data.frame(anonymise_adaptive(d, vars = info$settings$vars, strata = info$settings$strata,
                                                    k = info$settings$k, k_max = info$settings$k_max,
                                                    m = info$settings$m, rate = info$settings$rate,
                                                    w1 = info$settings$w1, check_identifiers = FALSE)),
                   as.data.frame(rel))
})

test_that("the search covers k per stratum, adaptive k, stirring and fixed k, and reports each", {
  tu <- titanic_tuned()$t
  t <- tu$tried
  expect_true(all(c("anonymise", "stratum", "adaptive", "stir", "keps") %in% t$method))
  expect_true(all(t$seconds >= 0))
  # every candidate's row holds its own measurements: the failures are the limits exceeded
  lim <- unlist(tu$limits[c("linkage", "linkage_stratum", "top_m", "top_m_stratum", "risk1", "risk2")])
  for (i in seq_len(nrow(t))) {
    over <- names(lim)[unlist(t[i, names(lim)]) > lim]
    expect_identical(t$fails[i], paste(over, collapse = ", "))
  }
  # the adaptive path: each stage at least as strong as the one before
  path <- t[t$method == "adaptive" & !grepl("nearest only", t$settings), ]
  expect_true(all(diff(path$top_m) <= 1e-12))
  expect_match(tu$stop, "candidates tried; [0-9]+ met every limit")
  # methods = a subset searches only those families
  d <- titanic_paper()[-1]
  only <- tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                       methods = c("anonymise", "stratum"), top_m = 0.5, linkage = 0.2, risk1 = 1, risk2 = 1)
  expect_setequal(unique(only$tried$method), c("anonymise", "stratum"))
  raw <- tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), methods = "anonymise",
                      format = "none", top_m = 0.6, linkage = 0.3, risk1 = 1, risk2 = 1)
  expect_identical(release_info(raw$release)$settings$format, "none")
  expect_identical(release_info(only$release)$settings$format, "natural")
  expect_error(tune_release(d, vars = c("Age", "Fare"), format = "round"), "`format` must be one of")
  expect_lte(only$chosen$top_m, 0.5)
  # a k-per-stratum candidate (assembled from per-stratum centroids) is the release of
  # anonymise_adaptive() with its table of k
  st <- tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), methods = "stratum",
                     top_m = 0.45, linkage = 0.2, risk1 = 1, risk2 = 1)
  expect_identical(st$chosen$method, "stratum")
  info <- release_info(st$release)
  expect_gt(length(unique(info$settings$k$k)), 1L)
  again <- anonymise_adaptive(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                              k = info$settings$k, k_max = info$settings$k_max, m = 0, check_identifiers = FALSE)
  expect_identical(as.data.frame(again)[c("Age", "Fare")], as.data.frame(st$release)[c("Age", "Fare")])
  # and replayed from its metadata: exactly at p = 1 (records sharing released values share
  # the link), with the table cut to the known records' strata below
  rp <- st$replay$by_p
  expect_equal(rp$rate[1], mean(risk_linkage(st$release, st$release, vars = c("Age", "Fare"),
                                             strata = c("Pclass", "Sex", "Family"))$linked))
  expect_true(all(rp$rate[-1] < rp$rate[1]))
})

# Single methods to compare with, measured by the package's functions: MDAV
# microaggregation per stratum (sdcMicro) and k = 3 centroids then rank swapping per stratum.
issue_singles <- function(d, v, st) {
  s <- as.integer(interaction(d[st], drop = TRUE))
  out <- list()
  for (k in c(5, 10, 20)) {
    r <- sdcMicro::microaggregation(cbind(d[v], s = s), variables = v, aggr = k, method = "mdav",
                                    strata_variables = "s")
    mx <- d
    mx[v] <- r$mx[v]
    out[[paste("MDAV k =", k)]] <- mx
  }
  set.seed(1)
  rs <- as.data.frame(anonymise(d, k = 3, vars = v, strata = st, format = "none"))
  attr(rs, "detanon") <- NULL
  for (g in unique(s)) {
    i <- which(s == g)
    rs[i, v] <- suppressWarnings(sdcMicro::rankSwap(rs[i, v], variables = v, P = 15))
  }
  out[["k = 3, rank swap P = 15"]] <- rs
  out
}

test_that("on the frontier the tuned releases lie below every single method and the nearest-only masking", {
  skip_if_not_installed("sdcMicro")
  x <- titanic_tuned(); d <- x$d; tu <- x$t
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  t <- tu$tried
  tuned <- t[t$method %in% c("adaptive", "stratum", "stir") & !grepl("nearest only", t$settings), ]
  others <- t[t$method %in% c("anonymise", "keps") | grepl("nearest only", t$settings),
              c("settings", "top_m", "loss")]
  for (nm in names(sing <- issue_singles(d, v, st))) {
    others <- rbind(others, data.frame(settings = nm, top_m = risk_linkage(d, sing[[nm]], vars = v, strata = st,
                                                                        m = 3)$rate,
                                       loss = max(utility_delta(d, sing[[nm]], vars = v)$delta)))
  }
  expect_gte(nrow(others), 11L) # anonymise k = 3, 5, 10, 20; keps 16, 64; nearest only; MDAV x 3; rank swap
  for (i in seq_len(nrow(others))) {
    below <- tuned$top_m <= others$top_m[i] & tuned$loss <= others$loss[i]
    # every single method is beaten on both axes, or keeps less loss than every tuned
    # release (only at top-3 rates far above the limit: k = 3, epsilon = 64)
    expect_true(any(below) || (others$loss[i] < min(tuned$loss) && others$top_m[i] > 0.4),
                info = others$settings[i])
  }
  # the frontier is not beaten by any candidate on both axes
  f <- tu$frontier
  for (i in seq_len(nrow(f))) {
    expect_false(any(t$top_m < f$top_m[i] & t$loss < f$loss[i]))
  }
  pdf(NULL); on.exit(grDevices::dev.off())
  expect_invisible(plot(tu))
})

test_that("limits hold on random data, and the choice is no worse than any method that meets them", {
  for (seed in 1:6) {
    set.seed(seed)
    n <- c(120, 300, 500, 200, 800, 250)[seed]
    d <- data.frame(a = stats::rlnorm(n), b = round(stats::rnorm(n, 50, 10)),
                    g = sample(c("u", "v", "w")[seq_len(1 + seed %% 3)], n, TRUE))
    if (seed == 5) d$a <- round(d$a, 1) # many ties
    lim <- list(linkage = c(0.05, 0.05, 0.02, 0.1, 0.03, 0.05)[seed],
                top_m = c(0.3, 0.4, 0.5, 0.35, 0.3, 0.25)[seed],
                risk1 = c(0.05, 0.05, 0.02, 1, 0.05, 0.1)[seed],
                risk2 = c(0.02, 0.02, 0, 1, 0.01, 0.02)[seed])
    m <- c(2, 2, 3, 1, 2, 3)[seed]
    lim$top_m_stratum <- c(1, 0.5, 1, 1, 0.45, 0.4)[seed]
    tu <- tune_release(d, vars = c("a", "b"), strata = "g", linkage = lim$linkage, top_m = lim$top_m,
                       top_m_stratum = lim$top_m_stratum, m = m, risk1 = lim$risk1, risk2 = lim$risk2,
                       seed = seed)
    if (is.null(tu$release)) {
      expect_match(tu$stop, "none met every limit")
      next
    }
    rel <- tu$release
    expect_lte(risk_linkage(d, rel, vars = c("a", "b"), strata = "g")$rate, lim$linkage)
    lm <- risk_linkage(d, rel, vars = c("a", "b"), strata = "g", m = m)
    expect_lte(lm$rate, lim$top_m)
    expect_lte(max(lm$by_stratum$rate), lim$top_m_stratum)
    r <- risk_rmd(d, rel, vars = c("a", "b"), deterministic = TRUE)
    expect_lte(r$risk1, lim$risk1)
    expect_lte(r$risk2, lim$risk2)
    ok <- tu$tried[tu$tried$meets & tu$tried$method != "keps", ]
    expect_equal(tu$chosen$loss, min(ok$loss))
    expect_equal(tu$chosen$loss, max(utility_delta(d, rel)$delta))
    meets <- function(x) {
      risk_linkage(d, x)$rate <= lim$linkage && risk_linkage(d, x, m = m)$rate <= lim$top_m &&
        max(risk_linkage(d, x, m = m)$by_stratum$rate) <= lim$top_m_stratum &&
        risk_rmd(d, x, deterministic = TRUE)$risk1 <= lim$risk1 &&
        risk_rmd(d, x, deterministic = TRUE)$risk2 <= lim$risk2
    }
    # no worse than the methods of its space, made here by the public verbs
    for (k in c(3, 5, 10, 20)) {
      x <- anonymise(d, k = k, vars = c("a", "b"), strata = "g", check_identifiers = FALSE)
      if (meets(x)) expect_lte(tu$chosen$loss, max(utility_delta(d, x)$delta))
    }
    for (rate in c(0.5, 0.3)) {
      x <- anonymise_adaptive(d, vars = c("a", "b"), strata = "g", k = 2, k_max = 33, m = m, rate = rate,
                              w1 = if (lim$risk1 < 1) 0.01, check_identifiers = FALSE)
      if (meets(x)) expect_lte(tu$chosen$loss, max(utility_delta(d, x)$delta))
    }
    # same inputs, same release
    again <- tune_release(d, vars = c("a", "b"), strata = "g", linkage = lim$linkage, top_m = lim$top_m,
                          top_m_stratum = lim$top_m_stratum, m = m, risk1 = lim$risk1, risk2 = lim$risk2,
                          seed = seed)
    expect_identical(again$release, rel)
    expect_identical(again$tried$loss, tu$tried$loss)
  }
})

test_that("a search that cannot meet its limits says how close it got and why it stopped", {
  set.seed(3)
  n <- 3000
  d <- data.frame(a = round(stats::rnorm(n, 40, 10)), b = round(stats::rlnorm(n, 3, 0.5), 1),
                  g = sample(c("u", "v"), n, TRUE))
  tu <- tune_release(d, vars = c("a", "b"), strata = "g", linkage = 0.01, top_m = 0.1, m = 3,
                     risk1 = 0.001, risk2 = 0, methods = c("anonymise", "adaptive"))
  expect_null(tu$release)
  expect_null(tu$replay)
  expect_match(tu$stop, "none met every limit. Closest \\(least excess over the limits\\)")
  # the adaptive path stops once a stage takes off less than a quarter of the excess
  expect_match(tu$stop, "the last stage took off less than a quarter of the excess")
  path <- tu$tried[tu$tried$method == "adaptive" & !grepl("nearest only", tu$tried$settings), ]
  ex <- vapply(seq_len(nrow(path)), function(i) detanon:::tune_excess(path[i, ], tu$limits), 0)
  expect_gt(ex[length(ex)], 0.75 * ex[length(ex) - 1L])
  # the closest candidate is the one of least excess
  all_ex <- vapply(seq_len(nrow(tu$tried)), function(i) detanon:::tune_excess(tu$tried[i, ], tu$limits), 0)
  expect_match(tu$stop, tu$tried$settings[which.min(all_ex)], fixed = TRUE)
  expect_output(print(tu), "No candidate met every limit; nothing is returned as a release.")
})

test_that("bad or impossible limits are refused, naming the limit", {
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  for (bad in list(0, 1.5, -0.1, NA, "0.1", c(0.1, 0.2))) {
    expect_error(tune_release(d, vars = v, strata = st, linkage = bad),
                 "the limit `linkage` must be a single share in \\(0, 1\\]", class = "detanon_error_argument")
    expect_error(tune_release(d, vars = v, strata = st, top_m = bad), "the limit `top_m`")
  }
  expect_error(tune_release(d, vars = v, strata = st, risk2 = -1), "the limit `risk2` must be a single share in \\[0, 1\\]")
  expect_error(tune_release(d, vars = v, strata = st, k = 40),
               "the limit `k_strata` = 40 cannot be met: .* the smallest has 32 records")
  small <- data.frame(a = stats::rnorm(20), b = stats::rnorm(20), g = rep(c("x", "y"), c(17, 3)))
  expect_error(tune_release(small, vars = c("a", "b"), strata = "g", m = 3, top_m = 0.1),
               "the limit `top_m` = 0.1 cannot be met with `m` = 3")
  expect_error(tune_release(d, vars = v, strata = st, objective = "model"), "needs a model `formula`")
  expect_error(tune_release(d, vars = v, strata = st, top_m_stratum = 0), "the limit `top_m_stratum` must be")
  small3 <- data.frame(a = stats::rnorm(40), b = stats::rnorm(40), g = rep(c("x", "y"), c(37, 3)))
  expect_error(tune_release(small3, vars = c("a", "b"), strata = "g", m = 3, top_m = 0.5, top_m_stratum = 0.9),
               "the limit `top_m_stratum` = 0.9 cannot be met with `m` = 3: .*the smallest stratum has 3 records")
  expect_error(tune_release(d, vars = v, strata = st, methods = "mdav"), "`methods` must be some of")
  expect_error(tune_release(d, vars = v, strata = st, methods = character()), "`methods` must be some of")
  # nothing is changed by a refused call
  d0 <- d
  try(tune_release(d, vars = v, strata = st, top_m = 2), silent = TRUE)
  expect_identical(d, d0)
})

test_that("error messages of the new verbs are pinned", {
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  expect_snapshot(error = TRUE, tune_release(d, vars = v, strata = st, top_m = 0))
  expect_snapshot(error = TRUE, tune_release(d, vars = v, strata = st, k = 40))
  expect_snapshot(error = TRUE, risk_replay(d, d, vars = v, strata = st, p = c(0.5, 2)))
  expect_snapshot(error = TRUE, risk_linkage(d, d, vars = v, strata = st, m = 0))
  small <- data.frame(a = c(1, 2, 3, 4), g = c("x", "x", "x", "y"))
  expect_snapshot(error = TRUE, anonymise_adaptive(small, vars = "a", strata = "g", k = 2))
})

test_that("the search's measurements are those of the public functions", {
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  df <- as.data.frame(d)
  p <- detanon:::adaptive_setup(df, v, st, rmd = TRUE, nthreads = 1L)
  ev <- detanon:::tune_evaluator(df, v, st, p, 3L, "delta", NULL, gaussian(), 1L)
  rels <- list(anonymise(d, vars = v, strata = st, k = 3, check_identifiers = FALSE),
               anonymise(d, vars = v, strata = st, k = 7, format = "none", check_identifiers = FALSE),
               anonymise_adaptive(d, vars = v, strata = st, k = 2, m = 3, rate = 0.3, w1 = 0.01,
                                  check_identifiers = FALSE))
  rels[[4]] <- stir(rels[[1]], vars = v, strata = st, seed = 2)
  for (rel in rels) {
    e <- ev(rel)
    l1 <- risk_linkage(d, rel, vars = v, strata = st)
    l3 <- risk_linkage(d, rel, vars = v, strata = st, m = 3)
    r <- risk_rmd(d, rel, vars = v, deterministic = TRUE)
    expect_identical(e$linkage, l1$rate)
    expect_identical(e$top_m, l3$rate)
    expect_identical(e$linkage_stratum, max(l1$by_stratum$rate))
    expect_identical(e$top_m_stratum, max(l3$by_stratum$rate))
    expect_identical(e$by$top_m, l3$by_stratum$rate)
    expect_identical(e$reid, l1$reid)
    expect_identical(e$risk1, r$risk1)
    expect_identical(e$risk2, r$risk2)
    expect_equal(e$by$risk1 * e$by$size, # (a share times the size: equal up to rounding)
                     as.vector(table(factor(interaction(d[st], drop = TRUE)[r$rows_risk1],
                                            levels = levels(interaction(d[st], drop = TRUE))))) + 0)
    expect_identical(e$loss, max(utility_delta(d, rel, vars = v)$delta))
  }
})

test_that("small or odd data: a release or a classed error, never a raw one", {
  for (n in c(8, 15)) for (s in 1:5) {
    set.seed(s)
    d <- data.frame(a = stats::rnorm(n), b = stats::rnorm(n), g = rep("x", n))
    tu <- tune_release(d, vars = c("a", "b"), strata = "g")
    expect_s3_class(tu, "detanon_tuned")
    if (!is.null(tu$release)) {
      expect_lte(risk_linkage(d, tu$release, vars = c("a", "b"), strata = "g")$rate, 0.01)
      expect_identical(tu$replay$by_p$p, c(1, 0.5, 0.1))
    } else {
      expect_match(tu$stop, "none met every limit")
    }
    # a candidate whose risk1 cannot be measured counts as missing its limit
    na <- is.na(tu$tried$risk1)
    expect_true(all(!tu$tried$meets[na]))
  }
  # the replay of an adaptive release with w1 on an intruder's share too small for it
  set.seed(1)
  d <- data.frame(a = stats::rnorm(15), b = stats::rnorm(15))
  rel <- anonymise_adaptive(d, vars = c("a", "b"), strata = character(), k = 2, m = 1, w1 = 0.01)
  rp <- risk_replay(d, rel, seed = 1)
  expect_identical(rp$by_p$n_known, c(15L, 8L, 2L))
  # 7 records, 2 variables: too few for risk1 and risk2
  expect_error(tune_release(d[1:3, ], vars = c("a", "b"), strata = character()),
               class = "detanon_error_data")
})

test_that("methods = \"stir\" alone stirs the fixed-k candidates", {
  d <- titanic_paper()[-1]
  tu <- tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), methods = "stir",
                     linkage = 0.3, top_m = 0.6, risk1 = 1, risk2 = 1)
  expect_setequal(unique(tu$tried$method), c("anonymise", "stir"))
  expect_true(any(grepl("candidate 1 (anonymise)", tu$tried$settings, fixed = TRUE)))
})

test_that("k is the smallest centroid size of every candidate; k_strata the smallest stratum", {
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  tu <- tune_release(d, vars = v, strata = st, k = 4, methods = c("anonymise", "adaptive"),
                     linkage = 0.3, top_m = 0.6, risk1 = 1, risk2 = 1)
  t <- tu$tried
  expect_identical(t$settings[t$method == "anonymise"], paste0("k = ", c(4, 5, 10, 20)))
  expect_true(all(grepl("^k from 4|^k = 4\\.\\.", t$settings[t$method == "adaptive"])))
  expect_identical(tu$limits$k_strata, 4L)
  info <- release_info(tu$release)
  expect_gte(min(if (is.data.frame(info$settings$k)) info$settings$k$k else info$settings$k), 4)
  expect_error(tune_release(d, vars = v, strata = st, k = 4, k_strata = 3), "`k_strata` \\(3\\) must be at least `k` \\(4\\)")
})

test_that("the printed report fits 80 columns and numbers every candidate once", {
  tu <- titanic_tuned()$t
  out <- utils::capture.output(print(tu))
  expect_lte(max(nchar(out)), 80L)
  # the settings of every candidate appear under its number
  n <- nrow(tu$tried)
  for (i in seq_len(n)) expect_true(any(grepl(sprintf("^ *%d  ", i), out)), info = i)
  expect_match(paste(out, collapse = "\n"), "Settings \\(and the limits each candidate misses\\)")
})
