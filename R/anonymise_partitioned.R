#' Anonymise stratum by stratum, on one machine or on a cluster
#'
#' [anonymise()] (or, with `method = "mdav"`, [anonymise_mdav()], with `method = "keyed"`,
#' [anonymise_keyed()], with `method = "adaptive"`, [anonymise_adaptive()], with
#' `method = "stratum"`, [anonymise_adaptive()] with one k per stratum and `m = 0`) as the composition of its
#' passes ([anonymise_stats()], [anonymise_stratum()], [anonymise_rescale()],
#' [anonymise_release()]), with the strata
#' (or groups of small strata, balanced by size) masked by `future.apply::future_lapply()`
#' under whatever [future::plan()] you set: `sequential`, `multisession`, a cluster of
#' machines, or a scheduler through `future.batchtools`. The release is `identical()` to
#' that of the method's verb on all the rows (`do.call(rbind, chunks)`), with the same release
#' metadata, for every split of the rows into chunks, every grouping of the strata, and
#' every plan and number of workers.
#'
#' @section Workers:
#' Every worker loads detanon, so it must be installed in a library the workers can see
#' (the same version as in the main session). A plan with separate R processes
#' (`multisession`, `cluster`) copies each group's records to its worker. Progress is
#' reported through progressr: wrap the call in `progressr::with_progress()` to see it.
#' When a worker fails, the error (class `detanon_error_worker`) names the strata it was
#' masking; nothing is returned.
#'
#' @section What is exact:
#' Everything: the statistics are exact sums merged over chunks, the centroids (MDAV's groups
#' and their exact means) depend only on their stratum and the global z-scale, and the release
#' form reads exact extremes merged over the pieces. The keyed method shares its budget of
#' groups among all strata: a first pass over the groups of whole strata measures every
#' block's drops of the within-group sum of squares, the budget is handed out over all of
#' them as [anonymise_keyed()] does, and a second pass partitions each stratum with its
#' share (the k-means work of the verb, with the blocks of large strata split twice); its
#' noise reads each column's exact median (radix select over the chunks) and the power of
#' two below its SD, which is that of the verb's [stats::sd()] unless the SD lies within a
#' rounding error of a power of two. The adaptive method's rounds join all strata (each
#' tests every record on step 5's scale of all centroids, and grows the least moved of the
#' linkable records of all strata together): a first pass over the groups of whole strata
#' builds each group's search index of the original records and their first centroids; the
#' indexes are kept in private temporary files of the main R session (they hold original
#' values, about 100 bytes per record of four masked columns; removed when the call ends),
#' which runs the rounds group by group on `nthreads` threads without reading the data
#' again. It holds every record's k, last test and centroid, another (16 + 8 x masked columns)
#' bytes per record (48 MB per million records of four columns), selects as
#' [anonymise_adaptive()] does and computes the SDs of all centroids from exact sums. Its
#' interval test `w1` is refused (it needs the robust covariance of all records, which no
#' pass over groups of strata gives), as are `na` and `small_strata` other than `"fail"`
#' (the verb has neither). The stratum method (one k per stratum, the k-per-stratum release
#' of [tune_release()]) needs no pass between the statistics and the masking: each stratum's
#' centroids depend on its own records and k only; its table `k` is checked against the
#' strata of the statistics pass, as [anonymise_adaptive()] checks it. The methods of
#' [masking_methods()] that do not run per stratum are refused with the reason. Not
#' supported partitioned: `na = "median_stratum"`, `"mean_stratum"`,
#' `small_strata = "merge"` and `engine = "rann"` (use [anonymise()] in memory).
#'
#' @inheritParams anonymise_stats
#' @inheritParams anonymise
#' @param group_size Strata are masked in groups of about this many records (a larger
#'   stratum is a group of its own): fewer, larger tasks for the workers.
#' @param strata_source `NULL` (the records come from `chunks`, which must then be a list
#'   of data frames held in memory), or a function of a data frame of strata values (rows
#'   of `stats$strata_table`, with their `key`) that returns all records of those strata,
#'   e.g. from a database; it runs on the workers. With a source, the release holds the
#'   strata group by group instead of in the order of the chunks.
#' @param future Dispatch with `future.apply` (needs the suggested packages future and
#'   future.apply)? `NULL`: when future.apply is installed.
#' @param key,size,noise For `method = "keyed"`: the custodian's secret, the mean number of
#'   records per released point and the keyed noise, as in [anonymise_keyed()] (its `held`
#'   is not supported partitioned). The key travels with the statistics to the workers
#'   (through the future plan): send it only to machines trusted with the originals.
#' @param k_max,m,rate,w1 For `method = "adaptive"` (with one `k`) and `"stratum"`, as in
#'   [anonymise_adaptive()], with `w1 = NULL` (see the section What is exact); `m = NULL` is
#'   1 for `"adaptive"`, and 0, the only value, for `"stratum"`.
#' @return The release, as [anonymise()] returns it: the class of the first chunk, with
#'   release metadata ([release_info()]).
#' @family partitioned anonymisation
#' @examples
#' d <- titanic_paper()[c("Age", "Fare", "Sex", "Pclass")]
#' chunks <- split(d, rep(1:3, length.out = nrow(d)))
#' out <- anonymise_partitioned(chunks, vars = c("Age", "Fare"),
#'                              strata = c("Sex", "Pclass"), k = 3)
#' ref <- anonymise(do.call(rbind, unname(chunks)), vars = c("Age", "Fare"),
#'                  strata = c("Sex", "Pclass"), k = 3)
#' identical(out, ref)
#' @export
anonymise_partitioned <- function(chunks, vars = NULL, strata = NULL, k = 3, method = "anonymise",
                                  format = c("natural", "precision", "none"),
                                  na = c("fail", "median", "mean", "complete", "median_stratum", "mean_stratum"),
                                  small_strata = c("fail", "suppress", "merge"),
                                  check_identifiers = TRUE, group_size = 1e6, strata_source = NULL,
                                  future = NULL, key = NULL, size = 10, noise = TRUE, k_max = 33, m = NULL, rate = 0,
                                  w1 = NULL, nthreads = getOption("detanon.nthreads", 1L)) {
  check_flag(check_identifiers, "check_identifiers")
  group_size <- check_whole(group_size, "group_size", min = 1)
  nthreads <- check_nthreads(nthreads)
  if (!is.null(strata_source) && !is.function(strata_source)) {
    stop_arg("`strata_source` must be NULL or a function of a data frame of strata, not ",
             show_value(strata_source), ".")
  }
  if (is.null(strata_source) && (!is.list(chunks) || is.function(chunks))) {
    stop_arg("`chunks` must be a list of data frames when `strata_source` is NULL; to read the strata from ",
             "elsewhere, give `strata_source`.")
  }
  future <- use_future(future)
  if (is.null(strata_source)) check_chunk_columns(chunks)
  st <- anonymise_stats(chunks, vars, strata = strata, k = k, method = method, format = format, na = na,
                        small_strata = small_strata, key = key, size = size, noise = noise, k_max = k_max, m = m,
                        rate = rate, w1 = w1)
  groups <- strata_groups(st, group_size)
  tab <- st$strata_table
  if (is.null(strata_source)) {
    if (is.data.frame(chunks)) chunks <- list(chunks)
    all <- do.call(rbind, lapply(unname(chunks), as.data.frame, stringsAsFactors = FALSE))
    rownames(all) <- NULL
    row_of <- split(seq_len(nrow(all)), factor(stratum_keys(all, st$strata), levels = tab$key))
    group_rows <- lapply(groups, function(g) sort(unlist(row_of[g], use.names = FALSE)))
    tasks <- lapply(group_rows, function(r) all[r, , drop = FALSE])
    source <- NULL
  } else {
    tasks <- lapply(groups, function(g) tab[g, , drop = FALSE])
    source <- strata_source
  }
  labels <- vapply(groups, function(g) {
    paste0(paste(utils::head(tab$label[g], 3L), collapse = "; "), if (length(g) > 3L) sprintf("; ... (%d strata)", length(g)) else "")
  }, character(1))
  plan <- partitioned_method(st)$plan
  if (!is.null(plan)) st <- plan(st, function(fun) map_strata(tasks, labels, source, st, nthreads, future, fun))
  pieces <- map_strata(tasks, labels, source, st, nthreads, future)
  s5 <- anonymise_rescale(pieces, st)
  rel <- lapply(pieces, anonymise_release, stats = st, step5 = s5)
  meta <- release_meta(st, s5)
  template <- st$template
  if (is.null(strata_source)) {
    glob <- unlist(lapply(seq_along(pieces), function(i) group_rows[[i]][pieces[[i]]$rows]), use.names = FALSE)
    o <- order(glob)
    kept <- glob[o]
    out <- if (length(kept) == nrow(all)) all else all[kept, , drop = FALSE]
    for (v in st$vars) out[[v]] <- unlist(lapply(rel, `[[`, v), use.names = FALSE)[o]
  } else {
    out <- do.call(rbind, rel)
  }
  rownames(out) <- NULL
  if (check_identifiers) warn_identifiers(out, st$vars, st$strata)
  as_release(as_release_frame(out, template), meta$verb, settings = meta$settings, counts = meta$counts,
             stats = meta$stats)
}

# The chunks held in memory are bound into the release: every chunk must have the columns
# of the first (in any order), as do.call(rbind, chunks) needs.
check_chunk_columns <- function(chunks) {
  if (is.data.frame(chunks)) return(invisible(chunks))
  frames <- which(vapply(chunks, is.data.frame, logical(1)))
  if (length(frames) < 2L) return(invisible(chunks))
  first <- names(chunks[[frames[1L]]])
  for (i in frames[-1L]) {
    nm <- names(chunks[[i]])
    extra <- setdiff(nm, first)
    lack <- setdiff(first, nm)
    if (length(extra) || length(lack) || length(nm) != length(first)) {
      stop_arg("chunk ", i, " of `chunks` has other columns than chunk ", frames[1L],
               if (length(extra)) paste0("; it has ", quote_names(extra), " in addition") else "",
               if (length(lack)) paste0("; it lacks ", quote_names(lack)) else "",
               if (!length(extra) && !length(lack)) "; it repeats a column" else "",
               ". Every chunk must have the same columns (the release binds them).", kind = "column")
    }
  }
  invisible(chunks)
}

#' Groups of strata balanced by size
#'
#' Splits the strata kept by [anonymise_stats()] into groups of about `group_size`
#' records (largest strata first; a stratum larger than `group_size` is a group of its
#' own), the tasks that [anonymise_partitioned()] hands to its workers.
#'
#' @param stats The statistics from [anonymise_stats()].
#' @param group_size About this many records per group.
#' @return A list of integer vectors: rows of `stats$strata_table`.
#' @family partitioned anonymisation
#' @examples
#' d <- titanic_paper()[c("Age", "Fare", "Sex", "Pclass")]
#' st <- detanon:::anonymise_stats(d, vars = c("Age", "Fare"),
#'                                 strata = c("Sex", "Pclass"), k = 3)
#' detanon:::strata_groups(st, group_size = 200)
#' @keywords internal
strata_groups <- function(stats, group_size = 1e6) {
  check_stats(stats)
  group_size <- check_whole(group_size, "group_size", min = 1)
  tab <- stats$strata_table
  idx <- which(tab$keep)
  idx <- idx[order(-tab$n[idx], radix_key(tab$key[idx]), method = "radix")]
  groups <- list()
  cur <- integer()
  size <- 0
  for (s in idx) {
    if (length(cur) && size + tab$n[s] > group_size) {
      groups[[length(groups) + 1L]] <- cur
      cur <- integer()
      size <- 0
    }
    cur <- c(cur, s)
    size <- size + tab$n[s]
  }
  if (length(cur)) groups[[length(groups) + 1L]] <- cur
  groups
}

use_future <- function(future) {
  if (is.null(future)) return(requireNamespace("future.apply", quietly = TRUE))
  check_flag(future, "future")
  if (future && !requireNamespace("future.apply", quietly = TRUE)) {
    stop_arg("`future = TRUE` needs the packages future and future.apply: ",
             "install.packages(\"future.apply\"), or set `future = FALSE`.")
  }
  future
}

# Mask every task (a data frame of whole strata, or with `source` the strata to read) on
# the workers of the current plan (or run `fun(data, st, nthreads = )` on it); a failure
# names the strata.
map_strata <- function(tasks, labels, source, st, nthreads, future, fun = anonymise_stratum) {
  p <- task_progress(length(tasks))
  # each task travels alone to its worker (future_lapply() splits X); the worker function
  # is made in a small environment, so that it carries no other task with it
  work <- stratum_worker(source, st, nthreads, p, fun)
  pieces <- if (future) {
    tryCatch(future.apply::future_lapply(tasks, work, future.packages = "detanon", future.seed = NULL),
             error = function(e) {
               stop_arg("A worker failed while masking strata: ", conditionMessage(e), kind = "worker")
             })
  } else {
    lapply(tasks, work)
  }
  failed <- which(vapply(pieces, inherits, logical(1), "detanon_worker_failure"))
  if (length(failed)) {
    i <- failed[1L]
    stop_arg("Masking the strata ", labels[i], " failed", if (future) " on a worker", ": ",
             pieces[[i]]$message, kind = "worker")
  }
  pieces
}

# The worker of map_strata(): masks one task (whole strata, or the strata to read from
# `source`), a failure returned as a value; its environment holds only its arguments.
stratum_worker <- function(source, st, nthreads, p, fun = anonymise_stratum) {
  force(source)
  force(st)
  force(nthreads)
  force(p)
  force(fun)
  function(task) {
    res <- tryCatch({
      data <- if (is.null(source)) task else source(task)
      fun(data, st, nthreads = nthreads)
    }, error = function(e) structure(list(message = conditionMessage(e)), class = "detanon_worker_failure"))
    p()
    res
  }
}
