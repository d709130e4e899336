#' Differencing attack: two releases of the same people, one person more or fewer
#'
#' A custodian releases a cohort, and later releases it again with a person added or
#' withdrawn (same settings, same or a new key). An intruder with no background knowledge
#' differences the two releases: in every stratum (cell of the strata and categorical
#' keys the intruder holds, released unchanged in both) whose record count differs by
#' exactly one, the difference of the two releases' column sums of `vars` is its claim for
#' the values of the one person who came or went; where a stratum changed by more, a finer
#' cell (the strata and the categorical keys) that changed by one gives the claim. A release of exact shared centroids
#' ([anonymise_keyed()] or MDAV with `noise = FALSE`, sdcMicro's microaggregation) keeps
#' every stratum's sums, so the claim is exact; the keyed noise of the group means
#' (`noise = TRUE`, the default) puts the noise of every group that changed into it.
#'
#' The attacked records are the people of `original` that `previous_original` lacks (the
#' records of a multiset difference on the columns the two share): for each, the claim is
#' right (`success` 1) when its stratum's count differs by exactly one and every variable
#' of the claim is within `tolerance` of the person's value (relative: `|claim - x| <=
#' tolerance * |x|`); a person whose stratum gained more than one record is attacked and
#' missed (the difference is then the sum of several people). The confidence of a claim is
#' 1 in a stratum that differs by one, else 0. Records in both cohorts are not attacked
#' (`NA`). The people of `previous_original` that `original` lacks (a withdrawal, when
#' `previous` is the later release) are attacked the same way, with the difference the other
#' way round, and reported in `details` (`n_removed`, `removed_recovered`): pass the larger
#' cohort as `original` to have them in the rates.
#'
#' The control (`control = TRUE`) is the same claim without the other release: the mean of
#' the person's stratum in `masked`, right when within `tolerance` (what the release says
#' about anyone of the stratum).
#'
#' @section What it does not cover:
#' Differences of more than one person (a stratum that changed by two or more gives the
#' sum of their values, which this attack does not split), intruders who combine more than
#' two releases or hold background knowledge, and strata recoded between the releases.
#' @inheritParams risk_battery
#' @param previous Another release of the same cohort with some people more or fewer (made
#'   before or after `masked`), with the same columns.
#' @param previous_original The originals of `previous`, rows aligned with it (the
#'   custodian holds them): they tell who came and went, and their values.
#' @param tolerance The relative error within which a claimed value counts as recovered, a
#'   number in \[0, 1]; default 0.05.
#' @return An object of class `detanon_attack` (see [risk_battery()]); its `details` hold
#'   `tolerance`, `n_targets` (the people of `original` not in `previous_original`),
#'   `n_removed` and `removed_recovered` (those of `previous_original` not in `original`,
#'   and how many of them the difference recovers) and `claims` (per stratum that changed:
#'   the count difference and the claimed values).
#' @seealso [attack_composition()], [anonymise_keyed()] (its section Releasing the same
#'   people again).
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' key <- "a-secret-of-the-custodian-0f3c9"
#' rel <- function(x, noise) anonymise_keyed(x, vars = c("Age", "Fare"),
#'   strata = c("Pclass", "Sex", "Family"), key = key, noise = noise)
#' # the release of everyone, and the release after passenger 259 withdrew
#' attack_differencing(d, rel(d, FALSE), previous = rel(d[-259, ], FALSE),
#'                     previous_original = d[-259, ], control = FALSE)$rate
#' attack_differencing(d, rel(d, TRUE), previous = rel(d[-259, ], TRUE),
#'                     previous_original = d[-259, ], control = FALSE)$rate
#' @family attacks
#' @export
attack_differencing <- function(original, masked, previous, previous_original, intruder = NULL,
                                 tolerance = 0.05, control = TRUE,
                                 nthreads = getOption("detanon.nthreads", 1L), seed = NULL) {
  tolerance <- check_number(tolerance, "tolerance", lower = 0, upper = 1)
  prev <- check_previous(if (missing(previous)) NULL else previous,
                         if (missing(previous_original)) NULL else previous_original,
                         original, masked, need_original = TRUE)
  attack_verb(differencing_spec(), list(previous = prev$masked, previous_original = prev$original,
                                        tolerance = tolerance),
              original, masked, intruder, 1, control, seed, nthreads)
}

# The registry entry of the attack (battery_attacks()).
differencing_spec <- function() {
  list(label = "differencing two releases (one person more or fewer)", fun = "attack_differencing",
       args = list(tolerance = 0.05), core = differencing_core, needs_sensitive = FALSE,
       needs_previous = "both", control = "leave_out")
}

# `previous` (and its originals) checked against the pair: data frames with the columns of
# `masked` (of `original`). Returns list(masked, original); NULLs when `previous` is NULL
# and not needed.
check_previous <- function(previous, previous_original, original, masked, need_original) {
  if (is.null(previous)) stop_arg("`previous` must be another release of the same people (a data frame).")
  if (!is.data.frame(previous)) {
    stop_arg("`previous` must be another release of the same people (a data frame), not ",
             class_label(previous), ".")
  }
  miss <- setdiff(names(masked), names(previous))
  if (length(miss)) {
    stop_arg("`previous` lacks columns of `masked`: ", quote_names(miss), ".", kind = "column")
  }
  if (need_original || !is.null(previous_original)) {
    if (is.null(previous_original) || !is.data.frame(previous_original)) {
      stop_arg("`previous_original` must be the originals of `previous` (a data frame), not ",
               if (is.null(previous_original)) "NULL" else class_label(previous_original), ".")
    }
    if (nrow(previous_original) != nrow(previous)) {
      stop_arg("`previous_original` must have the rows of `previous` (", nrow(previous), "), not ",
               nrow(previous_original), ".")
    }
    miss <- setdiff(names(original), names(previous_original))
    if (length(miss)) {
      stop_arg("`previous_original` lacks columns of `original`: ", quote_names(miss), ".", kind = "column")
    }
  }
  list(masked = previous, original = previous_original)
}

# The cells of the intruder (strata and categorical keys, by their values as text) of two
# data frames together: integer ids, the first nrow(a) for a, the rest for b.
joint_cells <- function(a, b, cols) {
  if (!length(cols)) return(rep(1L, nrow(a) + nrow(b)))
  as_text <- function(d) {
    out <- lapply(as.list(d)[cols], as.character)
    as.data.frame(out, stringsAsFactors = FALSE, col.names = cols, optional = TRUE)
  }
  stratum_ids(rbind(as_text(a), as_text(b)), cols)
}

# The rows of `a` that are not in `b`, as a multiset on the columns `cols` (exact values):
# a logical vector over the rows of a.
multiset_extra <- function(a, b, cols) {
  key <- function(d) do.call(paste, c(lapply(d[cols], function(v) {
    if (is.double(v)) sprintf("%a", v) else as.character(v)
  }), sep = "\r"))
  ka <- key(a)
  kb <- key(b)
  # the j-th copy of a value in a is extra when b holds fewer than j copies
  nth <- stats::ave(seq_along(ka), ka, FUN = seq_along)
  have <- table(kb)
  nb <- as.vector(have[ka])
  nb[is.na(nb)] <- 0L
  nth > nb
}

differencing_core <- function(s, previous, previous_original, tolerance = 0.05, leave_out = FALSE, ...) {
  n <- s$n
  success <- confidence <- rep(NA_real_, n)
  vars <- s$vars
  cols <- c(s$strata, s$key_cat)
  original <- s$original
  common <- intersect(names(original), names(previous_original))
  added <- multiset_extra(original, previous_original, common)
  removed <- multiset_extra(previous_original, original, common)
  # the intruder's cells in both releases, and the count and sum differences: the strata
  # (whose sums a shared-centroid release keeps) and, finer, the strata with the categorical
  # keys (which separate two people who came or went in one stratum)
  xm <- numeric_matrix(s$masked, vars)
  xp <- numeric_matrix(previous, vars)
  diffs <- function(cols) {
    cell <- joint_cells(s$masked, previous, cols)
    cm <- cell[seq_len(n)]
    cp <- cell[n + seq_len(nrow(previous))]
    n_cells <- max(c(0L, cell))
    sum_by <- function(x, g) {
      out <- matrix(0, n_cells, ncol(x))
      if (nrow(x)) out[sort(unique(g)), ] <- rowsum(x, g, reorder = TRUE)
      out
    }
    list(cm = cm, cp = cp, dcount = tabulate(cm, n_cells) - tabulate(cp, n_cells),
         dsum = sum_by(xm, cm) - sum_by(xp, cp), mean = sum_by(xm, cm) / pmax(1L, tabulate(cm, n_cells)))
  }
  coarse <- diffs(s$strata)
  fine <- if (length(s$key_cat)) diffs(cols) else coarse
  # the claim about a person of cell (cm of `coarse`, cm of `fine`): NULL when neither differs by one
  claim_of <- function(a, b, sign = 1) {
    if (coarse$dcount[a] == sign) return(sign * coarse$dsum[a, ])
    if (fine$dcount[b] == sign) return(sign * fine$dsum[b, ])
    NULL
  }
  within <- function(claim, x) !is.null(claim) && all(abs(claim - x) <= tolerance * abs(x))
  xo <- numeric_matrix(original, vars)
  for (i in which(added & s$known)) {
    # the control: the mean of the person's cell in `masked` alone
    claim <- if (leave_out) coarse$mean[coarse$cm[i], ] else claim_of(coarse$cm[i], fine$cm[i])
    success[i] <- as.numeric(within(claim, xo[i, ]))
    confidence[i] <- as.numeric(!is.null(claim))
  }
  # the people who left: the difference the other way round, in their cells of `previous`
  # (previous_original's rows are aligned with it)
  gone <- which(removed)
  xg <- numeric_matrix(previous_original, vars)
  rec_gone <- vapply(gone, function(r) within(claim_of(coarse$cp[r], fine$cp[r], -1L), xg[r, ]), logical(1))
  changed <- which(coarse$dcount != 0L)
  claims <- data.frame(stratum = changed, count_difference = coarse$dcount[changed])
  for (j in seq_along(vars)) {
    claims[[vars[j]]] <- ifelse(abs(coarse$dcount[changed]) == 1L, coarse$dsum[changed, j] * coarse$dcount[changed],
                                NA_real_)
  }
  list(success = success, confidence = confidence, tolerance = tolerance,
       n_targets = sum(added), n_removed = length(gone), removed_recovered = sum(rec_gone),
       claims = if (leave_out) NULL else claims,
       covers = "people added to or withdrawn from a cohort released twice, by the difference of the sums",
       not_covered = paste("differences of more than one person per stratum, more than two releases,",
                           "background knowledge, strata recoded between the releases."))
}
