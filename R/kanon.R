#' Check k-anonymity of a set of key variables
#'
#' Groups the records by every combination of the `strata` (the quasi-identifiers, or
#' indirect identifiers) that occurs in the data, lists the equivalence classes with
#' fewer than `k` records, and gives a verdict: the data are k-anonymous on `strata` when
#' every class holds at least `k` records.
#'
#' k-anonymity protects against re-identification through the `strata` only: a person
#' known to be in the data and whose key values are known matches at least `k` records.
#' It does not protect variables outside `strata` (a rare value of an uncontrolled
#' variable can still single a record out), nor against attribute disclosure when all
#' records of a class share a sensitive value (see `sensitive` in [strata_table()]),
#' nor does it say anything about people outside the data.
#'
#' Missing values in a key form a value of their own (a conservative choice: an attacker
#' may know that the value is missing).
#'
#' @param data A data frame.
#' @param strata Character vector of the key columns (quasi-identifiers) whose
#'   combinations form the equivalence classes. Default: the factor, character and
#'   logical columns.
#' @param k The anonymity threshold, a whole number >= 1 (3 for the NHS "weak" and 5 for
#'   the "strong" k-anonymity of ISB 1523).
#' @param keys Deprecated name of `strata`.
#' @return An object of class `detanon_kanon`, a list with `k`, `strata`, `n` (records),
#'   `n_classes`, `min_size` (the smallest class; the data are `min_size`-anonymous),
#'   `small` (a data frame of the classes below `k`: the key values and `n`, smallest
#'   first), `n_small` (classes below `k`), `n_affected` and `share_affected` (records in
#'   those classes) and `conforms` (the verdict: every class has at least `k` records). `small` shows key combinations of rare
#'   records: it is a report for the data custodian, not something to release.
#' @examples
#' kanon_check(titanic_paper(), c("Pclass", "Sex", "Family"), k = 3)
#' @family checks
#' @export
kanon_check <- function(data, strata = NULL, k = 3, keys) {
  if (!missing(keys)) strata <- renamed_arg(keys, "keys", "strata", !missing(strata))
  check_data_frame(data, "data")
  strata <- check_columns(strata, data, "strata", default_strata(data))
  if (!length(strata)) stop_arg("`strata` is empty: name at least one key (quasi-identifier) column.")
  check_strata_columns(data, strata)
  k <- check_whole(k, "k", min = 1, max = .Machine$integer.max)
  check_no_clash(strata, "n", "strata")
  df <- as.data.frame(data)
  n <- nrow(df)
  id <- if (n) stratum_ids(df, strata) else integer()
  n_classes <- if (n) max(id) else 0L
  sizes <- tabulate(id, n_classes)
  small <- which(sizes < k)
  small <- small[order(sizes[small], small)]
  tab <- df[match(small, id), strata, drop = FALSE]
  rownames(tab) <- NULL
  tab$n <- sizes[small]
  n_affected <- sum(sizes[small])
  structure(list(
    k = k, strata = strata, n = n, n_classes = n_classes,
    min_size = if (n_classes) min(sizes) else 0L,
    small = tab, n_small = length(small),
    n_affected = n_affected, share_affected = if (n) n_affected / n else 0,
    conforms = n > 0L && !length(small)
  ), class = "detanon_kanon")
}

#' @export
print.detanon_kanon <- function(x, ...) {
  cat(sprintf("k-anonymity check on %s with k = %d\n", paste(x$strata, collapse = ", "), x$k))
  cat(sprintf("  %d records in %d equivalence classes; smallest class %d\n",
              x$n, x$n_classes, x$min_size))
  if (x$conforms) {
    cat(sprintf("  verdict: %d-anonymous (every class has >= %d records)\n", x$k, x$k))
  } else if (x$n == 0L) {
    cat("  verdict: no records to check\n")
  } else {
    cat(sprintf("  verdict: NOT %d-anonymous: %s below k %s %s (%.1f%%)\n",
                x$k, plural(x$n_small, "class", "classes"), plural(x$n_small, "holds", "hold", count = FALSE),
                plural(x$n_affected, "record"), 100 * x$share_affected))
    print(utils::head(x$small, 20L), row.names = FALSE)
    if (x$n_small > 20L) cat(sprintf("  ... and %d more classes\n", x$n_small - 20L))
  }
  invisible(x)
}
