# Slow, obviously correct R references for the C kernels.

# k nearest neighbours of every row inside its stratum, by brute force: order by squared
# distance (summed left to right as the C code does), then by the coordinates.
ref_knn_index <- function(z, id, k) {
  z <- as.matrix(z)
  idx <- matrix(NA_integer_, nrow(z), k)
  for (i in seq_len(nrow(z))) {
    s <- which(id == id[i])
    d2 <- numeric(length(s))
    for (j in seq_len(ncol(z))) d2 <- d2 + (z[i, j] - z[s, j])^2
    o <- do.call(order, c(list(d2), lapply(seq_len(ncol(z)), function(j) z[s, j])))
    idx[i, ] <- s[o[seq_len(k)]]
  }
  idx
}

# The five steps, transcribed from the paper (base R statistics).
ref_anonymise <- function(x, id, k) {
  x <- as.matrix(x)
  z <- sweep(sweep(x, 2, colMeans(x)), 2, apply(x, 2, sd), "/")
  nn <- ref_knn_index(z, id, k)
  cen <- matrix(NA_real_, nrow(z), ncol(z))
  for (i in seq_len(nrow(z))) cen[i, ] <- colMeans(z[nn[i, ], , drop = FALSE])
  sweep(sweep(cen, 2, apply(cen, 2, sd), "/"), 2, apply(x, 2, sd), "*") |>
    sweep(2, colMeans(x), "+")
}

# A test-only entry point of src/testing_glue.c (ffi_<name>); the test skips when the library
# was built without them (-DDETANON_NO_TESTING, CONTRIBUTING section 2).
test_call <- function(name, ...) {
  sym <- paste0("C_ffi_", name)
  ns <- asNamespace("detanon")
  if (!exists(sym, envir = ns, inherits = FALSE)) {
    testthat::skip(paste0("ffi_", name, " is not built (DETANON_NO_TESTING)"))
  }
  .Call(get(sym, envir = ns), ...)
}

knn_index <- function(z, id, k, nthreads = 1L) {
  test_call("knn_index", as.matrix(z), order(id), c(0, cumsum(tabulate(id))),
            as.integer(k), as.integer(nthreads))
}

random_data <- function(n, d = 2, n_strata = 3, seed = 1) {
  set.seed(seed)
  x <- as.data.frame(matrix(rnorm(n * d), n, d))
  names(x) <- paste0("x", seq_len(d))
  x$g <- factor(sample(letters[seq_len(n_strata)], n, replace = TRUE))
  x
}

# merge_small_strata() with its table of moves (carried by its classed message), as the
# list(data, moves) it returned before it returned the release only.
merge_with_moves <- function(expr) {
  moves <- data.frame(n = integer(), d_min = numeric(), d_max = numeric())
  data <- withCallingHandlers(expr, detanon_message_merge = function(m) {
    moves <<- m$moves
    invokeRestart("muffleMessage")
  })
  list(data = data, moves = moves)
}

# The release form of anonymise() as it was written in R (format_masked(), squeeze_range()
# before their passes over whole columns moved to C: src/mask.c; the squeeze as changed on
# branch tune, only the values beyond the bounds moved; on branch natural, no bound on a tie
# pile, a crowd beyond a bound left where it is, and whole numbers rounded only with an SD
# of 500 or more): the reference for the C version.
ref_format_masked <- function(m, x, k, format, as_integer) {
  if (format == "none" || !length(m)) return(m)
  n <- length(x)
  kk <- min(k, n)
  rng <- range(x)
  if (rng[1L] == rng[2L]) {
    # a constant column is released unchanged (bit for bit: the mean of k copies of 3.3
    # can be one unit in the last place off, and rounding to decimals can move it too)
    m <- rep(rng[1L], length(m))
    if (as_integer && m[1L] == round(m[1L])) m <- as.integer(m)
    return(m)
  }
  # the k smallest and k largest values by a partial sort (O(n), not a full sort); their
  # exact means do not depend on their order
  xs <- sort(x, partial = unique(c(kk, n + 1L - kk)))
  lo <- detanon:::exact_mean(xs[seq_len(kk)])
  hi <- detanon:::exact_mean(xs[n + 1L - seq_len(kk)])
  # whole numbers: always rounded by "precision", by "natural" only with an SD of 500 or more
  whole <- all(x == round(x))
  d <- if (format == "precision") {
    if (whole) 0L else detanon:::decimals(x)
  } else if (whole && stats::sd(x) >= 500) 0L else NA_integer_
  if (!is.na(d)) {
    p <- 10^d
    lo_d <- ceiling(lo * p) / p
    hi_d <- floor(hi * p) / p
    if (lo_d > hi_d) lo_d <- hi_d <- round((lo + hi) / 2, d)
    lo <- lo_d
    hi <- hi_d
  }
  # a bound that k or more records share (a tie pile) is no bound
  if (sum(x == rng[1L]) >= kk) lo <- -Inf
  if (sum(x == rng[2L]) >= kk) hi <- Inf
  b <- ref_form_bounds(m, lo, hi)
  m <- ref_squeeze_range(m, lo, hi)
  if (!is.na(d)) m <- pmin(pmax(round(m, d), b[1L]), b[2L])
  if (as_integer && identical(d, 0L)) m <- as.integer(m)
  m
}

ref_squeeze_range <- function(v, lo, hi) {
  m <- min(v)
  M <- max(v)
  b <- ref_form_bounds(v, lo, hi)
  if (m >= b[1L] && M <= b[2L]) return(v) # nothing to squeeze
  inside <- v >= lo & v <= hi
  if (m < b[1L]) {
    below <- v < lo
    t <- if (any(inside)) min(v[inside]) else hi
    # (values map into [lo, lo + (t - lo) / 2]: strictly below t, so the order is kept)
    v[below] <- lo + (v[below] - m) * (((t - lo) / 2) / (lo - m))
  }
  if (M > b[2L]) {
    above <- v > hi
    t <- if (any(inside)) max(v[inside]) else lo
    v[above] <- hi - (M - v[above]) * (((hi - t) / 2) / (M - hi))
  }
  pmin(pmax(v, b[1L]), b[2L])
}

# The bounds that apply to the masked values v: lo and hi, except that a crowd beyond a
# bound (more than 1 in 10 of the values) is left where it is (-Inf, Inf).
ref_form_bounds <- function(v, lo, hi) {
  c(if (10 * sum(v < lo) > length(v)) -Inf else lo, if (10 * sum(v > hi) > length(v)) Inf else hi)
}


# MDAV (anonymise_mdav(), src/mdav.c) by brute force, as the algorithm reads: the groups of
# the rows of z (one stratum, z-scale), k, with the canonical tie rule: nearest by squared
# distance (summed left to right) then coordinates; farthest by largest squared distance
# then the lexicographically smallest coordinates; the copies of a group's k-th nearest
# record join it; fewer than k records left join the last group; exact centroids. Group
# ids 1..G in the order formed. O(n^2 / k).
ref_mdav <- function(z, k) {
  z <- as.matrix(z)
  storage.mode(z) <- "double"
  n <- nrow(z)
  g <- integer(n)
  if (n < 2L * k || !ncol(z)) return(rep(1L, n))
  rem <- seq_len(n)
  gid <- 0L
  d2 <- function(q, idx) {
    s <- 0
    for (j in seq_len(ncol(z))) s <- s + (q[j] - z[idx, j])^2
    s
  }
  by_values <- function(idx, first = NULL) {
    do.call(order, c(if (!is.null(first)) list(first), unname(as.data.frame(z[idx, , drop = FALSE])),
                     list(method = "radix")))
  }
  farthest <- function(q) {
    dd <- d2(q, rem)
    cand <- rem[dd == max(dd)]
    cand[by_values(cand)[1L]]
  }
  centroid <- function() apply(z[rem, , drop = FALSE], 2L, detanon:::exact_mean)
  take <- function(q) {
    gid <<- gid + 1L
    if (length(rem) < 2L * k) {
      g[rem] <<- gid
      rem <<- integer()
      return(invisible())
    }
    grp <- rem[by_values(rem, d2(q, rem))[seq_len(k)]]
    last <- z[grp[k], ]
    copies <- rem[apply(z[rem, , drop = FALSE], 1L, function(p) all(p == last))]
    grp <- union(grp, copies)
    g[grp] <<- gid
    rem <<- setdiff(rem, grp)
    if (length(rem) && length(rem) < k) {
      g[rem] <<- gid
      rem <<- integer()
    }
  }
  while (length(rem) >= 3L * k) {
    q <- z[farthest(centroid()), ]
    take(q)
    if (!length(rem)) break
    take(z[farthest(q), ])
  }
  if (length(rem) >= 2L * k) take(z[farthest(centroid()), ])
  if (length(rem)) {
    gid <- gid + 1L
    g[rem] <- gid
  }
  g
}

# The same partition (group ids may differ)? Each pair (a, b) that occurs is one group of
# both.
same_partition <- function(a, b) {
  length(a) == length(b) && length(unique(a)) == length(unique(b)) &&
    length(unique(paste(a, b))) == length(unique(a))
}

# The MDAV kernel on given z-scores (no standardisation: mean 0, SD 1) within strata `id`.
mdav_kernel <- function(z, id, k, nthreads = 1L) {
  z <- as.matrix(z)
  storage.mode(z) <- "double"
  id <- as.integer(id)
  detanon:::mdav_groups(z, seq_len(ncol(z)), rep(0, ncol(z)), rep(1, ncol(z)), id,
                        rep(as.integer(k), max(id)), nthreads)
}

# The check number of each record (row of x) of the partitioned passes (mask_record_checks()):
# each value's 64-bit pattern (-0 as 0) modulo 1048573, from its two 32-bit halves in exact
# double arithmetic, mixed column by column, r = ((r + h)^2 + j) mod 1048573.
record_checks_ref <- function(x) {
  p <- 1048573
  r <- numeric(nrow(x))
  for (j in seq_len(ncol(x))) {
    for (i in seq_len(nrow(x))) {
      v <- x[i, j]
      if (!is.na(v) && v == 0) v <- 0
      w <- readBin(writeBin(v, raw(), endian = "little"), "integer", n = 2L, endian = "little")
      half <- ifelse(is.na(w), 2^31, ifelse(w < 0, w + 2^32, w)) # unsigned (NA_integer_ is 2^31)
      h <- ((half[2] %% p) * (2^32 %% p) + half[1] %% p) %% p
      r[i] <- ((r[i] + h)^2 + j) %% p
    }
  }
  r
}

# Data with tied records for the tests of work shared between attacks: 3000 records in 4
# strata, the first 400 rounded (duplicates), a fifth stratum "e" of `small` records and a
# categorical column `k`.
tied_strata_data <- function(seed, small) {
  d <- random_data(3000, d = 2, n_strata = 4, seed = seed)
  d[1:400, c("x1", "x2")] <- round(d[1:400, c("x1", "x2")]) # duplicated records
  d$g <- factor(d$g, levels = c(letters[1:4], "e"))
  d$g[3001 - seq_len(small)] <- "e"
  d$k <- sample(c("p", "q"), nrow(d), replace = TRUE)
  d
}
