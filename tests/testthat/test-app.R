# detanon_app(): the server logic with shiny::testServer() (no browser), and the whole app
# in headless Chromium (skipped where Chromium is absent; see helper-browser.R).

app_upload <- function(d, name, write = utils::write.csv, ...) {
  dir <- tempfile("upload")
  dir.create(dir)
  path <- file.path(dir, name)
  write(d, path, ...)
  data.frame(name = name, size = file.size(path), type = "", datapath = path, stringsAsFactors = FALSE)
}

# The lines of a file, sorted; the rows of a data frame in a canonical order (for releases
# that write_release() may write in any row order).
sorted_lines <- function(f) sort(strsplit(rawToChar(readBin(f, "raw", file.size(f))), "\n", fixed = TRUE)[[1]])
sort_rows <- function(x) {
  x <- as.data.frame(x)
  x <- x[do.call(order, lapply(unname(as.list(x)), function(v) if (is.double(v)) signif(v, 12) else v)), , drop = FALSE]
  rownames(x) <- NULL
  x
}

titanic_csv <- function() {
  d <- titanic_paper()
  d$Pclass <- as.integer(as.character(d$Pclass))
  d$Family <- as.integer(as.character(d$Family))
  d$Sex <- as.character(d$Sex)
  d
}

test_that("loading a file fills the roles from the identifier screen and the column types", {
  skip_if_not_installed("shiny")
  shiny::testServer(app_server(), {
    session$setInputs(file = app_upload(titanic_csv(), "titanic.csv", row.names = FALSE))
    expect_identical(dim(rv$data), c(891L, 7L))
    expect_identical(rv$source, list(kind = "csv", name = "titanic.csv", encoding = NULL))
    expect_false(rv$error)
    expect_match(rv$status, "Loaded titanic.csv: 891 records, 7 columns", fixed = TRUE)
    # the identifier screen and the strata check are shown
    expect_match(output$identifiers_table, "PassengerId", fixed = TRUE)
    session$setInputs(identifiers = "PassengerId", vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3)
    expect_match(output$kanon, "3-anonymous", fixed = TRUE)
    expect_identical(roles()$strata, c("Pclass", "Sex", "Family"))
  })
})

test_that("anonymise -> release, risk, report and a script that reproduces the release", {
  skip_if_not_installed("shiny")
  skip_if_not_installed("openssl")
  up <- app_upload(titanic_csv(), "titanic.csv", row.names = FALSE)
  shiny::testServer(app_server(), {
    session$setInputs(file = up)
    session$setInputs(identifiers = "PassengerId", vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                      k = 5, method = "anonymise", na = "fail", small_strata = "fail", formula = "Survived ~ Sex + Age",
                      family = "binomial",
                      k_max = 33, stir_method = "shuffle", seed = 1)
    session$setInputs(run = 1)
    # plain anonymise() at k = 5 does not meet the default limits: said in red, never as done
    expect_false(rv$error)
    expect_true(rv$warn)
    expect_match(rv$status, "Release made by anonymise() with k = 5: it does NOT meet the limits", fixed = TRUE)
    run <- rv$run
    expect_false(run$passes)
    expect_match(output$verdict$html, "Verdict: the release does NOT meet", fixed = TRUE)
    # the release is what anonymise() makes from the file without the identifier
    d <- utils::read.csv(up$datapath)
    expected <- anonymise(remove_identifiers(d, cols = "PassengerId"), vars = c("Age", "Fare"),
                          strata = c("Pclass", "Sex", "Family"), k = 5)
    expect_identical(plain_release(run$release), plain_release(expected))
    expect_identical(release_info(run$release)$settings$k, 5L)
    # risk and utility are those of assess() and risk_battery()
    a <- assess(remove_identifiers(d, cols = "PassengerId"), expected, formula = Survived ~ Sex + Age,
                family = binomial(), deterministic = TRUE, seed = 1)
    expect_equal(as.data.frame(run$assess), as.data.frame(a))
    expect_match(output$risk_table, "linkage_rate", fixed = TRUE)
    expect_match(output$battery_table, "does_not_cover", fixed = TRUE)
    # the plain table names the attacks in words, not by their internal names
    expect_match(output$risk_plain, "Links each record to the nearest released record", fixed = TRUE)
    expect_false(grepl("precision_top10|linkage_released|wrisk", output$risk_plain))
    # a release that misses the limits is not downloaded, unless the override is ticked
    expect_match(output$dl_release_ui$html, "dl_blocked", fixed = TRUE)
    expect_error(output$dl_release)
    session$setInputs(override = TRUE)
    expect_match(output$dl_release_ui$html, "dl_override", fixed = TRUE)
    # downloads: the release CSV, whose hash the report prints
    csv <- output$dl_release
    expect_identical(sha256_file(csv), run$hash)
    back <- utils::read.csv(csv)
    expect_identical(names(back), setdiff(names(d), "PassengerId"))
    expect_equal(sort_rows(back), sort_rows(plain_release(run$release)), tolerance = 1e-14)
    html <- output$dl_report
    txt <- report_text(html)
    expect_has(paste(readLines(html), collapse = "\n"), run$hash)
    expect_has(paste(readLines(html), collapse = "\n"), "downloaded although it does NOT meet the limits")
    expect_identical(c(report_leaks(txt, d$Age, 4L), report_leaks(txt, d$Fare, 4L)), character())
    # the script reproduces the release from the file
    code <- readLines(output$dl_code)
    expect_identical(code, strsplit(output$code, "\n")[[1]])
    expect_true(any(grepl("remove_identifiers(data, cols = \"PassengerId\")", code, fixed = TRUE)))
    expect_true(any(grepl("family = binomial()", code, fixed = TRUE)))
    expect_has(txt, "(binomial family)")
    old <- setwd(dirname(up$datapath))
    on.exit(setwd(old), add = TRUE)
    env <- new.env(parent = globalenv())
    eval(parse(text = code), env)
    expect_identical(plain_release(env$release), plain_release(run$release))
    expect_true(file.exists("release.csv") && file.exists("report.html"))
    # the same rows as the app's release file (in whatever row order write_release() writes)
    expect_identical(sorted_lines("release.csv"), sorted_lines(run$csv))
    # changed settings are flagged until the next run
    expect_false(grepl("run_stale", output$run_summary$html, fixed = TRUE))
    session$setInputs(k = 6)
    expect_true(grepl("run_stale", output$run_summary$html, fixed = TRUE))
  })
})

test_that("anonymise_adaptive() and stir() runs are reproduced by their scripts", {
  skip_if_not_installed("shiny")
  # an RDS file where R reads them safely (>= 4.4.0), else a CSV file
  up <- if (app_rds_ok()) app_upload(titanic_paper()[-1], "titanic.rds", write = function(x, path) saveRDS(x, path))
        else app_upload(titanic_csv()[-1], "titanic.csv", row.names = FALSE)
  d <- if (app_rds_ok()) titanic_paper()[-1] else utils::read.csv(up$datapath)
  for (method in c("anonymise_adaptive", "stir")) {
    shiny::testServer(app_server(), {
      session$setInputs(file = up)
      session$setInputs(identifiers = character(), vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3,
                        method = method, na = "fail", small_strata = "fail", k_max = 9, stir_method = "flatten",
                        seed = 7, formula = "")
      session$setInputs(run = 1)
      expect_match(rv$status, paste0("Release made by ", method, "()"), fixed = TRUE, label = method)
      run <- rv$run
      expect_identical(run$verb, method)
      expected <- if (method == "stir") stir(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3,
                                             method = "flatten", seed = 7L)
                  else anonymise_adaptive(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3, k_max = 9L)
      expect_identical(plain_release(run$release), plain_release(expected))
      old <- setwd(dirname(up$datapath))
      env <- new.env(parent = globalenv())
      eval(parse(text = script()), env)
      setwd(old)
      expect_identical(plain_release(env$release), plain_release(run$release))
    })
  }
})

test_that("bad files and bad settings give messages and keep the session usable", {
  skip_if_not_installed("shiny")
  shiny::testServer(app_server(), {
    # a file of an unknown type, then a broken RDS: messages, nothing loaded
    session$setInputs(file = app_upload("x", "notes.txt", write = function(x, path) writeLines(x, path)))
    expect_true(rv$error)
    expect_match(rv$status, "must end in .csv, .rds, .dta, .sav", fixed = TRUE)
    expect_null(rv$data)
    session$setInputs(file = app_upload("x", "broken.rds", write = function(x, path) writeLines(x, path)))
    expect_true(rv$error)
    expect_match(rv$status, if (app_rds_ok()) "could not read \"broken.rds\" as a RDS file" else "CVE-2024-27322",
                 fixed = TRUE)
    session$setInputs(file = app_upload(list(1, 2), "list.rds", write = function(x, path) saveRDS(x, path)))
    expect_match(rv$status, if (app_rds_ok()) "holds an object of class list, not a data frame" else "CVE-2024-27322",
                 fixed = TRUE)
    session$setInputs(file = app_upload("x", "broken.csv", write = function(x, path) writeBin(as.raw(c(97, 0, 98)), path)))
    expect_match(rv$status, "holds NUL bytes", fixed = TRUE)
    expect_null(rv$data)
    # pressing Anonymise without data
    session$setInputs(run = 1)
    expect_match(rv$status, "Load a data file first", fixed = TRUE)
    # the example loads; a bad file afterwards keeps it
    session$setInputs(example = 1)
    expect_identical(nrow(rv$data), 891L)
    session$setInputs(file = app_upload("x", "broken.dta", write = function(x, path) writeLines(x, path)))
    expect_match(rv$status, "The data loaded before are kept", fixed = TRUE)
    expect_identical(nrow(rv$data), 891L)
    # bad settings: k, no variables, a stratum too small for k, a bad formula
    session$setInputs(identifiers = "PassengerId", vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                      method = "anonymise", na = "fail", small_strata = "fail", k_max = 33, stir_method = "shuffle",
                      seed = 1, formula = "", k = 2.5)
    session$setInputs(run = 2)
    expect_match(rv$status, "`k` must be a single whole number between 1 and 891, not 2.5", fixed = TRUE)
    session$setInputs(k = 40, run = 3)
    expect_true(rv$error)
    expect_match(rv$status, "The release was not made: anonymise(): ", fixed = TRUE)
    expect_null(rv$run)
    session$setInputs(k = 3, formula = "Survived ~", run = 4)
    expect_match(rv$status, "is not a formula", fixed = TRUE)
    session$setInputs(vars = character(), formula = "", run = 5)
    expect_match(rv$status, "Choose at least one continuous variable", fixed = TRUE)
    # and the session still works
    session$setInputs(vars = c("Age", "Fare"), run = 6)
    expect_false(rv$error)
    expect_identical(nrow(rv$run$release), 891L)
  })
})

test_that("Stata and SPSS files are read with haven, labelled columns as factors", {
  skip_if_not_installed("shiny")
  skip_if_not_installed("haven")
  d <- titanic_paper()[-1]
  d$Sex <- haven::labelled(as.integer(d$Sex), c(female = 1L, male = 2L))
  d$Pclass <- as.integer(d$Pclass)
  d$Family <- as.integer(d$Family)
  for (ext in c("dta", "sav")) {
    up <- app_upload(d, paste0("titanic.", ext), write = if (ext == "dta") haven::write_dta else haven::write_sav)
    got <- app_read_file(up$datapath, up$name)
    expect_identical(levels(got$Sex), c("female", "male"))
    expect_equal(got$Age, d$Age, ignore_attr = TRUE)
    # the app reads what the script's call reads
    expect_identical(app_plain_frame(eval(app_read_call(up$datapath, ext)), up$name), got)
  }
})

test_that("detanon_app() returns the app object, and checks its arguments", {
  skip_if_not_installed("shiny")
  app <- detanon_app(run = FALSE)
  expect_s3_class(app, "shiny.appobj")
  expect_snapshot(error = TRUE, {
    detanon_app(data = 1, run = FALSE)
    detanon_app(run = NA)
  })
})

# ---- hostile input (issue 34) --------------------------------------------------------------

# The settings of a valid anonymise() run on the Titanic example.
# `...` replaces some of them (NULL included).
app_good_inputs <- function(...) {
  x <- list(identifiers = "PassengerId", vars = c("Age", "Fare"), strata = c("Pclass", "Sex"),
            k = 3, method = "anonymise", na = "fail", small_strata = "fail", k_max = 9,
            stir_method = "shuffle", seed = 1, formula = "", family = "gaussian", worst = 0.1, top_m = 0.3,
            tune_methods = c("anonymise", "stratum", "adaptive", "mdav", "keyed", "stir"), key = "",
            sensitive = NULL, tune_small_strata = "fail", keys = NULL, weights = NULL, household = NULL,
            suppress = FALSE, suppress_k = 3, importance = NULL, pram = FALSE, pram_vars = NULL, pd = 0.8,
            pram_seed = 1)
  y <- list(...)
  x[names(y)] <- y
  x
}

# Set the inputs of a list (NULL values included), then press Anonymise (`run`).
set_and_run <- function(session, inputs, run) do.call(session$setInputs, c(inputs, list(run = run)))

# The top-level expressions of a script, as the names of what they call or assign.
script_calls <- function(code) {
  vapply(as.list(parse(text = code, keep.source = FALSE)), function(e) {
    if (identical(e[[1L]], as.name("<-"))) paste(deparse1(e[[2L]]), "<-", deparse1(e[[3L]][[1L]]))
    else deparse1(e[[1L]])
  }, "")
}

test_that("the model box runs no code: the formula is vetted before anything evaluates it", {
  skip_if_not_installed("shiny")
  dir <- withr::local_tempdir()
  marker <- file.path(dir, "x")
  shiny::testServer(app_server(), {
    session$setInputs(example = 1)
    # the reported input, then variants that call other functions, directly or hidden
    bad <- c(sprintf("Survived ~ Age + I(file.create(%s))", deparse(marker)),
             sprintf("Survived ~ Age + system(\"touch %s\")", marker),
             sprintf("Survived ~ log(Age, base = file.create(%s))", deparse(marker)),
             sprintf("Survived ~ I(eval(parse(text = \"file.create(%s)\")))", gsub("\"", "'", deparse(marker))),
             sprintf("Survived ~ `file.create`(%s)", deparse(marker)),
             sprintf("Survived ~ (function(x) file.create(%s))(Age)", deparse(marker)),
             sprintf("Survived ~ base::file.create(%s)", deparse(marker)),
             sprintf("file.create(%s) ~ Age", deparse(marker)),
             sprintf("Survived ~ Age; file.create(%s)", deparse(marker)))
    for (i in seq_along(bad)) {
      set_and_run(session, app_good_inputs(formula = bad[i]), i)
      expect_true(rv$error, label = bad[i])
      expect_match(rv$status, "The release was not made: the model", fixed = TRUE, label = bad[i])
      expect_null(rv$run, label = bad[i])
    }
    expect_false(file.exists(marker))
    # names that are not columns, a dropped identifier, strings
    session$setInputs(formula = "Survived ~ Age + Weight", run = 20)
    expect_match(rv$status, "`Weight` is not a column of the data", fixed = TRUE)
    session$setInputs(formula = "Survived ~ Age + PassengerId", run = 21)
    expect_match(rv$status, "`PassengerId` is a direct identifier", fixed = TRUE)
    session$setInputs(formula = "Survived ~ Age + I(\"a\")", run = 22)
    expect_match(rv$status, "\"a\" is neither a column nor a number", fixed = TRUE)
    # allowed models are fitted, and the script holds them as they were vetted
    session$setInputs(formula = "Survived ~ poly(Age, 2) + log(Fare + 1) + factor(Pclass) + Sex:I(Age^2)",
                      family = "binomial", run = 23)
    expect_false(rv$error)
    f <- rv$run$formula
    expect_identical(deparse1(f), "Survived ~ poly(Age, 2) + log(Fare + 1) + factor(Pclass) + Sex:I(Age^2)")
    expect_identical(parent.env(environment(f)), baseenv())
    expect_true(any(grepl("formula = Survived ~ poly(Age, 2)", strsplit(output$code, "\n")[[1]], fixed = TRUE)))
    session$setInputs(formula = "Survived ~ .", run = 24)
    expect_false(rv$error)
    expect_true("Fare" %in% rv$run$assess$model$term)
  })
})

test_that("app_formula() accepts the whitelist and refuses the rest with a message", {
  cols <- c("y", "x", "z", "log")
  ok <- c("y ~ x", "y ~ x + z - 1", "y ~ x * z", "y ~ (x + z)^2", "y ~ x:z + I(x / z)", "log(y) ~ sqrt(abs(x))",
          "y ~ poly(x, degree = 2, raw = TRUE)", "y ~ log(x, base = 2) + exp(-z) + log1p(x) + log2(x) + log10(x)",
          "y ~ scale(x, center = TRUE, scale = FALSE) + factor(z)", "y ~ .", "y ~ x %in% z" )
  ok <- ok[-length(ok)]  # %in% is not in the whitelist (see below)
  for (t in ok) {
    f <- app_formula(t, cols)
    expect_s3_class(f, "formula")
    expect_identical(deparse1(f[[3L]]), deparse1(str2lang(t)[[3L]]), label = t)
  }
  # a column called like an allowed function is a column; the function stays base's
  expect_s3_class(app_formula("y ~ log(log)", cols), "formula")
  mf <- stats::model.frame(app_formula("y ~ log(log)", cols), data.frame(y = 1:3, log = c(1, 10, 100)))
  expect_equal(mf[[2L]], log(c(1, 10, 100)))
  expect_null(app_formula("", cols))
  expect_null(app_formula("   ", cols))
  expect_null(app_formula(NULL, cols))
  bad <- c("y ~ x %in% z", "y ~ get('x')", "y ~ x[1]", "y ~ x$a", "y ~ sin(x)", "y ~ I(x > 1)", "y ~ log(x, base = x)",
           "y ~ poly(x, coefs = 1)", "y ~ log()", "y ~ x + Inf", "y ~ I(.)", ". ~ x", "y ~ TRUE", "y ~ NULL",
           "y ~ ~x", "y ~ x ~ z", "~ x", "y", "y ~ x +", paste0("y ~ ", strrep("(", 200), "x", strrep(")", 200)))
  for (t in bad) expect_error(app_formula(t, cols), class = "detanon_error_argument", label = t)
  expect_error(app_formula(strrep("x + ", 600), cols), "at most 2000", class = "detanon_error_argument")
  expect_snapshot(error = TRUE, {
    app_formula("Survived ~ Age + I(file.create('x'))", c("Survived", "Age"))
    app_formula("Survived ~ Age + Name", c("Survived", "Age"), identifiers = "Name")
    app_formula("Survived ~", c("Survived", "Age"))
    app_formula(c("y ~ x", "y ~ z"), c("y", "x"))
  })
})

test_that("the method is one of the four choices: a client sending another name gets a message, not the data", {
  skip_if_not_installed("shiny")
  shiny::testServer(app_server(), {
    session$setInputs(example = 1)
    # the reported input: "print" would return the data unmasked as the release
    methods <- list("print", "identity", "remove_identifiers", "system", c("anonymise", "stir"), NA_character_, 1)
    for (i in seq_along(methods)) {
      m <- methods[[i]]
      set_and_run(session, app_good_inputs(method = m), i)
      expect_true(rv$error, label = deparse1(m))
      expect_match(rv$status, "`method` must be one of \"tune_release\", \"anonymise\", \"anonymise_adaptive\", \"stir\"",
                   fixed = TRUE)
      expect_null(rv$run)
      expect_error(output$dl_release)
    }
    # the session goes on
    session$setInputs(method = "anonymise", run = 1e7)
    expect_false(rv$error)
    expect_identical(rv$run$verb, "anonymise")
  })
})

test_that("every setting is checked on the server; bad values give a message and keep the session", {
  skip_if_not_installed("shiny")
  shiny::testServer(app_server(), {
    session$setInputs(example = 1)
    bad <- list(
      # the reported input, then other k that are not one whole number in 1..n
      list(list(k = c(3, 4)), "`k` must be a single whole number between 1 and 891, not a double vector of length 2"),
      list(list(k = 0), "`k` must be a single whole number between 1 and 891, not 0"),
      list(list(k = 892), "not 892"),
      list(list(k = Inf), "not Inf"),
      list(list(k = "3"), "not \"3\""),
      list(list(k = NULL), "not NULL"),
      list(list(k = list(3)), "not an object of class list"),
      list(list(vars = c("Age", "Height")), "`vars` names columns that are not in the data: `Height`"),
      list(list(strata = list("Sex")), "`strata` must be a character vector of column names"),
      list(list(identifiers = c("PassengerId", "PassengerId")), "`identifiers` names a column more than once"),
      list(list(na = "complete"), "`na` must be one of \"fail\""),
      list(list(small_strata = "suppress"), "`small_strata` must be one of \"fail\", not \"suppress\""),
      list(list(small_strata = "merge"), "`small_strata` must be one of \"fail\", not \"merge\""),
      list(list(worst = 0), "`worst` must be a single share in (0, 1]"),
      list(list(top_m = "0.3"), "`top_m` must be a single share in (0, 1]"),
      list(list(worst = c(0.1, 0.2)), "`worst` must be a single share"),
      list(list(method = "tune_release", tune_methods = c("mdav", "system")), "`methods` must be one or more of"),
      list(list(method = "tune_release", tune_methods = character()), "`methods` must be one or more of"),
      list(list(method = "tune_release", tune_methods = "keyed", key = ""), "`key`: keyed groups need the secret key"),
      list(list(method = "tune_release", tune_methods = "keyed", key = "short"), "`key` must be a string of 16"),
      list(list(method = "tune_release", tune_methods = "keyed", key = list("a")), "`key` must be a string of 16"),
      list(list(method = "tune_release", tune_methods = "anonymise", tune_small_strata = "merge"),
           "`small_strata` of the search must be one of \"fail\", \"suppress\", not \"merge\""),
      list(list(method = "tune_release", tune_methods = "anonymise", tune_small_strata = c("fail", "suppress")),
           "`small_strata` of the search must be one of"),
      list(list(method = "tune_release", tune_methods = "anonymise", tune_small_strata = NA_character_), "`small_strata` of the search must be one of"),
      list(list(method = "tune_release", tune_methods = "anonymise", sensitive = c("Survived", "Sex")), "`sensitive` must be at most one column"),
      list(list(method = "tune_release", tune_methods = "anonymise", sensitive = "Height"), "`sensitive` names columns that are not in the data"),
      list(list(method = "tune_release", tune_methods = "anonymise", sensitive = list("Survived")), "`sensitive` must be a character vector"),
      list(list(method = "tune_release", tune_methods = "anonymise", sensitive = "Age"), "`sensitive`: `Age` is a variable to mask"),
      list(list(method = "tune_release", tune_methods = "anonymise", sensitive = "Sex"), "`sensitive`: `Sex` is a stratum"),
      list(list(method = "tune_release", tune_methods = "anonymise", sensitive = "PassengerId"), "`sensitive`: `PassengerId` is a direct identifier"),
      list(list(method = "anonymise_adaptive", k_max = 2), "`k_max` must be a single whole number between 3 and 891"),
      list(list(method = "anonymise_adaptive", k_max = c(9, 10)), "`k_max` must be a single whole number"),
      list(list(method = "stir", stir_method = "system"), "`stir_method` must be one of \"shuffle\", \"flatten\""),
      list(list(method = "stir", seed = 1.5), "`seed` must be a single whole number"),
      list(list(formula = "Survived ~ Age", family = "quasi"), "`family` must be one of \"gaussian\""),
      list(list(formula = c("Survived ~ Age", "Survived ~ Fare")), "`formula` must be a single string"))
    for (i in seq_along(bad)) {
      set_and_run(session, do.call(app_good_inputs, bad[[i]][[1]]), i)
      expect_true(rv$error, label = bad[[i]][[2]])
      expect_match(rv$status, "The release was not made: `", fixed = TRUE, label = bad[[i]][[2]])
      expect_match(rv$status, bad[[i]][[2]], fixed = TRUE, label = bad[[i]][[2]])
      expect_null(rv$run)
    }
    # outputs shown before a run survive the same values
    session$setInputs(k = c(3, 4), strata = list("Sex"), vars = 1:2)
    expect_match(output$kanon, "No strata chosen", fixed = TRUE)
    session$setInputs(strata = "Sex")
    expect_match(output$kanon, "k must be a whole number >= 1.", fixed = TRUE)
    # a valid run afterwards
    set_and_run(session, app_good_inputs(), 100)
    expect_false(rv$error)
    expect_identical(release_info(rv$run$release)$settings$k, 3L)
    # a bad plot variable after the run: no plot, no error for the session
    session$setInputs(plot_var = c("Age", "Fare"))
    expect_error(output$margins, class = "shiny.silent.error")
  })
  d <- titanic_paper()
  expect_snapshot(error = TRUE, {
    app_settings(app_good_inputs(k = c(3, 4)), d)
    app_settings(app_good_inputs(method = "print"), d)
    app_settings(app_good_inputs(vars = character()), d)
    app_settings(app_good_inputs(method = "anonymise_adaptive", k_max = 1e9), d)
    app_settings(app_good_inputs(method = "tune_release", key = "a long secret phrase", tune_small_strata = "merge"), d)
    app_settings(app_good_inputs(method = "tune_release", key = "a long secret phrase", sensitive = c("Survived", "Sex")), d)
  })
})

test_that("uploaded file names never become code in the script", {
  skip_if_not_installed("shiny")
  dir <- withr::local_tempdir()
  withr::local_dir(dir)
  # the reported input (a name with newlines), then quotes, backslashes and a carriage return
  # and the Unicode controls of text direction, which could make the script read otherwise
  names <- c("titanic\nfile.create('pwned')\n#.csv", "a\"); file.create(\"pwned\"); x <- (\".csv",
             "b\\\\\"\rfile.create('pwned') #.csv", "c'\n`file.create`('pwned')\n'.csv",
             "d\u202e\"); file.create('pwned') #\u2066.csv")
  for (nm in names) {
    up <- app_upload(titanic_csv(), nm, row.names = FALSE)
    shiny::testServer(app_server(), {
      session$setInputs(file = up)
      expect_false(rv$error, label = nm)
      expect_identical(rv$source$name, nm)
      set_and_run(session, app_good_inputs(), 1)
      expect_false(rv$error, label = nm)
      code <- readLines(output$dl_code)
      expect_identical(script_calls(code), c("library", "data <- utils::read.csv", "data <- remove_identifiers",
                                             "release <- anonymise", "write_release", "release_report"), label = nm)
      expect_false(any(grepl("[\u202a-\u202e\u2066-\u2069]", code)), label = nm)
      # run in a folder that holds a file of that name, the script reads it and reproduces the release
      file.copy(up$datapath, file.path(dir, nm))
      env <- new.env(parent = globalenv())
      eval(parse(text = code), env)
      expect_identical(plain_release(env$release), plain_release(rv$run$release))
      expect_false(file.exists("pwned"), label = nm)
      unlink(file.path(dir, nm))
    })
  }
})

test_that("an upload is a file the app received: another path sent by a client is refused", {
  skip_if_not_installed("shiny")
  # a file beside R's temporary folder (not in a folder of it, as shiny's uploads are)
  outside <- tempfile("outside", tmpdir = dirname(tempdir()), fileext = ".csv")
  utils::write.csv(titanic_csv(), outside, row.names = FALSE)
  on.exit(unlink(outside), add = TRUE)
  direct <- tempfile("direct", fileext = ".csv")
  file.copy(outside, direct)
  on.exit(unlink(direct), add = TRUE)
  good <- app_upload(titanic_csv(), "titanic.csv", row.names = FALSE)
  shiny::testServer(app_server(), {
    for (f in list(data.frame(name = "titanic.csv", size = 1, type = "", datapath = outside),
                   data.frame(name = "titanic.csv", size = 1, type = "", datapath = file.path(tempdir(), "..", basename(outside))),
                   data.frame(name = "titanic.csv", size = 1, type = "", datapath = direct),
                   data.frame(name = "titanic.csv", size = 1, type = "", datapath = dirname(good$datapath)))) {
      session$setInputs(file = f)
      expect_true(rv$error)
      expect_match(rv$status, "is not a file this app received", fixed = TRUE)
      expect_null(rv$data)
    }
    session$setInputs(file = rbind(good, good))
    expect_match(rv$status, "load one file at a time", fixed = TRUE)
    session$setInputs(file = list(name = 1, datapath = good$datapath))
    expect_match(rv$status, "load one file at a time", fixed = TRUE)
    session$setInputs(file = "titanic.csv")
    expect_match(rv$status, "the upload was not understood", fixed = TRUE)
    expect_null(rv$data)
    session$setInputs(file = good)
    expect_false(rv$error)
    expect_identical(nrow(rv$data), 891L)
  })
})

# An RDS file whose top object is an unforced promise of `expr`: readRDS() before R 4.4.0
# returns the promise, and the first use of the result runs `expr` (CVE-2024-27322).
promise_rds <- function(expr, path) {
  int <- function(x) writeBin(as.integer(x), raw(), size = 4L, endian = "big")
  code <- serialize(expr, NULL, xdr = TRUE, version = 2L)
  # the header of format 2 (14 bytes), then PROMSXP (5) with a tag (bit 10): its
  # environment (R_GlobalEnv, 253), its value (unbound, 252), its code
  bytes <- c(code[1:14], int(5L + 1024L), int(253L), int(252L), code[-(1:14)])
  con <- gzfile(path, "wb")
  on.exit(close(con))
  writeBin(bytes, con)
  path
}

test_that("an RDS file runs no code: refused before R 4.4.0, and must hold a plain data frame", {
  skip_if_not_installed("shiny")
  dir <- withr::local_tempdir()
  marker <- file.path(dir, "pwned")
  up <- app_upload(bquote(file.create(.(marker))), "data.rds", write = promise_rds)
  # the file is a real exploit where R has the flaw: reading it in another R process runs it
  if (!app_rds_ok() && requireNamespace("processx", quietly = TRUE)) {
    processx::run(file.path(R.home("bin"), "Rscript"), c("-e", sprintf("x <- readRDS(%s); is.null(x)", deparse(up$datapath))),
                  error_on_status = FALSE)
    expect_true(file.exists(marker))
    unlink(marker)
  }
  plain <- app_upload(titanic_paper(), "titanic.rds", write = function(x, path) saveRDS(x, path))
  shiny::testServer(app_server(), {
    session$setInputs(file = up)
    expect_true(rv$error)
    expect_match(rv$status, if (app_rds_ok()) "could not read \"data.rds\"" else
                   "\"data.rds\" was not read: R", fixed = TRUE)
    expect_false(file.exists(marker))
    expect_null(rv$data)
    # a plain data frame in an RDS file: read on R >= 4.4.0 only
    session$setInputs(file = plain)
    if (app_rds_ok()) {
      expect_false(rv$error)
      expect_identical(nrow(rv$data), 891L)
    } else {
      expect_match(rv$status, "CVE-2024-27322, fixed in R 4.4.0", fixed = TRUE)
      expect_null(rv$data)
    }
  })
  # the UI offers RDS files only where they are read
  html <- as.character(app_ui())
  expect_identical(grepl(".rds", html, fixed = TRUE), app_rds_ok())
  expect_true(app_rds_ok(package_version("4.4.0")))
  expect_false(app_rds_ok(package_version("4.3.3")))
})

test_that("app_plain_frame() keeps plain columns and refuses code, lists and duplicated names", {
  d <- titanic_paper()
  # a tibble, a data.table, attributes that hold code or environments: a plain data.frame
  x <- d
  attr(x, "hook") <- function() stop("called")
  attr(x$Age, "env") <- new.env()
  attr(x$Fare, "label") <- "fare paid"
  x$When <- as.Date("2020-01-01") + seq_len(nrow(x))
  got <- app_plain_frame(x, "x.rds")
  expect_identical(class(got), "data.frame")
  expect_null(attr(got, "hook"))
  expect_null(attributes(got$Age))
  expect_identical(attr(got$Fare, "label"), "fare paid")
  expect_identical(got$When, x$When)
  expect_identical(got$Sex, d$Sex)
  if (requireNamespace("tibble", quietly = TRUE)) {
    expect_identical(app_plain_frame(tibble::as_tibble(d), "t.rds"), app_plain_frame(d, "d.rds"))
  }
  # refused: the reported input (duplicated names), then empty names, a list column of
  # functions, a matrix column, a factor with codes outside its levels, not a data frame
  dup <- d[c("Age", "Fare")]
  names(dup) <- c("a", "a")
  expect_error(app_plain_frame(dup, "dup.rds"), "duplicated column names (`a`)", fixed = TRUE, class = "detanon_error_column")
  dup3 <- d[c("Age", "Fare", "Sex")]
  names(dup3) <- c("b", "a", "b")
  expect_error(app_plain_frame(dup3, "dup3.rds"), "(`b`)", fixed = TRUE, class = "detanon_error_column")
  empty <- d[c("Age", "Fare")]
  names(empty) <- c("a", "")
  expect_error(app_plain_frame(empty, "e.rds"), "columns without a name", class = "detanon_error_column")
  for (bad_name in c("a\nb", "a\u202eb", "\r")) {
    odd <- d[c("Age", "Fare")]
    names(odd)[2] <- bad_name
    expect_error(app_plain_frame(odd, "o.rds"), "column names with control characters", class = "detanon_error_column")
  }
  fun <- d[1:2, c("Age", "Fare")]
  fun$f <- list(function() 1, function() 2)
  expect_error(app_plain_frame(fun, "f.rds"), "column `f` is list", class = "detanon_error_column")
  mat <- d[1:2, c("Age", "Fare")]
  mat$m <- matrix(1:4, 2)
  expect_error(app_plain_frame(mat, "m.rds"), "column `m` is integer with dimensions", class = "detanon_error_column")
  fac <- d[1:2, c("Age", "Sex")]
  fac$Sex <- structure(c(1L, 5L), levels = c("female", "male"), class = "factor")
  expect_error(app_plain_frame(fac, "fac.rds"), "column `Sex` is factor", class = "detanon_error_column")
  expect_error(app_plain_frame(list(a = 1), "l.rds"), "holds an object of class list, not a data frame",
               class = "detanon_error_data")
  expect_error(app_plain_frame(d[0, ], "z.rds"), "has no records or no columns", class = "detanon_error_data")
  expect_snapshot(error = TRUE, {
    app_plain_frame(dup, "dup.rds")
    app_plain_frame(fun, "f.rds")
  })
})

test_that("a CSV file that is not UTF-8 (an Excel export) is read as Windows-1252 or latin1, and the app says so", {
  skip_if_not_installed("shiny")
  dir <- withr::local_tempdir()
  withr::local_dir(dir)
  d <- titanic_csv()[-1]
  d$Sex <- ifelse(d$Sex == "male", "m\u00e4nnlich", "weiblich")
  d$Port <- rep_len(c("K\u00f8benhavn", "Cherbourg-Octeville", "Queenstown \u20ac"), nrow(d))
  lines <- function(d) c(paste(names(d), collapse = ","), do.call(paste, c(unname(as.list(d)), sep = ",")))
  write_bytes <- function(enc) {
    function(x, path) writeBin(iconv(paste0(paste(lines(x), collapse = "\r\n"), "\r\n"), "UTF-8", enc, toRaw = TRUE)[[1]], path)
  }
  # the reported input: a Windows-1252 file (latin1 letters and the euro sign)
  up <- app_upload(d, "export.csv", write = write_bytes("CP1252"))
  expect_false(validUTF8(rawToChar(readBin(up$datapath, "raw", 1e6))))
  shiny::testServer(app_server(), {
    session$setInputs(file = up)
    expect_false(rv$error)
    expect_match(rv$status, "Loaded export.csv: 891 records, 7 columns (the file is not UTF-8: read as Windows-1252",
                 fixed = TRUE)
    expect_identical(rv$data$Sex, d$Sex)
    expect_identical(rv$data$Port, d$Port)
    expect_identical(rv$source$encoding, "CP1252")
    set_and_run(session, app_good_inputs(identifiers = character(), strata = c("Pclass", "Sex")), 1)
    expect_false(rv$error, label = rv$status)
    code <- readLines(output$dl_code)
    expect_true(any(grepl("utils::read.csv(\"export.csv\", fileEncoding = \"CP1252\")", code, fixed = TRUE)))
    expect_true(app_utf8_code %in% code)
    expect_identical(Encoding(unique(rv$data$Sex)), c("UTF-8", "unknown"))
    file.copy(up$datapath, "export.csv")
    env <- new.env(parent = globalenv())
    eval(parse(text = code), env)
    expect_identical(plain_release(env$release), plain_release(rv$run$release))
  })
  # variants: bytes Windows-1252 leaves undefined (latin1), UTF-8 with and without a byte
  # order mark (no note), ASCII
  d2 <- d[c("Age", "Fare", "Sex")]
  d2$Sex[1:3] <- "\u0081\u00e9"
  bom <- function(x, path) writeBin(c(as.raw(c(0xef, 0xbb, 0xbf)), charToRaw(paste0(paste(lines(x), collapse = "\n"), "\n"))), path)
  for (case in list(list(app_upload(d2, "l1.csv", write = write_bytes("latin1")), "latin1", "latin1 (ISO-8859-1)"),
                    list(app_upload(d2, "u8.csv", write = write_bytes("UTF-8")), "UTF-8-BOM", NULL),
                    list(app_upload(d2, "bom.csv", write = bom), "UTF-8-BOM", NULL),
                    list(app_upload(d2[1:2], "ascii.csv", write = write_bytes("UTF-8")), NULL, NULL))) {
    shiny::testServer(app_server(), {
      session$setInputs(file = case[[1]])
      expect_false(rv$error)
      expect_identical(rv$source$encoding, case[[2]], label = case[[1]]$name)
      expect_identical(names(rv$data), names(d2)[seq_along(rv$data)])
      if (ncol(rv$data) == 3L) expect_identical(rv$data$Sex, d2$Sex)
      if (is.null(case[[3]])) expect_false(grepl("not UTF-8", rv$status, fixed = TRUE))
      else expect_match(rv$status, paste0("read as ", case[[3]]), fixed = TRUE)
    })
  }
})

test_that("duplicated column names are refused with a message and the session goes on", {
  skip_if_not_installed("shiny")
  dup <- setNames(titanic_paper()[c("Age", "Fare", "Sex")], c("a", "a", "Sex"))
  up <- app_upload(dup, "dup.rds", write = function(x, path) saveRDS(x, path))
  shiny::testServer(app_server(), {
    session$setInputs(example = 1)
    session$setInputs(file = up)
    expect_true(rv$error)
    expect_match(rv$status, if (app_rds_ok()) "\"dup.rds\" has duplicated column names (`a`)" else "CVE-2024-27322",
                 fixed = TRUE)
    expect_match(rv$status, "The data loaded before are kept.", fixed = TRUE)
    expect_identical(nrow(rv$data), 891L)
    set_and_run(session, app_good_inputs(), 1)
    expect_false(rv$error)
  })
  # a CSV file with a repeated header gets unique names from read.csv()
  csv <- app_upload(dup, "dup.csv", row.names = FALSE)
  got <- app_read_file(csv$datapath, csv$name)
  expect_identical(names(got), c("a", "a.1", "Sex"))
})

test_that("the release download is the CSV of write_release() (so its formula-injection escaping), tied to the hash and report", {
  skip_if_not_installed("shiny")
  skip_if_not_installed("openssl")
  # cells starting with = + - @, a tab or a carriage return, in a stratum and an untouched column
  d <- titanic_csv()[-1]
  d$Sex <- ifelse(d$Sex == "male", "=HYPERLINK(\"http://x\",\"m\")", "+1-2")
  d$Note <- rep_len(c("@SUM(A1)", "-3", "\tcmd", "\rx", "plain"), nrow(d))
  up <- app_upload(d, "inject.csv", row.names = FALSE)
  shiny::testServer(app_server(), {
    session$setInputs(file = up)
    set_and_run(session, app_good_inputs(identifiers = character(), strata = c("Pclass", "Sex")), 1)
    expect_false(rv$error)
    run <- rv$run
    session$setInputs(override = TRUE) # plain anonymise() misses the limits
    csv <- output$dl_release
    expect_identical(readBin(csv, "raw", 1e7), readBin(run$csv, "raw", 1e7))
    # what write_release() writes for the same release, whatever its row order
    again <- write_release(run$release, tempfile(fileext = ".csv"))
    expect_identical(sorted_lines(csv), sorted_lines(again))
    expect_identical(sha256_file(csv), run$hash)
    html <- paste(readLines(output$dl_report), collapse = "\n")
    expect_has(html, run$hash)
    expect_has(html, "the bytes of release.csv")
  })
})

test_that("an error the app did not foresee becomes a message, and the session goes on", {
  skip_if_not_installed("shiny")
  # a column whose unique() fails (an S3 class of a package the app does not know)
  registerS3method("unique", "detanon_test_boom", function(x, ...) stop("unique() failed"), envir = baseenv())
  d <- titanic_paper()
  d$Odd <- structure(seq_len(nrow(d)), class = "detanon_test_boom")
  shiny::testServer(app_server(d), {
    expect_true(rv$error)
    expect_identical(rv$status, "The data given to detanon_app() were not loaded: unique() failed")
    expect_null(rv$data)
    session$setInputs(example = 1)
    expect_false(rv$error)
    set_and_run(session, app_good_inputs(), 1)
    expect_false(rv$error)
    expect_identical(nrow(rv$run$release), 891L)
  })
})

# ---- in a real browser -----------------------------------------------------------------

test_that("the search with a key: verdict per limit, download, a script without the key", {
  skip_if_not_installed("shiny")
  skip_if_not_installed("openssl")
  up <- app_upload(titanic_csv(), "titanic.csv", row.names = FALSE)
  d <- utils::read.csv(up$datapath)
  shiny::testServer(app_server(), {
    session$setInputs(file = up)
    # integer-coded categories (Pclass, Family, Survived) are offered as candidate strata
    expect_identical(app_candidate_strata(rv$data, "PassengerId"), c("Survived", "Pclass", "Sex", "Family"))
    session$setInputs(gen_key = 1)
    expect_match(rv$status, "never publish it", fixed = TRUE)
    session$setInputs(identifiers = "PassengerId", vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                      k = 3, method = "tune_release", worst = 0.1, top_m = 0.3,
                      tune_methods = c("anonymise", "mdav", "keyed"), key = "", formula = "", family = "gaussian")
    # (testServer does not run updateTextInput(): the key a user would have from the button)
    key <- app_new_key()
    expect_match(key, "^[A-Za-z0-9]{32}$")
    expect_false(identical(key, app_new_key()))
    # Titanic as published, Survived unchanged: the default intruder holds it, and 3 records
    # are in cells below k; with the default choice the search names the column and says
    # what to choose in the app (not the console's argument)
    session$setInputs(key = key, run = 1)
    expect_true(rv$error)
    expect_match(rv$status, "the search returned no release: the default intruder holds every published column",
                 fixed = TRUE)
    expect_match(rv$status, "(Survived); on them and the strata, 3 records (0.3%) are in cells of fewer than 3",
                 fixed = TRUE)
    expect_match(rv$status, "choose \"leave those records out\"", fixed = TRUE)
    expect_false(grepl("small_strata", rv$status, fixed = TRUE))
    expect_null(rv$run)
    # (an explicit "fail" is the same)
    session$setInputs(tune_small_strata = "fail", run = 2)
    expect_true(rv$error)
    expect_match(rv$status, "choose \"leave those records out\"", fixed = TRUE)
    expect_null(rv$run)
    # the choice the message suggests: those 3 records left out, the others released
    session$setInputs(tune_small_strata = "suppress", run = 3)
    expect_false(rv$error)
    expect_false(rv$warn)
    run <- rv$run
    expect_true(run$passes)
    expect_identical(nrow(run$release), 888L)
    expect_identical(nrow(run$work), 888L)
    expect_identical(run$args$small_strata, "suppress")
    expect_match(rv$status, "chosen by tune_release(): it meets every limit", fixed = TRUE)
    expect_match(rv$status, "3 records of cells of fewer than 3 records on the strata and the published columns (Survived) left out",
                 fixed = TRUE)
    expect_match(output$verdict$html, "Verdict: the release meets every limit it was checked against", fixed = TRUE)
    expect_match(output$verdict$html, "worst one-record attack", fixed = TRUE)
    expect_match(output$verdict$html, "Survived", fixed = TRUE)
    # changing either search setting marks the release as stale
    session$setInputs(tune_small_strata = "fail")
    expect_match(output$run_summary$html, "run_stale", fixed = TRUE)
    session$setInputs(tune_small_strata = "suppress", sensitive = "Survived")
    expect_match(output$run_summary$html, "run_stale", fixed = TRUE)
    session$setInputs(sensitive = NULL)
    expect_false(grepl("run_stale", output$run_summary$html, fixed = TRUE))
    # the release is the one tune_release() chooses with that key and that choice
    work <- remove_identifiers(d, cols = "PassengerId")
    ref <- suppressMessages(tune_release(work, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3,
                                         worst = 0.1, top_m = 0.3, methods = c("anonymise", "mdav", "keyed"),
                                         key = key, small_strata = "suppress", categorical = "none", seed = 1))
    expect_identical(ref$n_suppressed, 3L)
    expect_identical(plain_release(run$release), plain_release(ref$release))
    expect_identical(run$tuned$chosen$settings, ref$chosen$settings)
    # the measures compare the records released with their own originals
    expect_identical(run$work$Survived, run$release$Survived)
    expect_identical(run$work$Sex, run$release$Sex)
    # offered for download without an override; the download has the 888 records
    expect_false(grepl("dl_blocked", output$dl_release_ui$html, fixed = TRUE))
    csv <- output$dl_release
    expect_identical(sha256_file(csv), run$hash)
    expect_identical(nrow(utils::read.csv(csv)), 888L)
    html <- paste(readLines(output$dl_report), collapse = "\n")
    expect_has(html, run$hash)
    # the key is in no output: not the script, not the report, not the run's arguments
    code <- readLines(output$dl_code)
    expect_false(any(grepl(key, c(code, html, deparse(run$args)), fixed = TRUE)))
    expect_true(any(grepl("key = Sys.getenv(\"DETANON_KEY\")", code, fixed = TRUE)))
    expect_true(any(grepl("never publish it", code, fixed = TRUE)))
    expect_true(any(grepl("small_strata = \"suppress\"", code, fixed = TRUE)))
    # the script reproduces the release given the key in the environment
    old <- setwd(dirname(up$datapath))
    on.exit(setwd(old), add = TRUE)
    withr::local_envvar(DETANON_KEY = key)
    env <- new.env(parent = globalenv())
    suppressMessages(eval(parse(text = code), env))
    expect_identical(plain_release(env$release), plain_release(run$release))
    expect_identical(nrow(utils::read.csv("release.csv")), 888L)
    # a variant: without keyed groups no key is needed, and none is mentioned; the same
    # 3 records left out
    session$setInputs(key = "", tune_methods = c("anonymise", "mdav"), run = 4)
    expect_false(rv$error)
    expect_false(rv$run$keyed)
    expect_identical(rv$run$tuned$n_suppressed, 3L)
    expect_identical(nrow(rv$run$release), 888L)
    expect_false(any(grepl("DETANON_KEY", script(), fixed = TRUE)))
    # another variant: k = 5 (cells of fewer than 5 on the strata and Survived left out)
    session$setInputs(k = 5, run = 5)
    ref5 <- suppressMessages(tune_release(work, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 5,
                                          methods = c("anonymise", "mdav"), small_strata = "suppress", categorical = "none", seed = 1))
    expect_false(rv$error)
    expect_gt(ref5$n_suppressed, 3L)
    expect_identical(rv$run$tuned$n_suppressed, ref5$n_suppressed)
    expect_identical(plain_release(rv$run$release), plain_release(ref5$release))
    # Survived declared sensitive: not a key of the intruder, so no record is left out; the
    # inference attack guesses it, in the search, the script and the report
    session$setInputs(k = 3, sensitive = "Survived", tune_small_strata = "fail", run = 6)
    refs <- suppressMessages(tune_release(work, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3,
                                          methods = c("anonymise", "mdav"), sensitive = "Survived", categorical = "none", seed = 1))
    expect_identical(refs$keys, character())
    expect_identical(is.null(refs$release), rv$error)
    expect_match(rv$status, if (is.null(refs$release)) "inference" else "it meets every limit", fixed = TRUE)
    expect_false(grepl("leave those records out", rv$status, fixed = TRUE))
    # the script of a search with a sensitive column holds it, in the search and the report
    s <- app_settings(list(identifiers = "PassengerId", vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3,
                           method = "tune_release", tune_methods = "anonymise", sensitive = "Survived",
                           tune_small_strata = "suppress"), d)
    expect_identical(s$args$sensitive, "Survived")
    sc <- app_script(list(kind = "example", name = "titanic_paper()"), s$identifiers, s$verb, s$args, k = s$k)
    calls <- parse(text = sc, keep.source = FALSE)
    tune_call <- calls[[which(script_calls(sc) == "tuned <- tune_release")]][[3L]]
    expect_identical(tune_call$sensitive, "Survived")
    expect_identical(tune_call$small_strata, "suppress")
    expect_identical(calls[[which(script_calls(sc) == "release_report")]]$sensitive, "Survived")
    # limits no candidate meets: a message, no release
    # (with the records left out, cells of 3 records cannot meet top_m = 0.001: no advice to
    # leave out records, which would not help)
    session$setInputs(sensitive = NULL, tune_small_strata = "suppress", worst = 0.001, top_m = 0.001, run = 7)
    expect_true(rv$error)
    expect_match(rv$status, "the limit `top_m` = 0.001 cannot be met", fixed = TRUE)
    expect_match(rv$status, "In the app: loosen the limits", fixed = TRUE)
    expect_false(grepl("leave those records out", rv$status, fixed = TRUE))
    # limits no candidate meets, with no published column: a message, no release
    session$setInputs(identifiers = c("PassengerId", "Survived"), run = 8)
    expect_true(rv$error)
    expect_match(rv$status, "no candidate of the search met every limit", fixed = TRUE)
  })
})

# ---- categorical keys -------------------------------------------------------------------

# sdcMicro's testdata with its documented keys, weights and household ids (the issue's input)
testdata_app <- function() {
  e <- new.env()
  utils::data("testdata", package = "sdcMicro", envir = e)
  d <- e$testdata
  d[c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "expend", "income", "savings",
      "sampling_weight", "ori_hid")]
}
td_keys <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex")

# The cells of the table of a renderTable() output, row by row.
table_cells <- function(html) {
  cells <- regmatches(html, gregexpr("<td>[^<]*</td>", html))[[1]]
  trimws(gsub("</?td>", "", cells))
}

test_that("categorical keys: their risk before masking, and after suppression and PRAM, as the measures give it", {
  skip_if_not_installed("shiny")
  skip_if_not_installed("sdcMicro")
  td <- testdata_app()
  shiny::testServer(app_server(td), {
    session$setInputs(identifiers = c("ori_hid", "sampling_weight"), vars = c("expend", "income", "savings"),
                      strata = c("urbrur", "sex"), keys = td_keys, weights = "sampling_weight",
                      household = "ori_hid", suppress = FALSE, pram = FALSE, suppress_k = 3, pd = 0.8, pram_seed = 1)
    ref <- risk_individual(td, td_keys, weights = "sampling_weight", household = "ori_hid")
    cells <- table_cells(output$cat_risk)
    # the keys as loaded: 281 records below 3, the weighted and household risks of risk_individual()
    expect_identical(cells[2], as.character(sum(ref$fk < 3)))
    expect_identical(cells[2], "281")
    expect_identical(cells[c(6, 8)], c(format(round(ref$expected, 2), nsmall = 2), pct(ref$global_risk)))
    expect_identical(cells[14], format(round(ref$household_expected, 2), nsmall = 2))
    expect_false(grepl("After the categorical steps", output$cat_risk, fixed = TRUE))
    # local suppression: the counts shown are those of suppress_local()'s output
    session$setInputs(suppress = TRUE)
    sup <- suppressMessages(suppress_local(td, td_keys, k = 3))
    after <- risk_individual(sup, td_keys, weights = "sampling_weight", household = "ori_hid")
    expect_identical(plain_release(categorical()$after), plain_release(sup))
    cells <- table_cells(output$cat_risk)
    expect_match(output$cat_risk, "After the categorical steps", fixed = TRUE)
    expect_identical(cells[2:3], c("281", "0"))
    expect_identical(cells[c(8, 9)], c(format(round(ref$expected, 2), nsmall = 2),
                                       format(round(after$expected, 2), nsmall = 2)))
    # a variant: k = 5 and importance (urbrur and sex kept)
    session$setInputs(suppress_k = 5, importance = c("urbrur", "sex"))
    sup5 <- suppressMessages(suppress_local(td, td_keys, k = 5, importance = c(1, 3, 3, 3, 3, 3, 2)))
    expect_identical(plain_release(categorical()$after), plain_release(sup5))
    expect_false(anyNA(categorical()$after[c("urbrur", "sex")]))
    cells <- table_cells(output$cat_risk)
    expect_identical(cells[1:3], c("Records whose keys fewer than 5 records share",
                                   as.character(sum(ref$fk < 5)), "0"))
    # PRAM on the suppressed keys, reproducible from its seed, another seed another draw
    session$setInputs(suppress_k = 3, importance = NULL, pram = TRUE, pram_vars = c("water", "walls"), pd = 0.7,
                      pram_seed = 7)
    pr <- suppressMessages(anonymise_pram(sup, vars = c("walls", "water"), pd = 0.7, seed = 7))
    first <- categorical()$after
    expect_identical(plain_release(first), plain_release(pr))
    session$setInputs(pram_seed = 8)
    expect_false(identical(categorical()$after$walls, first$walls))
    session$setInputs(pram_seed = 7)
    expect_identical(categorical()$after$walls, first$walls)
    # PRAM makes combinations rare again: the table says so
    expect_identical(table_cells(output$cat_risk)[3],
                     as.character(sum(risk_frequencies(pr, td_keys)$fk < 3)))
  })
})

test_that("the categorical steps run before the masking: release, verdict and script include them", {
  skip_if_not_installed("shiny")
  skip_if_not_installed("sdcMicro")
  td <- testdata_app()[1:2500, ] # (the search's battery on every record takes long)
  shiny::testServer(app_server(td), {
    set_and_run(session, app_good_inputs(identifiers = c("ori_hid", "sampling_weight"),
                                         vars = c("expend", "income", "savings"), strata = c("urbrur", "sex"),
                                         method = "tune_release", tune_methods = "mdav", tune_small_strata = "suppress",
                                         keys = td_keys, weights = "sampling_weight", household = "ori_hid",
                                         suppress = TRUE, suppress_k = 3, importance = c("urbrur", "sex"),
                                         pram = TRUE, pram_vars = "walls", pd = 0.8, pram_seed = 3), 1)
    expect_false(rv$error)
    run <- rv$run
    work <- remove_identifiers(td, cols = c("ori_hid", "sampling_weight"))
    sup <- suppressMessages(suppress_local(work, td_keys, k = 3, importance = c(1, 3, 3, 3, 3, 3, 2)))
    pr <- suppressMessages(anonymise_pram(sup, vars = "walls", pd = 0.8, seed = 3))
    # the search ran on the keys as released: the published keys are those of `pr`, and
    # the intruder of its battery holds them (the records they leave in cells of fewer
    # than 3, counted exactly, are left out)
    kept <- pr[run$tuned$kept, ]
    rownames(kept) <- NULL
    expect_identical(plain_release(run$work), plain_release(kept))
    expect_identical(run$release[td_keys], run$work[td_keys])
    expect_setequal(run$tuned$keys, setdiff(td_keys, c("urbrur", "sex")))
    expect_identical(run$battery$n, nrow(run$release))
    expect_identical(nrow(run$release), nrow(td) - run$tuned$n_suppressed)
    # what the steps did is in the run's notes
    expect_true(any(grepl("suppressed .* cells", run$notes)))
    expect_true(any(grepl("by invariant PRAM", run$notes, fixed = TRUE)))
    # the script holds both steps after the identifiers, and reproduces the release
    code <- strsplit(output$code, "\n")[[1]]
    steps <- c("data <- remove_identifiers", "data <- suppress_local", "data <- anonymise_pram",
               "tuned <- tune_release")
    at <- match(steps, script_calls(code[-grep("^data <- data", code)]))
    expect_false(anyNA(at))
    expect_true(all(diff(at) > 0))
    dir <- withr::local_tempdir()
    old <- setwd(dir)
    on.exit(setwd(old), add = TRUE)
    env <- new.env(parent = globalenv())
    env$data <- td
    suppressMessages(eval(parse(text = code), env))
    expect_identical(plain_release(env$release), plain_release(run$release))
    # a changed step marks the release as stale
    expect_false(grepl("run_stale", output$run_summary$html, fixed = TRUE))
    session$setInputs(pram_seed = 4)
    expect_match(output$run_summary$html, "run_stale", fixed = TRUE)
  })
})

test_that("hostile values of the categorical inputs are refused with a message, and nothing is run", {
  skip_if_not_installed("shiny")
  dir <- withr::local_tempdir()
  marker <- file.path(dir, "x")
  shiny::testServer(app_server(), {
    session$setInputs(example = 1)
    bad <- list(
      list(list(keys = "Height"), "`keys` names columns that are not in the data: `Height`"),
      list(list(keys = list("Sex")), "`keys` must be a character vector of column names"),
      list(list(keys = sprintf("file.create(%s)", deparse(marker))), "`keys` names columns that are not in the data"),
      list(list(keys = "Age"), "`keys`: `Age` is a variable to mask"),
      list(list(keys = c("PassengerId", "Sex")), "`keys`: `PassengerId` is a direct identifier"),
      list(list(keys = "Sex", weights = c("Fare", "Age")), "`weights` must be at most one column"),
      list(list(keys = "Sex", weights = "Sex"), "`weights` (Sex) must not be one of `strata`"),
      list(list(keys = "Sex", weights = "Fare"), "`weights` column `Fare` must hold finite sampling weights >= 1"),
      list(list(keys = "Sex", household = "Sex"), "`household` (Sex) must not be one of `strata` or `weights`"),
      list(list(keys = "Sex", household = c("Pclass", "Family")), "`household` must be at most one column"),
      list(list(keys = "Sex", suppress = "yes"), "`suppress` must be TRUE or FALSE"),
      list(list(keys = NULL, suppress = TRUE, suppress_k = 3), "`suppress`: choose the key columns"),
      list(list(keys = "Sex", suppress = TRUE, suppress_k = 0), "`suppress_k` must be a single whole number between 1 and 891"),
      list(list(keys = "Sex", suppress = TRUE, suppress_k = "3"), "`suppress_k` must be a single whole number"),
      list(list(keys = "Sex", suppress = TRUE, suppress_k = 3, importance = c("Sex", "Sex")),
           "`importance` names a column more than once: `Sex`"),
      list(list(keys = "Sex", suppress = TRUE, suppress_k = 3, importance = "Pclass"), "`importance` must list key columns"),
      list(list(keys = "Family", suppress = TRUE, suppress_k = 3, importance = list("Family")),
           "`importance` must be a character vector of column names"),
      list(list(keys = "Sex", pram = NA), "`pram` must be TRUE or FALSE"),
      list(list(keys = "Sex", pram = TRUE, pram_vars = NULL, pd = 0.8, pram_seed = 1),
           "`pram_vars` must be one or more of the key columns (`Sex`), not NULL"),
      list(list(keys = "Sex", pram = TRUE, pram_vars = "Pclass", pd = 0.8, pram_seed = 1),
           "`pram_vars` must be one or more of the key columns"),
      list(list(keys = "Sex", pram = TRUE, pram_vars = "Sex", pd = 1.5, pram_seed = 1),
           "`pd` must be a single finite number >= 0 and <= 1, not 1.5"),
      list(list(keys = "Sex", pram = TRUE, pram_vars = "Sex", pd = "0.8", pram_seed = 1), "`pd` must be a single finite number"),
      list(list(keys = "Sex", pram = TRUE, pram_vars = "Sex", pd = 0.8, pram_seed = 1.5),
           "`pram_seed` must be a single whole number"))
    for (i in seq_along(bad)) {
      set_and_run(session, do.call(app_good_inputs, bad[[i]][[1]]), i)
      expect_true(rv$error, label = bad[[i]][[2]])
      expect_match(rv$status, "The release was not made: `", fixed = TRUE, label = bad[[i]][[2]])
      expect_match(rv$status, bad[[i]][[2]], fixed = TRUE, label = bad[[i]][[2]])
      expect_null(rv$run)
      # the Categorical keys tab shows the same message instead of a table
      expect_match(output$cat_status$html, htmltools::htmlEscape(bad[[i]][[2]]), fixed = TRUE, label = bad[[i]][[2]])
      expect_error(output$cat_risk, class = "shiny.silent.error")
    }
    expect_false(file.exists(marker))
    # valid categorical settings afterwards: a release, with the steps in the script
    set_and_run(session, app_good_inputs(keys = c("Survived", "Family"), suppress = TRUE, suppress_k = 2,
                                         importance = "Survived", pram = FALSE), 100)
    expect_false(rv$error)
    expect_true(any(grepl("suppress_local(data, strata = c(\"Survived\", \"Family\"), k = 2L", script(), fixed = TRUE)))
  })
  d <- titanic_paper()
  expect_snapshot(error = TRUE, {
    app_settings(app_good_inputs(keys = "Age"), d)
    app_settings(app_good_inputs(keys = "Sex", pram = TRUE, pram_vars = "Pclass", pd = 0.8, pram_seed = 1), d)
    app_settings(app_good_inputs(keys = "Sex", suppress = TRUE, suppress_k = 3, importance = "Pclass"), d)
  })
})

test_that("k = 40 with small strata: the error recommends only policies the dropdown offers", {
  skip_if_not_installed("shiny")
  shiny::testServer(app_server(), {
    session$setInputs(example = 1)
    set_and_run(session, app_good_inputs(k = 40, strata = c("Pclass", "Sex", "Family")), 1)
    expect_true(rv$error)
    # (the console's advice was `small_strata = "suppress"`, which the dropdown does not offer)
    expect_match(rv$status, "strata have fewer than k = 40 records", fixed = TRUE)
    expect_false(grepl("suppress", rv$status, fixed = TRUE))
    expect_false(grepl("merge", rv$status, fixed = TRUE))
    expect_match(rv$status, "Lower k, or choose fewer strata on the Roles tab", fixed = TRUE)
    # and what it recommends works: fewer strata
    set_and_run(session, app_good_inputs(k = 40, strata = c("Pclass", "Sex")), 2)
    expect_false(rv$error)
    expect_identical(rv$run$args$strata, c("Pclass", "Sex"))
    # another k, other strata: the same advice
    set_and_run(session, app_good_inputs(k = 200, strata = c("Pclass", "Sex")), 3)
    expect_true(rv$error)
    expect_false(grepl("suppress|merge", rv$status))
    expect_match(rv$status, "Lower k, or choose fewer strata", fixed = TRUE)
  })
})

test_that("detanon_app(port = ) from Rscript runs and listens on that port of 127.0.0.1", {
  skip_on_cran()
  skip_if_not_installed("shiny")
  skip_if_not_installed("processx")
  port <- free_port()
  log <- tempfile("app", fileext = ".log")
  # the call as a user types it: no `run`, no `host`
  p <- processx::process$new(file.path(R.home("bin"), "Rscript"),
                             c("-e", sprintf("detanon::detanon_app(port = %d)", port)), stdout = log, stderr = "2>&1",
                             env = c("current", R_LIBS = paste(.libPaths(), collapse = .Platform$path.sep), R_TESTS = ""),
                             cleanup = TRUE)
  on.exit(p$kill(), add = TRUE)
  url <- sprintf("http://127.0.0.1:%d/", port)
  page <- NULL
  deadline <- Sys.time() + 60
  while (is.null(page) && Sys.time() < deadline && p$is_alive()) {
    page <- tryCatch(local({
      con <- url(url)
      on.exit(close(con))
      suppressWarnings(readLines(con))
    }), error = function(e) NULL)
    if (is.null(page)) Sys.sleep(0.3)
  }
  expect_true(p$is_alive(), label = paste(readLines(log), collapse = "\n"))
  expect_true(any(grepl("detanon: prepare, check and document a release", page, fixed = TRUE)))
  expect_match(paste(readLines(log), collapse = "\n"), sprintf("Listening on http://127.0.0.1:%d", port), fixed = TRUE)
})

test_that("in headless Chromium: load Titanic, set roles, search with a key, see the verdict, download", {
  skip_on_cran()
  skip_if_not_installed("shiny")
  skip_if_not_installed("processx")
  skip_if_not_installed("jsonlite")
  skip_if_not_installed("openssl")
  chrome <- chromium_path()
  skip_if(is.null(chrome), "Chromium not found (install Debian's chromium, or set DETANON_CHROMIUM to its path): browser test skipped")
  # screenshots go to a temporary folder, or to $DETANON_SCREENSHOTS (to inspect them, or to
  # refresh man/figures)
  shots <- Sys.getenv("DETANON_SCREENSHOTS", tempfile("shots"))
  dir.create(shots, showWarnings = FALSE, recursive = TRUE)
  csv <- app_upload(titanic_csv(), "titanic.csv", row.names = FALSE)$datapath

  app <- start_app_process()
  on.exit(app$kill(), add = TRUE)
  br <- cdp_browser(chrome)
  on.exit(br$close(), add = TRUE)
  downloads <- tempfile("downloads")
  dir.create(downloads)
  br$call("Browser.setDownloadBehavior", list(behavior = "allow", downloadPath = downloads), session = FALSE)
  br$navigate(app$url)
  expect_true(br$wait_for("window.Shiny && Shiny.shinyapp && Shiny.shinyapp.isConnected()"))
  expect_true(br$wait_for("document.querySelector('#file') !== null"))

  # load: the file input, as a user picking the file
  br$set_file("#file", csv)
  expect_true(br$wait_for("(document.querySelector('#data_loaded') || {}).innerText === 'titanic.csv: 891 records, 7 columns'"))
  expect_true(br$wait_for("document.querySelector('#identifiers_table').innerText.includes('PassengerId')"))
  br$screenshot(file.path(shots, "app-roles.png"))

  # roles through the selectize widgets, the method, then Anonymise
  br$eval("$('#vars')[0].selectize.setValue(['Age', 'Fare']); $('#strata')[0].selectize.setValue(['Pclass', 'Sex', 'Family']); $('#identifiers')[0].selectize.setValue(['PassengerId']); true")
  expect_true(br$wait_for("document.querySelector('#kanon').innerText.includes('3-anonymous')"))
  # integer-coded Pclass and Family are offered as candidate strata
  expect_match(br$eval("Object.values($('#strata')[0].selectize.options).filter(o => o.optgroup && o.optgroup.startsWith('Candidate')).map(o => o.value).join(',')"),
               "Pclass.*Family")
  br$eval("document.querySelector('a[data-value=\"method\"]').click(); true")
  # the search is the default method; the key comes from the button
  expect_identical(br$eval("document.querySelector('input[name=\"method\"]:checked').value"), "tune_release")
  br$eval("document.querySelector('#gen_key').click(); true")
  expect_true(br$wait_for("document.querySelector('#key').value.length === 32"))
  key <- br$eval("document.querySelector('#key').value")
  expect_match(br$eval("document.querySelector('#key_note').innerText"), "never publish it", fixed = TRUE)
  # Titanic as published (Survived unchanged): with the default choice, no release; the
  # message names Survived and the choice to make
  expect_identical(br$eval("document.querySelector('input[name=\"tune_small_strata\"]:checked').value"), "fail")
  expect_match(br$eval("document.querySelector('#tune_small_strata').innerText"), "leave those records out: those records are not released",
               fixed = TRUE)
  br$eval("document.querySelector('#formula').value = 'Fare ~ Sex + Age'; $('#formula').trigger('change'); true")
  br$eval("document.querySelector('#run').click(); true")
  expect_true(br$wait_for("(document.querySelector('#status_text') || {}).innerText !== undefined && document.querySelector('#status_text').innerText.includes('the search returned no release')", timeout = 120))
  no_release <- br$eval("document.querySelector('#status_text').innerText")
  expect_match(no_release, "published column that is not masked or sensitive (Survived)", fixed = TRUE)
  expect_match(no_release, "choose \"leave those records out\"", fixed = TRUE)
  # the choice the message suggests, as a user clicks it
  br$eval("document.querySelector('input[name=\"tune_small_strata\"][value=\"suppress\"]').click(); true")
  expect_true(br$wait_for("document.querySelector('input[name=\"tune_small_strata\"]:checked').value === 'suppress'"))
  br$eval("document.querySelector('#run').click(); true")
  expect_true(br$wait_for("(document.querySelector('#verdict_box') || {}).innerText !== undefined && document.querySelector('#verdict_box').innerText.includes('Verdict: the release meets every limit')", timeout = 120))
  expect_true(br$wait_for("document.querySelector('#run_done') !== null && document.querySelector('#run_done').innerText.includes('Release made by tune_release()')"))
  expect_true(br$wait_for("document.querySelector('#margins img') !== null && document.querySelector('#margins img').naturalWidth > 0"))
  expect_match(br$eval("document.querySelector('#status_text').className"), "app-ok", fixed = TRUE)
  expect_match(br$eval("document.querySelector('#status_text').innerText"), "3 records of cells of fewer than 3 records",
               fixed = TRUE)
  expect_match(br$eval("document.querySelector('#run_done').innerText"), "888 records", fixed = TRUE)
  # plain words in the risk table; the internal names only in the details pane
  plain_risk <- br$eval("document.querySelector('#risk_plain').innerText")
  expect_match(plain_risk, "Links each record to the nearest released record", fixed = TRUE)
  expect_false(grepl("linkage_released|precision_top10", plain_risk))
  expect_match(br$eval("document.querySelector('#risk_details').textContent"), "linkage_rate", fixed = TRUE)
  hash <- sub(".*SHA-256 of the CSV ([0-9a-f]{64}).*", "\\1", br$eval("document.querySelector('#run_done').innerText"))
  br$screenshot(file.path(shots, "app-verdict.png"))

  # download: the release and the report, through the download links
  br$eval("document.querySelector('a[data-value=\"download\"]').click(); true")
  expect_true(br$wait_for("document.querySelector('#code').innerText.includes('tune_release(data')"))
  expect_match(br$eval("document.querySelector('#code').innerText"), "small_strata = \"suppress\"", fixed = TRUE)
  expect_false(grepl(key, br$eval("document.querySelector('#code').innerText"), fixed = TRUE))
  expect_true(br$wait_for("(document.querySelector('#dl_release') || {}).href !== undefined && document.querySelector('#dl_release').getAttribute('href').includes('dl_release')"))
  expect_true(br$wait_for("(document.querySelector('#dl_report').getAttribute('href') || '').includes('dl_report')"))
  br$screenshot(file.path(shots, "app-download.png"))
  br$eval("document.querySelector('#dl_release').click(); true")
  expect_true(wait_file(file.path(downloads, "release.csv")))
  br$eval("document.querySelector('#dl_report').click(); true")
  expect_true(wait_file(file.path(downloads, "report.html"), timeout = 60))
  rel <- file.path(downloads, "release.csv")
  expect_identical(sha256_file(rel), hash)
  got <- utils::read.csv(rel)
  d <- utils::read.csv(csv)
  expect_identical(nrow(got), 888L)
  expected <- suppressMessages(tune_release(remove_identifiers(d, cols = "PassengerId"), vars = c("Age", "Fare"),
                                            strata = c("Pclass", "Sex", "Family"), k = 3, key = key,
                                            small_strata = "suppress", categorical = "none", seed = 1))$release
  expect_equal(sort_rows(got), sort_rows(plain_release(expected)), tolerance = 1e-14)
  rep <- file.path(downloads, "report.html")
  expect_has(paste(readLines(rep), collapse = "\n"), hash)
  txt <- report_text(rep)
  expect_identical(c(report_leaks(txt, d$Age, 4L), report_leaks(txt, d$Fare, 4L)), character())
  # the report renders in the browser, figures included
  br$navigate(paste0("file://", rep))
  expect_true(br$wait_for("document.images.length >= 4 && Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"))
  br$screenshot(file.path(shots, "report.png"))
  br$screenshot(file.path(shots, "report-top.png"), full = FALSE)
  expect_false(grepl(key, paste(readLines(rep), collapse = "\n"), fixed = TRUE))
  for (f in c("app-roles.png", "app-verdict.png", "app-download.png", "report.png", "report-top.png")) {
    expect_gt(file.size(file.path(shots, f)), 10000)
  }
  # a hostile file in the browser (an RDS file whose promise creates a file when read):
  # a message, no code run, and the session goes on
  marker <- tempfile("pwned")
  bad <- promise_rds(bquote(file.create(.(marker))), tempfile(fileext = ".rds"))
  br$navigate(app$url)
  expect_true(br$wait_for("window.Shiny && Shiny.shinyapp && Shiny.shinyapp.isConnected() && document.querySelector('#file') !== null"))
  br$set_file("#file", bad)
  expect_true(br$wait_for(sprintf("(document.querySelector('#status_text') || {}).innerText !== undefined && document.querySelector('#status_text').innerText.includes('%s')",
                                  if (app_rds_ok()) "could not read" else "CVE-2024-27322")))
  expect_false(file.exists(marker))
  br$screenshot(file.path(shots, "app-bad-file.png"))
  br$set_file("#file", csv)
  expect_true(br$wait_for("(document.querySelector('#data_loaded') || {}).innerText === 'titanic.csv: 891 records, 7 columns'"))
})
