#' Assess a masked release: disclosure risk and utility in one report
#'
#' Runs [risk_rmd()], [risk_linkage()] (nearest-neighbour and top-`m`),
#' [risk_replay()] (when the release records how it was made, or `mask` is given),
#' [utility_pmse()], [utility_delta()], when a `formula` is given [utility_model()], and
#' the risk battery ([risk_battery()], unless `battery = FALSE`) on the same pair of data
#' sets, and returns one
#' object with `print()`, `summary()`, `as.data.frame()` and `plot()` methods. The
#' object holds only the measures (shares, counts, row positions, propensity scores,
#' coefficients), never original record values; `plot(type = "risk")` therefore needs the
#' two data sets again.
#'
#' @section What the measures do and do not protect against:
#' * **risk1 / risk2** ([risk_rmd()]): masked values that stay within a small,
#'   distance-dependent interval of their originals, and the isolated ones among them.
#'   A heuristic for close-match disclosure of continuous values; says nothing about
#'   categorical variables or attribute disclosure.
#' * **Linkage** ([risk_linkage()]): share of masked records whose nearest original
#'   record (within the stratum) is their own, against a blind guess; the same for the
#'   `m` nearest; and the expected re-identification probability of an intruder
#'   who picks among the originals no farther than the own one. Models an intruder
#'   who knows everyone's original values; other background knowledge is not covered.
#' * **Replay** ([risk_replay()]): an intruder who knows the algorithm, its settings and
#'   a share of the originals re-runs the masking and links. Smarter uses of that
#'   knowledge are not covered.
#' * **Risk battery** ([risk_battery()]): the attacks of the battery for the intruder
#'   `intruder` (linkage in both directions, singling out, and attribute inference on
#'   `sensitive` when given), each against its control, printed worst attack (largest
#'   advantage over the control) first. Each attack's help page says what it does not
#'   cover. The battery runs after every other measure, so it changes none of them.
#' * **U / S_pMSE** ([utility_pmse()]): can a logistic model tell the data sets apart?
#'   Ignores the record-by-record pairing.
#' * **delta** ([utility_delta()]): share of each variable's variability added by masking;
#'   small deltas also mean values close to the originals (more risk).
#' * **Model** ([utility_model()]): does one chosen regression give the same answer?
#'
#' @inheritParams risk_rmd
#' @param strata Categorical columns for [risk_linkage()] (default: those recorded by
#'   [anonymise()], else none).
#' @param formula Optional model formula for [utility_model()].
#' @param family Family for [utility_model()].
#' @param pmse_vars Columns for the propensity model (default: all columns common to both
#'   that do not look like direct identifiers).
#' @param pmse_method The propensity model, `"logit"` or `"cart"` (see [utility_pmse()]).
#' @param interactions Passed to [utility_pmse()].
#' @param w1,w2,neighbours Parameters of [risk_rmd()].
#' @param m The intruder's list length of the top-m linkage ([risk_linkage()] with this
#'   `m`), a whole number >= 1.
#' @param top_m Deprecated name of `m`. (Before this release `m` was the neighbour count
#'   of [risk_rmd()], now `neighbours`; a call giving both `m` and `top_m` is read the old
#'   way, with a warning.)
#' @param mask,p,seed Passed to [risk_replay()]; with `mask = NULL` the replay is run
#'   only when `masked` records how it was made (a release of [anonymise()] or
#'   [anonymise_adaptive()]).
#' @param battery If `TRUE` (the default), run the risk battery ([risk_battery()]) with
#'   the list length `top_m`; `FALSE` leaves it out.
#' @param intruder The battery's intruder, made by [intruder_published()] or [intruder()];
#'   default `intruder_published(vars, strata)`: the linkage measures' columns and every
#'   other published column that is not `sensitive`, held exactly.
#' @param sensitive A column for the battery's attribute-inference attack
#'   ([attack_inference()]), or `NULL` to leave that attack out.
#' @param ... Further arguments to [risk_rmd()] (`deterministic`, or arguments of
#'   `robustbase::covMcd()`).
#' @return An object of class `detanon_assess`: a list with `rmd`, `linkage`,
#'   `linkage_top` (top-`m` linkage), `replay` (or `NULL`), `pmse`,
#'   `delta`, `model` (or `NULL`), `battery` (a `detanon_battery`, or `NULL`), `vars`,
#'   `strata` and `n`.
#' @seealso [plot.detanon_assess()]
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' a <- assess(d, masked, formula = Survived ~ Pclass + Sex + Age + Fare + Family,
#'             family = binomial(), deterministic = TRUE)
#' a
#' head(as.data.frame(a))
#' plot(a, original = d, masked = masked)
#' @family reports
#' @section sdcMicro: `original` may be an `sdcMicroObj`, alone ([sdc_extract()]).
#' @export
assess <- function(original, masked, vars = NULL, strata = NULL, formula = NULL,
                   family = stats::gaussian(), pmse_vars = NULL, interactions = FALSE,
                   pmse_method = c("logit", "cart"),
                   w1 = 0.01, w2 = 0.05, neighbours = 1, m = 3, mask = NULL, p = c(1, 0.5, 0.1), ...,
                   battery = TRUE, intruder = NULL, sensitive = NULL,
                   nthreads = getOption("detanon.nthreads", 1L), seed = NULL, top_m) {
  if (is_sdc(original)) return(sdc_measure(assess, original, match.call(), parent.frame())) # R/sdcmicro.R
  if (!missing(top_m)) {
    if (!missing(m)) { # the old reading: m for risk_rmd(), top_m for the linkage
      neighbours <- renamed_arg(m, "m", "neighbours", !missing(neighbours),
                                " (risk_rmd()'s neighbour count; `m` is now the top-m list length)")
    }
    m <- renamed_arg(top_m, "top_m", "m")
  }
  vars <- check_pair(original, masked, vars, strata = strata)
  if (is.null(strata)) strata <- attr(vars, "strata")
  vars <- as.vector(vars)
  if (!is.null(formula) && !inherits(formula, "formula")) {
    stop_arg("`formula` must be NULL or a model formula such as `y ~ x1 + x2`, not ",
             show_value(formula), ".")
  }
  family <- check_family(family)
  m <- check_whole(m, "m", min = 1)
  rmd <- risk_rmd(original, masked, vars = vars, w1 = w1, w2 = w2, neighbours = neighbours, ...,
                  nthreads = nthreads)
  linkage <- risk_linkage(original, masked, vars = vars, strata = strata, nthreads = nthreads)
  linkage_top <- risk_linkage(original, masked, vars = vars, strata = strata, m = m,
                              nthreads = nthreads)
  # (the release was checked above: a stale one has already been warned about)
  info <- attr(masked, "detanon", exact = TRUE)
  replayable <- replay_known(info) && release_current(masked, info$fingerprint)
  replay <- if (!is.null(mask) || replayable) {
    risk_replay(original, masked, vars = vars, strata = strata, mask = mask, p = p,
                nthreads = nthreads, seed = seed)
  }
  pmse_method <- match_choice(pmse_method, "pmse_method")
  pmse <- utility_pmse(original, masked, vars = pmse_vars, interactions = interactions, method = pmse_method)
  delta <- utility_delta(original, masked, vars = vars)$delta
  model <- if (!is.null(formula)) utility_model(original, masked, formula, family = family) else NULL
  # last, so that its draws change no other measure
  battery <- check_flag(battery, "battery")
  bat <- if (battery) {
    if (is.null(intruder)) intruder <- intruder_published(vars = vars, strata = strata)
    risk_battery(original, masked, intruder = intruder,
                 m = m, sensitive = sensitive, seed = seed, nthreads = nthreads)
  }
  structure(list(rmd = rmd, linkage = linkage, linkage_top = linkage_top, replay = replay,
                 pmse = pmse, delta = delta, model = model, battery = bat,
                 vars = vars, strata = linkage$strata, n = nrow(original)),
            class = "detanon_assess")
}

#' @export
print.detanon_assess <- function(x, ...) {
  r <- x$rmd
  l <- x$linkage
  p <- x$pmse
  cat(sprintf("detanon assessment of %s; masked: %s\n", plural(x$n, "record"),
              paste(x$vars, collapse = ", ")))
  if (length(x$strata)) cat("  strata: ", paste(x$strata, collapse = " x "), "\n", sep = "")
  cat("\nDisclosure risk (shares of records; lower is safer)\n")
  line <- function(name, value, what) cat(sprintf("  %-8s %-16s %s\n", name, value, what))
  line("risk1", sprintf("%.4f (%d)", r$risk1, r$n_risk1), "masked value close to its original")
  line("risk2", sprintf("%.4f (%d)", r$risk2, r$n_risk2),
       sprintf("... and %s within w2 = %s",
               if (r$neighbours == 1) "no other record" else paste("<", plural(r$neighbours, "other record")),
               format(r$w2)))
  line("linkage", sprintf("%.4f (%.0f)", l$rate, l$n_linked),
       sprintf("nearest original is the own (blind %.4f)", l$blind_rate))
  if (!is.null(x$linkage_top)) {
    lt <- x$linkage_top
    line(sprintf("top-%d", lt$m), sprintf("%.4f (%.0f)", lt$rate_m, lt$n_linked_m),
         sprintf("own among the %d nearest (blind %.4f)", lt$m, lt$blind_rate_m))
    line("re-id", sprintf("%.4f", l$reid), sprintf("mean chance of a right pick (largest %.4f)", l$reid_max))
  }
  if (!is.null(x$replay)) {
    b <- x$replay$by_p
    line("replay", "", "intruder re-runs the masking on a share p:")
    cat(sprintf("  %-8s %s\n", "", paste(sprintf("p = %s: %.4f", vapply(b$p, format, ""), b$rate),
                                         collapse = ", ")))
  } else {
    line("replay", "(not run)", "the release does not record how it was made")
  }
  cat("  These cover re-identification by distance on the masked variables by an\n",
      "  intruder who knows the originals. They do NOT cover rare categorical\n",
      "  combinations (strata_table()), attribute disclosure or other background\n",
      "  knowledge. Records not flagged are not proven safe.\n", sep = "")
  if (!is.null(x$battery)) {
    cat("\nRisk battery, worst attack (largest advantage over its control) first\n")
    cat(intruder_lines(x$battery$intruder, "  "), sep = "\n")
    print_battery_table(x$battery, indent = "  ")
    cat("  rate: right about one record; control: the same attack on people not in the\n",
        "  release (inference: without the record's own released record); advantage:\n",
        "  (rate - control) / (1 - control); worst: worst stratum; prec10: rate of the\n",
        "  10% most confident claims. Attacks not in the battery are not covered: see\n",
        "  ?risk_battery and each attack's help.\n", sep = "")
  }
  cat("\nUtility (how close the release stays to the original)\n")
  line("U", sprintf("%.3g", p$U), sprintf("pMSE: how well a %s separates them",
                                           if (identical(p$method, "cart")) "tree" else "logistic model"))
  line("S_pMSE", sprintf("%.3g", p$S_pMSE), "U against its null value (about 1: no signal)")
  for (v in names(x$delta)) {
    line(if (v == names(x$delta)[1L]) "delta" else "", sprintf("%.4f", x$delta[[v]]),
         sprintf("%s: share of its variability added", v))
  }
  if (!is.null(x$model)) {
    m <- x$model
    line("model", sprintf("%.3f", max(m$std_diff, na.rm = TRUE)),
         sprintf("largest std. coefficient change (%s)", m$term[which.max(m$std_diff)]))
    line("", sprintf("%.3f", min(m$ci_overlap, na.rm = TRUE)),
         sprintf("smallest CI overlap (1: same), %s", plural(nrow(m), "coefficient")))
  } else {
    line("model", "(no formula)", "")
  }
  cat("  U ignores record pairing, delta the relations between variables, and the\n",
      "  model check covers one analysis. None of them measures disclosure risk.\n", sep = "")
  invisible(x)
}

#' @export
summary.detanon_assess <- function(object, ...) {
  structure(list(table = as.data.frame(object), model = object$model, n = object$n),
            class = "summary.detanon_assess")
}

#' @export
print.summary.detanon_assess <- function(x, ...) {
  cat(sprintf("detanon assessment of %d records\n\n", x$n))
  tab <- x$table
  tab$value <- signif(tab$value, 4)
  print(tab, row.names = FALSE)
  if (!is.null(x$model)) {
    cat("\n")
    print(x$model)
  }
  invisible(x)
}

#' @export
as.data.frame.detanon_assess <- function(x, row.names = NULL, optional = FALSE, ...) {
  r <- x$rmd
  l <- x$linkage
  p <- x$pmse
  rows <- list(
    c("risk", "risk1", "", r$risk1), c("risk", "n_risk1", "", r$n_risk1),
    c("risk", "risk2", "", r$risk2), c("risk", "n_risk2", "", r$n_risk2),
    c("risk", "wrisk1", "", r$wrisk1), c("risk", "wrisk2", "", r$wrisk2),
    c("risk", "linkage_rate", "", l$rate), c("risk", "linkage_blind_rate", "", l$blind_rate),
    c("risk", "reid_mean", "", l$reid), c("risk", "reid_max", "", l$reid_max),
    c("utility", "U", "", p$U), c("utility", "S_pMSE", "", p$S_pMSE)
  )
  if (!is.null(x$linkage_top)) {
    rows[[length(rows) + 1L]] <- c("risk", "linkage_top_rate", paste0("m = ", x$linkage_top$m),
                                   x$linkage_top$rate_m)
  }
  if (!is.null(x$replay)) {
    b <- x$replay$by_p
    for (i in seq_len(nrow(b))) {
      rows[[length(rows) + 1L]] <- c("risk", "replay_rate", paste0("p = ", format(b$p[i])), b$rate[i])
    }
  }
  if (!is.null(x$battery)) {
    tab <- as.data.frame(x$battery)
    for (i in seq_len(nrow(tab))) {
      for (f in c("rate", "control_rate", "advantage", "rate_m", "worst_stratum", "precision_top10")) {
        if (!is.na(tab[[f]][i])) rows[[length(rows) + 1L]] <- c("risk", paste0("battery_", f), tab$name[i], tab[[f]][i])
      }
    }
  }
  for (v in names(x$delta)) rows[[length(rows) + 1L]] <- c("utility", "delta", v, x$delta[[v]])
  if (!is.null(x$model)) {
    for (i in seq_len(nrow(x$model))) {
      rows[[length(rows) + 1L]] <- c("utility", "std_diff", x$model$term[i], x$model$std_diff[i])
      rows[[length(rows) + 1L]] <- c("utility", "ci_overlap", x$model$term[i], x$model$ci_overlap[i])
    }
  }
  m <- do.call(rbind, rows)
  data.frame(kind = m[, 1L], measure = m[, 2L], term = m[, 3L], value = as.numeric(m[, 4L]),
             stringsAsFactors = FALSE)
}

#' Plot an assessment: the paper's Figures 2-4
#'
#' * `"risk"` (Figure 2): original against masked values of two variables, with the
#'   risk1 records in orange and the risk2 records in red (needs `original` and `masked`,
#'   because the assessment object keeps no record values). With one variable, original
#'   against masked value.
#' * `"pmse"` (Figure 3): boxplots of the propensity scores of the original and masked rows.
#' * `"model"` (Figure 4): each coefficient with its confidence interval, original and
#'   masked side by side, on the scale of the original estimate's standard error
#'   (so all coefficients fit one axis; 0 marks the original estimate).
#'
#' @param x An object made by [assess()].
#' @param type Which figures to draw, any of `"risk"`, `"pmse"`, `"model"`. The default
#'   draws those that are available, side by side.
#' @param original,masked The two data frames given to [assess()], for `type = "risk"`.
#' @param vars Two of the assessed variables to plot for `"risk"` (default: the first two).
#' @param ... Further graphical parameters passed to the plotting functions.
#' @return `x`, invisibly.
#' @family reports
#' @export
plot.detanon_assess <- function(x, type = NULL, original = NULL, masked = NULL, vars = NULL, ...) {
  have_data <- !is.null(original) && !is.null(masked)
  if (is.null(type)) {
    type <- c(if (have_data) "risk", "pmse", if (!is.null(x$model)) "model")
  }
  if (!is.character(type) || !length(type) || !all(type %in% c("risk", "pmse", "model"))) {
    stop_arg("`type` must name one or more of \"risk\", \"pmse\", \"model\".")
  }
  if ("risk" %in% type && !have_data) {
    stop_arg("`type = \"risk\"` needs the data: plot(x, original = <original>, masked = <masked>) ",
             "(the assessment keeps no record values).")
  }
  if ("model" %in% type && is.null(x$model)) {
    stop_arg("`type = \"model\"` needs an assessment made with a `formula`.")
  }
  if (length(type) > 1L) {
    old <- graphics::par(mfrow = c(1L, length(type)))
    on.exit(graphics::par(old), add = TRUE)
  }
  for (t in type) {
    switch(t,
      risk = plot_risk(x, original, masked, vars, ...),
      pmse = plot_pmse(x, ...),
      model = plot_model(x, ...))
  }
  invisible(x)
}

plot_risk <- function(x, original, masked, vars, ...) {
  if (nrow(original) != x$n || nrow(masked) != x$n) {
    stop_arg("`original` and `masked` must be the data frames given to assess() (", x$n, " rows).")
  }
  vars <- if (is.null(vars)) utils::head(x$vars, 2L) else vars
  if (!is.character(vars) || !all(vars %in% x$vars) || length(vars) > 2L) {
    stop_arg("`vars` must name one or two of the assessed variables: ", quote_names(x$vars), ".")
  }
  r1 <- x$rmd$rows_risk1
  r2 <- x$rmd$rows_risk2
  grey <- grDevices::adjustcolor("grey50", alpha.f = 0.5)
  col <- rep(grey, x$n)
  col[r1] <- "orange"
  col[r2] <- "red"
  if (length(vars) == 1L) {
    graphics::plot(original[[vars]], masked[[vars]], col = col, pch = 20, xlab = paste("original", vars),
                   ylab = paste("masked", vars), main = "Risky records", ...)
    graphics::abline(0, 1, lty = 3)
  } else {
    graphics::plot(original[[vars[1L]]], original[[vars[2L]]], col = "grey80", pch = 1,
                   xlab = vars[1L], ylab = vars[2L], main = "Risky records (masked values)", ...)
    ord <- order(col != grey)
    graphics::points(masked[[vars[1L]]][ord], masked[[vars[2L]]][ord], col = col[ord], pch = 20)
  }
  graphics::legend("topright", bty = "n", pch = c(1, 20, 20, 20)[if (length(vars) == 1L) 2:4 else 1:4],
                   col = c("grey80", grey, "orange", "red")[if (length(vars) == 1L) 2:4 else 1:4],
                   legend = c("original", "masked", "risk1", "risk2")[if (length(vars) == 1L) 2:4 else 1:4])
}

plot_pmse <- function(x, ...) {
  s <- x$pmse$scores
  n <- length(s) / 2
  g <- factor(rep(c("original", "masked"), each = n), levels = c("original", "masked"))
  graphics::boxplot(s ~ g, xlab = "", ylab = "propensity score",
                    main = sprintf("Propensity scores (U = %.3g)", x$pmse$U), ...)
  graphics::abline(h = x$pmse$c, lty = 3)
}

plot_model <- function(x, ...) {
  m <- x$model
  k <- nrow(m)
  s <- m$se_or
  pos <- seq_len(k)
  lo <- c((m$lower_or - m$estimate_or) / s, (m$lower_an - m$estimate_or) / s)
  hi <- c((m$upper_or - m$estimate_or) / s, (m$upper_an - m$estimate_or) / s)
  rng <- range(c(lo, hi), finite = TRUE)
  graphics::plot(NA, xlim = rng, ylim = c(0.5, k + 0.5), yaxt = "n", ylab = "",
                 xlab = "estimate - original estimate (in original SEs)",
                 main = "Coefficients with confidence intervals", ...)
  graphics::axis(2, at = pos, labels = m$term, las = 1, cex.axis = 0.7)
  graphics::abline(v = 0, lty = 3)
  yo <- pos + 0.12
  ya <- pos - 0.12
  graphics::segments(lo[pos], yo, hi[pos], yo, col = "black")
  graphics::points(rep(0, k), yo, pch = 19, col = "black")
  graphics::segments(lo[k + pos], ya, hi[k + pos], ya, col = "red")
  graphics::points((m$estimate_an - m$estimate_or) / s, ya, pch = 17, col = "red")
  graphics::legend("topright", bty = "n", pch = c(19, 17), col = c("black", "red"),
                   legend = c("original", "masked"), cex = 0.8)
}
