#' The masking methods of the package
#'
#' A named list describing the masking methods, in the order [tune_release()] searches them:
#' each entry has the method's `label`; `verb`, the exported function that makes its
#' releases; `kernel`, the function that masks whole strata (the records' values on the
#' z-scale of all the data in, the masked values out), or `NULL` for a method that does not
#' work stratum by stratum; `per_stratum`, whether [anonymise_partitioned()] and
#' [anonymise_db()] can run it (`why_not` says why not, or, for a method that runs, which of
#' its settings do not); `settings`, the settings a search
#' tries (see the section The search of [tune_release()]); `search`, whether it is a choice
#' of the `methods` of [tune_release()] (the (k, epsilon) candidates are asked for by
#' `keps_epsilon`); and `replay`, whether the intruder who knows the algorithm can make the
#' release again from the originals ([risk_replay()]; `no_replay` says why not).
#' @return A named list.
#' @family masking verbs
#' @examples
#' str(masking_methods()$mdav[c("verb", "per_stratum", "settings")])
#' names(Filter(function(m) m$per_stratum, masking_methods()))
#' @export
masking_methods <- function() {
  lapply(method_registry(), function(m) {
    list(label = m$label, verb = m$verb, kernel = m$kernel, per_stratum = !is.null(m$kernel),
         why_not = m$why_not, settings = m$settings, search = !isFALSE(m$choice),
         replay = !is.null(m$replay), no_replay = m$no_replay)
  })
}

# The registry itself: one entry per method, with what masking_methods() shows and the
# internal parts: `tune`, the family of tune_release() (a function of the search's context,
# the entry, the runs of the families before it and the key, returning its candidates and
# why it stopped), `needs` (families whose runs it reads), `legend` and `colour` (its
# candidates in plot.detanon_tuned()), `replay` (a function of the
# release's settings and the intruder's known records, returning their replayed release)
# `finish` ("step5": the kernel returns centroids on the z-scale, rescaled by step 5;
# "means": it returns group means on the scale of the data, released as they are) and
# `meta` (the settings and counts of the verb's metadata, from a partitioned run's
# statistics, finishing pass and shared counts); `plan`, for a method whose strata share a
# global quantity, a function of the statistics and of a map over the groups of whole strata
# (map(fun) returns fun(data, st, nthreads) of every group) returning the statistics with
# what the kernel needs.
method_registry <- function() {
  list(
    anonymise = list(label = "centroids of the k nearest neighbours, one k for every record",
                     verb = "anonymise", kernel = knn_kernel, finish = "step5", meta = knn_meta,
                     settings = list(k = c(3L, 5L, 10L, 20L)), tune = tune_fixed_k,
                     legend = "anonymise(k)", colour = "grey30",
                     replay = replay_knn),
    keps = list(label = "(k, epsilon): noise within equivalence classes, rows shuffled",
                verb = "anonymise_keps", choice = FALSE,
                why_not = "its classes are built by Mondrian over all records",
                settings = list(epsilon = "keps_epsilon"), tune = tune_keps,
                legend = "(k, epsilon)", colour = "darkgreen",
                no_replay = "its noise is drawn from R's random stream and its rows are shuffled"),
    stratum = list(label = "centroids of the k nearest neighbours, one k per stratum",
                   verb = "anonymise_adaptive", needs = "anonymise", kernel = stratum_kernel, finish = "step5",
                   meta = stratum_meta,
                   settings = list(k = c(3L, 5L, 10L, 20L, 40L, 80L, 160L)), tune = tune_per_stratum,
                   legend = "k per stratum", colour = "darkorange",
                   replay = replay_adaptive),
    adaptive = list(label = "centroids of k nearest neighbours, k grown per record",
                    verb = "anonymise_adaptive", kernel = adaptive_kernel, finish = "step5", meta = adaptive_meta,
                    plan = adaptive_plan,
                    why_not = paste("its interval test (`w1`) needs the robust covariance (MCD) of all records,",
                                    "which no pass over groups of strata gives"),
                    settings = list(rate = c(0.5, 0.3, 0.2), below = c(0.1, 0.05), near_k_max = 33L),
                    tune = tune_adaptive, legend = "adaptive k", colour = "firebrick", replay = replay_adaptive),
    mdav = list(label = "MDAV groups of k records, sharing their mean", verb = "anonymise_mdav",
                kernel = mdav_kernel, finish = "means", meta = mdav_meta,
                settings = list(k = c(3L, 5L, 10L, 15L, 20L, 30L)), tune = tune_mdav,
                legend = "MDAV", colour = "purple", replay = replay_mdav),
    keyed = list(label = "keyed k-means groups, sharing their mean", verb = "anonymise_keyed",
                 kernel = keyed_kernel, finish = "means", meta = keyed_meta, plan = keyed_plan,
                 settings = list(size = c(5L, 10L, 14L, 20L, 30L)), tune = tune_keyed,
                 legend = "keyed", colour = "deeppink",
                 no_replay = "its groups depend on the custodian's secret key"),
    stir = list(label = "the best centroid candidates shuffled within classes of nearby records",
                verb = "stir", why_not = "it shuffles a release, not a stratum's records",
                settings = list(stirred = c("anonymise", "adaptive", "stratum"), candidates = 4L, class_k = 3L),
                tune = tune_stir, legend = "stirred", colour = "steelblue",
                no_replay = "its shuffle is drawn from R's random stream")
  )
}

# The methods a search can be asked for (the choices of `methods` of tune_release()).
search_methods <- function() names(Filter(function(m) !isFALSE(m$choice), method_registry()))

# The entry of the registry whose verb made a release (`verb` of its metadata), or NULL.
method_of_verb <- function(verb) {
  reg <- method_registry()
  hit <- which(vapply(reg, function(m) identical(m$verb, verb), NA))
  if (length(hit)) reg[[hit[1L]]]
}

# ---- kernels: whole strata on the z-scale of all the data -------------------------------
# Each takes xs (the records' values, tiny columns scaled by their power of two), cols (the
# columns that vary), the columns' exact means and SDs over all the data, id (stratum ids
# 1..S), k (one per stratum; the plain method's k is the same in all) and nthreads; a kernel
# may also read the statistics of anonymise_stats() (`stats`) and the stratum keys of the
# ids (`keys`).

# The centroids of every record's k nearest neighbours in its stratum (z-scale; step 5
# follows). anonymise() runs the same search kernel (src/knn.c) fused with the column
# statistics and step 5 in one native call.
knn_kernel <- function(xs, cols, mean, sd, id, k, nthreads, ...) {
  list(values = .Call(C_ffi_mask_strata, xs[, cols, drop = FALSE], id, as.integer(k[1L]),
                      as.double(mean[cols]), as.double(sd[cols]), nthreads))
}

# anonymise_adaptive() with m = 0 (k per stratum; nothing is grown) on whole strata: the
# centroids of every record's k nearest neighbours in its stratum, on the verb's search
# index of the originals (z-scale; step 5 follows).
stratum_kernel <- function(xs, cols, mean, sd, id, k, nthreads, ...) {
  z <- z_scale(xs[, cols, drop = FALSE], mean[cols], sd[cols])
  s <- list(order = as.integer(order(id, method = "radix")),
            offsets = as.integer(c(0L, cumsum(tabulate(id, length(k))))))
  list(values = .Call(C_ffi_adaptive_centroids, rank_index(z, s), as.integer(k[id]), seq_along(id), nthreads))
}

# MDAV groups within each stratum (src/mdav.c), formed on the z-scores of `cols`: the exact
# group means of every column (scale of xs), the group of every record and the group sizes.
mdav_kernel <- function(xs, cols, mean, sd, id, k, nthreads, ...) {
  res <- mdav_groups(xs, cols, mean[cols], sd[cols], id, k, nthreads)
  list(values = res$means[res$group, , drop = FALSE], group = res$group, size = res$size)
}

# anonymise_keyed() on whole strata, with the groups per block of keyed_plan(): the group
# means of every column (scale of xs; constant columns as they are), with the keyed noise of
# centroid_noise() under the noise centre of all the data when `noise`.
keyed_kernel <- function(xs, cols, mean, sd, id, k, nthreads, stats, keys) {
  st <- stats
  # (no column varies: released as they are, no groups, as anonymise_keyed() does)
  if (!length(cols)) return(list(values = xs))
  z <- z_scale(xs[, cols, drop = FALSE], mean[cols], sd[cols])
  # the blocks again (their drops, measured by keyed_plan(), are not needed)
  b <- keyed_layout(z, id, st$k, st$secret, nthreads)
  # (by match(): the key of the one stratum without `strata` is "")
  cur <- unlist(st$keyed_groups[match(keys[sort(unique(id))], names(st$keyed_groups))], use.names = FALSE)
  # the seeds of every block's count (the first of any longer run's, so those of the
  # in-memory grid; one Lloyd iteration, as the SSE is not needed), then its partition
  b$seeds <- keyed_run_grid(b, as.list(cur), st$k, st$secret, nthreads, maxit = 1L)$seeds
  b$gmax <- cur
  g <- keyed_partition(b, cur, nrow(z), st$k, nthreads)$group
  # exact group means, summed in the canonical order of keyed_mask()
  xc <- xs[, cols, drop = FALSE]
  o <- do.call(order, c(list(g), unname(as.data.frame(xc)), method = "radix"))
  sums <- rowsum(xc[o, , drop = FALSE], g[o], reorder = TRUE)
  size <- tabulate(g, nrow(sums))
  means <- sums / size
  if (st$noise) {
    e <- st$e[cols]
    means <- scale_tiny(centroid_noise(scale_tiny(xc, -e), g, scale_tiny(means, -e), st$secret, st$noise_centre), e)
  }
  values <- xs
  values[, cols] <- means[g, , drop = FALSE]
  list(values = values, group = g, size = size)
}

# The global step of anonymise_keyed() (step 4): the drops of SSE of every block of every
# stratum (keyed_gains(), stratum by stratum on the workers), the budget handed out over all
# blocks in the order of the strata's ids in memory (stratum_ids()), and the number of
# groups of each block by stratum key (`keyed_groups` of the statistics).
keyed_plan <- function(st, map) {
  if (!length(st$cols)) return(st)
  res <- map(keyed_stratum_gains)
  keys <- unlist(lapply(res, `[[`, "keys"), use.names = FALSE)
  gains <- unlist(lapply(res, `[[`, "gains"), recursive = FALSE)
  tab <- st$strata_table[st$strata_table$keep, , drop = FALSE]
  o <- match(tab$key[order(stratum_ids(tab[st$strata], st$strata))], keys)
  gains <- gains[o]
  blocks <- unlist(gains, recursive = FALSE)
  cur <- keyed_allocate(blocks, max(length(blocks), round(st$n / st$size)))
  st$keyed_groups <- stats::setNames(split(cur, rep(seq_along(gains), lengths(gains))), keys[o])
  st
}

# Pass 1 of keyed_plan() on one group of whole strata: their keys and, for each, the drops
# of SSE of its blocks (keyed_gains()).
keyed_stratum_gains <- function(data, st, nthreads) {
  kept <- stratum_kept(data, st)
  keys <- unique(kept$keys)
  cols <- st$cols
  z <- z_scale(scale_tiny(kept$x, st$e)[, cols, drop = FALSE], st$mean[cols], st$sd[cols])
  id <- match(kept$keys, keys)
  gains <- lapply(seq_along(keys), function(s) {
    keyed_gains(z[id == s, , drop = FALSE], rep(1L, sum(id == s)), st$k, st$size, st$secret, nthreads)$gains
  })
  list(keys = keys, gains = gains)
}

# The metadata of a partitioned release: those of the verb on all the data.
knn_meta <- function(st, step5, counts) {
  list(settings = list(k = st$k, vars = st$vars, strata = st$strata, na = st$na, small_strata = st$small_strata,
                       engine = "kdtree", format = st$format),
       counts = counts, stats = list(scale = step5$scale))
}

keyed_meta <- function(st, step5, counts) {
  list(settings = list(k = st$k, size = st$size, vars = st$vars, strata = st$strata, held = character(),
                       noise = st$noise, na = st$na, small_strata = st$small_strata, format = st$format,
                       keyed = TRUE),
       counts = c(counts[1:3], step5[c("n_groups", "min_group")], counts[-(1:3)]))
}

mdav_meta <- function(st, step5, counts) {
  # (the keyed noise of anonymise_mdav(noise = TRUE) is not made partitioned)
  list(settings = list(k = st$k, vars = st$vars, strata = st$strata, noise = FALSE, na = st$na,
                       small_strata = st$small_strata, format = st$format),
       counts = c(counts[1:3], step5[c("n_groups", "min_group", "max_group")], counts[-(1:3)]))
}

# anonymise_adaptive() with m = 0: every record keeps the k of its stratum, after one round
# of the verb per stage of `rate` (none when no column is masked).
stratum_meta <- function(st, step5, counts) {
  tab <- st$strata_table
  ks <- if (is.null(st$k_strata)) rep(st$k, nrow(tab)) else st$k_strata
  k <- rep.int(as.integer(ks[tab$keep]), tab$n[tab$keep])
  st$adaptive <- list(k = k, n_capped = 0L, rounds = if (length(st$cols)) length(st$rate) else 0L)
  adaptive_meta(st, step5, counts, k0 = k)
}

# ---- replays: the release made again from the intruder's known records ------------------
# Each takes the release's settings `set`, the known records `d`, the strata to replay
# within, k (one k, capped by the known records), k_tab (the table of k per stratum, or
# NULL) and w1 (the interval test's weight, NULL when too few records are known). A
# release masked by household (its setting `household`) is replayed by household.

replay_knn <- function(set, d, strata, k, k_tab, w1) {
  anonymise(d, k = k, vars = set$vars, strata = strata, small_strata = "merge",
            engine = if (is.null(set$engine)) "kdtree" else set$engine, format = set$format,
            check_identifiers = FALSE, household = set[["household"]])
}

replay_adaptive <- function(set, d, strata, k, k_tab, w1) {
  kk <- replay_k_table(d, strata, k, k_tab)
  anonymise_adaptive(d, vars = set$vars, strata = strata, k = kk, k_max = pmax(set$k_max, k),
                     m = set$m, rate = set$rate, w1 = w1,
                     format = if (is.null(set$format)) "none" else set$format, check_identifiers = FALSE,
                     household = set[["household"]])
}

replay_mdav <- function(set, d, strata, k, k_tab, w1) {
  kk <- replay_k_table(d, strata, k, k_tab)
  # (a stratum without known records has no row)
  if (is.data.frame(kk)) kk <- kk[stratum_keys(kk, strata) %in% stratum_keys(d, strata), , drop = FALSE]
  anonymise_mdav(d, vars = set$vars, strata = strata, k = kk,
                 small_strata = if (is.data.frame(kk)) "fail" else "merge",
                 format = set$format, check_identifiers = FALSE, household = set[["household"]])
}

# A table of k per stratum cut to the known records of each stratum (a stratum with none
# keeps its k), or the one k.
replay_k_table <- function(d, strata, k, k_tab) {
  if (is.null(k_tab) || !length(strata)) return(k)
  have <- table(stratum_keys(d, strata))
  k_tab$k <- pmax(2L, pmin(k_tab$k, as.vector(have[stratum_keys(k_tab, strata)]), na.rm = TRUE))
  k_tab
}

# ---- the partitioned back ends (anonymise_stats(), anonymise_stratum(), ...) ------------

# The method of a partitioned run: one of the registry's, refused (with the reason) when it
# does not work stratum by stratum.
check_partitioned_method <- function(method) {
  reg <- method_registry()
  method <- match_choice(method, "method", names(reg))
  if (is.null(reg[[method]]$kernel)) {
    stop_arg("`method = \"", method, "\"` cannot run stratum by stratum: ", reg[[method]]$why_not, ". Use ",
             reg[[method]]$verb, "() in memory.")
  }
  method
}

# The registry entry of the statistics of a partitioned run (statistics made before the
# registry hold no method: the plain one).
partitioned_method <- function(st) method_registry()[[if (is.null(st$method)) "anonymise" else st$method]]

# The finishing pass of a method that releases group means (finish = "means"): nothing is
# rescaled (`scale` NA for every column); the scan of the release form over the released
# values of every piece, and the group counts. The object anonymise_rescale() returns.
means_finish <- function(read, st) {
  p <- length(st$vars)
  scan <- vector("list", p)
  groups <- c(n = 0, min = Inf, max = -Inf)
  for_each_chunk(read, function(piece, i) {
    g <- piece$group_sizes
    if (length(g)) groups <<- c(n = groups[["n"]] + length(g), min = min(groups[["min"]], g),
                                max = max(groups[["max"]], g))
    if (st$format == "none" || !piece$n) return(invisible())
    for (j in which(!st$constant)) {
      scan[[j]] <<- form_scan(released_means(piece, j, st), st$bounds[[j]]$lo, st$bounds[[j]]$hi, scan[[j]])
    }
  })
  # the map of the natural form (R/finish.R), keeping the SD of the group means
  fit <- vector("list", p)
  if (st$format == "natural") {
    for (j in which(!st$constant)) {
      fit[[j]] <- pieces_fit(read, st, j, scan[[j]], function(piece) released_means(piece, j, st), keep = "masked")
    }
  }
  structure(list(scale = stats::setNames(rep(NA_real_, p), st$vars), scan = scan, fit = fit,
                 n_groups = if (groups[["n"]]) as.integer(groups[["n"]]) else NA_integer_,
                 min_group = if (groups[["n"]]) as.integer(groups[["min"]]) else NA_integer_,
                 max_group = if (groups[["n"]]) as.integer(groups[["max"]]) else NA_integer_),
            class = "detanon_anonymise_step5")
}

# The released group means of column j of a piece (tiny columns scaled back).
released_means <- function(piece, j, st) {
  m <- piece$centroids[, j]
  if (st$e[j] != 0) m <- times_pow2(m, -st$e[j])
  m
}
