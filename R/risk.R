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
#' 4. a risk1 record stays at risk (`risk2`) when fewer than `neighbours` other masked
#'    records lie within Euclidean distance `w2` of its masked record (standardised scale).
#'    With `neighbours = 1` this is sdcMicro's rule: the nearest other masked record is farther than `w2`.
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
#' @section Degenerate data:
#' When more than half of the records lie on a hyperplane (many tied values, zero-inflated
#' variables, a variable that is a linear combination of others, as in the CASC
#' `CASCrefmicrodata` set), the robust covariance is singular. `risk_rmd()` then uses the
#' classical covariance, or, if that is singular too, per-variable robust variances (the
#' squared MADs; 1 for a variable with more than half of its values tied), and says so
#' with a warning of class `detanon_warning_covariance`; `cov_method` in the result records
#' which. The intervals are then no longer sdcMicro's (`dRiskRMD()` stops on such data).
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
#' @section Data beyond memory:
#' risk_rmd() is not run stratum by stratum ([risk_partitioned()] does not offer it): its
#' neighbour counts look at all masked records, not those of one stratum, and its robust
#' (MCD) covariance is a search over all original records. Over chunks of rows, the column
#' means and SDs merge exactly, the interval test is per record, and the neighbour counts
#' add up over chunks of masked records (a record is safe once the sum reaches
#' `neighbours`), so all of it is exact except the covariance, which would be the MCD of a
#' random sample. `bench/scale-rmd.R` in the sources measures that approximation: with a
#' sample of 10,000 records (5 samples), risk1 and risk2 stayed within 0.0012 and 0.0006 of
#' the full MCD's on the 32,561 Adult records (99.9% or more of the records classified
#' alike), and within 0.0033 and 0.0002 on 1e6 simulated records (risk1 0.1494 to 0.1536
#' against 0.1527; 99.5% or more classified alike), in a fifth of the time.
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
#' @param neighbours Number of other masked records within `w2` that make a risk1 record
#'   safe, a whole number >= 1.
#' @param ... Further arguments to [robustbase::covMcd()] (e.g. `alpha`, `nsamp`).
#' @param seed Seed for R's random number generator, which `covMcd()` draws from (unless
#'   `deterministic = TRUE`); `NULL` uses the current stream. The caller's stream is left
#'   as it was.
#' @param m Deprecated name of `neighbours` (`m` is the intruder's list length in
#'   [risk_linkage()]).
#' @param deterministic If `TRUE`, `covMcd(nsamp = "deterministic")`: no dependence on the
#'   random seed.
#' @param nthreads Number of OpenMP threads for the neighbour counts. The default is the
#'   option `detanon.nthreads`, else 1.
#' @return An object of class `detanon_risk_rmd`: a list with `risk1`, `risk2` (shares of
#'   records), `wrisk1`, `wrisk2` (weighted versions), `n_risk1`, `n_risk2` (counts),
#'   `rows_risk1`, `rows_risk2` (integer row positions, whatever the row names), `w1`,
#'   `w2`, `neighbours`, `vars`, `n`, `deterministic` and `cov` (the robust covariance of the
#'   standardised original variables) and `cov_method` (`"mcd"`, or the fallback
#'   `"classical"` or `"diagonal"`, see the section Degenerate data).
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
#' @section sdcMicro: `original` may be an `sdcMicroObj`, alone ([sdc_extract()]).
#' @export
risk_rmd <- function(original, masked, vars = NULL, w1 = 0.01, w2 = 0.05, neighbours = 1,
                     deterministic = FALSE, ..., nthreads = getOption("detanon.nthreads", 1L),
                     seed = NULL, m) {
  if (is_sdc(original)) return(sdc_measure(risk_rmd, original, match.call(), parent.frame())) # R/sdcmicro.R
  if (!missing(m)) neighbours <- renamed_arg(m, "m", "neighbours", !missing(neighbours))
  vars <- check_pair(original, masked, vars)
  w1 <- check_number(w1, "w1", lower = 0, lower_open = TRUE)
  w2 <- check_number(w2, "w2", lower = 0)
  if (is.numeric(neighbours) && length(neighbours) == 1L && isTRUE(neighbours > .Machine$integer.max) &&
      is.finite(neighbours)) {
    neighbours <- .Machine$integer.max # more than any data set has: every risk1 record stays at risk
  }
  neighbours <- check_whole(neighbours, "neighbours", min = 1)
  deterministic <- check_flag(deterministic, "deterministic")
  nthreads <- check_nthreads(nthreads)
  if (!is.null(seed)) seed <- check_whole(seed, "seed", min = -.Machine$integer.max)
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
  # tiny-valued columns (SD underflow) scaled exactly by powers of two; others untouched
  tiny <- pow2_normalise(x, xm)
  x <- tiny$x
  xm <- tiny$y

  # exactly dRiskRMD's arithmetic, so that the numbers agree bit for bit
  core <- with_seed(seed, rmd_core(x, deterministic, ...))
  rmd_result(core, xm, w1, w2, neighbours, vars, deterministic, nthreads)
}

# The settings of risk_rmd() that tune_release() measures with: its defaults.
rmd_defaults <- function() list(w1 = 0.01, w2 = 0.05, neighbours = 1)

# risk_rmd() from the original side (rmd_core()) and the masked matrix.
rmd_result <- function(r, xm, w1, w2, neighbours, vars, deterministic, nthreads) {
  n <- nrow(xm)
  x <- r$x
  xm <- scale(xm)
  covs <- r$cov
  rmd <- r$rmd
  mi <- x - w1 * rmd
  ma <- x + w1 * rmd
  inside <- xm > mi & xm < ma
  rows1 <- which(rowSums(inside) > 0L)
  names(rows1) <- NULL
  rows2 <- integer()
  if (length(rows1)) {
    show <- show_progress(length(rows1) * min(neighbours, 64) / 4)
    others <- with_progress(show, .Call(C_ffi_rmd_count, xm, as.integer(rows1), w2, neighbours, nthreads,
                                        show))
    rows2 <- rows1[others < neighbours]
  }
  structure(list(
    risk1 = length(rows1) / n,
    risk2 = length(rows2) / n,
    wrisk1 = length(rows1) * sum(rmd[rows1]) / n,
    wrisk2 = length(rows2) * sum(rmd[rows2]) / n,
    n_risk1 = length(rows1), n_risk2 = length(rows2),
    rows_risk1 = as.integer(rows1), rows_risk2 = as.integer(rows2),
    w1 = w1, w2 = w2, neighbours = neighbours, vars = vars, n = n, deterministic = deterministic,
    cov = unname_attr(covs), cov_method = if (is.null(r$cov_method)) "mcd" else r$cov_method
  ), class = "detanon_risk_rmd")
}

# scale() of the originals, their robust covariance and dRiskRMD's interval half-widths
# per unit of w1 (0.05 * robust Mahalanobis distance). When the robust covariance is
# singular (more than half of the records on a hyperplane: ties, zero-inflation, a variable
# that is a linear combination of others), it falls back to the classical covariance, and
# when that is singular too, to per-variable robust variances (a diagonal matrix), with a
# classed warning: a degenerate variable never stops a measure or a search. `rows`: the
# covariance is estimated on these rows only (rmd_sample_rows()); the scaling and the
# distances are of all rows.
rmd_core <- function(x, deterministic, ..., rows = NULL) {
  x <- scale(x)
  cent <- colMeans(x)
  xc <- if (is.null(rows)) x else x[rows, , drop = FALSE]
  args <- list(...)
  if (deterministic) args$nsamp <- "deterministic"
  singular <- function(e) grepl("singular|hyperplane|plane with equation|order statistic", conditionMessage(e))
  mcd <- tryCatch(withCallingHandlers(do.call(robustbase::covMcd, c(list(xc), args)),
                                      warning = function(w) if (singular(w)) invokeRestart("muffleWarning")),
                  error = function(e) {
                    if (!singular(e)) {
                      stop_arg("robustbase::covMcd() failed on `original[vars]`: ", conditionMessage(e), kind = "data")
                    }
                    NULL
                  })
  covs <- mcd$cov
  method <- "mcd"
  if (!usable_cov(covs)) {
    covs <- stats::cov(xc)
    method <- "classical"
    if (!usable_cov(covs)) {
      s <- apply(xc, 2L, stats::mad)
      s[!is.finite(s) | s <= 0] <- 1 # a variable with more than half of its values tied
      covs <- diag(s^2, ncol(x))
      dimnames(covs) <- list(colnames(x), colnames(x))
      method <- "diagonal"
    }
    warn_detanon("The robust covariance of `original[vars]` is singular (more than half of the ",
                 "records lie on a hyperplane: ties, zero-inflation, or a variable that is a linear ",
                 "combination of others); the distances use ",
                 if (method == "classical") "the classical covariance" else
                   "per-variable robust variances (the classical covariance is singular too)",
                 " instead. Drop or combine the degenerate variables in `vars` to use the robust one.",
                 kind = "covariance")
  }
  rmd <- stats::mahalanobis(x, center = cent, cov = covs)
  list(x = x, cov = covs, rmd = sqrt(rmd) * 0.05, cov_method = method)
}

# At most `size` rows of the matrix x whose values stand for all of them, the same for any
# row order: the rows in the order of their values (column by column), at evenly spaced
# positions. Rows that tie on every column are interchangeable, so the values taken do not
# depend on which of them is taken.
rmd_sample_rows <- function(x, size) {
  n <- nrow(x)
  if (n <= size) return(NULL)
  o <- do.call(order, c(unname(as.data.frame(x)), method = "radix"))
  o[floor(seq(0, size - 1) * as.double(n) / size) + 1]
}

usable_cov <- function(covs) {
  !is.null(covs) && all(is.finite(covs)) && rcond(covs) >= sqrt(.Machine$double.eps)
}

unname_attr <- function(m) {
  attributes(m) <- list(dim = dim(m), dimnames = dimnames(m))
  m
}

#' @export
print.detanon_risk_rmd <- function(x, ...) {
  cat(sprintf("Robust Mahalanobis distance risk (w1 = %s, w2 = %s, neighbours = %d)\n",
              format(x$w1), format(x$w2), x$neighbours))
  cat(sprintf("  on %s, %s\n", paste(x$vars, collapse = ", "), plural(x$n, "record")))
  cat(sprintf("  risk1 = %.4f (%s with a masked value in the interval around\n",
              x$risk1, plural(x$n_risk1, "record")))
  cat("    its original)\n")
  cat(sprintf("  risk2 = %.4f (%d of them with fewer than %s within w2)\n",
              x$risk2, x$n_risk2, plural(x$neighbours, "other masked record")))
  cat(sprintf("  weighted: wrisk1 = %.4g, wrisk2 = %.4g\n", x$wrisk1, x$wrisk2))
  invisible(x)
}

#' Linking attacks: nearest-neighbour, top-m, and the expected re-identification probability
#'
#' The linking model of section V-B of Holohan et al. (2017), widened to the ranks an
#' intruder sees: an intruder who holds the original records ranks, for every masked
#' record, the original records of the same stratum (the same combination of the `strata`
#' variables) by their distance to it.
#' * **Nearest-neighbour linkage** (`rate`): the share of masked records whose nearest
#'   original is their own, the link of Holohan et al. This is the one-record rate of the
#'   attacks (`rate` of [attack_linkage()] and [risk_battery()]).
#' * **Top-m linkage** (`rate_m`): the share of masked records whose own original is among
#'   the `m` nearest originals (`rate_m` of [attack_linkage()]); with `m = 1`, `rate`.
#' * **Expected re-identification probability** (`reid_prob`, mean `reid`): for each
#'   record, the chance that an intruder who picks at random among the originals at most
#'   as far from the masked record as its own original picks the right one, i.e.
#'   1 / (number of originals in the stratum at most that far; counted up to 2^14 = 16,384,
#'   so a record with more gets 2^-14, an upper bound at most 6.1e-5 above the exact
#'   value, and the time stays near-linear on releases far from their originals, such as
#'   stirred ones). It is never below the
#'   `m = 1` share of the record and it does not fall to zero when the masking moves the
#'   own original from rank 1 to rank 2: a masking that pushes every record just past one
#'   neighbour scores well on the nearest-neighbour link but not on this measure, nor on
#'   top-m linkage with m > 1.
#'
#' Distances are Euclidean on z-scores: both data sets are standardised by the means and
#' SDs of `original` (so that a masked value and its original are on one scale). A
#' constant original column carries no information and is left out. When several
#' originals are exactly as far as the record's own (ties, e.g. duplicated records), the
#' intruder cannot tell them apart and takes them in random order: with `l` originals
#' strictly nearer and `t` at the same distance (the own one included), the own original
#' is among the `m` nearest with probability `min(1, max(0, (m - l) / t))`, and the rates
#' are expected rates. The blind rate is what guessing `m` records of the right stratum
#' at random would achieve: `min(m, size) / size` per record.
#'
#' The ranks are counted in C on a kd-tree of each stratum's originals (two
#' count-within-radius queries per record), exactly and in O(n log n) time when masked
#' records lie near their originals.
#'
#' @section What it measures and what it does not:
#' It measures re-identification by distance for an intruder who knows the original
#' values of `vars` and `strata` of everyone in the data and nothing about the masking
#' algorithm. An intruder who also knows the algorithm and its settings can do much
#' better against a deterministic masking: see [risk_replay()]. It does not cover
#' intruders with other background knowledge, matching on other variables, attribute
#' disclosure (a stratum where everyone shares a sensitive value), or membership
#' disclosure. Low rates do not prove safety; rates far above the blind rate show that
#' the masking leaves records recognisable.
#'
#' @inheritParams risk_rmd
#' @param strata Categorical columns that the intruder matches exactly; they must be
#'   equal in `original` and `masked` (as [anonymise()] releases them). Default: the
#'   strata in the release metadata of `masked` ([release_info()]), else none (one stratum).
#' @param m The intruder's list length: a link succeeds when the own original is among
#'   the `m` nearest originals; a whole number >= 1. `m = 1` is the nearest-neighbour link.
#' @return An object of class `detanon_linkage`: a list with `rate` (overall expected share
#'   of records whose nearest original is their own), `n_linked` (expected number of such
#'   records), `blind_rate`; the same for the top-`m` link: `rate_m` (expected share of
#'   records whose own original is among the `m` nearest), `n_linked_m`, `blind_rate_m`;
#'   `m`, `reid` (mean expected re-identification probability) and `reid_max` (its largest
#'   value), `by_stratum` (a data frame: the strata columns, `n`, `rate`, `rate_m`,
#'   `blind_rate`, `blind_rate_m`, `reid`), `linked`, `linked_m` and `reid_prob` (per
#'   record, in row order: the record's share of a nearest-neighbour link and of a top-`m`
#'   link, and its re-identification probability), `vars`, `strata` and `n`. With `m = 1`
#'   (the default) the top-`m` fields equal the nearest-neighbour ones.
#' @references Holohan N, Antonatos S, Braghin S, Mac Aonghusa P (2017). (k,epsilon)-anonymity:
#'   k-anonymity with epsilon-differential privacy. arXiv:1710.01615, section V-B.
#' @seealso [risk_replay()], [risk_rmd()], [assess()].
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' risk_linkage(d, masked)
#' risk_linkage(d, masked, m = 3)$rate_m
#' @family measures
#' @section sdcMicro: `original` may be an `sdcMicroObj`, alone ([sdc_extract()]).
#' @export
risk_linkage <- function(original, masked, vars = NULL, strata = NULL, m = 1,
                         nthreads = getOption("detanon.nthreads", 1L)) {
  if (is_sdc(original)) return(sdc_measure(risk_linkage, original, match.call(), parent.frame())) # R/sdcmicro.R
  s <- linkage_setup(original, masked, vars, strata)
  linkage_result(s, check_whole(m, "m", min = 1), check_nthreads(nthreads))
}

# The result of risk_linkage() on the pair of the linkage_setup() `s`.
linkage_result <- function(s, m, nthreads) {
  n <- s$n
  ranks <- link_ranks(s, s$zo, s$zm, rep(TRUE, n), m, nthreads)
  r1 <- linkage_rates(s, ranks, 1)
  r <- if (m == 1) r1 else linkage_rates(s, ranks, m)
  blind <- function(m) if (n) sum(pmin(m, s$sizes)) / n else NA_real_
  by <- s$by
  by$n <- s$sizes
  by$rate <- r1$by_rate
  by$rate_m <- r$by_rate
  by$blind_rate <- 1 / s$sizes
  by$blind_rate_m <- pmin(m, s$sizes) / s$sizes
  by$reid <- r$by_reid
  structure(list(
    rate = r1$rate, n_linked = r1$n_linked, blind_rate = blind(1),
    rate_m = r$rate, n_linked_m = r$n_linked, blind_rate_m = blind(m),
    m = m,
    reid = r$reid_mean,
    reid_max = if (n) max(r$reid) else NA_real_,
    by_stratum = by, linked = r1$share, linked_m = r$share, reid_prob = r$reid,
    vars = s$vars, strata = s$strata, n = n
  ), class = "detanon_linkage")
}

# The kernel of risk_linkage() (also the measure of tune_release()): from the ranks of
# link_ranks() (counted up to at least `m`), every record's expected share of a top-m link
# and its re-identification probability, their totals and their means per stratum.
linkage_rates <- function(s, ranks, m) {
  share <- top_m_share(ranks, m)
  reid <- 1 / ranks[, 2L]
  n <- s$n
  list(share = share, reid = reid,
       rate = if (n) sum(share) / n else NA_real_, n_linked = sum(share),
       reid_mean = if (n) sum(reid) / n else NA_real_,
       by_rate = as.vector(rowsum(share, s$id, reorder = TRUE)) / s$sizes,
       by_reid = as.vector(rowsum(reid, s$id, reorder = TRUE)) / s$sizes)
}

#' @export
print.detanon_linkage <- function(x, ...) {
  m <- if (is.null(x$m)) 1L else x$m
  wrap <- function(...) cat(strwrap(paste0(...), width = 78, exdent = 2), sep = "\n")
  wrap(sprintf("%s linkage on %s%s, %s in %s", if (m == 1L) "Nearest-neighbour" else sprintf("Top-%d", m),
               paste(x$vars, collapse = ", "),
               if (length(x$strata)) paste0(" within ", paste(x$strata, collapse = " x ")) else "",
               plural(x$n, "record"), plural(nrow(x$by_stratum), "stratum", "strata")))
  cat(sprintf("  correct links (own original %s): %.4f (%.1f records)\n",
              if (m == 1L) "the nearest" else paste("among the", m, "nearest"), x$rate_m, x$n_linked_m))
  cat(sprintf("  a blind guess: %.4f\n", x$blind_rate_m))
  if (m > 1L) {
    cat(sprintf("  own original the nearest: %.4f (%.1f records; a blind guess %.4f)\n",
                x$rate, x$n_linked, x$blind_rate))
  }
  if (!is.null(x$reid)) {
    cat(sprintf("  expected re-identification probability: mean %.4f, largest %.4f\n",
                x$reid, x$reid_max))
  }
  worst <- x$by_stratum[order(-x$by_stratum$rate_m), , drop = FALSE]
  if (nrow(worst) > 1L) {
    cat("  highest stratum rates:\n")
    show <- setdiff(names(worst), if (m == 1L) c("rate_m", "blind_rate_m") else c("rate", "blind_rate"))
    print(utils::head(worst[show], 5L), row.names = FALSE, digits = 3)
  }
  cat("  An intruder who knows the masking algorithm can do better: see risk_replay().\n")
  invisible(x)
}

#' Replay attack: an intruder who knows the masking algorithm and its settings
#'
#' A deterministic masking such as [anonymise()] is a function of the data: an intruder
#' who knows the algorithm, its settings and the original records can run it again and
#' find every record's masked value exactly, whatever [risk_linkage()] says. This
#' measure plays that intruder for several amounts of knowledge: for each share `p`, the
#' intruder knows the original records of a random share `p` of the records (all of them
#' for `p = 1`), re-runs the masking (`mask`) on those records alone, and links each
#' replayed record to the nearest released record of its stratum (Euclidean distance on
#' the z-scores of `original`, as in [risk_linkage()]). A link succeeds when the nearest
#' released record is the record's own; released records exactly as near share the
#' success as in [risk_linkage()] (`m` > 1: the own record among the `m` nearest).
#'
#' With `p = 1` a deterministic masking is replayed exactly and only records whose
#' released values coincide with others' (e.g. records that share all their neighbours)
#' escape. With `p < 1` the replay lacks the other records, which moves the replayed
#' values; the rate shows how much of the masking an intruder with partial knowledge can
#' undo. A masking with random noise (e.g. [anonymise_keps()]) is replayed with other
#' random numbers than the release (the intruder does not know the seed).
#'
#' @section The replay:
#' `mask` is the intruder's copy of the masking: a function of one data frame (a subset
#' of the rows of `original`, all columns) that returns the masked data frame with the
#' same rows in the same order. By default it is read from the release: for a release of
#' [anonymise()] it calls `anonymise()` with the recorded `k`, `vars`, `strata` and
#' `engine` (with `small_strata = "merge"`, and without strata if the intruder's share
#' is too small for them, so that every known record is replayed); for a release of
#' [anonymise_adaptive()] it calls that function with the recorded settings (without the
#' interval test `w1` when the intruder knows fewer records than variables + 2, too few
#' for its robust covariance); for a release of [anonymise_mdav()] it calls that function
#' with the recorded `k` (a table of `k` per stratum cut to the known records of each
#' stratum), `vars`, `strata` and `format`. For other
#' releases pass `mask`, e.g. for (k, epsilon) anonymisation, whose release is shuffled:
#' `function(d) { r <- anonymise_keps_with_key(d, ..., epsilon = 8); r$data[order(r$origin_row), ] }`
#' (with `original` aligned to the release the same way).
#' The known records are drawn with R's random number generator (`seed`).
#'
#' @section What it measures and what it does not:
#' It measures re-identification of the known records by an intruder who knows the
#' algorithm, its settings and their original values, and who links by distance after
#' the replay. It does not cover smarter uses of the same knowledge (e.g. solving for the
#' unknown records), other background knowledge, or attribute disclosure. A low rate is
#' not a proof of safety.
#'
#' @inheritParams risk_linkage
#' @param mask The intruder's replay of the masking: a function of a data frame returning
#'   its masked version with rows in the same order, or `NULL` to read it from the release
#'   (see the section The replay).
#' @param p Shares of the original records the intruder knows: numbers in (0, 1].
#' @param seed Seed for R's random number generator, which draws the known records (and
#'   the replay's own random numbers); `NULL` uses the current stream.
#' @return An object of class `detanon_replay`: a list with `by_p` (a data frame: `p`,
#'   `n_known`, `rate` (expected share of the known records whose nearest released record
#'   is their own), `n_linked`, `rate_m` and `n_linked_m` (the same for the own record
#'   among the `m` nearest), `reid` (their mean expected re-identification probability,
#'   as in [risk_linkage()]), `blind_rate` and `blind_rate_m`), `m`, `vars`, `strata` and
#'   `n`. As in [risk_linkage()] and the attacks, `rate` is the nearest-neighbour link
#'   whatever `m`.
#' @seealso [risk_linkage()], [assess()].
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' risk_replay(d, masked, seed = 1)
#' @family measures
#' @export
risk_replay <- function(original, masked, vars = NULL, strata = NULL, mask = NULL,
                        p = c(1, 0.5, 0.1), m = 1,
                        nthreads = getOption("detanon.nthreads", 1L), seed = NULL) {
  s <- linkage_setup(original, masked, vars, strata)
  if (!is.null(mask) && !is.function(mask)) {
    stop_arg("`mask` must be NULL or a function of a data frame that returns its masked ",
             "version, not ", show_value(mask), ".")
  }
  if (!is.numeric(p) || !length(p) || anyNA(p) || any(p <= 0 | p > 1) || anyDuplicated(p)) {
    stop_arg("`p` must be distinct shares in (0, 1], such as c(1, 0.5, 0.1), not ",
             if (is.numeric(p) && length(p) > 1L) paste0("c(", paste(format(p), collapse = ", "), ")")
             else show_value(p), ".")
  }
  m <- check_whole(m, "m", min = 1)
  nthreads <- check_nthreads(nthreads)
  if (!is.null(seed)) seed <- check_whole(seed, "seed", min = -.Machine$integer.max)
  given <- !is.null(mask)
  if (!given) mask <- replay_mask(current_release(masked, "masked"))
  n <- s$n
  with_seed(seed, {
    res <- lapply(p, function(pp) {
      known <- if (pp == 1) seq_len(n) else sort(sample.int(n, max(1L, round(pp * n))))
      replayed <- replay_run(mask, original, known, s, pp, given)
      zq <- matrix(0, n, ncol(s$zm))
      zq[known, ] <- replayed
      want <- logical(n)
      want[known] <- TRUE
      ranks <- link_ranks(s, s$zm, zq, want, m, nthreads)[known, , drop = FALSE]
      share <- top_m_share(ranks, 1)
      share_m <- top_m_share(ranks, m)
      size <- s$sizes[s$id[known]]
      data.frame(p = pp, n_known = length(known), rate = mean(share), n_linked = sum(share),
                 rate_m = mean(share_m), n_linked_m = sum(share_m),
                 reid = mean(1 / ranks[, 2L]), blind_rate = mean(1 / size), blind_rate_m = mean(pmin(m, size) / size))
    })
  })
  structure(list(by_p = do.call(rbind, res), m = m, vars = s$vars, strata = s$strata, n = n),
            class = "detanon_replay")
}

#' @export
print.detanon_replay <- function(x, ...) {
  cat(strwrap(sprintf(paste0("Replay attack on %s%s, %s: the intruder re-runs the masking on a share p ",
                             "of the originals and links each replayed record to the %s released record%s"),
                      paste(x$vars, collapse = ", "),
                      if (length(x$strata)) paste0(" within ", paste(x$strata, collapse = " x ")) else "",
                      plural(x$n, "record"), if (x$m == 1L) "nearest" else paste(x$m, "nearest"),
                      if (x$m == 1L) "" else "s"), width = 78, exdent = 2), sep = "\n")
  show <- if (x$m == 1L) setdiff(names(x$by_p), c("rate_m", "n_linked_m", "blind_rate_m")) else names(x$by_p)
  print(x$by_p[show], row.names = FALSE, digits = 3)
  invisible(x)
}

# ---- shared steps of the linking attacks ---------------------------------------------

# Validate a pair for a linking attack and put both on the z-scale of `original`, or on
# `scale` (global_scale() of all the original records, when the pair is a group of their
# strata: risk_partitioned()).
linkage_setup <- function(original, masked, vars, strata, scale = NULL) {
  vars <- check_pair(original, masked, vars, strata = strata)
  if (is.null(strata)) strata <- attr(vars, "strata")
  vars <- as.vector(vars)
  strata <- check_columns(strata, original, "strata")
  check_columns(strata, masked, "strata")
  both <- intersect(strata, vars)
  if (length(both)) stop_arg("Columns cannot be in both `vars` and `strata`: ", quote_names(both), ".", kind = "column")
  check_strata_columns(original, strata)
  for (v in strata) {
    if (!identical(as.vector(original[[v]]), as.vector(masked[[v]])) &&
        !identical(as.character(original[[v]]), as.character(masked[[v]]))) {
      stop_arg("`strata` column `", v, "` differs between `original` and `masked`; the linking ",
               "model needs the categorical variables released unchanged (same rows, same order).", kind = "column")
    }
  }
  n <- nrow(original)
  sc <- if (is.null(scale)) column_scale(numeric_matrix(original, vars)) else scale_columns(scale, vars)
  # no variable carries information: every record of a stratum is equally near
  z <- function(m) if (any(sc$keep)) z_scores(m, sc) else matrix(0, nrow(m), 1L)
  check_no_clash(strata, c("n", "rate", "rate_m", "blind_rate", "blind_rate_m", "reid"), "strata")
  df <- as.data.frame(original, stringsAsFactors = FALSE)
  id <- stratum_ids(df, strata)
  n_strata <- max(c(0L, id))
  sizes <- tabulate(id, n_strata)
  by <- if (length(strata)) df[match(seq_len(n_strata), id), strata, drop = FALSE]
        else data.frame(row.names = seq_len(n_strata))
  rownames(by) <- NULL
  list(vars = vars, strata = strata, n = n, zo = z(numeric_matrix(original, vars)),
       # the variables that are columns of the z-scale (a constant one carries no information)
       z_vars = vars[sc$keep],
       zm = z(numeric_matrix(masked, vars)),
       z = z, id = id, sizes = sizes, by = by,
       order = as.integer(order(id, method = "radix")), offsets = as.integer(c(0L, cumsum(sizes))))
}

# For every row with want[i]: the number of tree points (rows of zt in its stratum)
# strictly closer to its query point zq[i, ] than its own point zt[i, ] (counted up to
# `cap`), and the number at most as close. An n x 2 matrix, NA for the other rows.
# `index`: the rank_index() of zt, when the caller keeps one (tune_release()).
link_ranks <- function(s, zt, zq, want, cap, nthreads, index = rank_index(zt, s)) {
  if (!s$n) return(matrix(numeric(), 0L, 2L))
  show <- show_progress(sum(want) * 4)
  with_progress(show, .Call(C_ffi_index_rank, index, zq, want, as.double(cap), nthreads, show, FALSE))
}

# One kd-tree per stratum over the rows of z (grouped by s$order and s$offsets), kept in
# R vectors: build once, query with link_ranks() or the adaptive kernel as often as needed.
rank_index <- function(z, s) .Call(C_ffi_rank_index, z, s$order, s$offsets)

# Expected share of a top-m link from the ranks: the own point is one of t = le - lt
# points at its distance, taken in random order after the lt nearer ones.
top_m_share <- function(ranks, m) {
  lt <- ranks[, 1L]
  le <- ranks[, 2L]
  share <- as.double(pmin(1, (m - lt) / (le - lt)))
  share[lt >= m] <- 0
  share
}

# Does the release record how it was made, by a method of the registry that the intruder
# can replay (method_registry())?
replay_known <- function(info) {
  inherits(info, "detanon_release") && !is.null(method_of_verb(info$verb)$replay)
}

# The replay of a release as recorded in its metadata (the `replay` of its method in the
# registry), or an error saying to pass `mask`. When the intruder's share is too small for
# the recorded strata (or for k), the replay pools the strata (and lowers k to the share's
# size), so that every known record is replayed.
replay_mask <- function(info) {
  if (!replay_known(info)) {
    verbs <- unique(unlist(lapply(method_registry(), function(m) if (!is.null(m$replay)) m$verb)))
    stop_arg("`masked` does not record how it was masked (it is not a current release of ",
             paste0(paste0(utils::head(verbs, -1L), "()", collapse = ", "), " or ", utils::tail(verbs, 1L), "()"),
             "); pass the intruder's replay as `mask`, a function of a data frame that returns its masked version.")
  }
  set <- info$settings
  replay <- method_of_verb(info$verb)$replay
  function(d) {
    k_tab <- if (is.data.frame(set$k)) set$k
    k <- min(if (is.null(k_tab)) set$k else k_tab$k, nrow(d))
    if (k < 2L) return(d) # one known record: a 1-point centroid is the record itself
    # the outlyingness rule needs a robust covariance, which a share of fewer than
    # nvars + 2 records cannot give: the intruder replays without it there
    w1 <- if (nrow(d) >= length(set$vars) + 2L) set$w1
    # strata too small for the share (or a singular covariance): the nearest replay that runs
    suppressMessages(suppressWarnings(tryCatch(
      replay(set, d, set$strata, k, k_tab, w1),
      error = function(e) tryCatch(replay(set, d, character(), k, k_tab, w1),
                                   error = function(e) replay(set, d, character(), k, k_tab, NULL))
    )))
  }
}

# Run the replay on the known rows; the replayed records on the z-scale of `original`.
replay_run <- function(mask, original, known, s, p, given = TRUE) {
  sub <- original[known, , drop = FALSE]
  out <- tryCatch(mask(sub), error = function(e) {
    stop_arg(if (given) "`mask`" else "The replay of the release's masking", " failed on the intruder's share p = ",
             format(p), " (", plural(length(known), "record"), "): ",
             sub("^[A-Za-z_.]+\\(\\): ", "", conditionMessage(e)), kind = if (given) "argument" else "data")
  })
  if (!is.data.frame(out) || nrow(out) != length(known) || !all(s$vars %in% names(out))) {
    stop_arg("`mask` must return a data frame with the rows of its input (in the same ",
             "order) and the columns ", quote_names(s$vars), "; for p = ", format(p),
             " it returned ", if (is.data.frame(out)) plural(nrow(out), "row") else class_label(out),
             " for ", plural(length(known), "record"), ".")
  }
  x <- numeric_matrix(out, s$vars)
  if (!all(is.finite(x))) {
    stop_arg("`mask` returned missing or infinite values in `vars` for p = ", format(p), ".")
  }
  s$z(x)
}

# Evaluate `expr` under set.seed(seed), restoring the caller's random stream; NULL: as is.
with_seed <- function(seed, expr) {
  if (is.null(seed)) return(expr)
  if (exists(".Random.seed", envir = globalenv(), inherits = FALSE)) {
    old <- get(".Random.seed", envir = globalenv(), inherits = FALSE)
    on.exit(assign(".Random.seed", old, envir = globalenv()))
  } else {
    on.exit(rm(".Random.seed", envir = globalenv()))
  }
  set.seed(seed)
  expr
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
