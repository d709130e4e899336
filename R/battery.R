#' The risk battery: every attack on a release, against a control
#'
#' Runs the attacks of the battery on a release, each for the intruder described by
#' `intruder` (see [intruder()]), and reports them worst first. Every attack gives, for every
#' record, the probability that the intruder's claim about it is right (`success`) and how
#' sure the intruder is (`confidence`), so that the report can give
#' * `rate`: the expected share of records the attack gets right;
#' * `control_rate`: the same attack on a control release in which every record's row holds
#'   the released record of another person of its stratum (a derangement within strata):
#'   what the attack achieves on people who are *not* in the release but resemble those who
#'   are (chance, and what the release says about the population). A record alone in its
#'   stratum has no one to stand in for it and counts as a miss of the control. The
#'   inference attack's control is a holdout, as anonymeter's: the attack on records held
#'   out of a release remade without them (see [attack_inference()]);
#' * `advantage`: `(rate - control_rate) / (1 - control_rate)`, as anonymeter reports it:
#'   what the attack learns about the people in the release;
#' * `worst_stratum`: the highest rate of a stratum (with its size and the number of its
#'   records attacked);
#' * `precision_top10`: the rate among the 10% of records the intruder is most confident
#'   about, i.e. how reliable the intruder's best claims are (claims whose confidences at the
#'   cut are equal, to 1e-9, are taken in proportion: the expected rate in a random order);
#' * `baseline`: for the inference attack, the same guess from the released column alone;
#' * `lower`, `upper`: the 95% Wilson interval of `rate` over the `n_attacked` records
#'   (`lower_m`, `upper_m` for `rate_m`; `control_lower`, `control_upper` for
#'   `control_rate`, over the control's `control_n` records). A rate is a share of a
#'   sample of people: a limit inside its interval is not met or missed with confidence.
#'
#' The attacks ([battery_attacks()]): linkage in both directions ([attack_linkage()]),
#' singling out ([attack_singling_out()]), one-to-one assignment within strata
#' ([attack_assignment()]), probabilistic record linkage with EM weights
#' ([attack_fellegi_sunter()]), the intruder who knows the algorithm
#' ([attack_recipe()], for releases of [anonymise()], [anonymise_adaptive()] and
#' [anonymise_keyed()]), with `sensitive`, attribute inference ([attack_inference()]), and,
#' the tails ([attack_tails()]: linkage of the most outlying records, extreme values
#' recovered), with a `previous` release of the same people, composition ([attack_composition()]) and
#' differencing ([attack_differencing()]), each with its default settings. The report lists them worst first: by the advantage over
#' the control, then by the rate.
#'
#' @section What it measures and what it does not:
#' The battery measures what the named attacks achieve for the named intruder. Attacks
#' not in the battery, other background knowledge, and releases linked with other releases
#' are not covered; a low rate is not a proof of safety. Each attack's help page says what
#' it does not cover.
#'
#' @param original,masked Data frames with the same rows in the same order: the original
#'   data and its release.
#' @param vars,strata Shorthand for `intruder_published(vars = , strata = )` when
#'   `intruder` is `NULL`.
#' @param intruder The intruder, made by [intruder_published()] or [intruder()]; default
#'   `intruder_published(vars, strata)`: every published column that is not masked and not
#'   `sensitive` is an exact key. Pass [intruder()] for a narrower intruder.
#' @param attacks Names of the attacks to run (see [battery_attacks()]); default all that
#'   apply.
#' @param m The intruder's list length for the top-m attacks, a whole number >= 1.
#' @param sensitive Column whose value the inference attack guesses; `NULL` leaves that
#'   attack out. It is never a key of the default intruder.
#' @param weights The column of sampling weights of the release (a name; each weight >= 1),
#'   or `NULL` (the release is the whole population). With `weights`, the categorical risk
#'   (`categorical`) is the individual risk of the negative-binomial model of
#'   [risk_individual()] on the released keys. The weights are published as given and are
#'   never a key of the intruder (not even of [intruder_published()], which holds every
#'   other published column); but a weight column can itself identify: a weight unique to
#'   one record (as in sdcMicro's `CASCrefmicrodata`) singles that record out for anyone who
#'   holds the weights (a warning of class `detanon_warning_identifier` says so when the
#'   weights are unique to more than half of the records). Leave such a column out of
#'   `weights` (the default intruder then holds it exactly, as any published column) or
#'   coarsen it before release.
#' @param previous,previous_original Another release of the same people (made before or
#'   after `masked`) and its originals (rows aligned): with `previous`, the battery also
#'   runs the composition attack ([attack_composition()]), and with both, the differencing
#'   attack ([attack_differencing()]). `NULL` (the default) leaves them out.
#' @param control If `TRUE` (the default), every attack also runs on the control release.
#' @param seed Seed for R's random number generator (the intruder's share of originals,
#'   the control permutation); `NULL` uses the current stream.
#' @param nthreads Number of OpenMP threads; default the option `detanon.nthreads`, else 1.
#' @return An object of class `detanon_battery`: a list with `attacks` (a named list of
#'   `detanon_attack` objects), `intruder` and `n`; `as.data.frame()` gives one row per
#'   attack, worst first: `name`, `attack`, `rate`, `control_rate`, `advantage`, `m`,
#'   `rate_m`, `control_rate_m` (top-m attacks), `worst_stratum`, `worst_stratum_n`,
#'   `worst_stratum_attacked`, `precision_top10`, `n_attacked`, `baseline`, `lower`,
#'   `upper`, `lower_m`, `upper_m`, `control_lower`, `control_upper` and `control_n`. A
#'   `detanon_attack` also holds, per record in row order, `success`, `success_m` and
#'   `confidence` (`NA` for records not attacked), and `by_stratum`. With categorical keys
#'   (the strata and the categorical keys of the intruder), the battery also holds
#'   `categorical`: their risk on the release, a missing (suppressed) value matching any
#'   value as in sdcMicro ([risk_individual()], with `weights` when given): `keys`,
#'   `weights`, per record `fk` and `risk`, and `n_unique` (sample uniques), `n_two`,
#'   `expected` (expected re-identifications by the keys alone), `global_risk` (its share),
#'   which [tune_release()] bounds by `worst`, and `n_above`, `share_above` (records whose
#'   risk exceeds `threshold`, 0.1).
#'   The singling-out attack counts a record whose released keys have missing values as
#'   singled out when one original alone agrees with them wherever they are given.
#' @references Giomi M, Boenisch F, Wehmeyer C, Tasnadi B (2023). A unified framework for
#'   quantifying privacy risk in synthetic data. *Proceedings on Privacy Enhancing
#'   Technologies* 2023(2), 312-328 (anonymeter).
#' @seealso [intruder()], [attack_linkage()], [assess()].
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' risk_battery(d, masked, seed = 1)
#' @family attacks
#' @export
risk_battery <- function(original, masked, vars = NULL, strata = NULL, intruder = NULL,
                         attacks = NULL, m = 3, sensitive = NULL, weights = NULL, previous = NULL,
                         previous_original = NULL, control = TRUE, nthreads = getOption("detanon.nthreads", 1L),
                         seed = NULL) {
  if (is_sdc(original)) return(sdc_measure(risk_battery, original, match.call(), parent.frame()))
  if (is.null(intruder)) {
    intruder <- intruder_published(vars = vars, strata = strata)
  } else if (!is.null(vars) || !is.null(strata)) {
    stop_arg("Give the columns either in `intruder` or as `vars`/`strata`, not both.")
  }
  checked <- check_attack_args(control, seed, nthreads, m)
  reg <- battery_attacks()
  if (is.null(attacks)) attacks <- names(reg)
  if (!is.character(attacks) || !length(attacks) || anyNA(attacks) || !all(attacks %in% names(reg))) {
    stop_arg("`attacks` must name attacks of the battery: ", paste0("\"", names(reg), "\"", collapse = ", "),
             "; not ", show_value(attacks), ".")
  }
  if (is.null(sensitive)) attacks <- setdiff(attacks, names(reg)[vapply(reg, `[[`, TRUE, "needs_sensitive")])
  attacks <- battery_previous(attacks, reg, previous, previous_original, original, masked)
  if (!is.null(weights)) {
    check_weights(masked, weights, character())
    warn_unique_weights(masked, weights)
  }
  v <- attack_view(original, masked, intruder, checked$control, checked$seed, sensitive = sensitive,
                   weights = weights)
  if ("fellegi_sunter" %in% attacks) v$s$shared$knn <- fs_knn_want(v$s, reg$fellegi_sunter$args)
  res <- lapply(attacks, function(a) {
    spec <- reg[[a]]
    if (!is.null(spec$needs_previous)) spec$args[c("previous", "previous_original")] <- list(previous, previous_original)
    run_attack(spec, v$s, v$ctrl, m = checked$m, sensitive = sensitive, nthreads = checked$nthreads,
               seed = checked$seed)
  })
  names(res) <- attacks
  new_battery(res, v$s, masked, weights)
}

# A battery from its attacks' results `res` (named) on the intruder's view `s` of the
# release `masked`: what risk_battery() returns (and tune_release() verifies with).
new_battery <- function(res, s, masked, weights) {
  structure(list(attacks = res, intruder = s$intruder, n = s$n, vars = s$vars, strata = s$strata,
                 categorical = categorical_risk(masked, c(s$strata, s$key_cat), weights)),
            class = "detanon_battery")
}

# The risk of the categorical keys `keys` of a release, NA matching any value (sdcMicro's
# count): risk_individual() with the sampling weights `weights` (a column name; NULL: the
# release is the population, risk 1 / fk), the records above `threshold`; NULL without keys.
categorical_risk <- function(masked, keys, weights = NULL, threshold = 0.1) {
  if (!length(keys) || !nrow(masked)) return(NULL)
  r <- risk_individual(as.data.frame(masked), keys, weights = weights, threshold = threshold)
  list(keys = keys, weights = weights, fk = r$fk, risk = r$risk, n_unique = sum(r$fk == 1),
       n_two = sum(r$fk == 2), expected = r$expected, global_risk = r$global_risk, threshold = threshold,
       n_above = r$n_above, share_above = r$share_above)
}

#' The attacks of the risk battery
#'
#' A named list describing the attacks [risk_battery()] can run: each entry has the
#' attack's `label`, `fun` (its exported function), whether it needs a `sensitive`
#' column, optionally `needs_previous` (`"release"` or `"both"`: the attack needs another
#' release, or another release and its originals, see [risk_battery()]), `tail = TRUE` for
#' the attacks on the tails (bounded by the `tail` limit of [tune_release()]), and
#' optionally `control = "holdout"` for an attack whose control is the same attack on
#' records held out of a release remade without them (the inference attack), or
#' `control = "leave_out"` for one whose control leaves each record's own released record
#' out (the differencing attack: the claim from `masked` alone), instead of the
#' derangement of the release within strata.
#' @return A named list.
#' @family attacks
#' @export
battery_attacks <- function() {
  list(
    linkage_released = list(label = "nearest and top-m linkage, released -> original",
                            fun = "attack_linkage", args = list(direction = "released"),
                            core = linkage_core, needs_sensitive = FALSE),
    linkage_original = list(label = "nearest and top-m linkage, original -> released",
                            fun = "attack_linkage", args = list(direction = "original"),
                            core = linkage_core, needs_sensitive = FALSE),
    singling_out = list(label = "singling out by rare combinations of released values",
                        fun = "attack_singling_out", args = list(),
                        core = singling_out_core, needs_sensitive = FALSE),
    inference = list(label = "attribute inference from the nearest released records",
                     fun = "attack_inference", args = list(),
                     core = inference_core, needs_sensitive = TRUE, control = "holdout"),
    assignment = assignment_spec(),
    fellegi_sunter = fellegi_sunter_spec(),
    recipe = recipe_spec(),
    tail_outliers = tail_outliers_spec(),
    tail_extremes = tail_extremes_spec(),
    differencing = differencing_spec(),
    composition = composition_spec()
  )
}

# The attacks that compare two releases (`needs_previous`: "release", or "both" for the
# release and its originals) run only when `previous` (and `previous_original`) are given.
battery_previous <- function(attacks, reg, previous, previous_original, original, masked) {
  need <- vapply(reg[attacks], function(a) if (is.null(a$needs_previous)) "" else a$needs_previous, "")
  if (is.null(previous)) return(attacks[need == ""])
  check_previous(previous, previous_original, original, masked, need_original = FALSE)
  if (is.null(previous_original)) attacks <- attacks[need != "both"]
  attacks
}

# Run one attack (its core on the intruder's view, and on the control view) and summarise.
run_attack <- function(spec, s, ctrl, m, sensitive, nthreads, seed) {
  args <- c(list(m = m, sensitive = sensitive, nthreads = nthreads, seed = seed), spec$args)
  res <- do.call(spec$core, c(list(s), args))
  cres <- if (!is.null(ctrl)) {
    if (identical(spec$control, "holdout")) do.call(spec$core, c(list(s), args, list(holdout = TRUE)))
    else if (identical(spec$control, "leave_out")) {
      utils::modifyList(do.call(spec$core, c(list(s), args, list(leave_out = TRUE))), list(control_kind = "leave_out"))
    }
    else control_fixed_points(do.call(spec$core, c(list(ctrl), args)), ctrl$perm)
  }
  new_attack(spec$label, res, s, cres, m = m)
}

# The body of a single-attack verb (attack_*()): the shared arguments checked, the
# intruder's view and its control built, and the attack of `spec` run with its settings
# `args` (checked by the verb).
attack_verb <- function(spec, args, original, masked, intruder, m, control, seed, nthreads, sensitive = NULL) {
  checked <- check_attack_args(control, seed, nthreads, m)
  v <- attack_view(original, masked, intruder, checked$control, checked$seed,
                   leave_out = isTRUE(spec$control %in% c("holdout", "leave_out")),
                   sensitive = sensitive)
  spec$args[names(args)] <- args
  run_attack(spec, v$s, v$ctrl, m = checked$m, sensitive = sensitive, nthreads = checked$nthreads,
             seed = checked$seed)
}

# The arguments every attack verb shares, checked once: `m`, `control`, `nthreads` and
# `seed`. Returns a list of the checked values, named as the arguments.
check_attack_args <- function(control, seed, nthreads, m) {
  list(m = check_whole(m, "m", min = 1), control = check_flag(control, "control"),
       nthreads = check_nthreads(nthreads),
       seed = if (!is.null(seed)) check_whole(seed, "seed", min = -.Machine$integer.max))
}

# The intruder's view of the pair and the control release (`control = FALSE`: none): the
# view with a random permutation of the released records, or (`leave_out = TRUE`, for an
# attack that makes its own control, the holdout) the view itself. `sensitive`: the
# attack's sensitive column, never a key of the published intruder.
attack_view <- function(original, masked, intruder, control, seed, leave_out = FALSE, sensitive = NULL,
                        weights = NULL) {
  s <- intruder_view(original, masked, intruder, seed = seed, sensitive = sensitive, weights = weights)
  # work the attack cores share between the view and its control (view_shared())
  s$shared <- new.env(parent = emptyenv())
  # (whether a control release follows the view: an attack then keeps for it what it can)
  s$shared$control <- control && !leave_out
  ctrl <- if (control && leave_out) s else if (control) battery_permute(s, seed = if (!is.null(seed)) seed + 1L)
  list(s = s, ctrl = ctrl)
}

# A value an attack core computes from `inputs` alone, computed once per view: the view and
# its control (battery_permute() copies the environment `s$shared`, not its contents) and
# the attacks run on them reuse it when their `inputs` are identical; `compute()` otherwise
# (a view without `shared`, or other inputs, replace it). `what` names the value.
view_shared <- function(s, what, inputs, compute) {
  memo <- s$shared
  if (!is.environment(memo)) return(compute())
  prev <- memo[[what]]
  if (!is.null(prev) && identical(prev$inputs, inputs)) return(prev$value)
  value <- compute()
  memo[[what]] <- list(inputs = inputs, value = value)
  value
}

# A record of a stratum of one keeps its own released record in the control release (no one
# stands in for it): its control claim cannot be about someone else, so it counts as a miss.
control_fixed_points <- function(cres, perm) {
  if (is.null(perm)) return(cres)
  fixed <- which(perm == seq_along(perm))
  for (f in c("success", "success_m")) {
    if (!is.null(cres[[f]])) cres[[f]][fixed[!is.na(cres[[f]][fixed])]] <- 0
  }
  cres
}

# ---- attack results --------------------------------------------------------------------

# An attack result from a core's output: `res$success` (per record, the probability that
# the one-record claim is right; NA for records not attacked), optionally `res$success_m`
# (the own record among the intruder's m best candidates), `res$confidence` (per record,
# larger = surer), `res$covers` and `res$not_covered` (text for reports) and any other
# fields (kept in `details`). `cres`: the same for the control, or NULL.
new_attack <- function(label, res, s, cres = NULL, m = NA_integer_) {
  n <- s$n
  stopifnot(length(res$success) == n, length(res$confidence) == n)
  attacked <- !is.na(res$success)
  # (every record attacked: the vectors themselves, not copies)
  every <- all(attacked)
  at <- function(x, on = attacked) if (every && identical(on, attacked)) x else x[on]
  rate <- function(x) if (is.null(x) || !any(attacked)) NA_real_ else mean(at(x))
  r <- rate(res$success)
  r_m <- rate(res$success_m)
  # a holdout control (cres$holdout) attacks other records than the attack: its own
  control_on <- if (is.null(cres)) logical(n) else if (isTRUE(cres$holdout)) !is.na(cres$success) else attacked
  cr <- if (!is.null(cres) && any(control_on)) mean(at(cres$success, control_on)) else NA_real_
  ci <- wilson_interval(r, sum(attacked))
  ci_m <- wilson_interval(r_m, sum(attacked))
  ci_c <- wilson_interval(cr, sum(control_on))
  by <- s$by
  by$n <- s$sizes
  by$n_attacked <- tabulate(at(s$id), length(s$sizes))
  # (tapply()'s means, on the strata factor made once per view)
  strata <- view_shared(s, "strata factor", list(s$id, length(s$sizes)), function() factor(s$id, seq_along(s$sizes)))
  by$rate <- vapply(split(res$success, strata), mean, 0, na.rm = TRUE, USE.NAMES = FALSE)
  by$rate[by$n_attacked == 0L] <- NA_real_
  worst <- if (nrow(by) && any(!is.na(by$rate))) by[which.max(by$rate), , drop = FALSE] else by[0, , drop = FALSE]
  rownames(worst) <- NULL
  structure(list(
    attack = label,
    rate = r,
    rate_m = r_m,
    m = if (is.null(res$success_m)) NA_integer_ else as.integer(m),
    control_rate = cr,
    control_rate_m = if (!is.null(cres) && !isTRUE(cres$holdout)) rate(cres$success_m) else NA_real_,
    lower = ci[[1L]], upper = ci[[2L]], lower_m = ci_m[[1L]], upper_m = ci_m[[2L]],
    control_lower = ci_c[[1L]], control_upper = ci_c[[2L]], control_n = sum(control_on),
    control_kind = if (is.null(cres)) NA_character_ else if (!is.null(cres$control_kind)) cres$control_kind
                   else "derangement",
    advantage = advantage(r, cr),
    worst_stratum = worst,
    precision_top10 = top_share_precision(at(res$success), at(res$confidence), 0.1),
    n = n, n_attacked = sum(attacked),
    success = res$success, success_m = res$success_m, confidence = res$confidence,
    by_stratum = by,
    covers = res$covers, not_covered = res$not_covered,
    intruder = s$intruder, vars = s$vars, strata = s$strata,
    baseline = if (is.null(res$baseline)) NA_real_ else res$baseline,
    details = res[setdiff(names(res), c("success", "success_m", "confidence", "covers", "not_covered", "baseline"))]
  ), class = "detanon_attack")
}

# The 95% Wilson score interval of a share `p` observed on `n` records (Wilson 1927): the
# interval anonymeter reports with its rates. An expected share (a mean of per-record
# probabilities) is treated as a share of `n` trials. NA when p is NA or n is 0.
wilson_interval <- function(p, n, level = 0.95) {
  if (is.na(p) || !n) return(c(NA_real_, NA_real_))
  z <- stats::qnorm(1 - (1 - level) / 2)
  z2 <- z * z
  centre <- (p + z2 / (2 * n)) / (1 + z2 / n)
  half <- z / (1 + z2 / n) * sqrt(p * (1 - p) / n + z2 / (4 * n * n))
  c(max(0, centre - half), min(1, centre + half))
}

# anonymeter's risk: the attack's success beyond the control's, as a share of what the
# control left to gain.
advantage <- function(rate, control) {
  if (is.na(rate) || is.na(control)) return(NA_real_)
  if (control >= 1) return(0)
  max(0, (rate - control) / (1 - control))
}

# Mean success among the `share` most confident claims. Confidences (on [0, 1]) within `tol`
# of the one at the cut are one tie group, taken in proportion: the expected precision when
# equal claims come in a random order. The tolerance keeps the figure from moving when a
# confidence moves by rounding (the cut would otherwise fall inside a group of claims equal
# but for their last digits).
top_share_precision <- function(success, confidence, share, tol = 1e-9) {
  n <- length(success)
  if (!n) return(NA_real_)
  take <- max(1, share * n)
  k <- ceiling(take)
  # the claims in decreasing confidence (order() is stable: ties in row order); with finite
  # confidences only those above and at the cut, whose confidence a partial sort finds: a
  # subsequence of the whole order, so the sums add the same values in the same order
  o <- seq_len(n)
  finite <- all(is.finite(confidence))
  if (finite) {
    cut <- -sort.int(-confidence, partial = k)[k]
    eps <- tol * max(1, abs(cut))
    o <- which(confidence > cut + eps | abs(confidence - cut) <= eps)
  }
  o <- o[order(-confidence[o])]
  conf <- confidence[o]
  succ <- success[o]
  if (!finite) {
    cut <- conf[k]
    eps <- tol * max(1, abs(cut))
  }
  above <- conf > cut + eps
  at <- abs(conf - cut) <= eps
  need <- take - sum(above)
  (sum(succ[above]) + need * mean(succ[at])) / take
}

#' @export
print.detanon_attack <- function(x, ...) {
  cat(sprintf("Attack: %s, %s\n", x$attack, plural(x$n, "record")))
  cat(intruder_lines(x$intruder, "  ", "intruder who"), sep = "\n")
  cat(sprintf("  right about one record: %.4f (95%% interval %.4f to %.4f)\n", x$rate, x$lower, x$upper))
  cat(sprintf("  control %.4f, advantage %.4f\n", x$control_rate, x$advantage))
  if (identical(x$control_kind, "holdout")) {
    cat(sprintf("  control: %s held out of a release remade without them\n", plural(x$control_n, "record")))
  } else if (identical(x$control_kind, "leave_out")) {
    cat(strwrap(paste("control: the own released record left out (the release cannot be remade",
                      "without a holdout: its masking is not recorded, or needs a secret key)"),
                indent = 2, exdent = 4), sep = "\n")
  }
  if (!is.na(x$baseline)) cat(sprintf("  marginal baseline: %.4f\n", x$baseline))
  if (!is.null(x$details$isolates)) {
    cat(sprintf("  predicates that hold for exactly one original record (anonymeter's figure): %.4f\n",
                x$details$isolates))
  }
  if (!is.null(x$details$tcap) && !is.na(x$details$tcap)) {
    cat(sprintf("  TCAP (people whose neighbours agree, %d): %.4f\n", x$details$n_tcap, x$details$tcap))
  }
  if (x$n_attacked < x$n) cat(sprintf("  attacked: %d of the %d records\n", x$n_attacked, x$n))
  if (!is.na(x$rate_m)) {
    cat(sprintf("  own record among the %d best: %.4f (control %.4f)\n", x$m, x$rate_m, x$control_rate_m))
  }
  if (nrow(x$worst_stratum)) {
    w <- x$worst_stratum
    lab <- if (length(x$strata)) paste(paste0(x$strata, "=", unlist(lapply(w[x$strata], as.character))), collapse = ", ") else "all"
    cat(sprintf("  worst stratum: %.4f (%s; %s, %d attacked)\n", w$rate, lab, plural(w$n, "record"), w$n_attacked))
  }
  cat(sprintf("  precision of the 10%% most confident claims: %.4f\n", x$precision_top10))
  if (length(x$not_covered)) cat(strwrap(paste("Does not cover:", x$not_covered), indent = 2, exdent = 2), sep = "\n")
  invisible(x)
}

#' @export
as.data.frame.detanon_attack <- function(x, row.names = NULL, optional = FALSE, ...) {
  w <- x$worst_stratum
  data.frame(attack = x$attack, rate = x$rate, control_rate = x$control_rate, advantage = x$advantage,
             m = x$m, rate_m = x$rate_m, control_rate_m = x$control_rate_m,
             worst_stratum = if (nrow(w)) w$rate else NA_real_,
             worst_stratum_n = if (nrow(w)) w$n else NA_integer_,
             worst_stratum_attacked = if (nrow(w)) w$n_attacked else NA_integer_,
             precision_top10 = x$precision_top10, n_attacked = x$n_attacked,
             baseline = x$baseline,
             lower = x$lower, upper = x$upper, lower_m = x$lower_m, upper_m = x$upper_m,
             control_lower = x$control_lower, control_upper = x$control_upper, control_n = x$control_n,
             stringsAsFactors = FALSE)
}

#' @export
as.data.frame.detanon_battery <- function(x, row.names = NULL, optional = FALSE, ...) {
  out <- do.call(rbind, lapply(x$attacks, as.data.frame))
  out <- cbind(name = names(x$attacks), out, stringsAsFactors = FALSE)
  # worst first: the largest advantage over the control (the risk anonymeter reports),
  # then the largest rate
  out <- out[order(-ifelse(is.na(out$advantage), -Inf, out$advantage),
                   -pmax(out$rate, out$rate_m, na.rm = TRUE)), , drop = FALSE]
  rownames(out) <- NULL
  out
}

# The battery's table as printed (by print() and assess()), worst attack first.
print_battery_table <- function(x, indent = "") {
  tab <- as.data.frame(x)
  # the 95% Wilson interval of the rate, as one column (".065-.110"); adv: the advantage
  ci <- ifelse(is.na(tab$lower), "-", sub("^0", "", sprintf("%.3f-%s", tab$lower,
                                                           sub("^0", "", sprintf("%.3f", tab$upper)))))
  show <- data.frame(attack = tab$name, rate = tab$rate, `95% CI` = ci, control = tab$control_rate,
                     adv = tab$advantage, top_m = tab$rate_m, worst = tab$worst_stratum,
                     prec10 = tab$precision_top10, baseline = tab$baseline, check.names = FALSE)
  if (all(is.na(show$baseline))) show$baseline <- NULL
  if (all(is.na(show$top_m))) show$top_m <- NULL
  old <- options(width = 100L)
  on.exit(options(old))
  out <- utils::capture.output(print(show, row.names = FALSE, digits = 3))
  cat(paste0(indent, out), sep = "\n")
}

#' @export
print.detanon_battery <- function(x, ...) {
  cat(sprintf("Risk battery on %s (%s%s), worst attack (largest advantage) first\n", plural(x$n, "record"),
              paste(x$vars, collapse = ", "),
              if (length(x$strata)) paste0(" within ", paste(x$strata, collapse = " x ")) else ""))
  cat(intruder_lines(x$intruder), sep = "\n")
  print_battery_table(x)
  if (!is.null(x$categorical)) cat(categorical_risk_line(x$categorical), sep = "\n")
  invisible(x)
}

categorical_risk_line <- function(cr) {
  strwrap(paste0(sprintf(paste0("Categorical keys (%s), a missing value matching any: %s unique, %s in pairs; ",
                                "expected re-identifications by the keys alone %.1f (%.2f%%)"),
                         paste(cr$keys, collapse = ", "), plural(cr$n_unique, "record"), plural(cr$n_two, "record"),
                         cr$expected, 100 * cr$global_risk),
                 if (is.null(cr$weights)) "." else
                   sprintf(", weighted by %s; %s above the individual risk %s.", cr$weights,
                           plural(cr$n_above, "record"), format(cr$threshold))),
          width = 78, exdent = 2)
}

# ---- attack: linkage by distance, both directions -----------------------------------

#' Linkage attack by distance, in either direction
#'
#' The distance-linkage intruder holds the original values of some columns (see [intruder()])
#' and links by Euclidean distance on the z-scale of the original data, within strata.
#' * `direction = "released"`: for every released record, the intruder ranks the original
#'   records of its stratum by distance; the claim is right when the nearest is the
#'   record's own original (top-m: among the `m` nearest). For `intruder(vars, strata)`
#'   this is [risk_linkage()]: the same `rate` (nearest) and `rate_m` (top-m).
#' * `direction = "original"`: for every person whose original the intruder holds, it ranks
#'   the released records of the stratum; the claim is right when the nearest released
#'   record is the person's own. This is the direction of an intruder who looks for one
#'   person in the release.
#' Ties are broken at random: the success is the expected share, as in [risk_linkage()].
#' The confidence of a claim is one minus the ratio of the nearest to the second nearest
#' distance (the NNDR of Templ's riskutility): large when the nearest candidate stands out
#' (1 when the cell holds one candidate, 0 when two are at distance 0).
#'
#' Keys: with `intruder(held = "all")` every other column common to both data sets is a
#' key, numeric columns by distance (z-scored on the original's mean and SD) and the others
#' exactly, by value. This is distance-based record linkage on every released column. A
#' categorical key the release changed (recoded, generalised, swapped) puts the record in
#' another cell than its original: the intruder searches the cell the query's own value
#' names, so the record is attacked and missed (with the confidence the intruder has in
#' that cell). A suppressed key (missing in the release where the original has a value, as
#' [suppress_local()] and [tune_release()] leave it) matches any value, as in sdcMicro: the
#' released record is a candidate in every cell it could belong to. Numeric keys must have
#' no missing values.
#'
#' Cost: the ranks and the NNDR are counted in C on one kd-tree per cell; a rank count
#' stops at the list length, so the control (queries far from their own record) costs no
#' more than the attack. The candidates suppressed keys add are counted in R: with 2% of
#' one key's cells suppressed in 1e5 records, about 6 s per direction instead of 1 s.
#'
#' @section What it does not cover:
#' Matching one-to-one across the stratum (see [attack_assignment()]), an intruder who
#' knows the algorithm (see [attack_recipe()]), and attribute inference (see [attack_inference()]).
#' @inheritParams risk_battery
#' @param direction `"released"` (released record -> original) or `"original"`.
#' @return An object of class `detanon_attack` (see [risk_battery()] for its fields).
#' @family attacks
#' @export
attack_linkage <- function(original, masked, intruder = NULL, direction = c("released", "original"),
                           m = 3, control = TRUE,
                           nthreads = getOption("detanon.nthreads", 1L), seed = NULL) {
  direction <- match_choice(direction, "direction")
  attack_verb(battery_attacks()[[paste0("linkage_", direction)]], list(), original, masked, intruder, m, control,
              seed, nthreads)
}

# released -> original: trees over the originals the intruder holds, queried by their
# released records; original -> released: trees over all released records, queried by the
# originals the intruder holds. Numeric keys join the distance, categorical keys the cells:
# a query searches the cell its own categorical values name, so a record whose cell differs
# between original and release (a key the release changed) is attacked and missed, with
# the confidence the intruder has in the wrong cell (0 when that cell is empty).
linkage_core <- function(s, direction, m, nthreads, ...) {
  zo <- view_key_z(s, "original")
  zm <- view_key_z(s, "masked")
  # the tails' linkage (tail_outliers_core()) is this one, on the same view
  view_shared(s, paste("linkage", direction, m, if (is.null(s$perm)) "view" else "control"),
              list(zo, zm, s$known, s$cell_o, s$cell_m),
              function() linkage_ranks(s, zo, zm, direction, m, nthreads))
}

linkage_ranks <- function(s, zo, zm, direction, m, nthreads) {
  n <- s$n
  success <- success_m <- confidence <- rep(NA_real_, n)
  released <- direction == "released"
  rows <- if (released) which(s$known) else seq_len(n)
  # (every row: the view's vectors themselves, not copies)
  at_rows <- function(x) if (length(rows) == n) x else if (is.matrix(x)) x[rows, , drop = FALSE] else x[rows]
  tree_cell <- at_rows(if (released) s$cell_o else s$cell_m)
  query_cell <- at_rows(if (released) s$cell_m else s$cell_o)
  zt <- at_rows(if (released) zo else zm)
  zq <- at_rows(if (released) zm else zo)
  attacked <- at_rows(s$known)
  want <- attacked & tree_cell == query_cell
  if (!any(attacked)) {
    return(list(success = success, success_m = success_m, confidence = confidence))
  }
  # the trees over the originals the intruder holds are the same for the view and its control
  index <- NULL
  tree_index <- function() {
    if (is.null(index)) {
      index <<- if (released) view_shared(s, "original index", list(zt, tree_cell),
                                          function() rank_index(zt, cell_setup(tree_cell)))
                else released_index(s, zm)
    }
    index
  }
  # the ranks and the two nearest points of a query in its own cell come from one search
  # (src/rank.c), or from the nearest released records the battery searched once for
  # several attacks (released_knn()); a query in another cell (a key the release changed)
  # needs only its two nearest (src/nn2.c)
  tree_of <- match(query_cell, sort(unique(tree_cell)))
  tree_of[is.na(tree_of) | !attacked] <- 0L
  cap <- as.double(max(m, 2L))
  kn <- if (released) original_knn(s, zo, zm, rows, cap + 1, nthreads) else released_knn(s, zo, zm, nthreads)
  if (is.null(kn)) {
    rn <- .Call(C_ffi_index_rank_nn2, tree_index(), zq, want, cap, nthreads)
  } else {
    rn <- .Call(C_ffi_knn_ranks, kn$d2, kn$size, zq, zt, want, cap)
    redo <- want & is.na(rn[, 1L])
    if (any(redo)) rn[redo, ] <- .Call(C_ffi_index_rank_nn2, tree_index(), zq, redo, cap, nthreads)[redo, ]
  }
  if (any(want)) {
    hit <- rows[want]
    rw <- rn[want, 1:2, drop = FALSE]
    success[hit] <- top_m_share(rw, 1)
    success_m[hit] <- top_m_share(rw, m)
    rm(rw)
  }
  miss <- rows[attacked & !want]
  success[miss] <- success_m[miss] <- 0
  other <- replace(tree_of, want, 0L)
  if (any(other > 0L)) rn[other > 0L, 3:4] <- .Call(C_ffi_battery_nn2, tree_index(), zq, other, nthreads)[other > 0L, ]
  conf <- nndr_ratio(rn[, 3L], rn[, 4L])
  conf[attacked & tree_of == 0L] <- 0
  confidence[rows[attacked]] <- conf[attacked]
  # suppressed keys match any value (R/intruder.R)
  wild <- wildcard_linkage(s, zo, zm, rows, released, m, tree_index(), tree_of, nthreads)
  if (!is.null(wild)) {
    hit <- rows[wild$at]
    success[hit] <- wild$success
    success_m[hit] <- wild$success_m
    confidence[hit] <- wild$confidence
  }
  list(success = success, success_m = success_m, confidence = confidence,
       not_covered = paste("one-to-one matching, an intruder who knows the algorithm,",
                           "attribute inference, other background knowledge."))
}

# The rank_index() of all released records (`zm`: their z-scores, numeric keys included), a
# tree per released cell: built once per view for the attacks that search it (linkage
# original -> released and inference where released_knn() cannot decide, recipe).
released_index <- function(s, zm) {
  view_shared(s, paste("released index", if (is.null(s$perm)) "view" else "control"), list(zm, s$cell_m),
              function() rank_index(zm, cell_setup(s$cell_m)))
}

# The k nearest released records of the originals the intruder holds, within strata, with
# the codes of Fellegi-Sunter's pairs and their squared distances (list(index, code, d2,
# size), n x k, NA and Inf past a stratum's size; size: the number of released records of
# each row's stratum): Fellegi-Sunter's search of the view (fs_search()), done once per
# battery for the attacks that read it (linkage original -> released, view and control, the
# inference's neighbour sets, and Fellegi-Sunter's candidates, which drop it) when
# `s$shared$knn` asks for it
# (risk_battery(), when Fellegi-Sunter compares candidates: its k and bands); NULL
# otherwise, and without categorical keys or where knn_view_zm() refuses.
released_knn <- function(s, zo, zm, nthreads) {
  want <- if (is.environment(s$shared)) s$shared$knn
  zv <- if (!is.null(want) && !length(s$key_cat)) knn_view_zm(s, zo, zm)
  if (is.null(zv)) return(NULL)
  rows <- which(s$known)
  view_shared(s, "released knn", list(zo, zv, s$id, rows, want), function() {
    none <- matrix(0L, s$n, 0L)
    kn <- fs_search(s, zo, zv, list(o = none, m = none), rows, want$k, want$bands,
                    fs_mult(rep(length(want$bands) + 1L, ncol(zo))), nthreads, d2 = TRUE)
    kn$size <- tabulate(s$id, length(s$sizes))[s$id]
    kn
  })
}

# The k nearest known originals of every released record within its cell and their squared
# distances, for linkage released -> original on the rows `rows` (the known originals, the
# tree rows): list(d2, size) over those rows (size: the number of known originals of each
# row's cell). One search of the view serves its control: a control row's released record is
# the view's record s$perm[row], with the same nearest originals (the view's search is kept
# for it, control_keep(), and taken by the control, control_take()). NULL where knn_view_zm()
# refuses.
original_knn <- function(s, zo, zm, rows, k, nthreads) {
  zv <- knn_view_zm(s, zo, zm)
  if (is.null(zv)) return(NULL)
  inputs <- list(zo = zo, cell_o = s$cell_o, rows = rows, k = k)
  prev <- control_take(s, "original knn", list(zm))
  kn <- if (!is.null(prev) && identical(prev$inputs, inputs)) prev$d2 else {
    nearest_in_cells(zo[rows, , drop = FALSE], zv, s$cell_o[rows], s$cell_o, k = k, nthreads = nthreads)$d2
  }
  rm(prev)
  control_keep(s, "original knn", list(inputs = inputs, d2 = kn), list(zm))
  size <- tabulate(s$cell_o[rows], max(c(0L, s$cell_o)))[s$cell_o[rows]]
  list(d2 = kn[if (is.null(s$perm)) rows else s$perm[rows], , drop = FALSE], size = size)
}

# The released records `zm` of a view as the view holds them (a control's rows put back in
# the view's order), for a search of the view that serves its control too; NULL unless every
# record's cell is its released record's and its stratum (no categorical key that splits
# the strata, no cell the release changed: the control's cells are then the view's) and the
# coordinates are finite (the k nearest points are then defined by the points alone,
# src/kdtree.h).
knn_view_zm <- function(s, zo, zm) {
  if (!identical(s$cell_o, s$cell_m) || !same_partition(s$id, s$cell_o) || !all(is.finite(zo)) ||
      !all(is.finite(zm))) {
    return(NULL)
  }
  if (!is.null(s$perm)) zm[s$perm, ] <- zm
  zm
}

# Whether the ids `a` and `b` (whole numbers >= 1) split the rows into the same groups.
same_partition <- function(a, b) {
  pairs <- a + max(c(0L, a)) * (b - 1) # (doubles)
  n_pairs <- if (max(c(0, pairs)) < .Machine$integer.max) sum(tabulate(pairs) > 0L) else length(unique(pairs))
  n_pairs == sum(tabulate(a) > 0L) && n_pairs == sum(tabulate(b) > 0L)
}

# The ranks of link_ranks() (strictly nearer, at most as near), except that the second is
# NA once the first reaches `cap` (then every top-m share with m <= cap is 0): a query far
# from its own point, as in the control, costs no more than one near it (rank_query() in
# src/rank.c, `lazy`).
battery_ranks <- function(index, zq, want, cap, nthreads = 1L) {
  .Call(C_ffi_index_rank, index, zq, as.logical(want), as.double(cap), nthreads, FALSE, TRUE)
}

# The z-scores of the numeric keys of one side (on the original's scale).
key_z <- function(s, side) {
  if (!length(s$key_num)) return(NULL)
  z_scores(numeric_matrix(if (side == "original") s$original else s$masked, s$key_num), s$key_scale)
}

# The z-scores of one side with those of its numeric keys: the view's own matrix (not a copy)
# when there are none.
view_key_z <- function(s, side) {
  z <- if (side == "original") s$zo else s$zm
  if (length(s$key_num)) cbind(z, key_z(s, side)) else z
}

# A linkage setup (as link_ranks() reads it) whose strata are the given cells.
cell_setup <- function(cell) {
  id <- match(cell, sort(unique(cell)))
  sizes <- tabulate(id, max(c(0L, id)))
  list(n = length(id), id = id, sizes = sizes, order = as.integer(order(id, method = "radix")),
       offsets = as.integer(c(0L, cumsum(sizes))))
}

# The NNDR confidence of a query from the distances d1 and d2 to the nearest and
# second-nearest points of its tree: 1 - d1 / d2; 1 when the tree holds one point (d2 Inf),
# 0 when d2 = 0 (two points at the query); NA for a query not searched.
nndr_ratio <- function(d1, d2) {
  conf <- 1 - d1 / d2
  conf[is.infinite(d2)] <- 1
  conf[!is.na(d2) & d2 == 0] <- 0
  conf
}

# ---- work kept for the control release -----------------------------------------------------
# The control release holds the view's released records with their rows permuted
# (battery_permute(), `s$perm`), so an attack core can give it some of what it computed on
# the view. control_keep() keeps `value` in the view's memo (`s$shared`) under `what`, when a
# control follows the view, with `released`: the released-side inputs it was computed from,
# a list of matrices or vectors by released row. control_take() on the control takes it
# once (it leaves the memo, not held for the other attacks), and returns it only when the
# control's `released` are the view's with their rows permuted; else NULL.
# control_follows(): is `s` a view whose control is to come (what control_keep() keeps)?
control_follows <- function(s) is.environment(s$shared) && isTRUE(s$shared$control) && is.null(s$perm)

control_keep <- function(s, what, value, released) {
  if (control_follows(s)) s$shared[[what]] <- list(value = value, released = released)
  invisible()
}

control_take <- function(s, what, released) {
  memo <- s$shared
  prev <- if (is.environment(memo) && !is.null(s$perm)) memo[[what]]
  if (is.null(prev)) return(NULL)
  rm(list = what, envir = memo)
  permuted <- lapply(prev$released, function(x) if (is.matrix(x)) x[s$perm, , drop = FALSE] else x[s$perm])
  if (identical(permuted, released)) prev$value
}
