#' Find columns that are likely direct identifiers
#'
#' Screens every column for the signs of a direct identifier in the sense of NHS ISB
#' 1523 ("name, address, widely-used unique person or record identifier (notably
#' National Insurance Number, NHS Number, Hospital Number), telephone number, email
#' address, and any other data item that on its own could uniquely identify the
#' individual") and of free text, which the standard says must be suppressed.
#'
#' The tests are heuristics and are reported separately, so that a custodian can judge
#' them:
#' * `unique`: with at least 10 records, every non-missing value differs and at most
#'   10% are missing (a value that on its own singles a record out); for numbers, only
#'   when they look like codes: whole numbers that fill their range densely (a shuffled
#'   record number), or that all have the same number of digits and spread evenly over
#'   their range (numbers drawn from a block, as identifiers are);
#' * `id_like`: the values look like identifiers: whole numbers forming a sequence or
#'   all distinct, or strings of digits/letters with a fixed pattern, or National
#'   Insurance numbers, valid NHS numbers (ten digits with the modulus-11 check digit),
#'   email addresses or telephone numbers;
#' * `name_like`: the column name suggests a name, address, contact detail or
#'   identifier (a word such as `name`, `surname`, `address`, `email`, `phone` or `id`,
#'   or a number word with `nhs`, `hospital`, `patient`, `record`, ... as in
#'   `nhs_number` or `HospitalNo`), or the values look like personal names (e.g.
#'   "Smith, Mr. John");
#' * `free_text`: character values with on average four or more words or 40 or more
#'   characters, and many distinct values (a closed set of long answers, such as the
#'   levels of a questionnaire item, is not free text).
#'
#' Uniqueness is judged on all values; the value patterns on at most 10,000 evenly spaced
#' values of a column (so the screen stays fast on large data and does not use the random
#' number generator).
#'
#' A column flagged here is not necessarily identifying, and a column not flagged may
#' still be (e.g. a rare diagnosis, or an identifier coded as a factor with duplicates).
#' Continuous measurements are often unique per row without being identifiers: they are
#' not flagged as `unique`, nor are measurements recorded in whole units (incomes in cents,
#' weights in grams), which are skewed or span several orders of magnitude. An identifier
#' that is neither dense nor of one width (random numbers of varying length) is missed
#' unless its name gives it away.
#'
#' @param data A data frame.
#' @return A data frame with one row per flagged column: `column`, the logical columns
#'   `unique`, `id_like`, `name_like`, `free_text`, and `reason` (a readable summary).
#'   Zero rows when nothing is flagged. It holds no data values.
#' @seealso [remove_identifiers()] to drop or pseudonymise them.
#' @examples
#' detect_identifiers(titanic)
#' @family identifiers
#' @export
detect_identifiers <- function(data) {
  check_data_frame(data, "data")
  cols <- names(data)
  res <- lapply(cols, function(v) identifier_flags(data[[v]], v))
  out <- data.frame(
    column = cols,
    unique = vapply(res, `[[`, logical(1), "unique"),
    id_like = vapply(res, `[[`, logical(1), "id_like"),
    name_like = vapply(res, `[[`, logical(1), "name_like"),
    free_text = vapply(res, `[[`, logical(1), "free_text"),
    stringsAsFactors = FALSE
  )
  out$reason <- vapply(res, `[[`, character(1), "reason")
  out <- out[out$unique | out$id_like | out$name_like | out$free_text, , drop = FALSE]
  rownames(out) <- NULL
  out
}

# Column-name words that on their own suggest a direct identifier or contact detail
identifier_words <- c("id", "ids", "uid", "uuid", "guid", "identifier", "name", "names", "surname", "forename",
                      "forenames", "firstname", "lastname", "fullname", "givenname", "familyname", "address",
                      "addr", "street", "email", "mail", "phone", "telephone", "tel", "mobile", "fax", "nino",
                      "ssn", "passport", "mrn")
# ... and words that do so with a number word ("nhs number", "hospital no", "NHSNumber")
identifier_qualifiers <- c("nhs", "ni", "hospital", "record", "patient", "person", "insurance", "case", "chi",
                           "staff", "employee", "payroll", "account")
number_words <- c("no", "num", "number", "nr", "nbr")

# Whole numbers that are unique per row look like codes (record or person numbers) rather
# than measurements recorded in whole units (incomes, weights) when they fill their range
# densely (a shuffled 1..n), or have one number of digits and spread evenly over their range
# (drawn from a block of numbers): a Kolmogorov-Smirnov distance from the uniform below its
# 1% critical value. Measurements are skewed or peaked, and span several orders of magnitude.
code_like_numbers <- function(obs) {
  obs <- as.double(obs)
  if (!all(is.finite(obs))) return(TRUE)
  n <- length(obs)
  lo <- min(obs)
  hi <- max(obs)
  if (hi - lo + 1 <= 2 * n) return(TRUE)
  digits <- floor(log10(pmax(abs(obs), 1)))
  if (any(digits != digits[1L]) || any(sign(obs) != sign(obs[1L]))) return(FALSE)
  u <- sort((obs - lo) / (hi - lo))
  ks <- max(abs(u - (seq_len(n) - 1) / (n - 1)))
  ks <= max(1.63 / sqrt(n), 0.02)
}

name_suggests_identifier <- function(name) {
  words <- tolower(strsplit(gsub("([a-z])([A-Z])", "\\1 \\2", name), "[^A-Za-z0-9]+")[[1L]])
  words <- words[nzchar(words)]
  glued <- paste0("^(", paste(identifier_qualifiers, collapse = "|"), ")(", paste(c(number_words, "id"), collapse = "|"), ")$")
  any(words %in% identifier_words) || (any(words %in% identifier_qualifiers) && any(words %in% number_words)) ||
    any(grepl(glued, words))
}

identifier_flags <- function(x, name) {
  out <- list(unique = FALSE, id_like = FALSE, name_like = FALSE, free_text = FALSE, reason = "")
  if (!is.atomic(x) || !is.null(dim(x))) return(out)
  reasons <- character()
  # the column name, split into words (snake, dot, camel case)
  if (name_suggests_identifier(name)) {
    out$name_like <- TRUE
    reasons <- c(reasons, "name suggests an identifier or contact detail")
  }
  n <- length(x)
  if (is.factor(x)) {
    lev <- levels(x)
    obs <- as.integer(x) # integer codes: fast to compare
    if (anyNA(obs)) obs <- obs[!is.na(obs)]
    if (!all(nzchar(lev))) obs <- obs[nzchar(lev)[obs]]
  } else {
    obs <- x[!is.na(x)]
    if (is.character(obs)) obs <- obs[nzchar(obs)]
  }
  n_obs <- length(obs)
  whole <- !is.numeric(obs) || is.factor(x) || all(obs == round(obs))
  # (fewer factor levels than values: some value repeats, no need to hash them all)
  if (n >= 10L && n_obs >= 0.9 * n && whole && (!is.factor(x) || length(lev) >= n_obs) && !anyDuplicated(obs) &&
      (!is.numeric(obs) || is.factor(x) || code_like_numbers(obs))) {
    out$unique <- TRUE
    reasons <- c(reasons, "unique per row")
  }
  # value patterns are judged on at most 10,000 evenly spaced values (no RNG used)
  if (is.character(obs) || is.factor(x)) {
    if (n_obs > 1e4) obs <- obs[unique(round(seq(1, n_obs, length.out = 1e4)))]
    if (is.factor(x)) obs <- lev[obs]
  }
  if (n_obs >= 2L) {
    if (is.numeric(obs) && all(is.finite(obs)) && all(obs == round(obs))) {
      s <- sort(obs)
      if (out$unique && all(diff(s) == 1)) {
        out$id_like <- TRUE
        reasons <- c(reasons, "consecutive whole numbers (a record number)")
      }
    } else if (is.character(obs)) {
      # each distinct value is judged once and counts as often as it occurs (a factor's
      # few levels: 4 pattern checks instead of 10,000)
      u <- unique(obs)
      w <- tabulate(match(obs, u), length(u))
      share <- function(v) sum(as.double(w) * v) / length(obs)
      # (unmarked non-ASCII bytes made valid first: toupper() and nchar() refuse them)
      s <- trimws(radix_key(u))
      kind <- character()
      if (share(grepl("^[^@ ]+@[^@ ]+\\.[^@ ]+$", s)) >= 0.8) kind <- "email addresses"
      else if (share(is_nhs_number(s)) >= 0.8) kind <- "NHS numbers"
      else if (share(grepl("^[A-CEGHJ-PR-TW-Z]{2} ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]$", toupper(s))) >= 0.8) {
        kind <- "National Insurance numbers"
      } else if (share(grepl("^\\+?[0-9][0-9 ()-]{8,}[0-9]$", s) & nchar(gsub("[^0-9]", "", s)) >= 10 &
                       !grepl("^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}", s)) >= 0.8) {
        kind <- "telephone numbers"
      }
      else if (out$unique && share(grepl("^[A-Za-z]{0,4}[-_/ ]?[0-9]{3,}[A-Za-z]{0,2}$", s)) >= 0.8) {
        kind <- "codes of letters and digits"
      }
      if (length(kind)) {
        out$id_like <- TRUE
        reasons <- c(reasons, paste("values look like", kind))
      }
      n_words <- lengths(strsplit(s, "[[:space:]]+"))
      # a closed set of long answers (a questionnaire item) is not free text
      open_ended <- length(unique(s)) > min(50, 0.2 * length(obs))
      if (open_ended && (share(n_words) >= 4 || share(nchar(s)) >= 40)) {
        out$free_text <- TRUE
        reasons <- c(reasons, "free text")
      }
      person <- grepl("\\b(Mr|Mrs|Ms|Miss|Master|Dr|Rev|Sir|Lady)\\.? ", s) |
        grepl("^[A-Z][a-z'-]+, [A-Z]", s)
      if (share(person) >= 0.5) {
        out$name_like <- TRUE
        reasons <- c(reasons, "values look like personal names")
      }
    }
  }
  out$reason <- paste(reasons, collapse = "; ")
  out
}

# NHS number: 10 digits (spaces allowed), modulus-11 check digit.
is_nhs_number <- function(s) {
  d <- gsub("[ -]", "", s)
  ok <- grepl("^[0-9]{10}$", d)
  ok[ok] <- vapply(strsplit(d[ok], ""), function(ch) {
    v <- as.integer(ch)
    chk <- 11L - sum(v[1:9] * (10:2)) %% 11L
    if (chk == 11L) chk <- 0L
    chk != 10L && chk == v[10L]
  }, logical(1))
  ok
}

# Called by anonymise(): warn when a likely direct identifier is released unmasked.
warn_identifiers <- function(data, vars, strata) {
  found <- detect_identifiers(data[setdiff(names(data), vars)])
  if (nrow(found)) {
    one <- nrow(found) == 1L
    warn_detanon(quote_names(found$column), " would be released unmasked, but ",
                 if (one) "it looks like a direct identifier" else "they look like direct identifiers",
                 " (", paste0(found$column, ": ", found$reason, collapse = " | "), "). Drop or pseudonymise ",
                 if (one) "it" else "them", " first (remove_identifiers()), or set `check_identifiers = FALSE` ",
                 "if this is intended.", kind = "identifier")
  }
  invisible(found)
}

#' Drop or pseudonymise direct identifiers
#'
#' Removes the direct identifiers of a data set, as NHS ISB 1523 requires for individual-
#' level releases ("suppression of direct identifiers"), or replaces them by random
#' pseudonyms so that records of the same person can still be linked inside the release.
#'
#' Pseudonyms are random codes (`prefix` followed by a zero-padded number) drawn with
#' R's random number generator (use [set.seed()] to make them reproducible). Equal
#' original values get equal codes, distinct values distinct codes, and the codes are
#' assigned in a random order, so neither a code nor the order of the codes carries
#' information about the original value: without the key table the pseudonyms cannot be
#' reversed. `remove_identifiers()` returns the data only; `pseudonymise_with_table()`
#' makes the same pseudonyms (the same draws for the same seed) and returns them together
#' with the tables of pseudonyms: keep those secret and apart from the release, or do not keep them
#' at all. Note that anyone who knows the seed and the data can recreate the codes, so do
#' not publish the seed. A pseudonym is still unique to a person: it is not anonymous by
#' itself, and the other columns must be protected as well (e.g. with [kanon_check()] and
#' [anonymise()]).
#'
#' @param data A data frame.
#' @param cols Columns to treat. Default: the columns that [detect_identifiers()] flags.
#' @param method `"drop"` (remove the columns) or `"pseudonymise"` (replace their values
#'   by random codes).
#' @param prefix Text put before the number of each pseudonym.
#' @param key Deprecated: `key = TRUE` returned the tables of pseudonyms too; use
#'   `pseudonymise_with_table()`.
#' @return `remove_identifiers()`: an object of the same class as `data` without the
#'   columns (`"drop"`) or with the columns replaced by character pseudonyms (missing
#'   values stay missing), without row names (they are often identifiers themselves),
#'   with release metadata ([release_info()]: settings `cols`, `method`; counts `n`
#'   records and `n_columns` treated). `pseudonymise_with_table()`: an object of
#'   class `detanon_pseudonyms`, a list with `data` (the pseudonymised data, as above) and
#'   `pseudonyms`, a named list holding for each column a data frame of `value` and
#'   `pseudonym`: it reverses the pseudonyms and must never be released.
#' @family masking verbs
#' @family identifiers
#' @examples
#' d <- remove_identifiers(titanic, c("Name", "Ticket"))
#' names(d)
#' set.seed(1)
#' head(remove_identifiers(titanic_paper(), "PassengerId", method = "pseudonymise"))
#' set.seed(1)
#' p <- pseudonymise_with_table(titanic_paper(), "PassengerId")
#' head(p$pseudonyms$PassengerId)
#' @export
remove_identifiers <- function(data, cols = NULL, method = c("drop", "pseudonymise"),
                               prefix = "P", key) {
  method <- match_choice(method, "method")
  if (!missing(key) && !identical(key, FALSE)) {
    check_flag(key, "key")
    warn_detanon("`key` is deprecated; use pseudonymise_with_table(), which returns the data and the tables ",
                 "of pseudonyms.",
                 kind = "deprecated")
    if (method == "pseudonymise") {
      res <- identifiers_core(data, cols, method, prefix)
      return(list(data = res$data, key = res$pseudonyms))
    }
  }
  identifiers_core(data, cols, method, prefix)$data
}

#' @rdname remove_identifiers
#' @export
pseudonymise_with_table <- function(data, cols = NULL, prefix = "P") {
  structure(identifiers_core(data, cols, "pseudonymise", prefix), class = "detanon_pseudonyms")
}

#' @rdname remove_identifiers
#' @section Deprecated: `pseudonymise_with_key()` is the old name of
#'   `pseudonymise_with_table()` (`key` names only the custodian's secret of a keyed masking);
#'   it works for one more release, with a warning.
#' @export
pseudonymise_with_key <- function(data, cols = NULL, prefix = "P") {
  warn_detanon("this function is deprecated; use pseudonymise_with_table(), which returns the same.",
               kind = "deprecated")
  pseudonymise_with_table(data, cols, prefix)
}

#' @export
print.detanon_pseudonyms <- function(x, ...) {
  cat(sprintf("Pseudonymised %s of %s.\n", plural(length(x$pseudonyms), "column"),
              plural(nrow(x$data), "record")))
  cat("  The tables of pseudonyms (`$pseudonyms`) reverse them: keep them apart.\n")
  invisible(x)
}

identifiers_core <- function(data, cols, method, prefix) {
  check_data_frame(data, "data")
  if (!is.character(prefix) || length(prefix) != 1L || is.na(prefix)) {
    stop_arg("`prefix` must be a single string, not ", show_value(prefix), ".")
  }
  if (is.null(cols)) {
    cols <- detect_identifiers(data)$column
    if (!length(cols)) inform_detanon("no likely direct identifier found; nothing changed.", kind = "identifier")
  } else {
    cols <- check_columns(cols, data, "cols")
  }
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  keys <- list()
  if (method == "drop") {
    df <- df[setdiff(names(df), cols)]
  } else {
    for (v in cols) {
      x <- df[[v]]
      if (!is.atomic(x) || !is.null(dim(x))) {
        stop_arg("`cols` column `", v, "` is not an atomic vector; it cannot be pseudonymised. Drop it instead.",
                 kind = "column")
      }
      if (is.factor(x)) x <- as.character(x)
      u <- unique(x[!is.na(x)])
      codes <- sprintf("%s%0*d", prefix, nchar(length(u)), sample.int(length(u)))
      df[[v]] <- codes[match(x, u)]
      keys[[v]] <- data.frame(value = u, pseudonym = codes, stringsAsFactors = FALSE)
    }
  }
  out <- as_release(as_release_frame(df, data), "remove_identifiers",
                    settings = list(cols = cols, method = method),
                    counts = list(n = nrow(df), n_columns = length(cols)),
                    columns = if (method == "drop") names(df) else cols)
  list(data = out, pseudonyms = keys)
}
