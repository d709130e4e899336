#' Equivalence classes by Mondrian partitioning or optimal lattice anonymisation
#'
#' Groups the records into equivalence classes of at least `k` records, as step 5 of the
#' (k, epsilon)-anonymity workflow (Algorithm 1 of Holohan et al. 2017) needs before
#' noise is added inside each class by [anonymise_keps()]. Two algorithms, as in the
#' paper's experiments:
#'
#' * `method = "mondrian"` (local recoding): the classes are the combinations of the
#'   categorical `strata` (which must then be k-anonymous), each cut further by strict
#'   multidimensional Mondrian partitioning (LeFevre, DeWitt and Ramakrishnan 2006) on
#'   the numeric quasi-identifiers `quasi`.
#' * `method = "ola"` (global recoding): optimal lattice anonymisation (El Emam et al.
#'   2009). Every `quasi` column is generalised to one level of its hierarchy (see
#'   [hierarchy()]), the same level for all records; records in classes smaller than `k`
#'   are suppressed, at most a share `max_suppression` of them; among all combinations
#'   of levels that meet this, the one with the least information loss `loss` is chosen.
#'
#' @section Mondrian rule:
#' Inside a stratum, a partition with at least `2k` records is cut on the `quasi` column
#' with the widest normalised range (range in the partition divided by the range over
#' all records; ties go to the column listed first). Two cuts are candidates: at the
#' lower median `m` (the value of rank `floor((size - 1) / 2)` counting from 0 in
#' increasing order; left part `<= m`, right part `> m`) and at the upper median `u`
#' (rank `floor(size / 2)`; left part `< u`, right part `>= u`). They are the same cut
#' unless many records share the median value. A cut is allowed only if both parts keep
#' at least `k` records; of two allowed cuts the more balanced one is taken (exact ties:
#' the lower median). Reversing the coding of a column (`x` to `-x`, or swapping the
#' codes of a 0/1 variable) swaps the two candidates, so the classes do not depend on
#' the coding (up to those exact ties); with the lower median alone, a 0/1 column whose
#' larger code holds most records could never be cut. If neither cut is allowed the next
#' widest column with a positive range is tried, and a partition with no allowed cut is
#' an equivalence class. Ties at the median can still stop the partitioning early
#' (classes larger than `2k - 1`). The partition depends on the values only, not on the
#' row order. The C implementation is iterative and uses expected linear-time median
#' selection, O(n log n) overall for balanced cuts.
#'
#' @section OLA search:
#' The lattice has one node per combination of levels (the product of the hierarchies'
#' numbers of levels); `strata` are kept at their values (one level). A node is
#' k-anonymous when the records in its classes smaller than `k` are at most
#' `floor(max_suppression * n)`. Generalising a node merges classes, so the suppressed
#' count never grows: if a node is k-anonymous so are all its generalisations, and if it
#' is not, none of its specialisations is (predictive tagging, El Emam et al. 2009).
#' The loss is not monotone once suppression is allowed (a coarser node can suppress
#' fewer records and lose less), so the search is exact rather than stopping at the
#' k-minimal nodes: nodes are visited by increasing lower bound of their loss (the loss
#' with nothing suppressed, which suppression can only raise); a node tagged
#' non-anonymous is skipped without counting. Before a node of unknown status is counted,
#' a binary search up a chain of its generalisations (raising the columns in turn, as in
#' El Emam et al.'s search over generalisation strategies) settles its status: a node
#' found not k-anonymous tags all its specialisations at once. A node is counted (one
#' pass over the records in C, by dense counting on integer codes or hashing) only when
#' its bound is below the best loss so far, and the search stops at the first bound
#' above it. For
#' discernibility the bound is `n^2 / C` (Cauchy-Schwarz), `C` the most classes the node
#' can have (the product of its numbers of groups, or the classes of a counted
#' specialisation), and the sum of squared class sizes of any counted specialisation. Nodes
#' whose specialisation suppressed nothing are known exactly without counting. The
#' result is the node with least loss over all k-anonymous nodes; ties (losses within a
#' relative 1e-9) go to fewer suppressed records, then the lower node (smaller sum of
#' levels), then the smaller level at the first `quasi` column where they differ.
#'
#' Losses (`loss`), with suppressed records counted as fully generalised:
#' * `"precision"`: categorical precision (section III-A of Holohan et al.): a value
#'   at level `l` of a hierarchy with `h` levels loses `l / (h - 1)`; a suppressed record
#'   loses 1 on every column; the mean over records and lattice columns.
#' * `"discernibility"`: the sum of squared class sizes, plus `n` for every suppressed
#'   record (Bayardo and Agrawal 2005).
#' * `"entropy"`: non-uniform entropy, the mean over records of the sum over columns of
#'   `-log2 P(value | its generalised group)` (a suppressed record's group is all records).
#'
#' @section Information loss:
#' The generalised range of a class on a quasi-identifier is `[min, max]` of its records.
#' Its numerical precision loss (section III-A of Holohan et al. 2017) is the range width
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
#' @param quasi Quasi-identifier columns from which the classes are built: numeric
#'   columns cut by Mondrian (default `character()`: the classes are the strata), or for
#'   OLA columns of any atomic type generalised through `hierarchies` (default: the
#'   names of `hierarchies`).
#' @param strata Categorical quasi-identifier columns; classes never mix their
#'   combinations. Default: the factor, character and logical columns not in `quasi`.
#'   Missing values form a level of their own.
#' @param method `"mondrian"` or `"ola"`.
#' @param hierarchies OLA only: a named list with a [hierarchy()] (or a level table) for
#'   columns of `quasi`; a column without one gets the two levels value and `"*"`.
#' @param max_suppression OLA only: the largest share of records that may be suppressed,
#'   in `[0, 1]` (default 0.05, the paper's setting).
#' @param loss OLA only: the information loss minimised, `"precision"`,
#'   `"discernibility"` or `"entropy"` (see the OLA search section).
#' @param small_strata `"fail"` (an error when a stratum has fewer than `k` records) or
#'   `"suppress"` (drop those records; their rows get class `NA`).
#' @return An object of class `detanon_classes`, a list with `class` (the class of each
#'   row of `data`, `NA` for suppressed rows; classes are numbered stratum by stratum in
#'   the order of their values), `classes` (a data frame with one row per class: `class`,
#'   `n`, the strata values, and for each quasi-identifier `lo_<q>`, `hi_<q>` and the
#'   precision loss `np_<q>`; for OLA the generalised label of each quasi-identifier,
#'   named by the column), `precision` (mean precision loss per quasi-identifier:
#'   numerical for Mondrian, categorical for OLA), `k`, `quasi`, `strata`, `n` (records
#'   classified), `n_classes`, `min_size` (the smallest class), `n_suppressed` (records
#'   with class `NA`: strata smaller than `k`, or OLA's suppression) and `method`. OLA
#'   adds `levels` (the chosen level of each quasi-identifier, 0 = values), `level_names`,
#'   `loss` (named by the metric), `max_suppression`, `hierarchies` and `lattice`
#'   (`n_nodes`, `n_evaluated`: nodes counted in C, `n_tagged`: nodes whose k-anonymity
#'   was inferred without counting).
#' @references El Emam K, Dankar FK, Issa R, Jonker E, Amyot D, Cogo E, Corriveau J-P,
#'   Walker M, Chowdhury S, Vaillancourt R, Roffey T, Bottomley J (2009). A globally
#'   optimal k-anonymity method for the de-identification of health data. *Journal of the
#'   American Medical Informatics Association*, 16(5), 670-682.
#'
#'   Bayardo RJ, Agrawal R (2005). Data privacy through optimal k-anonymization.
#'   *Proceedings of the 21st International Conference on Data Engineering (ICDE)*, 217-228.
#'
#'   LeFevre K, DeWitt DJ, Ramakrishnan R (2006). Mondrian multidimensional
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
#' # OLA with a hierarchy for age (5- to 40-year bands, then "*")
#' h <- list(age = hierarchy_bands(d$age, width = 5, levels = 4))
#' ola <- equivalence_classes(d, strata = "sex", quasi = "age", k = 5, method = "ola",
#'                            hierarchies = h)
#' ola
#' @family class builders
#' @export
equivalence_classes <- function(data, strata = NULL, quasi = NULL, k = 3,
                                method = c("mondrian", "ola"), hierarchies = NULL,
                                max_suppression = 0.05,
                                loss = c("precision", "discernibility", "entropy"),
                                small_strata = c("fail", "suppress")) {
  check_data_frame(data, "data")
  method <- match_choice(method, "method")
  if (method == "mondrian") {
    if (!is.null(hierarchies)) {
      stop_arg("`hierarchies` apply to `method = \"ola\"` only; Mondrian cuts numeric `quasi` columns.")
    }
    cols <- check_quasi_strata(data, quasi, strata)
  } else {
    if (is.null(quasi) && is.list(hierarchies) && length(names(hierarchies))) quasi <- names(hierarchies)
    cols <- check_ola_columns(data, quasi, strata)
  }
  quasi <- cols$quasi
  strata <- cols$strata
  k <- check_whole(k, "k", min = 2)
  loss <- match_choice(loss, "loss")
  if (method == "ola") max_suppression <- check_number(max_suppression, "max_suppression", 0, 1)
  small_strata <- match_choice(small_strata, "small_strata")
  check_k_n(k, nrow(data))
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  if (length(quasi) && anyNA(df[quasi])) {
    stop_arg("`quasi` columns have missing values; impute them or drop those records first.", kind = "data")
  }
  if (method == "mondrian") {
    ec <- classes_core(df, k, quasi, strata, small_strata)
    ec$method <- "mondrian"
  } else {
    if (small_strata == "fail") {
      id <- stratum_ids(df, strata)
      sizes <- tabulate(id, max(c(0L, id)))
      small <- which(sizes > 0L & sizes < k)
      if (length(small)) stop_small_strata(df, id, sizes, small, strata, k, "`small_strata = \"suppress\"`")
    }
    ec <- ola_classes(df, k, quasi, strata, hierarchies, max_suppression, loss)
  }
  ec$class <- ec$row_class
  ec$row_class <- NULL
  ec$n <- sum(!is.na(ec$class))
  ec$n_classes <- nrow(ec$classes)
  ec$min_size <- if (nrow(ec$classes)) min(ec$classes$n) else 0L
  first <- c("class", "classes", "precision", "k", "quasi", "strata", "n", "n_classes", "min_size",
             "n_suppressed", "method")
  structure(unclass(ec)[c(first, setdiff(names(ec), first))], class = "detanon_classes")
}

# OLA: quasi-identifiers of any atomic type (generalised through hierarchies) and strata
# (kept); at least one quasi-identifier.
check_ola_columns <- function(data, quasi, strata) {
  quasi <- check_columns(quasi, data, "quasi", character())
  if (!length(quasi)) {
    stop_arg("`quasi` is empty: OLA needs quasi-identifiers to generalise (name them, or give ",
             "`hierarchies` named by column).")
  }
  check_strata_columns(data, quasi, "quasi")
  strata <- check_columns(strata, data, "strata", setdiff(default_strata(data), quasi))
  check_strata_columns(data, strata)
  both <- intersect(quasi, strata)
  if (length(both)) stop_arg("Columns cannot be in both `quasi` and `strata`: ", quote_names(both), ".")
  list(quasi = quasi, strata = strata)
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
  sz <- sz[sz > 0L]
  if (length(sz)) {
    cat(sprintf("%d equivalence classes (k = %d) of %d records; sizes %d to %d, mean %.1f\n",
                length(sz), x$k, sum(sz), min(sz), max(sz), mean(sz)))
  } else {
    cat(sprintf("No equivalence class (k = %d): every record is suppressed\n", x$k))
  }
  cat("  strata:", if (length(x$strata)) paste(x$strata, collapse = ", ") else "(none)", "\n")
  if (identical(x$method, "ola")) {
    cat(sprintf("  OLA (max suppression %g%%): %s\n", 100 * x$max_suppression,
                paste0(x$quasi, " at level ", x$levels, " (", x$level_names, ")", collapse = ", ")))
    cat(sprintf("  loss (%s): %s; %d of %d lattice nodes counted, %d tagged\n", names(x$loss),
                format(signif(x$loss, 5)), x$lattice$n_evaluated, x$lattice$n_nodes, x$lattice$n_tagged))
    if (x$n_suppressed > 0) cat(sprintf("  suppressed %s\n", plural(x$n_suppressed, "record")))
  } else {
    if (length(x$quasi)) {
      cat("  Mondrian on:", paste(x$quasi, collapse = ", "), "\n")
      cat("  mean precision loss:", paste0(names(x$precision), " ", format(round(x$precision, 4)),
                                           collapse = ", "), "\n")
    }
    if (x$n_suppressed > 0) cat(sprintf("  suppressed %d records in strata smaller than k\n", x$n_suppressed))
  }
  invisible(x)
}
