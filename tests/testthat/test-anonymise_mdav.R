# anonymise_mdav() and its kernel (src/mdav.c) against the slow reference ref_mdav()
# (helper-reference.R), sdcMicro, and the invariants of the masking verbs.

# The kernel's groups of every stratum against the reference's (the same ids: stratum by
# stratum, in the order formed), and its group means against exact means (a group's value
# where all its values of a column are equal).
expect_kernel_matches <- function(z, id, k, nthreads = 1L) {
  got <- mdav_kernel(z, id, k, nthreads)
  want <- integer(length(id))
  off <- 0L
  for (s in sort(unique(id))) {
    rows <- which(id == s)
    g <- ref_mdav(z[rows, , drop = FALSE], k)
    want[rows] <- g + off
    off <- off + max(g)
  }
  expect_identical(got$group, want)
  expect_identical(got$size, tabulate(want))
  z <- as.matrix(z)
  storage.mode(z) <- "double"
  means <- vapply(seq_len(ncol(z)), function(j) {
    vapply(split(z[, j], want), function(v) if (all(v == v[1])) v[1] else detanon:::exact_mean(v), 0)
  }, numeric(max(want)))
  expect_identical(got$means, matrix(means, max(want), ncol(z)))
}

test_that("the kernel forms the reference's groups on random data", {
  set.seed(11)
  for (it in 1:12) {
    n <- sample(1:150, 1L)
    d <- sample(1:4, 1L)
    z <- matrix(rnorm(n * d), n, d)
    expect_kernel_matches(z, sample(1:3, n, replace = TRUE), sample(1:6, 1L))
  }
})

test_that("the kernel forms the reference's groups under ties, copies and constant columns", {
  set.seed(12)
  for (it in 1:12) {
    n <- sample(2:120, 1L)
    d <- sample(1:3, 1L)
    # few distinct values: many equal distances and many records equal in every column
    z <- matrix(sample(c(-1, 0, 0.5, 1), n * d, replace = TRUE), n, d)
    if (it %% 3 == 0) z[, 1] <- 2 # a constant column
    expect_kernel_matches(z, sample(1:2, n, replace = TRUE), sample(1:5, 1L))
  }
  # every record the same: one group; a lattice of equal distances
  expect_kernel_matches(matrix(1, 20, 2), rep(1L, 20), 3L)
  lat <- as.matrix(expand.grid(-2:2, -2:2))
  expect_kernel_matches(lat, rep(1L, nrow(lat)), 4L)
  # tiny strata, n < 2k, n = 1
  expect_kernel_matches(matrix(c(1, 2, 3, 5, 8), ncol = 1), c(1L, 2L, 2L, 3L, 3L), 2L)
  expect_kernel_matches(matrix(rnorm(5), ncol = 1), rep(1L, 5), 3L)
  expect_kernel_matches(matrix(0.3, 1, 2), 1L, 2L)
})

test_that("the kernel forms the reference's groups on strata of thousands of records", {
  # skewed, tied and copied records: the farthest-record scans over sorted distances, their
  # reference points renewed, the tree rebuilt as records leave, the exact sums carried
  # many times; beside them strata of 1, k and 2k - 1 records; one and two threads
  set.seed(21)
  n <- 2000
  z <- cbind(rexp(n)^3, round(rnorm(n), 1), sample(c(0, 1e-9, 1), n, replace = TRUE))
  z <- rbind(z, z[1:150, ], matrix(rnorm(9 * 3), 9, 3))
  id <- c(rep(2L, n + 150), 1L, 3L, 3L, 3L, 4L, 4L, 4L, 4L, 4L)
  for (nt in 1:2) expect_kernel_matches(z, id, 3L, nthreads = nt)
  # magnitudes far apart, so that the exact centroid decides which record is farthest
  x <- c(1e15, -1e15, rnorm(n - 2) * 10^sample(-12:3, n - 2, replace = TRUE))
  expect_kernel_matches(cbind(x, rev(x)), rep(1L, n), 4L)
  # a constant column beside one that varies, and one record alone
  expect_kernel_matches(cbind(rnorm(600), 5), rep(1L, 600), 5L)
  expect_kernel_matches(matrix(c(2, 3), 1, 2), 1L, 3L)
})

test_that("records equal in every variable share a group, and groups hold k or more", {
  set.seed(13)
  z <- matrix(round(rnorm(400), 1), 200, 2)
  z <- rbind(z, z[1:50, ], z[1:10, ])
  g <- mdav_kernel(z, rep(1L, nrow(z)), 4L)$group
  key <- paste(z[, 1], z[, 2])
  expect_true(all(tapply(g, key, function(v) length(unique(v))) == 1L))
  expect_gte(min(tabulate(g)), 4L)
})

test_that("the release holds the exact group means of the originals", {
  d <- random_data(300, d = 3, n_strata = 3, seed = 14)
  d$x2 <- round(d$x2, 1)
  m <- anonymise_mdav(d, vars = c("x1", "x2", "x3"), strata = "g", k = 4, format = "none",
                      check_identifiers = FALSE)
  x <- as.matrix(d[c("x1", "x2", "x3")])
  st <- detanon:::col_stats(x)
  z <- sweep(sweep(x, 2, st$mean), 2, st$sd, "/")
  id <- as.integer(d$g)
  g <- integer(nrow(d))
  for (s in unique(id)) g[id == s] <- ref_mdav(z[id == s, ], 4L) + 1000L * s
  for (v in c("x1", "x2", "x3")) {
    expect_identical(m[[v]], as.vector(ave(d[[v]], g, FUN = detanon:::exact_mean)))
  }
  info <- release_info(m)
  expect_identical(info$verb, "anonymise_mdav")
  expect_identical(info$counts$n_groups, length(unique(g)))
  expect_identical(info$counts$min_group, min(tabulate(factor(g))))
})

test_that("the groups are sdcMicro's where no distances tie", {
  skip_if_not_installed("sdcMicro")
  sdc_groups <- function(x, k) {
    mx <- suppressMessages(sdcMicro::microaggregation(as.data.frame(x), variables = colnames(x),
                                                      aggr = k, method = "mdav"))$mx
    as.integer(factor(do.call(paste, unname(as.data.frame(mx)))))
  }
  ours <- function(x, k) {
    m <- anonymise_mdav(as.data.frame(x), vars = colnames(x), strata = character(), k = k, format = "none",
                        check_identifiers = FALSE)
    as.integer(factor(do.call(paste, unname(as.data.frame(m)[colnames(x)]))))
  }
  utils::data("testdata", package = "sdcMicro", envir = environment())
  x <- as.matrix(testdata[c("expend", "income", "savings")])
  for (k in c(3L, 5L, 10L)) expect_true(same_partition(ours(x, k), sdc_groups(x, k)))
  set.seed(15)
  for (it in 1:4) {
    n <- sample(200:1500, 1L)
    d <- sample(2:4, 1L)
    x <- matrix(rnorm(n * d), n, d, dimnames = list(NULL, paste0("v", seq_len(d))))
    k <- sample(2:8, 1L)
    expect_true(same_partition(ours(x, k), sdc_groups(x, k)))
  }
  # a stratum of 20,000 skewed records: the order of distances from the centroid is sorted
  # a part at a time, and the part is extended when a scan reaches its end
  x <- cbind(v1 = rexp(2e4)^3, v2 = rnorm(2e4), v3 = runif(2e4))
  expect_true(same_partition(ours(x, 3L), sdc_groups(x, 3L)))
})

test_that("the release is the same for any row order and any thread count", {
  set.seed(16)
  n <- 3000
  d <- data.frame(a = round(rnorm(n), 1), b = sample(c(0, 1, 2.5), n, replace = TRUE),
                  c = rexp(n), g = factor(sample(letters[1:5], n, replace = TRUE)))
  d <- rbind(d, d[1:200, ]) # exact copies
  vars <- c("a", "b", "c")
  m <- anonymise_mdav(d, vars = vars, strata = "g", k = 5, check_identifiers = FALSE)
  for (s in 1:2) {
    set.seed(s)
    p <- sample(nrow(d))
    mp <- anonymise_mdav(d[p, ], vars = vars, strata = "g", k = 5, check_identifiers = FALSE)
    expect_identical(as.list(mp[vars]), lapply(as.list(m[vars]), function(v) v[p]))
  }
  m2 <- anonymise_mdav(d, vars = vars, strata = "g", k = 5, check_identifiers = FALSE, nthreads = 2)
  expect_identical(as.list(m2[vars]), as.list(m[vars]))
  # one stratum of 20,000 records, ties and copies among them (the order of distances
  # sorted a part at a time)
  big <- data.frame(a = c(rexp(19000)^3, rep(0.5, 1000)), b = round(rnorm(2e4), 2), c = runif(2e4))
  mb <- anonymise_mdav(big, vars = vars, strata = character(), k = 3, check_identifiers = FALSE)
  p <- sample(nrow(big))
  expect_identical(as.list(anonymise_mdav(big[p, ], vars = vars, strata = character(), k = 3,
                                          check_identifiers = FALSE, nthreads = 2)[vars]),
                   lapply(as.list(mb[vars]), function(v) v[p]))
  # one stratum alone and many small strata in parallel batches
  m1 <- anonymise_mdav(d, vars = vars, strata = character(), k = 3, check_identifiers = FALSE, nthreads = 1)
  expect_identical(anonymise_mdav(d, vars = vars, strata = character(), k = 3, check_identifiers = FALSE,
                                  nthreads = 2)[vars], m1[vars])
})

test_that("missing values follow the na policy; small strata the small_strata policy", {
  d <- random_data(120, d = 2, n_strata = 2, seed = 17)
  d$x1[c(3, 50, 77)] <- NA
  expect_error(anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = 3), class = "detanon_error_data")
  m <- suppressMessages(anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = 3, na = "complete",
                                       format = "none", check_identifiers = FALSE))
  expect_identical(nrow(m), 117L)
  expect_identical(release_info(m)$counts$n_dropped, 3L)
  dc <- d[stats::complete.cases(d), ]
  expect_identical(m$x1, anonymise_mdav(dc, vars = c("x1", "x2"), strata = "g", k = 3, format = "none",
                                        check_identifiers = FALSE)$x1)
  mi <- anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = 3, na = "median", format = "none",
                       check_identifiers = FALSE)
  di <- d
  di$x1[is.na(di$x1)] <- stats::median(d$x1, na.rm = TRUE)
  expect_identical(mi$x1, anonymise_mdav(di, vars = c("x1", "x2"), strata = "g", k = 3, format = "none",
                                         check_identifiers = FALSE)$x1)
  small <- rbind(d[1:40, ], transform(d[41:42, ], g = factor("z", levels = c(levels(d$g), "z"))))
  small$x1[is.na(small$x1)] <- 0
  expect_error(anonymise_mdav(small, vars = c("x1", "x2"), strata = "g", k = 3), class = "detanon_error_small_strata")
  ms <- suppressMessages(anonymise_mdav(small, vars = c("x1", "x2"), strata = "g", k = 3,
                                        small_strata = "suppress", check_identifiers = FALSE))
  expect_identical(nrow(ms), 40L)
})

test_that("a table of k per stratum gives each stratum its k", {
  d <- random_data(200, d = 2, n_strata = 2, seed = 18)
  tab <- data.frame(g = c("a", "b"), k = c(3L, 7L))
  m <- anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = tab, format = "none", check_identifiers = FALSE)
  for (s in c("a", "b")) {
    r <- d$g == s
    ms <- anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = tab$k[tab$g == s], format = "none",
                         check_identifiers = FALSE)
    expect_identical(m$x1[r], ms$x1[r])
    expect_identical(m$x2[r], ms$x2[r])
  }
  expect_identical(release_info(m)$settings$k$k, c(3L, 7L))
})

test_that("the replay and the algorithm-aware intruder recompute the groups", {
  d <- titanic_paper()[-1]
  vars <- c("Age", "Fare")
  strata <- c("Pclass", "Sex", "Family")
  m <- anonymise_mdav(d, vars = vars, strata = strata, k = 5, check_identifiers = FALSE)
  # the intruder of the masking's own columns (the default one also holds the other
  # published columns, such as Survived, which split the groups)
  a <- attack_recipe(d, m, intruder = intruder(vars, strata), seed = 1)
  expect_identical(a$details$share_certain, 1)
  # each group's released point is found, shared at random among its records
  expect_equal(a$rate, release_info(m)$counts$n_groups / nrow(d))
  r <- risk_replay(d, m, p = 1, seed = 1)
  expect_equal(r$by_p$rate, release_info(m)$counts$n_groups / nrow(d))
})

test_that("bad input is refused with a classed error naming anonymise_mdav and the argument", {
  d <- random_data(30, seed = 19)
  expect_snapshot(error = TRUE, {
    anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = 1.5)
    anonymise_mdav(d, vars = c("x1", "nope"), strata = "g")
    anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = 3, format = "round")
    anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = 3, na = "zero")
    anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = 3, nthreads = 0)
    anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = data.frame(k = 3))
    anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = 20)
  })
  expect_error(anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = 1.5), class = "detanon_error_argument")
  expect_error(anonymise_mdav(d, vars = "nope"), class = "detanon_error_column")
  before <- d
  try(anonymise_mdav(d, vars = c("x1", "x2"), strata = "g", k = 20), silent = TRUE)
  expect_identical(d, before)
})

test_that("tune_release() returns the same MDAV release for any row order", {
  d <- titanic_paper()[-1]
  vars <- c("Age", "Fare")
  strata <- c("Pclass", "Sex", "Family")
  # the defaults but the intruder of the masking's own columns (the default one also holds
  # Survived and the other published columns: then no candidate meets the limits)
  tuned <- tune_release(d, intruder = intruder(), vars = vars, strata = strata, k = 2)
  expect_identical(tuned$chosen$method, "mdav")
  expect_identical(release_info(tuned$release)$verb, "anonymise_mdav")
  for (s in 20:21) {
    set.seed(s)
    p <- sample(nrow(d))
    tp <- tune_release(d[p, ], intruder = intruder(), vars = vars, strata = strata, k = 2)
    expect_identical(tp$chosen$settings, tuned$chosen$settings)
    expect_identical(as.list(tp$release[vars]), lapply(as.list(tuned$release[vars]), function(v) v[p]))
  }
  # the MDAV family alone, at another k
  t4 <- tune_release(d, intruder = intruder(), vars = vars, strata = strata, k = 4, methods = "mdav")
  p <- rev(seq_len(nrow(d)))
  t4p <- tune_release(d[p, ], intruder = intruder(), vars = vars, strata = strata, k = 4, methods = "mdav")
  expect_identical(as.list(t4p$release[vars]), lapply(as.list(t4$release[vars]), function(v) v[p]))
})
