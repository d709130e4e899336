#' The least damaging release within risk limits
#'
#' A custodian's question is rarely "what does k = 3 do" but "what is the least damaging
#' release whose risk is below my limits". `tune_release()` searches a space of maskings
#' of `data`, measures every candidate with the package's own risk and utility functions
#' (the same calls a user would make), and returns the candidate that meets every limit
#' with the least loss, with a report of what it tried, the risk-utility frontier it found
#' and why it stopped.
#'
#' @section The search:
#' 1. Single methods, as baselines: [anonymise()] with `k` = 3, 5, 10, 20 (and, when
#'    `keps_epsilon` is given, [anonymise_keps()] at those budgets, measured on the rows
#'    aligned by the key of [anonymise_keps_with_key()]; being shuffled, they are
#'    measured but never returned).
#' 2. Adaptive k per record ([anonymise_adaptive()]), which grows the neighbourhoods of
#'    the records that stay linkable: for a start `k` of 2 and 3, the records whose own
#'    original is among the `m` nearest are grown until at most the `top_m` limit remains
#'    (cheapest first), nearest-linked records always, and the records flagged by the risk1
#'    interval when a `risk1` or `risk2` limit is set. When a candidate misses a limit
#'    because records reached their cap, the cap `k_max` is doubled (up to the largest
#'    stratum); when the measured top-m rate misses its limit, the rate asked of the
#'    kernel is lowered by a tenth (at most `max_tries` times per start).
#' 3. For the frontier: adaptive k per record at the top-m rates 0.5, 0.3, 0.2, 0.1 and
#'    0.05, and with the nearest-neighbour test alone (k from 3 to 33).
#' Every candidate is measured: [risk_linkage()] with `m = 1` (overall and per stratum)
#' and with `m`, [risk_rmd()] with `deterministic = TRUE` (risk1, risk2), the smallest
#' stratum (k-anonymity of the released strata), and the `objective`. The search stops
#' when every start has met the limits or used its tries; the reason is reported.
#'
#' Same inputs, same release: the adaptive kernel is deterministic, the risk measures use
#' no random numbers (`deterministic = TRUE`), and the (k, epsilon) candidates and the
#' replay attack draw from R's random number generator under `seed`.
#'
#' @section What the limits cover and what they do not:
#' The limits bound the success of an intruder who knows the original values of `vars`
#' and `strata` of everyone and links by distance (nearest and top-`m`), and sdcMicro's
#' interval heuristics risk1/risk2, on the returned release. They do not cover an intruder
#' who knows the algorithm and its settings: the replay attack ([risk_replay()]) is
#' reported beside the chosen release (p = 1, 0.5, 0.1) and is not limited, and a
#' deterministic release is replayed exactly by an intruder who holds all originals. They
#' do not cover other background knowledge, attribute disclosure within strata, rare
#' categorical combinations beyond the `k` limit, or membership disclosure. Meeting the
#' limits is not a proof of safety, and the report never says so.
#'
#' @inheritParams anonymise_adaptive
#' @param linkage Limit of the nearest-neighbour linkage rate ([risk_linkage()], `m = 1`),
#'   in (0, 1].
#' @param linkage_stratum Limit of the nearest-neighbour linkage rate in every stratum,
#'   in (0, 1] (1: no limit).
#' @param top_m Limit of the top-`m` linkage rate, in (0, 1].
#' @param m The list length of the top-m linkage, a whole number >= 1.
#' @param risk1,risk2 Limits of [risk_rmd()]'s risk1 (in (0, 1]) and risk2 (from 0 to 1: 0
#'   asks for no risk2 record).
#' @param k The smallest stratum size allowed in the release (k-anonymity of the released
#'   `strata`), a whole number >= 2; also the smallest `k` of the single methods. The
#'   number of points in the adaptive centroids is searched separately, from 2.
#' @param objective The loss to minimise: `"delta"` (the largest [utility_delta()] over
#'   `vars`), `"U"` ([utility_pmse()]'s U) or `"model"` (the largest standardised
#'   coefficient difference of [utility_model()] for `formula`).
#' @param formula,family The model of `objective = "model"`.
#' @param keps_epsilon `NULL`, or budgets of [anonymise_keps()] to try as single methods.
#' @param max_tries Tries per start of the adaptive search, a whole number >= 1.
#' @param seed Seed for R's random number generator (the (k, epsilon) candidates and the
#'   replay attack); the caller's random stream is left as it was.
#' @return An object of class `detanon_tuned`: a list with `release` (the chosen release,
#'   a masked copy of `data`, or `NULL` when no candidate met every limit), `chosen` (its
#'   row of `tried`), `tried` (a data frame, one row per candidate: method, settings,
#'   the measured risks, `loss`, `meets` and `fails`, the limits it missed), `frontier`
#'   (the candidates not beaten on both top-m linkage and loss), `replay` (the
#'   [risk_replay()] of the chosen release), `limits`, `objective` and `stop` (why the
#'   search stopped). `print()` and `plot()` methods show the report and the frontier.
#' @family masking verbs
#' @seealso [anonymise_adaptive()], [risk_linkage()], [risk_replay()], [assess()].
#' @examples
#' \donttest{
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' tuned <- tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
#'                       linkage = 0.01, top_m = 0.15, m = 3, risk1 = 0.005, risk2 = 0)
#' tuned
#' plot(tuned)
#' }
#' @export
tune_release <- function(data, vars = NULL, strata = NULL, linkage = 0.01, linkage_stratum = 1,
                         top_m = 0.15, m = 3, risk1 = 0.005, risk2 = 0, k = 3,
                         objective = c("delta", "U", "model"), formula = NULL,
                         family = stats::gaussian(), keps_epsilon = NULL, max_tries = 4,
                         nthreads = getOption("detanon.nthreads", 1L), seed = 1) {
  check_data_frame(data, "data")
  strata <- check_columns(strata, data, "strata", default_strata(data))
  check_strata_columns(data, strata)
  vars <- check_columns(vars, data, "vars",
                        setdiff(names(data)[vapply(data, is_continuous, logical(1))], strata))
  check_vars(data, vars, strata)
  limits <- list(
    linkage = check_limit(linkage, "linkage"),
    linkage_stratum = check_limit(linkage_stratum, "linkage_stratum"),
    top_m = check_limit(top_m, "top_m"),
    risk1 = check_limit(risk1, "risk1"),
    risk2 = check_limit(risk2, "risk2", zero = TRUE)
  )
  m <- check_whole(m, "m", min = 1)
  k <- check_whole(k, "k", min = 2)
  objective <- match_choice(objective, "objective")
  if (objective == "model" && !inherits(formula, "formula")) {
    stop_arg("`objective = \"model\"` needs a model `formula`, such as `y ~ x1 + x2`.")
  }
  family <- check_family(family)
  if (!is.null(keps_epsilon) && (!is.numeric(keps_epsilon) || anyNA(keps_epsilon) ||
                                 any(keps_epsilon <= 0) || any(!is.finite(keps_epsilon)))) {
    stop_arg("`keps_epsilon` must be NULL or positive budgets, not ", show_value(keps_epsilon), ".")
  }
  max_tries <- check_whole(max_tries, "max_tries", min = 1)
  nthreads <- check_nthreads(nthreads)
  if (!is.null(seed)) seed <- check_whole(seed, "seed", min = -.Machine$integer.max)
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  if (anyNA(df[vars])) {
    stop_arg("`vars` have missing values; impute them first (e.g. anonymise(na = \"median\")).",
             kind = "data")
  }
  id <- stratum_ids(df, strata)
  sizes <- tabulate(id)
  n <- nrow(df)
  # limits no release of these strata can meet
  if (min(sizes) < k) {
    stop_arg("the limit `k` = ", k, " cannot be met: the strata are released unchanged and ",
             "the smallest has ", plural(min(sizes), "record"), ". Coarsen or merge the strata ",
             "(merge_small_strata()) or lower `k`.")
  }
  floor_m <- sum(sizes[sizes <= m]) / n
  if (floor_m > limits$top_m) {
    stop_arg("the limit `top_m` = ", format(limits$top_m), " cannot be met with `m` = ", m,
             ": in strata of at most ", m, " records every record's own original is among the ",
             m, " nearest, which alone gives a rate of ", format(signif(floor_m, 3)), ".")
  }

  limit_names <- c("linkage", "linkage_stratum", "top_m", "risk1", "risk2")
  # risk_rmd(deterministic = TRUE) in two halves: the robust covariance of the originals
  # once, the masked side per candidate (the same code, so the same numbers)
  x_orig <- numeric_matrix(df, vars)
  check_not_constant(x_orig, "data")
  core <- rmd_core(x_orig, deterministic = TRUE)
  evaluate <- function(method, settings, release, original = df) {
    l1 <- risk_linkage(original, release, vars = vars, strata = strata, nthreads = nthreads)
    lm <- risk_linkage(original, release, vars = vars, strata = strata, m = m, nthreads = nthreads)
    r <- if (identical(original, df)) {
      rmd_result(core, numeric_matrix(release, vars), 0.01, 0.05, 1L, vars, TRUE, nthreads)
    } else {
      risk_rmd(original, release, vars = vars, deterministic = TRUE, nthreads = nthreads)
    }
    loss <- switch(objective,
      delta = max(utility_delta(original, release, vars = vars)$delta),
      U = utility_pmse(original, release)$U,
      model = max(utility_model(original, release, formula, family = family)$std_diff, na.rm = TRUE))
    got <- c(linkage = l1$rate, linkage_stratum = max(l1$by_stratum$rate), top_m = lm$rate,
             risk1 = r$risk1, risk2 = r$risk2)
    fails <- limit_names[got[limit_names] > unlist(limits[limit_names])]
    capped <- if (identical(method, "adaptive")) release_info(release)$counts$n_capped else NA_integer_
    row <- data.frame(method = method, settings = settings, t(got), reid = l1$reid, loss = loss,
                      n_capped = capped, meets = !length(fails),
                      fails = paste(fails, collapse = ", "), stringsAsFactors = FALSE)
    row
  }

  tried <- list()
  releases <- list()
  add <- function(row, release) {
    tried[[length(tried) + 1L]] <<- row
    releases[length(releases) + 1L] <<- list(release)
    row
  }
  quiet <- function(expr) suppressMessages(suppressWarnings(expr))

  with_seed(seed, {
    # 1. single methods
    for (kk in sort(unique(c(k, 3L, 5L, 10L, 20L)))) {
      if (kk > min(sizes) || kk < k) next
      rel <- quiet(anonymise(data, k = kk, vars = vars, strata = strata, nthreads = nthreads,
                             check_identifiers = FALSE))
      add(evaluate("anonymise", paste0("k = ", kk), rel), rel)
    }
    for (eps in keps_epsilon) {
      res <- quiet(anonymise_keps_with_key(data, vars = vars, strata = strata, k = k, epsilon = eps))
      orig <- df[res$origin_row, , drop = FALSE]
      rel <- as.data.frame(res$data)
      attr(rel, "detanon") <- NULL
      row <- evaluate("keps", paste0("k = ", k, ", epsilon = ", format(eps)), rel, original = orig)
      add(row, NULL) # shuffled rows: measured, but not returned as the release
    }
    # 2. adaptive k per record
    use_w1 <- limits$risk1 < 1 || limits$risk2 < 1
    stop_reason <- character()
    last_k_max <- integer()
    for (k0 in unique(c(2L, 3L))) {
      rate <- limits$top_m
      k_max <- min(max(33L, 3L * k0), max(sizes))
      for (try in seq_len(max_tries)) {
        settings <- sprintf("k = %d..%d, m = %d, rate = %.4g%s", k0, k_max, m, rate,
                            if (use_w1) ", w1 = 0.01" else "")
        rel <- quiet(anonymise_adaptive(data, vars = vars, strata = strata, k = k0, k_max = k_max,
                                        m = m, rate = rate, w1 = if (use_w1) 0.01,
                                        nthreads = nthreads, check_identifiers = FALSE))
        row <- add(evaluate("adaptive", settings, rel), rel)
        last_k_max[as.character(k0)] <- k_max
        if (row$meets) break
        fails <- strsplit(row$fails, ", ")[[1]]
        grew <- FALSE
        if (row$n_capped > 0 && k_max < max(sizes)) {
          k_max <- min(2L * k_max, max(sizes))
          grew <- TRUE
        }
        if ("top_m" %in% fails) {
          rate <- rate * 0.9
          grew <- TRUE
        }
        if (!grew) {
          stop_reason <- c(stop_reason, sprintf("start k = %d: %s missed and no setting left to raise", k0, row$fails))
          break
        }
        if (try == max_tries) {
          stop_reason <- c(stop_reason, sprintf("start k = %d: %s still missed after %s", k0,
                                                row$fails, plural(max_tries, "try", "tries")))
        }
      }
    }
    # 3. the frontier: other rates at the caps found above, and the prototype of the issue
    #    (k per record from 3 to 33, nearest-neighbour test only)
    for (rate in c(0.5, 0.3, 0.2, 0.1, 0.05)) {
      if (rate <= floor_m) next
      rel <- quiet(anonymise_adaptive(data, vars = vars, strata = strata, k = 2L,
                                      k_max = last_k_max[["2"]], m = m, rate = rate,
                                      w1 = if (use_w1) 0.01, nthreads = nthreads,
                                      check_identifiers = FALSE))
      add(evaluate("adaptive", sprintf("k = 2..%d, m = %d, rate = %.4g%s", last_k_max[["2"]], m, rate,
                                       if (use_w1) ", w1 = 0.01" else ""), rel), rel)
    }
    rel <- quiet(anonymise_adaptive(data, vars = vars, strata = strata, k = max(3L, k),
                                    k_max = min(33L, max(sizes)), m = 1L, nthreads = nthreads,
                                    check_identifiers = FALSE))
    add(evaluate("adaptive", sprintf("k = %d..%d, m = 1 (nearest only)", max(3L, k), min(33L, max(sizes))),
                 rel), rel)
  })

  tried_df <- do.call(rbind, tried)
  rownames(tried_df) <- NULL
  ok <- which(tried_df$meets & !vapply(releases, is.null, NA))
  best <- if (length(ok)) ok[which.min(tried_df$loss[ok])] else NA_integer_
  front <- pareto(tried_df$top_m, tried_df$loss)
  chosen <- if (!is.na(best)) tried_df[best, , drop = FALSE] else NULL
  release <- if (!is.na(best)) releases[[best]] else NULL
  stop <- if (!is.na(best)) {
    sprintf("%d candidates tried; %d met every limit; the least loss (%s = %.4g) is %s (%s). %s",
            nrow(tried_df), length(ok), objective, tried_df$loss[best], tried_df$method[best],
            tried_df$settings[best], paste(stop_reason, collapse = "; "))
  } else {
    closest <- which.min(rowSums(sweep(as.matrix(tried_df[limit_names]), 2L,
                                       unlist(limits[limit_names]), "/") > 1))
    sprintf("%d candidates tried; none met every limit. Closest: %s (%s), which misses %s. %s",
            nrow(tried_df), tried_df$method[closest], tried_df$settings[closest],
            tried_df$fails[closest], paste(stop_reason, collapse = "; "))
  }
  replay <- if (!is.null(release)) {
    risk_replay(df, release, vars = vars, strata = strata, nthreads = nthreads, seed = seed)
  }
  structure(list(release = release, chosen = chosen, tried = tried_df,
                 frontier = tried_df[front, , drop = FALSE], replay = replay,
                 limits = c(limits, m = m, k = k), objective = objective, stop = trimws(stop)),
            class = "detanon_tuned")
}

check_limit <- function(x, arg, zero = FALSE) {
  ok <- is.numeric(x) && length(x) == 1L && !is.na(x) && x <= 1 && (if (zero) x >= 0 else x > 0)
  if (!ok) {
    stop_arg("the limit `", arg, "` must be a single share in ", if (zero) "[0, 1]" else "(0, 1]",
             " (1: no limit), not ", show_value(x), ".")
  }
  as.numeric(x)
}

# Rows not beaten on both x and y (lower is better), ordered by x.
pareto <- function(x, y) {
  o <- order(x, y)
  keep <- logical(length(x))
  best <- Inf
  for (i in o) {
    if (y[i] < best) { keep[i] <- TRUE; best <- y[i] }
  }
  o[keep[o]]
}

#' @export
print.detanon_tuned <- function(x, ...) {
  l <- x$limits
  cat(sprintf("tune_release(): limits linkage <= %s (per stratum <= %s), top-%d <= %s, risk1 <= %s, risk2 <= %s, strata >= %d\n",
              format(l$linkage), format(l$linkage_stratum), l$m, format(l$top_m), format(l$risk1),
              format(l$risk2), l$k))
  cat(sprintf("  objective: %s; %s tried\n", x$objective, plural(nrow(x$tried), "candidate")))
  show <- x$tried
  show$fails[show$fails == ""] <- "-"
  print(show[c("method", "settings", "linkage", "top_m", "risk1", "risk2", "loss", "fails")],
        row.names = FALSE, digits = 3)
  if (!is.null(x$chosen)) {
    ch <- x$chosen
    cat(sprintf("\nChosen: %s (%s)\n  measured on the release: linkage %.4f (largest stratum %.4f), top-%d %.4f, risk1 %.4f, risk2 %.4f, %s %.4g\n",
                ch$method, ch$settings, ch$linkage, ch$linkage_stratum, l$m, ch$top_m, ch$risk1,
                ch$risk2, x$objective, ch$loss))
    b <- x$replay$by_p
    cat(sprintf("  replay attack (not limited): %s\n",
                paste(sprintf("p = %s: %.4f", vapply(b$p, format, ""), b$rate), collapse = ", ")))
  } else {
    cat("\nNo candidate met every limit; nothing is returned as a release.\n")
  }
  cat("Stopped: ", x$stop, "\n", sep = "")
  cat("The limits cover linking by distance and the risk1/risk2 heuristics for an intruder who\n",
      "knows the originals, not one who knows the algorithm (see the replay line), other\n",
      "background knowledge or attribute disclosure. Meeting them does not prove the release safe.\n",
      sep = "")
  invisible(x)
}

#' @export
plot.detanon_tuned <- function(x, ...) {
  t <- x$tried
  col <- ifelse(t$method == "adaptive", "firebrick", ifelse(t$method == "keps", "darkgreen", "grey30"))
  pch <- ifelse(t$meets, 19, 1)
  graphics::plot(t$top_m, t$loss, col = col, pch = pch, log = "y",
                 xlab = sprintf("top-%d linkage", x$limits$m), ylab = x$objective,
                 main = "Risk-utility frontier", ...)
  f <- x$frontier
  graphics::lines(f$top_m, f$loss, col = "firebrick", lty = 2)
  graphics::abline(v = x$limits$top_m, lty = 3)
  if (!is.null(x$chosen)) graphics::points(x$chosen$top_m, x$chosen$loss, pch = 8, cex = 2)
  graphics::legend("topright", bty = "n", pch = c(19, 19, 19, 1, 8),
                   col = c("grey30", "firebrick", "darkgreen", "grey30", "black"),
                   legend = c("anonymise(k)", "adaptive k", "(k, epsilon)", "misses a limit", "chosen"))
  invisible(x)
}
