#' Frequency tables with small-cell control
#'
#' Counts the records by one or more categorical variables, with row, column and grand
#' totals, and protects small counts by one of the statistical disclosure control
#' methods of NHS ISB 1523 (section 6.2.2, for the aggregate plans 1, 2, 4 and 5), whose
#' essential requirement is "No cell in the aggregate data output may be <= 5".
#'
#' * `"suppress"` (one or two variables): every cell, total included, with a count
#'   below `k` is suppressed (primary suppression; zeros too unless `zeros = FALSE`).
#'   Then further cells are suppressed (secondary suppression) until no suppressed value
#'   can be derived from the published cells and totals by any combination of additions
#'   and subtractions. For a two-way table this holds exactly when every suppressed cell
#'   lies on a cycle of suppressed cells (alternating between a row and a column, the
#'   totals counting as a row and a column of their own); cells are added one at a time,
#'   preferring inner cells over totals and small counts over large ones, until that
#'   holds. The result is not guaranteed to be the smallest possible suppression, and an
#'   attacker who uses the fact that counts are not negative still learns bounds for the
#'   suppressed cells (e.g. that a suppressed cell is at most its row total minus the
#'   published cells), just not their values.
#' * `"round"`: every cell and total is rounded to the nearest multiple of `base`
#'   (halves upwards). Totals are rounded from the true totals, so rows do not always add
#'   up (this is conventional, not controlled, rounding).
#' * `"barnardise"`: every inner cell above zero is changed by -1 or +1, each with
#'   probability `prob / 2` (R's random number generator: use [set.seed()]); zeros stay
#'   zero (so they are not protected) and totals are the sums of the changed cells.
#'   Small cells are perturbed but still published, so a cell may remain `<= 5`.
#' * `"none"`: plain counts (plans 1 and 4 need no disclosure control when every cell
#'   relates to a large enough population).
#'
#' The "population" rule of the plans (plan 1: cells relate to more than 1,000 people,
#' plan 2: to 1,000 or fewer, plans 4 and 5 the same with 10,000) is about the underlying
#' population a cell describes, which the data cannot tell: give your estimate of the
#' smallest such population in `population` to have it checked.
#'
#' @param data A data frame.
#' @param strata Character vector of the categorical columns to tabulate (at most two for
#'   `method = "suppress"`). Missing values count as a category `NA`.
#' @param k Counts below `k` are unsafe (the package's boundary rule: a cell conforms when
#'   its count is at least `k`). The default 6 is the standard's rule "no cell may be
#'   <= 5".
#' @param method `"suppress"`, `"round"`, `"barnardise"` or `"none"`.
#' @param base Rounding base for `method = "round"`.
#' @param prob Probability that a cell is changed, for `method = "barnardise"`.
#' @param zeros Treat zero counts as unsafe (the standard's rule covers them)? Set to
#'   `FALSE` for structural zeros that disclose nothing.
#' @param plan Optional NHS ISB 1523 aggregate plan, 1, 2, 4 or 5: its rules are checked
#'   and reported.
#' @param population Optional estimate of the smallest underlying population that a
#'   published cell relates to (see Details).
#' @param vars Deprecated name of `strata`.
#' @param threshold Deprecated: counts `<= threshold` were unsafe; `threshold = t` is
#'   `k = t + 1`.
#' @return A data frame of class `detanon_safe_table` with one row per cell and total:
#'   the `strata` (totals labelled `"Total"`; classed values such as dates or integer64
#'   are tabulated by value and labelled by their text; a column named `n` or `status` is
#'   an error, as it would be overwritten), `n` (the published count; `NA` where
#'   suppressed) and `status` (`""`, `"primary"` or `"secondary"` suppression,
#'   `"rounded"` or `"barnardised"`). Attributes: `method`, `k`, and `plan_check`
#'   (the plan's items, see [nhs_check()] for the individual-level plans). Suppressed
#'   cells carry no count anywhere in the object. Print it to see the table with
#'   suppressed cells marked `X`.
#' @examples
#' d <- titanic_paper()
#' safe_table(d, c("Pclass", "Family"), k = 6)
#' tab <- safe_table(d[d$Age > 60, ], c("Pclass", "Sex"), plan = 2, population = 500)
#' tab
#' attr(tab, "plan_check")
#' @family tables
#' @export
safe_table <- function(data, strata, k = 6, method = c("suppress", "round", "barnardise", "none"),
                       base = 5, prob = 0.2, zeros = TRUE, plan = NULL, population = NULL,
                       vars, threshold) {
  if (!missing(vars)) strata <- renamed_arg(vars, "vars", "strata", !missing(strata))
  if (!missing(threshold)) {
    threshold <- check_whole(threshold, "threshold", min = 0, max = .Machine$integer.max - 1)
    k <- renamed_arg(threshold + 1L, "threshold", "k", !missing(k),
                     paste0(" (`threshold = ", threshold, "` is `k = ", threshold + 1L, "`)"))
  }
  check_data_frame(data, "data")
  if (missing(strata)) stop_arg("`strata` is missing: name the categorical columns to tabulate.")
  if (is.character(k) && length(k) == 1L && k %in% safe_table_methods) {
    stop_arg("`k` is \"", k, "\", which is a method: `method` now comes after `k`; write `method = \"",
             k, "\"`.")
  }
  vars <- check_columns(strata, data, "strata")
  if (!length(vars)) stop_arg("`strata` is empty: name at least one column to tabulate.")
  check_strata_columns(data, vars)
  k <- check_whole(k, "k", min = 1)
  method <- match_choice(method, "method", safe_table_methods)
  base <- check_whole(base, "base", min = 1)
  prob <- check_number(prob, "prob", lower = 0, upper = 1)
  zeros <- check_flag(zeros, "zeros")
  if (!is.null(plan) && !(is.numeric(plan) && length(plan) == 1L && plan %in% c(1, 2, 4, 5))) {
    stop_arg("`plan` must be one of the aggregate plans 1, 2, 4 or 5 of ISB 1523 (or NULL), not ",
             show_value(plan), ". Plans 3 and 6 are individual-level: use nhs_check().")
  }
  if (!is.null(population)) population <- check_number(population, "population", lower = 0)
  if (method == "suppress" && length(vars) > 2L) {
    stop_arg("`method = \"suppress\"` handles one or two `strata`, not ", length(vars),
             ". Combine variables into one column first, or use `method = \"round\"`.")
  }
  check_no_clash(strata, c("n", "status"), "strata")
  if (!nrow(data)) stop_arg("`data` has no records to tabulate.", kind = "data")
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  f <- lapply(vars, function(v) addNA(table_factor(df[[v]], v), ifany = TRUE))
  names(f) <- vars
  counts <- table(f, useNA = "ifany")
  total_label <- "Total"
  if (any(vapply(dimnames(counts), function(l) total_label %in% l, logical(1)))) total_label <- "(Total)"
  ext <- stats::addmargins(counts, FUN = list(Total = sum), quiet = TRUE)
  dn <- dimnames(ext)
  for (i in seq_along(dn)) dn[[i]][length(dn[[i]])] <- total_label
  dimnames(ext) <- dn
  val <- array(as.numeric(ext), dim(ext), dimnames(ext))
  status <- array("", dim(ext), dimnames(ext))
  inner <- array(TRUE, dim(ext))
  for (i in seq_along(dim(ext))) {
    idx <- slice.index(inner, i) == dim(ext)[i]
    inner[idx] <- FALSE
  }
  if (method == "suppress") {
    primary <- val < k & (zeros | val > 0)
    status[primary] <- "primary"
    supp <- secondary_suppression(val, primary, inner)
    status[supp & !primary] <- "secondary"
    val[supp] <- NA_real_
  } else if (method == "round") {
    val <- base * floor(val / base + 0.5)
    status[] <- "rounded"
  } else if (method == "barnardise") {
    cells <- which(inner & val > 0)
    u <- stats::runif(length(cells))
    val[cells] <- val[cells] + ifelse(u < prob / 2, -1, ifelse(u < prob, 1, 0))
    val <- array(stats::addmargins(array(val[inner], dim(counts)), quiet = TRUE), dim(ext), dimnames(ext))
    status[] <- "barnardised"
  }
  out <- as.data.frame(as.table(array(0, dim(ext), dimnames(ext))), stringsAsFactors = FALSE)
  out$Freq <- NULL
  names(out) <- vars
  out$n <- as.vector(val)
  out$status <- as.vector(status)
  class(out) <- c("detanon_safe_table", "data.frame")
  attr(out, "method") <- method
  attr(out, "k") <- k
  attr(out, "plan_check") <- aggregate_plan_check(plan, population, method, k, out)
  out
}

# The choices of safe_table()'s `method`.
safe_table_methods <- c("suppress", "round", "barnardise", "none")

# A factor of the distinct values of `x` in their sorted order. Classed vectors (Date,
# POSIXct, integer64) are matched by their text, not by the numbers they are stored as
# (factor() would match a Date's text to its day count and put every record in NA).
table_factor <- function(x, name) {
  if (is.factor(x)) return(x)
  if (!is.object(x)) return(factor(x, levels = sort_unique_radix(x[!is.na(x)])))
  if (inherits(x, "integer64") && !requireNamespace("bit64", quietly = TRUE)) {
    stop_arg("`strata` column `", name, "` is integer64: install the package bit64 to tabulate it, ",
             "or convert it with as.character().", kind = "column")
  }
  miss <- is.na(x)
  lab <- as.character(sort(unique(x[!miss])))
  if (anyDuplicated(lab)) {
    stop_arg("`strata` column `", name, "` (", class(x)[1L], ") has distinct values with the same text; ",
             "convert it with as.character() or format() first.", kind = "column")
  }
  code <- match(as.character(x), lab)
  code[miss] <- NA_integer_
  factor(lab[code], levels = lab)
}

# Secondary suppression. `val` holds the table with totals (last index of every dimension),
# `primary` the unsafe entries. Returns the logical array of suppressed entries.
secondary_suppression <- function(val, primary, inner) {
  supp <- primary
  if (!any(supp)) return(supp)
  d <- dim(val)
  if (length(d) == 1L) {
    # one equation: sum of cells = total; exactly one unknown would be recovered
    while (sum(supp) == 1L) {
      cand <- which(!supp)
      pick <- cand[order(!inner[cand], val[cand] == 0, val[cand], cand)][1L]
      supp[pick] <- TRUE
    }
    return(supp)
  }
  # two-way: signed table whose rows and columns all sum to zero; an unknown entry is
  # determined exactly when it is a bridge of the bipartite graph rows--columns whose
  # edges are the suppressed entries
  nr <- d[1L]
  nc <- d[2L]
  row_of <- row(val)
  col_of <- col(val)
  repeat {
    e <- which(supp)
    from <- row_of[e]
    to <- nr + col_of[e]
    br <- graph_bridges(from, to, nr + nc)
    if (!any(br)) break
    b <- which(br)[1L]
    comp <- graph_components(from[-b], to[-b], nr + nc)
    cr <- comp[from[b]]
    cc <- comp[to[b]]
    free <- which(!supp)
    crow <- comp[row_of[free]]
    ccol <- comp[nr + col_of[free]]
    cand <- free[(crow == cr & ccol == cc) | (crow == cc & ccol == cr)]
    if (!length(cand)) cand <- free[crow %in% c(cr, cc) | ccol %in% c(cr, cc)]
    if (!length(cand)) cand <- free # not reached: a fully suppressed table has no bridge
    pick <- cand[order(!inner[cand], val[cand] == 0, val[cand], cand)][1L]
    supp[pick] <- TRUE
  }
  supp
}

# Bridges of an undirected graph without parallel edges (iterative Tarjan).
graph_bridges <- function(from, to, n_nodes) {
  m <- length(from)
  is_bridge <- logical(m)
  if (!m) return(is_bridge)
  src <- c(from, to)
  nbr <- c(to, from)
  edge <- c(seq_len(m), seq_len(m))
  o <- order(src, edge)
  nbr <- nbr[o]
  edge <- edge[o]
  start <- c(0L, cumsum(tabulate(src, n_nodes)))
  disc <- integer(n_nodes)
  low <- integer(n_nodes)
  timer <- 0L
  st_v <- st_pe <- st_pos <- integer(n_nodes)
  for (s in seq_len(n_nodes)) {
    if (disc[s] > 0L || start[s + 1L] == start[s]) next
    top <- 1L
    st_v[1L] <- s
    st_pe[1L] <- 0L
    st_pos[1L] <- start[s] + 1L
    timer <- timer + 1L
    disc[s] <- low[s] <- timer
    while (top > 0L) {
      v <- st_v[top]
      pos <- st_pos[top]
      if (pos <= start[v + 1L]) {
        st_pos[top] <- pos + 1L
        w <- nbr[pos]
        e <- edge[pos]
        if (e == st_pe[top]) next
        if (disc[w] > 0L) {
          low[v] <- min(low[v], disc[w])
        } else {
          timer <- timer + 1L
          disc[w] <- low[w] <- timer
          top <- top + 1L
          st_v[top] <- w
          st_pe[top] <- e
          st_pos[top] <- start[w] + 1L
        }
      } else {
        if (top > 1L) {
          p <- st_v[top - 1L]
          low[p] <- min(low[p], low[v])
          if (low[v] > disc[p]) is_bridge[st_pe[top]] <- TRUE
        }
        top <- top - 1L
      }
    }
  }
  is_bridge
}

# Connected-component label of every node (isolated nodes are their own component).
graph_components <- function(from, to, n_nodes) {
  parent <- seq_len(n_nodes)
  root <- function(i) {
    while (parent[i] != i) i <- parent[i]
    i
  }
  for (j in seq_along(from)) {
    a <- root(from[j])
    b <- root(to[j])
    if (a != b) parent[max(a, b)] <- min(a, b)
  }
  vapply(seq_len(n_nodes), root, integer(1))
}

aggregate_plan_check <- function(plan, population, method, k, out) {
  if (is.null(plan)) return(NULL)
  limit <- if (plan %in% c(1, 2)) 1000 else 10000
  risk <- if (plan %in% c(1, 2)) "normal" else "high"
  needs_sdc <- plan %in% c(2, 5)
  pop_rule <- if (needs_sdc) {
    sprintf("Cells to be published relate to population <= %s people", format(limit, big.mark = ","))
  } else {
    sprintf("Cells to be published relate to population > %s people", format(limit, big.mark = ","))
  }
  pop_status <- if (is.null(population)) "not checked" else if (needs_sdc || population > limit) "pass" else "fail"
  pop_detail <- if (is.null(population)) {
    "the underlying population is not in the data: give your estimate in `population`"
  } else if (!needs_sdc && population <= limit) {
    sprintf("population %s <= %s: use plan %d (with statistical disclosure control)",
            format(population, big.mark = ","), format(limit, big.mark = ","), plan + 1)
  } else {
    sprintf("population %s", format(population, big.mark = ","))
  }
  published <- out$n[!is.na(out$n)]
  single <- method %in% c("none") && any(published == 1)
  items <- data.frame(
    item = c("Population", "Aggregation", "Statistical disclosure control"),
    requirement = c(pop_rule, "No cell in the table(s) output may relate to a single individual.",
                    if (needs_sdc) "No cell in the aggregate data output may be <= 5." else
                      "Not required by the plan."),
    status = c(pop_status, if (single) "fail" else "pass", "pass"),
    detail = c(pop_detail,
               if (single) "some published counts are 1" else
                 if (method == "none") "no published count is 1" else sprintf("counts protected by `method = \"%s\"`", method),
               ""),
    stringsAsFactors = FALSE
  )
  if (needs_sdc) {
    if (method == "none") {
      items$status[3L] <- "fail"
      items$detail[3L] <- "no disclosure control applied: choose method \"suppress\", \"round\" or \"barnardise\""
    } else if (method == "suppress" && k < 6) {
      items$status[3L] <- "fail"
      items$detail[3L] <- sprintf("k = %d < 6: published cells may be <= 5", k)
    } else if (method == "suppress") {
      items$detail[3L] <- "cells <= 5 suppressed, with secondary suppression against differencing"
    } else if (method == "round") {
      items$detail[3L] <- "all cells rounded: published small values are not true counts"
    } else {
      items$status[3L] <- "review"
      items$detail[3L] <- "Barnardisation changes cells by at most 1: small cells stay near their true value"
    }
  }
  structure(list(plan = plan, risk = risk, items = items,
                 conforms = !any(items$status %in% c("fail")) && !any(items$status == "not checked")),
            class = "detanon_plan_check")
}

#' @export
print.detanon_safe_table <- function(x, ...) {
  vars <- setdiff(names(x), c("n", "status"))
  method <- attr(x, "method")
  shown <- ifelse(is.na(x$n), "X", format(x$n, trim = TRUE))
  if (length(vars) <= 2L) {
    if (length(vars) == 1L) {
      m <- matrix(shown, ncol = 1L, dimnames = list(x[[vars]], "n"))
      names(dimnames(m)) <- c(vars, "")
    } else {
      r <- unique(x[[vars[1L]]])
      cl <- unique(x[[vars[2L]]])
      m <- matrix(shown, length(r), length(cl), dimnames = list(r, cl))
      names(dimnames(m)) <- vars
    }
    print(noquote(m), right = TRUE)
  } else {
    print(structure(x, class = "data.frame"), row.names = FALSE)
  }
  if (method == "suppress") {
    cat(sprintf("X = suppressed: %d primary (count < k = %d), %d secondary\n",
                sum(x$status == "primary"), attr(x, "k"), sum(x$status == "secondary")))
  } else if (method != "none") {
    cat(sprintf("method: %s\n", method))
  }
  if (!is.null(attr(x, "plan_check"))) print(attr(x, "plan_check"))
  invisible(x)
}

#' @export
print.detanon_plan_check <- function(x, ...) {
  if (!is.null(x$plan)) {
    cat(sprintf("NHS ISB 1523 plan %s (re-identification risk %s)\n", x$plan, x$risk))
  }
  for (i in seq_len(nrow(x$items))) {
    it <- x$items[i, ]
    cat(sprintf("  [%s] %s: %s\n", toupper(it$status), it$item, it$requirement))
    if (nzchar(it$detail)) cat(sprintf("         %s\n", it$detail))
  }
  cat(if (x$conforms) "  => conforms\n" else "  => does NOT conform (see the items above)\n")
  invisible(x)
}
