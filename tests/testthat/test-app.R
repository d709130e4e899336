# detanon_app(): the server logic with shiny::testServer() (no browser), and the whole app
# in headless Chromium (skipped where Chromium is absent; see helper-browser.R).

app_upload <- function(d, name, write = utils::write.csv, ...) {
  dir <- tempfile("upload")
  dir.create(dir)
  path <- file.path(dir, name)
  write(d, path, ...)
  data.frame(name = name, size = file.size(path), type = "", datapath = path, stringsAsFactors = FALSE)
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
    expect_identical(rv$source, list(kind = "csv", name = "titanic.csv"))
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
    expect_false(rv$error)
    run <- rv$run
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
    # downloads: the release CSV, whose hash the report prints
    csv <- output$dl_release
    expect_identical(sha256_file(csv), run$hash)
    back <- utils::read.csv(csv)
    expect_identical(names(back), setdiff(names(d), "PassengerId"))
    # the same values, the rows in a random order (not the release's)
    expect_equal(sort(back$Age), sort(run$release$Age), tolerance = 1e-14)
    expect_false(isTRUE(all.equal(back$Age, run$release$Age)))
    html <- output$dl_report
    txt <- report_text(html)
    expect_has(paste(readLines(html), collapse = "\n"), run$hash)
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
    expect_identical(sha256_file("release.csv"),
                     run$hash)
    # changed settings are flagged until the next run
    expect_false(grepl("run_stale", output$run_summary$html, fixed = TRUE))
    session$setInputs(k = 6)
    expect_true(grepl("run_stale", output$run_summary$html, fixed = TRUE))
  })
})

test_that("anonymise_adaptive() and stir() runs are reproduced by their scripts", {
  skip_if_not_installed("shiny")
  d <- titanic_paper()[-1]
  up <- app_upload(d, "titanic.rds", write = function(x, path) saveRDS(x, path))
  for (method in c("anonymise_adaptive", "stir")) {
    shiny::testServer(app_server(), {
      session$setInputs(file = up)
      session$setInputs(identifiers = character(), vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3,
                        method = method, na = "fail", small_strata = "fail", k_max = 9, stir_method = "flatten",
                        seed = 7, formula = "")
      session$setInputs(run = 1)
      expect_false(rv$error, label = method)
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
    expect_match(rv$status, "could not read \"broken.rds\" as a RDS file", fixed = TRUE)
    session$setInputs(file = app_upload(list(1, 2), "list.rds", write = function(x, path) saveRDS(x, path)))
    expect_match(rv$status, "holds list, not a data frame", fixed = TRUE)
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
    expect_match(rv$status, "k must be a whole number >= 1, not 2.5", fixed = TRUE)
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
    expect_identical(eval(str2lang(app_read_code(up$datapath))), got)
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

# ---- in a real browser -----------------------------------------------------------------

test_that("in headless Chromium: load a file, anonymise, download the release and the report", {
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
  br$eval("document.querySelector('a[data-value=\"method\"]').click(); true")
  br$eval("document.querySelector('#formula').value = 'Survived ~ Sex + Age'; $('#formula').trigger('change'); true")
  br$eval("document.querySelector('#run').click(); true")
  expect_true(br$wait_for("(document.querySelector('#run_done') || {}).innerText !== undefined && document.querySelector('#run_done').innerText.includes('Release made by anonymise()')", timeout = 60))
  expect_true(br$wait_for("document.querySelector('#battery_table table') !== null"))
  expect_true(br$wait_for("document.querySelector('#margins img') !== null && document.querySelector('#margins img').naturalWidth > 0"))
  expect_match(br$eval("document.querySelector('#risk_table').innerText"), "linkage_rate", fixed = TRUE)
  hash <- sub(".*SHA-256 of the CSV ([0-9a-f]{64}).*", "\\1", br$eval("document.querySelector('#run_done').innerText"))
  br$screenshot(file.path(shots, "app-risk.png"))

  # download: the release and the report, through the download links
  br$eval("document.querySelector('a[data-value=\"download\"]').click(); true")
  expect_true(br$wait_for("document.querySelector('#code').innerText.includes('anonymise(data')"))
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
  expected <- anonymise(remove_identifiers(d, cols = "PassengerId"), vars = c("Age", "Fare"),
                        strata = c("Pclass", "Sex", "Family"), k = 3)
  # the same rows, in a random order
  ex <- as.data.frame(plain_release(expected))
  expect_equal(got[do.call(order, unname(as.list(got))), ], ex[do.call(order, unname(as.list(ex))), ],
               tolerance = 1e-14, ignore_attr = TRUE)
  rep <- file.path(downloads, "report.html")
  expect_has(paste(readLines(rep), collapse = "\n"), hash)
  txt <- report_text(rep)
  expect_identical(c(report_leaks(txt, d$Age, 4L), report_leaks(txt, d$Fare, 4L)), character())
  # the report renders in the browser, figures included
  br$navigate(paste0("file://", rep))
  expect_true(br$wait_for("document.images.length >= 4 && Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"))
  br$screenshot(file.path(shots, "report.png"))
  br$screenshot(file.path(shots, "report-top.png"), full = FALSE)
  for (f in c("app-roles.png", "app-risk.png", "app-download.png", "report.png", "report-top.png")) {
    expect_gt(file.size(file.path(shots, f)), 10000)
  }
  # a bad file in the browser: a message, and the session goes on
  bad <- tempfile(fileext = ".rds")
  writeLines("not an rds", bad)
  br$navigate(app$url)
  expect_true(br$wait_for("window.Shiny && Shiny.shinyapp && Shiny.shinyapp.isConnected() && document.querySelector('#file') !== null"))
  br$set_file("#file", bad)
  expect_true(br$wait_for("(document.querySelector('#status_text') || {}).innerText !== undefined && document.querySelector('#status_text').innerText.includes('could not read')"))
  br$screenshot(file.path(shots, "app-bad-file.png"))
  br$set_file("#file", csv)
  expect_true(br$wait_for("(document.querySelector('#data_loaded') || {}).innerText === 'titanic.csv: 891 records, 7 columns'"))
})
