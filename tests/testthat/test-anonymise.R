test_that("the C engine equals the brute-force reference on tie-free data", {
  for (d in c(1, 2, 4, 7)) for (k in c(2, 3, 5, 10)) for (S in c(1, 4)) {
    x <- random_data(300, d = d, n_strata = S, seed = d * 100 + k + S)
    vars <- paste0("x", seq_len(d))
    out <- anonymise(x, k = k, vars = vars, strata = if (S > 1) "g" else character(), format = "none")
    ref <- ref_anonymise(x[vars], as.integer(x$g) * (S > 1) + 1L, k)
    expect_equal(unname(as.matrix(out[vars])), ref, tolerance = 1e-12)
  }
})

test_that("neighbour indices equal brute force, and ties follow distance then coordinates", {
  x <- random_data(500, d = 3, n_strata = 4, seed = 7)
  z <- scale(as.matrix(x[1:3]))
  id <- as.integer(x$g)
  expect_identical(knn_index(z, id, 6), ref_knn_index(z, id, 6))
  # an integer grid: distances tie everywhere, exactly representable
  g <- as.matrix(expand.grid(a = 0:9, b = 0:9, c = 0:3)) * 1.0
  expect_identical(knn_index(g, rep(1L, nrow(g)), 9), ref_knn_index(g, rep(1L, nrow(g)), 9))
  # the tie order does not depend on row positions
  p <- rev(seq_len(nrow(g)))
  a <- knn_index(g, rep(1L, nrow(g)), 9)
  b <- knn_index(g[p, ], rep(1L, nrow(g)), 9)
  expect_identical(g[a, ], g[p, ][b[order(p), ], ])
})

test_that("ties with duplicates: identical points give identical centroids", {
  x <- data.frame(a = c(rep(1, 50), 2:11), b = c(rep(5, 50), 11:20))
  out <- anonymise(x, k = 4, vars = c("a", "b"), strata = character(), format = "none")
  expect_length(unique(out$a[1:50]), 1L)
  ref <- ref_anonymise(x, rep(1L, 60), 4)
  expect_equal(unname(as.matrix(out)), ref, tolerance = 1e-12)
})

test_that("records that share their k points get bit-identical centroids", {
  # a stratum of exactly k records: every record's k points are the whole stratum, found in
  # a different order from each record; the sum runs in one order, so no last-bit trace of
  # the record is left (random values: summed in heap order they would differ)
  set.seed(11)
  for (rep in 1:20) {
    z <- matrix(stats::rnorm(5 * 3) * 10^stats::runif(15, -3, 3), 5, 3)
    cen <- test_call("knn_centroids", z, 1:5, c(0, 5), 5L, 1L)
    expect_identical(cen, cen[rep(1L, 5), ])
  }
})

test_that("large strata (parallel query path) match the reference and threads agree bit for bit", {
  x <- random_data(9000, d = 2, n_strata = 2, seed = 3)
  x$x1 <- round(x$x1, 1) # many ties
  one <- anonymise(x, k = 5, vars = c("x1", "x2"), strata = "g", nthreads = 1)
  two <- anonymise(x, k = 5, vars = c("x1", "x2"), strata = "g", nthreads = 2)
  expect_identical(one, two)
  sub <- sample(nrow(x), 40)
  z <- sweep(sweep(as.matrix(x[1:2]), 2, colMeans(x[1:2])), 2, apply(x[1:2], 2, sd), "/")
  nn <- knn_index(z, as.integer(x$g), 5)
  for (i in sub) {
    s <- which(x$g == x$g[i])
    d2 <- (z[i, 1] - z[s, 1])^2 + (z[i, 2] - z[s, 2])^2
    o <- s[order(d2, z[s, 1], z[s, 2])][1:5]
    expect_identical(z[nn[i, ], ], z[o, ])
  }
})

test_that("large strata of unequal sizes, more than the threads, get their own neighbours (trees in rounds)", {
  # strata of 4096 records or more are searched one at a time, their trees built nt at a
  # time in memory reused from round to round: slot 1 holds strata 1, 3, 5 (a smaller tree
  # after a larger one), slot 2 strata 2 and 4 (the largest)
  set.seed(44)
  sizes <- c(6000, 4100, 4096, 9000, 4500)
  id <- rep(seq_along(sizes), sizes)
  z <- matrix(round(stats::rnorm(length(id) * 3), 1), length(id), 3) * (1 + id %% 3) + id
  for (k in c(2L, 5L)) {
    sub <- unlist(lapply(seq_along(sizes), function(s) sample(which(id == s), 12)))
    for (nt in 1:2) {
      idx <- knn_index(z, id, k, nthreads = nt)
      for (i in sub) {
        s <- which(id == id[i])
        d2 <- (z[i, 1] - z[s, 1])^2 + (z[i, 2] - z[s, 2])^2 + (z[i, 3] - z[s, 3])^2
        o <- s[order(d2, z[s, 1], z[s, 2], z[s, 3])][seq_len(k)]
        expect_identical(z[idx[i, ], ], z[o, ], info = paste(k, nt, i))
      }
    }
  }
  x <- data.frame(g = factor(id), x1 = z[, 1], x2 = z[, 2], x3 = z[, 3])
  p <- sample(nrow(x))
  one <- anonymise(x, k = 5, strata = "g", nthreads = 1)
  expect_identical(anonymise(x, k = 5, strata = "g", nthreads = 2), one)
  expect_identical(anonymise(x[p, ], k = 5, strata = "g", nthreads = 2)[order(p), -1], one[-1], ignore_attr = TRUE)
})

test_that("the search's scratch memory kept between calls (grown, reused, shrunk) changes no release", {
  # ffi_anonymise() keeps its search's scratch memory between calls, sized by the call before:
  # a call that needs more than the block takes the rest from R (and the block grows after
  # it), a call that needs less than a quarter of it uses it and shrinks it
  set.seed(39)
  make <- function(sizes) {
    g <- rep(letters[seq_along(sizes)], sizes)
    data.frame(g = g, x = round(stats::rnorm(length(g)), 2), y = stats::rexp(length(g)),
               z = round(stats::runif(length(g), 0, 50)))
  }
  big <- make(c(9000, 5000, 4200))
  small <- make(c(700, 300, 1000))
  run <- function(d, nt = 2) anonymise(d, k = 4, strata = "g", nthreads = nt)
  small0 <- run(small)
  big0 <- run(big)
  expect_identical(run(big), big0)
  expect_identical(run(small), small0)
  expect_identical(run(big), big0)
  expect_identical(run(big, 1), big0)
  expect_identical(run(small, 1), small0)
  # and the centroids of format = "none" are the kernel's on R's memory (ffi_knn_centroids)
  none <- anonymise(big, k = 4, strata = "g", format = "none", nthreads = 2)
  x <- as.matrix(big[-1])
  st <- detanon:::col_stats(x)
  z <- sweep(sweep(x, 2, st$mean), 2, st$sd, "/")
  g <- match(big$g, letters)
  cen <- test_call("knn_centroids", z, order(g), c(0, cumsum(tabulate(g))), 4L, 2L)
  expect_equal(unname(as.matrix(none[-1])), sweep(sweep(cen, 2, apply(cen, 2, sd), "/"), 2, st$sd, "*") |>
                 sweep(2, st$mean, "+"), tolerance = 1e-12)
})

test_that("many small strata run in parallel with identical results", {
  x <- random_data(20000, d = 3, n_strata = 1, seed = 11)
  x$g <- factor(sample(2000, nrow(x), replace = TRUE))
  x <- x[x$g %in% names(which(table(x$g) >= 5)), ]
  a <- anonymise(x, k = 5, vars = paste0("x", 1:3), strata = "g", nthreads = 1)
  b <- anonymise(x, k = 5, vars = paste0("x", 1:3), strata = "g", nthreads = 2)
  expect_identical(a, b)
})

test_that("strata searched in turn by one tree get their own neighbours (no path kept across strata)", {
  # strata below 4096 records share one tree per thread, rebuilt for each. A stratum of 64
  # records ends in leaf 2 (two leaves of 32), one of 70 starts there (leaves of 17 and 18
  # two levels down): the path to leaf 2 remembered from the first would be wrong in the
  # second. Each stratum has its own place and scale, so a box of the previous one is far
  # off; rounded coordinates give ties at the k-th distance of the own leaf.
  set.seed(43)
  id <- rep(seq_len(40), rep(c(64, 70, 150, 33, 200), 8))
  z <- matrix(round(stats::rnorm(length(id) * 3), 1), length(id), 3) * (1 + id %% 7) + id %% 5
  for (k in c(1L, 2L, 5L, 8L, 9L)) {
    want <- ref_knn_index(z, id, k)
    for (nt in 1:2) {
      idx <- knn_index(z, id, k, nthreads = nt)
      expect_identical(z[idx, , drop = FALSE], z[want, , drop = FALSE], info = paste(k, nt))
    }
  }
})

test_that("permuting the rows permutes the output and changes nothing else", {
  x <- random_data(2000, d = 3, n_strata = 5, seed = 5)
  x$x2 <- round(x$x2) # heavy ties
  x$x3[1:300] <- 0.25 # duplicates
  p <- sample(nrow(x))
  a <- anonymise(x, k = 4, vars = paste0("x", 1:3), strata = "g")
  b <- anonymise(x[p, ], k = 4, vars = paste0("x", 1:3), strata = "g")
  expect_identical(unname(as.matrix(a[p, 1:3])), unname(as.matrix(b[, 1:3])))
  expect_identical(release_info(a)$stats$scale, release_info(b)$stats$scale)
})

test_that("engine = 'rann' agrees with the C engine on tie-free data", {
  skip_if_not_installed("RANN")
  x <- random_data(600, d = 3, n_strata = 3, seed = 9)
  a <- anonymise(x, k = 5, vars = paste0("x", 1:3), strata = "g", format = "none")
  b <- anonymise(x, k = 5, vars = paste0("x", 1:3), strata = "g", engine = "rann")
  expect_equal(as.matrix(a[1:3]), as.matrix(b[1:3]), tolerance = 1e-12)
})

test_that("the paper's Titanic deltas are reproduced (Age .0114, Fare .0473)", {
  d <- titanic_paper()
  delta <- function(m) c(mean((d$Age - m$Age)^2) / var(d$Age), mean((d$Fare - m$Fare)^2) / var(d$Fare))
  m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                 format = "none", check_identifiers = FALSE)
  expect_equal(round(delta(m), 4), c(0.0114, 0.0473))
  skip_if_not_installed("RANN")
  r <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), engine = "rann",
                 check_identifiers = FALSE)
  expect_equal(round(delta(r), 4), c(0.0114, 0.0473))
  # the exact-reproduction path: the authors' z-scores (x - mean(x)) / sd(x), then
  # RANN::nn2 in each stratum
  z <- sapply(d[c("Age", "Fare")], function(v) (v - mean(v)) / sd(v))
  g <- interaction(d$Pclass, d$Sex, d$Family, drop = TRUE)
  cen <- z
  for (lv in levels(g)) {
    i <- which(g == lv)
    nn <- RANN::nn2(z[i, ], k = 3)$nn.idx
    for (j in 1:2) cen[i, j] <- rowMeans(matrix(z[i, j][nn], ncol = 3))
  }
  ref <- sweep(sweep(cen, 2, apply(cen, 2, sd), "/"), 2, c(sd(d$Age), sd(d$Fare)), "*")
  ref <- sweep(ref, 2, c(mean(d$Age), mean(d$Fare)), "+")
  attributes(ref) <- list(dim = dim(ref))
  expect_equal(unname(as.matrix(r[c("Age", "Fare")])), unname(ref), tolerance = 1e-14)
})

test_that("step 5 restores the original SDs exactly and the means approximately", {
  x <- random_data(400, d = 2, n_strata = 2, seed = 2)
  out <- anonymise(x, k = 3, vars = c("x1", "x2"), strata = "g")
  expect_equal(apply(out[1:2], 2, sd), apply(x[1:2], 2, sd), tolerance = 1e-12)
  expect_true(all(abs(colMeans(out[1:2]) - colMeans(x[1:2])) < 0.05 * apply(x[1:2], 2, sd)))
})

test_that("step 5 is one kernel: the R paths and the C engine rescale alike, flat at 1e-10", {
  set.seed(5)
  n <- 50
  x <- cbind(a = rnorm(n), b = rexp(n) * 100, c = 3)
  st <- detanon:::col_stats(x)
  cen <- matrix(rnorm(n * 2), n, 2)
  # the paper's formula, centroid / sd(centroids) * sd + mean, with the centroids' SDs given
  c_sd <- apply(cen, 2, sd)
  res <- detanon:::rescale_centroids(x, 1:2, st, cen, c_sd)
  for (j in 1:2) expect_identical(res$columns[[j]], cen[, j] / c_sd[j] * st$sd[[j]] + st$mean[[j]])
  expect_identical(res$columns[[3]], x[, 3]) # not masked: copied
  expect_identical(res$scale, unname(st$sd[1:2] / c_sd))
  # without them: the exact, order-free SDs of the centroids
  exact <- unname(detanon:::col_stats(cen)$sd)
  expect_identical(detanon:::rescale_centroids(x, 1:2, st, cen)$scale, unname(st$sd[1:2] / exact))
  # the one threshold: an SD of at most 1e-10 releases the mean (scale NA), above it scales
  at <- detanon:::rescale_centroids(x, 1:2, st, cen, c(1e-10, 1e-10 * (1 + .Machine$double.eps)))
  expect_identical(at$columns[[1]], rep(st$mean[[1]], n))
  expect_identical(is.na(at$scale), c(TRUE, FALSE))
  expect_identical(at$columns[[2]], cen[, 2] / (1e-10 * (1 + .Machine$double.eps)) * st$sd[[2]] + st$mean[[2]])
  # the C engine runs the same kernel inside ffi_anonymise(): the same bits as its own
  # centroids rescaled here
  d <- data.frame(x1 = rnorm(300), x2 = round(rexp(300), 1), g = sample(1:3, 300, TRUE))
  out <- anonymise(d, k = 4, vars = c("x1", "x2"), strata = "g", format = "none", check_identifiers = FALSE)
  xm <- as.matrix(d[c("x1", "x2")])
  st <- detanon:::col_stats(xm)
  z <- unname(sweep(sweep(xm, 2, st$mean), 2, st$sd, "/"))
  cen <- test_call("knn_centroids", z, order(d$g), c(0, cumsum(tabulate(d$g))), 4L, 1L)
  res <- detanon:::rescale_centroids(xm, 1:2, st, cen)
  expect_identical(out$x1, res$columns[[1]])
  expect_identical(out$x2, res$columns[[2]])
  expect_identical(unname(attr(out, "detanon")$stats$scale), res$scale)
})

test_that("column statistics and step 5 in blocks of rows: exact, the same for any threads", {
  # several blocks of 8192 rows (threads.h), the last one short; values with cancellation,
  # huge and tiny magnitudes, ties, and a column flat on the z-scale
  set.seed(21)
  n <- 3L * 8192L + 77L
  x <- cbind(a = stats::rnorm(n), b = c(1e300, -1e300, stats::rexp(n - 2L)), c = sample(c(-3, 0, 0.1), n, TRUE),
             d = stats::rnorm(n) * 1e-300, e = 1 + sample(0:1, n, TRUE) * 1e-12)
  # reference: one exact accumulator over the whole column (test-anonymise_stats.R checks
  # it against a sum in plain R), then the squared deviations from the rounded mean
  acc_total <- function(v, centre = NULL) {
    detanon:::acc_round(.Call(detanon:::C_ffi_acc_add, NULL, matrix(v), centre))
  }
  ref_mean <- apply(x, 2, function(v) acc_total(v) / n)
  ref_sd <- vapply(seq_len(ncol(x)), function(j) sqrt(acc_total(x[, j], ref_mean[[j]]) / (n - 1)), 0)
  for (nt in 1:2) {
    st <- detanon:::col_stats(x, nt)
    expect_identical(unname(st$mean), unname(ref_mean))
    expect_identical(unname(st$sd), ref_sd)
  }
  # step 5 with the centroids' exact SDs: c / sd(c) * sd + mean, a flat column its mean
  cen <- x[, c("a", "c", "e")]
  mean <- c(10, -2, 0.5)
  sd <- c(3, 0.25, 7)
  c_sd <- ref_sd[c(1L, 3L, 5L)]
  want <- lapply(1:3, function(j) if (c_sd[j] > 1e-10) cen[, j] / c_sd[j] * sd[j] + mean[j] else rep(mean[j], n))
  for (nt in 1:2) {
    res <- .Call(detanon:::C_ffi_rescale, cen, mean, sd, NULL, nt)
    expect_identical(res$columns, want)
    expect_identical(res$scale, ifelse(c_sd > 1e-10, sd / c_sd, NA_real_))
  }
  expect_true(is.na(.Call(detanon:::C_ffi_rescale, cen, mean, sd, NULL, 2L)$scale[3L]))
  # one row, and no rows
  expect_identical(.Call(detanon:::C_ffi_col_stats, x[1L, , drop = FALSE], 2L)[2L, ], rep(NA_real_, 5L))
  expect_identical(.Call(detanon:::C_ffi_col_stats, x[0L, , drop = FALSE], 2L), matrix(NA_real_, 2L, 5L))
})

test_that("the caller's kind of data frame, rows and other columns are kept; row names are not", {
  x <- random_data(50, d = 2, n_strata = 2, seed = 4)
  x$label <- rep(letters[1:25], 2)
  x$n <- rep(1:25, 2)
  rownames(x) <- paste0("row", 1:50)
  out <- anonymise(x, k = 3, vars = c("x1", "x2"), strata = "g")
  # row names may be identifiers (NHS numbers): the release numbers its rows 1..n
  expect_identical(rownames(out), as.character(1:50))
  expect_identical(out[c("g", "label", "n")], `rownames<-`(x[c("g", "label", "n")], NULL))
  expect_s3_class(anonymise(tibble::as_tibble(x), k = 3, vars = c("x1", "x2"), strata = "g"), "tbl_df")
  skip_if_not_installed("data.table")
  dt <- data.table::as.data.table(x)
  before <- data.table::copy(dt)
  out_dt <- anonymise(dt, k = 3, vars = c("x1", "x2"), strata = "g")
  expect_s3_class(out_dt, "data.table")
  expect_identical(dt, before)
})

test_that("the released object carries no original value of the masked variables", {
  x <- random_data(200, d = 2, n_strata = 2, seed = 8)
  out <- anonymise(x, k = 3, vars = c("x1", "x2"), strata = "g")
  original <- c(x$x1, x$x2)
  attr_values <- unlist(lapply(attributes(out), function(a) if (is.list(a)) unlist(a) else a))
  attr_values <- suppressWarnings(as.numeric(attr_values))
  expect_false(any(attr_values %in% original))
  expect_false(any(c(out$x1, out$x2) %in% original))
  expect_null(attributes(out$x1))
})

test_that("suppression that leaves fewer records than strata masks the rest (no internal error)", {
  # 5 records in 4 strata of s1 x s2, 3 strata of one record suppressed: the 2 records left
  # are in stratum 3 of 4 (an id above the number of rows left was an internal error)
  d <- data.frame(a = c(43, 50, 60, 43, 47), w = c(1, 721, 3, 48, 2508), s1 = c("b", "a", "b", "c", "d"),
                  s2 = c(NA, "x", NA, NA, "x"))
  # (k = 2 records in the only stratum left: its centroids are equal, released as the mean)
  expect_warning(expect_message(out <- anonymise(d, vars = c("a", "w"), strata = c("s1", "s2"), k = 2,
                                                 small_strata = "suppress", check_identifiers = FALSE),
                                "suppressed 3 records in 3 strata"), "released as the original mean")
  expect_identical(nrow(out), 2L)
  expect_equal(out$a, rep(mean(c(43, 60)), 2))
  expect_identical(release_info(out)$counts$n_suppressed, 3L)
})

test_that("edge cases give documented results", {
  # integer columns come back as doubles when unformatted or of small spread (SD below 500:
  # not rounded, see round_whole()), as integers when rounded and with "precision"
  x <- data.frame(a = c(1L, 5L, 2L, 8L, 3L, 9L), b = c(2, 4, 6, 8, 10, 13))
  out <- anonymise(x, k = 2, vars = c("a", "b"), strata = character(), format = "none")
  expect_type(out$a, "double")
  expect_type(anonymise(x, k = 2, vars = c("a", "b"), strata = character())$a, "double")
  expect_type(anonymise(x, k = 2, vars = c("a", "b"), strata = character(), format = "precision")$a, "integer")
  x1000 <- transform(x, a = a * 1000L)
  expect_type(anonymise(x1000, k = 2, vars = c("a", "b"), strata = character())$a, "integer")
  # a constant column is released as its value and left out of the distances
  x$c <- 7
  out2 <- anonymise(x, k = 2, vars = c("a", "b", "c"), strata = character(), format = "none")
  expect_identical(out2$c, rep(7, 6))
  expect_identical(out2[c("a", "b")], out[c("a", "b")])
  # all centroids equal: released as the mean, with a warning
  expect_warning(out3 <- anonymise(x, k = 6, vars = c("a", "b"), strata = character(), format = "none"),
                 "centroids")
  expect_equal(out3$a, rep(mean(x$a), 6))
  # NA in a stratum column is a level of its own
  y <- random_data(30, seed = 6)
  y$g[1:5] <- NA
  expect_identical(release_info(anonymise(y, k = 3, vars = c("x1", "x2"), strata = "g"))$counts$n_strata, 4L)
  # factor levels with no rows are ignored
  y$g <- factor(y$g, levels = c(levels(y$g), "unused"))
  expect_silent(anonymise(y, k = 3, vars = c("x1", "x2"), strata = "g"))
  # duplicated rows are fine
  z <- rbind(y, y)
  expect_identical(nrow(anonymise(z, k = 3, vars = c("x1", "x2"), strata = "g")), 60L)
})

test_that("missing values follow `na`", {
  x <- random_data(60, seed = 12)
  x$x1[c(2, 9, 30)] <- NA
  expect_message(out <- anonymise(x, k = 3, vars = c("x1", "x2"), strata = "g", na = "complete"),
                 "dropped 3 incomplete")
  expect_identical(nrow(out), 57L)
  expect_identical(release_info(out)$counts$n_dropped, 3L)
  med <- anonymise(x, k = 3, vars = c("x1", "x2"), strata = "g", na = "median")
  filled <- x
  filled$x1[is.na(filled$x1)] <- median(x$x1, na.rm = TRUE)
  expect_identical(med, structure(anonymise(filled, k = 3, vars = c("x1", "x2"), strata = "g"),
                                  detanon = attr(med, "detanon")))
  expect_identical(release_info(med)$counts$n_imputed, 3L)
  strat <- anonymise(x, k = 3, vars = c("x1", "x2"), strata = "g", na = "mean_stratum")
  expect_false(anyNA(strat$x1))
})

test_that("small strata fail with a list, or are suppressed and counted", {
  x <- random_data(40, seed = 13)
  x$g <- factor(c(rep("a", 30), rep("b", 8), rep("c", 2)))
  expect_snapshot(anonymise(x, k = 3, vars = c("x1", "x2"), strata = "g"), error = TRUE)
  expect_message(out <- anonymise(x, k = 3, vars = c("x1", "x2"), strata = "g", small_strata = "suppress"),
                 "suppressed 2 records in 1 stratum")
  expect_identical(nrow(out), 38L)
  expect_identical(release_info(out)$counts$n_suppressed, 2L)
})

test_that("bad input gives a clear error and changes nothing", {
  x <- random_data(20, seed = 14)
  x$s <- letters[1:20]
  before <- x
  expect_snapshot(error = TRUE, {
    anonymise(as.matrix(x[1:2]))
    anonymise(x, k = 1)
    anonymise(x, k = 2.5)
    anonymise(x, k = "3")
    anonymise(x, k = 21, vars = c("x1", "x2"), strata = character())
    anonymise(x, vars = "nope")
    anonymise(x, vars = "s", strata = "g")
    anonymise(x, vars = "x1", strata = c("g", "x1"))
    anonymise(x[c("g", "s")])
    anonymise(x, vars = c("x1", "x2"), strata = "g", na = "drop")
    anonymise(x, vars = c("x1", "x2"), strata = "g", engine = "ann")
    anonymise(x, vars = c("x1", "x2"), strata = "g", nthreads = 0)
    anonymise(x, vars = c("x1", "x2"), strata = "g", small_strata = NA)
    anonymise(x[1, ], k = 2, vars = c("x1", "x2"), strata = character())
  })
  y <- x
  y$x1[3] <- NA
  y$x2[4] <- NaN
  expect_snapshot(error = TRUE, {
    anonymise(y, vars = "x1", strata = "g")
    anonymise(y, vars = "x2", strata = "g")
    anonymise(transform(x, x1 = Inf), vars = "x1", strata = "g")
    anonymise(setNames(x, c("x1", "x1", "g", "s")), vars = "x1")
    anonymise(x, k = 25, vars = "x1", strata = character(), small_strata = "suppress")
  })
  expect_identical(x, before)
})

# Centroids as the C code sums them: the k points in lexicographic order of their
# coordinates, added left to right in double precision (R's sum() accumulates in long double).
ref_lex_centroids <- function(z, idx) {
  z <- as.matrix(z)
  t(vapply(seq_len(nrow(idx)), function(i) {
    p <- z[idx[i, ], , drop = FALSE]
    p <- p[do.call(order, lapply(seq_len(ncol(p)), function(j) p[, j])), , drop = FALSE]
    vapply(seq_len(ncol(p)), function(j) Reduce(`+`, p[, j], accumulate = FALSE) / nrow(p), 0)
  }, numeric(ncol(z))))
}

test_that("large k (k = n, n - 1, about n / 2) equals the reference, with ties and duplicates", {
  set.seed(23)
  for (rep in 1:6) {
    n <- sample(30:90, 1L)
    d <- sample(1:4, 1L)
    z <- matrix(stats::rnorm(n * d), n, d)
    if (rep %% 3L == 1L) z <- round(z * 2) # distances tie everywhere
    if (rep %% 3L == 2L) z[sample(n, n %/% 2L), ] <- z[rep(1L, n %/% 2L), ] # duplicated points
    id <- rep(1L, n)
    for (k in c(n, n - 1L, n %/% 2L + 1L, 25L)) {
      idx <- knn_index(z, id, k)
      want <- ref_knn_index(z, id, k)
      # duplicated points are interchangeable: compare coordinates, in order
      expect_identical(z[idx, , drop = FALSE], z[want, , drop = FALSE])
      expect_identical(idx, knn_index(z, id, k, nthreads = 2L))
      cen <- test_call("knn_centroids", z, seq_len(n), c(0, n), k, 1L)
      expect_identical(cen, ref_lex_centroids(z, want))
      if (k == n) expect_identical(cen, cen[rep(1L, n), , drop = FALSE])
    }
  }
})

test_that("large k in heavy strata (chunked queries, stratum-order sums) is exact", {
  set.seed(29)
  n <- 1100L # n * k >= 2^20 for k near n: the chunked path
  z <- cbind(round(stats::rnorm(n), 1), stats::rexp(n))
  z[1:100, ] <- z[rep(1L, 100), ]
  id <- rep(1L, n)
  for (k in c(n, n - 1L, 960L, n %/% 2L)) {
    want <- ref_knn_index(z, id, k)
    cen1 <- test_call("knn_centroids", z, seq_len(n), c(0, n), k, 1L)
    cen2 <- test_call("knn_centroids", z, seq_len(n), c(0, n), k, 2L)
    expect_identical(cen1, cen2)
    rows <- c(1:3, 101:103, sample(n, 6L)) # the R reference is slow: a sample of rows
    expect_identical(cen1[rows, ], ref_lex_centroids(z, want[rows, , drop = FALSE]))
    idx <- knn_index(z, id, k, nthreads = 2L)
    expect_identical(z[idx[rows, ], ], z[want[rows, ], ])
  }
})

test_that("the search on column copies (two distances per SSE2 operation) is exact in awkward cases", {
  # kd_new_fast(): leaves of 16 to 32 points read two at a time (an odd leaf reads one point
  # past its end), both children's boxes at once; d > 8 takes the plain search on the same
  # tree, with centroids summed from the column copy
  set.seed(41)
  cases <- list(
    one_point = matrix(0.5, 1, 3),
    two_points = matrix(c(1, 1, 2, 2), 2, 2),
    all_identical = matrix(2, 70, 4), # zero spreads: no split moves a point
    two_values = matrix(sample(c(-1, 1), 90 * 2, replace = TRUE), 90, 2),
    half_duplicates = rbind(matrix(3, 40, 3), matrix(stats::rnorm(41 * 3), 41, 3)),
    huge_tiny = cbind(stats::rnorm(80) * 1e300, stats::rnorm(80) * 1e-300, stats::rnorm(80)),
    odd_d8 = matrix(stats::rnorm(67 * 8), 67, 8),
    d9 = matrix(stats::rnorm(60 * 9), 60, 9),
    d12_ties = matrix(round(stats::rnorm(50 * 12)), 50, 12)
  )
  for (nm in names(cases)) {
    z <- cases[[nm]]
    n <- nrow(z)
    id <- rep(1L, n)
    for (k in unique(pmin(c(1L, 2L, 5L, 9L, 33L), n))) {
      want <- ref_knn_index(z, id, k)
      idx <- knn_index(z, id, k)
      expect_identical(z[idx, , drop = FALSE], z[want, , drop = FALSE], info = paste(nm, k))
      cen <- test_call("knn_centroids", z, seq_len(n), c(0, n), k, 1L)
      expect_identical(cen, ref_lex_centroids(z, want), info = paste(nm, k))
    }
  }
})

test_that("the thread policy: the request, capped by OpenMP's limits, one thread for small jobs", {
  threads <- function(n, work = 1e6) test_call("threads", as.integer(n), work)
  expect_identical(threads(1L), 1L)
  expect_identical(threads(4L, work = 100), 1L) # too small to gain from threads
  expect_lte(threads(1e6L), max(1L, parallel::detectCores()))
  skip_on_cran()
  rscript <- file.path(R.home("bin"), "Rscript")
  # OMP_NUM_THREADS and OMP_THREAD_LIMIT cap a larger request (with OpenMP; else 1 anyway)
  for (env in c("OMP_NUM_THREADS=1", "OMP_THREAD_LIMIT=1")) {
    out <- system2(rscript, c("-e", shQuote(paste0(
      "cat(.Call(detanon:::C_ffi_threads, 8L, 1e6))"))), stdout = TRUE,
      env = c(env, paste0("R_LIBS=", paste(.libPaths(), collapse = .Platform$path.sep))))
    expect_identical(out, "1")
  }
})

test_that("format = \"natural\" keeps values in range, rounds only widely spread whole numbers, order kept", {
  skip_if_not_installed("sdcMicro")
  data(testdata, package = "sdcMicro", envir = environment())
  vars <- c("age", "income", "expend", "savings")
  run <- function(format) anonymise(testdata, k = 3, vars = vars, strata = c("sex", "urbrur"), format = format,
                                    check_identifiers = FALSE)
  raw <- run("none")
  nat <- run(NULL)
  expect_gt(sum(raw$age < 0), 0L) # the unformatted centroids leave the range
  for (v in vars) {
    o <- sort(testdata[[v]])
    lo <- mean(o[1:3])
    hi <- mean(rev(o)[1:3])
    # a bound on a tie pile (3 or more records share the extreme) is no bound
    if (o[3] == o[1]) lo <- -Inf
    if (rev(o)[3] == o[length(o)]) hi <- Inf
    rounded <- all(o == round(o)) && stats::sd(o) >= 500
    expect_gte(min(nat[[v]]), if (rounded) ceiling(lo) else lo)
    expect_lte(max(nat[[v]]), if (rounded) floor(hi) else hi)
    if (rounded) expect_true(all(nat[[v]] == round(nat[[v]])), info = v) # widely spread whole numbers stay whole
    # rank-preserving: the natural form never reverses the order of the raw centroids
    expect_true(all(diff(nat[[v]][order(raw[[v]])]) >= 0), info = v)
  }
  # age (SD 21): not rounded (half a year is not negligible against its spread), its mean
  # and SD kept; expend (SD in the thousands): whole numbers, as integers
  expect_type(nat$age, "double")
  expect_equal(c(mean(nat$age), stats::sd(nat$age)), c(mean(testdata$age), stats::sd(testdata$age)),
               tolerance = 1e-12)
  expect_false(all(nat$age == round(nat$age)))
  expect_type(nat$expend, "integer")
  expect_type(nat$income, "double")
})

test_that("the bounds are k-record means, not one record's value, and the tails are squeezed", {
  set.seed(21)
  d <- data.frame(x = c(stats::rnorm(300) * 10 + 50.123456, 250.654321), y = stats::rnorm(301))
  raw <- anonymise(d, k = 4, vars = c("x", "y"), strata = character(), format = "none")
  nat <- anonymise(d, k = 4, vars = c("x", "y"), strata = character())
  o <- sort(d$x)
  expect_lt(min(raw$x), o[1])
  expect_lte(sum(raw$x < mean(o[1:4])), 301 / 10) # a few beyond the bound, not a crowd
  expect_equal(min(nat$x), mean(o[1:4]))
  expect_equal(max(nat$x), mean(rev(o)[1:4]))
  expect_false(min(nat$x) %in% d$x)
  expect_false(max(nat$x) %in% d$x)
  # the mean and SD kept, the order kept (the values the map to them would put beyond a
  # bound are held in the gap next to it)
  expect_equal(c(mean(nat$x), stats::sd(nat$x)), c(mean(d$x), stats::sd(d$x)), tolerance = 1e-12)
  expect_identical(sum(nat$x == min(nat$x)), 1L)
  expect_identical(rank(nat$x), rank(raw$x))
  # the squeeze itself: monotone, onto [lo, hi]; only the values beyond a bound move, into
  # the first half of the gap between the bound and the nearest value inside
  v <- c(-1, 0.5, 1:99, 99.5, 104)
  s <- detanon:::squeeze_range(v, 0, 100)
  expect_identical(range(s), c(0, 100))
  expect_true(all(diff(s) > 0))
  expect_identical(s[v >= 0 & v <= 100], v[v >= 0 & v <= 100])
  expect_identical(s[c(1, length(v))], c(0, 100))
  v2 <- c(-2, -1, 0.5, 3, seq(4, 99, length.out = 16), 104, 102) # 2 of 22 below, 2 above
  expect_equal(detanon:::squeeze_range(v2, 0, 100),
               c(0, 0.125, 0.5, 3, seq(4, 99, length.out = 16), 100, 100 - 2 * (1 / 2) / 4))
  # a crowd beyond a bound (more than 1 in 10 of the values) stays where it is
  v3 <- c(-3, -2, 0.5, seq(1, 9, length.out = 16), 12) # 2 of 20 below: not a crowd; 1 above
  expect_equal(detanon:::squeeze_range(v3, 0, 10), c(0, 1 / 12, 0.5, seq(1, 9, length.out = 16), 10))
  v4 <- c(-3, -2, -1, 0.5, seq(1, 9, length.out = 16), 12) # 3 of 21 below: a crowd; 1 above
  expect_identical(detanon:::squeeze_range(v4, 0, 10)[1:20], v4[1:20])
  expect_equal(detanon:::squeeze_range(v4, 0, 10)[21], 10)
  # no value inside the range: the other bound is the limit (the crowd below stays)
  expect_identical(detanon:::squeeze_range(c(-9:-1, 20), 0, 10), c(-9:-1, 10))
})

test_that("the Titanic release has no negative age, fares below the zero pile stay; precision keeps the decimals", {
  d <- titanic_paper()
  run <- function(...) anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                                 check_identifiers = FALSE, ...)
  raw <- run(format = "none")
  expect_gt(sum(raw$Age < 0), 0L)
  expect_gt(sum(raw$Fare < 0), 0L)
  nat <- run()
  expect_gte(min(nat$Age), 0)
  # 15 fares are 0: that shared value is no k-record bound, but the fares are >= 0 and stay
  # so (those step 5 and the map to the mean and SD leave below 0 are held at 0)
  expect_identical(min(nat$Fare), 0)
  expect_true(all(diff(nat$Fare[order(raw$Fare)]) >= 0))
  expect_identical(sum(is.finite(log(nat$Age))), nrow(d))
  pre <- run(format = "precision")
  expect_identical(detanon:::decimals(d$Fare), 4L)
  expect_identical(detanon:::decimals(c(0.1 + 0.2, 2)), 1L)
  expect_identical(detanon:::decimals(c(1, 5, 2) * 1e-200), NA_integer_) # tiny values are not whole
  expect_true(all(abs(pre$Fare * 1e4 - round(pre$Fare * 1e4)) < 1e-6))
  expect_identical(release_info(pre)$settings$format, "precision")
  # the reproduction path is unformatted by default
  skip_if_not_installed("RANN")
  r <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), engine = "rann",
                 check_identifiers = FALSE)
  expect_identical(release_info(r)$settings$format, "none")
  expect_gt(sum(r$Age < 0), 0L)
})

test_that("labelled (Stata/SPSS) codes are strata by default, not masked", {
  lab <- structure(rep(c(1, 2), 30), labels = c(male = 1, female = 2),
                   class = c("haven_labelled", "vctrs_vctr", "double"))
  set.seed(3)
  d <- data.frame(x = stats::rnorm(60), y = stats::rnorm(60))
  d$sex <- lab
  out <- anonymise(d, k = 3)
  expect_identical(release_info(out)$settings$vars, c("x", "y"))
  expect_identical(release_info(out)$settings$strata, "sex")
  expect_identical(unclass(out$sex), unclass(lab))
  skip_if_not_installed("haven")
  d$sex <- haven::labelled(rep(c(1, 2), 30), c(male = 1, female = 2))
  expect_identical(release_info(anonymise(d, k = 3))$settings$strata, "sex")
})

test_that("a constant column comes back bit for bit in every form", {
  set.seed(23)
  d <- data.frame(x = stats::rnorm(30), c = 3.3, e = 0.1 + 0.2, w = 7L, t = 1e-250)
  for (f in c("natural", "precision", "none")) {
    m <- anonymise(d, strata = character(), k = 3, format = f)
    expect_identical(m$c, d$c, info = f)
    expect_identical(m$e, d$e, info = f)
    expect_identical(m$t, d$t, info = f)
    if (f == "none") expect_identical(m$w, as.double(d$w)) else expect_identical(m$w, d$w, info = f)
  }
  # also within strata, and in anonymise_adaptive()
  d$g <- rep(c("a", "b"), 15)
  m <- anonymise(d, strata = "g", k = 3)
  expect_identical(m$c, d$c)
  a <- anonymise_adaptive(d, vars = c("x", "c"), strata = "g", k = 3, check_identifiers = FALSE)
  expect_identical(a$c, d$c)
})

test_that("the masking verbs share one validation path (same message, same class)", {
  d <- data.frame(g = rep(c("a", "b"), each = 6), x = c(1:11, 13), y = c(2:12, 1))
  verbs <- list(
    anonymise = function(data, ...) anonymise(data, ..., check_identifiers = FALSE),
    anonymise_adaptive = function(data, ...) anonymise_adaptive(data, ..., check_identifiers = FALSE),
    anonymise_mdav = function(data, ...) anonymise_mdav(data, ..., check_identifiers = FALSE),
    tune_release = function(data, ...) tune_release(data, ...),
    stir = function(data, ...) stir(data, ..., seed = 1),
    blend_outliers = function(data, ...) blend_outliers(data, ..., seed = 1)
  )
  cases <- list(
    list(args = list(d[0, ], vars = "x", strata = "g"), class = "detanon_error_data",
         msg = "`data` has no records: there is nothing to mask."),
    list(args = list(d, vars = c("x", "g"), strata = "g"), class = "detanon_error_column",
         msg = "Columns cannot be in both `vars` and `strata`: `g`."),
    list(args = list(d, vars = "x", strata = "g", k = 1), class = "detanon_error_argument",
         msg = "`k` must be a single whole number >= 2, not 1."),
    list(args = list(d, vars = "zz", strata = "g"), class = "detanon_error_column",
         msg = "`vars` names columns that are not in the data: `zz`"),
    list(args = list(as.matrix(d), vars = "x", strata = "g"), class = "detanon_error_argument",
         msg = "`data` must be a data frame")
  )
  for (cs in cases) {
    for (verb in names(verbs)) {
      err <- tryCatch(do.call(verbs[[verb]], cs$args), error = function(e) e)
      expect_s3_class(err, cs$class)
      expect_identical(substr(conditionMessage(err), 1L, nchar(verb) + 4L + nchar(cs$msg)),
                       paste0(verb, "(): ", cs$msg), label = paste(verb, cs$msg))
    }
  }
  # missing values: the verbs without `na` point to the imputation of anonymise()
  dn <- d
  dn$x[2] <- NA
  for (verb in c("anonymise_adaptive", "tune_release")) {
    expect_error(verbs[[verb]](dn, vars = "x", strata = "g"),
                 "`vars` have missing values \\(`x`: 1\\)\\. Impute them", class = "detanon_error_data")
  }
  for (verb in c("anonymise", "anonymise_mdav")) {
    expect_error(verbs[[verb]](dn, vars = "x", strata = "g"), "`vars` have missing values \\(`x`: 1\\)\\. Choose `na",
                 class = "detanon_error_data")
  }
})

test_that("the release form in C matches its R reference bit for bit", {
  set.seed(42)
  for (it in 1:400) {
    n <- sample(c(1:10, 50, 1001, 2000), 1)
    # (whole numbers of small and of wide spread: rounded only with an SD of 500 or more;
    # tie piles at the extremes)
    x <- switch(sample(8, 1), rnorm(n), round(runif(n, 20, 80)), sample(c(0, 0.5, 1, 2.5), n, TRUE),
                round(rnorm(n) * 100) / 100, rexp(n) * 1e-3, sample(c(-2.5, -1.5, 0.5, 1.5, 3), n, TRUE),
                round(runif(n, 0, 5000)), pmin(pmax(round(rnorm(n) * 3000), 0), 6000))
    nm <- sample(c(n, max(1, n %/% 2)), 1)
    m <- sample(x, nm, TRUE) * runif(1, 0.5, 1.5) + rnorm(nm) * sample(c(0, 0.1, 1, 5), 1)
    if (runif(1) < 0.3) m <- round(m * 2) / 2 # halves: rounding ties
    k <- sample(c(2, 3, 5, 70, 10000), 1) # 70: more than the one-pass bound (64)
    as_integer <- runif(1) < 0.3
    expect_identical(detanon:::format_masked(m, x, k, "precision", as_integer),
                     ref_format_masked(m, x, k, "precision", as_integer))
    # the natural form: the same bounds and squeeze, then the map of finish_fit() (tested
    # in test-finish.R)
    form <- detanon:::column_form(x, k, "natural", as_integer)
    if (!form$constant) {
      b <- form$bounds
      expect_identical(detanon:::squeeze_range(m, b$lo, b$hi), ref_squeeze_range(m, b$lo, b$hi))
    }
    lo <- runif(1, -1, 0)
    hi <- runif(1, 0, 2)
    expect_identical(detanon:::squeeze_range(m, lo, hi), ref_squeeze_range(m, lo, hi))
  }
  h <- c(0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 4503599627370495.5)
  expect_identical(detanon:::squeeze_range(h, -1e300, 1e300, round0 = TRUE), round(h))
  expect_error(detanon:::format_masked(c(1, NA), c(1, 2), 2, "natural", FALSE), "internal error")
})

test_that("the release form of a column in pieces (scans merged, each piece mapped) matches its R reference", {
  # the partitioned path (anonymise_rescale(), anonymise_release()): form_scan() on each
  # piece merged in any order, then squeeze_range(scan = ) piece by piece
  set.seed(7)
  for (it in 1:300) {
    n <- sample(c(1:6, 40, 500), 1)
    m <- switch(sample(4, 1), rnorm(n), rexp(n)^3 * 10, sample(c(-3, 0, 0.5, 2, 9), n, TRUE), round(rnorm(n) * 4) / 2)
    lo <- runif(1, -1, 0.5)
    hi <- lo + sample(c(0, runif(1, 0, 3)), 1)
    round0 <- runif(1) < 0.3
    if (round0) { lo <- ceiling(lo); hi <- max(lo, floor(hi)) }
    f <- sample(seq_len(sample(1:5, 1)), n, TRUE)
    pieces <- split(seq_len(n), factor(f, levels = 1:6)) # some pieces empty
    scan <- NULL
    for (p in sample(pieces)) scan <- detanon:::form_scan(m[p], lo, hi, scan)
    got <- numeric(n)
    for (p in pieces) got[p] <- detanon:::squeeze_range(m[p], lo, hi, round0 = round0, scan = scan)
    want <- ref_squeeze_range(m, lo, hi)
    b <- ref_form_bounds(m, lo, hi)
    if (round0) want <- pmin(pmax(round(want), b[1L]), b[2L])
    expect_identical(got, want)
    expect_identical(got, detanon:::squeeze_range(m, lo, hi, round0 = round0))
  }
})

test_that("the natural form raises no worst attack of the battery over the unformatted release (Titanic, testdata, counts)", {
  rates <- function(o, rel, v, st) {
    # (the narrower intruder, whose rates the tolerances below were measured on)
    tab <- as.data.frame(risk_battery(o, rel, intruder = intruder(v, st), control = FALSE, seed = 1))
    c(stats::setNames(tab$rate, tab$name), stats::setNames(tab$rate_m, paste0(tab$name, "@m"))[!is.na(tab$rate_m)],
      risk1 = risk_rmd(o, rel, vars = v, deterministic = TRUE)$risk1)
  }
  pair <- function(d, v, st, k) {
    run <- function(format) anonymise(d, k = k, vars = v, strata = st, format = format, check_identifiers = FALSE)
    list(nat = rates(d, run(NULL), v, st), none = rates(d, run("none"), v, st))
  }
  worst <- function(r) max(r[names(r) != "risk1"])
  # "not raised": at most 0.003 above, under 3 of the 891 Titanic records (the battery's
  # rates are shares of records; ties at the top are shared, so one record's claim can move
  # a rate by a fraction of 1/891 = 0.0011)
  tol <- 0.003
  d <- titanic_paper()[-1]
  v <- c("Age", "Fare"); st <- c("Pclass", "Sex", "Family")
  for (k in c(3, 4, 10)) {
    r <- pair(d, v, st, k)
    expect_lte(worst(r$nat), worst(r$none) + tol)
    # The natural form keeps the mean and SD (the unformatted fares' mean is 1.6 to 4.8
    # below the original's at k = 3 to 10) and no fare below 0: the released values lie
    # closer to their originals (delta of Fare 0.0463 against 0.0473 at k = 3, 0.156
    # against 0.166 at k = 10) and some attacks gain, measured at k = 3, 4, 10: linkage
    # (released -> original) +0.013 to +0.029, top-3 +0.026 to +0.033, Fellegi-Sunter up to
    # +0.065 (from the mean and SD kept), the extreme values within 5% (tail_extremes) +0.10
    # to +0.125 (from the fares held above 0), risk1 +0.009 to +0.018; none is the worst
    att <- setdiff(names(r$nat), c("risk1", "tail_extremes", "fellegi_sunter"))
    expect_true(all(r$nat[att] <= r$none[att] + 0.035 + tol), info = paste("k =", k))
    expect_lte(r$nat[["tail_extremes"]], r$none[["tail_extremes"]] + 0.125 + 1e-12)
    expect_lte(r$nat[["fellegi_sunter"]], r$none[["fellegi_sunter"]] + 0.065 + tol)
    expect_lte(r$nat[["risk1"]], r$none[["risk1"]] + 0.02)
  }
  # simulated counts (Poisson 1 and 3, 1 to 6) and a whole-number variable of SD 10, in 3
  # strata: rounding them all raised risk1 from 0.003 to 0.28 and singling out from 0.08 to
  # 0.34 at k = 3, and holding them above 0 raised risk1 to 0.40: none is rounded or held
  # (whole numbers of SD below 500); the mean and SD kept raise linkage, singling out and
  # the extremes by at most 0.014 (k = 10)
  set.seed(1)
  n <- 1000
  dc <- data.frame(g = sample(c("a", "b", "c"), n, TRUE), p1 = rpois(n, 1), p3 = rpois(n, 3), r = sample(1:6, n, TRUE),
                   w = round(rnorm(n, 50, 10)))
  for (k in c(3, 10)) {
    r <- pair(dc, c("p1", "p3", "r", "w"), "g", k)
    expect_true(all(r$nat <= r$none[names(r$nat)] + 0.015), info = paste("counts, k =", k))
    expect_lte(r$nat[["risk1"]], r$none[["risk1"]] + tol)
  }
  skip_if_not_installed("sdcMicro")
  td <- get(utils::data("testdata", package = "sdcMicro", envir = environment()))
  td <- td[c("urbrur", "sex", "expend", "income", "savings")]
  r <- pair(td, c("expend", "income", "savings"), c("urbrur", "sex"), 3)
  expect_true(all(r$nat <= r$none[names(r$nat)] + 0.001))
})

test_that("the C column statistics of the release form count the values at the min and the max as R does", {
  set.seed(23)
  cols <- list(
    rnorm(200), c(1, 1, 1, 2, 3, 3), round(rnorm(500)), c(5, 5, 5), 7, c(-1e300, 1e300, 0),
    c(rep(0, 40), runif(60)), c(1 + 1e-15, 1, 1 + 1e-15, 2), sample(c(-2, 0, 2), 99, replace = TRUE)
  )
  for (x in cols) for (kk in c(0, 1, 3, min(length(x), 70))) {
    st <- .Call(detanon:::C_ffi_form_stats, as.double(x), as.double(kk))
    expect_length(st, 7L)
    expect_identical(st[1:2], range(x))
    expect_identical(st[6L], as.double(sum(x == min(x))))
    expect_identical(st[7L], as.double(sum(x == max(x))))
  }
  # all columns of a matrix in one call, on threads: the statistics of each column alone
  n <- 5000
  x <- cbind(rnorm(n), round(rnorm(n)), c(rep(0, 100), runif(n - 100)), rep(3, n), rexp(n) * 1e-3)
  for (kk in c(0, 3, 70)) for (nt in 1:2) {
    st <- .Call(detanon:::C_ffi_form_stats_cols, x, as.double(kk), nt)
    expect_identical(dim(st), c(7L, ncol(x)))
    for (j in seq_len(ncol(x))) {
      expect_identical(st[, j], .Call(detanon:::C_ffi_form_stats, x[, j], as.double(kk)), info = paste(kk, nt, j))
    }
  }
})

test_that("check_masking_args() returns the mask frame: the checked values, read with `$`", {
  d <- titanic_paper()[-1]
  f <- detanon:::check_masking_args(d, c("Age", "Fare"), c("Pclass", "Sex"), 3, engine = c("kdtree", "rann"),
                                    format = NULL, na = "median", small_strata = c("fail", "suppress", "merge"),
                                    choices = list(engine = c("kdtree", "rann"), na = detanon:::na_choices,
                                                   small_strata = detanon:::small_strata_choices),
                                    check_identifiers = TRUE, nthreads = 1)
  expect_identical(f, list(vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3L, engine = "kdtree",
                           format = "natural", na = "median", small_strata = "fail", check_identifiers = TRUE,
                           nthreads = 1L))
  # the defaults: the numeric columns not in the default strata
  g <- detanon:::check_masking_args(d[c("Sex", "Age", "Fare")], NULL, NULL, 2, na = "mean",
                                    choices = list(na = detanon:::na_choices))
  expect_identical(g[c("vars", "strata", "na")], list(vars = c("Age", "Fare"), strata = "Sex", na = "mean"))
  # the choices a verb passes are those of its signature
  for (verb in list(anonymise, anonymise_keyed, anonymise_mdav)) {
    expect_identical(eval(formals(verb)$na), detanon:::na_choices)
    expect_identical(eval(formals(verb)$small_strata), detanon:::small_strata_choices)
  }
  expect_identical(detanon:::rmd_defaults(),
                   list(w1 = formals(risk_rmd)$w1, w2 = formals(risk_rmd)$w2, neighbours = formals(risk_rmd)$neighbours))
})

test_that("every choice in a masking verb's signature passes its validation", {
  d <- data.frame(g = rep(c("a", "b"), each = 10), x = c(1:19, NA), y = (1:20)^2)
  runs <- list(
    list(anonymise, "engine"), list(anonymise, "na"), list(anonymise, "small_strata"),
    list(anonymise_adaptive, "format"), list(anonymise_keyed, "na"), list(anonymise_keyed, "small_strata"),
    list(anonymise_mdav, "na"), list(anonymise_mdav, "small_strata"), list(stir, "method"),
    list(stir, "small_strata"), list(blend_outliers, "method"))
  for (r in runs) {
    for (choice in eval(formals(r[[1]])[[r[[2]]]])) {
      args <- list(d, vars = c("x", "y"), strata = "g", k = 3)
      args[[r[[2]]]] <- choice
      if ("na" %in% names(formals(r[[1]])) && r[[2]] != "na") args$na <- "median"
      if ("key" %in% names(formals(r[[1]]))) args$key <- strrep("k", 16)
      if (!"na" %in% names(formals(r[[1]]))) args[[1]] <- transform(d, x = replace(x, 20, 20))
      res <- tryCatch(suppressWarnings(suppressMessages(do.call(r[[1]], args))), error = function(e) e)
      expect_false(inherits(res, "detanon_error_argument"), label = paste(r[[2]], "=", choice))
    }
  }
})

test_that("finite_columns() tells the finite columns as is.finite() does, and the checks keep their errors", {
  set.seed(9)
  n <- 3000
  d <- data.frame(a = rnorm(n), b = sample(1:5, n, TRUE), c = c(rnorm(n - 1), NA), e = c(NaN, rnorm(n - 1)),
                  f = c(rnorm(n - 1), -Inf), g = c(1:(n - 1), NA), h = rep(TRUE, n), s = rep("x", n),
                  z = rep(.Machine$double.xmax, n))
  ref <- vapply(d, function(v) !is.character(v) && all(is.finite(v)), logical(1))
  expect_identical(detanon:::finite_columns(d, names(d)), unname(ref))
  expect_identical(detanon:::finite_columns(d[0, ], names(d)), names(d) != "s")
  # a finite column whose sum overflows passes the checks; NaN, Inf and NA keep their classed errors
  expect_no_error(detanon:::check_masking_args(d[c("a", "z")], NULL, character(), 3))
  expect_error(anonymise(d[c("a", "e")], k = 3, strata = character()), class = "detanon_error_data")
  expect_error(anonymise(d[c("a", "f")], k = 3, strata = character()), "infinite", class = "detanon_error_data")
  expect_error(anonymise(d[c("a", "c")], k = 3, strata = character()), "missing values", class = "detanon_error_data")
  expect_error(anonymise(d[c("a", "g")], k = 3, strata = character()), "missing values", class = "detanon_error_data")
})
