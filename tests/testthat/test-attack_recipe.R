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
  # nearest distance of an identical candidate is the view's; a categorical key the release
  # changed moves records between cells (the control's candidates then are searched anew)
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
      expect_null(v$s$shared$recipe_nearest, info = info) # held between the view and its control only
      # with every original known the candidates are the same for the view and its control
      saved <- if (p == 1) n_k else 0L
      expect_identical(got$value$calls, want$value$calls - saved, info = info)
      if (held != "h changed") expect_identical(got$calls, want$calls - saved, info = info)
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
    if (top < max(5, 0.01 * n_look) || sort(t, decreasing = TRUE)[2L] * 3 > top) return(NA_real_)
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
