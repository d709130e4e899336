#' Assess a masked release: disclosure risk and utility in one report
#'
#' Runs [risk_rmd()], [risk_linkage()] (nearest-neighbour and top-`top_m`),
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
#'   `top_m` nearest; and the expected re-identification probability of an intruder
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
#' @param w1,w2,m Parameters of [risk_rmd()].
#' @param top_m The list length of the top-m linkage ([risk_linkage()] with `m = top_m`).
#' @param mask,p,seed Passed to [risk_replay()]; with `mask = NULL` the replay is run
#'   only when `masked` records how it was made (a release of [anonymise()] or
#'   [anonymise_adaptive()]).
#' @param battery If `TRUE` (the default), run the risk battery ([risk_battery()]) with
#'   the list length `top_m`; `FALSE` leaves it out.
#' @param intruder The battery's intruder, made by [intruder()]; default the intruder of
#'   the linkage measures (`intruder(vars, strata)`).
#' @param sensitive A column for the battery's attribute-inference attack
#'   ([attack_inference()]), or `NULL` to leave that attack out.
#' @param ... Further arguments to [risk_rmd()] (`deterministic`, or arguments of
#'   `robustbase::covMcd()`).
#' @return An object of class `detanon_assess`: a list with `rmd`, `linkage`,
#'   `linkage_top` (top-`top_m` linkage), `replay` (or `NULL`), `pmse`,
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
#' @export
assess <- function(original, masked, vars = NULL, strata = NULL, formula = NULL,
                   family = stats::gaussian(), pmse_vars = NULL, interactions = FALSE,
                   pmse_method = c("logit", "cart"),
                   w1 = 0.01, w2 = 0.05, m = 1, top_m = 3, mask = NULL, p = c(1, 0.5, 0.1), ...,
                   battery = TRUE, intruder = NULL, sensitive = NULL,
                   nthreads = getOption("detanon.nthreads", 1L), seed = NULL) {
  vars <- check_pair(original, masked, vars, strata = strata)
  if (is.null(strata)) strata <- attr(vars, "strata")
  vars <- as.vector(vars)
  if (!is.null(formula) && !inherits(formula, "formula")) {
    stop_arg("`formula` must be NULL or a model formula such as `y ~ x1 + x2`, not ",
             show_value(formula), ".")
  }
  family <- check_family(family)
  rmd <- risk_rmd(original, masked, vars = vars, w1 = w1, w2 = w2, m = m, ..., nthreads = nthreads)
  linkage <- risk_linkage(original, masked, vars = vars, strata = strata, nthreads = nthreads)
  top_m <- check_whole(top_m, "top_m", min = 1)
  linkage_top <- risk_linkage(original, masked, vars = vars, strata = strata, m = top_m,
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
    if (is.null(intruder)) intruder <- intruder(vars = vars, strata = strata)
    risk_battery(original, masked, intruder = intruder,
                 m = top_m, sensitive = sensitive, seed = seed, nthreads = nthreads)
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
  cat(sprintf("detanon assessment: %d records; masked variables %s%s\n", x$n,
              paste(x$vars, collapse = ", "),
              if (length(x$strata)) paste0("; strata ", paste(x$strata, collapse = " x ")) else ""))
  cat("\nDisclosure risk\n")
  cat(sprintf("  risk1 %.4f (%d records)  masked value inside a small interval around its original\n",
              r$risk1, r$n_risk1))
  cat(sprintf("  risk2 %.4f (%d records)  ... and fewer than %s within w2 = %s\n",
              r$risk2, r$n_risk2, plural(r$m, "other masked record"), format(r$w2)))
  cat(sprintf("  linkage %.4f (%.0f records) nearest original in stratum is the record's own; blind guess %.4f\n",
              l$rate, l$n_linked, l$blind_rate))
  if (!is.null(x$linkage_top)) {
    lt <- x$linkage_top
    cat(sprintf("  top-%d   %.4f (%.0f records) own original among the %d nearest; blind guess %.4f\n",
                lt$m, lt$rate, lt$n_linked, lt$m, lt$blind_rate))
    cat(sprintf("  re-id   %.4f mean, %.4f largest: picking among originals as near as the own\n",
                l$reid, l$reid_max))
  }
  if (!is.null(x$replay)) {
    b <- x$replay$by_p
    cat(sprintf("  replay  %s  (knows a share p, re-runs the masking)\n",
                paste(sprintf("p = %s: %.4f", vapply(b$p, format, ""), b$rate), collapse = ", ")))
  } else {
    cat("  replay  (not run: the release does not record how it was made; pass `mask`)\n")
  }
  cat("  Covers close-match re-identification on the masked variables by an intruder who\n",
      "  knows the originals. Does NOT cover: rare categorical combinations (strata_table()),\n",
      "  attribute disclosure, other background knowledge. Unflagged records are not proven safe.\n",
      sep = "")
  if (!is.null(x$battery)) {
    cat("\nRisk battery, worst attack (largest advantage over its control) first\n")
    cat("  Intruder who", paste(format(x$battery$intruder), collapse = "\n    and "), "\n")
    print_battery_table(x$battery, indent = "  ")
    cat("  rate: right about one record; control: the same attack on people not in the release\n",
        "  (inference: without the record's own released record); advantage: (rate - control) /\n",
        "  (1 - control); worst: worst stratum; prec10: rate of the 10% most confident claims.\n",
        "  Attacks not in the battery are not covered: see ?risk_battery and each attack's help.\n", sep = "")
  }
  cat("\nUtility\n")
  cat(sprintf("  U (pMSE) %.3g, S_pMSE %.3g  a %s's ability to tell the data sets apart\n",
              p$U, p$S_pMSE, if (identical(p$method, "cart")) "classification tree" else "logistic model"))
  cat(sprintf("  delta    %s  share of variability added by masking\n",
              paste(sprintf("%s %.4f", names(x$delta), x$delta), collapse = ", ")))
  if (!is.null(x$model)) {
    m <- x$model
    cat(sprintf("  model    max std. difference %.3f (%s), min CI overlap %.3f over %d coefficients\n",
                max(m$std_diff, na.rm = TRUE), m$term[which.max(m$std_diff)],
                min(m$ci_overlap, na.rm = TRUE), nrow(m)))
  } else {
    cat("  model    (no formula given)\n")
  }
  cat("  U ignores record pairing; delta ignores relations between variables; the model\n",
      "  check covers one analysis only. None of them measures disclosure risk.\n", sep = "")
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
                                   x$linkage_top$rate)
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
