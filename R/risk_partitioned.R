#' Risk measures stratum by stratum, on one machine or on a cluster
#'
#' Runs a risk measure that works within strata on groups of whole strata (balanced by
#' size) with `future.apply::future_lapply()` under the current [future::plan()], and
#' merges the groups into the result of the measure on all the records. Every group is
#' measured on the z-scale of **all** the original records (exact column means and SDs,
#' computed once), so each record's success, share of a link and confidence are those of
#' the in-memory measure, and so are the rates computed from them.
#'
#' @section What is exact:
#' * `"linkage"` ([risk_linkage()]): the whole result is `identical()` to the in-memory one.
#' * `"attack_linkage_released"`, `"attack_linkage_original"` ([attack_linkage()] in either
#'   direction), `"attack_assignment"` ([attack_assignment()]) and `"attack_recipe"`
#'   ([attack_recipe()], for an intruder who knows the settings of a release made with
#'   `format = "none"`; otherwise a classed error, since its candidates then need the
#'   step-5 factors recovered from, or the bounds and extremes of the release form over, the
#'   whole release): the per-record `success`, `success_m` and `confidence`, the rates
#'   and `by_stratum` are those of the in-memory attack run with `control = FALSE` by an
#'   intruder who holds all original records (`p = 1`); the attack's `details` (internal
#'   diagnostics) are not merged. The control release (a random permutation of the whole
#'   release) and intruders with `p < 1` draw random numbers over all the records and are
#'   not run partitioned.
#' * [risk_rmd()] is not partitioned: its robust (MCD) covariance and its neighbour counts
#'   are global, not within strata (see its section "Data beyond memory" for what would be
#'   exact over chunks, and the measured approximation of an MCD on a sample).
#'
#' @inheritParams risk_linkage
#' @param measure The measure: `"linkage"`, `"attack_linkage_released"`,
#'   `"attack_linkage_original"`, `"attack_assignment"` or `"attack_recipe"`.
#' @param strata The strata: groups of whole strata are measured apart. For the attacks,
#'   they are the intruder's strata (`intruder$strata`, which must then be given).
#' @param m The intruder's list length, passed to the measure; `NULL`: the measure's default.
#' @param ... Further arguments of the measure, by name (e.g. `intruder`, `k`); an argument
#'   the measure does not take is refused (`measure = "linkage"` takes none).
#' @param group_size Strata are measured in groups of about this many records.
#' @param future Dispatch with `future.apply`? `NULL`: when it is installed.
#' @return The measure's result, as the measure returns it on all the records (for the
#'   attacks, without `details`).
#' @family partitioned anonymisation
#' @examples
#' d <- titanic_paper()[-1]
#' masked <- anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3)
#' r <- risk_partitioned(d, masked, "linkage", vars = c("Age", "Fare"),
#'                       strata = c("Pclass", "Sex"), future = FALSE)
#' identical(r, risk_linkage(d, masked, vars = c("Age", "Fare"),
#'                           strata = c("Pclass", "Sex")))
#' @export
risk_partitioned <- function(original, masked,
                             measure = c("linkage", "attack_linkage_released", "attack_linkage_original",
                                         "attack_assignment", "attack_recipe"),
                             vars = NULL, strata = NULL, m = NULL, ..., group_size = 1e6, future = NULL,
                             nthreads = getOption("detanon.nthreads", 1L)) {
  measure <- match_choice(measure, "measure")
  check_data_frame(original, "original")
  check_data_frame(masked, "masked")
  if (nrow(original) != nrow(masked)) {
    stop_arg("`original` and `masked` must have the same rows (", nrow(original), " and ", nrow(masked), ").",
             kind = "data")
  }
  group_size <- check_whole(group_size, "group_size", min = 1)
  nthreads <- check_nthreads(nthreads)
  future <- use_future(future)
  args <- list(...)
  linkage <- measure == "linkage"
  check_measure_args(args, measure)
  if (!is.null(m)) args$m <- check_whole(m, "m", min = 1)
  if (!linkage) {
    it <- args$intruder
    if (is.null(it)) it <- intruder(vars = vars, strata = strata)
    if (!inherits(it, "detanon_intruder")) stop_arg("`intruder` must be made by intruder(), not ", show_value(it), ".")
    if (it$p != 1) stop_arg("`intruder` must hold all original records (p = 1) in a partitioned run.")
    if (isTRUE(args$control)) stop_arg("`control = TRUE` is not supported partitioned (it permutes the whole release).")
    args$intruder <- it
    args$control <- FALSE
    vars <- it$vars
    strata <- it$strata
    if (measure == "attack_recipe" && it$knows != "data") {
      # exact only when the candidates need no global quantity: the recorded step-5
      # factors (settings known) and no release form (whose bounds and extremes are global)
      info <- release_info(masked)
      if (it$knows != "settings" || is.null(info) || !identical(info$settings$format, "none")) {
        stop_arg("`measure = \"attack_recipe\"` is supported partitioned only for an intruder who knows the ",
                 "settings (intruder(knows = \"settings\")) of a current release made with `format = \"none\"`: ",
                 "otherwise its candidates need the step-5 factors recovered from, or the release form's bounds ",
                 "and extremes over, the whole release. Run attack_recipe() in memory.")
      }
    }
  }
  # the full in-memory measure's setup: the columns, the strata and the global scale
  s <- if (linkage) linkage_setup(original, masked, vars, strata)
       else intruder_view(original, masked, args$intruder)
  vars <- s$vars
  strata <- s$strata
  scale <- global_scale(original, vars, if (!linkage) s$key_num)
  # groups of whole strata, by size (the order of the strata does not matter)
  sizes <- s$sizes
  o <- order(-sizes, seq_along(sizes))
  groups <- list()
  cur <- integer()
  tot <- 0
  for (g in o[sizes[o] > 0]) {
    if (length(cur) && tot + sizes[g] > group_size) {
      groups[[length(groups) + 1L]] <- cur
      cur <- integer()
      tot <- 0
    }
    cur <- c(cur, g)
    tot <- tot + sizes[g]
  }
  if (length(cur)) groups[[length(groups) + 1L]] <- cur
  # no records: one empty group, measured as in memory
  if (!length(groups)) groups <- list(integer())
  rows <- lapply(groups, function(g) which(s$id %in% g))
  plain <- function(d) {
    d <- as.data.frame(d, stringsAsFactors = FALSE)
    attr(d, "detanon") <- NULL
    d
  }
  po <- plain(original)
  pm <- plain(masked)
  tasks <- lapply(rows, function(r) list(o = po[r, , drop = FALSE], m = pm[r, , drop = FALSE]))
  rm(po, pm)
  info <- if (measure == "attack_recipe") suppressWarnings(release_info(masked))
  p <- task_progress(length(tasks))
  work <- risk_worker(measure, vars, strata, args, nthreads, scale, info, p)
  parts <- if (future) {
    tryCatch(future.apply::future_lapply(tasks, work, future.packages = "detanon", future.seed = NULL),
             error = function(e) stop_arg("A worker failed while measuring strata: ", conditionMessage(e), kind = "worker"))
  } else {
    lapply(tasks, work)
  }
  failed <- which(vapply(parts, inherits, logical(1), "detanon_worker_failure"))
  if (length(failed)) {
    stop_arg("Measuring strata group ", failed[1L], " failed: ", parts[[failed[1L]]]$message, kind = "worker")
  }
  allrows <- unlist(rows, use.names = FALSE)
  back <- function(field) {
    v <- unlist(lapply(parts, `[[`, field), use.names = FALSE)
    if (is.null(v)) return(NULL)
    out <- v
    out[allrows] <- v
    out
  }
  if (linkage) {
    m <- parts[[1L]]$m
    share <- back("linked")
    share_m <- back("linked_m")
    reid <- back("reid_prob")
    n <- s$n
    by <- s$by
    by$n <- s$sizes
    stratum_of <- unlist(lapply(seq_along(parts), function(i) groups[[i]][order(groups[[i]])]))
    pby <- do.call(rbind, lapply(parts, `[[`, "by_stratum"))
    cols <- c("rate", "rate_m", "blind_rate", "blind_rate_m", "reid")
    for (v in cols) by[[v]] <- rep(NA_real_, nrow(by))
    by[stratum_of, cols] <- pby[cols]
    blind <- function(m) if (n) sum(pmin(m, s$sizes)) / n else NA_real_
    return(structure(list(
      rate = if (n) sum(share) / n else NA_real_, n_linked = sum(share), blind_rate = blind(1),
      rate_m = if (n) sum(share_m) / n else NA_real_, n_linked_m = sum(share_m), blind_rate_m = blind(m),
      m = m,
      reid = if (n) sum(reid) / n else NA_real_, reid_max = if (n) max(reid) else NA_real_,
      by_stratum = by, linked = share, linked_m = share_m, reid_prob = reid, vars = s$vars, strata = s$strata,
      n = n
    ), class = "detanon_linkage"))
  }
  first <- parts[[1L]]
  res <- list(success = back("success"), success_m = back("success_m"), confidence = back("confidence"),
              covers = first$covers, not_covered = first$not_covered,
              baseline = if (!is.na(first$baseline)) first$baseline)
  out <- new_attack(first$attack, res, s, NULL, m = if (is.na(first$m)) NA_integer_ else first$m)
  out$details <- NULL
  out
}

# The arguments of `...` must be arguments of the measure, by name: the linkage measure
# takes none beyond `m`; an attack takes those of its function but the data, `direction`
# and `nthreads`, which risk_partitioned() sets.
check_measure_args <- function(args, measure) {
  if (!length(args)) return(invisible(args))
  nm <- names(args)
  if (is.null(nm) || any(!nzchar(nm))) {
    stop_arg("the arguments in `...` must be named (they are passed to the measure by name).")
  }
  allowed <- switch(measure,
    linkage = character(),
    attack_linkage_released = , attack_linkage_original = names(formals(attack_linkage)),
    attack_assignment = names(formals(attack_assignment)),
    attack_recipe = names(formals(attack_recipe)))
  allowed <- setdiff(allowed, c("original", "masked", "direction", "nthreads", "..."))
  bad <- setdiff(nm, allowed)
  if (length(bad)) {
    stop_arg(plural(length(bad), "argument", count = FALSE), " ", quote_names(bad), " in `...` ",
             plural(length(bad), "is", "are", count = FALSE), " not ", if (measure == "linkage")
             "taken by `measure = \"linkage\"`, which takes only `vars`, `strata` and `m`" else
             paste0("an argument of the measure `", measure, "`"),
             ".")
  }
  invisible(args)
}

# The z-scale (column_scale()) of the variables and numeric keys of all the original
# records, which linkage_setup() and the intruder's view use for a group of strata.
global_scale <- function(original, vars, keys = NULL) column_scale(numeric_matrix(original, c(vars, keys)))

# The worker of risk_partitioned(): measures one group (list(o, m)) on the global `scale`,
# a failure returned as a value; its environment holds only its arguments (not the data).
# The attacks receive the scale, and the metadata `info` of the whole release, as fields of
# their intruder (`scale`, `release`), which holds all the original records (p = 1).
risk_worker <- function(measure, vars, strata, args, nthreads, scale, info, p) {
  force(measure)
  force(vars)
  force(strata)
  force(args)
  force(nthreads)
  force(scale)
  force(info)
  force(p)
  if (measure != "linkage") {
    args$intruder$scale <- scale
    args$intruder$release <- info
  }
  fun <- switch(measure,
    linkage = function(o, m) {
      linkage_result(linkage_setup(o, m, vars, strata, scale), if (is.null(args$m)) 1L else args$m, nthreads)
    },
    attack_linkage_released = function(o, m) do.call(attack_linkage, c(list(o, m, direction = "released",
                                                                            nthreads = nthreads), args)),
    attack_linkage_original = function(o, m) do.call(attack_linkage, c(list(o, m, direction = "original",
                                                                            nthreads = nthreads), args)),
    attack_assignment = function(o, m) do.call(attack_assignment, c(list(o, m, nthreads = nthreads), args)),
    attack_recipe = function(o, m) do.call(attack_recipe, c(list(o, m, nthreads = nthreads), args)))
  function(task) {
    res <- tryCatch(fun(task$o, task$m),
                    error = function(e) structure(list(message = conditionMessage(e)), class = "detanon_worker_failure"))
    p()
    res
  }
}
