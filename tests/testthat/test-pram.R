# anonymise_pram(): transition matrices, invariance (exact and empirical), strata,
# reproducibility.

pram_run <- function(...) {
  tr <- NULL
  out <- withCallingHandlers(anonymise_pram(...), detanon_message_pram = function(m) {
    tr <<- m$transitions
    invokeRestart("muffleMessage")
  })
  list(out = out, transitions = tr)
}

expect_transition_matrix <- function(R, pd) {
  expect_true(all(R >= 0))
  expect_equal(unname(rowSums(R)), rep(1, nrow(R)), tolerance = 1e-14)
  expect_true(all(diag(R) >= pd - 1e-15))
}

test_that("transition matrices are stochastic with diagonal >= pd, invariant when asked", {
  set.seed(1)
  for (it in 1:200) {
    L <- sample(1:7, 1)
    cnt <- rpois(L, 5) * sample(0:1, L, TRUE, prob = c(0.2, 0.8))
    pd <- runif(1)
    alpha <- sample(c(0, 0.3, 1, runif(1)), 1)
    R <- detanon:::pram_matrix(cnt, pd, alpha, invariant = TRUE)
    expect_transition_matrix(R, pd)
    # exact invariance: the expected released counts are the original ones
    expect_equal(as.vector(cnt %*% R), cnt, tolerance = 1e-12)
    # categories absent from the data are never drawn into
    if (any(cnt > 0)) expect_true(all(R[cnt > 0, cnt == 0] == 0))
    P <- detanon:::pram_matrix(cnt, pd, alpha, invariant = FALSE)
    expect_transition_matrix(P, pd)
  }
  # the formula for one case by hand: p = (1/2, 1/4, 1/4), theta = (0.8, 0.6, 0.9)
  R <- detanon:::pram_transition(c(0.5, 0.25, 0.25), c(0.8, 0.6, 0.9), TRUE)
  leave <- c(0.1, 0.1, 0.025)
  q <- leave / 0.225
  expect_equal(R[1, ], c(0.8, 0, 0) + 0.2 * q)
  expect_equal(R[2, ], c(0, 0.6, 0) + 0.4 * q)
  expect_equal(as.vector(c(0.5, 0.25, 0.25) %*% R), c(0.5, 0.25, 0.25))
})

test_that("the transitions used are invariant in every stratum, and pd = 1 changes nothing", {
  set.seed(2)
  d <- data.frame(a = sample(c("x", "y", "z"), 300, TRUE, prob = c(0.6, 0.3, 0.1)),
                  b = factor(sample(1:4, 300, TRUE), levels = 1:5),
                  s = sample(c("p", "q"), 300, TRUE), stringsAsFactors = FALSE)
  d$a[d$s == "q" & d$a == "z"] <- "y"  # `z` absent from stratum q
  d$b[c(3, 9)] <- NA
  r <- pram_run(d, vars = c("a", "b"), strata = "s", pd = 0.6, alpha = 0.7, seed = 4)
  out <- r$out
  for (v in c("a", "b")) {
    for (s in c("p", "q")) {
      R <- r$transitions[[v]][[s]]
      expect_transition_matrix(R, 0.6)
      x <- d[[v]][d$s == s]
      cnt <- table(factor(x, levels = rownames(R)))
      expect_equal(as.vector(cnt %*% R), as.vector(cnt), tolerance = 1e-12)
    }
  }
  expect_false("z" %in% out$a[out$s == "q"])
  expect_identical(out$s, d$s)
  expect_identical(which(is.na(out$b)), c(3L, 9L))
  expect_identical(levels(out$b), levels(droplevels(d$b)))
  expect_type(out$a, "character")
  expect_identical(release_info(out)$counts$n_changed,
                   sum(out$a != d$a) + sum(as.character(out$b) != as.character(d$b), na.rm = TRUE))
  same <- pram_run(d, vars = c("a", "b"), strata = "s", pd = 1, seed = 4)$out
  attr(same, "detanon") <- NULL
  d2 <- d
  d2$b <- droplevels(d2$b)
  expect_identical(same, d2)
})

test_that("released marginals on large n: the original ones (invariant), else the expected ones", {
  set.seed(3)
  n <- 1e5
  p <- c(0.5, 0.3, 0.15, 0.05)
  d <- data.frame(a = sample(letters[1:4], n, TRUE, prob = p), s = sample(1:2, n, TRUE))
  r <- pram_run(d, vars = "a", strata = "s", pd = 0.5, alpha = 1, seed = 8)
  for (s in 1:2) {
    orig <- table(factor(d$a[d$s == s], levels = letters[1:4]))
    rel <- table(factor(r$out$a[d$s == s], levels = letters[1:4]))
    R <- r$transitions$a[[as.character(s)]]
    # variance of a released count: sum over records of q (1 - q) for its row q
    sdv <- sqrt(colSums(as.vector(orig) * R * (1 - R)))
    expect_true(all(abs(rel - orig) < 5 * sdv))
    # values changed: expected sum over records of 1 - R[i, i]
    n_changed <- sum(d$a[d$s == s] != r$out$a[d$s == s])
    e_changed <- sum(as.vector(orig) * (1 - diag(R)))
    expect_gt(e_changed, 1000)
    expect_lt(abs(n_changed - e_changed), 5 * sqrt(sum(as.vector(orig) * diag(R) * (1 - diag(R)))))
  }
  # the non-invariant matrix moves the marginal towards uniform, as expected by cnt %*% P
  r <- pram_run(d, vars = "a", pd = 0.5, alpha = 1, invariant = FALSE, seed = 8)
  orig <- table(factor(d$a, levels = letters[1:4]))
  rel <- table(factor(r$out$a, levels = letters[1:4]))
  P <- r$transitions$a[[1]]
  expect_true(all(abs(rel - as.vector(orig %*% P)) < 5 * sqrt(colSums(as.vector(orig) * P * (1 - P)))))
  expect_gt(rel[["d"]], orig[["d"]] + 1000)
})

test_that("the same seed gives the same release, and the caller's stream is restored", {
  d <- data.frame(a = rep(c("u", "v", "w"), 20), b = rep(1:4, 15))
  set.seed(10)
  before <- .Random.seed
  a1 <- suppressMessages(anonymise_pram(d, vars = c("a", "b"), seed = 5))
  expect_identical(.Random.seed, before)
  a2 <- suppressMessages(anonymise_pram(d, vars = c("a", "b"), seed = 5))
  expect_identical(a1, a2)
  a3 <- suppressMessages(anonymise_pram(d, vars = c("a", "b"), seed = 6))
  expect_false(identical(a1$a, a3$a))
  set.seed(1)
  b1 <- suppressMessages(anonymise_pram(d, vars = "a"))
  set.seed(1)
  b2 <- suppressMessages(anonymise_pram(d, vars = "a"))
  expect_identical(b1, b2)
})

test_that("the message is classed; odd columns are handled", {
  d <- data.frame(a = c(TRUE, FALSE, TRUE), b = c(NA, NA, NA), c = c(2, 2, 2))
  cnd <- tryCatch(anonymise_pram(d, vars = c("a", "b", "c"), seed = 1),
                  detanon_message_pram = identity)
  expect_s3_class(cnd, "detanon_message")
  expect_match(conditionMessage(cnd), "^anonymise_pram\\(\\): changed")
  out <- suppressMessages(anonymise_pram(d, vars = c("a", "b", "c"), seed = 1))
  expect_type(out$a, "logical")
  expect_true(all(is.na(out$b)))
  expect_identical(out$c, c(2, 2, 2))
  out <- suppressMessages(anonymise_pram(d[0, ], vars = "a", seed = 1))
  expect_identical(nrow(out), 0L)
})

test_that("bad input is refused with classed errors naming the argument", {
  d <- data.frame(a = c("u", "v"), s = c(1, 2))
  expect_error(anonymise_pram(d, vars = "a", pd = 2), class = "detanon_error_argument")
  expect_error(anonymise_pram(d, vars = "a", strata = "a"), class = "detanon_error_column")
  expect_snapshot(error = TRUE, {
    anonymise_pram(d)
    anonymise_pram(d, vars = "q")
    anonymise_pram(d, vars = "a", strata = "a")
    anonymise_pram(d, vars = "a", pd = c(0.5, 0.6))
    anonymise_pram(d, vars = "a", alpha = -1)
    anonymise_pram(d, vars = "a", invariant = NA)
    anonymise_pram(d, vars = "a", seed = 1.5)
  })
})
