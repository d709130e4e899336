#' Clusters of records within per-variable radii (equation 2 of Rowe et al.)
#'
#' Builds clusters in which every pair of records is within `radius[j]` of each other on every
#' variable `j` of `quasi` (equation 2; the distances of [distance_map()], unmapped, in each
#' variable's own units). Records that fit with no one form clusters of their own: they are
#' the outliers that [blend_outliers()] moves, and the clusters are what [stir()] stirs.
#'
#' @section Algorithm and tie order:
#' Equation (2) does not define a partition (a record may fit several groups), so the
#' clusters are built greedily, deterministically:
#' 1. the records are sorted by the strata (clusters never mix strata), then by the `quasi`
#'    columns in the order given (ordinal columns by value, nominal columns by their codes:
#'    factor levels, sorted strings, `FALSE` < `TRUE`), ties by row position;
#' 2. the first unassigned record in that order opens a cluster (its *leader*);
#' 3. every later unassigned record, in that order, joins the cluster if, on every ordinal
#'    variable, the cluster's range including it stays `<= radius[j]` (equivalently, all
#'    pairwise distances are `<= radius[j]`) and, on every nominal variable, it equals the
#'    leader (or `radius[j] >= 1`, when any value fits);
#' 4. repeat from 2 until every record is assigned. Clusters are numbered in the order they
#'    are opened.
#'
#' The clusters depend on the values only: rows that differ only in their position swap
#' clusters with each other, nothing else changes. Because of the sort, the scan of step 3
#' stops at the first record outside the leader's stratum, or outside the leader's radius
#' on the first ordinal `quasi` column (when the nominal columns before it have radius
#' < 1): put a column with a small radius first and the construction costs O(n w) for
#' windows of w records; a nominal first column with `radius >= 1` makes it O(n^2) per
#' stratum.
#'
#' @section What it does not do:
#' The clusters are not minimal in number and not optimal in any sense; a different column
#' order gives different clusters. A cluster is a group of similar records, not a
#' k-anonymous class: its size is whatever the data give (see `min_size`).
#'
#' @param data A data frame.
#' @param quasi Columns from which the clusters are built (numeric, integer, `Date`,
#'   ordered factor, factor, character or logical), without missing values.
#' @param strata Optional categorical columns; clusters never mix their combinations.
#' @param radius The radius of each `quasi` variable: one number >= 0 per variable (in the
#'   order of `quasi`, or named by them), in the variable's own units (days for dates,
#'   level steps for ordered factors; for nominal variables `radius < 1` means equal values).
#' @param eps Deprecated name of `radius` (`epsilon` is a privacy budget elsewhere in the
#'   package).
#' @return An object of class `c("detanon_clusters", "detanon_classes")`: a list with
#'   `class` (the cluster of each row), `classes` (a data frame with one row per cluster:
#'   `class`, `n`, and for each ordinal `quasi` column `lo_<q>` and `hi_<q>`), `radius`,
#'   `quasi`, `strata`, `n_classes`, `min_size`, `n_suppressed` (always 0) and `k` (`NA`).
#'   A working object for the custodian (its ranges describe small groups), not a release.
#' @references Rowe et al., "Data anonymization by cluster stirring", equation (2).
#' @family class builders
#' @examples
#' d <- titanic_paper()
#' cl <- stir_clusters(d, strata = c("Pclass", "Sex"), quasi = c("Age", "Fare"),
#'                     radius = c(Age = 10, Fare = 20))
#' cl
#' @export
stir_clusters <- function(data, strata = NULL, quasi = NULL, radius = NULL, eps) {
  check_data_frame(data, "data")
  if (!missing(eps)) radius <- renamed_arg(eps, "eps", "radius", !is.null(radius))
  quasi <- check_columns(quasi, data, "quasi")
  if (!length(quasi)) stop_arg("`quasi` is empty: name at least one column to cluster on.")
  strata <- check_columns(strata, data, "strata")
  if (length(intersect(quasi, strata))) {
    stop_arg("`quasi` and `strata` share ", quote_names(intersect(quasi, strata)),
             "; name each column in one of them.", kind = "column")
  }
  check_strata_columns(data, strata)
  if (is.null(radius) || !is.numeric(radius) || anyNA(radius) || any(!is.finite(radius)) || any(radius < 0) ||
      !length(radius) %in% c(1L, length(quasi)) || (length(radius) == 1L && length(quasi) > 1L)) {
    stop_arg("`radius` must be ", length(quasi), " finite number", if (length(quasi) > 1L) "s" else "",
              " >= 0, one per `quasi` column, not ", show_value(radius), ".")
  }
  if (!is.null(names(radius))) {
    if (!setequal(names(radius), quasi)) {
      stop_arg("the names of `radius` must be the `quasi` columns (", quote_names(quasi), "), not ",
               quote_names(names(radius)), ".")
    }
    radius <- radius[quasi]
  }
  enc <- stir_encode(data, quasi, "quasi")
  n <- nrow(data)
  if (!n) stop_arg("`data` has no records.", kind = "data")
  sid <- stratum_ids(data, strata)
  x <- cbind(.strata = as.double(sid), enc$x)
  nominal <- c(TRUE, enc$nominal)
  ord <- do.call(order, c(unname(as.data.frame(x)), list(method = "radix")))
  cl <- .Call(C_ffi_stir_clusters, x, as.integer(nominal), as.double(c(0, radius)), as.integer(ord))
  C <- max(cl)
  size <- tabulate(cl, C)
  classes <- data.frame(class = seq_len(C), n = size)
  precision <- stats::setNames(numeric(), character())
  for (j in which(!enc$nominal)) {
    q <- quasi[j]
    lo <- as.numeric(tapply(enc$x[, j], cl, min))
    hi <- as.numeric(tapply(enc$x[, j], cl, max))
    classes[[paste0("lo_", q)]] <- lo
    classes[[paste0("hi_", q)]] <- hi
    rng <- diff(range(enc$x[, j]))
    precision[q] <- if (rng > 0) sum((hi - lo) / rng * size) / n else 0
  }
  structure(list(class = cl, classes = classes, precision = precision, k = NA_integer_,
                 quasi = quasi, strata = strata, n_suppressed = 0L,
                 radius = stats::setNames(as.double(radius), quasi), n_classes = C, min_size = min(size)),
            class = c("detanon_clusters", "detanon_classes"))
}

#' @export
print.detanon_clusters <- function(x, ...) {
  sz <- x$classes$n
  cat(sprintf("%s of %s; sizes %d to %d, mean %.1f\n", plural(length(sz), "cluster"),
              plural(sum(sz), "record"), min(sz), max(sz), mean(sz)))
  cat(strwrap(paste0("radii: ", paste0(names(x$radius), " ", format(x$radius, trim = TRUE), collapse = ", ")),
              width = 78, indent = 2, exdent = 4), sep = "\n")
  cat("  strata:", if (length(x$strata)) paste(x$strata, collapse = ", ") else "(none)", "\n")
  tab <- tabulate(pmin(sz, 5L), 5L)
  cat(sprintf("  clusters of 1, 2, 3, 4, 5+ records: %s\n", paste(tab, collapse = ", ")))
  invisible(x)
}
