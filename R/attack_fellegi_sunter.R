#' Probabilistic record linkage (Fellegi-Sunter) with EM-estimated weights
#'
#' The record-linkage intruder of official statistics: it holds the originals of every
#' released column it knows (see [intruder()]: the masked variables, the strata, further
#' keys) and compares each of its originals with the released records of the same stratum
#' (blocking on the strata), field by field:
#' * a numeric field (a masked variable or a numeric key) by the distance on the z-scale of
#'   the original data, in agreement levels: within `bands[1]`, within `bands[2]`, ..., or
#'   beyond the last band;
#' * a categorical key by equality (agree or not).
#'
#' The levels' probabilities among true matches (`m`) and among non-matches (`u`) are
#' estimated by the EM algorithm of the two-class mixture with fields independent within a
#' class (Winkler 1988), with no labelled pairs. The share of matches among the pairs is
#' known to this intruder (everyone is in the release once: one pair in a block's `n` per
#' original) and held fixed; left free, EM tends to take a class of merely near pairs for
#' the matches. A pair's weight is the sum over fields of `log(m / u)` at its level. For
#' each of its originals the intruder claims the released record of the highest weight; the
#' claim is right when it is the person's own (ties at the top weight shared: the success
#' is the expected share). The confidence of a claim is the posterior probability that the
#' claimed pair is a match under the fitted model.
#'
#' Blocks with more than `max_pairs` pairs in all are not compared in full: each original is
#' then compared with its `candidates` nearest released records of the stratum (a
#' kd-tree), the `u` probabilities are estimated from random pairs of the same strata and
#' held fixed, and `m` and the share of matches are fitted by EM on the candidate pairs.
#'
#' @section What it does not cover:
#' Dependence between fields (the weights assume independence within a class), an intruder
#' who knows the algorithm (see [attack_recipe()]), one-to-one constraints (see
#' [attack_assignment()]), and attribute inference.
#' @inheritParams risk_battery
#' @param bands Agreement levels of numeric fields: increasing distances on the z-scale.
#' @param max_pairs Compare every pair within strata when there are at most this many;
#'   else the candidate pairs only.
#' @param candidates Released records compared with each original when the pairs are too
#'   many. On 1e6 records x 4 variables in 4 strata, 10 candidates gave a rate of 0.7312 in
#'   20 s and 20 candidates 0.7309 in 36 s (one core): the own record, when it can be found,
#'   is almost always among the nearest few.
#' @return An object of class `detanon_attack` (see [risk_battery()]); its `details` hold
#'   `fields`, the fitted `m` and `u` (lists of level probabilities per field), `p_match`
#'   (the share of matches among the pairs compared), `iterations`, `n_pairs` and `full`
#'   (whether every pair was compared).
#' @references Fellegi IP, Sunter AB (1969). A theory for record linkage. *Journal of the
#'   American Statistical Association* 64, 1183-1210.
#'
#'   Winkler WE (1988). Using the EM algorithm for weight computation in the Fellegi-Sunter
#'   model of record linkage. *Proceedings of the Section on Survey Research Methods*,
#'   American Statistical Association, 667-671.
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' attack_fellegi_sunter(d, masked, intruder = intruder(held = "Survived"), seed = 1)
#' @family attacks
#' @export
attack_fellegi_sunter <- function(original, masked, intruder = NULL, bands = c(0.01, 0.03, 0.1, 0.3),
                                  max_pairs = 2e7, candidates = 10, m = 3, control = TRUE,
                                  nthreads = getOption("detanon.nthreads", 1L), seed = NULL) {
  if (!is.numeric(bands) || !length(bands) || anyNA(bands) || any(bands <= 0) || is.unsorted(bands, strictly = TRUE) ||
      any(!is.finite(bands))) {
    stop_arg("`bands` must be increasing positive distances, such as c(0.01, 0.03, 0.1, 0.3), not ", show_value(bands), ".")
  }
  max_pairs <- check_number(max_pairs, "max_pairs", lower = 1)
  candidates <- check_whole(candidates, "candidates", min = 1)
  attack_verb(fellegi_sunter_spec(), list(bands = bands, max_pairs = max_pairs, candidates = candidates),
              original, masked, intruder, m, control, seed, nthreads)
}

# The registry entry of the attack (battery_attacks()).
fellegi_sunter_spec <- function() {
  list(label = "probabilistic record linkage (Fellegi-Sunter, EM weights)", fun = "attack_fellegi_sunter",
       args = list(bands = c(0.01, 0.03, 0.1, 0.3), max_pairs = 2e7, candidates = 10),
       core = fellegi_sunter_core, needs_sensitive = FALSE)
}

fellegi_sunter_core <- function(s, m, nthreads, seed = NULL, bands = c(0.01, 0.03, 0.1, 0.3), max_pairs = 2e7,
                                candidates = 10, ...) {
  n <- s$n
  # (without numeric keys the view's own matrices: no copies, which the control may keep)
  num_o <- view_key_z(s, "original")
  num_m <- view_key_z(s, "masked")
  cat_o <- category_codes(s$original, s$masked, s$key_cat)
  zn <- if (ncol(s$zo) == length(s$vars)) s$vars else paste0("z", seq_len(ncol(s$zo)))
  fields <- c(zn, s$key_num, s$key_cat)
  n_lev <- c(rep(length(bands) + 1L, ncol(num_o)), rep(2L, length(s$key_cat)))
  rows <- which(s$known)
  n_pairs_full <- fs_n_pairs(s, rows)
  full <- n_pairs_full <= max_pairs
  storage.mode(num_o) <- storage.mode(num_m) <- "double"
  # the comparison pattern of pairs (i: original, j: released), one code each (mixed radix of
  # the fields' levels, see pattern_code()), or the pairs at each level of each field
  mult <- fs_mult(n_lev)
  pair_levels <- function(i, j, counts = FALSE) {
    .Call(C_ffi_fs_levels, num_o, num_m, cat_o$o, cat_o$m, as.integer(i), as.integer(j), as.double(bands),
          as.double(mult), counts, nthreads)
  }
  if (full) {
    pairs <- block_pairs(rows, s$id)
    code <- pair_levels(pairs$i, pairs$j)
  } else {
    cand <- fs_candidates(s, num_o, num_m, cat_o, rows, candidates, bands, mult, nthreads)
    # (every row, and k candidates for every one: the search's columns as they are)
    every <- length(rows) == n
    j <- as.vector(if (every) cand$index else cand$index[rows, , drop = FALSE])
    code <- as.vector(if (every) cand$code else cand$code[rows, , drop = FALSE])
    pairs <- list(i = rep(rows, candidates), j = j)
    if (anyNA(j)) {
      keep <- !is.na(j)
      pairs <- list(i = pairs$i[keep], j = j[keep])
      code <- code[keep]
    }
    rm(j)
  }
  u_fixed <- NULL
  if (!full) {
    # u from random pairs of the same strata (non-matches, nearly all)
    size <- min(1e6, n_pairs_full)
    draw <- function() with_seed(seed, random_block_pairs(rows, s$id, size))
    # from a seed, the same pairs for the view and its control (the same strata)
    rp <- if (is.null(seed)) draw() else view_shared(s, "fs_random_pairs", list(rows, s$id, size, seed), draw)
    u_fixed <- lapply(unname(split(pair_levels(rp$i, rp$j, counts = TRUE), rep(seq_along(n_lev), n_lev))),
                      function(p) { p <- p + 1e-9; p / sum(p) })
  }
  # every person is in the release once: in full blocks, one pair in n_pairs / n_known is a
  # match (the share is known, not fitted: left free, EM tends to a class of near pairs)
  tab <- pattern_table(code, n_lev)
  fit <- fs_em(code, n_lev, u_fixed = u_fixed, p_fixed = if (full && length(code)) length(rows) / length(code),
               tab = tab)
  # the weight and posterior of each comparison pattern present (a table of every possible
  # pattern has prod(n_lev) cells, 4.5 GB for 13 fields), read by each pair at its pattern
  lev_pat <- pattern_levels(tab$pat, n_lev)
  success <- confidence <- rep(NA_real_, n)
  if (length(rows)) {
    # each original claims the pairs at its top weight (ties shared), confidence their
    # largest posterior; originals without a pair are attacked and missed
    cl <- .Call(C_ffi_fs_claims, as.integer(pairs$i), as.integer(pairs$j), tab$at, fs_weights(fit, lev_pat),
                fs_posterior(fit, lev_pat), as.double(n))
    success[rows] <- confidence[rows] <- 0
    has <- !is.na(cl[[1L]])
    success[has] <- cl[[1L]][has]
    confidence[has] <- cl[[2L]][has]
  }
  list(success = success, confidence = confidence, fields = fields, m = fit$m, u = fit$u,
       p_match = fit$p, iterations = fit$iterations, n_pairs = length(code), full = full,
       not_covered = paste("dependence between fields, an intruder who knows the algorithm,",
                           "one-to-one constraints, attribute inference."))
}

# The candidates of the originals `rows`: their `k` nearest released records of their stratum
# and the code of each pair, list(index, code) (n x k, NA past a stratum's size), from one
# search (src/nn2.c, src/fellegi.c). The control release holds the view's released records
# in the same strata, rows permuted (battery_permute(), `s$perm`): without categorical keys
# a pair's code depends on the two points alone, and the k nearest points are the same
# whatever the rows (src/kdtree.h), so the control takes the view's candidates
# (control_keep(), control_take()), their rows mapped. Which of several records at one point a
# search takes depends on the tree: an original whose own control record (view row
# perm[i]) lies at its k-th candidate's point is searched.
fs_candidates <- function(s, num_o, num_m, cat_o, rows, k, bands, mult, nthreads) {
  search <- function(q) fs_search(s, num_o, num_m, cat_o, q, k, bands, mult, nthreads)
  inputs <- list(num_o = num_o, id = s$id, rows = rows, k = k, bands = bands, mult = mult)
  prev <- control_take(s, "fs_candidates", list(num_m))
  if (!is.null(prev)) {
    if (!ncol(cat_o$o) && identical(prev$inputs, inputs)) {
      ctrl_row <- integer(length(s$perm))
      ctrl_row[s$perm] <- seq_along(s$perm)
      index <- ctrl_row[prev$cand$index]
      dim(index) <- dim(prev$cand$index)
      cand <- list(index = index, code = prev$cand$code)
      # an original with k candidates whose own control record is at the k-th one's point
      last <- prev$cand$index[rows, k]
      prev <- NULL
      redo <- rows[!is.na(last)]
      last <- last[!is.na(last)]
      for (f in seq_len(ncol(num_m))) {
        at <- num_m[redo, f] == num_m[ctrl_row[last], f]
        redo <- redo[at]
        last <- last[at]
      }
      if (length(redo)) {
        again <- search(redo)
        cand$index[redo, ] <- again$index[redo, ]
        cand$code[redo, ] <- again$code[redo, ]
      }
      return(cand)
    }
  }
  cand <- fs_shared_candidates(s, num_o, num_m, cat_o, rows, k, bands, mult, nthreads)
  if (is.null(cand)) cand <- search(rows)
  # (finite coordinates: the k nearest points are then defined by the points alone)
  if (!ncol(cat_o$o) && all(is.finite(num_o)) && all(is.finite(num_m))) {
    control_keep(s, "fs_candidates", list(inputs = inputs, cand = cand), list(num_m))
  }
  cand
}

# The search of fs_candidates() for the originals `q`: list(index, code), and with `d2` TRUE
# also the squared distances of the candidates (src/nn2.c).
fs_search <- function(s, num_o, num_m, cat_o, q, k, bands, mult, nthreads, d2 = FALSE) {
  co <- cell_orders(s$id, s$id[q], q)
  .Call(C_ffi_fs_candidates, num_o, num_m, cat_o$o, cat_o$m, co$t_order, co$t_off, co$q_order,
        co$q_off, as.integer(k), as.double(bands), as.double(mult), nthreads, d2)
}

# The candidates of fs_candidates() from the battery's search of the view (released_knn():
# this search, on the same points in the same order, dropped once taken); NULL when there is
# none.
fs_shared_candidates <- function(s, num_o, num_m, cat_o, rows, k, bands, mult, nthreads) {
  want <- list(k = k, bands = bands)
  if (!is.null(s$perm) || ncol(cat_o$o) || !identical(want, s$shared$knn)) return(NULL)
  kn <- released_knn(s, num_o, num_m, nthreads)
  rm(list = intersect("released knn", ls(s$shared)), envir = s$shared)
  if (is.null(kn) || !identical(rows, which(s$known))) return(NULL)
  kn[c("index", "code")]
}

# What the battery's Fellegi-Sunter attack with settings `args` asks of released_knn() (its
# candidates and bands), or NULL when it compares every pair.
fs_knn_want <- function(s, args) {
  if (fs_n_pairs(s, which(s$known)) > args$max_pairs) list(k = args$candidates, bands = args$bands)
}

# The codes' multipliers of fields with n_lev levels (mixed radix, see pattern_code()).
fs_mult <- function(n_lev) cumprod(c(1, n_lev))[seq_along(n_lev)]

# The number of pairs (an original of `rows`, a released record of its stratum).
fs_n_pairs <- function(s, rows) {
  sum(as.double(tabulate(s$id[rows], length(s$sizes))) * tabulate(s$id, length(s$sizes)))
}

# The categorical keys `keys` of both sides as integer matrices (`o`, `m`) of codes of their
# values (equal values equal codes, a missing value NA).
category_codes <- function(original, masked, keys) {
  codes <- lapply(keys, function(v) {
    a <- as.character(original[[v]])
    b <- as.character(masked[[v]])
    values <- unique(c(a, b))
    list(match(a, values, incomparables = NA), match(b, values, incomparables = NA))
  })
  side <- function(k, n) if (length(keys)) do.call(cbind, lapply(codes, `[[`, k)) else matrix(0L, n, 0L)
  list(o = side(1L, nrow(original)), m = side(2L, nrow(masked)))
}

# Every pair (i, j) with i in `rows` and j any record of the same block.
block_pairs <- function(rows, id) {
  by <- split(seq_along(id), id)
  ri <- split(rows, id[rows])
  out_i <- out_j <- vector("list", length(ri))
  for (b in seq_along(ri)) {
    js <- by[[names(ri)[b]]]
    out_i[[b]] <- rep(ri[[b]], each = length(js))
    out_j[[b]] <- rep(js, times = length(ri[[b]]))
  }
  list(i = unlist(out_i, use.names = FALSE), j = unlist(out_j, use.names = FALSE))
}

# `size` random pairs of the same blocks: a random original of `rows`, a random record of
# its block; drawn as i <- rows[sample.int(length(rows), size, TRUE)], then for every block
# in increasing id, its pairs in order, j from sample.int(block size, pairs in block, TRUE)
# over the block's records (src/fellegi.c).
random_block_pairs <- function(rows, id, size) {
  .Call(C_ffi_fs_block_pairs, as.integer(rows), as.integer(id), as.double(size))
}

# One code per comparison vector (levels 0..n_lev-1 per field, mixed radix).
pattern_code <- function(lev, n_lev) {
  as.vector(lev %*% fs_mult(n_lev)) + 1
}

# The level of each field for each pattern code.
pattern_levels <- function(codes, n_lev) {
  x <- codes - 1
  lev <- matrix(0L, length(codes), length(n_lev))
  for (f in seq_along(n_lev)) {
    lev[, f] <- as.integer(x %% n_lev[f])
    x <- x %/% n_lev[f]
  }
  lev
}

# The rows of `lev` at each level of each field (a list per field of one index vector per
# level, in increasing row order): built once per EM, so that an iteration sums the weights
# at these rows instead of comparing the whole matrix of levels again per level (with 12
# fields and some 10^5 patterns present that comparison took most of the minutes of the EM).
level_index <- function(lev, n_lev) {
  lapply(seq_along(n_lev), function(f) {
    lf <- lev[, f]
    lapply(seq_len(n_lev[f]) - 1L, function(l) which(lf == l))
  })
}

# Weighted level frequencies per field from level_index()'s rows: a list of probability vectors.
level_freq_at <- function(idx, wt) {
  lapply(idx, function(ix) {
    p <- vapply(ix, function(i) sum(wt[i]), numeric(1)) + 1e-9
    p / sum(p)
  })
}

# The comparison patterns present among `code` (pattern codes of fields with n_lev levels):
# `pat` (sorted), `at` (each code's place in pat) and `cnt` (the codes of each pattern).
pattern_table <- function(code, n_lev) {
  n_codes <- prod(as.double(n_lev))
  if (n_codes <= max(65536, length(code))) {
    # codes are whole numbers 1..n_codes: counted, not hashed
    all <- tabulate(code, n_codes)
    present <- all > 0L
    pat <- which(present)
    return(list(pat = as.double(pat), at = cumsum(present)[code], cnt = all[pat]))
  }
  pat <- sort(unique(code))
  at <- match(code, pat)
  list(pat = pat, at = at, cnt = tabulate(at, length(pat)))
}

# EM for the two-class mixture over pattern counts. `u_fixed`, `p_fixed`: u or the share of
# matches held at these values. `tab`: pattern_table(code, n_lev).
fs_em <- function(code, n_lev, u_fixed = NULL, p_fixed = NULL, max_iter = 1000L, tol = 1e-10,
                  tab = pattern_table(code, n_lev)) {
  pat <- tab$pat
  cnt <- tab$cnt
  lev <- pattern_levels(pat, n_lev)
  nf <- length(n_lev)
  # start: matches agree closely, non-matches as all pairs
  m <- lapply(n_lev, function(L) { p <- 2^-(seq_len(L) * 2); p / sum(p) })
  idx <- level_index(lev, n_lev)
  lev1 <- lapply(seq_len(nf), function(f) lev[, f] + 1L)
  u <- if (is.null(u_fixed)) level_freq_at(idx, cnt) else u_fixed
  p <- if (is.null(p_fixed)) min(0.5, max(1e-6, 1 / sqrt(sum(cnt)))) else p_fixed
  lik <- function(pr) {
    out <- rep(1, length(pat))
    for (f in seq_len(nf)) out <- out * pr[[f]][lev1[[f]]]
    out
  }
  ll_old <- -Inf
  it <- 0L
  for (it in seq_len(max_iter)) {
    a <- p * lik(m)
    b <- (1 - p) * lik(u)
    g <- a / (a + b)
    ll <- sum(cnt * log(a + b))
    if (is.null(p_fixed)) p <- sum(cnt * g) / sum(cnt)
    m <- level_freq_at(idx, cnt * g)
    if (is.null(u_fixed)) u <- level_freq_at(idx, cnt * (1 - g))
    if (abs(ll - ll_old) <= tol * (1 + abs(ll))) break
    ll_old <- ll
  }
  list(m = m, u = u, p = p, iterations = it, loglik = ll)
}

# The Fellegi-Sunter weight of each pair: the sum over fields of log(m / u) at its level.
fs_weights <- function(fit, lev) {
  w <- numeric(nrow(lev))
  for (f in seq_along(fit$m)) w <- w + log(fit$m[[f]] / fit$u[[f]])[lev[, f] + 1L]
  w
}

# The posterior probability that each pair is a match.
fs_posterior <- function(fit, lev) {
  lm <- lu <- numeric(nrow(lev))
  for (f in seq_along(fit$m)) {
    lm <- lm + log(fit$m[[f]])[lev[, f] + 1L]
    lu <- lu + log(fit$u[[f]])[lev[, f] + 1L]
  }
  1 / (1 + exp(log(1 - fit$p) + lu - log(fit$p) - lm))
}
