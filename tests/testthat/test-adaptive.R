# anonymise_adaptive(): the C rounds against a slow transcription in R.

# The algorithm written out: brute-force neighbours (ordered by squared distance, then
# coordinates), centroids summed in coordinate order, the rank and interval tests, the
# cheapest-first growth. A round tests the records whose centroid changed (the others keep
# their last test); when none is left to grow, every record is tested again. Returns the
# centroids (z-scale, before step 5), k per record and the records flagged at their cap.
ref_adaptive <- function(z, id, k_init, cap, m, target, xs = NULL, wr = NULL) {
  n <- nrow(z); d <- ncol(z)
  k <- k_init
  members <- split(seq_len(n), id)
  ordered <- lapply(seq_len(n), function(i) {
    s <- members[[id[i]]]
    d2 <- numeric(length(s))
    for (j in seq_len(d)) d2 <- d2 + (z[i, j] - z[s, j])^2
    s[do.call(order, c(list(d2), lapply(seq_len(d), function(j) z[s, j])))]
  })
  centroid <- function(i) {
    pts <- ordered[[i]][seq_len(k[i])]
    pts <- pts[do.call(order, lapply(seq_len(d), function(j) z[pts, j]))]
    vapply(seq_len(d), function(j) { s <- 0; for (p in pts) s <- s + z[p, j]; s / k[i] }, 0)
  }
  cen <- matrix(0, n, d)
  rank <- cost <- numeric(n)
  iflag <- logical(n)
  todo <- seq_len(n)
  full <- TRUE
  n_capped <- 0
  repeat {
    for (i in todo) cen[i, ] <- centroid(i)
    st <- detanon:::col_stats(cen)
    if (any(!(st$sd > 0))) break
    for (i in if (full) seq_len(n) else todo) {
      q <- cen[i, ] / st$sd
      s <- members[[id[i]]]
      d2 <- numeric(length(s))
      for (j in seq_len(d)) d2 <- d2 + (q[j] - z[s, j])^2
      own <- d2[s == i]
      cost[i] <- own
      rank[i] <- if (m == 0) 1 else if (own > 0) min(sum(d2 < own), m) else 0
      if (!is.null(xs)) {
        xm <- (cen[i, ] - st$mean) / st$sd
        iflag[i] <- any(xm > xs[i, ] - wr[i] & xm < xs[i, ] + wr[i])
      }
    }
    flag <- iflag
    if (m > 0) {
      flag[rank == 0] <- TRUE
      need <- sum(rank < m) - target - sum(rank == 0)
      cand <- rank > 0 & rank < m
      if (need > 0 && any(cand & k < cap)) {
        costs <- sort(cost[cand & k < cap])
        cut <- if (need >= length(costs)) Inf else costs[need]
        flag[cand & cost <= cut] <- TRUE
      }
    }
    grow <- flag & k < cap
    n_capped <- sum(flag & k >= cap)
    k[grow] <- pmin(k[grow] + pmax(1L, k[grow] %/% 4L), cap[grow])
    todo <- which(grow)
    if (!length(todo)) {
      if (full) break
      full <- TRUE
    } else full <- FALSE
  }
  list(centroids = cen, k = k, n_capped = n_capped)
}

adaptive_call <- function(z, id, k_init, cap, m, target, xs = NULL, wr = NULL, nthreads = 1L, state = NULL,
                          idx = NULL) {
  if (is.null(idx)) idx <- .Call(detanon:::C_ffi_rank_index, z, as.integer(order(id)), as.integer(c(0, cumsum(tabulate(id)))))
  .Call(detanon:::C_ffi_adaptive_k, idx, as.integer(k_init), as.integer(cap), as.integer(m),
        as.double(target), xs, wr, as.integer(nthreads), state)
}

test_that("the adaptive kernel equals the R transcription on random and adversarial data", {
  for (seed in 1:18) {
    set.seed(seed)
    n <- sample(c(5, 30, 80, 150), 1L)
    d <- sample(1:3, 1L)
    z <- matrix(round(stats::rnorm(n * d), sample(c(1, 3, 8), 1L)), n, d)
    if (n > 20) z[1:10, ] <- z[11:20, ] # duplicated records
    id <- sample(seq_len(sample(1:3, 1L)), n, TRUE)
    small <- tabulate(id)[id] < 2
    id[small] <- id[which.max(tabulate(id)[id])] # no stratum of one record
    id <- match(id, sort(unique(id)))
    size <- tabulate(id)[id]
    # one first k, or a warm start (k per record, as a later stage starts), and the caps
    k0 <- if (seed %% 3 == 0) pmin(sample(2:6, n, TRUE), size) else pmin(sample(2:3, 1L), size)
    k0 <- rep_len(k0, n)
    cap <- pmax(k0, pmin(max(k0) + sample(c(0:15, 40), 1L), size))
    m <- sample(0:3, 1L, prob = c(1, 3, 3, 3)); target <- sample(c(0, floor(n / 5)), 1L)
    use_int <- seed %% 2 == 0
    xs <- if (use_int) z + matrix(stats::rnorm(n * d, sd = 0.01), n, d) else NULL
    wr <- if (use_int) stats::runif(n, 0, 0.05) else NULL
    got <- adaptive_call(z, id, k0, cap, m, target, xs, wr, nthreads = sample(1:2, 1L))
    want <- ref_adaptive(z, id, k0, cap, m, target, xs, wr)
    expect_identical(got[[2]], as.integer(want$k), info = paste("seed", seed))
    expect_equal(got[[1]], want$centroids, tolerance = 0, info = paste("seed", seed))
    if (all(apply(want$centroids, 2L, stats::sd) > 0)) {
      expect_identical(got[[4]], as.double(want$n_capped), info = paste("seed", seed))
    }
    expect_true(all(got[[2]] >= k0 & got[[2]] <= cap))
  }
})

test_that("the kernel keeps the neighbours of grown records: caps beyond the 64 kept, equal to the R transcription", {
  # one stratum of 300 and one of 90: records grow past 64 points (beyond the neighbours
  # kept per record, searched again from there) and stop below it
  for (seed in 1:3) {
    set.seed(seed)
    n <- 390
    z <- matrix(round(stats::rnorm(n * 2), c(1, 8, 2)[seed]), n, 2)
    z[1:40, ] <- z[41:80, ] # duplicated records
    id <- rep(1:2, c(300, 90))
    cap <- pmin(c(120L, 50L, 300L)[seed], tabulate(id)[id])
    got <- adaptive_call(z, id, rep(2L, n), cap, 3L, 0, nthreads = seed %% 2 + 1L)
    want <- ref_adaptive(z, id, rep(2L, n), cap, 3L, 0)
    if (max(cap) > 64) expect_true(max(got[[2]]) > 64, info = paste("seed", seed))
    expect_identical(got[[2]], as.integer(want$k), info = paste("seed", seed))
    expect_equal(got[[1]], want$centroids, tolerance = 0, info = paste("seed", seed))
  }
})

test_that("the kernel gives the same bits on one and two threads on thousands of records", {
  # above 2048 records the rounds run on both threads, the kept neighbours shared between them
  set.seed(4)
  n <- 6000
  z <- matrix(round(stats::rnorm(n * 3), 2), n, 3)
  z[, 3] <- z[, 3] * 1e6
  id <- rep(1:3, n / 3)
  idx <- .Call(detanon:::C_ffi_rank_index, z, as.integer(order(id)), as.integer(c(0, cumsum(tabulate(id)))))
  one <- adaptive_call(z, id, rep(2L, n), rep(20L, n), 3L, floor(0.2 * n), nthreads = 1L, idx = idx)
  two <- adaptive_call(z, id, rep(2L, n), rep(20L, n), 3L, floor(0.2 * n), nthreads = 2L, idx = idx)
  expect_identical(two, one)
  expect_gt(one[[3]], 2L)
})

test_that("a stage resumed from the end of the previous one gives the bits of a stage from the start", {
  for (seed in 1:12) {
    set.seed(seed)
    n <- sample(c(30, 80, 200), 1L)
    d <- sample(1:3, 1L)
    z <- matrix(round(stats::rnorm(n * d), sample(c(1, 3, 8), 1L)), n, d)
    z[1:10, ] <- z[11:20, ]
    id <- sample(1:2, n, TRUE)
    size <- tabulate(id)[id]
    idx <- .Call(detanon:::C_ffi_rank_index, z, as.integer(order(id)), as.integer(c(0, cumsum(tabulate(id)))))
    use_int <- seed %% 2 == 0
    xs <- if (use_int) z + matrix(stats::rnorm(n * d, sd = 0.01), n, d) else NULL
    wr <- if (use_int) stats::runif(n, 0, 0.05) else NULL
    m <- sample(1:3, 1L)
    nt <- sample(1:2, 1L)
    first <- adaptive_call(z, id, rep(2L, n), pmin(12L, size), m, floor(0.5 * n), xs, wr, nt, idx = idx)
    expect_true(first[[8]])
    # the next stage, from the first one's end (its centroids and tests) and from the start
    cap <- pmax(first[[2]], pmin(sample(c(12L, 30L), 1L), size))
    target <- floor(sample(c(0, 0.2), 1L) * n)
    state <- c(first[1L], first[5:7])
    resumed <- adaptive_call(z, id, first[[2]], cap, m, target, xs, wr, nt, state = state, idx = idx)
    fresh <- adaptive_call(z, id, first[[2]], cap, m, target, xs, wr, 3L - nt, idx = idx)
    expect_identical(resumed, fresh, info = paste("seed", seed))
    want <- ref_adaptive(z, id, first[[2]], cap, m, target, xs, wr)
    expect_equal(resumed[[1]], want$centroids, tolerance = 0, info = paste("seed", seed))
    expect_identical(resumed[[2]], as.integer(want$k), info = paste("seed", seed))
  }
  # adaptive_fit(): stages in one call, in calls that pass the state on, and in calls from the start
  set.seed(3)
  d <- data.frame(g = rep(c("a", "b"), 150), x = round(stats::rnorm(300), 1), y = stats::rexp(300))
  p <- detanon:::adaptive_setup(d, c("x", "y"), "g", rmd = TRUE, nthreads = 1L)
  one <- detanon:::adaptive_fit(p, rep(2L, 300), c(10L, 20L, 40L), 3L, c(0.5, 0.2, 0), 0.01, 2L)
  f1 <- detanon:::adaptive_fit(p, rep(2L, 300), 10L, 3L, 0.5, 0.01, 1L, keep_state = TRUE)
  f2 <- detanon:::adaptive_fit(p, f1$k, 20L, 3L, 0.2, 0.01, 2L, state = f1$state, keep_state = TRUE)
  f3 <- detanon:::adaptive_fit(p, f2$k, 40L, 3L, 0, 0.01, 1L, state = f2$state)
  g2 <- detanon:::adaptive_fit(p, f1$k, 20L, 3L, 0.2, 0.01, 1L)
  g3 <- detanon:::adaptive_fit(p, g2$k, 40L, 3L, 0, 0.01, 1L)
  expect_identical(f3$centroids, one$centroids)
  expect_identical(f3$k, one$k)
  expect_identical(f3$centroids, g3$centroids)
  expect_identical(f1$rounds + f2$rounds + f3$rounds, one$rounds)
  expect_identical(f3[c("rounds", "n_capped")], g3[c("rounds", "n_capped")])
  # a state of another m, w1 or k is not used: the stage starts from the start
  h <- detanon:::adaptive_fit(p, f1$k, 20L, 2L, 0.2, 0.01, 1L, state = f1$state)
  expect_identical(h[c("centroids", "k", "rounds")],
                   detanon:::adaptive_fit(p, f1$k, 20L, 2L, 0.2, 0.01, 1L)[c("centroids", "k", "rounds")])
  h <- detanon:::adaptive_fit(p, f1$k, 20L, 3L, 0.2, NULL, 1L, state = f1$state)
  expect_identical(h$centroids, detanon:::adaptive_fit(p, f1$k, 20L, 3L, 0.2, NULL, 1L)$centroids)
})

# The two steps of a round that the partitioned method runs on each group (adaptive.c:
# adaptive_centroids(), adaptive_tests()) written out: the centroid of a record's k nearest
# (brute force, ordered by squared distance, then coordinates, summed in coordinate order),
# and its rank test (originals strictly nearer its centroid divided by csd than its own,
# counted up to m; 0 when it is at its own; 1 when m = 0) with the squared distance.
ref_centroid <- function(z, id, i, k) {
  s <- which(id == id[i])
  d2 <- numeric(length(s))
  for (j in seq_len(ncol(z))) d2 <- d2 + (z[i, j] - z[s, j])^2
  pts <- s[do.call(order, c(list(d2), lapply(seq_len(ncol(z)), function(j) z[s, j])))][seq_len(k)]
  pts <- pts[do.call(order, lapply(seq_len(ncol(z)), function(j) z[pts, j]))]
  vapply(seq_len(ncol(z)), function(j) { v <- 0; for (p in pts) v <- v + z[p, j]; v / k }, 0)
}

ref_test <- function(z, id, i, cen, csd, m) {
  q <- cen / csd
  s <- which(id == id[i])
  d2 <- numeric(length(s))
  for (j in seq_len(ncol(z))) d2 <- d2 + (q[j] - z[s, j])^2
  own <- d2[s == i]
  list(rank = if (m == 0) 1L else if (own > 0) as.integer(min(sum(d2 < own), m)) else 0L,
       cost = if (m == 0) 0 else own)
}

test_that("the partitioned steps (centroids, rank tests) equal plain R on random and adversarial data", {
  for (seed in 1:16) {
    set.seed(seed)
    n <- sample(c(4, 30, 90, 200), 1L)
    d <- sample(1:4, 1L)
    z <- matrix(round(stats::rnorm(n * d), sample(c(0, 1, 8), 1L)), n, d)
    if (n > 20) z[1:10, ] <- z[11:20, ] # duplicated records
    id <- sample(seq_len(sample(1:3, 1L)), n, TRUE)
    id <- match(id, sort(unique(id)))
    size <- tabulate(id)[id]
    k <- pmax(1L, pmin(sample(1:40, n, TRUE), size))
    rows <- sort(sample(n, sample(seq_len(n), 1L)))
    idx <- .Call(detanon:::C_ffi_rank_index, z, as.integer(order(id)), as.integer(c(0, cumsum(tabulate(id)))))
    nt <- sample(1:2, 1L)
    got <- .Call(detanon:::C_ffi_adaptive_centroids, idx, as.integer(k), as.integer(rows), nt)
    want <- t(vapply(rows, function(i) ref_centroid(z, id, i, k[i]), numeric(d)))
    expect_identical(got, matrix(want, length(rows), d), info = paste("seed", seed))
    # the tests on these centroids (and on the records' own points: rank 0) at some scale
    csd <- if (seed %% 4 == 0) rep(1, d) else stats::runif(d, 0.3, 1.5)
    cen <- if (seed %% 4 == 0) z[rows, , drop = FALSE] * rep(csd, each = length(rows)) else got
    m <- sample(0:4, 1L)
    res <- .Call(detanon:::C_ffi_adaptive_tests, idx, cen, as.integer(rows), as.double(csd), m, nt)
    ref <- lapply(seq_along(rows), function(u) ref_test(z, id, rows[u], cen[u, ], csd, m))
    expect_identical(res[[1]], vapply(ref, `[[`, 0L, "rank"), info = paste("seed", seed))
    expect_identical(res[[2]], vapply(ref, `[[`, 0, "cost"), info = paste("seed", seed))
  }
})

test_that("several k from one search (the search's rungs of k per stratum) equal plain R and one fit per k", {
  for (seed in 1:14) {
    set.seed(seed)
    n <- sample(c(3, 40, 150, 400), 1L)
    d <- sample(1:4, 1L)
    df <- as.data.frame(matrix(round(stats::rnorm(n * d), sample(c(0, 1, 8), 1L)), n, d))
    if (n > 20) df[1:10, ] <- df[11:20, ] # duplicated records
    df$g <- sample(letters[seq_len(sample(1:3, 1L))], n, TRUE)
    vars <- names(df)[seq_len(d)]
    p <- detanon:::adaptive_setup(df, vars, "g", rmd = FALSE, nthreads = 1L)
    if (!length(p$cols)) next
    # rungs capped by each stratum's size, as the search gives them (equal rungs included)
    ks <- sort(sample(1:70, sample(1:4, 1L), replace = TRUE))
    k <- matrix(vapply(ks, function(kk) pmin(kk, p$sizes[p$id]), integer(n)), n)
    got <- detanon:::adaptive_rungs(p, k, 1L)
    expect_identical(detanon:::adaptive_rungs(p, k, 2L), got, info = paste("seed", seed))
    z <- p$z
    id <- p$id
    for (j in seq_along(ks)) {
      expect_identical(got[[j]], detanon:::adaptive_fit(p, k[, j], k[, j], 0L, 0, NULL, 1L),
                       info = paste("seed", seed, "rung", j))
      rows <- sample(n, min(n, 25L))
      want <- t(vapply(rows, function(i) ref_centroid(z, id, i, k[i, j]), numeric(ncol(z))))
      expect_identical(got[[j]]$centroids[rows, , drop = FALSE], matrix(want, length(rows), ncol(z)),
                       info = paste("seed", seed, "rung", j))
    }
  }
  # a rung below the one before it is an internal error, nothing computed
  p <- detanon:::adaptive_setup(data.frame(x = c(1, 2, 4, 8)), "x", NULL, rmd = FALSE, nthreads = 1L)
  expect_error(detanon:::adaptive_rungs(p, cbind(c(3L, 3L, 3L, 3L), 2L), 1L), "k out of range")
})

test_that("anonymise_adaptive: k = k_max is anonymise(), the release is deterministic and equivariant", {
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  fixed <- anonymise(d, k = 4, vars = v, strata = st, format = "none", check_identifiers = FALSE)
  same <- anonymise_adaptive(d, vars = v, strata = st, k = 4, k_max = 4, format = "none",
                             check_identifiers = FALSE)
  expect_equal(as.data.frame(same)[v], as.data.frame(fixed)[v], tolerance = 1e-12)
  a <- anonymise_adaptive(d, vars = v, strata = st, k = 2, k_max = 60, m = 3, rate = 0.14, w1 = 0.01,
                          format = "none", check_identifiers = FALSE)
  b <- anonymise_adaptive(d, vars = v, strata = st, k = 2, k_max = 60, m = 3, rate = 0.14, w1 = 0.01,
                          nthreads = 2, format = "none", check_identifiers = FALSE)
  expect_identical(a, b)
  p <- sample(nrow(d))
  c2 <- anonymise_adaptive(d[p, ], vars = v, strata = st, k = 2, k_max = 60, m = 3, rate = 0.14,
                           w1 = 0.01, format = "none", check_identifiers = FALSE)
  expect_identical(unname(as.matrix(c2[v])), unname(as.matrix(a[v])[p, ]))
  # everything but the masked columns is unchanged; the metadata holds aggregates only
  expect_identical(a[setdiff(names(d), v)], d[setdiff(names(d), v)])
  info <- release_info(a)
  expect_s3_class(info, "detanon_release")
  expect_identical(info$verb, "anonymise_adaptive")
  # settings, counts and per-column statistics: nothing per record
  expect_true(all(lengths(c(info$settings, info$counts, info$stats)) <= 3L))
  expect_output(print(info), "anonymise_adaptive")
  # the limits the kernel grows for hold on the release (uncapped records)
  l1 <- risk_linkage(d, a); l3 <- risk_linkage(d, a, m = 3)
  # at most rate * n records stay top-3 linkable, besides those flagged at their cap
  expect_lte(sum(l3$linked_m > 0), floor(0.14 * nrow(d)) + info$counts$n_capped)
  expect_lte(l3$rate_m, 0.14 + info$counts$n_capped / nrow(d))
  expect_lte(l1$n_linked, info$counts$n_capped)
  expect_lt(l1$rate, risk_linkage(d, fixed)$rate)
  # m = 1 grows only the nearest-linked records
  proto <- anonymise_adaptive(d, vars = v, strata = st, k = 3, k_max = 33, m = 1, format = "none",
                              check_identifiers = FALSE)
  expect_lte(risk_linkage(d, proto)$n_linked, release_info(proto)$counts$n_capped)
})

test_that("anonymise_adaptive: the natural form, k per stratum, and stages", {
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  raw <- anonymise_adaptive(d, vars = v, strata = st, k = 2, k_max = 40, m = 3, rate = 0.2,
                            format = "none", check_identifiers = FALSE)
  nat <- anonymise_adaptive(d, vars = v, strata = st, k = 2, k_max = 40, m = 3, rate = 0.2,
                            check_identifiers = FALSE)
  expect_lt(min(raw$Fare), 0) # step 5 alone can leave the range of the originals
  for (x in v) {
    s <- sort(d[[x]])
    # (a bound that k = 2 or more records share is no bound: the 15 zero fares; values
    # beyond it stay as computed)
    lo <- if (s[2] == s[1]) -Inf else mean(s[1:2])
    hi <- if (rev(s)[2] == rev(s)[1]) Inf else mean(rev(s)[1:2])
    expect_gte(min(nat[[x]]), lo - 1e-9)
    expect_lte(max(nat[[x]]), hi + 1e-9)
  }
  # no fare below 0 (those below are held just above it), the means and SDs kept
  expect_gte(min(nat$Fare), 0)
  for (x in v) expect_equal(c(mean(nat[[x]]), stats::sd(nat[[x]])), c(mean(d[[x]]), stats::sd(d[[x]])), tolerance = 1e-12)
  # the natural form keeps the order of the computed values
  expect_true(all(diff(nat$Fare[order(raw$Fare)]) >= 0))
  # k per stratum: a table of the strata and k; m = 0 grows nothing, and equals anonymise()
  # where every stratum has the same k
  tab <- unique(d[st]); tab$k <- 4
  same <- anonymise_adaptive(d, vars = v, strata = st, k = tab, k_max = 4, m = 0, format = "none",
                             check_identifiers = FALSE)
  fixed <- anonymise(d, k = 4, vars = v, strata = st, format = "none", check_identifiers = FALSE)
  expect_equal(as.data.frame(same)[v], as.data.frame(fixed)[v], tolerance = 1e-12)
  tab$k <- ifelse(tab$Pclass == 3, 10, 3)
  per <- anonymise_adaptive(d, vars = v, strata = st, k = tab, k_max = 10, m = 0, check_identifiers = FALSE)
  info <- release_info(per)
  expect_identical(info$counts$n_grown, 0L)
  expect_equal(info$counts$max_k, 10)
  expect_identical(info$counts$mean_k, mean(ifelse(d$Pclass == 3, 10, 3)))
  expect_error(anonymise_adaptive(d, vars = v, strata = st, k = tab[-1, ]), "no row for 1 stratum")
  expect_error(anonymise_adaptive(d, vars = v, strata = st, k = tab[c(1, 1:nrow(tab)), ]), "more than one row")
  expect_error(anonymise_adaptive(d, vars = v, strata = st, k = tab["k"]), "lacks")
  tab$k[1] <- 500
  expect_error(anonymise_adaptive(d, vars = v, strata = st, k = tab, k_max = 500), "fewer records than its `k`",
               class = "detanon_error_small_strata")
  # stages: each starts where the last ended, so k never shrinks along the path, and a
  # path equals its stages run one after the other
  s1 <- anonymise_adaptive(d, vars = v, strata = st, k = 2, k_max = 33, m = 3, rate = 0.4, check_identifiers = FALSE)
  s2 <- anonymise_adaptive(d, vars = v, strata = st, k = 2, k_max = c(33, 66), m = 3, rate = c(0.4, 0.15),
                           check_identifiers = FALSE)
  expect_gte(release_info(s2)$counts$mean_k, release_info(s1)$counts$mean_k)
  expect_lte(risk_linkage(d, s2, m = 3)$rate_m, risk_linkage(d, s1, m = 3)$rate_m)
  expect_identical(release_info(s2)$settings$rate, c(0.4, 0.15))
  # and a replay from the metadata reproduces a staged release exactly (p = 1)
  expect_gt(risk_replay(d, s2, p = 1, seed = 1)$by_p$rate, 0.5)
})

test_that("anonymise_adaptive handles tiny strata, constant and tied columns, and checks input", {
  d <- data.frame(a = c(1, 1, 1, 2, 5, 5), b = 3, g = c("x", "x", "x", "y", "y", "y"))
  r <- anonymise_adaptive(d, vars = c("a", "b"), strata = "g", k = 2, k_max = 3, check_identifiers = FALSE)
  expect_identical(r$b, rep(3, 6))
  expect_true(all(is.finite(r$a)))
  expect_true(release_info(r)$counts$max_k <= 3)
  one <- data.frame(a = c(1, 2), g = "x")
  expect_warning(anonymise_adaptive(one, vars = "a", strata = "g", k = 2), "All centroids of `a` are equal")
  expect_error(anonymise_adaptive(d, vars = "a", strata = "g", k = 4), "2 strata have fewer than k = 4 records:\n  g=x: 3 records")
  expect_error(anonymise_adaptive(d, vars = "a", strata = "g", k = 3, k_max = 2), "`k_max` must be")
  expect_error(anonymise_adaptive(d, vars = "a", strata = "g", m = -1), "`m` must be")
  expect_error(anonymise_adaptive(d, vars = "a", strata = "g", rate = c(0.2, 0.5)), "decreasing shares")
  expect_error(anonymise_adaptive(d, vars = "a", strata = "g", k = 2, k_max = c(3, 4)), "one per stage")
  expect_error(anonymise_adaptive(d, vars = "a", strata = "g", rate = 1.5), "`rate` must be")
  expect_error(anonymise_adaptive(d, vars = "a", strata = "g", w1 = 0), "`w1` must be")
  d$a[2] <- NA
  expect_error(anonymise_adaptive(d, vars = "a", strata = "g"), "missing values \\(`a`: 1\\)", class = "detanon_error_data")
})

test_that("risk_replay replays an adaptive release from its metadata", {
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  a <- anonymise_adaptive(d, vars = v, strata = st, k = 3, m = 1, check_identifiers = FALSE)
  r <- risk_replay(d, a, p = 1)
  key <- do.call(paste, a[c(v, st)])
  expect_equal(r$by_p$rate, mean(1 / table(key)[key]))
})

test_that("k table: the string \"NA\" and a missing stratum are different strata", {
  set.seed(7)
  d <- data.frame(g = rep(c("NA", NA, "b"), each = 8), x = stats::rnorm(24), y = stats::rnorm(24),
                  stringsAsFactors = FALSE)
  tab <- data.frame(g = c("NA", "b"), k = c(3L, 2L), stringsAsFactors = FALSE)
  # the missing stratum has no row: an error, not the "NA" row's k
  expect_error(anonymise_adaptive(d, vars = c("x", "y"), strata = "g", k = tab, m = 0, check_identifiers = FALSE),
               "no row for 1 stratum", class = "detanon_error")
  tab2 <- data.frame(g = c("NA", NA, "b"), k = c(3L, 8L, 2L), stringsAsFactors = FALSE)
  r <- anonymise_adaptive(d, vars = c("x", "y"), strata = "g", k = tab2, m = 0, format = "none",
                          check_identifiers = FALSE)
  # k = 8 in the stratum of the 8 missing values: one centroid, the stratum's mean
  miss <- is.na(d$g)
  expect_length(unique(r$x[miss]), 1L)
  expect_gt(length(unique(r$x[which(d$g == "NA")])), 1L)
})

test_that("anonymise_adaptive() answers Ctrl-C within a second during its rounds", {
  expect_interruptible(
    c("set.seed(1); n <- 5e5",
      "d <- data.frame(g = sample(2, n, TRUE), x1 = rnorm(n), x2 = rnorm(n), x3 = rnorm(n), x4 = rnorm(n))"),
    "anonymise_adaptive(d, vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g', k = 3, m = 2, check_identifiers = FALSE)",
    after = 2)
})
