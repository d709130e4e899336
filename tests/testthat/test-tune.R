# tune_release(): searched on some attacks, verified on the whole battery; the limits met
# on the release it returns, measured by the public functions.

v_t <- c("Age", "Fare")
st_t <- c("Pclass", "Sex", "Family")

titanic_tuned <- local({
  cache <- NULL
  function() {
    if (is.null(cache)) {
      d <- titanic_paper()[-1]
      cache <<- list(d = d, t = tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, keps_epsilon = c(16, 64)))
    }
    cache
  }
})

# The worst one-record rate and the worst top-m rate of a battery, by hand from its table
# (the attacks on the tails apart: their largest rate is `tail`, with a limit of its own).
battery_worst <- function(b) {
  tab <- as.data.frame(b)
  tail <- tab$name %in% c("tail_outliers", "tail_extremes")
  c(worst = max(tab$rate[!tail], na.rm = TRUE), top_m = max(tab$rate_m[!tail], na.rm = TRUE),
    tail = if (any(tail)) max(tab$rate[tail], na.rm = TRUE) else NA_real_)
}

test_that("with its defaults the Titanic release meets the limits on the whole battery", {
  x <- titanic_tuned(); d <- x$d; tu <- x$t
  rel <- tu$release
  expect_false(is.null(rel))
  expect_identical(tu$attacks, c("linkage_released", "linkage_original"))
  expect_setequal(tu$verify, c("linkage_released", "linkage_original", "singling_out", "assignment",
                               "fellegi_sunter", "recipe", "tail_outliers", "tail_extremes"))
  # the verification, recomputed by the public function: every attack, the limits 0.1 and 0.3
  b <- risk_battery(d, rel, intruder = intruder(v_t, st_t), seed = 1)
  w <- battery_worst(b)
  expect_lte(w[["worst"]], 0.1)
  expect_lte(w[["top_m"]], 0.3)
  expect_equal(as.data.frame(tu$battery), as.data.frame(b))
  expect_equal(tu$chosen$verify_worst, w[["worst"]])
  expect_equal(tu$chosen$verify_top_m, w[["top_m"]])
  # the tails: within their limit (0.2)
  expect_lte(w[["tail"]], 0.2)
  expect_equal(tu$chosen$verify_tail, w[["tail"]])
  expect_true(tu$chosen$verified)
  # the search measures are those of the search attacks
  bs <- as.data.frame(risk_battery(d, rel, intruder = intruder(v_t, st_t), attacks = tu$attacks, control = FALSE,
                                   seed = 1))
  expect_equal(tu$chosen$worst, max(bs$rate))
  expect_equal(tu$chosen$top_m, max(bs$rate_m))
  expect_equal(tu$chosen$loss, max(utility_delta(d, rel, vars = v_t)$delta))
  # the chosen release is the least loss among the candidates verified and passed: every
  # candidate of less loss that met the search was verified and failed
  t <- tu$tried
  cheaper <- t$meets & t$loss < tu$chosen$loss & t$method != "keps"
  expect_true(all(t$verified[cheaper] %in% FALSE))
  # only masked values and unchanged columns are released
  expect_identical(rel[setdiff(names(d), v_t)], d[setdiff(names(d), v_t)])
  out <- gsub("\\s+", " ", paste(utils::capture.output(print(tu)), collapse = " "))
  expect_match(out, "Search attacks: linkage_released, linkage_original")
  expect_match(out, "Verification battery of the chosen release")
  expect_false(grepl("\\bsafe\\b", gsub("does not prove the release safe", "", out)))
  expect_gt(tu$seconds, 0)
})

test_that("a candidate that passes the search but fails the verification is reported, and the next is verified", {
  d <- titanic_paper()[-1]
  # limits that centroid releases meet on linkage alone, but not against one-to-one
  # assignment or the algorithm-aware intruder (about 0.57 on every kNN-centroid release)
  tu <- tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, worst = 0.3, top_m = 0.7,
                     methods = c("anonymise", "adaptive", "mdav"))
  t <- tu$tried
  failed <- which(t$verified %in% FALSE)
  expect_gt(length(failed), 0L)
  expect_true(all(t$meets[failed]))
  expect_match(t$verify_fails[failed[1]], "worst \\((assignment|recipe) ")
  # each failure is what the battery measures on that candidate
  for (i in failed[1:2]) {
    rel <- if (t$method[i] == "anonymise") {
      anonymise(d, vars = v_t, strata = st_t, k = as.integer(sub("k = ", "", t$settings[i])),
                check_identifiers = FALSE)
    }
    if (is.null(rel)) next
    w <- battery_worst(risk_battery(d, rel, intruder = intruder(v_t, st_t), seed = 1))
    expect_equal(t$verify_worst[i], w[["worst"]])
    expect_gt(w[["worst"]], 0.3)
  }
  # the release returned passes: verified in order of loss, the first that passes
  expect_false(is.null(tu$release))
  w <- battery_worst(risk_battery(d, tu$release, intruder = intruder(v_t, st_t), seed = 1))
  expect_lte(w[["worst"]], 0.3)
  expect_lte(w[["top_m"]], 0.7)
  ver <- which(!is.na(t$verified))
  expect_identical(ver, which(t$meets & t$loss <= tu$chosen$loss & t$method != "keps"))
  expect_identical(which(t$verified %in% TRUE), ver[which.max(t$loss[ver])])
  expect_match(tu$stop, "of them failed the verification \\(worst attack: ")
  out <- gsub("\\s+", " ", paste(utils::capture.output(print(tu)), collapse = " "))
  expect_match(out, "passes the search, fails the verification: worst \\(")
  # no candidate passes the verification: nothing returned, and why
  none <- tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, worst = 0.3, top_m = 0.7, methods = "anonymise")
  expect_null(none$release)
  expect_null(none$chosen)
  expect_match(none$stop, "every one failed the verification")
  expect_s3_class(none$battery, "detanon_battery")
  expect_output(print(none), "nothing is returned as a release")
})

test_that("the search attacks and the verification attacks are the user's", {
  d <- titanic_paper()[-1]
  # searched with the algorithm-aware intruder too, no kNN-centroid candidate meets the search
  tu <- tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, attacks = c("linkage_released", "recipe", "assignment"),
                     methods = c("anonymise", "mdav"))
  t <- tu$tried
  expect_true(all(!t$meets[t$method == "anonymise"]))
  expect_true(all(t$worst_attack[t$method == "anonymise"] %in% c("recipe", "assignment")))
  expect_identical(tu$chosen$method, "mdav")
  # verified on fewer attacks
  few <- tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, worst = 0.3, top_m = 0.7, methods = "anonymise",
                      verify = c("linkage_released", "linkage_original"))
  expect_false(is.null(few$release))
  expect_identical(few$verify, c("linkage_released", "linkage_original"))
  expect_setequal(names(few$battery$attacks), few$verify)
  # bad names and the inference attack without a sensitive column are refused
  expect_error(tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, attacks = "nearest"),
               "`attacks` must name attacks of the battery", class = "detanon_error_argument")
  expect_error(tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, verify = character()),
               "`verify` must name attacks of the battery", class = "detanon_error_argument")
  expect_error(tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, attacks = "inference"),
               "needs a `sensitive` column", class = "detanon_error_argument")
  expect_error(tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, sensitive = "nope"),
               "`sensitive` must be NULL or the name of a column", class = "detanon_error_argument")
  expect_error(tune_release(d, vars = v_t, strata = st_t, intruder = list()),
               "`intruder` must be NULL or made by intruder", class = "detanon_error_argument")
  expect_error(tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, worst = 0), "the limit `worst` must be a single share")
})

test_that("the older limits still bind when given", {
  d <- titanic_paper()[-1]
  # (no tail limit: the older limits alone)
  tu <- tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, worst = 0.3, top_m = 0.7, linkage = 0.02, risk1 = 0.01,
                     risk2 = 0.001, tail = 1, methods = c("anonymise", "stratum", "adaptive", "mdav"))
  rel <- tu$release
  expect_false(is.null(rel))
  expect_lte(risk_linkage(d, rel, vars = v_t, strata = st_t)$rate, 0.02)
  r <- risk_rmd(d, rel, vars = v_t, deterministic = TRUE)
  expect_lte(r$risk1, 0.01)
  expect_lte(r$risk2, 0.001)
  expect_true(any(grepl("linkage|risk1", tu$tried$fails)))
})

test_that("MDAV groups: k to 2k - 1 records within a stratum, released as their means", {
  set.seed(4)
  for (n in c(5, 9, 17, 40, 101)) for (k in c(2, 3, 5)) {
    if (n < k) next
    z <- matrix(stats::rnorm(n * 2), n, 2)
    if (n == 40) z[1:20, ] <- 0 # ties
    g <- mdav_kernel(z, rep(1L, n), k)$group
    sz <- tabulate(g)
    expect_true(all(sz >= k), info = paste(n, k))
    # records equal in every variable share a group (which may then hold more than 2k - 1)
    if (n == 40) expect_length(unique(g[1:20]), 1L) else expect_true(all(sz <= max(k, 2 * k - 1)), info = paste(n, k))
    expect_identical(sort(unique(g)), seq_len(max(g)))
  }
  # well-separated clusters of k points are found exactly
  z <- do.call(rbind, lapply(1:6, function(i) cbind(stats::rnorm(3, i * 100, 0.1), stats::rnorm(3, 0, 0.1))))
  g <- mdav_kernel(z, rep(1L, nrow(z)), 3)$group
  expect_identical(as.vector(table(paste(g, rep(1:6, each = 3)))), rep(3L, 6))
  # the release: every record its group's means, the other columns unchanged, k within strata
  x <- titanic_tuned(); tu <- x$t; d <- x$d
  if (identical(tu$chosen$method, "mdav")) {
    rel <- as.data.frame(tu$release)
    key <- do.call(paste, c(d[st_t], rel[v_t]))
    expect_gte(min(table(key)), 10L)
    # the group means with the keyed noise (noise = TRUE, the default): no group's is exact
    expect_true(release_info(tu$release)$settings$noise)
    expect_true(all(abs(tapply(d$Fare, key, mean) - tapply(rel$Fare, key, mean)) > 1e-9))
  }
})
test_that("limits hold on random data, verified by the battery; same inputs, same release", {
  for (seed in 1:4) {
    set.seed(seed)
    n <- c(120, 300, 500, 250)[seed]
    d <- data.frame(a = stats::rlnorm(n), b = round(stats::rnorm(n, 50, 10)),
                    g = sample(c("u", "v", "w")[seq_len(1 + seed %% 3)], n, TRUE))
    if (seed == 3) d$a <- round(d$a, 1) # many ties
    lim <- list(worst = c(0.1, 0.15, 0.2, 0.1)[seed], top_m = c(0.3, 0.4, 0.5, 0.35)[seed])
    m <- c(2, 2, 3, 1)[seed]
    tu <- tune_release(d, intruder = intruder(), vars = c("a", "b"), strata = "g", worst = lim$worst, top_m = lim$top_m, m = m,
                       seed = seed)
    if (is.null(tu$release)) {
      expect_match(tu$stop, "none met every limit|every one failed the verification")
      next
    }
    w <- battery_worst(risk_battery(d, tu$release, intruder = intruder(c("a", "b"), "g"), m = m, seed = seed))
    expect_lte(w[["worst"]], lim$worst)
    expect_lte(w[["top_m"]], lim$top_m)
    # the least loss among the candidates that passed both
    ok <- tu$tried[tu$tried$verified %in% TRUE, ]
    expect_identical(nrow(ok), 1L)
    expect_equal(tu$chosen$loss, max(utility_delta(d, tu$release, vars = c("a", "b"))$delta))
    again <- tune_release(d, intruder = intruder(), vars = c("a", "b"), strata = "g", worst = lim$worst, top_m = lim$top_m, m = m,
                          seed = seed)
    expect_identical(again$release, tu$release)
    expect_identical(again$tried$loss, tu$tried$loss)
  }
})

test_that("bad or impossible limits are refused, naming the limit", {
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  for (bad in list(0, 1.5, -0.1, NA, "0.1", c(0.1, 0.2))) {
    expect_error(tune_release(d, intruder = intruder(), vars = v, strata = st, linkage = bad),
                 "the limit `linkage` must be a single share in \\(0, 1\\]", class = "detanon_error_argument")
    expect_error(tune_release(d, intruder = intruder(), vars = v, strata = st, top_m = bad), "the limit `top_m`")
  }
  expect_error(tune_release(d, intruder = intruder(), vars = v, strata = st, risk2 = -1), "the limit `risk2` must be a single share in \\[0, 1\\]")
  expect_error(tune_release(d, intruder = intruder(), vars = v, strata = st, k = 40),
               "the limit `k_strata` = 40 cannot be met: .* the smallest has 32 records")
  small <- data.frame(a = stats::rnorm(20), b = stats::rnorm(20), g = rep(c("x", "y"), c(17, 3)))
  expect_error(tune_release(small, intruder = intruder(), vars = c("a", "b"), strata = "g", m = 3, top_m = 0.1),
               "the limit `top_m` = 0.1 cannot be met with `m` = 3")
  expect_error(tune_release(d, intruder = intruder(), vars = v, strata = st, objective = "model"), "needs a model `formula`")
  expect_error(tune_release(d, intruder = intruder(), vars = v, strata = st, top_m_stratum = 0), "the limit `top_m_stratum` must be")
  small3 <- data.frame(a = stats::rnorm(40), b = stats::rnorm(40), g = rep(c("x", "y"), c(37, 3)))
  expect_error(tune_release(small3, intruder = intruder(), vars = c("a", "b"), strata = "g", m = 3, top_m = 0.5, top_m_stratum = 0.9),
               "the limit `top_m_stratum` = 0.9 cannot be met with `m` = 3: .*the smallest stratum has 3 records")
  expect_error(tune_release(d, intruder = intruder(), vars = v, strata = st, methods = "swap"), "`methods` must be some of")
  expect_error(tune_release(d, intruder = intruder(), vars = v, strata = st, methods = character()), "`methods` must be some of")
  # nothing is changed by a refused call
  d0 <- d
  try(tune_release(d, intruder = intruder(), vars = v, strata = st, top_m = 2), silent = TRUE)
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
  lim <- list(worst = 0.1, top_m = 0.3, linkage = 0.5, risk1 = 0.5, risk2 = 0.5)
  att <- c("linkage_released", "linkage_original", "assignment")
  ev <- detanon:::tune_evaluator(df, v, st, p, 3L, "delta", NULL, gaussian(), 1L, att, intruder(v, st), NULL,
                                 1L, lim)
  rels <- list(anonymise(d, vars = v, strata = st, k = 3, check_identifiers = FALSE),
               anonymise(d, vars = v, strata = st, k = 7, format = "none", check_identifiers = FALSE),
               anonymise_adaptive(d, vars = v, strata = st, k = 2, m = 3, rate = 0.3, w1 = 0.01,
                                  check_identifiers = FALSE))
  rels[[4]] <- stir(rels[[1]], vars = v, strata = st, seed = 2)
  g <- interaction(d[st], drop = TRUE)
  for (rel in rels) {
    e <- ev(rel)
    l1 <- risk_linkage(d, rel, vars = v, strata = st)
    l3 <- risk_linkage(d, rel, vars = v, strata = st, m = 3)
    r <- risk_rmd(d, rel, vars = v, deterministic = TRUE)
    b <- risk_battery(d, rel, intruder = intruder(v, st), attacks = att, control = FALSE, seed = 1)
    tab <- as.data.frame(b)
    expect_identical(e$worst, max(tab$rate))
    expect_identical(e$worst_attack, tab$name[which.max(tab$rate)])
    expect_identical(e$top_m, max(tab$rate_m, na.rm = TRUE))
    expect_identical(e$linkage, l1$rate)
    expect_identical(e$top_m_released, l3$rate_m)
    expect_identical(e$linkage_stratum, max(l1$by_stratum$rate))
    expect_identical(e$top_m_stratum, max(l3$by_stratum$rate_m))
    expect_identical(e$reid, l1$reid)
    expect_identical(e$risk1, r$risk1)
    expect_identical(e$risk2, r$risk2)
    # the per-stratum counts add up to the rates
    for (a in att) {
      expect_equal(sum(e$counts[, paste0("rate:", a)]) / nrow(d), b$attacks[[a]]$rate)
      expect_equal(unname(e$count_limits[paste0("rate:", a)]), 0.1 * nrow(d))
    }
    expect_equal(e$counts[, "risk1"], as.vector(table(factor(g[r$rows_risk1], levels = levels(g)))) + 0)
    expect_identical(e$loss, max(utility_delta(d, rel, vars = v)$delta))
  }
})

test_that("the search's linkage released -> original, read from its own ranks, is the battery's: ties, m = 1, published keys (issue 39)", {
  set.seed(39)
  n <- 20000
  # 18,000 tied originals: "at most as near" beyond the 2^14 where link_ranks() stops counting
  d <- data.frame(g = rep(c("a", "b"), c(19000, 1000)), h = sample(c("u", "v"), n, TRUE),
                  x = c(rep(0, 18000), round(stats::rnorm(2000), 1)), y = c(rep(0, 18000), stats::rexp(2000)))
  rels <- list(tied = transform(d, x = ifelse(seq_len(n) %% 7 == 0, x + 0.5, x)),
               moved = transform(d, x = x + stats::rnorm(n, 0, 0.3), y = y * 1.1))
  df <- as.data.frame(d)
  # (risk1 is not compared here: the covariance of a few hundred records will do)
  x <- as.matrix(d[c("x", "y")])
  rmd <- suppressWarnings(detanon:::rmd_core(x, TRUE, rows = detanon:::rmd_sample_rows(x, 500)))
  for (who in c("narrow", "published")) for (m in c(1L, 3L)) {
    it <- if (who == "narrow") intruder(c("x", "y"), "g") else intruder_published(c("x", "y"), "g")
    st <- if (who == "narrow") "g" else c("g", "h")
    p <- detanon:::adaptive_setup(df, c("x", "y"), st, rmd = FALSE, nthreads = 1L)
    p$rmd <- rmd
    ev <- detanon:::tune_evaluator(df, c("x", "y"), st, p, m, "delta", NULL, gaussian(), 1L,
                                   c("linkage_released", "linkage_original"), it, NULL, 1L,
                                   list(worst = 0.1, top_m = 0.3, linkage = 1, risk1 = 1, risk2 = 1))
    for (nm in names(rels)) {
      e <- ev(rels[[nm]])
      b <- risk_battery(d, rels[[nm]], intruder = it, attacks = c("linkage_released", "linkage_original"), m = m,
                        control = FALSE, seed = 1L)
      info <- paste(who, m, nm)
      expect_identical(unname(e$rates), unname(vapply(b$attacks, `[[`, 0, "rate")), info = info)
      expect_identical(unname(e$rates_m), unname(vapply(b$attacks, `[[`, 0, "rate_m")), info = info)
      expect_identical(e$counts[, "rate:linkage_released"],
                       as.vector(rowsum(b$attacks$linkage_released$success, p$id, reorder = TRUE)[, 1]), info = info)
    }
  }
})

test_that("small or odd data: a release or a classed error, never a raw one", {
  for (n in c(8, 15)) for (s in 1:5) {
    set.seed(s)
    d <- data.frame(a = stats::rnorm(n), b = stats::rnorm(n), g = rep("x", n))
    tu <- tune_release(d, intruder = intruder(), vars = c("a", "b"), strata = "g", risk1 = 0.5)
    expect_s3_class(tu, "detanon_tuned")
    if (!is.null(tu$release)) {
      w <- battery_worst(risk_battery(d, tu$release, intruder = intruder(c("a", "b"), "g"), seed = 1))
      expect_lte(w[["worst"]], 0.1)
    } else {
      expect_match(tu$stop, "none met every limit|every one failed the verification")
    }
    # a candidate whose risk1 cannot be measured counts as missing its limit
    na <- is.na(tu$tried$risk1)
    expect_true(all(!tu$tried$meets[na]))
  }
  # 3 records, 2 variables: too few for risk1 and risk2
  set.seed(1)
  d <- data.frame(a = stats::rnorm(15), b = stats::rnorm(15))
  expect_error(tune_release(d[1:3, ], intruder = intruder(), vars = c("a", "b"), strata = character()),
               class = "detanon_error_data")
})

test_that("methods = \"stir\" alone stirs the fixed-k candidates", {
  d <- titanic_paper()[-1]
  tu <- tune_release(d, intruder = intruder(), vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), methods = "stir",
                     worst = 0.5, top_m = 0.9, attacks = "linkage_released")
  expect_setequal(unique(tu$tried$method), c("anonymise", "stir"))
  expect_true(any(grepl("candidate 1 (anonymise)", tu$tried$settings, fixed = TRUE)))
})

test_that("k is the smallest centroid size of every candidate; k_strata the smallest stratum", {
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  tu <- tune_release(d, intruder = intruder(), vars = v, strata = st, k = 4, methods = c("anonymise", "adaptive", "mdav"),
                     worst = 0.3, top_m = 0.6)
  t <- tu$tried
  expect_identical(t$settings[t$method == "anonymise"], paste0("k = ", c(4, 5, 10, 20)))
  expect_true(all(grepl("^k from 4|^k = 4\\.\\.", t$settings[t$method == "adaptive"])))
  expect_identical(t$settings[t$method == "mdav"][1], "MDAV groups of k = 4 within strata")
  expect_identical(tu$limits$k_strata, 4L)
  info <- release_info(tu$release)
  expect_gte(min(if (is.data.frame(info$settings$k)) info$settings$k$k else info$settings$k), 4)
  if (identical(info$verb, "anonymise_mdav")) expect_gte(min(info$counts$min_group), 4)
  expect_error(tune_release(d, intruder = intruder(), vars = v, strata = st, k = 4, k_strata = 3), "`k_strata` \\(3\\) must be at least `k` \\(4\\)")
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

test_that("a k-per-stratum candidate is the release of anonymise_adaptive() with its table of k", {
  d <- titanic_paper()[-1]
  st <- tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, methods = "stratum", worst = 0.2, top_m = 0.5,
                     verify = c("linkage_released", "linkage_original"))
  expect_identical(st$chosen$method, "stratum")
  info <- release_info(st$release)
  expect_gt(length(unique(info$settings$k$k)), 1L)
  again <- anonymise_adaptive(d, vars = v_t, strata = st_t, k = info$settings$k, k_max = info$settings$k_max,
                              m = 0, check_identifiers = FALSE)
  expect_identical(as.data.frame(again)[v_t], as.data.frame(st$release)[v_t])
  # the per-stratum counts predicted the limits: the candidate meets them
  expect_lte(st$chosen$worst, 0.2)
})

test_that("a k-per-stratum candidate at one rung above the fixed k everywhere: the rung's release and its measures", {
  set.seed(3)
  n <- 8000
  d <- data.frame(g = rep(c("a", "b", "c", "d"), each = n / 4), x1 = round(stats::rnorm(n, 50, 10), 1),
                  x2 = round(stats::rexp(n, 0.1), 1), x3 = round(stats::runif(n, 20, 80)))
  v <- c("x1", "x2", "x3")
  tu <- tune_release(d, vars = v, strata = "g", methods = "stratum", verify = "linkage_released", nthreads = 1L)
  expect_identical(tu$tried$settings, "k = 160 in every stratum")
  rel <- anonymise_adaptive(d, vars = v, strata = "g", k = data.frame(g = c("a", "b", "c", "d"), k = 160L),
                            k_max = 160, m = 0, check_identifiers = FALSE)
  b <- risk_battery(d, rel, intruder = intruder_published(v, "g"), attacks = c("linkage_released", "linkage_original"),
                    control = FALSE, seed = 1L)
  expect_identical(tu$tried$worst, max(vapply(b$attacks, `[[`, 0, "rate")))
  expect_identical(tu$tried$top_m, max(vapply(b$attacks, `[[`, 0, "rate_m")))
  expect_identical(tu$tried$loss, max(utility_delta(d, rel, vars = v)$delta))
})

test_that("a search that cannot meet its limits says how close it got and why it stopped", {
  set.seed(3)
  n <- 3000
  d <- data.frame(a = round(stats::rnorm(n, 40, 10)), b = round(stats::rlnorm(n, 3, 0.5), 1),
                  g = sample(c("u", "v"), n, TRUE))
  tu <- tune_release(d, intruder = intruder(), vars = c("a", "b"), strata = "g", worst = 0.01, top_m = 0.05, m = 3,
                     methods = c("anonymise", "adaptive"))
  expect_null(tu$release)
  expect_null(tu$battery)
  expect_match(tu$stop, "none met every limit of the search. Closest \\(least excess over the limits\\)")
  expect_match(tu$stop, "adaptive k: worst, top_m (still missed after 4 tries|missed, and the last stage took off)")
  all_ex <- vapply(seq_len(nrow(tu$tried)), function(i) detanon:::tune_excess(tu$tried[i, ], tu$limits), 0)
  expect_match(tu$stop, tu$tried$settings[which.min(all_ex)], fixed = TRUE)
  expect_output(print(tu), "nothing is returned as a release")
  pdf(NULL); on.exit(grDevices::dev.off())
  expect_invisible(plot(tu))
})

test_that("keyed candidates with the custodian's key: chosen when least loss, the key never shown or stored", {
  d <- titanic_paper()[-1]
  key <- "tune-test-secret-7f3a9c"
  # exact group means (noise = FALSE): the keyed groups, which adapt to the density, have
  # the least loss; with the noise (below), the chosen release is the verified one of least loss
  tu <- tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, key = key, methods = c("mdav", "keyed"),
                     noise = FALSE)
  t <- tu$tried
  expect_true(any(t$method == "keyed"))
  expect_identical(tu$chosen$method, "keyed")
  size <- as.integer(sub("keyed groups of mean size ([0-9]+),.*", "\\1", tu$chosen$settings))
  kk <- as.integer(sub(".*k = ([0-9]+)$", "\\1", tu$chosen$settings))
  # groups of at least 1 / tail = 5 records
  expect_identical(kk, 5L)
  again <- anonymise_keyed(d, vars = v_t, strata = st_t, k = kk, key = key, size = size, noise = FALSE,
                           check_identifiers = FALSE)
  expect_identical(as.data.frame(again), as.data.frame(tu$release))
  w <- battery_worst(risk_battery(d, tu$release, intruder = intruder(v_t, st_t), seed = 1))
  expect_lte(w[["worst"]], 0.1)
  expect_lte(w[["top_m"]], 0.3)
  # a lower loss than every MDAV candidate that passes
  expect_lt(tu$chosen$loss, min(t$loss[t$method == "mdav" & t$meets]))
  # the key appears nowhere: printed report, structure, release metadata
  shown <- c(utils::capture.output(print(tu)), utils::capture.output(utils::str(unclass(tu))),
             utils::capture.output(print(release_info(tu$release))), deparse(tu))
  expect_false(any(grepl(key, shown, fixed = TRUE)))
  expect_false(any(grepl(paste(as.character(charToRaw(key)), collapse = " "), shown, fixed = TRUE)))
  # with the noise (the default), drawn from the key for both families: the least loss verified
  tn <- tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, key = key, methods = c("mdav", "keyed"))
  tt <- tn$tried
  expect_identical(tn$chosen$loss, min(tt$loss[tt$meets & !(tt$verified %in% FALSE)]))
  expect_true(release_info(tn$release)$settings$noise)
  shown <- c(utils::capture.output(print(tn)), utils::capture.output(utils::str(unclass(tn))), deparse(tn))
  expect_false(any(grepl(key, shown, fixed = TRUE)))
  # without a key the family is left out, and says so
  no <- tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, methods = c("mdav", "keyed"))
  expect_false(any(no$tried$method == "keyed"))
  expect_match(no$stop, "keyed: left out (no `key`)", fixed = TRUE)
  expect_error(tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, key = "short"), "`key` must be the custodian's secret",
               class = "detanon_error_argument")
})

test_that("keyed candidates without a key, and nothing else to search, are refused (issue 34, item 9)", {
  d <- titanic_paper()[-1][1:200, ]
  expect_snapshot(error = TRUE, {
    tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), methods = "keyed")
    tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), methods = c("keyed", "stir"))
  })
})

# ---- issue 36: the default intruder holds every published column ------------------------

test_that("issue 36, Titanic: the narrower intruder's release re-identifies more with Survived; the default names it or suppresses", {
  d <- titanic_paper()[-1]
  # the old default (the narrower intruder, exact group means, no tail limit): MDAV groups of
  # 10, worst 0.094 on its own terms
  old <- tune_release(d, vars = v_t, strata = st_t, methods = "mdav", intruder = intruder(), noise = FALSE,
                      tail = 1, seed = 1)
  expect_match(old$chosen$settings, "k = 10")
  # (the algorithm-aware intruder recomputes the MDAV groups of anonymise_mdav(): one record
  # per group, 81 of 891; 0.0945, nearest linkage, before it could)
  expect_equal(old$chosen$verify_worst, 81 / 891, tolerance = 1e-6)
  expect_identical(old$chosen$verify_worst_attack, "recipe")
  # with Survived (released unchanged) held, the same release fails both limits
  tab <- as.data.frame(risk_battery(d, old$release, seed = 1))
  expect_gt(max(tab$rate), 0.15)
  expect_gt(max(tab$rate_m, na.rm = TRUE), 0.3)
  # the default: Survived splits three records into cells of fewer than 3: no release, named
  new <- tune_release(d, vars = v_t, strata = st_t, methods = "mdav", categorical = "none", seed = 1)
  expect_null(new$release)
  expect_identical(new$keys, "Survived")
  expect_identical(new$unique_on$column, "Survived")
  expect_equal(new$unique_on$unique, 1 / nrow(d))
  expect_match(new$stop, "3 records \\(0.3%\\) are in cells of fewer than 3 records", fixed = FALSE)
  expect_output(print(new), "no candidate tried")
  # or the records of the small cells left out, and the groups formed within Survived
  expect_message(sup <- tune_release(d, vars = v_t, strata = st_t, methods = "mdav", seed = 1,
                                     small_strata = "suppress", categorical = "none"),
                 class = "detanon_message_suppress")
  rel <- sup$release
  expect_equal(nrow(rel), nrow(d) - 3L)
  expect_identical(sup$n_suppressed, 3L)
  expect_identical(release_info(rel)$settings$strata, c(st_t, "Survived"))
  # every MDAV group shares Survived, and the release passes with Survived held
  cells <- paste(d$Pclass, d$Sex, d$Family, d$Survived)
  kept <- d[table(cells)[cells] >= 3, ]
  expect_identical(sup$kept, unname(as.vector(table(cells)[cells] >= 3)))
  expect_identical(d[sup$kept, ], kept)
  grp <- paste(rel$Age, rel$Fare, rel$Pclass, rel$Sex, rel$Family)
  expect_true(all(tapply(rel$Survived, grp, function(v) length(unique(v))) == 1))
  b <- as.data.frame(risk_battery(kept, rel, intruder = intruder_published(vars = v_t, strata = st_t), seed = 1))
  expect_lte(max(b$rate), 0.1)
  expect_lte(max(b$rate_m, na.rm = TRUE), 0.3)
  expect_output(print(sup), "every published column\\s+not masked or\\s+sensitive,\\s+exactly:\\s+Survived")
  # declared sensitive, Survived is no key: the search is the narrower one's, and `kept`
  # (nothing left out) selects every row
  sens <- tune_release(d, vars = v_t, strata = st_t, methods = "mdav", sensitive = "Survived",
                       verify = c("linkage_released", "linkage_original"), noise = FALSE, tail = 1, seed = 1)
  expect_identical(sens$keys, character())
  expect_identical(sens$kept, rep(TRUE, nrow(d)))
  expect_identical(sens$chosen$settings, old$chosen$settings)
  expect_identical(sens$release[v_t], old$release[v_t])
  expect_error(tune_release(d, vars = v_t, strata = st_t, small_strata = "merge"), class = "detanon_error_argument")
})

test_that("issue 36, sdcMicro's testdata as a custodian publishes it: 0.100 reported, 0.99 with the published columns", {
  skip_if_not_installed("sdcMicro")
  data("testdata", package = "sdcMicro", envir = environment())
  cols <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age", "hhcivil",
            "expend", "income", "savings")
  td <- testdata[cols]
  v <- c("expend", "income", "savings")
  # (the old default: the narrower intruder, exact group means, no tail limit)
  old <- tune_release(td, vars = v, methods = "mdav", intruder = intruder(), noise = FALSE, tail = 1,
                      seed = 1)
  # (the algorithm-aware intruder recomputes the MDAV groups: one record per group of 10,
  # 458 of 4,580; 0.0963 before it could)
  expect_equal(old$chosen$verify_worst, 0.1, tolerance = 1e-9)
  tab <- as.data.frame(risk_battery(td, old$release, attacks = c("linkage_released", "linkage_original"), seed = 1))
  expect_gt(max(tab$rate), 0.99)
  new <- tune_release(td, vars = v, methods = "mdav", categorical = "none", seed = 1)
  expect_null(new$release)
  expect_setequal(new$keys, setdiff(cols, v))
  # the share unique on every published column, by hand
  key <- do.call(paste, td[setdiff(cols, v)])
  expect_equal(max(new$unique_on$unique), mean(table(key)[key] == 1))
  expect_true("age" %in% new$unique_on$column)
  expect_match(new$stop, "age")
})

test_that("battery_straddles() names the attacks whose interval holds a limit the verdict could go either way on", {
  # (a table as as.data.frame() of a battery gives it)
  fake <- function(rate, lower, upper, rate_m = NA, lower_m = NA, upper_m = NA) {
    data.frame(name = paste0("a", seq_along(rate)), rate = rate, lower = lower, upper = upper,
               rate_m = rate_m, lower_m = lower_m, upper_m = upper_m)
  }
  st <- detanon:::battery_straddles
  # 0.09 [0.07, 0.11] straddles 0.1; 0.05 [0.03, 0.07] does not
  expect_match(st(fake(c(0.09, 0.05), c(0.07, 0.03), c(0.11, 0.07)), 0.1, 0.3), "^a1 0.0900 \\[0.0700, 0.1100\\]")
  expect_false(grepl("a2", st(fake(c(0.09, 0.05), c(0.07, 0.03), c(0.11, 0.07)), 0.1, 0.3)))
  # another attack wholly above the limit: the verdict is certain
  expect_identical(st(fake(c(0.09, 0.3), c(0.07, 0.25), c(0.11, 0.35)), 0.1, 0.3), "")
  # a top-m interval holding its limit
  expect_match(st(fake(0.05, 0.03, 0.07, 0.29, 0.25, 0.33), 0.1, 0.3), "a1 top-m 0.2900")
  expect_identical(st(NULL, 0.1, 0.3), "")
})

test_that("keyed candidates within cells of the published columns: groups of 1 / tail records, capped by the smallest cell", {
  # (Survived, published, makes cells of 3 and 4 records: groups of 5 cannot be formed there)
  d <- titanic_paper()[-1]
  tu <- suppressMessages(tune_release(d, vars = v_t, strata = st_t, key = "tune-test-secret-7f3a9c",
                                      methods = "keyed", small_strata = "suppress", categorical = "none",
                                      seed = 1))
  expect_true(all(grepl("k = 3$", tu$tried$settings)))
  expect_false(is.null(tu$release))
  expect_lte(tu$chosen$verify_tail, 0.2)
  # with larger cells, groups of at least 1 / tail = 5
  tn <- tune_release(d, vars = v_t, strata = st_t, key = "tune-test-secret-7f3a9c", methods = "keyed",
                     intruder = intruder(), seed = 1)
  expect_true(all(grepl("k = 5$", tn$tried$settings)))
})

test_that("above tune_rmd_sample() records and without a risk1/risk2 limit, risk1 and risk2 use the covariance of a sample (issue 39)", {
  local_detanon_binding("tune_rmd_sample", function() 300L)
  d <- titanic_paper()[-1]
  run <- function(dd, ...) {
    suppressMessages(tune_release(dd, vars = v_t, strata = st_t, intruder = intruder(), methods = "anonymise",
                                  verify = "linkage_released", ...))
  }
  got <- run(d)
  expect_identical(got$rmd_records, 300L)
  printed <- function(x) gsub("\\s+", " ", paste(capture.output(print(x)), collapse = " "))
  expect_match(printed(got), "sample of 300 records", fixed = TRUE)
  # by hand: covMcd(deterministic) of the scaled originals at 300 evenly spaced rows of their value order
  x <- scale(as.matrix(d[v_t]))
  o <- order(d$Age, d$Fare)
  cov_s <- robustbase::covMcd(x[o[floor((0:299) * nrow(d) / 300) + 1], ], nsamp = "deterministic")$cov
  rmd <- 0.05 * sqrt(stats::mahalanobis(x, colMeans(x), cov_s))
  for (i in seq_len(nrow(got$tried))) {
    kk <- as.integer(sub("k = ", "", got$tried$settings[i]))
    rel <- anonymise(d, vars = v_t, strata = st_t, k = kk, check_identifiers = FALSE)
    xm <- scale(as.matrix(rel[v_t]))
    inside <- xm > x - 0.01 * rmd & xm < x + 0.01 * rmd
    expect_identical(got$tried$risk1[i], mean(rowSums(inside) > 0), info = kk)
  }
  # the same records for any row order: the same report
  perm <- sample(nrow(d))
  again <- run(d[perm, ])
  expect_identical(again$tried[c("risk1", "risk2", "worst", "loss")], got$tried[c("risk1", "risk2", "worst", "loss")])
  # with a limit, every record: risk_rmd() on the candidate
  lim <- run(d, risk1 = 0.99)
  expect_null(lim$rmd_records)
  rel <- anonymise(d, vars = v_t, strata = st_t, k = 3, check_identifiers = FALSE)
  expect_identical(lim$tried$risk1[1], risk_rmd(d, rel, vars = v_t, deterministic = TRUE)$risk1)
  expect_false(grepl("sample of", printed(lim)))
})

test_that("above `pilot` records the keyed family is piloted: one size on all records, the others reported with their cost (issue 39)", {
  set.seed(39)
  d <- titanic_paper()[-1]
  key <- "tune-test-secret-7f3a9c"
  tu <- tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, key = key, methods = "keyed", pilot = 300)
  expect_identical(sum(tu$tried$method == "keyed"), 1L)
  lo <- tu$left_out
  expect_identical(lo$method, rep("keyed", 4L))
  expect_true(all(is.finite(lo$seconds) & lo$seconds >= 0))
  sizes <- function(s) as.integer(sub("keyed groups of mean size ([0-9]+),.*", "\\1", s))
  size <- sizes(tu$tried$settings)
  expect_setequal(c(size, sizes(lo$settings)), c(5L, 10L, 14L, 20L, 30L))
  # the pilot by hand: the search without a pilot on the pilot's records, whose best size
  # (least loss meeting the search limits) is the one made on all records
  df <- as.data.frame(d)
  id <- detanon:::stratum_ids(df, st_t)
  rows <- detanon:::tune_pilot_rows(df, id, 300, 30L)
  pd <- df[rows, ]
  rownames(pd) <- NULL
  by_hand <- tune_release(pd, intruder = intruder(), vars = v_t, strata = st_t, key = key, methods = "keyed")$tried
  ok <- by_hand$meets
  expect_identical(size, sizes(by_hand$settings[ok][which.min(by_hand$loss[ok])]))
  other <- match(sizes(lo$settings), sizes(by_hand$settings))
  expect_identical(lo$pilot_loss, by_hand$loss[other])
  expect_identical(lo$pilot_worst, by_hand$worst[other])
  expect_identical(lo$pilot_meets, by_hand$meets[other])
  expect_match(tu$stop, "keyed: 891 records, above `pilot`; every size measured on a pilot sample of 419 records",
               fixed = TRUE)
  expect_output(print(tu), "Left out \\(piloted on 419 of the 891 records")
  # the same for any row order and thread count
  perm <- sample(nrow(d))
  tp <- tune_release(d[perm, ], intruder = intruder(), vars = v_t, strata = st_t, key = key, methods = "keyed",
                     pilot = 300, nthreads = 2)
  expect_identical(tp$tried$settings, tu$tried$settings)
  expect_identical(tp$left_out[names(lo) != "seconds"], lo[names(lo) != "seconds"])
  # at or below `pilot` records (the default: 100,000), every size on all records, as before
  full <- tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, key = key, methods = "keyed")
  expect_identical(nrow(full$tried), 5L)
  expect_null(full$left_out)
  expect_identical(tune_release(d, intruder = intruder(), vars = v_t, strata = st_t, key = key, methods = "keyed",
                                pilot = Inf)$tried[names(full$tried) != "seconds"],
                   full$tried[names(full$tried) != "seconds"])
  expect_snapshot(error = TRUE, tune_release(d, vars = v_t, strata = st_t, key = key, pilot = 10))
  expect_error(tune_release(d, vars = v_t, strata = st_t, pilot = NA), class = "detanon_error_argument")
  expect_error(tune_release(d, vars = v_t, strata = st_t, pilot = c(1000, 2000)), class = "detanon_error_argument")
})

test_that("tune_pilot_rows(): evenly spaced records of every stratum in the order of their values, for any row order", {
  set.seed(39)
  df <- data.frame(g = sample(c("a", "b", "c"), 1000, TRUE, prob = c(0.7, 0.29, 0.01)),
                   x = round(stats::rnorm(1000), 1), y = sample(1:5, 1000, TRUE))
  id <- detanon:::stratum_ids(df, "g")
  rows <- detanon:::tune_pilot_rows(df, id, 100, 5L)
  # by hand: per stratum, ceiling(share) records (at least 5, or all), at positions 1, 1 + step, ...
  want <- unlist(lapply(sort(unique(id)), function(s) {
    r <- which(id == s)
    r <- r[order(df$x[r], df$y[r])]
    take <- min(length(r), max(ceiling(length(r) * 100 / 1000), 5))
    r[floor((seq_len(take) - 1) * length(r) / take) + 1]
  }))
  expect_identical(df[rows, ], df[want, ])
  for (i in 1:3) {
    perm <- sample(1000)
    dp <- df[perm, ]
    got <- dp[detanon:::tune_pilot_rows(dp, detanon:::stratum_ids(dp, "g"), 100, 5L), ]
    rownames(got) <- NULL
    ref <- df[rows, ]
    rownames(ref) <- NULL
    expect_identical(got, ref)
  }
  # a stratum times the pilot's size past the integer range (250,000 x 100,000 at 1e6)
  big <- data.frame(x = 1:50000)
  expect_length(detanon:::tune_pilot_rows(big, rep(1L, 50000), 45000, 30L), 45000L)
})

# A report without its timings (the only part that depends on how the search ran).
untimed <- function(tu) {
  tu$seconds <- NULL
  tu$stop <- sub("about [0-9.e+]+ s in all", "", tu$stop) # (the cost of the sizes a pilot left out)
  for (f in c("tried", "chosen", "frontier", "left_out")) if (!is.null(tu[[f]])) tu[[f]]$seconds <- NULL
  tu
}

test_that("two threads measure candidates two at a time in forks: the same report and release, the stream restored (issue 39)", {
  set.seed(5)
  d <- data.frame(g = rep(c("a", "b"), 300), h = rep(c("u", "v", "v"), 200), x = round(stats::rnorm(600), 2),
                  y = round(stats::rexp(600), 1), z = stats::runif(600))
  args <- list(d, vars = c("x", "y", "z"), strata = "g", key = "a custodian key of 16+", pilot = 200)
  set.seed(11)
  before <- .Random.seed
  one <- do.call(tune_release, c(args, nthreads = 1L))
  expect_identical(.Random.seed, before)
  two <- do.call(tune_release, c(args, nthreads = 2L))
  expect_identical(.Random.seed, before)
  expect_identical(untimed(two), untimed(one))
  expect_true(all(c("anonymise", "mdav", "keyed", "stir") %in% one$tried$method))
  # without a seed the measurements may draw from the caller's stream: one after the other
  ctx <- list(nthreads = 2L, seed = NULL)
  expect_false(detanon:::tune_forks(ctx))
  expect_false(detanon:::tune_forks(list(nthreads = 1L, seed = 1L)))
  expect_identical(detanon:::tune_forks(list(nthreads = 2L, seed = 1L)), identical(Sys.info()[["sysname"]], "Linux"))
})

test_that("the pool: a child takes the next queued piece, this process runs queued pieces while it waits (issue 39)", {
  skip_on_os(c("windows", "mac", "solaris"))
  parent <- Sys.getpid()
  piece <- function(i, wait = 0) function(nthreads) {
    Sys.sleep(wait)
    list(i = i, pid = Sys.getpid(), nthreads = nthreads)
  }
  pool <- detanon:::tune_pool(2L)
  h <- list(detanon:::tune_submit(pool, piece(1, wait = 2), 2L), detanon:::tune_submit(pool, piece(2), 2L),
            detanon:::tune_submit(pool, piece(3), 2L))
  got <- lapply(h, function(x) detanon:::tune_value(pool, x))
  expect_identical(vapply(got, `[[`, 0, "i"), c(1, 2, 3))
  # the first in the child on one thread; the others here, on one thread while the child runs
  expect_false(got[[1]]$pid == parent)
  expect_identical(vapply(got[2:3], `[[`, 0, "pid"), rep(as.numeric(parent), 2))
  expect_identical(vapply(got, `[[`, 0L, "nthreads"), rep(1L, 3))
  expect_null(pool$job)
  expect_length(pool$queue, 0L)
  expect_length(pool$done, 0L)
  # with the child idle, a piece run here has the search's threads; without a pool, at once
  pool$queue$x <- list(id = "x", run = piece(4))
  expect_identical(detanon:::tune_threads(pool), 2L)
  expect_identical(detanon:::tune_submit(NULL, piece(5), 3L)$value[c("i", "nthreads")], list(i = 5, nthreads = 3L))
})

test_that("the pool: a child that returns nothing has its piece run here; an error is raised here; close() stops the child", {
  skip_on_os(c("windows", "mac", "solaris"))
  parent <- Sys.getpid()
  pool <- detanon:::tune_pool(2L)
  dies <- function(nthreads) {
    if (Sys.getpid() != parent) tools::pskill(Sys.getpid(), tools::SIGKILL)
    list(pid = Sys.getpid(), nthreads = nthreads)
  }
  h <- detanon:::tune_submit(pool, dies, 2L)
  expect_identical(suppressWarnings(detanon:::tune_value(pool, h)), list(pid = parent, nthreads = 2L))
  fails <- function(nthreads) stop_arg("bad candidate.")
  h <- detanon:::tune_submit(pool, fails, 2L)
  expect_false(is.null(pool$job))
  expect_error(suppressWarnings(detanon:::tune_value(pool, h)), class = "detanon_error")
  # a family as a piece: its measurements on the piece's threads
  ev <- function(release, origin_row = NULL, nthreads = 2L) nthreads
  entry <- list(tune = function(ctx, entry, runs, key) {
    list(cands = list(list(pid = Sys.getpid(), threads = ctx$nthreads, ev = ctx$ev(NULL), runs = names(runs),
                           pool = is.null(ctx$pool))))
  })
  run <- detanon:::tune_family_piece(list(nthreads = 2L, ev = ev, pool = pool), entry, list(anonymise = list()), NULL)
  got <- detanon:::tune_value(pool, detanon:::tune_submit(pool, run, 2L))$cands[[1]]
  expect_false(got$pid == parent)
  expect_identical(got[c("threads", "ev", "runs", "pool")], list(threads = 1L, ev = 1L, runs = "anonymise", pool = TRUE))
  # the child of a search ended by an error or an interrupt is stopped
  detanon:::tune_submit(pool, function(nthreads) { Sys.sleep(60); list() }, 2L)
  expect_false(is.null(pool$job))
  t0 <- proc.time()[[3L]]
  detanon:::tune_pool_close(pool)
  expect_lt(proc.time()[[3L]] - t0, 5)
  expect_null(pool$job)
  # a child's copy of the pool is never polled: its pieces run on one thread
  pool$pid <- -1
  expect_identical(detanon:::tune_threads(pool), 1L)
  expect_invisible(detanon:::tune_poll(pool))
})

test_that("the verification on the search's view, its attacks pieces of the pool, is risk_battery()'s (issue 39)", {
  skip_on_os(c("windows", "mac", "solaris"))
  set.seed(9)
  d <- data.frame(g = rep(c("a", "b"), 200), s = rep(c("p", "q", "q", "r"), 100), x = round(stats::rnorm(400), 1),
                  y = round(stats::rexp(400), 1))
  d$x[1:30] <- d$x[31:60]
  vars <- c("x", "y")
  rels <- list(anonymise(d, vars = vars, strata = "g", k = 3, check_identifiers = FALSE),
               suppressMessages(anonymise_mdav(d, vars = vars, strata = "g", k = 5, check_identifiers = FALSE)))
  for (sensitive in list(NULL, "s")) {
    ctx <- detanon:::tune_setup(d, vars, "g", 2, NULL, 3, "delta", NULL, stats::gaussian(), NULL, "natural", NULL, 4, 2L,
                                limits = list(worst = 0.1, top_m = 0.3, linkage = 1, linkage_stratum = 1,
                                              top_m_stratum = 1, risk1 = 1, risk2 = 1, tail = 0.2),
                                attacks = "linkage_released", verify = NULL, intruder = NULL, sensitive = sensitive,
                                seed = 4L, secret = NULL)
    for (rel in rels) {
      want <- suppressMessages(risk_battery(ctx$df, rel, intruder = ctx$intruder, attacks = ctx$verify, m = 3,
                                            sensitive = sensitive, seed = 4L, nthreads = 1L))
      pool <- detanon:::tune_pool(2L)
      expect_identical(detanon:::tune_verify(ctx, rel, 4L, pool), want)
      expect_identical(pool$n, length(detanon:::tune_verify_pieces(names(want$attacks))))
      expect_length(pool$done, 0L)
      expect_identical(detanon:::tune_verify(ctx, rel, 4L), want)
    }
    if (is.null(sensitive)) {
      # a release that changed a published key: not the search's view, risk_battery() itself
      changed <- rels[[2]]
      changed$s[1:3] <- "r"
      pool <- detanon:::tune_pool(2L)
      expect_identical(detanon:::tune_verify(ctx, changed, 4L, pool),
                       suppressMessages(risk_battery(ctx$df, changed, intruder = ctx$intruder, attacks = ctx$verify,
                                                     m = 3, seed = 4L, nthreads = 1L)))
      expect_identical(pool$n, 0L)
    }
  }
})

test_that("the pool gives the serial search's report and release for several method sets, the stream restored (issue 39)", {
  set.seed(8)
  d <- data.frame(g = rep(c("a", "b", "c"), 200), x = round(stats::rnorm(600), 1), y = round(stats::rexp(600), 1),
                  z = round(stats::runif(600), 2))
  d[1:60, c("x", "y", "z")] <- d[61:120, c("x", "y", "z")] # (tied records)
  sets <- list(c("anonymise", "stratum"), c("adaptive", "mdav"), c("stratum", "adaptive", "stir"),
               c("mdav", "stir", "adaptive"))
  set.seed(3)
  before <- .Random.seed
  for (methods in sets) {
    one <- tune_release(d, vars = c("x", "y", "z"), strata = "g", methods = methods, nthreads = 1L)
    two <- tune_release(d, vars = c("x", "y", "z"), strata = "g", methods = methods, nthreads = 2L)
    expect_identical(.Random.seed, before)
    expect_identical(untimed(two), untimed(one))
  }
  # stirring draws from the search's stream: its candidates depend on the seed
  three <- tune_release(d, vars = c("x", "y", "z"), strata = "g", methods = sets[[4]], nthreads = 2L, seed = 2)
  expect_identical(.Random.seed, before)
  expect_false(identical(untimed(three)$tried, untimed(one)$tried))
})

test_that("the search's battery on the originals' view made once is risk_battery()'s (issue 39)", {
  set.seed(7)
  d <- data.frame(g = rep(c("a", "b"), 200), s = rep(c("p", "q", "q", "r"), 100), w = round(stats::runif(400, 1, 3)),
                  x = round(stats::rnorm(400), 1), y = round(stats::rexp(400), 1))
  d$x[1:30] <- d$x[31:60]
  d$y[1:30] <- d$y[31:60]
  vars <- c("x", "y")
  rels <- list(anonymise(d, vars = vars, strata = "g", k = 3, check_identifiers = FALSE),
               suppressMessages(anonymise_mdav(d, vars = vars, strata = "g", k = 5, check_identifiers = FALSE)),
               anonymise_adaptive(d, vars = vars, strata = "g", k = 2, m = 3, rate = 0.2, check_identifiers = FALSE))
  attacks <- c("linkage_released", "linkage_original", "singling_out", "fellegi_sunter")
  intruders <- list(intruder_published(vars = vars, strata = "g"),
                    intruder(vars = vars, strata = "g", held = c("s", "w")),
                    intruder(vars = vars, strata = "g", p = 0.5))
  for (it in intruders) {
    view <- detanon:::tune_view(d, it, 3L, NULL, NULL)
    for (rel in rels) {
      expect_true(detanon:::tune_view_fits(view, rel))
      for (m in c(1L, 3L)) {
        want <- suppressMessages(risk_battery(d, rel, intruder = it, attacks = attacks, m = m, control = FALSE,
                                              seed = 3L, nthreads = 1L))$attacks
        got <- suppressMessages(detanon:::tune_view_attacks(view, rel, attacks, m, NULL, 2L, 3L))
        expect_identical(got, want)
      }
    }
  }
  # a release that changed a key or the strata, or lacks a column, has a view of its own
  view <- detanon:::tune_view(d, intruders[[2]], 3L, NULL, NULL)
  changed <- rels[[1]]
  changed$s[1] <- "r"
  expect_false(detanon:::tune_view_fits(view, changed))
  expect_false(detanon:::tune_view_fits(view, rels[[1]][-3]))
  expect_true(detanon:::tune_view_fits(detanon:::tune_view(d, intruders[[1]], 3L, NULL, NULL), rels[[1]]))
  expect_false(detanon:::tune_view_fits(detanon:::tune_view(d, intruders[[1]], 3L, NULL, NULL), changed))
})

test_that("the search holds the originals' z-scores and trees once, and lets go of releases it will not read (issue 39)", {
  skip_if_not_installed("data.table")
  set.seed(5)
  d <- data.frame(g = rep(c("a", "b"), 150), x = round(stats::rnorm(300), 1), y = round(stats::rexp(300), 1))
  ctx <- detanon:::tune_setup(d, c("x", "y"), "g", 2, NULL, 3, "delta", NULL, stats::gaussian(), NULL, "natural", NULL,
                              4, 1L, limits = list(worst = 0.1, top_m = 0.3, linkage = 1, linkage_stratum = 1,
                                                   top_m_stratum = 1, risk1 = 1, risk2 = 1, tail = 0.2),
                              attacks = c("linkage_released", "linkage_original"), verify = NULL, intruder = NULL,
                              sensitive = NULL, seed = 1, secret = NULL)
  e <- environment(ctx$ev)
  addr <- data.table::address
  expect_identical(addr(e$index$pts), addr(ctx$p$index$pts)) # (the trees of adaptive_setup())
  view <- attr(ctx$ev, "view")
  expect_identical(unique(c(addr(e$s$zm), addr(view$zo), addr(view$zm))), addr(e$s$zo))
  # releases kept: those of the candidates that meet the search limits, and the `keep` others
  # of least loss that stirring may read (never the nearest-only masking)
  cand <- function(meets, loss, settings = "k = 3") {
    list(row = data.frame(settings = settings, loss = loss, meets = meets), release = data.frame(x = loss))
  }
  run <- list(cands = list(cand(FALSE, 5), cand(TRUE, 9), cand(FALSE, 1, "k = 3..33, m = 1 (nearest only)"),
                           cand(FALSE, 3), cand(FALSE, 4), cand(FALSE, 2)), evals = "kept")
  kept <- function(r) which(!vapply(r$cands, function(x) is.null(x$release), NA))
  expect_identical(kept(detanon:::tune_needed(run)), 2L)
  expect_identical(kept(detanon:::tune_needed(run, 2L)), c(2L, 4L, 6L))
  expect_identical(kept(detanon:::tune_needed(run, 10L)), c(1L, 2L, 4L, 5L, 6L))
  expect_identical(detanon:::tune_needed(run, 2L)$evals, "kept")
  expect_identical(lapply(detanon:::tune_needed(run)$cands, `[[`, "row"), lapply(run$cands, `[[`, "row"))
})

test_that("the verification's pieces group the attacks that share work on the view (issue 39)", {
  all <- setdiff(names(battery_attacks()), c("differencing", "composition"))
  p <- detanon:::tune_verify_pieces(all)
  expect_identical(p[[1]], "assignment")
  expect_identical(p[[2]], c("linkage_original", "tail_outliers", "recipe", "inference"))
  expect_setequal(unlist(p), all)
  expect_identical(lengths(p), c(1L, 4L, rep(1L, length(all) - 5L)))
  expect_identical(detanon:::tune_verify_pieces(c("singling_out", "recipe")), list("recipe", "singling_out"))
  expect_identical(detanon:::tune_verify_pieces("linkage_released"), list("linkage_released"))
})
