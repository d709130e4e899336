#' Deterministic anonymisation by k-nearest-neighbour centroids
#'
#' Masks the continuous variables of a data set by the five steps of Avraam, Jones and
#' Burton (2022):
#' 1. standardise every variable in `vars` to z-scores over the whole data;
#' 2. stratify the records by every combination of the `strata` variables (each stratum
#'    must hold at least `k` records);
#' 3. find, inside its stratum, each record's k - 1 nearest neighbours (Euclidean distance
#'    on the z-scores);
#' 4. replace the record by the centroid of the k points (itself and its neighbours);
#' 5. over the whole data, divide each column of centroids by its SD, multiply by the SD
#'    of the original variable and add the original mean.
#'
#' Step 5 scales the centroids about the origin of the z-scale, as the paper's Titanic
#' figures require (they are reproduced to the printed digits). The centroids' own mean is
#' close to, but not exactly, zero, so the masked means differ slightly from the original
#' means while the masked SDs equal the original SDs exactly.
#'
#' The categorical `strata` columns and every other column are released unchanged. The
#' method protects continuous values against exact look-up; it does not make a record's
#' categorical combination less rare (check it with [strata_table()]) and leaves each
#' masked value close to its original, so assess the result (e.g. with [risk_rmd()]).
#'
#' @section Ties and determinism:
#' Neighbours are ordered by squared Euclidean distance on the z-scores, then by the
#' lexicographic order of their z-coordinates. Points equal in both are identical, so the
#' k points of each record, and hence its centroid, are uniquely defined. Means and SDs
#' are computed exactly and each centroid adds its k points in their lexicographic order,
#' so the output is bit-for-bit the same for every `nthreads`, permuting the input rows
#' only permutes the output, and records that share their k points get identical
#' centroids (not centroids that differ in the last bits).
#'
#' The paper's figures come from `RANN::nn2()`, whose choice among tied neighbours depends
#' on its tree's visit order and on the last bits of the z-scores (the Titanic data have
#' many ties: 177 ages imputed by the median). `engine = "rann"` (needs the suggested
#' package RANN) reproduces them exactly: it makes the z-scores as the authors' code does,
#' `(x - mean(x)) / sd(x)` (base `scale()` divides by an SD that can differ in the last
#' bit, which changes 14 Titanic centroids), and gives the paper's deltas, U, risk1/risk2
#' and Table 3. It is slower and its tie outcome depends on the row order.
#'
#' @section The release form:
#' Step 5 stretches the centroids back to the original SD, so some masked values fall
#' beyond the range of the originals (negative ages, fares below zero). `format =
#' "natural"` moves them inside bounds that are k-record aggregates: `lo`, the mean of the
#' k smallest values of the variable, and `hi`, the mean of the k largest (never one
#' record's value, so no record's minimum or maximum is published). Only the values beyond
#' a bound move, keeping their order, into the first half of the gap between the bound and
#' the nearest value inside; the others are unchanged. Three cases are left alone, because
#' moving them measurably raised the attacks of [risk_battery()] and [risk_rmd()] over the
#' unformatted release:
#' * a bound that k or more records share (the 15 zero fares of the Titanic, the zeros of
#'   counts): it reveals no one, and the values beyond it stay where they are (below it;
#'   moved onto it, they lay next to the records holding it, mostly their own: Fellegi-Sunter
#'   linkage on the Titanic at `k = 10` rose from 0.015 to 0.043);
#' * a crowd beyond a bound, more than 1 in 10 of the values (a skewed variable with a
#'   floor, stretched by step 5: a quarter to a half of the Tarragona assets and sales at
#'   `k = 10`): it stays where it is (squeezed into the gap it lay on the originals next to
#'   the bound, and linkage rose from 0.25 to 0.27);
#' * whole numbers are rounded only when half a unit is negligible against their spread
#'   (an SD of 500 or more): rounding counts put masked values back on their originals
#'   (simulated counts at `k = 10`: risk1 0.04 unformatted, 0.12 rounded; 5000 Adult
#'   records, age and hours per week rounded, at `k = 3`: 0.13 unformatted, 0.85 rounded),
#'   so narrower whole-number variables keep their decimals.
#' So a natural release can still hold values below a shared minimum or beyond a crowded
#' bound, such as negative fares; it never holds a value beyond a bound that is one of a
#' few records' extremes. `"precision"` rounds every variable to its original number of
#' decimals (whole numbers always), whatever the risk: measure it.
#'
#' @section Edge cases:
#' * A constant column (all values equal) has no z-score; it is left out of the distances
#'   and released as its constant value.
#' * A column of tiny values (below 1e-100 in magnitude, such as p-values or subnormal
#'   numbers), whose squared deviations underflow, is scaled exactly by a power of two
#'   before masking and back afterwards: it is masked like any other column, not taken
#'   for a constant.
#' * Labelled (Stata/SPSS, `haven_labelled`) columns hold category codes: by default they
#'   are `strata`, not `vars` (name them in `vars` to mask them as numbers).

#' * When all centroids of a column are equal (e.g. `k` equal to the only stratum's size),
#'   their SD is 0 and the column is released as the original mean, with a warning.
#' * Integer columns in `vars` are returned as integers when their values are rounded to
#'   whole numbers (`format = "precision"`, or `"natural"` with an SD of 500 or more), else
#'   as doubles.
#' * A column whose SD overflows (values beyond about 1e154 in magnitude) cannot be
#'   standardised and gives an error; rescale it first.
#' * Missing values in `strata` columns form a stratum level of their own.
#'
#' @param data A data frame (data.frame, tibble or data.table).
#' @param vars Continuous columns to mask. Default: the numeric columns not in `strata`.
#' @param strata Categorical columns to stratify by. Default: the factor, character and
#'   logical columns. `character()` means no stratification.
#' @param k Number of points in each centroid (the record and its k - 1 nearest
#'   neighbours); a whole number >= 2. Every stratum must have at least `k` records.
#' @param engine `"kdtree"` (the package's exact, multithreaded C search) or `"rann"`
#'   (`RANN::nn2()`, to reproduce results made with it).
#' @param format The release form of the masked values (see the section "The release
#'   form"): `"natural"` (the few values beyond k-record bounds of each variable's range
#'   moved inside them; whole numbers kept whole when their SD is 500 or more),
#'   `"precision"` (also every variable at its original number of decimals, whole numbers
#'   always whole) or `"none"` (the unformatted step-5 values, as in the paper). `NULL`,
#'   the default, means `"natural"` with `engine = "kdtree"` and `"none"` with
#'   `engine = "rann"`.
#' @param na What to do with missing values in `vars`: `"fail"` (an error, the default),
#'   `"median"` or `"mean"` (replace by the column's median or mean over all records, as
#'   the paper does for the Titanic ages), `"median_stratum"` or `"mean_stratum"` (the
#'   same within each stratum, which keeps between-strata differences but fails for a
#'   stratum with no observed value), or `"complete"` (drop incomplete records; they are
#'   counted in a message and in the metadata). Imputed values are then masked like the
#'   others; a large share of imputed values creates ties and shrinks the variance.
#' @param small_strata What to do when a stratum has fewer than `k` records: `"fail"`
#'   (an error listing them), `"suppress"` (drop their records, with a message saying
#'   how many) or `"merge"` (move each of their records into the nearest stratum of at
#'   least `k` records and give it that stratum's `strata` values, with a one-line message
#'   counting the moved records and the changed values of each `strata` variable, whose
#'   field `moves` lists every move; see [merge_small_strata()] for the distance).
#' @param household Name of a column of household ids, or `NULL`. With it, the columns of
#'   `vars` that are constant within every household of `data` (household-level
#'   variables, e.g. household income) are masked on the household table (the first
#'   record of each household, within the household-level `strata` only) and copied to
#'   every member, so that members still share them; the other columns of `vars` are
#'   masked record by record. The release metadata name them (`household_vars`) and hold
#'   the counts of the household pass (`household_counts`).
#' @param check_identifiers Warn when a column released unmasked (not in `vars`) looks
#'   like a direct identifier (see [detect_identifiers()])? Set to `FALSE` to silence.
#' @param nthreads Number of OpenMP threads (capped by the machine). The default is the
#'   option `detanon.nthreads`, else 1.
#' @return An object of the same class as `data` (a grouped tibble keeps its groups, a
#'   data.table its key) with the masked columns replaced, rows in the same order (fewer
#'   if records were suppressed or incomplete ones dropped), numbered 1 to n without the
#'   original row names, unused factor levels dropped and all other values unchanged. Its
#'   release metadata ([release_info()]) hold only settings and counts: the settings (`k`,
#'   `vars`, `strata`, `na`, `small_strata`, `engine`, `format`), the counts (`n` records,
#'   `n_strata`, `min_size` of the smallest stratum, `n_suppressed`, `n_dropped`,
#'   `n_imputed`, `n_moved` records moved to another stratum) and, in `stats`, the scaling factors of step 5
#'   (ratios of SDs; no mean or SD of the originals).
#'   Messages (class `detanon_message`) report records dropped, suppressed or moved.
#' @references Avraam D, Jones E, Burton P (2022). A deterministic approach for protecting
#'   privacy in sensitive personal data. *BMC Medical Informatics and Decision Making*,
#'   22, 24.
#' @seealso [anonymise_partitioned()] and its passes ([anonymise_stats()], ...) for data
#'   beyond memory or masked on several machines, with the same result.
#' @family masking verbs
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
#'                     k = 3)
#' head(masked)
#' release_info(masked)
#' @section sdcMicro: `data` may be an `sdcMicroObj`; the result is then one too ([sdc_extract()]).
#' @export
anonymise <- function(data, vars = NULL, strata = NULL, k = 3,
                      engine = c("kdtree", "rann"),
                      format = NULL,
                      na = c("fail", "median", "mean", "median_stratum", "mean_stratum", "complete"),
                      small_strata = c("fail", "suppress", "merge"),
                      check_identifiers = TRUE, household = NULL,
                      nthreads = getOption("detanon.nthreads", 1L)) {
  if (is_sdc(data)) return(sdc_verb(anonymise, data, match.call(), parent.frame())) # R/sdcmicro.R
  if (!is.null(household)) return(household_verb(anonymise, data, household, match.call(), parent.frame()))
  # the checked values replace the arguments
  list2env(check_masking_args(data, vars, strata, k, engine = engine, format = format, na = na,
                              small_strata = small_strata, check_identifiers = check_identifiers,
                              nthreads = nthreads), environment())
  if (engine == "rann" && !requireNamespace("RANN", quietly = TRUE)) {
    stop_arg("`engine = \"rann\"` needs the package RANN: install.packages(\"RANN\"), ",
             "or use the default engine = \"kdtree\".")
  }
  step <- mask_input(data, vars, strata, k, na, small_strata)
  x <- step$x
  masked <- mask_matrix(x, step$id, k, engine, nthreads)
  sizes <- nonempty_sizes(step$id)
  df <- mask_output(step$df, data, vars, strata, masked$columns, x, k, format, check_identifiers)
  # the metadata hold settings, counts and the step-5 scaling factors: no means or SDs of
  # the originals (for a stratum of two records they give both values back)
  as_release(as_release_frame(df, data), "anonymise",
             settings = list(k = k, vars = vars, strata = strata, na = na, small_strata = small_strata,
                             engine = engine, format = format),
             counts = list(n = nrow(df), n_strata = length(sizes), min_size = min(sizes),
                           n_suppressed = step$n_suppressed, n_dropped = step$n_dropped,
                           n_imputed = step$n_imputed, n_moved = step$n_moved),
             stats = list(scale = masked$scale))
}

# The front of the masking verbs that release one value per record (anonymise(),
# anonymise_keyed()): `data` as a data frame, its stratum ids, missing values by `na` and
# small strata by `small_strata`. Returns the step of handle_small_strata(): the rows left
# (`df`), their matrix of `vars` (`x`), stratum ids (`id`) and the counts.
mask_input <- function(data, vars, strata, k, na, small_strata) {
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  id <- stratum_ids(df, strata)
  step <- handle_missing(numeric_matrix(df, vars), id, na, strata)
  handle_small_strata(step, df, id, k, strata, small_strata)
}

# The back of those verbs: the identifier warning, then each masked column of `columns` in
# its release form (from the records' values `x` before masking) in place of its `vars`
# column of `df`; integer columns of `data` stay integer where they can.
mask_output <- function(df, data, vars, strata, columns, x, k, format, check_identifiers) {
  if (check_identifiers) warn_identifiers(df, vars, strata)
  for (j in seq_along(vars)) {
    df[[vars[j]]] <- format_masked(columns[[j]], x[, j], k, format, is.integer(data[[vars[j]]]))
  }
  df
}

# The sizes of the non-empty strata of the stratum ids `id`.
nonempty_sizes <- function(id) {
  sizes <- tabulate(id)
  sizes[sizes > 0L]
}

# anonymise(), step 1: missing values in `vars` by the `na` policy ("fail" was checked by
# check_masking_args()). Returns the matrix (imputed), the rows kept and the counts.
handle_missing <- function(x, id, na, strata) {
  out <- list(x = x, keep = rep(TRUE, nrow(x)), n_imputed = 0L, n_dropped = 0L)
  if (!anyNA(x)) return(out)
  has_na <- is.na(x)
  incomplete <- apply(has_na, 1L, any)
  if (na == "complete") {
    out$keep <- !incomplete
    out$n_dropped <- sum(incomplete)
    inform_detanon("dropped ", plural(out$n_dropped, "incomplete record"), " (na = \"complete\").",
                   kind = "na")
  } else {
    out$n_imputed <- sum(incomplete)
    out$x <- impute(x, has_na, if (grepl("stratum", na)) id else NULL,
                    if (grepl("median", na)) stats::median else exact_mean, strata)
  }
  out
}

# anonymise(), step 2: strata smaller than k (among the records kept so far) by the
# `small_strata` policy; then keeps only the rows left. Returns `step` with the data, the
# matrix and the stratum ids (1..S) of the rows left, and the counts.
handle_small_strata <- function(step, df, id, k, strata, small_strata) {
  keep <- step$keep
  x <- step$x
  sizes <- tabulate(if (all(keep)) id else id[keep], max(0L, id))
  small <- which(sizes > 0L & sizes < k)
  step$n_suppressed <- 0L
  step$n_moved <- 0L
  if (length(small) && small_strata == "fail") {
    if (!length(strata)) {
      stop_arg("The data have ", plural(sizes[small], "record"), ", fewer than k = ", k, ". Lower `k`.",
               kind = "small_strata")
    }
    stop_small_strata(df, id, sizes, small, strata, k, "`small_strata = \"suppress\"` or \"merge\"")
  }
  if (length(small) && small_strata == "merge") {
    merged <- merge_small(df, x, id, keep, k, strata)
    merge_message(merged$moves, strata, k)
    df <- merged$data
    id <- merged$id
    step$n_moved <- merged$n_moved
  } else if (length(small)) {
    drop <- keep & id %in% small
    step$n_suppressed <- sum(drop)
    keep <- keep & !drop
    inform_detanon("suppressed ", plural(step$n_suppressed, "record"), " in ",
                   plural(length(small), "stratum", "strata"), " smaller than k = ", k, ".",
                   kind = "suppress")
  }
  if (!any(keep)) {
    stop_arg("No records are left to mask (", step$n_dropped, " incomplete, ", step$n_suppressed,
             " in strata smaller than k = ", k, "). Lower `k` or coarsen `strata`.", kind = "data")
  }
  if (!all(keep)) {
    df <- df[keep, , drop = FALSE]
    x <- x[keep, , drop = FALSE]
    # strata left empty would stay as gaps in the ids, which the C code skips, but it takes
    # ids above the number of rows for an error (5 records, 4 strata, 3 of them suppressed
    # left ids up to 3 on 2 rows): renumber the strata left 1..S, in their order
    id <- id[keep]
    map <- integer(max(id))
    left <- which(tabulate(id, length(map)) > 0L)
    map[left] <- seq_along(left)
    id <- map[id]
  }
  step$df <- df
  step$x <- x
  step$id <- id
  step
}

check_format <- function(format, engine) {
  if (is.null(format)) return(if (engine == "rann") "none" else "natural")
  choices <- c("natural", "precision", "none")
  if (!is.character(format) || length(format) != 1L || is.na(format) || !format %in% choices) {
    stop_arg("`format` must be NULL or one of ", paste0("\"", choices, "\"", collapse = ", "),
             ", not ", show_value(format), ".")
  }
  format
}

# The release form of one masked column `m`, given the masked records' values `x` before
# masking (complete). "natural": values kept inside [lo, hi], where lo and hi are the
# means of the k smallest and of the k largest values of `x` (k-record aggregates, like
# the centroids: never one record's value), by a rank-preserving linear squeeze of the
# values beyond them (squeeze_range()); except at a bound that k or more records share
# (a tie pile: the zero fares of the Titanic, the zeros of counts), where the values beyond
# it are left as they are (pile_bounds()); whole-number variables rounded to whole numbers
# (integers when `as_integer`) only when half a unit is negligible against their spread
# (round_whole()). "precision": every variable also rounded to the decimals of `x` (whole
# numbers always). "none": unchanged.
format_masked <- function(m, x, k, format, as_integer) {
  if (format == "none" || !length(m)) return(m)
  n <- length(x)
  kk <- min(k, n)
  # one pass in C: range, whole numbers, and the exact means of the k smallest and the k
  # largest values (a selection, O(n): their means do not depend on their order)
  if (anyNA(x) || anyNA(m)) stop("internal error: missing values in format_masked()")
  st <- .Call(C_ffi_form_stats, as.double(x), as.double(kk))
  if (st[1L] == st[2L]) return(constant_form(x[1L], length(m), as_integer))
  whole <- st[3L] == 1
  d <- if (format == "precision") {
    if (whole) 0L else decimals(x)
  } else if (whole && wide_whole(x, st[2L] - st[1L])) 0L else NA_integer_
  pile <- c(st[6L] >= kk, st[7L] >= kk) # counts of the min and the max (C, one pass)
  release_values(m, release_bounds(st[4L], st[5L], d, pile), as_integer)
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
  for (d in 0:10) {
    y <- x * 10^d
    # a tolerance relative to the value (rounding error of x * 10^d), so that a tiny value
    # (1e-250) is not taken for a whole number
    if (all(abs(y - round(y)) <= 1e-12 * abs(y))) return(d)
  }
  NA_integer_
}

# The five steps on a complete numeric matrix with stratum ids 1..S (all strata >= k).
# Returns the masked columns as a list, and the scaling factors of step 5.
mask_matrix <- function(x, id, k, engine, nthreads) {
  # columns of tiny values (p-values, subnormals) would have an SD that underflows to 0 and
  # be taken for constant: scale them exactly by a power of two, and back at the end
  tiny <- pow2_normalise(x)
  x <- tiny$x
  if (engine == "kdtree") {
    # one native call: exact column statistics, the search, step 5 (the kernel of
    # rescale_centroids())
    show <- show_progress(nrow(x) * (k + 16) / 20)
    res <- with_progress(show, .Call(C_ffi_anonymise, x, id, k, nthreads, show))
    stats <- list(mean = stats::setNames(res$mean, colnames(x)), sd = stats::setNames(res$sd, colnames(x)))
  } else {
    # the rann engine reproduces the authors' arithmetic, (x - mean(x)) / sd(x): its last
    # bits decide which of several equally distant neighbours RANN returns
    stats <- base_stats(x)
    res <- NULL
  }
  cols <- masked_columns(x, stats)
  if (is.null(res)) res <- rann_mask(x, cols, stats, id, k, nthreads)
  step5_release(res, x, cols, tiny)
}

# The columns of `x` that are masked (SD > 0), given their exact statistics; constant columns
# (SD 0) have no z-score and keep their single value. An overflowing SD, or one that is 0 in
# double precision although the column varies, would mark the column constant and release it
# unmasked: both are errors.
masked_columns <- function(x, stats, constant = NULL) {
  huge <- !is.finite(stats$mean) | !is.finite(stats$sd)
  if (any(huge)) {
    n_huge <- sum(huge)
    stop_arg("`vars` ", plural(n_huge, "column", count = FALSE), " ", quote_names(colnames(x)[huge]), " ",
             plural(n_huge, "has", "have", count = FALSE), " values too large to standardise (the SD ",
             "overflows); rescale ", plural(n_huge, "it", "them", count = FALSE), " (e.g. divide by 1e6) first.",
             kind = "data")
  }
  cols <- which(stats$sd > 0)
  # (only the columns with SD 0 can be lost)
  zero <- setdiff(seq_len(ncol(x)), cols)
  lost <- if (is.null(constant)) zero[!vapply(zero, function(j) is_constant(x[, j]), logical(1))] else zero[!constant[zero]]
  if (length(lost)) {
    stop_arg("`vars` ", plural(length(lost), "column", count = FALSE), " ", quote_names(colnames(x)[lost]),
             " vary but their SD is 0 in double precision; rescale them first.", kind = "data")
  }
  cols
}

# Step 5 of the paper for the paths that find their centroids in R or in another native
# call (the rann engine, anonymise_adaptive()): the centroids of the masked columns `cols`
# of x (n x length(cols), z-scale) rescaled over the whole data to the original columns'
# means and SDs (`stats`). The one implementation is mask_step5() in src/mask.c, which
# ffi_anonymise() runs too: a column whose centroids are all equal (an SD on the z-scale
# at most 1e-10, rounding noise) is released as its mean. `centroid_sd`: the centroids'
# SDs, or NULL for exact ones. Returns list(columns = all columns of x, the unmasked ones
# copied; scale = the scaling factors of `cols`, NA for a column released as its mean).
rescale_centroids <- function(x, cols, stats, centroids, centroid_sd = NULL, nthreads = 1L) {
  columns <- lapply(seq_len(ncol(x)), function(j) x[, j])
  if (!length(cols)) return(list(columns = columns, scale = numeric()))
  res <- .Call(C_ffi_rescale, centroids, as.double(stats$mean[cols]), as.double(stats$sd[cols]),
               if (!is.null(centroid_sd)) as.double(centroid_sd), nthreads)
  columns[cols] <- res$columns
  list(columns = columns, scale = res$scale)
}

# The release side of step 5, shared by every masking path: a warning for the columns
# released as their mean, the scaling factors named by column (NA where none applies),
# and the tiny columns scaled back by their power of two.
step5_release <- function(res, x, cols, tiny) {
  flat <- is.na(res$scale)
  if (any(flat)) {
    warn_detanon("All centroids of ", quote_names(colnames(x)[cols][flat]), " are equal (k too large for ",
                 "the strata); released as the original mean.", kind = "data")
  }
  scale <- stats::setNames(rep(NA_real_, ncol(x)), colnames(x))
  scale[cols] <- res$scale
  columns <- res$columns
  for (j in which(tiny$e != 0)) columns[[j]] <- times_pow2(columns[[j]], -tiny$e[j])
  list(columns = columns, scale = scale)
}

# ffi_anonymise() with RANN::nn2() as the search, on z-scores made as the authors' code
# makes them: with sd(), not scale()'s own SD, which differs in the last bit (for the
# Titanic ages) and so changes RANN's choice among tied neighbours, and the paper's risk
# figures; step 5 divides by the centroids' sd() likewise. Returns list(columns, scale) as
# ffi_anonymise() does.
rann_mask <- function(x, cols, stats, id, k, nthreads) {
  if (!length(cols)) return(rescale_centroids(x, cols, stats, NULL))
  z <- scale(x[, cols, drop = FALSE], center = stats$mean[cols], scale = stats$sd[cols])
  centroids <- rann_centroids(z, id, k)
  rescale_centroids(x, cols, stats, centroids, base_stats(centroids)$sd, nthreads)
}

base_stats <- function(x) list(mean = colMeans(x), sd = apply(x, 2L, stats::sd))

rann_centroids <- function(z, id, k) {
  centroids <- matrix(0, nrow(z), ncol(z))
  for (s in seq_len(max(id))) {
    rows <- which(id == s)
    if (!length(rows)) next
    nn <- RANN::nn2(z[rows, , drop = FALSE], k = k)$nn.idx
    for (j in seq_len(ncol(z))) {
      zj <- z[rows, j]
      centroids[rows, j] <- rowMeans(matrix(zj[nn], ncol = k))
    }
  }
  centroids
}

impute <- function(x, has_na, id, fun, strata) {
  for (j in which(colSums(has_na) > 0)) {
    miss <- has_na[, j]
    if (is.null(id)) {
      x[miss, j] <- fun(x[!miss, j])
      if (all(miss)) stop_arg("`vars` column `", colnames(x)[j], "` has no observed value to impute from.", kind = "data")
    } else {
      for (s in unique(id[miss])) {
        obs <- id == s & !miss
        if (!any(obs)) {
          stop_arg("`vars` column `", colnames(x)[j], "` has no observed value in a stratum of `",
                   paste(strata, collapse = "`, `"), "`; use `na = \"median\"` or \"mean\" (global) instead.",
                   kind = "data")
        }
        x[id == s & miss, j] <- fun(x[obs, j])
      }
    }
  }
  x
}

exact_mean <- function(v) col_stats(matrix(v))$mean[[1L]]

# Labelled (Stata/SPSS) numeric columns hold category codes: they are masked only when named.
is_labelled <- function(x) inherits(x, "haven_labelled") || inherits(x, "labelled")

# Columns masked by default: numeric, not labelled codes.
default_vars <- function(data) names(data)[vapply(data, function(x) is_continuous(x) && !is_labelled(x), logical(1))]

# The one validation path of the masking verbs (anonymise(), anonymise_adaptive(),
# tune_release(), stir(), blend_outliers()), in one order: `data` a data frame; `strata`
# atomic columns (by default `strata_default`); `vars` columns not in `strata` (by default
# the numeric ones), with `numeric = TRUE` numeric and finite, and complete unless the
# verb's `na` handles missing values; `k` a whole number >= 2 (with `k_table = TRUE` a
# table may pass, for the verb to check); the choice arguments in `...` matched against
# the calling verb's formals (`format`, when the verb's default is NULL, by `engine`);
# `check_identifiers` and `nthreads` when given; last, `data` has records. Returns the
# checked values, named as the arguments.
check_masking_args <- function(data, vars, strata, k, ..., strata_default = default_strata(data),
                               numeric = TRUE, k_table = FALSE, check_identifiers = NULL,
                               nthreads = NULL) {
  check_data_frame(data, "data")
  strata <- check_columns(strata, data, "strata", strata_default)
  check_strata_columns(data, strata)
  vars <- check_columns(vars, data, "vars", setdiff(default_vars(data), strata))
  check_vars(data, vars, strata, numeric)
  if (!k_table || !is.data.frame(k)) k <- check_whole(k, "k", min = 2)
  out <- list(vars = vars, strata = strata, k = k)
  verb <- formals(sys.function(sys.parent()))
  choices <- list(...)
  for (arg in names(choices)) {
    out[[arg]] <- if (arg == "format" && is.null(verb[["format"]])) check_format(choices$format, out$engine)
                  else match_choice(choices[[arg]], arg, eval(verb[[arg]]))
  }
  if (!is.null(check_identifiers)) check_flag(check_identifiers, "check_identifiers")
  if (!is.null(nthreads)) out$nthreads <- check_nthreads(nthreads)
  if (numeric && !isTRUE(out$na != "fail")) check_complete(data, vars, has_na_arg = !is.null(out$na))
  if (!nrow(data)) stop_arg("`data` has no records: there is nothing to mask.", kind = "data")
  out
}

# Missing values in `vars` are an error for a verb without `na` or with `na = "fail"`.
check_complete <- function(data, vars, has_na_arg) {
  counts <- vapply(vars, function(v) sum(is.na(data[[v]])), integer(1))
  counts <- counts[counts > 0L]
  if (!length(counts)) return(invisible())
  stop_arg("`vars` have missing values (", paste0("`", names(counts), "`: ", counts, collapse = ", "), "). ",
           if (has_na_arg) {
             paste("Choose `na = \"median\"`, \"mean\", \"median_stratum\", \"mean_stratum\" or \"complete\",",
                   "or impute them first.")
           } else {
             "Impute them (e.g. anonymise(na = \"median\")) or drop those records first."
           }, kind = "data")
}

# `vars` not empty and not in `strata`; with `numeric = TRUE`, numeric without NaN or
# infinite values.
check_vars <- function(data, vars, strata, numeric = TRUE) {
  if (!length(vars)) {
    stop_arg("There is no ", if (numeric) "continuous ", "variable to mask: name the ", if (numeric) "numeric ",
             "columns in `vars` (the default takes the numeric columns not in `strata`).", kind = "column")
  }
  both <- intersect(vars, strata)
  if (length(both)) {
    stop_arg("Columns cannot be in both `vars` and `strata`: ", quote_names(both), ".", kind = "column")
  }
  if (!numeric) return(invisible(vars))
  bad <- vars[!vapply(data[vars], is_continuous, logical(1))]
  if (length(bad)) {
    stop_arg("`vars` must be numeric columns; ", quote_names(bad), " ", plural(length(bad), "is", "are", count = FALSE),
             " not (", paste(vapply(data[bad], function(x) class(x)[1L], ""), collapse = ", "),
             "). Convert with as.numeric() or move them to `strata`.", kind = "column")
  }
  for (v in vars) {
    x <- data[[v]]
    # fast path, one pass without allocation: a finite sum has no NaN and no infinite term
    if (is.integer(x) || (!anyNA(x) && is.finite(sum(x)))) next
    if (any(is.nan(x))) {
      stop_arg("`vars` column `", v, "` contains NaN, which is not treated as missing: ",
               "fix the computation that produced it, or set it to NA.", kind = "data")
    }
    if (any(is.infinite(x))) {
      stop_arg("`vars` column `", v, "` contains infinite values; replace them (e.g. by NA) first.", kind = "data")
    }
  }
  invisible(vars)
}

