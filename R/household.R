# Households in the masking verbs. Every verb with a `household` argument starts with
#   if (!is.null(household)) return(household_verb(<verb>, data, household, match.call(), parent.frame()))
# household_verb() finds the household-level columns among those the verb changes (the
# columns constant within every household of the input) and runs the verb so that they
# stay constant within every household of the release:
# * the continuous verbs (anonymise(), anonymise_mdav(), anonymise_keyed(),
#   anonymise_adaptive()) and anonymise_pram() mask the person-level columns record by
#   record, and the household-level columns on the household table (one record per
#   household, the first), within the household-level strata only, and copy them back to
#   every member;
# * suppress_local() suppresses as without households and then suppresses a
#   household-level key for every member of a household where it suppressed it for one,
#   repeating until the goal (k-anonymity, or the risk threshold) is met again (a
#   suppression only widens the matches, except where it leaves a record with every key
#   missing).

# The column that carries each record's row through the verb's passes.
household_row_col <- ".detanon_person"

household_verb <- function(fun, data, household, call, env) {
  args <- sdc_args(call, env, skip = c("data", "household"))
  check_data_frame(data, "data")
  h <- check_household(data, household, strata = NULL, weights = NULL)
  if (household_row_col %in% names(data)) {
    stop_arg("`data` has a column named `", household_row_col, "`, which detanon uses itself; rename it.",
             kind = "column")
  }
  kind <- if (identical(fun, suppress_local)) "suppress"
          else if (identical(fun, anonymise_pram)) "pram"
          else "numeric"
  # the columns the verb reads, never the household ids
  strata <- if (is.null(args[["strata"]]) && kind != "pram") setdiff(default_strata(data), household)
            else args[["strata"]]
  if (household %in% strata) {
    stop_arg("`household` (", household, ") must not be one of `strata`.", kind = "column")
  }
  args["strata"] <- list(check_columns(strata, data, "strata"))
  if (kind == "pram" && is.null(args[["vars"]])) return(do.call(fun, c(list(data = data), args))) # its error
  if (kind == "numeric") {
    if (is.null(args[["vars"]])) args["vars"] <- list(setdiff(default_vars(data), c(strata, household)))
    check_identifiers <- if (is.null(args[["check_identifiers"]])) TRUE else args[["check_identifiers"]]
    check_flag(check_identifiers, "check_identifiers")
    if (check_identifiers) warn_identifiers(data, args[["vars"]], strata)
    args["check_identifiers"] <- list(FALSE)
  }
  g <- codes_of(h)
  if (kind == "suppress") return(household_suppress(fun, data, household, g, args))
  args["vars"] <- list(check_columns(args[["vars"]], data, "vars"))
  if (household %in% args[["vars"]]) {
    stop_arg("`household` (", household, ") must not be one of `vars`.", kind = "column")
  }
  if ("seed" %in% names(args)) { # one random stream for both passes
    stir_seed(args[["seed"]])
    args["seed"] <- list(NULL)
  }
  if (!length(args[["vars"]])) return(do.call(fun, c(list(data = data), args))) # its error
  hv <- household_level(data, args[["vars"]], g)
  pv <- setdiff(args[["vars"]], hv)
  df <- as.data.frame(data)
  df[[household_row_col]] <- seq_len(nrow(df))
  person <- if (length(pv)) do.call(fun, c(list(data = df), utils::modifyList(args, list(vars = pv)))) else df
  info <- if (length(pv)) release_info(person)
  out <- as.data.frame(person)
  if (length(hv)) {
    first <- !duplicated(g)
    table <- df[first, , drop = FALSE]
    hargs <- args
    hargs$vars <- hv
    for (a in intersect(c("strata", "keys"), names(args))) {
      if (!is.null(args[[a]])) hargs[a] <- list(household_level(data, args[[a]], g))
    }
    hh <- do.call(fun, c(list(data = table), hargs))
    hinfo <- release_info(hh)
    if (is.null(info)) info <- hinfo
    info$counts$household_counts <- hinfo$counts
    hh <- as.data.frame(hh)
    # back to every member: the household-level columns the verb masked or restratified
    at <- match(g[out[[household_row_col]]], g[hh[[household_row_col]]])
    out <- out[!is.na(at), , drop = FALSE]
    at <- at[!is.na(at)]
    for (v in c(hv, hargs$strata)) out[[v]] <- hh[[v]][at]
  }
  out[[household_row_col]] <- NULL
  if (kind == "pram") info$counts$n_changed <- household_changed(data, out, args[["vars"]])
  if (!is.null(info$counts$n_suppressed)) info$counts$n_suppressed <- nrow(data) - nrow(out)
  info$counts$n <- nrow(out)
  info$counts$n_households <- max(c(0L, g))
  as_release(as_release_frame(out, data), info$verb,
             settings = c(utils::modifyList(info$settings, list(vars = args[["vars"]])),
                          list(household = household, household_vars = hv)),
             counts = info$counts, stats = info$stats)
}

# The columns of `cols` that are constant within every household (ids `g`), when some
# household has two or more records (a missing value is a value of its own).
household_level <- function(data, cols, g) {
  if (!length(cols) || !anyDuplicated(g)) return(character())
  n_g <- max(g)
  keep <- vapply(cols, function(v) max(group_ids(list(g, codes_of(data[[v]])))) == n_g, logical(1))
  cols[keep]
}

# Cells of `cols` that differ between `data` and the release `out` (same rows).
household_changed <- function(data, out, cols) {
  sum(vapply(cols, function(v) {
    a <- as.character(data[[v]])
    b <- as.character(out[[v]])
    sum(xor(is.na(a), is.na(b)) | (!is.na(a) & !is.na(b) & a != b))
  }, numeric(1)))
}

# suppress_local() with households: suppress, give a household-level key suppressed for
# one member to every member, and again until the goal is met.
household_suppress <- function(fun, data, household, g, args) {
  strata <- args[["strata"]]
  hv <- household_level(data, strata, g)
  k <- args[["k"]]
  if (is.null(k)) k <- formals(fun)$k
  w <- if (!is.null(args[["weights"]])) check_weights(data, args[["weights"]], strata)
  out <- data
  repeat {
    out <- suppressMessages(do.call(fun, c(list(data = out), args)), classes = "detanon_message_suppress")
    info <- release_info(out)
    spread <- FALSE
    for (v in hv) {
      x <- out[[v]]
      hit <- unique(g[is.na(x)])
      miss <- g %in% hit & !is.na(x)
      if (any(miss)) {
        x[miss] <- NA
        out[[v]] <- x
        spread <- TRUE
      }
    }
    if (!spread) break
    if (suppress_done(out, strata, k, args[["threshold"]], w)) break
  }
  by_key <- vapply(strata, function(v) sum(is.na(out[[v]]) & !is.na(data[[v]])), integer(1))
  if (sum(by_key)) {
    inform_detanon("suppressed ", plural(sum(by_key), "cell"), " (",
                   paste0("`", strata, "` ", by_key, collapse = ", "), ") for ",
                   suppress_goal(k, args[["threshold"]]), ", household-level keys for whole households.",
                   kind = "suppress", fields = list(suppressed = by_key))
  }
  codes <- key_code_matrix(out, strata)
  counts <- utils::modifyList(info$counts, list(n_changed = sum(by_key), changed_by_key = by_key,
                                                min_size = if (nrow(out)) min(wildcard_counts(codes)) else 0L,
                                                n_households = max(c(0L, g))))
  if (!is.null(counts$max_risk)) counts$max_risk <- if (nrow(out)) max(suppress_risk(codes, w)) else 0
  as_release(as_release_frame(as.data.frame(out), data), "suppress_local",
             settings = c(info$settings, list(household = household, household_vars = hv)), counts = counts)
}

# Does `out` meet suppress_local()'s goal: k-anonymity, or with `threshold` every
# individual risk (weights `w`) at most the threshold?
suppress_done <- function(out, strata, k, threshold, w) {
  codes <- key_code_matrix(out, strata)
  if (is.null(threshold)) min(wildcard_counts(codes)) >= k else max(suppress_risk(codes, w)) <= threshold
}
