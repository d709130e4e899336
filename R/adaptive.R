#' k-nearest-neighbour centroids with a larger k for records that stay linkable
#'
#' The five steps of [anonymise()] (Avraam, Jones and Burton 2022) with `k` chosen per
#' record: every record starts with `k` points; a record whose released point is still
#' *linkable* gets more neighbours (one more while it has fewer than 8 points, then an
#' eighth more, rounded down), and this repeats until no record is linkable or
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
#' by the SD of all centroids), recomputed in every round, so the tests see the release
#' that is returned; step 5 itself is the paper's, unchanged. The search, the centroids
#' and the tests run in C on one kd-tree per stratum; ties among neighbours are broken by
#' their coordinates and all sums are exact or in coordinate order, so the release is the
#' same for every `nthreads` and permuting the rows only permutes it. Same inputs, same
#' release: there is nothing random.
#'
#' @section What it protects against and what it does not:
#' It lowers the success of the nearest-neighbour (or top-`m`) linking attack and of the
#' interval test for an intruder who knows the originals but not the algorithm. The
#' release is still a deterministic function of the data: an intruder who knows the
#' algorithm, its settings and the originals can run it again and match the records
#' (measure it with [risk_replay()]). A record that is no longer among the `m` nearest
#' may well be the `m + 1`-th: check [risk_linkage()] with a larger `m` and the
#' expected re-identification probability. The categorical `strata` are released
#' unchanged (check [strata_table()]); records at their cap may stay linkable (counted in
#' the metadata as `n_capped`).
#'
#' @inheritParams anonymise
#' @param k The first (and smallest) number of points in each centroid, a whole number >= 2.
#'   Every stratum must have at least `k` records (see [merge_small_strata()]).
#' @param k_max The largest number of points in a centroid, a whole number >= `k`.
#' @param m A record is linkable while its own original is among the `m` nearest
#'   originals to its released point (see `rate`); a whole number >= 1.
#' @param rate The share of records that may stay top-`m` linkable, a number from 0 to 1:
#'   their neighbourhoods grow, round by round, until no more than `rate * n` are. As a
#'   record is top-m linkable whenever its top-m share is positive, the top-m rate of
#'   [risk_linkage()] on the release is then at most `rate` (unless records reach their
#'   cap; see `n_capped`).
#' @param w1 `NULL`, or the interval weight of [risk_rmd()] (a number > 0, e.g. 0.01):
#'   records flagged by its `risk1` test are linkable too.
#' @return An object of the same class as `data` with the masked columns replaced (as
#'   doubles), rows and all other columns unchanged. Its release metadata
#'   ([release_info()]) hold only aggregate information: the settings (`k`, `k_max`, `m`,
#'   `rate`, `w1`, `vars`, `strata`), the counts `n`, `n_strata`, `min_size`, `mean_k` and
#'   `max_k` (over all records), `n_grown` (records given more than `k` points), `n_capped`
#'   (records still linkable at their cap) and `rounds`, and the scaling factors of step 5.
#'   The masked values are released as computed (the form of `anonymise(format = "none")`).
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
#' @export
anonymise_adaptive <- function(data, vars = NULL, strata = NULL, k = 3, k_max = 33, m = 1,
                               rate = 0, w1 = NULL, nthreads = getOption("detanon.nthreads", 1L),
                               check_identifiers = TRUE) {
  check_data_frame(data, "data")
  k <- check_whole(k, "k", min = 2)
  k_max <- check_whole(k_max, "k_max", min = k)
  m <- check_whole(m, "m", min = 1)
  rate <- check_number(rate, "rate", lower = 0, upper = 1)
  if (!is.null(w1)) w1 <- check_number(w1, "w1", lower = 0, lower_open = TRUE)
  nthreads <- check_nthreads(nthreads)
  strata <- check_columns(strata, data, "strata", default_strata(data))
  check_strata_columns(data, strata)
  vars <- check_columns(vars, data, "vars",
                        setdiff(names(data)[vapply(data, is_continuous, logical(1))], strata))
  check_vars(data, vars, strata)
  check_flag(check_identifiers, "check_identifiers")
  if (!nrow(data)) stop_arg("`data` has no rows: there is nothing to anonymise.")
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  x <- numeric_matrix(df, vars)
  if (anyNA(x) || any(is.infinite(x))) {
    stop_arg("`vars` have missing or infinite values; impute them or drop those records ",
             "first (anonymise(na = ) can impute).", kind = "data")
  }
  id <- stratum_ids(df, strata)
  sizes <- tabulate(id, max(id))
  if (any(sizes < k)) {
    stop_small_strata(df, id, sizes, which(sizes < k), strata, k, "merge_small_strata() first")
  }
  # tiny-valued columns scaled exactly by a power of two (else their SD underflows to 0
  # and they would be released as constants), and back at the end, as in anonymise()
  tiny <- pow2_normalise(x)
  x <- tiny$x
  stats <- col_stats(x, nthreads)
  cols <- masked_columns(x, stats)
  res <- list(k = rep(k, nrow(x)), rounds = 0L, n_capped = 0)
  out_cols <- lapply(seq_len(ncol(x)), function(j) x[, j])
  scale <- stats::setNames(rep(NA_real_, ncol(x)), vars)
  if (length(cols)) {
    z <- sweep(sweep(x[, cols, drop = FALSE], 2L, stats$mean[cols]), 2L, stats$sd[cols], "/")
    xs <- wr <- NULL
    if (!is.null(w1)) {
      if (nrow(x) < length(cols) + 2L) {
        stop_arg("`w1` needs more records than variables to estimate a robust covariance.", kind = "data")
      }
      r <- rmd_core(x[, cols, drop = FALSE], deterministic = TRUE)
      xs <- unname(r$x[, , drop = FALSE])
      attributes(xs) <- list(dim = dim(xs))
      wr <- w1 * as.double(r$rmd)
    }
    res <- .Call(C_ffi_adaptive_k, unname(z), as.integer(order(id, method = "radix")),
                 as.integer(c(0L, cumsum(sizes))), k, k_max, m, floor(rate * nrow(x) + 1e-9), xs, wr, nthreads)
    names(res) <- c("centroids", "k", "rounds", "n_capped")
    c_sd <- col_stats(res$centroids, nthreads)$sd
    flat <- flat_centroids(c_sd, 1e-10, vars[cols])
    for (j in seq_along(cols)) {
      v <- cols[j]
      out_cols[[v]] <- if (flat[j]) rep(stats$mean[[v]], nrow(x))
                       else res$centroids[, j] / c_sd[j] * stats$sd[[v]] + stats$mean[[v]]
      scale[v] <- if (flat[j]) NA_real_ else stats$sd[[v]] / c_sd[j]
    }
  }
  for (j in which(tiny$e != 0)) out_cols[[j]] <- times_pow2(out_cols[[j]], -tiny$e[j])
  if (check_identifiers) warn_identifiers(df, vars, strata)
  for (j in seq_along(vars)) df[[vars[j]]] <- out_cols[[j]]
  as_release(as_release_frame(df, data), "anonymise_adaptive",
             settings = list(k = k, k_max = k_max, m = m, rate = rate, w1 = w1, vars = vars,
                             strata = strata),
             counts = list(n = nrow(df), n_strata = length(sizes), min_size = min(sizes),
                           mean_k = mean(res$k), max_k = max(res$k), n_grown = sum(res$k > k),
                           n_capped = as.integer(res$n_capped), rounds = as.integer(res$rounds)),
             stats = list(scale = scale))
}

