#' A browser app for the release workflow
#'
#' Opens a shiny app in which a custodian, without writing R, loads a data file (CSV,
#' RDS, Stata `.dta` or SPSS `.sav`), assigns roles (the continuous variables to mask,
#' the strata, the direct identifiers to drop), sees the strata with their k-anonymity
#' and the identifier screen, chooses the method ([anonymise()], [anonymise_adaptive()]
#' or [stir()]) and its settings, sees the risk ([assess()], [risk_battery()]) and
#' utility of the release, and downloads the release (the CSV of [write_release()]),
#' the report ([release_report()]) and the R script that reproduces the release from
#' the file.
#'
#' The app runs on the custodian's machine and shows the original data's strata,
#' including the small ones, as the console functions do: it is a tool for the safe
#' setting. What leaves it is the release (its rows in a random order, see
#' [write_release()]) and the report (aggregates only, see [release_report()]). The
#' script (settings, file names and the seed of the published file's row order, no data)
#' is the custodian's record: keep it with the original data, since its seed and the
#' original order together would undo the random order of the published rows.
#'
#' Stata and SPSS files are read with haven; labelled columns become factors. A file
#' that cannot be read, or settings a method rejects, give a message and leave the
#' session as it was.
#'
#' @param data Optional data frame to start with (instead of loading a file).
#' @param run If `TRUE` (the default in interactive sessions), run the app; otherwise
#'   return the app object (for [shiny::runApp()] or tests).
#' @param host,port Where the app listens; by default only this machine (`127.0.0.1`).
#' @param launch.browser Passed to [shiny::runApp()].
#' @return With `run = FALSE`, a `shiny.appobj`; otherwise what [shiny::runApp()]
#'   returns when the app stops.
#' @family reports
#' @seealso [release_report()]; `vignette("release")` for the workflow in code.
#' @examples
#' if (interactive() && requireNamespace("shiny", quietly = TRUE)) {
#'   detanon_app()
#' }
#' @export
detanon_app <- function(data = NULL, run = interactive(), host = "127.0.0.1", port = NULL,
                        launch.browser = interactive()) {
  if (!requireNamespace("shiny", quietly = TRUE)) {
    stop_arg("the app needs the shiny package: install.packages(\"shiny\").", kind = "data")
  }
  if (!is.null(data)) check_data_frame(data, "data")
  run <- check_flag(run, "run")
  app <- shiny::shinyApp(ui = app_ui(), server = app_server(data))
  if (!run) return(app)
  shiny::runApp(app, host = host, port = port, launch.browser = launch.browser)
}

# ---- reading files ----------------------------------------------------------------------

app_formats <- c(csv = "CSV", rds = "RDS", dta = "Stata", sav = "SPSS")

# The R code that reads a file of `name` (the same code the script holds).
app_read_code <- function(name) {
  ext <- tolower(tools::file_ext(name))
  path <- deparse(name)
  switch(ext,
    csv = sprintf("utils::read.csv(%s)", path),
    rds = sprintf("readRDS(%s)", path),
    dta = sprintf("as.data.frame(haven::as_factor(haven::read_dta(%s), only_labelled = TRUE))", path),
    sav = sprintf("as.data.frame(haven::as_factor(haven::read_sav(%s), only_labelled = TRUE))", path),
    stop_arg("cannot read \"", name, "\": the file must end in ",
             paste0(".", names(app_formats), collapse = ", "), ".", kind = "data"))
}

# Read an uploaded file (at `path`, uploaded as `name`) with the code of app_read_code().
app_read_file <- function(path, name) {
  code <- app_read_code(name)
  ext <- tolower(tools::file_ext(name))
  if (ext %in% c("dta", "sav") && !requireNamespace("haven", quietly = TRUE)) {
    stop_arg("reading ", app_formats[[ext]], " files needs the haven package.", kind = "data")
  }
  expr <- str2lang(sub(deparse(name), deparse(path), code, fixed = TRUE))
  d <- tryCatch(eval(expr, baseenv()), error = function(e) {
    stop_arg("could not read \"", name, "\" as a ", app_formats[[ext]], " file: ", conditionMessage(e), kind = "data")
  }, warning = function(w) {
    stop_arg("could not read \"", name, "\" as a ", app_formats[[ext]], " file: ", conditionMessage(w), kind = "data")
  })
  if (!is.data.frame(d)) {
    stop_arg("\"", name, "\" holds ", class(d)[1L], ", not a data frame.", kind = "data")
  }
  if (!nrow(d) || !ncol(d)) stop_arg("\"", name, "\" has no records or no columns.", kind = "data")
  d
}

# Columns that look continuous enough to mask (numeric, more than 10 distinct values).
app_default_vars <- function(d, exclude = character()) {
  v <- names(d)[vapply(d, function(x) is_continuous(x) && length(unique(x)) > 10L, logical(1))]
  setdiff(v, exclude)
}

# The rows of as.data.frame(assess) of one kind, values to 4 significant digits.
app_measures <- function(a, kind) {
  t <- as.data.frame(a)
  t <- t[t$kind == kind, c("measure", "term", "value")]
  t$value <- formatC(t$value, digits = 4, format = "g")
  t
}

app_family <- function(name) {
  switch(name, binomial = stats::binomial(), poisson = stats::poisson(), stats::gaussian())
}

# ---- the script ---------------------------------------------------------------------------

# The R script that reproduces a release made in the app.
app_script <- function(source, identifiers, verb, args, formula = NULL, family = "gaussian", k = NULL,
                       hash = NULL, order_seed = NULL) {
  read <- switch(source$kind,
    example = "titanic_paper()",
    object = "data  # the data frame given to detanon_app()",
    app_read_code(source$name))
  call <- as.call(c(list(as.name(verb), quote(data)), args))
  report <- as.call(c(list(quote(release_report), quote(data), quote(release), "report.html"),
                      list(vars = args$vars, strata = args$strata),
                      if (!is.null(k)) list(k = k),
                      if (!is.null(formula)) list(formula = formula),
                      if (!is.null(formula) && family != "gaussian") list(family = str2lang(paste0(family, "()"))),
                      list(release_file = "release.csv")))
  c(sprintf("# Reproduces the release made in detanon_app() on %s with detanon %s.",
            format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"), utils::packageVersion("detanon")),
    if (source$kind %in% names(app_formats))
      sprintf("# Run it in the folder that holds %s.", source$name),
    "library(detanon)",
    paste("data <-", read),
    if (length(identifiers)) paste0("data <- remove_identifiers(data, cols = ", deparse1(identifiers), ")"),
    paste("release <-", paste(deparse(call, width.cutoff = 80L), collapse = "\n  ")),
    # the row order of the published file is drawn from the run's seed (kept by the custodian)
    if (!is.null(order_seed)) "# The seed orders the published rows: keep this script as private as the data.",
    paste0("write_release(release, \"release.csv\"", if (!is.null(order_seed)) paste0(", seed = ", order_seed), ")",
           if (!is.null(hash)) paste0("  # SHA-256 ", hash)),
    paste(deparse(report, width.cutoff = 80L), collapse = "\n  "))
}

# ---- UI -------------------------------------------------------------------------------

app_ui <- function() {
  shiny::fluidPage(
    title = "detanon: release workflow",
    shiny::tags$head(shiny::tags$style(shiny::HTML(
      ".app-status{margin:.5em 0;padding:.4em .6em;border-radius:4px}",
      ".app-error{background:#fde8e8;color:#8a0000}.app-ok{background:#e8f6e8;color:#064}",
      ".app-note{color:#555;font-size:.9em}"))),
    shiny::titlePanel("detanon: prepare, check and document a release"),
    shiny::sidebarLayout(
      shiny::sidebarPanel(width = 3,
        shiny::fileInput("file", "1. Data file (CSV, RDS, Stata .dta, SPSS .sav)",
                         accept = c(".csv", ".rds", ".dta", ".sav")),
        shiny::actionButton("example", "or use the Titanic example"),
        shiny::hr(),
        shiny::uiOutput("data_summary"),
        shiny::uiOutput("status")),
      shiny::mainPanel(width = 9,
        shiny::tabsetPanel(id = "tabs",
          shiny::tabPanel("Roles", value = "roles",
            shiny::h4("2. Assign roles"),
            shiny::selectizeInput("identifiers", "Direct identifiers (dropped)", choices = NULL, multiple = TRUE),
            shiny::selectizeInput("vars", "Continuous variables to mask (vars)", choices = NULL, multiple = TRUE),
            shiny::selectizeInput("strata", "Strata (categorical; masking stays within them)", choices = NULL,
                                  multiple = TRUE),
            shiny::h4("Identifier screen"),
            shiny::tableOutput("identifiers_table"),
            shiny::h4("Strata"),
            shiny::verbatimTextOutput("kanon"),
            shiny::tableOutput("strata_table"),
            shiny::h4("Columns"),
            shiny::tableOutput("columns")),
          shiny::tabPanel("Method", value = "method",
            shiny::h4("3. Choose the method"),
            shiny::radioButtons("method", NULL,
              choices = c("anonymise(): centroid of the k nearest neighbours" = "anonymise",
                          "anonymise_adaptive(): k grows where records stay close to their originals" = "anonymise_adaptive",
                          "stir(): shuffle values within clusters of k" = "stir")),
            shiny::numericInput("k", "k", value = 3, min = 1, step = 1),
            shiny::conditionalPanel("input.method == 'anonymise'",
              shiny::selectInput("small_strata", "Strata smaller than k", c("fail", "merge")),
              shiny::selectInput("na", "Missing values in the variables",
                                 c("fail", "median", "mean", "median_stratum", "mean_stratum"))),
            shiny::conditionalPanel("input.method == 'anonymise_adaptive'",
              shiny::numericInput("k_max", "largest k", value = 33, min = 2, step = 1)),
            shiny::conditionalPanel("input.method == 'stir'",
              shiny::selectInput("stir_method", "stir method", c("shuffle", "flatten")),
              shiny::numericInput("seed", "seed", value = 1, step = 1)),
            shiny::textInput("formula", "Model to compare, optional (e.g. Survived ~ Pclass + Sex + Age)", ""),
            shiny::selectInput("family", "Model family", c("gaussian", "binomial", "poisson")),
            shiny::actionButton("run", "Anonymise", class = "btn-primary")),
          shiny::tabPanel("Risk and utility", value = "risk",
            shiny::h4("4. Risk and utility of the release"),
            shiny::uiOutput("run_summary"),
            shiny::tableOutput("risk_table"),
            shiny::h4("Risk battery"),
            shiny::tableOutput("battery_table"),
            shiny::h4("Utility"),
            shiny::tableOutput("utility_table"),
            shiny::selectInput("plot_var", "Variable", choices = NULL),
            shiny::plotOutput("margins", height = "340px"),
            shiny::p(class = "app-note", "Original bins and cells of fewer than k records are not drawn.")),
          shiny::tabPanel("Download", value = "download",
            shiny::h4("5. Download"),
            shiny::downloadButton("dl_release", "Release (CSV)"),
            shiny::downloadButton("dl_report", "Report (HTML)"),
            shiny::downloadButton("dl_code", "R script"),
            shiny::h4("R script that reproduces the release"),
            shiny::verbatimTextOutput("code"))))))
}

# ---- server ------------------------------------------------------------------------------

app_server <- function(data = NULL) {
  force(data)
  function(input, output, session) {
    rv <- shiny::reactiveValues(data = NULL, source = NULL, run = NULL, status = NULL, error = FALSE)
    set_status <- function(msg, error = FALSE) {
      rv$status <- msg
      rv$error <- error
      if (error) shiny::showNotification(msg, type = "error", duration = 10)
    }
    set_data <- function(d, source) {
      rv$data <- d
      rv$source <- source
      rv$run <- NULL
      ids <- detect_identifiers(d)$column
      vars <- app_default_vars(d, ids)
      strata <- setdiff(default_strata(d), ids)
      shiny::updateSelectizeInput(session, "identifiers", choices = names(d), selected = ids)
      shiny::updateSelectizeInput(session, "vars", choices = names(d), selected = vars)
      shiny::updateSelectizeInput(session, "strata", choices = names(d), selected = strata)
      set_status(sprintf("Loaded %s: %s, %s.", source$name, plural(nrow(d), "record"), plural(ncol(d), "column")))
    }
    if (!is.null(data)) set_data(data, list(kind = "object", name = "the data given to detanon_app()"))

    shiny::observeEvent(input$file, {
      f <- input$file
      d <- tryCatch(app_read_file(f$datapath, f$name), error = function(e) e)
      if (inherits(d, "error")) {
        set_status(paste(conditionMessage(d), if (!is.null(rv$data)) "The data loaded before are kept."), error = TRUE)
      } else {
        set_data(d, list(kind = tolower(tools::file_ext(f$name)), name = f$name))
      }
    })
    shiny::observeEvent(input$example, set_data(titanic_paper(), list(kind = "example", name = "titanic_paper()")))

    roles <- shiny::reactive({
      d <- rv$data
      shiny::req(d)
      ids <- intersect(input$identifiers, names(d))
      list(identifiers = ids, vars = setdiff(intersect(input$vars, names(d)), ids),
           strata = setdiff(intersect(input$strata, names(d)), ids))
    })
    k_value <- shiny::reactive({
      k <- input$k
      if (is.null(k) || !is.numeric(k) || length(k) != 1L || is.na(k) || k < 1 || k != round(k)) NA_integer_
      else as.integer(k)
    })

    output$status <- shiny::renderUI({
      shiny::req(rv$status)
      shiny::div(class = paste("app-status", if (rv$error) "app-error" else "app-ok"), id = "status_text", rv$status)
    })
    output$data_summary <- shiny::renderUI({
      d <- rv$data
      if (is.null(d)) return(shiny::p(class = "app-note", "No data loaded."))
      shiny::p(id = "data_loaded", sprintf("%s: %s, %s", rv$source$name, plural(nrow(d), "record"),
                                           plural(ncol(d), "column")))
    })
    output$columns <- shiny::renderTable({
      d <- rv$data
      shiny::req(d)
      data.frame(column = names(d), type = vapply(d, function(x) class(x)[1L], ""),
                 distinct = vapply(d, function(x) length(unique(x)), 1L),
                 missing = vapply(d, function(x) sum(is.na(x)), 1L))
    })
    output$identifiers_table <- shiny::renderTable({
      d <- rv$data
      shiny::req(d)
      f <- detect_identifiers(d)
      if (!nrow(f)) return(data.frame(result = "No column looks like a direct identifier."))
      f[c("column", "reason")]
    })
    output$kanon <- shiny::renderText({
      r <- roles()
      k <- k_value()
      if (!length(r$strata)) return("No strata chosen: masking runs over all records together.")
      if (is.na(k)) return("k must be a whole number >= 1.")
      kan <- tryCatch(kanon_check(rv$data, r$strata, k), error = function(e) e)
      if (inherits(kan, "error")) return(conditionMessage(kan))
      paste(utils::capture.output(print(kan)), collapse = "\n")
    })
    output$strata_table <- shiny::renderTable({
      r <- roles()
      k <- k_value()
      shiny::req(length(r$strata), !is.na(k))
      tab <- tryCatch(strata_table(rv$data, r$strata, k), error = function(e) NULL)
      shiny::req(tab)
      tab <- as.data.frame(unclass(tab), stringsAsFactors = FALSE)
      utils::head(tab[order(tab$n), , drop = FALSE], 30L)
    }, caption = "Smallest 30 strata")

    # ---- run ----
    shiny::observeEvent(input$run, {
      d <- rv$data
      if (is.null(d)) return(set_status("Load a data file first.", error = TRUE))
      r <- roles()
      k <- k_value()
      if (!length(r$vars)) return(set_status("Choose at least one continuous variable to mask.", error = TRUE))
      if (is.na(k)) return(set_status(paste0("k must be a whole number >= 1, not ", format(input$k), "."), error = TRUE))
      formula <- NULL
      if (!is.null(input$formula) && nzchar(trimws(input$formula))) {
        formula <- tryCatch(stats::as.formula(input$formula), error = function(e) NULL)
        if (is.null(formula) || length(formula) != 3L) {
          return(set_status(paste0("The model \"", input$formula, "\" is not a formula such as y ~ x1 + x2."),
                            error = TRUE))
        }
      }
      family <- if (!is.null(formula) && isTRUE(input$family %in% c("binomial", "poisson"))) input$family else "gaussian"
      verb <- input$method
      args <- list(vars = r$vars, strata = if (length(r$strata)) r$strata)
      args <- c(args, switch(verb,
        anonymise = list(k = k, na = input$na, small_strata = input$small_strata),
        anonymise_adaptive = list(k = k, k_max = as.integer(input$k_max)),
        stir = list(k = k, method = input$stir_method, seed = as.integer(input$seed))))
      args <- args[!vapply(args, is.null, logical(1))]
      notes <- character()
      keep_note <- function(cnd) {
        notes <<- c(notes, conditionMessage(cnd))
        invokeRestart(if (inherits(cnd, "warning")) "muffleWarning" else "muffleMessage")
      }
      res <- tryCatch(shiny::withProgress(message = "Making the release", value = 0, {
        shiny::incProgress(0.1, detail = "removing identifiers")
        work <- if (length(r$identifiers)) remove_identifiers(d, cols = r$identifiers) else d
        shiny::incProgress(0.2, detail = paste0(verb, "()"))
        release <- withCallingHandlers(do.call(verb, c(list(work), args)), warning = keep_note, message = keep_note)
        shiny::incProgress(0.3, detail = "measuring risk and utility")
        a <- withCallingHandlers(
          assess(work, release, vars = r$vars, strata = r$strata, formula = formula, family = app_family(family),
                 deterministic = TRUE, seed = 1),
          warning = keep_note, message = keep_note)
        shiny::incProgress(0.2, detail = "risk battery")
        b <- risk_battery(work, release, vars = r$vars, strata = if (length(r$strata)) r$strata, seed = 1)
        shiny::incProgress(0.2, detail = "done")
        # the published file's rows are in a random order drawn from a fresh seed of this run
        order_seed <- fresh_seed()
        list(work = work, release = release, assess = a, battery = b, verb = verb, args = args, k = k,
             formula = formula, family = family, identifiers = r$identifiers, order_seed = order_seed,
             hash = release_hash(release, seed = order_seed)$value,
             source = rv$source, notes = unique(notes))
      }), error = function(e) e)
      if (inherits(res, "error")) {
        return(set_status(paste0("The release was not made: ", conditionMessage(res),
                                 " Change the settings and press Anonymise again."), error = TRUE))
      }
      rv$run <- res
      shiny::updateSelectInput(session, "plot_var", choices = r$vars, selected = r$vars[1L])
      set_status(sprintf("Release made by %s() (k = %d)%s.", verb, k,
                         if (length(res$notes)) paste0("; ", plural(length(res$notes), "note"), " on the Risk tab") else ""))
      shiny::updateTabsetPanel(session, "tabs", selected = "risk")
    })

    output$run_summary <- shiny::renderUI({
      run <- rv$run
      if (is.null(run)) return(shiny::p(class = "app-note", "No release yet: set the roles and method, then press Anonymise."))
      now <- list(verb = input$method, k = k_value(), roles = roles())
      stale <- !identical(now$verb, run$verb) || !identical(now$k, run$k) ||
        !identical(now$roles$vars, run$args$vars) || !identical(now$roles$identifiers, run$identifiers) ||
        !identical(if (length(now$roles$strata)) now$roles$strata, run$args$strata)
      shiny::tagList(
        shiny::p(id = "run_done", sprintf("Release made by %s(): %s; SHA-256 of the CSV %s", run$verb,
                                          plural(nrow(run$release), "record"), run$hash)),
        if (stale) shiny::p(id = "run_stale", class = "app-status app-error",
                            "The roles or settings changed since this release: press Anonymise to update it."),
        if (length(run$notes)) shiny::tags$ul(lapply(run$notes, shiny::tags$li)))
    })
    output$risk_table <- shiny::renderTable({
      run <- rv$run
      shiny::req(run)
      app_measures(run$assess, "risk")
    })
    output$utility_table <- shiny::renderTable({
      run <- rv$run
      shiny::req(run)
      app_measures(run$assess, "utility")
    })
    output$battery_table <- shiny::renderTable({
      run <- rv$run
      shiny::req(run)
      t <- as.data.frame(run$battery)
      data.frame(attack = t$attack, rate = t$rate, control = t$control_rate, advantage = t$advantage,
                 top_m = t$rate_m, precision_top10 = t$precision_top10,
                 does_not_cover = vapply(t$name, function(nm) paste(run$battery$attacks[[nm]]$not_covered, collapse = " "), ""))
    }, digits = 4)
    output$margins <- shiny::renderPlot({
      run <- rv$run
      shiny::req(run, input$plot_var %in% run$args$vars)
      v <- input$plot_var
      plot_report_margins(run$work[[v]], run$release[[v]], v, run$k)
    })

    script <- shiny::reactive({
      run <- rv$run
      shiny::req(run)
      app_script(run$source, run$identifiers, run$verb, run$args, formula = run$formula, family = run$family,
                 k = run$k, hash = run$hash, order_seed = run$order_seed)
    })
    output$code <- shiny::renderText({
      if (is.null(rv$run)) return("# No release yet.")
      paste(script(), collapse = "\n")
    })
    output$dl_release <- shiny::downloadHandler(
      filename = function() "release.csv",
      content = function(file) {
        shiny::req(rv$run)
        write_release(rv$run$release, file, seed = rv$run$order_seed)
      })
    output$dl_report <- shiny::downloadHandler(
      filename = function() "report.html",
      content = function(file) {
        run <- rv$run
        shiny::req(run)
        shiny::withProgress(message = "Writing the report", value = 0.2, {
          release_report(run$work, run$release, file, vars = run$args$vars, strata = run$args$strata,
                         k = run$k, formula = run$formula, family = app_family(run$family), seed = 1,
                         release_seed = run$order_seed)
        })
      })
    output$dl_code <- shiny::downloadHandler(
      filename = function() "release.R",
      content = function(file) writeLines(script(), file))
    invisible(rv)
  }
}
