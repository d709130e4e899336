# Benchmark of cluster stirring at n = 1e6 against plain R implementations in the same run.
# Run from the package root with detanon installed: Rscript bench/stir.R
library(detanon)
set.seed(1)
n <- 1e6
d <- data.frame(g = factor(sample(sprintf("g%03d", 1:500), n, TRUE)),
                age = sample(18:90, n, TRUE), x = round(rnorm(n, 50, 10), 2), y = rexp(n))
cl <- as.integer(d$g)
time <- function(expr) system.time(expr)[["elapsed"]]

# shuffle inside clusters: stir() against split() + sample() per group
plain_shuffle <- function(d, vars, cl) {
  idx <- split(seq_len(nrow(d)), cl)
  for (v in vars) for (g in idx) d[[v]][g] <- d[[v]][g][sample.int(length(g))]
  d
}
t_c <- time(s <- stir(d, vars = c("age", "x", "y"), strata = "g", seed = 1))
t_r <- time(p <- plain_shuffle(d, c("age", "x", "y"), cl))
stopifnot(all.equal(sort(s$x[cl == 7]), sort(p$x[cl == 7])))
cat(sprintf("shuffle, 3 vars, 500 clusters: stir() %.2f s, plain R %.2f s (x%.1f)\n", t_c, t_r, t_r / t_c))

# flatten to the centroid (lower median): stir() against tapply() of sorted members
plain_flatten <- function(d, vars, cl) {
  for (v in vars) {
    med <- tapply(d[[v]], cl, function(z) sort(z)[(length(z) + 1L) %/% 2L])
    d[[v]] <- unname(med[cl])
  }
  d
}
t_c <- time(f <- stir(d, vars = c("age", "x", "y"), strata = "g", method = "flatten"))
t_r <- time(q <- plain_flatten(d, c("age", "x", "y"), cl))
stopifnot(isTRUE(all.equal(f$x, as.numeric(q$x))))
cat(sprintf("flatten, 3 vars, 500 clusters: stir() %.2f s, plain R %.2f s (x%.1f)\n", t_c, t_r, t_r / t_c))

# clusters within radii (equation 2)
t_c <- time(k <- stir_clusters(d, strata = "g", quasi = c("x", "age"), radius = c(x = 2, age = 5)))
cat(sprintf("stir_clusters(), radii x 2, age 5 within 500 strata: %.2f s, %d clusters\n", t_c, k$n_classes))

# the same greedy rule in plain R (sorted order, ranges kept per open cluster), on 10 strata
plain_clusters <- function(x, y, g, ex, ey) {
  ord <- order(g, x, y)
  cl <- integer(length(x))
  open <- 0L
  for (p in seq_along(ord)) {
    r <- ord[p]
    if (cl[r]) next
    open <- open + 1L
    cl[r] <- open
    lx <- hx <- x[r]; ly <- hy <- y[r]
    q <- p + 1L
    while (q <= length(ord)) {
      s <- ord[q]
      if (g[s] != g[r] || x[s] - x[r] > ex) break
      if (!cl[s] && max(hx, x[s]) - min(lx, x[s]) <= ex && max(hy, y[s]) - min(ly, y[s]) <= ey) {
        cl[s] <- open
        lx <- min(lx, x[s]); hx <- max(hx, x[s]); ly <- min(ly, y[s]); hy <- max(hy, y[s])
      }
      q <- q + 1L
    }
  }
  cl
}
sub <- d[as.integer(d$g) <= 10L, ]
t_r <- time(pc <- plain_clusters(sub$x, sub$age, as.integer(sub$g), 2, 5))
t_c <- time(kc <- stir_clusters(sub, strata = "g", quasi = c("x", "age"), radius = c(x = 2, age = 5)))
stopifnot(identical(pc, kc$class))
cat(sprintf("stir_clusters(), %d records in 10 strata: C %.2f s, plain R %.2f s (x%.0f)\n",
            nrow(sub), t_c, t_r, t_r / t_c))

# blend: 1000 outliers into 500 clusters
d2 <- rbind(d, data.frame(g = factor(sprintf("o%04d", 1:1000)), age = sample(18:90, 1000, TRUE),
                          x = rnorm(1000, 50, 30), y = rexp(1000)))
t_c <- time(b <- suppressMessages(blend_outliers(d2, vars = c("age", "x", "y"), strata = "g",
                                                 k = 3, seed = 1)))
cat(sprintf("blend_outliers(), 1000 outliers into 500 clusters of 2000: %.2f s (%d values changed)\n",
            t_c, attr(b, "detanon")$counts$n_changed))
