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
# `fields`: extra named fields of the condition object, for handlers (e.g. the table of moves).
inform_detanon <- function(..., kind, fields = list()) {
  message(detanon_condition(paste0(..., "\n"), "message", kind, fields))
}

detanon_condition <- function(msg, type, kind, fields = list()) {
  fn <- detanon_caller()
  if (!is.null(fn)) msg <- paste0(fn, "(): ", msg)
  structure(class = c(paste0("detanon_", type, "_", kind), paste0("detanon_", type), type, "condition"),
            c(list(message = msg, call = NULL, fn = fn), fields))
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

# An argument renamed in this release, whose old name still works for one release:
# warns (class `detanon_warning_deprecated`) and returns the value to use for `new`.
renamed_arg <- function(value, old, new, new_given = FALSE, note = "") {
  if (new_given) stop_arg("give `", new, "` only: `", old, "` is its old, deprecated name.")
  warn_detanon("`", old, "` is deprecated; use `", new, "`", note, ".", kind = "deprecated")
  value
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
  nm <- names(x)
  if (length(nm) != length(x) || anyNA(nm) || any(nm == "")) {
    pos <- if (length(nm) != length(x)) seq_along(x) else which(is.na(nm) | nm == "")
    stop_arg("`", arg, "` has ", plural(length(pos), "a column", "columns", count = FALSE), " without a name (",
             plural(length(pos), "position", count = FALSE), " ", paste(pos, collapse = ", "),
             "); give every column a name, e.g. names(", arg, ")[", pos[1L], "] <- \"v", pos[1L], "\".",
             kind = "column")
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
    stop_arg("`", arg, "` must be a character vector of column names, not ", show_value(cols), ".",
             if (is.numeric(cols) && length(cols) == 1L) {
               paste0(" The columns now come right after `data`, and `k` after them: name the other ",
                      "arguments, e.g. `k = ", format(cols), "`.")
             })
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

# One of the choices in the default of argument `arg` of the calling function.
# `x` one of `choices` (by default the choices of argument `arg` in the caller's formals).
match_choice <- function(x, arg, choices = NULL) {
  if (is.null(choices)) choices <- eval(formals(sys.function(sys.parent()))[[arg]])
  if (!is.character(x) || length(x) < 1L || anyNA(x)) {
    stop_arg("`", arg, "` must be one of ", paste0("\"", choices, "\"", collapse = ", "), ".")
  }
  if (identical(x, choices)) return(choices[1L])
  if (length(x) != 1L || !x %in% choices) {
    stop_arg("`", arg, "` must be one of ", paste0("\"", choices, "\"", collapse = ", "),
             ", not ", show_value(x), ".")
  }
  x
}

is_continuous <- function(x) is.numeric(x) && !is.factor(x) && is.null(dim(x))

# The columns `cols` of a data frame as a double matrix (one column each, named), as
# as.double() gives each column; the copies on `nthreads`.
numeric_matrix <- function(data, cols, nthreads = 1L) {
  columns <- lapply(as.list(data)[cols], function(v) {
    if (is.object(v) || !(is.double(v) || is.integer(v) || is.logical(v))) as.double(v) else v
  })
  x <- .Call(C_ffi_cols_matrix, columns, nrow(data), nthreads)
  colnames(x) <- cols
  x
}

# Validate the pair and resolve `vars` (continuous columns in both). When `vars` or
# `strata` is NULL, the defaults come from the release metadata of `masked` (if still
# valid); the strata default is returned as attribute "strata" of the result.
check_pair <- function(original, masked, vars, arg = "vars", strata = character()) {
  check_data_frame(original, "original")
  check_data_frame(masked, "masked")
  if (nrow(original) != nrow(masked)) {
    stop_arg("`original` has ", nrow(original), " rows but `masked` has ", nrow(masked),
             "; pass the same records in the same order (if anonymise() dropped or suppressed ",
             "records, drop them from `original` too).", kind = "data")
  }
  common <- intersect(names(original), names(masked))
  info <- if (is.null(vars) || is.null(strata)) current_release(masked, "masked")$settings
  if (is.null(vars)) vars <- default_pair_vars(original, masked, common, info)
  if (!length(vars)) {
    stop_arg("No continuous variable to assess: name the masked numeric columns in `", arg, "`.", kind = "column")
  }
  vars <- check_columns(vars, original, arg)
  check_columns(vars, masked, arg)
  for (nm in c("original", "masked")) {
    data <- if (nm == "original") original else masked
    bad <- vars[!vapply(vars, function(v) is_continuous(data[[v]]), logical(1))]
    if (length(bad)) {
      stop_arg("`", arg, "` must name numeric columns; in `", nm, "` ", quote_names(bad), " ",
               plural(length(bad), "is", "are", count = FALSE), " not (",
               paste(vapply(bad, function(v) class(data[[v]])[1L], ""), collapse = ", "),
               "). Convert with as.numeric() or leave them out of `", arg, "`.", kind = "column")
    }
    for (v in vars) {
      y <- data[[v]]
      if (anyNA(y) || any(is.infinite(y))) {
        stop_arg("`", arg, "` column `", v, "` of `", nm, "` has ",
                 plural(sum(!is.finite(y)), "missing or infinite value"),
                 "; the measures need complete data: impute them or drop those records from ",
                 "both `original` and `masked`.", kind = "data")
      }
      if (length(y) > 1L && !is.finite(col_stats(matrix(as.double(y)))$sd)) {
        stop_arg("`", arg, "` column `", v, "` of `", nm, "` has values too large to standardise ",
                 "(the SD overflows); rescale it in both `original` and `masked` (e.g. divide by 1e6).", kind = "data")
      }
    }
  }
  if (is.null(strata)) {
    attr(vars, "strata") <- if (!is.null(info$strata)) intersect(info$strata, common) else character()
  }
  vars
}

default_pair_vars <- function(original, masked, common, info) {
  if (!is.null(info$vars) && all(info$vars %in% common)) return(info$vars)
  num <- common[vapply(common, function(v) is_continuous(original[[v]]) && is_continuous(masked[[v]]),
                       logical(1))]
  num[!vapply(num, function(v) isTRUE(all.equal(as.double(original[[v]]), as.double(masked[[v]]),
                                                tolerance = 0)), logical(1))]
}

check_same_rows <- function(original, masked) {
  if (nrow(original) != nrow(masked)) {
    stop_arg("`original` has ", nrow(original), " rows but `masked` has ", nrow(masked),
             "; pass the same records in the same order (if anonymise() dropped or suppressed ",
             "records, drop them from `original` too).", kind = "data")
  }
}

# Numeric quasi-identifiers and the categorical strata beside them (default: the
# categorical columns that are not quasi-identifiers); a column cannot be both.
check_quasi_strata <- function(data, quasi, strata) {
  quasi <- check_columns(quasi, data, "quasi", character())
  check_quasi(data, quasi)
  strata <- check_columns(strata, data, "strata", setdiff(default_strata(data), quasi))
  check_strata_columns(data, strata)
  both <- intersect(quasi, strata)
  if (length(both)) stop_arg("Columns cannot be in both `quasi` and `strata`: ", quote_names(both), ".", kind = "column")
  list(quasi = quasi, strata = strata)
}

check_quasi <- function(data, quasi, arg = "quasi") {
  bad <- quasi[!vapply(data[quasi], is_continuous, logical(1))]
  if (length(bad)) {
    stop_arg("`", arg, "` must be numeric columns; ", quote_names(bad), " ",
             plural(length(bad), "is", "are", count = FALSE), " not (",
             paste(vapply(data[bad], function(x) class(x)[1L], ""), collapse = ", "),
             "). Convert with as.numeric() or move categorical quasi-identifiers to `strata`.", kind = "column")
  }
  for (v in quasi) {
    x <- data[[v]]
    if (any(is.nan(x)) || any(is.infinite(x))) {
      stop_arg("`", arg, "` column `", v, "` contains NaN or infinite values; replace them first.", kind = "data")
    }
    fin <- x[!is.na(x)]
    if (length(fin) && !is.finite(max(fin) - min(fin))) {
      stop_arg("`", arg, "` column `", v, "` has values too large to handle (their range overflows); ",
               "rescale it (e.g. divide by 1e6) first.", kind = "data")
    }
  }
  invisible(quasi)
}

check_k_n <- function(k, n) {
  if (n == 0L) {
    stop_arg("`data` has no records (none left after dropping incomplete ones, if any): ",
             "pass a data frame with at least `k` = ", k, " complete records.", kind = "data")
  }
  if (k > n) {
    stop_arg("`k` (", k, ") is larger than the number of records (", n, "); ",
             "choose k <= ", n, ".", kind = "small_strata")
  }
}

check_nthreads <- function(nthreads) {
  check_whole(nthreads, "nthreads", min = 1)
}

# Return `out` (a plain data.frame) as the same kind of data frame as `like`: a grouped
# tibble keeps its groups (those of its grouping columns still present), a data.table its
# key (when the rows are still sorted by it) and a usable self-reference for `:=`.
restore_class <- function(out, like) {
  if (inherits(like, "data.table") && requireNamespace("data.table", quietly = TRUE)) {
    key <- data.table::key(like)
    key <- if (all(key %in% names(out))) key else NULL
    sorted <- length(key) &&
      !is.unsorted(do.call(order, c(radix_keys(unname(as.list(out[key]))), method = "radix")))
    out <- data.table::as.data.table(out)
    if (sorted) data.table::setkeyv(out, key)
    return(out)
  }
  if (inherits(like, "tbl_df") && requireNamespace("tibble", quietly = TRUE)) {
    out <- tibble::as_tibble(out)
    if (inherits(like, "grouped_df") && requireNamespace("dplyr", quietly = TRUE)) {
      groups <- intersect(dplyr::group_vars(like), names(out))
      if (length(groups)) out <- dplyr::grouped_df(out, groups)
    }
    return(out)
  }
  out
}

# A release made from the plain data.frame `out` of a masking verb, given its input `data`:
# no row names (they may be identifiers, and gaps in them tell which records were removed),
# no factor level without a record (it would tell that a rare category existed, whether
# the verb or the caller removed its records), the class of `data`, and the attribute
# `name` set without breaking a data.table's self-reference.
as_release_frame <- function(out, data, attr_value = NULL, name = "detanon") {
  # only the attributes of a plain data frame: none of the caller's (na.omit()'s
  # `na.action` holds the row names and positions of the records it dropped; custom
  # attributes may hold means, SDs or names); restore_class() adds what the class needs
  out <- strip_frame_attributes(out)
  rownames(out) <- NULL
  for (v in names(out)) {
    x <- out[[v]]
    if (is.factor(x) && !all(tabulate(as.integer(x), nlevels(x)) > 0L)) {
      out[[v]] <- droplevels(x, exclude = if (anyNA(levels(x))) NULL else NA)
    }
  }
  out <- restore_class(out, data)
  if (!is.null(attr_value)) out <- set_attr(out, name, attr_value)
  out
}

# A plain data.frame with the columns of `x` and no other attribute than its names, row
# names and class.
strip_frame_attributes <- function(x) {
  n <- .row_names_info(x, 2L)
  attributes(x) <- list(names = names(x), row.names = .set_row_names(n), class = "data.frame")
  x
}

# A result table gives grouping columns `cols` beside its own columns `reserved`: a data
# column named like one of them would be overwritten without notice.
check_no_clash <- function(cols, reserved, arg) {
  clash <- intersect(cols, reserved)
  if (length(clash)) {
    stop_arg("`", arg, "` column", if (length(clash) > 1L) "s " else " ", quote_names(clash),
             " ha", if (length(clash) > 1L) "ve" else "s", " the name of a column of the result (",
             quote_names(reserved, max = 12L), "); rename ", if (length(clash) > 1L) "them" else "it",
             " first, e.g. with names(data)[names(data) == \"", clash[1L], "\"] <- \"", clash[1L], "_\".",
             kind = "column")
  }
  invisible(cols)
}

set_attr <- function(x, name, value) {
  if (inherits(x, "data.table") && requireNamespace("data.table", quietly = TRUE)) {
    data.table::setattr(x, name, value)
    return(x) # visible: a verb that ends here still prints at the console
  }
  attr(x, name) <- value
  x
}

# Powers of two that bring the largest magnitude of each column of `x` near 1, for columns
# whose values are all so small (below 1e-100) that their squared deviations would
# underflow (SD 0: "constant"). Multiplying by a power of two is exact (also for subnormal
# numbers), and z-scores, distances and ratios are invariant to it. 1 elsewhere.
pow2_factors <- function(x) {
  # the largest magnitude of each column from its range (no |x| copy of the whole matrix)
  big <- if (is.double(x) && is.matrix(x)) {
    .Call(C_ffi_col_maxabs, x) # in one pass per column, without copying it
  } else {
    vapply(seq_len(NCOL(x)), function(j) {
      r <- suppressWarnings(range(x[, j], na.rm = TRUE))
      max(abs(r))
    }, numeric(1))
  }
  e <- ifelse(is.finite(big) & big > 0 & big < 1e-100, -floor(log2(big)), 0)
  e
}

# x * 2^e, in two steps so that 2^e itself never overflows (e up to 1074).
times_pow2 <- function(x, e) {
  if (is.double(x) && isTRUE(all(e == 0))) return(x)
  h <- trunc(e / 2)
  (x * 2^h) * 2^(e - h)
}

# Rescale the columns of `x` (and, by the same factors, of `y`) whose values are all tiny.
pow2_normalise <- function(x, y = NULL) {
  e <- pow2_factors(x)
  for (j in which(e != 0)) {
    x[, j] <- times_pow2(x[, j], e[j])
    if (!is.null(y)) y[, j] <- times_pow2(y[, j], e[j])
  }
  list(x = x, y = y, e = e)
}

# A column is constant when all its non-missing values are equal (not when its SD
# underflows to 0).
is_constant <- function(v) {
  if (length(v) && !anyNA(v)) {
    r <- range(v)
    return(r[1L] == r[2L])
  }
  v <- v[!is.na(v)]
  !length(v) || all(v == v[1L])
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
# `nthreads`: for the checksums (the same for every number).
as_release <- function(x, verb, settings = list(), counts = list(), stats = NULL, columns = NULL, nthreads = 1L) {
  if (is.null(columns)) {
    columns <- intersect(unique(unlist(settings[c("vars", "strata", "quasi", "column")])), names(x))
    if (!length(columns)) columns <- names(x)
  }
  info <- list(verb = verb, settings = settings, counts = counts)
  if (!is.null(stats)) info$stats <- stats
  info$fingerprint <- release_fingerprint(x, columns, nthreads)
  # (setattr for a data.table: `attr<-` would break its self-reference, and `:=` warn)
  set_attr(x, "detanon", structure(info, class = "detanon_release"))
}

# nrow, the covered columns and a position-weighted checksum of each of them: subsetting
# changes nrow, reordering or editing rows changes the checksums (with high probability).
release_fingerprint <- function(x, columns, nthreads = 1L) {
  n <- nrow(x)
  sums <- fast_checksums(lapply(columns, function(v) x[[v]]), nthreads)
  slow <- which(is.na(sums))
  if (length(slow)) {
    w <- position_weights(n)
    sums[slow] <- vapply(columns[slow], function(v) column_checksum(x[[v]], w), numeric(1))
  }
  list(n = n, columns = columns, checksum = sums)
}

# column_checksum() of each column of the list `cols` in one pass in C (the same
# arithmetic), the columns on `nthreads`, for a numeric, logical or factor column (or one of
# another class stored as numbers, as unclass() gives them) without missing or infinite
# values; NA for the others.
fast_checksums <- function(cols, nthreads = 1L) .Call(C_ffi_checksums, cols, nthreads)

# Weights in [0.5, 1.5) that differ between positions (fractional parts of i * golden ratio).
position_weights <- function(n) {
  w <- seq_len(n) * 0.6180339887498949
  w - floor(w) + 0.5
}

column_checksum <- function(v, w) {
  if (is.factor(v)) v <- as.integer(v)
  if (is.object(v) && !is.factor(v) && is.atomic(v)) v <- unclass(v) # labelled, Date, integer64
  if (!is.numeric(v) && !is.logical(v)) {
    v <- if (is.atomic(v) && is.null(dim(v))) match(v, unique(v)) else return(NA_real_)
  }
  v <- as.double(v)
  n_miss <- 0
  if (anyNA(v) || !is.finite(sum(v))) {
    miss <- is.na(v)
    n_miss <- sum(miss)
    v[miss] <- -0.25
    v[is.infinite(v)] <- sign(v[is.infinite(v)]) * 0.125
  }
  sum(v * w) + n_miss
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

# `x` without its release metadata (to compare data).
plain_release <- function(x) {
  attr(x, "detanon") <- NULL
  x
}

release_current <- function(x, fp) {
  if (!identical(nrow(x), fp$n) || !all(fp$columns %in% names(x))) return(FALSE)
  w <- position_weights(fp$n)
  now <- vapply(fp$columns, function(v) column_checksum(x[[v]], w), numeric(1))
  # a relative tolerance, so that a release saved on one platform checks on another
  # (sums may differ in the last bits); any real edit moves a checksum far more
  now <- unname(now)
  old <- fp$checksum
  known <- !is.na(old)
  identical(is.na(now), !known) && all(abs(now[known] - old[known]) <= 1e-12 * pmax(1, abs(old[known])))
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
