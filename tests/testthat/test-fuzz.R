# Direct fuzzing of the native entry points.
#
# Every entry point of src/init.c is called with random shapes and values of the kind the R
# layer passes (see the comments of each glue file), including boundary ones: n = 0 and 1,
# zero-size strata, k = 1 and k = stratum size, duplicated points, huge and tiny magnitudes.
# Results are checked against slow R references (or invariants where a reference would be
# too slow). The budget is a few seconds by default; for a long run set e.g.
#   DETANON_FUZZ_SECONDS=600 Rscript -e 'testthat::test_file("tests/testthat/test-fuzz.R")'
# (the budget is split over the entry points). A failure names the entry point and the seed
# of the failing case, which reproduces it.

fz_budget <- function() {
  s <- suppressWarnings(as.numeric(Sys.getenv("DETANON_FUZZ_SECONDS", "")))
  if (is.na(s) || s <= 0) 4 else s
}
fz_n_entry <- 8 # fuzzed groups below; each gets budget / fz_n_entry seconds

# Run `one(seed)` on seeds 1, 2, ... until the time share is used (at least `min_iter`
# cases). `one` returns a character vector of problems (empty when all is well).
fz_run <- function(name, one, min_iter = 3L) {
  old_seed <- if (exists(".Random.seed", globalenv())) get(".Random.seed", globalenv()) else NULL
  on.exit(if (is.null(old_seed)) rm(".Random.seed", envir = globalenv())
          else assign(".Random.seed", old_seed, envir = globalenv()))
  share <- fz_budget() / fz_n_entry
  start <- proc.time()[["elapsed"]]
  problems <- character()
  iter <- 0L
  while (iter < min_iter || proc.time()[["elapsed"]] - start < share) {
    iter <- iter + 1L
    set.seed(iter)
    p <- one(iter)
    if (length(p)) problems <- c(problems, paste0(name, " seed ", iter, ": ", p))
    if (length(problems) >= 5L) break
  }
  expect_identical(problems, character())
  iter
}

# A random value scale: ordinary, huge or tiny magnitudes (squares stay finite).
fz_scale <- function() sample(c(1, 1, 1, 1e-150, 1e150, 1e-300), 1L)

# A random n x d matrix with ties, duplicated rows and constant columns mixed in.
fz_matrix <- function(n, d) {
  x <- matrix(stats::rnorm(n * d), n, d) * fz_scale()
  if (n > 1L && d > 0L) {
    kind <- sample(4L, 1L)
    if (kind == 1L) x <- round(x / max(abs(x), 1e-300) * 3) # heavy ties, small grid
    if (kind == 2L) x[sample(n, n %/% 2L), ] <- x[rep(1L, n %/% 2L), ] # duplicated points
    if (kind == 3L) x[, sample(d, 1L)] <- x[1L, 1L] # a constant column
  }
  x
}

# Random stratum sizes summing to n, possibly with zero-size strata (allowed by the glue).
fz_strata <- function(n, min_size = 0L, zeros = TRUE) {
  n_strata <- sample(1:5, 1L)
  sizes <- rep(min_size, n_strata)
  rest <- n - sum(sizes)
  if (rest < 0) return(NULL)
  if (rest > 0) sizes <- sizes + tabulate(sample(n_strata, rest, replace = TRUE), n_strata)
  if (zeros && min_size == 0L && stats::runif(1) < 0.3) sizes <- append(sizes, 0L, sample(0:n_strata, 1L))
  sizes
}

# Rows grouped by stratum as the R layer does: a random assignment, then order().
fz_groups <- function(sizes) {
  n <- sum(sizes)
  id <- rep(seq_along(sizes), sizes) # zero-size strata get no rows
  id <- id[sample.int(length(id))] # (not sample(id): a single id m would mean 1:m)
  list(id = id, order = order(id, method = "radix"), offsets = c(0, cumsum(sizes)))
}

# Squared Euclidean distances from q to the rows of x, summed left to right as in C.
fz_d2 <- function(x, q) {
  s <- numeric(nrow(x))
  for (j in seq_len(ncol(x))) s <- s + (x[, j] - q[j])^2
  s
}

test_that("ffi_knn_index and ffi_knn_centroids: exact k nearest neighbours on random strata", {
  iters <- fz_run("knn", function(seed) {
    n <- sample(c(0L, 1L, 2L, sample(3:60, 1L)), 1L, prob = c(0.05, 0.1, 0.1, 0.75))
    d <- sample(c(0L, 1L, 2L, 3L, 5L), 1L, prob = c(0.05, 0.3, 0.3, 0.2, 0.15))
    sizes <- fz_strata(n)
    k <- if (n == 0L) 1L else sample(c(1L, min(sizes[sizes > 0]), sample(min(sizes[sizes > 0]), 1L)), 1L)
    z <- fz_matrix(n, d)
    g <- fz_groups(sizes)
    nt <- sample(1:2, 1L)
    idx <- test_call("knn_index", z, g$order, g$offsets, k, nt)
    cen <- test_call("knn_centroids", z, g$order, g$offsets, k, nt)
    p <- character()
    if (!identical(dim(idx), c(n, k))) return("index has the wrong shape")
    if (!identical(dim(cen), c(n, d))) return("centroids have the wrong shape")
    if (n == 0L) return(p)
    if (anyNA(idx) || any(idx < 1L | idx > n)) return("index out of range")
    if (!all(g$id[idx] == rep(g$id, k))) p <- c(p, "neighbour outside its stratum")
    if (any(apply(idx, 1L, anyDuplicated) > 0L)) p <- c(p, "a neighbour listed twice")
    if (d == 0L) return(p)
    if (!all(is.finite(cen))) p <- c(p, "non-finite centroid")
    want <- ref_knn_index(z, g$id, k)
    # duplicated points may be returned in any order: compare coordinates, not row ids
    for (j in seq_len(d)) {
      if (!identical(matrix(z[idx, j], n), matrix(z[want, j], n))) {
        p <- c(p, sprintf("neighbours differ from the reference (column %d)", j))
        break
      }
      ref_c <- rowMeans(matrix(z[want, j], n))
      if (!isTRUE(all.equal(cen[, j], ref_c, tolerance = 1e-12, scale = max(abs(z[, j]), 1e-300)))) {
        p <- c(p, sprintf("centroids differ from the reference (column %d)", j))
      }
    }
    if (!identical(test_call("knn_centroids", z, g$order, g$offsets, k, 3L - nt), cen)) {
      p <- c(p, "centroids depend on the thread count")
    }
    p
  })
  expect_gte(iters, 3L)
})

test_that("ffi_knn_centroids: large strata (the parallel-query path) agree with the index", {
  fz_run("knn-large", function(seed) {
    n <- sample(4096:6000, 1L)
    d <- sample(1:3, 1L)
    z <- fz_matrix(n, d)
    sizes <- if (stats::runif(1) < 0.5) n else c(4096L, n - 4096L)
    g <- fz_groups(sizes)
    k <- sample(c(1L, 2L, 5L), 1L)
    idx <- test_call("knn_index", z, g$order, g$offsets, k, 2L)
    cen1 <- test_call("knn_centroids", z, g$order, g$offsets, k, 1L)
    cen2 <- test_call("knn_centroids", z, g$order, g$offsets, k, 2L)
    p <- character()
    if (!identical(cen1, cen2)) p <- c(p, "centroids depend on the thread count")
    if (!all(g$id[idx] == rep(g$id, k))) p <- c(p, "neighbour outside its stratum")
    # the record itself is always among its k points, at distance 0
    self_d2 <- vapply(seq_len(n), function(i) fz_d2(z[idx[i, 1L], , drop = FALSE], z[i, ]), 0)
    if (any(self_d2 != 0)) p <- c(p, "first neighbour is not at distance 0")
    for (j in seq_len(d)) {
      if (!isTRUE(all.equal(cen1[, j], rowMeans(matrix(z[idx, j], n)), tolerance = 1e-12))) {
        p <- c(p, "centroids disagree with the neighbour index")
      }
    }
    p
  }, min_iter = 1L)
})

# The invariants of a built tree, checked in R: every node's box is the tight box of its
# points; a split node halves its range at the median of its widest coordinate (left keys
# <= right keys); leaves hold at most leaf_size points; the rows are a permutation.
kd_tree_problems <- function(z, leaf_size) {
  t <- test_call("kd_tree", z, as.integer(leaf_size))
  n <- nrow(z)
  d <- ncol(z)
  if (!identical(sort(t$row), as.numeric(seq_len(n)))) return("rows are not a permutation")
  p <- character()
  for (v in seq_len(nrow(t$node))) {
    b <- t$node[v, 1L]
    e <- t$node[v, 2L]
    pts <- z[t$row[(b + 1):e], , drop = FALSE]
    if (!identical(unname(t$box[v, ]), unname(c(apply(pts, 2L, min), apply(pts, 2L, max))))) {
      p <- c(p, sprintf("node %d: box is not tight", v))
    }
    if (t$node[v, 3L] < 0) {
      if (e - b > leaf_size) p <- c(p, sprintf("leaf %d holds %d points", v, e - b))
      next
    }
    spread <- apply(pts, 2L, max) - apply(pts, 2L, min)
    dim <- which.max(spread)
    mid <- b + (e - b) %/% 2
    left <- t$node[t$node[v, 3L] + 1L, 1:2]
    right <- t$node[t$node[v, 4L] + 1L, 1:2]
    if (!identical(unname(c(left, right)), c(b, mid, mid, e))) p <- c(p, sprintf("node %d: not halved", v))
    if (max(pts[seq_len(mid - b), dim]) > min(pts[-seq_len(mid - b), dim])) {
      p <- c(p, sprintf("node %d: not split at the median of coordinate %d", v, dim))
    }
  }
  utils::head(p, 3L)
}

test_that("kd-tree build: tight boxes and median splits, on adversarial orders and ties", {
  # above 600 points per node the build selects medians by Floyd-Rivest sampling, whose
  # sample is a block of positions: sorted, reversed and patterned inputs are its worst
  # cases, and long runs of equal keys those of its partition
  n <- 1500L
  t <- seq_len(n)
  set.seed(3)
  layouts <- list(
    sorted = cbind(t, sin(t)),
    reversed = cbind(rev(t), cos(t)),
    organ_pipe = cbind(c(seq_len(n / 2), rev(seq_len(n / 2))), t %% 7),
    sawtooth = cbind(t %% 50, t %/% 50),
    two_values = cbind(rep(0:1, length.out = n), t %% 3),
    one_outlier = cbind(c(rep(1, n - 1L), 1e6), t %% 11),
    imputed_run = cbind(c(rep(0.5, n * 0.8), stats::runif(n * 0.2)), t / n),
    random = matrix(stats::rnorm(3 * n), n, 3)
  )
  for (name in names(layouts)) {
    z <- layouts[[name]]
    storage.mode(z) <- "double"
    expect_identical(kd_tree_problems(z, 16L), character(), info = name)
    # and the search on it is exact
    got <- knn_index(z, rep(1L, n), 4L)
    want <- ref_knn_index(z, rep(1L, n), 4L)
    for (j in seq_len(ncol(z))) {
      expect_identical(matrix(z[got, j], n), matrix(z[want, j], n), info = name)
    }
  }
  expect_identical(kd_tree_problems(matrix(c(1, 2), 1L), 16L), character())
  expect_identical(kd_tree_problems(matrix(rep(7, 40), 20L), 4L), character())
})

test_that("ffi_col_stats: order-free means and SDs, NaN/Inf/NA payloads do not crash", {
  fz_run("col_stats", function(seed) {
    n <- sample(c(0L, 1L, 2L, sample(3:200, 1L)), 1L)
    d <- sample(0:4, 1L)
    x <- fz_matrix(n, d)
    if (n > 0L && d > 0L && stats::runif(1) < 0.3) {
      x[sample(length(x), 1L)] <- sample(list(NaN, NA_real_, Inf, -Inf), 1L)[[1L]]
    }
    s <- .Call(detanon:::C_ffi_col_stats, x, 1L)
    if (!identical(dim(s), c(2L, d))) return("wrong shape")
    p <- character()
    if (n >= 2L && d > 0L && !identical(s, .Call(detanon:::C_ffi_col_stats, x[sample(n), , drop = FALSE], 2L))) {
      p <- c(p, "depends on the row order")
    }
    for (j in seq_len(d)) {
      v <- x[, j]
      if (all(is.finite(v)) && n >= 2L) {
        if (!isTRUE(all.equal(s[1L, j], mean(v), tolerance = 1e-12, scale = max(abs(v))))) p <- c(p, "wrong mean")
        if (!isTRUE(all.equal(s[2L, j], stats::sd(v), tolerance = 1e-10, scale = max(abs(v))))) p <- c(p, "wrong sd")
      } else if (any(!is.finite(v)) && is.finite(s[1L, j])) {
        p <- c(p, "finite mean of a column with a non-finite value")
      }
      if (n == 1L && !is.na(s[2L, j])) p <- c(p, "sd of one value is not NA")
    }
    p
  })
})

test_that("ffi_col_stats: means are exact sums rounded once (cancellation, near overflow, subnormals)", {
  mean_of <- function(x) .Call(detanon:::C_ffi_col_stats, matrix(x), 1L)[1L, 1L]
  big <- .Machine$double.xmax
  expect_identical(mean_of(c(1, 1e100, 1, -1e100)), 0.5) # mean() gives 0 here
  expect_identical(mean_of(c(big, big, -big)), big / 3)
  expect_identical(mean_of(c(-big, -big, big)), -big / 3)
  expect_identical(mean_of(rep(2^-1074, 4)), 2^-1074)
  # exact: 4 * 2^-1074 / 6 rounds up to 2^-1074; summing left to right loses the first term
  expect_identical(mean_of(c(2^-1074, 1, -1, 2^-1074, 2^-1074, 2^-1074)), 2^-1074)
  set.seed(7)
  for (i in 1:20) {
    v <- stats::runif(100) * 2^sample(-600:600, 100, replace = TRUE)
    x <- sample(c(v, -v, 3)) # the exact sum is 3
    expect_identical(mean_of(x), 3 / 201)
  }
  # long columns take the fixed-point path with delayed carries: still exact
  v <- stats::runif(5000) * 2^sample(-40:40, 5000, replace = TRUE)
  expect_identical(mean_of(sample(c(v, -v, 1, rep(c(2^60, -2^60), 3000)))), 1 / 16001)
})

test_that("ffi_rmd_count: neighbour counts within w2 equal brute force", {
  fz_run("rmd_count", function(seed) {
    n <- sample(c(1L, 2L, sample(3:80, 1L)), 1L)
    d <- sample(1:4, 1L)
    z <- fz_matrix(n, d)
    if (stats::runif(1) < 0.5) z <- z / max(abs(z), 1e-300) # standardised-like scale
    nq <- sample(0:n, 1L)
    q <- sample(n, nq, replace = stats::runif(1) < 0.3) # R passes distinct rows; repeats are allowed
    w <- sample(c(0, 0.05, stats::runif(1), 10), 1L)
    m <- sample(c(1L, 2L, 5L, .Machine$integer.max), 1L)
    got <- .Call(detanon:::C_ffi_rmd_count, z, as.integer(q), w, m, sample(1:2, 1L), FALSE)
    want <- vapply(q, function(i) {
      dd <- sqrt(fz_d2(z, z[i, ]))
      as.integer(min(m, sum(dd[-i] <= w)))
    }, 0L)
    if (!identical(got, want)) return("counts differ from brute force")
    character()
  })
})

test_that("ffi_rmd_count: w equal to a distance, or one ulp either side, counts as dist() does", {
  # the count compares sqrt(d2) <= w; the kernel turns w into the largest d2 that passes
  set.seed(5)
  z <- matrix(stats::rnorm(60 * 3), 60, 3)
  for (pair in 1:40) {
    ij <- sample(60, 2L)
    base <- sqrt(sum((z[ij[1], ] - z[ij[2], ])^2))
    for (w in c(base, base * (1 + .Machine$double.eps), base * (1 - .Machine$double.eps / 2))) {
      got <- .Call(detanon:::C_ffi_rmd_count, z, 1:60, w, .Machine$integer.max, 1L, FALSE)
      want <- vapply(1:60, function(i) sum(sqrt(fz_d2(z, z[i, ]))[-i] <= w), 0L)
      expect_identical(got, want)
    }
  }
})

test_that("ffi_index_rank: ranks of the own point (strictly nearer, at most as near) equal brute force", {
  fz_run("link_rank", function(seed) {
    n <- sample(c(1L, 2L, sample(3:60, 1L)), 1L)
    d <- sample(1:3, 1L)
    zt <- fz_matrix(n, d)
    move <- sample(c(0, 0.01, 0.5, 3), 1L)
    zq <- zt + matrix(stats::rnorm(n * d), n, d) * move * max(abs(zt), 1e-300)
    if (stats::runif(1) < 0.3) zq <- zt[sample(n), , drop = FALSE] # query rows swapped
    if (stats::runif(1) < 0.3) zq <- zt # every query on its own point
    sizes <- fz_strata(n, min_size = 1L, zeros = FALSE)
    if (is.null(sizes)) sizes <- n
    g <- fz_groups(sizes)
    want_rows <- stats::runif(n) < sample(c(0.5, 1), 1L)
    cap <- sample(c(0, 1, 3, 1e9), 1L)
    idx <- .Call(detanon:::C_ffi_rank_index, zt, as.integer(g$order), as.integer(g$offsets))
    got <- .Call(detanon:::C_ffi_index_rank, idx, zq, want_rows, as.double(cap), sample(1:2, 1L), FALSE, FALSE)
    # the index is reusable: a second query (other points) answers as a fresh index does
    zq2 <- zq[rev(seq_len(n)), , drop = FALSE]
    again <- .Call(detanon:::C_ffi_index_rank, idx, zq2, want_rows, as.double(cap), 1L, FALSE, FALSE)
    fresh <- .Call(detanon:::C_ffi_index_rank,
                   .Call(detanon:::C_ffi_rank_index, zt, as.integer(g$order), as.integer(g$offsets)),
                   zq2, want_rows, as.double(cap), 1L, FALSE, FALSE)
    want <- matrix(NA_real_, n, 2L)
    for (i in which(want_rows)) {
      s <- which(g$id == g$id[i])
      dd <- fz_d2(zt[s, , drop = FALSE], zq[i, ])
      ds <- fz_d2(zt[i, , drop = FALSE], zq[i, ])
      want[i, ] <- c(min(sum(dd < ds), cap), sum(dd <= ds))
    }
    p <- character()
    if (!identical(dim(got), c(n, 2L))) return("wrong shape")
    if (!identical(is.na(got[, 1]), !want_rows)) p <- c(p, "NA pattern differs from the queried rows")
    if (!isTRUE(all.equal(got, want))) p <- c(p, "ranks differ from brute force")
    if (!identical(again, fresh)) p <- c(p, "a reused index answers differently")
    # lazy (the battery's): the same strict count; the other only while it is below cap
    lazy <- .Call(detanon:::C_ffi_index_rank, idx, zq, want_rows, as.double(cap), 1L, FALSE, TRUE)
    lazy_want <- want
    lazy_want[!is.na(want[, 1]) & want[, 1] >= cap, 2L] <- NA_real_
    if (!isTRUE(all.equal(lazy, lazy_want))) p <- c(p, "lazy ranks differ from brute force")
    p
  })
})

test_that("ffi_mondrian: classes equal the R reference, sizes >= k, never across strata", {
  fz_run("mondrian", function(seed) {
    d <- sample(0:3, 1L)
    k <- sample(c(1L, 2L, 3L, 7L), 1L)
    n <- sample(c(0L, k, sample(k:120, 1L)), 1L)
    sizes <- fz_strata(n, min_size = k)
    if (is.null(sizes)) sizes <- n
    g <- fz_groups(sizes)
    x <- fz_matrix(n, d)
    rng <- if (d) apply(x, 2L, function(v) if (n) diff(range(v)) else 0) else numeric()
    inv <- as.double(ifelse(rng > 0, 1 / rng, 0))
    res <- .Call(detanon:::C_ffi_mondrian, x, g$order, g$offsets, k, inv, FALSE)
    p <- character()
    if (length(res$class) != n || sum(res$size) != n) return("classes do not cover the rows")
    if (n == 0L) return(p)
    if (any(res$size < k)) p <- c(p, "a class smaller than k")
    if (any(tapply(g$id, res$class, function(v) length(unique(v))) != 1L)) p <- c(p, "a class spans strata")
    want <- integer(n)
    id <- 0L
    for (s in seq_along(sizes)) {
      if (sizes[s] == 0L) next
      rows <- g$order[(g$offsets[s] + 1):g$offsets[s + 1]]
      for (r in ref_mondrian(if (d) x else matrix(0, n, 1L), k, rows, if (d) inv else 0)) {
        id <- id + 1L
        want[r] <- id
      }
    }
    if (!identical(res$class, want)) p <- c(p, "classes differ from ref_mondrian()")
    for (j in seq_len(d)) {
      if (!identical(res$lo[, j], as.vector(tapply(x[, j], res$class, min))) ||
          !identical(res$hi[, j], as.vector(tapply(x[, j], res$class, max)))) {
        p <- c(p, "wrong class bounds")
      }
    }
    p
  })
})

test_that("ffi_rlaplace and ffi_keps_noise: shapes, diameters, reproducible draws", {
  fz_run("noise", function(seed) {
    p <- character()
    nl <- sample(c(0, 1, 1000), 1L)
    b <- sample(c(0, 1e-300, 1, 1e150), 1L)
    l <- test_call("rlaplace", nl, b)
    if (length(l) != nl || any(!is.finite(l))) p <- c(p, "rlaplace: wrong length or non-finite draw")
    if (b == 0 && any(l != 0)) p <- c(p, "rlaplace: b = 0 must give zeros")

    n <- sample(c(0L, 1L, sample(2:100, 1L)), 1L)
    pv <- sample(1:3, 1L)
    y <- fz_matrix(n, pv)
    n_classes <- if (n) sample(seq_len(n), 1L) else 0L
    cls <- if (n) sample(c(seq_len(n_classes), sample(n_classes, n - n_classes, TRUE))) else integer()
    eps <- stats::runif(pv, 0.1, 20)
    set.seed(seed)
    a <- .Call(detanon:::C_ffi_keps_noise, y, cls, n_classes, eps)
    set.seed(seed)
    b2 <- .Call(detanon:::C_ffi_keps_noise, y, cls, n_classes, eps)
    if (!identical(a, b2)) p <- c(p, "keps_noise: not reproducible under set.seed()")
    if (!identical(dim(a$y), c(n, pv)) || !identical(dim(a$diam), c(n_classes, pv))) {
      return(c(p, "keps_noise: wrong shapes"))
    }
    if (n == 0L) return(p)
    want <- vapply(seq_len(pv), function(j) as.vector(tapply(y[, j], factor(cls, seq_len(n_classes)),
                                                             function(v) max(v) - min(v))), numeric(n_classes))
    if (!identical(a$diam, matrix(want, n_classes, pv))) p <- c(p, "keps_noise: wrong diameters")
    if (any(!is.finite(a$y))) p <- c(p, "keps_noise: non-finite noisy value")
    flat <- a$diam[cls, , drop = FALSE] == 0
    if (any(a$y[flat] != y[flat])) p <- c(p, "keps_noise: noise in a class of zero diameter")
    p
  })
})

test_that("ffi_keps_link and ffi_keps_confident: per-class counts equal brute force", {
  fz_run("keps_link", function(seed) {
    n <- sample(c(0L, 1L, sample(2:70, 1L)), 1L)
    pv <- sample(1:3, 1L)
    o <- fz_matrix(n, pv)
    q <- o + matrix(stats::rnorm(n * pv), n, pv) * sample(c(0, 0.1, 1), 1L) * max(abs(o), 1e-300)
    n_classes <- if (n) sample(seq_len(n), 1L) else 0L
    cls <- if (n) sample(c(seq_len(n_classes), sample(n_classes, n - n_classes, TRUE))) else integer()
    grp <- list(order = order(cls, method = "radix"), offsets = c(0, cumsum(tabulate(cls, n_classes))))
    sc <- matrix(stats::runif(max(n_classes, 0L) * pv, 0.5, 2) * max(abs(o), 1e-300), n_classes, pv)
    r <- matrix(stats::runif(max(n_classes, 0L) * pv, 0, 1) * max(abs(o), 1e-300), n_classes, pv)
    cap <- sample(c(1L, 2L, 3L, 1000L), 1L)
    linked <- .Call(detanon:::C_ffi_keps_link, o, q, grp$order, grp$offsets, sc, FALSE)
    conf <- .Call(detanon:::C_ffi_keps_confident, o, q, grp$order, grp$offsets, r, cap, FALSE)
    if (length(linked) != n || length(conf) != n) return("wrong lengths")
    if (n == 0L) return(character())
    want_l <- integer(n)
    want_c <- integer(n)
    for (i in seq_len(n)) {
      s <- which(cls == cls[i])
      c_ <- cls[i]
      dist <- function(j) {
        acc <- 0
        for (v in seq_len(pv)) acc <- acc + ((q[i, v] - o[j, v]) / sc[c_, v])^2
        acc
      }
      D <- dist(i)
      want_l[i] <- as.integer(!any(vapply(setdiff(s, i), dist, 0) < D))
      inside <- vapply(s, function(j) {
        (q[i, 1L] - o[j, 1L] <= r[c_, 1L]) && (o[j, 1L] - q[i, 1L] <= r[c_, 1L]) &&
          all(abs(q[i, -1L] - o[j, -1L]) <= r[c_, -1L])
      }, TRUE)
      want_c[i] <- as.integer(min(cap, sum(inside)))
    }
    p <- character()
    if (!identical(linked, want_l)) p <- c(p, "keps_link differs from brute force")
    if (!identical(conf, want_c)) p <- c(p, "keps_confident differs from brute force")
    p
  })
})

test_that("ffi_knn_* reject input that breaks the R layer's contract instead of crashing", {
  z <- matrix(as.double(1:6), 6)
  knn <- function(order = 1:6, offsets = c(0, 6), k = 2L) {
    test_call("knn_index", z, order, offsets, k, 1L)
  }
  expect_identical(dim(knn()), c(6L, 2L))
  expect_error(knn(k = 7L), "stratum smaller than k")
  expect_error(knn(offsets = c(0, 1, 6)), "stratum smaller than k")
  expect_error(knn(k = 0L), "bad input")
  expect_error(knn(order = c(1:5, 7L)), "row out of range")
  expect_error(knn(order = 1:5), "bad input")
  expect_error(knn(offsets = c(0, 5)), "bad offsets")
  expect_error(knn(offsets = c(0, 4, 3, 6)), "stratum smaller than k")
})

test_that("ffi_anonymise rejects input that breaks the R layer's contract instead of crashing", {
  x <- cbind(as.double(1:6), c(2, 2, 2, 2, 2, 2))
  mask <- function(id = rep(1L, 6), k = 2L, x_ = x, sc = detanon:::column_scale(x_)) {
    .Call(detanon:::C_ffi_anonymise, x_, id, k, sc$mean, sc$sd, 1L, FALSE)
  }
  res <- mask()
  expect_named(res, c("columns", "scale"))
  expect_length(res$columns, 2L)
  expect_identical(res$columns[[2L]], x[, 2]) # SD 0: copied
  expect_length(res$scale, 1L)
  # empty strata (ids with no rows) are allowed
  gaps <- mask(id = c(1L, 1L, 1L, 3L, 3L, 3L))
  expect_identical(gaps$columns[[2L]], x[, 2])
  expect_length(gaps$scale, 1L)
  expect_error(mask(k = 7L), "stratum smaller than k")
  expect_error(mask(id = c(1L, 1L, 2L, 2L, 2L, 3L)), "stratum smaller than k")
  expect_error(mask(id = c(rep(1L, 5), 0L)), "stratum id out of range")
  expect_error(mask(id = c(rep(1L, 5), 7L)), "stratum id out of range")
  expect_error(mask(id = rep(1L, 5)), "bad input")
  expect_error(mask(id = as.double(rep(1, 6))), "bad input types")
  # a scale of the wrong length or not finite (R refuses such a column first)
  expect_error(mask(sc = list(mean = c(0, 0, 0), sd = c(1, 1, 1))), "bad input")
  expect_error(mask(sc = list(mean = c(0, 0), sd = c(Inf, 1))), "non-finite column scale")
  expect_error(mask(sc = list(mean = c(NA, 0), sd = c(1, 1))), "non-finite column scale")
  expect_error(mask(sc = list(mean = 1:2, sd = c(1, 1))), "bad input types")
})

test_that("the fuzz budget can be raised from the environment", {
  old <- Sys.getenv("DETANON_FUZZ_SECONDS", unset = NA)
  on.exit(if (is.na(old)) Sys.unsetenv("DETANON_FUZZ_SECONDS") else Sys.setenv(DETANON_FUZZ_SECONDS = old))
  Sys.setenv(DETANON_FUZZ_SECONDS = "600")
  expect_identical(fz_budget(), 600)
  Sys.setenv(DETANON_FUZZ_SECONDS = "nonsense")
  expect_identical(fz_budget(), 4)
})

test_that("partitioned kernels: ffi_mask_strata, ffi_acc_*, ffi_radix_* on random shapes", {
  fz_run("partitioned", function(seed) {
    p <- character()
    n <- sample(c(0L, 1L, 2L, 5L, 40L), 1L)
    d <- sample(1:3, 1L)
    x <- fz_matrix(n, d)
    # the accumulators: any split of the rows gives col_stats()'s means and SDs
    acc <- .Call(detanon:::C_ffi_acc_add, NULL, matrix(0, 0L, d), NULL)
    cut <- if (n) sort(sample(0:n, 1L)) else 0L
    for (part in list(seq_len(cut), setdiff(seq_len(n), seq_len(cut)))) {
      acc <- .Call(detanon:::C_ffi_acc_merge, acc, .Call(detanon:::C_ffi_acc_add, NULL, x[part, , drop = FALSE], NULL),
                   NULL, NULL)
    }
    if (n >= 2L) {
      ref <- .Call(detanon:::C_ffi_col_stats, x, 1L)
      m <- .Call(detanon:::C_ffi_acc_round, acc, integer(d)) / n
      a2 <- .Call(detanon:::C_ffi_acc_add, NULL, x, m)
      s <- sqrt(.Call(detanon:::C_ffi_acc_round, a2, integer(d)) / (n - 1))
      if (!identical(m, ref[1L, ]) || !identical(s, ref[2L, ])) p <- c(p, "accumulator")
      # the radix select: every order statistic of column 1
      r <- sample(n, 1L)
      got <- detanon:::radix_select(function(visit) visit(list(x[, 1L])), list(r))[[1L]]
      if (!isTRUE(got == sort(x[, 1L])[r])) p <- c(p, "radix select")
    }
    # the search of anonymise() on given statistics: the centroids of ffi_knn_centroids()
    # on z-scores made the same way
    if (n >= 2L) {
      sizes <- fz_strata(n, min_size = 2L, zeros = FALSE)
      if (!is.null(sizes)) {
        g <- fz_groups(sizes)
        k <- sample(seq_len(min(sizes[sizes > 0])), 1L)
        mu <- colMeans(x)
        sd <- pmax(apply(x, 2L, stats::sd), 1e-300)
        if (all(is.finite(sd)) && all(is.finite(mu))) {
          cen <- .Call(detanon:::C_ffi_mask_strata, x, as.integer(g$id), k, mu, sd, 1L)
          z <- sweep(sweep(x, 2L, mu), 2L, sd, "/")
          ref <- .Call(detanon:::C_ffi_knn_centroids, z, as.integer(g$order), as.integer(g$offsets), k, 1L)
          if (!identical(cen, ref)) p <- c(p, "mask_strata")
        }
      }
    }
    p
  })
})
