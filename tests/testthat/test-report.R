# release_report(): one self-contained HTML file that never shows an original value of a
# masked variable or a stratum below k; write_release() and the hash that ties them.

# Synthetic data whose masked variables have distinctive values (five integer digits and
# decimals, so any printed form of them is recognisable), a categorical level held by one
# record ("Uniq") and a combination of two common levels held by two records (a3 x Q).
leak_data <- function(n = 400, seed = 11) {
  set.seed(seed)
  A <- sample(c("a1", "a2", "a3"), n, replace = TRUE)
  B <- sample(c("P", "R"), n, replace = TRUE)
  B[A == "a3"] <- "P"
  B[which(A == "a3")[1:2]] <- "Q"
  B[which(A == "a1")[1:40]] <- "Q"
  B[which(A == "a2")[1]] <- "Uniq"
  data.frame(A = A, B = B,
             x1 = round(stats::runif(n, 10000, 99999), 3),
             x2 = round(stats::runif(n, 20000, 90000), 2),
             y = round(stats::rnorm(n), 3), stringsAsFactors = FALSE)
}

report_fixture <- local({
  cache <- NULL
  function() {
    if (is.null(cache)) {
      d <- leak_data()
      masked <- anonymise(d, vars = c("x1", "x2"), strata = "A", k = 3, check_identifiers = FALSE)
      file <- tempfile(fileext = ".html")
      f <- release_report(d, masked, file, strata = c("A", "B"), formula = y ~ A + B + x1 + x2,
                          roles = c(A = "occupation"))
      cache <<- list(d = d, masked = masked, file = f, txt = report_text(f))
    }
    cache
  }
})

test_that("the report is one self-contained HTML file with every section", {
  x <- report_fixture()
  txt <- x$txt
  expect_true(file.exists(x$file))
  expect_true(startsWith(txt, "<!DOCTYPE html>"))
  # no external assets: no links, scripts or remote images
  expect_false(grepl("<link|<script|src=\"http|url\\(", txt))
  imgs <- regmatches(txt, gregexpr("<img [^>]*src=\"data:image/png;base64,", txt))[[1]]
  expect_gte(length(imgs), 4L) # two margins, propensity scores, coefficients
  for (id in c("settings", "identifiers", "strata", "nhs", "risk", "utility", "policy")) {
    expect_has(txt, sprintf("id=\"%s\"", id))
  }
  expect_false(grepl("id=\"frontier\"", txt, fixed = TRUE)) # not a tune_release() result
  # the battery: every attack with its intruder and what it does not cover
  bat <- risk_battery(x$d, x$masked, vars = c("x1", "x2"), strata = c("A", "B"), seed = 1)
  for (a in bat$attacks) {
    expect_has(txt, html_escape_test(a$attack))
    expect_has(txt, html_escape_test(paste(format(a$intruder), collapse = "; and ")))
    expect_has(txt, html_escape_test(a$not_covered))
  }
  # the settings and the version
  expect_has(txt, paste0("detanon ", utils::packageVersion("detanon")))
  expect_has(txt, "<td>small_strata</td><td>fail</td>")
  # the assess() measures, as computed by assess()
  a <- assess(x$d, x$masked, vars = c("x1", "x2"), strata = c("A", "B"), deterministic = TRUE, seed = 1)
  expect_has(txt, sprintf("%.4f (%d records)", a$rmd$risk1, a$rmd$n_risk1))
  expect_has(txt, sprintf("%.4f (blind guess %.4f)", a$linkage$rate, a$linkage$blind_rate))
})

test_that("no original value of a masked variable appears in the report, in any printed form", {
  x <- report_fixture()
  leaked <- c(report_leaks(x$txt, x$d$x1), report_leaks(x$txt, x$d$x2))
  expect_identical(leaked, character())
  # the scan can fail: a report with one original value written in it is caught, in
  # several printed forms
  v <- x$d$x1[17]
  for (form in c(format(v), sprintf("%.1f", v), format(round(v)), format(v, big.mark = ","),
                 format(v, digits = 6, scientific = TRUE))) {
    expect_gte(length(report_leaks(paste(x$txt, "<td>", form, "</td>"), x$d$x1)), 1L)
  }
})

test_that("no stratum below k is listed or named, and rare factor levels are left out", {
  x <- report_fixture()
  txt <- x$txt
  tab <- strata_table(x$masked, c("A", "B"), k = 3)
  expect_true(any(tab$below_k)) # the fixture has small strata, so the check means something
  # the level held by one record appears nowhere, not even as a model coefficient
  expect_false(grepl("Uniq", txt, fixed = TRUE))
  # the small combination of two common levels is not a row of any table
  small <- as.data.frame(unclass(tab))[tab$below_k, ]
  for (i in seq_len(nrow(small))) {
    row <- sprintf("<td>%s</td><td>%s</td>", small$A[i], small$B[i])
    expect_false(grepl(row, txt, fixed = TRUE), label = row)
  }
  # the large strata are listed, with their counts
  big <- as.data.frame(unclass(tab))[!tab$below_k, ]
  for (i in seq_len(nrow(big))) {
    expect_has(txt, sprintf("<td>%s</td><td>%s</td><td>%d</td>", big$A[i], big$B[i], big$n[i]))
  }
  expect_match(txt, sprintf("%d strata below k, holding %d records", sum(tab$below_k), sum(tab$n[tab$below_k])),
               fixed = TRUE)
  # the model keeps the coefficients of common levels
  expect_has(txt, "<td>BQ</td>")
  expect_has(txt, "1 coefficient resting on fewer than 3 original records")
})

test_that("rare_terms() hides the coefficients of rare levels, also in interactions", {
  d <- data.frame(g = c("a", "a", "a", "b"), h = c(TRUE, TRUE, FALSE, FALSE))
  expect_identical(rare_terms(c("(Intercept)", "gb", "ga", "gb:hTRUE", "hTRUE"), d, 3),
                   c(FALSE, TRUE, FALSE, TRUE, TRUE))
  d$n <- c(1L, 1L, 1L, 2L)
  expect_identical(rare_terms(c("factor(n)2", "as.factor(n)2", "n", "factor(g)b"), d, 3),
                   c(TRUE, TRUE, FALSE, TRUE))
})

test_that("the Titanic report shows no distinctive original Age or Fare value", {
  d <- titanic_paper()[-1]
  masked <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  f <- release_report(d, masked, tempfile(fileext = ".html"),
                      formula = Survived ~ Pclass + Sex + Age + Fare, family = binomial())
  txt <- report_text(f)
  expect_identical(c(report_leaks(txt, d$Age, 4L), report_leaks(txt, d$Fare, 4L)), character())
  # (the scan finds a distinctive Fare when it is there)
  expect_length(report_leaks(paste(txt, "71.2833"), d$Fare, 4L), 1L)
})

test_that("the hash is that of the file write_release() writes, or of the published file", {
  skip_if_not_installed("openssl")
  x <- report_fixture()
  csv <- write_release(x$masked, tempfile(fileext = ".csv"), seed = 5)
  sha <- sha256_file(csv)
  f1 <- release_report(x$d, x$masked, tempfile(fileext = ".html"), strata = "A", release_seed = 5)
  expect_identical(attr(f1, "sha256"), sha)
  expect_has(paste(readLines(f1), collapse = "\n"), sha)
  # the seed is not shown
  expect_false(grepl("release_seed = 5", report_text(f1), fixed = TRUE))
  # without a file or a seed, the hash matches no file, and the report says so
  expect_false(identical(attr(x$file, "sha256"), sha))
  expect_has(x$txt, "fresh random row order: it matches no published file")
  # the CSV is the release: same values, no row names, no metadata
  back <- utils::read.csv(csv, stringsAsFactors = FALSE)
  expect_identical(names(back), names(x$masked))
  o <- do.call(order, unname(as.list(x$masked)))
  ob <- do.call(order, unname(as.list(back)))
  for (v in names(back)) expect_equal(back[[v]][ob], x$masked[[v]][o], tolerance = 1e-14)
  expect_false(any(grepl("detanon|fingerprint", readLines(csv))))
  # a published file of another form is hashed byte for byte
  rds <- tempfile(fileext = ".rds")
  saveRDS(x$masked, rds)
  f2 <- release_report(x$d, x$masked, tempfile(fileext = ".html"), strata = "A", release_file = rds)
  expect_identical(attr(f2, "sha256"), sha256_file(rds))
  expect_has(report_text(f2), basename(rds))
  # another release gives another hash
  m2 <- anonymise(x$d, vars = c("x1", "x2"), strata = "A", k = 5, check_identifiers = FALSE)
  expect_false(identical(release_hash(m2, seed = 5)$value, sha))
})

test_that("write_release() writes the rows in a random order, never the input's (issue 36, item 1)", {
  x <- report_fixture()
  m <- x$masked
  n <- nrow(m)
  # a column of distinct values in no order, to find each written row
  set.seed(4)
  m$u <- sample.int(1e6, n) / 8
  pos <- function(f) match(utils::read.csv(f)$u, m$u)
  set.seed(123)
  before <- .Random.seed
  f1 <- write_release(m, tempfile(fileext = ".csv"), seed = 7)
  f2 <- write_release(m, tempfile(fileext = ".csv"), seed = 7)
  f3 <- write_release(m, tempfile(fileext = ".csv"))
  f4 <- write_release(m, tempfile(fileext = ".csv"))
  # the caller's random stream is untouched, with a seed and without
  expect_identical(.Random.seed, before)
  p1 <- pos(f1)
  expect_setequal(p1, seq_len(n))
  # the same seed, the same file; fresh orders differ from it and from each other
  expect_identical(readBin(f1, "raw", 1e6), readBin(f2, "raw", 1e6))
  expect_false(identical(pos(f3), p1))
  expect_false(identical(pos(f3), pos(f4)))
  # the order is not the input's, nor close to it (few rows stay in place; a random
  # permutation keeps about one)
  for (p in list(p1, pos(f3))) {
    expect_lt(sum(p == seq_len(n)), 10)
    expect_lt(abs(stats::cor(p, seq_len(n))), 0.3)
  }
  # a permuted input is written in another order for the same seed: the order comes from
  # the seed, and only the custodian, who holds both, can undo it
  f5 <- write_release(m[rev(seq_len(n)), ], tempfile(fileext = ".csv"), seed = 7)
  expect_false(identical(readBin(f5, "raw", 1e6), readBin(f1, "raw", 1e6)))
  # no .Random.seed is created when there was none
  rm(".Random.seed", envir = globalenv())
  write_release(m, tempfile(fileext = ".csv"))
  write_release(m, tempfile(fileext = ".csv"), seed = 1)
  expect_false(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
})

test_that("write_release() warns of columns that restore the row order", {
  x <- report_fixture()
  m <- x$masked
  n <- nrow(m)
  f <- tempfile(fileext = ".csv")
  expect_no_warning(write_release(m, f, seed = 1))
  # the reported case, a row number, and variants: a shuffled id 1..n, an id from 0, and a
  # timestamp sorted in the order of the rows
  set.seed(2)
  for (col in list(seq_len(n), sample.int(n), seq_len(n) - 1L,
                   as.POSIXct("2024-01-01", tz = "UTC") + cumsum(stats::runif(n)))) {
    m2 <- m
    m2$rowid <- col
    expect_warning(write_release(m2, f, seed = 1), class = "detanon_warning_identifier")
  }
  # distinct values in no order are not flagged
  m2 <- m
  m2$z <- stats::rnorm(n)
  expect_no_warning(write_release(m2, f, seed = 1))
})

test_that("write_release() escapes formulas in text cells, not in numbers (issue 34, item 6)", {
  d <- data.frame(t = c("=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\ry", "a=b", NA),
                  f = factor(c("=1", "b", "c", "d", "e", "f", "g", "h")),
                  num = c(-1, -2.5, 3, 4, 5, 6, 7, NA), int = c(-1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L),
                  stringsAsFactors = FALSE)
  d[["=name"]] <- "v"
  f <- tempfile(fileext = ".csv")
  expect_warning(write_release(d, f, seed = 1), class = "detanon_warning_identifier") # `int` is sorted
  b <- utils::read.csv(f, stringsAsFactors = FALSE, check.names = FALSE, na.strings = "")
  o <- order(b$int)
  # (read.csv() reads a carriage return as a line end: that cell is checked in the bytes)
  expect_identical(b$t[o][-6L], c("'=HYPERLINK(\"http://x\")", "'+1+1", "'-2+3", "'@SUM(A1)", "'\tx", "a=b", NA))
  expect_true(grepl("\"'\ry\"", rawToChar(readBin(f, "raw", 1e4)), fixed = TRUE))
  expect_identical(b$f[o], c("'=1", "b", "c", "d", "e", "f", "g", "h"))
  expect_identical(b$num[o], d$num)
  expect_identical(b$int[o], d$int)
  expect_identical(names(b)[5L], "'=name")
  # numbers are written unquoted, negative ones included
  txt <- readLines(f)
  expect_true(any(grepl(",-2.5,2,\"v\"$", txt)))
  # the opt-out writes every text cell as it is
  expect_warning(write_release(d, f, seed = 1, escape_formulas = FALSE), class = "detanon_warning_identifier")
  b <- utils::read.csv(f, stringsAsFactors = FALSE, check.names = FALSE, na.strings = "")
  o <- order(b$int)
  expect_identical(b$t[o][-6L], d$t[-6L])
  expect_true(grepl("\"\ry\"", rawToChar(readBin(f, "raw", 1e4)), fixed = TRUE))
  expect_identical(b$f[o], as.character(d$f))
  expect_identical(names(b), names(d))
})

test_that("write_release() writes integer64 exactly (issue 34, item 6)", {
  skip_if_not_installed("bit64")
  d <- data.frame(a = bit64::as.integer64(c("9007199254740993", "-9007199254740993", NA, "1")), b = c(2, 1, 4, 3.5))
  f <- tempfile(fileext = ".csv")
  write_release(d, f, seed = 1)
  txt <- readLines(f)
  expect_setequal(txt[-1L], c("9007199254740993,2", "-9007199254740993,1", ",4", "1,3.5"))
})

test_that("a tune_release() result is reported with its frontier", {
  d <- titanic_paper()[-1]
  # (Survived, published, splits 3 records into cells of fewer than 3: they are left out,
  # and the report leaves them out of the original too)
  expect_message(
    tu <- tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), worst = 1, linkage = 0.5,
                       top_m = 1, tail = 1, risk1 = 0.1, risk2 = 0.1, methods = "anonymise", max_tries = 2,
                       small_strata = "suppress", categorical = "none"),
    class = "detanon_message_suppress")
  expect_identical(sum(!tu$kept), 3L)
  f <- release_report(d, tu, tempfile(fileext = ".html"), release_seed = 3)
  txt <- report_text(f)
  expect_has(txt, "id=\"frontier\"")
  expect_has(txt, "chosen by tune_release()")
  expect_has(txt, paste0("Chosen: ", tu$chosen$method, " (", tu$chosen$settings, ")"))
  # the verdict uses the search's limits; limits not set (1) are not shown as numbers
  expect_has(txt, "the limits of the tune_release() search that chose it")
  expect_has(txt, "<td>nearest-neighbour linkage</td><td>&lt;= 0.500</td>")
  expect_false(grepl("<td>linkage_stratum</td>|<td>top_m_stratum</td>|&lt;= 1</td>|<td>k</td><td>2</td>", txt))
  # the chosen candidate is the one highlighted row of the candidates table
  rows <- regmatches(txt, gregexpr("<tr class=\"chosen\">.*?</tr>", txt))[[1]]
  expect_length(rows, 1L)
  expect_match(rows, paste0("<td>", match(TRUE, tu$tried$verified), "</td><td>", tu$chosen$method, "</td><td>",
                            html_escape_test(tu$chosen$settings), "</td>"), fixed = TRUE)
  # the strata are checked at the release's k, not the search's smallest k
  k_rel <- as.integer(release_info(tu$release)$settings$k)
  expect_has(txt, sprintf("with k = %d: %d records", max(k_rel, 3L), nrow(tu$release)))
  expect_identical(attr(f, "sha256"), release_hash(tu$release, seed = 3)$value)
  expect_identical(c(report_leaks(txt, d$Age, 4L), report_leaks(txt, d$Fare, 4L)), character())
})

test_that("the report opens with a verdict on the limits, the intruder and what to publish", {
  d <- titanic_paper()[-1]
  masked <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  bat <- as.data.frame(risk_battery(d, masked, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                                    seed = 1))
  # plain k = 3: the worst attack is far above tune_release()'s default limit of 10%
  txt <- report_text(release_report(d, masked, tempfile(fileext = ".html")))
  verdict <- regexpr("<p class=\"verdict", txt, fixed = TRUE)
  expect_gt(verdict, 0)
  expect_lt(verdict, regexpr("<table", txt, fixed = TRUE)) # before any table
  expect_lt(verdict, regexpr("<h2", txt, fixed = TRUE)) # and before any section
  expect_has(txt, "<p class=\"verdict warn\"><b>Verdict: the release does NOT meet the limits on worst one-record attack")
  w <- which.max(bat$rate)
  expect_has(txt, sprintf("is right for %s%% of the records (limit 10%%)", format(signif(100 * bat$rate[w], 3))))
  expect_has(txt, "the default limits of tune_release()")
  expect_has(txt, "an intruder who holds all of the originals: Age, Fare by distance")
  expect_has(txt, "Do not publish it as it is")
  expect_has(txt, "<tr class=\"miss\"><td>worst one-record attack</td><td>&lt;= 10%</td>")
  expect_has(txt, "made by anonymise() with k = 3")
  # limits it meets: the verdict says so, and what to publish
  txt2 <- report_text(release_report(d, masked, tempfile(fileext = ".html"), worst = 0.9, top_m = 1))
  expect_has(txt2, "<p class=\"verdict ok\"><b>Verdict: the release meets every limit it was checked against")
  expect_has(txt2, "the limits given to release_report()")
  expect_has(txt2, "It may be published as the file write_release() writes (its rows in a random order)")
  expect_has(txt2, "differencing with another release of the same people")
  expect_false(grepl("class=\"miss\"", txt2, fixed = TRUE))
  # a limit met by the attacks but a stratum below k: the verdict names the strata check
  x <- report_fixture()
  expect_has(x$txt, "Verdict: the release does NOT meet")
  expect_match(x$txt, "NOT meet the limits on [^<]*records per stratum of A x B")
  # bad limits: a classed error naming the argument, and no file written
  f <- tempfile(fileext = ".html")
  expect_snapshot(error = TRUE, {
    release_report(d, masked, f, worst = 0)
    release_report(d, masked, f, top_m = "0.3")
  })
  expect_false(file.exists(f))
})

test_that("numbers in the report have significant digits, never a run of zeros", {
  expect_identical(fmt_signif(c(9.191e-34, 0.1, 32.2, 0.000691, 123456, 2e7, 0, NA, -1.5e-9)),
                   c("9.19e-34", "0.100", "32.2", "0.000691", "123000", "2.00e+07", "0", "", "-1.50e-09"))
  expect_identical(fmt_cell(c(1.23456e-30, 0.5)), c("1.23e-30", "0.500"))
  # the Titanic at k = 3: U is about 1e-30 and printed as such
  d <- titanic_paper()[-1]
  masked <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  txt <- report_text(release_report(d, masked, tempfile(fileext = ".html")))
  expect_false(grepl("0\\.0{6,}", txt))
  expect_match(txt, "<td>U \\(pMSE\\)</td><td>[0-9.]+(e-[0-9]+)?</td>")
})

test_that("the propensity axis has distinct ticks, and the caption and the help agree on the boxes", {
  pdf(NULL)
  on.exit(dev.off())
  for (s in list(rep(0.5, 40), 0.5 + c(-1, 1) * 1e-17, c(stats::runif(20, 0.3, 0.45), stats::runif(20, 0.55, 0.7)))) {
    plot_report_pmse(list(scores = rep_len(s, 40), c = 0.5, U = 1e-33))
    ticks <- graphics::axTicks(2)
    expect_gte(length(ticks), 3L)
    expect_identical(anyDuplicated(format(ticks)), 0L)
  }
  x <- report_fixture()
  expect_has(x$txt, "boxes from the 25% to the 75% quantile, whiskers to the 5% and 95% quantiles")
  rd <- tools::Rd_db("detanon")[["release_report.Rd"]]
  help <- gsub("\\s+", " ", paste(utils::capture.output(tools::Rd2txt(rd)), collapse = " "))
  expect_match(help, "the boxes span the 25% to 75% quantiles and the whiskers end at the 5% and 95% quantiles",
               fixed = TRUE)
  expect_false(grepl("boxes span the 5% to 95%", help, fixed = TRUE))
})

test_that("a tune_release() result is reported for the intruder of its search", {
  d <- titanic_paper()[-1]
  vars <- c("Age", "Fare")
  strata <- c("Pclass", "Sex", "Family")
  who <- intruder(vars, strata, held = "Survived")
  tu <- tune_release(d, vars = vars, strata = strata, intruder = who, methods = "mdav")
  txt <- report_text(release_report(d, tu, tempfile(fileext = ".html")))
  expect_has(txt, paste("an intruder who", html_escape_test(paste(format(who), collapse = " and "))))
  bat <- as.data.frame(risk_battery(d, tu$release, intruder = who, seed = 1))
  # (the worst attack but those on the tails, which have a limit of their own)
  worst <- max(bat$rate[!bat$name %in% c("tail_outliers", "tail_extremes")])
  expect_has(txt, sprintf("is right for %s%% of the records", format(signif(100 * worst, 3))))
  # an intruder given to the report replaces it
  txt2 <- report_text(release_report(d, tu, tempfile(fileext = ".html"), intruder = intruder(vars, strata)))
  expect_false(grepl("also Survived", txt2, fixed = TRUE))
})

test_that("columns with missing values are left out of the propensity model, and the report says so", {
  d <- leak_data()
  d$z <- round(stats::rnorm(nrow(d)), 2)
  d$z[c(3, 50)] <- NA
  masked <- anonymise(d, vars = c("x1", "x2"), strata = "A", k = 3, check_identifiers = FALSE)
  f <- release_report(d, masked, tempfile(fileext = ".html"))
  expect_has(report_text(f), "The propensity model uses A, B, x1, x2, y; left out for missing values: z.")
})

test_that("a release made elsewhere (no metadata) is reported with the columns given", {
  d <- titanic_paper()[-1]
  masked <- d
  set.seed(4)
  masked$Age <- masked$Age + stats::rnorm(nrow(d), sd = 2)
  masked$Fare <- masked$Fare * stats::runif(nrow(d), 0.9, 1.1)
  # without metadata, the masked variables are the numeric columns that changed; no strata
  f0 <- release_report(d, masked, tempfile(fileext = ".html"))
  expect_has(report_text(f0), "No strata: the release was not stratified")
  expect_has(report_text(f0), "holds all of the originals: Age, Fare by distance")
  f <- release_report(d, masked, tempfile(fileext = ".html"), vars = c("Age", "Fare"), strata = c("Pclass", "Sex"),
                      k = 5)
  txt <- report_text(f)
  expect_has(txt, "no release metadata")
  expect_has(txt, "carries no detanon metadata")
  expect_has(txt, "On Pclass x Sex with k = 5")
  expect_identical(c(report_leaks(txt, d$Age, 4L), report_leaks(txt, d$Fare, 4L)), character())
})

test_that("base64_raw() is RFC 4648 base64", {
  expect_identical(base64_raw(charToRaw("")), "")
  expect_identical(base64_raw(charToRaw("f")), "Zg==")
  expect_identical(base64_raw(charToRaw("fo")), "Zm8=")
  expect_identical(base64_raw(charToRaw("foobar")), "Zm9vYmFy")
  skip_if_not_installed("jsonlite")
  set.seed(3)
  for (n in c(1, 2, 3, 100, 1001)) {
    r <- as.raw(sample(0:255, n, replace = TRUE))
    expect_identical(base64_raw(r), gsub("\n", "", jsonlite::base64_enc(r), fixed = TRUE))
  }
})

test_that("the margins figure draws no original bin or cell below k and no original extreme", {
  # one original outlier far beyond the release: its bin is not drawn and the axis stops
  # at the released values
  o <- c(rep(c(1, 2, 3), 10), 1000)
  m <- c(rep(c(1.5, 2, 2.5), 10), 2.5)
  b <- report_bins(o, m, k = 3)
  expect_true(max(b$breaks) > 3) # the outermost bin holds the outlier ...
  expect_true(b$xlim[2] < 10) # ... but the axis stops before it
  bin_o <- findInterval(o, b$breaks, rightmost.closed = TRUE, all.inside = TRUE)
  counts <- tabulate(bin_o, length(b$breaks) - 1L)
  expect_identical(is.na(b$original), counts < 3L)
  expect_identical(b$original[!is.na(b$original)], counts[counts >= 3L])
  expect_true(all(b$cells$n >= 3L))
  expect_identical(sum(b$cells$n), 30L) # every record but the outlier, in cells of >= 3
  expect_identical(b$released, tabulate(findInterval(m, b$breaks, rightmost.closed = TRUE, all.inside = TRUE),
                                        length(b$breaks) - 1L))
  # bins are laid out from the released values only
  o2 <- o
  o2[31] <- 5000
  expect_identical(report_bins(o2, m, 3)$breaks[1:5], b$breaks[1:5])
  pdf(NULL)
  on.exit(dev.off())
  expect_silent(plot_report_margins(o, m, "v", k = 3))
})

test_that("the margins figure of whole-number values of a wide range is drawn (no integer overflow)", {
  # the reported input: testdata's expend released in 5527888..99917604 (pretty() then
  # gives integer breaks 0, 5e6, ..., 1e8), 2340 records; and a variant in another range
  pdf(NULL)
  on.exit(dev.off())
  for (lim in list(c(5527888L, 99917604L), c(1000001L, 40000000L))) {
    m <- as.integer(round(seq(lim[1], lim[2], length.out = 2340)))
    o <- rev(m)
    b <- report_bins(o, m, 3)
    expect_type(b$breaks, "double")
    expect_identical(sum(b$released), 2340L)
    expect_silent(plot_report_margins(o, m, "expend", k = 3))
  }
})

test_that("bad arguments give classed errors naming release_report()", {
  d <- titanic_paper()[-1]
  masked <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  expect_snapshot(error = TRUE, {
    release_report(d, masked, file = 1)
    release_report(d, masked, "/no-such-detanon-folder/r.html")
    release_report(d, masked[1:10, ], tempfile())
    release_report(d, masked, tempfile(), release_file = "no-such-file.csv")
    release_report(d, structure(list(release = NULL), class = "detanon_tuned"), tempfile())
    write_release(masked, NA)
    write_release(masked, ".")
    write_release(masked, "/no-such-detanon-folder/r.csv")
    write_release(masked, tempfile(), seed = 1.5)
    write_release(masked, tempfile(), escape_formulas = NA)
    release_report(d, masked, ".")
    release_report(d, masked, tempfile(), release_file = ".")
    release_report(d, masked, tempfile(), release_seed = "a")
  })
  # a list column cannot be written; nothing is written
  ml <- masked
  ml$l <- as.list(seq_len(nrow(ml)))
  f <- tempfile(fileext = ".csv")
  expect_snapshot(error = TRUE, write_release(ml, f))
  expect_false(file.exists(f))
  expect_error(release_report(d, masked, tempfile(), k = 0), class = "detanon_error_argument")
})

# For every cell (combination of the categorical variables of a term) of fewer than k
# records, the coefficients that sum to its fitted value on the original, and whether one
# of them is missing from `shown`.
cells_hidden <- function(formula, d, k, shown) {
  mf <- stats::model.frame(formula, d)
  X <- stats::model.matrix(attr(mf, "terms"), mf)
  fac <- attr(attr(mf, "terms"), "factors")
  out <- logical()
  for (t in seq_len(ncol(fac))) {
    v <- rownames(fac)[fac[, t] > 0]
    v <- v[vapply(v, function(x) is.character(mf[[x]]) || is.factor(mf[[x]]), logical(1))]
    if (!length(v)) next
    cell <- do.call(paste, c(lapply(v, function(x) mf[[x]]), sep = "\r"))
    n <- table(cell)
    for (c in names(n)[n < k]) {
      used <- colnames(X)[colSums(X[cell == c, , drop = FALSE] != 0) > 0]
      out[paste(t, c)] <- !all(used %in% shown)
    }
  }
  out
}

test_that("the report shows no model cell or interaction below k (issue 34, item 3)", {
  d <- leak_data()
  masked <- report_fixture()$masked
  # the reported model: one (here two) records in the cell A = a3, B = Q
  f <- release_report(d, masked, tempfile(fileext = ".html"), strata = "A", formula = x1 ~ A * B,
                      release_seed = 1)
  txt <- report_text(f)
  rows <- regmatches(txt, gregexpr("<tr><td>[^<]*</td>", txt))[[1]]
  shown <- sub("<tr><td>([^<]*)</td>", "\\1", rows)
  expect_false("Aa3:BQ" %in% shown)
  expect_true(all(c("(Intercept)", "Aa3", "BQ") %in% shown)) # their support is large
  hid <- cells_hidden(x1 ~ A * B, d, 3, shown)
  expect_true(length(hid) > 0L && all(hid))
  expect_has(txt, "resting on fewer than 3 original records")
})

test_that("small_support_terms() covers baseline cells, other contrasts and numeric interactions", {
  set.seed(3)
  mk <- function(sizes) {
    cells <- expand.grid(A = c("a1", "a2"), B = c("P", "Q"), stringsAsFactors = FALSE)
    d <- cells[rep(seq_len(4), sizes), ]
    d$x <- stats::rnorm(nrow(d), 100)
    d$z <- stats::rnorm(nrow(d))
    d
  }
  check <- function(formula, d, k = 3) {
    mf <- stats::model.frame(formula, d)
    term <- colnames(stats::model.matrix(attr(mf, "terms"), mf))
    hide <- small_support_terms(term, formula, d, k)
    hid <- cells_hidden(formula, d, k, term[!hide])
    expect_true(length(hid) > 0L && all(hid), label = deparse(formula))
    hide
  }
  # a baseline cell (a1, P) of two records: its value is the intercept
  d <- mk(c(2, 30, 30, 30))
  h <- check(x ~ A * B, d)
  expect_identical(sum(h), 1L)
  # a small cell of other levels: only its interaction goes
  d2 <- mk(c(30, 30, 30, 1))
  h2 <- check(x ~ A * B, d2)
  expect_identical(sum(h2), 1L)
  # a factor times a numeric term
  check(x ~ A:B:z, d2)
  check(x ~ A * B * z, d2)
  # sum contrasts: no column is zero on the small cell
  d3 <- d2
  d3$A <- factor(d3$A)
  d3$B <- factor(d3$B)
  contrasts(d3$A) <- stats::contr.sum(2)
  contrasts(d3$B) <- stats::contr.sum(2)
  check(x ~ A * B, d3)
  # nothing small, nothing hidden
  expect_false(any(small_support_terms(c("(Intercept)", "Aa2", "BQ", "Aa2:BQ"), x ~ A * B, mk(c(5, 5, 5, 5)), 3)))
})

test_that("write_release() quotes and escapes labelled text, and writes labelled numbers as numbers", {
  skip_if_not_installed("haven")
  d <- data.frame(a = haven::labelled(c("x,1", "=y", "z"), c(X = "x,1")),
                  b = haven::labelled(c(2, -1, 3.5), c(one = 2)), c = c(3, 1, 5))
  f <- tempfile(fileext = ".csv")
  write_release(d, f, seed = 1)
  txt <- readLines(f)
  expect_setequal(txt[-1L], c("\"x,1\",2,3", "\"'=y\",-1,1", "\"z\",3.5,5"))
})

test_that("the verdict names the published columns the intruder holds and an interval that straddles a limit", {
  d <- titanic_paper()[-1]
  # (exact MDAV group means, whose groups the algorithm-aware intruder recomputes; the noise
  # of the default moves the points off its candidates)
  tu <- suppressMessages(tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                                      methods = "mdav", small_strata = "suppress", categorical = "none",
                                      noise = FALSE, tail = 1, seed = 1))
  b <- tu$battery
  tab <- as.data.frame(b)
  w <- which.max(tab$rate)
  # the worst attack's 95% interval holds the limit of 0.1 (0.089 [0.072, 0.110]): the
  # algorithm-aware intruder, which recomputes the MDAV groups of anonymise_mdav()
  expect_lt(tab$lower[w], 0.1)
  expect_gt(tab$upper[w], 0.1)
  f <- release_report(d, tu, tempfile(fileext = ".html"))
  txt <- report_text(f)
  expect_has(txt, "every published column not masked, exactly: Survived")
  expect_has(txt, "Uncertain: the 95% interval of recipe")
  expect_has(txt, "straddles its limit")
  expect_output(print(tu), "Uncertain: the 95% interval of recipe")
  # a release whose worst attack misses the limit for sure says nothing of the kind, though
  # singling out (0.085 [0.069, 0.105]) straddles it
  m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  expect_identical(detanon:::battery_straddles(risk_battery(d, m, seed = 1), 0.1, 0.3), "")
  txt <- report_text(release_report(d, m, tempfile(fileext = ".html")))
  expect_false(grepl("Uncertain", txt, fixed = TRUE))
  expect_has(txt, "every published column not masked, exactly: Survived")
})
