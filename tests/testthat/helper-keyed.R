# Inputs of the saved keyed releases (tests/testthat/fixtures/keyed-releases.rds, made by
# the keyed kernel before its rebuild for speed, detanon at commit 852db9f): the rebuilt
# kernel must give the same releases bit for bit. They are exact group means (noise = FALSE;
# the keyed noise of the default is tested in test-centroid_noise.R).
keyed_fixture_key <- "fixture-key-of-the-keyed-release-01"
keyed_fixture_calls <- function() {
  d <- titanic_paper()[-1]
  set.seed(20261126)
  n <- 1e4
  sim <- data.frame(
    g = factor(sample(c("a", "b", "c", "d"), n, replace = TRUE, prob = c(0.4, 0.3, 0.2, 0.1))),
    x1 = stats::rnorm(n), x2 = round(stats::rexp(n), 1), x3 = round(stats::runif(n, 20, 80))
  )
  list(
    titanic = function(nthreads = 1L) {
      anonymise_keyed(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 2,
                      key = keyed_fixture_key, size = 14, noise = FALSE, nthreads = nthreads)
    },
    titanic_keys = function(nthreads = 1L) {
      anonymise_keyed(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3,
                      key = keyed_fixture_key, size = 8, held = "Survived", format = "none",
                      noise = FALSE, nthreads = nthreads)
    },
    sim1e4 = function(nthreads = 1L) {
      anonymise_keyed(sim, vars = c("x1", "x2", "x3"), strata = "g", k = 3,
                      key = keyed_fixture_key, size = 10, format = "none", check_identifiers = FALSE,
                      noise = FALSE, nthreads = nthreads)
    }
  )
}

# The plain keyed k-means in R, the slow reference of keyed_kmeans() (src/keyed.c): every
# point against every centre, no bounds. The keyed uniforms come from the kernel
# (ffi_keyed_uniforms, checked against SipHash's published vectors in test-keyed.R); the
# seeding, the Lloyd iterations, the merge of small groups and the choice among restarts
# are written out here. Sums are taken term by term in the kernel's order (sum() and
# rowSums() add in long double, which would change the last bits): squared distances
# coordinate after coordinate, centres and the SSE point after point.
keyed_kmeans_reference <- function(z, cc, kmin, restarts, maxit, secret) {
  n <- nrow(z)
  d <- ncol(z)
  ordered_sum <- function(v) Reduce(`+`, v, 0)
  sqdist <- function(p) { # of every point to the point p
    s <- 0
    for (j in seq_len(d)) s <- s + (z[, j] - p[j])^2
    s
  }
  centres <- function(group) {
    cen <- matrix(0, cc, d)
    for (g in seq_len(cc)) {
      idx <- which(group == g)
      if (length(idx)) cen[g, ] <- vapply(seq_len(d), function(j) ordered_sum(z[idx, j]) / length(idx), 0)
    }
    cen
  }
  sse_of <- function(group, cen) ordered_sum(vapply(seq_len(n), function(i) ordered_sum((z[i, ] - cen[group[i], ])^2), 0))
  if (cc == 1L) {
    group <- rep(1L, n)
    return(list(group = group, sse = sse_of(group, centres(group))))
  }
  best <- NULL
  for (r in seq_len(restarts) - 1L) {
    # k-means++ seeds by the exponential race: the smallest -log(u) / D2 (the first: -log(u))
    U <- test_call("keyed_uniforms", z, r, secret, cc)
    d2 <- rep(Inf, n)
    cen <- matrix(0, cc, d)
    for (s in seq_len(cc)) {
      e <- -log(U[, s + 1L])
      key <- if (s == 1L) e else e / d2
      key[!(d2 > 0)] <- Inf
      if (!any(key < Inf)) return(list(group = rep(NA_integer_, n), sse = -1))
      cen[s, ] <- z[which.min(key), ]
      d2 <- pmin(d2, sqdist(cen[s, ]))
    }
    # Lloyd: every point to its nearest centre (ties: the lowest), then the means
    group <- rep(0L, n)
    size <- rep(0L, cc)
    for (it in seq_len(maxit) - 1L) {
      bd <- rep(Inf, n)
      bg <- rep(1L, n)
      for (g in seq_len(cc)) {
        if (it > 0L && size[g] == 0L) next
        t <- sqdist(cen[g, ])
        nearer <- t < bd
        bd[nearer] <- t[nearer]
        bg[nearer] <- g
      }
      if (identical(bg, group)) break
      group <- bg
      cen <- centres(group)
      size <- tabulate(group, cc)
    }
    cen <- centres(group)
    size <- tabulate(group, cc)
    # groups below kmin, the smallest first (ties: the lowest), into the group of the
    # nearest centre (ties: the lowest)
    repeat {
      live <- which(size > 0L)
      small <- live[size[live] < kmin]
      if (!length(small) || length(live) < 2L) break
      sm <- small[which.min(size[small])]
      others <- setdiff(live, sm)
      to <- others[which.min(vapply(others, function(g) ordered_sum((cen[g, ] - cen[sm, ])^2), 0))]
      group[group == sm] <- to
      cen <- centres(group)
      size <- tabulate(group, cc)
    }
    sse <- sse_of(group, cen)
    # the lowest SSE, ties to the first restart
    if (is.null(best) || sse < best$sse) best <- list(group = group, sse = sse)
  }
  best$group <- match(best$group, unique(best$group))
  best
}

# The keyed partition of anonymise_keyed() (steps 3 and 4 of its help) for strata of at most
# 1000 records, on keyed_kmeans_reference(): each stratum's SSE on its grid of counts
# (keyed_grid()), interpolated on the log-log scale, the budget of round(n / size) groups
# handed out greedily by the largest drops, each stratum partitioned with its count.
# Returns the group of every row.
keyed_groups_reference <- function(z, id, k, size, secret) {
  strata <- sort(unique(id))
  parts <- lapply(strata, function(s) {
    r <- which(id == s)
    r <- r[do.call(order, c(unname(as.data.frame(z[r, , drop = FALSE])), method = "radix"))]
    zs <- z[r, , drop = FALSE]
    grid <- asNamespace("detanon")$keyed_grid(length(r) / size, max(1L, min(length(r) %/% k, sum(!duplicated(zs)))))
    sse <- vapply(grid, function(cc) keyed_kmeans_reference(zs, cc, k, 10L, 100L, secret)$sse, 0)
    grid <- grid[sse >= 0]
    sse <- cummin(sse[sse >= 0])
    # the SSE of every count up to the largest, log SSE linear in log count between the grid's
    eps <- 1e-12 * sse[1L] + 1e-300
    curve <- if (length(grid) == 1L) sse else
      exp(stats::approx(log(grid), log(sse + eps), xout = log(seq_len(max(grid))))$y) - eps
    list(rows = r, zs = zs, drops = if (max(grid) > 1L) pmax(cummin(-diff(curve)), 0) else numeric())
  })
  # one group per stratum, then one more at a time where the drop is largest (ties: the
  # first stratum, then the smaller count)
  count <- rep(1L, length(parts))
  for (b in seq_len(max(0, round(nrow(z) / size) - length(parts)))) {
    next_drop <- vapply(seq_along(parts), function(i) {
      if (count[i] <= length(parts[[i]]$drops)) parts[[i]]$drops[count[i]] else -Inf
    }, 0)
    if (!any(next_drop > 0)) break
    i <- which.max(next_drop)
    count[i] <- count[i] + 1L
  }
  group <- integer(nrow(z))
  last <- 0L
  for (i in seq_along(parts)) {
    g <- keyed_kmeans_reference(parts[[i]]$zs, count[i], k, 10L, 100L, secret)$group
    group[parts[[i]]$rows] <- g + last
    last <- last + max(g)
  }
  group
}
