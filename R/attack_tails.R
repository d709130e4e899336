#' The tails: re-identification of outlying records and recovery of extreme values
#'
#' The rates of the other attacks are averages over all records; the records that are
#' easiest to re-identify, and whose values tell most, sit in the sparse tails. Two
#' attacks measure them alone:
#' * `part = "outliers"`: the linkage original -> released of [attack_linkage()] (the
#'   intruder who holds a person's originals takes the nearest released record of the
#'   person's cell), on the most outlying records only: the `n_tail` records (default the
#'   larger of 10 and 1% of the records) farthest from their stratum's centre on the
#'   z-scale of the originals (Euclidean distance to the stratum's mean). The rate is the
#'   share of them re-identified (top-`m`: own record among the `m` nearest).
#' * `part = "extremes"`: the extreme values, the `n_extreme` (default 10) largest and
#'   smallest of every masked variable that is not constant: a value is recovered when the person's own released
#'   value is within `tolerance` of it (relative: `|released - x| <= tolerance * |x|`), as
#'   an intruder who knows that someone is the oldest, or the richest, and finds the
#'   released record (by the linkage above) reads it. The success of a record is the share
#'   of its extreme values recovered; the rate, the share of extreme values recovered (a
#'   record extreme in two variables counts once, with the mean of the two).
#'
#' The control is the battery's: the released rows permuted within strata (another
#' person's released record at the person's row).
#'
#' @section What it does not cover:
#' Tails in columns the intruder does not hold, and other attacks restricted to the tails
#' (the report of every attack gives its worst stratum, not its worst records).
#' @inheritParams risk_battery
#' @param part `"outliers"` or `"extremes"` (see above).
#' @param n_tail The number of outlying records (`part = "outliers"`), a whole number >= 1,
#'   or `NULL` for the larger of 10 and 1% of the records.
#' @param n_extreme The number of largest and of smallest values of each variable
#'   (`part = "extremes"`), a whole number >= 1.
#' @param tolerance The relative error within which a released value recovers an extreme
#'   one, a number in \[0, 1]; default 0.05.
#' @return An object of class `detanon_attack` (see [risk_battery()]); its `details` hold
#'   the rows of the records attacked (`tail_rows`).
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise_keyed(d, vars = c("Age", "Fare"),
#'                           strata = c("Pclass", "Sex", "Family"),
#'                           key = "a-secret-of-the-custodian-0f3c9", k = 2, size = 10)
#' attack_tails(d, masked, part = "outliers", seed = 1)
#' attack_tails(d, masked, part = "extremes", seed = 1)
#' @family attacks
#' @export
attack_tails <- function(original, masked, intruder = NULL, part = c("outliers", "extremes"), n_tail = NULL,
                         n_extreme = 10, tolerance = 0.05, m = 3, control = TRUE,
                         nthreads = getOption("detanon.nthreads", 1L), seed = NULL) {
  part <- match_choice(part, "part")
  if (!is.null(n_tail)) n_tail <- check_whole(n_tail, "n_tail", min = 1)
  n_extreme <- check_whole(n_extreme, "n_extreme", min = 1)
  tolerance <- check_number(tolerance, "tolerance", lower = 0, upper = 1)
  spec <- battery_attacks()[[paste0("tail_", part)]]
  args <- if (part == "outliers") list(n_tail = n_tail) else list(n_extreme = n_extreme, tolerance = tolerance)
  attack_verb(spec, args, original, masked, intruder, m, control, seed, nthreads)
}

# The registry entries of the two parts (battery_attacks()); `tail = TRUE` marks the
# attacks whose rates the `tail` limit of tune_release() bounds.
tail_outliers_spec <- function() {
  list(label = "linkage of the most outlying records (the tails)", fun = "attack_tails",
       args = list(n_tail = NULL), core = tail_outliers_core, needs_sensitive = FALSE, tail = TRUE)
}
tail_extremes_spec <- function() {
  list(label = "extreme values recovered within 5% (the tails)", fun = "attack_tails",
       args = list(n_extreme = 10, tolerance = 0.05), core = tail_extremes_core, needs_sensitive = FALSE,
       tail = TRUE)
}

# The `n_tail` rows farthest from their stratum's centre (mean of the z-scores), ties by
# row; the larger of 10 and 1% of the records when NULL (at most all).
outlying_rows <- function(s, n_tail = NULL) {
  n <- s$n
  if (is.null(n_tail)) n_tail <- max(10L, ceiling(n / 100))
  z <- s$zo
  ids <- sort(unique(s$id))
  centre <- rowsum(z, s$id, reorder = TRUE) / tabulate(s$id)[ids]
  dist <- sqrt(rowSums((z - centre[match(s$id, ids), , drop = FALSE])^2))
  sort(first_rows(-dist, min(n, n_tail)))
}

tail_outliers_core <- function(s, m, nthreads, n_tail = NULL, ...) {
  res <- linkage_core(s, direction = "original", m = m, nthreads = nthreads)
  rows <- outlying_rows(s, n_tail)
  off <- setdiff(seq_len(s$n), rows)
  for (f in c("success", "success_m", "confidence")) res[[f]][off] <- NA_real_
  res$tail_rows <- rows
  res$covers <- "re-identification (nearest linkage original -> released) of the most outlying records"
  res$not_covered <- "other attacks on the tails, tails in columns the intruder does not hold."
  res
}

# order(x, seq_along(x))[seq_len(k)] (k <= length(x)): the rows of the k smallest values,
# ties by row, from the rows at or below the k-th smallest value.
first_rows <- function(x, k) {
  if (k < 1L || anyNA(x)) return(order(x, seq_along(x))[seq_len(k)])
  cand <- which(x <= sort(x, partial = k)[k])
  cand[order(x[cand], cand)[seq_len(k)]]
}

tail_extremes_core <- function(s, n_extreme = 10, tolerance = 0.05, ...) {
  n <- s$n
  xo <- numeric_matrix(s$original, s$vars)
  xm <- numeric_matrix(s$masked, s$vars)
  hits <- counts <- numeric(n)
  k <- min(n, n_extreme)
  for (j in seq_along(s$vars)) {
    # a constant variable has no extreme values
    if (is_constant(xo[, j])) next
    ext <- unique(c(first_rows(-xo[, j], k), first_rows(xo[, j], k)))
    ext <- ext[s$known[ext]]
    counts[ext] <- counts[ext] + 1
    hits[ext] <- hits[ext] + (abs(xm[ext, j] - xo[ext, j]) <= tolerance * abs(xo[ext, j]))
  }
  success <- ifelse(counts > 0, hits / pmax(counts, 1), NA_real_)
  list(success = success, confidence = ifelse(counts > 0, 1, NA_real_), tail_rows = which(counts > 0),
       covers = "the largest and smallest values of every masked variable, read from the person's released record",
       not_covered = "tails in columns the intruder does not hold; values recovered by other means.")
}
