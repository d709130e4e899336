# Rank queries on tied and extreme data (issue 39): the queries with equal query points
# share one descent of the rank index (src/rank.c), and a tree of many tied points is
# searched as its distinct points with their multiplicities. Every case: the tree points zt,
# the query points zq (the same rows) and the cells.
rank_cases <- function(seed = 39) {
  set.seed(seed)
  out <- list()
  # all records identical, queried from their point and from elsewhere
  n <- 300
  zq <- zt <- matrix(1.5, n, 2)
  zq[1:40, ] <- rep(c(2, 1), each = 40)
  out$identical <- list(zt = zt, zq = zq, cell = rep(1L, n))
  # groups of 1 to 50 records sharing their query point (their mean, as MDAV releases it,
  # some moved by noise), tied tree points, the groups in two cells and a few split
  sizes <- 1:50
  grp <- rep(seq_along(sizes), sizes)
  zt <- matrix(round(stats::rnorm(length(grp) * 3), 1), length(grp), 3)
  zt[1:30, ] <- zt[31:60, ]
  zq <- rowsum(zt, grp)[grp, ] / sizes[grp]
  moved <- grp %% 3 == 0
  zq[moved, ] <- zq[moved, ] + stats::rnorm(sum(moved) * 3, sd = 0.5)[rep(seq_len(sum(moved)), 3)]
  cell <- (grp %% 2) + 1L
  cell[sample(length(cell), 40)] <- 3L
  out$groups <- list(zt = zt, zq = zq, cell = cell)
  # a lattice: many distinct points at equal distances, queries on lattice points, between
  # them and 30 at one point
  zt <- as.matrix(expand.grid(-6:6, -6:6)) + 0
  dimnames(zt) <- NULL
  zq <- zt[sample(nrow(zt)), ] + sample(c(0, 0, 0.5), 2 * nrow(zt), TRUE)
  zq[1:30, ] <- rep(c(0.5, 0), each = 30)
  out$lattice <- list(zt = zt, zq = zq, cell = rep(1:2, length.out = nrow(zt)))
  # near underflow (squared distances subnormal or 0) and huge (squared distances Inf)
  for (scale in c(1e-160, 1e-170, 1e154, 1e200)) {
    zt <- matrix(round(stats::rnorm(400), 1), 200, 2) * scale
    zt[1:50, ] <- zt[51:100, ]
    zq <- zt[rep(sample(200, 40), 5), ]
    zq[1:20, ] <- zt[1:20, ]
    out[[paste("scale", scale)]] <- list(zt = zt, zq = zq, cell = rep(1:3, length.out = 200))
  }
  # one and two records
  out$one <- list(zt = matrix(c(1, 2), 1), zq = matrix(c(0, 2), 1), cell = 1L)
  out$two <- list(zt = matrix(c(1, 2, 1, 2), 2, byrow = TRUE), zq = matrix(c(0, 2, 0, 2), 2, byrow = TRUE),
                  cell = c(1L, 1L))
  out$two_apart <- list(zt = matrix(c(1, 2, 3, 4), 2), zq = matrix(c(3, 2, 3, 2), 2, byrow = TRUE),
                        cell = c(1L, 1L))
  out
}

# Plain R reference of the rank counts of a query row: the squared distances from its query
# point to the tree points of its cell, summed in column order as the kernel sums them.
ref_rank_d2 <- function(zt, zq, id, i) {
  tr <- which(id == id[i])
  d2 <- 0
  for (j in seq_len(ncol(zt))) d2 <- d2 + (zq[i, j] - zt[tr, j])^2
  list(d2 = d2, own = d2[tr == i])
}
