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
