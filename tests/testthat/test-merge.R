# Slow reference of the merge rule: mismatches + RMS z-distance to the stratum centroid,
# ties to the first stratum in the order of table() (first variable varying fastest).
merge_ref <- function(d, k, vars, strata) {
  key <- as.integer(interaction(d[strata], drop = TRUE, lex.order = FALSE))
  sizes <- table(key)
  large <- sort(as.integer(names(sizes)[sizes >= k]))
  small_rows <- which(key %in% as.integer(names(sizes)[sizes < k]))
  z <- NULL
  if (length(vars)) {
    x <- as.matrix(d[vars])
    keepc <- apply(x, 2, sd) > 0
    z <- scale(x[, keepc, drop = FALSE])
  }
  target <- integer(length(small_rows))
  dist <- numeric(length(small_rows))
  for (i in seq_along(small_rows)) {
    r <- small_rows[i]
    best <- Inf
    for (s in large) {
      members <- which(key == s)
      m <- sum(vapply(strata, function(v) as.character(d[[v]][r]) != as.character(d[[v]][members[1]]), logical(1)))
      dd <- m
      if (!is.null(z) && ncol(z)) dd <- dd + sqrt(sum((z[r, ] - colMeans(z[members, , drop = FALSE]))^2) / ncol(z))
      if (dd < best - 1e-12) { best <- dd; target[i] <- members[1] }
    }
    dist[i] <- best
  }
  list(rows = small_rows, target_row = target, dist = dist)
}

make_data <- function(n, seed) {
  set.seed(seed)
  data.frame(a = factor(sample(c("x", "y", "z"), n, TRUE, prob = c(0.6, 0.35, 0.05))),
             b = factor(sample(c("p", "q"), n, TRUE, prob = c(0.8, 0.2))),
             u = rnorm(n), w = rexp(n), const = 1)
}

test_that("merge_small_strata() moves every small-stratum record where the slow reference does", {
  for (seed in 1:8) {
    d <- make_data(sample(c(30, 80, 150), 1), seed)
    k <- sample(3:12, 1)
    sizes <- table(interaction(d[c("a", "b")], drop = TRUE))
    if (!any(sizes >= k)) next
    res <- merge_with_moves(merge_small_strata(d, k = k, vars = c("u", "w", "const"), strata = c("a", "b")))
    ref <- merge_ref(d, k, c("u", "w", "const"), c("a", "b"))
    got <- res$data
    # a level whose records all moved is dropped from the release: compare as text
    moved <- which(as.character(got$a) != as.character(d$a) | as.character(got$b) != as.character(d$b))
    expect_true(all(moved %in% ref$rows))
    expect_equal(as.character(got$a[ref$rows]), as.character(d$a[ref$target_row]))
    expect_equal(as.character(got$b[ref$rows]), as.character(d$b[ref$target_row]))
    expect_equal(sum(res$moves$n), length(ref$rows))
    if (length(ref$dist)) expect_equal(min(res$moves$d_min), min(ref$dist), tolerance = 1e-9)
    # everything else unchanged, all strata now >= k
    expect_identical(got[c("u", "w", "const")], d[c("u", "w", "const")])
    expect_true(all(table(interaction(got[c("a", "b")], drop = TRUE)) >= k))
    expect_identical(as.character(got$a[-ref$rows]), as.character(d$a[-ref$rows]))
  }
})

test_that("ties go to the first stratum in sorted order, independent of row order", {
  d <- data.frame(a = factor(c("x", rep(c("y", "x"), each = 3))),
                  b = factor(c("p", "p", "p", "p", "q", "q", "q")))
  # (x, p) has one record: (y, p) and (x, q) are both one mismatch away
  res <- merge_with_moves(merge_small_strata(d, k = 3, vars = character(), strata = c("a", "b")))
  expect_equal(as.character(res$data$a[1]), "y")
  expect_equal(as.character(res$data$b[1]), "p")
  expect_equal(res$moves$n, 1L)
  expect_equal(res$moves$d_min, 1)
  perm <- c(7, 3, 1, 5, 2, 6, 4)
  res2 <- merge_with_moves(merge_small_strata(d[perm, ], k = 3, vars = character(), strata = c("a", "b")))
  expect_identical(detanon:::plain_release(res2$data), `rownames<-`(detanon:::plain_release(res$data[perm, ]), NULL))
  expect_identical(res2$moves, res$moves)
})

test_that("continuous closeness decides between strata with equal mismatches", {
  d <- data.frame(g = factor(c("a", "b", "b", "b", "c", "c", "c")), v = c(10, 0, 1, 2, 9, 10, 11))
  res <- merge_with_moves(merge_small_strata(d, k = 3, vars = "v", strata = "g"))
  expect_equal(as.character(res$data$g), c("c", "b", "b", "b", "c", "c", "c"))
})

test_that("anonymise(small_strata = \"merge\") counts and reports every move", {
  d <- titanic_paper()
  expect_message(
    m <- anonymise(d, k = 50, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                   small_strata = "merge", check_identifiers = FALSE),
    "moved 193 records of 5 strata smaller than k = 50")
  info <- release_info(m)
  expect_equal(info$counts$n_moved, 193L)
  expect_equal(info$counts$n_suppressed, 0L)
  expect_equal(nrow(m), nrow(d))
  expect_gte(info$counts$min_size, 50L)
  expect_true(kanon_check(m, c("Pclass", "Sex", "Family"), 50)$conforms)
  ref <- merge_with_moves(merge_small_strata(d, c("Age", "Fare"), c("Pclass", "Sex", "Family"), 50))
  expect_identical(m[c("Pclass", "Sex", "Family")], ref$data[c("Pclass", "Sex", "Family")])
  # the masked values are the masking of the merged data
  direct <- suppressMessages(anonymise(ref$data, k = 50, vars = c("Age", "Fare"),
                                       strata = c("Pclass", "Sex", "Family"), check_identifiers = FALSE))
  expect_identical(m$Age, direct$Age)
  # the release carries counts only, no moves table
  expect_null(attr(m, "moves"))
  expect_false(any(vapply(unlist(info, recursive = FALSE), is.data.frame, logical(1))))
  expect_output(print(info), "n_moved +193")
  # nothing to merge: same result as "fail"
  a <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                 small_strata = "merge", check_identifiers = FALSE)
  b <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                 check_identifiers = FALSE)
  expect_identical(a$Age, b$Age)
  expect_equal(release_info(a)$counts$n_moved, 0L)
})

test_that("merge with missing values and dropped records", {
  d <- titanic_paper()
  d$Age[c(1, 5, 9)] <- NA
  expect_message(expect_message(
    m <- anonymise(d, k = 50, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                   na = "complete", small_strata = "merge", check_identifiers = FALSE),
    "dropped 3 incomplete"), "moved")
  expect_equal(nrow(m), nrow(d) - 3L)
  expect_true(kanon_check(m, c("Pclass", "Sex", "Family"), 50)$conforms)
})

test_that("merge fails clearly when no stratum is large enough", {
  d <- data.frame(g = factor(c("a", "b", "c")), v = 1:3 + 0.5)
  expect_error(merge_small_strata(d, k = 2, vars = "v", strata = "g"), "No stratum has k = 2 or more records")
  expect_error(anonymise(d, k = 2, vars = "v", strata = "g", small_strata = "merge"), "No stratum has k = 2")
  expect_error(merge_small_strata(d, k = 0), "`k` must be a single whole number >= 1")
  expect_error(merge_small_strata(d, k = 2, vars = "g", strata = character()), "`vars` must be numeric columns")
  d$v[2] <- NA
  expect_error(merge_small_strata(d, k = 2, vars = "v", strata = "g"), "`vars` have missing values")
  expect_error(anonymise(d, small_strata = "join"), "`small_strata` must be one of")
})

test_that("merge_small_strata() keeps tibbles and data.tables", {
  skip_if_not_installed("tibble")
  d <- make_data(60, 3)
  res <- merge_with_moves(merge_small_strata(tibble::as_tibble(d), c("u", "w"), c("a", "b"), 5))
  expect_s3_class(res$data, "tbl_df")
})

test_that("missing strata values are a category: moved from and into like any other", {
  d <- data.frame(g = c(NA, "a", "a", "a", "b", "b", "b"), h = c("x", "x", "x", "x", "y", "y", "y"),
                  v = c(5, 4, 5, 6, 1, 2, 3))
  res <- merge_with_moves(merge_small_strata(d, k = 3, vars = "v", strata = c("g", "h")))
  expect_equal(res$data$g[1], "a")
  expect_true(is.na(res$moves$from_g))
  d2 <- data.frame(g = c("a", NA, NA, NA), v = c(1, 2, 3, 4))
  res2 <- merge_with_moves(merge_small_strata(d2, k = 3, vars = "v", strata = "g"))
  expect_true(is.na(res2$data$g[1]))
})

test_that("the merge is reported in one line that counts the changed values of each strata variable", {
  # (anonymise(small_strata = "merge") printed one line per move: about 280 for sdcMicro's
  # testdata, see test-sdcmicro.R)
  d <- titanic_paper()
  strata <- c("Pclass", "Sex", "Family")
  for (k in c(50, 120)) {
    msgs <- list()
    m <- withCallingHandlers(anonymise(d, k = k, vars = c("Age", "Fare"), strata = strata,
                                       small_strata = "merge", check_identifiers = FALSE),
                             detanon_message_merge = function(c) {
                               msgs[[length(msgs) + 1L]] <<- c
                               invokeRestart("muffleMessage")
                             })
    expect_length(msgs, 1L)
    txt <- conditionMessage(msgs[[1L]])
    expect_false(grepl("\n.", txt)) # a single line
    changed <- vapply(strata, function(v) sum(as.character(m[[v]]) != as.character(d[[v]])), integer(1))
    expect_identical(msgs[[1L]]$changed, changed, info = k)
    moved <- sum(Reduce(`|`, lapply(strata, function(v) as.character(m[[v]]) != as.character(d[[v]]))))
    expect_identical(release_info(m)$counts$n_moved, moved)
    expect_identical(sum(msgs[[1L]]$moves$n), moved)
    n_from <- nrow(unique(msgs[[1L]]$moves[paste0("from_", strata)]))
    expect_match(txt, sprintf("moved %d records of %d strata smaller than k = %d", moved, n_from, k), fixed = TRUE)
    for (v in strata[changed > 0L]) expect_match(txt, sprintf("`%s` of %d record", v, changed[[v]]), fixed = TRUE)
  }
})

test_that("the merge distance is the one z-scale: a column's units, however small, do not matter", {
  set.seed(3)
  n <- 60
  d <- data.frame(g = c(rep("a", 20), rep("b", 20), rep("c", 18), "d", "d"), x = stats::rnorm(n),
                  t = stats::rnorm(n) * 1e-300, const = 2)
  d$t[59:60] <- c(5e-300, 5.2e-300)
  d$x[59:60] <- c(0, 0.1)
  merged <- function(data) suppressMessages(merge_small_strata(data, vars = c("x", "t", "const"), strata = "g", k = 5))
  # t in ordinary units (an exact power-of-two multiple): the same moves
  r <- merged(d)
  r2 <- merged(transform(d, t = t * 2^500 * 2^500))
  expect_identical(r$g, r2$g)
  # the tiny column decides here: without it, stratum d goes elsewhere
  expect_false(identical(r$g, merged(transform(d, t = 0))$g))
  # and anonymise(small_strata = "merge") moves the same records
  a <- suppressMessages(anonymise(d, vars = c("x", "t", "const"), strata = "g", k = 5, small_strata = "merge",
                                  check_identifiers = FALSE, nthreads = 1))
  expect_identical(a$g, r$g)
})
