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
#' close to, but not exactly, zero, so the step-5 means differ from the original means
#' (the Titanic fares': 30.64 against 32.20 at `k = 3`, 24.89 at `k = 20`) while the SDs
#' equal the original SDs exactly; the default release form puts the means back (see
#' "The release form").
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
#'
#' The natural form then keeps each variable's **mean and SD** (the originals', exactly up
#' to rounding error) and its **sign**: one monotone map of the squeezed values, `a + b * v`,
#' with the values it would put beyond a limit held in the first half of the gap between
#' the limit and the nearest other value (in their order), and `a`, `b` and the held values
#' solved together from exact sums. The limits are the k-record bounds the squeeze keeps
#' and 0 for a variable whose values are all >= 0 (or all <= 0); only 0 is used, never the
#' data's minimum or maximum, which would publish the extreme records. Whole numbers that
#' are rounded (an SD of 500 or more) are rounded so that their sum is kept (to a unit, or
#' as closely as records sharing a value allow: equal values round alike), so the mean is
#' kept to 1 / n of a unit. The map is computed from exact sums over the whole column, so
#' the release is the same for any row order, thread count, or partition
#' ([anonymise_partitioned()], [anonymise_db()]). If the limits leave too little room for
#' the SD, the values are only held inside them. Whole numbers left unrounded (counts,
#' ages in years) get no sign limit: held just above 0, next to the originals' zeros, the
#' masked counts of a simulated Poisson(1) variable matched their originals (risk1 of
#' [risk_rmd()] 0.003 unformatted, 0.40 held), so they can stay below 0.
#'
#' Measured against the unformatted release (`risk_battery()` with the intruder of
#' `intruder(vars, strata)`, seed 1): on the Titanic (Age, Fare; `k` = 3, 4, 10, 20) the
#' worst attack is unchanged (0.949, 0.917, 0.900, 0.840), no fare or age is negative
#' (13 fares below 0 at `k = 3`, 314 at `k = 10`, 334 at `k = 20` unformatted), the means
#' are the originals' and delta falls (Fare 0.0473 to 0.0463 at `k = 3`, 0.293 to 0.270
#' at `k = 20`): the released values lie closer to their originals, and some attacks gain
#' (linkage +0.005 to +0.029, its top-3 +0.026 to +0.041, Fellegi-Sunter up to +0.065, the
#' extreme values within 5% up to +0.125, risk1 up to +0.018). On sdcMicro's testdata
#' (expend, income, savings; `k` = 3, 10) the worst attack and delta are unchanged and no
#' rate rises by more than 0.002 (Fellegi-Sunter at `k = 10`); `tune_release()` there picks
#' the same MDAV release (worst 0.0541 before, 0.0546 now). The search measures its
#' candidates in their release form, so its limits hold for what is published.
#'
#' So a natural release can still hold values beyond a crowded bound or below a shared
#' minimum when the data take both signs; it never holds a value beyond a bound that is
#' one of a few records' extremes, nor one of the wrong sign. `"precision"` squeezes and
#' rounds every variable to its original number of decimals (whole numbers always),
#' whatever the risk, without the map: measure it. `"none"` gives the paper's values (the
#' paper vignettes use it).
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
#' @section Memory:
#' The search keeps its scratch memory (the rows by stratum and the kd-trees of up to
#' `nthreads` strata: about 70 bytes per record of 4 variables on 2 threads) from one call to
#' the next, up to 256 MB, so that repeated calls on data of a similar size do not take it
#' from R's heap again; a call that needs less than a quarter of it gives the rest back, and
#' unloading the package (`unloadNamespace("detanon")`) gives back all of it.
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
#'   moved inside them; each variable's mean and SD kept and no value of the wrong sign;
#'   whole numbers kept whole, their sum kept, when their SD is 500 or more; on the Titanic
#'   the worst attack of the battery unchanged and delta lower, some attacks up to 0.065
#'   higher, the extreme values' up to 0.125),
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
  f <- check_masking_args(data, vars, strata, k, engine = engine, format = format, na = na,
                          small_strata = small_strata,
                          choices = list(engine = c("kdtree", "rann"), na = na_choices,
                                         small_strata = small_strata_choices),
                          check_identifiers = check_identifiers, nthreads = nthreads)
  if (f$engine == "rann" && !requireNamespace("RANN", quietly = TRUE)) {
    stop_arg("`engine = \"rann\"` needs the package RANN: install.packages(\"RANN\"), ",
             "or use the default engine = \"kdtree\".")
  }
  f <- mask_input(data, f)
  masked <- mask_matrix(f$x, f$id, f$k, f$engine, f$nthreads)
  sizes <- nonempty_sizes(f$id)
  # the metadata hold settings, counts and the step-5 scaling factors: no means or SDs of
  # the originals (for a stratum of two records they give both values back)
  finish_release(f$df, data, f$vars, f$strata, masked$columns, f$x, f$k, f$format, f$check_identifiers,
                 verb = "anonymise", settings = f[c("k", "vars", "strata", "na", "small_strata", "engine", "format")],
                 counts = c(list(n = nrow(f$df), n_strata = length(sizes), min_size = min(sizes)), f[policy_counts]),
                 stats = list(scale = masked$scale), nthreads = f$nthreads, x_stats = masked$x_stats)
}

# The front of the masking verbs that release one value per record (anonymise(),
# anonymise_keyed(), anonymise_mdav()): `data` as a data frame, its stratum ids, missing
# values by the `na` policy and strata smaller than `k` by the `small_strata` policy of
# the mask frame `f` (check_masking_args()). Returns `f` with the fields of
# handle_small_strata(): the rows left (`df`), their matrix of `vars` (`x`), their stratum
# ids (`id`) and the policies' counts (`policy_counts`).
mask_input <- function(data, f, k = f$k) {
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  id <- stratum_ids(df, f$strata)
  x <- numeric_matrix(df, f$vars, if (is.null(f$nthreads)) 1L else f$nthreads)
  # (with `na = "fail"`, check_masking_args() found no missing value)
  step <- handle_missing(x, id, f$na, f$strata, complete = identical(f$na, "fail"))
  c(f, handle_small_strata(step, df, id, k, f$strata, f$small_strata)[c("df", "x", "id", policy_counts)])
}

# The counts of the `na` and `small_strata` policies, in the order of the release metadata.
policy_counts <- c("n_suppressed", "n_dropped", "n_imputed", "n_moved")

# The sizes of the non-empty strata of the stratum ids `id`.
nonempty_sizes <- function(id) {
  sizes <- tabulate(id)
  sizes[sizes > 0L]
}

# anonymise(), step 1: missing values in `vars` by the `na` policy ("fail" was checked by
# check_masking_args()). Returns the matrix (imputed), the rows kept and the counts.
# `complete`: `x` is known to have no missing value.
handle_missing <- function(x, id, na, strata, complete = FALSE) {
  out <- list(x = x, keep = rep(TRUE, nrow(x)), n_imputed = 0L, n_dropped = 0L)
  if (complete || !anyNA(x)) return(out)
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

# The five steps on a complete numeric matrix with stratum ids 1..S (all strata >= k).
# Returns the masked columns as a list, the scaling factors of step 5 and, with the kdtree
# engine, the exact statistics of the columns of `x` (`x_stats` of finish_release()).
mask_matrix <- function(x, id, k, engine, nthreads) {
  # columns of tiny values (p-values, subnormals) would have an SD that underflows to 0 and
  # be taken for constant: scale them exactly by a power of two, and back at the end
  tiny <- pow2_normalise(x)
  x <- tiny$x
  # the rann engine reproduces the authors' arithmetic, (x - mean(x)) / sd(x): its last
  # bits decide which of several equally distant neighbours RANN returns
  stats <- if (engine == "kdtree") column_scale(x, nthreads, e = numeric(ncol(x))) else base_stats(x)
  cols <- masked_columns(x, stats)
  res <- if (engine == "kdtree") {
    # one native call on the z-scale: the search and step 5 (the kernel of rescale_centroids())
    show <- show_progress(nrow(x) * (k + 16) / 20)
    with_progress(show, .Call(C_ffi_anonymise, x, id, k, stats$mean, stats$sd, nthreads, show))
  } else {
    rann_mask(x, cols, stats, id, k, nthreads)
  }
  out <- step5_release(res, x, cols, tiny)
  # the exact column statistics, which the natural form keeps (not those of the rann engine)
  if (engine == "kdtree" && all(stats$e == 0)) out$x_stats <- list(mean = stats$mean, sd = stats$sd, e = tiny$e)
  out
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

# ffi_anonymise() with RANN::nn2() as the search, on z-scores made as the authors' code
# makes them: with sd(), not scale()'s own SD, which differs in the last bit (for the
# Titanic ages) and so changes RANN's choice among tied neighbours, and the paper's risk
# figures; step 5 divides by the centroids' sd() likewise. Returns list(columns, scale) as
# ffi_anonymise() does.
rann_mask <- function(x, cols, stats, id, k, nthreads) {
  if (!length(cols)) return(rescale_centroids(x, cols, stats, NULL))
  z <- z_scale(x[, cols, drop = FALSE], stats$mean[cols], stats$sd[cols])
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

# The choices of the policies shared by the masking verbs (CONTRIBUTING, section 1); a
# verb's own subset is passed as it is in its signature.
na_choices <- c("fail", "median", "mean", "median_stratum", "mean_stratum", "complete")
small_strata_choices <- c("fail", "suppress", "merge")

# The one validation path of the masking verbs (anonymise(), anonymise_adaptive(),
# anonymise_keyed(), anonymise_mdav(), tune_release(), stir(), blend_outliers(),
# anonymise_stats()), in one order: `data` a data frame; `strata` atomic columns (by
# default `strata_default`); `vars` columns not in `strata` (by default the numeric ones),
# with `numeric = TRUE` numeric and finite, and complete unless the verb's `na` handles
# missing values; `k` a whole number >= 2 (with `k_table = TRUE` a table may pass, for the
# verb to check); the choice arguments in `...`, each matched against its entry of
# `choices` (the choices of the verb's signature; `format` without an entry is NULL or a
# release form, NULL resolved by `engine`); `check_identifiers` and `nthreads` when given;
# last, `data` has records. Returns the mask frame: a list of the checked values, named as
# the arguments, which the verb reads with `$`.
check_masking_args <- function(data, vars, strata, k, ..., choices = list(),
                               strata_default = default_strata(data), numeric = TRUE, k_table = FALSE,
                               check_identifiers = NULL, nthreads = NULL) {
  check_data_frame(data, "data")
  strata <- check_columns(strata, data, "strata", strata_default)
  check_strata_columns(data, strata)
  vars <- check_columns(vars, data, "vars", setdiff(default_vars(data), strata))
  # (one pass over each column for both checks of its values)
  finite <- if (numeric && length(vars)) finite_columns(data, vars)
  check_vars(data, vars, strata, numeric, finite)
  if (!k_table || !is.data.frame(k)) k <- check_whole(k, "k", min = 2)
  out <- list(vars = vars, strata = strata, k = k)
  given <- list(...)
  for (arg in names(given)) {
    out[[arg]] <- if (arg == "format" && is.null(choices$format)) check_format(given$format, out$engine)
                  else match_choice(given[[arg]], arg, choices[[arg]])
  }
  if (!is.null(check_identifiers)) out$check_identifiers <- check_flag(check_identifiers, "check_identifiers")
  if (!is.null(nthreads)) out$nthreads <- check_nthreads(nthreads)
  if (numeric && !isTRUE(out$na != "fail")) check_complete(data, vars, has_na_arg = !is.null(out$na), finite)
  if (!nrow(data)) stop_arg("`data` has no records: there is nothing to mask.", kind = "data")
  out
}

# Whether each of the columns `vars` of `data` holds only finite values (numeric: no NA,
# NaN or infinite value), in one pass in C; FALSE for a column of another type.
finite_columns <- function(data, vars) .Call(C_ffi_cols_finite, lapply(vars, function(v) data[[v]]), 1L) == 1

# Missing values in `vars` are an error for a verb without `na` or with `na = "fail"`.
# `finite`: finite_columns() of `vars`, when known (a finite column has none).
check_complete <- function(data, vars, has_na_arg, finite = NULL) {
  if (!is.null(finite) && all(finite)) return(invisible())
  if (!any(vapply(vars, function(v) anyNA(data[[v]]), logical(1)))) return(invisible())
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
# infinite values. `finite`: finite_columns() of `vars`, when known.
check_vars <- function(data, vars, strata, numeric = TRUE, finite = NULL) {
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
  for (j in seq_along(vars)) {
    v <- vars[j]
    x <- data[[v]]
    # fast path, one pass without allocation: a finite sum has no NaN and no infinite term
    if (isTRUE(finite[j]) || is.integer(x) || (!anyNA(x) && is.finite(sum(x)))) next
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

