# anonymise_adaptive(): the C rounds against a slow transcription in R.

# The algorithm written out: brute-force neighbours (ordered by squared distance, then
# coordinates), centroids summed in coordinate order, the rank and interval tests, the
# cheapest-first growth. Returns the centroids (z-scale, before step 5) and k per record.
ref_adaptive <- function(z, id, k0, k_max, m, target, xs = NULL, wr = NULL) {
  n <- nrow(z); d <- ncol(z)
  sizes <- tabulate(id)
  cap <- pmin(k_max, sizes[id])
  k <- pmin(k0, sizes[id])
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
  cen <- t(vapply(seq_len(n), centroid, numeric(d)))
  if (d == 1L) cen <- matrix(cen, n, 1L)
  repeat {
    st <- detanon:::col_stats(cen)
    if (any(!(st$sd > 0))) break
    rank <- cost <- numeric(n)
    flag <- logical(n)
    for (i in seq_len(n)) {
      q <- cen[i, ] / st$sd
      s <- members[[id[i]]]
      d2 <- numeric(length(s))
      for (j in seq_len(d)) d2 <- d2 + (q[j] - z[s, j])^2
      own <- d2[s == i]
      cost[i] <- own
      rank[i] <- if (own > 0) min(sum(d2 < own), m) else 0
      if (!is.null(xs)) {
        xm <- (cen[i, ] - st$mean) / st$sd
        flag[i] <- any(xm > xs[i, ] - wr[i] & xm < xs[i, ] + wr[i])
      }
    }
    flag[rank == 0] <- TRUE
    n_m <- sum(rank < m)
    need <- n_m - target - sum(rank == 0)
    cand <- rank > 0 & rank < m
    if (need > 0 && any(cand & k < cap)) {
      costs <- sort(cost[cand & k < cap])
      cut <- if (need >= length(costs)) Inf else costs[need]
      flag[cand & cost <= cut] <- TRUE
    }
    grow <- flag & k < cap
    if (!any(grow)) break
    k[grow] <- pmin(k[grow] + pmax(1L, k[grow] %/% 8L), cap[grow])
    for (i in which(grow)) cen[i, ] <- centroid(i)
  }
  list(centroids = cen, k = k)
}

adaptive_call <- function(z, id, k0, k_max, m, target, xs = NULL, wr = NULL, nthreads = 1L) {
  .Call(detanon:::C_ffi_adaptive_k, z, as.integer(order(id)), as.integer(c(0, cumsum(tabulate(id)))),
        as.integer(k0), as.integer(k_max), as.integer(m), as.double(target), xs, wr, as.integer(nthreads))
}

test_that("the adaptive kernel equals the R transcription on random and adversarial data", {
  for (seed in 1:12) {
    set.seed(seed)
    n <- sample(c(5, 30, 80, 150), 1L)
    d <- sample(1:3, 1L)
    z <- matrix(round(stats::rnorm(n * d), sample(c(1, 3, 8), 1L)), n, d)
    if (n > 20) z[1:10, ] <- z[11:20, ] # duplicated records
    id <- sample(seq_len(sample(1:3, 1L)), n, TRUE)
    small <- tabulate(id)[id] < 2
    id[small] <- id[which.max(tabulate(id)[id])] # no stratum of one record
    id <- match(id, sort(unique(id)))
    k0 <- sample(2:3, 1L); k_max <- k0 + sample(c(0:15, 40), 1L)
    m <- sample(1:3, 1L); target <- sample(c(0, floor(n / 5)), 1L)
    use_int <- seed %% 2 == 0
    xs <- if (use_int) z + matrix(stats::rnorm(n * d, sd = 0.01), n, d) else NULL
    wr <- if (use_int) stats::runif(n, 0, 0.05) else NULL
    got <- adaptive_call(z, id, k0, k_max, m, target, xs, wr, nthreads = sample(1:2, 1L))
    want <- ref_adaptive(z, id, k0, k_max, m, target, xs, wr)
    expect_identical(got[[2]], as.integer(want$k), info = paste("seed", seed))
    expect_equal(got[[1]], want$centroids, tolerance = 0, info = paste("seed", seed))
    expect_true(all(got[[2]] >= pmin(k0, tabulate(id)[id]) & got[[2]] <= pmin(k_max, tabulate(id)[id])))
  }
})

test_that("anonymise_adaptive: k = k_max is anonymise(), the release is deterministic and equivariant", {
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  fixed <- anonymise(d, k = 4, vars = v, strata = st, format = "none", check_identifiers = FALSE)
  same <- anonymise_adaptive(d, vars = v, strata = st, k = 4, k_max = 4, check_identifiers = FALSE)
  expect_equal(as.data.frame(same)[v], as.data.frame(fixed)[v], tolerance = 1e-12)
  a <- anonymise_adaptive(d, vars = v, strata = st, k = 2, k_max = 60, m = 3, rate = 0.14, w1 = 0.01,
                          check_identifiers = FALSE)
  b <- anonymise_adaptive(d, vars = v, strata = st, k = 2, k_max = 60, m = 3, rate = 0.14, w1 = 0.01,
                          nthreads = 2, check_identifiers = FALSE)
  expect_identical(a, b)
  p <- sample(nrow(d))
  c2 <- anonymise_adaptive(d[p, ], vars = v, strata = st, k = 2, k_max = 60, m = 3, rate = 0.14,
                           w1 = 0.01, check_identifiers = FALSE)
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
  expect_lte(l3$rate, 0.14)
  expect_lte(l1$n_linked, info$counts$n_capped)
  expect_lt(l1$rate, risk_linkage(d, fixed)$rate)
  # m = 1 grows only the nearest-linked records: the issue's prototype
  proto <- anonymise_adaptive(d, vars = v, strata = st, k = 3, k_max = 33, m = 1, check_identifiers = FALSE)
  expect_lte(risk_linkage(d, proto)$n_linked, release_info(proto)$counts$n_capped)
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
  expect_error(anonymise_adaptive(d, vars = "a", strata = "g", m = 0), "`m` must be")
  expect_error(anonymise_adaptive(d, vars = "a", strata = "g", rate = 1.5), "`rate` must be")
  expect_error(anonymise_adaptive(d, vars = "a", strata = "g", w1 = 0), "`w1` must be")
  d$a[2] <- NA
  expect_error(anonymise_adaptive(d, vars = "a", strata = "g"), "missing or infinite")
})

test_that("risk_replay replays an adaptive release from its metadata", {
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  a <- anonymise_adaptive(d, vars = v, strata = st, k = 3, m = 1, check_identifiers = FALSE)
  r <- risk_replay(d, a, p = 1)
  key <- do.call(paste, a[c(v, st)])
  expect_equal(r$by_p$rate, mean(1 / table(key)[key]))
})
