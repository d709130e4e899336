#' A release report: one self-contained HTML file for a data-access committee
#'
#' Writes one HTML file (no external assets: the style sheet is inline and the figures
#' are PNG images embedded as base64) that documents a release. It opens with a verdict:
#' the limits the release was checked against (those of the [tune_release()] search that
#' chose it, else `worst` and `top_m`), each met or not as measured in the report, and the
#' intruder the attacks assume. Then come the identifier screen,
#' the strata and their k-anonymity, the NHS ISB 1523 plan check when `roles` are given,
#' every risk measure of [assess()] and every attack of [risk_battery()] with the
#' intruder it plays and what it does not cover, the risk-utility frontier when the
#' release came from [tune_release()], the utility measures with figures, the exact
#' settings ([release_info()]), the package version, and the SHA-256 hash of the release
#' (see `release_file`) so that the report is tied to one release.
#'
#' @section What the report never shows:
#' The report is meant to be handed over, so it is built from aggregates only:
#' * no value of a masked variable of the original data, and no per-record value of the
#'   release in its text (the figures show the release and binned summaries only);
#' * no stratum (combination of strata values) with fewer than `k` records: the strata
#'   table lists the strata of at least `k` records and counts the others together; the
#'   worst stratum of an attack is named only when it holds at least `k` records;
#'   model coefficients resting on fewer than `k` original records are left out: every
#'   coefficient whose column of the model matrix is not zero for at least `k` records (a
#'   factor level, a combination of levels in an interaction, also with a numeric term),
#'   and for every cell of a term's categorical variables with fewer than `k` records
#'   whose coefficients all rest on more (e.g. the baseline levels, whose value is the
#'   intercept), one of the coefficients that sum to its value; the report says how many
#'   were left out;
#' * of the release metadata, the settings and counts, and only the names of its
#'   statistics.
#'
#' What the figures can leak, and how they are drawn so they do not:
#' * *distributions* (original against released, per masked variable): a histogram of the
#'   original places every record in a bin, so a bin of one record (an outlier) would
#'   give its value to within the bin width, and the plotted range would give the
#'   original minimum and maximum. The bins are therefore laid out from the *released*
#'   values only, original bins with fewer than `k` records are not drawn, and the axis
#'   covers only the bins drawn and the released values.
#' * *original against released* (the paper's Figure 2, which plots every record): shown
#'   as a two-dimensional histogram on the same bins, drawing only the cells of at least
#'   `k` records; it shows how far masking moved values, and says of any released value
#'   no more than "at least `k` records whose originals lie in this interval". The risky
#'   records of [risk_rmd()] are counted, not drawn.
#' * *propensity scores* (Figure 3): the boxes span the 25% to 75% quantiles and the
#'   whiskers end at the 5% and 95% quantiles (no whiskers to single records, no outliers
#'   drawn).
#' * *coefficients* (Figure 4) and the *frontier* are aggregates already.
#' A custodian should still read the report before it leaves the safe setting: the
#' column names, the strata levels of the large strata and the settings are shown.
#'
#' @param original The original data frame, rows aligned with `masked`; or an
#'   `sdcMicroObj`, or what [tune_release()] returns for one, alone (it holds both sides:
#'   see [sdc_extract()]).
#' @param masked The release (a data frame returned by a masking verb), or a
#'   `detanon_tuned` result of [tune_release()], whose chosen release is reported with
#'   the frontier of the search. Left out when `original` is an `sdcMicroObj` or its
#'   [tune_release()] result.
#' @param file Path of the HTML file to write.
#' @param vars,strata The masked variables and the strata. Default: those recorded in
#'   the release.
#' @param k The k of the strata checks. Default: the `k` recorded in the release (the
#'   smallest, when it varies), else 3; for a [tune_release()] result, not below the
#'   search's `k_strata`.
#' @param worst,top_m The limits the verdict checks the risk battery against: the largest
#'   one-record success rate of any attack (`worst`) and the largest top-`m` rate
#'   (`top_m`), shares in (0, 1]. Default: the limits of the search for a [tune_release()]
#'   result, else those of [tune_release()]'s defaults (0.1 and 0.3, with `m` = 3).
#' @param roles,plan Optional roles of the columns and the NHS plan for [nhs_check()]
#'   (run on the release; roles of columns not in the release are ignored).
#' @param formula,family Optional model for [utility_model()] (the coefficient figure).
#' @param weights The column of sampling weights, passed to [risk_battery()]; default: that
#'   of the search for a [tune_release()] result, and an `sdcMicroObj`'s weight variable.
#' @param intruder,sensitive Passed to [risk_battery()]; default intruder: that of the
#'   search for a [tune_release()] result, else `intruder_published(vars, strata)` (every
#'   published column not masked or `sensitive` held exactly).
#' @param title Title of the report.
#' @param release_file Optional path of the file that will be published (e.g. written by
#'   [write_release()]). Its bytes are hashed.
#' @param release_seed Without `release_file`: the `seed` that [write_release()] is (or
#'   will be) given, so that the hash is that of the file `write_release(masked, file, seed =
#'   release_seed)` writes (its rows in a random order drawn from that seed; see its section
#'   "Row order"). The seed is not shown in the report. With neither, the hash is that of
#'   the release written in a fresh random row order, which matches no file; the report
#'   says so.
#' @param nthreads Threads for the measures.
#' @param seed Seed for the measures that draw random numbers (the battery's control,
#'   replay).
#' @return The path of the file, invisibly, with an attribute `"sha256"` (the hash).
#' @family reports
#' @seealso [detanon_app()], [assess()], [risk_battery()].
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' # the file to publish (rows in a random order), then the report that hashes it
#' csv <- write_release(masked, tempfile(fileext = ".csv"))
#' f <- release_report(d, masked, tempfile(fileext = ".html"),
#'                     formula = Survived ~ Pclass + Sex + Age + Fare, family = binomial(),
#'                     release_file = csv)
#' f
#' @export
release_report <- function(original, masked, file, vars = NULL, strata = NULL, k = NULL,
                           worst = NULL, top_m = NULL, roles = NULL, plan = c("weak", "strong"), formula = NULL,
                           family = stats::gaussian(), intruder = NULL, sensitive = NULL, weights = NULL,
                           title = "Release report", release_file = NULL, release_seed = NULL,
                           nthreads = getOption("detanon.nthreads", 1L), seed = 1) {
  if (is_sdc(original) || is_sdc_tuned(original)) return(sdc_release_report(match.call(), parent.frame()))
  tuned <- NULL
  if (inherits(masked, "detanon_tuned")) {
    tuned <- masked
    if (is.null(tuned$release)) {
      stop_arg("`masked` is a tune_release() result with no release (no candidate met every limit).",
               kind = "data")
    }
    masked <- tuned$release
    # the records the search left out (small_strata = "suppress") are not in the release
    if (!is.null(tuned$kept) && is.data.frame(original) && nrow(original) == length(tuned$kept)) {
      original <- original[tuned$kept, , drop = FALSE]
    }
    # the published keys the search changed (generalised, suppressed, post-randomised) are
    # measured as the search measured them: as published
    ch <- tuned$categorical$changes
    for (v in ch$column[ch$n_recoded + ch$n_suppressed + ch$n_pram > 0L]) {
      if (is.data.frame(original) && nrow(original) == nrow(masked)) original[[v]] <- masked[[v]]
    }
  }
  check_data_frame(original, "original")
  check_data_frame(masked, "masked")
  check_output_file(file, "HTML")
  if (!is.character(title) || length(title) != 1L || is.na(title)) {
    stop_arg("`title` must be a single string, not ", show_value(title), ".")
  }
  if (!is.null(release_file) && (!is.character(release_file) || length(release_file) != 1L ||
                                 is.na(release_file) || !file.exists(release_file) || dir.exists(release_file))) {
    stop_arg("`release_file` must be the path of an existing file, not ", show_value(release_file), ".")
  }
  release_seed <- check_release_seed(release_seed, "release_seed")
  plan <- match_choice(plan, "plan")
  info <- current_release(masked, "masked")
  vars <- check_pair(original, masked, vars, strata = strata)
  if (is.null(strata)) strata <- attr(vars, "strata")
  vars <- as.vector(vars)
  if (length(strata)) {
    strata <- check_columns(strata, masked, "strata")
    check_strata_columns(masked, strata)
  }
  if (is.null(k)) {
    k0 <- info$settings$k # (a table of k per stratum: its column k)
    k0 <- suppressWarnings(as.numeric(if (is.data.frame(k0)) k0$k else k0))
    k <- if (length(k0) && all(is.finite(k0))) as.integer(min(k0)) else 3L
    if (!is.null(tuned) && !is.null(tuned$limits$k_strata)) k <- max(k, as.integer(tuned$limits$k_strata))
  }
  k <- check_whole(k, "k", min = 1)
  limits <- report_limits(tuned, worst, top_m)
  if (!is.null(roles)) {
    roles <- check_roles(roles, original)
    roles <- roles[names(roles) %in% names(masked)]
  }
  if (!is.null(formula) && !inherits(formula, "formula")) {
    stop_arg("`formula` must be NULL or a model formula such as `y ~ x1 + x2`, not ",
             show_value(formula), ".")
  }
  nthreads <- check_nthreads(nthreads)

  # the propensity model: the columns assess() would use, without those with missing values
  pmse_vars <- suppressMessages(default_pmse_vars(original, masked))
  has_na <- vapply(pmse_vars, function(v) anyNA(original[[v]]) || anyNA(masked[[v]]), logical(1))
  pmse_left <- pmse_vars[has_na]
  pmse_vars <- pmse_vars[!has_na]
  if (!length(pmse_vars)) {
    stop_arg("every column for the propensity model has missing values; impute them first.", kind = "data")
  }
  a <- assess(original, masked, vars = vars, strata = strata, formula = formula, family = family,
              pmse_vars = pmse_vars, deterministic = TRUE, nthreads = nthreads, seed = seed)
  a$pmse_left <- pmse_left
  if (is.null(intruder) && !is.null(tuned)) intruder <- tuned$battery$intruder # the search's intruder
  if (is.null(weights) && !is.null(tuned)) weights <- tuned$weights
  bat <- risk_battery(original, masked,
                      intruder = if (is.null(intruder)) intruder_published(vars, if (length(strata)) strata) else intruder,
                      m = limits$m, sensitive = sensitive, weights = weights, seed = seed, nthreads = nthreads)
  hash <- release_hash(masked, release_file, seed = release_seed)
  hash$fresh <- is.null(release_file) && is.null(release_seed)

  body <- c(
    h(1L, title),
    report_verdict(a, bat, limits, tuned, info, masked, strata, k, roles, plan),
    report_header(masked, hash, info, release_file),
    report_risk(a, bat, k),
    report_strata(masked, strata, k),
    report_categorical(bat, masked, k, sensitive, tuned),
    report_identifiers(original, masked),
    if (length(roles)) report_nhs(masked, roles, plan),
    if (!is.null(tuned)) report_frontier(tuned),
    report_utility(a, original, masked, vars, k, formula),
    report_settings(info, tuned),
    report_policy(k)
  )
  html <- c("<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
            paste0("<title>", html_escape(title), "</title>"),
            paste0("<style>", report_css(), "</style></head><body><main>"),
            body, "</main></body></html>")
  con <- file(file, open = "wb")
  on.exit(close(con))
  writeBin(charToRaw(enc2utf8(paste0(paste(html, collapse = "\n"), "\n"))), con)
  invisible(structure(file, sha256 = hash$value))
}

#' Write a release as the CSV the report hashes
#'
#' Writes `x` as CSV (UTF-8, `"\n"` line ends, no row names, missing values as empty
#' fields, numbers with up to 15 significant digits, `integer64` columns exactly as their
#' decimal digits), the form whose SHA-256 hash [release_report()] prints when it is
#' given the same `seed` (as `release_seed`) or the file itself (as `release_file`).
#' `sha256sum` of the file (or `openssl::sha256(file(path))`) then gives the hash in the
#' report. The release metadata (an attribute) are not written.
#'
#' @section Row order:
#' In memory, a release keeps its rows aligned with the original data (the risk and
#' utility measures need the pairing). The file that leaves the custodian's hands must not:
#' if the published rows stood in the order of the original (sorted by an identifier, by
#' date of admission, by ward), anyone who knows that order could pair released rows with
#' people. `write_release()` therefore writes the rows in a random order, drawn from
#' `seed` when it is given (the same file for the same seed: keep the seed as secret as
#' the original data, since with it and the original order the permutation can be undone)
#' or from a fresh seed taken from the operating system's entropy otherwise; never from
#' the order of `x`. The caller's random stream is left as it was either way. No row names
#' are written, and a column that could restore the order (a permutation of 1..n, such as
#' a row number, or a column whose values are all distinct and sorted in the order of the
#' rows) is written with a warning of class `detanon_warning_identifier`: drop it first.
#'
#' @section Spreadsheets:
#' A text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is read as
#' a formula by spreadsheet programs (CSV or formula injection). By default such cells are
#' written with a leading single quote (`'`), as OWASP recommends, so that a spreadsheet
#' shows them as text. Only text cells (character and factor columns, and the column
#' names) are escaped: numbers are written as numbers (unquoted), a negative number
#' included. `escape_formulas = FALSE` writes
#' every text cell as it is, e.g. for a file read only by statistical software.
#' @param x A data frame (a release).
#' @param file Path of the CSV file.
#' @param seed A whole number: the rows are written in the random order `set.seed(seed)`
#'   draws, for this call only. `NULL` (the default): a fresh random order, from a seed
#'   taken from the operating system's entropy (not from R's random stream).
#' @param escape_formulas Prefix text cells that a spreadsheet would read as a formula
#'   with `'` (see the section "Spreadsheets")?
#' @return `file`, invisibly.
#' @family reports
#' @examples
#' masked <- anonymise(titanic_paper()[-1], k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' f <- write_release(masked, tempfile(fileext = ".csv"))
#' # a reproducible order: the same seed writes the same file (keep the seed private)
#' f <- write_release(masked, tempfile(fileext = ".csv"), seed = 20240611)
#' @export
write_release <- function(x, file, seed = NULL, escape_formulas = TRUE) {
  check_data_frame(x, "x")
  check_output_file(file, "CSV")
  seed <- check_release_seed(seed, "seed")
  check_flag(escape_formulas, "escape_formulas")
  bytes <- release_csv_bytes(x, seed = seed, escape_formulas = escape_formulas)
  warn_order_columns(x)
  con <- file(file, open = "wb")
  on.exit(close(con))
  writeBin(bytes, con)
  invisible(file)
}

# `file` must be one path of a file that can be written: not a folder, in a folder that exists.
check_output_file <- function(file, what, arg = "file") {
  if (!is.character(file) || length(file) != 1L || is.na(file) || !nzchar(file)) {
    stop_arg("`", arg, "` must be the path of the ", what, " file to write, not ", show_value(file), ".")
  }
  if (dir.exists(file)) {
    stop_arg("`", arg, "` is a folder (", file, "); give the path of the ", what, " file to write in it.")
  }
  if (!dir.exists(dirname(file))) {
    stop_arg("`", arg, "`: the folder ", dirname(file), " does not exist.")
  }
  invisible(file)
}

check_release_seed <- function(seed, arg) {
  if (is.null(seed)) return(NULL)
  if (!is.numeric(seed) || length(seed) != 1L || is.na(seed) || !is.finite(seed) || seed != round(seed) ||
      abs(seed) > .Machine$integer.max) {
    stop_arg("`", arg, "` must be NULL or a single whole number, not ", show_value(seed), ".")
  }
  as.integer(seed)
}

# A seed from the operating system's entropy (never from R's random stream, which it
# leaves untouched): /dev/urandom, else openssl, else the clock and the process id.
fresh_seed <- function() {
  b <- NULL
  if (file.exists("/dev/urandom")) {
    b <- tryCatch({
      con <- file("/dev/urandom", open = "rb", raw = TRUE)
      on.exit(close(con))
      readBin(con, "raw", 4L)
    }, error = function(e) NULL)
  }
  if (length(b) != 4L && requireNamespace("openssl", quietly = TRUE)) b <- openssl::rand_bytes(4L)
  if (length(b) != 4L) {
    t <- as.numeric(Sys.time())
    return(as.integer((floor((t - floor(t)) * 1e6) * 7919 + Sys.getpid() * 104729 + floor(t)) %% .Machine$integer.max))
  }
  v <- sum(as.double(as.integer(b)) * 256^(0:3)) %% .Machine$integer.max
  as.integer(v)
}

# The order in which the rows of a release of n rows are written: drawn from `seed`, or
# from a fresh seed; the caller's random stream is restored.
release_order <- function(n, seed = NULL) {
  if (n < 2L) return(seq_len(n))
  if (is.null(seed)) seed <- fresh_seed()
  with_seed(seed, sample.int(n))
}

# Columns that could restore the order of the rows: a permutation of 1..n (or 0..n-1),
# or distinct values sorted in the order of the rows.
order_columns <- function(x) {
  n <- nrow(x)
  if (n < 3L) return(character())
  names(x)[vapply(x, function(v) {
    if (is.factor(v) || !is.atomic(v) || anyNA(v)) return(FALSE)
    if (inherits(v, "integer64")) v <- as.character(v)
    if (is.numeric(v) && !is.object(v) && all(v == round(v))) {
      s <- sort(v, method = "radix")
      if (identical(as.double(s), as.double(seq_len(n))) || identical(as.double(s), as.double(seq_len(n) - 1L))) {
        return(TRUE)
      }
    }
    if (!(is.numeric(v) || is.character(v) || inherits(v, c("Date", "POSIXct")))) return(FALSE)
    if (anyDuplicated(v)) return(FALSE)
    o <- order(radix_key(v), method = "radix")
    identical(o, seq_len(n)) || identical(o, rev(seq_len(n)))
  }, logical(1))]
}

warn_order_columns <- function(x) {
  bad <- order_columns(x)
  if (length(bad)) {
    warn_detanon(plural(length(bad), "column", count = FALSE), " ", quote_names(bad), " ",
                 plural(length(bad), "holds", "hold", count = FALSE), " distinct values that are a ",
                 "permutation of 1..n or sorted in the order of the rows: with ",
                 if (length(bad) == 1L) "it" else "them", " the published rows can be put back in the ",
                 "order of the original data. Drop ", if (length(bad) == 1L) "it" else "them",
                 " before publishing.", kind = "identifier")
  }
}

# The bytes write_release() writes: the rows in release_order(), text cells escaped
# against formula injection unless `escape_formulas = FALSE`.
release_csv_bytes <- function(x, seed = NULL, escape_formulas = TRUE) {
  df <- as.data.frame(plain_release(x), stringsAsFactors = FALSE)
  listed <- names(df)[!vapply(df, function(v) is.atomic(v) && is.null(dim(v)), logical(1))]
  if (length(listed)) {
    stop_arg("`x` has ", plural(length(listed), "column", count = FALSE), " ", quote_names(listed),
             " that ", plural(length(listed), "is", "are", count = FALSE), " not a vector (a list or ",
             "matrix column); a CSV cell holds one value: flatten or drop ", 
             if (length(listed) == 1L) "it" else "them", " first.", kind = "column")
  }
  df <- df[release_order(nrow(df), seed), , drop = FALSE]
  rownames(df) <- NULL
  bad <- "^[-=+@\t\r]"
  # numbers (and integer64 digits) are written unquoted: a spreadsheet reads them as numbers
  number <- vapply(df, function(y) is.numeric(unclass(y)) && (!is.object(y) || is_labelled(y) ||
                                                              inherits(y, "integer64")), logical(1))
  for (v in names(df)) {
    y <- df[[v]]
    if (is_labelled(y)) y <- as.vector(unclass(y))
    if (inherits(y, "integer64")) {
      if (!requireNamespace("bit64", quietly = TRUE)) {
        stop_arg("`x` column `", v, "` is integer64: install the package bit64 to write it exactly, or ",
                 "convert it with as.character().", kind = "column")
      }
      y <- as.character(y)
    } else if (is.double(y)) {
      y <- ifelse(is.na(y), NA_character_, formatC(y, digits = 15, format = "g", flag = ""))
      y <- trimws(y)
    } else if (escape_formulas && (is.character(y) || is.factor(y))) {
      y <- as.character(y)
      hit <- !is.na(y) & grepl(bad, y, perl = TRUE)
      y[hit] <- paste0("'", y[hit])
    }
    attributes(y) <- attributes(y)[intersect(names(attributes(y)), c("levels", "class"))]
    df[[v]] <- y
  }
  if (escape_formulas) {
    hit <- grepl(bad, names(df), perl = TRUE)
    names(df)[hit] <- paste0("'", names(df)[hit])
  }
  tc <- textConnection(NULL, open = "w")
  utils::write.csv(df, tc, row.names = FALSE, na = "", fileEncoding = "", quote = which(!number))
  out <- textConnectionValue(tc)
  close(tc)
  charToRaw(enc2utf8(paste0(paste(out, collapse = "\n"), "\n")))
}

# SHA-256 of the published file, else of write_release()'s bytes for `seed`. openssl when
# installed, else MD5 (tools), said so in the report.
release_hash <- function(masked, release_file = NULL, seed = NULL) {
  bytes <- if (!is.null(release_file)) readBin(release_file, "raw", file.size(release_file))
           else release_csv_bytes(masked, seed = seed)
  if (requireNamespace("openssl", quietly = TRUE)) {
    list(algo = "SHA-256", value = unclass(as.character(openssl::sha256(bytes))))
  } else {
    tmp <- tempfile()
    on.exit(unlink(tmp))
    writeBin(bytes, tmp)
    list(algo = "MD5 (install the openssl package for SHA-256)", value = unname(tools::md5sum(tmp)))
  }
}

# ---- HTML helpers ----------------------------------------------------------------------

html_escape <- function(x) {
  x <- gsub("&", "&amp;", as.character(x), fixed = TRUE)
  x <- gsub("<", "&lt;", x, fixed = TRUE)
  x <- gsub(">", "&gt;", x, fixed = TRUE)
  gsub("\"", "&quot;", x, fixed = TRUE)
}

h <- function(level, text, id = NULL) {
  sprintf("<h%d%s>%s</h%d>", level, if (is.null(id)) "" else sprintf(" id=\"%s\"", id), html_escape(text), level)
}

para <- function(..., class = NULL) {
  sprintf("<p%s>%s</p>", if (is.null(class)) "" else sprintf(" class=\"%s\"", class), html_escape(paste0(...)))
}

# A data frame as an HTML table (values formatted by fmt_cell); `row_class`, a class per
# row ("" for none).
html_table <- function(df, caption = NULL, class = NULL, row_class = NULL) {
  if (!nrow(df)) return(para("(none)", class = "note"))
  head <- paste0("<tr>", paste0("<th>", html_escape(names(df)), "</th>", collapse = ""), "</tr>")
  cells <- vapply(df, fmt_cell, character(nrow(df)))
  if (is.null(dim(cells))) cells <- matrix(cells, nrow = nrow(df))
  tr <- if (is.null(row_class)) rep("<tr>", nrow(df))
        else ifelse(nzchar(row_class), sprintf("<tr class=\"%s\">", row_class), "<tr>")
  rows <- paste0(tr, apply(cells, 1L, function(r) paste0("<td>", html_escape(r), "</td>", collapse = "")), "</tr>")
  c(sprintf("<table%s>", if (is.null(class)) "" else sprintf(" class=\"%s\"", class)),
    if (!is.null(caption)) paste0("<caption>", html_escape(caption), "</caption>"),
    "<thead>", head, "</thead><tbody>", rows, "</tbody></table>")
}

fmt_cell <- function(x) {
  if (is.factor(x)) x <- as.character(x)
  if (is.logical(x)) return(ifelse(is.na(x), "", ifelse(x, "yes", "no")))
  if (is.double(x)) return(fmt_signif(x))
  ifelse(is.na(x), "NA", as.character(x))
}

# Numbers with `digits` significant digits: fixed notation from 0.0001 to 1e6, else
# scientific ("9.19e-34", never a run of zeros).
fmt_signif <- function(x, digits = 3L) {
  fixed <- is.finite(x) & (x == 0 | (abs(x) >= 1e-4 & abs(x) < 1e6))
  out <- character(length(x))
  out[fixed] <- sub("\\.$", "", formatC(signif(x[fixed], digits), digits = digits, format = "fg", flag = "#"))
  sci <- is.finite(x) & !fixed
  out[sci] <- formatC(x[sci], digits = digits - 1L, format = "e")
  out[!is.finite(x)] <- ifelse(is.na(x[!is.finite(x)]), "", as.character(x[!is.finite(x)]))
  trimws(out)
}

# A figure drawn by `draw()` as an embedded PNG, or a note when PNG is unavailable.
html_figure <- function(draw, caption, width = 720, height = 420) {
  if (!capabilities("png") && !capabilities("cairo")) {
    return(para("(figure not drawn: this R cannot write PNG) ", caption, class = "note"))
  }
  tmp <- tempfile(fileext = ".png")
  on.exit(unlink(tmp))
  type <- if (capabilities("cairo")) "cairo" else getOption("bitmapType")
  grDevices::png(tmp, width = width, height = height, res = 96, type = type)
  ok <- tryCatch({
    draw()
    TRUE
  }, error = function(e) conditionMessage(e), finally = grDevices::dev.off())
  if (!isTRUE(ok)) return(para("(figure not drawn: ", ok, ") ", caption, class = "note"))
  b <- readBin(tmp, "raw", file.size(tmp))
  c("<figure>", sprintf("<img alt=\"%s\" src=\"data:image/png;base64,%s\">", html_escape(caption), base64_raw(b)),
    paste0("<figcaption>", html_escape(caption), "</figcaption>"), "</figure>")
}

# Base64 of a raw vector (RFC 4648), without dependencies.
base64_raw <- function(x) {
  chars <- c(LETTERS, letters, 0:9, "+", "/")
  n <- length(x)
  if (!n) return("")
  pad <- (3L - n %% 3L) %% 3L
  v <- matrix(c(as.integer(x), integer(pad)), nrow = 3L)
  w <- v[1L, ] * 65536 + v[2L, ] * 256 + v[3L, ]
  idx <- rbind(w %/% 262144, (w %/% 4096) %% 64, (w %/% 64) %% 64, w %% 64)
  out <- chars[idx + 1]
  if (pad) out[length(out) - seq_len(pad) + 1L] <- "="
  paste(out, collapse = "")
}

report_css <- function() {
  paste(
    "body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#222;background:#fff;margin:0}",
    "main{max-width:960px;margin:auto;padding:1em 2em}",
    "h1{border-bottom:2px solid #444}h2{border-bottom:1px solid #bbb;margin-top:2em}",
    "table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em}",
    "th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}",
    "th{background:#f0f0f0}caption{text-align:left;font-weight:bold;padding:.3em 0}",
    ".note{color:#555;font-size:.9em}.warn{color:#a40000;font-weight:bold}.ok{color:#060}",
    ".verdict{font-size:1.05em;line-height:1.45;padding:.7em 1em;border-left:6px solid;background:#f7f7f7}",
    ".verdict.ok{border-color:#060;color:#222}.verdict.warn{border-color:#a40000;font-weight:normal;color:#222}",
    ".verdict.ok b{color:#060}.verdict.warn b{color:#a40000}",
    "tr.miss td{color:#a40000;font-weight:bold}tr.chosen td{background:#fff3c4;font-weight:bold}",
    "table.candidates td:nth-child(n+4):nth-child(-n+6),table.checks td:nth-child(2){white-space:nowrap}",
    "code,.hash{font-family:monospace;word-break:break-all}",
    "figure{margin:1em 0}img{max-width:100%}figcaption{font-size:.85em;color:#444}",
    "dl.meta dt{font-weight:bold;float:left;clear:left;width:12rem}dl.meta dd{margin-left:13rem}")
}

# ---- sections --------------------------------------------------------------------------

report_header <- function(masked, hash, info, release_file) {
  hashed <- if (!is.null(release_file)) paste0("the bytes of ", basename(release_file))
            else if (isTRUE(hash$fresh)) paste0("the release written as write_release() writes it (CSV, UTF-8) in a ",
                                                "fresh random row order: it matches no published file; give ",
                                                "release_report() the file (release_file) or write_release()'s ",
                                                "seed (release_seed)")
            else "the release written by write_release() with the custodian's seed (CSV, UTF-8, rows in random order)"
  c("<dl class=\"meta\">",
    sprintf("<dt>Created</dt><dd>%s</dd>", html_escape(format(Sys.time(), "%Y-%m-%d %H:%M:%S UTC", tz = "UTC"))),
    sprintf("<dt>Software</dt><dd>detanon %s, %s</dd>", html_escape(as.character(utils::packageVersion("detanon"))),
            html_escape(R.version.string)),
    sprintf("<dt>Release</dt><dd>%s, %s%s</dd>", plural(nrow(masked), "record"), plural(ncol(masked), "column"),
            if (!is.null(info)) paste0(", made by ", html_escape(info$verb), "()") else
              " (no release metadata: made outside detanon, or edited after release)"),
    sprintf("<dt>Columns</dt><dd>%s</dd>", html_escape(paste(names(masked), collapse = ", "))),
    sprintf("<dt>%s</dt><dd class=\"hash\">%s</dd>", html_escape(hash$algo), html_escape(hash$value)),
    sprintf("<dt>Hash of</dt><dd>%s</dd>", html_escape(hashed)),
    "</dl>",
    para("This report describes the one release with the hash above. It holds aggregates only: ",
         "no original value of a masked variable and no stratum of fewer than k records (see ",
         "\"What this report does not show\" at the end).", class = "note"))
}

# The limits of the verdict: those of the search that chose the release, else `worst` and
# `top_m` (default: tune_release()'s). Limits left at 1 (no limit) are not kept.
report_limits <- function(tuned, worst, top_m) {
  l <- if (!is.null(tuned)) tuned$limits else list(worst = 0.1, top_m = 0.3, m = 3L)
  if (!is.null(worst)) l$worst <- check_limit(worst, "worst")
  if (!is.null(top_m)) l$top_m <- check_limit(top_m, "top_m")
  if (is.null(l$m)) l$m <- 3L
  l$source <- if (!is.null(tuned)) "the limits of the tune_release() search that chose it"
              else if (is.null(worst) && is.null(top_m)) "the default limits of tune_release()"
              else "the limits given to release_report()"
  l
}

# A share as a percentage with 3 significant digits ("9.88%").
pct <- function(x) paste0(format(signif(100 * x, 3)), "%")

# What the release is: the verb and its group size, for the verdict.
release_made_by <- function(info, tuned) {
  if (is.null(info)) return("a release without detanon metadata")
  if (!is.null(tuned) && !is.null(tuned$chosen)) {
    if (identical(info$verb, "tune_release")) return(paste0(tuned$chosen$settings, ", by tune_release()"))
    return(paste0(info$verb, "() (", tuned$chosen$settings, "), chosen by tune_release()"))
  }
  st <- info$settings
  size <- if (!is.null(st$size)) sprintf(", groups of mean size %s", format(st$size)) else ""
  ks <- suppressWarnings(as.numeric(st$k))
  kk <- if (length(ks) && all(is.finite(ks))) {
    if (length(unique(ks)) == 1L) sprintf(" with k = %s", format(ks[1L])) else
      sprintf(" with k from %s to %s", format(min(ks)), format(max(ks)))
  } else ""
  paste0(info$verb, "()", kk, size)
}

# The verdict: one paragraph on the limits (met or not), the intruder and what to publish,
# and the table of the checks behind it.
report_verdict <- function(a, bat, limits, tuned, info, masked, strata, k, roles, plan) {
  tab <- as.data.frame(bat)
  # the attacks on the tails are bounded by the `tail` limit, not by `worst` (tune_release())
  tails <- tab[tab$name %in% tail_attacks(), , drop = FALSE]
  tab <- tab[!tab$name %in% tail_attacks(), , drop = FALSE]
  w <- which.max(tab$rate)
  tm <- if (all(is.na(tab$rate_m))) NA_integer_ else which.max(tab$rate_m)
  rows <- list(list(check = "worst one-record attack", limit = paste0("<= ", pct(limits$worst)),
                    measured = paste0(pct(tab$rate[w]), " (", tab$attack[w], ")"), met = tab$rate[w] <= limits$worst))
  if (!is.na(tm)) {
    rows[[2L]] <- list(check = sprintf("own record among an attack's %d best guesses", limits$m),
                       limit = paste0("<= ", pct(limits$top_m)),
                       measured = paste0(pct(tab$rate_m[tm]), " (", tab$attack[tm], ")"),
                       met = tab$rate_m[tm] <= limits$top_m)
  }
  if (nrow(tails) && any(!is.na(tails$rate)) && !is.null(limits$tail) && limits$tail < 1) {
    tl <- which.max(tails$rate)
    rows[[length(rows) + 1L]] <- list(check = "the tails (the most outlying records, extreme values)",
                                      limit = paste0("<= ", pct(limits$tail)),
                                      measured = paste0(pct(tails$rate[tl]), " (", tails$attack[tl], ")"),
                                      met = tails$rate[tl] <= limits$tail)
  }
  older <- list(linkage = c("nearest-neighbour linkage (risk_linkage())", a$linkage$rate),
                linkage_stratum = c("nearest-neighbour linkage in the worst stratum",
                                    if (!is.null(tuned$chosen)) tuned$chosen$linkage_stratum else NA),
                top_m_stratum = c(sprintf("top-%d linkage in the worst stratum", limits$m),
                                  if (!is.null(tuned$chosen)) tuned$chosen$top_m_stratum else NA),
                risk1 = c("risk1 (risk_rmd())", a$rmd$risk1), risk2 = c("risk2 (risk_rmd())", a$rmd$risk2))
  for (nm in names(older)) {
    lim <- limits[[nm]]
    if (is.null(lim) || lim >= 1) next # 1: no limit set
    val <- as.numeric(older[[nm]][2L])
    rows[[length(rows) + 1L]] <- list(check = older[[nm]][1L], limit = paste0("<= ", pct(lim)),
                                      measured = if (is.na(val)) "not measured" else pct(val),
                                      met = !is.na(val) && val <= lim)
  }
  k_strata <- if (!is.null(limits$k_strata)) max(k, limits$k_strata) else k
  if (length(strata)) {
    kan <- kanon_check(masked, strata, k_strata)
    rows[[length(rows) + 1L]] <- list(check = paste("records per stratum of", paste(strata, collapse = " x ")),
                                      limit = paste(">=", k_strata),
                                      measured = if (kan$conforms) paste("at least", kan$min_size)
                                                 else paste(plural(kan$n_small, "stratum", "strata"), "below"),
                                      met = kan$conforms)
  }
  ids <- detect_identifiers(masked)
  rows[[length(rows) + 1L]] <- list(check = "columns that look like direct identifiers", limit = "none",
                                    measured = if (nrow(ids)) paste(ids$column, collapse = ", ") else "none",
                                    met = !nrow(ids))
  if (length(roles)) {
    chk <- nhs_check(masked, roles = roles, plan = plan)
    rows[[length(rows) + 1L]] <- list(check = sprintf("NHS ISB 1523 plan (%s)", chk$plan), limit = "conforms",
                                      measured = if (chk$conforms) "conforms" else "does not conform",
                                      met = chk$conforms)
  }
  checks <- do.call(rbind, lapply(rows, as.data.frame, stringsAsFactors = FALSE))
  ok <- all(checks$met)
  missed <- checks$check[!checks$met]
  who <- paste(format(bat$intruder), collapse = " and ")
  head <- if (ok) "Verdict: the release meets every limit it was checked against"
          else paste0("Verdict: the release does NOT meet ", if (length(missed) == 1L) "the limit on " else "the limits on ",
                      paste(missed, collapse = "; "))
  text <- paste0(
    " (", limits$source, "). ",
    sprintf("Its worst one-record attack, %s, is right for %s of the records (limit %s)", tab$attack[w],
            pct(tab$rate[w]), pct(limits$worst)),
    if (!is.na(tm)) sprintf("; the own record is among the %d best guesses of %s for %s (limit %s)", limits$m,
                            tab$attack[tm], pct(tab$rate_m[tm]), pct(limits$top_m)) else "",
    ". The attacks assume an intruder who ", who, ". ",
    report_straddles(bat, limits),
    "The release was made by ", release_made_by(info, tuned), ". ",
    if (ok) paste0("It may be published as the file write_release() writes (its rows in a random order), whose ",
                   "hash is given below when the report was given that file or its seed. ",
                   "Meeting the limits is not a proof of safety: attacks not in the battery, other background ",
                   "knowledge, the order of the records in a file not written by write_release(), differencing with another ",
                   "release of the same people",
                   if (is_published_intruder(bat$intruder)) " are not covered."
                   else ", and published columns left unchanged and used as keys are not covered.")
    else paste0("Do not publish it as it is: tune_release(), given a secret key, searches for the least damaging ",
                "release that meets the limits."))
  checks$met <- ifelse(checks$met, "yes", "NO")
  c(sprintf("<p class=\"verdict %s\"><b>%s</b>%s</p>", if (ok) "ok" else "warn", html_escape(head), html_escape(text)),
    html_table(checks, caption = "The checks behind the verdict", class = "checks",
               row_class = ifelse(checks$met == "yes", "", "miss")))
}

# The verdict's sentence on the limits whose 95% interval is straddled ("" when none is).
report_straddles <- function(bat, limits) {
  str <- battery_straddles(bat, limits$worst, limits$top_m)
  if (!nzchar(str)) return("")
  paste0("Uncertain: the 95% interval of ", str, " straddles its limit, so on this number of records the ",
         "verdict could go either way. ")
}

report_settings <- function(info, tuned) {
  out <- h(2L, "Settings", "settings")
  if (is.null(info)) {
    out <- c(out, para("The release carries no detanon metadata, so its settings are not known to this report.",
                       class = "warn"))
  } else {
    show <- function(l) {
      if (!length(l)) return(data.frame(name = character(), value = character()))
      val <- vapply(l, function(v) {
        if (is.null(v) || !length(v)) "(none)"
        else if (is.character(v)) paste(v, collapse = ", ")
        else paste(format(v, digits = 4), collapse = ", ")
      }, character(1))
      data.frame(name = names(l), value = unname(val), stringsAsFactors = FALSE)
    }
    out <- c(out, para("Made by ", info$verb, "() with these settings (release_info()):"),
             html_table(show(info$settings), caption = "Settings"),
             html_table(show(info$counts), caption = "Counts"),
             if (!is.null(info$stats)) para("The metadata also hold the statistics ",
                                            paste(names(info$stats), collapse = ", "),
                                            " (not shown).", class = "note"))
  }
  if (!is.null(tuned)) {
    l <- tuned$limits
    set <- c(worst = "worst one-record attack", top_m = sprintf("top-%d rate of every attack that has one", l$m),
             linkage = "nearest-neighbour linkage", linkage_stratum = "nearest-neighbour linkage, worst stratum",
             top_m_stratum = sprintf("top-%d linkage, worst stratum", l$m), risk1 = "risk1", risk2 = "risk2",
             risk_threshold = "individual risk of every record on the categorical keys")
    set <- set[names(set) %in% names(l)]
    set <- set[vapply(names(set), function(nm) l[[nm]] < 1, logical(1))] # 1: no limit
    # (every limit can be 1, i.e. none set: no rows)
    lim <- data.frame(limit = unname(set), value = sprintf("<= %s", vapply(names(set), function(nm) fmt_signif(l[[nm]]), "")),
                      stringsAsFactors = FALSE)
    if (!is.null(l$k_strata)) {
      lim <- rbind(lim, data.frame(limit = "records per stratum", value = paste(">=", l$k_strata)))
    }
    out <- c(out, para("The release was chosen by tune_release() (objective ", tuned$objective, "; ",
                       plural(nrow(tuned$tried), "candidate"), " tried; stopped: ", tuned$stop, ")."),
             html_table(lim, caption = "Limits of the search (limits not set are not listed)"),
             para(sprintf("The search tried no centroid or group of fewer than %d records; the release's own ", l$k),
                  "settings are listed above.", class = "note"))
  }
  out
}

report_identifiers <- function(original, masked) {
  found <- detect_identifiers(masked)
  before <- detect_identifiers(original)
  removed <- setdiff(before$column, names(masked))
  c(h(2L, "Direct identifiers", "identifiers"),
    para("detect_identifiers() screens every column of the release for the signs of a direct ",
         "identifier (unique values, identifier-like values or names, free text)."),
    if (nrow(found)) c(para(plural(nrow(found), "column"), " of the release look like direct identifiers: ",
                            "drop or pseudonymise them, or record why they may stay.", class = "warn"),
                       html_table(found[c("column", "reason")]))
    else para("No column of the release looks like a direct identifier.", class = "ok"),
    if (length(removed)) para("Flagged in the original and not in the release: ", paste(removed, collapse = ", "), "."),
    para("A flagged column is not necessarily identifying, and an unflagged one may still be (a rare ",
         "diagnosis, an identifier coded as a factor).", class = "note"))
}

report_strata <- function(masked, strata, k) {
  out <- h(2L, "Strata and k-anonymity", "strata")
  if (!length(strata)) {
    return(c(out, para("No strata: the release was not stratified, and no categorical column was checked.")))
  }
  kan <- kanon_check(masked, strata, k)
  tab <- strata_table(masked, strata, k)
  big <- as.data.frame(unclass(tab), stringsAsFactors = FALSE)[!tab$below_k, c(strata, "n"), drop = FALSE]
  big <- big[order(-big$n), , drop = FALSE]
  shown <- utils::head(big, 200L)
  c(out,
    para(sprintf("On %s with k = %d: %s in %s; the smallest has %s.",
                 paste(strata, collapse = " x "), k, plural(kan$n, "record"), plural(kan$n_classes, "stratum", "strata"),
                 if (kan$min_size >= k) plural(kan$min_size, "record") else "fewer than k records")),
    if (kan$conforms) para(sprintf("Every stratum holds at least %d records: the release is %d-anonymous on these columns.", k, k),
                           class = "ok")
    else para(sprintf("%s below k, holding %s (%.1f%%), %s not listed: the release is NOT %d-anonymous on these columns.",
                      plural(kan$n_small, "stratum", "strata"), plural(kan$n_affected, "record"),
                      100 * kan$share_affected, if (kan$n_small == 1L) "is" else "are", k), class = "warn"),
    html_table(shown, caption = sprintf("Strata of at least k = %d records, largest first%s", k,
                                        if (nrow(big) > nrow(shown)) sprintf(" (first %d of %d)", nrow(shown), nrow(big)) else "")),
    para("k-anonymity protects against re-identification through these columns only; it does not protect ",
         "other columns, nor against attribute disclosure when a stratum shares a sensitive value.", class = "note"))
}

# The categorical keys the intruder holds (the strata and the published categorical
# columns): their risk on the release (NA matching any value, as sdcMicro counts), the
# changes the search made to them, and the l-diversity of the sensitive column within them.
report_categorical <- function(bat, masked, k, sensitive, tuned) {
  cr <- bat$categorical
  if (is.null(cr)) return(NULL)
  n <- length(cr$fk)
  below <- sum(cr$fk < k)
  out <- c(h(2L, "Categorical keys", "categorical"),
           para(sprintf(paste0("On the categorical keys the intruder holds (%s), a missing value matching any value ",
                               "(as sdcMicro counts after local suppression): %s unique in the release, %s in ",
                               "pairs, %s (%s) in classes of fewer than k = %d records; the individual risk gives ",
                               "%.1f expected re-identifications by the keys alone (global risk %s)%s"),
                        paste(cr$keys, collapse = ", "), plural(cr$n_unique, "record"), plural(cr$n_two, "record"),
                        plural(below, "record"), pct(below / max(1, n)), k, cr$expected, pct(cr$global_risk),
                        if (is.null(cr$weights)) "." else
                          sprintf(paste0(", with the sampling weights %s (the negative-binomial model); %s above ",
                                         "the individual risk %s. The weights are published as given and are not a ",
                                         "key of the intruder: a weight can itself single a record out."),
                                  cr$weights, plural(cr$n_above, "record"), format(cr$threshold))),
                class = if (below || (!is.null(cr$weights) && cr$n_above > 0)) "warn" else "ok"))
  cat_step <- if (!is.null(tuned)) tuned$categorical
  if (!is.null(cat_step)) {
    ch <- cat_step$changes
    names(ch) <- c("column", "categories before", "categories after", "values recoded", "cells suppressed",
                   "records post-randomised")
    out <- c(out, para("tune_release() changed the published keys before the masking (", cat_step$settings,
                       sprintf("; loss %.4f, the mean share of a key value's detail lost", cat_step$loss), "):"),
             html_table(ch, caption = "The cells the search changed, per key"))
  }
  if (!is.null(sensitive) && sensitive %in% names(masked) && !sensitive %in% cr$keys) {
    ld <- risk_ldiversity(as.data.frame(masked), cr$keys, sensitive = sensitive)
    one <- sum(ld$distinct < 2)
    out <- c(out, para(sprintf(paste0("l-diversity of the sensitive column %s within the key classes: distinct l %d, ",
                                      "entropy l %.2f, recursive (c = %s) l %d; %s (%s) in classes where every ",
                                      "record shares its value."),
                               sensitive, as.integer(ld$l_distinct), ld$l_entropy, format(ld$c),
                               as.integer(ld$l_recursive), plural(one, "record"), pct(one / max(1, n))),
                       class = if (one) "warn" else "ok"))
  }
  c(out, para("These counts cover re-identification through the categorical keys alone; the attacks above ",
              "also use the masked variables.", class = "note"))
}

report_nhs <- function(masked, roles, plan) {
  chk <- nhs_check(masked, roles = roles, plan = plan)
  it <- chk$items
  c(h(2L, "NHS ISB 1523 plan check", "nhs"),
    para(sprintf("Plan %d (\"%s\" k-anonymity, k = %d); controlled: %s.", if (chk$plan == "weak") 3L else 6L,
                 chk$plan, chk$k, if (length(chk$strata)) paste(chk$strata, collapse = ", ") else "(none)")),
    para(if (chk$conforms) "The release conforms to the plan" else "The release does NOT conform to the plan",
         if (any(it$status == "review")) "; some items need a review." else ".",
         class = if (chk$conforms) "ok" else "warn"),
    html_table(it[c("section", "item", "status", "detail", "requirement")]),
    para("The check relies on the roles given; it cannot judge the threat level, which decides between ",
         "the plans.", class = "note"))
}

report_risk <- function(a, bat, k) {
  r <- a$rmd
  l <- a$linkage
  lt <- a$linkage_top
  rows <- list(
    c("risk1", sprintf("%.4f (%d records)", r$risk1, r$n_risk1),
      "masked value inside a small interval around its original (risk_rmd())"),
    c("risk2", sprintf("%.4f (%d records)", r$risk2, r$n_risk2),
      "... and isolated among the masked records"),
    c("linkage", sprintf("%.4f (blind guess %.4f)", l$rate, l$blind_rate),
      "nearest original in the stratum is the record's own (risk_linkage())"),
    c(sprintf("top-%d linkage", lt$m), sprintf("%.4f (blind guess %.4f)", lt$rate_m, lt$blind_rate_m),
      sprintf("own original among the %d nearest", lt$m)),
    c("re-identification", sprintf("%.4f mean, %.4f largest", l$reid, l$reid_max),
      "picking among originals as near as the own one")
  )
  if (!is.null(a$replay)) {
    b <- a$replay$by_p
    rows[[length(rows) + 1L]] <- c("replay", paste(sprintf("p = %s: %.4f", vapply(b$p, format, ""), b$rate), collapse = "; "),
                                   "intruder knows a share p of the originals and the settings, re-runs the masking (risk_replay())")
  }
  m <- do.call(rbind, rows)
  meas <- data.frame(measure = m[, 1L], value = m[, 2L], meaning = m[, 3L], stringsAsFactors = FALSE)
  tab <- as.data.frame(bat)
  small_worst <- !is.na(tab$worst_stratum_n) & tab$worst_stratum_n < k
  show <- data.frame(attack = tab$attack, rate = tab$rate, control = tab$control_rate,
                     advantage = tab$advantage, top_m = tab$rate_m, worst_stratum = tab$worst_stratum,
                     worst_stratum_n = ifelse(small_worst, "< k", as.character(tab$worst_stratum_n)),
                     precision_top10 = tab$precision_top10, stringsAsFactors = FALSE)
  details <- unlist(lapply(tab$name, function(nm) {
    at <- bat$attacks[[nm]]
    w <- at$worst_stratum
    worst <- if (nrow(w) && length(at$strata) && w$n >= k) {
      paste0(" Worst stratum: ", paste(paste0(at$strata, " = ", unlist(lapply(w[at$strata], as.character))), collapse = ", "),
             sprintf(" (%s, rate %.4f).", plural(w$n, "record"), w$rate))
    } else if (nrow(w) && w$n < k) " Worst stratum: one of fewer than k records (not named)." else ""
    c(sprintf("<li><b>%s</b>: intruder who %s.%s%s</li>", html_escape(at$attack),
              html_escape(paste(format(at$intruder), collapse = "; and ")), html_escape(worst),
              if (length(at$not_covered)) paste0(" <i>Does not cover:</i> ", html_escape(at$not_covered)) else ""))
  }))
  c(h(2L, "Disclosure risk", "risk"),
    html_table(meas, caption = "Risk measures of assess()"),
    para("These cover close-match re-identification on the masked variables by an intruder who knows the ",
         "originals. They do NOT cover rare categorical combinations (see the strata above), attribute ",
         "disclosure or other background knowledge. Unflagged records are not proven safe.", class = "note"),
    html_table(show, caption = "Risk battery (risk_battery()), worst attack first"),
    para("rate: expected share of records the attack gets right; control: the same attack on a control ",
         "release (records deranged within strata); advantage: (rate - control) / (1 - control); top_m: own ",
         "record among the intruder's m best; precision_top10: rate among the 10% most confident claims.",
         class = "note"),
    "<ul>", details, "</ul>",
    para("The battery measures what these attacks achieve for these intruders. Attacks not in the battery, ",
         "other background knowledge and linking with other releases are not covered; a low rate is not a ",
         "proof of safety.", class = "note"))
}

report_frontier <- function(tuned) {
  t <- tuned$tried
  m <- if (is.null(tuned$limits$m)) 3L else tuned$limits$m
  verdict <- ifelse(t$meets, "meets", paste("misses", t$fails))
  verdict <- ifelse(t$verified %in% FALSE, paste0("fails the verification: ", t$verify_fails), verdict)
  verdict <- ifelse(t$verified %in% TRUE, "meets, verified", verdict)
  show <- data.frame(`#` = seq_len(nrow(t)), method = t$method, settings = t$settings, worst = t$worst,
                     top_m = t$top_m, loss = t$loss, limits = verdict, check.names = FALSE, stringsAsFactors = FALSE)
  names(show)[names(show) == "top_m"] <- sprintf("top-%d", m)
  names(show)[names(show) == "loss"] <- paste0("loss (", tuned$objective, ")")
  chosen <- if (is.null(tuned$chosen)) rep(FALSE, nrow(t)) else t$verified %in% TRUE
  c(h(2L, "Risk-utility frontier", "frontier"),
    html_figure(function() plot(tuned), "Candidates of tune_release(): the worst one-record attack of the search against the utility loss; the dashed line joins the candidates not beaten on both, the dotted line is the limit, a cross marks a candidate that failed the verification on the whole battery, the star the chosen release."),
    html_table(show, caption = "Candidates tried: worst and top-m over the search attacks; the chosen release is highlighted",
               class = "candidates", row_class = ifelse(chosen, "chosen", "")),
    if (!is.null(tuned$chosen)) para("Chosen: ", tuned$chosen$method, " (", tuned$chosen$settings, ")."))
}

report_utility <- function(a, original, masked, vars, k, formula = NULL) {
  p <- a$pmse
  ut <- data.frame(measure = c("U (pMSE)", "S_pMSE", paste("delta", names(a$delta))),
                   value = c(p$U, p$S_pMSE, unname(a$delta)),
                   meaning = c(sprintf("how well a %s tells the data sets apart (0: not at all)",
                                       if (identical(p$method, "cart")) "classification tree" else "logistic model"),
                               "U relative to its expectation under no difference",
                               rep("share of the variable's variability added by masking", length(a$delta))),
                   stringsAsFactors = FALSE)
  figs <- lapply(utils::head(vars, 4L), function(v) {
    html_figure(function() plot_report_margins(original[[v]], masked[[v]], v, k),
                sprintf("%s: distribution of the original (grey bins, binned on the released values; bins of fewer than %d original records are not drawn) and of the release (red), and the original against the released value (cells of fewer than %d records not drawn).", v, k, k),
                width = 880, height = 380)
  })
  model <- NULL
  if (!is.null(a$model)) {
    mod <- a$model
    hidden <- rare_terms(mod$term, original, k) | small_support_terms(mod$term, formula, original, k)
    keep <- !hidden
    sub <- mod[keep, , drop = FALSE]
    tab <- data.frame(term = sub$term, original = sub$estimate_or, se_original = sub$se_or,
                      masked = sub$estimate_an, se_masked = sub$se_an, std_diff = sub$std_diff,
                      ci_overlap = sub$ci_overlap, stringsAsFactors = FALSE)
    model <- c(h(3L, "Model"),
               html_table(tab, caption = sprintf("Coefficients on the original and the release (%s family)", attr(mod, "family"))),
               if (any(hidden)) para(plural(sum(hidden), "coefficient"), " resting on fewer than ", k,
                                     " original records (a factor level, a combination of levels in an ",
                                     "interaction or a cell of the model that a coefficient would give away) ",
                                     if (sum(hidden) == 1L) "is" else "are", " not shown.", class = "note"),
               if (nrow(sub)) html_figure(function() plot_model(list(model = sub)),
                                          "Each coefficient with its confidence interval, original (black) and release (red), in original standard errors from the original estimate (the paper's Figure 4)."))
  }
  c(h(2L, "Utility", "utility"),
    html_table(ut, caption = "Utility measures of assess()"),
    para("The propensity model uses ", paste(p$vars, collapse = ", "),
         if (length(a$pmse_left)) paste0("; left out for missing values: ", paste(a$pmse_left, collapse = ", ")), "."),
    para("U ignores record pairing; delta ignores relations between variables; the model covers one analysis ",
         "only. None of them measures disclosure risk.", class = "note"),
    unlist(figs),
    html_figure(function() plot_report_pmse(p),
                "Propensity scores of the original and released rows (the paper's Figure 3): boxes from the 25% to the 75% quantile, whiskers to the 5% and 95% quantiles, no single records drawn; the dotted line is the share of released rows. Boxes flat on that line mean the model cannot tell the data sets apart."),
    model)
}

report_policy <- function(k) {
  c(h(2L, "What this report does not show", "policy"),
    "<ul>",
    sprintf("<li>%s</li>", html_escape(c(
      "No value of a masked variable of the original data, and no per-record value of the release, appears in the text.",
      sprintf("No stratum of fewer than k = %d records is listed or named; such strata are only counted together.", k),
      sprintf("Model coefficients resting on fewer than %d original records are left out: factor levels, combinations of levels in interactions (also with numeric terms), and the coefficient that would give the value of a cell of fewer than %d records.", k, k),
      sprintf("Figures: original values appear only in bins of at least %d records, laid out from the released values; the plotted range covers only those bins and the released values, so extremes of the original are not drawn. Risky records are counted, not drawn. Propensity-score whiskers end at the 5%% and 95%% quantiles.", k),
      "Of the release metadata, the settings and counts are shown, and only the names of its statistics."))),
    "</ul>",
    para("The report still shows column names, the levels of the strata of at least k records and the settings: ",
         "read it before it leaves the safe setting.", class = "note"))
}

# Terms of a model that belong to factor levels with fewer than k records in `original`
# (levels of categorical columns, and of any column wrapped in factor() or as.factor()).
rare_terms <- function(term, original, k) {
  hide <- logical(length(term))
  parts <- strsplit(term, ":", fixed = TRUE)
  for (v in names(original)) {
    x <- original[[v]]
    categorical <- is.factor(x) || is.character(x) || is.logical(x)
    prefix <- c(if (categorical) v, paste0(c("factor(", "as.factor("), v, ")"))
    if (!any(vapply(prefix, function(p) any(startsWith(term, p) | grepl(paste0(":", p), term, fixed = TRUE)),
                    logical(1)))) next
    cnt <- table(as.character(x))
    rare <- names(cnt)[cnt < k]
    if (!length(rare)) next
    pat <- as.vector(outer(prefix, rare, paste0))
    hide <- hide | vapply(parts, function(p) any(p %in% pat), logical(1))
  }
  hide
}

# Coefficients of a model whose support in `original` is below k (TRUE: not shown). The
# support of a coefficient is the number of records (of those the model uses) whose column
# of the model matrix is not zero: a factor level, a combination of levels of an
# interaction, a level times a numeric term. Beyond that, every term's combinations of its
# categorical variables (the cells of the term) are counted; for a cell of 0 < n < k
# records whose coefficients all have support >= k (a cell of the baseline levels, whose
# value is the intercept, or a level coded by other contrasts), the most specific
# coefficient its records use (the smallest support, from the term itself, else from the
# terms it contains, down to the intercept) is hidden too, so that no sum of the shown
# coefficients gives the cell's value. `term`: the coefficient names of utility_model().
small_support_terms <- function(term, formula, original, k) {
  hide <- logical(length(term))
  if (is.null(formula)) return(hide)
  mf <- tryCatch(stats::model.frame(formula, data = as.data.frame(original)), error = function(e) NULL)
  if (is.null(mf)) return(hide)
  tt <- attr(mf, "terms")
  X <- tryCatch(stats::model.matrix(tt, mf), error = function(e) NULL)
  if (is.null(X)) return(hide)
  nz <- X != 0
  support <- colSums(nz)
  small <- support < k
  assign <- attr(X, "assign")
  fac <- attr(tt, "factors")
  if (length(fac)) {
    categorical <- vapply(rownames(fac), function(v) {
      x <- mf[[v]]
      is.factor(x) || is.character(x) || is.logical(x)
    }, logical(1))
    for (t in seq_len(ncol(fac))) {
      vars_t <- rownames(fac)[fac[, t] > 0]
      cat_t <- vars_t[categorical[vars_t]]
      if (!length(cat_t)) next
      cell <- combination_ids(lapply(cat_t, function(v) mf[[v]]))
      n_cell <- tabulate(cell)
      # the columns of this term and of the terms it contains (and the intercept)
      inner <- which(vapply(seq_len(ncol(fac)), function(u) all(rownames(fac)[fac[, u] > 0] %in% vars_t), logical(1)))
      for (c in which(n_cell > 0 & n_cell < k)) {
        rows <- cell == c
        used <- colSums(nz[rows, , drop = FALSE]) > 0
        if (any(small & used)) next
        own <- which(used & assign == t)
        cand <- if (length(own)) own else which(used & assign %in% c(0L, inner))
        if (!length(cand)) next
        small[cand[which.min(support[cand])]] <- TRUE
      }
    }
  }
  hide | (term %in% colnames(X)[small])
}

# Bins laid out from the released values (pretty breaks), extended with the same width to
# cover the original values.
report_breaks <- function(o, m) {
  # (pretty() gives integers where its bounds and step are whole numbers, whose products
  # with the record count in plot_report_margins() overflow)
  br <- as.double(pretty(range(m, finite = TRUE), n = 30L))
  if (length(br) < 2L) br <- c(m[1L] - 0.5, m[1L] + 0.5)
  w <- br[2L] - br[1L]
  lo <- min(o, na.rm = TRUE)
  hi <- max(o, na.rm = TRUE)
  # at most 30 bins beyond the released range on each side; originals farther out are
  # counted in the outermost bin
  if (lo < br[1L]) br <- c(br[1L] - w * rev(seq_len(min(30, ceiling((br[1L] - lo) / w)))), br)
  if (hi > br[length(br)]) br <- c(br, br[length(br)] + w * seq_len(min(30, ceiling((hi - br[length(br)]) / w))))
  br
}

# What the margins figure draws: bins (from the released values), the original counts per
# bin (NA below k: not drawn), the released counts, the original x released cells of at
# least k records, and the x range (drawn bins and released values only).
report_bins <- function(o, m, k) {
  o <- as.double(o)
  m <- as.double(m)
  br <- report_breaks(o, m)
  nb <- length(br) - 1L
  bo <- findInterval(o, br, rightmost.closed = TRUE, all.inside = TRUE)
  bm <- findInterval(m, br, rightmost.closed = TRUE, all.inside = TRUE)
  co <- tabulate(bo, nb)
  drawn <- co >= k
  cc <- tabulate((bo - 1L) * nb + bm, nb * nb)
  keep <- which(cc >= k)
  list(breaks = br, original = ifelse(drawn, co, NA_integer_), released = tabulate(bm, nb),
       cells = data.frame(x = (keep - 1L) %/% nb + 1L, y = (keep - 1L) %% nb + 1L, n = cc[keep]),
       xlim = range(c(br[c(which(drawn), which(drawn) + 1L)], m), finite = TRUE))
}

plot_report_margins <- function(o, m, v, k) {
  b <- report_bins(o, m, k)
  br <- b$breaks
  drawn <- !is.na(b$original)
  co <- b$original
  cm <- b$released
  xr <- b$xlim
  old <- graphics::par(mfrow = c(1L, 2L), mar = c(4, 4, 2.5, 1))
  on.exit(graphics::par(old))
  w <- diff(br)
  dens_o <- co / (length(o) * w)
  dens_m <- cm / (length(m) * w)
  graphics::plot(NA, xlim = xr, ylim = c(0, max(c(dens_o, dens_m), na.rm = TRUE)), xlab = v, ylab = "density",
                 main = paste(v, ": original and release"))
  graphics::rect(br[-length(br)][drawn], 0, br[-1L][drawn], dens_o[drawn], col = "grey80", border = "grey60")
  graphics::lines(stats::stepfun(br, c(0, dens_m, 0)), col = "red", do.points = FALSE, lwd = 2)
  graphics::legend("topright", bty = "n", fill = c("grey80", NA), border = c("grey60", NA), lty = c(NA, 1),
                   col = c(NA, "red"), legend = c(sprintf("original (bins >= %d)", k), "release"), cex = 0.8)
  ix <- b$cells$x
  iy <- b$cells$y
  yr <- range(m, finite = TRUE)
  graphics::plot(NA, xlim = xr, ylim = yr, xlab = paste("original", v), ylab = paste("released", v),
                 main = sprintf("original vs released (cells >= %d)", k))
  if (length(ix)) {
    shade <- grDevices::grey(1 - 0.15 - 0.75 * sqrt(b$cells$n / max(b$cells$n)))
    graphics::rect(br[ix], br[iy], br[ix + 1L], br[iy + 1L], col = shade, border = NA)
  }
  graphics::abline(0, 1, lty = 3, col = "red")
}

plot_report_pmse <- function(p) {
  s <- p$scores
  n <- length(s) / 2
  g <- list(original = s[seq_len(n)], release = s[n + seq_len(n)])
  st <- vapply(g, function(x) stats::quantile(x, c(0.05, 0.25, 0.5, 0.75, 0.95), names = FALSE), numeric(5))
  # at least +-0.05 around the share of released rows, so that the ticks are distinct even
  # when every score equals it to the last digit
  ylim <- range(c(st, p$c - 0.05, p$c + 0.05), finite = TRUE)
  graphics::bxp(list(stats = st, n = c(n, n), names = names(g)), ylab = "propensity score", ylim = ylim,
                main = sprintf("Propensity scores (U = %s)", fmt_signif(p$U)), boxfill = "grey90")
  graphics::abline(h = p$c, lty = 3)
}
