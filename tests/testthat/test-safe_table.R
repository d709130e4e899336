# Slow reference: is a suppressed entry of the table with totals determined by the
# published entries? Unknowns are the suppressed entries; equations are "cells of a row
# add up to its total" and the same for columns (totals included as a row and a column).
determined_entries <- function(true, supp) {
  nr <- nrow(true)
  nc <- ncol(true)
  unk <- which(supp)
  eqs <- list()
  for (i in seq_len(nr)) {
    coef <- matrix(0, nr, nc)
    if (i < nr) { coef[i, -nc] <- 1; coef[i, nc] <- -1 } else { coef[nr, -nc] <- 1; coef[nr, nc] <- -1 }
    eqs[[length(eqs) + 1L]] <- coef
  }
  for (j in seq_len(nc)) {
    coef <- matrix(0, nr, nc)
    coef[-nr, j] <- 1
    coef[nr, j] <- -1
    eqs[[length(eqs) + 1L]] <- coef
  }
  A <- do.call(rbind, lapply(eqs, function(e) e[unk]))
  dim(A) <- c(length(eqs), length(unk))
  r <- qr(A)$rank
  vapply(seq_along(unk), function(j) {
    e <- numeric(length(unk)); e[j] <- 1
    qr(rbind(A, e))$rank == r
  }, logical(1))
}

wide <- function(tab, what = "n") {
  v <- names(tab)[1:2]
  r <- unique(tab[[v[1]]]); cl <- unique(tab[[v[2]]])
  matrix(tab[[what]], length(r), length(cl), dimnames = list(r, cl))
}

true_wide <- function(data, vars) {
  t <- table(lapply(data[vars], function(x) addNA(if (is.factor(x)) x else factor(x), ifany = TRUE)))
  unclass(addmargins(t))
}

# subtraction attack: a row or column (with its total) holding exactly one suppressed entry
subtraction_attack <- function(pub) {
  nr <- nrow(pub); nc <- ncol(pub)
  rec <- list()
  for (i in seq_len(nr)) if (sum(is.na(pub[i, ])) == 1L) {
    j <- which(is.na(pub[i, ]))
    val <- if (j == nc) sum(pub[i, -nc]) else pub[i, nc] - sum(pub[i, -c(j, nc)])
    rec[[length(rec) + 1L]] <- c(i, j, val)
  }
  for (j in seq_len(nc)) if (sum(is.na(pub[, j])) == 1L) {
    i <- which(is.na(pub[, j]))
    val <- if (i == nr) sum(pub[-nr, j]) else pub[nr, j] - sum(pub[-c(i, nr), j])
    rec[[length(rec) + 1L]] <- c(i, j, val)
  }
  do.call(rbind, rec)
}

test_that("a primarily suppressed cell is recovered by subtraction, but not after secondary suppression", {
  d <- data.frame(a = rep(c("x", "y", "z"), c(30, 30, 30)),
                  b = c(rep(c("p", "q", "r"), c(3, 13, 14)), rep(c("p", "q", "r"), c(10, 10, 10)),
                        rep(c("p", "q", "r"), c(9, 11, 10))))
  truth <- true_wide(d, c("a", "b"))
  # primary suppression only: the cell x/p (3) can be recovered from its row total
  primary_only <- truth
  primary_only[truth <= 5] <- NA
  att <- subtraction_attack(primary_only)
  expect_false(is.null(att))
  expect_equal(unname(att[1, 3]), 3)
  tab <- safe_table(d, c("a", "b"))
  pub <- wide(tab)
  expect_true(is.na(pub["x", "p"]))
  expect_gt(sum(tab$status == "secondary"), 0)
  expect_null(subtraction_attack(pub))
  expect_false(any(determined_entries(truth, is.na(pub))))
  # published values are the true counts
  expect_equal(pub[!is.na(pub)], truth[!is.na(pub)])
})

test_that("secondary suppression leaves no suppressed cell determined (random tables, slow reference)", {
  set.seed(42)
  for (it in 1:40) {
    nr <- sample(1:5, 1); nc <- sample(1:5, 1)
    n <- sample(5:80, 1)
    p <- rexp(nr * nc)^2
    cell <- sample.int(nr * nc, n, replace = TRUE, prob = p)
    d <- data.frame(a = factor((cell - 1) %% nr, levels = 0:(nr - 1)),
                    b = factor((cell - 1) %/% nr, levels = 0:(nc - 1)))
    thr <- sample(c(0, 2, 5), 1)
    zeros <- sample(c(TRUE, FALSE), 1)
    tab <- safe_table(d, c("a", "b"), k = thr + 1, zeros = zeros)
    truth <- true_wide(d, c("a", "b"))
    pub <- wide(tab)
    st <- wide(tab, "status")
    unsafe <- truth <= thr & (zeros | truth > 0)
    expect_true(all(is.na(pub[unsafe])))
    expect_true(all(st[unsafe] == "primary"))
    expect_equal(pub[!is.na(pub)], truth[!is.na(pub)])
    expect_null(subtraction_attack(pub))
    if (any(is.na(pub))) expect_false(any(determined_entries(truth, is.na(pub))), info = paste("iteration", it))
  }
})

test_that("one-way tables never leave a single suppressed entry", {
  d <- data.frame(a = rep(c("u", "v", "w"), c(2, 20, 30)))
  tab <- safe_table(d, "a")
  expect_equal(tab$status, c("primary", "secondary", "", ""))
  expect_equal(tab$n, c(NA, NA, 30, 52))
  one <- safe_table(data.frame(a = c("u", "u")), "a")
  expect_true(all(is.na(one$n)))
  none <- safe_table(data.frame(a = rep(c("u", "v"), 10)), "a")
  expect_equal(none$n, c(10, 10, 20))
  expect_equal(none$status, c("", "", ""))
})

test_that("rounding and Barnardisation", {
  d <- titanic_paper()
  r <- safe_table(d, c("Pclass", "Sex"), method = "round", base = 5)
  truth <- true_wide(d, c("Pclass", "Sex"))
  expect_equal(as.vector(wide(r)), 5 * floor(as.vector(truth) / 5 + 0.5))
  expect_true(all(wide(r) %% 5 == 0))
  set.seed(1)
  b1 <- safe_table(d[d$Age > 50, ], c("Pclass", "Sex"), method = "barnardise", prob = 0.5)
  set.seed(1)
  b2 <- safe_table(d[d$Age > 50, ], c("Pclass", "Sex"), method = "barnardise", prob = 0.5)
  expect_identical(b1, b2)
  t2 <- true_wide(d[d$Age > 50, ], c("Pclass", "Sex"))
  w <- wide(b1)
  inner <- w[-nrow(w), -ncol(w)]
  expect_true(all(abs(inner - t2[-nrow(t2), -ncol(t2)]) <= 1))
  expect_true(all(inner[t2[-nrow(t2), -ncol(t2)] == 0] == 0))
  expect_equal(unname(w[nrow(w), -ncol(w)]), unname(colSums(inner)))
  expect_equal(unname(w[-nrow(w), ncol(w)]), unname(rowSums(inner)))
  set.seed(3)
  b0 <- safe_table(d, c("Pclass", "Sex"), method = "barnardise", prob = 0)
  expect_equal(wide(b0), truth, ignore_attr = TRUE)
})

test_that("plan checks report the population rule", {
  d <- titanic_paper()
  tab <- safe_table(d, c("Pclass", "Sex"), plan = 2, population = 800)
  pc <- attr(tab, "plan_check")
  expect_true(pc$conforms)
  expect_match(pc$items$requirement[1], "<= 1,000")
  t1 <- safe_table(d, c("Pclass", "Sex"), method = "none", plan = 1, population = 900)
  pc1 <- attr(t1, "plan_check")
  expect_false(pc1$conforms)
  expect_match(pc1$items$detail[1], "use plan 2")
  t4 <- safe_table(d, c("Pclass", "Sex"), method = "none", plan = 4)
  expect_equal(attr(t4, "plan_check")$items$status[1], "not checked")
  expect_false(attr(t4, "plan_check")$conforms)
  t5 <- safe_table(d, c("Pclass", "Sex"), method = "none", plan = 5, population = 50)
  expect_equal(attr(t5, "plan_check")$items$status[3], "fail")
  t5b <- safe_table(d, c("Pclass", "Sex"), k = 4, plan = 5, population = 50)
  expect_equal(attr(t5b, "plan_check")$items$status[3], "fail")
  single <- safe_table(data.frame(a = c("x", rep("y", 5))), "a", method = "none", plan = 4, population = 1e5)
  expect_equal(attr(single, "plan_check")$items$status[2], "fail")
  expect_output(print(tab), "NHS ISB 1523 plan 2")
})

test_that("suppressed values are not stored anywhere in the result", {
  d <- data.frame(a = rep(c("x", "y"), c(3, 40)), b = rep(c("p", "q"), c(20, 23)))
  tab <- safe_table(d, c("a", "b"))
  expect_true(all(is.na(tab$n[tab$status != ""])))
  expect_setequal(names(attributes(tab)), c("names", "row.names", "class", "method", "k"))
  expect_output(print(tab), "X = suppressed")
})

test_that("NA is a category and the totals label avoids clashes", {
  d <- data.frame(a = c(NA, NA, "Total", rep("y", 10)))
  tab <- safe_table(d, "a", method = "none")
  expect_equal(tab$a, c("Total", "y", NA, "(Total)"))
  expect_equal(tab$n, c(1, 10, 2, 13))
})

test_that("safe_table() rejects bad input", {
  d <- titanic_paper()
  expect_error(safe_table(d), "`strata` is missing")
  expect_error(safe_table(d, "nope"), "`strata` names columns that are not in the data")
  expect_error(safe_table(d, c("Pclass", "Sex", "Family")), "handles one or two `strata`")
  expect_error(safe_table(d, "Sex", "round"), "`method` now comes after `k`; write `method = \"round\"`")
  # every method of the signature is recognised in `k`'s place and accepted as `method`
  expect_identical(eval(formals(safe_table)$method), detanon:::safe_table_methods)
  for (mth in detanon:::safe_table_methods) {
    expect_error(safe_table(d, "Sex", mth), paste0("write `method = \"", mth, "\"`"))
    expect_s3_class(safe_table(d, "Sex", method = mth), "detanon_safe_table")
  }
  expect_error(safe_table(d, "Sex", k = 0), "`k` must be a single whole number >= 1")
  expect_error(safe_table(d, "Sex", method = "hide"), "`method` must be one of")
  expect_error(safe_table(d, "Sex", threshold = -1), "`threshold` must be a single whole number")
  expect_error(safe_table(d, "Sex", base = 0), "`base`")
  expect_error(safe_table(d, "Sex", prob = 2), "`prob`")
  expect_error(safe_table(d, "Sex", plan = 3), "Plans 3 and 6 are individual-level")
  expect_error(safe_table(d, "Sex", zeros = NA), "`zeros` must be TRUE or FALSE")
  expect_error(safe_table(list(a = 1), "a"), "`data` must be a data frame")
})

test_that("two suppressions per row and column are not enough: a bridge is still determined", {
  # two 2x2 cycles joined by one extra suppressed cell: every row and column of the
  # suppressed pattern has >= 2 entries, yet the joining cell is determined
  true <- matrix(c(8, 9, 0, 0, 6, 7, 7, 0, 0, 7, 9, 7, 0, 0, 8, 9), 4, 4)
  ext <- unclass(addmargins(as.table(true)))
  supp <- matrix(FALSE, 5, 5)
  supp[1:2, 1:2] <- TRUE
  supp[3:4, 3:4] <- TRUE
  supp[2, 3] <- TRUE
  expect_true(all(rowSums(supp[1:4, ]) %in% c(0, 2, 3)))
  det <- determined_entries(ext, supp)
  expect_equal(which(supp)[det], 12L) # the cell [2, 3]
  e <- which(supp)
  br <- detanon:::graph_bridges(row(supp)[e], 5L + col(supp)[e], 10L)
  expect_equal(e[br], 12L)
  fixed <- detanon:::secondary_suppression(ext, supp, row(ext) < 5 & col(ext) < 5)
  expect_false(any(determined_entries(ext, fixed)))
})

test_that("degenerate tables: no records, one row, one column, all missing", {
  expect_error(safe_table(data.frame(a = character()), "a"), "`data` has no records")
  # one row: the column totals equal the cells, so they are suppressed with them
  one_row <- safe_table(data.frame(a = "x", b = rep(c("p", "q"), c(18, 2))), c("a", "b"))
  expect_equal(wide(one_row), matrix(c(NA, NA, NA, NA, 20, 20), 2, dimnames = list(c("x", "Total"), c("p", "q", "Total"))))
  one_col <- safe_table(data.frame(a = rep(c("x", "y"), c(18, 2)), b = "p"), c("a", "b"))
  expect_equal(as.vector(wide(one_col)), c(NA, NA, 20, NA, NA, 20))
  na <- safe_table(data.frame(a = c(NA, NA)), "a")
  expect_true(all(is.na(na$n)))
  lg <- safe_table(data.frame(a = rep(c(TRUE, FALSE), 10)), "a")
  expect_equal(lg$n, c(10, 10, 20))
})

test_that("the old names vars and threshold still work, with a deprecation warning", {
  d <- titanic_paper()
  new <- safe_table(d, c("Pclass", "Family"), k = 6)
  expect_identical(safe_table(d, c("Pclass", "Family")), new)
  w <- character()
  old <- withCallingHandlers(safe_table(d, vars = c("Pclass", "Family"), threshold = 5),
                             detanon_warning_deprecated = function(cnd) {
                               w <<- c(w, conditionMessage(cnd))
                               invokeRestart("muffleWarning")
                             })
  expect_identical(old, new)
  expect_length(w, 2L)
  expect_match(w[1], "`vars` is deprecated; use `strata`")
  expect_match(w[2], "`threshold` is deprecated; use `k`")
  expect_warning(safe_table(d, "Sex", threshold = 2), "`threshold = 2` is `k = 3`")
  expect_error(suppressWarnings(safe_table(d, "Sex", k = 3, threshold = 2)), "give `k` only")
  # the boundary: a cell of exactly k conforms, k - 1 is suppressed
  x <- data.frame(a = rep(c("u", "v", "w"), c(6, 5, 20)))
  tab <- safe_table(x, "a", k = 6)
  expect_identical(tab$status[tab$a == "v"], "primary")
  expect_false(tab$status[tab$a == "u"] == "primary")
})
