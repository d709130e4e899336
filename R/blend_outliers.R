#' Blend outlying records into the nearest large cluster (section 4.1 of Rowe et al.)
#'
#' Clusters with fewer than `k` records (Rowe et al.'s `|C| <= m`, with `m = k - 1`) are too
#' easy to single out. Each of their records is moved into the cluster of at least `k`
#' records whose centroid is nearest (equation 4), and only the values that lie farther
#' from that centroid than every member's value are changed (equation 5).
#'
#' @section The steps:
#' 1. Clusters: the combinations of `strata`, the `classes` given (e.g. from
#'    [stir_clusters()] or [equivalence_classes()]), or `classes` within `strata`.
#' 2. Centroids (equation 3): per variable and cluster, the member value with the smallest
#'    summed distance to the members: the lower median for ordinal variables, the mode
#'    (ties: first level, first sorted string, `FALSE`) for nominal ones (see
#'    [distance_map()] for the kinds). Centroids are data values, never averages.
#' 3. Target (equation 4): the large cluster with the smallest sum over `vars` and `strata`
#'    of the mapped distances ([distance_map()] of `data`) between the record and the
#'    centroid; ties go to the cluster first in the sorted order of (strata values,
#'    classes), so the result does not depend on the row order.
#' 4. Change (equation 5): a value is replaced when its distance to the target's centroid
#'    exceeds the target's radius (the largest member-to-centroid distance). `strata`
#'    columns have radius 0 inside their clusters, so a moved record takes the strata
#'    values of its target. The replacement depends on `method`:
#'    * `"member"` (equation 8): the value of a member of the target drawn uniformly;
#'    * `"centroid"` (equation 7): the centroid value;
#'    * `"noise"` (equation 6): centroid plus noise, `c + s t`, where the distance `t` is
#'      drawn from the target's member-to-centroid distances (linear interpolation between
#'      their order statistics, `quantile(type = 7)` at a uniform draw) and the sign `s` is
#'      +1 or -1 with equal probability, flipped if the value would leave the range of the
#'      cluster's values; rounded for integer, `Date` and ordered-factor columns. A nominal
#'      variable has no "plus noise": it gets a member value as with `"member"`.
#'
#' Members of the target are its records before any move. Random draws use R's random
#' number generator (one or two uniforms per changed value, records in row order and
#' variables in order within a record), so `set.seed()` or `seed` reproduces a release.
#'
#' @section The divergence it keeps:
#' For every receiving cluster and variable, every added distance to the centroid (changed
#' or not) lies in `[0, D]`, `D` being the cluster's radius. The earth-mover (Wasserstein-1)
#' distance between the cluster's distance-to-centroid distribution before and after
#' adding `a` records to its `n` is therefore at most `a D / (n + a)`. The release
#' records the largest realised value of that distance divided by `D` (`emd_max`,
#' at most `a / (n + a)`); `"noise"` and `"member"` draw distances from the cluster's own
#' distribution and so keep it far lower than the bound, `"centroid"` adds distance 0 only.
#'
#' @section What it does and does not protect:
#' Blending removes the combinations that single a record out on the clustered variables;
#' the values it writes are those of the target cluster (or near its centroid). It does
#' not hide that a record's values were changed from anyone who knows the record's
#' original values, it leaves every value within the radius unchanged (possibly rare
#' combinations across variables not in `vars` or `strata`), and it adds no protection to
#' the records of the large clusters: combine with [stir()] or [anonymise()] for those.
#' Analyses by cluster see the moved records in their targets.
#'
#' @param data A data frame.
#' @param vars Columns that may be changed and enter the distance (numeric, integer,
#'   `Date`, ordered factor, factor, character or logical), without missing values.
#' @param strata Categorical columns whose combinations form the clusters (alone or with
#'   `classes`); they enter the distance and are changed like `vars`.
#' @param classes A cluster per record (a vector, or a `detanon_classes` object such as the
#'   result of [stir_clusters()] or [equivalence_classes()]), or `NULL`.
#' @param k Clusters with fewer than `k` records are moved, a whole number >= 2.
#' @param method `"member"`, `"centroid"` or `"noise"` (see above).
#' @param map A [distance_map()] of `data` covering `vars` and `strata`, or `NULL` to
#'   build it.
#' @param seed `NULL` (use the current random stream) or a seed for [set.seed()]; the
#'   caller's stream is restored afterwards.
#' @return `data` with the changed values, in the same class and row order, with an
#'   attribute `"detanon"` (see [release_info()]) recording the settings and the counts
#'   `n`, `n_clusters`, `n_small` (clusters below `k`), `n_moved` (records),
#'   `n_changed` (values), `n_changed_by_var` and `emd_max`. A message reports the moves.
#' @references Rowe et al., "Data anonymization by cluster stirring": moving samples to nearby clusters (section 4.1,
#'   equations 3 to 8).
#' @family masking verbs
#' @examples
#' d <- titanic_paper()[-1]
#' b <- blend_outliers(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
#'                     k = 20, method = "member", seed = 1)
#' release_info(b)$counts
#' @section sdcMicro: `data` may be an `sdcMicroObj`; the result is then one too ([sdc_extract()]).
#' @export
blend_outliers <- function(data, vars = NULL, strata = NULL, classes = NULL, k = 3,
                           method = c("member", "centroid", "noise"), map = NULL, seed = NULL) {
  if (is_sdc(data)) return(sdc_verb(blend_outliers, data, match.call(), parent.frame())) # R/sdcmicro.R
  # `vars` of any type: stir_encode() checks them
  f <- check_masking_args(data, vars, strata, k, method = method,
                          choices = list(method = c("member", "centroid", "noise")),
                          strata_default = character(), numeric = FALSE)
  stir_seed(seed)
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  dims <- c(f$strata, f$vars)
  enc <- stir_encode(df, dims, stir_arg_names(f$strata, f$vars))
  cl <- stir_cluster_ids(df, f$strata, classes)
  if (!is.null(map)) check_map(map, dims)
  res <- blend_core(df, enc, cl, f$k, f$method, map)
  blend_message(res$counts, f$k)
  as_release(as_release_frame(res$df, data), "blend_outliers",
             settings = list(vars = f$vars, strata = f$strata, k = f$k, method = f$method,
                             classes = if (is.null(classes)) NULL else "supplied"),
             counts = res$counts)
}

# The argument naming each column of c(strata, vars), for messages.
stir_arg_names <- function(strata, vars) rep(c("strata", "vars"), c(length(strata), length(vars)))

check_map <- function(map, dims) {
  if (!inherits(map, "detanon_distance_map") || !all(dims %in% map$vars)) {
    stop_arg("`map` must be a distance_map() of `data` covering ", quote_names(dims), ", not ",
             if (inherits(map, "detanon_distance_map")) paste("one of", quote_names(map$vars))
             else show_value(map), ".")
  }
  invisible(map)
}

# Equations 3-8 on the checked data frame `df`, encoded dims `enc`, clusters `cl`.
blend_core <- function(df, enc, cl, k, method, map = NULL) {
  n <- nrow(df)
  dims <- colnames(enc$x)
  C <- max(c(0L, cl))
  size <- tabulate(cl, C)
  small <- which(size < k)
  large <- which(size >= k)
  by_var <- stats::setNames(integer(length(dims)), dims)
  counts <- list(n = n, n_clusters = C, n_small = length(small), n_moved = 0L, n_changed = 0L,
                 n_changed_by_var = by_var, emd_max = 0)
  if (!length(small)) return(list(df = df, cl = cl, counts = counts))
  if (!length(large)) {
    stop_arg("no cluster has k = ", k, " or more records, so there is none to move the ",
             plural(n, "record"), " into. Lower `k` or build larger clusters.", kind = "small_strata")
  }
  if (is.null(map)) map <- build_distance_map(enc)
  cen <- stir_centroids(enc$x, enc$nominal, cl, C)
  d <- length(dims)
  xc <- matrix(enc$x[cbind(as.vector(cen$row), rep(seq_len(d), each = C))], C, d)
  movers <- which(cl %in% small)
  near <- .Call(C_ffi_stir_nearest, enc$x[movers, , drop = FALSE], xc[large, , drop = FALSE],
                as.integer(enc$nominal), map_knots(map, dims))
  target <- large[near$target]
  members <- split(seq_len(n), factor(cl, levels = seq_len(C)))
  xnew <- enc$x
  src <- matrix(NA_integer_, length(movers), d) # row to copy a value from, NA = computed
  changed <- matrix(FALSE, length(movers), d)
  for (i in seq_along(movers)) {
    r <- movers[i]
    t <- target[i]
    for (j in seq_len(d)) {
      a <- enc$x[r, j]
      cj <- xc[t, j]
      D <- cen$radius[t, j]
      dist <- if (enc$nominal[j]) as.numeric(a != cj) else abs(a - cj)
      if (!(dist > D)) next
      changed[i, j] <- TRUE
      mem <- members[[t]]
      if (method == "centroid") {
        src[i, j] <- cen$row[t, j]
      } else if (method == "member" || enc$nominal[j]) {
        src[i, j] <- mem[min(length(mem), 1L + floor(stats::runif(1L) * length(mem)))]
      } else {
        dm <- sort(abs(enc$x[mem, j] - cj))
        tt <- unname(stats::quantile(dm, stats::runif(1L), type = 7, names = FALSE))
        s <- if (stats::runif(1L) < 0.5) -1 else 1
        if (enc$kind[j] != "double") tt <- round(tt)
        lo <- min(enc$x[mem, j])
        hi <- max(enc$x[mem, j])
        v <- cj + s * tt
        if (v < lo || v > hi) v <- cj - s * tt
        xnew[r, j] <- v
      }
      if (!is.na(src[i, j])) xnew[r, j] <- enc$x[src[i, j], j]
    }
  }
  # write back in each column's own type
  for (j in seq_len(d)) {
    rows <- which(changed[, j])
    if (!length(rows)) next
    col <- df[[dims[j]]]
    from <- src[rows, j]
    copy <- !is.na(from)
    col[movers[rows[copy]]] <- col[from[copy]]
    if (any(!copy)) {
      v <- xnew[movers[rows[!copy]], j]
      col[movers[rows[!copy]]] <- switch(enc$kind[j],
                                         integer = as.integer(v),
                                         ordered = levels(col)[v],
                                         date = as.Date(v, origin = "1970-01-01"),
                                         v)
    }
    df[[dims[j]]] <- drop_emptied_levels(col, df[[dims[j]]])
  }
  cl[movers] <- target
  # earth-mover distance of each receiving cluster's distance-to-centroid distribution
  emd <- 0
  for (t in unique(target)) {
    added <- movers[target == t]
    for (j in seq_len(d)) {
      D <- cen$radius[t, j]
      if (D <= 0) next
      dist <- function(v) if (enc$nominal[j]) as.numeric(v != xc[t, j]) else abs(v - xc[t, j])
      before <- dist(enc$x[members[[t]], j])
      after <- c(before, dist(xnew[added, j]))
      emd <- max(emd, w1_distance(before, after) / D)
    }
  }
  by_var[] <- as.integer(colSums(changed))
  counts$n_moved <- length(movers)
  counts$n_changed <- as.integer(sum(changed))
  counts$n_changed_by_var <- by_var
  counts$emd_max <- emd
  list(df = df, cl = cl, counts = counts)
}

# Wasserstein-1 distance between the empirical distributions of a and b: the integral of
# |F_a - F_b| over the merged support.
w1_distance <- function(a, b) {
  u <- sort(unique(c(a, b)))
  if (length(u) < 2L) return(0)
  fa <- stats::ecdf(a)(u[-length(u)])
  fb <- stats::ecdf(b)(u[-length(u)])
  sum(abs(fa - fb) * diff(u))
}

blend_message <- function(counts, k) {
  if (!counts$n_small) return(invisible())
  ch <- counts$n_changed_by_var[counts$n_changed_by_var > 0]
  inform_detanon(sprintf("moved %s of %s smaller than k = %d into the nearest larger cluster; changed %s%s.",
                         plural(counts$n_moved, "record"), plural(counts$n_small, "cluster"), k,
                         plural(counts$n_changed, "value"),
                         if (length(ch)) paste0(" (", paste(names(ch), ch, collapse = ", "), ")") else ""),
                 kind = "merge")
}
