# intruder() and the intruder's view of a pair (R/intruder.R).

test_that("intruder() validates and prints what the intruder holds", {
  it <- intruder(held = "Survived", p = 0.1, knows = "recipe")
  expect_s3_class(it, "detanon_intruder")
  expect_equal(it$p, 0.1)
  expect_output(print(it), "10% of the originals")
  expect_output(print(it), "also Survived")
  expect_output(print(intruder(held = "all")), "every other released column")
  expect_error(intruder(p = 0), class = "detanon_error_argument")
  expect_error(intruder(p = 1.5), class = "detanon_error_argument")
  expect_error(intruder(held = 1), class = "detanon_error_argument")
  expect_error(intruder(vars = ""), class = "detanon_error_argument")
  expect_error(intruder(knows = "all"), class = "detanon_error_argument")
})

test_that("`keys`, the old name of `held`, still works for one release and warns", {
  expect_warning(old <- intruder(c("Age", "Fare"), "Sex", keys = "Survived"),
                 "intruder\\(\\): `keys` is deprecated; use `held`", class = "detanon_warning_deprecated")
  expect_identical(old, intruder(c("Age", "Fare"), "Sex", held = "Survived"))
  expect_error(suppressWarnings(intruder(held = "a", keys = "a")), "give `held` only",
               class = "detanon_error_argument")
  expect_error(suppressWarnings(intruder(keys = 1)), "`held` must be NULL or a character vector",
               class = "detanon_error_argument")
  # the same attack with either name
  d <- titanic_paper()[-1]
  m <- anonymise(d, vars = c("Age", "Fare"), strata = "Sex", k = 3)
  expect_identical(suppressWarnings(attack_linkage(d, m, intruder = old, seed = 1)),
                   attack_linkage(d, m, intruder = intruder(c("Age", "Fare"), "Sex", held = "Survived"), seed = 1))
})

test_that("the view: held = 'all', numeric and categorical held columns, cells by value", {
  bd <- battery_data(60, seed = 1)
  o <- bd$o; m <- bd$m
  o$f <- factor(o$s, levels = c("w", "v", "u")) # a factor key released as character
  m$f <- as.character(o$f)
  s <- detanon:::intruder_view(o, m, intruder(vars = c("a", "b"), strata = "g", held = "all"))
  expect_setequal(s$key_num, c("c", "y"))
  expect_setequal(s$key_cat, c("s", "f"))
  v <- ref_view(o, m, c("a", "b"), "g", c("s", "f"))
  # the same partition as the reference's cells, on both sides
  both_s <- c(s$cell_o, s$cell_m)
  both_r <- c(v$cell_o, v$cell_m)
  expect_equal(as.integer(factor(both_s, unique(both_s))), as.integer(factor(both_r, unique(both_r))))
  changed <- ifelse(is.na(o$s) | is.na(m$s), is.na(o$s) != is.na(m$s), o$s != m$s)
  expect_true(anyNA(o$s))
  expect_equal(s$cell_o != s$cell_m, changed)
  # a share p of known records, drawn with the seed and leaving the caller's stream alone
  set.seed(1); r1 <- stats::runif(1)
  set.seed(1)
  k1 <- detanon:::intruder_view(o, m, intruder(vars = c("a", "b"), strata = "g", p = 0.25), seed = 3)$known
  r2 <- stats::runif(1)
  expect_equal(r1, r2)
  expect_equal(sum(k1), 15L)
  expect_identical(k1, detanon:::intruder_view(o, m, intruder(vars = c("a", "b"), strata = "g", p = 0.25), seed = 3)$known)
  expect_error(detanon:::intruder_view(o, m, intruder(vars = c("a", "b"), strata = "g", held = "a")),
               class = "detanon_error_column")
  expect_error(detanon:::intruder_view(o, m, intruder(vars = c("a", "b"), strata = "g", held = "zz")),
               class = "detanon_error_column")
})

test_that("intruder_published(): every published column not masked or sensitive, matched exactly", {
  bd <- battery_data(60, seed = 1)
  o <- bd$o; m <- bd$m
  it <- intruder_published(vars = c("a", "b"), strata = "g")
  expect_s3_class(it, "detanon_intruder")
  expect_identical(it$keys, "published")
  expect_output(print(it), "every published column not masked, exactly")
  s <- detanon:::intruder_view(o, m, it)
  # every other column, numeric ones (c, y) too, held exactly: none joins the distance
  expect_setequal(s$key_cat, c("c", "s", "y"))
  expect_identical(s$key_num, character())
  expect_identical(s$intruder$held, c("c", "s", "y"))
  # a slow, plain transcription of the key matching: cells by pasting the values as text
  # (numbers with 17 significant digits: exact, so 0.1 + 0.2 and 0.3 are two values)
  key <- function(d) paste(d$g, d$c, d$s, sprintf("%.17g", d$y), sep = "\r")
  ko <- key(o); km <- key(m)
  lev <- unique(c(ko, km))
  both_s <- c(s$cell_o, s$cell_m)
  both_r <- c(match(ko, lev), match(km, lev))
  expect_equal(as.integer(factor(both_s, unique(both_s))), as.integer(factor(both_r, unique(both_r))))
  # a numeric column the release changed is a key it changed: the cells differ
  m2 <- m
  m2$y <- m2$y + 0.01
  s2 <- detanon:::intruder_view(o, m2, it)
  expect_true(all(s2$cell_o != s2$cell_m))
  # sensitive columns, of the intruder or of the attack, are not keys
  s3 <- detanon:::intruder_view(o, m, intruder_published(vars = c("a", "b"), strata = "g", sensitive = "y"),
                                sensitive = "s")
  expect_identical(s3$key_cat, "c")
  expect_output(print(s3$intruder), "not sensitive \\(y\\), exactly: c")
  # a column only in the release is not one the intruder can hold
  m3 <- m
  m3$extra <- 1
  expect_identical(detanon:::intruder_view(o, m3, it)$key_cat, c("c", "s", "y"))
  # the default of the view is the published intruder
  expect_identical(detanon:::intruder_view(o, m, NULL)$intruder$keys, "published")
  # a missing value is a value of its own, as for categorical keys
  expect_true(anyNA(o$s))
  expect_error(intruder_published(sensitive = 1), class = "detanon_error_argument")
  expect_error(intruder_published(sensitive = ""), class = "detanon_error_argument")
  expect_error(intruder_published(p = 2), class = "detanon_error_argument")
  expect_snapshot(error = TRUE, intruder_published(sensitive = NA_character_))
})

# The linkage of attack_linkage() with suppressed keys, by a plain loop: the candidates of a
# query are the records of the other side whose categorical keys `cols` equal its own,
# except where the released value is suppressed (missing where its own original has a
# value), which matches any value; a value missing on both sides is a value of its own.
# released -> original: the known originals; original -> released: every released record.
ref_wildcard_linkage <- function(o, r, vars, cols, direction, m, known = rep(TRUE, nrow(o))) {
  mu <- colMeans(o[vars])
  sdv <- apply(o[vars], 2L, stats::sd)
  zo <- sweep(sweep(as.matrix(o[vars]), 2L, mu), 2L, sdv, "/")
  zm <- sweep(sweep(as.matrix(r[vars]), 2L, mu), 2L, sdv, "/")
  n <- nrow(o)
  agree <- function(rel, orig) {
    all(vapply(cols, function(v) {
      x <- r[[v]][rel]
      y <- o[[v]][orig]
      (is.na(x) && !is.na(o[[v]][rel])) || (is.na(x) && is.na(y)) || (!is.na(x) && !is.na(y) && x == y)
    }, NA))
  }
  success <- success_m <- confidence <- rep(NA_real_, n)
  for (i in which(known)) {
    if (direction == "released") {
      cand <- which(known & vapply(seq_len(n), function(j) agree(i, j), NA))
      d <- vapply(cand, function(j) sqrt(sum((zm[i, ] - zo[j, ])^2)), 0)
    } else {
      cand <- which(vapply(seq_len(n), function(j) agree(j, i), NA))
      d <- vapply(cand, function(j) sqrt(sum((zo[i, ] - zm[j, ])^2)), 0)
    }
    if (i %in% cand) {
      own <- d[cand == i]
      lt <- sum(d < own)
      le <- sum(d <= own)
      success[i] <- if (lt >= 1) 0 else 1 / (le - lt)
      success_m[i] <- if (lt >= m) 0 else min(1, (m - lt) / (le - lt))
    } else {
      success[i] <- success_m[i] <- 0
    }
    ds <- sort(d)
    confidence[i] <- if (!length(d)) 0 else if (length(d) == 1L) 1 else if (ds[2L] == 0) 0 else 1 - ds[1L] / ds[2L]
  }
  list(success = success, success_m = success_m, confidence = confidence)
}

test_that("linkage counts a suppressed released key as matching any value, in both directions", {
  # record 1's region is suppressed: only a wildcard puts it beside its original (the
  # exact cell "a, NA" holds no original), and makes it a candidate for the people of "a"
  o <- data.frame(g = c("a", "a", "a", "b", "b", "b"), region = c("n", "s", "s", "n", "n", "s"),
                  x = c(1, 5, 9, 2, 6, 10))
  r <- o
  r$x <- c(1.2, 5.3, 8.6, 2.4, 5.5, 10.2)
  r$region[1] <- NA
  it <- intruder_published(vars = "x", strata = "g")
  rel <- attack_linkage(o, r, intruder = it, direction = "released", control = FALSE)
  expect_identical(rel$success[1], 1)
  ref <- ref_wildcard_linkage(o, r, "x", c("g", "region"), "released", 3)
  expect_equal(rel$success, ref$success, tolerance = 1e-12)
  expect_equal(rel$confidence, ref$confidence, tolerance = 1e-12)
  ori <- attack_linkage(o, r, intruder = it, direction = "original", control = FALSE)
  expect_identical(ori$success[1], 1)
  ref <- ref_wildcard_linkage(o, r, "x", c("g", "region"), "original", 3)
  expect_equal(ori$success, ref$success, tolerance = 1e-12)
  expect_equal(ori$success_m, ref$success_m, tolerance = 1e-12)
  expect_equal(ori$confidence, ref$confidence, tolerance = 1e-12)
  # record 3 (region "s") now has record 1 as a candidate too, nearer than record 2
  expect_lt(ref$confidence[2], 1)
})

test_that("wildcard linkage equals the plain loop on random suppressions, and changes nothing without them", {
  set.seed(42)
  n <- 120
  o <- data.frame(g = sample(c("a", "b"), n, TRUE), k1 = sample(c("p", "q", "r"), n, TRUE),
                  k2 = sample(1:3, n, TRUE), x = stats::rnorm(n), y = stats::rnorm(n))
  o$k1[sample(n, 8)] <- NA # missing in the originals too: a value of its own, not suppressed
  r <- o
  r$x <- r$x + stats::rnorm(n, sd = 0.3)
  r$y <- r$y + stats::rnorm(n, sd = 0.3)
  it <- intruder_published(vars = c("x", "y"), strata = "g", p = 0.7)
  none <- lapply(c("released", "original"), function(dir) {
    attack_linkage(o, r, intruder = it, direction = dir, m = 2, control = FALSE, seed = 3)
  })
  # no suppressed key: the exact cells are the whole answer
  s <- detanon:::intruder_view(o, r, it, seed = 3)
  expect_null(detanon:::wildcard_linkage(s, s$zo, s$zm, seq_len(n), FALSE, 2L))
  r$k1[sample(n, 15)] <- NA
  r$k2[sample(n, 10)] <- NA
  r$k1[5] <- r$k2[5] <- NA # both keys suppressed
  known <- detanon:::intruder_view(o, r, it, seed = 3)$known
  for (dir in c("released", "original")) {
    got <- attack_linkage(o, r, intruder = it, direction = dir, m = 2, control = FALSE, seed = 3)
    ref <- ref_wildcard_linkage(o, r, c("x", "y"), c("g", "k1", "k2"), dir, 2, known)
    expect_equal(got$success, ref$success, tolerance = 1e-12, label = dir)
    expect_equal(got$success_m, ref$success_m, tolerance = 1e-12, label = dir)
    expect_equal(got$confidence, ref$confidence, tolerance = 1e-12, label = dir)
    # the records without suppressed keys whose candidates did not change keep their results
    old <- none[[match(dir, c("released", "original"))]]
    same <- !is.na(ref$success) & !is.na(r$k1) & !is.na(r$k2)
    if (dir == "released") expect_identical(got$success[same], old$success[same])
  }
})
