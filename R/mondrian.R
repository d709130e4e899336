#' Equivalence classes by strata and Mondrian partitioning
#'
#' Groups the records into equivalence classes of at least `k` records, as step 5 of the
#' (k, epsilon)-anonymity workflow (Algorithm 1 of Holohan et al. 2017) needs before
#' noise is added inside each class by [anonymise_keps()]. The classes are the
#' combinations of the categorical `strata` (which must then be k-anonymous), each cut
#' further by strict multidimensional Mondrian partitioning (LeFevre, DeWitt and
#' Ramakrishnan 2006) on the numeric quasi-identifiers `quasi`.
#'
#' @section Mondrian rule:
#' Inside a stratum, a partition with at least `2k` records is cut on the `quasi` column
#' with the widest normalised range (range in the partition divided by the range over
#' all records; ties go to the column listed first) at its lower median `m`, the value of
#' rank `floor((size - 1) / 2)` counting from 0 in increasing order. The left part takes
#' the records with values `<= m`, the right part those `> m` (strict partitioning: no
#' value is shared by both sides). A cut is allowed only if both parts keep at least
#' `k` records; otherwise the next widest column with a positive range is tried, and a
#' partition with no allowed cut is an equivalence class. Many ties at the median can
#' therefore stop the partitioning early (classes larger than `2k - 1`). The partition
#' depends on the values only, not on the row order. The C implementation is iterative
#' and uses expected linear-time median selection, O(n log n) overall for balanced cuts.
#'
#' @section Information loss:
#' The generalised range of a class on a quasi-identifier is `[min, max]` of its records.
#' Its numerical precision loss (section III-A of the seed paper) is the range width
#' divided by the width over all records; `precision` reports the record-weighted mean
#' per column (0 = no generalisation, 1 = the whole range).
#'
#' @section What it does not protect against:
#' k-anonymity limits re-identification by the quasi-identifiers listed; it does not
#' prevent attribute disclosure when a class shares one sensitive value (check with
#' [strata_table()]), nor linkage through variables left out of `quasi`/`strata`. The
#' returned object maps rows to classes and carries the class ranges; it is a working
#' object for the data custodian, not a release.
#'
#' @param data A data frame.
#' @param k Minimum class size, a whole number >= 2 and at most the number of records.
#' @param quasi Numeric quasi-identifier columns to partition by Mondrian. Default
#'   `character()`: the classes are the strata.
#' @param strata Categorical quasi-identifier columns; classes never mix their
#'   combinations. Default: the factor, character and logical columns not in `quasi`.
#'   Missing values form a level of their own.
#' @param small_strata `"fail"` (an error when a stratum has fewer than `k` records) or
#'   `"suppress"` (drop those records; their rows get class `NA`).
#' @return An object of class `detanon_classes`, a list with `class` (the class of each
#'   row of `data`, `NA` for suppressed rows; classes are numbered stratum by stratum in
#'   the order of their values), `classes` (a data frame with one row per class: `class`,
#'   `n`, the strata values, and for each quasi-identifier `lo_<q>`, `hi_<q>` and the
#'   precision loss `np_<q>`), `precision` (mean precision loss per quasi-identifier),
#'   `k`, `quasi`, `strata`, `n` (records classified), `n_classes`, `min_size` (the smallest
#'   class) and `n_suppressed` (records of strata smaller than `k`, suppressed).
#' @references LeFevre K, DeWitt DJ, Ramakrishnan R (2006). Mondrian multidimensional
#'   k-anonymity. *Proceedings of the 22nd International Conference on Data Engineering
#'   (ICDE)*, 25.
#'
#'   Holohan N, Antonatos S, Braghin S, Mac Aonghusa P (2017). (k, epsilon)-anonymity:
#'   k-anonymity with epsilon-differential privacy. arXiv:1710.01615.
#' @examples
#' set.seed(1)
#' d <- data.frame(age = sample(18:90, 200, TRUE), height = rnorm(200, 170, 10),
#'                 sex = sample(c("f", "m"), 200, TRUE))
#' ec <- equivalence_classes(d, k = 5, quasi = c("age", "height"), strata = "sex")
#' ec
#' head(ec$classes)
#' @family class builders
#' @export
equivalence_classes <- function(data, strata = NULL, quasi = NULL, k = 3,
                                small_strata = c("fail", "suppress")) {
  check_data_frame(data, "data")
  cols <- check_quasi_strata(data, quasi, strata)
  quasi <- cols$quasi
  strata <- cols$strata
  k <- check_whole(k, "k", min = 2)
  small_strata <- match_choice(small_strata, "small_strata")
  check_k_n(k, nrow(data))
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  if (length(quasi) && anyNA(df[quasi])) {
    stop_arg("`quasi` columns have missing values; impute them or drop those records first.", kind = "data")
  }
  ec <- classes_core(df, k, quasi, strata, small_strata)
  ec$class <- ec$row_class
  ec$row_class <- NULL
  ec$n <- sum(!is.na(ec$class))
  ec$n_classes <- nrow(ec$classes)
  ec$min_size <- if (nrow(ec$classes)) min(ec$classes$n) else 0L
  structure(unclass(ec)[c("class", "classes", "precision", "k", "quasi", "strata", "n", "n_classes",
                          "min_size", "n_suppressed")],
            class = "detanon_classes")
}

# Checked, complete data -> classes of the rows (NA for suppressed ones) and the class table.
classes_core <- function(df, k, quasi, strata, small_strata, progress = FALSE) {
  n <- nrow(df)
  id <- stratum_ids(df, strata)
  sizes <- tabulate(id, max(c(0L, id)))
  small <- which(sizes > 0L & sizes < k)
  keep <- rep(TRUE, n)
  if (length(small)) {
    if (small_strata == "fail") {
      stop_small_strata(df, id, sizes, small, strata, k, "`small_strata = \"suppress\"`")
    }
    keep <- !id %in% small
    inform_detanon("suppressed ", plural(sum(!keep), "record"), " in ",
                   plural(length(small), "stratum", "strata"), " smaller than k = ", k, ".", kind = "suppress")
  }
  if (!any(keep)) {
    stop_arg("No records are left (every stratum has fewer than k = ", k, " records). Lower `k` or coarsen `strata`.",
             kind = "data")
  }
  rows <- which(keep)
  sid <- match(id[rows], sort(unique(id[rows])))
  ord <- rows[order(sid, method = "radix")]
  offsets <- c(0, cumsum(tabulate(sid)))
  x <- numeric_matrix(df, quasi)
  rng <- if (length(quasi)) apply(x[rows, , drop = FALSE], 2L, function(v) diff(range(v))) else numeric()
  inv <- ifelse(rng > 0, 1 / rng, 0)
  res <- with_progress(progress, .Call(C_ffi_mondrian, x, ord, offsets, k, as.double(inv), progress))
  row_class <- rep(NA_integer_, n)
  row_class[rows] <- res$class[rows]
  n_classes <- length(res$size)
  first <- match(seq_len(n_classes), row_class)
  classes <- data.frame(class = seq_len(n_classes), n = res$size)
  if (length(strata)) {
    st <- df[first, strata, drop = FALSE]
    rownames(st) <- NULL
    classes <- cbind(classes, st)
  }
  precision <- stats::setNames(numeric(length(quasi)), quasi)
  for (j in seq_along(quasi)) {
    q <- quasi[j]
    classes[[paste0("lo_", q)]] <- res$lo[, j]
    classes[[paste0("hi_", q)]] <- res$hi[, j]
    np <- if (rng[j] > 0) (res$hi[, j] - res$lo[, j]) / rng[j] else rep(0, n_classes)
    classes[[paste0("np_", q)]] <- np
    precision[j] <- sum(np * res$size) / sum(res$size)
  }
  structure(list(row_class = row_class, classes = classes, precision = precision, k = k,
                 quasi = quasi, strata = strata, n_suppressed = sum(!keep)),
            class = "detanon_classes")
}

#' @export
print.detanon_classes <- function(x, ...) {
  sz <- x$classes$n
  cat(sprintf("%d equivalence classes (k = %d) of %d records; sizes %d to %d, mean %.1f\n",
              length(sz), x$k, sum(sz), min(sz), max(sz), mean(sz)))
  cat("  strata:", if (length(x$strata)) paste(x$strata, collapse = ", ") else "(none)", "\n")
  if (length(x$quasi)) {
    cat("  Mondrian on:", paste(x$quasi, collapse = ", "), "\n")
    cat("  mean precision loss:", paste0(names(x$precision), " ", format(round(x$precision, 4)),
                                         collapse = ", "), "\n")
  }
  if (x$n_suppressed > 0) cat(sprintf("  suppressed %d records in strata smaller than k\n", x$n_suppressed))
  invisible(x)
}
