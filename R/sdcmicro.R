# sdcMicro workflows: the verbs and measures take an `sdcMicroObj` (package sdcMicro, in
# Suggests) as their data. One adapter serves them all: every verb starts with
#   if (is_sdc(data)) return(sdc_verb(<verb>, data, match.call(), parent.frame()))
# and every measure with
#   if (is_sdc(original)) return(sdc_measure(<measure>, original, match.call(), parent.frame()))
# sdc_verb() builds the data frame the verb reads (the object's manipulated key variables
# as `strata`, its numerical variables as `vars`), runs the verb on it, and writes the
# release back into the object the way sdcMicro's own numerical methods do
# (nextSdcObj() for undolast(), set.sdcMicroObj("manipNumVars"), then dRisk() and
# dUtility()).

#' Use detanon on an sdcMicroObj
#'
#' Many custodians keep a whole release in an `sdcMicroObj` of the package sdcMicro: key
#' variables recoded and locally suppressed, numerical variables, weights, household ids,
#' and the risk and utility that `sdcMicro::report()` shows. The masking verbs
#' [anonymise()], [anonymise_mdav()], [anonymise_keyed()], [anonymise_adaptive()],
#' [anonymise_keps()], [stir()], [blend_outliers()], the categorical verbs
#' [suppress_local()] and [anonymise_pram()], and the search [tune_release()] accept such
#' an object as `data`, the measures [risk_rmd()], [risk_linkage()] and [assess()] accept
#' it as `original` (alone: it holds both sides), and [risk_frequencies()] and
#' [risk_individual()] as `data`.
#'
#' @section What a verb reads and writes:
#' * `strata` default to the object's key variables **as manipulated** (after its global
#'   recoding and local suppression); `vars` default to its numerical variables, as
#'   manipulated so far (so verbs compose, as sdcMicro's own numerical methods do). Other
#'   columns may be named only among these: `strata` among the key variables, `vars` (and
#'   `quasi`) among the numerical variables. All other arguments are the verb's own.
#' * Locally suppressed key values are `NA` and are passed to the verb as missing values
#'   of `strata`, which it treats by its own policy: [anonymise()], [anonymise_adaptive()]
#'   and [anonymise_keps()] make `NA` a level of its own, [stir()] and [blend_outliers()]
#'   stop. sdcMicro's k-anonymity counts such an `NA` as a wildcard (it matches every
#'   value), so a stratum can be smaller here than sdcMicro reports: a message of class
#'   `detanon_message_na` counts the suppressed values of each key variable used as
#'   `strata` (its field `n_na`). Missing numerical values follow the verb's `na` argument.
#' * By default every key variable is a stratum; with many key variables most
#'   combinations are rare, and an error about strata smaller than `k` then says to name
#'   fewer in `strata` (e.g. `strata = c("urbrur", "sex")` for sdcMicro's `testdata`) or
#'   to recode them first.
#' * The masked values land in the slot `manipNumVars`. When the verb changed key values
#'   (`small_strata = "merge"` of [anonymise()], the blending of [stir()] and
#'   [blend_outliers()]) they land in `manipKeyVars`, and sdcMicro's key-variable risk is
#'   recomputed (`sdcMicro::calcRisks()`).
#' * Records the verb removes (`na = "complete"`, `small_strata = "suppress"`, the
#'   c-confidence suppression of [anonymise_keps()]) cannot leave an `sdcMicroObj`: they
#'   stay with every numerical variable set to `NA` (their key values and other columns
#'   stay as sdcMicro holds them), and a message (class `detanon_message_suppress`) says
#'   how many. sdcMicro's `dRisk()` counts such records as at risk.
#' * [anonymise_keps()] shuffles the rows of its release; in the object each record keeps
#'   its row (sdcMicro aligns every slot by row), so shuffle on export with
#'   `sdcMicro::extractManipData(obj, randomizeRecords = "simple")` (or `"byHH"`).
#' * The previous state is kept for `sdcMicro::undolast()` (`sdcMicro::nextSdcObj()`, which
#'   honours the object's options `noUndo` and `max_size`), and sdcMicro's `dRisk()` and
#'   `dUtility()` are recomputed, as its own numerical methods do, so that `report()`
#'   shows the new state. The release metadata of the verb (its settings and aggregate
#'   counts, as [release_info()] gives them; never per-record information) are kept in
#'   the slot `additionalResults` (see [sdc_results()]); measure results attached before
#'   are dropped there, since they describe the previous state (`undolast()` restores them).
#' * Weights (`weightVar`), household ids (`hhId`) and the strata variable (`strataVar`)
#'   are kept unchanged. The household ids are the `household` of the verbs that have
#'   one ([anonymise()], [anonymise_mdav()], [anonymise_keyed()],
#'   [anonymise_adaptive()], [anonymise_pram()], [suppress_local()]): a variable that
#'   every household shares stays shared. The other verbs mask the records of a household
#'   one by one (a variable shared by a household can get different values within it: a
#'   message counts the households concerned). The masking verbs do not use the weights
#'   (every record counts alike) nor the strata variable (only the key variables
#'   stratify); [tune_release()], [risk_battery()] and [release_report()] take the weights
#'   as their `weights` (the negative-binomial risk of the released keys; published as
#'   given, never a key of the intruder). Each one that is set and not used gives a message of class
#'   `detanon_message_ignored` (silence it with
#'   `suppressMessages(expr, classes = "detanon_message_ignored")`).
#' * [suppress_local()] and [anonymise_pram()] change key variables: they read the key
#'   variables as manipulated (`strata` of [suppress_local()] default to all of them;
#'   `vars` of [anonymise_pram()] must name some, its `strata` may also name the strata
#'   variable), write their release into `manipKeyVars`, and sdcMicro's risk is
#'   recomputed (`sdcMicro::calcRisks()`, with the object's weights and households).
#'   [risk_frequencies()] and [risk_individual()] measure the key variables as
#'   manipulated with the object's weights and household ids.
#'
#' [tune_release()] returns its report (a `detanon_tuned` object) whose `release` is the
#' object with the chosen release written into it, or `NULL` when no candidate met the
#' limits.
#'
#' @section What a measure compares:
#' `original` is the object's numerical variables as in `origData`, `masked` the same
#' variables as manipulated; both carry the manipulated key variables as `strata` (the
#' intruder is assumed to know the published recoding; a suppressed key value is `NA` on
#' both sides). Records with a missing value in a measured variable on either side (e.g.
#' records a verb removed) are left out, with a message of class `detanon_message_na`.
#' Household ids are not used, nor are weights except by [risk_battery()] (a
#' `detanon_message_ignored`).
#'
#' `sdc_extract()` returns these data frames: `"manipulated"` is exactly what a verb reads
#' and `"original"` what the measures compare it with.
#'
#' @param obj An `sdcMicroObj` (from `sdcMicro::createSdcObj()`).
#' @param which `"manipulated"` (the key variables and numerical variables as
#'   manipulated) or `"original"` (the manipulated key variables with the numerical
#'   variables of `origData`).
#' @return `sdc_extract()`: a data.frame with one row per record of the object (row names
#'   1 to n), the key variables and then the numerical variables, in the object's order.
#' @family sdcMicro
#' @seealso [sdc_attach()] to keep measure results with the object and [sdc_report()] to
#'   write them beside sdcMicro's report.
#' @examplesIf requireNamespace("sdcMicro", quietly = TRUE)
#' data(testdata, package = "sdcMicro")
#' sdc <- sdcMicro::createSdcObj(testdata, keyVars = c("urbrur", "sex"),
#'                               numVars = c("expend", "income", "savings"))
#' sdc <- anonymise(sdc, k = 3)
#' head(sdcMicro::extractManipData(sdc)[c("expend", "income", "savings")])
#' sdc@risk$numeric # sdcMicro's dRisk() on the release
#' risk_linkage(sdc)$rate
#' sdc <- sdcMicro::undolast(sdc) # back to the unmasked state
#' head(sdc_extract(sdc))
#' @export
sdc_extract <- function(obj, which = c("manipulated", "original")) {
  check_sdc(obj, "obj")
  which <- match_choice(which, "which")
  p <- sdc_parts(obj)
  sdc_frame(p, if (which == "manipulated") p$manip_nums else p$orig[p$nums])
}

is_sdc <- function(x) isS4(x) && inherits(x, "sdcMicroObj")

check_sdc <- function(obj, arg) {
  if (!is_sdc(obj)) stop_arg("`", arg, "` must be an sdcMicroObj (sdcMicro::createSdcObj()), not ",
                             class_label(obj), ".")
  if (!requireNamespace("sdcMicro", quietly = TRUE)) {
    stop_arg("an sdcMicroObj needs the package sdcMicro: install.packages(\"sdcMicro\").")
  }
  invisible(obj)
}

sdc_get <- function(obj, type) sdcMicro::get.sdcMicroObj(obj, type = type)

# A tune_release() result whose release is an sdcMicroObj (what tune_release(sdc) returns)?
is_sdc_tuned <- function(x) inherits(x, "detanon_tuned") && is_sdc(x$release)

# The sdcMicroObj of `obj`: itself, or the release of a tune_release(sdc) result.
sdc_object <- function(obj, arg) {
  if (inherits(obj, "detanon_tuned")) {
    if (is.null(obj$release)) {
      stop_arg("`", arg, "` is a tune_release() result with no release (no candidate met every limit), ",
               "so there is no sdcMicroObj to use; loosen the limits or try other `methods`.", kind = "data")
    }
    if (!is_sdc(obj$release)) {
      stop_arg("`", arg, "` is a tune_release() result of a data frame, not of an sdcMicroObj; ",
               "pass an sdcMicroObj (or tune_release(sdc)'s result).")
    }
    return(obj$release)
  }
  check_sdc(obj, arg)
}

# What an sdcMicroObj holds, by name: the original data, the key and numerical variables
# (names, and their manipulated values), weights, household ids and strata variables.
sdc_parts <- function(obj) {
  orig <- sdc_get(obj, "origData")
  cn <- names(orig)
  idx <- function(type) cn[as.integer(sdc_get(obj, type))]
  keys <- idx("keyVars")
  nums <- idx("numVars")
  manip_keys <- sdc_get(obj, "manipKeyVars")
  manip_nums <- sdc_get(obj, "manipNumVars")
  if (is.null(manip_keys) || !length(keys)) manip_keys <- orig[0L]
  if (is.null(manip_nums) || !length(nums)) manip_nums <- orig[0L]
  list(orig = orig, n = nrow(orig), keys = keys, nums = nums,
       manip_keys = as.data.frame(manip_keys)[keys], manip_nums = as.data.frame(manip_nums)[nums],
       weight = idx("weightVar"), hh = idx("hhId"), strata_var = idx("strataVar"))
}

# The key variables and the numerical columns `nums` as one plain data.frame, row names 1..n.
sdc_frame <- function(p, nums) {
  out <- c(as.list(p$manip_keys), as.list(nums))
  out <- lapply(out, function(v) {
    attr(v, "names") <- NULL
    v
  })
  structure(out, names = c(names(p$manip_keys), names(nums)), class = "data.frame",
            row.names = .set_row_names(p$n))
}

# The column that carries each record's row of the object through a verb (a verb keeps
# the columns it does not mask, in the order of the rows it releases).
sdc_row_col <- ".detanon_row"

# A masking verb `fun` called (`call`, from the caller's frame `env`) with an sdcMicroObj.
sdc_verb <- function(fun, obj, call, env) {
  check_sdc(obj, "data")
  args <- sdc_args(call, env, skip = "data")
  formals_ <- names(formals(fun))
  p <- sdc_parts(obj)
  if (!length(p$nums)) {
    stop_arg("the sdcMicroObj in `data` has no numerical variables (numVars) to mask; create it with ",
             "`numVars` (sdcMicro::createSdcObj()).", kind = "column")
  }
  quasi <- args[["quasi"]]
  if (!is.null(quasi)) quasi <- sdc_names(quasi, p$nums, "quasi", "numerical variables (numVars)")
  args["vars"] <- list(if (is.null(args[["vars"]])) setdiff(p$nums, quasi)
                       else sdc_names(args[["vars"]], p$nums, "vars", "numerical variables (numVars)"))
  all_keys <- FALSE
  if (!is.null(args[["strata"]])) {
    args["strata"] <- list(sdc_names(args[["strata"]], p$keys, "strata", "key variables (keyVars)"))
  } else if (is.null(args[["classes"]])) {
    args["strata"] <- list(p$keys)
    all_keys <- length(p$keys) > 1L
  }
  # the identifier check, on the columns the verb sees (without the row column)
  df <- sdc_frame(p, p$manip_nums)
  if ("check_identifiers" %in% formals_) {
    check <- if (is.null(args[["check_identifiers"]])) TRUE else args[["check_identifiers"]]
    if (isTRUE(check)) warn_identifiers(df, c(args[["vars"]], quasi), args[["strata"]])
    args["check_identifiers"] <- list(FALSE)
  }
  if (sdc_row_col %in% names(df)) {
    stop_arg("the sdcMicroObj has a variable named `", sdc_row_col, "`, which detanon uses itself; rename it.",
             kind = "column")
  }
  df[[sdc_row_col]] <- seq_len(p$n)
  # the sampling weights, for the verbs that take them (tune_release()): published as given
  p$weight_used <- sdc_use_weights(p, fun, args)
  if (p$weight_used) {
    df[[p$weight]] <- as.vector(p$orig[[p$weight]])
    args["weights"] <- list(p$weight)
  }
  # the household ids keep household-level variables constant within households
  p$hh_used <- length(p$hh) && "household" %in% formals_ && is.null(args[["household"]]) &&
    !p$hh %in% names(df)
  if (p$hh_used) {
    df[[p$hh]] <- as.vector(p$orig[[p$hh]])
    args["household"] <- list(p$hh)
  }
  sdc_warn_row_names(p)
  sdc_inform_ignored(p, "verb")
  sdc_inform_suppressed(df, args[["strata"]])
  res <- withCallingHandlers(do.call(fun, c(list(data = df), args)), detanon_error = function(e) {
    # every key variable stratifies by default: with many, most combinations are rare. An
    # error about small strata (anonymise()'s, or the `k_strata` of tune_release()) says so
    if (!all_keys || !(inherits(e, "detanon_error_small_strata") || grepl("`k_strata`", conditionMessage(e)))) {
      return()
    }
    stop_arg(sub("^[^:]*\\(\\): ", "", sub("\n$", "", conditionMessage(e))), "\nWith an sdcMicroObj every key ",
             "variable is a stratum unless `strata` names fewer: ", length(p$keys), " key variables (",
             quote_names(p$keys, max = 12L), ") make strata of fewer than k records. Name the few that ",
             "matter in `strata` (e.g. `strata = ", deparse(utils::head(p$keys, 2L)), "`), or recode them ",
             "first (sdcMicro::globalRecode(), sdcMicro::kAnon()).", kind = sub("^detanon_error_", "", class(e)[1L]))
  })
  masked <- c(args[["vars"]], quasi)
  if (is.data.frame(res)) return(sdc_insert(obj, p, res, masked))
  if (is.list(res) && is.data.frame(res$release)) { # tune_release(): the chosen release
    res$release <- sdc_insert(obj, p, res$release, masked)
    return(res)
  }
  res
}

# A categorical verb `fun` (suppress_local(), anonymise_pram()) called (`call`, from the
# caller's frame `env`) with an sdcMicroObj: it reads the manipulated key variables (with
# the household ids and the strata variable), and its release of them becomes
# manipKeyVars, with sdcMicro's risk recomputed (calcRisks(): with the object's weights
# and households).
sdc_key_verb <- function(fun, obj, call, env) {
  check_sdc(obj, "data")
  args <- sdc_args(call, env, skip = "data")
  p <- sdc_parts(obj)
  if (!length(p$keys)) {
    stop_arg("the sdcMicroObj in `data` has no key variables (keyVars) to ",
             if (identical(fun, suppress_local)) "suppress." else "post-randomise.", kind = "column")
  }
  what <- "key variables (keyVars)"
  if (identical(fun, suppress_local)) {
    strata <- args[["strata"]]
    args["strata"] <- list(if (is.null(strata)) p$keys else sdc_names(strata, p$keys, "strata", what))
  } else {
    if (!is.null(args[["vars"]])) args["vars"] <- list(sdc_names(args[["vars"]], p$keys, "vars", what))
    if (!is.null(args[["strata"]])) {
      args["strata"] <- list(sdc_names(args[["strata"]], c(p$keys, p$strata_var), "strata",
                                       "key variables (keyVars) or strata variable (strataVar)"))
    }
  }
  extra <- setdiff(c(p$hh, p$strata_var), p$keys)
  df <- sdc_frame(p, lapply(p$orig[extra], as.vector))
  if (length(p$hh) && is.null(args[["household"]])) args["household"] <- list(p$hh)
  if (length(p$weight) && !is.null(args[["threshold"]]) && is.null(args[["weights"]])) { # the risk's weights
    args["weights"] <- list(p$weight)
    df[[p$weight]] <- as.vector(p$orig[[p$weight]])
  }
  sdc_warn_row_names(p)
  res <- do.call(fun, c(list(data = df), args))
  keys <- p$manip_keys
  for (v in p$keys) {
    col <- keys[[v]]
    new <- res[[v]]
    keys[[v]] <- if (is.factor(col)) factor(as.character(new), levels = levels(col)) else new
  }
  attr(keys, "row.names") <- .set_row_names(p$n)
  info <- attr(res, "detanon", exact = TRUE)
  obj <- sdcMicro::nextSdcObj(obj)
  obj <- sdcMicro::set.sdcMicroObj(obj, type = "manipKeyVars", input = list(keys))
  add <- sdc_get(obj, "additionalResults")
  if (is.null(add)) add <- list()
  add$detanon <- list(release = sdc_release_record(info), results = list())
  obj <- sdcMicro::set.sdcMicroObj(obj, type = "additionalResults", input = list(add))
  sdcMicro::calcRisks(obj)
}

# The arguments of `call` other than `skip`, evaluated in the caller's frame `env` (once:
# the verb has not evaluated them before it dispatches).
sdc_args <- function(call, env, skip) {
  args <- as.list(call)[-1L]
  if (!is.null(names(args))) args <- args[!names(args) %in% skip]
  lapply(args, eval, envir = env)
}

# Column names `x` given for argument `arg`, which must be among `allowed`.
sdc_names <- function(x, allowed, arg, what) {
  if (!is.character(x) || anyNA(x)) {
    stop_arg("`", arg, "` must be a character vector of names, not ", show_value(x), ".")
  }
  bad <- setdiff(x, allowed)
  if (length(bad)) {
    stop_arg("with an sdcMicroObj, `", arg, "` must name its ", what, ", which are ",
             if (length(allowed)) quote_names(allowed, max = 12L) else "none", "; ", quote_names(bad),
             if (length(bad) == 1L) " is" else " are", " not.", kind = "column")
  }
  x
}

# sdcMicro publishes the row names of origData with extractManipData(): say so when they
# are not the row numbers (they may be identifiers).
sdc_warn_row_names <- function(p) {
  rn <- attr(p$orig, "row.names")
  if (is.character(rn) && !identical(rn, as.character(seq_len(p$n)))) {
    warn_detanon("the sdcMicroObj's origData has row names (e.g. \"", rn[1L], "\") that ",
                 "sdcMicro::extractManipData() publishes with the release; if they identify anyone, ",
                 "create the object from data without them (rownames(d) <- NULL).", kind = "identifier")
  }
}

# Whether the object's sampling weights go to `fun` as its `weights` (a column of sampling
# weights, default NULL: not the deprecated `weights` of anonymise_keps()), when the call
# names none and the weight variable is not among the columns the verb or measure reads.
sdc_use_weights <- function(p, fun, args) {
  f <- formals(fun)
  length(p$weight) == 1L && "weights" %in% names(f) && is.null(f[["weights"]]) && is.null(args[["weights"]]) &&
    !p$weight %in% c(p$keys, p$nums)
}

# Messages for what an sdcMicroObj holds and the verb or measure does not use.
sdc_inform_ignored <- function(p, what) {
  if (length(p$weight) && !isTRUE(p$weight_used)) {
    inform_detanon("the sampling weights `", p$weight, "` are not used: every record counts alike",
                   if (what == "verb") " (the object keeps the weights unchanged)." else ".",
                   kind = "ignored")
  }
  if (length(p$strata_var) && what == "verb") {
    inform_detanon("the strata variable ", quote_names(p$strata_var), " is not used: only the key ",
                   "variables stratify (make it a key variable to mask within it).", kind = "ignored")
  }
  if (length(p$hh) && what == "measure") {
    inform_detanon("the household ids `", p$hh, "` are not used: records are linked one by one.",
                   kind = "ignored")
  }
}

# sdcMicro's local suppression leaves NA in key variables, which its k-anonymity counts
# as a wildcard (matching every value); detanon's strata count NA as a value of its own, so
# a stratum can be smaller here than sdcMicro says. Said once, with the counts.
sdc_inform_suppressed <- function(df, strata) {
  if (!length(strata)) return(invisible())
  na <- vapply(df[strata], function(v) sum(is.na(v)), integer(1))
  if (!any(na > 0L)) return(invisible())
  na <- na[na > 0L]
  inform_detanon("the key variables hold ", plural(sum(na), "suppressed value"), " (NA: ",
                 paste0("`", names(na), "` ", na, collapse = ", "), "). sdcMicro's k-anonymity counts NA ",
                 "as a wildcard that matches every value; here NA is a category of its own, so strata with ",
                 "NA can be smaller than sdcMicro reports. Leave those variables out of `strata`, or ",
                 "recode instead of suppressing (sdcMicro::globalRecode()).", kind = "na",
                 fields = list(n_na = na))
}

# Write the release `res` (a data frame with the row column) of a verb that masked the
# numerical variables `masked` back into `obj`: manipNumVars (and manipKeyVars if the verb
# changed key values), the previous state for undolast(), sdcMicro's risk and utility.
sdc_insert <- function(obj, p, res, masked) {
  rows <- res[[sdc_row_col]]
  n <- p$n
  bad <- masked[!vapply(masked, function(v) is_continuous(res[[v]]), logical(1))]
  if (length(bad)) {
    stop_arg("the release has non-numeric values in ", quote_names(bad), ", which sdcMicro's numerical ",
             "variables cannot hold (e.g. `generalise = \"interval\"`); use a numeric form.", kind = "column")
  }
  pos <- match(seq_len(n), rows) # the release row of each record; NA where removed
  nums <- p$manip_nums
  for (v in masked) nums[[v]] <- as.vector(res[[v]])[pos]
  removed <- is.na(pos)
  if (any(removed)) {
    for (v in names(nums)) nums[[v]][removed] <- NA
    inform_detanon(plural(sum(removed), "record"), " removed from the release stay in the sdcMicroObj (it ",
                   "keeps every record) with their numerical variables set to NA; their key variables ",
                   "are kept as sdcMicro holds them.", kind = "suppress")
  }
  if (length(p$hh) && !isTRUE(p$hh_used)) sdc_inform_households(p, nums, masked, removed)
  attr(nums, "row.names") <- .set_row_names(n)
  keys <- p$manip_keys
  changed <- 0L
  for (v in intersect(names(keys), names(res))) {
    old <- keys[[v]][rows]
    new <- res[[v]]
    diff <- xor(is.na(old), is.na(new)) | (!is.na(old) & !is.na(new) & as.character(old) != as.character(new))
    if (any(diff)) {
      changed <- changed + sum(diff)
      col <- keys[[v]]
      col[rows[diff]] <- if (is.factor(col)) as.character(new[diff]) else new[diff]
      keys[[v]] <- col
    }
  }
  info <- attr(res, "detanon", exact = TRUE)
  obj <- sdcMicro::nextSdcObj(obj)
  obj <- sdcMicro::set.sdcMicroObj(obj, type = "manipNumVars", input = list(nums))
  if (changed) {
    attr(keys, "row.names") <- .set_row_names(n)
    obj <- sdcMicro::set.sdcMicroObj(obj, type = "manipKeyVars", input = list(keys))
  }
  add <- sdc_get(obj, "additionalResults")
  if (is.null(add)) add <- list()
  add$detanon <- list(release = sdc_release_record(info), results = list())
  obj <- sdcMicro::set.sdcMicroObj(obj, type = "additionalResults", input = list(add))
  if (changed) obj <- sdcMicro::calcRisks(obj) # key-variable risk, and dRisk()
  else obj <- sdcMicro::dRisk(obj)
  sdcMicro::dUtility(obj)
}

# The release metadata kept in the object: verb, settings, counts and aggregate stats,
# without the fingerprint (it describes the verb's data frame, not the object).
sdc_release_record <- function(info) {
  if (is.null(info)) return(NULL)
  list(verb = info$verb, settings = info$settings, counts = info$counts, stats = info$stats)
}

# release_report() called (`call`, from the frame `env`) with an sdcMicroObj or a
# tune_release(sdc) result as `original`: the object's original and manipulated values as
# the pair of data frames, the release metadata the last verb kept in the object, and the
# search (limits, frontier, verdict) when it is a tune_release() result.
sdc_release_report <- function(call, env) {
  args <- sdc_args(call, env, skip = character())
  src <- args[["original"]]
  if (!is.null(args[["masked"]])) {
    stop_arg("`original` is ", if (is_sdc(src)) "an sdcMicroObj" else "a tune_release() result of one",
             ", which holds both the original and the masked values: leave `masked` out.")
  }
  obj <- sdc_object(src, "original")
  original <- sdc_extract(obj, "original")
  masked <- sdc_extract(obj, "manipulated")
  p <- sdc_parts(obj)
  if (sdc_use_weights(p, release_report, args)) { # the sampling weights, published as given
    original[[p$weight]] <- masked[[p$weight]] <- as.vector(p$orig[[p$weight]])
    args$weights <- p$weight
  }
  rec <- sdc_get(obj, "additionalResults")$detanon$release
  if (!is.null(rec)) masked <- as_release(masked, rec$verb, rec$settings, rec$counts, rec$stats)
  if (inherits(src, "detanon_tuned")) {
    src$release <- masked
    masked <- src
  }
  args$original <- original
  args$masked <- masked
  do.call(release_report, args)
}

# Households whose members all shared a value of a masked variable before and no longer do
# (sorted by household and value, a household shares a value when its first and last agree).
sdc_inform_households <- function(p, nums, masked, removed) {
  hh <- p$orig[[p$hh]]
  big <- hh %in% hh[duplicated(hh)]
  if (!any(big)) {
    inform_detanon("the household ids `", p$hh, "` are not used (every household has one record).",
                   kind = "ignored")
    return(invisible())
  }
  h <- hh[big]
  shared <- function(x) {
    o <- order(h, radix_key(x), method = "radix")
    hs <- h[o]
    xs <- x[o]
    first <- xs[!duplicated(hs)]
    last <- xs[!duplicated(hs, fromLast = TRUE)]
    !is.na(first) & !is.na(last) & first == last
  }
  split_n <- 0L
  for (v in masked) {
    after <- nums[[v]]
    after[removed] <- NA
    split_n <- max(split_n, sum(shared(p$manip_nums[[v]][big]) & !shared(after[big])))
  }
  inform_detanon("the household ids `", p$hh, "` are not used: records are masked one by one",
                 if (split_n) paste0(", so ", plural(split_n, "household"), " whose members shared a value ",
                                     "of a masked variable no longer share it") else "",
                 " (the object keeps the ids unchanged).", kind = "ignored")
}

# A measure `fun` called with an sdcMicroObj as `original`: the original and manipulated
# numerical variables, with the manipulated key variables as strata.
sdc_measure <- function(fun, obj, call, env) {
  check_sdc(obj, "original")
  if ("masked" %in% names(call)) {
    stop_arg("`original` is an sdcMicroObj, which holds both the original and the masked values: ",
             "leave `masked` out (or pass two data frames).")
  }
  args <- sdc_args(call, env, skip = "original")
  p <- sdc_parts(obj)
  if (!length(p$nums)) {
    stop_arg("the sdcMicroObj in `original` has no numerical variables (numVars) to measure.", kind = "column")
  }
  vars <- if (is.null(args[["vars"]])) p$nums
          else sdc_names(args[["vars"]], p$nums, "vars", "numerical variables (numVars)")
  args["vars"] <- list(vars)
  if ("strata" %in% names(formals(fun))) {
    args["strata"] <- list(if (is.null(args[["strata"]])) p$keys
                           else sdc_names(args[["strata"]], p$keys, "strata", "key variables (keyVars)"))
  }
  original <- sdc_frame(p, p$orig[p$nums])
  masked <- sdc_frame(p, p$manip_nums)
  p$weight_used <- sdc_use_weights(p, fun, args)
  if (p$weight_used) {
    original[[p$weight]] <- masked[[p$weight]] <- as.vector(p$orig[[p$weight]])
    args["weights"] <- list(p$weight)
  }
  incomplete <- !stats::complete.cases(original[vars]) | !stats::complete.cases(masked[vars])
  if (any(incomplete)) {
    inform_detanon("left out ", plural(sum(incomplete), "record"), " with missing values in `vars` ",
                   "(original or manipulated; e.g. records removed from the release).", kind = "na")
    original <- original[!incomplete, , drop = FALSE]
    masked <- masked[!incomplete, , drop = FALSE]
    rownames(original) <- rownames(masked) <- NULL
  }
  sdc_inform_ignored(p, "measure")
  do.call(fun, c(list(original = original, masked = masked), args))
}

#' Keep measure results with an sdcMicroObj, and write them beside sdcMicro's report
#'
#' `sdc_attach()` stores the results of detanon measures (e.g. [assess()], [risk_rmd()],
#' [risk_linkage()], or any measure object with an `as.data.frame()` method) in the slot
#' `additionalResults` of an `sdcMicroObj`, where sdcMicro keeps its own warnings and
#' which `sdcMicro::extractManipData()` does not publish. `sdc_results()` returns them,
#' with the release metadata of the last detanon verb run on the object, as one data
#' frame. `sdc_report()` runs `sdcMicro::report()` and writes these results beside it, as
#' a CSV file and an HTML page (sdcMicro's report has no place for them).
#'
#' A result is stored as `as.data.frame(result)` when the object has such a method;
#' otherwise as its single numbers (fields of length one: `rate`, `risk1`, ...). Only
#' aggregate results belong here: the tables are written out as they are. Note that
#' sdcMicro's report itself is for the custodian, not for publication: it shows summaries
#' of the original numerical variables (their minimum and maximum are single records'
#' values) beside the modified ones.
#' Masking the object again with a detanon verb drops the attached results, since they
#' describe the previous state (`sdcMicro::undolast()` brings them back).
#'
#' @param obj An `sdcMicroObj`, or what [tune_release()] returns for one (its `release`
#'   is the object used).
#' @param ... Measure results to attach, named (`risk = assess(obj)`) or not (then named
#'   by their class, e.g. `assess` for a `detanon_assess`). A name already attached is
#'   replaced. `sdc_report()`: further arguments of `sdcMicro::report()` (e.g. `title`,
#'   `internal`).
#' @param outdir,filename Where `sdc_report()` writes: sdcMicro's report
#'   `<filename>.html`, and `<filename>-detanon.csv` and `<filename>-detanon.html` beside it.
#' @param report Run `sdcMicro::report()` too (it needs rmarkdown and pandoc, or knitr and
#'   markdown)? `FALSE` writes the detanon files only.
#' @return `sdc_attach()`: `obj` with the results stored (for a [tune_release()] result:
#'   the result, with the results stored in its `release`). `sdc_results()`: a data frame
#'   with a column `result` (the name of each result, `"release"` for the metadata of the
#'   last verb) and the columns of the results (missing ones `NA`); for the release, the
#'   columns `part` (`"verb"`, `"settings"`, `"counts"`, `"stats"`), `measure`, `value`
#'   (single numbers) and `text` (the others). `sdc_report()`: the paths of the files written, invisibly.
#' @family sdcMicro
#' @examplesIf requireNamespace("sdcMicro", quietly = TRUE)
#' data(testdata, package = "sdcMicro")
#' sdc <- sdcMicro::createSdcObj(testdata, keyVars = c("urbrur", "sex"),
#'                               numVars = c("expend", "income", "savings"))
#' sdc <- anonymise(sdc, k = 5)
#' sdc <- sdc_attach(sdc, linkage = risk_linkage(sdc), rmd = risk_rmd(sdc))
#' head(sdc_results(sdc))
#' files <- sdc_report(sdc, outdir = tempdir(), report = FALSE)
#' basename(files)
#' @export
sdc_attach <- function(obj, ...) {
  if (inherits(obj, "detanon_tuned")) {
    sdc <- sdc_object(obj, "obj")
    obj$release <- sdc_attach(sdc, ...)
    return(obj)
  }
  check_sdc(obj, "obj")
  res <- list(...)
  if (!length(res)) stop_arg("give at least one measure result in `...` to attach.")
  nm <- names(res)
  if (is.null(nm)) nm <- character(length(res))
  for (i in which(nm == "")) nm[i] <- sub("^detanon_", "", class(res[[i]])[1L])
  if (anyDuplicated(nm)) stop_arg("the results in `...` need distinct names, not ", quote_names(nm[duplicated(nm)]), ".")
  tabs <- Map(sdc_result_table, res, nm)
  add <- sdc_get(obj, "additionalResults")
  if (is.null(add)) add <- list()
  if (is.null(add$detanon)) add$detanon <- list(release = NULL, results = list())
  add$detanon$results[nm] <- tabs
  sdcMicro::set.sdcMicroObj(obj, type = "additionalResults", input = list(add))
}

# One result as a plain data frame: its as.data.frame() method, else its single numbers.
sdc_result_table <- function(x, name) {
  if (is.data.frame(x)) {
    out <- x
  } else if (is.object(x) && any(vapply(class(x), function(cl) {
    !is.null(utils::getS3method("as.data.frame", cl, optional = TRUE))
  }, logical(1)))) {
    out <- as.data.frame(x)
  } else if (is.list(x)) {
    single <- Filter(function(v) is.atomic(v) && length(v) == 1L && is.null(dim(v)) &&
                       (is.numeric(v) || is.logical(v) || is.character(v)), unclass(x))
    if (!length(single)) {
      stop_arg("`", name, "` has neither an as.data.frame() method nor single numbers to keep (",
               class_label(x), ").")
    }
    out <- data.frame(measure = names(single),
                      value = vapply(single, function(v) if (is.numeric(v)) as.numeric(v) else NA_real_, 1),
                      text = vapply(single, function(v) if (is.numeric(v)) NA_character_ else as.character(v), ""),
                      stringsAsFactors = FALSE)
    if (all(is.na(out$text))) out$text <- NULL
  } else {
    stop_arg("`", name, "` must be a measure result (e.g. from assess() or risk_linkage()), not ",
             class_label(x), ".")
  }
  out <- as.data.frame(out, stringsAsFactors = FALSE)
  rownames(out) <- NULL
  out
}

#' @rdname sdc_attach
#' @export
sdc_results <- function(obj) {
  obj <- sdc_object(obj, "obj")
  add <- sdc_get(obj, "additionalResults")$detanon
  parts <- list()
  rel <- add$release
  if (!is.null(rel)) {
    # single numbers in `value`, everything else as text
    flat <- function(part, l) {
      if (!length(l)) return(NULL)
      one <- vapply(l, function(v) is.numeric(v) && length(v) == 1L, logical(1))
      txt <- vapply(l, function(v) {
        if (is.null(v) || !length(v)) ""
        else if (is.numeric(v)) paste0(if (!is.null(names(v))) paste0(names(v), " = "), sdc_number(v),
                                       collapse = ", ")
        else if (is.data.frame(v)) "(table)" else paste(as.character(unlist(v)), collapse = ", ")
      }, character(1))
      data.frame(part = part, measure = names(l),
                 value = ifelse(one, vapply(l, function(v) if (is.numeric(v) && length(v) == 1L) as.numeric(v)
                                                          else NA_real_, 1), NA_real_),
                 text = ifelse(one, NA_character_, txt), stringsAsFactors = FALSE)
    }
    parts$release <- rbind(data.frame(part = "verb", measure = "verb", value = NA_real_, text = rel$verb,
                                      stringsAsFactors = FALSE),
                           flat("settings", rel$settings), flat("counts", rel$counts), flat("stats", rel$stats))
  }
  parts <- c(parts, add$results)
  if (!length(parts)) {
    return(data.frame(result = character(), stringsAsFactors = FALSE))
  }
  cols <- unique(unlist(lapply(parts, names)))
  rows <- lapply(names(parts), function(nm) {
    t <- parts[[nm]]
    for (cl in setdiff(cols, names(t))) t[[cl]] <- rep(NA, nrow(t))
    cbind(data.frame(result = rep(nm, nrow(t)), stringsAsFactors = FALSE), t[cols])
  })
  out <- do.call(rbind, rows)
  rownames(out) <- NULL
  out
}

#' @rdname sdc_attach
#' @export
sdc_report <- function(obj, outdir = tempdir(), filename = "SDC-Report", report = TRUE, ...) {
  obj <- sdc_object(obj, "obj")
  if (!is.character(outdir) || length(outdir) != 1L || is.na(outdir) || !dir.exists(outdir)) {
    stop_arg("`outdir` must be an existing directory, not ", show_value(outdir), ".")
  }
  if (!is.character(filename) || length(filename) != 1L || is.na(filename) || !nzchar(filename)) {
    stop_arg("`filename` must be a file name without extension, not ", show_value(filename), ".")
  }
  check_flag(report, "report")
  files <- character()
  if (report) {
    sdcMicro::report(obj, outdir = outdir, filename = filename, ...)
    files <- file.path(outdir, paste0(filename, ".html"))
  }
  res <- sdc_results(obj)
  csv <- file.path(outdir, paste0(filename, "-detanon.csv"))
  utils::write.csv(res, csv, row.names = FALSE, na = "")
  html <- file.path(outdir, paste0(filename, "-detanon.html"))
  writeLines(sdc_results_html(res, filename), html)
  invisible(c(files, csv, html))
}

# Numbers one by one, as people write them: counts as whole numbers (46, not 4.600e+01),
# other values to 4 significant digits, without an exponent unless they are tiny or huge.
sdc_number <- function(v) {
  vapply(v, function(x) {
    if (is.na(x)) return("NA")
    if (!is.finite(x)) return(format(x))
    if (x == round(x) && abs(x) < 1e15) return(format(x, scientific = FALSE, big.mark = ""))
    if (abs(x) >= 1e-4 && abs(x) < 1e15) return(format(signif(x, 4), scientific = FALSE, drop0trailing = TRUE))
    format(x, digits = 4)
  }, character(1), USE.NAMES = FALSE)
}

sdc_results_html <- function(res, filename) {
  esc <- function(x) {
    x <- ifelse(is.na(x), "", as.character(x))
    x <- gsub("&", "&amp;", x, fixed = TRUE)
    x <- gsub("<", "&lt;", x, fixed = TRUE)
    gsub(">", "&gt;", x, fixed = TRUE)
  }
  fmt <- function(v) if (is.numeric(v)) ifelse(is.na(v), "", sdc_number(v)) else esc(v)
  body <- character()
  for (nm in unique(res$result)) {
    t <- res[res$result == nm, -1L, drop = FALSE]
    t <- t[, vapply(t, function(v) !all(is.na(v)), logical(1)), drop = FALSE]
    head <- paste0("<tr>", paste0("<th>", esc(names(t)), "</th>", collapse = ""), "</tr>")
    rows <- if (ncol(t)) do.call(paste0, c(list("<tr>"), lapply(t, function(v) paste0("<td>", fmt(v), "</td>")),
                                          list("</tr>"))) else character()
    body <- c(body, paste0("<h2>", esc(nm), "</h2>"), "<table>", head, rows, "</table>")
  }
  if (!length(body)) body <- "<p>No detanon results are attached to this object.</p>"
  c("<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\">",
    paste0("<title>", esc(filename), ": detanon results</title>"),
    "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}",
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}</style></head><body>",
    paste0("<h1>", esc(filename), ": detanon results</h1>"),
    "<p>Release metadata of the last detanon verb and the measure results attached with sdc_attach().</p>",
    body, "</body></html>")
}
