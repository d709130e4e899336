# Slow, obviously correct R transcriptions of the risk battery's attacks and summaries
# (R/battery.R, R/attack_*.R): loops over records and candidates, nothing shared with the
# package but the definitions.

# Squared distance summed in column order (as the C kernels sum it).
ref_d2 <- function(a, b) {
  s <- 0
  for (j in seq_along(a)) s <- s + (a[j] - b[j])^2
  s
}

# The intruder's view: z-scores (masked variables on the original's mean and SD, constant
# columns dropped; numeric keys on the original's mean and SD, SD 1 when constant), cells
# (strata and categorical keys by value, NA a value of its own).
ref_view <- function(original, masked, vars, strata = character(), keys = character(), known = NULL) {
  n <- nrow(original)
  zs <- function(x, ref, drop) {
    x <- as.matrix(x); ref <- as.matrix(ref)
    out <- NULL
    for (j in seq_len(ncol(ref))) {
      mu <- mean(ref[, j]); s <- stats::sd(ref[, j])
      if (!is.finite(s) || s == 0) { if (drop) next; s <- 1 }
      out <- cbind(out, (x[, j] - mu) / s)
    }
    out
  }
  num_keys <- keys[vapply(keys, function(k) is.numeric(original[[k]]) && is.numeric(masked[[k]]), TRUE)]
  cat_keys <- setdiff(keys, num_keys)
  zo <- zs(original[vars], original[vars], TRUE)
  zm <- zs(masked[vars], original[vars], TRUE)
  if (is.null(zo)) { zo <- matrix(0, n, 1); zm <- matrix(0, n, 1) }
  if (length(num_keys)) {
    zo <- cbind(zo, zs(original[num_keys], original[num_keys], FALSE))
    zm <- cbind(zm, zs(masked[num_keys], original[num_keys], FALSE))
  }
  cell <- function(d) {
    cols <- c(strata, cat_keys)
    if (!length(cols)) return(rep("all", n))
    do.call(paste, c(lapply(cols, function(v) ifelse(is.na(d[[v]]), "<NA>", paste0("=", as.character(d[[v]])))), sep = "|"))
  }
  stratum <- if (length(strata)) do.call(paste, c(lapply(strata, function(v) as.character(original[[v]])), sep = "|")) else rep("all", n)
  list(n = n, zo = zo, zm = zm, cell_o = cell(original), cell_m = cell(masked),
       stratum = stratum, known = if (is.null(known)) rep(TRUE, n) else known)
}

# Share of a top-m link with ties in random order: lt strictly nearer, le at most as near.
ref_share <- function(lt, le, m) if (lt >= m) 0 else min(1, (m - lt) / (le - lt))

ref_nndr <- function(d2) {
  d <- sort(sqrt(d2))
  if (length(d) < 2L) return(if (length(d)) 1 else 0)
  if (d[2] > 0) 1 - d[1] / d[2] else 0
}

# Linkage in either direction: per record success, success within m, NNDR confidence.
ref_linkage_attack <- function(v, direction = "released", m = 3) {
  n <- v$n
  succ <- succ_m <- conf <- rep(NA_real_, n)
  for (i in which(v$known)) {
    if (direction == "released") {
      cand <- which(v$known & v$cell_o == v$cell_m[i])
      d2 <- vapply(cand, function(j) ref_d2(v$zm[i, ], v$zo[j, ]), 0)
    } else {
      cand <- which(v$cell_m == v$cell_o[i])
      d2 <- vapply(cand, function(j) ref_d2(v$zo[i, ], v$zm[j, ]), 0)
    }
    conf[i] <- ref_nndr(d2)
    if (!(i %in% cand)) { succ[i] <- succ_m[i] <- 0; next }
    own <- d2[cand == i]
    lt <- sum(d2 < own); le <- sum(d2 <= own)
    succ[i] <- ref_share(lt, le, 1)
    succ_m[i] <- ref_share(lt, le, m)
  }
  list(success = succ, success_m = succ_m, confidence = conf)
}

# Precision among the `share` most confident: every record weighted by the share of it
# that falls in the top (records tied at the cut share the remaining room equally).
ref_precision <- function(success, confidence, share = 0.1) {
  n <- length(success)
  take <- max(1, share * n)
  w <- numeric(n)
  room <- take
  for (cv in sort(unique(confidence), decreasing = TRUE)) {
    at <- which(confidence == cv)
    w[at] <- min(1, room / length(at))
    room <- room - min(room, length(at))
    if (room <= 0) break
  }
  sum(w * success) / take
}

ref_advantage <- function(r, c) if (c >= 1) 0 else max(0, (r - c) / (1 - c))

# Type-1 quantile bins of the release: the number of distinct cut points below a value.
ref_bin <- function(x, ref, b) {
  if (b < 2) return(rep(0L, length(x)))
  r <- sort(ref)
  n <- length(r)
  cuts <- unique(vapply(seq_len(b - 1), function(j) r[ceiling(j * n / b)], 0))
  vapply(x, function(v) sum(cuts < v), 0L)
}

# Singling out: per record, the coarsest resolution at which its released combination is
# unique in the release (else the finest); right when exactly one original matches and
# it is the record's own.
ref_singling_out <- function(v, xo, xm, bins) {
  n <- v$n
  bins <- sort(bins)
  succ <- conf <- numeric(n)
  keys <- lapply(bins, function(b) {
    bo <- bm <- matrix(0L, n, ncol(xm))
    for (j in seq_len(ncol(xm))) { bo[, j] <- ref_bin(xo[, j], xm[, j], b); bm[, j] <- ref_bin(xm[, j], xm[, j], b) }
    list(o = paste(v$cell_o, apply(bo, 1, paste, collapse = ",")), m = paste(v$cell_m, apply(bm, 1, paste, collapse = ",")))
  })
  for (i in seq_len(n)) {
    for (r in seq_along(bins)) {
      k <- keys[[r]]
      n_rel <- sum(k$m == k$m[i])
      if (n_rel == 1 || r == length(bins)) {
        hits <- which(k$o == k$m[i])
        succ[i] <- as.numeric(length(hits) == 1 && hits == i)
        conf[i] <- 1 / n_rel
        break
      }
    }
  }
  list(success = succ, confidence = conf)
}

# Inference: the m nearest released records of the person's cell (ties at the m-th
# included; the person's own released record left out for the control).
ref_inference <- function(v, yo, ym, m = 3, tol = 0, leave_out = FALSE) {
  n <- v$n
  cat <- !is.numeric(yo)
  if (cat) { yo <- as.character(yo); ym <- as.character(ym) }
  succ <- conf <- rep(NA_real_, n)
  base <- rep(NA_real_, n)
  for (i in which(v$known & !is.na(yo))) {
    base[i] <- if (cat) sum(!is.na(ym) & ym == yo[i]) / n else sum(!is.na(ym) & ym >= yo[i] - tol & ym <= yo[i] + tol) / n
    cand <- which(v$cell_m == v$cell_o[i])
    if (leave_out) cand <- setdiff(cand, i)
    if (!length(cand)) { succ[i] <- conf[i] <- 0; next }
    d2 <- vapply(cand, function(j) ref_d2(v$zo[i, ], v$zm[j, ]), 0)
    set <- if (length(cand) <= m) cand else cand[d2 <= sort(d2)[m]]
    y <- ym[set]
    if (cat) {
      succ[i] <- mean(!is.na(y) & y == yo[i])
      conf[i] <- if (any(!is.na(y))) max(table(y)) / length(y) else 0
    } else {
      succ[i] <- mean(!is.na(y) & abs(y - yo[i]) <= tol)
      r <- if (any(!is.na(y))) diff(range(y, na.rm = TRUE)) else NA
      conf[i] <- if (is.na(r)) 0 else if (tol > 0) 1 / (1 + r / tol) else as.numeric(r == 0)
    }
  }
  list(success = succ, confidence = conf, baseline = mean(base, na.rm = TRUE))
}

# Adversarial data for the attacks: ties, duplicated records, strata of 1..3, a constant
# column, a categorical key with missing values that the release changes for some records.
battery_data <- function(n = 200, seed = 1) {
  set.seed(seed)
  d <- data.frame(a = round(stats::rnorm(n), 1), b = stats::rexp(n), c = 5,
                  g = sample(c("x", "y", "z"), n, TRUE), s = sample(c("u", "v", "w"), n, TRUE),
                  y = round(stats::rnorm(n), 1), stringsAsFactors = FALSE)
  d$g[1:6] <- c("p", "q", "q", "r", "r", "r") # strata of 1, 2 and 3
  d[11:20, c("a", "b", "s")] <- d[21:30, c("a", "b", "s")] # duplicated records
  d$g[11:20] <- d$g[21:30]
  d$s[intersect(c(50:54, 21), seq_len(n))] <- NA # a missing categorical key is a value of its own
  m <- d
  m$a <- m$a + round(stats::rnorm(n, sd = 0.3), 1)
  m$b <- m$b * exp(stats::rnorm(n, sd = 0.2))
  m[11:20, c("a", "b")] <- m[21:30, c("a", "b")]
  m$a[40] <- d$a[40]; m$b[40] <- d$b[40] # an unmasked record
  m$s[sample(n, n %/% 10)] <- "w" # a key the release changes
  m$y <- m$y + round(stats::rnorm(n, sd = 0.5), 1)
  list(o = d, m = m)
}

# The battery's step for one attack as it ran before the attack cores shared work between a
# view and its control (view_shared(), assignment_solve()): the core solved from scratch on
# the view and again on its control. `v` from detanon:::attack_view().
ref_run_unshared <- function(spec, v, m = 3, sensitive = NULL, seed = 1) {
  v$s$shared <- NULL
  if (!is.null(v$ctrl)) v$ctrl$shared <- NULL
  detanon:::run_attack(spec, v$s, v$ctrl, m = m, sensitive = sensitive, nthreads = 1L, seed = seed)
}

# Data for the comparisons of the shared and the unshared battery: two numeric columns
# (random, rounded to few values, or half of the rows duplicates of others) and a stratum
# column `g` with a stratum of one record (`s`) and a small one.
shared_case <- function(n, kind, seed) {
  set.seed(seed)
  x <- data.frame(a = stats::rnorm(n), b = stats::rnorm(n),
                  g = sample(c("p", "q", "r"), n, TRUE, prob = c(0.6, 0.35, 0.05)))
  if (kind == "ties") x[c("a", "b")] <- round(x[c("a", "b")])
  if (kind == "dup") {
    h <- sample(n, n %/% 2)
    x[h, c("a", "b")] <- x[sample(n, length(h)), c("a", "b")]
  }
  x$g[1L] <- "s"
  x
}

# The value of `expr` and the number of calls of the package's internal function `name`
# while it ran (a trace, removed afterwards): a count of work, not a time.
count_calls <- function(name, expr) {
  ns <- asNamespace("detanon")
  counter <- new.env()
  counter$calls <- 0L
  suppressMessages(trace(name, where = ns, print = FALSE,
                         tracer = bquote(assign("calls", get("calls", envir = .(counter)) + 1L,
                                                envir = .(counter)))))
  on.exit(suppressMessages(untrace(name, where = ns)), add = TRUE)
  value <- expr
  list(value = value, calls = counter$calls)
}
