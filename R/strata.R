# Strata: every combination of the categorical variables that occurs in the data.

# Integer stratum id per row, 1..S. Ids follow the sorted values of the strata columns with
# the first column varying fastest (as in table()), so they do not depend on row order.
# NA is a level of its own, sorted last.
stratum_ids <- function(data, strata) {
  n <- nrow(data)
  if (!length(strata) || !n) return(rep.int(1L, n))
  first <- TRUE
  for (v in strata) {
    code <- column_codes(data[[v]])
    if (first) {
      id <- code
      first <- FALSE
    } else {
      combined <- (code - 1) * max(id) + id
      id <- match(combined, sort(unique(combined), method = "radix"))
    }
  }
  # compact to 1..S keeping the sort order (nothing to do when every code occurs). The codes
  # are positive whole numbers no larger than n or the number of levels + 1: the ones that
  # occur, sorted, are where a count is positive (no hashing: 5 times faster than unique())
  u <- which(tabulate(id, nbins = max(id)) > 0L)
  if (u[length(u)] == length(u)) id else match(id, u)
}

# One text key per row for its strata values, to match strata between a table (such as a
# table of k per stratum) and the data, or between chunks of the data; "" for every row when
# there are no strata. Keys follow the values exactly (exact_values()), as stratum_ids() does,
# never their printed form: two strata share a key only when stratum_ids() would put their
# rows together.
stratum_keys <- function(data, strata) {
  if (!length(strata)) return(rep("", nrow(data)))
  # a missing value and the string "NA" must not share a key: every present value is
  # prefixed with "=" and its length in bytes (so no value, whatever it holds, can be read
  # as the end of one value and the start of the next), a missing one is a bare marker
  key <- function(v) {
    v <- exact_values(v)
    ifelse(is.na(v), "\001", paste0("=", nchar(v, type = "bytes"), ":", v))
  }
  # made once per stratum, not per row: rows of one stratum id hold equal values
  if (!nrow(data)) return(character())
  id <- stratum_ids(data, strata)
  first <- match(seq_len(max(id)), id)
  do.call(paste, c(lapply(data[strata], function(v) key(v[first])), sep = "\r"))[id]
}

# The values of a column as text that keeps them apart exactly: two values get the same
# text only when they are equal (a factor by its labels, so a factor and a character column
# of the same values agree; numbers by value, whole numbers the same whether integer or
# double, 0 and -0 alike). Numbers whose shortest printed form does not read back as the
# same double (0.1 + 0.2, 1e17 + 16, times less than a second apart) are written by their
# exact bits (sprintf("%a")); integer64 by its decimal digits. NA stays NA (NaN is "NaN").
exact_values <- function(v) {
  if (inherits(v, "integer64")) {
    # without bit64 (whose methods read it), the 64 bits as a double's bit pattern
    if (requireNamespace("bit64", quietly = TRUE)) return(as.character(v))
    return(sprintf("%a", as.vector(unclass(v))))
  }
  if (is.factor(v)) return(enc2utf8(as.character(v)))
  if (is.character(v)) return(enc2utf8(v))
  if (is.double(v)) {
    x <- as.vector(unclass(v))
    x[!is.na(x) & x == 0] <- 0
    out <- as.character(x)
    back <- suppressWarnings(as.double(out))
    lossy <- !is.na(x) & (is.na(back) | back != x)
    out[lossy] <- sprintf("%a", x[lossy])
    return(out)
  }
  if (is.complex(v)) {
    out <- paste0(exact_values(Re(v)), "+", exact_values(Im(v)), "i")
    out[is.na(v)] <- NA_character_
    return(out)
  }
  as.character(as.vector(unclass(v)))
}

# Ids of the combinations of the values of a list of columns (positional, so that no
# internal name can stand for or hide a user's column); see stratum_ids().
combination_ids <- function(cols) {
  cols <- unname(cols)
  stratum_ids(structure(cols, names = paste0("v", seq_along(cols)), class = "data.frame",
                        row.names = .set_row_names(length(cols[[1L]]))),
              paste0("v", seq_along(cols)))
}

column_codes <- function(x) {
  if (is.factor(x)) {
    code <- as.integer(x)
    if (anyNA(code)) code[is.na(code)] <- nlevels(x) + 1L
    return(code)
  }
  match(x, sort_unique_radix(x, na.last = TRUE))
}

# R's radix sort refuses non-ASCII strings that are not marked UTF-8 or latin1 ("Character
# encoding must be UTF-8, Latin-1 or bytes"): read.csv() leaves them unmarked in a UTF-8
# locale, and so does iconv() output read under another locale. radix_key() gives the sort
# a copy translated to UTF-8 (invalid bytes become <xx> escapes); the values themselves are
# never replaced, so only the order is taken from the copy. ASCII input is returned as it is,
# which keeps every result bit-identical for ASCII data. Every radix sort or order of values
# that can be character goes through it.
radix_key <- function(x) {
  if (!is.character(x) || !length(x)) return(x)
  native <- x[Encoding(x) == "unknown"]
  if (!any(grepl("[^\\x01-\\x7f]", native, useBytes = TRUE, perl = TRUE))) return(x)
  enc2utf8(x)
}

# radix_key() for each of a list of sort keys (as passed to do.call(order, ...))
radix_keys <- function(cols) lapply(cols, radix_key)

# sort(unique(x), method = "radix") for values of any encoding; returns the original values
sort_unique_radix <- function(x, na.last = TRUE) {
  u <- unique(x)
  u[order(radix_key(u), na.last = na.last, method = "radix")]
}

check_strata_columns <- function(data, strata, arg = "strata") {
  bad <- strata[!vapply(data[strata], is_categorical_like, logical(1))]
  if (length(bad)) {
    stop_arg("`", arg, "` columns must be atomic vectors (factor, character, logical or ",
             "whole numbers); ", quote_names(bad), " is not. Convert it or leave it out.", kind = "column")
  }
  invisible(strata)
}

is_categorical_like <- function(x) is.atomic(x) && is.null(dim(x))

default_strata <- function(data) {
  names(data)[vapply(data, function(x) is.factor(x) || is.character(x) || is.logical(x) || is_labelled(x),
                     logical(1))]
}

#' Frequencies of the strata formed by categorical variables
#'
#' Counts the records in every combination of the levels of `strata` that occurs in the
#' data (the paper's Table 2) and flags the combinations with fewer than `k` records,
#' which break k-anonymity. With `sensitive`, it also tabulates a sensitive attribute in
#' each stratum and flags strata where every record shares one value of it: there,
#' knowing someone's stratum discloses the attribute (attribute disclosure) even though
#' the stratum is k-anonymous.
#'
#' Missing values in a stratum column form a level of their own. Combinations of factor
#' levels with no records are not listed.
#'
#' @param data A data frame.
#' @param strata Character vector of categorical column names. Default: the factor,
#'   character and logical columns.
#' @param k The anonymity threshold (a whole number >= 1).
#' @param sensitive Optional name of one column whose distribution is reported per stratum.
#' @return A data frame with one row per stratum: the strata columns, `n` (records),
#'   `below_k` (`n < k`), and with `sensitive` one `n_<value>` column per value, `ratio`
#'   (for a two-valued attribute the string `"count of the second value / n"`, e.g. the
#'   paper's survival ratio `"33/34"` for a 0/1 `Survived`; otherwise the share of the most
#'   common value) and `uniform`.
#' @examples
#' strata_table(titanic_paper(), c("Pclass", "Sex", "Family"), k = 3, sensitive = "Survived")
#' @family tables
#' @export
strata_table <- function(data, strata = NULL, k = 3, sensitive = NULL) {
  check_data_frame(data, "data")
  strata <- check_columns(strata, data, "strata", default_strata(data))
  if (!length(strata)) stop_arg("`strata` is empty: name at least one categorical column.")
  check_strata_columns(data, strata)
  k <- check_whole(k, "k", min = 1)
  if (!is.null(sensitive)) {
    sensitive <- check_columns(sensitive, data, "sensitive")
    if (length(sensitive) != 1L) stop_arg("`sensitive` must name a single column.")
    if (sensitive %in% strata) stop_arg("`sensitive` (", sensitive, ") must not be one of `strata`.", kind = "column")
    check_strata_columns(data, sensitive, "sensitive")
  }
  reserved <- c("n", "below_k")
  if (!is.null(sensitive)) {
    s_val <- data[[sensitive]]
    s_val <- if (is.factor(s_val)) levels(droplevels(s_val)) else unique(s_val)
    reserved <- c(reserved, paste0("n_", s_val), "ratio", "uniform")
  }
  check_no_clash(strata, reserved, "strata")
  df <- as.data.frame(data)
  id <- stratum_ids(df, strata)
  n_strata <- max(c(0L, id))
  out <- df[match(seq_len(n_strata), id), strata, drop = FALSE]
  rownames(out) <- NULL
  out$n <- tabulate(id, n_strata)
  out$below_k <- out$n < k
  if (!is.null(sensitive)) {
    s <- df[[sensitive]]
    if (is.factor(s)) s <- droplevels(s)
    s_code <- column_codes(s)
    s_lev <- s[match(seq_len(max(c(0L, s_code))), s_code)]
    counts <- matrix(tabulate((s_code - 1L) * n_strata + id, n_strata * length(s_lev)),
                     nrow = n_strata)
    for (j in seq_along(s_lev)) out[[paste0("n_", s_lev[j])]] <- counts[, j]
    if (length(s_lev) == 2L) {
      out$ratio <- paste0(counts[, 2L], "/", out$n)
    } else {
      out$ratio <- round(apply(counts, 1L, max) / out$n, 4)
    }
    out$uniform <- rowSums(counts > 0L) == 1L
  }
  class(out) <- c("detanon_strata", "data.frame")
  out
}

#' @export
print.detanon_strata <- function(x, ...) {
  print(structure(x, class = "data.frame"), ...)
  small <- sum(x$below_k)
  cat(sprintf("%d strata, smallest has %d records; %d below k.\n",
              nrow(x), if (nrow(x)) min(x$n) else 0L, small))
  if (!is.null(x$uniform) && any(x$uniform)) {
    cat(sprintf("%d strata share a single value of the sensitive attribute (attribute disclosure).\n",
                sum(x$uniform)))
  }
  invisible(x)
}
