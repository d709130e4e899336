# PNG screenshots of the first screen of the README (rendered to HTML with pandoc), of the
# first screen of a release report (the README's worked example: the Titanic release chosen
# by tune_release() with a key), and of the app's verdict screen (detanon_app() on the
# Titanic example: roles set, search with a generated key) and of its categorical keys
# (their risk before and after local suppression), for a look before a release of the package.
#
#   Rscript tools/screenshots.R OUTDIR [WIDTH HEIGHT]
#
# Run from the package sources with detanon installed (R_LIBS may point at a private
# library). Needs rmarkdown (and pandoc), processx, jsonlite and Chromium: the browser is
# driven by tests/testthat/helper-browser.R over a pipe (shiny too, for the app). Writes
# OUTDIR/readme-top.png, OUTDIR/report-top.png, OUTDIR/report-full.png, OUTDIR/app-verdict.png,
# OUTDIR/app-categorical.png and the HTML files they show.
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 1L) stop("usage: Rscript tools/screenshots.R OUTDIR [WIDTH HEIGHT]", call. = FALSE)
out <- args[[1L]]
width <- if (length(args) >= 2L) as.integer(args[[2L]]) else 1280L
height <- if (length(args) >= 3L) as.integer(args[[3L]]) else 900L
if (!file.exists("DESCRIPTION") || !file.exists("tests/testthat/helper-browser.R")) {
  stop("run tools/screenshots.R from the package sources", call. = FALSE)
}
for (p in c("rmarkdown", "processx", "jsonlite")) {
  if (!requireNamespace(p, quietly = TRUE)) stop("tools/screenshots.R needs the package ", p, call. = FALSE)
}
if (!rmarkdown::pandoc_available()) stop("tools/screenshots.R needs pandoc", call. = FALSE)
dir.create(out, showWarnings = FALSE, recursive = TRUE)
out <- normalizePath(out)

helpers <- new.env()
sys.source("tests/testthat/helper-browser.R", envir = helpers)
chrome <- helpers$chromium_path()
if (is.null(chrome)) stop("no Chromium found (set DETANON_CHROMIUM to its path)", call. = FALSE)

# The README as GitHub shows it, near enough: pandoc's HTML with a narrow column. The
# images are embedded, so the file can be opened from anywhere.
readme <- file.path(out, "readme.html")
css <- file.path(tempdir(), "readme.css")
writeLines(c("body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;max-width:880px;",
             "margin:auto;padding:1em 2em;line-height:1.5;color:#1f2328}",
             "pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font-size:.85em}",
             "code{font-family:monospace}table{border-collapse:collapse}",
             "th,td{border:1px solid #d0d7de;padding:.2em .6em}img{max-width:100%}"), css)
rmarkdown::pandoc_convert(normalizePath("README.md"), to = "html5", from = "gfm", output = readme,
                          options = c("--standalone", "--self-contained", "--metadata", "pagetitle=detanon",
                                      "--css", css, paste0("--resource-path=", getwd())))

# The report of the README's worked example.
suppressPackageStartupMessages(library(detanon))
d <- titanic_paper()[-1]
vars <- c("Age", "Fare")
strata <- c("Pclass", "Sex", "Family")
tuned <- tune_release(d, vars = vars, strata = strata, intruder = intruder(vars, strata, keys = "Survived"),
                      key = "a long secret phrase kept by the custodian", nthreads = 1)
report <- release_report(d, tuned, file.path(out, "report.html"),
                         formula = Survived ~ Pclass + Sex + Age + Fare + Family, family = binomial(),
                         nthreads = 1)

br <- helpers$cdp_browser(chrome, width = width, height = height)
on.exit(br$close(), add = TRUE)
shots <- character()
for (f in c("readme", "report")) {
  stopifnot(br$navigate(paste0("file://", file.path(out, paste0(f, ".html")))))
  br$wait_for("Array.from(document.images).every(i => i.complete)")
  shots <- c(shots, br$screenshot(file.path(out, paste0(f, "-top.png")), full = FALSE))
}
shots <- c(shots, br$screenshot(file.path(out, "report-full.png"), full = TRUE))

# The app's verdict screen: the Titanic example as published (Survived unchanged), roles
# set, the search with a generated key, leaving out the records Survived makes rare.
if (requireNamespace("shiny", quietly = TRUE)) {
  app <- helpers$start_app_process()
  on.exit(app$kill(), add = TRUE)
  stopifnot(br$navigate(app$url))
  ok <- function(js, timeout = 60) if (!isTRUE(br$wait_for(js, timeout = timeout))) stop("the app did not show: ", js)
  ok("window.Shiny && Shiny.shinyapp && Shiny.shinyapp.isConnected() && document.querySelector('#example') !== null")
  br$eval("document.querySelector('#example').click(); true")
  ok("(document.querySelector('#data_loaded') || {}).innerText !== undefined")
  br$eval(paste0("$('#vars')[0].selectize.setValue(['Age', 'Fare']); ",
                 "$('#strata')[0].selectize.setValue(['Pclass', 'Sex', 'Family']); ",
                 "$('#identifiers')[0].selectize.setValue(['PassengerId']); true"))
  br$eval("document.querySelector('a[data-value=\"method\"]').click(); true")
  br$eval("document.querySelector('input[name=\"tune_small_strata\"][value=\"suppress\"]').click(); true")
  ok("document.querySelector('input[name=\"tune_small_strata\"]:checked').value === 'suppress'")
  br$eval("document.querySelector('#gen_key').click(); true")
  ok("document.querySelector('#key').value.length === 32")
  br$eval("document.querySelector('#run').click(); true")
  ok("(document.querySelector('#verdict_box') || {}).innerText !== undefined && document.querySelector('#verdict_box').innerText.includes('Verdict')", 180)
  ok("document.querySelector('#verdict_box').innerText.includes('Verdict: the release meets every limit')")
  ok("document.querySelector('#margins img') !== null && document.querySelector('#margins img').naturalWidth > 0")
  shots <- c(shots, br$screenshot(file.path(out, "app-verdict.png"), full = FALSE))
  # the categorical keys: their risk as loaded and after local suppression to k = 3
  br$eval("document.querySelector('a[data-value=\"categorical\"]').click(); true")
  br$eval("$('#keys')[0].selectize.setValue(['Survived', 'Pclass', 'Sex', 'Family']); true")
  br$eval("document.querySelector('#suppress').click(); true")
  ok("(document.querySelector('#cat_risk') || {}).innerText !== undefined && document.querySelector('#cat_risk').innerText.includes('After the categorical steps')")
  shots <- c(shots, br$screenshot(file.path(out, "app-categorical.png"), full = TRUE))
} else {
  message("shiny is not installed: no screenshot of the app")
}
cat(shots, sep = "\n")
