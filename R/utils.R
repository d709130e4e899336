# Shared argument checks and conditions. Every message names the exported function that
# was called and the argument, and says what to do.

# ---- conditions ------------------------------------------------------------------------
# Errors, warnings and messages are classed `detanon_<type>_<kind>` and `detanon_<type>`
# (kinds: see CONTRIBUTING.md). Their message starts with the exported function the user
# called ("anonymise(): ..."), found on the call stack.

stop_arg <- function(..., kind = "argument") {
  stop(detanon_condition(paste0(...), "error", kind))
}

warn_detanon <- function(..., kind) {
  warning(detanon_condition(paste0(...), "warning", kind))
}

# A classed message (silence one kind with suppressMessages(classes = "detanon_message_<kind>")).
inform_detanon <- function(..., kind) {
  message(detanon_condition(paste0(..., "\n"), "message", kind))
}

detanon_condition <- function(msg, type, kind) {
  fn <- detanon_caller()
  if (!is.null(fn)) msg <- paste0(fn, "(): ", msg)
  structure(class = c(paste0("detanon_", type, "_", kind), paste0("detanon_", type), type, "condition"),
            list(message = msg, call = NULL, fn = fn))
}

# The outermost frame running an exported function (or a registered S3 method) of detanon:
# the function the user called. NULL when there is none (e.g. an internal helper called
# directly with `:::`).
detanon_caller <- function() {
  ns <- topenv(environment(detanon_caller))
  exports <- getNamespaceExports(ns)
  methods <- getNamespaceInfo(ns, "S3methods")
  for (i in seq_len(sys.nframe() - 1L)) {
    f <- sys.function(i)
    if (!is.function(f) || !identical(environment(f), ns)) next
    for (nm in exports) if (identical(f, get0(nm, ns, inherits = FALSE))) return(nm)
    for (r in seq_len(nrow(methods))) {
      if (identical(f, get0(methods[r, 3L], ns, inherits = FALSE))) return(methods[r, 1L])
    }
  }
  NULL
}

# The error for strata smaller than k with small_strata = "fail": lists up to 10 of them.
stop_small_strata <- function(df, id, sizes, small, strata, k, alternatives) {
  tab <- df[match(small, id), strata, drop = FALSE]
  desc <- apply(tab, 1L, function(r) paste0(strata, "=", r, collapse = ", "))
  shown <- utils::head(paste0("  ", desc, ": ", plural(sizes[small], "record")), 10L)
  stop_arg(plural(length(small), "stratum has", "strata have"), " fewer than k = ", k, " records:\n",
           paste(shown, collapse = "\n"),
           if (length(small) > 10L) sprintf("\n  ... and %d more", length(small) - 10L) else "",
           "\nLower `k`, generalise the strata variables, or use ", alternatives, ".", kind = "small_strata")
}

# "1 record", "2 records"; vectorised over `n`. `count = FALSE`: the word alone ("records").
plural <- function(n, singular, plural = paste0(singular, "s"), count = TRUE) {
  word <- ifelse(n == 1, singular, plural)
  if (!count) return(word)
  paste(format(n, scientific = FALSE, trim = TRUE, big.mark = ""), word)
}

check_data_frame <- function(x, arg = deparse(substitute(x))) {
  if (!is.data.frame(x)) {
    stop_arg("`", arg, "` must be a data frame (data.frame, tibble or data.table), not ",
             class_label(x), ".")
  }
  if (anyDuplicated(names(x))) {
    dup <- unique(names(x)[duplicated(names(x))])
    stop_arg("`", arg, "` has duplicated column names (", quote_names(dup),
             "); give every column a unique name.", kind = "column")
  }
  invisible(x)
}

class_label <- function(x) {
  if (is.null(x)) "NULL" else paste0("an object of class ", paste(class(x), collapse = "/"))
}

quote_names <- function(x, max = 6L) {
  x <- paste0("`", x, "`")
  if (length(x) > max) x <- c(x[seq_len(max)], sprintf("... (%d more)", length(x) - max))
  paste(x, collapse = ", ")
}

check_whole <- function(x, arg, min = -Inf, max = Inf) {
  ok <- is.numeric(x) && length(x) == 1L && !is.na(x) && is.finite(x) &&
    x == round(x) && x >= min && x <= max && x <= .Machine$integer.max
  if (!ok) {
    range <- if (max < .Machine$integer.max) sprintf("between %s and %s", min, max) else sprintf(">= %s", min)
    stop_arg("`", arg, "` must be a single whole number ", range, ", not ", show_value(x), ".")
  }
  as.integer(x)
}

check_number <- function(x, arg, lower = -Inf, upper = Inf, lower_open = FALSE) {
  ok <- is.numeric(x) && length(x) == 1L && !is.na(x) && is.finite(x) &&
    (if (lower_open) x > lower else x >= lower) && x <= upper
  if (!ok) {
    bound <- if (lower_open) sprintf("> %s", lower) else sprintf(">= %s", lower)
    if (is.finite(upper)) bound <- paste(bound, "and <=", upper)
    stop_arg("`", arg, "` must be a single finite number ", bound, ", not ", show_value(x), ".")
  }
  as.numeric(x)
}

check_flag <- function(x, arg) {
  if (!is.logical(x) || length(x) != 1L || is.na(x)) {
    stop_arg("`", arg, "` must be TRUE or FALSE, not ", show_value(x), ".")
  }
  x
}

show_value <- function(x) {
  if (is.null(x)) return("NULL")
  if (!is.atomic(x)) return(class_label(x))
  if (length(x) != 1L) return(sprintf("a %s vector of length %d", typeof(x), length(x)))
  if (is.character(x)) return(sprintf("\"%s\"", x))
  format(x)
}

# Column names: NULL means `default`; otherwise a character vector of existing columns.
check_columns <- function(cols, data, arg, default = character()) {
  if (is.null(cols)) return(default)
  if (!is.character(cols) || anyNA(cols)) {
    stop_arg("`", arg, "` must be a character vector of column names, not ", show_value(cols), ".")
  }
  missing <- setdiff(cols, names(data))
  if (length(missing)) {
    stop_arg("`", arg, "` names columns that are not in the data: ", quote_names(missing),
             ". Available columns: ", quote_names(names(data), max = 12L), ".", kind = "column")
  }
  if (anyDuplicated(cols)) {
    stop_arg("`", arg, "` names a column more than once: ", quote_names(unique(cols[duplicated(cols)])), ".",
             kind = "column")
  }
  cols
}

check_nthreads <- function(nthreads) {
  check_whole(nthreads, "nthreads", min = 1)
}

# Return `out` (a plain data.frame) as the same kind of data frame as `like`.
restore_class <- function(out, like) {
  if (inherits(like, "data.table") && requireNamespace("data.table", quietly = TRUE)) {
    return(data.table::as.data.table(out))
  }
  if (inherits(like, "tbl_df") && requireNamespace("tibble", quietly = TRUE)) {
    return(tibble::as_tibble(out))
  }
  out
}

# Order-independent column means and SDs (exact summation in C), as a list.
col_stats <- function(m, nthreads = 1L) {
  s <- .Call(C_ffi_col_stats, m, nthreads)
  list(mean = stats::setNames(s[1L, ], colnames(m)), sd = stats::setNames(s[2L, ], colnames(m)))
}

# ---- release metadata -----------------------------------------------------------------
# A masking verb returns `x` (its data, in the caller's class) with one attribute "detanon"
# of class `detanon_release`: the verb, its settings and aggregate counts (never
# per-record information), and a fingerprint of the rows it describes, so that
# release_info() can tell when they were subset, reordered or edited afterwards.
# `stats`: optional aggregate statistics of the verb (e.g. column means and SDs).
# `columns`: the columns the fingerprint covers (default: those named in `settings`, else all).
as_release <- function(x, verb, settings = list(), counts = list(), stats = NULL, columns = NULL) {
  if (is.null(columns)) {
    columns <- intersect(unique(unlist(settings[c("vars", "strata", "quasi", "column")])), names(x))
    if (!length(columns)) columns <- names(x)
  }
  info <- list(verb = verb, settings = settings, counts = counts)
  if (!is.null(stats)) info$stats <- stats
  info$fingerprint <- release_fingerprint(x, columns)
  attr(x, "detanon") <- structure(info, class = "detanon_release")
  x
}

# nrow, the covered columns and a position-weighted checksum of each of them: subsetting
# changes nrow, reordering or editing rows changes the checksums (with high probability).
release_fingerprint <- function(x, columns) {
  n <- nrow(x)
  w <- (seq_len(n) * 0.6180339887498949) %% 1 + 0.5
  sums <- vapply(columns, function(v) column_checksum(x[[v]], w), numeric(1))
  list(n = n, columns = columns, checksum = unname(sums))
}

column_checksum <- function(v, w) {
  if (is.factor(v)) v <- as.integer(v)
  if (!is.numeric(v) && !is.logical(v)) {
    v <- if (is.atomic(v) && is.null(dim(v))) match(v, unique(v)) else return(NA_real_)
  }
  v <- as.double(v)
  miss <- is.na(v)
  if (any(miss)) v[miss] <- -0.25
  v[is.infinite(v)] <- sign(v[is.infinite(v)]) * 0.125
  sum(v * w) + sum(miss)
}

#' Metadata of a release
#'
#' Every masking verb ([anonymise()], [anonymise_keps()], [merge_small_strata()],
#' [generalise_strata()], [remove_identifiers()]) returns its data with an attribute
#' `"detanon"` that records the verb, its settings and aggregate counts (never
#' per-record information). `release_info()` returns that record while it still describes
#' the rows: once the rows were subset, reordered or edited it returns `NULL` with a
#' warning of class `detanon_warning_stale_release`, since the settings and counts no longer
#' apply (for example, the `k` of a subset is not the `k` it was released with).
#'
#' The check compares the number of rows and a position-weighted checksum of the released
#' columns with those recorded at release. It catches subsetting, reordering and edits of
#' those columns; it is a guard against mistakes, not a proof of integrity.
#'
#' @param x A data frame returned by a masking verb.
#' @return `NULL` if `x` carries no release metadata (with a warning if it is stale), else
#'   an object of class `detanon_release`: a list with `verb`, `settings` (the arguments
#'   that define the release, e.g. `k`, `vars`, `strata`), `counts` (e.g. `n`, `n_strata`,
#'   `min_size`, `n_suppressed`), optionally `stats` (aggregate statistics of the verb),
#'   and `fingerprint` (what the check above uses).
#' @family releases
#' @examples
#' masked <- anonymise(titanic_paper()[-1], vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"), k = 3)
#' release_info(masked)
#' # a subset is no longer the release: its metadata are withdrawn
#' release_info(masked[1:10, ])
#' @export
release_info <- function(x) current_release(x, "x")

# release_info() for an argument named `arg` of the calling verb.
current_release <- function(x, arg) {
  info <- attr(x, "detanon", exact = TRUE)
  if (!inherits(info, "detanon_release")) return(NULL)
  if (!is.data.frame(x) || !release_current(x, info$fingerprint)) {
    warn_detanon("the rows of `", arg, "` were subset, reordered or edited after ", info$verb,
                 "() released them; its release metadata no longer apply and are ignored.",
                 kind = "stale_release")
    return(NULL)
  }
  info
}

release_current <- function(x, fp) {
  if (!identical(nrow(x), fp$n) || !all(fp$columns %in% names(x))) return(FALSE)
  w <- (seq_len(fp$n) * 0.6180339887498949) %% 1 + 0.5
  now <- vapply(fp$columns, function(v) column_checksum(x[[v]], w), numeric(1))
  identical(unname(now), fp$checksum)
}

#' @export
print.detanon_release <- function(x, ...) {
  cat(sprintf("<detanon release> made by %s()\n", x$verb))
  show <- function(label, l) {
    if (!length(l)) return(invisible())
    val <- vapply(l, function(v) {
      if (is.null(v) || !length(v)) "(none)"
      else if (is.character(v)) paste(v, collapse = ", ")
      else paste(format(v, digits = 4), collapse = ", ")
    }, character(1))
    cat(sprintf("  %s:\n", label))
    cat(sprintf("    %-14s %s\n", names(l), val), sep = "")
  }
  show("settings", x$settings)
  show("counts", x$counts)
  if (!is.null(x$stats)) cat(sprintf("  stats: %s\n", paste(names(x$stats), collapse = ", ")))
  invisible(x)
}
