# Slow, independent R references for the (k, epsilon) code.

# Mondrian as documented in ?equivalence_classes: rows of x (matrix) -> list of row sets in
# depth-first order (left before right). `inv` = 1 / global range per column (0 if constant).
ref_mondrian <- function(x, k, rows = seq_len(nrow(x)), inv = NULL) {
  if (is.null(inv)) {
    rng <- apply(x, 2L, function(v) diff(range(v)))
    inv <- ifelse(rng > 0, 1 / rng, 0)
  }
  rec <- function(rows) {
    m <- length(rows)
    if (m >= 2 * k) {
      w <- apply(x[rows, , drop = FALSE], 2L, function(v) diff(range(v))) * inv
      for (j in order(-w, seq_along(w))) {
        if (!(w[j] > 0)) break
        v <- x[rows, j]
        s <- sort(v)
        lm <- s[floor((m - 1) / 2) + 1]
        um <- s[floor(m / 2) + 1]
        cuts <- list(v <= lm, v < um)  # cut A (lower median), cut B (upper median)
        n_left <- vapply(cuts, sum, 0L)
        ok <- n_left >= k & m - n_left >= k
        if (!any(ok)) next
        imb <- ifelse(ok, abs(2 * n_left - m), Inf)
        left_side <- cuts[[which.min(imb)]]  # which.min: ties go to cut A
        return(c(rec(rows[left_side]), rec(rows[!left_side])))
      }
    }
    list(rows)
  }
  rec(rows)
}

ref_classes <- function(x, k, strata = NULL) {
  n <- nrow(x)
  rng <- apply(x, 2L, function(v) diff(range(v)))
  inv <- ifelse(rng > 0, 1 / rng, 0)
  groups <- if (is.null(strata)) list(seq_len(n)) else split(seq_len(n), strata)
  cls <- integer(n)
  id <- 0L
  for (g in groups) {
    for (rows in ref_mondrian(x, k, g, inv)) {
      id <- id + 1L
      cls[rows] <- id
    }
  }
  cls
}

# Section V-B indicator: record i is linked if no other original in its class is strictly
# closer to its released value (distance: sum of squared differences scaled by s).
ref_link <- function(o, q, cls, s) {
  n <- nrow(o)
  linked <- logical(n)
  for (i in seq_len(n)) {
    same <- which(cls == cls[i])
    d <- numeric(length(same))
    for (v in seq_len(ncol(o))) d <- d + ((q[i, v] - o[same, v]) / s[cls[i], v])^2
    linked[i] <- !any(d[same != i] < d[same == i])
  }
  linked
}

# Section V-C: number of originals of the class inside the box of half-widths r around q_i.
ref_counts <- function(o, q, cls, r) {
  vapply(seq_len(nrow(o)), function(i) {
    same <- which(cls == cls[i])
    inside <- rep(TRUE, length(same))
    for (v in seq_len(ncol(o))) inside <- inside & abs(q[i, v] - o[same, v]) <= r[cls[i], v]
    sum(inside)
  }, integer(1))
}

plaplace <- function(x, b = 1) ifelse(x < 0, 0.5 * exp(x / b), 1 - 0.5 * exp(-x / b))

sim_people <- function(n, seed = 1) {
  set.seed(seed)
  data.frame(
    age = sample(18:90, n, TRUE),
    income = round(rlnorm(n, 10, 0.5)),
    height = rnorm(n, 170, 10),
    weight = rnorm(n, 75, 12),
    sex = factor(sample(c("f", "m"), n, TRUE)),
    region = sample(c("north", "south", "west"), n, TRUE)
  )
}
