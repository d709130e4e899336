# attack_fellegi_sunter(): comparison patterns, EM and claims against a brute-force
# transcription that loops over every pair.

ref_fellegi_sunter <- function(zo, zm, id, known, bands, cat_o = NULL, cat_m = NULL,
                               max_iter = 1000, tol = 1e-10) {
  pi_ <- pj <- integer()
  for (i in which(known)) for (j in which(id == id[i])) { pi_ <- c(pi_, i); pj <- c(pj, j) }
  nf <- ncol(zo) + length(cat_o)
  lev <- matrix(0L, length(pi_), nf)
  for (r in seq_along(pi_)) {
    for (f in seq_len(ncol(zo))) lev[r, f] <- sum(abs(zo[pi_[r], f] - zm[pj[r], f]) > bands)
    for (f in seq_along(cat_o)) lev[r, ncol(zo) + f] <- as.integer(cat_o[[f]][pi_[r]] != cat_m[[f]][pj[r]])
  }
  n_lev <- c(rep(length(bands) + 1L, ncol(zo)), rep(2L, length(cat_o)))
  freq <- function(wt) lapply(seq_len(nf), function(f) {
    p <- sapply(seq_len(n_lev[f]) - 1L, function(l) sum(wt[lev[, f] == l])) + 1e-9
    p / sum(p)
  })
  m <- lapply(n_lev, function(L) { p <- 2^-(seq_len(L) * 2); p / sum(p) })
  u <- freq(rep(1, length(pi_)))
  p <- sum(known) / length(pi_)
  prob <- function(pr) Reduce(`*`, lapply(seq_len(nf), function(f) pr[[f]][lev[, f] + 1]))
  ll_old <- -Inf
  for (it in seq_len(max_iter)) {
    a <- p * prob(m); b <- (1 - p) * prob(u)
    g <- a / (a + b)
    ll <- sum(log(a + b))
    m <- freq(g); u <- freq(1 - g)
    if (abs(ll - ll_old) <= tol * (1 + abs(ll))) break
    ll_old <- ll
  }
  w <- apply(lev, 1, function(l) sum(sapply(seq_len(nf), function(f) log(m[[f]][l[f] + 1] / u[[f]][l[f] + 1]))))
  success <- rep(NA_real_, nrow(zo))
  for (i in which(known)) {
    r <- which(pi_ == i)
    top <- max(w[r])
    at <- r[abs(w[r] - top) <= 1e-12 * (1 + abs(w[r]))]
    success[i] <- if (i %in% pj[at]) 1 / length(at) else 0
  }
  list(m = m, u = u, success = success)
}

test_that("patterns, EM and claims equal a brute-force transcription", {
  for (seed in 1:2) {
    x <- random_data(30, d = 2, n_strata = 2, seed = seed)
    x$k <- sample(c("a", "b"), nrow(x), replace = TRUE)
    m <- anonymise(x, k = 3, vars = c("x1", "x2"), strata = "g", format = "none")
    m$k[1:5] <- ifelse(m$k[1:5] == "a", "b", "a") # a key changed by the release
    for (keys in list(NULL, "k")) for (p in c(1, 0.5)) {
      it <- intruder(held = keys, p = p)
      bands <- c(0.05, 0.2, 0.6)
      a <- attack_fellegi_sunter(x, m, intruder = it, bands = bands, control = FALSE, seed = seed)
      s <- detanon:::intruder_view(x, m, it, seed = seed)
      co <- if (length(keys)) list(x$k); cm <- if (length(keys)) list(m$k)
      want <- ref_fellegi_sunter(s$zo, s$zm, s$id, s$known, bands, co, cm)
      expect_true(a$details$full)
      expect_equal(a$details$m, want$m, tolerance = 1e-6)
      expect_equal(a$details$u, want$u, tolerance = 1e-6)
      expect_equal(a$success, want$success)
    }
  }
})

test_that("candidate pairs above max_pairs; Titanic with Survived as a key", {
  d <- titanic_paper()[-1]
  masked <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  full <- attack_fellegi_sunter(d, masked, intruder = intruder(held = "Survived"), seed = 1)
  expect_true(full$details$full)
  expect_gt(full$rate, full$control_rate)
  expect_equal(full$details$p_match, nrow(d) / full$details$n_pairs)
  cand <- attack_fellegi_sunter(d, masked, intruder = intruder(held = "Survived"), max_pairs = 1000,
                                candidates = 10, control = FALSE, seed = 1)
  expect_false(cand$details$full)
  expect_identical(cand$details$n_pairs, 10L * nrow(d))
  expect_true(all(cand$success >= 0 & cand$success <= 1))
  expect_gt(cand$rate, 0.05)
  expect_output(print(full), "Fellegi-Sunter")
})

test_that("attack_fellegi_sunter() checks its arguments", {
  d <- titanic_paper()[-1]
  masked <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  expect_snapshot(error = TRUE, attack_fellegi_sunter(d, masked, bands = c(0.1, 0.05)))
  expect_snapshot(error = TRUE, attack_fellegi_sunter(d, masked, candidates = 0))
})

# R references of the C kernels (src/fellegi.c): the pattern code of each pair field by
# field with findInterval(), the level counts from the matrix of levels, and the claims by
# tapply() over each original's pairs.
ref_pair_levels <- function(num_o, num_m, cat_o, cat_m, i, j, bands) {
  n_lev <- c(rep(length(bands) + 1L, ncol(num_o)), rep(2L, length(cat_o)))
  lev <- matrix(0L, length(i), length(n_lev))
  for (f in seq_len(ncol(num_o))) {
    lev[, f] <- findInterval(abs(num_o[i, f] - num_m[j, f]), bands, left.open = TRUE)
  }
  for (f in seq_along(cat_o)) {
    lev[, ncol(num_o) + f] <- as.integer(cat_o[[f]][i] != cat_m[[f]][j] | is.na(cat_o[[f]][i]) != is.na(cat_m[[f]][j]))
  }
  lev[is.na(lev)] <- 1L
  list(code = detanon:::pattern_code(lev, n_lev),
       counts = unlist(lapply(seq_along(n_lev), function(f) tabulate(lev[, f] + 1L, n_lev[f]))))
}

ref_claims <- function(i, j, w, post, n) {
  success <- confidence <- rep(NA_real_, n)
  for (r in unique(i)) {
    p <- which(i == r)
    top <- max(w[p])
    at <- p[w[p] >= top - 1e-12 * (1 + abs(w[p]))]
    success[r] <- if (r %in% j[at]) 1 / length(at) else 0
    confidence[r] <- max(post[at])
  }
  list(success, confidence)
}

test_that("the pairs' patterns and level counts equal the R reference, NA and ties included", {
  set.seed(3)
  bands <- c(0.01, 0.03, 0.1, 0.3)
  for (rep in 1:6) {
    no <- sample(c(1, 9, 40), 1)
    nm <- sample(c(1, 12, 40), 1)
    d <- sample(1:3, 1)
    # values on a grid (distances at the bands exactly), some NaN and Inf
    num_o <- matrix(round(stats::rnorm(no * d), 1) / 10, no, d)
    num_m <- matrix(round(stats::rnorm(nm * d), 1) / 10, nm, d)
    num_o[sample(length(num_o), 1)] <- NA
    num_m[sample(length(num_m), 1)] <- Inf
    cats <- sample(0:2, 1)
    vals <- c("a", "b", NA)
    cat_o <- lapply(seq_len(cats), function(f) sample(vals, no, replace = TRUE))
    cat_m <- lapply(seq_len(cats), function(f) sample(vals, nm, replace = TRUE))
    np <- sample(c(0, 1, 300), 1)
    i <- sample(no, np, replace = TRUE)
    j <- sample(nm, np, replace = TRUE)
    want <- ref_pair_levels(num_o, num_m, cat_o, cat_m, i, j, bands)
    n_lev <- c(rep(5L, d), rep(2L, cats))
    cc <- detanon:::category_codes(as.data.frame(cat_o, col.names = paste0("c", seq_len(cats))),
                                   as.data.frame(cat_m, col.names = paste0("c", seq_len(cats))),
                                   paste0("c", seq_len(cats)))
    if (!cats) cc <- list(o = matrix(0L, no, 0L), m = matrix(0L, nm, 0L))
    mult <- cumprod(c(1, n_lev))[seq_along(n_lev)]
    got <- .Call(detanon:::C_ffi_fs_levels, num_o, num_m, cc$o, cc$m, as.integer(i), as.integer(j), bands,
                 mult, FALSE, 1L)
    expect_identical(got, want$code)
    counts <- .Call(detanon:::C_ffi_fs_levels, num_o, num_m, cc$o, cc$m, as.integer(i), as.integer(j), bands,
                    mult, TRUE, 2L)
    expect_identical(counts, as.double(want$counts))
    tab <- detanon:::pattern_table(got, n_lev)
    expect_identical(tab$pat[tab$at], got)
    expect_identical(tab$cnt, as.vector(table(got)), ignore_attr = TRUE)
  }
  # enough pairs for two threads: the same codes
  num_o <- matrix(round(stats::rnorm(60), 1) / 10, 30, 2)
  num_m <- matrix(round(stats::rnorm(80), 1) / 10, 40, 2)
  num_m[3, 1] <- NaN
  cat_o <- list(sample(c("a", "b", NA), 30, replace = TRUE))
  cat_m <- list(sample(c("a", "b", NA), 40, replace = TRUE))
  i <- sample(30, 5000, replace = TRUE)
  j <- sample(40, 5000, replace = TRUE)
  want <- ref_pair_levels(num_o, num_m, cat_o, cat_m, i, j, bands)
  cc <- detanon:::category_codes(data.frame(c1 = cat_o[[1]]), data.frame(c1 = cat_m[[1]]), "c1")
  mult <- cumprod(c(1, 5L, 5L, 2L))[1:3]
  for (nt in 1:2) {
    expect_identical(.Call(detanon:::C_ffi_fs_levels, num_o, num_m, cc$o, cc$m, as.integer(i), as.integer(j),
                           bands, mult, FALSE, nt), want$code)
  }
})

# The candidates of the attack (ffi_fs_candidates(): the k nearest released records of every
# queried original within its stratum, and the code of each pair, from one search): the
# rows of nearest_in_cells() (itself against plain R in test-battery.R) and the codes of
# the plain R reference, on ties, duplicates, a constant column, n = 1, tiny strata,
# categorical keys with missing values, and any thread count.
test_that("the candidates and their pair codes from one search equal the nearest in cells and the R reference", {
  set.seed(31)
  bands <- c(0.01, 0.03, 0.1, 0.3)
  for (case in 1:6) {
    n <- c(3000, 400, 40, 5, 1, 2500)[case]
    d <- c(2, 3, 1, 2, 2, 4)[case]
    num_o <- matrix(round(stats::rnorm(n * d), 1) / 10, n, d)
    num_m <- num_o + matrix(round(stats::rnorm(n * d, sd = 0.5), 1) / 10, n, d)
    if (n >= 40) {
      num_m[1:20, ] <- num_m[21:40, ] # duplicated released points
      num_o[1:5, ] <- num_m[1:5, ] # queries on them
    }
    if (case == 2) num_o[, 2] <- num_m[, 2] <- 0.5 # a constant column
    if (case == 6) num_m <- num_m[rep(seq(1, n, by = 3), each = 3)[seq_len(n)], ] # shared points
    id <- if (n >= 5) sample(1:4, n, TRUE, prob = c(10, 5, 0.2, 0.05)) else rep(1L, n)
    rows <- if (n >= 40) sort(sample(n, n %/% 2)) else seq_len(n)
    cats <- case %% 3
    vals <- c("a", "b", NA)
    cat_df <- function() as.data.frame(lapply(seq_len(cats), function(f) sample(vals, n, replace = TRUE)),
                                       col.names = paste0("c", seq_len(cats)))
    cc <- if (cats) detanon:::category_codes(cat_df(), cat_df(), paste0("c", seq_len(cats)))
          else list(o = matrix(0L, n, 0L), m = matrix(0L, n, 0L))
    cat_o <- lapply(seq_len(cats), function(f) cc$o[, f])
    cat_m <- lapply(seq_len(cats), function(f) cc$m[, f])
    n_lev <- c(rep(length(bands) + 1L, d), rep(2L, cats))
    mult <- cumprod(c(1, n_lev))[seq_along(n_lev)]
    co <- detanon:::cell_orders(id, id[rows], rows)
    for (k in c(1L, 3L, 10L)) {
      got <- .Call(detanon:::C_ffi_fs_candidates, num_o, num_m, cc$o, cc$m, co$t_order, co$t_off, co$q_order,
                   co$q_off, k, bands, mult, 1L, FALSE)
      expect_named(got, c("index", "code"))
      # with the squared distances: the same candidates and codes
      got_d2 <- .Call(detanon:::C_ffi_fs_candidates, num_o, num_m, cc$o, cc$m, co$t_order, co$t_off,
                      co$q_order, co$q_off, k, bands, mult, 2L, TRUE)
      expect_identical(got_d2[c("index", "code")], got)
      nn <- detanon:::nearest_in_cells(num_m, num_o[rows, , drop = FALSE], id, id[rows], k = k)
      nb <- nn$index
      expect_identical(got$index[rows, , drop = FALSE], nb)
      expect_identical(got_d2$d2[rows, , drop = FALSE], nn$d2)
      expect_true(all(got_d2$d2[-rows, ] == Inf))
      expect_true(all(is.na(got$index[-rows, ])) && all(is.na(got$code[-rows, ])))
      i <- rep(rows, k)
      j <- as.vector(nb)
      keep <- !is.na(j)
      want <- ref_pair_levels(num_o, num_m, cat_o, cat_m, i[keep], j[keep], bands)$code
      expect_identical(as.vector(got$code[rows, , drop = FALSE])[keep], want)
      expect_true(all(is.na(as.vector(got$code[rows, , drop = FALSE])[!keep])))
    }
  }
})

# The control release holds the view's released records, rows permuted within strata: the
# control takes the view's candidates (fs_candidates()), and its result is the one its own
# search gives, on plain and shared-centroid releases, duplicated records, a stratum
# released as one point (where the control searches again), strata smaller than the
# candidates, a numeric key, a categorical key (no reuse), and 1 and 2 threads.
test_that("the control's candidates from the view's give the result of the control's own search", {
  d <- tied_strata_data(seed = 8, small = 6) # a stratum "e" of 6
  d$w <- round(stats::rnorm(nrow(d)), 1) # a numeric key
  one_point <- function(m) { m[m$g == "c", c("x1", "x2")] <- 0.25; m } # every record at one point
  releases <- list(plain = anonymise(d, k = 3, vars = c("x1", "x2"), strata = "g"),
                   mdav = anonymise_mdav(d, k = 3, vars = c("x1", "x2"), strata = "g", noise = TRUE),
                   one_point = one_point(anonymise_mdav(d, k = 3, vars = c("x1", "x2"), strata = "g")))
  # the queries of each search (cell_orders()'s `cq`)
  searched <- new.env()
  ns <- asNamespace("detanon")
  suppressMessages(trace("cell_orders", where = ns, print = FALSE,
                         tracer = bquote(assign("q", c(get("q", envir = .(searched)), length(cq)),
                                                envir = .(searched)))))
  on.exit(suppressMessages(untrace("cell_orders", where = ns)), add = TRUE)
  for (r in names(releases)) for (held in list(NULL, "w", "k")) for (k in c(3L, 10L)) for (nt in 1:2) {
    it <- intruder(vars = c("x1", "x2"), strata = "g", held = held)
    v <- detanon:::attack_view(d, releases[[r]], it, control = TRUE, seed = 5)
    core <- function(s) detanon:::fellegi_sunter_core(s, m = 3, nthreads = nt, seed = 5, max_pairs = 100,
                                                           candidates = k)
    invisible(core(v$s))
    expect_identical(!is.null(v$s$shared$fs_candidates), !identical(held, "k"))
    searched$q <- integer()
    got <- core(v$ctrl)
    # the control searches all its originals only with a categorical key; else at most a few
    expect_identical(any(searched$q == sum(v$s$known)), identical(held, "k"))
    expect_null(v$s$shared$fs_candidates) # used once
    alone <- v$ctrl
    alone$shared <- NULL
    expect_identical(got, core(alone))
    expect_false(got$full)
  }
  # on the one-point stratum the control's own record is at the 10th candidate's point: searched again
  v <- detanon:::attack_view(d, releases$one_point, intruder(vars = c("x1", "x2"), strata = "g"), control = TRUE,
                             seed = 5)
  s <- v$s
  s$shared <- NULL
  rows <- which(s$known)
  cand <- detanon:::fs_candidates(s, s$zo, s$zm, list(o = matrix(0L, s$n, 0L), m = matrix(0L, s$n, 0L)), rows,
                                  10L, c(0.01, 0.03, 0.1, 0.3), cumprod(c(1, 5, 5))[1:2], 1L)
  last <- cand$index[rows, 10L]
  own <- v$ctrl$perm[rows]
  at_last <- !is.na(last) & s$zm[own, 1] == s$zm[last, 1] & s$zm[own, 2] == s$zm[last, 2]
  expect_gt(sum(at_last), 100)
  # the reuse needs the view's own records: another view is searched
  core <- function(s) detanon:::fellegi_sunter_core(s, m = 3, nthreads = 1L, seed = 5, max_pairs = 100,
                                                           candidates = 10L)
  v <- detanon:::attack_view(d, releases$plain, intruder(vars = c("x1", "x2"), strata = "g"), control = TRUE, seed = 5)
  w <- detanon:::attack_view(d, releases$mdav, intruder(vars = c("x1", "x2"), strata = "g"), control = TRUE, seed = 5)
  invisible(core(v$s))
  w$ctrl$shared <- v$s$shared
  got <- core(w$ctrl)
  w$ctrl$shared <- NULL
  expect_identical(got, core(w$ctrl))
})

test_that("the claims equal the R reference: ties at the top weight, originals without pairs", {
  set.seed(4)
  for (n in c(1L, 5L, 50L)) {
    np <- 4L * n
    i <- sample(n, np, replace = TRUE)
    j <- sample(n, np, replace = TRUE)
    j[seq_len(n)] <- i[seq_len(n)] # some own records
    w_pat <- round(stats::rnorm(6), 1)
    w_pat[2] <- w_pat[1] * (1 + 1e-13) # equal within the tolerance
    post <- stats::runif(6)
    at <- sample(6L, np, replace = TRUE)
    got <- .Call(detanon:::C_ffi_fs_claims, i, j, at, w_pat, post, as.double(n + 2L))
    want <- ref_claims(i, j, w_pat[at], post[at], n + 2L)
    expect_identical(got, want)
  }
  expect_identical(.Call(detanon:::C_ffi_fs_claims, integer(), integer(), integer(), 1, 1, 3),
                   list(rep(NA_real_, 3), rep(NA_real_, 3)))
})

test_that("many fields do not allocate a table of every possible comparison pattern", {
  # 13 fields: prod(n_lev) patterns would be gigabytes; only the patterns present are kept
  set.seed(3)
  d <- as.data.frame(matrix(round(rnorm(150 * 13) * 100), 150, 13))
  rel <- d + round(rnorm(150 * 13) * 20)
  a <- attack_fellegi_sunter(d, rel, intruder = intruder(vars = names(d)), control = FALSE, seed = 1)
  expect_true(is.finite(a$rate))
  expect_gte(a$rate, 0)
})

test_that("the EM compares the levels once, not once per iteration (the many-fields blow-up)", {
  # 12 fields with many patterns present: level_freq() per iteration compared the whole
  # matrix of levels for every level of every field (minutes on Tarragona's 12 keys). Now
  # the rows at each level are found once per EM (level_index()) and every iteration sums
  # weights at them: a count of the index builds, not a time.
  set.seed(4)
  n_lev <- c(rep(5L, 10), 2L, 2L)
  lev <- sapply(n_lev, function(L) pmin(L - 1L, rgeom(3000, 0.5)))
  code <- detanon:::pattern_code(lev, n_lev)
  counter <- new.env()
  counter$calls <- 0L
  ns <- asNamespace("detanon")
  suppressMessages(trace("level_index", where = ns, print = FALSE,
                         tracer = bquote(assign("calls", get("calls", envir = .(counter)) + 1L,
                                                envir = .(counter)))))
  on.exit(suppressMessages(untrace("level_index", where = ns)), add = TRUE)
  fit <- detanon:::fs_em(code, n_lev)
  expect_gt(fit$iterations, 5L)
  expect_identical(counter$calls, 1L)
})

test_that("level_freq_at() equals the weighted sums level by level, bit for bit", {
  set.seed(5)
  for (rep in 1:5) {
    n_lev <- sample(2:5, sample(1:6, 1), replace = TRUE)
    n <- sample(c(1, 7, 200), 1)
    # some levels absent, ties everywhere
    lev <- sapply(n_lev, function(L) sample(0:(L - 1L), n, replace = TRUE, prob = c(3, rep(1, L - 1L))))
    lev <- matrix(lev, n)
    wt <- runif(n) * sample(c(0, 1, 1e-12, 1e12), n, replace = TRUE)
    ref <- lapply(seq_along(n_lev), function(f) {
      p <- numeric(n_lev[f])
      for (l in seq_len(n_lev[f])) p[l] <- sum(wt[lev[, f] == l - 1L])
      p <- p + 1e-9
      p / sum(p)
    })
    expect_identical(detanon:::level_freq_at(detanon:::level_index(lev, n_lev), wt), ref)
  }
})

test_that("random_block_pairs() draws the pairs of a per-block reference, many blocks too", {
  # the reference: one pass over the pairs per block, a record of the block drawn for each
  ref <- function(rows, id, size) {
    i <- rows[sample.int(length(rows), size, replace = TRUE)]
    j <- integer(length(i))
    for (b in sort(unique(id))) {
      w <- which(id[i] == b)
      members <- which(id == b)
      if (length(w)) j[w] <- members[sample.int(length(members), length(w), replace = TRUE)]
    }
    list(i = i, j = j)
  }
  set.seed(4)
  id4 <- sample(c(1L, 3L, 10L, 2L), 500, TRUE)
  id_many <- sample(1:300, 2000, TRUE)
  cases <- list(list(which(stats::runif(500) < 0.7), id4, 5000), list(seq_len(2000), id_many, 20000),
                list(3L, id4, 4), list(seq_len(500), rep(7L, 500), 10), list(1L, 5L, 7), list(seq_len(500), id4, 0),
                list(integer(), integer(), 0))
  # (the draws of sample.int() under either sample.kind; src/fellegi.c draws them in C)
  old_kind <- RNGkind()[3]
  on.exit(suppressWarnings(RNGkind(sample.kind = old_kind)), add = TRUE)
  for (kind in c("Rejection", "Rounding")) for (cs in cases) {
    suppressWarnings(RNGkind(sample.kind = kind))
    set.seed(9)
    want <- do.call(ref, cs)
    after_want <- .Random.seed
    set.seed(9)
    got <- do.call(detanon:::random_block_pairs, cs)
    expect_identical(got, want)
    expect_identical(.Random.seed, after_want) # the same draws
    expect_identical(cs[[2]][got$i], cs[[2]][got$j]) # pairs of one block
  }
})
