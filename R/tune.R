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
#' Four families of candidates (`methods`), all in the release form `format`:
#' 1. `"anonymise"`: one `k` for every record, [anonymise()] with `k` = 3, 5, 10, 20 (those
#'    not below the limit `k`). When `keps_epsilon` is given, [anonymise_keps()] at those budgets
#'    too, measured on the rows aligned by the key of [anonymise_keps_with_key()]; being
#'    shuffled, they are measured but never returned.
#' 2. `"stratum"`: one `k` per stratum, from the ladder 3, 5, 10, 20, 40, 80, 160 (capped by
#'    each stratum's size). The records each stratum has linked, top-`m` linked and flagged
#'    by risk1/risk2 at every `k` of the ladder are measured on whole releases; then, while
#'    the summed counts predict a missed limit, the stratum with the most records behind the
#'    limit missed furthest moves one step up. The release ([anonymise_adaptive()] with a
#'    table `k` and `m = 0`) is measured; where it still misses, its own counts replace the
#'    prediction (at most `max_tries` candidates).
#' 3. `"adaptive"`: `k` per record, [anonymise_adaptive()] as one path of stages from light
#'    to strong masking, each stage starting from the neighbourhoods of the one before: the
#'    top-`m` rates 0.5, 0.3, 0.2 and the `top_m` limit, with the nearest-linked records
#'    always grown and, when a `risk1` or `risk2` limit is set, the records flagged by the
#'    risk1 interval (`w1 = 0.01`). While the candidate at the limit misses, another stage
#'    follows, at a rate lowered by a tenth, and with the cap `k_max` doubled when records
#'    at their cap remain (at most `max_tries` stages, and no more once a stage took off less
#'    than a quarter of the excess over the limits). Once the limits are met, two more
#'    stages at the rates 0.1 and 0.05 extend the frontier. Beside the path, the
#'    prototype of growing only the nearest-linked records (k from 3 to 33, `m = 1`).
#' 4. `"stir"`: the four candidates of least loss from the families above, each with its
#'    masked values shuffled inside Mondrian classes of at least 3 nearby released records
#'    within the strata ([stir()] after [equivalence_classes()] on the release).
#'
#' Every candidate is measured on its release: [risk_linkage()] with `m = 1` (overall and
#' per stratum) and with `m`, [risk_rmd()] with `deterministic = TRUE` (risk1, risk2), and
#' the `objective`, computed from parts built once: the kd-trees of the originals (one
#' per stratum, also searched by the adaptive kernel) and their robust covariance. The
#' strata are released unchanged, so the `k` limit (k-anonymity of the released strata)
#' is checked once, on the data. The search stops when each family has met the limits or
#' used its tries; the reasons are reported.
#'
#' Same inputs, same release: the maskings are deterministic except stirring, the risk
#' measures use no random numbers (`deterministic = TRUE`), and stirring, the (k, epsilon)
#' candidates and the replay attack draw from R's random number generator under `seed`.
#' The chosen release carries the metadata of the verb that made it (its settings and
#' aggregate counts), so [risk_replay()] and a user can replay it.
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
#' @param top_m_stratum Limit of the top-`m` linkage rate in every stratum, in (0, 1] (1: no
#'   limit).
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
#' @param methods The families of candidates to search (see the section The search):
#'   some of `"anonymise"`, `"stratum"`, `"adaptive"` and `"stir"`.
#' @param format The release form of every candidate, as in [anonymise()]: `"natural"`
#'   (values inside the range of k-record aggregates, whole-number variables rounded) or
#'   `"none"` (the values as computed). Rounding makes masked values of whole-number
#'   variables equal their originals more often, which the risk1 interval counts: on 1e5
#'   resampled Titanic records with k = 160, 85% of masked ages equal the original and
#'   risk1 is 0.27 in the natural form, 0.10 without it. Without it, values can leave the
#'   range of the originals (negative fares).
#' @param keps_epsilon `NULL`, or budgets of [anonymise_keps()] to try as single methods.
#' @param max_tries Candidates per family beyond its first that the search may make to
#'   meet a missed limit, a whole number >= 1.
#' @param seed Seed for R's random number generator (stirring, the (k, epsilon) candidates
#'   and the replay attack); the caller's random stream is left as it was.
#' @return An object of class `detanon_tuned`: a list with `release` (the chosen release,
#'   a masked copy of `data`, or `NULL` when no candidate met every limit), `chosen` (its
#'   row of `tried`), `tried` (a data frame, one row per candidate in the order tried, the
#'   row number being the candidate number that stirred candidates refer to: method, settings,
#'   the measured risks, `reid` (the mean expected re-identification probability), `loss`,
#'   `meets`, `fails` (the limits it missed) and `seconds` (the time to make and measure
#'   it)), `frontier`
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
#' @section sdcMicro: `data` may be an `sdcMicroObj`; `release` is then one too ([sdc_extract()]).
#' @export
tune_release <- function(data, vars = NULL, strata = NULL, linkage = 0.01, linkage_stratum = 1,
                         top_m = 0.15, top_m_stratum = 1, m = 3, risk1 = 0.005, risk2 = 0, k = 3,
                         objective = c("delta", "U", "model"), formula = NULL,
                         family = stats::gaussian(),
                         methods = c("anonymise", "stratum", "adaptive", "stir"),
                         format = c("natural", "none"), keps_epsilon = NULL, max_tries = 4,
                         nthreads = getOption("detanon.nthreads", 1L), seed = 1) {
  if (is_sdc(data)) return(sdc_verb(tune_release, data, match.call(), parent.frame())) # R/sdcmicro.R
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
    top_m_stratum = check_limit(top_m_stratum, "top_m_stratum"),
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
  all_methods <- eval(formals(sys.function())$methods)
  if (!is.character(methods) || !length(methods) || anyNA(methods) || !all(methods %in% all_methods)) {
    stop_arg("`methods` must be some of ", paste0("\"", all_methods, "\"", collapse = ", "),
             ", not ", show_value(methods), ".")
  }
  if (!is.null(keps_epsilon) && (!is.numeric(keps_epsilon) || anyNA(keps_epsilon) ||
                                 any(keps_epsilon <= 0) || any(!is.finite(keps_epsilon)))) {
    stop_arg("`keps_epsilon` must be NULL or positive budgets, not ", show_value(keps_epsilon), ".")
  }
  format <- match_choice(format, "format")
  max_tries <- check_whole(max_tries, "max_tries", min = 1)
  nthreads <- check_nthreads(nthreads)
  if (!is.null(seed)) seed <- check_whole(seed, "seed", min = -.Machine$integer.max)
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  if (anyNA(df[vars])) {
    stop_arg("`vars` have missing values; impute them first (e.g. anonymise(na = \"median\")).",
             kind = "data")
  }
  n <- nrow(df)
  if (n < length(vars) + 2L) {
    stop_arg("`data` needs more records than variables to measure risk1 and risk2: ",
             plural(n, "record"), " for ", plural(length(vars), "variable"), ".", kind = "data")
  }
  check_not_constant(numeric_matrix(df, vars), "data")
  # the parts every candidate shares: the originals' z-scores, their kd-trees (one rank
  # index, queried by the adaptive kernel and by every risk evaluation) and their robust
  # covariance (risk1/risk2)
  p <- adaptive_setup(df, vars, strata, rmd = TRUE, nthreads = nthreads)
  sizes <- p$sizes
  floor_m <- check_tune_limits(limits, k, m, sizes, n)
  ev <- tune_evaluator(df, vars, strata, p, limits, m, objective, formula, family, nthreads)

  tried <- list()
  releases <- list()
  masks <- list()
  clock <- proc.time()[[3L]]
  add <- function(row, release, mask = NULL) {
    row$id <- length(tried) + 1L
    now <- proc.time()[[3L]]
    row$seconds <- now - clock # making and measuring it (and the rungs it needed)
    clock <<- now
    tried[[row$id]] <<- row
    releases[row$id] <<- list(release)
    masks[row$id] <<- list(mask)
    row
  }
  quiet <- function(expr) suppressMessages(suppressWarnings(expr))
  # a release of anonymise_adaptive() from the shared parts, with the settings that make
  # it again (so that risk_replay() and the user can replay it from its metadata)
  adaptive <- function(k_start, k0, k_max, mm, rate, w1, fit = NULL) {
    if (is.null(fit)) fit <- adaptive_fit(p, k0, k_max, mm, rate, w1, nthreads)
    quiet(adaptive_release(data, df, p, fit, format, min(k0),
                           settings = list(k = k_start, k_max = k_max, m = mm, rate = rate, w1 = w1,
                                           format = format, vars = vars, strata = strata)))
  }
  k_table <- function(choice) k_table_of(df, strata, p, choice[p$id])
  stop_reason <- character()
  use_w1 <- limits$risk1 < 1 || limits$risk2 < 1
  w1 <- if (use_w1) 0.01

  with_seed(seed, {
    # 1. single methods: anonymise() with one k (also the first counts of the k-per-stratum
    #    ladder)
    singles <- list()
    for (kk in if (any(c("anonymise", "stratum") %in% methods)) sort(unique(c(k, 3L, 5L, 10L, 20L)))) {
      if (kk > min(sizes) || kk < k) next
      rel <- quiet(anonymise(data, k = kk, vars = vars, strata = strata, format = format,
                             nthreads = nthreads, check_identifiers = FALSE))
      singles[[as.character(kk)]] <- ev(rel)
      if ("anonymise" %in% methods) add(tune_row(singles[[as.character(kk)]], "anonymise", paste0("k = ", kk)), rel)
    }
    for (eps in keps_epsilon) {
      res <- quiet(anonymise_keps_with_key(data, vars = vars, strata = strata, k = k, epsilon = eps))
      rel <- as.data.frame(res$data)
      attr(rel, "detanon") <- NULL
      e <- ev(rel, origin_row = res$origin_row)
      add(tune_row(e, "keps", paste0("k = ", k, ", epsilon = ", format(eps))), NULL) # shuffled: measured, not returned
    }

    # 2. k per stratum: the strata's records counted as linked, flagged or at top-m risk at
    #    each k of a ladder (measured on whole releases: the singles above, and releases
    #    with that k in every stratum that holds it); then, greedily, while the counts
    #    predict a missed limit, the stratum with the most records behind the limit missed
    #    furthest moves one k up. The candidate is measured; where it still misses, its own
    #    counts replace the prediction and the greedy goes on (at most `max_tries` candidates).
    if ("stratum" %in% methods) {
      # (up to k = 160: beyond, one k per stratum spends more than any candidate here)
      ladder <- sort(unique(c(k, 3L, 5L, 10L, 20L, 40L, 80L, 160L)))
      ladder <- ladder[ladder >= k & ladder <= max(k, min(160L, max(sizes)))]
      # a stratum's centroids (before step 5) depend on its own records and k only: those of
      # each k of the ladder are computed once, and a candidate takes every stratum's rows
      # from the k it was given
      at_rung <- list()
      cent_rung <- list()
      rung_k <- function(r) pmin(ladder[r], sizes)
      rung_centroids <- function(r) {
        key <- as.character(r)
        if (is.null(cent_rung[[key]])) {
          k0 <- rung_k(r)[p$id]
          cent_rung[[key]] <<- adaptive_fit(p, k0, k0, 0L, 0, NULL, nthreads)
        }
        cent_rung[[key]]
      }
      rung <- function(r) { # per-stratum counts with ladder[r] (capped by each stratum's size)
        key <- as.character(r)
        if (is.null(at_rung[[key]])) {
          e <- singles[[as.character(ladder[r])]]
          if (is.null(e)) { # (no single method has a k above the smallest stratum)
            k0 <- rung_k(r)
            e <- ev(adaptive(k_table(k0), k0[p$id], max(k0), 0L, 0, NULL, fit = rung_centroids(r)))
          }
          at_rung[[key]] <<- tune_counts(e)
        }
        at_rung[[key]]
      }
      lim_n <- c(linkage = limits$linkage, top_m = limits$top_m, risk1 = limits$risk1,
                 risk2 = limits$risk2) * n
      choice_r <- rep(1L, length(sizes))
      top_r <- vapply(sizes, function(sz) which(ladder >= sz)[1L], integer(1))
      top_r[is.na(top_r)] <- length(ladder)
      fixed <- NULL # measured counts of the last candidate, per stratum
      for (try in seq_len(max_tries)) {
        repeat {
          cnt <- vapply(seq_along(sizes), function(i) {
            if (!is.null(fixed) && fixed$r[i] == choice_r[i]) return(fixed$c[i, ])
            rung(choice_r[i])[i, ]
          }, numeric(5))
          over <- c(rowSums(cnt[c("linkage", "top_m", "risk1", "risk2"), , drop = FALSE]) / pmax(lim_n, 0.5),
                    linkage_stratum = max(cnt["linkage", ] / sizes) / limits$linkage_stratum,
                    top_m_stratum = max(cnt["top_m", ] / sizes) / limits$top_m_stratum)
          can <- choice_r < top_r
          if (all(over <= 1) || !any(can)) break
          worst <- names(which.max(over))
          row <- switch(worst, linkage_stratum = cnt["linkage", ] / sizes,
                        top_m_stratum = cnt["top_m", ] / sizes, cnt[worst, ])
          row[!can] <- -Inf
          i <- which.max(row)
          choice_r[i] <- choice_r[i] + 1L
        }
        choice <- pmin(ladder[choice_r], sizes)
        fit <- rung_centroids(choice_r[1L])
        for (r in unique(choice_r)) {
          rows <- choice_r[p$id] == r
          fit$centroids[rows, ] <- rung_centroids(r)$centroids[rows, ]
        }
        fit$k <- fit$k0 <- choice[p$id]
        rel <- adaptive(k_table(choice), choice[p$id], max(choice), 0L, 0, NULL, fit = fit)
        e <- ev(rel)
        row <- add(tune_row(e, "stratum", tune_k_label(choice)), rel)
        if (row$meets) break
        if (!any(choice_r < top_r)) {
          stop_reason <- c(stop_reason, sprintf("k per stratum: %s missed with every stratum at its largest k (its size, at most %d)",
                                                row$fails, max(ladder)))
          break
        }
        fixed <- list(r = choice_r, c = tune_counts(e))
      }
    }

    # 3. adaptive k per record, as one path of stages from light to strong masking, each
    #    starting from the neighbourhoods of the one before (the kernel's rates, then the
    #    limit, lowered by a tenth while the measured rate misses it; the cap k_max doubled
    #    while records at their cap keep a limit from being met; stopped when a stage takes
    #    off less than a quarter of the excess over the limits)
    if ("adaptive" %in% methods) {
      rates <- sort(unique(c(0.5, 0.3, 0.2, limits$top_m)), decreasing = TRUE)
      rates <- rates[rates >= limits$top_m & rates > floor_m]
      k_max <- min(max(33L, 3L * k), max(sizes))
      k0 <- rep(2L, n)
      stage <- list(k = k0, rate = numeric(), k_max = integer(), rounds = 0L)
      next_stage <- function(rate) { # one more stage of the path, measured
        fit <- adaptive_fit(p, stage$k, k_max, m, rate, w1, nthreads)
        stage$k <<- fit$k
        stage$rate <<- c(stage$rate, rate)
        stage$k_max <<- c(stage$k_max, k_max)
        stage$rounds <<- stage$rounds + fit$rounds
        fit$k0 <- k0
        fit$rounds <- stage$rounds
        rel <- adaptive(2L, k0, stage$k_max, m, stage$rate, w1, fit = fit)
        row <- add(tune_row(ev(rel), "adaptive", tune_stage_label(stage, m, w1)), rel)
        row$n_capped <- fit$n_capped
        row
      }
      i <- 0L
      tries <- 0L
      last_excess <- Inf
      repeat {
        i <- i + 1L
        rate <- if (i <= length(rates)) rates[i] else stage$rate[length(stage$rate)] * 0.9
        row <- next_stage(rate)
        if (rate > limits$top_m) next
        if (row$meets) break
        tries <- tries + 1L
        if (tries >= max_tries) {
          stop_reason <- c(stop_reason, sprintf("adaptive k: %s still missed after %s", row$fails,
                                                plural(max_tries, "try", "tries")))
          break
        }
        # how far the limits are missed: stop when a try took off less than a quarter of it
        excess <- tune_excess(row, limits)
        if (tries > 1L && excess > 0.75 * last_excess) {
          stop_reason <- c(stop_reason, sprintf(
            "adaptive k: %s missed, and the last stage took off less than a quarter of the excess over the limits (%.3g of %.3g)",
            row$fails, last_excess - excess, last_excess))
          break
        }
        last_excess <- excess
        if (row$n_capped > 0 && k_max < max(sizes)) k_max <- min(2L * k_max, max(sizes))
        else if (!grepl("top_m", row$fails, fixed = TRUE)) {
          stop_reason <- c(stop_reason, sprintf("adaptive k: %s missed and no setting left to raise", row$fails))
          break
        }
      }
      # for the frontier: the path goes on below the limit it met (lower top-m rates)
      if (row$meets) {
        below <- c(0.1, 0.05)
        for (rate in below[below < min(stage$rate) & below > floor_m]) next_stage(rate)
      }
      # the prototype of the issue: k from 3 to 33, the nearest-neighbour test only
      proto <- adaptive(max(3L, k), rep(max(3L, k), n), min(33L, max(sizes)), 1L, 0, NULL)
      add(tune_row(ev(proto), "adaptive", sprintf("k = %d..%d, m = 1 (nearest only)", max(3L, k),
                                                  min(33L, max(sizes)))), proto)
    }

    # 4. stirring: the values of the lighter candidates shuffled inside small clusters of
    #    nearby released records (Mondrian classes of at least 3 within the strata)
    if ("stir" %in% methods) {
      t <- do.call(rbind, tried)
      base <- t$id[t$method %in% c("anonymise", "adaptive", "stratum") & !grepl("nearest only", t$settings)]
      base <- base[order(t$loss[match(base, t$id)])][seq_len(min(4L, length(base)))]
      for (b in base) {
        rel <- releases[[b]]
        cl <- quiet(equivalence_classes(rel, strata = strata, quasi = vars, k = 3L))$class
        if (anyNA(cl)) next
        st <- quiet(stir(rel, vars = vars, strata = strata, classes = cl, k = 3L, method = "shuffle"))
        add(tune_row(ev(st), "stir", sprintf("candidate %d (%s), shuffled in classes of >= 3", b, tried[[b]]$method)),
            st, tune_stir_mask(release_info(rel), vars, strata))
      }
    }
  })

  tried_df <- do.call(rbind, tried)
  rownames(tried_df) <- NULL
  tried_df$id <- NULL
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
    closest <- which.min(vapply(seq_len(nrow(tried_df)), function(i) tune_excess(tried_df[i, ], limits), 0))
    sprintf("%d candidates tried; none met every limit. Closest (least excess over the limits): %s (%s), which misses %s. %s",
            nrow(tried_df), tried_df$method[closest], tried_df$settings[closest],
            tried_df$fails[closest], paste(stop_reason, collapse = "; "))
  }
  replay <- if (!is.null(release)) {
    mask <- masks[[best]]
    risk_replay(df, release, vars = vars, strata = strata, mask = mask, nthreads = nthreads, seed = seed)
  }
  structure(list(release = release, chosen = chosen, tried = tried_df,
                 frontier = tried_df[front, , drop = FALSE], replay = replay,
                 limits = c(limits, m = m, k = k), objective = objective, stop = trimws(stop)),
            class = "detanon_tuned")
}

# Limits no release of these strata can meet; returns the share of records in strata of
# at most m records (whose top-m rate is 1 whatever the masking).
check_tune_limits <- function(limits, k, m, sizes, n) {
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
  if (limits$top_m_stratum < 1 && min(sizes) <= m) {
    stop_arg("the limit `top_m_stratum` = ", format(limits$top_m_stratum), " cannot be met with `m` = ",
             m, ": in a stratum of at most ", m, " records every record's own original is among the ",
             m, " nearest (the smallest stratum has ", plural(min(sizes), "record"), ").")
  }
  floor_m
}

# The measurements of a candidate: the functions a user would call (risk_linkage() with
# m = 1 and with m, risk_rmd(deterministic = TRUE), the objective), computed from the
# shared parts in `p` (the same code, so the same numbers) and a single rank query per
# candidate, for the whole data and per stratum.
tune_evaluator <- function(df, vars, strata, p, limits, m, objective, formula, family, nthreads) {
  s <- linkage_setup(df, df, vars, strata)
  index <- if (identical(s$zo, p$z)) p$index else rank_index(s$zo, s)
  n <- nrow(df)
  function(release, origin_row = NULL) {
    if (is.null(origin_row)) {
      orig <- df
      ss <- s
      ranks <- link_ranks(s, s$zo, s$z(numeric_matrix(release, vars)), rep(TRUE, n), m, nthreads,
                          index = index)
    } else {
      # a shuffled release, measured against its originals aligned by the key
      orig <- df[origin_row, , drop = FALSE]
      ss <- linkage_setup(orig, release, vars, strata)
      ranks <- link_ranks(ss, ss$zo, ss$zm, rep(TRUE, n), m, nthreads)
    }
    s1 <- top_m_share(ranks, 1L)
    sm <- top_m_share(ranks, m)
    xm <- numeric_matrix(release, vars)
    for (j in which(p$tiny$e != 0)) xm[, j] <- times_pow2(xm[, j], p$tiny$e[j])
    r <- if (is.null(origin_row) && all(apply(xm, 2L, function(v) any(v != v[1L])))) {
      rmd_result(p$rmd, xm, 0.01, 0.05, 1L, vars, TRUE, nthreads)
    } else {
      tryCatch(risk_rmd(orig, release, vars = vars, deterministic = TRUE, nthreads = nthreads),
               detanon_error = function(e) list(risk1 = NA_real_, risk2 = NA_real_,
                                                 rows_risk1 = integer(), rows_risk2 = integer()))
    }
    loss <- switch(objective,
      delta = max(utility_delta(orig, release, vars = vars)$delta),
      U = utility_pmse(orig, release)$U,
      model = max(utility_model(orig, release, formula, family = family)$std_diff, na.rm = TRUE))
    id <- ss$id
    per <- function(v) as.vector(rowsum(v, id, reorder = TRUE)) / ss$sizes
    flag1 <- flag2 <- numeric(n)
    flag1[r$rows_risk1] <- 1
    flag2[r$rows_risk2] <- 1
    list(linkage = sum(s1) / n, linkage_stratum = max(per(s1)), top_m = sum(sm) / n,
         top_m_stratum = max(per(sm)),
         risk1 = r$risk1, risk2 = r$risk2, reid = mean(1 / ranks[, 2L]), loss = loss,
         by = data.frame(size = ss$sizes, linkage = per(s1), top_m = per(sm), risk1 = per(flag1),
                         risk2 = per(flag2)),
         limits = limits)
  }
}

# How far a candidate misses its limits: the sum of its measures' relative excess over
# them (a limit of 0, as risk2 = 0 allows, counts the excess per record of 1/1000).
tune_excess <- function(row, limits) {
  lim <- unlist(limits[c("linkage", "linkage_stratum", "top_m", "top_m_stratum", "risk1", "risk2")])
  got <- unlist(row[names(lim)])
  sum(pmax(0, got - lim) / pmax(lim, 1e-3))
}

# Per stratum (rows): the expected numbers of records linked (nearest), linked among the
# top m, and flagged by risk1 and risk2.
tune_counts <- function(e) {
  b <- e$by
  cbind(linkage = b$linkage * b$size, top_m = b$top_m * b$size, risk1 = b$risk1 * b$size,
        risk2 = b$risk2 * b$size, size = b$size)
}

# One row of the report from an evaluation.
tune_row <- function(e, method, settings) {
  got <- c(linkage = e$linkage, linkage_stratum = e$linkage_stratum, top_m = e$top_m,
           top_m_stratum = e$top_m_stratum,
           risk1 = e$risk1, risk2 = e$risk2)
  lim <- unlist(e$limits[names(got)])
  fails <- names(got)[is.na(got) | got > lim]
  data.frame(method = method, settings = settings, t(got), reid = e$reid, loss = e$loss,
             meets = !length(fails), fails = paste(fails, collapse = ", "), stringsAsFactors = FALSE)
}

tune_k_label <- function(choice) {
  u <- sort(unique(choice))
  if (length(u) == 1L) return(paste0("k = ", u, " in every stratum"))
  paste0("k per stratum: ", paste(vapply(u, function(v) paste0(v, " (", sum(choice == v), ")"), ""),
                                  collapse = ", "))
}

tune_stage_label <- function(stage, m, w1) {
  sprintf("k from 2, m = %d%s, stages rate/k_max: %s", m, if (!is.null(w1)) ", w1 = 0.01" else "",
          paste(sprintf("%s/%d", format(signif(stage$rate, 6), drop0trailing = TRUE, trim = TRUE), stage$k_max),
                collapse = " > "))
}

# The intruder's replay of a stirred candidate (see risk_replay()): the base masking
# replayed from its metadata, then shuffled in classes of its own (the intruder does not
# know the seed).
tune_stir_mask <- function(base_info, vars, strata) {
  base_mask <- replay_mask(base_info)
  function(d) {
    rel <- base_mask(d)
    cl <- suppressMessages(equivalence_classes(rel, strata = strata, quasi = vars, k = 3L,
                                               small_strata = "suppress"))$class
    if (anyNA(cl)) cl[is.na(cl)] <- max(c(0L, cl), na.rm = TRUE) + 1L
    suppressMessages(stir(rel, vars = vars, classes = cl, k = 2L, small_strata = "blend"))
  }
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
  cat(sprintf("tune_release(): limits linkage <= %s (per stratum <= %s), top-%d <= %s (per stratum <= %s), risk1 <= %s, risk2 <= %s, strata >= %d\n",
              format(l$linkage), format(l$linkage_stratum), l$m, format(l$top_m), format(l$top_m_stratum),
              format(l$risk1), format(l$risk2), l$k))
  cat(sprintf("  objective: %s; %s tried\n", x$objective, plural(nrow(x$tried), "candidate")))
  show <- x$tried
  show$fails[show$fails == ""] <- "-"
  show$candidate <- seq_len(nrow(show))
  print(show[c("candidate", "method", "settings", "linkage", "top_m", "risk1", "risk2", "loss", "fails")],
        row.names = FALSE, digits = 3)
  if (!is.null(x$chosen)) {
    ch <- x$chosen
    cat(sprintf("\nChosen: %s (%s)\n  measured on the release: linkage %.4f (largest stratum %.4f), top-%d %.4f (largest stratum %.4f), risk1 %.4f, risk2 %.4f, %s %.4g\n",
                ch$method, ch$settings, ch$linkage, ch$linkage_stratum, l$m, ch$top_m, ch$top_m_stratum,
                ch$risk1, ch$risk2, x$objective, ch$loss))
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
  fam <- c(anonymise = "grey30", stratum = "darkorange", adaptive = "firebrick", stir = "steelblue",
           keps = "darkgreen")
  col <- fam[t$method]
  pch <- ifelse(t$meets, 19, 1)
  graphics::plot(t$top_m, t$loss, col = col, pch = pch, log = "y",
                 xlab = sprintf("top-%d linkage", x$limits$m), ylab = x$objective,
                 main = "Risk-utility frontier", ...)
  f <- x$frontier
  graphics::lines(f$top_m, f$loss, col = "firebrick", lty = 2)
  graphics::abline(v = x$limits$top_m, lty = 3)
  if (!is.null(x$chosen)) graphics::points(x$chosen$top_m, x$chosen$loss, pch = 8, cex = 2)
  shown <- names(fam) %in% t$method
  graphics::legend("topright", bty = "n", pch = c(rep(19, sum(shown)), 1, 8),
                   col = c(fam[shown], "grey30", "black"),
                   legend = c(c(anonymise = "anonymise(k)", stratum = "k per stratum", adaptive = "adaptive k",
                                stir = "stirred", keps = "(k, epsilon)")[shown], "misses a limit", "chosen"))
  invisible(x)
}
