#' Composition attack: two releases of the same people, joined row by row
#'
#' A custodian who releases the same people twice (another key, another size, another
#' method) gives an intruder two candidate sets per person. The intruder holds the
#' originals of the keys (see [intruder()]) and, for each person it knows, takes in each
#' release the records of the person's cell (strata and categorical keys) at the released
#' point nearest to the person's values (on the z-scale of the originals; every record at
#' that point, i.e. the person's group in a shared-centroid release). When the two releases
#' can be joined row by row, the candidates are the rows in both sets (when the sets do
#' not meet, those of `masked`); the claim is one of them at random, right with probability
#' `1 / |candidates|` when the person's own row is among them. The intruder joins the two
#' releases when they have the same number of rows and agree row by row on every column
#' both release that is not in `vars` (released in the same order, as a release that keeps
#' its input's order is); otherwise it cannot tell which rows are the same person and the
#' claim is from `masked` alone (the nearest-point linkage). Shuffling the rows of each
#' release (as `write_release()` writes them) removes the gain of the join.
#'
#' The confidence of a claim is `1 / |candidates|`. The control is the battery's: the
#' released rows permuted within strata. Cost: every distance within a cell, in R (about
#' the number of records times the largest cell, for each release): seconds for some
#' thousands of records, not for millions.
#'
#' @section What it does not cover:
#' Joining shuffled releases by their released values (a matching across the releases),
#' more than two releases, and differencing of two releases of cohorts that differ (see
#' [attack_differencing()]).
#' @inheritParams risk_battery
#' @param previous Another release of the same people (rows in the order of `masked` when
#'   the custodian kept the input's order), with the columns of `masked`.
#' @return An object of class `detanon_attack` (see [risk_battery()]); its `details` hold
#'   `aligned` (whether the intruder could join the releases row by row) and
#'   `mean_candidates` (the mean number of candidates per attacked person).
#' @seealso [attack_differencing()], [attack_linkage()].
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' rel <- function(key) anonymise_keyed(d, vars = c("Age", "Fare"),
#'   strata = c("Pclass", "Sex", "Family"), key = key, size = 20)
#' a <- rel("the-first-key-of-the-custodian")
#' b <- rel("the-second-key-of-the-custodian")
#' attack_composition(d, a, previous = b, seed = 1)$rate
#' # the other release shuffled: no join
#' attack_composition(d, a, previous = b[sample(nrow(b)), ], seed = 1)$rate
#' @family attacks
#' @export
attack_composition <- function(original, masked, previous, intruder = NULL, control = TRUE,
                               nthreads = getOption("detanon.nthreads", 1L), seed = NULL) {
  prev <- check_previous(if (missing(previous)) NULL else previous, NULL, original, masked, need_original = FALSE)
  attack_verb(composition_spec(), list(previous = prev$masked), original, masked, intruder, 1, control, seed,
              nthreads)
}

# The registry entry of the attack (battery_attacks()).
composition_spec <- function() {
  list(label = "composition of two releases joined row by row", fun = "attack_composition",
       args = list(), core = composition_core, needs_sensitive = FALSE, needs_previous = "release")
}

# Whether the intruder can join two releases row by row: the same number of rows and the
# same values, row by row, in every column both hold that is not in `vars`.
releases_aligned <- function(masked, previous, vars) {
  if (nrow(masked) != nrow(previous)) return(FALSE)
  cols <- setdiff(intersect(names(masked), names(previous)), vars)
  if (!length(cols)) return(TRUE)
  all(vapply(cols, function(v) identical(as.character(masked[[v]]), as.character(previous[[v]])), logical(1)))
}

# For the query rows `q` (z-scale, with their cells `qcell`): the rows of the released
# points `zr` (cells `rcell`) at the point nearest to each query within its cell (every
# row at that point: relative tolerance 1e-9 on the squared distance). A list of row sets.
nearest_point_rows <- function(zq, qcell, zr, rcell) {
  out <- vector("list", nrow(zq))
  by_cell <- split(seq_len(nrow(zr)), rcell)
  for (cq in split(seq_len(nrow(zq)), qcell)) {
    rows <- by_cell[[as.character(qcell[cq[1L]])]]
    if (is.null(rows)) {
      out[cq] <- list(integer())
      next
    }
    zrr <- zr[rows, , drop = FALSE]
    for (i in cq) {
      d2 <- colSums((t(zrr) - zq[i, ])^2)
      out[[i]] <- rows[d2 <= min(d2) * (1 + 1e-9) + 1e-12]
    }
  }
  out
}

composition_core <- function(s, previous, ...) {
  n <- s$n
  success <- confidence <- rep(NA_real_, n)
  rows <- which(s$known)
  if (!length(rows)) return(list(success = success, confidence = confidence, aligned = NA, mean_candidates = NA_real_))
  cols <- c(s$strata, s$key_cat)
  # the intruder joins the release it holds (in the control: its rows permuted within
  # strata) with `previous` position by position
  aligned <- releases_aligned(s$masked, previous, s$vars)
  zq <- cbind(s$zo, key_z(s, "original"))[rows, , drop = FALSE]
  zm <- cbind(s$zm, key_z(s, "masked"))
  cand_m <- nearest_point_rows(zq, s$cell_o[rows], zm, s$cell_m)
  if (aligned) {
    sp <- s
    sp$masked <- previous
    zp <- cbind(s$z(numeric_matrix(previous, s$vars)), key_z(sp, "masked"))
    cells <- joint_cells(previous, s$original, cols)
    cp <- cells[seq_len(nrow(previous))]
    co <- cells[nrow(previous) + rows]
    cand_p <- nearest_point_rows(zq, co, zp, cp)
    cand <- Map(function(a, b) {
      both <- intersect(a, b)
      if (length(both)) both else a
    }, cand_m, cand_p)
  } else {
    cand <- cand_m
  }
  size <- lengths(cand)
  own <- vapply(seq_along(rows), function(j) rows[j] %in% cand[[j]], logical(1))
  success[rows] <- ifelse(size > 0, own / pmax(size, 1L), 0)
  confidence[rows] <- ifelse(size > 0, 1 / pmax(size, 1L), 0)
  list(success = success, confidence = confidence, aligned = aligned, mean_candidates = mean(size),
       covers = "two releases of the same people joined row by row, candidate sets intersected",
       not_covered = paste("joining shuffled releases by their values, more than two releases,",
                           "cohorts that differ (see attack_differencing())."))
}
