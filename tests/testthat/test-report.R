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
  expect_has(txt, "coefficient of factor levels held by fewer than 3 original records is not shown")
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
  csv <- write_release(x$masked, tempfile(fileext = ".csv"))
  sha <- sha256_file(csv)
  expect_identical(attr(x$file, "sha256"), sha)
  expect_has(paste(readLines(x$file), collapse = "\n"), sha)
  # the CSV is the release: same values, no row names, no metadata
  back <- utils::read.csv(csv, stringsAsFactors = FALSE)
  expect_identical(names(back), names(x$masked))
  for (v in names(back)) expect_equal(back[[v]], x$masked[[v]], tolerance = 1e-14)
  expect_false(any(grepl("detanon|fingerprint", readLines(csv))))
  # a published file of another form is hashed byte for byte
  rds <- tempfile(fileext = ".rds")
  saveRDS(x$masked, rds)
  f2 <- release_report(x$d, x$masked, tempfile(fileext = ".html"), strata = "A", release_file = rds)
  expect_identical(attr(f2, "sha256"), sha256_file(rds))
  expect_has(report_text(f2), basename(rds))
  # another release gives another hash
  m2 <- anonymise(x$d, vars = c("x1", "x2"), strata = "A", k = 5, check_identifiers = FALSE)
  expect_false(identical(release_hash(m2)$value, sha))
})

test_that("a tune_release() result is reported with its frontier", {
  d <- titanic_paper()[-1]
  # (Survived, published, splits 3 records into cells of fewer than 3: they are left out,
  # and the report leaves them out of the original too)
  expect_message(
    tu <- tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), worst = 1, linkage = 0.5,
                       top_m = 1, risk1 = 0.1, risk2 = 0.1, methods = "anonymise", max_tries = 2,
                       small_strata = "suppress"),
    class = "detanon_message_suppress")
  expect_identical(sum(!tu$kept), 3L)
  f <- release_report(d, tu, tempfile(fileext = ".html"))
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
  expect_identical(attr(f, "sha256"), release_hash(tu$release)$value)
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
  expect_has(txt2, "It may be published as the file whose hash is given below")
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
  expect_identical(fmt_num(c(9.191e-34, 0.1, 32.2, 0.000691, 123456, 2e7, 0, NA, -1.5e-9)),
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
  who <- intruder(vars, strata, keys = "Survived")
  tu <- tune_release(d, vars = vars, strata = strata, intruder = who, methods = "mdav")
  txt <- report_text(release_report(d, tu, tempfile(fileext = ".html")))
  expect_has(txt, paste("an intruder who", html_escape_test(paste(format(who), collapse = " and "))))
  bat <- as.data.frame(risk_battery(d, tu$release, intruder = who, seed = 1))
  expect_has(txt, sprintf("is right for %s%% of the records", format(signif(100 * max(bat$rate), 3))))
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
  })
  expect_error(release_report(d, masked, tempfile(), k = 0), class = "detanon_error_argument")
})

test_that("the verdict names the published columns the intruder holds and an interval that straddles a limit", {
  d <- titanic_paper()[-1]
  tu <- suppressMessages(tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                                      methods = "mdav", small_strata = "suppress", seed = 1))
  b <- tu$battery
  tab <- as.data.frame(b)
  w <- which.max(tab$rate)
  # the worst attack's 95% interval holds the limit of 0.1 (0.089 [0.072, 0.110])
  expect_lt(tab$lower[w], 0.1)
  expect_gt(tab$upper[w], 0.1)
  f <- release_report(d, tu, tempfile(fileext = ".html"))
  txt <- report_text(f)
  expect_has(txt, "every published column not masked, exactly: Survived")
  expect_has(txt, "Uncertain: the 95% interval of linkage_released")
  expect_has(txt, "straddles its limit")
  expect_output(print(tu), "Uncertain: the 95% interval of linkage_released")
  # a release whose worst attack misses the limit for sure says nothing of the kind, though
  # singling out (0.085 [0.069, 0.105]) straddles it
  m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  expect_identical(detanon:::battery_straddles(risk_battery(d, m, seed = 1), 0.1, 0.3), "")
  txt <- report_text(release_report(d, m, tempfile(fileext = ".html")))
  expect_false(grepl("Uncertain", txt, fixed = TRUE))
  expect_has(txt, "every published column not masked, exactly: Survived")
})
