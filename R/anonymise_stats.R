#' Partitioned anonymise(), pass 1: exact global statistics over chunks of rows
#'
#' The first of the passes that [anonymise()] is made of, for data that do not fit in
#' memory: it reads the data chunk by chunk (any split of the rows; a stratum may be spread
#' over several chunks) and returns the few global quantities the masking needs: the
#' exact column means and SDs of step 1, the stratum sizes, the values imputed for missing
#' values, and what the release form needs (the k smallest and k largest values of each
#' column, whether it holds whole numbers, its number of decimals). Then
#' [anonymise_stratum()] masks whole strata, [anonymise_rescale()] finds the scaling of
#' step 5 and [anonymise_release()] puts each piece in its release form;
#' [anonymise_partitioned()] runs them all.
#'
#' @section Exactness:
#' Sums are kept as exact fixed-point digits (the accumulator that [anonymise()] uses for
#' its means and SDs), which chunks merge without rounding. The result does not depend on
#' how the rows are split into chunks or on their order, and the means, SDs, imputed
#' values and bounds are bit for bit those of [anonymise()] on all the rows. The SD needs
#' the exact mean first, so the chunks are read two to four times: the sums (with the
#' stratum sizes); the exact medians when `na = "median"` imputes (four passes of an exact
#' radix select); the sums again only when strata are suppressed; and the squared
#' deviations from the exact means with the bounds of the release form.
#'
#' Not supported partitioned (a classed error): `na = "median_stratum"` and
#' `"mean_stratum"` (they need per-stratum statistics of every column before the stratum
#' sizes are known), `small_strata = "merge"` (its distance needs the z-scores of all
#' kept records), and `engine = "rann"`.
#'
#' @param chunks The data, chunk by chunk: a list of data frames, or a function of `i`
#'   returning the `i`-th chunk (a data frame) for `i = 1, 2, ...` and `NULL` after the
#'   last. It is read several times, so the function must return the same chunks each
#'   time (e.g. reading a database table by blocks of rows): other records on a later
#'   reading are an error (class `detanon_error_data`). Every chunk has the same columns.
#' @param k Number of points in each centroid, as in [anonymise()]: a whole number >= 2.
#'   With `method = "stratum"`, also a table of k per stratum, as in [anonymise_adaptive()]
#'   (the `strata` columns and a column `k`, one row per stratum; rows of strata absent from
#'   the data are ignored), e.g. the `k` of [release_info()] of a release [tune_release()]
#'   chose. Every stratum must have a row and at least its `k` records.
#' @param vars,strata As in [anonymise()]; the defaults are read from the first chunk with
#'   records.
#' @param method The masking method: one of [masking_methods()] that runs stratum by
#'   stratum (`per_stratum`): `"anonymise"` (the default, [anonymise()]), `"mdav"`
#'   ([anonymise_mdav()] with one `k` and `noise = FALSE`), `"keyed"` ([anonymise_keyed()]
#'   without `held`; its budget is shared by a pass over the strata, see
#'   [anonymise_partitioned()]), `"adaptive"` ([anonymise_adaptive()] with one `k` and
#'   without `w1`; its rounds run on search indexes built by one more pass over the strata)
#'   or `"stratum"` (one k per stratum: [anonymise_adaptive()] with `m = 0` and `k` one
#'   number or a table of k per stratum, as [tune_release()] chooses it; one masking pass).
#'   The others are refused with the reason (their `why_not`).
#' @param key,size,noise For `method = "keyed"`, as in [anonymise_keyed()]; with `noise`,
#'   one more radix select over the chunks (the columns' exact medians). The statistics
#'   then hold the key: never print or store them.
#' @param k_max,m,rate,w1 For `method = "adaptive"` and `"stratum"`, as in
#'   [anonymise_adaptive()] (`w1` must be `NULL`: its interval test needs the robust
#'   covariance of all records). `m = NULL`: 1 for `"adaptive"` (the verb's default), 0 for
#'   `"stratum"` (which takes no other: it grows no record).
#' @param format The release form, as in [anonymise()] (`"natural"`, `"precision"` or
#'   `"none"`).
#' @param na What to do with missing values in `vars`: `"fail"`, `"median"`, `"mean"` or
#'   `"complete"`, as in [anonymise()].
#' @param small_strata What to do with strata smaller than `k`: `"fail"` or `"suppress"`,
#'   as in [anonymise()].
#' @return A `detanon_anonymise_stats` object: a list with the settings (`vars`,
#'   `strata`, `k`, `format`, `na`, `small_strata`), `n` (records kept), `strata_table`
#'   (a data frame of the strata values, their text `key`, `n` records after the `na`
#'   policy and `keep`, `FALSE` for a suppressed stratum), `check` (a check sum of each
#'   stratum's `vars` values, by which [anonymise_stratum()] knows its records are those
#'   counted) and the internal statistics. It
#'   holds the means and SDs of the original columns and the extreme values of each: keep
#'   it with the original data, never with a release.
#' @family partitioned anonymisation
#' @examples
#' d <- titanic_paper()[c("Age", "Fare", "Sex", "Pclass")]
#' chunks <- split(d, rep(1:3, length.out = nrow(d)))
#' st <- detanon:::anonymise_stats(chunks, vars = c("Age", "Fare"),
#'                                 strata = c("Sex", "Pclass"), k = 3)
#' st
#' @keywords internal
anonymise_stats <- function(chunks, vars = NULL, strata = NULL, k = 3, method = "anonymise",
                            format = c("natural", "precision", "none"),
                            na = c("fail", "median", "mean", "complete", "median_stratum", "mean_stratum"),
                            small_strata = c("fail", "suppress", "merge"), key = NULL, size = 10, noise = TRUE,
                            k_max = 33, m = NULL, rate = 0, w1 = NULL) {
  read <- chunk_reader(chunks, "chunks")
  # the first chunk with records (for the checks of anonymise() and the column types)
  i <- 1L
  repeat {
    first <- read(i)
    if (is.null(first)) stop_arg("`chunks` holds no records: there is nothing to mask.", kind = "data")
    check_data_frame(first, paste0("chunks[[", i, "]]"))
    if (nrow(first)) break
    i <- i + 1L
  }
  method <- check_partitioned_method(method)
  format <- match_choice(format, "format", c("natural", "precision", "none"))
  na <- match_choice(na, "na", c("fail", "median", "mean", "complete", "median_stratum", "mean_stratum"))
  small_strata <- match_choice(small_strata, "small_strata", c("fail", "suppress", "merge"))
  if (na %in% c("median_stratum", "mean_stratum")) {
    stop_arg("`na = \"", na, "\"` is not supported partitioned: it needs each stratum's statistics of every ",
             "column before the strata are known. Use \"median\", \"mean\" or \"complete\", or anonymise() in memory.")
  }
  if (small_strata == "merge") {
    stop_arg("`small_strata = \"merge\"` is not supported partitioned: its distance needs the z-scores of ",
             "all kept records. Use \"suppress\" or \"fail\", merge_small_strata() first, or anonymise() in memory.")
  }
  # the checks of anonymise() on the first chunk (columns, types, k; a table `k` of method
  # "stratum" is checked against the strata after pass 1)
  args <- check_masking_args(first, vars, strata, k, na = na, small_strata = small_strata,
                             choices = list(na = na_choices, small_strata = small_strata_choices),
                             k_table = method == "stratum")
  vars <- args$vars
  strata <- args$strata
  k <- args$k
  # (a table's columns and values, before the data are read)
  if (is.data.frame(k)) k_per_stratum(k, strata, character(), integer())
  p <- length(vars)
  st <- list(vars = vars, strata = strata, k = k, format = format, na = na, small_strata = small_strata,
             integer = vapply(first[vars], is.integer, logical(1)), template = first[0L, , drop = FALSE])
  st$method <- method
  if (method == "keyed") {
    # (the secret travels with the statistics to the workers; it is never printed)
    st$secret <- check_key(key)
    st$size <- check_number(size, "size", lower = k)
    st$noise <- check_flag(noise, "noise")
  } else if (!is.null(key)) {
    stop_arg("`key` is the secret of `method = \"keyed\"`; method \"", method, "\" takes none.")
  }
  if (method %in% c("adaptive", "stratum")) {
    if (!is.null(w1)) {
      stop_arg("`w1` (the interval test) is not supported partitioned: it needs the robust covariance (MCD) of ",
               "all records, which no pass over groups of strata gives. Use anonymise_adaptive() in memory.")
    }
    if (na != "fail" || small_strata != "fail") {
      stop_arg("`method = \"", method, "\"` takes `na = \"fail\"` and `small_strata = \"fail\"` only, as ",
               "anonymise_adaptive() does: impute missing values and merge small strata first.")
    }
    # (the stratum method is anonymise_adaptive() with m = 0: no record is grown)
    st$m <- check_whole(if (is.null(m)) as.integer(method == "adaptive") else m, "m", min = 0)
    if (method == "stratum" && st$m != 0) {
      stop_arg("`m` must be 0 (or NULL) for `method = \"stratum\"`, not ", show_value(m), ": one k per stratum ",
               "grows no record. Use `method = \"adaptive\"` to grow k per record.")
    }
    st$rate <- check_rates(rate)
    if (!is.data.frame(k)) st$k_max <- check_k_max(k_max, st$rate, k)
  }

  # pass 1: stratum sizes (records kept by the na policy), the sums of the values kept by it
  # (observed values; complete records for "complete"), missing counts and ranges
  acc <- .Call(C_ffi_acc_add, NULL, matrix(0, 0L, p), NULL)
  counts <- list()
  n_na <- numeric(p)
  n_incomplete <- 0
  rng <- matrix(c(Inf, -Inf), 2L, p)
  for_each_chunk(read, function(chunk, i) {
    x <- chunk_matrix(chunk, st, i)
    miss <- is.na(x)
    inc <- if (anyNA(x)) rowSums(miss) > 0 else logical(nrow(x))
    if (na == "fail" && any(inc)) {
      n <- colSums(miss)
      n <- n[n > 0]
      stop_arg("`vars` have missing values (chunk ", i, ": ", paste0("`", names(n), "`: ", n, collapse = ", "),
               "). Choose `na = \"median\"`, \"mean\" or \"complete\", or impute them first.", kind = "data")
    }
    keys <- stratum_keys(chunk, strata)
    kept <- if (na == "complete") !inc else rep(TRUE, nrow(x))
    counts[[length(counts) + 1L]] <<- key_counts(keys[kept], chunk[kept, strata, drop = FALSE],
                                                 record_checks(x[kept, , drop = FALSE]))
    n_incomplete <<- n_incomplete + sum(inc)
    n_na <<- n_na + colSums(miss)
    xk <- x[kept, , drop = FALSE]
    for (j in seq_len(p)) {
      v <- xk[, j]
      if (na != "complete" && anyNA(v)) v <- v[!is.na(v)]
      if (length(v)) rng[, j] <<- c(min(rng[1L, j], v), max(rng[2L, j], v))
    }
    acc <<- acc_add(acc, xk, na_rm = na != "complete")
  })
  st$strata_table <- merge_key_counts(counts, strata)
  # the check sum of each stratum's values (record_checks()), by which the later passes and
  # anonymise_stratum() know the values are those the statistics were made of
  st$check <- st$strata_table$check
  st$strata_table$check <- NULL
  if (is.data.frame(k)) st <- stats_k_table(st, k, k_max)
  k <- st$k
  if (na == "complete") n_na[] <- 0
  n_obs <- sum(st$strata_table$n) - n_na

  # the imputed values, exact: mean of the observed values, or their median (exact select)
  impute <- rep(NA_real_, p)
  if (na %in% c("mean", "median") && any(n_na > 0)) {
    need <- which(n_na > 0)
    if (any(n_obs[need] == 0)) {
      stop_arg("`vars` column `", vars[need][n_obs[need] == 0][1L], "` has no observed value to impute from.",
               kind = "data")
    }
    if (na == "mean") {
      impute[need] <- acc_round(acc)[need] / n_obs[need]
    } else {
      impute[need] <- exact_medians(read, st, need, n_obs[need])
    }
  }
  st$impute <- impute
  st$n_imputed <- if (na %in% c("mean", "median")) n_incomplete else 0
  st$n_dropped <- if (na == "complete") n_incomplete else 0

  # strata smaller than k
  tab <- st$strata_table
  small <- tab$n > 0 & tab$n < k
  if (any(small) && small_strata == "fail") {
    shown <- utils::head(paste0("  ", tab$label[small], ": ", plural(tab$n[small], "record")), 10L)
    stop_arg(plural(sum(small), "stratum has", "strata have"), " fewer than k = ", k, " records:\n",
             paste(shown, collapse = "\n"),
             if (sum(small) > 10L) sprintf("\n  ... and %d more", sum(small) - 10L) else "",
             "\nUse `small_strata = \"suppress\"`, or coarsen `strata`.", kind = "small_strata")
  }
  if (st$n_dropped > 0) {
    inform_detanon("dropped ", plural(st$n_dropped, "incomplete record"), " (na = \"complete\").", kind = "na")
  }
  st$strata_table$keep <- !small & tab$n > 0
  st$n_suppressed <- sum(tab$n[small])
  if (any(small)) {
    inform_detanon("suppressed ", plural(st$n_suppressed, "record"), " in ",
                   plural(sum(small), "stratum", "strata"), " smaller than k = ", k, ".", kind = "suppress")
  }
  st$n <- sum(tab$n[st$strata_table$keep])
  if (st$n == 0) {
    stop_arg("No records are left to mask (", st$n_dropped, " incomplete, ", st$n_suppressed,
             " in strata smaller than k = ", k, "). Lower `k` or coarsen `strata`.", kind = "data")
  }

  # the sums of the kept (imputed) values: pass 1's, unless strata were suppressed
  if (any(small)) {
    acc <- NULL
    rng[] <- c(Inf, -Inf)
    for_each_chunk(read, function(chunk, i) {
      x <- kept_matrix(chunk, st, i)$x
      for (j in seq_len(p)) rng[, j] <<- c(min(rng[1L, j], x[, j]), max(rng[2L, j], x[, j]))
      acc <<- acc_add(acc, x)
    })
  } else if (any(n_na > 0)) {
    need <- which(n_na > 0)
    acc <- .Call(C_ffi_acc_merge, acc, NULL, ifelse(n_na > 0, impute, 0), as.double(n_na))
    for (j in need) rng[, j] <- c(min(rng[1L, j], impute[j]), max(rng[2L, j], impute[j]))
  }
  st$range <- rng
  # columns of tiny values are scaled by a power of two, as anonymise() does (pow2_factors())
  big <- pmax(abs(rng[1L, ]), abs(rng[2L, ]))
  st$e <- as.integer(ifelse(is.finite(big) & big > 0 & big < 1e-100, -floor(log2(big)), 0))
  st$mean <- stats::setNames(acc_round(acc, st$e) / st$n, vars)

  # pass 3: squared deviations from the exact means, and the bounds of the release form
  acc2 <- NULL
  kk <- min(k, st$n)
  lows <- highs <- vector("list", p)
  whole <- rep(TRUE, p)
  dec_ok <- matrix(TRUE, 11L, p)
  seen <- numeric(nrow(st$strata_table))
  for_each_chunk(read, function(chunk, i) {
    kept <- kept_matrix(chunk, st, i, checks = TRUE)
    seen <<- add_checks(seen, kept, st)
    x <- kept$x
    if (!nrow(x)) return(invisible())
    if (format != "none") {
      for (j in seq_len(p)) {
        v <- x[, j]
        lows[[j]] <<- k_extreme(c(lows[[j]], v), kk, FALSE)
        highs[[j]] <<- k_extreme(c(highs[[j]], v), kk, TRUE)
        # (the whole-number flag of format_masked(), by the same C: mask_form_stats())
        if (whole[j]) whole[j] <<- .Call(C_ffi_form_stats, as.double(v), 0)[3L] == 1
        if (format == "precision") dec_ok[, j] <<- decimals_ok(v, dec_ok[, j])
      }
    }
    acc2 <<- acc_add(acc2, scale_tiny(x, st$e), centre = unname(st$mean))
  })
  if (!identical(seen, st$check)) {
    stop_arg("`chunks` gave other records when read again (",
             plural(sum(seen != st$check), "stratum differs", "strata differ"), "): a function must return the same ",
             "chunks each time it is read, and the data must not change while the statistics are made.", kind = "data")
  }
  st$sd <- stats::setNames(sqrt(acc_round(acc2) / (st$n - 1)), vars)
  if (st$n < 2) st$sd[] <- NaN
  st$constant <- rng[1L, ] == rng[2L, ]
  st$cols <- masked_columns_stats(st)
  if (format != "none") {
    st$bounds <- lapply(seq_len(p), function(j) {
      lo <- exact_mean(lows[[j]])
      hi <- exact_mean(highs[[j]])
      # (as format_masked(): whole numbers rounded by "natural" only when round_whole())
      d <- if (format == "precision") {
        ok <- which(dec_ok[, j])
        if (whole[j]) 0L else if (length(ok)) ok[1L] - 1L else NA_integer_
      } else if (whole[j] && round_whole(st$sd[[j]])) 0L else NA_integer_
      # a bound on a tie pile: the k smallest (largest) values all equal
      pile <- c(length(lows[[j]]) > 0L && all(lows[[j]] == lows[[j]][1L]),
                length(highs[[j]]) > 0L && all(highs[[j]] == highs[[j]][1L]))
      c(release_bounds(lo, hi, d, pile), whole = whole[j])
    })
  }
  if (isTRUE(st$noise)) st$noise_centre <- noise_centre_stats(read, st)
  structure(st, class = "detanon_anonymise_stats")
}

# A table `k` of method "stratum" on the strata of pass 1, checked as anonymise_adaptive()
# checks it (k_per_stratum(), then `k_max`): the statistics with the k of every stratum
# (`k_strata`, aligned with the strata table), their smallest (`k`: that of the release
# form's bounds, as the verb's) and the table of the release metadata (`k_table`, as
# k_table_of(): the strata in the order of their ids, and their k).
stats_k_table <- function(st, k, k_max) {
  tab <- st$strata_table
  st$k_strata <- k_per_stratum(k, st$strata, tab$key, tab$n)
  st$k <- min(st$k_strata)
  st$k_max <- check_k_max(k_max, st$rate, max(st$k_strata))
  o <- order(stratum_ids(tab[st$strata], st$strata))
  st$k_table <- as.data.frame(tab[o, st$strata, drop = FALSE])
  rownames(st$k_table) <- NULL
  st$k_table$k <- st$k_strata[o]
  st
}

#' @export
print.detanon_anonymise_stats <- function(x, ...) {
  cat("<detanon_anonymise_stats> exact statistics of a partitioned anonymise()\n")
  k <- if (is.null(x$k_strata)) x$k else sprintf("%d to %d per stratum", x$k, max(x$k_strata))
  cat(sprintf("  %s kept in %s (k = %s); %d masked of %d `vars`\n", plural(x$n, "record"),
              plural(sum(x$strata_table$keep), "stratum", "strata"), k, length(x$cols), length(x$vars)))
  cat(sprintf("  format = \"%s\", na = \"%s\", small_strata = \"%s\"\n", x$format, x$na, x$small_strata))
  cat(sprintf("  dropped %s, imputed %s, suppressed %s\n", format(x$n_dropped), format(x$n_imputed),
              format(x$n_suppressed)))
  invisible(x)
}

# ---- helpers of the partitioned passes ------------------------------------------------

# A chunk (or piece) source as a function of i returning the i-th element or NULL.
chunk_reader <- function(chunks, arg) {
  if (is.data.frame(chunks)) chunks <- list(chunks)
  if (is.function(chunks)) return(chunks)
  if (is.list(chunks)) {
    force(chunks)
    return(function(i) if (i <= length(chunks)) chunks[[i]] else NULL)
  }
  stop_arg("`", arg, "` must be a list of data frames or a function of i returning the i-th chunk ",
           "(NULL after the last), not ", show_value(chunks), ".")
}

for_each_chunk <- function(read, fun) {
  i <- 1L
  repeat {
    chunk <- read(i)
    if (is.null(chunk)) break
    fun(chunk, i)
    i <- i + 1L
  }
  invisible(i - 1L)
}

# The `vars` of one chunk as a double matrix, after checking the chunk's columns.
chunk_matrix <- function(chunk, st, i, arg = NULL) {
  what <- if (is.null(arg)) paste0("chunk ", i, " of `chunks`") else paste0("`", arg, "`")
  if (!is.data.frame(chunk)) {
    stop_arg(what, " must be a data frame, not ", show_value(chunk), ".")
  }
  missing_cols <- setdiff(c(st$vars, st$strata), names(chunk))
  if (length(missing_cols)) {
    stop_arg(what, " lacks the columns ", quote_names(missing_cols), ".", kind = "column")
  }
  check_strata_columns(chunk, st$strata)
  check_vars(chunk, st$vars, st$strata)
  numeric_matrix(chunk, st$vars)
}

# Records per stratum key in one chunk, with the strata values of each key.
key_counts <- function(keys, values, checks) {
  if (!length(keys)) return(NULL)
  first <- !duplicated(keys)
  id <- match(keys, keys[first])
  n <- tabulate(id, sum(first))
  out <- values[first, , drop = FALSE]
  rownames(out) <- NULL
  out$key <- keys[first]
  out$n <- as.double(n)
  out$check <- as.vector(rowsum(checks, id, reorder = TRUE))
  out
}

# A check number per record of its `vars` values (rows of x; NA allowed), in C
# (mask_record_checks(), mask.h): the bit patterns of the values modulo a prime below 2^20,
# mixed column by column through a square (so that a record is checked as a whole: values
# moved between records change it), each below 2^20, so that a sum over a stratum is exact
# for up to 2^33 records and does not depend on the order of the records or of the chunks.
# A stratum whose sum differs holds other values.
record_checks <- function(x) {
  storage.mode(x) <- "double"
  .Call(C_ffi_record_checks, x)
}

# `sums` (aligned with the strata table) plus the check numbers of the records a chunk holds
# (kept by the na policy), by stratum.
add_checks <- function(sums, kept, st) {
  if (!length(kept$na_keys)) return(sums)
  s <- rowsum(kept$checks, match(kept$na_keys, st$strata_table$key))
  i <- as.integer(rownames(s))
  sums[i] <- sums[i] + s[, 1L]
  sums
}

merge_key_counts <- function(counts, strata) {
  counts <- counts[!vapply(counts, is.null, logical(1))]
  if (!length(counts)) return(data.frame(key = character(), n = numeric(), check = numeric(), label = character()))
  all <- do.call(rbind, counts)
  first <- !duplicated(all$key)
  tab <- all[first, , drop = FALSE]
  tab$n <- as.vector(rowsum(all$n, match(all$key, tab$key), reorder = TRUE))
  tab$check <- as.vector(rowsum(all$check, match(all$key, tab$key), reorder = TRUE))
  tab <- tab[order(radix_key(tab$key), method = "radix"), , drop = FALSE]
  rownames(tab) <- NULL
  tab$label <- if (length(strata)) {
    do.call(paste, c(lapply(strata, function(v) paste0(v, "=", as.character(tab[[v]]))), sep = ", "))
  } else rep("all records", nrow(tab))
  tab
}

# The kept rows of a chunk (the na policy, then the suppressed strata) as the imputed
# matrix, with their positions in the chunk and their stratum keys.
kept_matrix <- function(chunk, st, i, arg = NULL, checks = FALSE) {
  what <- if (is.null(arg)) paste0("chunk ", i, " of `chunks`") else paste0("`", arg, "`")
  x <- chunk_matrix(chunk, st, i, arg)
  keys <- stratum_keys(chunk, st$strata)
  keep <- rep(TRUE, nrow(x))
  chk <- if (checks) record_checks(x)
  if (anyNA(x)) {
    miss <- is.na(x)
    if (st$na == "complete") {
      keep <- rowSums(miss) == 0
    } else if (st$na == "fail") {
      stop_arg(what, " has missing values in `vars`, but the statistics were made with na = \"fail\".",
               kind = "data")
    } else {
      for (j in which(colSums(miss) > 0)) x[miss[, j], j] <- st$impute[j]
    }
  }
  pos <- match(keys, st$strata_table$key)
  if (anyNA(pos[keep])) {
    stop_arg(what, " holds a stratum that the statistics in `stats` do not know: ",
             "were they made from the same data?", kind = "data")
  }
  na_keys <- keys[keep]
  chk <- chk[keep]
  keep <- keep & st$strata_table$keep[pos]
  keep[is.na(keep)] <- FALSE
  list(x = x[keep, , drop = FALSE], rows = which(keep), keys = keys[keep], na_keys = na_keys, checks = chk)
}

# Exact accumulator states (C: fsum.h) of the columns of x, added to `acc`.
acc_add <- function(acc, x, centre = NULL, na_rm = FALSE) {
  if (!na_rm || !anyNA(x)) return(.Call(C_ffi_acc_add, acc, x, centre))
  for (j in seq_len(ncol(x))) {
    v <- x[, j]
    acc[, j] <- .Call(C_ffi_acc_add, acc[, j], matrix(v[!is.na(v)]), NULL)
  }
  acc
}

acc_merge <- function(a, b) if (is.null(a)) b else if (is.null(b)) a else .Call(C_ffi_acc_merge, a, b, NULL, NULL)

acc_round <- function(acc, e = integer(ncol(acc))) .Call(C_ffi_acc_round, acc, as.integer(e))

scale_tiny <- function(x, e) {
  for (j in which(e != 0)) x[, j] <- times_pow2(x[, j], e[j])
  x
}

# The k smallest (largest = FALSE) or largest values of v.
k_extreme <- function(v, k, largest) {
  n <- length(v)
  if (n <= k) return(v)
  if (largest) sort(v, partial = n + 1L - k)[(n + 1L - k):n] else sort(v, partial = k)[seq_len(k)]
}

# masked_columns() on the statistics: the columns with SD > 0; the same errors.
masked_columns_stats <- function(st) {
  x <- matrix(0, 0L, length(st$vars), dimnames = list(NULL, st$vars))
  masked_columns(x, list(mean = st$mean, sd = st$sd), constant = st$constant)
}

# Exact medians (as stats::median()) of the observed values of columns `need` over the
# chunks: the order statistics by radix select.
exact_medians <- function(read, st, need, n_obs) {
  values <- function(chunk, i) {
    x <- chunk_matrix(chunk, st, i)
    lapply(need, function(j) {
      v <- x[, j]
      v[!is.na(v)]
    })
  }
  medians_by_select(function(visit) for_each_chunk(read, function(chunk, i) visit(values(chunk, i))), n_obs)
}

# The noise centre (noise_centre()) of the masked columns over all kept records: the unit
# from the exact SD (the same power of two as stats::sd() gives unless the SD is within a
# rounding error of a power of two), the exact median by radix select. stats::sd() of the
# values of a tiny column (scaled by 2^e) squares them: its variance underflows (to 0 when
# the SD is below about 2e-162, and the column gets no noise), as the SD's square scaled back
# does here.
noise_centre_stats <- function(read, st) {
  cols <- st$cols
  med <- medians_by_select(function(visit) {
    for_each_chunk(read, function(chunk, i) {
      x <- kept_matrix(chunk, st, i)$x
      visit(lapply(cols, function(j) x[, j]))
    })
  }, rep(st$n, length(cols)))
  e <- st$e[cols]
  sd <- ifelse(e == 0, st$sd[cols], sqrt(times_pow2(st$sd[cols]^2, -2 * e)))
  noise_centre(NULL, sd = sd, median = med)
}

# Medians of several columns over a re-readable source. `sweep(visit)` calls visit(list of
# column vectors) once per chunk; n the column lengths. stats::median(): the middle order
# statistic, or the mean of the two middle ones.
medians_by_select <- function(sweep, n) {
  half <- (n + 1) %/% 2
  ranks <- lapply(seq_along(n), function(j) if (n[j] %% 2 == 1) half[j] else half[j] + 0:1)
  vals <- radix_select(sweep, ranks)
  vapply(seq_along(n), function(j) if (length(vals[[j]]) == 1L) vals[[j]] else mean(vals[[j]]), numeric(1))
}

# The order statistics `ranks[[j]]` of column j over the source: four passes of 16 bits on
# the ordered bit pattern of the values (C: mask_radix_hist()), exact, any number of chunks.
radix_select <- function(sweep, ranks) {
  prefix <- lapply(ranks, function(r) rep(0, length(r)))
  rest <- ranks
  for (pass in 0:3) {
    want <- lapply(prefix, unique)
    hist <- lapply(want, function(w) lapply(w, function(.) numeric(65536)))
    sweep(function(cols) {
      for (j in seq_along(cols)) {
        for (u in seq_along(want[[j]])) {
          hist[[j]][[u]] <<- .Call(C_ffi_radix_hist, as.double(cols[[j]]), pass, want[[j]][u], hist[[j]][[u]])
        }
      }
    })
    for (j in seq_along(ranks)) {
      for (r in seq_along(ranks[[j]])) {
        h <- hist[[j]][[match(prefix[[j]][r], want[[j]])]]
        cum <- cumsum(h)
        b <- which(cum >= rest[[j]][r])[1L]
        rest[[j]][r] <- rest[[j]][r] - (if (b > 1L) cum[b - 1L] else 0)
        prefix[[j]][r] <- if (pass < 3L) prefix[[j]][r] * 65536 + (b - 1) else prefix[[j]][r]
        if (pass == 3L) prefix[[j]][r] <- .Call(C_ffi_radix_value, prefix[[j]][r], as.integer(b - 1L))
      }
    }
  }
  prefix
}
