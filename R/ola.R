# Optimal lattice anonymisation (El Emam et al. 2009): global recoding over
# generalisation hierarchies with a suppression budget. Documented in ?equivalence_classes.

# The lattice inputs of the C kernel: base codes, the code of every value at every level,
# the number of groups per level and the per-record costs of the chosen loss.
ola_lattice <- function(df, cols, hs, loss) {
  n <- nrow(df)
  d <- length(cols)
  codes <- matrix(0L, n, d)
  gen <- card <- cost <- vector("list", d)
  lb <- vector("list", d)  # per level: the loss of the level with nothing suppressed
  for (j in seq_len(d)) {
    tab <- hs[[j]]$table
    h <- ncol(tab)
    codes[, j] <- match(as.character(df[[cols[j]]]), tab[[1L]]) - 1L
    g <- vapply(tab, function(v) match(v, unique(v)) - 1L, integer(nrow(tab)))
    dim(g) <- c(nrow(tab), h)
    gen[[j]] <- g
    card[[j]] <- as.integer(hs[[j]]$n_groups)
    f0 <- tabulate(codes[, j] + 1L, nrow(tab))
    cm <- matrix(0, nrow(tab), h + 1L)
    if (loss == "precision") {
      for (l in seq_len(h)) cm[, l] <- if (h > 1L) (l - 1) / (h - 1) else 0
      cm[, h + 1L] <- 1
    } else if (loss == "entropy") {
      # -log2 P(value | its group at level l); a suppressed record's group is everything
      for (l in seq_len(h)) {
        grp <- as.vector(rowsum(f0, g[, l]))[g[, l] + 1L]  # records in the value's group
        cm[, l] <- ifelse(f0 > 0, -log2(f0 / grp), 0)
      }
      cm[, h + 1L] <- ifelse(f0 > 0, -log2(f0 / n), 0)
    }
    cost[[j]] <- cm
    lb[[j]] <- colSums(f0 * cm[, seq_len(h), drop = FALSE])
  }
  list(c = list(codes = codes, gen = gen, card = card, cost = cost), h = lengths(card), lb = lb, n = n)
}

# The loss of a node from the kernel's statistics.
ola_loss <- function(stats, loss, n, d) {
  switch(loss,
         precision = stats[3L] / (n * d),
         entropy = stats[3L] / n,
         discernibility = stats[4L])
}

# Is candidate a (loss, n_suppressed, height, levels) better than b? Losses within a
# relative 1e-9 are equal; then fewer suppressed records, lower height, and the level
# vector that is smaller at its first difference win.
ola_better <- function(a, b) {
  if (is.null(b)) return(TRUE)
  tol <- 1e-9 * max(1, abs(b$loss))
  if (a$loss < b$loss - tol) return(TRUE)
  if (a$loss > b$loss + tol) return(FALSE)
  if (a$n_suppressed != b$n_suppressed) return(a$n_suppressed < b$n_suppressed)
  if (sum(a$levels) != sum(b$levels)) return(sum(a$levels) < sum(b$levels))
  diff <- which(a$levels != b$levels)
  length(diff) > 0L && a$levels[diff[1L]] < b$levels[diff[1L]]
}

# Search of the whole lattice; returns the optimal node and what the search did.
ola_search <- function(lat, k, max_sup, loss) {
  h <- lat$h
  d <- length(h)
  n <- lat$n
  nodes <- as.matrix(expand.grid(lapply(h, function(x) seq_len(x) - 1L), KEEP.OUT.ATTRS = FALSE))
  dimnames(nodes) <- NULL
  m <- nrow(nodes)
  height <- rowSums(nodes)
  # static lower bound: the loss with no record suppressed (suppression costs at least
  # as much as any level for precision and entropy); for discernibility n^2 / C, where C
  # bounds the number of classes (Cauchy-Schwarz: sum |E|^2 >= n^2 / C with nothing
  # suppressed, and suppressing s records costs n s, more than it saves)
  cmax <- pmin(as.double(n), Reduce(`*`, lapply(seq_len(d), function(j) as.double(lat$c$card[[j]][nodes[, j] + 1L])), 1))
  static <- if (loss == "discernibility") as.double(n)^2 / pmax(cmax, 1) else {
    b <- numeric(m)
    for (j in seq_len(d)) b <- b + lat$lb[[j]][nodes[, j] + 1L]
    if (loss == "precision") b / (n * d) else b / n
  }
  dynamic <- static
  lex <- do.call(order, c(list(static, height), lapply(seq_len(d), function(j) nodes[, j])))
  radix <- cumprod(c(1, h[-d]))
  status <- integer(m)      # 1 k-anonymous, -1 not, 0 unknown
  zero_sup <- logical(m)    # known to suppress nothing (a specialisation suppresses nothing)
  evaluated <- logical(m)
  n_sup <- rep(NA_real_, m)
  node_loss <- rep(NA_real_, m)
  best <- NULL
  beaten <- function(bound) !is.null(best) && bound > best$loss + 1e-9 * max(1, abs(best$loss))
  # count one node (or infer it), tag its generalisations or specialisations, update the
  # best node and the bounds
  # Tags spread from a node through its generalisations (up) or specialisations (down),
  # layer by layer, and stop at nodes that `grow(ids)` says already carry the tag: every
  # tag (and bound) is monotone over the lattice, so the nodes beyond such a node carry it
  # too. `set(ids)` applies the tag. The work is proportional to the nodes tagged (each
  # at most once per tag) and their neighbours, not to the size of the lattice.
  spread <- function(idx, up, grow, set) {
    front <- idx[grow(idx)]
    while (length(front)) {
      set(front)
      nxt <- vector("list", d)
      for (j in seq_len(d)) {
        f <- if (up) front[nodes[front, j] < h[j] - 1L] else front[nodes[front, j] > 0L]
        nxt[[j]] <- if (up) f + radix[j] else f - radix[j]
      }
      front <- unique(unlist(nxt, use.names = FALSE))
      front <- front[grow(front)]
    }
  }
  visit <- function(idx) {
    lv <- nodes[idx, ]
    if (zero_sup[idx] && loss != "discernibility") {
      cand <- list(loss = static[idx], n_suppressed = 0, levels = lv, idx = idx)
      n_sup[idx] <<- 0
      node_loss[idx] <<- static[idx]
    } else {
      st <- .Call(C_ffi_ola_node, lat$c, as.integer(lv), as.integer(k), FALSE)[[1L]]
      evaluated[idx] <<- TRUE
      n_sup[idx] <<- st[1L]
      node_loss[idx] <<- ola_loss(st, loss, n, d)
      cand <- list(loss = node_loss[idx], n_suppressed = st[1L], levels = lv, idx = idx)
      if (loss == "discernibility") {
        # a generalisation has at most the classes of this node, and merges them (cmax
        # falls and dynamic grows towards the top, and dynamic >= n^2 / cmax holds, so a
        # node with cmax <= st[6] and dynamic >= st[5] has nothing to learn, nor above it)
        spread(idx, TRUE, function(v) cmax[v] > st[6L] | dynamic[v] < st[5L], function(v) {
          cmax[v] <<- pmin(cmax[v], st[6L])
          dynamic[v] <<- pmax(dynamic[v], st[5L], as.double(n)^2 / pmax(cmax[v], 1))
        })
      }
    }
    if (cand$n_suppressed <= max_sup) {
      # (a node above a k-anonymous one is k-anonymous: never tagged -1)
      spread(idx, TRUE, function(v) status[v] == 0L, function(v) status[v] <<- 1L)
      if (cand$n_suppressed == 0) spread(idx, TRUE, function(v) !zero_sup[v], function(v) zero_sup[v] <<- TRUE)
      if (ola_better(cand, best)) best <<- cand
    } else {
      spread(idx, FALSE, function(v) status[v] != -1L, function(v) status[v] <<- -1L)
    }
  }
  # a chain from a node to the top, raising the columns in turn
  chain <- function(idx) {
    lv <- nodes[idx, ]
    out <- idx
    while (any(lv < h - 1L)) {
      for (j in seq_len(d)) {
        if (lv[j] < h[j] - 1L) {
          lv[j] <- lv[j] + 1L
          out <- c(out, as.integer(1 + sum(lv * radix)))
        }
      }
    }
    out
  }
  for (idx in lex) {
    if (beaten(static[idx])) break
    if (status[idx] == -1L || beaten(dynamic[idx])) next
    # binary search up a chain (El Emam et al. 2009): a node found not k-anonymous tags
    # all its specialisations at once; nodes found k-anonymous are candidates too
    if (status[idx] == 0L) {
      ch <- chain(idx)
      while (status[idx] == 0L) {
        unknown <- which(status[ch] == 0L)
        pos <- unknown[ceiling((length(unknown) + 1) / 2)]
        if (pos == 1L) break
        visit(ch[pos])
      }
      if (status[idx] == -1L || beaten(dynamic[idx])) next
    }
    if (!evaluated[idx] && is.na(n_sup[idx])) visit(idx)
  }
  list(best = best, nodes = nodes, status = status, evaluated = evaluated, n_suppressed = n_sup,
       loss = node_loss)
}

# Checked data -> detanon_classes by OLA over quasi (generalised) and strata (kept).
ola_classes <- function(df, k, quasi, strata, hierarchies, max_suppression, loss) {
  n <- nrow(df)
  cols <- c(quasi, strata)
  hs <- lattice_hierarchies(df, quasi, strata, hierarchies)[cols]
  lat <- ola_lattice(df, cols, hs, loss)
  max_sup <- floor(max_suppression * n + 1e-9)
  s <- ola_search(lat, k, max_sup, loss)
  if (is.null(s$best)) {
    top <- .Call(C_ffi_ola_node, lat$c, as.integer(lat$h - 1L), as.integer(k), FALSE)[[1L]]
    stop_arg("No generalisation reaches k = ", k, " within the suppression budget: even the ",
             "coarsest levels suppress ", plural(top[1L], "record"), ", more than `max_suppression` ",
             "allows (", max_sup, " of ", n, "). Raise `max_suppression`, lower `k`, or drop strata.")
  }
  lv <- s$best$levels
  res <- .Call(C_ffi_ola_node, lat$c, as.integer(lv), as.integer(k), TRUE)
  slot <- res[[2L]]
  sizes <- tabulate(slot, max(slot))
  kept <- sizes[slot] >= k
  # classes numbered by their strata values, then their generalised quasi values
  key_cols <- c(strata, quasi)
  first <- which(kept)[!duplicated(slot[kept])]
  # generalised labels of the first record of every class at the chosen levels
  labels <- lapply(seq_along(cols), function(j) {
    lab <- character(n)
    lab[first] <- hs[[j]]$table[[lv[j] + 1L]][lat$c$codes[first, j] + 1L]
    lab
  })
  names(labels) <- cols
  ord <- do.call(order, c(lapply(key_cols, function(v) {
    x <- if (v %in% strata) df[[v]][first] else labels[[v]][first]
    if (v %in% quasi) match(x, unique(hs[[v]]$table[[lv[match(v, cols)] + 1L]])) else radix_key(x)
  }), list(method = "radix")))
  cls_of_slot <- integer(length(sizes))
  cls_of_slot[slot[first[ord]]] <- seq_along(ord)
  row_class <- cls_of_slot[slot]
  row_class[!kept] <- NA_integer_
  rows1 <- first[ord]
  classes <- data.frame(class = seq_along(ord), n = sizes[slot[rows1]])
  if (length(strata)) {
    st <- df[rows1, strata, drop = FALSE]
    rownames(st) <- NULL
    classes <- cbind(classes, st)
  }
  for (q in quasi) classes[[q]] <- labels[[q]][rows1]
  names(lv) <- cols
  hq <- lat$h[seq_along(quasi)]
  precision <- stats::setNames(ifelse(hq > 1L, lv[quasi] / pmax(hq - 1L, 1L), 0), quasi)
  list(row_class = row_class, classes = classes, precision = precision, k = k, quasi = quasi,
       strata = strata, n_suppressed = sum(!kept), method = "ola",
       levels = lv[quasi], level_names = vapply(quasi, function(q) names(hs[[q]]$table)[lv[q] + 1L], ""),
       loss = stats::setNames(s$best$loss, loss), max_suppression = max_suppression,
       hierarchies = hs[quasi],
       lattice = list(n_nodes = nrow(s$nodes), n_evaluated = sum(s$evaluated),
                      n_tagged = sum(!s$evaluated & s$status != 0L)))
}
