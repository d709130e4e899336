#' Stir the values inside clusters (section 4.2 of Rowe et al.)
#'
#' Inside every cluster, each variable of `vars` is either shuffled among the cluster's
#' records (equation 10) or flattened to the cluster's centroid (equation 9). Clusters
#' come from `strata`, from `classes` (e.g. [stir_clusters()], [equivalence_classes()], a
#' cluster id of your own), or both. Stirring can follow [anonymise()]: the masked values
#' (kNN centroids) are then shuffled or flattened inside the clusters.
#'
#' @section Methods:
#' * `"shuffle"` (equation 10): an independent, uniformly random permutation of each
#'   variable inside each cluster (a Fisher-Yates shuffle from R's random number
#'   generator: variables in order, clusters in their sorted order, positions from last to
#'   first, one `R_unif_index()` draw each, i.e. `sample.int(i, 1)`). It keeps each
#'   cluster's multiset of values of every variable exactly: its centroid, its
#'   distribution of distances to the centroid (the divergence of equation 10 is 0), its
#'   per-cluster marginals, hence every variable's overall marginal, mean and variance,
#'   and the cluster means. It destroys the relation between variables *inside* clusters
#'   (within-cluster correlations, and every link between a stirred value and the other
#'   columns of its record); only relations carried by the cluster means survive. Values
#'   are released exactly: a value is now someone else's in the same cluster.
#' * `"flatten"` (equation 9): every value becomes the cluster's centroid (a median member
#'   value for ordinal variables, the mode for nominal ones; see [blend_outliers()]). It
#'   keeps one value per cluster and destroys the within-cluster spread (variances shrink,
#'   distances to the centroid become 0). Deterministic. Categories that no cluster keeps
#'   are dropped from the factor levels.
#'
#' A reflection about the centroid (`2c - a`), which Rowe et al. also suggest, is not
#' offered: it keeps the distances to the centroid but is undone by anyone who reflects
#' the released values about the cluster's median, which the release still shows.
#'
#' The verbs are single-threaded: a release depends on the data, the arguments and the
#' random stream only.
#'
#' @section What it does and does not protect:
#' Stirring breaks the link between a record and *its own* values of `vars` within the
#' cluster: an intruder who finds a person's record by other means learns only values
#' of someone in the same cluster. It does not help when the intruder can still single
#' the record out by the columns that were not stirred (strata, other variables), nor
#' against attribute disclosure when a cluster's values are all alike, and a released
#' value is still a real value of some member (shuffle), so rare values stay visible.
#' Stirring only some of the variables that an intruder knows leaves the record linkable
#' by the others. A cluster of `m` records offers at best a 1 in `m` guess; clusters
#' smaller than `k` are refused or first blended into larger ones
#' (`small_strata = "merge"`, see [blend_outliers()]). Measure the result with
#' [assess()] or [risk_linkage()].
#'
#' @inheritParams blend_outliers
#' @param vars Columns to stir (any of the kinds of [distance_map()]), without missing
#'   values. Default: the numeric columns not in `strata`.
#' @param k Smallest cluster size stirred, a whole number >= 2.
#' @param method `"shuffle"` or `"flatten"` (see above).
#' @param small_strata What to do with clusters smaller than `k`: `"fail"` (an error) or
#'   `"merge"` (first [blend_outliers()] with `method = "member"`: their records are moved
#'   into larger clusters, changing `vars` and `strata` of the moved records; as
#'   `small_strata = "merge"` of [anonymise()] moves records of small strata). `"blend"`
#'   is the deprecated name of `"merge"`.
#' @return `data` with the stirred columns, in the same class and row order (rows are not
#'   reordered; nothing maps the released values back to their records), with an attribute
#'   `"detanon"` (see [release_info()]) recording the settings and the counts `n`,
#'   `n_clusters`, `min_size`, `n_moved` (records blended first) and `n_changed` (values
#'   that differ from the input).
#' @references Rowe et al., "Data anonymization by cluster stirring": anonymizing the data within a cluster (section 4.2,
#'   equations 9 and 10).
#' @family masking verbs
#' @examples
#' d <- titanic_paper()[-1]
#' s <- stir(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), seed = 1)
#' release_info(s)$counts
#' # the stratum means and variances are those of the original
#' aggregate(cbind(Age, Fare) ~ Pclass + Sex, data = s, FUN = mean)[1:3, ]
#' # after deterministic masking: shuffle the masked values inside the strata
#' m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
#' ms <- stir(m, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), seed = 1)
#' @section sdcMicro: `data` may be an `sdcMicroObj`; the result is then one too ([sdc_extract()]).
#' @export
stir <- function(data, vars = NULL, strata = NULL, classes = NULL, k = 3,
                 method = c("shuffle", "flatten"), small_strata = c("fail", "merge"), seed = NULL) {
  if (is_sdc(data)) return(sdc_verb(stir, data, match.call(), parent.frame())) # R/sdcmicro.R
  if (identical(small_strata, "blend")) {
    small_strata <- renamed_arg("merge", "small_strata = \"blend\"", "small_strata = \"merge\"")
  }
  # `vars` of any type: stir_encode() checks them
  f <- check_masking_args(data, vars, strata, k, method = method, small_strata = small_strata,
                          choices = list(method = c("shuffle", "flatten"), small_strata = c("fail", "merge")),
                          strata_default = character(), numeric = FALSE)
  stir_seed(seed)
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  enc <- stir_encode(df, c(f$strata, f$vars), stir_arg_names(f$strata, f$vars))
  cl <- stir_cluster_ids(df, f$strata, classes)
  C <- max(c(0L, cl))
  size <- tabulate(cl, C)
  n_moved <- 0L
  if (any(size < f$k)) {
    if (f$small_strata == "fail") {
      small <- size[size < f$k]
      stop_arg(plural(length(small), "cluster has", "clusters have"), " fewer than k = ", f$k,
               " records (", plural(sum(small), "record"), " in all); stirring them would ",
               "leave their values next to their owners. Use `small_strata = \"merge\"`, ",
               "lower `k`, or build larger clusters.", kind = "small_strata")
    }
    res <- blend_core(df, enc, cl, f$k, "member")
    blend_message(res$counts, f$k)
    df <- res$df
    cl <- match(res$cl, sort(unique(res$cl)))
    C <- max(cl)
    n_moved <- res$counts$n_moved
    enc <- stir_encode(df, c(f$strata, f$vars), stir_arg_names(f$strata, f$vars))
  }
  before <- df[f$vars]
  if (f$method == "shuffle") {
    src <- .Call(C_ffi_stir_shuffle, as.integer(cl), as.integer(C), length(f$vars))
    for (j in seq_along(f$vars)) df[[f$vars[j]]] <- df[[f$vars[j]]][src[, j]]
  } else {
    cen <- stir_centroids(enc$x[, f$vars, drop = FALSE], enc$nominal[match(f$vars, colnames(enc$x))], cl, C)
    for (j in seq_along(f$vars)) {
      df[[f$vars[j]]] <- drop_emptied_levels(df[[f$vars[j]]][cen$row[cl, j]], df[[f$vars[j]]])
    }
  }
  n_changed <- sum(vapply(f$vars, function(v) {
    a <- df[[v]]
    b <- before[[v]]
    if (is.factor(a)) sum(as.character(a) != as.character(b)) else sum(a != b)
  }, numeric(1)))
  for (v in f$vars) names(df[[v]]) <- NULL
  size <- tabulate(cl, C)
  as_release(as_release_frame(df, data), "stir",
             settings = list(vars = f$vars, strata = f$strata, k = f$k, method = f$method,
                             classes = if (is.null(classes)) NULL else "supplied",
                             small_strata = f$small_strata),
             counts = list(n = nrow(df), n_clusters = C, min_size = min(size),
                           n_moved = n_moved, n_changed = as.integer(n_changed)))
}
