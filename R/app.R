#' A browser app for the release workflow
#'
#' Opens a shiny app in which a custodian, without writing R, loads a data file (CSV,
#' RDS, Stata `.dta` or SPSS `.sav`), assigns roles (the continuous variables to mask,
#' the strata, the direct identifiers to drop), sees the strata with their k-anonymity
#' and the identifier screen, sets the limits of the risk (`worst` and `top_m` of
#' [tune_release()], by default 0.1 and 0.3) and the method, sees the verdict of
#' [release_report()] (each limit, met or not, in plain words), the attacks on the release
#' and its utility, and downloads the release (the CSV of [write_release()]), the report
#' ([release_report()]) and the R script that reproduces the release from the file.
#'
#' The recommended method is the search [tune_release()], over the families ticked (kNN
#' centroids, k per stratum, adaptive k, MDAV groups, keyed groups, shuffling). Its intruder
#' (that of [intruder_published()]) holds every column published unchanged, such as an
#' outcome, except the `sensitive` column the custodian may choose (the one the inference
#' attack guesses). When those columns leave records in cells too small for the limits,
#' the choice "Records that published columns make rare" decides: "no release, name the
#' columns" (`small_strata = "fail"`, the default) or "leave those records out"
#' (`"suppress"`: the release, its measures and the report cover the other records). Both
#' settings are written in the script and passed to the report. Keyed groups
#' need a secret key: "Generate a key" fills the key box with 32 random characters
#' (from `openssl::rand_bytes()` when openssl is installed). Keep the key with the original
#' data and never publish it; the app writes it nowhere (the script reads it from the
#' environment variable `DETANON_KEY`, the report does not hold it). The plain methods
#' [anonymise()], [anonymise_adaptive()] and [stir()] stay available, labelled as not safe
#' on their own: their verdict is checked against the same limits. The release is offered
#' for download only when it meets every limit, or when the custodian ticks the override
#' box, which the report then records in its title.
#'
#' The strata box lists its candidates first: categorical columns, and numeric columns
#' with at most 20 distinct whole values (integer-coded categories such as `Pclass`).
#'
#' On the tab "Categorical keys" the custodian can declare categorical key variables (columns
#' published with the release that an intruder may know of a person), a column of sampling
#' weights and one of household ids, and sees the risk of the keys before any masking: the
#' records whose keys fewer than k records share, the sample uniques, and the individual,
#' global and household risk of [risk_individual()]. Two steps on the keys can be chosen:
#' local suppression ([suppress_local()], with its `k` and the keys to keep, most important
#' first) and PRAM ([anonymise_pram()] on some of the keys, with `pd` and a seed); the
#' table then shows the risk after them as well. The steps run after the direct identifiers
#' are dropped and before the method of the Method tab, so the release publishes the keys as
#' the steps left them, the attacks of the verdict assume an intruder who holds them as
#' released, and the script holds both steps.
#'
#' The app runs on the custodian's machine and shows the original data's strata,
#' including the small ones, as the console functions do: it is a tool for the safe
#' setting. What leaves it is the release, the report (aggregates only, see
#' [release_report()]) and the script (settings and file names only, no data).
#'
#' Stata and SPSS files are read with haven; labelled columns become factors. A CSV
#' file is read as UTF-8 (with or without a byte order mark); a file that is not valid
#' UTF-8 (a common Excel export) is read as Windows-1252, else latin1, and the app says
#' so. RDS files are read only on R >= 4.4.0, since older versions of R run code hidden
#' in a crafted file when it is read (CVE-2024-27322); the file must hold a plain data
#' frame (columns of numbers, strings, logicals, factors or dates, unique names). A file
#' that cannot be read, or settings a method rejects, give a message and leave the
#' session as it was.
#'
#' The server checks every setting it receives, as a client can send any value: the
#' method is one of the four choices, the limits shares in (0, 1], the key 16 to 1000
#' characters, `k` a single whole number from 1 to the number of
#' records, the columns are columns of the data (the sensitive one at most one column, not
#' masked, a stratum or an identifier), and the other settings are among the
#' choices shown; the keys are columns that are neither identifiers nor masked, the weights
#' and household ids at most one column each (weights numeric and at least 1), the
#' suppression's `k` a whole number from 1 to the number of records, the keys to keep and
#' the columns to PRAM among the keys, `pd` a number in \[0, 1\] and the PRAM seed a whole
#' number. The model box takes a formula over the columns of the data (without
#' the identifiers), numbers, the operators `+ - * / : ^ ( )`, `.` and the functions
#' `I()`, `log()`, `log1p()`, `log2()`, `log10()`, `exp()`, `sqrt()`, `abs()`, `poly()`,
#' `factor()` and `scale()`; anything else is refused before it is evaluated. Uploaded
#' file names reach the script only as quoted strings.
#'
#' @param data Optional data frame to start with (instead of loading a file).
#' @param run If `TRUE` (the default), run the app, also from `Rscript` (e.g.
#'   `Rscript -e 'detanon::detanon_app(port = 8765)'`); `FALSE` returns the app object
#'   (for [shiny::runApp()] or tests).
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
detanon_app <- function(data = NULL, run = TRUE, host = "127.0.0.1", port = NULL,
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

# readRDS() before R 4.4.0 evaluates a promise serialised in the file (CVE-2024-27322):
# the app reads RDS files only on versions that refuse to unserialise promises.
app_rds_ok <- function(version = getRversion()) version >= "4.4.0"

# The call that reads the file at `path` (a string constant, never parsed from text): the
# app evaluates it on the uploaded copy, the script holds it deparsed with the file's name.
app_read_call <- function(path, ext, encoding = NULL) {
  switch(ext,
    csv = if (is.null(encoding)) bquote(utils::read.csv(.(path)))
          else bquote(utils::read.csv(.(path), fileEncoding = .(encoding))),
    rds = bquote(readRDS(.(path))),
    dta = bquote(as.data.frame(haven::as_factor(haven::read_dta(.(path)), only_labelled = TRUE))),
    sav = bquote(as.data.frame(haven::as_factor(haven::read_sav(.(path)), only_labelled = TRUE))))
}

# The encoding to read a CSV file with: NULL (ASCII), "UTF-8-BOM" (valid UTF-8, with or
# without a byte order mark), else "CP1252" (Windows' Western European code page, a
# superset of latin1's printable characters) when every byte is defined in it, else
# "latin1" (every byte is a character).
app_csv_encoding <- function(path, name) {
  bytes <- readBin(path, "raw", file.size(path))
  if (any(bytes == as.raw(0L))) {
    stop_arg("\"", name, "\" holds NUL bytes, so it is not a CSV text file (a UTF-16 \"Unicode text\" ",
             "export?); save it as CSV.", kind = "data")
  }
  if (!length(bytes) || all(bytes < as.raw(128L))) return(NULL)
  text <- rawToChar(bytes)
  if (validUTF8(text)) return("UTF-8-BOM")
  if (!is.na(iconv(text, "CP1252", "UTF-8"))) "CP1252" else "latin1"
}

app_encoding_label <- c(CP1252 = "Windows-1252 (Western European)", latin1 = "latin1 (ISO-8859-1)")

# Read an uploaded file (at `path`, uploaded as `name`) with the call of app_read_call().
# Returns the data with attribute "encoding" (the CSV file encoding used, or NULL).
app_read_file <- function(path, name) {
  ext <- tolower(tools::file_ext(name))
  if (!ext %in% names(app_formats)) {
    stop_arg("cannot read \"", name, "\": the file must end in ",
             paste0(".", names(app_formats), collapse = ", "), ".", kind = "data")
  }
  if (ext == "rds" && !app_rds_ok()) {
    stop_arg("\"", name, "\" was not read: R ", getRversion(), " runs code hidden in a crafted RDS file ",
             "when it reads it (CVE-2024-27322, fixed in R 4.4.0). Save the data as CSV (write.csv()) ",
             "and load that, or run the app on R >= 4.4.0.", kind = "data")
  }
  if (ext %in% c("dta", "sav") && !requireNamespace("haven", quietly = TRUE)) {
    stop_arg("reading ", app_formats[[ext]], " files needs the haven package.", kind = "data")
  }
  encoding <- if (ext == "csv") app_csv_encoding(path, name)
  could_not <- function(cnd) {
    stop_arg("could not read \"", name, "\" as a ", app_formats[[ext]], " file: ", conditionMessage(cnd), kind = "data")
  }
  # the call holds only string constants and functions of base, utils and haven
  d <- tryCatch(eval(app_read_call(path, ext, encoding), baseenv()), error = could_not, warning = could_not)
  d <- app_plain_frame(d, name)
  attr(d, "encoding") <- encoding
  d
}

# Column classes a file may hold (with the base type of the column).
app_column_classes <- list(NULL, "factor", c("ordered", "factor"), "Date", c("POSIXct", "POSIXt"))
app_column_attributes <- c("class", "levels", "tzone", "label", "format.stata", "format.spss", "display_width")

# `d` as a plain data.frame, or a message naming the file: columns are atomic vectors
# (logical, integer, double, character) of the classes above, with unique non-empty
# names free of control characters (which the script would show); attributes other than those above (and every frame attribute but the names)
# are dropped, so nothing that came from the file is called or dispatched on later.
# Strings are marked as UTF-8 (app_utf8_code).
app_plain_frame <- function(d, name) {
  if (!is.data.frame(d) || !is.list(d)) {
    stop_arg("\"", name, "\" holds ", if (is.null(d)) "NULL" else paste0("an object of class ", class(d)[1L]),
             ", not a data frame.", kind = "data")
  }
  nm <- names(d)
  cols <- unclass(d)
  attributes(cols) <- NULL
  if (!length(cols) || !length(cols[[1L]])) stop_arg("\"", name, "\" has no records or no columns.", kind = "data")
  if (!is.character(nm) || length(nm) != length(cols) || anyNA(nm) || any(!nzchar(nm))) {
    stop_arg("\"", name, "\" has columns without a name; give every column a name and load it again.",
             kind = "column")
  }
  odd <- grepl("[[:cntrl:]]", nm) | grepl(app_bidi_pattern(), nm, perl = TRUE)
  if (any(odd)) {
    stop_arg("\"", name, "\" has column names with control characters (", quote_names(encodeString(nm[odd])),
             "); rename them and load it again.", kind = "column")
  }
  if (anyDuplicated(nm)) {
    stop_arg("\"", name, "\" has duplicated column names (", quote_names(unique(nm[duplicated(nm)])),
             "); give every column a unique name and load it again.", kind = "column")
  }
  n <- length(cols[[1L]])
  for (j in seq_along(cols)) {
    x <- cols[[j]]
    cls <- attr(x, "class", exact = TRUE)
    ok <- is.atomic(x) && typeof(x) %in% c("logical", "integer", "double", "character") &&
      is.null(dim(x)) && length(x) == n && any(vapply(app_column_classes, identical, logical(1), cls))
    if (ok && !is.null(cls) && "factor" %in% cls) {
      lev <- attr(x, "levels", exact = TRUE)
      codes <- as.vector(unclass(x))
      ok <- is.integer(codes) && is.character(lev) && !anyNA(lev) && !anyDuplicated(lev) &&
        all(is.na(codes) | (codes >= 1L & codes <= length(lev)))
    }
    if (!ok) {
      stop_arg("\"", name, "\": column `", nm[j], "` is ", if (is.null(cls)) typeof(x) else paste(cls, collapse = "/"),
               if (!is.null(dim(x))) " with dimensions" else "",
               ", not a column of numbers, strings, logicals, factors or dates.", kind = "column")
    }
    keep <- attributes(x)[intersect(names(attributes(x)), app_column_attributes)]
    keep <- keep[vapply(keep, function(a) is.atomic(a) && is.null(attributes(a)), logical(1))]
    # strings marked as UTF-8 (read.csv() leaves them in the native encoding, which the
    # package's radix sorts refuse when they are not ASCII)
    if (is.character(keep$levels)) keep$levels <- enc2utf8(keep$levels)
    attributes(x) <- NULL
    if (is.character(x)) x <- enc2utf8(x)
    attributes(x) <- if (length(keep)) keep
    cols[[j]] <- x
  }
  structure(cols, names = nm, row.names = .set_row_names(n), class = "data.frame")
}

# The uploaded file of input$file: one file shiny stored in this R session's temporary
# folder (a client can send any value for an input, including another path).
app_upload <- function(f) {
  if (!is.list(f) || !all(c("name", "datapath") %in% names(f))) {
    stop_arg("the upload was not understood; choose the file again.", kind = "data")
  }
  name <- f[["name"]]
  path <- f[["datapath"]]
  if (!is.character(name) || !is.character(path) || length(name) != 1L || length(path) != 1L ||
      is.na(name) || is.na(path)) {
    stop_arg("load one file at a time.", kind = "data")
  }
  full <- normalizePath(path, mustWork = FALSE)
  if (!file.exists(full) || dir.exists(full) ||
      !identical(dirname(dirname(full)), normalizePath(tempdir(), mustWork = FALSE))) {
    stop_arg("the upload of \"", name, "\" is not a file this app received; choose the file again.", kind = "data")
  }
  list(name = name, path = full)
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

# The attacks of the battery in plain words: what the intruder does, and the share of
# records it re-identifies (the internal names are in the details pane).
app_attack_labels <- c(
  linkage_released = "Links each record to the nearest released record",
  linkage_original = "Links released records to the nearest original record",
  assignment = "Matches all records one to one at the least total distance",
  recipe = "Knows the masking method and replays it",
  fellegi_sunter = "Probabilistic record linkage (Fellegi-Sunter)",
  singling_out = "Singles out a record by a unique combination",
  inference = "Infers a sensitive value")

app_risk_plain <- function(bat) {
  t <- as.data.frame(bat)
  lab <- unname(app_attack_labels[t$name])
  lab[is.na(lab)] <- t$attack[is.na(lab)]
  share <- function(x) vapply(x, function(v) if (is.na(v)) "not measured" else pct(v), "") # each to 3 digits
  data.frame(check.names = FALSE,
             "Attack" = lab,
             "Records re-identified" = share(t$rate),
             "By chance" = share(t$control_rate),
             "Own record among the attack's best guesses" = share(t$rate_m))
}

app_family <- function(name) {
  switch(name, binomial = stats::binomial(), poisson = stats::poisson(), stats::gaussian())
}

# ---- settings ---------------------------------------------------------------------------

# The choices of the inputs (the UI shows them, the server accepts nothing else).
app_choices <- list(
  method = c("tune_release(): search every method for the least damaging release that meets the limits (recommended)" =
               "tune_release",
             "anonymise(): centroid of the k nearest neighbours (not safe on its own: see the verdict)" = "anonymise",
             "anonymise_adaptive(): k grows where records stay close to their originals (not safe on its own)" =
               "anonymise_adaptive",
             "stir(): shuffle values within clusters of k (not safe on its own)" = "stir"),
  tune_methods = c("kNN centroids, one k (anonymise)" = "anonymise", "k per stratum" = "stratum",
                   "adaptive k" = "adaptive", "MDAV groups" = "mdav",
                   "keyed groups (needs the secret key)" = "keyed", "shuffling in clusters (stir)" = "stir"),
  # (only "fail": the measures compare every record in its original stratum, which
  # "suppress" and "merge" change; assess() refuses both)
  small_strata = "fail",
  # the search's records that published columns make rare (tune_release(small_strata = )):
  # left out before the search, so the measures compare the records released
  tune_small_strata = c("no release, name the columns" = "fail", "leave those records out" = "suppress"),
  na = c("fail", "median", "mean", "median_stratum", "mean_stratum"),
  stir_method = c("shuffle", "flatten"),
  family = c("gaussian", "binomial", "poisson"))

# The verbs the app runs, by name: the function itself, never a name looked up.
app_verb <- function(name) {
  switch(name, tune_release = tune_release, anonymise = anonymise, anonymise_adaptive = anonymise_adaptive,
         stir = stir)
}

# Candidate strata: categorical columns, and numeric columns of few distinct whole values
# (integer-coded categories such as Pclass or a 0/1 flag), offered first in the strata box.
app_max_levels <- 20L
app_candidate_strata <- function(d, exclude = character()) {
  few_whole <- function(x) {
    if (!is.numeric(x) || is.object(x)) return(FALSE)
    u <- unique(x[!is.na(x)])
    length(u) >= 2L && length(u) <= app_max_levels && all(is.finite(u)) && all(u == round(u))
  }
  cand <- names(d)[vapply(d, function(x) is.factor(x) || is.character(x) || is.logical(x) || few_whole(x),
                          logical(1))]
  setdiff(cand, exclude)
}

# The choices of the strata box: candidates first, then the other columns.
app_strata_choices <- function(d, exclude = character()) {
  cand <- app_candidate_strata(d, exclude)
  list("Candidate strata (categories, or few whole values)" = as.list(cand),
       "Other columns" = as.list(setdiff(names(d), cand)))
}

# A new secret key for keyed groups: 32 characters drawn from 62 by the operating system's
# random generator (openssl), or else by R's generator freshly seeded; never stored by the app.
app_new_key <- function() {
  chars <- c(letters, LETTERS, 0:9)
  if (requireNamespace("openssl", quietly = TRUE)) {
    idx <- integer()
    while (length(idx) < 32L) {
      b <- as.integer(openssl::rand_bytes(64L))
      idx <- c(idx, b[b < 248L] %% 62L + 1L) # 248 = 4 * 62: no modulo bias
    }
    idx <- idx[seq_len(32L)]
  } else {
    had <- exists(".Random.seed", envir = globalenv(), inherits = FALSE)
    if (had) old <- get(".Random.seed", envir = globalenv())
    on.exit(if (had) assign(".Random.seed", old, envir = globalenv()) else rm(".Random.seed", envir = globalenv()))
    set.seed(NULL)
    idx <- sample.int(62L, 32L, replace = TRUE)
  }
  paste(chars[idx], collapse = "")
}

# The key box: NULL when empty; else a string of at least 16 characters.
app_key <- function(x, methods) {
  if (is.null(x) || (is.character(x) && length(x) == 1L && !is.na(x) && !nzchar(trimws(x)))) x <- NULL
  if (is.null(x)) {
    if ("keyed" %in% methods) {
      stop_arg("`key`: keyed groups need the secret key: press \"Generate a key\" (keep it, never publish it), ",
               "or untick keyed groups.")
    }
    return(NULL)
  }
  if (!is.character(x) || length(x) != 1L || is.na(x) || nchar(x) < 16L || nchar(x) > 1000L) {
    stop_arg("`key` must be a string of 16 to 1000 characters; press \"Generate a key\" for one.")
  }
  x
}

# A limit of the search: a single share in (0, 1].
app_limit <- function(x, arg) {
  if (!is.numeric(x) || length(x) != 1L || is.na(x) || x <= 0 || x > 1) {
    stop_arg("`", arg, "` must be a single share in (0, 1] (1: no limit), not ", show_value(x), ".")
  }
  as.numeric(x)
}

# The families ticked for the search: one or more of the choices.
app_tune_methods <- function(x) {
  choices <- unname(app_choices$tune_methods)
  if (!is.character(x) || !length(x) || anyNA(x) || !all(x %in% choices)) {
    stop_arg("`methods` must be one or more of ", paste0("\"", choices, "\"", collapse = ", "), ", not ",
             show_value(x), ".")
  }
  choices[choices %in% x]
}

# A setting that must be one of its choices (`label`: its name in the message).
app_choice <- function(x, arg, label = paste0("`", arg, "`")) {
  choices <- unname(app_choices[[arg]])
  if (!is.character(x) || length(x) != 1L || is.na(x) || !x %in% choices) {
    stop_arg(label, " must be one of ", paste0("\"", choices, "\"", collapse = ", "), ", not ",
             show_value(x), ".")
  }
  x
}

# The sensitive column of the search: NULL (none chosen) or one column of `d` that is
# published (not a direct identifier) and not masked or a stratum.
app_sensitive <- function(x, d, ids, vars, strata) {
  x <- app_cols(x, d, "sensitive")
  if (!length(x)) return(NULL)
  if (length(x) > 1L) {
    stop_arg("`sensitive` must be at most one column (the one an attack guesses), not ", quote_names(x), ".",
             kind = "column")
  }
  role <- if (x %in% ids) "a direct identifier (dropped)" else if (x %in% vars) "a variable to mask"
          else if (x %in% strata) "a stratum"
  if (!is.null(role)) {
    stop_arg("`sensitive`: `", x, "` is ", role, "; choose a column published unchanged, or none.",
             kind = "column")
  }
  x
}

# One optional column (a selectize box of at most one item): NULL or its name.
app_one_col <- function(x, d, arg) {
  x <- app_cols(x, d, arg)
  if (length(x) > 1L) stop_arg("`", arg, "` must be at most one column, not ", quote_names(x), ".", kind = "column")
  if (length(x)) x
}

# The categorical settings, checked against `d`: the key columns (published unchanged
# unless a step below changes them; not identifiers nor masked), the columns of sampling
# weights and household ids the risk measures use, and the steps on the keys, each NULL
# when not chosen: local suppression (`k`; `importance`, keys most important first, as the
# whole numbers of suppress_local(), the keys not listed least important) and PRAM (`vars`
# among the keys, `pd`, `seed`).
app_categorical_settings <- function(input, d, ids = character(), vars = character()) {
  keys <- app_cols(input$keys, d, "keys")
  for (role in list(list(ids, "a direct identifier (dropped)"), list(vars, "a variable to mask"))) {
    clash <- intersect(keys, role[[1L]])
    if (length(clash)) {
      stop_arg("`keys`: ", quote_names(clash), " ", if (length(clash) == 1L) "is " else "are ", role[[2L]],
               "; a key is a published categorical column.", kind = "column")
    }
  }
  if (length(keys)) check_strata_columns(d, keys, "keys")
  weights <- app_one_col(input$weights, d, "weights")
  household <- app_one_col(input$household, d, "household")
  check_weights(d, weights, keys)
  check_household(d, household, keys, weights)
  step <- function(x, arg) if (is.null(x)) FALSE else check_flag(x, arg)
  suppress <- NULL
  if (step(input$suppress, "suppress")) {
    if (!length(keys)) stop_arg("`suppress`: choose the key columns to suppress values of.", kind = "column")
    important <- app_cols(input$importance, d, "importance")
    if (!all(important %in% keys) || anyDuplicated(important)) {
      stop_arg("`importance` must list key columns (", quote_names(keys), ") at most once each, not ",
               quote_names(important), ".", kind = "column")
    }
    rank <- match(keys, important)
    rank[is.na(rank)] <- length(important) + 1L
    suppress <- list(k = check_whole(input$suppress_k, "suppress_k", min = 1, max = nrow(d)),
                     importance = if (length(important)) rank)
  }
  pram <- NULL
  if (step(input$pram, "pram")) {
    pv <- app_cols(input$pram_vars, d, "pram_vars")
    if (!length(pv) || !all(pv %in% keys)) {
      stop_arg("`pram_vars` must be one or more of the key columns (", quote_names(keys), "), not ",
               show_value(input$pram_vars), ".", kind = "column")
    }
    pram <- list(vars = keys[keys %in% pv], pd = check_number(input$pd, "pd", lower = 0, upper = 1),
                 seed = check_whole(input$pram_seed, "pram_seed", min = -.Machine$integer.max,
                                    max = .Machine$integer.max))
  }
  list(keys = keys, weights = weights, household = household, suppress = suppress, pram = pram)
}

# The inputs of the categorical settings (of a shiny session's `input`), as a list.
app_categorical_ids <- c("keys", "weights", "household", "suppress", "suppress_k", "importance", "pram",
                         "pram_vars", "pd", "pram_seed")
app_categorical_input <- function(input) {
  stats::setNames(lapply(app_categorical_ids, function(id) input[[id]]), app_categorical_ids)
}

# The calls of the categorical steps on `data`, in the order they run: the app evaluates
# them (on constants only) and the script holds them deparsed.
app_categorical_calls <- function(cs) {
  c(if (!is.null(cs$suppress)) list(as.call(c(list(quote(suppress_local), quote(data), strata = cs$keys,
                                                    k = cs$suppress$k),
                                               if (!is.null(cs$suppress$importance))
                                                 list(importance = cs$suppress$importance)))),
    if (!is.null(cs$pram)) list(as.call(list(quote(anonymise_pram), quote(data), vars = cs$pram$vars,
                                             pd = cs$pram$pd, seed = cs$pram$seed))))
}

# `d` after the categorical steps of `cs`.
app_categorical <- function(d, cs) {
  env <- new.env(parent = asNamespace("detanon"))
  env$data <- d
  for (call in app_categorical_calls(cs)) env$data <- eval(call, env)
  env$data
}

# The categorical risk of the keys, as loaded (`d`) and after the categorical steps
# (`after`, or NULL): a table of plain-language rows.
app_categorical_risk <- function(d, cs, k, after = NULL) {
  measure <- function(x) {
    r <- risk_individual(x, cs$keys, weights = cs$weights, household = cs$household)
    c(format(sum(r$fk < k)), format(sum(r$fk == 1)), format(round(r$expected, 2), nsmall = 2),
      pct(r$global_risk), format(r$n_above), format(signif(r$max_risk, 3)),
      if (!is.null(cs$household)) format(round(r$household_expected, 2), nsmall = 2))
  }
  rows <- c(sprintf("Records whose keys fewer than %d records share", k), "Sample uniques (keys of one record)",
            "Expected re-identifications (sum of the individual risks)", "Global risk (their mean)",
            "Records with an individual risk above 0.1", "Largest individual risk",
            if (!is.null(cs$household)) "Expected re-identifications of households")
  out <- data.frame(Measure = rows, "As loaded" = measure(d), check.names = FALSE)
  if (!is.null(after)) out[["After the categorical steps"]] <- measure(after)
  out
}

# Column choices: NULL (none chosen) or names of columns of `d`.
app_cols <- function(x, d, arg) {
  if (is.null(x)) return(character())
  check_columns(x, d, arg)
}

# Every setting of a run, checked against the data `d`: `input` is a list of the input
# values. Returns the roles, the verb, its arguments, k, the formula and the family, or
# raises a classed error naming the setting.
app_settings <- function(input, d) {
  ids <- app_cols(input$identifiers, d, "identifiers")
  vars <- setdiff(app_cols(input$vars, d, "vars"), ids)
  strata <- setdiff(app_cols(input$strata, d, "strata"), ids)
  if (!length(vars)) stop_arg("Choose at least one continuous variable to mask.", kind = "column")
  verb <- app_choice(input$method, "method")
  k <- check_whole(input$k, "k", min = 1, max = nrow(d))
  # (limits not sent: tune_release()'s defaults)
  worst <- app_limit(if (is.null(input$worst)) 0.1 else input$worst, "worst")
  top_m <- app_limit(if (is.null(input$top_m)) 0.3 else input$top_m, "top_m")
  key <- NULL
  if (verb == "tune_release") {
    methods <- app_tune_methods(input$tune_methods)
    key <- app_key(input$key, methods)
    if (is.null(key)) methods <- setdiff(methods, "keyed")
    sensitive <- app_sensitive(input$sensitive, d, ids, vars, strata)
    # (not sent: tune_release()'s default, no release)
    rare <- app_choice(if (is.null(input$tune_small_strata)) "fail" else input$tune_small_strata,
                       "tune_small_strata", "`small_strata` of the search")
  }
  args <- c(list(vars = vars, strata = if (length(strata)) strata, k = k), switch(verb,
    # (the app does not offer the categorical family yet: the published keys stay unchanged)
    tune_release = list(worst = worst, top_m = top_m, methods = methods, sensitive = sensitive,
                        small_strata = rare, categorical = "none", seed = 1L),
    anonymise = list(na = app_choice(input$na, "na"), small_strata = app_choice(input$small_strata, "small_strata")),
    anonymise_adaptive = list(k_max = check_whole(input$k_max, "k_max", min = k, max = nrow(d))),
    stir = list(method = app_choice(input$stir_method, "stir_method"),
                seed = check_whole(input$seed, "seed", min = -.Machine$integer.max, max = .Machine$integer.max))))
  args <- args[!vapply(args, is.null, logical(1))]
  formula <- app_formula(input$formula, setdiff(names(d), ids), ids)
  family <- if (is.null(formula)) "gaussian" else app_choice(input$family, "family")
  categorical <- app_categorical_settings(input, d, ids, vars)
  # the key is kept apart from the arguments, which the script and the report show
  list(identifiers = ids, vars = vars, strata = strata, verb = verb, args = args, k = k,
       formula = formula, family = family, worst = worst, top_m = top_m, key = key, categorical = categorical)
}

# The message of an error of a run, with advice the app can follow: a verb's list of
# small strata ends with the console's choices (`small_strata = "suppress"` or "merge",
# which the app does not offer: its measures compare every record in its original
# stratum), replaced by what can be done in the app.
app_error_advice <- function(e) {
  msg <- conditionMessage(e)
  if (!inherits(e, "detanon_error_small_strata")) return(msg)
  sub("\nLower `k`, generalise the strata variables, or use [^\n]*$",
      paste0("\nLower k, or choose fewer strata on the Roles tab (or coarser ones: recode the file, e.g. ",
             "with generalise_strata() in R)."), msg)
}

# The error of a search on `work` that returned no release. When it could not start, as
# the published columns leave cells too small for the limits, the message names them
# (tune_release()'s explanation) and gives the choices of the app instead of the
# console's arguments: "leave those records out" while records are in cells of fewer
# than k_strata (else the limits cannot be met even without them). Otherwise it gives
# the limits and what to change.
app_no_release <- function(tuned, s, work) {
  if (length(tuned$keys) && !nrow(tuned$tried)) {
    why <- sub("^No release: ", "", sub(" Mask those columns .*$", "", paste(tuned$stop, collapse = " ")))
    sizes <- tabulate(stratum_ids(work, c(s$strata, tuned$keys)))
    rare <- identical(s$args$small_strata, "fail") && any(sizes < tuned$limits[["k_strata"]])
    stop_arg("the search returned no release: ", why, " In the app: ",
             if (rare) "under \"Records that published columns make rare\" choose \"leave those records out\"; or "
             else "loosen the limits (worst, top_m) or choose fewer strata; or ",
             "choose the column as the sensitive one, add it to the variables to mask, or drop it as a direct ",
             "identifier if it should not be published.", kind = "data")
  }
  stop_arg("no candidate of the search met every limit (worst <= ", format(s$worst), ", top_m <= ",
           format(s$top_m), "). ", paste(tuned$stop, collapse = " "), " In the app: tick more ",
           "families, give a key for keyed groups, drop columns that should not be published (as ",
           "direct identifiers), or loosen the limits.", kind = "data")
}

# ---- the model formula --------------------------------------------------------------------

# What a model formula may hold besides columns and numbers: operators of the formula
# (outside functions) and of arithmetic (inside them), and functions with the names of
# the arguments they may be given (whose values must be numbers or TRUE/FALSE).
app_formula_operators <- c("+", "-", "*", "/", ":", "^", "(")
app_arith_operators <- c("+", "-", "*", "/", "^", "(")
app_formula_functions <- list(I = character(), log = "base", log1p = character(), log2 = character(),
                              log10 = character(), exp = character(), sqrt = character(), abs = character(),
                              poly = c("degree", "raw"), factor = character(), scale = c("center", "scale"))

app_formula_allowed <- function() {
  paste0("A model may use the columns of the data, numbers, the operators + - * / : ^ ( ) and ., and the ",
         "functions ", paste0(names(app_formula_functions), "()", collapse = ", "), ".")
}

# The model of the text box as a formula, or NULL for an empty box. The text is parsed
# (never evaluated) and its call tree walked: only the columns `columns`, numbers and the
# operators and functions above are accepted; anything else is refused with a message.
# Only the vetted formula is built, in an environment whose parent is base (poly() from
# stats added), so its functions are base's whatever the caller's search path holds.
app_formula <- function(text, columns, identifiers = character()) {
  if (is.null(text)) return(NULL)
  if (!is.character(text) || length(text) != 1L || is.na(text)) {
    stop_arg("`formula` must be a single string, not ", show_value(text), ".")
  }
  if (!nzchar(trimws(text))) return(NULL)
  if (nchar(text, type = "bytes") > 2000L) {
    stop_arg("the model has ", nchar(text), " characters; a model of at most 2000 is accepted.")
  }
  expr <- tryCatch(str2lang(text), error = function(e) NULL)
  if (!is.call(expr) || !identical(expr[[1L]], as.name("~")) || length(expr) != 3L) {
    stop_arg("the model \"", text, "\" is not a formula such as y ~ x1 + x2.")
  }
  refuse <- function(what) {
    stop_arg("the model \"", text, "\" is refused: ", what, ". ", app_formula_allowed())
  }
  walk <- function(x, inside, depth) {
    if (depth > 100L) refuse("it is nested too deeply")
    if (is.symbol(x)) {
      nm <- as.character(x)
      if (nm %in% columns || (nm == "." && !inside)) return(invisible())
      if (nm %in% identifiers) refuse(paste0("`", nm, "` is a direct identifier, dropped before the release"))
      refuse(paste0("`", nm, "` is not a column of the data"))
    }
    if (is.numeric(x) && length(x) == 1L && is.finite(x)) return(invisible())
    if (!is.call(x)) refuse(paste0(deparse1(x), " is neither a column nor a number"))
    head <- x[[1L]]
    fn <- if (is.symbol(head)) as.character(head) else ""
    args <- as.list(x)[-1L]
    arg_names <- if (is.null(names(args))) rep("", length(args)) else names(args)
    if (fn %in% if (inside) app_arith_operators else app_formula_operators) {
      if (any(nzchar(arg_names)) || length(args) < 1L || length(args) > 2L ||
          (length(args) == 1L && !fn %in% c("+", "-", "("))) {
        refuse(paste0("`", deparse1(x), "` is not a term of a formula"))
      }
      for (a in args) walk(a, inside, depth + 1L)
    } else if (fn %in% names(app_formula_functions)) {
      if (!length(args)) refuse(paste0("`", fn, "()` needs a column"))
      for (i in seq_along(args)) {
        if (!nzchar(arg_names[i])) {
          walk(args[[i]], TRUE, depth + 1L)
        } else if (arg_names[i] %in% app_formula_functions[[fn]]) {
          v <- args[[i]]
          if (!((is.numeric(v) || is.logical(v)) && length(v) == 1L && !is.na(v) && is.finite(v))) {
            refuse(paste0("`", arg_names[i], "` of ", fn, "() must be a number or TRUE/FALSE"))
          }
        } else {
          refuse(paste0(fn, "() takes no argument `", arg_names[i], "` here"))
        }
      }
    } else {
      refuse(if (nzchar(fn)) paste0("`", fn, "()` is not an allowed function")
             else paste0("`", deparse1(head), "` is not an allowed function"))
    }
    invisible()
  }
  walk(expr[[2L]], FALSE, 1L)
  if (identical(expr[[2L]], as.name("."))) refuse("`.` cannot be the response")
  walk(expr[[3L]], FALSE, 1L)
  env <- new.env(parent = baseenv())
  env$poly <- stats::poly
  # evaluates only `~` (base's primitive, which quotes its operands): the formula object
  eval(expr, env)
}

# ---- the script ---------------------------------------------------------------------------

# What the script does after reading a CSV file that is not ASCII, as the app does in
# app_plain_frame(): strings marked as UTF-8, in any locale.
app_utf8_code <- "data[] <- lapply(data, function(x) if (is.character(x)) enc2utf8(x) else x)"

# An expression as lines of R code (continuation lines indented).
app_deparse <- function(x) paste(deparse(x, width.cutoff = 80L), collapse = "\n  ")

# The Unicode controls of text direction (a regular expression; the R code stays ASCII).
app_bidi_pattern <- function() {
  paste0("[", intToUtf8(c(0x200e, 0x200f, 0x202a)), "-", intToUtf8(c(0x202e, 0x2066)), "-", intToUtf8(0x2069), "]")
}

# deparse() escapes control characters but keeps the Unicode controls of text direction,
# with which a file name can make the script read differently from what it does: in the
# lines that hold the file name, where they can only stand inside a string, they become
# \u escapes (the same string).
app_escape_bidi <- function(x) {
  m <- gregexpr(app_bidi_pattern(), x, perl = TRUE)
  regmatches(x, m) <- lapply(regmatches(x, m), function(ch) sprintf("\\u%04x", vapply(ch, utf8ToInt, 1L)))
  x
}

# The R script that reproduces a release made in the app. The file name enters it only as
# a deparsed string constant (inside the read call, and in the comment), so no name,
# whatever characters it holds, adds code to the script.
app_script <- function(source, identifiers, verb, args, formula = NULL, family = "gaussian", k = NULL,
                       hash = NULL, keyed = FALSE, override = FALSE, limits = NULL, categorical = NULL) {
  file <- source$kind %in% names(app_formats)
  read <- switch(source$kind,
    example = "titanic_paper()",
    object = "data  # the data frame given to detanon_app()",
    app_escape_bidi(app_deparse(app_read_call(source$name, source$kind, source$encoding))))
  tune <- verb == "tune_release"
  # the key is never written: the script reads it from the environment variable DETANON_KEY
  call <- as.call(c(list(as.name(verb), quote(data)), args,
                    if (tune && keyed) list(key = quote(Sys.getenv("DETANON_KEY")))))
  report <- as.call(c(list(quote(release_report), quote(data), if (tune) quote(tuned) else quote(release),
                           "report.html"),
                      list(vars = args$vars, strata = args$strata),
                      if (!is.null(args$sensitive)) list(sensitive = args$sensitive),
                      list(release_file = "release.csv"),
                      if (!is.null(k)) list(k = k),
                      if (!is.null(formula)) list(formula = formula),
                      if (!is.null(formula) && family != "gaussian") list(family = call(family)),
                      if (!tune && !is.null(limits)) limits[c("worst", "top_m")],
                      if (override) list(title = app_override_title)))
  made <- if (tune) c(paste("tuned <-", app_deparse(call)), "release <- tuned$release")
          else paste("release <-", app_deparse(call))
  c(sprintf("# Reproduces the release made in detanon_app() on %s with detanon %s.",
            format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"), utils::packageVersion("detanon")),
    if (file) paste0("# Run it in the folder that holds the file ", app_escape_bidi(deparse1(source$name)), "."),
    "library(detanon)",
    paste("data <-", read),
    if (identical(source$kind, "csv") && !is.null(source$encoding)) app_utf8_code,
    if (length(identifiers)) paste0("data <- remove_identifiers(data, cols = ", deparse1(identifiers), ")"),
    vapply(app_categorical_calls(categorical), function(call) paste("data <-", app_deparse(call)), ""),
    if (tune && keyed) c("# the secret key of keyed groups: set the environment variable DETANON_KEY to the key",
                         "# the app generated (keep it with the original data; never publish it)"),
    made,
    if (!is.null(hash)) paste0("# The app's download had SHA-256 ", hash, "; this file gets another random row order."),
    "write_release(release, \"release.csv\")",
    app_deparse(report))
}

# The title of the report of a release downloaded although it does not meet the limits.
app_override_title <- "Release report: downloaded although it does NOT meet the limits (override in detanon_app())"

# ---- UI -------------------------------------------------------------------------------

app_ui <- function() {
  formats <- app_formats[names(app_formats) != "rds" | app_rds_ok()]
  shiny::fluidPage(
    title = "detanon: release workflow",
    shiny::tags$head(shiny::tags$style(shiny::HTML(
      ".app-status{margin:.5em 0;padding:.4em .6em;border-radius:4px}",
      ".app-error{background:#fde8e8;color:#8a0000}.app-ok{background:#e8f6e8;color:#064}",
      ".app-warn{background:#fde8e8;color:#8a0000;font-weight:bold}",
      ".app-note{color:#555;font-size:.9em}",
      ".verdict{padding:.5em .7em;border-radius:4px}.verdict.ok{background:#e8f6e8}.verdict.warn{background:#fde8e8}",
      "table.checks tr.miss td{color:#8a0000;font-weight:bold}table.checks td,table.checks th{padding:2px 8px}",
      "#key{font-family:monospace}"))),
    shiny::titlePanel("detanon: prepare, check and document a release"),
    shiny::sidebarLayout(
      shiny::sidebarPanel(width = 3,
        shiny::fileInput("file", paste0("1. Data file (", paste0(formats, " .", names(formats), collapse = ", "), ")"),
                         accept = paste0(".", names(formats))),
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
          shiny::tabPanel("Categorical keys", value = "categorical",
            shiny::h4("Categorical key variables (optional)"),
            shiny::p(class = "app-note", "Keys are categorical columns published with the release that an intruder ",
                     "may know of a person (region, sex, age group, occupation). Their risk is that of ",
                     "risk_individual(): a record is re-identified when its combination of keys is rare in the ",
                     "population, estimated from the sampling weights (without weights, the data are the ",
                     "population)."),
            shiny::selectizeInput("keys", "Key variables", choices = NULL, multiple = TRUE),
            shiny::selectizeInput("weights", "Sampling weights, optional (a numeric column, each weight >= 1)",
                                  choices = NULL, multiple = TRUE, options = list(maxItems = 1L)),
            shiny::selectizeInput("household", "Household ids, optional", choices = NULL, multiple = TRUE,
                                  options = list(maxItems = 1L)),
            shiny::h4("Categorical risk"),
            shiny::uiOutput("cat_status"),
            shiny::tableOutput("cat_risk"),
            shiny::p(class = "app-note", "These measures cover identity disclosure through the keys only. They ",
                     "do not cover the continuous variables (the attacks of the verdict do), attribute disclosure ",
                     "(a rare sensitive value shared by a whole group), or keys not declared here. The steps ",
                     "run before the masking on the Method tab; the release, its verdict and the script include ",
                     "them, and the attacks assume the intruder holds the keys as released."),
            shiny::h4("Steps on the keys (optional)"),
            shiny::checkboxInput("suppress", paste(
              "Local suppression: set single key values to missing until the keys of every record are shared",
              "by at least k records (a missing value matches any value)")),
            shiny::conditionalPanel("input.suppress",
              shiny::numericInput("suppress_k", "k of the suppression", value = 3, min = 1, step = 1),
              shiny::selectizeInput("importance", "Keys to keep, most important first (suppressed last; optional)",
                                    choices = NULL, multiple = TRUE)),
            shiny::checkboxInput("pram", paste(
              "PRAM: replace key values at random by other categories, keeping each category's share in",
              "expectation")),
            shiny::conditionalPanel("input.pram",
              shiny::selectizeInput("pram_vars", "Keys to post-randomise", choices = NULL, multiple = TRUE),
              shiny::numericInput("pd", "Smallest probability that a value is kept (pd)", value = 0.8, min = 0,
                                  max = 1, step = 0.05),
              shiny::numericInput("pram_seed", "PRAM seed (the same seed gives the same release)", value = 1,
                                  step = 1))),
          shiny::tabPanel("Method", value = "method",
            shiny::h4("3. Limits and method"),
            shiny::p(class = "app-note", "The limits bound the share of records the attacks of the risk battery ",
                     "re-identify; the verdict checks the release against them."),
            shiny::numericInput("worst", "Worst one-record attack: at most (share)", value = 0.1, min = 0.001,
                                max = 1, step = 0.01),
            shiny::numericInput("top_m", "Own record among an attack's 3 best guesses: at most (share)", value = 0.3,
                                min = 0.001, max = 1, step = 0.01),
            shiny::radioButtons("method", NULL, choices = app_choices$method),
            shiny::numericInput("k", "k (smallest group)", value = 3, min = 1, step = 1),
            shiny::conditionalPanel("input.method == 'tune_release'",
              shiny::checkboxGroupInput("tune_methods", "Families the search tries", app_choices$tune_methods,
                                        selected = unname(app_choices$tune_methods)),
              shiny::selectizeInput("sensitive", paste(
                "Sensitive column, optional: the custodian's secret the attacks try to guess; the intruder is not",
                "assumed to hold it"), choices = NULL, multiple = TRUE, options = list(maxItems = 1L)),
              shiny::radioButtons("tune_small_strata", "Records that published columns make rare",
                choiceNames = list(
                  shiny::span(shiny::strong(names(app_choices$tune_small_strata)[1L], .noWS = "after"),
                              ": the search makes no release and names the columns published unchanged that leave ",
                              "records in groups too small for the limits."),
                  shiny::span(shiny::strong(names(app_choices$tune_small_strata)[2L], .noWS = "after"),
                              ": those records are not released (the app says how many); the others are masked and ",
                              "checked as usual.")),
                choiceValues = unname(app_choices$tune_small_strata)),
              shiny::p(class = "app-note", "An intruder is assumed to hold every column published unchanged (not ",
                       "masked, not an identifier, not sensitive, e.g. an outcome such as Survived): with the strata ",
                       "it can single out the records whose combination is rare."),
              shiny::textInput("key", "Secret key of keyed groups (16 characters or more)", ""),
              shiny::actionButton("gen_key", "Generate a key"),
              shiny::p(class = "app-note", id = "key_note",
                       "Keep the key with the original data and never publish it: with it the release can be ",
                       "reproduced, and without it nobody can redo the grouping. The app writes it nowhere: not ",
                       "in the script (which reads it from the environment variable DETANON_KEY), not in the report.")),
            shiny::conditionalPanel("input.method == 'anonymise'",
              shiny::selectInput("small_strata", "Strata smaller than k", c("stop with a message" = "fail")),
              shiny::selectInput("na", "Missing values in the variables", app_choices$na)),
            shiny::conditionalPanel("input.method == 'anonymise_adaptive'",
              shiny::numericInput("k_max", "largest k", value = 33, min = 2, step = 1)),
            shiny::conditionalPanel("input.method == 'stir'",
              shiny::selectInput("stir_method", "stir method", app_choices$stir_method),
              shiny::numericInput("seed", "seed", value = 1, step = 1)),
            shiny::textInput("formula", "Model to compare, optional (e.g. Survived ~ Pclass + Sex + Age)", ""),
            shiny::selectInput("family", "Model family", app_choices$family),
            shiny::actionButton("run", "Make the release", class = "btn-primary")),
          shiny::tabPanel("Risk and utility", value = "risk",
            shiny::h4("4. Risk and utility of the release"),
            shiny::uiOutput("run_summary"),
            shiny::uiOutput("verdict"),
            shiny::h4("Attacks on the release"),
            shiny::tableOutput("risk_plain"),
            shiny::tags$details(id = "risk_details",
              shiny::tags$summary("Details: every risk measure under its name in the package"),
              shiny::tableOutput("risk_table"),
              shiny::tableOutput("battery_table")),
            shiny::h4("Utility"),
            shiny::tableOutput("utility_table"),
            shiny::selectInput("plot_var", "Variable", choices = NULL),
            shiny::plotOutput("margins", height = "340px"),
            shiny::p(class = "app-note", "Original bins and cells of fewer than k records are not drawn.")),
          shiny::tabPanel("Download", value = "download",
            shiny::h4("5. Download"),
            shiny::uiOutput("dl_release_ui"),
            shiny::checkboxInput("override", paste(
              "Download a release that does not meet the limits anyway (the report records it in its title)")),
            shiny::downloadButton("dl_report", "Report (HTML)"),
            shiny::downloadButton("dl_code", "R script"),
            shiny::h4("R script that reproduces the release"),
            shiny::verbatimTextOutput("code"))))))
}

# ---- server ------------------------------------------------------------------------------

app_server <- function(data = NULL) {
  force(data)
  function(input, output, session) {
    rv <- shiny::reactiveValues(data = NULL, source = NULL, run = NULL, status = NULL, error = FALSE, warn = FALSE)
    # error: nothing was done; warn: done, but the result must not be published as it is
    set_status <- function(msg, error = FALSE, warn = FALSE) {
      msg <- paste(msg, collapse = " ")
      rv$status <- msg
      rv$error <- error
      rv$warn <- warn
      if (error) shiny::showNotification(msg, type = "error", duration = 10)
    }
    # An observer's body: an error it did not foresee becomes a message, so the session
    # never ends on one (shiny ends a session whose observer fails).
    guard <- function(what, expr) {
      tryCatch(expr, error = function(e) {
        if (inherits(e, "shiny.silent.error")) return(invisible())
        set_status(paste0(what, ": ", conditionMessage(e)), error = TRUE)
      })
    }
    # The release CSV of a run, written once by write_release(): the download serves these
    # bytes, and the hash and the report are theirs.
    drop_run_files <- function() if (!is.null(shiny::isolate(rv$run))) unlink(shiny::isolate(rv$run)$dir, recursive = TRUE)
    session$onSessionEnded(drop_run_files)
    set_data <- function(d, source) {
      ids <- detect_identifiers(d)$column
      vars <- app_default_vars(d, ids)
      strata <- setdiff(default_strata(d), ids)
      drop_run_files()
      rv$data <- d
      rv$source <- source
      rv$run <- NULL
      shiny::updateSelectizeInput(session, "identifiers", choices = names(d), selected = ids)
      shiny::updateSelectizeInput(session, "vars", choices = names(d), selected = vars)
      shiny::updateSelectizeInput(session, "strata", choices = app_strata_choices(d, ids), selected = strata)
      shiny::updateSelectizeInput(session, "sensitive", choices = names(d), selected = character())
      shiny::updateSelectizeInput(session, "keys", choices = app_strata_choices(d, ids), selected = character())
      for (id in c("weights", "household")) shiny::updateSelectizeInput(session, id, choices = names(d), selected = character())
      set_status(sprintf("Loaded %s: %s, %s%s.", source$name, plural(nrow(d), "record"), plural(ncol(d), "column"),
                         if (!is.null(source$encoding) && source$encoding %in% names(app_encoding_label))
                           paste0(" (the file is not UTF-8: read as ", app_encoding_label[[source$encoding]], ")")
                         else ""))
    }
    if (!is.null(data)) {
      guard("The data given to detanon_app() were not loaded",
            set_data(data, list(kind = "object", name = "the data given to detanon_app()")))
    }

    shiny::observeEvent(input$file, guard("The file was not loaded", {
      kept <- if (!is.null(rv$data)) " The data loaded before are kept." else ""
      d <- tryCatch({
        f <- app_upload(input$file)
        d <- app_read_file(f$path, f$name)
        list(data = d, source = list(kind = tolower(tools::file_ext(f$name)), name = f$name,
                                     encoding = attr(d, "encoding")))
      }, error = function(e) e)
      if (inherits(d, "error")) return(set_status(paste0(conditionMessage(d), kept), error = TRUE))
      attr(d$data, "encoding") <- NULL
      loaded <- tryCatch(set_data(d$data, d$source), error = function(e) e)
      if (inherits(loaded, "error")) set_status(paste0("\"", d$source$name, "\" was not loaded: ",
                                                       conditionMessage(loaded), kept), error = TRUE)
    }))
    shiny::observeEvent(input$gen_key, guard("No key was generated", {
      shiny::updateTextInput(session, "key", value = app_new_key())
      set_status("A new secret key is in the key box: copy it and keep it with the original data; never publish it.")
    }))
    shiny::observeEvent(input$example, guard("The example was not loaded",
      set_data(titanic_paper(), list(kind = "example", name = "titanic_paper()"))))

    # roles and k as shown before a run (outputs only; the run checks them with app_settings())
    roles <- shiny::reactive({
      d <- rv$data
      shiny::req(d)
      pick <- function(x) if (is.character(x)) intersect(x, names(d)) else character()
      ids <- pick(input$identifiers)
      list(identifiers = ids, vars = setdiff(pick(input$vars), ids), strata = setdiff(pick(input$strata), ids),
           sensitive = pick(input$sensitive), keys = pick(input$keys))
    })
    # the importance and PRAM boxes offer the keys
    shiny::observeEvent(input$keys, ignoreNULL = FALSE, guard("The key boxes were not updated", {
      keys <- roles()$keys
      for (id in c("importance", "pram_vars")) {
        chosen <- input[[id]]
        shiny::updateSelectizeInput(session, id, choices = keys,
                                    selected = if (is.character(chosen)) intersect(chosen, keys) else character())
      }
    }))
    # the categorical settings as the inputs stand (checked; the data after the steps chosen)
    categorical <- shiny::reactive({
      d <- rv$data
      shiny::req(d)
      r <- roles()
      tryCatch({
        cs <- app_categorical_settings(app_categorical_input(input), d, r$identifiers, r$vars)
        list(settings = cs, after = if (!is.null(cs$suppress) || !is.null(cs$pram))
          suppressMessages(app_categorical(d, cs)))
      }, error = function(e) list(error = conditionMessage(e)))
    })
    k_value <- shiny::reactive({
      k <- input$k
      if (is.null(k) || !is.numeric(k) || length(k) != 1L || !is.finite(k) || k < 1 || k != round(k) ||
          k > .Machine$integer.max) NA_integer_
      else as.integer(k)
    })

    output$status <- shiny::renderUI({
      shiny::req(rv$status)
      shiny::div(class = paste("app-status", if (rv$error) "app-error" else if (rv$warn) "app-warn" else "app-ok"),
                 id = "status_text", rv$status)
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
    output$cat_status <- shiny::renderUI({
      ct <- categorical()
      if (!is.null(ct$error)) return(shiny::p(id = "cat_error", class = "app-status app-error", ct$error))
      if (!length(ct$settings$keys)) return(shiny::p(class = "app-note", "No key variables declared."))
    })
    output$cat_risk <- shiny::renderTable({
      ct <- categorical()
      shiny::req(is.null(ct$error), length(ct$settings$keys))
      cs <- ct$settings
      app_categorical_risk(rv$data, cs, if (is.null(cs$suppress)) 3L else cs$suppress$k, ct$after)
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
    shiny::observeEvent(input$run, guard("The release was not made", {
      d <- rv$data
      if (is.null(d)) return(set_status("Load a data file first.", error = TRUE))
      s <- tryCatch(app_settings(c(list(identifiers = input$identifiers, vars = input$vars, strata = input$strata,
                                      method = input$method, k = input$k, na = input$na,
                                      worst = input$worst, top_m = input$top_m, tune_methods = input$tune_methods,
                                      key = input$key, sensitive = input$sensitive,
                                      tune_small_strata = input$tune_small_strata,
                                      small_strata = input$small_strata, k_max = input$k_max,
                                      stir_method = input$stir_method, seed = input$seed,
                                      formula = input$formula, family = input$family),
                                   app_categorical_input(input)), d),
                    error = function(e) e)
      if (inherits(s, "error")) {
        return(set_status(paste0("The release was not made: ", conditionMessage(s)), error = TRUE))
      }
      notes <- character()
      keep_note <- function(cnd) {
        notes <<- c(notes, conditionMessage(cnd))
        invokeRestart(if (inherits(cnd, "warning")) "muffleWarning" else "muffleMessage")
      }
      dir <- tempfile("run")
      res <- tryCatch(shiny::withProgress(message = "Making the release", value = 0, {
        shiny::incProgress(0.1, detail = "removing identifiers")
        work <- if (length(s$identifiers)) remove_identifiers(d, cols = s$identifiers) else d
        # the categorical steps: the verb masks, and the battery attacks, the keys as released
        work <- withCallingHandlers(app_categorical(work, s$categorical), message = keep_note)
        shiny::incProgress(0.2, detail = paste0(s$verb, "()"))
        made <- withCallingHandlers(do.call(app_verb(s$verb), c(list(work), s$args, if (!is.null(s$key)) list(key = s$key))),
                                    warning = keep_note, message = keep_note)
        tuned <- NULL
        if (s$verb == "tune_release") {
          tuned <- made
          if (is.null(tuned$release)) app_no_release(tuned, s, work)
          release <- tuned$release
          # the records the search left out (small_strata = "suppress") are not compared
          if (!is.null(tuned$kept)) {
            work <- work[tuned$kept, , drop = FALSE]
            rownames(work) <- NULL
          }
        } else {
          release <- made
        }
        limits <- report_limits(tuned, if (is.null(tuned)) s$worst, if (is.null(tuned)) s$top_m)
        shiny::incProgress(0.3, detail = "measuring risk and utility")
        a <- withCallingHandlers(
          assess(work, release, vars = s$vars, strata = s$strata, formula = s$formula,
                 family = app_family(s$family), deterministic = TRUE, seed = 1),
          warning = keep_note, message = keep_note)
        shiny::incProgress(0.2, detail = "risk battery")
        b <- risk_battery(work, release, intruder = if (!is.null(tuned)) tuned$battery$intruder
                                                    else intruder(s$vars, if (length(s$strata)) s$strata),
                          m = limits$m, sensitive = s$args$sensitive, seed = 1)
        # the verdict of release_report(), per limit in plain words
        verdict <- report_verdict(a, b, limits, tuned, release_info(release), release, s$strata, s$k, NULL, "weak")
        dir.create(dir)
        csv <- withCallingHandlers(write_release(release, file.path(dir, "release.csv")),
                                   warning = keep_note, message = keep_note)
        shiny::incProgress(0.2, detail = "done")
        list(work = work, release = release, tuned = tuned, limits = limits, verdict = verdict,
             passes = grepl("class=\"verdict ok\"", verdict[1L], fixed = TRUE), keyed = !is.null(s$key),
             assess = a, battery = b, verb = s$verb, args = s$args, k = s$k,
             formula = s$formula, family = s$family, identifiers = s$identifiers, categorical = s$categorical,
             dir = dir, csv = csv,
             hash = release_hash(release, csv)$value, source = rv$source, notes = unique(notes))
      }), error = function(e) e)
      if (inherits(res, "error")) {
        unlink(dir, recursive = TRUE)
        return(set_status(paste0("The release was not made: ", app_error_advice(res),
                                 " Change the settings and press Make the release again."), error = TRUE))
      }
      drop_run_files()
      rv$run <- res
      shiny::updateSelectInput(session, "plot_var", choices = s$vars, selected = s$vars[1L])
      notes <- if (length(res$notes)) paste0(" ", plural(length(res$notes), "note"), " on the Risk tab.") else ""
      if (isTRUE(res$tuned$n_suppressed > 0)) {
        notes <- paste0(" ", plural(res$tuned$n_suppressed, "record"), " of cells of fewer than ",
                        res$tuned$limits[["k_strata"]], " records on the strata and the published columns (",
                        paste(res$tuned$keys, collapse = ", "), ") left out of the release.", notes)
      }
      if (res$passes) {
        set_status(paste0("Release made by ", release_made_by(release_info(res$release), res$tuned),
                          ": it meets every limit it was checked against.", notes))
      } else {
        set_status(paste0("Release made by ", release_made_by(release_info(res$release), res$tuned),
                          ": it does NOT meet the limits; do not publish it as it is (see the verdict).", notes),
                   warn = TRUE)
      }
      shiny::updateTabsetPanel(session, "tabs", selected = "risk")
    }))

    output$run_summary <- shiny::renderUI({
      run <- rv$run
      if (is.null(run)) {
        return(shiny::p(class = "app-note", "No release yet: set the roles and method, then press Make the release."))
      }
      now <- list(verb = input$method, k = k_value(), roles = roles())
      search_changed <- identical(run$verb, "tune_release") &&
        (!identical(if (length(now$roles$sensitive)) now$roles$sensitive, run$args$sensitive) ||
         !identical(if (is.null(input$tune_small_strata)) "fail" else input$tune_small_strata, run$args$small_strata))
      stale <- search_changed || !identical(categorical()$settings, run$categorical) ||
        !identical(now$verb, run$verb) || !identical(now$k, run$k) ||
        !identical(now$roles$vars, run$args$vars) || !identical(now$roles$identifiers, run$identifiers) ||
        !identical(if (length(now$roles$strata)) now$roles$strata, run$args$strata)
      shiny::tagList(
        shiny::p(id = "run_done", sprintf("Release made by %s(): %s; SHA-256 of the CSV %s", run$verb,
                                          plural(nrow(run$release), "record"), run$hash)),
        if (stale) shiny::p(id = "run_stale", class = "app-status app-error",
                            "The roles or settings changed since this release: press Make the release to update it."),
        if (length(run$notes)) shiny::tags$ul(lapply(run$notes, shiny::tags$li)))
    })
    output$verdict <- shiny::renderUI({
      run <- rv$run
      shiny::req(run)
      shiny::div(id = "verdict_box", shiny::HTML(paste(run$verdict, collapse = "\n")))
    })
    output$risk_plain <- shiny::renderTable({
      run <- rv$run
      shiny::req(run)
      app_risk_plain(run$battery)
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
      v <- input$plot_var
      shiny::req(run, is.character(v), length(v) == 1L, v %in% run$args$vars)
      plot_report_margins(run$work[[v]], run$release[[v]], v, run$k)
    })

    script <- shiny::reactive({
      run <- rv$run
      shiny::req(run)
      app_script(run$source, run$identifiers, run$verb, run$args, formula = run$formula, family = run$family,
                 k = run$k, hash = run$hash, keyed = run$keyed, override = !run$passes && isTRUE(input$override),
                 limits = if (is.null(run$tuned)) run$limits[c("worst", "top_m")], categorical = run$categorical)
    })
    output$code <- shiny::renderText({
      if (is.null(rv$run)) return("# No release yet.")
      paste(script(), collapse = "\n")
    })
    may_download <- shiny::reactive({
      run <- rv$run
      !is.null(run) && (run$passes || isTRUE(input$override))
    })
    output$dl_release_ui <- shiny::renderUI({
      run <- rv$run
      if (is.null(run)) return(shiny::p(class = "app-note", "No release yet."))
      if (!may_download()) {
        return(shiny::p(id = "dl_blocked", class = "app-status app-error",
                        "The release does not meet the limits, so it is not offered for download. Make a release ",
                        "that does (tune_release() with a key searches for one), or tick the box below to download ",
                        "it anyway: the report then says so in its title."))
      }
      shiny::tagList(
        if (!run$passes) shiny::p(id = "dl_override", class = "app-status app-error",
                                  "Override: this release does NOT meet the limits."),
        shiny::downloadButton("dl_release", "Release (CSV)"))
    })
    output$dl_release <- shiny::downloadHandler(
      filename = function() "release.csv",
      content = function(file) {
        run <- rv$run
        shiny::req(run)
        if (!may_download()) stop_arg("the release does not meet the limits; it is not downloaded.", kind = "data")
        if (!file.copy(run$csv, file, overwrite = TRUE)) stop_arg("the release file could not be copied.", kind = "data")
      })
    output$dl_report <- shiny::downloadHandler(
      filename = function() "report.html",
      content = function(file) {
        run <- rv$run
        shiny::req(run)
        shiny::withProgress(message = "Writing the report", value = 0.2, {
          release_report(run$work, if (is.null(run$tuned)) run$release else run$tuned, file,
                         vars = run$args$vars, strata = run$args$strata, k = run$k,
                         worst = if (is.null(run$tuned)) run$limits$worst,
                         top_m = if (is.null(run$tuned)) run$limits$top_m,
                         formula = run$formula, family = app_family(run$family), sensitive = run$args$sensitive,
                         seed = 1, release_file = run$csv,
                         title = if (!run$passes && isTRUE(input$override)) app_override_title else "Release report")
        })
      })
    output$dl_code <- shiny::downloadHandler(
      filename = function() "release.R",
      content = function(file) writeLines(script(), file))
    invisible(rv)
  }
}
