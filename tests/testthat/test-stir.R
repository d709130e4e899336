# Cluster stirring (Rowe et al.): every equation against an R transcription.

enc_of <- function(d, vars) detanon:::stir_encode(d, vars)

test_that("equation (3): centroids and radii match brute force on random and adversarial data", {
  d <- stir_data(80)
  vars <- c("num", "int", "day", "ord", "fac", "chr", "lgl")
  e <- enc_of(d, vars)
  for (cl in list(rep(1L, 80), detanon:::stratum_ids(d, "grp"), rep(1:40, 2), seq_len(80),
                  rep(1:8, each = 10))) {
    C <- max(cl)
    cen <- detanon:::stir_centroids(e$x, e$nominal, cl, C)
    for (j in seq_along(vars)) for (c in seq_len(C)) {
      ref <- ref_centroid(e$x[cl == c, j], e$nominal[j])
      expect_equal(e$x[[cen$row[c, j], j]], ref$value)
      expect_equal(cen$radius[c, j], ref$radius)
      expect_equal(cl[cen$row[c, j]], c) # the centroid is a member value
    }
  }
  # large clusters with heavy ties and sorted / reversed input (quickselect paths)
  set.seed(9)
  v <- c(sample(1:3, 3000, TRUE), sort(rnorm(2001)), rev(seq_len(2000)), rep(4, 999))
  cl <- rep(1:4, c(3000, 2001, 2000, 999))
  cen <- detanon:::stir_centroids(cbind(v), FALSE, cl, 4L)
  for (c in 1:4) {
    ref <- ref_centroid(v[cl == c], FALSE)
    expect_identical(v[[cen$row[c, 1]]], ref$value)
    expect_identical(cen$radius[c, 1], ref$radius)
  }
  # ties everywhere, constant, near-underflow and huge values, clusters of one
  x <- cbind(a = c(1, 1, 2, 2, 5e-324, 1e-310, 0, 3e300, -3e300, 7),
             b = c(3, 3, 3, 3, 1, 2, 2, 1, 1, 2))
  cl <- c(1L, 1L, 1L, 1L, 2L, 2L, 2L, 3L, 3L, 4L)
  cen <- detanon:::stir_centroids(x, c(FALSE, TRUE), cl, 4L)
  for (j in 1:2) for (c in 1:4) {
    ref <- ref_centroid(x[cl == c, j], j == 2)
    expect_identical(x[[cen$row[c, j], j]], ref$value)
    expect_identical(cen$radius[c, j], ref$radius)
  }
})

test_that("section 3.2: the distance map is the quantile map onto |Z1 - Z2|", {
  d <- stir_data(200)
  m <- distance_map(d, vars = c("num", "int", "day", "ord", "fac", "chr", "lgl"))
  expect_s3_class(m, "detanon_distance_map")
  for (v in m$vars) {
    k <- m$knots[m$knots$variable == v, ]
    expect_identical(k$distance[1], 0)
    expect_identical(k$mapped[1], 0)
    expect_true(all(diff(k$distance) > 0) && all(diff(k$mapped) > 0))
  }
  # nominal: one knot at 1, from the exact share of equal pairs
  cnt <- table(d$fac)
  p0 <- sum(cnt * (cnt - 1)) / (200 * 199)
  k <- m$knots[m$knots$variable == "fac", ]
  expect_equal(k$distance, c(0, 1))
  expect_equal(k$mapped[2], sqrt(2) * qnorm((1 + p0 + (1 - p0) / 2) / 2))
  # integer distances: every distinct distance is a knot, at its mid-distribution value
  s <- sort(d$int)
  dd <- as.vector(dist(s))
  k <- m$knots[m$knots$variable == "int", ]
  u <- sort(unique(dd[dd > 0]))
  expect_equal(k$distance[-1], u)
  expect_equal(k$p[-1], vapply(u, function(a) mean(dd < a) + mean(dd == a) / 2, numeric(1)))
  # a standard normal variable maps (nearly) onto itself
  set.seed(3)
  z <- data.frame(z = rnorm(5000))
  mz <- distance_map(z, "z")
  kz <- mz$knots
  mid <- kz$p > 0.05 & kz$p < 0.95
  expect_lt(max(abs(kz$mapped[mid] - kz$distance[mid])), 0.1)
  # the map depends on the values only
  expect_identical(distance_map(d[nrow(d):1, ], "num")$knots, distance_map(d, "num")$knots)
  expect_output(print(m), "0/1 mismatch")
})

# The knots by the definition (all pairs materialised, |a - b| without squaring), for the
# counting kernel in C.
ref_knots <- function(v, n_sample = 1000, n_knots = 256) {
  s <- sort(v, method = "radix")
  if (length(s) > n_sample) s <- s[unique(round(seq(1, length(s), length.out = n_sample)))]
  pr <- utils::combn(length(s), 2L)
  dd <- sort(s[pr[2L, ]] - s[pr[1L, ]], method = "radix")
  r <- rle(dd)
  below <- cumsum(c(0, r$lengths))[seq_along(r$lengths)]
  pm <- (below + r$lengths / 2) / length(dd)
  keep <- r$values > 0
  u <- r$values[keep]
  p <- pm[keep]
  if (length(u) > n_knots) {
    idx <- unique(c(pmax(1L, findInterval((seq_len(n_knots) - 0.5) / n_knots, p)), length(u)))
    u <- u[idx]
    p <- p[idx]
  }
  list(distance = c(0, u), p = c(0, p))
}

test_that("the knots counted in C equal those of all pairs (ties, duplicates, few values, n = 2)", {
  set.seed(23)
  for (it in 1:120) {
    n <- sample(c(2:6, 40, 150), 1L)
    v <- switch(sample(5L, 1L), stats::rnorm(n), round(stats::rnorm(n) * 3), sample(c(0, 1, 1e-3), n, TRUE),
                stats::rexp(n)^3, rep(2.5, n))
    nk <- sample(c(2L, 3L, 10L, 256L), 1L)
    ns <- sample(c(30L, 1000L), 1L)
    m <- distance_map(data.frame(v = v), "v", n_sample = ns, n_knots = nk)
    ref <- ref_knots(v, ns, nk)
    expect_identical(m$knots$distance, ref$distance, info = it)
    expect_identical(m$knots$p, ref$p, info = it)
  }
})

test_that("distance_map: huge and tiny scales are not lost", {
  x <- c(1, 5, 2, 8, 3, 9, 4)
  base <- distance_map(data.frame(v = x), "v")$knots
  # exact scales (powers of two, also into the subnormal range): the same map, scaled
  for (sc in c(2^600, 2^-700, 2^-1060)) {
    k <- distance_map(data.frame(v = x * sc), "v")$knots
    expect_identical(k$p, base$p, info = sc)
    expect_identical(k$mapped, base$mapped, info = sc)
    expect_identical(k$distance, base$distance * sc, info = sc)
  }
  # decimal scales: finite knots, not a constant column
  for (sc in c(1e200, 1e-200)) {
    k <- distance_map(data.frame(v = x * sc), "v")$knots
    expect_true(all(is.finite(k$distance)) && all(diff(k$distance) > 0), info = sc)
    expect_gt(nrow(k), 5L)
  }
  expect_error(distance_map(data.frame(v = c(-1e308, 1e308)), "v"), "range overflows", class = "detanon_error_data")
})

test_that("equation (4): the nearest cluster in C matches the R transcription", {
  for (seed in 1:4) {
    d <- stir_data(70, seed)
    vars <- c("num", "int", "day", "ord", "fac", "lgl")
    e <- enc_of(d, vars)
    map <- detanon:::build_distance_map(e)
    xo <- e$x[1:15, , drop = FALSE]
    xc <- e$x[40:52, , drop = FALSE]
    xc <- rbind(xc, xc[3, ]) # a tie: the first of equal clusters wins
    near <- .Call(detanon:::C_ffi_stir_nearest, xo, xc, as.integer(e$nominal),
                  detanon:::map_knots(map, vars))
    expect_identical(near$target, ref_nearest(xo, xc, e$nominal, map, vars))
  }
})

test_that("equation (2): greedy clusters match the R transcription and keep every radius", {
  for (seed in 1:5) {
    d <- stir_data(50, seed)
    quasi <- c("num", "int", "fac", "day")
    eps <- c(num = 8, int = 3, fac = 0, day = 15)
    res <- stir_clusters(d, quasi = quasi, radius = eps)
    e <- enc_of(d, quasi)
    ref <- ref_clusters(cbind(.s = 1, e$x), c(TRUE, e$nominal), c(0, eps))
    expect_identical(res$class, ref)
    for (c in unique(res$class)) {
      x <- e$x[res$class == c, , drop = FALSE]
      expect_true(all(apply(x, 2, function(v) diff(range(v))) <= eps))
    }
    expect_identical(sum(res$classes$n), 50L)
    expect_identical(res$min_size, min(tabulate(res$class)))
  }
  # with strata: clusters never mix them; radius >= 1 on a nominal column lets anything in
  d <- stir_data(60)
  res <- stir_clusters(d, quasi = c("num", "lgl"), strata = "grp", radius = c(5, 1))
  expect_true(all(tapply(d$grp, res$class, function(g) length(unique(g))) == 1L))
  e <- enc_of(d, c("num", "lgl"))
  ref <- ref_clusters(cbind(.s = as.double(detanon:::stratum_ids(d, "grp")), e$x),
                      c(TRUE, e$nominal), c(0, 5, 1))
  expect_identical(res$class, ref)
  # row order only permutes the labels of identical rows: same clusters as value sets
  d <- stir_data(40)
  d$num <- d$num + seq_len(40) / 1e4 # distinct rows
  a <- stir_clusters(d, quasi = c("num", "int"), radius = c(6, 2))
  p <- sample(40)
  b <- stir_clusters(d[p, ], quasi = c("num", "int"), radius = c(6, 2))
  expect_identical(a$class[p], b$class)
  expect_output(print(a), "clusters of 1, 2, 3, 4, 5\\+ records")
  # n = 1 and radius = 0
  expect_identical(stir_clusters(d[1, ], quasi = "num", radius = 0)$class, 1L)
  expect_identical(max(stir_clusters(d, quasi = "num", radius = 0)$class), 40L)
})

test_that("equation (10): the shuffle is R's Fisher-Yates, keeps every cluster's values", {
  d <- stir_data(90)
  vars <- c("num", "int", "day", "ord", "fac", "chr", "lgl")
  set.seed(11)
  s <- stir(d, vars = vars, strata = "grp", k = 2)
  set.seed(11)
  src <- ref_shuffle(detanon:::stratum_ids(d, "grp"), length(vars))
  for (j in seq_along(vars)) {
    expect_identical(s[[vars[j]]], d[[vars[j]]][src[, j]])
    # per-cluster multisets (marginals), hence centroid and distances to it, unchanged
    for (g in levels(d$grp)) {
      expect_identical(sort(s[[vars[j]]][d$grp == g]), sort(d[[vars[j]]][d$grp == g]))
    }
  }
  expect_identical(s$grp, d$grp)
  # classes from equivalence_classes() (Mondrian on num within grp)
  ec <- equivalence_classes(d, k = 5, quasi = "num", strata = "grp")
  se <- stir(d, vars = c("int", "day"), classes = ec, seed = 2)
  for (c in unique(ec$class)) expect_identical(sort(se$int[ec$class == c]), sort(d$int[ec$class == c]))
  # the same seed reproduces the release, whatever the stream before; the stream is restored
  set.seed(5)
  before <- runif(1)
  set.seed(5)
  a <- stir(d, vars = vars, strata = "grp", seed = 99)
  expect_identical(runif(1), before)
  b <- stir(d, vars = vars, strata = "grp", seed = 99)
  expect_identical(a, b)
  # equivalence classes, a cluster id of one's own, and tibble / data.table in and out
  cl <- stir_clusters(d, quasi = c("num", "int"), radius = c(20, 10))
  big <- cl$class %in% which(cl$classes$n >= 3)
  s2 <- stir(d[big, ], vars = "num", classes = cl$class[big], seed = 1)
  for (c in unique(cl$class[big])) {
    expect_identical(sort(s2$num[cl$class[big] == c]), sort(d$num[big][cl$class[big] == c]))
  }
  if (requireNamespace("tibble", quietly = TRUE)) {
    expect_s3_class(stir(tibble::as_tibble(d), vars = "num", strata = "grp", seed = 1), "tbl_df")
  }
  if (requireNamespace("data.table", quietly = TRUE)) {
    expect_s3_class(stir(data.table::as.data.table(d), vars = "num", strata = "grp", seed = 1),
                    "data.table")
  }
})

test_that("equation (9): flattening sets every value to its cluster's centroid", {
  d <- stir_data(70)
  vars <- c("num", "day", "ord", "chr")
  f <- stir(d, vars = vars, strata = "grp", method = "flatten")
  e <- enc_of(d, vars)
  for (j in seq_along(vars)) for (g in levels(d$grp)) {
    ref <- ref_centroid(e$x[d$grp == g, j], e$nominal[j])
    both <- enc_of(rbind(d, f), vars[j])$x[, 1]
    expect_identical(both[[which(d$grp == g)[1]]] * 0 + ref$value, ref$value)
    expect_identical(unique(both[70 + which(d$grp == g)]), ref$value)
  }
  expect_s3_class(f$day, "Date")
  expect_true(is.ordered(f$ord))
  # levels that no cluster keeps are dropped, and only those
  expect_identical(levels(f$ord), intersect(levels(d$ord), unique(as.character(f$ord))))
  d2 <- d
  d2$fac <- factor(d2$fac, levels = c(levels(d$fac), "unused"))
  f2 <- stir(d2, vars = "fac", strata = "grp", method = "flatten")
  # the release keeps no level without records, whether it was empty before or emptied by flattening
  expect_false("unused" %in% levels(f2$fac))
  expect_true(all(setdiff(levels(d$fac), unique(as.character(f2$fac))) %in% setdiff(levels(d$fac), levels(f2$fac))))
  info <- attr(f, "detanon")
  expect_identical(info$settings$method, "flatten")
  expect_identical(info$counts$n_changed,
                   as.integer(sum(vapply(vars, function(v) sum(as.character(f[[v]]) != as.character(d[[v]])), numeric(1)))))
})

test_that("equations (4)-(8): outliers move to the nearest cluster, only eq-5 values change", {
  h <- health_table()
  for (method in c("member", "centroid", "noise")) {
    set.seed(7)
    b <- suppressMessages(blend_outliers(h, vars = c("age", "nationality"), strata = "zip", k = 3,
                                         method = method))
    # the R transcription: clusters, centroids, target, equation (5)
    dims <- c("zip", "age", "nationality")
    e <- enc_of(h, dims)
    cl <- detanon:::stratum_ids(h, "zip")
    size <- tabulate(cl)
    expect_true(any(size < 3))
    large <- which(size >= 3)
    xc <- t(vapply(large, function(c) vapply(seq_along(dims), function(j)
      ref_centroid(e$x[cl == c, j], e$nominal[j])$value, numeric(1)), numeric(3)))
    rad <- t(vapply(large, function(c) vapply(seq_along(dims), function(j)
      ref_centroid(e$x[cl == c, j], e$nominal[j])$radius, numeric(1)), numeric(3)))
    map <- detanon:::build_distance_map(e)
    movers <- which(size[cl] < 3)
    tgt <- ref_nearest(e$x[movers, , drop = FALSE], xc, e$nominal, map, dims)
    eb <- enc_of(b, dims)
    changed <- 0
    for (i in seq_along(movers)) for (j in seq_along(dims)) {
      r <- movers[i]
      t <- tgt[i]
      beyond <- ref_dist(e$x[r, j], xc[t, j], e$nominal[j]) > rad[t, j]
      new <- as.character(b[[dims[j]]][r])
      old <- as.character(h[[dims[j]]][r])
      if (!beyond) expect_identical(new, old)
      if (beyond) {
        changed <- changed + 1
        mem <- h[[dims[j]]][cl == large[t]]
        if (method == "centroid") expect_identical(eb$x[[r, j]], xc[t, j])
        if (method == "member" || e$nominal[j]) expect_true(new %in% as.character(mem))
        if (method == "noise" && !e$nominal[j]) {
          expect_lte(abs(b[[dims[j]]][r] - xc[t, j]), rad[t, j])
          expect_true(b[[dims[j]]][r] >= min(mem) && b[[dims[j]]][r] <= max(mem))
          expect_type(b[[dims[j]]][r], "integer") # integer columns stay whole numbers
        }
      }
    }
    expect_identical(as.data.frame(lapply(b[-movers, ], as.character)),
                     as.data.frame(lapply(h[-movers, ], as.character)))
    info <- attr(b, "detanon")$counts
    expect_identical(info$n_moved, length(movers))
    # cluster sizes: every stratum of the release has at least k records, the targets grew
    expect_true(all(table(droplevels(b$zip)) >= 3))
    expect_identical(sum(table(b$zip)[levels(h$zip)[large]]), sum(size[large]) + length(movers))
    expect_identical(info$n_changed, as.integer(changed))
    expect_identical(sum(info$n_changed_by_var), as.integer(changed))
    expect_true(is.integer(b$age))
    # a nominal radius is 1 unless the cluster is uniform: the outlier keeps its nationality,
    # while its zip (uniform in every stratum) is changed and its old level is dropped
    expect_identical(as.character(b$nationality[13]), "Icelandic")
    expect_false("99501" %in% levels(b$zip))
  }
  expect_message(blend_outliers(h, vars = "age", strata = "zip", k = 2, seed = 1), "moved 1 record")
})

test_that("the earth-mover distance of receiving clusters stays within its stated bound", {
  set.seed(2)
  d <- data.frame(g = factor(rep(c("a", "b", "c", "d"), c(40, 25, 2, 1))),
                  x = c(rnorm(40, 0), rnorm(25, 10), c(30, -20), 5),
                  y = round(c(rnorm(40, 50, 5), rnorm(25, 60, 5), 100, 0, 55)))
  for (method in c("noise", "member", "centroid")) {
    b <- suppressMessages(blend_outliers(d, vars = c("x", "y"), strata = "g", k = 3,
                                         method = method, seed = 4))
    em <- attr(b, "detanon")$counts$emd_max
    # recompute: the worst W1 / radius over receiving clusters and variables
    e <- enc_of(d, c("g", "x", "y"))
    cl <- as.integer(d$g)
    newcl <- as.integer(b$g)
    worst <- 0
    for (t in unique(newcl[cl > 2])) for (j in 2:3) {
      v <- e$x[cl == t, j]
      cen <- ref_centroid(v, FALSE)
      if (cen$radius == 0) next
      w <- ref_w1(abs(v - cen$value), abs(enc_of(b, c("g", "x", "y"))$x[newcl == t, j] - cen$value))
      worst <- max(worst, w / cen$radius)
      a <- sum(newcl == t) - length(v)
      expect_lte(w / cen$radius, a / (length(v) + a) + 1e-12)
    }
    expect_equal(em, worst)
  }
  expect_equal(detanon:::w1_distance(c(0, 1, 2), c(0, 1, 2, 5)), ref_w1(c(0, 1, 2), c(0, 1, 2, 5)))
})

test_that("stir(small_strata = 'blend') blends first, then stirs; 'fail' refuses", {
  h <- health_table()
  expect_error(stir(h, vars = "age", strata = "zip", k = 2), class = "detanon_error_small_strata")
  s <- suppressMessages(stir(h, vars = "age", strata = "zip", k = 2, small_strata = "merge", seed = 3))
  expect_identical(attr(s, "detanon")$counts$n_moved, 1L)
  expect_false("99501" %in% as.character(s$zip))
  expect_identical(sort(s$age[-13]), sort(h$age[-13]))
})

test_that("stirring composes with anonymise() and assess() measures it", {
  d <- titanic_paper()[-1]
  st <- c("Pclass", "Sex", "Family")
  m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = st)
  ms <- stir(m, vars = c("Age", "Fare"), strata = st, seed = 1)
  for (v in c("Age", "Fare")) {
    expect_equal(tapply(ms[[v]], interaction(d[st]), sort), tapply(m[[v]], interaction(d[st]), sort))
  }
  a <- assess(d, ms, vars = c("Age", "Fare"), strata = st, deterministic = TRUE)
  expect_s3_class(a, "detanon_assess")
  l0 <- risk_linkage(d, m, vars = c("Age", "Fare"), strata = st)$rate
  expect_lt(a$linkage$rate, l0)
})

test_that("bad input: classed errors naming the argument, input unchanged", {
  d <- stir_data(30)
  d0 <- d
  expect_error(stir(d, vars = "nope", strata = "grp"), "`vars`", class = "detanon_error")
  expect_error(stir(d, vars = "num"), "`strata`", class = "detanon_error_argument")
  expect_error(stir(d, vars = "num", strata = "grp", k = 1), "`k`", class = "detanon_error_argument")
  expect_error(stir(d, vars = "num", strata = "grp", method = "mix"), "`method`", class = "detanon_error")
  expect_error(stir(d, vars = "num", strata = "grp", seed = 1.5), "`seed`", class = "detanon_error_argument")
  expect_error(stir(d, vars = "num", strata = "grp", classes = 1:3), "`classes`",
               class = "detanon_error_argument")
  expect_error(stir(d, vars = "num", strata = "grp", classes = c(NA, rep(1L, 29))), "`classes`",
               class = "detanon_error_argument")
  expect_error(stir(d, vars = "grp", strata = "grp"), "both `vars` and `strata`", class = "detanon_error_column")
  dn <- d
  dn$num[3] <- NA
  expect_error(stir(dn, vars = "num", strata = "grp"), "missing", class = "detanon_error_data")
  dn$num[3] <- Inf
  expect_error(blend_outliers(dn, vars = "num", strata = "grp"), "infinite", class = "detanon_error_data")
  dl <- d
  dl$lst <- I(as.list(1:30))
  expect_error(stir(dl, vars = "lst", strata = "grp"), "`vars`", class = "detanon_error_column")
  expect_error(stir(d[0, ], vars = "num", strata = "grp"), "no records", class = "detanon_error_data")
  expect_error(blend_outliers(d, vars = "num", strata = "grp", k = 100), "no cluster",
               class = "detanon_error_small_strata")
  expect_error(blend_outliers(d, vars = "num", strata = "grp", map = list()), "`map`",
               class = "detanon_error_argument")
  expect_error(stir_clusters(d, quasi = "num"), "`radius`", class = "detanon_error_argument")
  expect_error(stir_clusters(d, quasi = c("num", "int"), radius = 1), "`radius`", class = "detanon_error_argument")
  expect_error(stir_clusters(d, quasi = "num", radius = -1), "`radius`", class = "detanon_error_argument")
  expect_error(stir_clusters(d, quasi = c("num", "int"), radius = c(a = 1, b = 2)), "names of `radius`",
               class = "detanon_error_argument")
  expect_error(distance_map(d, vars = character()), "`vars`", class = "detanon_error_argument")
  expect_error(distance_map(d[1, ], vars = "num"), "at least 2", class = "detanon_error_data")
  expect_identical(d, d0)
})

test_that("error messages are pinned", {
  d <- stir_data(30)
  expect_snapshot(error = TRUE, stir(d, vars = "num"))
  expect_snapshot(error = TRUE, stir(d, vars = "num", strata = "grp", k = 20))
  expect_snapshot(error = TRUE, stir(d, vars = "num", strata = "grp", classes = 1:3))
  expect_snapshot(error = TRUE, blend_outliers(d, vars = "num", strata = "grp", k = 100))
  expect_snapshot(error = TRUE, stir_clusters(d, quasi = c("num", "int"), radius = 1))
  expect_snapshot(error = TRUE, distance_map(d, vars = "nope"))
})

test_that("deprecated names: stir_clusters(eps =) and stir(small_strata = \"blend\")", {
  d <- data.frame(x = c(1, 2, 3, 10, 11, 30), g = "a")
  expect_warning(old <- stir_clusters(d, quasi = "x", eps = 2), "`eps` is deprecated; use `radius`",
                 class = "detanon_warning_deprecated")
  expect_identical(old, stir_clusters(d, quasi = "x", radius = 2))
  expect_identical(old$radius, c(x = 2))
  expect_warning(a <- suppressMessages(stir(d, vars = "x", classes = old$class, k = 2, small_strata = "blend",
                                            seed = 1)), class = "detanon_warning_deprecated")
  b <- suppressMessages(stir(d, vars = "x", classes = old$class, k = 2, small_strata = "merge", seed = 1))
  expect_identical(as.data.frame(a)$x, as.data.frame(b)$x)
})

test_that("stir()'s default `vars` leaves labelled columns out, as every verb does", {
  lab <- structure(c(1, 2, 1, 2, 1, 2), class = c("haven_labelled", "vctrs_vctr", "double"),
                   labels = c(no = 1, yes = 2))
  d <- data.frame(x = c(1, 2, 3, 4, 5, 6), g = "a")
  d$code <- lab
  s <- stir(d, strata = "g", k = 2, seed = 1)
  expect_identical(release_info(s)$settings$vars, "x")
  expect_identical(unclass(s$code), unclass(lab))
  b <- suppressMessages(blend_outliers(d, strata = "g", k = 2))
  expect_identical(release_info(b)$settings$vars, "x")
})

test_that("Ctrl-C is answered within a second by the long stirring loops", {
  # blend_outliers(): the nearest-cluster search over many small and large clusters
  expect_interruptible(
    c("set.seed(1); n <- 3e5; ns <- 2e4",
      "d <- data.frame(x1 = rnorm(n), x2 = rnorm(n))",
      "cl <- c(rep(seq_len(ns), each = 2), rep(ns + seq_len(3e4), length.out = n - 2 * ns))"),
    "blend_outliers(d, vars = c('x1', 'x2'), classes = cl, k = 3, seed = 1)")
  # stir_clusters() with a nominal first column (one leader can scan every record)
  expect_interruptible(
    c("set.seed(1); n <- 3e5", "d <- data.frame(g = sample(c('a', 'b'), n, TRUE), x = rnorm(n))"),
    "stir_clusters(d, quasi = c('g', 'x'), radius = c(g = 1, x = 1e-6))")
  # distance_map() with a large sample (base dist() could not be interrupted)
  expect_interruptible("d <- data.frame(x = rnorm(1e5), y = rnorm(1e5))",
                       "distance_map(d, vars = c('x', 'y'), n_sample = 5e4)")
})

test_that("a strata column named like an internal column is a stratum, beside `classes` (issue 34, item 8)", {
  set.seed(8)
  d <- data.frame(num = stats::rnorm(60), grp = rep(c("a", "b"), 30))
  cl <- rep(1:3, each = 20)
  ref <- stir(d, vars = "num", strata = "grp", classes = cl, seed = 3)
  for (nm in c(".classes", "v1", "v2")) {
    d2 <- d
    names(d2)[2L] <- nm
    s <- stir(d2, vars = "num", strata = nm, classes = cl, seed = 3)
    expect_identical(s$num, ref$num, label = nm)
  }
})

test_that("a missing stratum value is a stratum of its own", {
  set.seed(4)
  d <- data.frame(g = rep(c("a", NA, "b"), each = 6), x = rnorm(18), y = rnorm(18))
  out <- stir(d, vars = c("x", "y"), strata = "g", k = 3, method = "shuffle", seed = 1)
  # values move only within their stratum, the missing one included
  for (g in list("a", "b", NA)) {
    rows <- if (is.na(g)) is.na(d$g) else d$g %in% g
    expect_setequal(out$x[rows], d$x[rows])
  }
  expect_identical(out$g, d$g)
  # a variant: a numeric stratum column with a missing value
  d$g <- rep(c(1, NA, 2), each = 6)
  out <- stir(d, vars = c("x", "y"), strata = "g", k = 3, method = "shuffle", seed = 1)
  expect_setequal(out$x[is.na(d$g)], d$x[is.na(d$g)])
})
