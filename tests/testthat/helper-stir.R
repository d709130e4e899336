# Slow, obviously correct R transcriptions of the equations of Rowe et al. ("Data anonymization by cluster stirring").

# distance of one variable's kind, equation (3)'s d^(j)
ref_dist <- function(a, b, nominal) if (nominal) as.numeric(a != b) else abs(a - b)

# Equation (3) by brute force: the member value with the smallest summed distance to all
# members, ties to the smallest value; and the largest member-to-centroid distance.
ref_centroid <- function(v, nominal) {
  u <- sort(unique(v))
  cost <- vapply(u, function(a) sum(ref_dist(v, a, nominal)), numeric(1))
  c <- u[which(cost == min(cost))[1L]]
  list(value = c, radius = max(ref_dist(v, c, nominal)))
}

# Equation (2), greedy in sorted order: a new record joins when all pairwise distances to
# the members stay within eps (checked pair by pair, not by ranges).
ref_clusters <- function(x, nominal, eps) {
  n <- nrow(x)
  ord <- do.call(order, c(unname(as.data.frame(x)), list(method = "radix")))
  cl <- rep(NA_integer_, n)
  c <- 0L
  for (p in seq_along(ord)) {
    r <- ord[p]
    if (!is.na(cl[r])) next
    c <- c + 1L
    cl[r] <- c
    members <- r
    for (q in ord[-seq_len(p)]) {
      if (!is.na(cl[q])) next
      ok <- all(vapply(members, function(m) {
        all(vapply(seq_len(ncol(x)), function(j) ref_dist(x[q, j], x[m, j], nominal[j]) <= eps[j],
                   logical(1)))
      }, logical(1)))
      if (ok) {
        cl[q] <- c
        members <- c(members, q)
      }
    }
  }
  cl
}

# The map of section 3.2 from the knots, with linear extrapolation of the last segment.
ref_map <- function(knots, d) {
  if (d == 0) return(0)
  x <- knots$distance
  y <- knots$mapped
  m <- length(x)
  if (m < 2L) return(y[1] + d)
  if (d >= x[m]) return(y[m] + (y[m] - y[m - 1]) / (x[m] - x[m - 1]) * (d - x[m]))
  stats::approx(x, y, d)$y
}

# Equation (4): the large cluster minimising the summed mapped distances to its centroid.
ref_nearest <- function(xo, xc, nominal, map, vars) {
  vapply(seq_len(nrow(xo)), function(o) {
    s <- vapply(seq_len(nrow(xc)), function(l) {
      sum(vapply(seq_along(vars), function(j) {
        ref_map(map$knots[map$knots$variable == vars[j], ], ref_dist(xo[o, j], xc[l, j], nominal[j]))
      }, numeric(1)))
    }, numeric(1))
    which(s == min(s))[1L]
  }, integer(1))
}

# Equation (10) as implemented: Fisher-Yates inside clusters, variables outer, clusters in
# id order, positions from last to first with sample.int(i, 1).
ref_shuffle <- function(cl, d) {
  src <- matrix(NA_integer_, length(cl), d)
  for (j in seq_len(d)) {
    for (c in sort(unique(cl))) {
      mem <- which(cl == c)
      buf <- mem
      if (length(mem) > 1L) {
        for (i in length(mem):2) {
          k <- sample.int(i, 1L)
          t <- buf[i]; buf[i] <- buf[k]; buf[k] <- t
        }
      }
      src[mem, j] <- buf
    }
  }
  src
}

# Wasserstein-1 distance through the quantile functions: integral over u of |F^-1 - G^-1|.
ref_w1 <- function(a, b) {
  a <- sort(a); b <- sort(b)
  u <- sort(unique(c(seq_along(a) / length(a), seq_along(b) / length(b), 0)))
  mid <- (u[-1] + u[-length(u)]) / 2
  qa <- a[pmin(length(a), ceiling(mid * length(a)))]
  qb <- b[pmin(length(b), ceiling(mid * length(b)))]
  sum(abs(qa - qb) * diff(u))
}

# A small mixed data set with ties, duplicates and every supported kind.
stir_data <- function(n = 60, seed = 1) {
  set.seed(seed)
  data.frame(
    num = round(rnorm(n, 50, 10), 1),
    int = sample(20:30, n, TRUE),
    day = as.Date("2020-01-01") + sample(0:40, n, TRUE),
    ord = factor(sample(c("lo", "mid", "hi"), n, TRUE), levels = c("lo", "mid", "hi"), ordered = TRUE),
    fac = factor(sample(c("a", "b", "c"), n, TRUE)),
    chr = sample(c("x", "y"), n, TRUE),
    lgl = sample(c(TRUE, FALSE), n, TRUE),
    grp = factor(sample(c("g1", "g2"), n, TRUE)),
    stringsAsFactors = FALSE)
}

# The health records of Table 1 of Rowe et al. (made up): zip, age, nationality, condition.
health_table <- function() {
  data.frame(
    zip = factor(c("13053", "13068", "13068", "13053", "14853", "14853", "14850", "14850",
                   "13053", "13053", "13068", "13053", "99501")),
    age = c(28L, 29L, 21L, 23L, 50L, 55L, 47L, 49L, 31L, 37L, 36L, 35L, 86L),
    nationality = factor(c("Russian", "American", "Japanese", "American", "Indian", "Russian",
                           "American", "American", "American", "Indian", "Japanese", "American", "Icelandic")),
    condition = factor(c("Heart", "Heart", "Viral", "Viral", "Cancer", "Heart", "Viral", "Viral",
                         "Cancer", "Cancer", "Cancer", "Cancer", "Heart")))
}
