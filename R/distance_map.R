#' Per-variable distances for mixed data, mapped onto a common Euclidean scale
#'
#' Section 3.2 of Rowe et al. needs one distance per variable, and needs those distances to
#' be comparable before they are summed (equation 4 of [blend_outliers()]). `distance_map()`
#' documents the metric of each kind of column and builds, for every variable, a monotone
#' map that carries its distribution of pairwise distances onto that of the Euclidean
#' reference. The map is returned so that it can be inspected (`$knots`) and reused.
#'
#' @section Metrics:
#' | column | distance \eqn{d^{(j)}(a, b)} |
#' | --- | --- |
#' | double, integer | \eqn{|a - b|} |
#' | `Date` | \eqn{|a - b|} in days |
#' | ordered factor | \eqn{|rank(a) - rank(b)|}, ranks = level positions |
#' | factor, character, logical | 0 if equal, else 1 |
#'
#' The first three kinds are *ordinal* (their centroid is a median element), the last is
#' *nominal* (its centroid is the mode). Missing and infinite values are not allowed.
#'
#' @section The mapping:
#' The reference is the distance between two independent standard normal values,
#' \eqn{|Z_1 - Z_2|}, whose quantile function is
#' \eqn{q_{ref}(p) = \sqrt 2\, \Phi^{-1}((1 + p) / 2)}. For each variable the pairwise
#' distances of a sample are tabulated and every distinct distance `u > 0` is mapped to
#' \eqn{q_{ref}(P(u))}, where \eqn{P(u) = P(D < u) + P(D = u) / 2} is its mid-distribution
#' value; distance 0 maps to 0. Between these knots the map is linear, beyond the last one
#' it continues the last segment. With more than `n_knots` distinct distances, `n_knots` of
#' them are kept, evenly spaced in `P`. A nominal variable has the single knot `u = 1`,
#' computed exactly from its value counts (pairs of distinct records); an ordinal variable
#' uses all pairs among at most `n_sample` of its sorted values taken at evenly spaced ranks
#' (all values when there are fewer), so the map depends on the values only, not on the row
#' order, and involves no random numbers. A standardised normal variable maps (nearly) onto
#' itself; a variable with a skewed or discrete distance distribution is stretched so that
#' its quantiles match the reference. The mapping is a quantile transformation of the
#' distance *distribution*, in the sense of equation (1); it is not an isometry and does not
#' make the mapped distances a metric in general.
#'
#' @param data A data frame.
#' @param vars Columns to map (numeric, integer, `Date`, ordered factor, factor, character
#'   or logical), without missing values.
#' @param n_sample Most values per ordinal variable whose pairwise distances are used, a
#'   whole number >= 2.
#' @param n_knots Most knots per variable, a whole number >= 2.
#' @return An object of class `detanon_distance_map`: a list with `vars`, `kind` (per
#'   variable: `"double"`, `"integer"`, `"date"`, `"ordered"`, `"factor"`, `"character"` or
#'   `"logical"`), `nominal` (logical per variable), `knots` (a data frame with one row per
#'   knot: `variable`, `distance`, `p` (the mid-distribution value) and `mapped`), and `n`.
#'   The knots are quantiles of pairwise distances: a working object for the custodian, not
#'   for release.
#' @references Rowe et al., "Data anonymization by cluster stirring": distance functions over non-Euclidean spaces
#'   (section 3.2).
#' @family class builders
#' @examples
#' d <- titanic_paper()
#' m <- distance_map(d, vars = c("Age", "Fare", "Sex", "Pclass"))
#' m
#' head(m$knots)
#' @export
distance_map <- function(data, vars, n_sample = 1000, n_knots = 256) {
  check_data_frame(data, "data")
  if (missing(vars)) {
    stop_arg("`vars` is missing: name the columns to map, e.g. `vars = c(\"", 
             paste(utils::head(names(data), 2L), collapse = "\", \""), "\")`.", kind = "column")
  }
  vars <- check_columns(vars, data, "vars")
  if (!length(vars)) stop_arg("`vars` is empty: name at least one column to map.")
  n_sample <- check_whole(n_sample, "n_sample", min = 2)
  n_knots <- check_whole(n_knots, "n_knots", min = 2)
  enc <- stir_encode(data, vars)
  if (nrow(data) < 2L) {
    stop_arg("`data` has ", plural(nrow(data), "record"), "; a distance distribution needs at least 2.",
             kind = "data")
  }
  build_distance_map(enc, n_sample, n_knots)
}

build_distance_map <- function(enc, n_sample = 1000L, n_knots = 256L) {
  vars <- colnames(enc$x)
  knots <- vector("list", length(vars))
  for (j in seq_along(vars)) {
    v <- enc$x[, j]
    if (enc$nominal[j]) {
      cnt <- tabulate(match(v, unique(v)))
      n <- length(v)
      p0 <- sum(as.double(cnt) * (cnt - 1)) / (as.double(n) * (n - 1))
      u <- if (p0 < 1) 1 else numeric()
      p <- if (p0 < 1) p0 + (1 - p0) / 2 else numeric()
    } else {
      s <- sort(v, method = "radix")
      if (length(s) > n_sample) s <- s[unique(round(seq(1, length(s), length.out = n_sample)))]
      # the distances |a - b| (never squared: no overflow above 1e154, no underflow of
      # 1e-200-scale values), counted in C without materialising the pairs; tiny columns
      # are first scaled exactly by a power of two, as in anonymise()
      e <- pow2_factors(matrix(s))
      if (e != 0) s <- times_pow2(s, e)
      if (!is.finite(s[length(s)] - s[1L])) {
        stop_arg("`vars` column `", vars[j], "` has values too large to handle (their range overflows); ",
                 "rescale it (e.g. divide by 1e6) first.", kind = "data")
      }
      res <- .Call(C_ffi_distmap_knots, as.double(s), n_knots)
      u <- res[[1L]]
      p <- res[[2L]]
      if (e != 0) u <- times_pow2(u, -e)
    }
    knots[[j]] <- data.frame(variable = rep(vars[j], length(u) + 1L), distance = c(0, u),
                             p = c(0, p), mapped = c(0, sqrt(2) * stats::qnorm((1 + p) / 2)))
  }
  structure(list(vars = vars, kind = enc$kind, nominal = enc$nominal,
                 knots = do.call(rbind, knots), n = nrow(enc$x)),
            class = "detanon_distance_map")
}

# The knots of each variable as list(x, y) in `vars` order, for the C kernel.
map_knots <- function(map, vars) {
  lapply(vars, function(v) {
    k <- map$knots[map$knots$variable == v, ]
    list(as.double(k$distance), as.double(k$mapped))
  })
}

#' @export
print.detanon_distance_map <- function(x, ...) {
  cat(sprintf("Distance map of %s onto the Euclidean reference |Z1 - Z2| (%s)\n",
              plural(length(x$vars), "variable"), plural(x$n, "record")))
  for (j in seq_along(x$vars)) {
    k <- x$knots[x$knots$variable == x$vars[j], ]
    metric <- if (x$nominal[j]) "0/1 mismatch" else if (x$kind[j] == "ordered") "|rank difference|"
              else if (x$kind[j] == "date") "|difference| in days" else "|difference|"
    med <- if (nrow(k) > 1L) {
      i <- which.min(abs(k$p - 0.5))
      sprintf("distance %s -> %s (p = %.2f)", format(signif(k$distance[i], 4)),
              format(signif(k$mapped[i], 4)), k$p[i])
    } else "all values equal"
    cat(sprintf("  %-12s %-9s %-22s %s\n", x$vars[j], x$kind[j], metric, med))
  }
  invisible(x)
}

# ---- shared helpers of the stirring verbs ------------------------------------------------

# Columns `vars` as an n x d double matrix of values (ordinal kinds) or codes (nominal).
# `arg`: the argument that named them, one for all or one per column (for the messages).
stir_encode <- function(data, vars, arg = "vars") {
  n <- nrow(data)
  x <- matrix(0, n, length(vars), dimnames = list(NULL, vars))
  kind <- character(length(vars))
  args <- rep_len(arg, length(vars))
  for (j in seq_along(vars)) {
    arg <- args[j]
    v <- data[[vars[j]]]
    kind[j] <- if (is.ordered(v)) "ordered" else if (is.factor(v)) "factor"
               else if (inherits(v, "Date")) "date" else if (is.logical(v)) "logical"
               else if (is.integer(v)) "integer" else if (is.double(v) && is.null(attributes(v))) "double"
               else if (is.character(v)) "character" else NA_character_
    if (is.na(kind[j]) || !is.null(dim(v))) {
      stop_arg("`", arg, "` column `", vars[j], "` must be numeric, integer, Date, factor, ordered factor, ",
               "character or logical, not ", class_label(v), ".", kind = "column")
    }
    # a missing stratum value (a key suppressed by tune_release()) is a stratum value of its own
    if (anyNA(v) && arg != "strata") {
      stop_arg("`", arg, "` column `", vars[j], "` has ", plural(sum(is.na(v)), "missing value"),
               "; impute them or drop those records first.", kind = "data")
    }
    x[, j] <- if (anyNA(v)) as.double(column_codes(v)) else switch(kind[j],
                     ordered = , factor = as.double(as.integer(v)),
                     character = as.double(match(v, sort_unique_radix(v))),
                     as.double(v))
    if (any(is.infinite(x[, j]))) {
      stop_arg("`", arg, "` column `", vars[j], "` has infinite values; replace or drop them first.",
               kind = "data")
    }
  }
  list(x = x, kind = kind, nominal = kind %in% c("factor", "character", "logical"))
}

# Cluster of each row, 1..C in the sorted order of (strata values, classes): from `strata`
# columns, a `classes` vector / detanon_classes object, or both (classes within strata).
stir_cluster_ids <- function(data, strata, classes) {
  n <- nrow(data)
  if (is.null(classes) && !length(strata)) {
    stop_arg("give the clusters: `strata` (categorical columns), `classes` (a class per record, ",
             "e.g. from stir_clusters() or equivalence_classes()), or both.")
  }
  # the columns by position, not by name: a user's column may carry any name
  parts <- lapply(strata, function(v) data[[v]])
  if (!is.null(classes)) {
    if (inherits(classes, "detanon_classes")) classes <- classes$class
    if (!is.atomic(classes) || !is.null(dim(classes)) || length(classes) != n) {
      stop_arg("`classes` must be a vector with one class per record (", n, "), or a ",
               "`detanon_classes` object for these records, not ", show_value(classes), ".")
    }
    if (anyNA(classes)) {
      stop_arg("`classes` has ", plural(sum(is.na(classes)), "missing class", "missing classes"),
               " (suppressed records?); drop those records from `data` and `classes` first.")
    }
    parts <- c(parts, list(classes))
  }
  combination_ids(parts)
}

# Centroids (equation 3) of clusters 1..C: the row holding each centroid value (C x d) and
# the largest member-to-centroid distance (C x d).
stir_centroids <- function(x, nominal, cl, C) {
  .Call(C_ffi_stir_centroids, x, as.integer(nominal), as.integer(cl), as.integer(C))
}

# A factor level that only the changed records had would show that they existed: drop the
# levels used in `old` and no longer in `new` (levels that were empty already are kept).
drop_emptied_levels <- function(new, old) {
  if (!is.factor(new)) return(new)
  gone <- setdiff(unique(as.character(old)), unique(as.character(new)))
  if (!length(gone)) return(new)
  factor(new, levels = setdiff(levels(new), gone), ordered = is.ordered(new))
}

# Run `expr`-style code under set.seed(seed), restoring the caller's stream afterwards.
stir_seed <- function(seed, envir = parent.frame()) {
  if (is.null(seed)) return(invisible(NULL))
  seed <- check_whole(seed, "seed", min = -.Machine$integer.max, max = .Machine$integer.max)
  if (exists(".Random.seed", envir = globalenv(), inherits = FALSE)) {
    old <- get(".Random.seed", envir = globalenv(), inherits = FALSE)
    do.call(on.exit, list(bquote(assign(".Random.seed", .(old), envir = globalenv())), add = TRUE),
            envir = envir)
  } else {
    do.call(on.exit, list(quote(rm(".Random.seed", envir = globalenv())), add = TRUE), envir = envir)
  }
  set.seed(seed)
  invisible(seed)
}
