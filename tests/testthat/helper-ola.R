# Slow, independent R references for OLA (?equivalence_classes, section "OLA search").

# Every node of the lattice by brute force: one row per node with its levels, the records
# suppressed and the loss. `tabs`: one level table (data frame of character columns,
# values first) per column of `cols`.
ref_ola_nodes <- function(df, cols, tabs, k, loss) {
  n <- nrow(df)
  d <- length(cols)
  h <- vapply(tabs, ncol, 1L)
  nodes <- as.matrix(expand.grid(lapply(h, function(x) seq_len(x) - 1L)))
  vals <- lapply(seq_len(d), function(j) as.character(df[[cols[j]]]))
  label <- function(j, l) tabs[[j]][[l + 1L]][match(vals[[j]], tabs[[j]][[1L]])]
  out <- data.frame(node = seq_len(nrow(nodes)), n_suppressed = 0, loss = 0)
  for (i in seq_len(nrow(nodes))) {
    lv <- nodes[i, ]
    labs <- lapply(seq_len(d), function(j) label(j, lv[j]))
    key <- do.call(paste, c(labs, sep = "\r"))
    size <- as.vector(table(key)[key])
    sup <- size < k
    out$n_suppressed[i] <- sum(sup)
    out$loss[i] <- switch(loss,
      precision = {
        per <- sum(ifelse(h > 1L, lv / pmax(h - 1L, 1L), 0))
        (sum(!sup) * per + sum(sup) * d) / (n * d)
      },
      discernibility = sum(as.numeric(table(key[!sup]))^2) + n * sum(sup),
      entropy = {
        bits <- 0
        for (j in seq_len(d)) {
          f0 <- as.vector(table(vals[[j]])[vals[[j]]])
          fg <- as.vector(table(labs[[j]])[labs[[j]]])
          bits <- bits + sum(-log2(f0[!sup] / fg[!sup])) + sum(-log2(f0[sup] / n))
        }
        bits / n
      })
  }
  cbind(as.data.frame(nodes), out)
}

# The optimum: least loss among nodes suppressing at most max_sup records; ties (1e-9
# relative) by fewer suppressed, lower height, then smaller levels in column order.
ref_ola_best <- function(nodes, d, max_sup) {
  ok <- nodes[nodes$n_suppressed <= max_sup, ]
  if (!nrow(ok)) return(NULL)
  m <- min(ok$loss)
  ok <- ok[ok$loss <= m + 1e-9 * max(1, abs(m)), ]
  lv <- as.matrix(ok[seq_len(d)])
  o <- do.call(order, c(list(ok$n_suppressed, rowSums(lv)), lapply(seq_len(d), function(j) lv[, j])))
  ok[o[1L], ]
}

# A random hierarchy over `values`: each level merges random groups of the one below.
ref_random_table <- function(values, n_levels) {
  tab <- data.frame(value = as.character(values), stringsAsFactors = FALSE)
  cur <- tab$value
  for (l in seq_len(n_levels - 1L)) {
    u <- unique(cur)
    g <- sample(max(1L, ceiling(length(u) / 2)), length(u), replace = TRUE)
    cur <- paste0("L", l, "_", g[match(cur, u)])
    tab[[paste0("l", l)]] <- cur
  }
  tab
}
