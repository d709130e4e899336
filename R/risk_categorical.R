# Risk measures for categorical key variables: frequency counts (fk, Fk), the individual
# and household re-identification risk of the negative-binomial model, l-diversity and
# t-closeness. The numbers are sdcMicro's (freqCalc(), indivRisk(), measure_risk(),
# ldiversity()) and ARX's (t-closeness) where the definitions are the same.

# ---- frequency counts ------------------------------------------------------------------

# Sample frequency fk and weighted population estimate Fk of every record's key
# combination, as sdcMicro's freqCalc() (alpha = 1) computes them. `w`: the weights (or
# NULL: every record weighs 1). A missing key value is a wildcard that matches any value:
# fk of a record is the number of records whose keys agree with its own wherever both are
# present, and Fk their summed weights. Two exceptions, as in freqCalc(): a record whose
# keys are all missing counts every record (fk = n), and with more than one key it is not
# counted in fk of the records whose keys are complete (freqCalc() matches complete keys
# only against the present values of a key with some missing).
# Returns list(fk, Fk, key): `key` the id (1..U) of every record's exact key combination
# (missing values a value of their own), `fk` and `Fk` per key id (the record's are
# fk[key], Fk[key]: every record of one combination has the same counts).
key_frequencies <- function(data, strata, w = NULL) {
  n <- nrow(data)
  if (is.null(w)) w <- rep(1, n)
  if (!n) return(list(fk = numeric(), Fk = numeric(), key = integer()))
  for (v in strata) {
    x <- data[[v]]
    if (is.double(x) && any(is.nan(x))) data[[v]] <- replace(x, is.nan(x), NA) # one wildcard
  }
  key <- key_ids(data, strata) # missing values a value of their own
  n_keys <- max(key)
  cnt <- tabulate(key, n_keys)
  wsum <- group_sums(w, key, n_keys)
  if (!any(vapply(data[strata], anyNA, logical(1)))) {
    return(list(fk = as.numeric(cnt), Fk = wsum, key = key))
  }
  codes <- lapply(data[strata], key_codes)
  first <- match(seq_len(n_keys), key)
  kc <- lapply(codes, function(v) v[first]) # the distinct keys, NA = wildcard
  m <- length(strata)
  present <- do.call(cbind, lapply(kc, function(v) !is.na(v)))
  pat <- group_ids(lapply(seq_len(m), function(j) present[, j]))
  n_pat <- max(pat)
  pat_present <- present[match(seq_len(n_pat), pat), , drop = FALSE]
  add_f <- numeric(n_keys)
  add_w <- numeric(n_keys)
  for (p in seq_len(n_pat)) {
    a <- which(pat == p)
    complete_p <- all(pat_present[p, ])
    for (q in seq_len(n_pat)) {
      if (q == p) next # keys of one pattern match only themselves
      if (complete_p && !any(pat_present[q, ]) && m > 1L) next # freqCalc()'s exception
      b <- which(pat == q)
      common <- which(pat_present[p, ] & pat_present[q, ])
      if (!length(common)) {
        add_f[a] <- add_f[a] + sum(cnt[b])
        add_w[a] <- add_w[a] + sum(wsum[b])
        next
      }
      # both sides projected on the variables present in both: equal projections match
      g <- group_ids(lapply(kc[common], function(v) c(v[a], v[b])))
      ga <- g[seq_along(a)]
      gb <- g[length(a) + seq_along(b)]
      n_g <- max(g)
      add_f[a] <- add_f[a] + group_sums(cnt[b], gb, n_g)[ga]
      add_w[a] <- add_w[a] + group_sums(wsum[b], gb, n_g)[ga]
    }
  }
  fk <- cnt + add_f
  Fk <- wsum + add_w
  all_na <- !rowSums(present)
  fk[all_na] <- n
  Fk[all_na] <- sum(w)
  list(fk = fk, Fk = Fk, key = key)
}

# Ids 1..S of the combinations of the columns `strata` (a missing value is a value of its
# own): the partition of stratum_ids(), numbered in another order, without hashing when
# the codes are small whole numbers (a table of them is then at most a few times n).
key_ids <- function(data, strata) {
  n <- nrow(data)
  if (!n) return(integer())
  id <- rep.int(1L, n)
  n_id <- 1
  for (v in strata) {
    code <- codes_of(data[[v]])
    n_code <- max(code)
    if (as.double(n_id) * n_code <= max(4 * n, 1e6)) {
      id <- compact_codes((code - 1L) * as.integer(n_id) + id, as.integer(n_id * n_code))
    } else {
      combined <- (code - 1) * n_id + id
      id <- match(combined, unique(combined))
    }
    n_id <- max(id)
  }
  id
}

# Codes 1..L of a factor, logical or whole-number column whose range is small (NA the last
# code), or NULL when the column is not of that kind.
small_codes <- function(x, n) {
  if (is.factor(x)) {
    if (nlevels(x) + 1 > max(4 * n, 1e6)) return(NULL)
    r <- as.integer(x)
    top <- nlevels(x) + 1L
  } else if (is.logical(x)) {
    r <- as.integer(x) + 1L
    top <- 3L
  } else if (is.integer(x) || (is.double(x) && all(x == round(x), na.rm = TRUE))) {
    lo <- suppressWarnings(min(x, na.rm = TRUE))
    hi <- suppressWarnings(max(x, na.rm = TRUE))
    if (!is.finite(lo) || hi - lo + 2 > max(4 * n, 1e6)) return(NULL)
    r <- as.integer(x - lo) + 1L
    top <- as.integer(hi - lo) + 2L
  } else {
    return(NULL)
  }
  r[is.na(r)] <- top
  compact_codes(r, top)
}

# Codes 1..L of a column, equal values sharing a code (NA one code of its own).
codes_of <- function(x) {
  code <- small_codes(x, length(x))
  if (is.null(code)) column_codes(x) else code
}

# Renumbers positive codes <= top to 1..L keeping their order.
compact_codes <- function(r, top) {
  present <- tabulate(r, top) > 0L
  if (all(present)) return(r)
  cumsum(present)[r]
}

# stratum_ids() of a list of equal-length columns.
group_ids <- function(cols) {
  names(cols) <- paste0("v", seq_along(cols))
  stratum_ids(structure(cols, class = "data.frame", row.names = c(NA, -length(cols[[1L]]))), names(cols))
}

# Integer codes of one key column with NA kept: equal values share a code.
key_codes <- function(x) {
  if (is.factor(x)) return(as.integer(x))
  match(x, sort_unique_radix(x[!is.na(x)]))
}

# Sums of `x` by group id 1..n_groups (0 for an empty group), in row order (src/freq.c).
group_sums <- function(x, g, n_groups) {
  .Call(C_ffi_group_sums, as.double(x), as.integer(g), as.integer(n_groups))
}

# ---- argument checks shared by the measures ---------------------------------------------

# An sdcMicroObj as the arguments of a categorical measure: its manipulated key variables
# (with the missing values of local suppression), and from its original data the
# sampling weights and household ids, unless the call names other columns of these.
sdc_key_args <- function(obj, strata, weights, household, given) {
  check_sdc(obj, "data")
  p <- sdc_parts(obj)
  if (!length(p$keys)) {
    stop_arg("the sdcMicroObj in `data` has no key variables (keyVars) to measure.", kind = "column")
  }
  extra <- unique(c(p$weight, p$hh))
  data <- sdc_frame(p, as.list(p$orig[setdiff(extra, p$keys)]))
  list(data = data,
       strata = if (is.null(strata)) p$keys else strata,
       weights = if ("weights" %in% given) weights else if (length(p$weight)) p$weight else NULL,
       household = if ("household" %in% given) household else if (length(p$hh)) p$hh else NULL)
}

check_key_strata <- function(data, strata) {
  strata <- check_columns(strata, data, "strata", default_strata(data))
  if (!length(strata)) stop_arg("`strata` is empty: name at least one key (quasi-identifier) column.")
  check_strata_columns(data, strata)
  strata
}

# The weights column: numeric, finite and at least 1 (a sampled record stands for itself
# and possibly others of the population).
check_weights <- function(data, weights, strata) {
  if (is.null(weights)) return(NULL)
  if (!is.character(weights) || length(weights) != 1L || is.na(weights)) {
    stop_arg("`weights` must be the name of one column of sampling weights, not ", show_value(weights), ".")
  }
  check_columns(weights, data, "weights")
  if (weights %in% strata) stop_arg("`weights` (", weights, ") must not be one of `strata`.", kind = "column")
  w <- data[[weights]]
  if (!is_continuous(w)) {
    stop_arg("`weights` column `", weights, "` must be numeric, not ", class_label(w), ".", kind = "column")
  }
  bad <- is.na(w) | !is.finite(w) | w < 1
  if (any(bad)) {
    i <- which(bad)[1L]
    stop_arg("`weights` column `", weights, "` must hold finite sampling weights >= 1 (the population ",
             "records a sampled record stands for); ", plural(sum(bad), "record has", "records have"),
             " another value (the first is ", format(w[i]), " in row ", i, ").", kind = "data")
  }
  as.numeric(w)
}

check_household <- function(data, household, strata, weights) {
  if (is.null(household)) return(NULL)
  if (!is.character(household) || length(household) != 1L || is.na(household)) {
    stop_arg("`household` must be the name of one column of household ids, not ", show_value(household), ".")
  }
  check_columns(household, data, "household")
  if (household %in% c(strata, weights)) {
    stop_arg("`household` (", household, ") must not be one of `strata` or `weights`.", kind = "column")
  }
  h <- data[[household]]
  if (!is_categorical_like(h)) {
    stop_arg("`household` column `", household, "` must be an atomic vector of ids, not ", class_label(h), ".",
             kind = "column")
  }
  if (anyNA(h)) {
    stop_arg("`household` column `", household, "` has ", plural(sum(is.na(h)), "missing id"),
             "; give every record a household.", kind = "data")
  }
  h
}

check_sensitive_column <- function(data, sensitive, strata) {
  if (!is.character(sensitive) || length(sensitive) != 1L || is.na(sensitive)) {
    stop_arg("`sensitive` must be the name of one column, not ", show_value(sensitive), ".")
  }
  check_columns(sensitive, data, "sensitive")
  if (sensitive %in% strata) stop_arg("`sensitive` (", sensitive, ") must not be one of `strata`.", kind = "column")
  check_strata_columns(data, sensitive, "sensitive")
  sensitive
}

# ---- individual and household risk ------------------------------------------------------

#' Frequency counts of key combinations
#'
#' For every record, the number of records of the sample that share its combination of
#' key values (`fk`) and, with sampling weights, the estimated number of people in the
#' population who do (`Fk`, the sum of the weights of those records): sdcMicro's
#' `freqCalc()`. A record with `fk = 1` is a sample unique; `Fk` close to `fk` means it is
#' likely unique in the population too.
#'
#' A missing key value (e.g. after local suppression) is a wildcard that stands for any
#' value: a record counts every record whose keys agree with its own wherever both are
#' present. As in sdcMicro, a record whose keys are all missing has `fk = n`, and (with
#' more than one key) it is not counted for records whose keys are complete.
#'
#' @section What it protects against, and what not: the counts describe re-identification
#'   through the `strata` only (an intruder who knows a person's key values and looks for
#'   them in the release). They say nothing about other columns, attribute disclosure
#'   (see [risk_ldiversity()], [risk_tcloseness()]) or continuous variables.
#' @param data A data frame, or (for `risk_frequencies()` and `risk_individual()`) an
#'   `sdcMicroObj`, whose manipulated key variables are measured (missing values left by
#'   local suppression are wildcards) with its sampling weights and household ids.
#' @param strata The key variables (categorical quasi-identifiers). Default: the factor,
#'   character and logical columns (for an `sdcMicroObj`: its key variables).
#' @param weights Name of the column of sampling weights (each >= 1), or `NULL` when
#'   `data` is the whole population (then `Fk = fk`).
#' @return A `detanon_risk_frequencies` list: `fk` and `Fk` (per record), `n`,
#'   `n_unique` (records with `fk = 1`), `n_two` (records with `fk = 2`), `strata`,
#'   `weights`.
#' @examples
#' d <- data.frame(sex = c(1, 1, 2, 2, 2), region = c("a", "a", "a", "b", NA),
#'                 w = c(10, 20, 15, 5, 8))
#' risk_frequencies(d, c("sex", "region"), weights = "w")$fk
#' @family measures
#' @export
risk_frequencies <- function(data, strata = NULL, weights = NULL) {
  if (is_sdc(data)) {
    a <- sdc_key_args(data, strata, weights, NULL, names(match.call()))
    return(risk_frequencies(a$data, a$strata, weights = a$weights))
  }
  check_data_frame(data, "data")
  strata <- check_key_strata(data, strata)
  w <- check_weights(data, weights, strata)
  df <- as.data.frame(data)
  f <- key_frequencies(df, strata, w)
  fk <- f$fk[f$key]
  structure(list(fk = fk, Fk = f$Fk[f$key], n = nrow(df), n_unique = sum(fk == 1), n_two = sum(fk == 2),
                 strata = strata, weights = weights),
            class = "detanon_risk_frequencies")
}

#' @export
print.detanon_risk_frequencies <- function(x, ...) {
  cat(strwrap(sprintf("Key frequencies of %s over %s%s", plural(x$n, "record"),
                      paste(x$strata, collapse = ", "),
                      if (is.null(x$weights)) "" else paste0(", weighted by ", x$weights)),
              width = 78, exdent = 2), sep = "\n")
  cat(sprintf("  sample uniques (fk = 1): %d; fk = 2: %d\n", x$n_unique, x$n_two))
  invisible(x)
}

# Individual risk of sdcMicro's indivRisk(method = "approx") from fk and Fk; 1 / fk
# without weights.
individual_risk <- function(fk, Fk, weighted) {
  if (!weighted) return(1 / fk)
  pk <- fk / Fk
  r <- numeric(length(fk))
  odds <- pk / (1 - pk)
  i <- fk > 2
  r[i] <- pk[i] / (fk[i] - (1 - pk[i]))
  i <- fk == 2
  r[i] <- odds[i] - odds[i]^2 * log(1 / pk[i])
  i <- fk == 1
  r[i] <- odds[i] * log(1 / pk[i])
  i <- fk == Fk
  r[i] <- 1 / fk[i]
  r
}

# 1 - prod(1 - r) over the members of every household, given to each member.
household_risk <- function(r, h) {
  g <- codes_of(h)
  n_g <- max(c(0L, g))
  if (all(r <= 1)) {
    s <- group_sums(log1p(-r), g, n_g)
    return((1 - exp(s))[g])
  }
  # a risk above 1 (cancellation in the fk = 2 formula when Fk is within rounding of fk,
  # as in sdcMicro): the product itself
  unname(1 - vapply(split(1 - r, g), prod, numeric(1)))[g]
}

# sdcMicro's global threshold (measure_threshold(), the mu-Argus rule): the largest
# individual risk such that, if the records above it were made safe (risk = that value),
# the expected re-identifications would fall below max_global_risk * n. NA where sdcMicro
# reports NA (the data already meet the goal, or no threshold reaches it).
global_threshold <- function(r, max_global_risk) {
  n <- length(r)
  if (!n) return(NA_real_)
  r <- sort(r, decreasing = TRUE)
  target <- max_global_risk * n
  if (sum(r) < target) return(NA_real_)
  tail_sum <- rev(cumsum(rev(r)))
  j <- which(c(FALSE, r[-1L] != r[-n]) & tail_sum + r * (seq_len(n) - 1) < target)
  if (!length(j)) return(if (r[n] == 0) NA_real_ else 0)
  r[j[1L]]
}

#' Individual and household re-identification risk for categorical keys
#'
#' The probability that an intruder who knows a person's key values (`strata`) and links
#' them to the release picks that person's record, under the negative-binomial
#' super-population model of Benedetti and Franconi, with the approximation of Franconi
#' and Polettini (2004) that sdcMicro's `indivRisk()` and `measure_risk()` use: for a
#' record whose key combination occurs `fk` times in the sample and an estimated `Fk`
#' times in the population (the summed `weights`), with `pk = fk / Fk`, the risk is
#' `pk / (1 - pk) * log(1 / pk)` for `fk = 1`, `pk / (1 - pk) - (pk / (1 - pk))^2 *
#' log(1 / pk)` for `fk = 2`, `pk / (fk - (1 - pk))` for larger `fk`, and `1 / fk` when
#' `Fk = fk` or without `weights` (the data are the population).
#'
#' The global risk is the sum of the individual risks (the expected number of
#' re-identifications) and their mean (as a share; sdcMicro prints it in per cent).
#' With `household`, the risk of a household is the probability that at least one of its
#' members is re-identified, `1 - prod(1 - r)` over its members, and each member carries
#' it (sdcMicro's `hier_risk`). Missing key values are wildcards, as in
#' [risk_frequencies()].
#'
#' @section What it protects against, and what not: the risk measures identity disclosure
#'   through the key variables, for an intruder who knows the keys of a person and
#'   whether the file is a sample. It does not cover linkage through continuous
#'   variables (see [risk_rmd()], [risk_linkage()]), attribute disclosure (see
#'   [risk_ldiversity()], [risk_tcloseness()]), keys not listed in `strata`, or an
#'   intruder who knows that the person is in the sample (then the risk is `1 / fk`).
#'   The model assumes the weights are sampling weights; it is an estimate, not a bound.
#' @inheritParams risk_frequencies
#' @param household Name of a column of household (cluster) ids, or `NULL`.
#' @param threshold A risk above which a record counts as at risk (`n_above`,
#'   `share_above`); a number in (0, 1].
#' @param max_global_risk The goal for the global risk (a share in (0, 1)) from which
#'   sdcMicro's threshold `global_threshold` is computed.
#' @return A `detanon_risk_individual` list: per record `fk`, `Fk`, `risk` and (with
#'   `household`) `household_risk`; in total `n`, `expected` (sum of the risks: expected
#'   re-identifications), `global_risk` (their mean), `n_above` and `share_above`
#'   (records with risk above `threshold`), `n_outlying` (records whose risk exceeds both
#'   0.1 and the median plus 3 MADs: what sdcMicro prints as "obs. with higher risk than
#'   the main part"), `max_risk`, `global_threshold` (sdcMicro's threshold for
#'   `max_global_risk`: the risk above which records must be protected to bring the
#'   expected re-identifications below `max_global_risk * n`, or `NA`) and, with
#'   `household`, `household_expected`, `household_global_risk`; and the settings.
#' @references Franconi, L. and Polettini, S. (2004). Individual risk estimation in
#'   mu-Argus: a review. *Privacy in Statistical Databases*, LNCS 3050, 262-272.
#' @examples
#' d <- data.frame(sex = c(1, 1, 2, 2, 2, 1), region = c("a", "a", "a", "b", "b", "b"),
#'                 w = c(10, 20, 15, 5, 8, 30), hh = c(1, 1, 2, 2, 3, 3))
#' r <- risk_individual(d, c("sex", "region"), weights = "w", household = "hh")
#' r$risk
#' r
#' @family measures
#' @export
risk_individual <- function(data, strata = NULL, weights = NULL, household = NULL, threshold = 0.1,
                            max_global_risk = 0.01) {
  if (is_sdc(data)) {
    a <- sdc_key_args(data, strata, weights, household, names(match.call()))
    return(risk_individual(a$data, a$strata, weights = a$weights, household = a$household,
                           threshold = threshold, max_global_risk = max_global_risk))
  }
  check_data_frame(data, "data")
  strata <- check_key_strata(data, strata)
  w <- check_weights(data, weights, strata)
  h <- check_household(data, household, strata, weights)
  threshold <- check_number(threshold, "threshold", lower = 0, upper = 1, lower_open = TRUE)
  max_global_risk <- check_number(max_global_risk, "max_global_risk", lower = 0, upper = 1,
                                  lower_open = TRUE)
  if (max_global_risk >= 1) stop_arg("`max_global_risk` must be < 1, not ", show_value(max_global_risk), ".")
  df <- as.data.frame(data)
  n <- nrow(df)
  f <- key_frequencies(df, strata, w)
  r <- individual_risk(f$fk, f$Fk, !is.null(w))[f$key] # computed once per key combination
  out <- list(fk = f$fk[f$key], Fk = f$Fk[f$key], risk = r, n = n, expected = sum(r),
              global_risk = if (n) sum(r) / n else 0,
              n_above = sum(r > threshold), share_above = if (n) sum(r > threshold) / n else 0,
              n_outlying = if (n) sum(r > stats::median(r) + 3 * stats::mad(r) & r > 0.1) else 0L,
              max_risk = if (n) max(r) else 0,
              global_threshold = global_threshold(r, max_global_risk),
              strata = strata, weights = weights, household = household, threshold = threshold,
              max_global_risk = max_global_risk)
  if (!is.null(h)) {
    hr <- household_risk(r, h)
    out$household_risk <- hr
    out$household_expected <- sum(hr)
    out$household_global_risk <- if (n) sum(hr) / n else 0
  }
  structure(out, class = "detanon_risk_individual")
}

#' @export
print.detanon_risk_individual <- function(x, ...) {
  cat(strwrap(sprintf("Individual re-identification risk of %s on %s%s", plural(x$n, "record"),
                      paste(x$strata, collapse = ", "),
                      if (is.null(x$weights)) " (the data are the population)" else
                        paste0(", weighted by ", x$weights)),
              width = 78, exdent = 2), sep = "\n")
  cat(sprintf("  expected re-identifications: %.2f (global risk %.4f%%)\n", x$expected, 100 * x$global_risk))
  cat(sprintf("  largest risk %.4f; %d records (%.2f%%) above %.4f\n", x$max_risk, x$n_above,
              100 * x$share_above, x$threshold))
  if (!is.null(x$household)) {
    cat(sprintf("  household risk (%s): %.2f expected (%.4f%%)\n", x$household, x$household_expected,
                100 * x$household_global_risk))
  }
  invisible(x)
}

# ---- l-diversity -----------------------------------------------------------------------

#' l-diversity of a sensitive variable within key classes
#'
#' Groups the records by their combination of key values (`strata`; a missing value is a
#' value of its own here, as in sdcMicro's `ldiversity()`) and measures how varied the
#' sensitive column is within each class (Machanavajjhala et al., 2007): *distinct*
#' l-diversity is the number of distinct sensitive values in the class, *entropy*
#' l-diversity `exp(-sum(p * log(p)))` over the shares `p` of those values, and
#' *recursive (c, l)*-diversity the largest `l` with `r1 < c * (rl + ... + rm)` for the
#' class's counts sorted decreasingly `r1 >= ... >= rm` (1 when none). The values equal
#' sdcMicro's `ldiversity()` for data without missing sensitive values (sdcMicro counts
#' each missing value as a category of its own; here missing values are one value).
#'
#' @section What it protects against, and what not: l-diversity limits attribute
#'   disclosure: an intruder who places a person in a class learns the sensitive value
#'   only with the uncertainty the class leaves. It does not prevent re-identification
#'   (see [risk_individual()]), ignores how similar or how common the values are (a class
#'   of "flu" and "severe flu" is 2-diverse; see [risk_tcloseness()]), and treats a
#'   numeric sensitive column as categories.
#' @inheritParams risk_frequencies
#' @param sensitive The name of the sensitive column.
#' @param c The constant of recursive (c, l)-diversity, a number > 0.
#' @return A `detanon_risk_ldiversity` list: per record `distinct`, `entropy` and
#'   `recursive` (of its class); in total `n`, `n_classes` and `l_distinct`,
#'   `l_entropy`, `l_recursive` (the smallest value over the classes: the l the data
#'   satisfy), and the settings.
#' @references Machanavajjhala, A., Kifer, D., Gehrke, J. and Venkitasubramaniam, M.
#'   (2007). l-Diversity: privacy beyond k-anonymity. *ACM TKDD* 1(1).
#' @examples
#' d <- data.frame(sex = c(1, 1, 1, 2, 2, 2), dx = c("a", "a", "b", "c", "c", "c"))
#' risk_ldiversity(d, "sex", sensitive = "dx")$distinct
#' @family measures
#' @export
risk_ldiversity <- function(data, strata = NULL, sensitive, c = 2) {
  check_data_frame(data, "data")
  strata <- check_key_strata(data, strata)
  if (missing(sensitive)) stop_arg("`sensitive` is missing: name the sensitive column.")
  sensitive <- check_sensitive_column(data, sensitive, strata)
  c <- check_number(c, "c", lower = 0, lower_open = TRUE)
  df <- as.data.frame(data)
  n <- nrow(df)
  cls <- class_counts(df, strata, sensitive)
  # per class: counts sorted decreasingly
  o <- order(cls$class, -cls$count)
  cl <- cls$class[o]
  r <- cls$count[o]
  size <- cls$size
  first <- !duplicated(cl)
  start <- which(first)[cl]           # position of the class's first (largest) count
  before <- cumsum(r) - r             # counts of earlier positions, all classes
  tail <- size[cl] - (before - before[start]) # r_j + ... + r_m within the class
  ok <- !first & c * tail > r[start]
  recursive <- 1 + tabulate(cl[ok], length(size))
  p <- cls$count / size[cls$class]
  entropy <- exp(-group_sums(p * log(p), cls$class, length(size)))
  distinct <- tabulate(cls$class, length(size))
  g <- cls$id
  structure(list(
    distinct = distinct[g], entropy = entropy[g], recursive = recursive[g],
    n = n, n_classes = length(size),
    l_distinct = if (n) min(distinct) else NA_integer_,
    l_entropy = if (n) min(entropy) else NA_real_,
    l_recursive = if (n) min(recursive) else NA_real_,
    strata = strata, sensitive = sensitive, c = c
  ), class = "detanon_risk_ldiversity")
}

# The classes of `strata` (missing values a value of their own) and the counts of the
# sensitive values in each: id (class per record), size (per class), and per (class,
# value) pair that occurs: class, value (code, 1..V in sorted order), count.
class_counts <- function(df, strata, sensitive) {
  n <- nrow(df)
  if (!n) return(list(id = integer(), size = integer(), class = integer(), value = integer(),
                      count = integer(), n_values = 0L))
  id <- key_ids(df, strata)
  s <- df[[sensitive]]
  if (is.factor(s)) s <- droplevels(s)
  sv <- codes_of(s)
  n_cls <- max(id)
  n_val <- max(sv)
  if (as.numeric(n_cls) * n_val <= max(4 * n, 1e6)) {
    # a table of every (class, value) cell is small enough: count them directly
    tab <- tabulate((sv - 1L) * n_cls + id, n_cls * n_val)
    cell <- which(tab > 0L) - 1L
    return(list(id = id, size = tabulate(id, n_cls), class = cell %% n_cls + 1L,
                value = cell %/% n_cls + 1L, count = tab[cell + 1L], n_values = n_val))
  }
  pair <- group_ids(list(id, sv))
  n_pairs <- max(pair)
  fp <- match(seq_len(n_pairs), pair)
  list(id = id, size = tabulate(id, n_cls), class = id[fp], value = sv[fp],
       count = tabulate(pair, n_pairs), n_values = n_val)
}

#' @export
print.detanon_risk_ldiversity <- function(x, ...) {
  cat(strwrap(sprintf("l-diversity of %s within %s on %s (%s)", x$sensitive,
                      plural(x$n_classes, "class", "classes"), paste(x$strata, collapse = ", "),
                      plural(x$n, "record")), width = 78, exdent = 2), sep = "\n")
  cat(sprintf("  distinct l: %d; entropy l: %.4f; recursive (c = %s, l): %d\n",
              as.integer(x$l_distinct), x$l_entropy, format(x$c), as.integer(x$l_recursive)))
  invisible(x)
}

# ---- t-closeness -----------------------------------------------------------------------

#' t-closeness of a sensitive variable within key classes
#'
#' Groups the records by their combination of key values (`strata`; a missing value is a
#' value of its own) and measures, for each class, the distance between the distribution
#' of the sensitive column in the class and in the whole data, as the earth mover's
#' distance (EMD) of Li, Li and Venkatasubramanian (2007) in ARX's two ground distances:
#' `"equal"` (every pair of distinct values at distance 1; the EMD is half the sum of the
#' absolute differences of the shares) and `"ordered"` (the `m` distinct values of the
#' data in their order, value `i` and `j` at distance `|i - j| / (m - 1)`; the EMD is
#' `sum(abs(cumsum(p - q))) / (m - 1)`). The data satisfy t-closeness for every `t` at
#' least the largest class distance.
#'
#' @section What it protects against, and what not: t-closeness limits what an intruder
#'   who places a person in a class learns beyond what the whole release tells about
#'   everyone (skewness and similarity attacks that l-diversity misses). It does not
#'   prevent re-identification (see [risk_individual()]), protects one sensitive column at
#'   a time, and the "ordered" distance uses ranks, not the sizes of the gaps between
#'   values.
#' @inheritParams risk_ldiversity
#' @param distance `"equal"` (categories) or `"ordered"` (an ordered factor or numbers);
#'   default: `"ordered"` for numeric columns and ordered factors, `"equal"` otherwise.
#' @return A `detanon_risk_tcloseness` list: per record `t` (the distance of its class);
#'   in total `n`, `n_classes`, `t_max` (the largest class distance: the t the data
#'   satisfy), `distance` and the settings.
#' @references Li, N., Li, T. and Venkatasubramanian, S. (2007). t-Closeness: privacy
#'   beyond k-anonymity and l-diversity. *ICDE 2007*, 106-115.
#' @examples
#' d <- data.frame(sex = c(1, 1, 1, 2, 2, 2), income = c(10, 20, 30, 40, 50, 60))
#' risk_tcloseness(d, "sex", sensitive = "income")$t_max
#' @family measures
#' @export
risk_tcloseness <- function(data, strata = NULL, sensitive, distance = NULL) {
  check_data_frame(data, "data")
  strata <- check_key_strata(data, strata)
  if (missing(sensitive)) stop_arg("`sensitive` is missing: name the sensitive column.")
  sensitive <- check_sensitive_column(data, sensitive, strata)
  s <- data[[sensitive]]
  if (is.null(distance)) {
    distance <- if (is.ordered(s) || (is.numeric(s) && !is.factor(s))) "ordered" else "equal"
  }
  distance <- match_choice(distance, "distance", c("equal", "ordered"))
  if (distance == "ordered" && anyNA(s)) {
    stop_arg("`sensitive` column `", sensitive, "` has ", plural(sum(is.na(s)), "missing value"),
             ", which have no place in the order of `distance = \"ordered\"`; use ",
             "`distance = \"equal\"` or remove them.", kind = "data")
  }
  df <- as.data.frame(data)
  n <- nrow(df)
  cls <- class_counts(df, strata, sensitive)
  n_cls <- length(cls$size)
  p <- cls$count / cls$size[cls$class]
  qv <- tabulate(rep.int(cls$value, cls$count), cls$n_values) / n # overall shares per value
  q <- qv[cls$value]
  if (distance == "equal") {
    # values absent from a class contribute their overall share
    t <- 0.5 * (group_sums(abs(p - q), cls$class, n_cls) + 1 - group_sums(q, cls$class, n_cls))
  } else {
    t <- ordered_emd(cls, qv, n_cls)
  }
  t <- pmax(t, 0)
  structure(list(t = t[cls$id], n = n, n_classes = n_cls, t_max = if (n) max(t) else NA_real_,
                 distance = distance, strata = strata, sensitive = sensitive),
            class = "detanon_risk_tcloseness")
}

# EMD under the ordered distance for every class: sum over ranks i = 1..m of
# |P_c(i) - Q(i)| / (m - 1), P_c and Q the cumulative shares. P_c is constant between
# the values present in the class; Q increases, so within each such run the sum splits
# at the last rank with Q <= P_c and is read off prefix sums of Q.
ordered_emd <- function(cls, qv, n_cls) {
  m <- length(qv)
  if (m < 2L) return(numeric(n_cls))
  Q <- cumsum(qv)
  CQ <- c(0, cumsum(Q)) # CQ[i + 1] = Q_1 + ... + Q_i
  o <- order(cls$class, cls$value)
  cl <- cls$class[o]
  v <- cls$value[o]
  # cumulative shares within the class, from integer counts (exact)
  cnt <- cls$count[o]
  before <- cumsum(cnt) - cnt
  start <- which(!duplicated(cl))[cl]
  P <- (before - before[start] + cnt) / cls$size[cl]
  nxt <- c(v[-1L], 0L)
  last <- c(cl[-1L] != cl[-length(cl)], TRUE)
  hi <- ifelse(last, m, nxt - 1L) # the run of rank v .. hi has cumulative share P
  run_sum <- function(P, a, b) {
    s <- pmin(pmax(findInterval(P, Q), a - 1L), b)
    P * (s - a + 1) - (CQ[s + 1L] - CQ[a]) + (CQ[b + 1L] - CQ[s + 1L]) - P * (b - s)
  }
  total <- group_sums(run_sum(P, v, hi), cl, n_cls)
  # ranks before the class's smallest value: P = 0, sum of Q
  lo <- v[!duplicated(cl)]
  total[cl[!duplicated(cl)]] <- total[cl[!duplicated(cl)]] + CQ[lo]
  total / (m - 1)
}

#' @export
print.detanon_risk_tcloseness <- function(x, ...) {
  cat(strwrap(sprintf("t-closeness of %s within %s on %s (%s; %s distance)", x$sensitive,
                      plural(x$n_classes, "class", "classes"), paste(x$strata, collapse = ", "),
                      plural(x$n, "record"), x$distance), width = 78, exdent = 2), sep = "\n")
  cat(sprintf("  largest class distance t: %.4f\n", x$t_max))
  invisible(x)
}

# ---- population uniqueness ----------------------------------------------------------------

#' Population uniques estimated from a sample (Zayatz, Pitman, SNB)
#'
#' When `data` is a sample of a population of `population` people, the number of people
#' who are unique in the population on the `strata` (and so re-identifiable by anyone
#' who knows their keys) is estimated from the sizes of the sample's key classes, with
#' the three models ARX offers: Zayatz (1991), as ARX computes it (the share of sample
#' uniques that are population uniques from hypergeometric probabilities on the sample's
#' class-size histogram, scaled by the sampling fraction); Pitman's sampling formula
#' (Hoshino, 2001): the maximum-likelihood `theta` and `alpha` of the Pitman model of
#' the class sizes, and `exp(lgamma(theta + 1) - lgamma(theta + alpha)) *
#' population^alpha` uniques; and the slide (shifted) negative binomial model (SNB,
#' Chen and Keller-McNulty, 1998): population class sizes `1 + NB(alpha, beta)` in `K`
#' classes, each person sampled with probability `f` (the sampling fraction), `K` by
#' Haas et al.'s third Shlosser estimator, `alpha` and `beta` solving the equations that
#' set the expected numbers of sample classes of size 1 and 2 to the observed ones, and
#' `K * beta^alpha` uniques. Classes are exact key combinations (a missing value is a
#' value of its own). With no sample unique every estimate is 0; an estimate that does
#' not exist (Pitman's likelihood without a maximum, SNB's equations without a root,
#' e.g. without a class of size 2, or an estimate outside 0 .. population) is `NA`.
#'
#' ARX's ModelSNB differs in two places, both typing slips in its Java: the Shlosser
#' denominator sums `(1 - f)^i f_i (1 + f)^i - 1` (the estimator has
#' `(1 - f)^i ((1 + f)^i - 1) f_i`), and its equation for the classes of size 2
#' multiplies by `(1 - (1 - f)(1 - beta))^(alpha + 2)` where the model (and ARX's own
#' derivative of it) divides; the numbers here follow the model.
#'
#' @section What it protects against, and what not: the estimates say how many people an
#'   intruder with a population register could re-identify through the `strata`; they are
#'   model-based estimates for a random sample, not bounds, and say nothing about other
#'   columns or attribute disclosure. Dankar's rule of ARX (Pitman for sampling fractions
#'   up to 0.1, else the smaller of Zayatz and SNB) is left to the reader.
#' @inheritParams risk_frequencies
#' @param population The size of the population the sample was drawn from (a number at
#'   least the number of records); default: the sum of `weights`.
#' @return A `detanon_risk_population` list: `n`, `population`, `sampling_fraction`,
#'   `n_classes`, `n_sample_uniques`, and per model the estimated number of population
#'   uniques (`zayatz`, `pitman`, `snb`) and their share of the population (`zayatz_share`,
#'   `pitman_share`, `snb_share`); `pitman_theta`, `pitman_alpha`, `snb_alpha`,
#'   `snb_beta` and `snb_classes` (the estimated number of classes `K`).
#' @references Zayatz, L. (1991). Estimation of the percent of unique population elements
#'   on a microdata file using the sample. *Statistical Research Division Report* RR91/08,
#'   US Bureau of the Census. Hoshino, N. (2001). Applying Pitman's sampling formula to
#'   microdata disclosure risk assessment. *Journal of Official Statistics* 17(4), 499-520.
#'   Chen, G. and Keller-McNulty, S. (1998). Estimation of identification disclosure risk
#'   in microdata. *Journal of Official Statistics* 14(1), 79-95. Haas, P. J., Naughton,
#'   J. F., Seshadri, S. and Stokes, L. (1995). Sampling-based estimation of the number of
#'   distinct values of an attribute. *VLDB 1995*, 311-322.
#' @examples
#' set.seed(1)
#' d <- data.frame(key = sample(5000, 800, TRUE, prob = 1 / (1:5000)^1.1))
#' risk_population_uniques(d, "key", population = 80000)
#' @family measures
#' @export
risk_population_uniques <- function(data, strata = NULL, weights = NULL, population = NULL) {
  check_data_frame(data, "data")
  strata <- check_key_strata(data, strata)
  w <- check_weights(data, weights, strata)
  n <- nrow(data)
  if (is.null(population)) {
    if (is.null(w)) stop_arg("give `population` (the population size) or `weights` (whose sum estimates it).")
    population <- sum(w)
  }
  population <- check_number(population, "population", lower = max(1, n))
  if (!n) stop_arg("`data` has no records.", kind = "data")
  sizes <- tabulate(key_ids(as.data.frame(data), strata))
  hist <- tabulate(sizes)
  k <- which(hist > 0)
  hist <- list(size = k, count = hist[k])
  f <- n / population
  c1 <- sum(sizes == 1)
  z <- if (c1) zayatz_uniques(hist, population, n) else 0
  p <- if (c1) pitman_fit(hist, n) else list(theta = NA_real_, alpha = NA_real_)
  pu <- if (c1) pitman_uniques(p$theta, p$alpha, population) else 0
  sn <- if (c1) snb_fit(hist, f) else list(uniques = 0, alpha = NA_real_, beta = NA_real_, classes = NA_real_)
  structure(list(n = n, population = population, sampling_fraction = f, n_classes = length(sizes),
                 n_sample_uniques = c1, zayatz = z, zayatz_share = z / population,
                 pitman = pu, pitman_share = pu / population,
                 snb = sn$uniques, snb_share = sn$uniques / population,
                 pitman_theta = p$theta, pitman_alpha = p$alpha,
                 snb_alpha = sn$alpha, snb_beta = sn$beta, snb_classes = sn$classes,
                 strata = strata, weights = weights),
            class = "detanon_risk_population")
}

# Zayatz's estimate as ARX's ModelZayatz: the sample's class-size histogram taken for the
# population's; P(a class of size s yields one sampled record) hypergeometric.
zayatz_uniques <- function(hist, population, n) {
  u <- sum(hist$count)
  N <- floor(population)
  p1 <- stats::dhyper(1, hist$size, N - hist$size, n)
  c1 <- sum(hist$count[hist$size == 1])
  cond <- (c1 / u * stats::dhyper(1, 1, N - 1, n)) / sum(hist$count / u * p1)
  c1 * cond / (n / population)
}

# The likelihood equations of Pitman's model in theta and alpha (Hoshino, 2001), in the
# closed forms of ARX's ModelPitman, and their Jacobian.
pitman_equations <- function(par, hist, n) {
  t <- par[1L]
  a <- par[2L]
  u <- sum(hist$count)
  big <- hist$size > 1
  s <- hist$size[big]
  m <- hist$count[big]
  o1 <- (digamma(t / a + u) - digamma(t / a + 1)) / a        # sum_{i<u} 1 / (t + i a)
  o2 <- digamma(n + t) - digamma(t + 1)                      # sum_{i<n} 1 / (t + i)
  o3 <- ((u - 1) - t * o1) / a                               # sum_{i<u} i / (t + i a)
  o4 <- sum(m * (digamma(s - a) - digamma(1 - a)))           # sum over classes, j < size: 1 / (j - a)
  d1 <- (trigamma(t / a + 1) - trigamma(t / a + u)) / a^2    # sum 1 / (t + i a)^2
  d2 <- trigamma(t + 1) - trigamma(n + t)                    # sum 1 / (t + i)^2
  d5 <- (o1 - t * d1) / a                                    # sum i / (t + i a)^2
  d3 <- (o3 - t * d5) / a                                    # sum i^2 / (t + i a)^2
  d4 <- sum(m * (trigamma(1 - a) - trigamma(s - a)))         # sum 1 / (j - a)^2
  list(value = c(o1 - o2, o3 - o4), scale = c(abs(o1) + abs(o2), abs(o3) + abs(o4)),
       jacobian = matrix(c(d2 - d1, -d5, -d5, -d3 - d4), 2L))
}

# Newton's method from ARX's initial guess, halving steps that leave the parameter space
# (alpha in (0, 1), theta > -alpha) or do not reduce the equations' residual.
pitman_fit <- function(hist, n) {
  u <- sum(hist$count)
  c1 <- sum(hist$count[hist$size == 1])
  c2 <- sum(hist$count[hist$size == 2])
  if (!c2) c2 <- 1
  cc <- c1 * (c1 - 1) / c2
  t <- (n * u * cc - c1 * (n - 1) * (2 * u + cc)) / (2 * c1 * u + c1 * cc - n * cc)
  a <- (t * (c1 - n) + (n - 1) * c1) / (n * u)
  par <- c(t, a)
  ok <- function(p) all(is.finite(p)) && p[2L] > 0 && p[2L] < 1 && p[1L] > -p[2L]
  if (!ok(par)) par <- c(1, 0.5)
  eq <- pitman_equations(par, hist, n)
  for (it in seq_len(200L)) {
    step <- tryCatch(solve(eq$jacobian, eq$value), error = function(e) NULL)
    if (is.null(step) || !all(is.finite(step))) break
    h <- 1
    repeat {
      cand <- par - h * step
      if (ok(cand)) {
        eq_c <- pitman_equations(cand, hist, n)
        if (all(is.finite(eq_c$value)) && sum(eq_c$value^2) < sum(eq$value^2)) break
      }
      h <- h / 2
      if (h < 1e-12) break
    }
    if (h < 1e-12) break
    par <- cand
    eq <- eq_c
    if (max(abs(h * step) / pmax(1, abs(par))) < 1e-12) break
  }
  # a root in the interior only: when the likelihood grows towards alpha = 0 (few
  # categories, as with a finite number of key combinations) there is no estimate
  if (!all(is.finite(eq$value)) || any(abs(eq$value) > 1e-8 * pmax(1, eq$scale)) || par[2L] < 1e-6) {
    return(list(theta = NA_real_, alpha = NA_real_))
  }
  list(theta = par[1L], alpha = par[2L])
}

pitman_uniques <- function(t, a, population) {
  if (is.na(t) || is.na(a) || a == 0) return(NA_real_)
  v <- exp(lgamma(t + 1) - lgamma(t + a) + a * log(population))
  if (is.finite(v) && v >= 0 && v <= population) v else NA_real_
}

# The number of classes in the population, K, by Haas et al.'s third Shlosser estimator
# (as ARX's ModelSNB, whose denominator reads (1 - f)^i f_i (1 + f)^i - 1 where the
# estimator has (1 - f)^i ((1 + f)^i - 1) f_i): the sample's classes plus c1 times a
# correction from the class-size histogram.
shlosser_classes <- function(hist, f) {
  i <- hist$size
  m <- hist$count
  q <- (1 - f)^i * m
  sum(m) + sum(m[i == 1]) * sum(i * f^2 * (1 - f^2)^(i - 1) * m) / sum(q * ((1 + f)^i - 1)) *
    (sum(q) / sum(i * f * (1 - f)^(i - 1) * m))^2
}

# The log expected numbers of sample classes of size 1 and 2 under the shifted negative
# binomial model (Chen and Keller-McNulty, 1998): population class sizes 1 + NB(a, b),
# K classes, each member sampled with probability f; and their Jacobian in (a, b).
snb_equations <- function(par, K, f) {
  a <- par[1L]
  b <- par[2L]
  d <- (1 - f) * (1 - b)
  D <- 1 - d
  e <- 2 - (1 - a) * d
  value <- c(log(K * f) + a * log(b / D) + log1p(a * d / D),
             log(K * a * f^2 / 2) + a * log(b) + log1p(-b) - (a + 2) * log(D) + log(e))
  g <- 1 - f # d D / d b = g, d d / d b = -g
  jacobian <- matrix(c(log(b / D) + d / (D + a * d),
                       1 / a + log(b / D) + d / e,
                       a / b - (a + 1) * g / D + (1 - a) * g / (D + a * d),
                       a / b - 1 / (1 - b) - (a + 2) * g / D + (1 - a) * g / e), 2L)
  list(value = value, jacobian = jacobian)
}

# ARX's SNB estimate of population uniques, K b^a, with a and b solving the two moment
# equations E[c1] = c1, E[c2] = c2 (Newton's method from a few starting points, halving
# steps that leave a > 0, 0 < b < 1 or do not reduce the residual). With f = 1 the
# sample is the population: c1. NA when the equations have no root (e.g. no class of
# size 2).
snb_fit <- function(hist, f) {
  c1 <- sum(hist$count[hist$size == 1])
  c2 <- sum(hist$count[hist$size == 2])
  none <- list(uniques = NA_real_, alpha = NA_real_, beta = NA_real_, classes = NA_real_)
  if (f >= 1) return(list(uniques = as.numeric(c1), alpha = NA_real_, beta = NA_real_, classes = sum(hist$count)))
  if (!c2) return(none)
  K <- shlosser_classes(hist, f)
  none$classes <- K
  if (!is.finite(K)) return(none)
  target <- log(c(c1, c2))
  ok <- function(p) all(is.finite(p)) && p[1L] > 0 && p[2L] > 0 && p[2L] < 1
  resid <- function(p) {
    v <- snb_equations(p, K, f)$value - target
    if (all(is.finite(v))) sum(v^2) else Inf
  }
  for (start in list(c(1, 0.5), c(0.1, 0.1), c(5, 0.9), c(0.5, 0.01), c(20, 0.99), c(0.01, 0.5))) {
    par <- start
    eq <- snb_equations(par, K, f)
    r <- resid(par)
    for (it in seq_len(200L)) {
      step <- tryCatch(solve(eq$jacobian, eq$value - target), error = function(e) NULL)
      if (is.null(step) || !all(is.finite(step))) break
      h <- 1
      repeat {
        cand <- par - h * step
        if (ok(cand) && resid(cand) < r) break
        h <- h / 2
        if (h < 1e-12) break
      }
      if (h < 1e-12) break
      par <- cand
      eq <- snb_equations(par, K, f)
      r <- resid(par)
      if (max(abs(h * step) / pmax(1, abs(par))) < 1e-14) break
    }
    if (r < 1e-20) {
      u <- K * par[2L]^par[1L]
      return(list(uniques = u, alpha = par[1L], beta = par[2L], classes = K))
    }
  }
  none
}

#' @export
print.detanon_risk_population <- function(x, ...) {
  cat(strwrap(sprintf("Population uniques on %s: a sample of %s from %s (fraction %.4f)",
                      paste(x$strata, collapse = ", "), plural(x$n, "record"),
                      format(x$population, big.mark = ","), x$sampling_fraction),
              width = 78, exdent = 2), sep = "\n")
  cat(sprintf("  sample uniques: %d of %d classes\n", x$n_sample_uniques, x$n_classes))
  cat(sprintf("  Zayatz: %.1f population uniques (%.6f%%)\n", x$zayatz, 100 * x$zayatz_share))
  cat(sprintf("  Pitman: %.1f population uniques (%.6f%%)\n", x$pitman, 100 * x$pitman_share))
  cat(sprintf("  SNB:    %.1f population uniques (%.6f%%)\n", x$snb, 100 * x$snb_share))
  invisible(x)
}
