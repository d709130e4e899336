#' Move the records of too-small strata into the nearest large stratum
#'
#' Following section 4.1 of Rowe et al. ("moving samples to nearby clusters"), every
#' record of a stratum with fewer than `k` records is moved into the stratum of at least
#' `k` records that is nearest to it, and its `strata` values are set to those of that
#' stratum. Its other values (including the continuous `vars`) are kept; only the
#' categorical values that differ are changed.
#'
#' The distance between a record `o` and a large stratum `S` is
#' \deqn{d(o, S) = m(o, S) + \|z_o - c_S\|_2 / \sqrt{q}}{d(o, S) = m(o, S) + ||z_o - c_S|| / sqrt(q)}
#' where `m` is the number of `strata` variables on which `o` and `S` differ (a missing
#' value equals only a missing value), `z_o` the record's z-scores of the `q` non-constant
#' `vars` (standardised over all records), and `c_S` the mean z-scores of the stratum
#' (its centroid). The second term is the root-mean-square difference in standard
#' deviations, so a difference of one SD on every continuous variable weighs as much as
#' one changed category: records move to a stratum that changes as few categories as
#' possible, and among those to the one whose records are most alike. Ties go to the
#' stratum that comes first in the sorted order of the `strata` values, so the result
#' does not depend on the row order. Without `vars` only the mismatches count.
#'
#' Moving changes the moved records' categorical values: analyses by stratum see them in
#' the stratum they were moved to. The change is reported, never silent: one summary line
#' (a message of class `detanon_message_merge`) counts the moved records, the strata they
#' came from and the changed values of each `strata` variable; silence it with
#' `suppressMessages(..., classes = "detanon_message_merge")`. Moving protects the rare combinations by removing them
#' from the release; it does not add protection to the strata that receive the records.
#'
#' @param data A data frame.
#' @param vars Continuous columns used in the distance (default: the numeric columns not
#'   in `strata`; `character()` for none). They must have no missing or infinite values.
#' @param strata Categorical columns that define the strata (default: factor, character
#'   and logical columns).
#' @param k Minimum stratum size, a whole number >= 1.
#' @return The data, as the same class as `data`, same rows in the same order, with the
#'   moved records' `strata` values replaced, row names and factor levels left without
#'   records dropped (so the release does not show which rare combinations existed), and
#'   release metadata ([release_info()]):
#'   settings `k`, `vars`, `strata`; counts `n`, `n_strata`, `min_size` and `n_moved`
#'   (records moved to another stratum). A one-line message counts the moved records and
#'   the changed values of each `strata` variable (its field `changed`, a named integer
#'   vector). The message object (class `detanon_message_merge`) carries the table of
#'   moves in its field `moves`, which shows the rare combinations: a report for the
#'   custodian, not for release. One
#'   row per pair of original and new stratum, with the original values (`from_<var>`),
#'   the new values (`to_<var>`), `n` (records moved) and the smallest and largest
#'   distance (`d_min`, `d_max`); catch it with [withCallingHandlers()] (see the example).
#' @references Rowe et al.: moving samples to nearby clusters (section 4.1).
#' @seealso `small_strata = "merge"` in [anonymise()], which calls this before masking.
#' @family masking verbs
#' @examples
#' d <- titanic_paper()
#' merged <- merge_small_strata(d, vars = c("Age", "Fare"),
#'                              strata = c("Pclass", "Sex", "Family"), k = 50)
#' release_info(merged)
#' # keep the table of moves for the custodian's report
#' moves <- NULL
#' merged <- withCallingHandlers(
#'   merge_small_strata(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 50),
#'   detanon_message_merge = function(m) {
#'     moves <<- m$moves
#'     invokeRestart("muffleMessage")
#'   })
#' moves
#' @export
merge_small_strata <- function(data, vars = NULL, strata = NULL, k = 3) {
  check_data_frame(data, "data")
  strata <- check_columns(strata, data, "strata", default_strata(data))
  check_strata_columns(data, strata)
  vars <- check_columns(vars, data, "vars",
                        setdiff(default_vars(data), strata))
  k <- check_whole(k, "k", min = 1, max = .Machine$integer.max)
  if (length(vars)) {
    check_vars(data, vars, strata)
    bad <- vars[vapply(data[vars], anyNA, logical(1))]
    if (length(bad)) {
      stop_arg("`vars` have missing values (", quote_names(bad), "); impute them first or leave them out of `vars`.",
               kind = "data")
    }
  }
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  x <- numeric_matrix(df, vars)
  res <- merge_small(df, x, stratum_ids(df, strata), rep(TRUE, nrow(df)), k, strata)
  merge_message(res$moves, strata, k)
  sizes <- tabulate(res$id)
  as_release(as_release_frame(res$data, data), "merge_small_strata",
             settings = list(k = k, vars = vars, strata = strata),
             counts = list(n = nrow(df), n_strata = length(sizes), min_size = if (length(sizes)) min(sizes) else 0L,
                           n_moved = res$n_moved))
}

# Core of the merge on kept rows `keep`; `x` is a complete numeric matrix (rows of df).
# Returns the data with new strata values, new stratum ids (all rows) and the moves.
merge_small <- function(df, x, id, keep, k, strata) {
  sizes <- tabulate(id[keep], max(c(0L, id)))
  large <- which(sizes >= k)
  small <- which(sizes > 0L & sizes < k)
  empty_moves <- data.frame(n = integer(), d_min = numeric(), d_max = numeric())
  if (!length(small)) return(list(data = df, id = id, moves = empty_moves, n_moved = 0L))
  if (!length(large)) {
    stop_arg("No stratum has k = ", k, " or more records, so small strata cannot be merged into one. ",
             "Lower `k`, coarsen `strata` (e.g. generalise_strata()), or use fewer `strata` variables.",
             kind = "small_strata")
  }
  rows <- which(keep)
  # z-scores over the kept records, constant columns left out
  z <- matrix(0, length(rows), 0L)
  if (ncol(x)) {
    xs <- x[rows, , drop = FALSE]
    z <- z_scores(xs, column_scale(xs))
  }
  q <- ncol(z)
  idk <- id[rows]
  centre <- matrix(0, length(large), q)
  if (q) {
    members <- split(seq_along(idk), factor(idk, levels = large))
    for (i in seq_along(large)) centre[i, ] <- col_stats(z[members[[i]], , drop = FALSE])$mean
  }
  # categorical codes of each stratum's values (same coding as stratum_ids)
  codes <- vapply(strata, function(v) column_codes(df[[v]]), integer(nrow(df)))
  dim(codes) <- c(nrow(df), length(strata))
  first <- match(seq_len(max(id)), id)
  large_codes <- codes[first[large], , drop = FALSE]
  movers <- rows[idk %in% small]
  target <- integer(length(movers))
  dist <- numeric(length(movers))
  for (i in seq_along(movers)) {
    r <- movers[i]
    mism <- colSums(t(large_codes) != codes[r, ])
    d <- as.numeric(mism)
    if (q) {
      zr <- z[match(r, rows), ]
      d <- d + sqrt(colSums((t(centre) - zr)^2) / q)
    }
    best <- which(d == min(d))[1L] # large is sorted by stratum id: ties -> first stratum
    target[i] <- large[best]
    dist[i] <- d[best]
  }
  from <- id[movers]
  # one row per (from, to) pair, original values read before the move
  pair <- paste(from, target)
  up <- unique(pair)
  up <- up[order(from[match(up, pair)], target[match(up, pair)])]
  pi <- match(up, pair)
  moves <- data.frame(row.names = seq_along(up))
  for (v in strata) moves[[paste0("from_", v)]] <- df[[v]][first[from[pi]]]
  for (v in strata) moves[[paste0("to_", v)]] <- df[[v]][first[target[pi]]]
  fp <- factor(pair, levels = up)
  moves$n <- tabulate(fp, length(up))
  moves$d_min <- as.numeric(tapply(dist, fp, min))
  moves$d_max <- as.numeric(tapply(dist, fp, max))
  rownames(moves) <- NULL
  for (v in strata) df[[v]][movers] <- df[[v]][first[target]]
  list(data = df, id = stratum_ids(df, strata), moves = moves, n_moved = length(movers))
}

# One summary line, however many strata moved: how many records, from how many strata, and
# how many values of each `strata` variable were changed. The moves themselves (they show
# the rare combinations) are the field `moves` of the message, and `changed` the counts per
# variable.
merge_message <- function(moves, strata, k) {
  if (!nrow(moves)) return(invisible())
  same <- function(a, b) (is.na(a) & is.na(b)) | (!is.na(a) & !is.na(b) & as.character(a) == as.character(b))
  changed <- vapply(strata, function(v) {
    as.integer(sum(moves$n[!same(moves[[paste0("from_", v)]], moves[[paste0("to_", v)]])]))
  }, integer(1))
  n_from <- nrow(unique(moves[paste0("from_", strata)]))
  shown <- changed[changed > 0L]
  inform_detanon("moved ", plural(sum(moves$n), "record"), " of ", plural(n_from, "stratum", "strata"),
                 " smaller than k = ", k, " into the nearest larger stratum, changing ",
                 paste0("`", names(shown), "` of ", plural(shown, "record"), collapse = ", "),
                 "; the moves are the field `moves` of this message (class detanon_message_merge).",
                 kind = "merge", fields = list(moves = moves, changed = changed))
}
