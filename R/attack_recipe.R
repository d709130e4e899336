#' The algorithm-aware intruder: candidate centroids looked up in the release
#'
#' An intruder who knows how the release was made (the published recipe of [anonymise()],
#' Kerckhoffs' principle) and holds the originals of the keys (see [intruder()]) recomputes
#' what the release should hold for each person it knows, and looks it up:
#' 1. for each plausible `k`, the centroid of every record and its k - 1 nearest neighbours
#'    in its stratum (on the z-scale, as [anonymise()] does). The neighbourhoods are built
#'    from the originals the intruder holds and, for the records it does not hold (a share
#'    `p < 1`), from their released values, which stand in for their originals;
#' 2. step 5 (each column of centroids divided by its SD, about the origin of the
#'    z-scale) is applied to the candidates, and then the release format (the squeezed
#'    tails and rounding of `format = "natural"`; the recorded format when the settings are
#'    known), with the range bounds estimated from the intruder's originals and the
#'    stand-ins (on their own scale, as [anonymise()] saw the data: a column of whole
#'    numbers is one): the scale comes from the candidates and the release, not from metadata;
#' 3. every rescaled candidate is looked up in the release: the claim is the nearest
#'    released record of the person's cell (stratum and categorical keys). For several
#'    plausible `k`, the `k` whose candidate lies nearest to a released record is taken, per
#'    record (`k_choice = "record"`) or the one that matches most records for all
#'    (`"global"`).
#'
#' The claim is right when the nearest released record is the person's own (ties shared at
#' random: the success is the expected share). The confidence is `1 / (1 + dist / tol)`,
#' with `dist` the distance from the candidate to the nearest released record on the
#' z-scale and `tol = 1e-6`: a claim within `tol` is *certain* (the candidate is a released
#' record), and the result reports the share of certain claims and their precision.
#'
#' For a release of [anonymise_mdav()] the intruder runs MDAV itself on its originals and
#' stand-ins, with the recorded `k` (settings known; else every `k` from 2 to `k_max`): the
#' candidate of a record is the mean of its group, looked up as above. Holding every
#' original, it recomputes the groups exactly, which reveals the group (shared by `k` or
#' more released records), not the record.
#'
#' For a release of [anonymise_keyed()] the intruder runs that verb itself on its originals
#' and stand-ins, with the recorded `k` and `size` (settings known; else the verb's
#' defaults) and a key of its own, since it does not hold the custodian's: the candidate of
#' a record is the mean of the group the intruder's partition puts it in, looked up as
#' above. (With the right key the candidate would be the record's released point, which a
#' whole group of records share.)
#'
#' What the intruder knows sets the `k` tried: with `intruder(knows = "settings")` the `k`
#' recorded in the release (a range up to `k_max` of [anonymise_adaptive()]). A release of
#' [anonymise_adaptive()] with a table of `k` per stratum, `m = 0` and no `w1` (every record
#' keeps its stratum's `k`) is replayed as it was made: each record's candidate is its
#' centroid at its stratum's `k` (in the release's strata; a stratum the table lacks takes
#' its smallest `k`, a stratum smaller than its `k` has no candidate, a miss), and the whole
#' candidate set is formatted once, as the release was. With
#' `knows = "recipe"` (or a release that records no `k`) every `k` from 2 to `k_max`. With
#' `knows = "data"` the intruder does not know the algorithm and the attack does not apply:
#' every success is `NA`.
#'
#' This attack supersedes [risk_replay()], which replays the masking on the known records
#' alone: letting the release stand in for the records the intruder does not hold, and
#' estimating the scale from the release, is the stronger attack (on the same knowledge).
#'
#' @section Memory:
#' The `k` tried are made and looked up a block at a time (at most 256 MiB of centroids per
#' block), keeping per record only its best candidate so far: the memory does not grow with
#' the number of `k` (158 `k` on 100,000 records: 0.5 GB at its peak, with the control;
#' `bench/results/battery.txt`).
#'
#' @section What it does not cover:
#' Stages other than the kNN centroids of [anonymise()] (stirring, blending, noise) are not
#' modelled: on such releases the lookup is approximate. An intruder who iterates (re-solving
#' the unknown records from the release), attribute inference, and linking with other
#' releases are not covered.
#' @inheritParams risk_battery
#' @param k The `k` values the intruder tries (whole numbers >= 2), or `NULL` to take them
#'   from what the intruder knows (see above).
#' @param k_max The largest `k` tried when the release does not tell.
#' @param k_choice `"record"` (the best-matching `k` per record) or `"global"` (one `k` for
#'   all, the one with most certain matches).
#' @return An object of class `detanon_attack` (see [risk_battery()]); its `details` hold
#'   `k` (the `k` tried), `k_used` (a table of the `k` chosen), `scale` (the estimated
#'   step-5 slope per variable at the most used `k`), `tol`, `share_certain` and
#'   `precision_certain`.
#' @seealso [risk_replay()], which this attack supersedes.
#' @references Domingo-Ferrer J, Muralidhar K (2016). New directions in anonymization:
#'   permutation paradigm, verifiability by subjects and intruders, transparency to users.
#'   *Information Sciences* 337, 11-24.
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' attack_recipe(d, masked, seed = 1)
#' attack_recipe(d, masked, intruder = intruder(p = 0.1, knows = "recipe"), k_max = 6, seed = 1)
#' @family attacks
#' @export
attack_recipe <- function(original, masked, intruder = NULL, k = NULL, k_max = 10,
                          k_choice = c("record", "global"), m = 3, control = TRUE,
                          nthreads = getOption("detanon.nthreads", 1L), seed = NULL) {
  if (!is.null(k)) {
    if (!is.numeric(k) || !length(k) || anyNA(k) || any(k < 2 | k != round(k) | k > .Machine$integer.max)) {
      stop_arg("`k` must be NULL or whole numbers >= 2, not ", show_value(k), ".")
    }
    k <- sort(unique(as.integer(k)))
  }
  k_max <- check_whole(k_max, "k_max", min = 2)
  k_choice <- match_choice(k_choice, "k_choice")
  attack_verb(recipe_spec(), list(k = k, k_max = k_max, k_choice = k_choice),
              original, masked, intruder, m, control, seed, nthreads)
}

# The registry entry of the attack (battery_attacks()).
recipe_spec <- function() {
  list(label = "algorithm-aware intruder (candidate centroids)", fun = "attack_recipe",
       args = list(k = NULL, k_max = 10, k_choice = "record"), core = recipe_core,
       needs_sensitive = FALSE)
}

# The release metadata of the view's release (also for a control view, whose rows are
# permuted: put back in order first), or NULL; read once for the view and its control (the
# same release).
view_release_info <- function(s) {
  # a partitioned run (risk_partitioned()): the metadata of the whole release
  if (!is.null(s$intruder$release)) return(s$intruder$release)
  view_shared(s, "release info", list(s$n, s$vars), function() {
    masked <- if (!is.null(s$perm)) s$masked[order(s$perm), , drop = FALSE] else s$masked
    suppressWarnings(release_info(masked))
  })
}

# The k the intruder tries: given, recorded in the release (settings known), or 2..k_max.
recipe_k <- function(s, k, k_max) {
  if (!is.null(k)) return(k)
  if (s$intruder$knows == "settings") {
    info <- view_release_info(s)
    if (!is.null(info) && info$verb %in% c("anonymise", "anonymise_adaptive")) {
      set <- info$settings
      kk <- if (is.data.frame(set$k)) set$k$k else set$k
      if (info$verb == "anonymise_adaptive") return(seq.int(min(kk), max(set$k_max, kk)))
      return(as.integer(kk))
    }
  }
  seq.int(2L, k_max)
}

recipe_core <- function(s, m, nthreads, k = NULL, k_max = 10, k_choice = "record", ...) {
  n <- s$n
  success <- success_m <- confidence <- rep(NA_real_, n)
  if (s$intruder$knows == "data") {
    return(list(success = success, success_m = success_m, confidence = confidence,
                not_covered = "an intruder who does not know the algorithm (this one does not)."))
  }
  ks <- recipe_k(s, k, k_max)
  known <- s$known
  rows <- which(known)
  # the neighbourhoods: the intruder's originals, the release standing in for the others
  # (every original held: the originals themselves, not a copy)
  zmix <- if (all(known) && identical(typeof(s$zo), typeof(s$zm)) && identical(attributes(s$zo), attributes(s$zm))) {
    s$zo
  } else {
    z <- s$zm
    z[known, ] <- s$zo[known, ]
    z
  }
  # the same on their own scale, for the release format (whole numbers stay whole)
  xmix <- recipe_values(s)
  kz_o <- key_z(s, "original")
  zt <- view_key_z(s, "masked")
  tol <- 1e-6
  format <- recipe_format_of(s)
  same <- s$cell_o == s$cell_m
  look <- rows[same[rows]]
  # a release of anonymise_keyed(): the intruder runs it without the key (a wrong one)
  keyed <- recipe_keyed(s)
  if (!is.null(keyed)) ks <- keyed$k
  # a release of anonymise_mdav(): the intruder runs MDAV on its originals and stand-ins
  mdav <- if (is.null(keyed)) recipe_mdav(s, k_max)
  if (!is.null(mdav)) ks <- mdav$k
  centroid_k <- is.null(keyed) && is.null(mdav)
  # a release in which every record keeps its stratum's k (a k table, nothing grown): one
  # candidate set, each record's centroid at its stratum's k, formatted as the release was
  tab <- if (centroid_k && is.null(k)) recipe_k_table(s)
  # (the k of each candidate set in the release format)
  k_form <- ks
  if (!is.null(tab)) {
    ks <- sort(unique(tab$k))
    k_form <- tab$k_format
  }
  # the centroids of the k tried, a block of k at a time (recipe_centroids())
  cens <- if (centroid_k) recipe_centroids(s, zmix, ks, tab, nthreads)
  # one step-5 factor for every k (a release with k per record has one): the recorded one
  # when the settings are known, else recovered from the release
  common <- if (centroid_k) recipe_common_scale(s, cens, look, zt)
  # the candidates depend on the intruder's originals and stand-ins only, and their nearest
  # released records on the released records of each cell, not on their rows: with every
  # original known, the control (the same release, rows permuted) makes the view's choice
  # of candidate (recipe_choose()) for the records it looks up, which the view keeps for it
  inputs <- list(zmix = zmix, xmix = xmix, common = common, format = format, ks = ks, k_form = k_form, tab = tab,
                 keyed = keyed, mdav = mdav, kz_o = kz_o, cell_o = s$cell_o, k_choice = k_choice, tol = tol)
  cap <- max(m, 2L)
  best <- recipe_view_choice(control_take(s, "recipe_choice", list(zt, s$cell_m)), inputs, look)
  if (is.null(best)) {
    best <- recipe_choose(s, zmix, xmix, zt, kz_o, look, cens, common, keyed, mdav, k_form, format,
                          k_choice, tol, nthreads, k_list = cap + 1L)
    control_keep(s, "recipe_choice", c(best, list(inputs = inputs, look = look)), list(zt, s$cell_m))
  }
  scales <- best$scales
  if (length(look)) {
    choice <- best$choice
    dist <- sqrt(best$d1)
    zq <- matrix(0, n, ncol(zt))
    fin <- is.finite(dist)
    zq[look[fin], ] <- cbind(best$cand, kz_o[look, , drop = FALSE])[fin, , drop = FALSE]
    want <- logical(n)
    want[look] <- fin
    # the capped rank count of the linkage attacks: a claim far from its own record, as in
    # the control, costs no more than a right one
    ranks <- recipe_ranks(s, zt, zq, want, best$d2, look, cap, nthreads)
    hit <- which(want)
    ranks <- ranks[hit, , drop = FALSE]
    success[hit] <- top_m_share(ranks, 1)
    success_m[hit] <- top_m_share(ranks, m)
    conf <- 1 / (1 + dist / tol)
    confidence[look] <- ifelse(fin, conf, 0)
    # records of strata smaller than every k tried: no candidate, a miss
    none <- look[!fin]
    success[none] <- success_m[none] <- 0
    certain <- fin & dist <= tol
    k_used <- table(factor(if (is.null(tab)) ks[choice] else tab$k[look], levels = ks))
    main <- which.max(tabulate(choice, length(k_form)))
  } else {
    certain <- logical()
    k_used <- table(factor(integer(), levels = ks))
    main <- 1L
  }
  miss <- rows[!same[rows]]
  success[miss] <- success_m[miss] <- confidence[miss] <- 0
  list(success = success, success_m = success_m, confidence = confidence,
       k = ks, k_used = k_used,
       # per variable of the z-scale (constant variables, which carry nothing, are not in it)
       scale = if (length(scales) >= main && length(scales[[main]]) == length(s$z_vars))
                 stats::setNames(scales[[main]], s$z_vars) else NULL,
       tol = tol, share_certain = if (length(rows)) sum(certain) / length(rows) else NA_real_,
       precision_certain = if (any(certain)) mean(success[look][certain]) else NA_real_,
       not_covered = paste("stages other than the kNN centroids (stirring, blending, noise),",
                           "an intruder who re-solves the records it does not hold, attribute",
                           "inference, linking with other releases."))
}

# The candidate of every looked-up record `look` and its distance to the nearest released
# record, for each candidate set a (the k of `k_form`) in turn: list(choice, d1, cand,
# scales, d2), per looked-up record the candidate set chosen (k_choice "record": the first whose
# candidate is a released record, within `tol`, else the nearest, the first of equals;
# "global": the one of most such records, then of the smallest median squared distance, then
# the first, for all), the squared distance from its candidate (Inf: none) and its candidate
# (a row of `cand`), and per set the step-5 factors. The sets are made and looked up one at
# a time, keeping only the best so far (the choice of max.col(ties.method = "first") and
# order() over every set at once, which held every set's candidates and distances): the
# memory does not grow with the number of k. With one candidate set, `d2`: the squared
# distances of the `k_list` nearest released records of every candidate (the same search,
# its first column the distance compared; Inf where none), for recipe_ranks(); NULL with
# several sets. `cens`: recipe_centroids(), for the centroids of the kNN releases; `keyed`,
# `mdav`: the releases of anonymise_keyed() and anonymise_mdav().
recipe_choose <- function(s, zmix, xmix, zt, kz_o, look, cens, common, keyed, mdav, k_form, format,
                          k_choice, tol, nthreads, k_list = 1L) {
  nl <- length(look)
  global <- k_choice == "global" && length(k_form) > 1L
  # (one set: its search gives the list too)
  kq <- if (length(k_form) == 1L) as.integer(k_list) else 1L
  dl <- NULL
  scales <- list()
  choice <- rep(1L, nl)
  d1 <- rep(Inf, nl)
  cand <- matrix(NA_real_, nl, ncol(zmix))
  # "record": the distance max.col() compares (0 within tol); "global": the best counts
  d1c <- rep(Inf, nl)
  best_hits <- -1
  best_med <- Inf
  take <- function(a, pred, d) {
    if (!global) {
      dc <- ifelse(sqrt(d) <= tol, 0, d)
      up <- which(dc < d1c)
      if (!length(up)) return()
      d1c[up] <<- dc[up]
      choice[up] <<- a
      d1[up] <<- d[up]
      if (!is.null(pred)) cand[up, ] <<- pred[look[up], , drop = FALSE]
      return()
    }
    hits <- sum(sqrt(d) <= tol)
    med <- stats::median(d)
    if (a > 1L && (hits < best_hits || (hits == best_hits && !(med < best_med)))) return()
    best_hits <<- hits
    best_med <<- med
    choice[] <<- a
    d1 <<- d
    cand[] <<- if (!is.null(pred)) pred[look, , drop = FALSE] else NA_real_
  }
  block <- NULL
  for (a in seq_along(k_form)) {
    d <- rep(Inf, nl)
    pred <- NULL
    if (!is.null(mdav)) {
      scales[[a]] <- rep(1, ncol(zmix))
      pred <- recipe_format(mdav_predict(zmix, mdav, a, nthreads), xmix, s, k_form[a], format, keep = "masked")
    } else if (!is.null(keyed)) {
      scales[[a]] <- rep(1, ncol(zmix))
      id <- keyed_cells(as.data.frame(s$original), s$id, keyed$keys, character(), keyed$k)
      raw <- view_shared(s, "recipe_keyed", list(zmix, id, keyed), function() keyed_predict(zmix, id, keyed))
      pred <- recipe_format(raw, xmix, s, k_form[a], format, keep = "masked")
    } else {
      b <- cens$block[a]
      if (is.null(block) || block$b != b) {
        block <- NULL # (let the previous block go first)
        block <- list(b = b, cens = cens$get(b))
      }
      cen <- block$cens[[cens$at[a]]]
      el <- which(!is.na(cen[, 1L]))
      if (length(el)) {
        a_j <- recipe_scale(cen[el, , drop = FALSE])
        if (!is.null(common)) a_j <- ifelse(is.na(common), a_j, common)
        scales[[a]] <- a_j
        pred <- recipe_format(sweep(cen, 2L, a_j, "*"), xmix, s, k_form[a], format)
      }
      rm(cen)
    }
    if (kq > 1L) dl <- matrix(Inf, nl, kq)
    if (!is.null(pred)) {
      ok <- !is.na(pred[look, 1L])
      if (any(ok)) {
        q <- cbind(pred, kz_o)[look[ok], , drop = FALSE]
        nb <- nearest_in_cells(zt, q, s$cell_m, s$cell_o[look[ok]], k = kq, nthreads = nthreads)$d2
        d[ok] <- nb[, 1L]
        if (kq > 1L) dl[ok, ] <- nb
        rm(nb)
      }
    }
    if (nl) take(a, pred, d)
  }
  list(choice = choice, d1 = d1, cand = cand, scales = scales, d2 = dl)
}

# The view's choice `prev` (recipe_choose(), with the `inputs` and `look` it was made from)
# for a control with the same `inputs` that looks up the records `look`: the choice of each
# record is its own (its distances at each k), so the control takes the view's for its
# records when it looks up no other (its cells differ from the view's where a categorical
# key holds other values in the release: records are then looked up in the control that
# were not in the view); a choice for all (`"global"`) is taken for the same records only.
# NULL otherwise.
recipe_view_choice <- function(prev, inputs, look) {
  if (is.null(prev) || !identical(prev$inputs, inputs)) return(NULL)
  at <- match(look, prev$look)
  global <- inputs$k_choice == "global" && length(inputs$k_form) > 1L
  if (anyNA(at) || (global && !identical(look, prev$look))) return(NULL)
  list(choice = prev$choice[at], d1 = prev$d1[at], cand = prev$cand[at, , drop = FALSE], scales = prev$scales,
       d2 = if (!is.null(prev$d2)) prev$d2[at, , drop = FALSE])
}

# The capped ranks of battery_ranks() on the released index of `zt` (a tree per cell of
# s$cell_m) for the queries `zq` of the rows `want` (looked-up records, each queried in its own
# cell), read off the squared distances of the cap + 1 nearest released records of each query
# (nn2_list_ranks(), src/nn2.c: the same sums as the tree's descents, hence the same counts):
# `d2` by row of `look` (recipe_choose()'s search, which the control takes with the view's
# choice: the same candidates, the same released points in each cell; its own records are
# other rows of them), or searched here when NULL. A row the list cannot decide (ties up to
# its last entry) is counted on the trees of its cell (recipe_tree_ranks()), as is every row
# when a coordinate is not finite (the nearest points are then not defined by the points
# alone).
recipe_ranks <- function(s, zt, zq, want, d2, look, cap, nthreads) {
  if (!any(want) || !all(is.finite(zt))) return(battery_ranks(released_index(s, zt), zq, want, cap, nthreads))
  storage.mode(zt) <- "double"
  dd <- matrix(Inf, s$n, cap + 1L)
  if (!is.null(d2) && ncol(d2) == cap + 1L) {
    dd[look, ] <- d2
  } else {
    hit <- which(want)
    dd[hit, ] <- nearest_in_cells(zt, zq[hit, , drop = FALSE], s$cell_m, s$cell_m[hit], k = cap + 1L,
                                  nthreads = nthreads)$d2
  }
  size <- tabulate(s$cell_m, max(c(0L, s$cell_m)))[s$cell_m]
  ranks <- .Call(C_ffi_knn_ranks, dd, size, zq, zt, want, as.double(cap))[, 1:2, drop = FALSE]
  redo <- want & is.na(ranks[, 1L])
  if (any(redo)) ranks[redo, ] <- recipe_tree_ranks(s, zt, zq, redo, cap, nthreads)
  ranks
}

# battery_ranks() on the released index of `zt` for the rows `redo`, as a matrix of their
# rows: on the trees of the cells that hold them only (the same points in each, hence the
# same counts), or on the view's index of every cell (released_index(), which other attacks
# share) when every cell holds one.
recipe_tree_ranks <- function(s, zt, zq, redo, cap, nthreads) {
  sub <- which(s$cell_m %in% s$cell_m[redo])
  if (length(sub) == s$n) return(battery_ranks(released_index(s, zt), zq, redo, cap, nthreads)[redo, , drop = FALSE])
  zs <- zt[sub, , drop = FALSE]
  index <- rank_index(zs, cell_setup(s$cell_m[sub]))
  battery_ranks(index, zq[sub, , drop = FALSE], redo[sub], cap, nthreads)[redo[sub], , drop = FALSE]
}

# The centroids of every record at each k of `ks` (the candidates of a kNN release), a block
# of k at a time: list(block, at, get), the block of each k, its place in its block, and
# get(b), the centroids of the b-th block (strata_centroids_multi(): one neighbour search
# per record for its block), and the number of blocks. A block holds at most
# recipe_block_values() values (at least one k): the memory does not grow with the number
# of k; with several blocks, each is made anew when asked for (the step-5 factor from the
# release, recipe_common_scale(), then asks for each twice). One block is made once, and
# the view and its control share it (view_shared()). For a release with a k per stratum
# (`tab`), one block of one set: every record at its own k.
recipe_centroids <- function(s, zmix, ks, tab, nthreads) {
  if (!is.null(tab)) {
    get <- function(b) {
      list(view_shared(s, "recipe_centroids", list(zmix, tab$id, tab$k),
                       function() strata_centroids_at(zmix, tab$id, tab$k, nthreads)))
    }
    return(list(block = 1L, at = 1L, get = get, n_blocks = 1L))
  }
  per <- max(1L, floor(recipe_block_values() / max(1, length(zmix))))
  block <- (seq_along(ks) - 1L) %/% per + 1L
  at <- (seq_along(ks) - 1L) %% per + 1L
  n_blocks <- max(c(0L, block))
  one <- NULL
  get <- function(b) {
    if (n_blocks > 1L) return(strata_centroids_multi(zmix, s$id, ks[block == b], nthreads))
    # (one block: made once, for the step-5 factor and the candidates)
    if (is.null(one)) {
      one <<- view_shared(s, "recipe_centroids", list(zmix, s$id, ks), function() strata_centroids_multi(zmix, s$id, ks, nthreads))
    }
    one
  }
  list(block = block, at = at, get = get, n_blocks = n_blocks)
}

# The number of values (records x variables x k) of a block of centroids of
# recipe_centroids(): 2^25 doubles, 256 MiB (the option `detanon.recipe_block_values`
# changes it, for the tests).
recipe_block_values <- function() getOption("detanon.recipe_block_values", 2^25)

# For a release of anonymise_adaptive() with a table of k per stratum, `m = 0` and no
# `w1` (every record keeps its stratum's k) when the intruder knows the settings, and no k
# is given: list(id, k, k_format), the strata of the release (their ids on the view's
# records, the neighbourhoods of its centroids), the k of each record (that of its stratum
# in the table; a stratum the table lacks takes its smallest k), and the k of the release
# format (the smallest of the table, as the verb formats). NULL otherwise, and when the
# view lacks the release's strata columns.
recipe_k_table <- function(s) {
  if (s$intruder$knows != "settings") return(NULL)
  info <- view_release_info(s)
  if (is.null(info) || !identical(info$verb, "anonymise_adaptive")) return(NULL)
  set <- info$settings
  strata <- set$strata
  df <- as.data.frame(s$original)
  if (!is.data.frame(set$k) || !identical(as.numeric(set$m), 0) || !is.null(set$w1) ||
      !all(c(strata, "k") %in% names(set$k)) || !all(strata %in% names(df))) {
    return(NULL)
  }
  id <- stratum_ids(df, strata)
  list(id = id, k = recorded_k(df, strata, id, set$k)[id], k_format = as.integer(min(set$k$k)))
}

# The k of each stratum (ids `id` of the rows of `df`, by the `strata` columns) in a
# recorded table of k per stratum `tab`; a stratum the table lacks takes its smallest k.
recorded_k <- function(df, strata, id, tab) {
  first <- df[match(seq_len(max(c(0L, id))), id), strata, drop = FALSE]
  kk <- tab$k[match(stratum_keys(first, strata), stratum_keys(tab, strata))]
  kk[is.na(kk)] <- min(tab$k)
  as.integer(kk)
}

# For a release of anonymise_keyed() (the intruder knows the algorithm): the settings the
# intruder uses, list(k, size, key): the recorded k and size when it knows the settings,
# else the verb's defaults (k = 3, size = 10); the key is a wrong one (the intruder does
# not hold the custodian's). NULL for other releases.
recipe_keyed <- function(s) {
  info <- view_release_info(s)
  if (is.null(info) || !identical(info$verb, "anonymise_keyed")) return(NULL)
  set <- info$settings
  known <- s$intruder$knows == "settings" && is.numeric(set$k) && is.numeric(set$size)
  # releases of earlier versions record the held columns as `keys`
  held <- if (is.null(set$held)) set$keys else set$held
  keys <- if (known) intersect(held, names(s$original)) else character()
  list(k = if (known) as.integer(set$k) else 3L, size = if (known) set$size else 10, keys = keys,
       key = charToRaw("an intruder's guess: not the custodian's key"))
}

# For a release of anonymise_mdav() (the intruder knows the algorithm): the strata of the
# release (their ids on the view's records), and the k the intruder tries: the recorded k
# (one per stratum when a table) when it knows the settings, else every k from 2 to
# `k_max`. list(id, sizes, ks = a list of k per stratum, k = the smallest of each). NULL
# for other releases.
recipe_mdav <- function(s, k_max) {
  info <- view_release_info(s)
  if (is.null(info) || !identical(info$verb, "anonymise_mdav")) return(NULL)
  set <- info$settings
  df <- as.data.frame(s$original)
  strata <- set$strata
  if (!length(strata) || !all(strata %in% names(df))) strata <- NULL
  id <- if (is.null(strata)) s$id else stratum_ids(df, strata)
  sizes <- tabulate(id, max(c(0L, id)))
  ks <- if (s$intruder$knows == "settings" && is.numeric(set$k)) {
    list(rep(as.integer(set$k), length(sizes)))
  } else if (s$intruder$knows == "settings" && is.data.frame(set$k) && !is.null(strata)) {
    list(recorded_k(df, strata, id, set$k))
  } else {
    lapply(seq.int(2L, k_max), function(k) rep(k, length(sizes)))
  }
  list(id = id, sizes = sizes, ks = ks, k = vapply(ks, min, 1L))
}

# The intruder's prediction of every record's released point for anonymise_mdav(): MDAV
# recomputed on `zmix` (its originals and the stand-ins, already on the z-scale) with the
# a-th k of `mdav` (capped by each stratum's size), and the group means (z-scale).
mdav_predict <- function(zmix, mdav, a, nthreads) {
  z <- zmix
  storage.mode(z) <- "double"
  kk <- pmax(1L, pmin(mdav$ks[[a]], mdav$sizes))
  nc <- ncol(z)
  res <- mdav_groups(z, seq_len(nc), rep(0, nc), rep(1, nc), mdav$id, kk, nthreads)
  res$means[res$group, , drop = FALSE]
}

# The intruder's prediction of every record's released point for anonymise_keyed(): the
# keyed partition recomputed on `zmix` (its originals and the stand-ins) with its own key,
# and the group means (z-scale); NA rows where a stratum is smaller than k.
keyed_predict <- function(zmix, id, keyed) {
  out <- matrix(NA_real_, nrow(zmix), ncol(zmix))
  sizes <- tabulate(id, max(c(0L, id)))
  el <- which(sizes[id] >= keyed$k)
  if (!length(el)) return(out)
  z <- zmix[el, , drop = FALSE]
  storage.mode(z) <- "double"
  g <- keyed_groups(z, id[el], keyed$k, keyed$size, keyed$key)$group
  for (j in seq_len(ncol(z))) out[el, j] <- stats::ave(z[, j], g)
  out
}

# The centroid of every row and its k - 1 nearest neighbours within its stratum (the
# search of anonymise()); NA rows for strata smaller than k.
strata_centroids <- function(z, id, k, nthreads) {
  out <- matrix(NA_real_, nrow(z), ncol(z))
  sizes <- tabulate(id, max(c(0L, id)))
  el <- which(sizes[id] >= k)
  if (!length(el)) return(out)
  sid <- match(id[el], sort(unique(id[el])))
  o <- order(sid, method = "radix")
  off <- c(0, cumsum(tabulate(sid)))
  zz <- z[el, , drop = FALSE]
  storage.mode(zz) <- "double"
  out[el, ] <- .Call(C_ffi_knn_centroids, zz, as.double(o), as.double(off), as.integer(k), nthreads)
  out
}

# The centroid of every row at its own k (`kr`, one k per stratum `id`): strata_centroids()
# at each k on the strata that have it.
strata_centroids_at <- function(z, id, kr, nthreads) {
  out <- matrix(NA_real_, nrow(z), ncol(z))
  for (k in sort(unique(kr))) {
    r <- which(kr == k)
    out[r, ] <- strata_centroids(z[r, , drop = FALSE], id[r], k, nthreads)
  }
  out
}

# strata_centroids() at every k of `ks`, a list in the order of `ks`, from one neighbour
# search per record at the largest of them its stratum holds (src/knn.c,
# knn_centroids_multi(): the same bits). Non-finite points have no total order of
# distances: each k is searched on its own.
strata_centroids_multi <- function(z, id, ks, nthreads) {
  u <- sort(unique(as.integer(ks)))
  if (length(u) == 1L || !ncol(z) || !all(is.finite(z))) {
    return(lapply(ks, function(k) strata_centroids(z, id, k, nthreads)))
  }
  sizes <- tabulate(id, max(c(0L, id)))
  el <- which(sizes[id] >= u[1L])
  sid <- match(id[el], sort(unique(id[el])))
  storage.mode(z) <- "double"
  cens <- .Call(C_ffi_knn_centroids_multi, z, as.double(el[order(sid, method = "radix")]),
                as.double(c(0, cumsum(tabulate(sid)))), u, nthreads)
  cens[match(ks, u)]
}

# Step 5 on the candidate centroids: each column divided by its SD (over every record of
# the strata where k applies), i.e. multiplied by one factor about the origin of the
# z-scale.
recipe_scale <- function(cen) {
  sc <- apply(cen, 2L, stats::sd)
  ifelse(is.finite(sc) & sc > 0, 1 / sc, 0)
}

# The step-5 factor of each column for all k: with the settings known, the recorded scale
# (original SD over centroid SD) over the original SD of the view's z-map; else, with more
# than one k tried, recovered from the release: for every candidate (record, k) and its
# three nearest released records (at the factor 1 / SD of that k's centroids), the ratio of
# released to candidate value; the true pairs all give the same ratio, the factor, which
# is the mode of the ratios (to 7 significant digits) when it stands out. NA for a
# column where neither applies (rounded values, no clear mode): 1 / SD per k is used.
# `cens`: the centroids of every k (recipe_centroids(), a block at a time).
recipe_common_scale <- function(s, cens, look, zt) {
  # the columns of the z-scale: the variables that are not constant
  nv <- ncol(s$zm)
  if (nv != length(s$z_vars)) return(NULL)
  z0 <- s$z(matrix(0, 1L, length(s$vars)))
  z1 <- s$z(matrix(1, 1L, length(s$vars)))
  sdv <- 1 / as.vector(z1 - z0)
  if (s$intruder$knows == "settings") {
    info <- view_release_info(s)
    sc <- if (!is.null(info)) info$stats$scale
    zv <- s$z_vars
    if (is.numeric(sc) && all(zv %in% names(sc)) && all(is.finite(sc[zv]))) return(as.vector(sc[zv]) / sdv)
  }
  if (length(cens$block) < 2L || !length(look)) return(NULL)
  ratios <- replicate(nv, numeric(), simplify = FALSE)
  for (bl in seq_len(cens$n_blocks)) for (cen in cens$get(bl)) {
    el <- which(!is.na(cen[, 1L]))
    if (!length(el)) next
    q <- sweep(cen, 2L, recipe_scale(cen[el, , drop = FALSE]), "*")[look, , drop = FALSE]
    ok <- !is.na(q[, 1L])
    if (!any(ok)) next
    nb <- nearest_in_cells(s$zm, q[ok, , drop = FALSE], s$cell_m, s$cell_o[look][ok], k = 3L)$index
    c_ok <- cen[look[ok], , drop = FALSE]
    for (j in seq_len(nv)) {
      for (b in seq_len(ncol(nb))) {
        r <- s$zm[nb[, b], j] / c_ok[, j]
        ratios[[j]] <- c(ratios[[j]], r[is.finite(r) & abs(c_ok[, j]) > 1e-8])
      }
    }
  }
  vapply(ratios, ratio_mode, numeric(1), n_look = length(look))
}

# The mode of the ratios `r` to 7 significant digits when it stands out (at least 5 and 1% of
# the `n_look` known records, three times the next value), else NA. The counts are those of
# table(signif(r, 7)), in the same increasing order, without converting every ratio to text
# (that took 4 of the 14 s of the battery on 32,561 Adult records).
ratio_mode <- function(r, n_look) {
  if (length(r) < 10L) return(NA_real_)
  v <- signif(r, 7)
  u <- sort(unique(v))
  t <- tabulate(match(v, u), length(u))
  top <- max(t)
  # (one value only: nothing next to it)
  second <- if (length(t) > 1L) sort(t, decreasing = TRUE)[2L] else 0L
  if (top < max(5, 0.01 * n_look) || second * 3 > top) return(NA_real_)
  as.numeric(as.character(u[which.max(t)]))
}

# The release format of anonymise() (format_masked(): the tails squeezed into k-record
# bounds of the range, whole-number variables rounded) applied to the predicted z-values
# `pred` of every record, on the x-scale given by the view's z-map (z = (x - mean) / sd),
# with `xmix` (recipe_values(): the intruder's originals and stand-ins on their own scale)
# for the form of each column: its bounds, and whether it holds whole numbers, detected as
# anonymise() detected it on the data (values brought back from the z-scale are whole only
# up to rounding). `keep`: as in format_masked() ("masked" for the group means of
# anonymise_mdav() and anonymise_keyed()).
recipe_format <- function(pred, xmix, s, k, format, keep = "data") {
  # (the columns are the variables of the z-scale: constant ones are not among them)
  if (format == "none" || ncol(pred) != length(s$z_vars)) return(pred)
  z0 <- s$z(matrix(0, 1L, length(s$vars)))
  z1 <- s$z(matrix(1, 1L, length(s$vars)))
  sdv <- 1 / as.vector(z1 - z0)
  mu <- -as.vector(z0) * sdv
  ok <- !is.na(pred[, 1L])
  for (j in seq_len(ncol(pred))) {
    if (!is.finite(sdv[j]) || sdv[j] <= 0) next
    v <- format_masked(pred[ok, j] * sdv[j] + mu[j], xmix[ok, j], k, format, FALSE, keep)
    pred[ok, j] <- (v - mu[j]) / sdv[j]
  }
  pred
}

# The intruder's values of the variables of the z-scale (`s$z_vars`) on their own scale:
# its originals, and for the records it does not hold their released values, which stand
# in for them (the neighbourhoods' `zmix` of recipe_core() before the z-map).
recipe_values <- function(s) {
  x <- numeric_matrix(s$masked, s$z_vars)
  x[s$known, ] <- numeric_matrix(s$original, s$z_vars)[s$known, , drop = FALSE]
  x
}

# The release format the intruder assumes: the recorded one (settings known), else the
# default of anonymise().
recipe_format_of <- function(s) {
  if (s$intruder$knows == "settings") {
    info <- view_release_info(s)
    f <- if (!is.null(info)) info$settings$format
    if (is.character(f) && length(f) == 1L) return(f)
  }
  "natural"
}

# For every row of q (in cells cq), the nearest row of zt in the same cell (cells ct):
# list(index, d2): n x k matrices of rows of zt and squared distances, nearest first.
nearest_in_cells <- function(zt, q, ct, cq, k = 1L, nthreads = 1L) {
  co <- cell_orders(ct, cq)
  storage.mode(zt) <- storage.mode(q) <- "double"
  .Call(C_ffi_knn_cells, zt, q, co$t_order, co$t_off, co$q_order, co$q_off, as.integer(k), nthreads)
}

# The rows of the tree points (cells ct) and of the queries `qrows` (cells cq) grouped by
# cell, as the cell searches (src/nn2.c) take them: orders (1-based) and offsets.
cell_orders <- function(ct, cq, qrows = seq_along(cq)) {
  levels <- sort(unique(c(ct, cq)))
  it <- match(ct, levels)
  iq <- match(cq, levels)
  nl <- length(levels)
  list(t_order = as.integer(order(it, method = "radix")), t_off = as.integer(c(0L, cumsum(tabulate(it, nl)))),
       q_order = as.integer(qrows[order(iq, method = "radix")]), q_off = as.integer(c(0L, cumsum(tabulate(iq, nl)))))
}
