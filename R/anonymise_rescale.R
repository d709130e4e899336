#' Partitioned anonymise(), pass 3: the scaling of step 5
#'
#' Step 5 of [anonymise()] divides each column of centroids by its SD over the whole
#' data. This pass reads the masked pieces of [anonymise_stratum()] and finds that SD
#' exactly (the centroids' sums are merged from the pieces, then one pass sums their
#' squared deviations from the exact mean), and, for the release forms `"natural"` and
#' `"precision"`, the extremes of each released column and, only when a tail must be
#' squeezed into its k-record bounds, the smallest and largest released values inside the
#' bounds and the number beyond each (one more pass over the pieces). The result is what [anonymise_release()] needs to put any
#' piece in its release form, bit for bit as [anonymise()] does. For `"natural"` it also
#' finds, for each column, the map that keeps its mean, SD and sign (see "The release
#' form" in [anonymise()]), from exact sums over the pieces: a few more passes per column
#' (two for each round of the map, usually one to three rounds, and three for whole
#' numbers that are rounded).
#'
#' @param pieces The masked pieces: a list of [anonymise_stratum()] results, or a
#'   function of `i` returning the `i`-th piece and `NULL` after the last (read several
#'   times). Together they must hold every stratum kept by `stats` exactly once.
#' @param stats The statistics from [anonymise_stats()].
#' @return A `detanon_anonymise_step5` object: `centroid_sd`, `scale` (the scaling
#'   factors of step 5 by column, as in the release metadata of [anonymise()]) and the
#'   scans of the release form (`scan`: per column, the extremes of the released values
#'   and of those inside the k-record bounds, and the counts of all values and of those
#'   beyond each bound) and, for `"natural"`, the map of each column (`fit`).
#' @family partitioned anonymisation
#' @examples
#' d <- titanic_paper()[c("Age", "Fare", "Sex", "Pclass")]
#' st <- detanon:::anonymise_stats(d, vars = c("Age", "Fare"), strata = "Sex",
#'                                 k = 3)
#' pieces <- lapply(split(d, d$Sex), detanon:::anonymise_stratum, stats = st)
#' s5 <- detanon:::anonymise_rescale(pieces, stats = st)
#' s5$scale
#' @keywords internal
anonymise_rescale <- function(pieces, stats) {
  check_stats(stats)
  st <- stats
  read <- chunk_reader(pieces, "pieces")
  cols <- st$cols
  # a method that releases group means (MDAV) has no step 5: its pieces hold every column
  means <- identical(partitioned_method(st)$finish, "means")
  d <- if (means) length(st$vars) else length(cols)
  acc <- .Call(C_ffi_acc_add, NULL, matrix(0, 0L, d), NULL)
  rng <- matrix(rep(c(Inf, -Inf), d), 2L)
  n <- 0
  keys <- character()
  check_piece <- function(piece, i) {
    if (!inherits(piece, "detanon_anonymise_piece") || ncol(piece$centroids) != d) {
      stop_arg("piece ", i, " of `pieces` must be a result of anonymise_stratum() with these `stats`, not ",
               show_value(piece), ".")
    }
  }
  for_each_chunk(read, function(piece, i) {
    check_piece(piece, i)
    acc <<- .Call(C_ffi_acc_merge, acc, piece$acc, NULL, NULL)
    if (piece$n) rng <<- rbind(pmin(rng[1L, ], piece$range[1L, ]), pmax(rng[2L, ], piece$range[2L, ]))
    n <<- n + piece$n
    keys <<- c(keys, piece$keys)
  })
  want <- st$strata_table$key[st$strata_table$keep]
  if (anyDuplicated(keys) || length(keys) != length(want) || !all(want %in% keys) || n != st$n) {
    stop_arg("`pieces` must hold every stratum kept by `stats` exactly once (", plural(length(want), "stratum", "strata"),
             ", ", plural(st$n, "record"), "); they hold ", plural(length(keys), "stratum", "strata"),
             if (anyDuplicated(keys)) " with repeats" else "", " and ", plural(n, "record"), ".", kind = "data")
  }
  if (means) return(means_finish(read, st))
  c_mean <- acc_round(acc) / n
  acc2 <- .Call(C_ffi_acc_add, NULL, matrix(0, 0L, d), NULL)
  for_each_chunk(read, function(piece, i) {
    acc2 <<- .Call(C_ffi_acc_add, acc2, piece$centroids, as.double(c_mean))
  })
  c_sd <- sqrt(acc_round(acc2) / (n - 1))
  # the scaling factors by the C of step 5 (NA for a column whose centroids are all equal)
  s5 <- .Call(C_ffi_rescale, matrix(0, 0L, d), as.double(st$mean[cols]), as.double(st$sd[cols]), as.double(c_sd), 1L)
  scale <- stats::setNames(rep(NA_real_, length(st$vars)), st$vars)
  scale[cols] <- s5$scale
  warn_flat(st$vars[cols][is.na(s5$scale)])
  out <- list(centroid_sd = c_sd, scale = scale, scan = vector("list", length(st$vars)),
              fit = vector("list", length(st$vars)))
  if (st$format != "none" && d) {
    # the scan of each released column (mask_form_scan: its extremes, the extreme values
    # inside the bounds, the counts beyond them), as format_masked() makes it on the whole
    # column. Step 5 is monotone, so the extremes are the step-5 values of the centroids'
    # extremes (the same arithmetic on them): when none lies beyond a bound nothing is
    # squeezed, and the scan of the two extremes is all mask_form_apply() reads (its
    # counts beyond the bounds are 0, as on the whole column).
    need <- integer()
    for (jj in seq_len(d)) {
      j <- cols[jj]
      b <- st$bounds[[j]]
      ends <- step5_values(matrix(rng[, jj]), j, jj, st, c_sd)
      out$scan[[j]] <- form_scan(ends, b$lo, b$hi)
      if (!st$constant[j] && (ends[1L] < b$lo || ends[2L] > b$hi)) need <- c(need, jj)
    }
    if (length(need)) {
      # a tail is squeezed: one more pass, the scans of the pieces' released values merged
      scans <- vector("list", length(need))
      for_each_chunk(read, function(piece, i) {
        if (!piece$n) return(invisible())
        for (u in seq_along(need)) {
          jj <- need[u]
          j <- cols[jj]
          m <- step5_values(piece$centroids[, jj, drop = FALSE], j, jj, st, c_sd)
          scans[[u]] <<- form_scan(m, st$bounds[[j]]$lo, st$bounds[[j]]$hi, scans[[u]])
        }
      })
      for (u in seq_along(need)) out$scan[[cols[need[u]]]] <- scans[[u]]
    }
    if (st$format == "natural") {
      # the map of the natural form (finish_fit()), from passes over the squeezed values
      for (jj in seq_len(d)) {
        j <- cols[jj]
        if (st$constant[j]) next
        out$fit[[j]] <- pieces_fit(read, st, j, out$scan[[j]], function(piece) {
          step5_values(piece$centroids[, jj, drop = FALSE], j, jj, st, c_sd)
        })
      }
    }
  }
  structure(out, class = "detanon_anonymise_step5")
}

#' @export
print.detanon_anonymise_step5 <- function(x, ...) {
  cat("<detanon_anonymise_step5> the scaling of step 5 of a partitioned anonymise()\n")
  s <- x$scale
  cat(paste0("  ", names(s), ": ", ifelse(is.na(s), "not scaled", formatC(s, digits = 6, format = "g")), collapse = "\n"),
      "\n", sep = "")
  invisible(x)
}

# Step 5 of column j (jj-th masked column) on centroids `cent` (a one-column matrix): the
# same C kernel as anonymise(), then the power of two of a tiny column undone.
step5_values <- function(cent, j, jj, st, c_sd) {
  m <- .Call(C_ffi_rescale, cent, as.double(st$mean[j]), as.double(st$sd[j]), as.double(c_sd[jj]), 1L)$columns[[1L]]
  if (st$e[j] != 0) m <- times_pow2(m, -st$e[j])
  m
}
