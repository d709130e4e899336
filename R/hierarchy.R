#' Generalisation hierarchies
#'
#' A generalisation hierarchy lists, for every value of one quasi-identifier, what it
#' becomes at each level of generalisation, from the value itself (level 0) to the
#' coarsest level (usually `"*"`, everything in one group). Optimal lattice
#' anonymisation ([equivalence_classes()] with `method = "ola"`) chooses one level per
#' quasi-identifier; the hierarchies define the search space (the lattice).
#'
#' * `hierarchy()` builds one from a level table: a data frame (or matrix) with one row
#'   per value and one column per level, finest first; the first column lists the values
#'   of the data column (each once). Category groupings are given this way, e.g. marital
#'   status -> "Alone"/"In marriage" -> `"*"`.
#' * `hierarchy_bands()` bands numbers (via [generalise_bands()]) in widths `width`,
#'   `2 * width`, `4 * width`, ... from a common `origin`, so every band lies inside one
#'   band of the next level (Table I of Holohan et al. 2017: year of birth, 2-, 4- and
#'   8-year intervals, `"*"`).
#' * `hierarchy_date()` goes from the date to the month and the year (via
#'   [generalise_date()]), then `"*"`.
#' * `hierarchy_postcode()` goes from the UK postcode to the district and the area (via
#'   [generalise_postcode()]), then `"*"`.
#'
#' Every hierarchy is validated: no missing labels, the values of level 0 are distinct,
#' and every level is a coarsening of the one below (each group of level `l` falls inside
#' one group of level `l + 1`). With `top = TRUE` a last level `"*"` is added unless the
#' last level already has a single group.
#'
#' Values are matched to the data by their text (`as.character()`), so a numeric column
#' and its hierarchy agree when both come from the same numbers.
#'
#' @param table A data frame or matrix: one row per value, one column per level from the
#'   values (first) to the coarsest grouping. Column names name the levels.
#' @param top Add a final level `"*"` (one group) if the last level has more than one.
#' @param x The values to build a hierarchy for (a data column); missing values are
#'   ignored (OLA needs complete quasi-identifiers).
#' @param width Width of the finest bands (> 0).
#' @param origin Lower limit of the first band of every level; default the largest
#'   multiple of the coarsest width at or below `min(x)`.
#' @param levels Number of band levels (each twice as wide as the one below).
#' @return An object of class `detanon_hierarchy`: a list with `table` (a data frame of
#'   character columns, one per level) and `n_groups` (groups per level). It prints the
#'   levels with their number of groups and a few rows.
#' @references Holohan N, Antonatos S, Braghin S, Mac Aonghusa P (2017).
#'   (k, epsilon)-anonymity: k-anonymity with epsilon-differential privacy.
#'   arXiv:1710.01615.
#' @family class builders
#' @examples
#' hierarchy(data.frame(value = c("Married", "Divorced", "Never-married"),
#'                      living = c("In marriage", "Alone", "Alone")))
#' hierarchy_bands(c(1950, 1961, 1967, 1982), width = 2, levels = 3)
#' hierarchy_date(as.Date(c("2012-03-14", "2013-11-02")))
#' hierarchy_postcode(c("LS1 4AP", "LS2 7EW", "M1 1AE"))
#' @export
hierarchy <- function(table, top = TRUE) {
  top <- check_flag(top, "top")
  if (is.matrix(table)) table <- as.data.frame(table, stringsAsFactors = FALSE)
  if (!is.data.frame(table) || !ncol(table) || !nrow(table)) {
    stop_arg("`table` must be a data frame or matrix with at least one row and one column ",
             "(values, then coarser levels), not ", show_value(table), ".")
  }
  tab <- as.data.frame(lapply(table, as.character), stringsAsFactors = FALSE)
  nm <- names(table)
  if (is.null(nm) || any(!nzchar(nm)) || anyNA(nm)) nm <- paste0("level", seq_along(tab) - 1L)
  names(tab) <- make.unique(nm)
  if (anyNA(tab)) {
    bad <- names(tab)[vapply(tab, anyNA, logical(1))]
    stop_arg("`table` has missing labels in ", quote_names(bad), "; every value needs a label at every level.")
  }
  if (anyDuplicated(tab[[1L]])) {
    stop_arg("`table` lists values more than once in its first column: ",
             quote_names(unique(tab[[1L]][duplicated(tab[[1L]])])), ".")
  }
  for (l in seq_len(ncol(tab) - 1L)) {
    # level l + 1 must be a function of level l
    groups <- split(tab[[l + 1L]], tab[[l]])
    bad <- names(groups)[lengths(lapply(groups, unique)) > 1L]
    if (length(bad)) {
      stop_arg("`table` level ", l, " (`", names(tab)[l + 1L], "`) is not a coarsening of level ",
               l - 1L, " (`", names(tab)[l], "`): ", quote_names(bad, max = 3L),
               " fall", if (length(bad) == 1L) "s" else "", " into several groups.")
    }
  }
  if (top && length(unique(tab[[ncol(tab)]])) > 1L) tab[["*"]] <- "*"
  new_hierarchy(tab)
}

new_hierarchy <- function(tab) {
  rownames(tab) <- NULL
  structure(list(table = tab, n_groups = vapply(tab, function(v) length(unique(v)), integer(1))),
            class = "detanon_hierarchy")
}

#' @rdname hierarchy
#' @export
hierarchy_bands <- function(x, width, origin = NULL, levels = 3) {
  if (!is.numeric(x) || is.factor(x)) stop_arg("`x` must be numeric, not ", class_label(x), ".")
  width <- check_number(width, "width", lower = 0, lower_open = TRUE)
  levels <- check_whole(levels, "levels", min = 1, max = 30)
  # values are matched to the data by their text: numbers with the same text (0.3 and
  # 0.1 + 0.2) are one value, banded as the number that text reads as
  u <- sort(unique(as.numeric(as.character(x[!is.na(x)]))))
  if (!length(u)) stop_arg("`x` has no non-missing values to build a hierarchy from.")
  if (any(!is.finite(u))) stop_arg("`x` contains Inf or NaN; set such values to NA first.")
  widest <- width * 2^(levels - 1L)
  if (!is.finite(widest) || !is.finite(u[length(u)] / widest)) {
    stop_arg("`width` * 2^(`levels` - 1), the widest band, overflows (", format(width), " * 2^",
             levels - 1L, "); lower `width` or `levels`.")
  }
  origin <- if (is.null(origin)) floor(u[1L] / widest) * widest else check_number(origin, "origin")
  if (u[1L] < origin) stop_arg("`x` has values below `origin` (", origin, "); lower `origin`.")
  tab <- data.frame(value = as.character(u), stringsAsFactors = FALSE)
  for (l in seq_len(levels)) {
    w <- width * 2^(l - 1L)
    tab[[paste0("width ", format(w))]] <- as.character(generalise_bands(u, width = w, origin = origin))
  }
  hierarchy(tab, top = TRUE)
}

#' @rdname hierarchy
#' @export
hierarchy_date <- function(x) {
  u <- unique(x[!is.na(x)])
  if (!length(u)) stop_arg("`x` has no non-missing values to build a hierarchy from.")
  month <- as.character(generalise_date(u, to = "month"))
  tab <- data.frame(value = as.character(u), month = month, year = substr(month, 1L, 4L),
                    stringsAsFactors = FALSE)
  hierarchy(tab[order(tab$value), ], top = TRUE)
}

#' @rdname hierarchy
#' @export
hierarchy_postcode <- function(x) {
  u <- unique(x[!is.na(x)])
  if (!length(u)) stop_arg("`x` has no non-missing values to build a hierarchy from.")
  district <- generalise_postcode(u, to = "district")
  tab <- data.frame(value = as.character(u), district = district,
                    area = sub("[0-9].*$", "", district), stringsAsFactors = FALSE)
  hierarchy(tab[order(tab$value), ], top = TRUE)
}

#' @export
print.detanon_hierarchy <- function(x, ...) {
  tab <- x$table
  cat(sprintf("Generalisation hierarchy: %d values, %d levels\n", nrow(tab), ncol(tab)))
  cat(paste0("  level ", seq_along(tab) - 1L, " `", names(tab), "`: ",
             vapply(x$n_groups, plural, "", "group"), collapse = "\n"), "\n", sep = "")
  shown <- utils::head(tab, 6L)
  print(shown, row.names = FALSE)
  if (nrow(tab) > 6L) cat(sprintf("  ... and %s\n", plural(nrow(tab) - 6L, "more value")))
  invisible(x)
}

# A hierarchy for every lattice column: the user's, a data frame turned into one, or the
# default (value, "*"); strata are columns with the single level 0.
lattice_hierarchies <- function(df, quasi, strata, hierarchies) {
  if (is.null(hierarchies)) hierarchies <- list()
  if (!is.list(hierarchies) || inherits(hierarchies, "detanon_hierarchy") ||
      (length(hierarchies) && (is.null(names(hierarchies)) || any(!nzchar(names(hierarchies)))))) {
    stop_arg("`hierarchies` must be a named list of hierarchies (see ?hierarchy), one per ",
             "column of `quasi`, not ", show_value(hierarchies), ".")
  }
  extra <- setdiff(names(hierarchies), quasi)
  if (length(extra)) {
    stop_arg("`hierarchies` names columns that are not in `quasi`: ", quote_names(extra), ".")
  }
  out <- list()
  for (q in quasi) {
    h <- hierarchies[[q]]
    if (is.null(h)) {
      u <- sort(unique(as.character(df[[q]])))
      h <- new_hierarchy(data.frame(value = u, "*" = "*", check.names = FALSE, stringsAsFactors = FALSE))
    } else if (is.data.frame(h) || is.matrix(h)) {
      h <- hierarchy(h)
    } else if (!inherits(h, "detanon_hierarchy")) {
      stop_arg("`hierarchies$", q, "` must be a hierarchy (see ?hierarchy) or a level table, not ",
               show_value(h), ".")
    }
    values <- as.character(df[[q]])
    miss <- setdiff(unique(values), h$table[[1L]])
    if (length(miss)) {
      stop_arg("`hierarchies$", q, "` has no entry for ", plural(length(miss), "value"), " of `", q,
               "`: ", quote_names(utils::head(miss, 6L)), ". Build it from the data column.")
    }
    out[[q]] <- h
  }
  for (s in strata) {
    u <- sort(unique(as.character(df[[s]])), na.last = TRUE)
    out[[s]] <- new_hierarchy(data.frame(value = u, stringsAsFactors = FALSE))
  }
  out
}
