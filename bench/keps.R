# Benchmark: Mondrian equivalence classes plus Laplace noise at n = 1e6.
# Run once:  R_LIBS=<lib with detanon> Rscript bench/keps.R
# Prints timings and ratios against (a) the deterministic anonymise() on the same data
# and (b) a plain-R Mondrian (same rule as the C kernel) at n = 1e5.
library(detanon)

timeit <- function(expr) {
  gc(FALSE)
  t <- system.time(expr)[["elapsed"]]
  t
}

sim <- function(n, seed = 1) {
  set.seed(seed)
  data.frame(age = sample(18:90, n, TRUE),
             income = round(rlnorm(n, 10, 0.5)),
             height = rnorm(n, 170, 10),
             weight = rnorm(n, 75, 12),
             sex = factor(sample(c("f", "m"), n, TRUE)),
             region = sample(c("north", "south", "west", "east"), n, TRUE))
}

r_mondrian <- function(x, k) {
  rng <- apply(x, 2L, function(v) diff(range(v)))
  inv <- ifelse(rng > 0, 1 / rng, 0)
  cls <- integer(nrow(x))
  id <- 0L
  stack <- list(seq_len(nrow(x)))
  while (length(stack)) {
    rows <- stack[[length(stack)]]
    stack[[length(stack)]] <- NULL
    m <- length(rows)
    cut <- FALSE
    if (m >= 2 * k) {
      w <- apply(x[rows, , drop = FALSE], 2L, function(v) diff(range(v))) * inv
      for (j in order(-w, seq_along(w))) {
        if (!(w[j] > 0)) break
        v <- x[rows, j]
        med <- sort(v, partial = floor((m - 1) / 2) + 1)[floor((m - 1) / 2) + 1]
        # cut at the lower median (<= med) or, when many share it, below it (< med):
        # the more balanced allowed cut (?equivalence_classes)
        na <- sum(v <= med)
        nb <- if (na > m %/% 2) sum(v < med) else na
        ok <- c(na >= k && m - na >= k, nb >= k && m - nb >= k)
        if (!any(ok)) next
        use_b <- !ok[1] || (ok[2] && abs(2 * nb - m) < abs(2 * na - m))
        side <- if (use_b) v < med else v <= med
        left <- rows[side]
        right <- rows[!side]
        {
          stack[[length(stack) + 1L]] <- right
          stack[[length(stack) + 1L]] <- left
          cut <- TRUE
          break
        }
      }
    }
    if (!cut) { id <- id + 1L; cls[rows] <- id }
  }
  cls
}

n <- 1e6
k <- 5
d <- sim(n)
cat(sprintf("n = %g, k = %d, quasi = age, income (Mondrian) within sex x region; vars = height, weight\n", n, k))

t_ec <- timeit(ec <- equivalence_classes(d, k = k, quasi = c("age", "income"), strata = c("sex", "region")))
cat(sprintf("equivalence_classes():                %6.2f s  (%d classes, sizes %d-%d)\n",
            t_ec, nrow(ec$classes), min(ec$classes$n), max(ec$classes$n)))
set.seed(1)
t_keps <- timeit(res <- anonymise_keps_with_key(d, epsilon = 4, k = k, vars = c("height", "weight"),
                                       quasi = c("age", "income"), strata = c("sex", "region")))
cat(sprintf("anonymise_keps() (classes + noise + linking risk + shuffle): %6.2f s\n", t_keps))
set.seed(1)
t_conf <- timeit(res_c <- anonymise_keps_with_key(d, epsilon = 4, k = k, vars = c("height", "weight"),
                                         quasi = c("age", "income"), strata = c("sex", "region"),
                                         confidence = 0.99))
cat(sprintf("anonymise_keps(confidence = 0.99):    %6.2f s  (suppressed %d records + %d classes)\n",
            t_conf, res_c$info$n_suppressed_records, res_c$info$n_suppressed_classes))
set.seed(1)
t_noise <- timeit(.Call(detanon:::C_ffi_keps_noise, as.matrix(d[c("height", "weight")]),
                        ec$class, nrow(ec$classes), c(2, 2)))
cat(sprintf("noise kernel alone (2 x 1e6 draws):   %6.2f s\n", t_noise))
t_knn <- timeit(m <- anonymise(d, k = k, vars = c("height", "weight"), strata = c("sex", "region")))
cat(sprintf("anonymise() (deterministic kNN, same data): %6.2f s\n", t_knn))
cat(sprintf("ratio anonymise_keps / anonymise:     %6.2f\n", t_keps / t_knn))
cat(sprintf("linking risk (V-B): keps %.4f; expected error (8): height %.4f, weight %.4f\n",
            res$info$linking_risk, res$info$expected_error[1], res$info$expected_error[2]))

n2 <- 1e5
d2 <- sim(n2, seed = 2)
x2 <- as.matrix(d2[c("age", "income")])
t_r <- timeit(cls_r <- r_mondrian(x2, k))
t_c <- timeit(ec2 <- equivalence_classes(d2, k = k, quasi = c("age", "income"), strata = character()))
cat(sprintf("n = %g Mondrian: plain R %.2f s, C %.3f s, ratio %.0fx; same partition: %s\n",
            n2, t_r, t_c, t_r / t_c, identical(cls_r, ec2$class)))
