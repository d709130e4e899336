# Slow, obviously correct R references for the categorical risk measures
# (R/risk_categorical.R), one record or one class at a time.

# fk and Fk of sdcMicro's freqCalc(): record j counts for record i when their keys agree
# wherever both are present; a record with all keys missing counts every record, and
# (with more than one key) is not counted for records whose keys are complete.
ref_freq <- function(keys, w = rep(1, nrow(keys))) {
  keys <- as.data.frame(keys)
  n <- nrow(keys)
  m <- ncol(keys)
  fk <- Fk <- numeric(n)
  for (i in seq_len(n)) {
    a <- keys[i, , drop = TRUE]
    if (all(is.na(unlist(a)))) {
      fk[i] <- n
      Fk[i] <- sum(w)
      next
    }
    for (j in seq_len(n)) {
      b <- keys[j, , drop = TRUE]
      if (m > 1 && !anyNA(unlist(a)) && all(is.na(unlist(b)))) next
      ok <- TRUE
      for (v in seq_len(m)) {
        if (!is.na(a[[v]]) && !is.na(b[[v]]) && a[[v]] != b[[v]]) ok <- FALSE
      }
      if (ok) {
        fk[i] <- fk[i] + 1
        Fk[i] <- Fk[i] + w[j]
      }
    }
  }
  list(fk = fk, Fk = Fk)
}

# sdcMicro's indivRisk(method = "approx"), record by record.
ref_risk <- function(fk, Fk, weighted = TRUE) {
  r <- numeric(length(fk))
  for (i in seq_along(fk)) {
    if (!weighted) {
      r[i] <- 1 / fk[i]
      next
    }
    pk <- fk[i] / Fk[i]
    if (fk[i] > 2) r[i] <- pk / (fk[i] - (1 - pk))
    if (fk[i] == 2) r[i] <- pk / (1 - pk) - (pk / (1 - pk))^2 * log(1 / pk)
    if (fk[i] == 1) r[i] <- pk / (1 - pk) * log(1 / pk)
    if (fk[i] == Fk[i]) r[i] <- 1 / fk[i]
  }
  r
}

ref_household <- function(r, h) {
  out <- numeric(length(r))
  for (i in seq_along(r)) out[i] <- 1 - prod(1 - r[h == h[i]])
  out
}

# sdcMicro's measure_threshold() loop (src/Measure_Threshold.h) and measure_risk()'s NA rule.
ref_threshold <- function(r, g) {
  r <- sort(r, decreasing = TRUE)
  n <- length(r)
  target <- g * n
  sum_risk <- sum(r)
  current <- r[1]
  threshold <- 0
  if (sum_risk < target) {
    threshold <- current
  } else {
    sum_freq <- 0
    for (j in seq_len(n)) {
      if (r[j] != current) {
        if (sum_risk + r[j] * sum_freq < target) {
          threshold <- r[j]
          break
        }
        current <- r[j]
      }
      sum_freq <- sum_freq + 1
      sum_risk <- sum_risk - r[j]
    }
  }
  if (threshold == current) NA_real_ else threshold
}

# The class of every record: its key values pasted (a missing value is a value of its own).
ref_class <- function(keys) {
  do.call(paste, c(lapply(as.data.frame(keys), function(v) ifelse(is.na(v), "<NA>", paste0("=", v))),
                   sep = "\r"))
}

# distinct, entropy and recursive (c, l) l-diversity of every record's class.
ref_ldiversity <- function(keys, s, c = 2) {
  cls <- ref_class(keys)
  s <- ifelse(is.na(s), "<NA>", as.character(s))
  n <- length(s)
  out <- list(distinct = numeric(n), entropy = numeric(n), recursive = numeric(n))
  for (i in seq_len(n)) {
    r <- sort(as.vector(table(s[cls == cls[i]])), decreasing = TRUE)
    p <- r / sum(r)
    m <- length(r)
    l <- 1
    for (j in seq_len(m)[-1]) if (r[1] < c * sum(r[j:m])) l <- j
    out$distinct[i] <- m
    out$entropy[i] <- exp(-sum(p * log(p)))
    out$recursive[i] <- l
  }
  out
}

# EMD between the class's and the whole data's distribution of s over its sorted distinct
# values: equal ground distance, or ordered (|i - j| / (m - 1)).
ref_tcloseness <- function(keys, s, distance) {
  cls <- ref_class(keys)
  vals <- sort(unique(s), na.last = TRUE)
  m <- length(vals)
  share <- function(x) vapply(vals, function(v) if (is.na(v)) mean(is.na(x)) else mean(x %in% v), 0)
  q <- share(s)
  t <- numeric(length(s))
  for (i in seq_along(s)) {
    p <- share(s[cls == cls[i]])
    t[i] <- if (distance == "equal") 0.5 * sum(abs(p - q)) else if (m > 1) sum(abs(cumsum(p - q))) / (m - 1) else 0
  }
  t
}

# Zayatz's estimate class by class: P(one of a class's s members is sampled) written out
# with binomial coefficients, the sample's classes taken for the population's.
ref_zayatz <- function(sizes, population, n) {
  N <- floor(population)
  p1 <- function(s) exp(lchoose(s, 1) + lchoose(N - s, n - 1) - lchoose(N, n))
  u <- length(sizes)
  c1 <- sum(sizes == 1)
  denom <- 0
  for (s in sizes) denom <- denom + p1(s) / u
  c1 * (c1 / u * p1(1) / denom) / (n / population)
}

# Pitman's log-likelihood in theta and alpha, term by term, maximised by optim().
ref_pitman <- function(sizes) {
  n <- sum(sizes)
  u <- length(sizes)
  ll <- function(p) {
    t <- p[1]
    a <- p[2]
    if (a <= 0 || a >= 1 || t <= -a) return(1e300)
    v <- sum(log(t + seq_len(u - 1) * a)) - sum(log(t + seq_len(n - 1)))
    for (s in sizes[sizes > 1]) v <- v + sum(log(seq_len(s - 1) - a))
    -v
  }
  o <- stats::optim(c(10, 0.5), ll, control = list(reltol = 1e-15, maxit = 20000))
  o <- stats::optim(o$par, ll, method = "BFGS", control = list(reltol = 1e-15, maxit = 1000))
  o$par
}

# SNB (Chen and Keller-McNulty): K by Haas et al.'s third Shlosser estimator written class
# by class; the expected numbers of sample classes of size 1 and 2 summed over the
# population class sizes F = 1 + NB(a, b) term by term (binomial sampling of each class);
# a and b fitted by Nelder-Mead on the squared log ratios. Returns c(uniques, a, b, K).
ref_snb <- function(sizes, f) {
  c1 <- sum(sizes == 1)
  c2 <- sum(sizes == 2)
  num1 <- den1 <- num2 <- den2 <- 0
  for (s in sizes) {
    num1 <- num1 + s * f^2 * (1 - f^2)^(s - 1)
    den1 <- den1 + (1 - f)^s * ((1 + f)^s - 1)
    num2 <- num2 + (1 - f)^s
    den2 <- den2 + s * f * (1 - f)^(s - 1)
  }
  K <- length(sizes) + c1 * num1 / den1 * (num2 / den2)^2
  expected <- function(a, b) {
    g <- 0:stats::qnbinom(1 - 1e-16, a, b)
    Fs <- 1 + g
    p <- stats::dnbinom(g, a, b)
    K * c(sum(p * stats::dbinom(1, Fs, f)), sum(p * stats::dbinom(2, Fs, f)))
  }
  loss <- function(q) {
    a <- exp(q[1])
    b <- stats::plogis(q[2])
    sum((log(expected(a, b)) - log(c(c1, c2)))^2)
  }
  best <- NULL
  for (st in list(c(0, 0), c(-2, -2), c(1, 2), c(-3, -4))) {
    o <- stats::optim(st, loss, control = list(reltol = 1e-16, maxit = 5000))
    if (is.null(best) || o$value < best$value) best <- o
  }
  a <- exp(best$par[1])
  b <- stats::plogis(best$par[2])
  c(K * b^a, a, b, K)
}
