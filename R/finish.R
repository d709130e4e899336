# The finishing step of every masking verb that releases one value per record, in memory
# (anonymise(), anonymise_adaptive(), anonymise_keyed(), anonymise_mdav()) and in pieces
# (anonymise_rescale() and anonymise_release() for anonymise_partitioned() and
# anonymise_db()): step 5 (the centroids back on the original scale), the release form of
# each column, the identifier warning and the release metadata.
#
# The release form of a column, from a description of the column (column_form() from its
# values in memory, stats_form() from the statistics of a partitioned run):
# * "none": the masked values unchanged (the paper's);
# * "precision": the values beyond k-record bounds squeezed inside them (squeeze_range())
#   and every value rounded to the decimals of the data (release_values());
# * "natural": the same squeeze, then one monotone map (finish_fit()) that keeps the mean
#   and the SD (`target`) and the sign: an affine map a + b * v of the values, those it
#   would put beyond a limit held in the gap next to it (the limits: the k-record bounds
#   the squeeze keeps, and 0 for data that are all >= 0 or all <= 0), with a, b and the
#   held values solved together so that mean and SD are kept exactly; whole numbers of
#   wide spread (round_whole()) then rounded so that their sum is kept (fit_rounding()).
#   Every quantity of the map is computed from exact sums and selections over the whole
#   column, so the release is the same for any row order, in memory or in pieces (`fold`).

# The release of the masked columns `columns` (a list, in the order of `vars`) of the rows
# `df`: each column in its release form (column_forms() of the records' values `x` before
# masking, k, `format`; integer columns of `data` stay integer where they are rounded to
# whole numbers), keeping the originals' mean and SD (`keep = "data"`: after step 5) or
# the masked values' mean and SD (`"masked"`: group means, whose SD is the method's and
# whose mean is the originals' unless keyed noise moved it: restoring the exact mean there
# would give back the exact column sum, and with it a withdrawn person's values to an
# intruder who differences two releases), after the identifier warning; returned in the class of `data` with the
# release metadata of `verb`. `nthreads`: for the statistics of the columns and the map of
# the natural form (the release is the same for every number). `x_stats`: the exact means
# and SDs of the columns of `x` on their scales 2^e, and e (list(mean, sd, e), as
# col_stats() and pow2_factors() give them), when the verb has them already; NULL: computed.
finish_release <- function(df, data, vars, strata, columns, x, k, format, check_identifiers,
                           keep = c("data", "masked"), verb, settings, counts, stats = NULL, nthreads = 1L,
                           x_stats = NULL) {
  keep <- match.arg(keep)
  if (check_identifiers) warn_identifiers(df, vars, strata)
  forms <- column_forms(x, k, format, vapply(vars, function(v) is.integer(data[[v]]), logical(1)), x_stats$e, nthreads)
  # (the mean and SD that the natural form keeps)
  targets <- if (format != "natural") vector("list", length(vars)) else if (keep == "masked") {
    lapply(seq_along(vars), function(j) column_target(columns[[j]], forms[[j]]$e))
  } else {
    if (is.null(x_stats)) x_stats <- col_stats(scale_tiny(x, forms_e(forms)), nthreads)
    lapply(seq_along(vars), function(j) list(n = nrow(x), mean = x_stats$mean[[j]], sd = x_stats$sd[[j]]))
  }
  for (j in seq_along(vars)) {
    df[[vars[j]]] <- finish_column(columns[[j]], forms[[j]], targets[[j]], nthreads = nthreads)
  }
  as_release(as_release_frame(df, data), verb, settings = settings, counts = counts, stats = stats,
             nthreads = nthreads)
}

# The release form of one column `m` (masked values) whose records had the values `x`
# before masking: finish_column() of column_form(x), keeping the mean and SD of `x`
# (`keep = "data"`) or the mean and SD of `m` (`"masked"`).
format_masked <- function(m, x, k, format, as_integer, keep = "data", nthreads = 1L) {
  form <- column_form(x, k, format, as_integer)
  target <- column_target(if (keep == "masked") m else x, form$e)
  finish_column(m, form, target, nthreads = nthreads)
}

# The description of a column for its release form from its values `x` before masking
# (complete): `format`, `as_integer`, `range`, `constant` and the `bounds` of
# release_bounds(): lo and hi the means of the k smallest and of the k largest values
# (k-record aggregates, like the centroids: never one record's value), no bound on a tie
# pile (pile_bounds()), and the decimals `d` the values are rounded to ("precision": those
# of `x`, whole numbers always; "natural": 0 for whole numbers of wide spread, round_whole(),
# else none).
column_form <- function(x, k, format, as_integer) {
  column_forms(matrix(as.double(x)), k, format, as_integer)[[1L]]
}

# column_form() of each column of the matrix `x` (`as_integer`: one flag per column; `e`:
# their power-of-two factors, NULL: pow2_factors()), the passes over the columns on
# `nthreads`.
column_forms <- function(x, k, format, as_integer, e = NULL, nthreads = 1L) {
  forms <- lapply(seq_len(ncol(x)), function(j) list(format = format, as_integer = as_integer[[j]], e = 0))
  if (format == "none" || !nrow(x)) return(forms)
  if (anyNA(x)) stop("internal error: missing values in column_form()")
  if (!is.double(x)) storage.mode(x) <- "double"
  if (is.null(e)) e <- pow2_factors(x)
  kk <- min(k, nrow(x))
  # one pass per column in C: range, whole numbers, and the exact means of the k smallest
  # and the k largest values (a selection, O(n): their means do not depend on their order),
  # and the counts of the minimum and the maximum
  st <- .Call(C_ffi_form_stats_cols, x, as.double(kk), nthreads)
  lapply(seq_len(ncol(x)), function(j) {
    form <- forms[[j]]
    form$e <- e[[j]]
    form$range <- st[1:2, j]
    form$constant <- st[1L, j] == st[2L, j]
    if (form$constant) return(form)
    whole <- st[3L, j] == 1
    d <- if (format == "precision") {
      if (whole) 0L else decimals(x[, j])
    } else if (whole && wide_whole(x[, j], st[2L, j] - st[1L, j])) 0L else NA_integer_
    form$bounds <- c(release_bounds(st[4L, j], st[5L, j], d, c(st[6L, j] >= kk, st[7L, j] >= kk)), whole = whole)
    form
  })
}

# The power-of-two factors of column_forms().
forms_e <- function(forms) vapply(forms, function(form) form$e, numeric(1))

# column_form() of the j-th of `vars` from the statistics `st` of anonymise_stats().
stats_form <- function(st, j) {
  form <- list(format = st$format, as_integer = st$integer[[j]], e = st$e[j])
  if (st$format == "none") return(form)
  form$range <- st$range[, j]
  form$constant <- st$constant[j]
  form$bounds <- st$bounds[[j]]
  form
}

# The mean and SD a natural release keeps, of the values `v` (exact), with their number;
# on the scale 2^e of a column of tiny values (pow2_factors(), as they are masked), where
# their squared deviations do not underflow.
column_target <- function(v, e = 0) {
  if (!length(v)) return(NULL)
  s <- col_stats(matrix(times_pow2(as.double(v), e)))
  list(n = length(v), mean = s$mean[[1L]], sd = s$sd[[1L]])
}

# The description `form` of a column and the limits `lim` of its squeeze on the scale 2^e
# of its map (column_target()): exact, powers of two.
pow2_form <- function(form, lim) {
  if (form$e != 0) {
    form$range <- times_pow2(form$range, form$e)
    form$bounds[c("lo", "hi")] <- lapply(form$bounds[c("lo", "hi")], times_pow2, e = form$e)
    lim <- times_pow2(lim, form$e)
  }
  list(form = form, lim = lim)
}

# One column `m` of masked values in the release form `form` (column_form(), stats_form()),
# keeping the mean and SD of `target` (column_target(); NULL: none kept). `scan` and `fit`:
# for one piece of a column (anonymise_release()), the scan of the squeeze (form_scan())
# and the map (finish_fit()) of the whole column.
finish_column <- function(m, form, target = NULL, scan = NULL, fit = NULL, nthreads = 1L) {
  if (form$format == "none" || !length(m)) return(m)
  if (anyNA(m)) stop("internal error: missing values in finish_column()")
  if (form$constant) return(constant_form(form$range[1L], length(m), form$as_integer))
  b <- form$bounds
  if (form$format == "precision") return(release_values(m, b, form$as_integer, scan))
  # (one scan gives the squeeze and its limits)
  sq <- if (is.null(scan)) form_squeeze(m, b$lo, b$hi, nthreads)
        else list(values = squeeze_range(m, b$lo, b$hi, scan = scan), scan = scan)
  scan <- sq$scan
  # (the map on the scale 2^e of a tiny column: column_target())
  v <- times_pow2(sq$values, form$e)
  if (is.null(fit)) {
    sc <- pow2_form(form, form_limits(NULL, b$lo, b$hi, scan))
    fit <- finish_fit(function(init, f) f(init, v), sc$form, target, sc$lim, nthreads)
  }
  # (v, the squeezed values, is this call's own new vector: the map overwrites it)
  v <- times_pow2(apply_fit(v, fit, nthreads, into = TRUE), -form$e)
  if (form$as_integer && identical(b$d, 0L)) v <- as.integer(v)
  v
}

# The map of the natural form (finish_fit()) of the j-th of `vars` in a partitioned run,
# from passes over the pieces that `read` gives: values(piece) is the piece's masked column
# before its release form, `scan` the scan of the whole column. `keep`: as in
# finish_release() (the mean and SD of the masked values, exact over all pieces, for group
# means).
pieces_fit <- function(read, st, j, scan, values, keep = "data") {
  b <- st$bounds[[j]]
  e <- st$e[j]
  each <- function(init, f, squeeze = TRUE) {
    acc <- init
    for_each_chunk(read, function(piece, i) {
      if (!piece$n) return(invisible())
      m <- values(piece)
      acc <<- f(acc, times_pow2(if (squeeze) squeeze_range(m, b$lo, b$hi, scan = scan) else m, e))
    })
    acc
  }
  # (the statistics of a tiny column are on its scale 2^e)
  target <- list(n = st$n, mean = st$mean[[j]], sd = st$sd[[j]])
  if (keep == "masked") {
    sums <- function(centre) function(acc, m) .Call(C_ffi_acc_add, acc, matrix(m), centre)
    mean_m <- acc_round(each(NULL, sums(NULL), squeeze = FALSE)) / st$n
    target$mean <- mean_m
    target$sd <- sqrt(acc_round(each(NULL, sums(mean_m), squeeze = FALSE)) / (st$n - 1))
  }
  sc <- pow2_form(stats_form(st, j), form_limits(NULL, b$lo, b$hi, scan))
  finish_fit(each, sc$form, target, sc$lim)
}

# The map of the natural form of a column (finish_column()) from its squeezed values, which
# `fold(init, f)` reads: f(acc, v) on each piece v of the column in turn, starting from
# `init`, returns the new acc. `lim`: the limits the squeeze keeps (form_limits()). Returns
# the limits L and U (those of the squeeze, and 0 for data all >= 0 or all <= 0 unless they
# are whole numbers left unrounded), the affine map a + b * v, the values held at L (v < tL)
# and at U (v > tU), and for whole numbers the rounding (fit_rounding()).
finish_fit <- function(fold, form, target, lim, nthreads = 1L) {
  # (no sign limit for whole numbers kept unrounded, see the help of anonymise())
  sign <- !(isTRUE(form$bounds$whole) && is.na(form$bounds$d))
  fit <- list(L = max(lim[1L], if (sign && form$range[1L] >= 0) 0 else -Inf),
              U = min(lim[2L], if (sign && form$range[2L] <= 0) 0 else Inf),
              a = 0, b = 1, tL = -Inf, tU = Inf)
  if (!is.null(target)) fit <- fit_moments(fold, fit, target, nthreads)
  if (identical(form$bounds$d, 0L)) fit <- fit_rounding(fold, fit, nthreads)
  fit
}

# The affine map and the values held at the limits that give the mean and SD of `target`.
# The values that the map puts below L (v < tL) are held just above L, in the first half of
# the gap between L and the lowest value of the others (the spread dL, as the squeeze does:
# piled on L, the values of a count below its floor 0 lay on the originals' zeros, and
# risk_rmd()'s risk1 on simulated counts rose from 0.003 to 0.40), likewise above U. Given
# the held values, a and b put the mean and the sum of squared deviations of the others
# where the target's need them (closed form, from exact sums); values that the map puts
# beyond a limit join the held ones and a and b are solved again, until no value crosses
# (the held sets only grow) and the spreads lie inside the gaps. When the limits leave too
# little room (the target's SD cannot be reached inside them), the map is left as it is
# (values only held inside the limits).
fit_moments <- function(fold, fit, target, nthreads = 1L) {
  n <- target$n
  mu <- target$mean
  ss <- (n - 1) * target$sd^2
  L <- fit$L
  U <- fit$U
  # (vmin and vmax, the ends of all values, are those of the free values of the first pass,
  # where every value is free)
  try <- c(fit, list(dL = 0, dU = 0, vmin = 0, vmax = 0))
  prev <- NULL
  for (it in seq_len(100L)) {
    # (counts below tL and above tU, least and largest free value, then the exact sums of
    # the free values, of the held ones and of their squared deviations from mu)
    s1 <- fold(NULL, function(acc, v) .Call(C_ffi_fit_sums, acc, v, fit_par(try), mu, FALSE, nthreads))
    if (is.null(s1)) return(fit)
    if (it == 1L) {
      try$vmin <- s1[3L]
      try$vmax <- s1[4L]
    }
    sums <- function(i) matrix(s1[4L + (i - 1L) * FSUM_ACC_LEN + seq_len(FSUM_ACC_LEN)])
    nF <- n - s1[1L] - s1[2L]
    if (nF < 2) return(fit)
    mF <- acc_round(sums(1L)) / nF
    dev <- acc_round(matrix(fold(NULL, function(acc, v) .Call(C_ffi_fit_sums, acc, v, fit_par(try), mF, TRUE, nthreads))))
    # values that lie inside the limits with the target's mean and SD (to rounding error)
    # stay as they are
    if (nF == n && abs(mF - mu) <= 1e-13 * target$sd && abs(dev - ss) <= 1e-13 * ss) return(fit)
    muF <- (n * mu - acc_round(sums(2L))) / nF
    need <- ss - acc_round(sums(3L)) - nF * (muF - mu)^2
    if (!(dev > 0) || !(need > 0) || muF < L || muF > U) return(fit)
    try$b <- sqrt(need / dev)
    try$a <- muF - try$b * mF
    prev <- try
    tL <- max(try$tL, (L - try$a) / try$b)
    tU <- min(try$tU, (U - try$a) / try$b)
    if (tL != try$tL || tU != try$tU) {
      try$tL <- tL
      try$tU <- tU
      next
    }
    # the held sets are stable: their spreads must lie inside the gaps to the free values
    gL <- (try$a + try$b * s1[3L] - L) / 2
    gU <- (U - (try$a + try$b * s1[4L])) / 2
    okL <- s1[1L] == 0 || (try$dL > 0 && try$dL <= gL)
    okU <- s1[2L] == 0 || (try$dU > 0 && try$dU <= gU)
    if (okL && okU) break
    if (!okL) try$dL <- gL
    if (!okU) try$dU <- gU
  }
  if (is.null(prev)) fit else prev
}

# The length of an exact accumulator (FSUM_ACC_LEN of src/fsum.h).
FSUM_ACC_LEN <- 70L

# The map `fit` as the numbers src/mask.h's mask_fit holds (no values are held when dL and
# the others are not set).
fit_par <- function(fit) {
  held <- if (is.null(fit$dL)) c(0, 0, 0, 0) else c(fit$dL, fit$dU, fit$vmin, fit$vmax)
  c(fit$L, fit$U, fit$a, fit$b, fit$tL, fit$tU, held)
}

# The values of the map `fit` (finish_fit()) on the squeezed values `v`: a + b * v, the
# values beyond the thresholds held at the limits (see fit_moments()): below tL, spread
# over [L, L + dL) by their distance from the lowest value vmin; above tU, over
# (U - dU, U]; all kept within [L, U] (mask_fit_apply() in C). `into`: written over `v`, a
# double vector of the caller's own that nothing else refers to (a column less of memory).
apply_fit <- function(v, fit, nthreads = 1L, into = FALSE) {
  w <- .Call(C_ffi_fit_apply, as.double(v), fit_par(fit), nthreads, into)
  if (is.null(fit$cut)) return(w)
  # to whole numbers: to nearest, except the values at or beyond the cut in the order of
  # (fraction, value), which go the other way (fit_rounding())
  r <- floor(w + 0.5)
  other <- beyond_cut(w + 0.5 - r, w, fit$cut, fit$up)
  pmin(pmax(r + if (fit$up) other else -other, ceiling(fit$L)), floor(fit$U))
}

# Whether the values w with fractions g are at or beyond `cut` = c(fraction, value): in the
# order of fraction then value, at or above it (`up`), else at or below it.
beyond_cut <- function(g, w, cut, up) {
  if (up) g > cut[1L] | (g == cut[1L] & w >= cut[2L]) else g < cut[1L] | (g == cut[1L] & w <= cut[2L])
}

# Rounding to whole numbers that keeps the sum: rounded to nearest, the sum differs from
# that of the unrounded values w by R units; the |R| values nearest to rounding the other
# way go the other way: those with the largest fractions g of w + 0.5 when R > 0, the
# smallest when R < 0, ties in g broken by the value (so equal values go alike and the sum
# is kept to a unit, or as closely as equal values allow).
fit_rounding <- function(fold, fit, nthreads = 1L) {
  unrounded <- fit
  w_of <- function(v) apply_fit(v, unrounded, nthreads)
  s <- fold(list(sum = NULL, base = NULL), function(acc, v) {
    w <- w_of(v)
    list(sum = .Call(C_ffi_acc_add, acc$sum, matrix(w), NULL),
         base = .Call(C_ffi_acc_add, acc$base, matrix(floor(w + 0.5)), NULL))
  })
  if (is.null(s$sum)) return(fit)
  R <- round(acc_round(s$sum)) - acc_round(s$base)
  if (R == 0) return(fit)
  up <- R > 0
  R <- abs(R)
  # the R values first to go, as rows (fraction, value), merged piece by piece
  first <- function(gw) {
    o <- if (up) order(-gw[, 1L], -gw[, 2L]) else order(gw[, 1L], gw[, 2L])
    gw[o[seq_len(min(R, length(o)))], , drop = FALSE]
  }
  ends <- fold(NULL, function(acc, v) {
    w <- w_of(v)
    first(rbind(acc, cbind(w + 0.5 - floor(w + 0.5), w)))
  })
  cut <- ends[nrow(ends), ]
  # the values at or beyond the cut, and those equal to it: records that share the value
  # at the cut go all (cnt[1] values go) or none (cnt[1] - cnt[2]), whichever is nearer R
  cnt <- fold(c(0, 0), function(acc, v) {
    w <- w_of(v)
    g <- w + 0.5 - floor(w + 0.5)
    acc + c(sum(beyond_cut(g, w, cut, up)), sum(g == cut[1L] & w == cut[2L]))
  })
  if (cnt[1L] - R > R - (cnt[1L] - cnt[2L])) {
    # fewer: the last of `ends` before the equal values at the cut
    before <- which(!(ends[, 1L] == cut[1L] & ends[, 2L] == cut[2L]))
    if (!length(before)) return(fit)
    cut <- ends[max(before), ]
  }
  fit$cut <- unname(cut)
  fit$up <- up
  fit
}

# Whether the natural form rounds a whole-number variable of SD `sd` to whole numbers: only
# when half a unit is at most 0.001 SD (an SD of 500 units or more), the scale below which
# risk_rmd()'s intervals (w1 * rmd: 0.01 * 0.05 * the record's robust distance, about 0.001
# SD for a typical record) call a masked value a match. Rounding a variable of smaller
# spread puts masked values back on the originals' whole numbers: on simulated counts
# (Poisson, SD 1 to 2) at k = 10 it raised risk1 from 0.04 (unformatted) to 0.12 and
# Fellegi-Sunter linkage from 0.19 to 0.57; on a variable of SD 59 risk1 still rose by 0.017.
round_whole <- function(sd) isTRUE(sd >= 500)

# round_whole() of the SD of `x`, whose range is `range`, without a pass over `x` when the
# range alone decides: an SD never exceeds range / 2 * sqrt(n / (n - 1)) <= range / sqrt(2),
# so below a range of 700 (SD at most 495) it is FALSE (ages, counts, hours).
wide_whole <- function(x, range) {
  range >= 700 && round_whole(col_stats(matrix(as.double(x)))$sd[[1L]])
}

# A constant column is released unchanged (bit for bit: the mean of k copies of 3.3 can be
# one unit in the last place off, and rounding to decimals can move it too).
constant_form <- function(value, n, as_integer) {
  m <- rep(value, n)
  if (as_integer && n && m[1L] == round(m[1L])) m <- as.integer(m)
  m
}

# The bounds of the release form from the exact means `lo` and `hi` of the k smallest and k
# largest values, the decimals d (NA: none) and `pile` (c(low, high): whether k or more
# records hold the minimum / maximum): list(lo, hi, d). A bound on a tie pile is no bound
# (-Inf or Inf; pile_bounds()).
release_bounds <- function(lo, hi, d, pile = c(FALSE, FALSE)) {
  if (!is.na(d)) {
    p <- 10^d
    lo_d <- ceiling(lo * p) / p
    hi_d <- floor(hi * p) / p
    if (lo_d > hi_d) lo_d <- hi_d <- round((lo + hi) / 2, d)
    lo <- lo_d
    hi <- hi_d
  }
  pile_bounds(list(lo = lo, hi = hi, d = d), pile)
}

# When k or more records share the minimum (the k smallest are all equal: the bound is that
# shared value, which reveals no one), the values below it are not moved: moving them to
# the bound (or into the gap above it) put them on the pile of originals where their own
# records mostly lie. On the Titanic fares (15 zeros) at k = 10 that gave 314 of the 891
# records a fare within 0.5 of 0 and raised Fellegi-Sunter linkage from 0.015 (unformatted)
# to 0.043; on simulated counts it raised singling out by up to 0.078. Likewise at the top.
# They then stay below the pile (e.g. negative), as in the unformatted release.
pile_bounds <- function(b, pile) {
  if (pile[1L]) b$lo <- -Inf
  if (pile[2L]) b$hi <- Inf
  b
}

# The masked values `m` of a column in their release form inside the bounds `b`
# (release_bounds()): squeezed (and rounded to whole numbers when d = 0) in C, rounded to
# d > 0 decimals. `scan`: see squeeze_range().
release_values <- function(m, b, as_integer, scan = NULL) {
  if (!is.na(b$d) && b$d > 0L) lim <- form_limits(m, b$lo, b$hi, scan)
  m <- squeeze_range(m, b$lo, b$hi, round0 = identical(b$d, 0L), scan = scan)
  if (!is.na(b$d) && b$d > 0L) m <- pmin(pmax(round(m, b$d), lim[1L]), lim[2L])
  if (as_integer && identical(b$d, 0L)) m <- as.integer(m)
  m
}

# The limits that apply to the masked values `v` (the whole column: `scan` when `v` is one
# piece of it) with bounds lo and hi: c(lo, hi), except -Inf (Inf) when the values below lo
# (above hi) are a crowd that the release form leaves where it is (squeeze_range()).
form_limits <- function(v, lo, hi, scan = NULL) {
  cnt <- if (is.null(scan)) c(length(v), sum(v < lo), sum(v > hi)) else scan[6:8]
  c(if (cnt[2L] * FORM_CROWD > cnt[1L]) -Inf else lo, if (cnt[3L] * FORM_CROWD > cnt[1L]) Inf else hi)
}

# More than 1 in FORM_CROWD of a column's values beyond one of its bounds are a crowd, not
# a few extreme values: MASK_FORM_CROWD of src/mask.h.
FORM_CROWD <- 10

# squeeze_range() of the masked values `v` of a whole column, and the scan it takes
# (form_scan()), in passes over blocks of rows on `nthreads` (the same values for every
# number): list(values, scan).
form_squeeze <- function(v, lo, hi, nthreads = 1L) .Call(C_ffi_form_squeeze, as.double(v), lo, hi, nthreads)

# Map the values of `v` into [lo, hi] keeping their order, moving only the values beyond
# a bound: those below lo are mapped linearly from [min(v), lo) into [lo, t), t the
# smallest value inside the range (the gap between the bound and the next value), and
# likewise at the top; values inside the range are unchanged. Except: when more than 1 in
# 10 of the values lie beyond a bound (a crowd, not a few extremes), they stay where they
# are. Step 5 stretches a skewed variable with a floor: 22% to 55% of four Tarragona
# variables fall below their bounds at k = 10, 35% of the CASC interest values, 10% to 14%
# of three EIA sales; the few extremes of a symmetric variable are fewer (1.3% to 2.8% of
# the Titanic ages at k = 3 to 10, about 5% of normal values at k = 4). Squeezing such a
# crowd into the gap piled it onto the originals next to the bound, where its own records
# lie: it raised linkage (released -> original) on Tarragona at k = 10 from 0.252
# (unformatted) to 0.271, top-3 from 0.368 to 0.399. The squeeze of the whole
# tail before (every value below a pivot up to the median, moved) pressed half of the
# Titanic fares into the band of low fares where most originals lie and raised risk1 at
# k = 4 from 0.025 (no form) to 0.22; moving only the values beyond the bounds gives
# 0.036. When no value lies inside the range on one side, those values are set to the bound.
# With `round0`, the result is then rounded to whole numbers kept inside [lo, hi]. In C
# (mask_release_form() in src/mask.c: one pass for min, max and the extreme values inside
# [lo, hi], one to map), the same arithmetic as the R reference in
# tests/testthat/helper-reference.R.
# `scan`: when `v` is one piece of a column (a partitioned run, anonymise_release()), the
# scan of the whole column (form_scan(), merged over its pieces): the same map, piece by
# piece (mask_form_apply()).
squeeze_range <- function(v, lo, hi, round0 = FALSE, scan = NULL) {
  if (is.null(scan)) return(.Call(C_ffi_squeeze, as.double(v), lo, hi, round0))
  .Call(C_ffi_form_apply, as.double(v), lo, hi, scan, round0)
}

# The scan of the release form (mask_form_scan: min, max, smallest and largest value inside
# [lo, hi], whether any is inside, the numbers of values, of those below lo and of those
# above hi) of the values `v`, merged into `scan` (a previous scan,
# or NULL): a column in pieces is scanned piece by piece.
form_scan <- function(v, lo, hi, scan = NULL) {
  .Call(C_ffi_form_scan, as.double(v), lo, hi, scan)
}

# Number of decimals (0 to 10) at which all of `x` are recorded, NA if more.
decimals <- function(x) {
  ok <- which(decimals_ok(x))
  if (length(ok)) ok[1L] - 1L else NA_integer_
}

# For d = 0 to 10, whether all of `x` are recorded to d decimals (only the d where `ok`):
# a column in chunks is checked chunk by chunk.
decimals_ok <- function(x, ok = rep(TRUE, 11L)) {
  for (d in which(ok) - 1L) {
    y <- x * 10^d
    # a tolerance relative to the value (rounding error of x * 10^d), so that a tiny value
    # (1e-250) is not taken for a whole number
    ok[d + 1L] <- all(abs(y - round(y)) <= 1e-12 * abs(y))
  }
  ok
}

# The release side of step 5, shared by every masking path: a warning for the columns
# released as their mean, the scaling factors named by column (NA where none applies),
# and the tiny columns scaled back by their power of two.
step5_release <- function(res, x, cols, tiny) {
  warn_flat(colnames(x)[cols][is.na(res$scale)])
  scale <- stats::setNames(rep(NA_real_, ncol(x)), colnames(x))
  scale[cols] <- res$scale
  columns <- res$columns
  for (j in which(tiny$e != 0)) columns[[j]] <- times_pow2(columns[[j]], -tiny$e[j])
  list(columns = columns, scale = scale)
}

# The warning for the columns `flat` whose centroids are all equal (released as the mean).
warn_flat <- function(flat) {
  if (!length(flat)) return(invisible())
  warn_detanon("All centroids of ", quote_names(flat), " are equal (k too large for ",
               "the strata); released as the original mean.", kind = "data")
}
