# Shared argument checks. Every message names the argument and says what to do.

stop_arg <- function(...) stop(paste0(...), call. = FALSE)

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

# "1 record", "2 records".
plural <- function(n, word) paste(format(n, big.mark = ",", scientific = FALSE), if (n == 1) word else paste0(word, "s"))
