#' Local suppression to k-anonymity
#'
#' Sets single key values (cells) to `NA` until every record is k-anonymous on the key
#' variables `strata`, counting as sdcMicro's `localSuppression()` and `freqCalc()` count:
#' a missing value matches any value, so a record's count is the number of records whose
#' keys equal its own wherever both are present (except that, with two or more keys, a
#' record without missing keys does not count the records whose keys are all missing, as
#' in sdcMicro).
#'
#' The search is greedy. It takes the record with the smallest count (the first such in row
#' order), and suppresses the one of its keys that lowers the total shortfall
#' `sum(max(0, k - count))` most: the record gains the records that differ from it in that
#' key only, and each of them gains the record. Ties go to the key suppressed first by the
#' priority: the key with the most categories first (sdcMicro's default), or the order of
#' `importance`. With `importance`, the priority is strict instead: the least important key
#' whose suppression lowers the shortfall is suppressed (if none does, the one that raises
#' it least). Counts are updated exactly after
#' every cell, so that no cell is suppressed for a record that an earlier suppression has
#' already made safe; sdcMicro suppresses one cell in every record that was unsafe at the
#' start of a pass, and so suppresses far more. On sdcMicro's `testdata` with the keys
#' `urbrur`, `water`, `sex` and `age` and `k = 3`, sdcMicro's `localSuppression()`
#' suppresses 674 cells (7 of `water`, 667 of `age`) and `suppress_local()` 47 (1 of
#' `water`, 46 of `age`); with `k = 5`, 1288 against 94 (see the tests).
#'
#' With `combs`, the data are made k-anonymous on every subset of the keys of each size in
#' `combs`, one subset after the other (as sdcMicro does), in passes until a pass changes
#' nothing: a suppression raises the counts of the other subsets, except where it leaves a
#' record with all the keys of a subset missing.
#'
#' Suppression to an individual-risk threshold is not offered yet.
#'
#' @section What it protects against and what it does not:
#' It protects against re-identification through the keys in the sense of k-anonymity with
#' missing values as wildcards: for every record, at least `k` records could share its
#' keys, given that a suppressed value could be any value. That protection rests on the
#' suppressed cells: a record with a rare value may keep the value, being counted with
#' records whose value in that key is suppressed. An intruder who knows that values are
#' missing only by suppression, and which values the other records hold, can narrow the
#' matches. It does not protect variables outside `strata`, does not stop attribute
#' disclosure within a group that shares a sensitive value, and the missing values it
#' introduces are not random: an analysis of the released keys must treat them as
#' missing not at random.
#'
#' @param data A data frame.
#' @param strata Character vector of the key columns (quasi-identifiers). Default: the
#'   factor, character and logical columns.
#' @param k The anonymity threshold: every record's count must be at least `k`, a whole
#'   number >= 1 and at most the number of records.
#' @param importance `NULL`, or one whole number per key of `strata` between 1 and the
#'   number of keys: the importance of each key (1 most important, as sdcMicro's
#'   `importance`); keys with larger numbers are suppressed first.
#' @param combs `NULL` (k-anonymity on all of `strata`), or whole numbers between 1 and the
#'   number of keys: the sizes of the subsets of keys to make k-anonymous.
#' @param household Name of a column of household ids, or `NULL`. With it, a key of
#'   `strata` that is constant within every household of `data` (a household-level key)
#'   and is suppressed for one member is suppressed for every member of the household,
#'   and the search is repeated until every record is k-anonymous again; the release
#'   metadata name these keys (`household_vars`).
#' @return `data`, in its class, with the suppressed cells set to `NA`, and release
#'   metadata (see [release_info()]) with the counts `n` (records), `n_changed` (cells
#'   suppressed), `changed_by_key` (cells suppressed in each key) and `min_size` (the
#'   smallest count afterwards, on all of `strata`). A message of class
#'   `detanon_message_suppress` reports the cells suppressed per key (its field
#'   `suppressed` holds them as a named integer vector).
#' @examples
#' d <- data.frame(age = c(20, 20, 20, 30, 30, 30, 40),
#'                 sex = c("m", "m", "f", "f", "f", "f", "m"))
#' out <- suppress_local(d, c("age", "sex"), k = 2)
#' out
#' release_info(out)$counts$changed_by_key
#' @family masking verbs
#' @export
suppress_local <- function(data, strata = NULL, k = 3, importance = NULL, combs = NULL, household = NULL) {
  if (is_sdc(data)) return(sdc_key_verb(suppress_local, data, match.call(), parent.frame())) # R/sdcmicro.R
  if (!is.null(household)) return(household_verb(suppress_local, data, household, match.call(), parent.frame()))
  check_data_frame(data, "data")
  strata <- check_columns(strata, data, "strata", default_strata(data))
  if (!length(strata)) stop_arg("`strata` is empty: name at least one key (quasi-identifier) column.")
  check_strata_columns(data, strata)
  k <- check_whole(k, "k", min = 1, max = .Machine$integer.max)
  m <- length(strata)
  if (!is.null(importance)) {
    if (!is.numeric(importance) || length(importance) != m || anyNA(importance) ||
        any(importance != round(importance)) || any(importance < 1 | importance > m)) {
      stop_arg("`importance` must be NULL or ", plural(m, "whole number"), " between 1 and ", m,
               " (one per key of `strata`), not ", show_value(importance), ".")
    }
  }
  if (!is.null(combs)) {
    if (!is.numeric(combs) || !length(combs) || anyNA(combs) || any(combs != round(combs)) ||
        any(combs < 1 | combs > m)) {
      stop_arg("`combs` must be NULL or whole numbers between 1 and ", m,
               " (sizes of subsets of `strata`), not ", show_value(combs), ".")
    }
    combs <- sort(unique(as.integer(combs)))
  }
  df <- as.data.frame(data)
  n <- nrow(df)
  if (n > 0L && k > n) {
    stop_arg("`k` = ", k, " is larger than the number of records (", n,
             "): no suppression can make the data ", k, "-anonymous.", kind = "data")
  }
  codes <- matrix(unlist(lapply(df[strata], function(x) suda_codes(x)$code), use.names = FALSE), n, m)
  # the priority: the key suppressed first comes first
  n_cat <- apply(codes, 2L, function(z) length(unique(z[!is.na(z)])))
  prio <- if (is.null(importance)) order(-n_cat, seq_len(m)) else order(-importance, seq_len(m))
  before <- is.na(codes)
  if (n) {
    sets <- if (is.null(combs)) list(seq_len(m)) else unlist(lapply(combs, function(s) {
      utils::combn(m, s, simplify = FALSE)
    }), recursive = FALSE)
    # a pass over the subsets, until one changes nothing: a suppression raises the counts
    # of the other subsets, except where it empties a record of all the keys of a subset
    # (which the records without missing keys there no longer count)
    repeat {
      changed <- FALSE
      for (keys in sets) {
        sub <- suppress_greedy(codes[, keys, drop = FALSE], k, match(prio[prio %in% keys], keys),
                               strict = !is.null(importance))
        if (!identical(sub, codes[, keys, drop = FALSE])) changed <- TRUE
        codes[, keys] <- sub
      }
      if (!changed || length(sets) == 1L) break
    }
  }
  added <- is.na(codes) & !before
  by_key <- stats::setNames(as.integer(colSums(added)), strata)
  for (j in which(by_key > 0L)) {
    v <- strata[j]
    x <- df[[v]]
    x[added[, j]] <- NA
    df[[v]] <- x
  }
  if (sum(by_key)) {
    inform_detanon("suppressed ", plural(sum(by_key), "cell"), " (",
                   paste0("`", strata, "` ", by_key, collapse = ", "), ") for ", k, "-anonymity.",
                   kind = "suppress", fields = list(suppressed = by_key))
  }
  fk <- if (n) wildcard_counts(codes) else integer()
  as_release(as_release_frame(df, data), "suppress_local",
             settings = list(strata = strata, k = k, importance = importance, combs = combs),
             counts = list(n = n, n_changed = sum(by_key), changed_by_key = by_key,
                           min_size = if (n) min(fk) else 0L))
}

# The greedy search of suppress_local() on one set of keys. codes: n x m integer codes with
# NA; prio: the key indices, the one suppressed first first; strict: take the first key in
# `prio` that lowers the shortfall (else, and always without `strict`: the one that lowers it
# most, the first in `prio` on ties). Returns the codes
# with the suppressed cells set to NA.
suppress_greedy <- function(codes, k, prio, strict) {
  n <- nrow(codes)
  m <- ncol(codes)
  fk <- wildcard_counts(codes)
  n_na <- as.integer(rowSums(is.na(codes)))
  # with two or more keys, a record without missing keys does not count the records whose
  # keys are all missing (as sdcMicro's freqCalc() counts)
  rule <- m >= 2L
  # the rows of each code of each key (as at the start) and the rows missing each key: a
  # record within one key of record i matches it (or misses) in one of any two keys that
  # record i has, so only those rows are compared
  by_code <- lapply(seq_len(m), function(v) {
    split(seq_len(n), factor(codes[, v], levels = seq_len(max(c(0L, codes[, v]), na.rm = TRUE))))
  })
  na_rows <- lapply(seq_len(m), function(v) which(is.na(codes[, v])))
  repeat {
    short <- fk < k
    if (!any(short)) break
    unsafe <- which(short)
    i <- unsafe[which.min(fk[unsafe])]
    xi <- codes[i, ]
    present <- which(!is.na(xi))
    rows <- if (length(present) >= 2L) {
      cand <- lapply(present, function(v) c(by_code[[v]][[xi[v]]], na_rows[[v]]))
      two <- order(lengths(cand))[1:2]
      sort(unique(c(cand[[two[1L]]], cand[[two[2L]]])))
    } else {
      seq_len(n)
    }
    eq <- matrix(TRUE, length(rows), m)
    for (v in present) {
      cv <- codes[rows, v]
      eq[, v] <- is.na(cv) | cv == xi[v]
    }
    mis <- m - as.integer(rowSums(eq))
    # records that differ from record i in exactly one key (missing values match)
    sel <- mis == 1L
    one <- rows[sel]
    eq_one <- eq[sel, , drop = FALSE]
    complete <- n_na == 0L
    all_na <- if (rule && complete[i]) sum(n_na == m) else 0L
    emptied <- rule && n_na[i] == m - 1L
    lost <- if (emptied) setdiff(rows[complete[rows] & mis == 0L], i) else integer()
    best <- NA_integer_
    best_gain <- -Inf
    best_new <- integer()
    for (v in prio) {
      if (is.na(xi[v])) next
      new <- one[!eq_one[, v]]
      if (emptied) new <- new[!complete[new]]
      own <- if (emptied) n - fk[i] else length(new) + all_na
      gain <- min(own, k - fk[i]) + sum(short[new]) - sum(fk[lost] <= k)
      if (strict && gain > 0) {
        best <- v
        best_new <- new
        break
      }
      if (gain > best_gain) {
        best <- v
        best_gain <- gain
        best_new <- new
      }
    }
    codes[i, best] <- NA_integer_
    na_rows[[best]] <- c(na_rows[[best]], i)
    n_na[i] <- n_na[i] + 1L
    fk[i] <- if (emptied) n else fk[i] + length(best_new) + all_na
    fk[best_new] <- fk[best_new] + 1L
    fk[lost] <- fk[lost] - 1L
  }
  codes
}

# Each record's count of records whose keys equal its own wherever both are present, as
# sdcMicro's freqCalc() with alpha = 1 counts (with two or more keys, a record without
# missing keys does not count the records whose keys are all missing), by the patterns of
# missing keys: for each pair of patterns, records are matched on the keys present in both.
wildcard_counts <- function(codes) {
  n <- nrow(codes)
  m <- ncol(codes)
  pat <- as.vector((is.na(codes) + 0) %*% 2^(seq_len(m) - 1L))
  pats <- sort(unique(pat))
  fk <- integer(n)
  rows <- lapply(pats, function(p) which(pat == p))
  full <- 2^m - 1
  for (a in seq_along(pats)) {
    ia <- rows[[a]]
    for (b in seq_along(pats)) {
      if (m >= 2L && pats[a] == 0 && pats[b] == full) next
      ib <- rows[[b]]
      keep <- which(bitwAnd(bitwOr(pats[a], pats[b]), 2L^(seq_len(m) - 1L)) == 0L)
      if (!length(keep)) {
        fk[ia] <- fk[ia] + length(ib)
        next
      }
      id <- combined_ids(codes[c(ia, ib), keep, drop = FALSE])
      ida <- id[seq_along(ia)]
      idb <- id[length(ia) + seq_along(ib)]
      fk[ia] <- fk[ia] + tabulate(idb, max(id))[ida]
    }
  }
  fk
}

# One integer id per row of an integer matrix without NA: equal rows, equal ids.
combined_ids <- function(x) {
  id <- x[, 1L]
  if (ncol(x) > 1L) {
    for (j in 2:ncol(x)) {
      id <- match((id - 1) * (max(x[, j]) + 1) + x[, j], unique((id - 1) * (max(x[, j]) + 1) + x[, j]))
    }
  } else {
    id <- match(id, unique(id))
  }
  id
}
