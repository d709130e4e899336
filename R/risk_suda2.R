#' SUDA2: special uniques and their risk scores
#'
#' Finds every record's minimal sample uniques (MSUs) on the key variables `strata`, with
#' the SUDA2 search of Manning, Haglin and Keane (2008), and scores the records as
#' sdcMicro's `suda2()` does: the SUDA score of Elliot et al., the DIS-SUDA score, the
#' share of each key in every record's score, and the contribution of each key and each
#' of its values to the total.
#'
#' A set of keys is a *sample unique* of a record when no other record has the record's
#' values on those keys, and a *minimal* sample unique when none of its proper subsets is
#' one. With `m` keys, an MSU of `s` keys weighs `(m - s)!` (Elliot et al.'s weights,
#' sdcMicro's `original_scores = TRUE`), and a record's SUDA score is the sum of the
#' weights of its MSUs: records that are unique on few keys, or on many small sets of
#' keys, score highest. A key's `contribution` in a record is the summed weight of the
#' record's MSUs that hold the key, as a share of the record's score (the shares add up
#' to more than 1 when MSUs have two or more keys).
#'
#' The DIS-SUDA score calibrates the scores to a probability of a correct match, given
#' that the data are a sample drawn with fraction `dis_fraction`: with `T = P (1 - f) / f`
#' (`P` the records in pairs of equal records on all the keys, `f = dis_fraction`),
#' `Q = 1 + (8 - m) / 20` and `A` the sum of `score^-Q` over the records with a positive
#' score, `dis_score = 1 / (1 + T / (score^Q A))` (sdcMicro's formula, in which the number
#' of sample uniques cancels). `Q` is rounded to single precision as sdcMicro rounds it;
#' the rest is computed in double precision, where sdcMicro computes `T` in single
#' precision: the DIS-SUDA scores agree with sdcMicro's to about 1e-7 relative.
#'
#' Missing values (`NA`, and the values listed in `missing`) match no value, not even
#' another missing value, and are never part of an MSU: a record with a missing key is
#' unique on a set of keys only through its other keys. This is how sdcMicro's `suda2()`
#' treats its `missing` code (its default `missing = -999`; pass `missing = -999` for the
#' same result on data coded that way).
#'
#' Differences from sdcMicro: keys are compared as values (sdcMicro truncates numbers to
#' integers and turns character keys into missing values); with one or two keys the
#' weights use the true number of keys (sdcMicro adds constant dummy keys, and warns that
#' its result may be wrong); the per-record contributions count every MSU (sdcMicro's
#' undercount the keys of MSUs formed by two values that occur on exactly the same
#' records); totals are 0, not `NaN`, when no record has an MSU. The SUDA scores equal
#' sdcMicro's exactly on its test data and on random data (see the tests).
#'
#' @section What it protects against and what it does not:
#' It protects nothing: it is a measure. It finds the records an intruder can single out
#' with few of the keys (the special uniques), and so points to the records and the keys
#' that local suppression ([suppress_local()]), recoding or PRAM ([anonymise_pram()])
#' should treat first. It measures uniqueness in the sample only: a sample unique need not
#' be unique in the population (the DIS-SUDA score adjusts for that under the sampling
#' fraction `dis_fraction`), a record that is not a sample unique may still be identified
#' through variables outside `strata`, and it says nothing about attribute disclosure.
#'
#' @param data A data frame.
#' @param strata Character vector of the key columns (quasi-identifiers), at most 64.
#'   Default: the factor, character and logical columns.
#' @param dis_fraction The sampling fraction of the DIS-SUDA score, in (0, 1]
#'   (sdcMicro's `DisFraction`, default 0.01).
#' @param missing Values of the keys, besides `NA`, that code a missing value
#'   (sdcMicro's `missing`), or `NULL`.
#' @return An object of class `detanon_suda2`, a list with `strata`, `n` (records),
#'   `dis_fraction`, `score` (the SUDA score of every record), `dis_score` (its DIS-SUDA
#'   score), `contribution` (an `n` x `m` matrix: the share of each key in each record's
#'   score, 0 for a record without MSU), `attribute_contributions` (a data frame of
#'   `variable` and `contribution`: a key's percentage of the total score) and
#'   `attribute_level_contributions` (`variable`, `attribute` (the value, as text) and
#'   `contribution`: the percentage of the key's contribution that records with this value
#'   give), `n_unique` (records unique on all the keys), `n_pairs` (records in pairs of
#'   equal records), `n_msu` (MSUs found) and `msu_by_size` (MSUs of 1, 2, ... keys). The
#'   per-record fields point to rare records: they are for the data custodian, not for
#'   release.
#' @references Elliot, M. J., Manning, A. M. and Ford, R. W. (2002) A computational
#'   algorithm for handling the special uniques problem. *International Journal of
#'   Uncertainty, Fuzziness and Knowledge-Based Systems* 10(5), 493--509.
#'
#'   Manning, A. M., Haglin, D. J. and Keane, J. A. (2008) A recursive search algorithm
#'   for statistical disclosure assessment. *Data Mining and Knowledge Discovery* 16,
#'   165--196.
#' @examples
#' d <- data.frame(age = c("20s", "20s", "20s", "30s", "30s", "60s"),
#'                 sex = c("m", "m", "f", "f", "f", "m"),
#'                 job = c("a", "a", "b", "b", "c", "a"))
#' s <- risk_suda2(d, c("age", "sex", "job"))
#' s$score
#' s
#' @family measures
#' @export
risk_suda2 <- function(data, strata = NULL, dis_fraction = 0.01, missing = NULL) {
  check_data_frame(data, "data")
  strata <- check_columns(strata, data, "strata", default_strata(data))
  if (!length(strata)) stop_arg("`strata` is empty: name at least one key (quasi-identifier) column.")
  check_strata_columns(data, strata)
  if (length(strata) > 64L) {
    stop_arg("`strata` names ", length(strata), " columns; SUDA2 takes at most 64 keys.")
  }
  dis_fraction <- check_number(dis_fraction, "dis_fraction", lower = 0, upper = 1, lower_open = TRUE)
  missing <- check_missing_codes(missing)
  df <- as.data.frame(data)
  n <- nrow(df)
  coded <- lapply(df[strata], suda_codes, missing = missing)
  n_levels <- vapply(coded, function(x) length(x$levels), integer(1))
  r <- .Call(C_ffi_suda2, lapply(coded, `[[`, "code"), n_levels, dis_fraction)
  score <- r$score
  contribution <- r$contrib
  r$contrib <- NULL # so that naming the columns does not copy the matrix
  colnames(contribution) <- strata
  # the summed MSU weights per key of the records with a positive score (the others add 0)
  raw <- r$raw
  total <- sum(score)
  attr_contrib <- data.frame(
    variable = strata,
    contribution = if (total > 0) 100 * colSums(raw) / total else rep(0, length(strata)),
    stringsAsFactors = FALSE
  )
  level_rows <- lapply(seq_along(strata), function(j) {
    code <- coded[[j]]$code[r$scored]
    levs <- coded[[j]]$levels
    # a factor's levels can be absent (or missing), other columns' levels are all present
    present <- if (is.factor(df[[strata[j]]])) {
      tabulate(coded[[j]]$code, length(levs)) > 0L
    } else {
      rep(TRUE, length(levs))
    }
    sums <- numeric(length(levs))
    hit <- !is.na(code)
    if (any(hit)) {
      rs <- rowsum(raw[hit, j], code[hit], reorder = FALSE)
      sums[as.integer(rownames(rs))] <- rs[, 1L]
    }
    tot <- sum(raw[, j])
    data.frame(variable = rep(strata[j], sum(present)), attribute = as.character(levs[present]),
               contribution = if (tot > 0) 100 * sums[present] / tot else rep(0, sum(present)),
               stringsAsFactors = FALSE)
  })
  level_contrib <- do.call(rbind, level_rows)
  rownames(level_contrib) <- NULL
  structure(list(
    strata = strata, n = n, dis_fraction = dis_fraction,
    score = score, dis_score = r$dis, contribution = contribution,
    attribute_contributions = attr_contrib, attribute_level_contributions = level_contrib,
    n_unique = as.integer(r$counts[1L]), n_pairs = as.integer(r$counts[2L]),
    n_msu = r$counts[3L], msu_by_size = stats::setNames(r$msu_by_size, seq_along(strata))
  ), class = "detanon_suda2")
}

# `missing` of risk_suda2(): NULL or an atomic vector of values that code a missing key.
check_missing_codes <- function(missing) {
  if (is.null(missing)) return(NULL)
  if (!is.atomic(missing) || !is.null(dim(missing)) || !length(missing)) {
    stop_arg("`missing` must be NULL or a vector of the values that code a missing key, not ",
             show_value(missing), ".")
  }
  missing
}

# Codes 1..L of a key column (NA for a missing value, and for the values in `missing`) and
# the L values they stand for, sorted (a factor keeps its levels, also those not present;
# any other column has only the values present). Whole numbers in a range not much wider
# than the data are coded by counting.
suda_codes <- function(x, missing = NULL) {
  if (is.factor(x)) {
    levs <- levels(x)
    code <- as.integer(x)
    if (length(missing)) code[levs[code] %in% as.character(missing)] <- NA_integer_
    return(list(code = code, levels = levs))
  }
  miss <- if (length(missing)) is.na(x) | x %in% missing
  if ((is.integer(x) || is.double(x)) && !is.object(x)) {
    # NA (and NaN) propagate to the offsets, and tabulate() skips them
    v <- if (is.null(miss)) x else x[!miss]
    lim <- suppressWarnings(as.double(c(min(v, na.rm = TRUE), max(v, na.rm = TRUE))))
    if (all(abs(lim) < 2^30) && lim[2L] - lim[1L] < max(length(x), 1e4) &&
        (is.integer(x) || all(x == trunc(x), na.rm = TRUE))) {
      off <- if (is.integer(x)) x - (as.integer(lim[1L]) - 1L) else as.integer(x - (lim[1L] - 1))
      if (!is.null(miss)) off[miss] <- NA_integer_
      present <- tabulate(off, lim[2L] - lim[1L] + 1) > 0L
      levs <- which(present) + (lim[1L] - 1)
      return(list(code = cumsum(present)[off], levels = if (is.integer(x)) as.integer(levs) else levs))
    }
  }
  if (is.null(miss)) miss <- is.na(x)
  levs <- sort_unique_radix(x[!miss])
  code <- match(x, levs)
  code[miss] <- NA_integer_
  list(code = code, levels = levs)
}

#' @export
print.detanon_suda2 <- function(x, ...) {
  cat(sprintf("SUDA2 on %s (%s)\n", paste(x$strata, collapse = ", "), plural(x$n, "record")))
  cat(sprintf("  %s with an MSU; %s; %d unique on all keys; DIS fraction %s\n",
              plural(sum(x$score > 0), "record"), plural(x$n_msu, "MSU"), x$n_unique,
              format(x$dis_fraction)))
  breaks <- c(-1, seq(0, 0.7, 0.1) + .Machine$double.eps, Inf)
  tab <- table(cut(x$dis_score, breaks = breaks))
  lab <- c("== 0", "(0.0, 0.1]", "(0.1, 0.2]", "(0.2, 0.3]", "(0.3, 0.4]", "(0.4, 0.5]",
           "(0.5, 0.6]", "(0.6, 0.7]", "> 0.7")
  cat("  DIS-SUDA scores:\n")
  print(data.frame(interval = lab, records = as.integer(tab)), row.names = FALSE)
  cat("  Contribution of each key to the total score (%):\n")
  ac <- x$attribute_contributions
  ac$contribution <- sprintf("%.2f", ac$contribution)
  print(ac, row.names = FALSE)
  invisible(x)
}
