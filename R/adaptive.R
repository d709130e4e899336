#' k-nearest-neighbour centroids with a larger k for records that stay linkable
#'
#' The five steps of [anonymise()] (Avraam, Jones and Burton 2022) with `k` chosen per
#' record: every record starts with `k` points; a record whose released point is still
#' *linkable* gets more neighbours (one more while it has fewer than 8 points, then a
#' quarter more, rounded down), and this repeats until no record is linkable or
#' the linkable ones have reached `k_max` (or their stratum's size). A record is linkable
#' when
#' * its own original is the nearest original of its stratum to its released point (the
#'   nearest-neighbour link of [risk_linkage()]; ties count as linked), or
#' * its own original is among the `m` nearest (fewer than `m` originals are strictly
#'   nearer: the top-m linkage of [risk_linkage()]) while more than `rate * n` records
#'   are so (with the default `rate = 0`: while any record is), or, when `w1` is given,
#' * some masked variable lies strictly inside the interval original +/- `w1 * rmd` of
#'   [risk_rmd()] (its `risk1`), with the robust covariance computed by
#'   `robustbase::covMcd(nsamp = "deterministic")` so that no random numbers are drawn.
#'
#' The released point used in these tests is the record's centroid after step 5 (divided
#' by the SD of all centroids). A round tests the records whose centroid changed; when no
#' record is left to grow, every record is tested again on the final centroids (and the
#' rounds go on if any is flagged), so the tests see the release that is returned (with
#' `format = "none"`; the natural form then moves the few values beyond k-record bounds
#' inside them, keeps the means, SDs and signs and rounds widely spread whole-number
#' variables, which moves them slightly:
#' measure the release, as [tune_release()] does).
#' Step 5 itself is the paper's, unchanged.
#'
#' `rate` may hold several decreasing shares: they are run as stages, each starting from
#' the neighbourhoods the previous stage ended with (with the `k_max` of its stage), so a
#' path of releases from light to strong masking costs little more than its last step.
#'
#' For data that do not fit in memory, [anonymise_partitioned()] and [anonymise_db()] with
#' `method = "adaptive"` give the same release, bit for bit (one `k`, without `w1`), and with
#' `method = "stratum"` that of `m = 0` (one `k` or a table of k per stratum).
#'
#' The search, the centroids and the tests run in C on one kd-tree per stratum; ties among neighbours are broken by
#' their coordinates and all sums are exact or in coordinate order, so the release is the
#' same for every `nthreads` and permuting the rows only permutes it. Same inputs, same
#' release: there is nothing random.
#'
#' @section What it protects against and what it does not:
#' It lowers the success of the nearest-neighbour (or top-`m`) linking attack and of the
#' interval test for an intruder who knows the originals but not the algorithm. The
#' release is still a deterministic function of the data: an intruder who knows the
#' algorithm, its settings and the originals can run it again and match the records
#' (measure it with [risk_replay()]). Which records were given more neighbours is not in
#' the release or its metadata, but an intruder who replays the algorithm learns it. A
#' record that is no longer among the `m` nearest may well be the `m + 1`-th: check [risk_linkage()] with a larger `m` and the
#' expected re-identification probability. The categorical `strata` are released
#' unchanged (check [strata_table()]); records at their cap may stay linkable (counted in
#' the metadata as `n_capped`).
#'
#' @inheritParams anonymise
#' @param k The first (and smallest) number of points in each centroid: a whole number >= 2,
#'   or one per stratum, as a data frame with the `strata` columns and a column `k` (one row
#'   per stratum; rows of strata absent from `data` are ignored). Every stratum must have at
#'   least its `k` records (see [merge_small_strata()]).
#' @param k_max The largest number of points in a centroid, a whole number >= every `k`;
#'   or one per stage of `rate`.
#' @param m A record is linkable while its own original is among the `m` nearest
#'   originals to its released point (see `rate`); a whole number >= 0. With `m = 0` and
#'   `w1 = NULL` nothing is tested and every record keeps its `k`: k-nearest-neighbour
#'   centroids with a `k` per stratum.
#' @param rate The share of records that may stay top-`m` linkable, a number from 0 to 1:
#'   their neighbourhoods grow, round by round, until no more than `rate * n` are. As a
#'   record is top-m linkable whenever its top-m share is positive, the top-m rate
#'   (`rate_m`) of [risk_linkage()] on the release is then at most `rate` (unless records reach their
#'   cap; see `n_capped`). Several decreasing shares are run as stages (see above).
#' @param format The release form of the masked values, as in [anonymise()]: `"natural"`
#'   (the few values beyond k-record bounds of the range moved inside, the mean and SD
#'   kept, no value of the wrong sign, whole-number variables of SD 500 or more rounded),
#'   `"precision"` or `"none"` (the values as computed).
#' @param w1 `NULL`, or the interval weight of [risk_rmd()] (a number > 0, e.g. 0.01):
#'   records flagged by its `risk1` test are linkable too.
#' @return An object of the same class as `data` with the masked columns replaced (as
#'   doubles), rows and all other columns unchanged. Its release metadata
#'   ([release_info()]) hold only aggregate information: the settings (`k`, `k_max`, `m`,
#'   `rate`, `w1`, `vars`, `strata`), the counts `n`, `n_strata`, `min_size`, `mean_k` and
#'   `max_k` (over all records), `n_grown` (records given more than `k` points), `n_capped`
#'   (records still linkable at their cap) and `rounds`, and the scaling factors of step 5.
#' @references Avraam D, Jones E, Burton P (2022). A deterministic approach for protecting
#'   privacy in sensitive personal data. *BMC Medical Informatics and Decision Making*,
#'   22, 24.
#' @family masking verbs
#' @seealso [anonymise()], [risk_linkage()], [risk_replay()], [tune_release()].
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise_adaptive(d, vars = c("Age", "Fare"),
#'                              strata = c("Pclass", "Sex", "Family"), k = 3, m = 1)
#' release_info(masked)
#' risk_linkage(d, masked)$rate
#' @section sdcMicro: `data` may be an `sdcMicroObj`; the result is then one too ([sdc_extract()]).
#' @export
anonymise_adaptive <- function(data, vars = NULL, strata = NULL, k = 3, k_max = 33, m = 1,
                               rate = 0, w1 = NULL, format = c("natural", "precision", "none"),
                               check_identifiers = TRUE, household = NULL,
                               nthreads = getOption("detanon.nthreads", 1L)) {
  if (is_sdc(data)) return(sdc_verb(anonymise_adaptive, data, match.call(), parent.frame())) # R/sdcmicro.R
  if (!is.null(household)) return(household_verb(anonymise_adaptive, data, household, match.call(), parent.frame()))
  # a table `k` is checked by adaptive_start_k()
  f <- check_masking_args(data, vars, strata, k, format = format,
                          choices = list(format = c("natural", "precision", "none")), k_table = TRUE,
                          check_identifiers = check_identifiers, nthreads = nthreads)
  m <- check_whole(m, "m", min = 0)
  rate <- check_rates(rate)
  if (!is.null(w1)) w1 <- check_number(w1, "w1", lower = 0, lower_open = TRUE)
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  p <- adaptive_setup(df, f$vars, f$strata, rmd = !is.null(w1), nthreads = f$nthreads)
  k0 <- adaptive_start_k(f$k, df, f$strata, p)
  k_max <- check_k_max(k_max, rate, max(k0))
  # a table: only the strata of `data`, no row names
  k <- if (is.data.frame(f$k)) k_table_of(df, f$strata, p, k0) else f$k
  fit <- adaptive_fit(p, k0, k_max, m, rate, w1, f$nthreads)
  adaptive_release(data, df, p, fit, f$format, min(k0),
                   settings = list(k = k, k_max = k_max, m = m, rate = rate, w1 = w1, format = f$format,
                                   vars = f$vars, strata = f$strata), check_identifiers = f$check_identifiers)
}

# The parts of an adaptive masking that do not depend on its settings: the complete
# matrix (tiny columns scaled by a power of two), the column statistics, the z-scores of
# the masked columns, the strata, the rank index of the originals and (rmd = TRUE) the
# robust covariance of the interval test. tune_release() builds it once for all candidates.
# `rmd_sample`: when more records than that, the robust covariance is estimated on that
# many (rmd_sample_rows()), for measures that only report it.
adaptive_setup <- function(df, vars, strata, rmd, nthreads, rmd_sample = NULL) {
  x0 <- numeric_matrix(df, vars) # complete and finite (check_masking_args())
  id <- stratum_ids(df, strata)
  sizes <- tabulate(id, max(id))
  tiny <- pow2_normalise(x0)
  x <- tiny$x
  stats <- column_scale(x, nthreads)
  cols <- masked_columns(x, stats)
  p <- list(x0 = x0, x = x, tiny = tiny, stats = stats, cols = cols, id = id, sizes = sizes,
            order = as.integer(order(id, method = "radix")), offsets = as.integer(c(0L, cumsum(sizes))))
  if (length(cols)) {
    p$z <- unname(z_scores(x, stats))
    p$index <- rank_index(p$z, p)
    if (rmd) {
      if (nrow(x) < length(cols) + 2L) {
        stop_arg("`w1` needs more records than variables to estimate a robust covariance.", kind = "data")
      }
      xc <- x[, cols, drop = FALSE]
      p$rmd <- rmd_core(xc, deterministic = TRUE, rows = if (!is.null(rmd_sample)) rmd_sample_rows(xc, rmd_sample))
      p$rmd$n_cov <- if (is.null(rmd_sample)) nrow(xc) else min(nrow(xc), rmd_sample)
    }
  }
  p
}

# The first k of every record: one k, or a table of k per stratum (the strata columns and
# a column `k`). Every stratum must hold at least its k records.
adaptive_start_k <- function(k, df, strata, p) {
  if (is.data.frame(k)) {
    keys <- stratum_keys(df[match(seq_along(p$sizes), p$id), , drop = FALSE], strata)
    return(k_per_stratum(k, strata, keys, p$sizes)[p$id])
  }
  small <- which(p$sizes < k) # (one k, checked by check_masking_args())
  if (length(small)) stop_small_strata(df, p$id, p$sizes, small, strata, k, "merge_small_strata() first")
  rep.int(as.integer(k), length(p$id))
}

# The k of each stratum (its stratum key `keys`, its records `sizes`) from a table `k` of
# the strata columns and a column `k` (rows of other strata are ignored). Every stratum must
# have a row and hold at least its k records. The in-memory verbs and the partitioned
# passes (anonymise_stats()) check a table here.
k_per_stratum <- function(k, strata, keys, sizes) {
  miss <- setdiff(c(strata, "k"), names(k))
  if (length(miss)) {
    stop_arg("`k` as a table needs the `strata` columns and a column `k`; it lacks ", quote_names(miss), ".")
  }
  kk <- k$k
  if (!is.numeric(kk) || anyNA(kk) || any(kk != round(kk)) || any(kk < 2) || any(kk > .Machine$integer.max)) {
    stop_arg("the column `k` of `k` must hold whole numbers >= 2.")
  }
  tk <- stratum_keys(k, strata)
  if (anyDuplicated(tk)) stop_arg("`k` has more than one row for a stratum.")
  at <- match(keys, tk)
  if (anyNA(at)) {
    stop_arg("`k` has no row for ", plural(sum(is.na(at)), "stratum", "strata"), " of `data`.")
  }
  ks <- as.integer(kk[at])
  small <- which(sizes < ks)
  if (length(small)) {
    stop_arg(plural(length(small), "stratum has", "strata have"), " fewer records than its `k` in ",
             "the table `k` (the smallest has ", plural(min(sizes[small]), "record"), " for k = ",
             ks[small][which.min(sizes[small])], ").", kind = "small_strata")
  }
  ks
}

# The table of k per stratum of a release: the strata columns of its strata (in the
# order of their ids) and their k; nothing else of the caller's table.
k_table_of <- function(df, strata, p, k_rows) {
  first <- match(seq_along(p$sizes), p$id)
  tab <- df[first, strata, drop = FALSE]
  rownames(tab) <- NULL
  tab$k <- k_rows[first]
  tab
}

check_rates <- function(rate) {
  if (!is.numeric(rate) || !length(rate) || anyNA(rate) || any(rate < 0 | rate > 1) ||
      is.unsorted(rev(rate), strictly = TRUE)) {
    stop_arg("`rate` must be a share from 0 to 1, or decreasing shares (stages), not ",
             show_value(rate), ".")
  }
  as.double(rate)
}

check_k_max <- function(k_max, rate, k) {
  ok <- is.numeric(k_max) && length(k_max) %in% c(1L, length(rate)) && !anyNA(k_max) &&
    all(k_max == round(k_max)) && all(k_max >= k) && all(k_max <= .Machine$integer.max)
  if (!ok) {
    stop_arg("`k_max` must be a whole number >= k (", k, "), or one per stage of `rate`, not ",
             show_value(k_max), ".")
  }
  as.integer(rep_len(k_max, length(rate)))
}

# The rounds of the adaptive kernel, stage by stage: k per record never shrinks, each
# stage starts where the previous ended. Returns the centroids (z-scale) and the counts,
# and with `keep_state` the `state` where the rounds ended, from which a later call on the
# same `p`, `m` and `w1` starting at the final k goes on (`state`; NULL: from the start)
# without computing and testing every centroid again (the same bits as without it).
adaptive_fit <- function(p, k0, k_max, m, rate, w1, nthreads, state = NULL, keep_state = FALSE) {
  n <- length(p$id)
  fit <- list(k = k0, k0 = k0, rounds = 0L, n_capped = 0, centroids = NULL)
  if (!length(p$cols)) return(fit)
  xs <- wr <- NULL
  if (!is.null(w1)) {
    xs <- unname(p$rmd$x)
    attributes(xs) <- list(dim = dim(xs))
    wr <- w1 * as.double(p$rmd$rmd)
  }
  size <- p$sizes[p$id]
  for (i in seq_along(rate)) {
    cap <- pmax(fit$k, pmin(k_max[i], size))
    if (!is.null(state) && !(identical(state$k, fit$k) && identical(state$m, m) && identical(state$w1, w1))) {
      state <- NULL
    }
    res <- .Call(C_ffi_adaptive_k, p$index, fit$k, as.integer(cap), m,
                 floor(rate[i] * n + 1e-9), xs, wr, nthreads, state$test)
    fit$centroids <- res[[1L]]
    fit$k <- res[[2L]]
    fit$rounds <- fit$rounds + res[[3L]]
    fit$n_capped <- res[[4L]]
    state <- if (res[[8L]]) list(k = fit$k, m = m, w1 = w1, test = c(res[1L], res[5:7]))
  }
  if (keep_state) fit$state <- state
  fit
}

# The fits of adaptive_fit(p, k[, j], k[, j], 0L, 0, NULL, nthreads) for every column j of
# the n x R integer matrix k (per record nondecreasing): the centroids of the k nearest at
# several k from one neighbour search at the largest (adaptive_ladder() in adaptive.c),
# with the same bits.
adaptive_rungs <- function(p, k, nthreads) {
  if (!length(p$cols)) return(lapply(seq_len(ncol(k)), function(j) adaptive_fit(p, k[, j], k[, j], 0L, 0, NULL, nthreads)))
  cents <- .Call(C_ffi_adaptive_ladder, p$z, p$order, p$offsets, k, nthreads)
  lapply(seq_len(ncol(k)), function(j) list(k = k[, j], k0 = k[, j], rounds = 1L, n_capped = 0, centroids = cents[[j]]))
}

# Step 5 and the finishing step (finish_release()): the centroids rescaled to the original
# means and SDs, in the release form of anonymise(), with metadata of aggregates only.
adaptive_release <- function(data, df, p, fit, format, k_range, settings, check_identifiers = FALSE) {
  vars <- colnames(p$x0)
  step5 <- step5_release(rescale_centroids(p$x, p$cols, p$stats, fit$centroids), p$x, p$cols, p$tiny)
  finish_release(df, data, vars, settings$strata, step5$columns, p$x0, k_range, format, check_identifiers,
                 verb = "anonymise_adaptive", settings = settings,
                 counts = list(n = nrow(df), n_strata = length(p$sizes), min_size = min(p$sizes),
                               mean_k = mean(fit$k), max_k = max(fit$k), n_grown = sum(fit$k > fit$k0),
                               n_capped = as.integer(fit$n_capped), rounds = as.integer(fit$rounds)),
                 stats = list(scale = stats::setNames(step5$scale, vars)))
}

# ---- the partitioned method (method_registry()$adaptive) ---------------------------------
# The rounds of adaptive_fit() over groups of whole strata. Only two quantities of a round
# join the strata: step 5's column SDs of all centroids and the selection of the least
# moved top-m linkable records of all strata. The lead process holds every kept record's k,
# last rank test (rank and cost) and centroid, in one canonical order: the kept strata in
# the order of the strata table, each stratum's records sorted by their z-scores (records
# with equal z-scores have equal k, tests and centroids in the kernel, so which of them is
# which does not matter): (16 + 8 d) bytes per record, 48 MB per 1e6 records of 4 masked
# columns, and 8 d bytes per top-m linkable record not yet grown (its centroid at the grown
# k, kept until it grows or the stage ends).
# One pass over the groups (on the workers) builds each group's rank index of the original
# z-scores and its centroids at the first k; the indexes go to private temporary files of
# the lead (they hold original values; about 100 bytes per record at d = 4), so that the
# rounds read no data again. A round, group by group: test the records whose centroid
# changed (or all, on a full round) on the SDs of all centroids, and compute the centroids
# at the grown k of every record that the selection could grow (top-m linkable below its
# cap); then select as adaptive_k() does and take the grown records' centroids.

# The rounds on all strata (map(fun) returns fun(data, st, nthreads) of every group): the
# statistics with `adaptive`, the final k of every record (canonical order), the starts of
# the strata in that order by key, the rounds and the records capped.
adaptive_plan <- function(st, map) {
  tab <- st$strata_table[st$strata_table$keep, , drop = FALSE]
  n <- st$n
  k <- rep.int(as.integer(st$k), n)
  start <- stats::setNames(c(0, cumsum(tab$n))[seq_len(nrow(tab))], tab$key)
  st$adaptive <- list(start = start, k = k, rounds = 0L, n_capped = 0L)
  if (!length(st$cols)) return(st)
  dir <- tempfile("detanon-adaptive-")
  dir.create(dir, mode = "0700")
  on.exit(unlink(dir, recursive = TRUE), add = TRUE)
  files <- character()
  cent <- matrix(0, n, length(st$cols))
  for (g in map(adaptive_prepare(start))) {
    cent[g$at, ] <- g$cent
    # (the threads the workers were given, for the rounds)
    nthreads <- g$nthreads
    files <- c(files, file.path(dir, sprintf("group-%08d.rds", length(files) + 1L)))
    saveRDS(g[c("index", "at")], files[length(files)], compress = FALSE)
  }
  size <- rep.int(as.integer(tab$n), tab$n)
  m <- st$m
  rank <- integer(n)
  cost <- numeric(n)
  rounds <- 0L
  for (i in seq_along(st$rate)) {
    cap <- pmax(k, pmin(st$k_max[i], size))
    target <- floor(st$rate[i] * n + 1e-9)
    full <- TRUE
    n_capped <- 0L
    nxt_at <- integer()
    nxt <- matrix(0, 0L, length(st$cols))
    repeat {
      rounds <- rounds + 1L
      csd <- col_stats(cent)$sd
      # nothing left to tell apart (the verb warns and releases the mean), or nothing tested
      if (any(!(csd > 0)) || m == 0L) break
      tested <- logical(n)
      tested[if (full) seq_len(n) else at] <- TRUE
      have <- logical(n)
      have[nxt_at] <- TRUE
      res <- lapply(files, function(f) adaptive_step(readRDS(f), k, cap, rank, m, cent, tested, have, csd, nthreads))
      nxt_at <- c(nxt_at, unlist(lapply(res, `[[`, "spec_at"), use.names = FALSE))
      nxt <- do.call(rbind, c(list(nxt), lapply(res, `[[`, "spec")))
      for (g in res) {
        rank[g$test_at] <- g$rank
        cost[g$test_at] <- g$cost
      }
      # the selection of adaptive_k(): the nearest-linked always, then the least moved of
      # the other top-m linkable records below their cap while too many are top-m linkable,
      # every record tied at the cut-off with them
      nn <- rank == 0L
      cand <- rank > 0L & rank < m
      flag <- nn
      need <- sum(rank < m) - target - sum(nn)
      pick <- cost[cand & k < cap]
      if (need > 0 && length(pick)) {
        cut <- if (need >= length(pick)) Inf else sort(pick, partial = need)[need]
        flag <- flag | (cand & cost <= cut)
      }
      at <- which(flag & k < cap)
      n_capped <- sum(flag) - length(at)
      if (!length(at)) {
        if (full) break
        full <- TRUE # every record tested again on the current centroids
        next
      }
      full <- FALSE
      k[at] <- adaptive_grow(k[at], cap[at])
      u <- match(at, nxt_at)
      cent[at, ] <- nxt[u, , drop = FALSE]
      nxt_at <- nxt_at[-u]
      nxt <- nxt[-u, , drop = FALSE]
    }
  }
  st$adaptive$k <- k
  st$adaptive$rounds <- rounds
  st$adaptive$n_capped <- as.integer(n_capped)
  st
}

# One more point up to k = 8, then a quarter more, up to the cap (as adaptive_k()).
adaptive_grow <- function(k, cap) pmin(k + pmax(k %/% 4L, 1L), cap)

# The first pass on each group (a function made here, so that it carries only `start` to
# the workers): its rank index, the canonical positions of its records and their centroids
# at the first k.
adaptive_prepare <- function(start) {
  force(start)
  function(data, st, nthreads) {
    kept <- stratum_kept(data, st)
    keys <- unique(kept$keys)
    g <- adaptive_group(scale_tiny(kept$x, st$e), match(kept$keys, keys), keys, st, start)
    c(g, list(cent = .Call(C_ffi_adaptive_centroids, g$index, rep.int(as.integer(st$k), length(g$at)),
                           seq_along(g$at), nthreads), nthreads = nthreads))
  }
}

# A round on one group (its index and positions `at`): the rank tests of the records
# `tested` (logical, canonical order) on their centroids `cent` divided by `csd`, and the
# centroids at the grown k of every record then top-m linkable (rank < m, the last test of
# the others) below its cap, unless the lead has them (`have`).
adaptive_step <- function(g, k, cap, rank, m, cent, tested, have, csd, nthreads) {
  rows <- which(tested[g$at])
  at <- g$at[rows]
  res <- .Call(C_ffi_adaptive_tests, g$index, cent[at, , drop = FALSE], rows, as.double(csd), m, nthreads)
  r <- rank[g$at]
  r[rows] <- res[[1L]]
  kk <- k[g$at]
  cc <- cap[g$at]
  grow <- which(r < m & kk < cc & !have[g$at])
  kk[grow] <- adaptive_grow(kk[grow], cc[grow])
  list(test_at = at, rank = res[[1L]], cost = res[[2L]], spec_at = g$at[grow],
       spec = .Call(C_ffi_adaptive_centroids, g$index, kk, grow, nthreads))
}

# The rank index of a group of whole strata (xs: their records, tiny columns scaled; id:
# 1..S by `keys`) and the canonical position of each record (adaptive_plan(): `start`, the
# position before each stratum's first, by key).
adaptive_group <- function(xs, id, keys, st, start) {
  cols <- st$cols
  z <- z_scale(xs[, cols, drop = FALSE], st$mean[cols], st$sd[cols])
  o <- do.call(order, c(list(id), unname(as.data.frame(z)), method = "radix"))
  sizes <- tabulate(id, length(keys))
  at <- integer(length(id))
  # (by match(): the key of the one stratum without `strata` is "")
  at[o] <- as.integer(rep.int(start[match(keys, names(start))], sizes) + sequence(sizes))
  list(index = rank_index(z, list(order = o, offsets = as.integer(c(0L, cumsum(sizes))))), at = at)
}

# anonymise_adaptive() on whole strata, with the k of every record from adaptive_plan():
# the centroids of the masked columns (z-scale; step 5 follows).
adaptive_kernel <- function(xs, cols, mean, sd, id, k, nthreads, stats, keys) {
  if (is.null(stats$adaptive)) {
    stop_arg("`stats` of method \"adaptive\" lack the k of every record from its rounds, which ",
             "anonymise_partitioned() and anonymise_db() run between the statistics and the masking pass.")
  }
  g <- adaptive_group(xs, id, keys, stats, stats$adaptive$start)
  list(values = .Call(C_ffi_adaptive_centroids, g$index, stats$adaptive$k[g$at], seq_along(g$at), nthreads))
}

# (k0: the first k of every record, canonical order)
adaptive_meta <- function(st, step5, counts, k0 = st$k) {
  k <- st$adaptive$k
  list(settings = list(k = if (is.null(st$k_table)) st$k else st$k_table, k_max = st$k_max, m = st$m,
                       rate = st$rate, w1 = NULL, format = st$format, vars = st$vars, strata = st$strata),
       counts = c(counts[1:3], list(mean_k = mean(k), max_k = max(k), n_grown = sum(k > k0),
                                    n_capped = st$adaptive$n_capped, rounds = st$adaptive$rounds)),
       stats = list(scale = step5$scale))
}
