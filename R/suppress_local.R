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
#' With `threshold`, the goal is an individual risk (see [risk_individual()]: the
#' negative-binomial risk with sampling `weights`, `1 / count` without) of at most
#' `threshold` for every record, instead of k-anonymity (`k` is not used): the record with
#' the highest risk goes first (the first such in row order), and the key suppressed is
#' the one that lowers most the total risk above the threshold (the excess of the record
#' and of the records that its suppressed key now matches), ties to the priority; with
#' `importance`, the least important key that lowers it (if none does, the one that
#' raises it least). Counts and weighted counts are updated exactly after every cell.
#' This is what sdcMicro's `localSupp()` does with one key for every record above the
#' threshold at once, without looking again: on `testdata` with the keys `urbrur`,
#' `water`, `sex` and `age`, weights `sampling_weight` and `threshold = 0.01`,
#' `localSupp(keyVar = "age")` suppresses 330 cells and leaves a record above the
#' threshold, `suppress_local()` 24 (1 of `water`, 23 of `age`) and leaves none; with
#' `threshold = 0.005`, 674 against 47 (see the tests). Without weights, `threshold = 1 /
#' k` suppresses the cells of `k`-anonymity.
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
#' @param threshold `NULL` (k-anonymity), or the largest individual risk allowed, a
#'   number in (0, 1]: suppress until no record's risk exceeds it. Not with `combs`.
#' @param weights With `threshold`: the name of the column of sampling weights of the
#'   risk (each at least 1), or `NULL` (the data are the population: the risk is
#'   `1 / count`).
#' @param household Name of a column of household ids, or `NULL`. With it, a key of
#'   `strata` that is constant within every household of `data` (a household-level key)
#'   and is suppressed for one member is suppressed for every member of the household,
#'   and the search is repeated until every record is k-anonymous again; the release
#'   metadata name these keys (`household_vars`).
#' @return `data`, in its class, with the suppressed cells set to `NA`, and release
#'   metadata (see [release_info()]) with the counts `n` (records), `n_changed` (cells
#'   suppressed), `changed_by_key` (cells suppressed in each key) and `min_size` (the
#'   smallest count afterwards, on all of `strata`) and, with `threshold`, `max_risk`
#'   (the largest individual risk afterwards). A message of class
#'   `detanon_message_suppress` reports the cells suppressed per key (its field
#'   `suppressed` holds them as a named integer vector).
#' @examples
#' d <- data.frame(age = c(20, 20, 20, 30, 30, 30, 40),
#'                 sex = c("m", "m", "f", "f", "f", "f", "m"))
#' out <- suppress_local(d, c("age", "sex"), k = 2)
#' out
#' release_info(out)$counts$changed_by_key
#' # to an individual risk of at most 0.5 (here, without weights, 2-anonymity)
#' suppress_local(d, c("age", "sex"), threshold = 0.5)
#' @family masking verbs
#' @export
suppress_local <- function(data, strata = NULL, k = 3, importance = NULL, combs = NULL, threshold = NULL,
                           weights = NULL, household = NULL) {
  if (is_sdc(data)) return(sdc_key_verb(suppress_local, data, match.call(), parent.frame())) # R/sdcmicro.R
  if (!is.null(household)) return(household_verb(suppress_local, data, household, match.call(), parent.frame()))
  check_data_frame(data, "data")
  strata <- check_columns(strata, data, "strata", default_strata(data))
  if (!length(strata)) stop_arg("`strata` is empty: name at least one key (quasi-identifier) column.")
  check_strata_columns(data, strata)
  k <- check_whole(k, "k", min = 1, max = .Machine$integer.max)
  m <- length(strata)
  if (!is.null(threshold)) {
    threshold <- check_number(threshold, "threshold", lower = 0, upper = 1, lower_open = TRUE)
    if (!is.null(combs)) stop_arg("`combs` cannot be combined with `threshold`; give one of them.")
  } else if (!is.null(weights)) {
    stop_arg("`weights` is used only with `threshold` (the individual risk); give `threshold` or drop `weights`.")
  }
  w <- check_weights(data, weights, strata)
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
  # without weights the risk is 1 / count: the threshold is the k-anonymity of k = 1 / threshold
  goal_k <- if (is.null(threshold)) k else if (is.null(w)) as.integer(min(ceiling(1 / threshold - 1e-9), n + 1))
  if (n > 0L && !is.null(goal_k) && goal_k > n) {
    if (is.null(threshold)) {
      stop_arg("`k` = ", k, " is larger than the number of records (", n,
               "): no suppression can make the data ", k, "-anonymous.", kind = "data")
    }
    stop_arg("`threshold` = ", format(threshold), " without `weights` needs a count of at least ", goal_k,
             ", more than the number of records (", n, "): no suppression can reach it.", kind = "data")
  }
  if (n > 0L && is.null(goal_k) && individual_risk(n, sum(w), TRUE) > threshold) {
    stop_arg("`threshold` = ", format(threshold), " is below the risk of a record with every key suppressed (",
             format(individual_risk(n, sum(w), TRUE), digits = 4), "): no suppression can reach it.", kind = "data")
  }
  codes <- key_code_matrix(df, strata)
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
        sub <- suppress_greedy(codes[, keys, drop = FALSE], goal_k, match(prio[prio %in% keys], keys),
                               strict = !is.null(importance), threshold = if (is.null(goal_k)) threshold, w = w)
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
                   paste0("`", strata, "` ", by_key, collapse = ", "), ") for ", suppress_goal(k, threshold), ".",
                   kind = "suppress", fields = list(suppressed = by_key))
  }
  counts <- list(n = n, n_changed = sum(by_key), changed_by_key = by_key,
                 min_size = if (n) min(wildcard_counts(codes)) else 0L)
  settings <- list(strata = strata, k = k, importance = importance, combs = combs)
  if (!is.null(threshold)) {
    settings <- c(settings[c("strata", "importance")], list(threshold = threshold, weights = weights))
    counts$max_risk <- if (n) max(suppress_risk(codes, w)) else 0
  }
  as_release(as_release_frame(df, data), "suppress_local", settings = settings, counts = counts)
}

# The codes of the keys `strata` of `out` as suppress_local() reads them (n x m, NA kept).
key_code_matrix <- function(out, strata) {
  matrix(unlist(lapply(as.data.frame(out)[strata], function(x) suda_codes(x)$code), use.names = FALSE),
         nrow(out), length(strata))
}

suppress_goal <- function(k, threshold) {
  if (is.null(threshold)) paste0(k, "-anonymity") else paste0("an individual risk of at most ", format(threshold))
}

# The individual risk of every record (risk_individual()'s; 1 / fk without weights `w`)
# for the integer key codes with NA.
suppress_risk <- function(codes, w) {
  f <- key_frequencies(as.data.frame(codes), paste0("V", seq_len(ncol(codes))), w)
  individual_risk(f$fk, f$Fk, !is.null(w))[f$key]
}

# The greedy search of suppress_local() on one set of keys. codes: n x m integer codes with
# NA; prio: the key indices, the one suppressed first first; strict: take the first key in
# `prio` that lowers the shortfall (else, and always without `strict`: the one that lowers it
# most, the first in `prio` on ties). With `threshold`, the goal is every record's
# individual risk (weights `w`, or NULL) at most `threshold` instead of k-anonymity: the
# record with the highest risk goes first, and a key is chosen by the fall of the total
# risk above the threshold (strict: the first in `prio` that lowers it). Returns the codes
# with the suppressed cells set to NA.
suppress_greedy <- function(codes, k, prio, strict, threshold = NULL, w = NULL) {
  n <- nrow(codes)
  m <- ncol(codes)
  by_risk <- !is.null(threshold)
  weighted <- !is.null(w)
  if (!weighted) w <- rep(1, n)
  if (by_risk) {
    f <- key_frequencies(as.data.frame(codes), paste0("V", seq_len(m)), w)
    fk <- as.integer(f$fk[f$key])
    Fk <- f$Fk[f$key]
  } else {
    fk <- wildcard_counts(codes)
    Fk <- as.numeric(fk)
  }
  risk_of <- function(fk, Fk) individual_risk(fk, Fk, weighted)
  excess <- function(r) pmax(r - threshold, 0)
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
    if (by_risk) {
      risk <- risk_of(fk, Fk)
      short <- risk > threshold
    } else {
      short <- fk < k
    }
    if (!any(short)) break
    unsafe <- which(short)
    i <- if (by_risk) unsafe[which.max(risk[unsafe])] else unsafe[which.min(fk[unsafe])]
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
    all_na_w <- if (all_na) sum(w[n_na == m]) else 0
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
      gain <- if (by_risk) {
        # the fall of the total risk above the threshold: record i's, and that of the
        # records that gain it or (when it loses its last key) lose it
        left <- if (emptied) risk_of(n, sum(w)) else risk_of(fk[i] + own, Fk[i] + sum(w[new]) + all_na_w)
        excess(risk[i]) - excess(left) + sum(excess(risk[new]) - excess(risk_of(fk[new] + 1L, Fk[new] + w[i]))) -
          sum(excess(risk_of(fk[lost] - 1L, Fk[lost] - w[i])) - excess(risk[lost]))
      } else {
        min(own, k - fk[i]) + sum(short[new]) - sum(fk[lost] <= k)
      }
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
    Fk[i] <- if (emptied) sum(w) else Fk[i] + sum(w[best_new]) + all_na_w
    Fk[best_new] <- Fk[best_new] + w[i]
    Fk[lost] <- Fk[lost] - w[i]
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
