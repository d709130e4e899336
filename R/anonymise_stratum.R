#' Partitioned anonymise(), pass 2: mask whole strata
#'
#' Steps 3 and 4 of [anonymise()] (the k nearest neighbours inside each stratum and their
#' centroids) on the records of one or more whole strata, with the global statistics of
#' [anonymise_stats()]. Strata are independent, so pieces can be masked in any order, on
#' any machine (see [anonymise_partitioned()] for a run on the `future` framework), and
#' their centroids are bit for bit those of [anonymise()] on all the data.
#'
#' @param data A data frame holding **all** records of each stratum it touches (in any
#'   order, with the columns of the chunks given to [anonymise_stats()]). A stratum given
#'   in part is an error, since its centroids would differ; so is a stratum whose `vars`
#'   values are not those the statistics were made of (statistics of other data, or data
#'   changed since), known by a check sum of each stratum's records kept in `stats`.
#' @param stats The statistics from [anonymise_stats()].
#' @inheritParams anonymise
#' @return A `detanon_anonymise_piece` object (a list, to be passed to
#'   [anonymise_rescale()] and [anonymise_release()]): `data` (the records kept, in input
#'   order), `rows` (their positions in `data`), `keys` (the strata), `n`, the centroids
#'   on the z-scale and exact mergeable sums of them. It holds original values: keep it
#'   with the original data.
#' @family partitioned anonymisation
#' @examples
#' d <- titanic_paper()[c("Age", "Fare", "Sex", "Pclass")]
#' st <- detanon:::anonymise_stats(d, vars = c("Age", "Fare"), strata = "Sex",
#'                                 k = 3)
#' women <- detanon:::anonymise_stratum(d[d$Sex == "female", ], stats = st)
#' women$n
#' @keywords internal
anonymise_stratum <- function(data, stats, nthreads = getOption("detanon.nthreads", 1L)) {
  check_data_frame(data, "data")
  check_stats(stats)
  nthreads <- check_nthreads(nthreads)
  st <- stats
  kept <- stratum_kept(data, st)
  x <- kept$x
  cols <- st$cols
  # the method's kernel (method_registry()): centroids of the masked columns on the z-scale
  # (step 5 follows), or the group means of every column (finish = "means")
  method <- partitioned_method(st)
  cent <- matrix(0, nrow(x), if (method$finish == "means") ncol(x) else length(cols))
  group_sizes <- integer()
  if (nrow(x) && ncol(cent)) {
    keys <- unique(kept$keys)
    id <- match(kept$keys, keys)
    # (one k per stratum: method "stratum" has a k for each)
    k <- if (is.null(st$k_strata)) rep(st$k, max(id)) else st$k_strata[match(keys, st$strata_table$key)]
    res <- method$kernel(scale_tiny(x, st$e), cols, st$mean, st$sd, id, k, nthreads, stats = st, keys = keys)
    cent <- res$values
    group_sizes <- res$size
  }
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  # (no column varies: no centroids to range over)
  rng <- if (nrow(cent) && ncol(cent)) apply(cent, 2L, range) else matrix(rep(c(Inf, -Inf), ncol(cent)), 2L)
  structure(list(data = df[kept$rows, , drop = FALSE], rows = kept$rows, keys = unique(kept$keys),
                 n = nrow(x), x = x, centroids = cent,
                 acc = .Call(C_ffi_acc_add, NULL, cent, NULL), range = rng, group_sizes = group_sizes),
            class = "detanon_anonymise_piece")
}

#' @export
print.detanon_anonymise_piece <- function(x, ...) {
  cat(sprintf("<detanon_anonymise_piece> %s of %s, masked; holds original values\n",
              plural(x$n, "record"), plural(length(x$keys), "stratum", "strata")))
  invisible(x)
}

# The kept rows of `data` (kept_matrix()), which must be whole strata with the values the
# statistics `st` were made of.
stratum_kept <- function(data, st) {
  kept <- kept_matrix(data, st, 1L, arg = "data", checks = !is.null(st$check))
  # whole strata only: the records of each stratum (after the na policy) must all be here
  have <- table(kept$na_keys)
  want <- st$strata_table$n[match(names(have), st$strata_table$key)]
  if (any(have != want)) {
    bad <- st$strata_table$label[match(names(have)[have != want], st$strata_table$key)]
    stop_arg("`data` must hold whole strata: ", quote_names(bad), " ",
             plural(length(bad), "has", "have", count = FALSE), " ", plural(sum(have != want), "stratum", "strata", count = FALSE),
             " with a number of records other than the statistics count.", kind = "data")
  }
  # ... with the values the statistics were made of (statistics of other data, or data
  # changed since)
  if (!is.null(st$check)) {
    pos <- match(names(have), st$strata_table$key)
    got <- add_checks(numeric(nrow(st$strata_table)), kept, st)[pos]
    bad <- st$strata_table$label[pos][got != st$check[pos]]
    if (length(bad)) {
      stop_arg("`data` holds other values than the statistics in `stats` were made of, in ",
               plural(length(bad), "stratum", "strata", count = FALSE), " ", quote_names(bad),
               ": were they made from these data, and have the data changed since?", kind = "data")
    }
  }
  kept
}

check_stats <- function(stats, arg = "stats") {
  if (!inherits(stats, "detanon_anonymise_stats")) {
    stop_arg("`", arg, "` must be the statistics made by anonymise_stats(), not ", show_value(stats), ".")
  }
  invisible(stats)
}
