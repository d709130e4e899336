#' Partitioned anonymise(), pass 4: a masked piece in its release form
#'
#' Applies step 5 of [anonymise()] (with the scaling from [anonymise_rescale()]) and the
#' release form (`format` of [anonymise_stats()]) to one piece from [anonymise_stratum()].
#' Pieces are released independently, and their values are bit for bit those that
#' [anonymise()] gives the same records on all the data.
#'
#' @param piece One result of [anonymise_stratum()].
#' @param stats The statistics from [anonymise_stats()].
#' @param step5 The result of [anonymise_rescale()] on all pieces.
#' @return A data frame: the piece's records with their masked `vars` (same row order as
#'   `piece$data`, row names dropped). It carries no release metadata: a whole release
#'   gets it from [anonymise_partitioned()].
#' @family partitioned anonymisation
#' @examples
#' d <- titanic_paper()[c("Age", "Fare", "Sex", "Pclass")]
#' st <- anonymise_stats(d, vars = c("Age", "Fare"), strata = "Sex", k = 3)
#' pieces <- lapply(split(d, d$Sex), anonymise_stratum, stats = st)
#' s5 <- anonymise_rescale(pieces, stats = st)
#' head(anonymise_release(pieces[[1]], stats = st, step5 = s5))
#' @export
anonymise_release <- function(piece, stats, step5) {
  check_stats(stats)
  if (!inherits(piece, "detanon_anonymise_piece")) {
    stop_arg("`piece` must be a result of anonymise_stratum(), not ", show_value(piece), ".")
  }
  if (!inherits(step5, "detanon_anonymise_step5")) {
    stop_arg("`step5` must be the result of anonymise_rescale(), not ", show_value(step5), ".")
  }
  st <- stats
  df <- piece$data
  rownames(df) <- NULL
  means <- identical(partitioned_method(st)$finish, "means")
  for (j in seq_along(st$vars)) {
    jj <- match(j, st$cols)
    if (means) {
      m <- released_means(piece, j, st)
    } else if (!is.na(jj)) {
      m <- step5_values(piece$centroids[, jj, drop = FALSE], j, jj, st, step5$centroid_sd)
    } else {
      m <- piece$x[, j]
      if (st$e[j] != 0) m <- times_pow2(times_pow2(m, st$e[j]), -st$e[j])
    }
    df[[st$vars[j]]] <- release_form(m, j, st, step5)
  }
  df
}

# format_masked() with the global quantities of the statistics (bounds, constant columns)
# and of step 5 (the scan of the whole released column): the same code on one piece.
release_form <- function(m, j, st, step5) {
  if (st$format == "none" || !length(m)) return(m)
  as_integer <- st$integer[[j]]
  if (st$constant[j]) return(constant_form(st$range[1L, j], length(m), as_integer))
  release_values(m, st$bounds[[j]], as_integer, scan = step5$scan[[j]])
}

# The release metadata of a partitioned run: those of anonymise() on all the data.
release_meta <- function(st, step5) {
  tab <- st$strata_table
  sizes <- as.integer(tab$n[tab$keep])
  counts <- list(n = as.integer(st$n), n_strata = length(sizes), min_size = min(sizes),
                 n_suppressed = as.integer(st$n_suppressed), n_dropped = as.integer(st$n_dropped),
                 n_imputed = as.integer(st$n_imputed), n_moved = 0L)
  method <- partitioned_method(st)
  c(list(verb = method$verb), method$meta(st, step5, counts))
}
