# Frontiers of detanon beside sdcMicro (issue 28, items 4 and 5): every release measured by the
# same risk battery and the same utility measures.
#
# Usage (from the package root, detanon, sdcMicro and synthpop installed):
#   Rscript bench/frontier.R                      # every data set
#   Rscript bench/frontier.R titanic testdata     # some of them
#   Rscript bench/frontier.R --table              # print the table of the saved results only
#   Rscript bench/frontier.R --table --markdown   # and the README table
#   BENCH_KEYED_SIZES=2,3 Rscript bench/frontier.R --add titanic  # more keyed sizes only
#   Rscript bench/frontier.R --fresh ...          # measure again the releases that do not change
#                                                 # with detanon's search (reused by default)
#   BENCH_REUSE_KEYED=1 Rscript bench/frontier.R  # reuse the keyed rows too (anonymise_keyed() unchanged)
# Results: bench/results/frontier-<set>.rds (one per data set) and bench/results/frontier.csv
# (all sets so far); the vignette reads inst/extdata/frontier.csv.gz, the columns it shows, written too.
#
# Releases per data set (seed 1 before each):
#   sdcMicro  MDAV k = 3, 5, 10 (microaggregation(method = "mdav") within each stratum);
#             rank swapping (rankSwap(), defaults: P = 5%, top and bottom 5%);
#             correlated noise (addNoise(method = "correlated2"), default delta = 0.1);
#             shuffling (shuffle(method = "ds"), the masked variables regressed on the
#             predictors named per data set).
#   detanon   the candidates of tune_release() (its defaults, seed 1; the search is timed), those on
#             its own frontier of top-m linkage (or worst attack) and loss measured again here, at most 5;
#             plain anonymise(k = 3, 5, 10, format = "none"); anonymise_adaptive(k = 3,
#             format = "none"); anonymise_keyed(k = 2, size = 4, 6, 10, 14, 20, 40, 80, format = "none")
#             when the package has it (shared keyed centroids; a fixed key).
# Risk: risk_battery(original, release, intruder(vars, strata), seed = 1), no sensitive column:
#   worst     the highest rate of any attack (the worst one-record attack);
#   top3      the higher of the top-3 linkage rates both ways (released -> original, original ->
#             released);
#   worst_adv the highest advantage over the control.
# Loss:
#   delta_max the largest per-variable delta (share of each variable's variance added);
#   delta_mean the mean of the deltas;
#   pmse2     two-way logit pMSE (utility_pmse(interactions = TRUE)) over vars and strata; pmse2_ratio
#             its S_pMSE (pMSE over its null expectation);
#   cart      CART pMSE (utility_pmse(method = "cart"));
#   model     1 - the mean confidence-interval overlap of utility_model() with the data set's model
#             (0 = the same intervals).
# Dominance (item 5): an sdcMicro release is dominated when some detanon release has both a lower
# worst attack and a lower loss; checked for delta_max and for pmse2 (frontier_dominance()).
suppressMessages(library(detanon))

shared_data <- function(file) {
  p <- file.path(Sys.getenv("DETANON_DATA", "/work/shared/data"), file)
  if (!file.exists(p)) stop("missing ", p, " (set DETANON_DATA)")
  p
}

# ---- the data sets ----------------------------------------------------------------------------
# Each: data, vars (masked; the intruder's keys), strata (NULL for none), model formula and family
# for utility_model(), predictors for shuffle(), and a note of the choices.
bench_sets <- list(
  titanic = function() {
    d <- titanic_paper()[-1]
    list(data = d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
         formula = Survived ~ Pclass + Sex + Age + Fare + Family, family = "binomial",
         predictors = c("Pclass", "Sex", "Family"),
         note = "titanic_paper() without PassengerId; Age, Fare within Pclass x Sex x Family")
  },
  testdata = function() {
    e <- new.env(); utils::data("testdata", package = "sdcMicro", envir = e)
    d <- e$testdata[c("urbrur", "sex", "expend", "income", "savings")]
    d$urbrur <- factor(d$urbrur); d$sex <- factor(d$sex)
    list(data = d, vars = c("expend", "income", "savings"), strata = c("urbrur", "sex"),
         formula = income ~ expend + savings + urbrur + sex, family = "gaussian",
         predictors = c("urbrur", "sex"),
         note = "sdcMicro testdata (4580): expend, income, savings within urbrur x sex")
  },
  casc = function() {
    e <- new.env(); utils::data("CASCrefmicrodata", package = "sdcMicro", envir = e)
    d <- e$CASCrefmicrodata
    v <- c("AGI", "EMCONTRB", "FEDTAX", "STATETAX", "INTVAL")
    d <- d[c("AFNLWGT", v)]
    list(data = d, vars = v, strata = NULL,
         formula = FEDTAX ~ AGI + EMCONTRB + INTVAL + AFNLWGT, family = "gaussian",
         predictors = "AFNLWGT",
         note = paste("CASCrefmicrodata (1080): five income and tax variables masked (AGI, EMCONTRB,",
                      "FEDTAX, STATETAX, INTVAL; the other seven largely repeat them), no strata (no",
                      "categorical variable); the final weight AFNLWGT is released as it is (the",
                      "predictor of shuffle())"))
  },
  casc13 = function() {
    e <- new.env(); utils::data("CASCrefmicrodata", package = "sdcMicro", envir = e)
    d <- e$CASCrefmicrodata
    d[] <- lapply(d, as.numeric)
    list(data = d, vars = names(d), strata = NULL,
         formula = FEDTAX ~ AGI + EMCONTRB + INTVAL + AFNLWGT, family = "gaussian",
         predictors = NULL,
         note = paste("CASCrefmicrodata (1080): all 13 variables masked together, no strata, as in the",
                      "CASC literature; no shuffle() (it needs a released predictor)"))
  },
  eia = function() {
    e <- new.env(); utils::data("EIA", package = "sdcMicro", envir = e)
    d <- e$EIA
    v <- c("RESSALES", "COMSALES", "INDSALES", "OTHRSALES", "TOTREVENUE")
    # UTILITYID and UTILNAME are identifiers, YEAR is constant; STATE (51 levels of about 80
    # records) is left out: as a factor it would become the default strata
    d <- d[c("MONTH", v)]
    list(data = d, vars = v, strata = NULL,
         formula = TOTREVENUE ~ RESSALES + COMSALES + INDSALES, family = "gaussian",
         predictors = "MONTH",
         note = paste("EIA (4092): the four sales variables and the total revenue masked (the other",
                      "revenues and the total sales largely repeat them), no strata (STATE, 51 levels",
                      "of about 80 records, left out); identifiers dropped; MONTH (a number) is",
                      "released as it is and is shuffle()'s predictor"))
  },
  tarragona = function() {
    e <- new.env(); utils::data("Tarragona", package = "sdcMicro", envir = e)
    d <- e$Tarragona
    v <- c("FIXED.ASSETS", "CURRENT.ASSETS", "SALES", "LABOR.COSTS", "NET.PROFIT")
    d <- d[c("PAID.UP.CAPITAL", v)]
    list(data = d, vars = v, strata = NULL,
         formula = NET.PROFIT ~ SALES + LABOR.COSTS + CURRENT.ASSETS, family = "gaussian",
         predictors = "PAID.UP.CAPITAL",
         note = paste("Tarragona (834): five financial variables masked (fixed and current assets,",
                      "sales, labour costs, net profit), no strata (no categorical variable);",
                      "PAID.UP.CAPITAL (few distinct values) is released as it is and is",
                      "shuffle()'s predictor"))
  },
  sd2011 = function() {
    d <- synthpop::SD2011[c("sex", "age", "income", "weight", "height")]
    # synthpop documents -8 as "not applicable / missing" in income; keep complete records
    d$income[d$income == -8] <- NA
    d <- d[stats::complete.cases(d), ]
    rownames(d) <- NULL
    d$income <- as.numeric(d$income); d$weight <- as.numeric(d$weight); d$height <- as.numeric(d$height)
    list(data = d, vars = c("income", "weight", "height"), strata = "sex",
         formula = income ~ sex + age + height + weight, family = "gaussian",
         predictors = c("sex", "age"),
         note = paste("synthpop SD2011: income (-8 = missing), weight, height within sex, complete",
                      "records only; age released as it is"))
  },
  adult = function() {
    d <- utils::read.csv(shared_data("adult_train.csv"), check.names = FALSE, stringsAsFactors = TRUE)
    d <- data.frame(age = as.numeric(d$age), fnlwgt = as.numeric(d$fnlwgt),
                    hours = as.numeric(d[["hours-per-week"]]), sex = d$sex,
                    income = factor(d$income))
    # all 32561 records (BENCH_ADULT_N: a random subsample of that size, seed 1, for a quicker run)
    n_sub <- as.integer(Sys.getenv("BENCH_ADULT_N", "0"))
    if (n_sub > 0L && n_sub < nrow(d)) {
      set.seed(1)
      d <- d[sort(sample.int(nrow(d), n_sub)), ]
      rownames(d) <- NULL
    }
    list(data = d, vars = c("age", "fnlwgt", "hours"), strata = "sex",
         formula = income ~ age + hours + sex + fnlwgt, family = "binomial",
         predictors = "sex",
         note = paste0("UCI Adult training set, ", if (nrow(d) < 32561L) paste0("a random ", nrow(d), " of ") else "all ",
                       "32561 records: age, fnlwgt, hours-per-week within sex"))
  }
)

keyed_sizes <- c(4, 6, 10, 14, 20, 40, 80)
# smaller grids for a quicker run: BENCH_KEYED_SIZES="4,10,20,80" BENCH_MAX_CANDS=3
if (nzchar(Sys.getenv("BENCH_KEYED_SIZES"))) keyed_sizes <- as.numeric(strsplit(Sys.getenv("BENCH_KEYED_SIZES"), ",")[[1]])

# ---- releases ---------------------------------------------------------------------------------
strata_key <- function(d, strata) {
  if (is.null(strata)) return(factor(rep(1L, nrow(d))))
  interaction(d[strata], drop = TRUE)
}

put <- function(d, vars, m) {
  for (v in vars) d[[v]] <- as.numeric(m[, v])
  d
}

sdc_mdav <- function(s, k) {
  d <- s$data; key <- strata_key(d, s$strata)
  out <- d
  for (g in levels(key)) {
    r <- which(key == g)
    x <- as.data.frame(d[r, s$vars, drop = FALSE])
    res <- suppressWarnings(sdcMicro::microaggregation(x, variables = s$vars, aggr = k, method = "mdav"))
    for (v in s$vars) out[[v]][r] <- res$mx[[v]]
  }
  out
}

sdc_releases <- function(s) {
  d <- s$data; vars <- s$vars
  f <- list(
    mdav_k3 = function() sdc_mdav(s, 3),
    mdav_k5 = function() sdc_mdav(s, 5),
    mdav_k10 = function() sdc_mdav(s, 10),
    rankswap = function() put(d, vars, as.matrix(sdcMicro::rankSwap(d[vars], variables = vars, seed = 1))),
    noise = function() {
      set.seed(1)
      put(d, vars, sdcMicro::addNoise(d[vars], variables = vars, method = "correlated2")$xm)
    },
    shuffle = if (!is.null(s$predictors)) function() {
      set.seed(1)
      form <- stats::as.formula(paste(paste0("`", vars, "`", collapse = " + "), "~",
                                      paste0("`", s$predictors, "`", collapse = " + ")))
      put(d, vars, sdcMicro::shuffle(d, form = form, method = "ds")$shuffled)
    })
  lapply(Filter(Negate(is.null), f), timed)
}

timed <- function(f) {
  t <- system.time(r <- tryCatch(f(), error = function(e) e))[["elapsed"]]
  if (inherits(r, "error")) {
    message("  failed: ", conditionMessage(r))
    return(list(release = NULL, seconds = t, error = conditionMessage(r)))
  }
  list(release = r, seconds = t, error = NA_character_)
}

# tune_release() with its defaults; its candidates are kept by a trace on the internal that
# assembles the result (the release of each candidate), then its own frontier (top-m linkage vs
# loss) and the chosen release are measured again by the battery, at most `max_cands`.
detanon_tuned <- function(s, max_cands = as.integer(Sys.getenv("BENCH_MAX_CANDS", "5"))) {
  ns <- asNamespace("detanon")
  keep <- new.env()
  if (exists("tune_result", ns, inherits = FALSE)) {
    suppressMessages(trace("tune_result", where = ns, print = FALSE,
                           tracer = bquote(assign("cands", cands, envir = .(keep)))))
    on.exit(suppressMessages(untrace("tune_result", where = ns)), add = TRUE)
  }
  t <- system.time(tu <- tryCatch(
    suppressWarnings(suppressMessages(tune_release(s$data, vars = s$vars, strata = s$strata,
                                                   seed = 1, nthreads = 1))),
    error = function(e) e))[["elapsed"]]
  if (inherits(tu, "error")) {
    message("  tune_release failed: ", conditionMessage(tu))
    return(list(seconds = t, out = list(), stop = conditionMessage(tu), n_tried = NA_integer_))
  }
  tried <- tu$tried
  rels <- if (!is.null(keep$cands)) lapply(keep$cands, `[[`, "release") else list()
  pick <- integer(0)
  if (length(rels)) {
    has <- which(!vapply(rels, is.null, NA))
    risk <- if ("worst" %in% names(tried)) tried$worst else tried$top_m # the battery-driven search
    front <- has[detanon:::pareto(risk[has], tried$loss[has])]
    if (length(front) > max_cands) front <- front[unique(round(seq(1, length(front), length.out = max_cands)))]
    pick <- front
  }
  out <- lapply(pick, function(i) list(release = rels[[i]], seconds = tried$seconds[i], error = NA_character_,
                                        settings = paste(tried$method[i], tried$settings[i])))
  names(out) <- sprintf("tune_%02d", pick)
  if (!is.null(tu$release)) {
    out$tune_chosen <- list(release = tu$release, seconds = t, error = NA_character_,
                            settings = paste(tu$chosen$method, tu$chosen$settings))
  }
  list(seconds = t, out = out, stop = tu$stop, n_tried = nrow(tried))
}

detanon_releases <- function(s) {
  d <- s$data
  a <- function(k) function() suppressMessages(anonymise(d, vars = s$vars, strata = s$strata, k = k,
                                                         format = "none", small_strata = "merge"))
  f <- list(anon_k3 = a(3), anon_k5 = a(5), anon_k10 = a(10),
            adaptive_k3 = function() {
              # strata smaller than k are merged for the masking; the release keeps their labels
              dd <- d
              if (!is.null(s$strata)) dd <- suppressMessages(merge_small_strata(d, strata = s$strata, k = 3))
              r <- suppressMessages(anonymise_adaptive(dd, vars = s$vars, strata = s$strata, k = 3, format = "none"))
              r <- as.data.frame(r)
              for (v in s$strata) r[[v]] <- d[[v]]
              r
            })
  f <- f[!names(f) %in% strsplit(Sys.getenv("BENCH_SKIP"), ",")[[1]]]
  if (exists("anonymise_keyed", asNamespace("detanon"))) {
    km <- get("anonymise_keyed", asNamespace("detanon"))
    for (g in keyed_sizes) {
      f[[sprintf("keyed_s%02d", g)]] <- local({
        gg <- g
        function() suppressMessages(km(d, vars = s$vars, strata = s$strata, k = 2, key = "bench-frontier-key",
                                       size = gg, format = "none", small_strata = "merge"))
      })
    }
  }
  lapply(f, timed)
}

# ---- measures ---------------------------------------------------------------------------------
measure <- function(s, rel) {
  d <- s$data
  b <- risk_battery(d, rel, intruder = intruder(vars = s$vars, strata = s$strata), seed = 1)
  tab <- as.data.frame(b)
  link <- tab[grepl("^linkage", tab$name), , drop = FALSE]
  delta <- utility_delta(d, rel, vars = s$vars)$delta
  pv <- c(s$vars, s$strata)
  p2 <- tryCatch(suppressWarnings(suppressMessages(utility_pmse(d, rel, vars = pv, interactions = TRUE))),
                 error = function(e) NULL)
  pc <- tryCatch(suppressMessages(utility_pmse(d, rel, vars = pv, method = "cart")), error = function(e) NULL)
  mo <- tryCatch(suppressWarnings(utility_model(d, rel, s$formula, family = s$family)), error = function(e) NULL)
  rate <- stats::setNames(tab$rate, tab$name)
  c(worst = max(tab$rate, na.rm = TRUE),
    worst_attack = NA, # filled below (character)
    top3 = max(link$rate_m, na.rm = TRUE),
    worst_adv = max(tab$advantage, na.rm = TRUE),
    as.list(rate),
    delta_max = max(delta), delta_mean = mean(delta),
    pmse2 = if (is.null(p2)) NA_real_ else p2$U,
    pmse2_ratio = if (is.null(p2)) NA_real_ else p2$S_pMSE,
    cart = if (is.null(pc)) NA_real_ else pc$U,
    model = if (is.null(mo)) NA_real_ else 1 - mean(mo$ci_overlap),
    model_std_diff = if (is.null(mo)) NA_real_ else max(mo$std_diff)) -> out
  out$worst_attack <- tab$name[which.max(tab$rate)]
  out
}

# Releases whose method and settings do not depend on detanon's search or keyed verb: their
# rows are reused from an earlier run's file (reuse = TRUE) so that a rerun after a change of
# tune_release() or anonymise_keyed() measures only what changed.
stable_releases <- c("mdav_k3", "mdav_k5", "mdav_k10", "rankswap", "noise", "shuffle",
                     "anon_k3", "anon_k5", "anon_k10", "adaptive_k3")

run_set <- function(name, reuse = TRUE) {
  s <- bench_sets[[name]]()
  f_old <- file.path("bench/results", paste0("frontier-", name, ".rds"))
  old <- if (reuse && file.exists(f_old)) readRDS(f_old)
  message(sprintf("[%s] %s: %d records", format(Sys.time(), "%H:%M:%S"), name, nrow(s$data)))
  if (add_only) return(add_keyed(s, name, old, f_old))
  sdc <- sdc_releases(s)
  message(sprintf("[%s]   sdcMicro releases made", format(Sys.time(), "%H:%M:%S")))
  # BENCH_NO_TUNE=1 leaves the search out; BENCH_SKIP names releases not to make (a quicker run)
  tun <- if (nzchar(Sys.getenv("BENCH_NO_TUNE"))) {
    list(seconds = NA_real_, out = list(), stop = "not run (BENCH_NO_TUNE)", n_tried = NA_integer_)
  } else detanon_tuned(s)
  message(sprintf("[%s]   tune_release: %.1f s, %s candidates", format(Sys.time(), "%H:%M:%S"),
                  tun$seconds, tun$n_tried))
  det <- c(detanon_releases(s), tun$out)
  skip <- strsplit(Sys.getenv("BENCH_SKIP"), ",")[[1]]
  det <- det[!names(det) %in% skip]
  all <- c(stats::setNames(sdc, names(sdc)), det)
  src <- c(rep("sdcMicro", length(sdc)), rep("detanon", length(det)))
  done <- if (!is.null(old)) split(old, seq_len(nrow(old))) else list()
  # BENCH_REUSE_KEYED=1: the keyed releases too (when anonymise_keyed() has not changed)
  stable <- c(stable_releases, if (nzchar(Sys.getenv("BENCH_REUSE_KEYED")) && !is.null(old))
    grep("^keyed_", old$release, value = TRUE))
  done <- done[vapply(done, function(r) r$release %in% stable && !is.na(r$worst), NA)]
  rows <- lapply(seq_along(all), function(i) {
    r <- all[[i]]
    base <- data.frame(set = name, source = src[i], release = names(all)[i],
                       settings = if (is.null(r$settings)) names(all)[i] else r$settings,
                       seconds = r$seconds, error = r$error, stringsAsFactors = FALSE)
    if (is.null(r$release)) return(base)
    if (!is.null(old) && names(all)[i] %in% stable) {
      o <- old[old$release == names(all)[i] & !is.na(old$worst), , drop = FALSE]
      if (nrow(o) == 1L) return(o[setdiff(names(o), c("tune_seconds", "tune_stop", "n", "note"))])
    }
    tm <- system.time(m <- measure(s, r$release))[["elapsed"]]
    message(sprintf("[%s]   %-12s worst %.3f top3 %.3f delta_max %.3f (%.1f s)", format(Sys.time(), "%H:%M:%S"),
                    names(all)[i], m$worst, m$top3, m$delta_max, tm))
    row <- cbind(base, as.data.frame(m, stringsAsFactors = FALSE), measure_seconds = tm)
    done[[length(done) + 1L]] <<- row # saved as it goes: a stopped run keeps what it measured
    part <- do.call(rbind_fill, done)
    part$tune_seconds <- tun$seconds; part$tune_stop <- tun$stop; part$n <- nrow(s$data); part$note <- s$note
    saveRDS(part, f_old)
    row
  })
  res <- do.call(rbind_fill, rows)
  res$tune_seconds <- tun$seconds
  res$tune_stop <- tun$stop
  res$n <- nrow(s$data)
  res$note <- s$note
  res
}

# --add: measure only anonymise_keyed() at the sizes of BENCH_KEYED_SIZES and add the rows to
# the saved results of the data set (the other rows are kept as they are).
add_only <- FALSE
add_keyed <- function(s, name, old, f_old) {
  if (is.null(old)) stop("--add needs the saved results of ", name)
  f <- detanon_releases(s)
  f <- f[grepl("^keyed_", names(f)) & !names(f) %in% old$release]
  rows <- lapply(names(f), function(nm) {
    r <- f[[nm]]
    base <- data.frame(set = name, source = "detanon", release = nm, settings = nm, seconds = r$seconds,
                       error = r$error, stringsAsFactors = FALSE)
    if (is.null(r$release)) return(base)
    tm <- system.time(m <- measure(s, r$release))[["elapsed"]]
    message(sprintf("[%s]   %-12s worst %.3f top3 %.3f delta_max %.3f (%.1f s)", format(Sys.time(), "%H:%M:%S"),
                    nm, m$worst, m$top3, m$delta_max, tm))
    cbind(base, as.data.frame(m, stringsAsFactors = FALSE), measure_seconds = tm)
  })
  new <- do.call(rbind_fill, rows)
  for (c in c("tune_seconds", "tune_stop", "n", "note")) new[[c]] <- old[[c]][1]
  do.call(rbind_fill, c(list(old), list(new)))
}

rbind_fill <- function(...) {
  l <- list(...)
  cols <- unique(unlist(lapply(l, names)))
  do.call(rbind, lapply(l, function(x) {
    for (c in setdiff(cols, names(x))) x[[c]] <- NA
    x[cols]
  }))
}

# For each sdcMicro release, the detanon release of least `loss` among those with a lower worst
# attack and a lower loss (NA when none).
frontier_dominance <- function(res, loss = "delta_max", risk = "worst") {
  out <- lapply(split(res, res$set), function(r) {
    s <- r[r$source == "sdcMicro" & !is.na(r[[risk]]), , drop = FALSE]
    d <- r[r$source == "detanon" & !is.na(r[[risk]]), , drop = FALSE]
    do.call(rbind, lapply(seq_len(nrow(s)), function(i) {
      ok <- d[d[[risk]] < s[[risk]][i] & d[[loss]] < s[[loss]][i], , drop = FALSE]
      best <- if (nrow(ok)) ok[which.min(ok[[loss]]), ] else NULL
      data.frame(set = s$set[i], sdc = s$release[i], sdc_risk = s[[risk]][i], sdc_loss = s[[loss]][i],
                 detanon = if (is.null(best)) NA else best$release,
                 det_risk = if (is.null(best)) NA else best[[risk]],
                 det_loss = if (is.null(best)) NA else best[[loss]],
                 dominated = !is.null(best), stringsAsFactors = FALSE)
    }))
  })
  do.call(rbind, out)
}

print_table <- function(res) {
  cols <- c("set", "release", "worst", "worst_attack", "top3", "delta_max", "pmse2", "cart", "model", "seconds")
  x <- res[intersect(cols, names(res))]
  num <- vapply(x, is.numeric, NA)
  x[num] <- lapply(x[num], function(v) signif(v, 3))
  old <- options(width = 200)
  on.exit(options(old))
  print(x, row.names = FALSE)
  cat("\nSearch times (tune_release, defaults):\n")
  tt <- unique(res[c("set", "n", "tune_seconds")])
  print(tt, row.names = FALSE)
  for (l in c("delta_max", "pmse2")) {
    cat(sprintf("\nDominance (worst attack and %s both lower):\n", l))
    print(frontier_dominance(res, l), row.names = FALSE, digits = 3)
  }
}

# The README table (markdown): one row per data set, one column per sdcMicro release; each cell
# gives its worst attack / largest delta, then "->" and the detanon release of least largest
# delta that has both lower (sN: anonymise_keyed(size = N)), or "not beaten".
readme_table <- function(res) {
  dom <- frontier_dominance(res, "delta_max")
  num <- function(v) sub("^(-?)0\\.", "\\1.", trimws(formatC(signif(v, 3), format = "fg", digits = 3)))
  short <- function(r) {
    if (grepl("^keyed_s", r)) return(paste0("s", as.integer(sub("keyed_s", "", r))))
    if (grepl("^anon_k", r)) return(paste0("`anonymise()` k", sub("anon_k", "", r)))
    if (grepl("^adaptive_k", r)) return(paste0("`anonymise_adaptive()` k", sub("adaptive_k", "", r)))
    if (grepl("^tune_", r)) return("`tune_release()`")
    r
  }
  cols <- c(mdav_k3 = "MDAV k=3", mdav_k5 = "MDAV k=5", mdav_k10 = "MDAV k=10", rankswap = "rank swap",
            noise = "corr. noise", shuffle = "shuffle")
  cat("| data set |", paste(cols, collapse = " | "), "|\n")
  cat("|---|", paste(rep("---", length(cols)), collapse = "|"), "|\n", sep = "")
  for (set in intersect(names(bench_sets), res$set)) {
    r <- res[res$set == set & !is.na(res$worst), ]
    cells <- vapply(names(cols), function(rel) {
      sr <- r[r$source == "sdcMicro" & r$release == rel, ]
      if (!nrow(sr)) return("-")
      own <- paste0(num(sr$worst), "/", num(sr$delta_max))
      dm <- dom[dom$set == set & dom$sdc == rel, ]
      if (!nrow(dm) || is.na(dm$detanon)) return(paste(own, "**not beaten**"))
      paste0(own, " -> ", short(dm$detanon), " ", num(dm$det_risk), "/", num(dm$det_loss))
    }, "")
    cat(sprintf("| %s (%d) | %s |\n", set, r$n[1], paste(cells, collapse = " | ")))
  }
  cat(sprintf("\n%d of %d sdcMicro releases beaten on both counts by largest delta, %d by two-way pMSE.\n",
              sum(dom$dominated), nrow(dom), sum(frontier_dominance(res, "pmse2")$dominated)))
  invisible(dom)
}

if (sys.nframe() == 0L) {
  args <- commandArgs(trailingOnly = TRUE)
  dir.create("bench/results", showWarnings = FALSE, recursive = TRUE)
  sets <- setdiff(args, c("--table", "--fresh", "--markdown", "--add"))
  add_only <- "--add" %in% args
  if (!"--table" %in% args) {
    if (!length(sets)) sets <- names(bench_sets)
    for (nm in sets) {
      res <- run_set(nm, reuse = !"--fresh" %in% args)
      saveRDS(res, file.path("bench/results", paste0("frontier-", nm, ".rds")))
    }
  }
  files <- list.files("bench/results", "^frontier-.*\\.rds$", full.names = TRUE)
  res <- do.call(rbind_fill, lapply(files, readRDS))
  keep <- vapply(res, function(v) !is.list(v), NA)
  utils::write.csv(res[keep], "bench/results/frontier.csv", row.names = FALSE)
  # the copy the vignette reads: the columns it shows
  shipped <- c("set", "source", "release", "settings", "worst", "worst_attack", "top3", "worst_adv", "delta_max",
               "delta_mean", "pmse2", "pmse2_ratio", "cart", "model", "seconds", "measure_seconds", "tune_seconds",
               "n", "note")
  if (dir.exists("inst/extdata")) {
    con <- gzfile("inst/extdata/frontier.csv.gz", "w")
    utils::write.csv(res[shipped], con, row.names = FALSE)
    close(con)
  }
  print_table(res)
  if ("--markdown" %in% args) readme_table(res)
}
