#' Reduce the detail of indirect identifiers
#'
#' Helpers for the "reduction in detail in indirect identifiers" of NHS ISB 1523
#' (section 6.4.2: "Post code truncated to either area code or district code. No date of
#' birth (e.g. transform to age, year of birth, or 5-year age band). No event dates (e.g.
#' transform admission date to admission year, or month and year)"), and for merging
#' rare categories.
#'
#' * `generalise_bands()` cuts numbers into bands of equal `width` starting at `origin`
#'   (the band `[a, a + width)` is labelled `"a-b"` with `b = a + width - 1` for whole
#'   numbers, e.g. `"20-24"`), optionally top-coding values `>= top` into `"top+"`.
#' * `generalise_date()` keeps the month (`"2012-03"`) or the year (`"2012"`) of dates
#'   (Date, POSIXct/POSIXlt or strings in ISO format `"YYYY-MM-DD"`).
#' * `generalise_postcode()` truncates UK postcodes to the district (the outward code,
#'   e.g. `"LS1"` from `"LS1 4AP"`) or the area (the leading letters, `"LS"`).
#' * `generalise_rare()` merges the categories seen fewer than `k` times into
#'   one category `other` (if the merged category itself stays rare, it is still
#'   reported in the result; check the result with [kanon_check()]).
#'
#' Reducing detail lowers the risk carried by a variable on its own but does not make a
#' data set k-anonymous by itself: check the combination of the generalised variables
#' with [kanon_check()] or use [generalise_strata()].
#'
#' @param x A vector.
#' @param width Band width (a number > 0).
#' @param origin Lower limit of the first band.
#' @param top Optional top-coding threshold: values `>= top` form the band `"top+"`.
#' @return `generalise_bands()`: an ordered factor of bands (missing values stay missing;
#'   values below `origin` are an error). `generalise_date()`: an ordered factor of
#'   months or years. `generalise_postcode()`: a character vector of districts or areas
#'   in upper case. `generalise_rare()`: a factor (ordered if `x` is) with the rare
#'   levels merged.
#' @name generalise
#' @family generalisation
#' @examples
#' generalise_bands(c(3, 17, 42, 90), width = 5, top = 85)
#' generalise_date(as.Date(c("2012-03-14", "2013-11-02")), to = "month")
#' generalise_postcode(c("LS1 4AP", "m1 1ae", "EC1A 1BB"), to = "district")
#' generalise_rare(c("a", "a", "a", "b", "c"), k = 2)
NULL

#' @rdname generalise
#' @export
generalise_bands <- function(x, width = 5, origin = 0, top = NULL) {
  if (!is.numeric(x) || is.factor(x)) stop_arg("`x` must be numeric, not ", class_label(x), ".")
  width <- check_number(width, "width", lower = 0, lower_open = TRUE)
  origin <- check_number(origin, "origin")
  if (!is.null(top)) {
    top <- check_number(top, "top", lower = origin, lower_open = TRUE)
    if (abs((top - origin) / width - round((top - origin) / width)) > 1e-9) {
      stop_arg("`top` must be `origin` plus a whole number of `width`s (e.g. ", origin + 17 * width, "), not ", top, ".")
    }
  }
  if (any(is.infinite(x) | is.nan(x))) stop_arg("`x` contains Inf or NaN; set such values to NA first.", kind = "data")
  if (any(x < origin, na.rm = TRUE)) {
    stop_arg("`x` has values below `origin` (", origin, "); lower `origin` to at most ", min(x, na.rm = TRUE), ".", kind = "data")
  }
  hi <- if (is.null(top)) max(c(x, origin), na.rm = TRUE) else top
  n_bands <- max(1, floor((hi - origin) / width + 1e-9) + (is.null(top)))
  if (n_bands > 1e6) {
    stop_arg("`width` (", width, ") would make ", format(n_bands, big.mark = ","), " bands; ",
             "choose a larger `width` (or a `top` code) for at most a million bands.")
  }
  lower <- origin + (seq_len(n_bands) - 1) * width
  whole <- origin == round(origin) && width == round(width)
  labels <- if (whole) paste0(lower, "-", lower + width - 1) else paste0("[", lower, ",", lower + width, ")")
  b <- floor((x - origin) / width + 1e-9) + 1
  if (!is.null(top)) {
    b[!is.na(x) & x >= top] <- n_bands + 1
    labels <- c(labels, paste0(top, "+"))
  }
  factor(labels[b], levels = labels, ordered = TRUE)
}

#' @rdname generalise
#' @param to `generalise_date()`: `"month"` or `"year"`; `generalise_postcode()`:
#'   `"district"` or `"area"`.
#' @export
generalise_date <- function(x, to = c("month", "year")) {
  to <- match_choice(to, "to")
  if (is.factor(x)) x <- as.character(x)
  if (inherits(x, "POSIXt")) x <- as.Date(format(x, "%Y-%m-%d"))
  if (is.character(x)) {
    ok <- is.na(x) | grepl("^[0-9]{4}-[0-9]{2}-[0-9]{2}", x)
    if (!all(ok)) {
      stop_arg("`x` must hold dates; ", show_value(x[!ok][1L]), " is not in the ISO form \"YYYY-MM-DD\". ",
               "Convert with as.Date(x, format = ...) first.")
    }
    y <- as.Date(substr(x, 1L, 10L), format = "%Y-%m-%d")
    if (any(is.na(y) & !is.na(x))) stop_arg("`x` has invalid dates, e.g. ", show_value(x[is.na(y) & !is.na(x)][1L]), ".", kind = "data")
    x <- y
  }
  if (!inherits(x, "Date")) stop_arg("`x` must be a Date, POSIXct or ISO date string vector, not ", class_label(x), ".")
  out <- format(x, if (to == "month") "%Y-%m" else "%Y")
  factor(out, levels = sort(unique(out[!is.na(out)])), ordered = TRUE)
}

#' @rdname generalise
#' @export
generalise_postcode <- function(x, to = c("district", "area")) {
  to <- match_choice(to, "to")
  if (is.factor(x)) x <- as.character(x)
  if (!is.character(x)) stop_arg("`x` must be a character vector of postcodes, not ", class_label(x), ".")
  p <- toupper(gsub("[[:space:]]+", " ", trimws(x)))
  # outward code: before the space, or everything but the 3-character inward code
  outward <- ifelse(grepl(" ", p), sub(" .*$", "", p),
                    ifelse(nchar(p) >= 5L & grepl("[0-9][A-Z]{2}$", p), substr(p, 1L, nchar(p) - 3L), p))
  ok <- is.na(p) | grepl("^[A-Z]{1,2}[0-9][0-9A-Z]?$", outward)
  if (!all(ok)) {
    stop_arg("`x` has values that are not UK postcodes or districts, e.g. ", show_value(x[!ok][1L]),
             ". Correct or set them to NA first.", kind = "data")
  }
  if (to == "district") outward else sub("[0-9].*$", "", outward)
}

#' @rdname generalise
#' @param k Categories with fewer than `k` records are merged (the boundary rule of the
#'   package: a category of `k` or more records is kept).
#' @param other Label of the merged category.
#' @param min_count Deprecated name of `k` (same meaning).
#' @export
generalise_rare <- function(x, k = 5, other = "Other", min_count) {
  if (!missing(min_count)) k <- renamed_arg(min_count, "min_count", "k", !missing(k))
  if (!is.atomic(x) || !is.null(dim(x))) stop_arg("`x` must be an atomic vector, not ", class_label(x), ".")
  k <- check_whole(k, "k", min = 1)
  if (!is.character(other) || length(other) != 1L || is.na(other)) {
    stop_arg("`other` must be a single string, not ", show_value(other), ".")
  }
  f <- if (is.factor(x)) droplevels(x) else factor(x)
  counts <- table(f)
  rare <- names(counts)[counts < k]
  if (other %in% setdiff(levels(f), rare)) {
    stop_arg("`other` (\"", other, "\") is already a common category of `x`; choose another label.")
  }
  if (!length(rare)) return(f)
  lev <- levels(f)
  new <- ifelse(lev %in% rare, other, lev)
  factor(new[as.integer(f)], levels = unique(new), ordered = is.ordered(x))
}

#' Merge categories of one variable until all strata reach k
#'
#' The automatic generalisation of step 2 of the method: when some strata (combinations
#' of the `strata` variables) have fewer than `k` records, merge categories of the chosen
#' variable `column` until every stratum has at least `k` records. At each step the
#' category of `column` with the fewest records among those in a too-small stratum is merged
#' with a neighbour: for an ordered factor (or numbers) the adjacent category with fewer
#' records, otherwise the other category with the fewest records (missing values form a
#' category that, in an ordered variable, has no neighbour and joins the smallest other
#' category). Merged categories are
#' labelled by joining the old labels with `"/"`, or for ordered ones as a span (bands `"20-24"` and `"25-29"` become `"20-29"`, `"80-84"` and `"85+"` become `"80+"`, other labels `"a to b"`). The
#' merge order depends only on counts and on the level order, never on row order.
#'
#' This loses detail in `column` for all records, not only in the small strata. It fails if
#' merging all categories of `column` still leaves a stratum below `k` (then generalise
#' another variable too, or use `small_strata = "merge"` or `"suppress"` in
#' [anonymise()]).
#'
#' @param data A data frame.
#' @param column The column whose categories are merged (one of `strata`).
#' @param strata The stratification columns (default: factor, character and logical).
#' @param k The minimum stratum size, a whole number >= 1.
#' @param var Deprecated name of `column`.
#' @return An object of the same class as `data` with `column` replaced by a factor of the
#'   merged categories (ordered if `column` was ordered or numeric), and a message (class
#'   `detanon_message_merge`) listing every merge. Its release metadata
#'   ([release_info()]) hold the settings (`column`, `strata`, `k`) and the counts (`n`,
#'   `n_strata`, `min_size`, `n_changed`: records whose category changed, `n_merges`). The
#'   table of merges is only in the message: its order tells which categories were
#'   rarest. Row names and factor levels left without records are dropped.
#' @examples
#' d <- titanic_paper()
#' d$Age5 <- generalise_bands(d$Age, width = 5)
#' g <- generalise_strata(d, "Age5", strata = c("Sex", "Age5"), k = 5)
#' table(g$Age5)
#' @family generalisation
#' @family masking verbs
#' @export
generalise_strata <- function(data, column, strata = NULL, k = 3, var) {
  if (!missing(var)) column <- renamed_arg(var, "var", "column", !missing(column))
  check_data_frame(data, "data")
  strata <- check_columns(strata, data, "strata", default_strata(data))
  if (missing(column)) stop_arg("`column` is missing: name the stratum column whose categories are merged.")
  column <- check_columns(column, data, "column")
  if (length(column) != 1L) stop_arg("`column` must name a single column.")
  if (!column %in% strata) {
    stop_arg("`column` (`", column, "`) must be one of `strata` (", quote_names(strata), ").", kind = "column")
  }
  check_strata_columns(data, strata)
  k <- check_whole(k, "k", min = 1, max = .Machine$integer.max)
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  if (nrow(df) < k) stop_arg("`data` has ", nrow(df), " records, fewer than `k` = ", k, ": no merge can reach k.", kind = "data")
  x <- df[[column]]
  ordered <- is.ordered(x) || is.numeric(x)
  f <- if (is.factor(x)) droplevels(x) else factor(x)
  if (anyNA(f)) f <- addNA(f, ifany = TRUE)
  lev <- levels(f)
  lev_label <- ifelse(is.na(lev), "NA", lev)
  group <- seq_along(lev) # current group of each original level
  code <- as.integer(f)
  others <- setdiff(strata, column)
  other_id <- stratum_ids(df, others)
  if (any(tabulate(other_id) < k)) {
    stop_arg("Merging all categories of `", column, "` would still leave strata with fewer than k = ", k,
             " records; generalise other `strata` variables too, or lower `k`.", kind = "data")
  }
  merges <- data.frame(from = character(), to = character(), stringsAsFactors = FALSE)
  na_level <- which(is.na(lev))
  labels_of <- function(g) {
    members <- which(group == g)
    if (ordered) {
      # a span of the ordered levels, plus "/NA" when the missing category joined it
      m <- setdiff(members, na_level)
      lab <- if (!length(m)) character() else if (length(m) == 1L) lev_label[m] else
        span_label(lev_label[min(m)], lev_label[max(m)])
      paste(c(lab, if (length(m) < length(members)) "NA"), collapse = "/")
    } else {
      paste(lev_label[members], collapse = "/")
    }
  }
  repeat {
    gcode <- group[code]
    id <- (gcode - 1L) * max(other_id) + other_id
    sizes <- tabulate(id, max(id))
    small_groups <- unique(gcode[sizes[id] < k])
    if (!length(small_groups)) break
    groups <- sort(unique(group))
    gsize <- tabulate(gcode, max(group))
    g <- small_groups[order(gsize[small_groups], small_groups)][1L]
    na_group <- if (length(na_level) && sum(group == group[na_level]) == 1L) group[na_level] else 0L
    if (ordered && g != na_group) {
      # adjacent groups in the level order; the missing category is nobody's neighbour
      ord <- setdiff(groups, na_group)
      p <- match(g, ord)
      nb <- ord[c(p - 1L, p + 1L)[c(p > 1L, p < length(ord))]]
      if (!length(nb)) nb <- na_group
    } else {
      nb <- setdiff(groups, g)
    }
    partner <- nb[order(gsize[nb], nb)][1L]
    from <- c(labels_of(g), labels_of(partner))
    keep <- min(g, partner)
    group[group %in% c(g, partner)] <- keep
    merges[nrow(merges) + 1L, ] <- list(paste(from, collapse = " + "), labels_of(keep))
  }
  gs <- sort(unique(group))
  new_levels <- vapply(gs, labels_of, character(1))
  df[[column]] <- factor(new_levels[match(group[code], gs)], levels = new_levels, ordered = ordered)
  if (nrow(merges)) {
    inform_detanon(plural(nrow(merges), "merge"), " of `", column, "` categories:\n",
                   paste0("  ", merges$from, " -> ", merges$to, collapse = "\n"), kind = "merge")
  }
  sizes <- tabulate(stratum_ids(df, strata))
  # the merge order tells which categories were rarest: it goes to the custodian (the
  # message), the release carries only the number of merges
  as_release(as_release_frame(df, data), "generalise_strata",
             settings = list(column = column, strata = strata, k = k),
             counts = list(n = nrow(df), n_strata = length(sizes), min_size = if (length(sizes)) min(sizes) else 0L,
                           n_changed = sum(as.character(df[[column]]) != as.character(f), na.rm = TRUE) +
                             sum(is.na(df[[column]]) != is.na(f)),
                           n_merges = nrow(merges)))
}

# Label of a span of ordered categories: bands "a-b" and "c-d" give "a-d", "c+" gives "a+".
span_label <- function(lo, hi) {
  num <- "-?[0-9.]+"
  lo_start <- if (grepl(paste0("^", num, "(-", num, "|\\+)?$"), lo)) regmatches(lo, regexpr(num, lo)) else NA
  if (!is.na(lo_start) && grepl(paste0("^", num, "\\+$"), hi)) return(paste0(lo_start, "+"))
  if (!is.na(lo_start) && grepl(paste0("^", num, "(-", num, ")?$"), hi)) {
    return(paste0(lo_start, "-", sub(paste0("^", num, "-"), "", hi)))
  }
  paste0(lo, " to ", hi)
}
