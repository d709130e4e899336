#' MDAV microaggregation: shared group means within strata
#'
#' Masks the continuous variables by *shared* centroids, as sdcMicro's MDAV microaggregation
#' (maximum distance to average vector; Domingo-Ferrer and Mateo-Sanz 2002): every stratum
#' is partitioned into groups of `k` records, and every record is released as the mean of
#' its group.
#'
#' The steps:
#' 1. standardise every variable in `vars` to z-scores over the whole data (exact mean and
#'    SD, as [anonymise()]; a constant column is left out of the distances);
#' 2. stratify by `strata` (strata smaller than `k` as `small_strata` says);
#' 3. within each stratum, while at least `3k` records remain: `r`, the remaining record
#'    farthest from their centroid, and its `k - 1` nearest remaining records form a group;
#'    then `s`, the remaining record farthest from `r`, and its `k - 1` nearest form
#'    another. With `2k` to `3k - 1` records left, one more group around the record
#'    farthest from their centroid; the rest (`k` to `2k - 1` records) form the last group.
#'    A stratum of fewer than `2k` records is one group. Squared Euclidean distance;
#' 4. every record is released as its group's mean (on the original scale: the exact sum,
#'    rounded once, over the group's size), then in the release `format` of [anonymise()].
#'
#' Where no two distances tie and no records are equal, the groups are those of
#' `sdcMicro::microaggregation(method = "mdav")` on the same variables within one stratum
#' (sdcMicro standardises each stratum on its own; here the z-scale is that of the whole
#' data, the one scale every verb, measure and attack of the package uses, so within
#' several strata the groups can differ from sdcMicro's).
#'
#' @section Ties and determinism:
#' Nearest records are ordered by squared distance, then by the lexicographic order of
#' their z-coordinates; the farthest record is the one of largest squared distance, then
#' lexicographically smallest. Records equal in every variable are never split: when the
#' `k`-th nearest record of a group has copies left, they join the group (which then holds
#' more than `k` records), and when fewer than `k` records would be left after a group,
#' they join it. Centroids and group means are exact sums. So the groups are a function of
#' the records' values alone: the release is bit for bit the same for every `nthreads`,
#' and permuting the input rows only permutes the output.
#'
#' @section What it protects against, and what it does not:
#' Every released point is shared by at least `k` records of a stratum, so linking by
#' distance names a group, not a record: an attack that names one released record per
#' person, sharing ties at random, is right for about one record per group. The grouping
#' is deterministic and public: an intruder who holds the originals can recompute it
#' ([attack_recipe()] does, from the release's metadata), but recomputing it reveals only
#' the group, which the release shows anyway. It does not hide group membership from
#' someone who knows a person's values (the nearest released point is that person's
#' group), does not protect the `strata` columns or other released columns (split groups:
#' put such columns in `strata`), and a group of records with equal values releases that
#' value.
#'
#' @section Cost:
#' In C, on a kd-tree from which grouped records are removed, with the record farthest
#' from the centroid found by a scan in order of distance from a past centroid: 0.26 s of
#' CPU for 1e5 records and 3 variables in one stratum at `k = 3` (sdcMicro's MDAV: 45 s,
#' the same groups), 3.1 s for 1e6 records in 4 strata ([anonymise()]: 0.64 s), one thread
#' of a shared 2-core machine (`bench/mdav.R`). Strata, and the group means, run in parallel
#' with `nthreads`.
#'
#' @inheritParams anonymise
#' @param k The smallest group: every released point is shared by at least `k` records
#'   (whole number >= 2), or a table of `k` per stratum (the `strata` columns and a column
#'   `k`, as in [anonymise_adaptive()]; every stratum must then hold at least its `k`
#'   records, and `small_strata` does not apply).
#' @param noise If `TRUE`, every group mean gets the keyed noise of [anonymise_keyed()]
#'   (see its section Releasing the same people again), so that a second release of the
#'   same people with one person more or fewer does not give that person's values away;
#'   `FALSE` (the default here, sdcMicro's MDAV): exact group means. [tune_release()]
#'   releases MDAV with the noise by default.
#' @param key With `noise = TRUE`, the custodian's secret the noise is drawn from (as
#'   `key` of [anonymise_keyed()]; never stored or printed), or `NULL` to draw a secret from
#'   R's random number generator (`set.seed()` makes it reproducible). Ignored without
#'   noise.
#' @param format The release form of the masked values, as in [anonymise()]: `"natural"`
#'   (default), `"precision"` or `"none"`.
#' @return An object of the same class as `data` with the masked columns replaced, as
#'   [anonymise()] returns. Its release metadata ([release_info()]) hold the settings (`k`,
#'   `vars`, `strata`, `noise`, `na`, `small_strata`, `format`) and the counts (`n`, `n_strata`,
#'   `min_size`, `n_groups`, `min_group`, `max_group`, `n_suppressed`, `n_dropped`,
#'   `n_imputed`, `n_moved`); [risk_replay()] and [attack_recipe()] replay it from them.
#' @references Domingo-Ferrer J, Mateo-Sanz JM (2002). Practical data-oriented
#'   microaggregation for statistical disclosure control. *IEEE Transactions on Knowledge
#'   and Data Engineering* 14(1), 189-201.
#' @family masking verbs
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise_mdav(d, vars = c("Age", "Fare"),
#'                          strata = c("Pclass", "Sex", "Family"), k = 3)
#' release_info(masked)
#' @export
anonymise_mdav <- function(data, vars = NULL, strata = NULL, k = 3, noise = FALSE, key = NULL, format = NULL,
                           na = c("fail", "median", "mean", "median_stratum", "mean_stratum", "complete"),
                           small_strata = c("fail", "suppress", "merge"),
                           check_identifiers = TRUE, household = NULL,
                           nthreads = getOption("detanon.nthreads", 1L)) {
  if (is_sdc(data)) return(sdc_verb(anonymise_mdav, data, match.call(), parent.frame())) # R/sdcmicro.R
  if (!is.null(household)) return(household_verb(anonymise_mdav, data, household, match.call(), parent.frame()))
  # a table `k` is checked by adaptive_start_k()
  f <- check_masking_args(data, vars, strata, k, na = na, small_strata = small_strata,
                          choices = list(na = na_choices, small_strata = small_strata_choices), k_table = TRUE,
                          check_identifiers = check_identifiers, nthreads = nthreads)
  noise <- check_flag(noise, "noise")
  secret <- if (!is.null(key)) check_key(key)
  format <- check_format(format, "kdtree")
  table_k <- is.data.frame(f$k)
  # with a table, every stratum is checked against its own k below
  f <- mask_input(data, f, if (table_k) 1L else f$k)
  id <- match(f$id, sort(unique(f$id))) # the strata left, 1..S
  sizes <- tabulate(id)
  k_rows <- if (table_k) adaptive_start_k(f$k, f$df, f$strata, list(sizes = sizes, id = id)) else rep(f$k, length(id))
  k <- if (table_k) k_table_of(f$df, f$strata, list(sizes = sizes, id = id), k_rows) else f$k
  res <- mdav_mask(f$x, id, k_rows[match(seq_along(sizes), id)], f$nthreads)
  # the keyed noise of the group means (R/centroid_noise.R): from `key`, else from a secret
  # drawn from R's random stream
  if (noise) res$columns <- mdav_noise(f$x, res, if (is.null(secret)) noise_secret_from_rng() else secret)
  finish_release(f$df, data, f$vars, f$strata, res$columns, f$x, min(k_rows), format, f$check_identifiers,
                 keep = "masked", verb = "anonymise_mdav",
                 settings = list(k = k, vars = f$vars, strata = f$strata, noise = noise, na = f$na,
                                 small_strata = f$small_strata, format = format),
                 counts = c(list(n = nrow(f$df), n_strata = length(sizes), min_size = min(sizes),
                                 n_groups = length(res$size), min_group = min(res$size), max_group = max(res$size)),
                            f[policy_counts]), nthreads = f$nthreads)
}

# The masked columns of `res` (mdav_mask()) with the keyed noise of centroid_noise() on the
# group means of the columns that vary (the constant ones are copied).
mdav_noise <- function(x, res, secret) {
  cols <- which(!vapply(seq_len(ncol(x)), function(j) is_constant(x[, j]), NA))
  if (!length(cols)) return(res$columns)
  first <- match(seq_along(res$size), res$group)
  means <- matrix(vapply(cols, function(j) res$columns[[j]][first], numeric(length(first))), ncol = length(cols))
  noisy <- centroid_noise(x[, cols, drop = FALSE], res$group, means, secret)
  for (a in seq_along(cols)) res$columns[[cols[a]]] <- noisy[res$group, a]
  res$columns
}

# MDAV on a complete matrix x with stratum ids 1..S and k per stratum (src/mdav.c): the
# masked columns (group means on the x-scale), the group of every row and the group sizes.
mdav_mask <- function(x, id, k_strata, nthreads) {
  tiny <- pow2_normalise(x)
  x <- tiny$x
  storage.mode(x) <- "double"
  st <- column_scale(x)
  cols <- masked_columns(x, st)
  res <- method_registry()$mdav$kernel(x, cols, st$mean, st$sd, id, k_strata, nthreads)
  columns <- lapply(seq_len(ncol(x)), function(j) {
    v <- res$values[, j]
    if (tiny$e[j] != 0) times_pow2(v, -tiny$e[j]) else v
  })
  list(columns = columns, group = res$group, size = res$size)
}

# The kernel: the groups of the rows of x on the z-scores (x[, cols] - mean) / sd within
# the strata `id` (1..S) with k per stratum, and the exact means of every column of x.
mdav_groups <- function(x, cols, mean, sd, id, k_strata, nthreads) {
  show <- show_progress(nrow(x) * 2)
  with_progress(show, .Call(C_ffi_mdav, x, as.integer(cols), as.double(mean), as.double(sd), as.integer(id),
                            as.integer(k_strata), as.integer(nthreads), show))
}
