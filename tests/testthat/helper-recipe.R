# The algorithm-aware intruder as it was before it tried the k a block at a time
# (attack_recipe.R at the commit that made its release format exact): every k's centroids,
# candidates and distances held at once, the choice of k by max.col() and order() over all of
# them, the control given each k's nearest distances. The reference of the bounded-memory
# version, which must give identical results.
ref_recipe_core <- function(s, m, nthreads, k = NULL, k_max = 10, k_choice = "record", ...) {
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
  zmix <- s$zm
  zmix[known, ] <- s$zo[known, ]
  # the same on their own scale, for the release format (whole numbers stay whole)
  xmix <- recipe_values(s)
  kz_o <- key_z(s, "original")
  kz_m <- key_z(s, "masked")
  zt <- cbind(s$zm, kz_m)
  tol <- 1e-6
  format <- recipe_format_of(s)
  same <- s$cell_o == s$cell_m
  look <- rows[same[rows]]
  # per k: the candidates of the known records, rescaled, and their nearest released record
  cand <- list()
  scales <- list()
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
  d1 <- matrix(Inf, length(look), length(k_form))
  # the candidates depend on the intruder's originals and stand-ins only: with every
  # original known, the attack and its control (the same release, rows permuted) share them
  cens <- if (!is.null(tab)) {
    list(view_shared(s, "recipe_centroids", list(zmix, tab$id, tab$k),
                     function() strata_centroids_at(zmix, tab$id, tab$k, nthreads)))
  } else if (centroid_k) {
    view_shared(s, "recipe_centroids", list(zmix, s$id, ks),
                function() strata_centroids_multi(zmix, s$id, ks, nthreads))
  }
  # the control takes the view's nearest distances (ref_recipe_nearest())
  near <- control_take(s, "recipe_nearest", list(zt, s$cell_m))
  near_kept <- if (control_follows(s)) list()
  # one step-5 factor for every k (a release with k per record has one): the recorded one
  # when the settings are known, else recovered from the release
  common <- if (centroid_k) ref_recipe_common_scale(s, cens, look, zt)
  # (the candidates in the release format are the same for the view and its control too)
  for (a in seq_along(k_form)) {
    if (!is.null(mdav)) {
      scales[[a]] <- rep(1, ncol(zmix))
      raw <- view_shared(s, paste0("recipe_mdav_", a), list(zmix, mdav),
                         function() mdav_predict(zmix, mdav, a, nthreads))
      pred <- view_shared(s, paste0("recipe_pred_", a), list(raw, xmix, format),
                          function() recipe_format(raw, xmix, s, k_form[a], format, keep = "masked"))
    } else if (!is.null(keyed)) {
      scales[[a]] <- rep(1, ncol(zmix))
      id <- keyed_cells(as.data.frame(s$original), s$id, keyed$keys, character(), keyed$k)
      raw <- view_shared(s, "recipe_keyed", list(zmix, id, keyed), function() keyed_predict(zmix, id, keyed))
      pred <- view_shared(s, paste0("recipe_pred_", a), list(raw, xmix, format),
                          function() recipe_format(raw, xmix, s, k_form[a], format, keep = "masked"))
    } else {
      cen <- cens[[a]]
      el <- which(!is.na(cen[, 1L]))
      if (!length(el)) next
      sp <- view_shared(s, paste0("recipe_pred_", a), list(cen, common, xmix, format), function() {
        a_j <- recipe_scale(cen[el, , drop = FALSE])
        if (!is.null(common)) a_j <- ifelse(is.na(common), a_j, common)
        list(a_j = a_j, pred = recipe_format(sweep(cen, 2L, a_j, "*"), xmix, s, k_form[a], format))
      })
      scales[[a]] <- sp$a_j
      pred <- sp$pred
    }
    cand[[a]] <- pred
    ok <- !is.na(pred[look, 1L])
    if (any(ok)) {
      nb <- ref_recipe_nearest(s, zt, pred, kz_o, look[ok], if (a <= length(near)) near[[a]], nthreads)
      d1[ok, a] <- nb$d2
      if (!is.null(near_kept)) near_kept[[a]] <- nb
    }
  }
  if (!is.null(near_kept)) control_keep(s, "recipe_nearest", near_kept, list(zt, s$cell_m))
  rm(near, near_kept)
  if (length(look)) {
    choice <- if (k_choice == "record" || length(k_form) == 1L) {
      # the smallest k whose candidate is a released record (within tol), else the nearest
      d1c <- ifelse(sqrt(d1) <= tol, 0, d1)
      max.col(-d1c, ties.method = "first")
    } else {
      hits <- colSums(sqrt(d1) <= tol)
      med <- apply(d1, 2L, stats::median)
      rep(order(-hits, med)[1L], length(look))
    }
    dist <- sqrt(d1[cbind(seq_along(look), choice)])
    zq <- matrix(0, n, ncol(zt))
    for (a in unique(choice[is.finite(dist)])) {
      r <- look[choice == a & is.finite(dist)]
      zq[r, ] <- cbind(cand[[a]], kz_o)[r, , drop = FALSE]
    }
    want <- logical(n)
    want[look] <- is.finite(dist)
    # the capped rank count of the linkage attacks (src/nn2.c): a claim far from its own
    # record, as in the control, costs no more than a right one
    ranks <- battery_ranks(released_index(s, zt), zq, want, max(m, 2L), nthreads)
    hit <- which(want)
    success[hit] <- top_m_share(ranks[hit, , drop = FALSE], 1)
    success_m[hit] <- top_m_share(ranks[hit, , drop = FALSE], m)
    conf <- 1 / (1 + dist / tol)
    confidence[look] <- ifelse(is.finite(dist), conf, 0)
    # records of strata smaller than every k tried: no candidate, a miss
    none <- look[!is.finite(dist)]
    success[none] <- success_m[none] <- 0
    certain <- is.finite(dist) & dist <= tol
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


ref_recipe_common_scale <- function(s, cens, look, zt) {
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
  if (length(cens) < 2L || !length(look)) return(NULL)
  ratios <- replicate(nv, numeric(), simplify = FALSE)
  for (cen in cens) {
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


ref_recipe_nearest <- function(s, zt, pred, kz_o, qrows, prev, nthreads) {
  if (!is.null(prev)) {
    at <- match(qrows, prev$qrows)
    if (!anyNA(at) && identical(prev$pred, pred) && identical(prev$kz_o, kz_o) && identical(prev$cell_o, s$cell_o)) {
      return(list(d2 = prev$d2[at]))
    }
  }
  q <- cbind(pred, kz_o)[qrows, , drop = FALSE]
  d2 <- nearest_in_cells(zt, q, s$cell_m, s$cell_o[qrows], nthreads = nthreads)$d2[, 1L]
  list(pred = pred, kz_o = kz_o, qrows = qrows, cell_o = s$cell_o, d2 = d2)
}


# The reference's functions in the package's namespace (its internal helpers in reach).
ref_recipe_env <- function() {
  e <- new.env(parent = asNamespace("detanon"))
  for (f in c("ref_recipe_core", "ref_recipe_common_scale", "ref_recipe_nearest")) {
    fn <- get(f)
    environment(fn) <- e
    assign(f, fn, envir = e)
  }
  e
}

# attack_recipe() with the reference core.
ref_attack_recipe <- function(original, masked, intruder = NULL, k = NULL, k_max = 10, k_choice = "record",
                              m = 3, control = TRUE, nthreads = 1L, seed = NULL) {
  ns <- asNamespace("detanon")
  spec <- ns$recipe_spec()
  spec$core <- ref_recipe_env()$ref_recipe_core
  ns$attack_verb(spec, list(k = k, k_max = k_max, k_choice = k_choice), original, masked, intruder, m, control,
                 seed, nthreads)
}
