test_that("Mondrian matches the brute-force reference on random data", {
  for (seed in 1:15) {
    set.seed(seed)
    n <- sample(c(1:12, 50, 137, 400), 1)
    d <- sample(1:3, 1)
    k <- sample(2:6, 1)
    if (k > n) k <- max(2, n)
    if (n < 2) next
    x <- matrix(rnorm(n * d), n, d)
    df <- as.data.frame(x)
    ec <- equivalence_classes(df, k = k, quasi = names(df), strata = character())
    expect_identical(ec$class, ref_classes(x, k))
    expect_true(all(ec$classes$n >= k))
    expect_identical(ec$classes$n, tabulate(ec$class))
  }
})

test_that("Mondrian handles ties, duplicates, constant columns and strata", {
  set.seed(3)
  n <- 300
  df <- data.frame(a = sample(1:4, n, TRUE), b = rep(7, n), c = round(rnorm(n), 1),
                   s = sample(c("x", "y", "z"), n, TRUE))
  x <- as.matrix(df[c("a", "b", "c")])
  for (k in c(2, 3, 7, 40)) {
    ec <- equivalence_classes(df, k = k, quasi = c("a", "b", "c"), strata = "s")
    expect_identical(ec$class, ref_classes(x, k, df$s))
    expect_true(all(ec$classes$n >= k))
    # classes never mix strata
    expect_true(all(tapply(df$s, ec$class, function(v) length(unique(v))) == 1L))
  }
  # all rows identical: one class, no cut possible
  same <- data.frame(a = rep(1, 20), b = rep(2, 20))
  ec <- equivalence_classes(same, k = 2, quasi = c("a", "b"))
  expect_identical(ec$class, rep(1L, 20))
  expect_identical(ec$classes$np_a, 0)
  # n == k and n = 2k - 1: one class; n = 2k with distinct values: two
  expect_identical(equivalence_classes(data.frame(a = 1:3), k = 3, quasi = "a")$class, rep(1L, 3))
  expect_identical(equivalence_classes(data.frame(a = 1:5), k = 3, quasi = "a")$class, rep(1L, 5))
  expect_identical(equivalence_classes(data.frame(a = 6:1), k = 3, quasi = "a")$class,
                   c(2L, 2L, 2L, 1L, 1L, 1L))
  # median ties block the cut: 1 1 1 1 2 with k = 2 -> left would take all
  expect_identical(equivalence_classes(data.frame(a = c(1, 1, 1, 1, 2)), k = 2, quasi = "a")$class,
                   rep(1L, 5))
})

test_that("every class is cut at a median and ranges / precision are right", {
  set.seed(11)
  df <- data.frame(u = runif(500), v = rexp(500))
  ec <- equivalence_classes(df, k = 10, quasi = c("u", "v"))
  cl <- ec$classes
  expect_equal(cl$lo_u, as.vector(tapply(df$u, ec$class, min)))
  expect_equal(cl$hi_v, as.vector(tapply(df$v, ec$class, max)))
  expect_equal(cl$np_u, (cl$hi_u - cl$lo_u) / diff(range(df$u)))
  expect_equal(ec$precision[["v"]], sum(cl$np_v * cl$n) / 500)
  expect_true(all(cl$n >= 10))
  expect_true(max(cl$n) < 20)  # continuous data: every partition >= 2k is cut
})

test_that("classes do not depend on the row order", {
  df <- sim_people(400)
  ec <- equivalence_classes(df, k = 4, quasi = c("age", "income"), strata = c("sex", "region"))
  p <- sample(400)
  ec2 <- equivalence_classes(df[p, ], k = 4, quasi = c("age", "income"), strata = c("sex", "region"))
  expect_identical(ec2$class, ec$class[p])
  expect_identical(ec2$classes, ec$classes)
})

test_that("strata-only classes and small strata", {
  df <- sim_people(200)
  ec <- equivalence_classes(df, k = 3, strata = c("sex", "region"))
  expect_identical(ec$class, detanon:::stratum_ids(df, c("sex", "region")))
  df$rare <- c("a", rep("b", 199))
  expect_error(equivalence_classes(df, k = 3, strata = "rare"), "1 stratum has fewer than k = 3")
  expect_message(ec <- equivalence_classes(df, k = 3, strata = "rare", small_strata = "suppress"),
                 "suppressed 1 record")
  expect_true(is.na(ec$class[1]))
  expect_identical(ec$n_suppressed, 1L)
  expect_output(print(ec), "1 equivalence classes")
})

test_that("bad input is rejected with a message naming the argument", {
  df <- sim_people(20)
  expect_error(equivalence_classes(df, k = 21, quasi = "age"), "`k` \\(21\\) is larger than the number of records \\(20\\)")
  expect_error(equivalence_classes(df, k = 1, quasi = "age"), "`k` must be a single whole number >= 2")
  expect_error(equivalence_classes(df, k = 2, quasi = "sex"), "`quasi` must be numeric columns; `sex`")
  expect_error(equivalence_classes(df, k = 2, quasi = "nope"), "`quasi` names columns that are not in the data")
  expect_error(equivalence_classes(df, k = 2, quasi = "age", strata = "age"), "both `quasi` and `strata`")
  df$age[3] <- NA
  expect_error(equivalence_classes(df, k = 2, quasi = "age"), "`quasi` columns have missing values")
  df$age[3] <- Inf
  expect_error(equivalence_classes(df, k = 2, quasi = "age"), "NaN or infinite")
  expect_error(equivalence_classes(list(a = 1), k = 2), "`data` must be a data frame")
})

test_that("adversarial orders and heavy ties give the reference partition", {
  n <- 3000
  cases <- list(
    sorted = data.frame(a = seq_len(n), b = rep(1:3, length.out = n)),
    reversed = data.frame(a = rev(seq_len(n)), b = rev(rep(1:3, length.out = n))),
    organ_pipe = data.frame(a = c(seq(1, n, 2), rev(seq(2, n, 2))), b = 1),
    few_values = data.frame(a = rep(c(5, 1, 3), length.out = n), b = rep(c(2, 2, 9, 9, 4), length.out = n)),
    one_outlier = data.frame(a = c(rep(0, n - 1), 1e6), b = c(1e-9 * seq_len(n - 1), 0))
  )
  for (nm in names(cases)) {
    df <- cases[[nm]]
    ec <- equivalence_classes(df, k = 7, quasi = c("a", "b"))
    expect_identical(ec$class, ref_classes(as.matrix(df), 7), label = nm)
    expect_true(all(ec$classes$n >= 7), label = nm)
  }
})

test_that("missing strata values form a class of their own", {
  df <- data.frame(g = c(NA, NA, NA, "a", "a", "a"), x = 1:6)
  ec <- equivalence_classes(df, k = 3, quasi = "x", strata = "g")
  expect_identical(ec$class, c(2L, 2L, 2L, 1L, 1L, 1L))
})

test_that("the Mondrian cut does not depend on how a variable is coded", {
  canon <- function(cl) {
    s <- unname(split(seq_along(cl), cl))
    s[order(vapply(s, min, 1L))]
  }
  d <- titanic_paper()
  d$male <- as.integer(d$Sex == "male")  # 65% in the larger code
  d$female <- 1L - d$male
  for (k in c(3, 5, 10)) {
    a <- equivalence_classes(d, k = k, quasi = c("Age", "male"), strata = character())
    b <- equivalence_classes(d, k = k, quasi = c("Age", "female"), strata = character())
    expect_identical(canon(a$class), canon(b$class), info = paste("k =", k))
    # the 0/1 column is cut: no class mixes the sexes
    expect_equal(unname(a$precision["male"]), 0)
    expect_equal(unname(b$precision["female"]), 0)
  }
  # reversing a skewed discrete column gives the same partition
  set.seed(4)
  x <- data.frame(u = sample(1:6, 500, TRUE, prob = c(1, 1, 1, 2, 5, 20)), v = runif(500))
  a <- equivalence_classes(x, k = 7, quasi = c("u", "v"))
  b <- equivalence_classes(transform(x, u = -u), k = 7, quasi = c("u", "v"))
  expect_identical(canon(a$class), canon(b$class))
})
