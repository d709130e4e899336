# The categorical family of tune_release(): the published key columns (those the default
# intruder holds exactly) generalised, locally suppressed and optionally post-randomised
# until every cell of the strata and the keys holds enough records for the limits
# (categorical_k()), before the continuous masking forms its groups within those cells.
#
# The cells are counted exactly, a suppressed value (NA) being a value of its own: the
# continuous masking forms its groups within them, and the intruder of the battery, who holds
# the published values, searches the cell the released values name. Exact cells of at least
# k are also k-anonymous when NA matches any value (sdcMicro's count), which can only add
# records to a cell.
#
# Loss of a candidate: the mean over the key cells (records x keys) of Iyengar's loss metric:
# a value recoded to a category that merges g of the column's C original values loses
# (g - 1) / (C - 1); a suppressed value loses 1, as a category merging all of them.

tune_categorical_steps <- c("generalise", "suppress", "pram", "none")

check_categorical <- function(x) {
  if (!is.character(x) || !length(x) || anyNA(x) || !all(x %in% tune_categorical_steps) ||
      ("none" %in% x && length(unique(x)) > 1L)) {
    stop_arg("`categorical` must be \"none\" or some of \"generalise\", \"suppress\" and \"pram\", not ",
             show_value(x), ".")
  }
  unique(x)
}

# The rungs of generalisation of one key column, from the least to the most general, the
# last one a single category: a numeric column of 10 or more distinct values (an age, a
# count) in bands of width 2, 5, 10, 20, 50, ... ([generalise_bands()]); any other column with
# its rare categories merged ([generalise_rare()]) at counts k, 2k, 4k, ...
categorical_rungs <- function(x, k) {
  n <- length(x)
  vals <- unique(x[!is.na(x)])
  if (length(vals) < 2L) return(list())
  rungs <- list()
  if (is.numeric(x) && !is.factor(x) && length(vals) >= 10L && all(is.finite(vals))) {
    lo <- min(vals)
    span <- max(vals) - lo
    for (w in c(2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 1e4, 2e4, 5e4, 1e5)) {
      if (w > span) break
      rungs[[length(rungs) + 1L]] <- generalise_bands(x, width = w, origin = floor(lo / w) * w)
    }
    rungs[[length(rungs) + 1L]] <- generalise_bands(x, width = floor(span) + 1, origin = floor(lo))
  } else {
    other <- "Other"
    while (other %in% as.character(vals)) other <- paste0(other, "*")
    t <- k
    repeat {
      g <- generalise_rare(x, k = t, other = other)
      if (!length(rungs) || nlevels(droplevels(g)) < nlevels(droplevels(rungs[[length(rungs)]]))) {
        if (nlevels(droplevels(g)) < length(vals)) rungs[[length(rungs) + 1L]] <- g
      }
      if (nlevels(droplevels(g)) <= 1L || t > n) break
      t <- 2 * t
    }
    if (nlevels(droplevels(rungs[[length(rungs)]])) > 1L) {
      rungs[[length(rungs) + 1L]] <- generalise_rare(x, k = n + 1, other = other)
    }
  }
  rungs
}

# Iyengar's loss of every cell of a recoded column `g` of the original column `x`: (g - 1) /
# (C - 1) for a value whose category merges g of the C original values, 1 for a suppressed
# one, 0 where the original is missing.
cell_loss <- function(x, g) {
  ok <- !is.na(x)
  C <- length(unique(x[ok]))
  out <- numeric(length(x))
  if (C < 2L) return(out)
  gi <- match(as.character(g), unique(as.character(g)))
  both <- ok & !is.na(g)
  merged <- tapply(x[both], gi[both], function(v) length(unique(v)))
  out[both] <- (merged[as.character(gi[both])] - 1) / (C - 1)
  out[ok & is.na(g)] <- 1
  out
}

# The size of the cells the categorical step makes: below 1 / worst records a cell gives the
# intruder a guess among fewer records than the `worst` limit allows, even when the masking
# releases one value for all of them; below m / top_m, the same for the top-m limit.
categorical_k <- function(limits, k_strata, m) {
  as.integer(max(k_strata, ceiling(1 / limits$worst - 1e-9), ceiling(m / limits$top_m - 1e-9)))
}

# Records in cells of fewer than k records on the strata (`sid`) and the key columns `cols`
# (a list; NA a value of its own); `k` one number per record.
small_cells <- function(sid, cols, k) {
  id <- code_ids(sid, vapply(cols, function(x) match(x, unique(x)), integer(length(sid))))
  tabulate(id)[id] < k
}

# The cell of every record on its stratum `sid` and the columns of the matrix of positive
# whole-number codes `codes` (NA a value of its own), numbered in order of appearance: a
# mixed-radix code, compacted by hashing (match()) when it would leave the exact doubles.
code_ids <- function(sid, codes) {
  codes <- matrix(codes, nrow = length(sid))
  id <- as.double(sid)
  size <- max(c(1, id))
  for (j in seq_len(ncol(codes))) {
    code <- codes[, j]
    code[is.na(code)] <- 0L
    r <- max(c(0L, code)) + 1
    if (size * r > 2^52) {
      id <- as.double(match(id, unique(id)))
      size <- max(id)
    }
    id <- id + size * code
    size <- size * r
  }
  match(id, unique(id))
}

# Suppression until every exact cell (NA a value of its own) of the strata and the keys
# holds k records: in passes, every record of a small cell gives up the key (not yet
# missing) whose suppression moves it into the largest cell, ties to the key with the most
# categories. `k`: one number per record. Returns the key columns with the suppressions, and
# `left`, the records that remain in small cells (all their keys suppressed and their cell
# still small).
complete_cells <- function(sid, cols, k) {
  nk <- length(cols)
  codes <- matrix(vapply(cols, function(v) suda_codes(v)$code, integer(length(sid))), ncol = nk)
  prio <- order(-apply(codes, 2L, function(z) length(unique(z[!is.na(z)]))))
  ids <- function(m, s = sid) code_ids(s, m)
  n <- length(sid)
  for (pass in seq_len(nk)) {
    id <- ids(codes)
    small <- which(tabulate(id)[id] < k)
    if (!length(small)) break
    best <- rep(NA_integer_, length(small))
    best_size <- rep(-1L, length(small))
    for (j in prio) {
      alt <- codes[small, , drop = FALSE]
      alt[, j] <- NA_integer_
      both <- ids(rbind(codes, alt), c(sid, sid[small]))
      size <- tabulate(both[seq_len(n)], max(both))[both[n + seq_along(small)]]
      take <- !is.na(codes[small, j]) & size > best_size
      best[take] <- j
      best_size[take] <- size[take]
    }
    go <- !is.na(best)
    if (!any(go)) break
    codes[cbind(small[go], best[go])] <- NA_integer_
  }
  # a cell still small (its records' keys all given up, or no larger cell to join) is filled
  # up by records of its stratum that agree with it on its given keys and whose own cells
  # can spare them (largest first): they give up the keys the cell lacks
  id <- ids(codes)
  size <- tabulate(id)[id]
  small <- which(size < k)
  for (first in small[!duplicated(id[small])]) {
    cell <- id[first] # (the ids change with every fill)
    r <- which(id == cell)
    need <- k[first] - length(r)
    if (need <= 0L) next
    miss <- is.na(codes[first, ])
    same <- sid == sid[first] & id != cell & size - 1L >= k
    for (j in which(!miss)) same <- same & !is.na(codes[, j]) & codes[, j] == codes[first, j]
    cand <- which(same)
    if (!length(cand)) next
    cand <- cand[order(-size[cand], cand)]
    # a cell gives at most size - k records
    spare <- size[cand] - k[cand] - (stats::ave(seq_along(cand), id[cand], FUN = seq_along) - 1L)
    cand <- cand[spare > 0L]
    if (length(cand) < need) next
    give <- cand[seq_len(need)]
    codes[give, miss] <- NA_integer_
    id <- ids(codes)
    size <- tabulate(id)[id]
  }
  left <- size < k
  out <- cols
  for (j in seq_len(nk)) {
    x <- cols[[j]]
    x[is.na(codes[, j]) & !is.na(x)] <- NA
    out[[j]] <- x
  }
  list(cols = out, left = left)
}

# sdcMicro's local suppression (suppress_local(): NA matching any value) to k-anonymity on
# the keys within every stratum (`k`: one number per record, the same within a stratum).
local_suppression <- function(sid, cols, k) {
  out <- cols
  df <- as.data.frame(cols, col.names = paste0("k", seq_along(cols)))
  for (s in seq_len(max(sid))) {
    rows <- which(sid == s)
    sup <- suppressMessages(suppress_local(df[rows, , drop = FALSE], names(df), k = min(k[rows])))
    for (j in seq_along(cols)) out[[j]][rows] <- sup[[j]]
  }
  out
}

# Local suppression of the key columns `cols` (a named list) to an individual risk of at
# most `threshold` (the negative-binomial risk of risk_individual() with the sampling
# weights `w`), by suppress_local() within every stratum `sid`: the strata are released
# unchanged, so a record counts only records of its stratum. (Its counts on the strata and
# the keys are at least those within the stratum: there, as in sdcMicro, a record with
# every key missing is not counted by the records with none missing.) Returns the columns.
risk_suppression <- function(cols, sid, w, threshold) {
  n_s <- tabulate(sid)
  floor_risk <- individual_risk(n_s, group_sums(w, sid, length(n_s)), TRUE)
  if (any(floor_risk > threshold)) {
    s <- which.max(floor_risk)
    stop_arg("`risk_threshold` = ", format(threshold), " cannot be met by suppressing the keys: with every key ",
             "suppressed, the ", plural(n_s[s], "record"), " of a stratum keep an individual risk of ",
             format(signif(floor_risk[s], 3)), ". Raise `risk_threshold`, or coarsen the strata.", kind = "data")
  }
  keys <- paste0("k", seq_along(cols))
  df <- as.data.frame(c(stats::setNames(cols, keys), list(.w = w)), stringsAsFactors = FALSE)
  out <- cols
  for (s in seq_along(n_s)) {
    rows <- which(sid == s)
    sup <- suppressMessages(suppress_local(df[rows, , drop = FALSE], keys, threshold = threshold, weights = ".w"))
    for (j in seq_along(cols)) out[[j]][rows] <- sup[[keys[j]]]
  }
  out
}

# The categorical step: when records are in cells of fewer than `k` records (or than their
# stratum's size, when it is smaller), the least-loss generalisation (a greedy path up the
# rungs of the keys, raising at each step the key that takes the most records out of small
# cells per unit of loss), with (when allowed) suppression at each node of the path, that
# leaves no record in a small cell; then (when allowed) PRAM of the keys within the strata,
# and suppression again where PRAM left small cells. Returns NULL when `categorical` allows
# nothing or (without PRAM) no record is in a small cell; otherwise the data with the keys
# changed (`df`, `data`), the table `changes` (per key: categories before and after, values
# recoded, cells suppressed, records post-randomised), `loss` (of the generalisation and
# suppression), `n_small` (records left in small cells), `k` and `settings`. With
# `threshold` (and the column of sampling weights `weights`), the keys of the records still
# above that individual risk are then suppressed (risk_suppression()), and the cells this
# leaves small completed (`n_threshold`: the cells these two suppress). With `weights`,
# `risk` holds the individual risk of the released keys (`expected`, `global_risk`,
# `n_above`, `max_risk`).
tune_categorical <- function(df, data, strata, keys, k, categorical, seed = NULL, threshold = NULL,
                             weights = NULL) {
  if (identical(categorical, "none") || !length(keys)) return(NULL)
  n <- nrow(df)
  sid <- stratum_ids(df, strata)
  orig <- lapply(df[keys], identity)
  # the individual risk of the strata and the keys `cols` (with the weights)
  key_risk <- function(cols) {
    d <- df
    d[keys] <- cols
    risk_individual(d, c(strata, keys), weights = weights, threshold = if (is.null(threshold)) 0.1 else threshold)
  }
  # a stratum smaller than k (the strata are the custodian's, released unchanged) caps it
  k_cell <- k
  k <- pmin(k, tabulate(sid)[sid])
  if (!any(small_cells(sid, orig, k)) && !"pram" %in% categorical &&
      (is.null(threshold) || !key_risk(orig)$n_above)) {
    return(NULL)
  }
  rungs <- if ("generalise" %in% categorical) lapply(orig, categorical_rungs, k = k_cell) else
    lapply(keys, function(v) list())
  # the loss of every cell at every rung (rung 0: the original), and of a node's columns:
  # its rungs' losses, 1 for a cell suppressed since
  cl <- lapply(seq_along(keys), function(j) lapply(c(list(orig[[j]]), rungs[[j]]), cell_loss, x = orig[[j]]))
  loss_of <- function(cols, lev) {
    sum(vapply(seq_along(cols), function(j) {
      l <- cl[[j]][[lev[j] + 1L]]
      sum(ifelse(is.na(cols[[j]]) & !is.na(orig[[j]]), 1, l))
    }, 0)) / (n * length(keys))
  }
  # the path: every node's columns, loss and records in small cells
  lev <- integer(length(keys))
  cols <- orig
  path <- list()
  repeat {
    sm <- small_cells(sid, cols, k)
    path[[length(path) + 1L]] <- list(lev = lev, cols = cols, loss = loss_of(cols, lev), n_small = sum(sm))
    if (!any(sm)) break
    up <- which(lev < lengths(rungs))
    if (!length(up)) break
    gain <- vapply(up, function(j) {
      try <- cols
      try[[j]] <- rungs[[j]][[lev[j] + 1L]]
      up_lev <- lev
      up_lev[j] <- lev[j] + 1L
      c(sum(sm) - sum(small_cells(sid, try, k)), loss_of(try, up_lev) - path[[length(path)]]$loss)
    }, numeric(2))
    score <- if (any(gain[1L, ] > 0)) gain[1L, ] / pmax(gain[2L, ], 1e-12) else -gain[2L, ]
    j <- up[which.max(score)]
    lev[j] <- lev[j] + 1L
    cols[[j]] <- rungs[[j]][[lev[j]]]
  }
  # the candidates: a node without small cells, or a node with suppression (a lower bound of
  # its loss: one suppressed cell per record in a small cell)
  best <- NULL
  consider <- function(cols, loss, how, lev) {
    if (is.null(best) || loss < best$loss) best <<- list(cols = cols, loss = loss, how = how, lev = lev)
  }
  for (node in path) if (node$n_small == 0L) consider(node$cols, node$loss, "generalise", node$lev)
  if ("suppress" %in% categorical) {
    for (node in rev(path)) {
      if (node$n_small == 0L) next
      if (!is.null(best) && node$loss + node$n_small / (n * length(keys)) >= best$loss) next
      for (first in c(FALSE, TRUE)) {
        start <- if (first) local_suppression(sid, node$cols, k) else node$cols
        done <- complete_cells(sid, start, k)
        if (any(done$left)) next
        consider(done$cols, loss_of(done$cols, node$lev), if (first) "local" else "complete", node$lev)
      }
    }
  }
  if (is.null(best)) {
    last <- path[[length(path)]]
    best <- list(cols = last$cols, loss = last$loss, how = "generalise", lev = last$lev)
  }
  final <- best$cols
  n_pram <- stats::setNames(integer(length(keys)), keys)
  if ("pram" %in% categorical) {
    gen <- best$cols
    pdf <- as.data.frame(c(df[strata], stats::setNames(gen, keys)), stringsAsFactors = FALSE)
    vary <- keys[vapply(gen, function(v) length(unique(v[!is.na(v)])) > 1L, NA)]
    if (length(vary)) {
      pr <- suppressMessages(anonymise_pram(pdf, vars = vary, strata = strata, seed = seed))
      for (v in vary) {
        j <- match(v, keys)
        new <- pr[[v]]
        if (is.factor(gen[[j]])) new <- factor(new, levels = levels(gen[[j]]), ordered = is.ordered(gen[[j]]))
        n_pram[j] <- sum(as.character(new) != as.character(gen[[j]]), na.rm = TRUE)
        final[[j]] <- new
      }
      # PRAM moves records between cells: the cells left small are completed by suppression
      if (any(small_cells(sid, final, k))) final <- complete_cells(sid, final, k)$cols
    }
  }
  n_threshold <- 0L
  if (!is.null(threshold) && key_risk(final)$n_above) {
    before <- final
    final <- risk_suppression(final, sid, df[[weights]], threshold)
    if (any(small_cells(sid, final, k))) final <- complete_cells(sid, final, k)$cols
    n_threshold <- sum(vapply(seq_along(keys), function(j) sum(is.na(final[[j]]) & !is.na(before[[j]])), 1L))
  }
  n_small <- sum(small_cells(sid, final, k))
  changes <- data.frame(
    column = keys,
    categories_before = vapply(orig, function(v) length(unique(v[!is.na(v)])), 1L),
    categories_after = vapply(final, function(v) length(unique(v[!is.na(v)])), 1L),
    n_recoded = vapply(seq_along(keys), function(j) sum(cl[[j]][[best$lev[j] + 1L]] > 0), 1L),
    n_suppressed = vapply(seq_along(keys), function(j) sum(is.na(final[[j]]) & !is.na(orig[[j]])), 1L),
    n_pram = as.integer(n_pram), stringsAsFactors = FALSE)
  rownames(changes) <- NULL
  for (j in seq_along(keys)) {
    v <- keys[j]
    if (!identical(final[[j]], orig[[j]])) {
      df[[v]] <- final[[j]]
      data[[v]] <- final[[j]]
    }
  }
  how <- c(if (any(best$lev > 0L)) "generalisation",
           switch(best$how, generalise = NULL, complete = "suppression of cells",
                  local = "local suppression (k-anonymity with NA as any value), then suppression of cells"),
           if ("pram" %in% categorical) "PRAM")
  list(df = df, data = data, changes = changes, loss = loss_of(final, best$lev), n_small = n_small, k = k_cell,
       risk_threshold = threshold, n_threshold = n_threshold,
       risk = if (!is.null(weights)) key_risk(final)[c("expected", "global_risk", "n_above", "max_risk")],
       settings = paste0(if (length(how)) paste(how, collapse = ", then ") else "no change",
                         " to cells of >= ", k_cell, " records",
                         if (n_threshold) paste0(", then local suppression to an individual risk of at most ",
                                                 format(threshold))))
}

# The changed key columns as lines of text (print() and the report).
categorical_lines <- function(cat) {
  ch <- cat$changes
  ch <- ch[ch$n_recoded + ch$n_suppressed + ch$n_pram > 0L, , drop = FALSE]
  if (!nrow(ch)) return("no key changed")
  sprintf("%s: %d categories -> %d, %s recoded, %s suppressed%s", ch$column, ch$categories_before,
          ch$categories_after, plural(ch$n_recoded, "value"), plural(ch$n_suppressed, "cell"),
          ifelse(ch$n_pram > 0L, paste0(", ", plural(ch$n_pram, "record"), " post-randomised"), ""))
}
