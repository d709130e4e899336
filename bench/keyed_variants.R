# What a faster, non-identical keyed k-means would cost (issue 39 item 1): variants of the
# grid step of anonymise_keyed() (fewer k-means++ starts on the grid than on the final
# partition; a coarser grid of counts), each run in place of the package's keyed_groups()
# for this script only. For every variant: the CPU time at n = 1e5 (bench/keyed.R's data,
# size = 10, one thread) against anonymise() in the same run, and on Titanic (k = 2,
# size = 14) and sdcMicro's testdata (k = 3, size = 10): the loss (utility_delta(), both
# variables' largest) and the worst one-record rate of the battery (tails left out), all
# with exact group means (noise = FALSE, format = "none").
# Usage (package root; detanon and sdcMicro installed): Rscript bench/keyed_variants.R [n]
suppressMessages(library(detanon))
ns <- asNamespace("detanon")
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args)) as.numeric(args[1L]) else 1e5

# keyed_groups() with `starts` k-means++ starts per grid count (the final partition keeps
# KEYED_RESTARTS) and the grid of counts from `grid_of(share, cmax)`
variant <- function(starts, grid_of) {
  function(z, id, k, size, secret, nthreads = 1L) {
    n <- nrow(z)
    blocks <- unlist(lapply(sort(unique(id)), function(s) {
      r <- which(id == s)
      r <- r[do.call(order, c(unname(as.data.frame(z[r, , drop = FALSE])), method = "radix"))]
      lapply(ns$keyed_blocks(z[r, , drop = FALSE], k, secret, nthreads), function(b) r[b])
    }), recursive = FALSE)
    rows <- unlist(blocks, use.names = FALSE)
    zb <- z[rows, , drop = FALSE]
    nb <- lengths(blocks)
    off <- as.integer(c(0L, cumsum(nb)))
    distinct <- vapply(blocks, function(r) sum(!duplicated(z[r, , drop = FALSE])), 1L)
    grids <- lapply(seq_along(blocks), function(i) grid_of(nb[i] / size, max(1L, min(nb[i] %/% k, distinct[i]))))
    call_grid <- function(g, restarts) {
      .Call(ns$C_ffi_keyed_grid, zb, off, as.integer(unlist(g)), as.integer(c(0L, cumsum(lengths(g)))),
            as.integer(k), restarts, ns$KEYED_MAXIT, secret, nthreads)
    }
    fit <- call_grid(grids, as.integer(starts))
    sses <- split(fit$sse, rep(seq_along(grids), lengths(grids)))
    gains <- lapply(seq_along(grids), function(i) {
      ok <- sses[[i]] >= 0
      grid <- grids[[i]][ok]
      sse <- cummin(sses[[i]][ok])
      floor_ <- 1e-12 * sse[1L] + 1e-300
      curve <- if (length(grid) == 1L) sse else
        exp(stats::approx(log(grid), log(sse + floor_), xout = log(seq_len(max(grid))))$y) - floor_
      if (max(grid) > 1L) pmax(cummin(-diff(curve)), 0) else numeric()
    })
    budget <- max(length(blocks), round(n / size))
    flat <- unlist(gains, use.names = FALSE)
    who <- rep(seq_along(blocks), lengths(gains))
    step <- unlist(lapply(gains, seq_along), use.names = FALSE)
    take <- order(-flat, who, step)[seq_len(min(length(flat), budget - length(blocks)))]
    take <- take[flat[take] > 0]
    cur <- as.integer(1L + tabulate(who[take], length(blocks)))
    # the final partition's starts: the grid's when they are all there, else fresh ones
    if (starts != ns$KEYED_RESTARTS) fit <- call_grid(as.list(cur), ns$KEYED_RESTARTS)
    gmax <- if (starts != ns$KEYED_RESTARTS) cur else vapply(grids, function(g) g[length(g)], 1L)
    gi <- .Call(ns$C_ffi_keyed_partition, zb, off, cur, as.integer(gmax), fit$seeds, as.integer(k),
                ns$KEYED_RESTARTS, ns$KEYED_MAXIT, nthreads)
    per <- vapply(split(gi, rep(seq_along(blocks), nb)), max, 1L)
    group <- integer(n)
    group[rows] <- gi + rep(c(0L, cumsum(per)[-length(per)]), nb)
    list(group = group, per_stratum = unname(per))
  }
}
# every count up to 3 shares when that is at most 12, else 1, cmax and share x 2^(-1, 0, 1)
# (the package's: up to 48, else share x 2^(-1.5 .. 1.5 by 0.5))
coarse_grid <- function(share, cmax) {
  full <- min(cmax, ceiling(3 * share))
  if (full <= 12L) return(seq_len(max(1L, full)))
  g <- round(share * 2^c(-1, 0, 1))
  sort(unique(pmin(pmax(c(1L, as.integer(g), cmax), 1L), cmax)))
}
variants <- list(
  package = NULL,
  starts3 = variant(3L, ns$keyed_grid),
  starts1 = variant(1L, ns$keyed_grid),
  coarse = variant(10L, coarse_grid),
  coarse_starts1 = variant(1L, coarse_grid),
  one_start = "one" # the package's steps with one start everywhere (split, grid and partition)
)
original <- ns$keyed_groups
use <- function(v) {
  assignInNamespace("KEYED_RESTARTS", if (identical(v, "one")) 1L else 10L, "detanon")
  assignInNamespace("keyed_groups", if (is.function(v)) v else original, "detanon")
}

key <- "bench-key-not-a-secret-0001"
set.seed(1)
big <- data.frame(g = factor(sample(c("a", "b", "c", "d"), n, replace = TRUE)),
                  x1 = rnorm(n), x2 = rexp(n), x3 = round(runif(n, 20, 80)))
titanic <- titanic_paper()[-1]
e <- new.env()
utils::data("testdata", package = "sdcMicro", envir = e)
testdata <- e$testdata[c("urbrur", "sex", "expend", "income", "savings")]
testdata$urbrur <- factor(testdata$urbrur)
testdata$sex <- factor(testdata$sex)
sets <- list(
  titanic = list(d = titanic, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 2, size = 14),
  testdata = list(d = testdata, vars = c("expend", "income", "savings"), strata = c("urbrur", "sex"), k = 3,
                  size = 10)
)
cpu <- function(expr) system.time(expr)[["user.self"]]
t_plain <- cpu(anonymise(big, vars = c("x1", "x2", "x3"), strata = "g", k = 5, nthreads = 1L,
                         check_identifiers = FALSE))
cat(sprintf("n = %g; anonymise() %.2f s CPU; load %s\n", n, t_plain,
            sub(".*load average: ", "", system("uptime", intern = TRUE))))
for (nm in names(variants)) {
  use(variants[[nm]])
  t <- cpu(anonymise_keyed(big, vars = c("x1", "x2", "x3"), strata = "g", k = 3, key = key, size = 10,
                           nthreads = 1L, check_identifiers = FALSE))
  out <- sprintf("%-15s 1e5: %6.2f s CPU (%5.1fx anonymise)", nm, t, t / t_plain)
  for (s in names(sets)) {
    x <- sets[[s]]
    m <- anonymise_keyed(x$d, vars = x$vars, strata = x$strata, k = x$k, key = key, size = x$size,
                         noise = FALSE, format = "none", check_identifiers = FALSE)
    b <- as.data.frame(risk_battery(x$d, m, intruder = intruder(vars = x$vars, strata = x$strata), seed = 1))
    worst <- max(b$rate[!b$name %in% c("tail_outliers", "tail_extremes")])
    out <- paste0(out, sprintf(" | %s: groups %d, delta %s, worst %.4f", s, release_info(m)$counts$n_groups,
                               paste(sprintf("%.4f", utility_delta(x$d, m)$delta), collapse = "/"), worst))
  }
  cat(out, "\n")
}
use(NULL)
