# attack_recipe(): against an independent count of identical released records (settings
# known, p = 1) and a brute-force transcription (partial knowledge, release stand-ins).

titanic_k3 <- function(format = NULL) {
  d <- titanic_paper()[-1]
  list(d = d, m = anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                            format = format))
}

# 1 / (number of released records of the stratum identical to the record's own)
share_of_identical <- function(m, vars, strata) {
  key <- do.call(paste, c(m[strata], lapply(m[vars], function(v) sprintf("%.17g", v))))
  1 / as.vector(table(key)[key])
}

test_that("settings known, p = 1: every candidate is its released record; success shared by identical records", {
  for (format in c("natural", "none")) {
    t <- titanic_k3(format)
    a <- attack_recipe(t$d, t$m, intruder = intruder(), seed = 1) # the narrower intruder
    expect_identical(a$details$k, 3L)
    expect_equal(a$details$share_certain, 1)
    want <- share_of_identical(t$m, c("Age", "Fare"), c("Pclass", "Sex", "Family"))
    expect_equal(a$success, want)
    expect_lt(a$control_rate, 0.05)
  }
})

test_that("recipe known: the k recorded in the release is found among 2..k_max", {
  t <- titanic_k3()
  a <- attack_recipe(t$d, t$m, intruder = intruder(knows = "recipe"), k_max = 6, control = FALSE)
  expect_identical(a$details$k, 2:6)
  # k = 3 for most (a smaller k can hit an identical released record exactly, and the
  # values moved beyond a bound of the natural form lie close together: 777 of 891)
  expect_gt(as.vector(a$details$k_used[["3"]]), 0.85 * nrow(t$d))
  s <- attack_recipe(t$d, t$m, intruder = intruder(), control = FALSE)
  expect_equal(a$success, s$success)
  g <- attack_recipe(t$d, t$m, intruder = intruder(knows = "recipe"), k_max = 6, k_choice = "global",
                     control = FALSE)
  expect_equal(g$success, s$success)
})

# Brute force: neighbourhoods on the intruder's originals and the released stand-ins, step
# 5 by the centroids' SD (or the factors `a`), nearest released record by a full distance matrix, ties shared.
ref_recipe <- function(zo, zm, id, known, k, a = NULL) {
  zmix <- zm
  zmix[known, ] <- zo[known, ]
  nn <- ref_knn_index(zmix, id, k)
  cen <- t(apply(nn, 1L, function(r) colMeans(zmix[r, , drop = FALSE])))
  cen <- if (is.null(a)) sweep(cen, 2L, apply(cen, 2L, stats::sd), "/") else sweep(cen, 2L, a, "*")
  success <- rep(NA_real_, nrow(zo))
  for (i in which(known)) {
    s <- which(id == id[i])
    d2 <- colSums((t(zm[s, , drop = FALSE]) - cen[i, ])^2)
    own <- d2[s == i]
    success[i] <- if (any(d2 < own)) 0 else 1 / sum(d2 == own)
  }
  success
}

test_that("partial knowledge: equal to a brute-force transcription on random data", {
  for (seed in 1:4) {
    x <- random_data(90, d = 2, n_strata = 2, seed = seed)
    if (seed == 2) x$x1 <- round(x$x1) # ties
    m <- anonymise(x, k = 3, vars = c("x1", "x2"), strata = "g", format = "none")
    sds <- vapply(x[c("x1", "x2")], stats::sd, numeric(1))
    for (p in c(1, 0.3)) {
      # settings known: k = 3, format "none" and the recorded scale
      it <- intruder(p = p)
      a <- attack_recipe(x, m, intruder = it, control = FALSE, seed = seed)
      s <- detanon:::intruder_view(x, m, it, seed = seed)
      want <- ref_recipe(s$zo, s$zm, s$id, s$known, 3L, a = release_info(m)$stats$scale / sds)
      expect_equal(a$success, want)
      expect_identical(a$n_attacked, sum(s$known))
    }
  }
})

test_that("with the settings known, the recorded step-5 scale is used", {
  x <- random_data(90, d = 2, n_strata = 2, seed = 7)
  m <- anonymise(x, k = 3, vars = c("x1", "x2"), strata = "g", format = "none")
  a <- attack_recipe(x, m, intruder = intruder(p = 0.3), control = FALSE, seed = 1)
  sds <- vapply(x[c("x1", "x2")], stats::sd, numeric(1))
  expect_equal(unname(a$details$scale), unname(release_info(m)$stats$scale / sds))
})

test_that("small strata and an intruder who does not know the algorithm", {
  x <- random_data(40, d = 2, n_strata = 2, seed = 5)
  x$g <- as.character(x$g)
  x$g[1:4] <- "small"
  m <- anonymise(x, k = 3, vars = c("x1", "x2"), strata = "g", format = "none")
  a <- attack_recipe(x, m, k = 5, control = FALSE)
  expect_identical(a$success[1:4], rep(0, 4)) # no candidate with k = 5 in a stratum of 4
  expect_true(all(!is.na(a$success)))
  n <- attack_recipe(x, m, intruder = intruder(knows = "data"), control = FALSE)
  expect_true(all(is.na(n$success)))
  expect_true(is.na(n$rate))
})

test_that("attack_recipe() beats the replay at p = 0.1 on Titanic", {
  t <- titanic_k3()
  a <- attack_recipe(t$d, t$m, intruder = intruder(p = 0.1), control = FALSE, seed = 3)
  r <- risk_replay(t$d, t$m, p = 0.1, seed = 3)
  expect_gt(a$rate, r$by_p$rate)
  expect_output(print(a), "algorithm-aware")
})

test_that("the candidates are computed once for the attack and its control, with the same results", {
  ns <- asNamespace("detanon")
  key <- "a custodian's key, 16+ bytes"
  spec <- ns$recipe_spec()
  for (kind in c("normal", "ties", "dup")) for (n in c(40L, 400L)) {
    x <- shared_case(n, kind, n)
    rel <- list(plain = anonymise(x, vars = c("a", "b"), strata = character(), k = 3),
                keyed = anonymise_keyed(x, vars = c("a", "b"), strata = character(), k = 3, size = 6, key = key),
                mdav = anonymise_mdav(x, vars = c("a", "b"), strata = character(), k = 3))
    for (r in names(rel)) for (p in c(1, 0.5)) for (knows in c("settings", "recipe")) {
      info <- paste(kind, n, r, p, knows)
      it <- intruder(vars = c("a", "b"), strata = "g", p = p, knows = knows)
      v <- ns$attack_view(x, rel[[r]], it, TRUE, 1)
      work <- c(plain = "strata_centroids_multi", keyed = "keyed_groups", mdav = "mdav_predict")[[r]]
      got <- count_calls(work, ns$run_attack(spec, v$s, v$ctrl, 3, NULL, 1L, 1))
      want <- count_calls(work, ref_run_unshared(spec, v))
      # the keyed partition and the centroids of every k are made once per view; MDAV once
      # per k tried
      per_view <- if (r == "mdav") length(got$value$details$k) else 1L
      # with every original known the control's candidates are the attack's; else not
      expect_identical(got$calls, per_view * (if (p == 1) 1L else 2L), info = info)
      expect_identical(want$calls, 2L * per_view, info = info)
      f <- c("rate", "rate_m", "control_rate", "control_rate_m", "success", "success_m", "confidence",
             "details", "by_stratum")
      expect_identical(got$value[f], want$value[f], info = info)
    }
  }
})

test_that("the candidates' format and nearest released records are searched once for the attack and its control", {
  # the control holds the same released records in the same cells, rows permuted: the
  # nearest distance of an identical candidate is the view's, and so is the choice of k of
  # each record; a categorical key the release changed moves records between cells (the
  # control then looks up records the view did not: its candidates are made anew)
  ns <- asNamespace("detanon")
  key <- "a custodian's key, 16+ bytes"
  spec <- ns$recipe_spec()
  for (kind in c("normal", "ties", "dup")) for (n in c(40L, 400L)) {
    x <- shared_case(n, kind, n)
    x$h <- sample(c("u", "v"), n, TRUE) # a categorical key
    rel <- list(plain = anonymise(x, vars = c("a", "b"), strata = character(), k = 3),
                keyed = anonymise_keyed(x, vars = c("a", "b"), strata = character(), k = 3, size = 6, key = key),
                mdav = anonymise_mdav(x, vars = c("a", "b"), strata = character(), k = 3))
    for (r in names(rel)) for (p in c(1, 0.5)) for (held in c("none", "h", "h changed")) {
      info <- paste(kind, n, r, p, held)
      m <- rel[[r]]
      if (held == "h changed") m$h[seq(1, n, by = 7)] <- "w" # moved to another cell
      it <- intruder(vars = c("a", "b"), strata = "g", held = if (held != "none") "h", p = p)
      v <- ns$attack_view(x, m, it, TRUE, 1)
      got <- count_calls("nearest_in_cells", count_calls("recipe_format", ns$run_attack(spec, v$s, v$ctrl, 3, NULL, 1L, 1)))
      want <- count_calls("nearest_in_cells", count_calls("recipe_format", ref_run_unshared(spec, v)))
      f <- c("rate", "rate_m", "control_rate", "control_rate_m", "success", "success_m", "confidence",
             "details", "by_stratum")
      expect_identical(got$value$value[f], want$value$value[f], info = info)
      n_k <- length(got$value$value$details$k)
      expect_null(v$s$shared$recipe_choice, info = info) # held between the view and its control only
      # with every original known the candidates are the same for the view and its control
      saved <- if (p == 1 && held != "h changed") n_k else 0L
      expect_identical(got$value$calls, want$value$calls - saved, info = info)
      expect_identical(got$calls, want$calls - saved, info = info)
    }
  }
})

test_that("attack_recipe() checks its arguments", {
  t <- titanic_k3()
  expect_snapshot(error = TRUE, attack_recipe(t$d, t$m, k = 1))
  expect_snapshot(error = TRUE, attack_recipe(t$d, t$m, k_choice = "best"))
})

test_that("ratio_mode() equals the mode from table() on the text of the ratios", {
  ref <- function(r, n_look) {
    if (length(r) < 10L) return(NA_real_)
    t <- table(signif(r, 7))
    top <- max(t)
    second <- if (length(t) > 1L) sort(t, decreasing = TRUE)[[2L]] else 0L
    if (top < max(5, 0.01 * n_look) || second * 3 > top) return(NA_real_)
    as.numeric(names(t)[which.max(t)])
  }
  set.seed(6)
  for (rep in 1:40) {
    f <- sample(c(1.2345678901, -0.5, 3e-9, 7e12, 1/3), 1)
    n_true <- sample(c(3, 20, 200), 1)
    noise <- runif(sample(c(5, 50, 400), 1), -2, 2) * f
    # ties among the noise and near-equal values that differ beyond 7 digits
    noise <- c(noise, rep(noise[1], sample(0:60, 1)), f * (1 + 1e-9 * (1:3)))
    r <- sample(c(rep(f, n_true), noise))
    n_look <- sample(c(10, 1000, 1e5), 1)
    expect_identical(detanon:::ratio_mode(r, n_look), ref(r, n_look))
  }
  expect_identical(detanon:::ratio_mode(rep(2, 9), 10), NA_real_)
  # every ratio the same value: that value (it stood out; main stopped on a missing second count)
  expect_identical(detanon:::ratio_mode(rep(2, 10), 10), 2)
  expect_identical(detanon:::ratio_mode(rep(1/3, 50), 10), ref(rep(1/3, 50), 10))
  expect_identical(detanon:::ratio_mode(rep(2, 10), 1e5), NA_real_)
})

test_that("a constant variable carries nothing: the attack is that without it (issue 34, item 9)", {
  d <- titanic_paper()[-1][1:300, ]
  for (format in c("none", "natural")) {
    m <- anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3, format = format,
                   check_identifiers = FALSE)
    ref <- attack_recipe(d, m, intruder = intruder(vars = c("Age", "Fare"), strata = c("Pclass", "Sex")),
                         control = FALSE)
    # the reported case (a constant masked variable) and a variant (a constant column of
    # another value, first among the variables)
    for (cv in c(5, -1e6)) {
      dc <- d
      dc$Const <- cv
      mc <- m
      mc$Const <- cv
      for (vars in list(c("Age", "Fare", "Const"), c("Const", "Age", "Fare"))) {
        r <- attack_recipe(dc, mc, intruder = intruder(vars = vars, strata = c("Pclass", "Sex")), control = FALSE)
        expect_identical(r$success, ref$success)
        expect_identical(r$confidence, ref$confidence)
      }
    }
  }
})

test_that("settings known, the default intruder: identical released records are told apart by Survived", {
  t <- titanic_k3()
  a <- attack_recipe(t$d, t$m, seed = 1)
  expect_identical(a$intruder$held, "Survived")
  # one over the released records identical on the masked values, the strata and Survived
  want <- share_of_identical(t$m, c("Age", "Fare"), c("Pclass", "Sex", "Family", "Survived"))
  expect_equal(a$success, want)
  expect_gt(a$rate, attack_recipe(t$d, t$m, intruder = intruder(), seed = 1)$rate)
})

# The centroids at k of every record of `z` in its stratum `id`, by brute force: its k
# nearest of the stratum in the total order of src/kdtree.h (squared distance summed in
# column order, then coordinates), summed one by one in lexicographic order; NA rows for
# strata smaller than k.
ref_centroids <- function(z, id, k) {
  out <- matrix(NA_real_, nrow(z), ncol(z))
  for (i in seq_len(nrow(z))) {
    rows <- which(id == id[i])
    if (length(rows) < k) next
    d2 <- Reduce(`+`, lapply(seq_len(ncol(z)), function(j) (z[rows, j] - z[i, j]) * (z[rows, j] - z[i, j])), 0)
    near <- rows[do.call(order, c(list(d2), lapply(seq_len(ncol(z)), function(j) z[rows, j])))[seq_len(k)]]
    lex <- near[do.call(order, lapply(seq_len(ncol(z)), function(j) z[near, j]))]
    for (j in seq_len(ncol(z))) out[i, j] <- Reduce(`+`, z[lex, j], 0) / k
  }
  out
}

# identical, signed zeros told apart
expect_bits <- function(object, expected, info = NULL) {
  expect_true(identical(object, expected, num.eq = FALSE), info = info)
}

test_that("the centroids of several k from one search are those of each k alone, bit for bit", {
  ns <- asNamespace("detanon")
  set.seed(7)
  for (kind in c("normal", "ties", "dup", "zeros")) for (d in 1:3) {
    n <- 70L
    z <- matrix(stats::rnorm(n * d), n, d)
    if (kind == "ties") z <- round(z)
    if (kind == "dup") z[seq(2, n, 2), ] <- z[sample(n, n / 2, TRUE), ]
    if (kind == "zeros") { # signed zeros
      at <- sample(length(z), length(z) / 2)
      z[at] <- rep_len(c(0, -0), length(at))
    }
    # strata of 40, 20, 5, 3, 1 and 1 records; k above some strata's sizes, unsorted and repeated
    id <- rep(c(2L, 5L, 1L, 4L, 3L), c(40, 20, 5, 3, 2))[sample(n)]
    id[id == 3L][1L] <- 6L
    ks <- c(4L, 2L, 30L, 3L, 21L, 2L, 41L, 1L, 5L, 20L)
    for (nt in 1:2) {
      got <- ns$strata_centroids_multi(z, id, ks, nt)
      for (a in seq_along(ks)) {
        info <- paste(kind, d, nt, ks[a])
        expect_bits(got[[a]], ns$strata_centroids(z, id, ks[a], nt), info = info)
        if (nt == 1L) expect_bits(got[[a]], ref_centroids(z, id, ks[a]), info = info)
      }
    }
  }
})

test_that("the centroids of several k: every k from 1 to a stratum's size, many chunks, row order and threads", {
  ns <- asNamespace("detanon")
  set.seed(8)
  n <- 1500L
  z <- cbind(round(stats::rnorm(n), 1), round(stats::rexp(n), 1), stats::runif(n) > 0.5)
  id <- sample(c(1L, 2L, 3L), n, TRUE, prob = c(0.7, 0.28, 0.02))
  ks <- 1:160
  got <- ns$strata_centroids_multi(z, id, ks, 1L)
  for (k in c(1L, 2L, 9L, 24L, 25L, 26L, 33L, 64L, 100L, 159L, 160L)) {
    expect_bits(got[[k]], ns$strata_centroids(z, id, k, 1L), info = k)
  }
  expect_bits(ns$strata_centroids_multi(z, id, ks, 2L), got)
  p <- sample(n)
  perm <- ns$strata_centroids_multi(z[p, ], id[p], ks, 1L)
  expect_bits(lapply(perm, function(x) x[order(p), , drop = FALSE]), got)
  # one record, one k, no strata that hold any k
  expect_identical(ns$strata_centroids_multi(z[1, , drop = FALSE], 1L, 1:3, 1L),
                   lapply(1:3, function(k) ns$strata_centroids(z[1, , drop = FALSE], 1L, k, 1L)))
  expect_identical(ns$strata_centroids_multi(z, id, 7L, 1L), list(ns$strata_centroids(z, id, 7L, 1L)))
  expect_true(all(is.na(ns$strata_centroids_multi(z[1:5, ], rep(1L, 5), 6:7, 1L)[[2]])))
})

test_that("the centroids of several k on non-finite points are those of each k alone", {
  ns <- asNamespace("detanon")
  set.seed(9)
  z <- matrix(round(stats::rnorm(120)), 60, 2)
  z[3, 1] <- Inf
  z[9, 2] <- NA
  id <- rep(1:2, 30)
  ks <- c(2L, 5L, 9L)
  expect_identical(ns$strata_centroids_multi(z, id, ks, 1L), lapply(ks, function(k) ns$strata_centroids(z, id, k, 1L)))
})

# ---- a release with a table of k per stratum (anonymise_adaptive(), m = 0) ---------------

# Data with strata of several sizes (one of two records), ties and duplicate rows when
# `tied`, and a table of k per stratum.
ktab_case <- function(seed, tied) {
  x <- random_data(150, d = 2, n_strata = 3, seed = seed)
  x$g <- as.character(x$g)
  x$g[1:2] <- "tiny"
  if (tied) {
    x$x1 <- round(x$x1 * 2) / 2
    x$x2 <- round(x$x2)
    dup <- 10:40
    x[dup, c("x1", "x2")] <- x[dup + 50L, c("x1", "x2")]
    x$g[dup] <- x$g[dup + 50L]
  }
  list(x = x, tab = data.frame(g = c("a", "b", "c", "tiny"), k = c(3L, 7L, 4L, 2L)))
}

# Brute force of the replay: each record's centroid of its stratum's k nearest (in the
# intruder's originals and stand-ins), step 5 by the recorded factors `a`, the release
# format (format_masked() on the x-scale, the form of each column from the originals and
# stand-ins as they are in the data, the smallest k of the table), then the nearest
# released record of its stratum, ties shared. (One k for all: `kr` that k for every record.)
ref_recipe_ktab <- function(s, kr, a, format, k_format) {
  zmix <- s$zm
  zmix[s$known, ] <- s$zo[s$known, ]
  cen <- matrix(NA_real_, nrow(zmix), ncol(zmix))
  for (i in seq_len(nrow(zmix))) {
    st <- which(s$id == s$id[i])
    if (length(st) < kr[i]) next
    nn <- ref_knn_index(zmix[st, , drop = FALSE], rep(1L, length(st)), kr[i])[match(i, st), ]
    cen[i, ] <- colMeans(zmix[st[nn], , drop = FALSE]) * a
  }
  if (format != "none") {
    ok <- !is.na(cen[, 1L])
    mu <- colMeans(as.matrix(s$original[s$vars]))
    sdv <- apply(as.matrix(s$original[s$vars]), 2L, stats::sd)
    # the values before masking as the intruder holds them: its originals, the released
    # values for the others
    xmix <- sapply(s$vars, function(v) ifelse(s$known, as.double(s$original[[v]]), as.double(s$masked[[v]])))
    for (j in seq_len(ncol(cen))) {
      v <- detanon:::format_masked(cen[ok, j] * sdv[j] + mu[j], xmix[ok, j], k_format, format, FALSE)
      cen[ok, j] <- (v - mu[j]) / sdv[j]
    }
  }
  success <- rep(NA_real_, nrow(zmix))
  for (i in which(s$known)) {
    if (is.na(cen[i, 1L])) {
      success[i] <- 0
      next
    }
    st <- which(s$id == s$id[i])
    d2 <- colSums((t(s$zm[st, , drop = FALSE]) - cen[i, ])^2)
    own <- d2[st == i]
    success[i] <- if (any(d2 < own)) 0 else 1 / sum(d2 == own)
  }
  success
}

test_that("k per stratum, settings known, p = 1: every candidate is its released record", {
  d <- titanic_paper()[-1]
  st <- c("Pclass", "Sex", "Family")
  tab <- unique(d[st])
  sz <- table(do.call(paste, d[st]))[do.call(paste, tab[st])]
  tab$k <- as.integer(pmax(2, pmin(sz, rep(c(3, 9, 5), length.out = nrow(tab)))))
  for (format in c("natural", "none")) {
    m <- anonymise_adaptive(d, vars = c("Age", "Fare"), strata = st, k = tab, m = 0, k_max = 9, format = format)
    a <- attack_recipe(d, m, intruder = intruder(), seed = 1)
    expect_equal(a$details$share_certain, 1, info = format)
    expect_equal(a$success, share_of_identical(m, c("Age", "Fare"), st), info = format)
    expect_lt(a$control_rate, 0.05)
  }
})

test_that("k per stratum, settings known: each record replayed at its stratum's k, equal to a brute force", {
  for (seed in 1:3) for (tied in c(FALSE, TRUE)) for (format in c("none", "natural")) {
    t <- ktab_case(seed, tied)
    m <- anonymise_adaptive(t$x, vars = c("x1", "x2"), strata = "g", k = t$tab, m = 0, k_max = 9, format = format)
    sds <- vapply(t$x[c("x1", "x2")], stats::sd, numeric(1))
    kr <- t$tab$k[match(t$x$g, t$tab$g)]
    for (p in c(1, 0.4)) {
      info <- paste(seed, tied, format, p)
      it <- intruder(p = p)
      a <- attack_recipe(t$x, m, intruder = it, seed = seed)
      s <- detanon:::intruder_view(t$x, m, it, seed = seed)
      want <- ref_recipe_ktab(s, kr, release_info(m)$stats$scale / sds, format, 2L)
      expect_equal(a$success, want, info = info)
      expect_identical(a$details$k, c(2L, 3L, 4L, 7L), info = info)
      expect_identical(as.vector(a$details$k_used), tabulate(factor(kr[s$known], c(2, 3, 4, 7)), 4L), info = info)
      # the attack and its control: with all originals known the control takes the view's candidates
      if (p == 1) expect_lt(a$control_rate, a$rate)
    }
  }
})

test_that("k per stratum: a stratum smaller than its k has no candidate (a miss); the one-k path is unchanged", {
  t <- ktab_case(4, TRUE)
  m <- anonymise_adaptive(t$x, vars = c("x1", "x2"), strata = "g", k = t$tab, m = 0, k_max = 9)
  # the recorded table says k = 3 for the stratum of two records (no release could hold it)
  info <- attr(m, "detanon")
  info$settings$k$k[info$settings$k$g == "tiny"] <- 3L
  attr(m, "detanon") <- info
  a <- attack_recipe(t$x, m, seed = 1)
  expect_identical(a$success[1:2], c(0, 0))
  expect_identical(a$confidence[1:2], c(0, 0))
  expect_true(all(!is.na(a$success)))
  # a k given, an intruder who knows only the recipe, a release of one k (m = 0): every k of the range
  expect_identical(attack_recipe(t$x, m, k = 2:4, control = FALSE)$details$k, 2:4)
  expect_identical(attack_recipe(t$x, m, intruder = intruder(knows = "recipe"), k_max = 5, control = FALSE)$details$k, 2:5)
  one <- anonymise_adaptive(t$x, vars = c("x1", "x2"), strata = "g", k = 2, m = 0, k_max = 6)
  expect_identical(attack_recipe(t$x, one, control = FALSE)$details$k, 2:6)
  grown <- anonymise_adaptive(t$x, vars = c("x1", "x2"), strata = "g", k = t$tab, m = 1, k_max = 9)
  expect_identical(attack_recipe(t$x, grown, control = FALSE)$details$k, 2:9)
})

test_that("k per stratum: one k in every stratum gives the one-k attack, at least as strong as every k tried", {
  d <- titanic_paper()[-1]
  st <- c("Pclass", "Sex", "Family")
  tab <- unique(d[st])
  tab$k <- 3L
  m <- anonymise_adaptive(d, vars = c("Age", "Fare"), strata = st, k = tab, m = 0, k_max = 8)
  one <- anonymise_adaptive(d, vars = c("Age", "Fare"), strata = st, k = 3, m = 0, k_max = 8)
  expect_identical(m[c("Age", "Fare")], one[c("Age", "Fare")])
  f <- c("rate", "rate_m", "control_rate", "control_rate_m", "success", "success_m", "confidence", "by_stratum")
  for (p in c(1, 0.3)) {
    a <- attack_recipe(d, m, intruder = intruder(p = p), seed = 2)
    b <- attack_recipe(d, m, intruder = intruder(p = p), k = 3, seed = 2)
    expect_identical(a[f], b[f], info = p)
    expect_identical(a$details$k, 3L)
    # the release of one k (m = 0): every k from 3 to k_max, the nearest taking the claim
    r <- attack_recipe(d, one, intruder = intruder(p = p), seed = 2)
    expect_identical(r$details$k, 3:8)
    expect_gte(a$rate, r$rate)
    expect_gte(a$rate_m, r$rate_m)
  }
})

test_that("k per stratum: the table's row order does not matter; a stratum it lacks takes its smallest k", {
  t <- ktab_case(5, TRUE)
  m <- anonymise_adaptive(t$x, vars = c("x1", "x2"), strata = "g", k = t$tab, m = 0, k_max = 9, format = "none")
  # the caller's table in another order, with a stratum absent from the data
  tab2 <- rbind(t$tab[c(4, 2, 3, 1), ], data.frame(g = "absent", k = 5L))
  m2 <- anonymise_adaptive(t$x, vars = c("x1", "x2"), strata = "g", k = tab2, m = 0, k_max = 9, format = "none")
  a <- attack_recipe(t$x, m, seed = 1)
  expect_identical(attack_recipe(t$x, m2, seed = 1), a)
  # the recorded table in another order (and a factor stratum column)
  edit <- function(m, f) {
    info <- attr(m, "detanon")
    info$settings$k <- f(info$settings$k)
    attr(m, "detanon") <- info
    m
  }
  m3 <- edit(m, function(k) transform(k[c(3, 1, 4, 2), ], g = factor(g)))
  expect_identical(attack_recipe(t$x, m3, seed = 1), a)
  # stratum "b" (k = 7) not in the recorded table: its records are replayed at the smallest k (2)
  m4 <- edit(m, function(k) k[k$g != "b", ])
  got <- attack_recipe(t$x, m4, seed = 1, control = FALSE)
  s <- detanon:::intruder_view(t$x, m4, intruder_published(), seed = 1)
  kr <- t$tab$k[match(t$x$g, t$tab$g)]
  kr[t$x$g == "b"] <- 2L
  sds <- vapply(t$x[c("x1", "x2")], stats::sd, numeric(1))
  expect_equal(got$success, ref_recipe_ktab(s, kr, release_info(m)$stats$scale / sds, "none", 2L))
  expect_identical(got$details$k, 2:4)
})

# ---- whole-number columns, format "natural" --------------------------------------------

# Data with an Age-like column of whole numbers (multiples of 5: their z-scores map back to
# whole numbers only up to rounding), integer or double, a Fare-like column of cents and a
# stratum column `g`; with `na`, missing strata (a stratum of their own) and missing ages,
# imputed by their median as anonymise(na = "median") does, in the originals the intruder
# holds too (`x`: the data; `held`: the originals of the attack).
whole_case <- function(seed, int, na) {
  set.seed(seed)
  n <- 240L
  x <- data.frame(age = sample(0:90, n, TRUE) * 5, fare = round(stats::rexp(n) * 30, 2),
                  g = sample(c("a", "b", "c"), n, TRUE, prob = c(0.5, 0.35, 0.15)))
  if (int) x$age <- as.integer(x$age)
  held <- x
  if (na) {
    x$g[sample(n, 12)] <- NA
    x$age[sample(n, 10)] <- NA
    held <- x
    held$age[is.na(x$age)] <- stats::median(x$age, na.rm = TRUE)
  }
  list(x = x, held = held, tab = data.frame(g = c("a", "b", "c", NA), k = c(3L, 5L, 4L, 2L)))
}

test_that("whole-number columns, settings known: the candidates are formatted as the release was (brute force)", {
  for (seed in 1:3) for (int in c(FALSE, TRUE)) for (na in c(FALSE, TRUE)) for (format in c("natural", "none")) {
    t <- whole_case(seed, int, na)
    v <- c("age", "fare")
    rel <- list(one = anonymise(t$x, vars = v, strata = "g", k = 3, format = format, na = "median"),
                # (anonymise_adaptive() takes complete data: the ages imputed as above)
                table = anonymise_adaptive(t$held, vars = v, strata = "g", k = t$tab, m = 0, k_max = 9,
                                           format = format))
    sds <- vapply(t$held[v], stats::sd, numeric(1))
    for (r in names(rel)) {
      m <- rel[[r]]
      kr <- if (r == "one") rep(3L, nrow(t$x)) else t$tab$k[match(t$x$g, t$tab$g)]
      for (p in c(1, 0.4)) {
        info <- paste(seed, int, na, format, r, p)
        it <- intruder(p = p)
        a <- attack_recipe(t$held, m, intruder = it, seed = seed)
        s <- detanon:::intruder_view(t$held, m, it, seed = seed)
        want <- ref_recipe_ktab(s, kr, release_info(m)$stats$scale / sds, format, min(kr))
        expect_equal(a$success, want, info = info)
        # every original known: every candidate is its released record
        if (p == 1) expect_identical(a$details$share_certain, 1, info = info)
      }
    }
  }
})

test_that("whole-number columns: a natural release on integer data is recovered with every original known", {
  for (seed in 1:8) {
    set.seed(seed)
    n <- 400L
    d <- data.frame(a = sample(0:90, n, TRUE) * sample(c(1L, 5L), 1), b = round(stats::rexp(n) * 30, 2),
                    g = sample(c("p", "q"), n, TRUE))
    m <- anonymise(d, k = 3, vars = c("a", "b"), strata = "g", format = "natural")
    a <- attack_recipe(d, m, intruder = intruder(), seed = 1)
    expect_identical(a$details$share_certain, 1, info = seed)
    expect_equal(a$success, share_of_identical(m, c("a", "b"), "g"), info = seed)
  }
})

# ---- many k tried: a block of k at a time, the memory bounded --------------------------

test_that("many k, a block at a time: identical to the reference that holds every k (ref_attack_recipe())", {
  n_cases <- 0L
  for (tied in c(FALSE, TRUE)) {
    set.seed(if (tied) 21 else 20)
    n <- 200L
    x <- data.frame(a = stats::rnorm(n), b = stats::rexp(n) * 10, g = sample(c("p", "q", "r"), n, TRUE, prob = c(0.6, 0.3, 0.1)),
                    h = sample(c("u", "v"), n, TRUE))
    if (tied) {
      x$a <- round(x$a * 2) / 2
      x$b <- round(x$b)
      x[seq(2, n, 5), c("a", "b")] <- x[seq(1, n, 5), c("a", "b")] # duplicate rows
    }
    x$g[2:3] <- "t" # a stratum of two records (smaller than most k tried: no candidate)
    x$g[4:9] <- NA # missing strata: a stratum of their own
    # a stratum of identical records: every k up to its size gives the same candidate
    x$g[10:17] <- "d"
    x[10:17, c("a", "b")] <- x[rep(10L, 8L), c("a", "b")]
    v <- c("a", "b")
    tab <- data.frame(g = c("p", "q", "r", "t", NA, "d"), k = c(3L, 6L, 4L, 2L, 5L, 3L))
    rel <- list(
      # k grown per record: the intruder who knows the settings tries every k from 2 to k_max
      adaptive = anonymise_adaptive(x, vars = v, strata = "g", k = 2, m = 1, k_max = 13),
      adaptive_table = anonymise_adaptive(x, vars = v, strata = "g", k = tab, m = 1, k_max = 9),
      # the intruder who knows only the recipe: every k from 2 to k_max, the step-5 factor from the release
      plain = anonymise(x, vars = v, strata = "g", k = 2))
    for (r in names(rel)) for (p in c(1, 0.5)) for (k_choice in c("record", "global")) for (small in c(FALSE, TRUE)) {
      nt <- if (small) 2L else 1L
      info <- paste(tied, r, p, k_choice, small)
      it <- if (r == "plain") intruder(p = p, knows = "recipe", held = "h") else intruder(p = p, held = if (p == 1) "h")
      # (k given for the release of one k: none fits the stratum of two records, whose
      # records have no candidate at any k: the first k is theirs)
      args <- list(x, rel[[r]], intruder = it, k = if (r == "plain") 3:12, k_max = 12, k_choice = k_choice,
                   nthreads = nt, seed = 3)
      # a block of 3 k (several blocks), or the default (one)
      withr::local_options(detanon.recipe_block_values = if (small) 3 * n * 2 else NULL)
      got <- do.call(attack_recipe, args)
      want <- do.call(ref_attack_recipe, args)
      expect_identical(got, want, info = info)
      expect_gt(length(got$details$k), 3L)
      n_cases <- n_cases + 1L
    }
    # no k that any stratum holds: every k ties (no candidate), the first is chosen
    for (k_choice in c("record", "global")) {
      args <- list(x, rel$plain, k = c(300L, 400L), k_choice = k_choice, seed = 3)
      expect_identical(do.call(attack_recipe, args), do.call(ref_attack_recipe, args), info = k_choice)
    }
  }
  expect_identical(n_cases, 48L)
})

test_that("the ranks from the nearest released records' list equal the tree's, on the view and its control", {
  # recipe_ranks() reads the capped ranks off the cap + 1 nearest released records of each
  # candidate (the search that chose it; with several k a search of the chosen ones), and
  # counts the rows the list cannot decide on the trees of their cells only: the same as
  # battery_ranks() on the released index of every cell, ties, one-point cells and small
  # strata included
  ns <- asNamespace("detanon")
  d <- tied_strata_data(seed = 4, small = 3) # a stratum "e" of 3
  one_point <- function(m) { m[m$g == "c", c("x1", "x2")] <- 0.25; m } # every record at one point
  releases <- list(plain = anonymise(d, k = 3, vars = c("x1", "x2"), strata = "g"),
                   mdav = anonymise_mdav(d, k = 3, vars = c("x1", "x2"), strata = "g", noise = TRUE),
                   one_point = one_point(anonymise(d, k = 3, vars = c("x1", "x2"), strata = "g")))
  spec <- ns$recipe_spec()
  tree <- function(s, zt, zq, want, d2, look, cap, nthreads) {
    ns$battery_ranks(ns$released_index(s, zt), zq, want, cap, nthreads)
  }
  redone <- 0L
  for (r in names(releases)) for (held in list(NULL, "k")) for (p in c(1, 0.7)) for (knows in c("settings", "recipe")) {
    it <- intruder(vars = c("x1", "x2"), strata = "g", held = held, p = p, knows = knows)
    for (m in c(1, 3)) for (nt in 1:2) {
      info <- paste(r, !is.null(held), p, knows, m, nt)
      v <- ns$attack_view(d, releases[[r]], it, control = TRUE, seed = 5)
      got <- count_calls("recipe_tree_ranks", ns$run_attack(spec, v$s, v$ctrl, m, NULL, nt, 5))
      redone <- redone + got$calls
      want <- local({
        local_detanon_binding("recipe_ranks", tree)
        v <- ns$attack_view(d, releases[[r]], it, control = TRUE, seed = 5)
        ns$run_attack(spec, v$s, v$ctrl, m, NULL, nt, 5)
      })
      expect_identical(got$value, want, info = info)
    }
  }
  expect_gt(redone, 0L) # some rows were counted on the trees (ties past the list's end)
})
