#' Disclosure risk by robust Mahalanobis distance intervals (sdcMicro's dRiskRMD)
#'
#' The interval measure of Templ and Meindl (2008) as implemented by
#' `sdcMicro::dRiskRMD()`, which the paper of Avraam, Jones and Burton (2022) uses; the
#' numbers agree with `dRiskRMD()` on the same inputs and random seed. The steps:
#' 1. standardise `original` and `masked` separately, each by its own column means and
#'    SDs (`scale()`);
#' 2. compute the squared Mahalanobis distance of each standardised original record from
#'    the column means, under the robust covariance of [robustbase::covMcd()] (its
#'    reweighted estimate `$cov`), and put `rmd = 0.05 * sqrt(distance)`;
#' 3. a record is at risk (`risk1`) when at least one of its masked variables lies
#'    strictly inside the interval original +/- `w1 * rmd` (on the standardised scales);
#' 4. a risk1 record stays at risk (`risk2`) when fewer than `m` other masked records lie
#'    within Euclidean distance `w2` of its masked record (standardised scale). With
#'    `m = 1` this is sdcMicro's rule: the nearest other masked record is farther than `w2`.
#'
#' The neighbour counts of step 4 use an exact kd-tree in C (memory O(n)) instead of
#' sdcMicro's n x n distance matrix, and are computed only for the risk1 records. Distances
#' are compared as `sqrt(sum of squares) <= w2`, exactly as `stats::dist()` does.
#'
#' @section The random subsampling of covMcd:
#' `robustbase::covMcd()` searches random subsamples, so `risk_rmd()` (like `dRiskRMD()`)
#' depends on R's random number generator: call `set.seed()` first to reproduce a result,
#' exactly as you would before `dRiskRMD()`. For a result that does not depend on the seed
#' at all, use `deterministic = TRUE`, which calls `covMcd(nsamp = "deterministic")`
#' (the DetMCD algorithm of Hubert, Rousseeuw and Verdonck); it can differ slightly from
#' the random search and hence from sdcMicro, and it is slower on large data (about a
#' minute at n = 1e6, against a few seconds). Further arguments in `...` go to `covMcd()`.
#'
#' @section What it measures and what it does not:
#' `risk1` flags records whose masked values stay very close to their originals, with a
#' tolerance that grows with the record's robust distance from the centre (outliers get
#' wider intervals). `risk2` keeps only the flagged records that are also isolated among
#' the masked records. Both are heuristics: they assume an intruder who knows the
#' original values and looks for a masked value close to them, and they say nothing about
#' the categorical variables (see [strata_table()] and [risk_linkage()]), about attribute
#' disclosure, or about records whose masked values are farther than the interval but
#' still the closest match (see [risk_linkage()] for that attack). A record not flagged
#' is not thereby safe. The weighted risks follow sdcMicro's definitions:
#' `wrisk1 = n_risk1 * sum(rmd[rows_risk1]) / n` and likewise for `wrisk2`.
#'
#' @section Reproducing the paper:
#' The paper reports risk1 = 0.0426 (38 records) and risk2 = 0.009 (8 records) for
#' `anonymise(titanic_paper(), k = 3, vars = c("Age", "Fare"), strata = c("Pclass",
#' "Sex", "Family"), engine = "rann")` with `dRiskRMD(original[c("Age", "Fare")],
#' masked[c("Age", "Fare")])` (the defaults `w1 = 0.01`, `w2 = 0.05`). `risk_rmd()` and
#' `dRiskRMD()` both give exactly that, for every seed tried. The figure is fragile: a
#' masking whose z-scores differ in the last bit (base `scale()` instead of
#' `(x - mean(x)) / sd(x)`) resolves 14 ties differently and gives 37 and 7.
#'
#' @param original,masked Data frames with the same rows in the same order: the original
#'   data and its masked release.
#' @param vars Continuous columns to assess, present in both. Default: the masked
#'   variables recorded in the release metadata of `masked`
#'   ([release_info()], ignored once `masked` was subset or edited), else the numeric columns common
#'   to both that differ between them.
#' @param w1 Interval weight, a number > 0 (sdcMicro's `k`).
#' @param w2 Neighbourhood radius on the standardised scale, a number >= 0 (sdcMicro's `k2`).
#' @param m Number of other masked records within `w2` that make a risk1 record safe,
#'   a whole number >= 1.
#' @param ... Further arguments to [robustbase::covMcd()] (e.g. `alpha`, `nsamp`).
#' @param deterministic If `TRUE`, `covMcd(nsamp = "deterministic")`: no dependence on the
#'   random seed.
#' @param nthreads Number of OpenMP threads for the neighbour counts. The default is the
#'   option `detanon.nthreads`, else 1.
#' @return An object of class `detanon_risk_rmd`: a list with `risk1`, `risk2` (shares of
#'   records), `wrisk1`, `wrisk2` (weighted versions), `n_risk1`, `n_risk2` (counts),
#'   `rows_risk1`, `rows_risk2` (integer row positions, whatever the row names), `w1`,
#'   `w2`, `m`, `vars`, `n`, `deterministic` and `cov` (the robust covariance of the
#'   standardised original variables).
#' @references Templ M, Meindl B (2008). Robust statistics meets SDC: new disclosure risk
#'   measures for continuous microdata masking. In *Privacy in Statistical Databases*,
#'   LNCS 5262, 177-189.
#' @seealso [risk_linkage()], [assess()].
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' set.seed(1)
#' risk_rmd(d, masked)
#' risk_rmd(d, masked, deterministic = TRUE)$n_risk1
#' @family measures
#' @export
risk_rmd <- function(original, masked, vars = NULL, w1 = 0.01, w2 = 0.05, m = 1, ...,
                     deterministic = FALSE, nthreads = getOption("detanon.nthreads", 1L)) {
  vars <- check_pair(original, masked, vars)
  w1 <- check_number(w1, "w1", lower = 0, lower_open = TRUE)
  w2 <- check_number(w2, "w2", lower = 0)
  if (is.numeric(m) && length(m) == 1L && isTRUE(m > .Machine$integer.max) && is.finite(m)) {
    m <- .Machine$integer.max # more than any data set has: every risk1 record stays at risk
  }
  m <- check_whole(m, "m", min = 1)
  deterministic <- check_flag(deterministic, "deterministic")
  nthreads <- check_nthreads(nthreads)
  n <- nrow(original)
  p <- length(vars)
  if (n < p + 2L) {
    stop_arg("more records than variables are needed to estimate a robust covariance: ",
             plural(n, "record"), " for ", plural(p, "variable"), " in `vars`.", kind = "data")
  }
  x <- numeric_matrix(original, vars)
  xm <- numeric_matrix(masked, vars)
  check_not_constant(x, "original")
  check_not_constant(xm, "masked")

  # exactly dRiskRMD's arithmetic, so that the numbers agree bit for bit
  x <- scale(x)
  xm <- scale(xm)
  cent <- colMeans(x)
  args <- list(...)
  if (deterministic) args$nsamp <- "deterministic"
  mcd <- tryCatch(do.call(robustbase::covMcd, c(list(x), args)),
                  error = function(e) stop_arg("robustbase::covMcd() failed on `original[vars]`: ",
                                               conditionMessage(e), kind = "data"))
  covs <- mcd$cov
  if (!all(is.finite(covs)) || rcond(covs) < sqrt(.Machine$double.eps)) {
    stop_arg("The robust covariance of `original[vars]` is singular (more than half of the ",
             "records lie on a hyperplane, e.g. many tied values); drop or combine the ",
             "degenerate variables in `vars`.", kind = "data")
  }
  rmd <- stats::mahalanobis(x, center = cent, cov = covs)
  rmd <- sqrt(rmd) * 0.05
  mi <- x - w1 * rmd
  ma <- x + w1 * rmd
  inside <- xm > mi & xm < ma
  rows1 <- which(rowSums(inside) > 0L)
  names(rows1) <- NULL
  rows2 <- integer()
  if (length(rows1)) {
    show <- show_progress(length(rows1) * min(m, 64) / 4)
    others <- with_progress(show, .Call(C_ffi_rmd_count, xm, as.integer(rows1), w2, m, nthreads, show))
    rows2 <- rows1[others < m]
  }
  structure(list(
    risk1 = length(rows1) / n,
    risk2 = length(rows2) / n,
    wrisk1 = length(rows1) * sum(rmd[rows1]) / n,
    wrisk2 = length(rows2) * sum(rmd[rows2]) / n,
    n_risk1 = length(rows1), n_risk2 = length(rows2),
    rows_risk1 = as.integer(rows1), rows_risk2 = as.integer(rows2),
    w1 = w1, w2 = w2, m = m, vars = vars, n = n, deterministic = deterministic,
    cov = unname_attr(covs)
  ), class = "detanon_risk_rmd")
}

unname_attr <- function(m) {
  attributes(m) <- list(dim = dim(m), dimnames = dimnames(m))
  m
}

#' @export
print.detanon_risk_rmd <- function(x, ...) {
  cat(sprintf("Robust Mahalanobis distance risk (w1 = %s, w2 = %s, m = %d) on %s, %d records\n",
              format(x$w1), format(x$w2), x$m, paste(x$vars, collapse = ", "), x$n))
  cat(sprintf("  risk1 = %.4f (%d records whose masked value lies in the interval around the original)\n",
              x$risk1, x$n_risk1))
  cat(sprintf("  risk2 = %.4f (%d of them with fewer than %s within w2)\n",
              x$risk2, x$n_risk2, plural(x$m, "other masked record")))
  cat(sprintf("  weighted: wrisk1 = %.4g, wrisk2 = %.4g\n", x$wrisk1, x$wrisk2))
  invisible(x)
}

#' Nearest-neighbour linking attack
#'
#' The linking model of section V-B of Holohan et al. (2017): an intruder who holds the
#' original records links every masked record to the nearest original record in the same
#' stratum (the same combination of the `strata` variables). A link succeeds when that
#' nearest original record is the masked record's own. The rate of successful links is a
#' direct, attack-based measure that the interval measure of [risk_rmd()] does not give.
#'
#' Distances are Euclidean on z-scores: both data sets are standardised by the means and
#' SDs of `original` (so that a masked value and its original are on one scale). A
#' constant original column carries no information and is left out. When t original
#' records are equally near (ties, e.g. duplicated records), the intruder cannot tell
#' them apart; a link then counts as 1/t of a success if the record's own original is
#' among them, so rates are expected success rates of an intruder picking one of the
#' tied records at random. The blind rate is what guessing a record of the right stratum
#' at random would achieve: 1 / (stratum size) per record, overall (number of
#' strata) / n.
#'
#' @section What it measures and what it does not:
#' It measures re-identification by nearest match for an intruder who knows the
#' original values of `vars` and `strata` of everyone in the data. It does not cover
#' intruders with other background knowledge, matching on other variables, attribute
#' disclosure (a stratum where everyone shares a sensitive value), or membership
#' disclosure. A low rate does not prove safety; a rate far above the blind rate shows
#' that the masking leaves records recognisable.
#'
#' @inheritParams risk_rmd
#' @param strata Categorical columns that the intruder matches exactly; they must be
#'   equal in `original` and `masked` (as [anonymise()] releases them). Default: the
#'   strata in the release metadata of `masked` ([release_info()]), else none (one stratum).
#' @return An object of class `detanon_linkage`: a list with `rate` (overall expected share
#'   of correct links), `n_linked` (expected number of correct links), `blind_rate`,
#'   `by_stratum` (a data frame: the strata columns, `n`, `rate`, `blind_rate`), `vars`,
#'   `strata` and `n`.
#' @references Holohan N, Antonatos S, Braghin S, Mac Aonghusa P (2017). (k,epsilon)-anonymity:
#'   k-anonymity with epsilon-differential privacy. arXiv:1710.01615, section V-B.
#' @seealso [risk_rmd()], [assess()].
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' risk_linkage(d, masked)
#' @family measures
#' @export
risk_linkage <- function(original, masked, vars = NULL, strata = NULL,
                         nthreads = getOption("detanon.nthreads", 1L)) {
  vars <- check_pair(original, masked, vars, strata = strata)
  nthreads <- check_nthreads(nthreads)
  if (is.null(strata)) strata <- attr(vars, "strata")
  vars <- as.vector(vars)
  strata <- check_columns(strata, original, "strata")
  check_columns(strata, masked, "strata")
  both <- intersect(strata, vars)
  if (length(both)) stop_arg("Columns cannot be in both `vars` and `strata`: ", quote_names(both), ".", kind = "column")
  check_strata_columns(original, strata)
  for (s in strata) {
    if (!identical(as.vector(original[[s]]), as.vector(masked[[s]])) &&
        !identical(as.character(original[[s]]), as.character(masked[[s]]))) {
      stop_arg("`strata` column `", s, "` differs between `original` and `masked`; the linking ",
               "model needs the categorical variables released unchanged (same rows, same order).", kind = "column")
    }
  }
  n <- nrow(original)
  x <- numeric_matrix(original, vars)
  xm <- numeric_matrix(masked, vars)
  st <- col_stats(x)
  keep <- !is.na(st$sd) & st$sd > 0
  if (!any(keep)) {
    # no variable carries information: every record of a stratum is equally near
    x <- matrix(0, n, 1L)
    xm <- x
  } else {
    x <- sweep(sweep(x[, keep, drop = FALSE], 2L, st$mean[keep]), 2L, st$sd[keep], "/")
    xm <- sweep(sweep(xm[, keep, drop = FALSE], 2L, st$mean[keep]), 2L, st$sd[keep], "/")
  }
  df <- as.data.frame(original, stringsAsFactors = FALSE)
  id <- stratum_ids(df, strata)
  n_strata <- max(c(0L, id))
  sizes <- tabulate(id, n_strata)
  show <- show_progress(n * 2)
  share <- if (n) with_progress(show, .Call(C_ffi_link_share, x, xm, id, nthreads, show)) else numeric()
  by <- if (length(strata)) df[match(seq_len(n_strata), id), strata, drop = FALSE] else data.frame(row.names = seq_len(n_strata))
  rownames(by) <- NULL
  by$n <- sizes
  by$rate <- as.vector(rowsum(share, id, reorder = TRUE)) / sizes
  by$blind_rate <- 1 / sizes
  structure(list(
    rate = if (n) sum(share) / n else NA_real_,
    n_linked = sum(share),
    blind_rate = if (n) n_strata / n else NA_real_,
    by_stratum = by, vars = vars, strata = strata, n = n
  ), class = "detanon_linkage")
}

#' @export
print.detanon_linkage <- function(x, ...) {
  cat(sprintf("Nearest-neighbour linkage on %s%s, %d records in %s\n",
              paste(x$vars, collapse = ", "),
              if (length(x$strata)) paste0(" within ", paste(x$strata, collapse = " x ")) else "",
              x$n, plural(nrow(x$by_stratum), "stratum", "strata")))
  cat(sprintf("  correct links: %.4f (%.1f records); a blind guess in the stratum: %.4f\n",
              x$rate, x$n_linked, x$blind_rate))
  worst <- x$by_stratum[order(-x$by_stratum$rate), , drop = FALSE]
  if (nrow(worst) > 1L) {
    cat("  highest stratum rates:\n")
    print(utils::head(worst, 5L), row.names = FALSE, digits = 3)
  }
  invisible(x)
}

# ---- shared checks for (original, masked) pairs --------------------------------------

check_not_constant <- function(x, arg) {
  const <- colnames(x)[apply(x, 2L, function(v) all(v == v[1L]))]
  if (length(const)) {
    stop_arg("`vars` ", plural(length(const), "column", count = FALSE), " ", quote_names(const), " ",
             plural(length(const), "is", "are", count = FALSE), " constant in `", arg,
             "`: a constant variable cannot be standardised; leave it out of `vars`.", kind = "data")
  }
}
