#' The intruder an attack assumes
#'
#' Every attack of the risk battery ([risk_battery()], the `attack_*()` functions) plays one
#' intruder, described by this object, and every report says which. The intruder holds the
#' original values of some columns for some of the people in the data (the columns it
#' *holds*), sees the whole release, and may know how the release was made.
#'
#' The default of the battery, of the attacks and of [tune_release()] is
#' `intruder_published()`: an intruder who holds, beside the masked variables and the
#' strata, **every published column** of the release that is not masked and not declared
#' sensitive, each as an exact key. A column released unchanged (an outcome such as
#' Titanic's `Survived`, an age, a household code) is a column an intruder can hold: a
#' custodian who publishes it publishes a key. `intruder()` with its own defaults is **a
#' narrower intruder**, who holds only `vars`, `strata` and the `held` columns named: a model for
#' an intruder known to hold less, never the default of a check.
#'
#' * `vars`: continuous columns the intruder matches by distance (on the z-scale of the
#'   original data). Default: the masked variables recorded in the release.
#' * `strata`: categorical columns the intruder matches exactly. Default: the strata
#'   recorded in the release.
#' * `held`: further released columns the intruder holds, e.g. an outcome released
#'   unchanged (`"Survived"`). Categorical ones (factor, character, logical) are matched
#'   exactly, numeric ones by distance beside `vars`: a 0/1 outcome stored as numbers (as
#'   Titanic's `Survived`) joins the distance on its z-scale, which separates its two values
#'   by about two standard deviations; convert it to a factor for an exact match.
#'   `held = "all"` takes every other column common to the original and the release (numeric
#'   ones by distance); `held = "published"` (the intruder of `intruder_published()`) every
#'   other column common to both that is not `sensitive`, every one matched exactly by its
#'   value (numbers too: a published column is held as published).
#' * `sensitive` (`intruder_published()`): the custodian's sensitive columns, which the
#'   intruder is assumed not to hold (the columns an attack guesses). The `sensitive`
#'   column of [risk_battery()], [attack_inference()] and [tune_release()] is always one of
#'   them.
#' * `p`: the share of the original records the intruder holds (1: everyone in the data,
#'   the *maximum-knowledge intruder* of Domingo-Ferrer and Muralidhar). Attacks that need the
#'   other records use the release as a stand-in for them.
#' * `knows`: what the intruder knows of the masking: `"data"` (nothing: only the columns it holds and
#'   the release), `"recipe"` (the published algorithm, not its settings) or `"settings"`
#'   (the algorithm and every setting recorded in the release metadata). Following
#'   Kerckhoffs' principle, a release should be judged against `"settings"`: only a secret
#'   key, never part of the release or its metadata, may be assumed unknown.
#' * `keys`: the deprecated name of `held` (`key` names only the custodian's secret).
#'
#' @param vars,strata Column names, or `NULL` for the release's own (see above).
#' @param held Further columns held by the intruder, `"all"`, `"published"`, or `NULL` for
#'   none.
#' @param p Share of the original records the intruder holds, a number in (0, 1].
#' @param knows What the intruder knows of the masking: `"data"`, `"recipe"` or `"settings"`.
#' @param keys Deprecated name of `held`.
#' @return An object of class `detanon_intruder`.
#' @references Domingo-Ferrer J, Muralidhar K (2016). New directions in anonymization:
#'   permutation paradigm, verifiability by subjects and intruders, transparency to users.
#'   *Information Sciences* 337, 11-24.
#' @seealso [risk_battery()].
#' @examples
#' intruder_published()
#' intruder_published(sensitive = "Survived")
#' # a narrower intruder, who holds only the masked variables, the strata and Survived
#' intruder(held = "Survived", p = 0.1, knows = "recipe")
#' @family attacks
#' @export
intruder <- function(vars = NULL, strata = NULL, held = NULL, p = 1,
                     knows = c("settings", "recipe", "data"), keys) {
  if (!missing(keys)) held <- renamed_arg(keys, "keys", "held", !missing(held))
  for (a in c("vars", "strata", "held")) {
    v <- get(a)
    if (!is.null(v) && (!is.character(v) || anyNA(v) || any(!nzchar(v)))) {
      stop_arg("`", a, "` must be NULL or a character vector of column names, not ", show_value(v), ".")
    }
  }
  p <- check_number(p, "p", lower = 0, upper = 1, lower_open = TRUE)
  knows <- match_choice(knows, "knows")
  # (field `keys`: the request; intruder_view() adds `held`, the published columns resolved)
  structure(list(vars = vars, strata = strata, keys = held, p = p, knows = knows),
            class = "detanon_intruder")
}

#' @rdname intruder
#' @param sensitive Columns the intruder does not hold (the custodian's sensitive columns),
#'   left out of the published columns; `NULL` for none.
#' @export
intruder_published <- function(vars = NULL, strata = NULL, sensitive = NULL, p = 1,
                                knows = c("settings", "recipe", "data")) {
  if (!is.null(sensitive) && (!is.character(sensitive) || anyNA(sensitive) || any(!nzchar(sensitive)))) {
    stop_arg("`sensitive` must be NULL or a character vector of column names, not ", show_value(sensitive), ".")
  }
  out <- intruder(vars = vars, strata = strata, held = "published", p = p, knows = knows)
  out$sensitive <- unique(sensitive)
  out
}

# Whether an intruder holds every published column (intruder_published()).
is_published_intruder <- function(x) identical(x$keys, "published")

# The published columns of a pair an intruder of intruder_published() holds: every column
# common to `original` and `masked` that is not in `vars` or `strata` and not sensitive
# (of the intruder, or the `sensitive` column of the attack), in the order of `masked`.
published_keys <- function(original, masked, vars, strata, sensitive = NULL) {
  # (the row column tune_release() adds to an sdcMicroObj's data is not published)
  setdiff(intersect(names(masked), names(original)), c(vars, strata, sensitive, sdc_row_col))
}

#' @export
format.detanon_intruder <- function(x, ...) {
  cols <- function(v, none) if (is.null(v)) none else if (!length(v)) "none" else paste(v, collapse = ", ")
  know <- c(data = "not the masking", recipe = "the algorithm but not its settings",
            settings = "the algorithm and its settings")[[x$knows]]
  keys <- if (identical(x$keys, "all")) "every other released column"
          else if (is_published_intruder(x)) {
            paste0("every published column not masked",
                   if (length(x$sensitive)) paste0(" and not sensitive (", cols(x$sensitive, ""), ")") else "",
                   if (is.null(x$held)) ", exactly" else if (length(x$held)) paste0(", exactly: ", cols(x$held, ""))
                   else " (none beyond these)")
          } else cols(x$keys, "")
  c(sprintf("holds %s of the originals: %s by distance; %s exactly%s",
            if (x$p == 1) "all" else sprintf("%g%%", 100 * x$p),
            cols(x$vars, "the masked variables"), cols(x$strata, "the strata"),
            if (length(x$keys)) paste0("; also ", keys) else ""),
    sprintf("knows %s; no secret key", know))
}

#' @export
print.detanon_intruder <- function(x, ...) {
  cat(intruder_lines(x), sep = "\n")
  invisible(x)
}

# The description of an intruder wrapped to 80 columns, for print methods.
intruder_lines <- function(x, indent = "", lead = "Intruder who") {
  strwrap(paste(lead, paste(format(x), collapse = " and ")), width = 80,
          indent = nchar(indent), exdent = nchar(indent) + 2L)
}

# ---- the intruder's view of a pair ----------------------------------------------------

# Resolve the intruder against (original, masked): the columns it matches, both data sets
# on the z-scale of `original`, the strata, the original records it holds (`known`), and
# the data frames themselves (for attacks that read other columns). Attacks receive this
# object; the battery's control is the same object with the released rows permuted within
# strata (battery_permute()). An intruder measuring a group of strata carries the z-scale
# of all the original records as `scale` (global_scale()) and the whole release's metadata
# as `release` (risk_partitioned() sets both). `weights`: the column of sampling weights,
# published as given and never held by the intruder.
intruder_view <- function(original, masked, intruder, seed = NULL, sensitive = NULL, weights = NULL) {
  if (is.null(intruder)) intruder <- intruder_published()
  if (!inherits(intruder, "detanon_intruder")) {
    stop_arg("`intruder` must be made by intruder(), not ", show_value(intruder), ".")
  }
  s <- linkage_setup(original, masked, intruder$vars, intruder$strata, intruder$scale)
  # the attacks' table by stratum adds these columns beside the strata
  check_no_clash(s$strata, c("n", "n_attacked", "rate"), "strata")
  keys <- intruder$keys
  if (identical(keys, "all")) keys <- setdiff(intersect(names(original), names(masked)), c(s$vars, s$strata, weights))
  published <- is_published_intruder(intruder)
  if (published) {
    # every published column, held exactly (as the intruder reads it in the file)
    keys <- published_keys(original, masked, s$vars, s$strata,
                           c(intruder$sensitive, if (is.character(sensitive)) sensitive, weights))
    intruder$held <- keys
  }
  if (!is.null(weights) && weights %in% c(s$vars, s$strata, keys)) {
    stop_arg("`weights` (", weights, ") must not be a column the intruder holds (`vars`, `strata` or `held` ",
             "of `intruder`): sampling weights are published as given and are never a key.", kind = "column")
  }
  keys <- check_columns(keys, original, "held")
  check_columns(keys, masked, "held")
  both <- intersect(keys, c(s$vars, s$strata))
  if (length(both)) stop_arg("`held` repeats columns of `vars` or `strata`: ", quote_names(both), ".", kind = "column")
  num <- if (published) character() else
    keys[vapply(keys, function(v) is_continuous(original[[v]]) && is_continuous(masked[[v]]), logical(1))]
  for (v in num) {
    if (anyNA(original[[v]]) || anyNA(masked[[v]]) || !all(is.finite(original[[v]])) || !all(is.finite(masked[[v]]))) {
      stop_arg("Numeric key `", v, "` has missing or infinite values in `original` or `masked`; the ",
               "intruder matches numeric keys by distance: leave it out of `held`.", kind = "data")
    }
  }
  s$key_num <- num
  # the numeric keys' z-scale, of the original records
  s$key_scale <- if (!length(num)) NULL else if (is.null(intruder$scale)) column_scale(numeric_matrix(original, num))
                 else scale_columns(intruder$scale, num)
  s$key_cat <- setdiff(keys, num)
  s$intruder <- intruder
  # cells: the strata and the categorical keys, as the intruder matches them exactly, by
  # their values as exact text (exact_values(): a factor and a character column, or factors
  # with other levels, match by value; numbers by value, not by their rounded print, so
  # that cells never join strata that stratum_ids() keeps apart; a missing value is a value
  # of its own). A categorical key changed by the
  # masking (recoded, generalised, swapped) puts a record in another cell than its original:
  # the attacks then search the cell the released (or the original) value names.
  s$cat_cols <- c(s$strata, s$key_cat)
  cell <- cells_of_pair(s, original, masked)
  s$cell_o <- cell$a
  s$cell_m <- cell$b
  s$original <- original
  s$masked <- masked
  s$known <- if (intruder$p == 1) rep(TRUE, s$n) else {
    with_seed(seed, {
      k <- logical(s$n)
      k[sample.int(s$n, max(1L, round(intruder$p * s$n)))] <- TRUE
      k
    })
  }
  s
}

# The columns `cols` of `d` as text, as the intruder matches them exactly (see
# intruder_view()).
cell_text <- function(d, cols) {
  out <- lapply(as.list(d)[cols], exact_values)
  as.data.frame(out, stringsAsFactors = FALSE, col.names = cols, optional = TRUE)
}

# The cells (ids over both) of two data frames `a` and `b` on the intruder's exact columns.
cells_of_pair <- function(s, a, b) {
  cols <- s$cat_cols
  # (each column's text of both, one after the other: the ids of their rbind(), without
  # rbind()'s data frame)
  cell <- if (length(cols)) combination_ids(lapply(cols, function(v) c(exact_values(a[[v]]), exact_values(b[[v]]))))
          else rep.int(1L, nrow(a) + nrow(b))
  list(a = cell[seq_len(nrow(a))], b = cell[nrow(a) + seq_len(nrow(b))])
}

# The intruder's distance columns of any data frame `d` with the columns of the pair: the
# variables and the numeric keys on the z-scale of the original data.
view_z <- function(s, d) {
  cbind(s$z(numeric_matrix(d, s$vars)), if (length(s$key_num)) z_scores(numeric_matrix(d, s$key_num), s$key_scale))
}

# The control of an attack: the same release with its rows permuted within strata so that
# no record stands at its own position (a derangement of every stratum of two or more).
# The attack then "succeeds" only when it points at the position of a person who is not
# the target: what it achieves on people who are not in the release but resemble those who
# are. A stratum of one has no one to stand in for its record: its control success is 0.
battery_permute <- function(s, seed = NULL) {
  perm <- with_seed(seed, derange_within(s$id))
  s$masked <- s$masked[perm, , drop = FALSE]
  s$zm <- s$zm[perm, , drop = FALSE]
  s$cell_m <- s$cell_m[perm]
  s$perm <- perm
  s
}

# A random permutation of 1..n that moves every element to another position of its group
# (groups of one stay in place; callers treat them separately).
derange_within <- function(id) {
  perm <- seq_along(id)
  groups <- split(seq_along(id), id)
  for (g in groups) {
    if (length(g) < 2L) next
    # a random cyclic shift of a random order is a derangement of the group
    o <- g[sample.int(length(g))]
    perm[o] <- o[c(2:length(o), 1L)]
  }
  perm
}

# The sampling weights `weights` of `data` are never a key of the intruder: a classed
# warning when they single out more than half of the records (a weight unique to a record,
# as in sdcMicro's CASCrefmicrodata), which the battery then does not measure.
warn_unique_weights <- function(data, weights) {
  w <- data[[weights]]
  n_unique <- sum(!duplicated(w) & !duplicated(w, fromLast = TRUE))
  if (n_unique > length(w) / 2) {
    warn_detanon("the sampling weights `", weights, "` are unique to ", n_unique, " of the ",
                 plural(length(w), "record"), ": published as given, they single those records out for anyone ",
                 "who holds the weights, and the intruder of the battery does not hold them. Leave the column ",
                 "out of `weights` (the default intruder then holds it as a published column) or coarsen it.",
                 kind = "identifier")
  }
  invisible()
}

# ---- suppressed keys: a suppressed released value matches any value ------------------------

# The linkage of the records a suppressed key touches: a released categorical key (a
# stratum or a categorical key of the intruder) that is missing where the original has a
# value (a suppressed cell) matches any value, as in sdcMicro and the singling-out attack,
# so such a released record is a candidate in every cell it could belong to. (A value
# missing on both sides is a value of its own, as in the exact cells.) `zo`, `zm`: the
# distance columns of both sides; `rows`: the attacked direction's tree rows
# (linkage_core()), query i's own point being tree row i.
# * `released`: a released record with a suppressed key searches every known original that
#   equals it on its other keys;
# * original -> released: an original searches its own cell and the released records with
#   suppressed keys that equal it on their other keys.
# Counted in R over each group of queries that shares its candidates (exact squared
# distances, column by column); an original whose own released record is complete counts
# its own cell on the kd-trees of linkage_core() (`index` over the tree rows, `tree_of` the
# tree of each query's cell, 0 for none) and only the suppressed records in R. Returns NULL
# when no released key is suppressed (the exact cells of linkage_core() are then the whole
# answer, bit for bit), else the query rows it decides (`at`, positions in `rows`) with
# their `success`, `success_m` and `confidence`.
wildcard_linkage <- function(s, zo, zm, rows, released, m, index, tree_of, nthreads) {
  cols <- s$cat_cols
  if (!length(cols) || !length(rows)) return(NULL)
  # suppressed: missing in a released record whose own original (in the control, that of
  # the person whose record the row holds) has a value
  own <- if (is.null(s$perm)) rows else s$perm[rows]
  miss <- matrix(vapply(cols, function(v) is.na(s$masked[[v]][rows]) & !is.na(s$original[[v]][own]),
                        logical(length(rows))), ncol = length(cols))
  hole <- rowSums(miss) > 0L
  if (!any(hole)) return(NULL)
  ko <- cell_text(s$original[rows, , drop = FALSE], cols)
  km <- cell_text(s$masked[rows, , drop = FALSE], cols)
  pattern <- character(length(rows))
  pattern[hole] <- apply(miss[hole, , drop = FALSE], 1L, function(r) paste(which(r), collapse = ","))
  known <- s$known[rows]
  # the ids of the originals and of the released records `h` (one pattern of suppressed
  # keys) on the other keys
  given_ids <- function(h) {
    given <- cols[!miss[h[1L], ]]
    id <- if (length(given)) stratum_ids(rbind(ko[given], km[h, given, drop = FALSE]), given)
          else rep(1L, length(rows) + length(h))
    list(o = id[seq_along(rows)], m = id[length(rows) + seq_along(h)])
  }
  groups <- list() # list(q = query positions, c = candidate positions)
  if (released) {
    # the queries are the released records with suppressed keys; candidates: known originals
    for (p in unique(pattern[hole & known])) {
      h <- which(hole & pattern == p & known)
      id <- given_ids(h)
      for (g in split(seq_along(h), id$m)) {
        groups[[length(groups) + 1L]] <- list(q = h[g], c = which(id$o == id$m[g[1L]] & known))
      }
    }
  } else {
    # candidates of an original: the released records of its cell without suppressed keys,
    # and those with suppressed keys that equal it on their other keys
    cell_o <- s$cell_o[rows]
    cell_m <- s$cell_m[rows]
    reps <- which(!duplicated(cell_o)) # one original per cell: the cell's values
    compat <- vector("list", length(reps)) # per cell: the compatible released records with holes
    for (p in unique(pattern[hole])) {
      h <- which(hole & pattern == p)
      id <- given_ids(h)
      by_id <- split(h, id$m)
      at <- match(id$o[reps], as.integer(names(by_id)))
      for (r in which(!is.na(at))) compat[[r]] <- c(compat[[r]], by_id[[at[r]]])
    }
    cell_rep <- match(cell_o, cell_o[reps])
    touched <- known & (hole | lengths(compat)[cell_rep] > 0L)
    for (g in split(which(touched), cell_o[touched])) {
      # (`own_cell`: originals whose own released record is complete, their cell counted in C)
      extra <- compat[[cell_rep[g[1L]]]]
      q <- g[hole[g]]
      if (length(q)) {
        groups[[length(groups) + 1L]] <- list(q = q, c = sort(c(which(!hole & cell_m == cell_o[g[1L]]), extra)))
      }
      # (the trees hold the suppressed records whose released cell is the original's)
      q <- g[!hole[g]]
      extra <- extra[cell_m[extra] != cell_o[g[1L]]]
      if (length(q)) groups[[length(groups) + 1L]] <- list(q = q, c = extra, own_cell = TRUE)
    }
  }
  zt <- (if (released) zo else zm)[rows, , drop = FALSE]
  zq <- (if (released) zm else zo)[rows, , drop = FALSE]
  at <- unlist(lapply(groups, `[[`, "q"))
  out <- list(at = at, success = numeric(length(at)), success_m = numeric(length(at)),
              confidence = numeric(length(at)))
  # the originals whose own cell is counted on the kd-trees: ranks of the own point in it
  # (as linkage_core(): up to `cap`) and its two nearest points
  cell_q <- unlist(lapply(groups, function(g) if (isTRUE(g$own_cell)) g$q))
  in_cell <- logical(length(rows))
  if (length(cell_q)) {
    in_cell[cell_q] <- s$cell_m[rows][cell_q] == s$cell_o[rows][cell_q]
    rk <- battery_ranks(index, zq, in_cell, max(m, 2L), nthreads)
    nn <- .Call(C_ffi_battery_nn2, index, zq, as.integer(replace(integer(length(rows)), cell_q, tree_of[cell_q])),
                nthreads)
  }
  pos <- 0L
  for (g in groups) {
    for (q in split(g$q, ceiling(seq_along(g$q) / max(1L, floor(1e7 / max(1L, length(g$c))))))) {
      d2 <- matrix(0, length(q), length(g$c))
      for (j in seq_len(ncol(zt))) d2 <- d2 + outer(zq[q, j], zt[g$c, j], "-")^2
      i <- pos + seq_along(q)
      pos <- pos + length(q)
      # the nearest and second-nearest candidates (NNDR, as nndr_confidence()); Inf: none
      near <- matrix(Inf, length(q), 2L)
      if (length(g$c)) {
        first <- cbind(seq_along(q), max.col(-d2, ties.method = "first"))
        near[, 1L] <- sqrt(d2[first])
        if (length(g$c) > 1L) {
          others <- d2
          others[first] <- Inf
          near[, 2L] <- sqrt(others[cbind(seq_along(q), max.col(-others, ties.method = "first"))])
        }
      }
      if (isTRUE(g$own_cell)) {
        d_own <- 0
        for (j in seq_len(ncol(zt))) d_own <- d_own + (zq[q, j] - zt[q, j])^2
        ranks <- rk[q, , drop = FALSE] + cbind(rowSums(d2 < d_own), rowSums(d2 <= d_own))
        own <- ifelse(in_cell[q], 1L, NA_integer_)
        cn <- nn[q, , drop = FALSE]
        cn[is.na(cn)] <- Inf
        near <- cbind(pmin(cn[, 1L], near[, 1L]), pmin(pmax(cn[, 1L], near[, 1L]), pmin(cn[, 2L], near[, 2L])))
      } else {
        own <- match(q, g$c)
        d_own <- d2[cbind(seq_along(q), ifelse(is.na(own), 1L, own))]
        ranks <- cbind(rowSums(d2 < d_own), rowSums(d2 <= d_own))
      }
      out$success[i] <- ifelse(is.na(own), 0, top_m_share(ranks, 1))
      out$success_m[i] <- ifelse(is.na(own), 0, top_m_share(ranks, m))
      out$confidence[i] <- ifelse(is.infinite(near[, 1L]), 0, ifelse(is.infinite(near[, 2L]), 1,
                                  ifelse(near[, 2L] == 0, 0, 1 - near[, 1L] / near[, 2L])))
    }
  }
  out
}
