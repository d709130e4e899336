# Shared argument checks. Every message names the argument and says what to do.

# (`kind` is the condition class to come: detanon_error_<kind>)
stop_arg <- function(..., kind = "argument") stop(paste0(...), call. = FALSE)

check_data_frame <- function(x, arg = deparse(substitute(x))) {
  if (!is.data.frame(x)) {
    stop_arg("`", arg, "` must be a data frame (data.frame, tibble or data.table), not ",
             class_label(x), ".")
  }
  if (anyDuplicated(names(x))) {
    dup <- unique(names(x)[duplicated(names(x))])
    stop_arg("`", arg, "` has duplicated column names (", quote_names(dup),
             "); give every column a unique name.")
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
             ". Available columns: ", quote_names(names(data), max = 12L), ".")
  }
  if (anyDuplicated(cols)) {
    stop_arg("`", arg, "` names a column more than once: ", quote_names(unique(cols[duplicated(cols)])), ".")
  }
  cols
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
    sorted <- length(key) && !is.unsorted(do.call(order, c(unname(as.list(out[key])), method = "radix")))
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
    return(invisible(x))
  }
  attr(x, name) <- value
  x
}

# Powers of two that bring the largest magnitude of each column of `x` near 1, for columns
# whose values are all so small (below 1e-100) that their squared deviations would
# underflow (SD 0: "constant"). Multiplying by a power of two is exact (also for subnormal
# numbers), and z-scores, distances and ratios are invariant to it. 1 elsewhere.
pow2_factors <- function(x) {
  big <- if (length(x)) apply(abs(x), 2L, function(v) suppressWarnings(max(v, na.rm = TRUE))) else numeric()
  e <- ifelse(is.finite(big) & big > 0 & big < 1e-100, -floor(log2(big)), 0)
  e
}

# x * 2^e, in two steps so that 2^e itself never overflows (e up to 1074).
times_pow2 <- function(x, e) {
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
  v <- v[!is.na(v)]
  !length(v) || all(v == v[1L])
}

# Order-independent column means and SDs (exact summation in C), as a list.
col_stats <- function(m, nthreads = 1L) {
  s <- .Call(C_ffi_col_stats, m, nthreads)
  list(mean = stats::setNames(s[1L, ], colnames(m)), sd = stats::setNames(s[2L, ], colnames(m)))
}
