# Benchmark: the categorical measures and local suppression against sdcMicro in the same
# run: risk_frequencies() against freqCalc(), risk_individual() (weights and households)
# against measure_risk(), risk_suda2() against suda2(), risk_ldiversity() against
# ldiversity(), and suppress_local(k = 3) against localSuppression() (with relat, 5 keys),
# on 4 key variables shaped like sdcMicro's testdata (urbrur 2, water 8, sex 2, age 0..99
# levels), sampling weights and households of about 3 people; and once with 2 % of the key
# values suppressed (missing: wildcards).
# Run from the package root after installing detanon and sdcMicro:
#   Rscript bench/categorical.R            # n = 1e5 and 1e6
#   Rscript bench/categorical.R 2e5        # other sizes
# Every timing is the best of `reps` runs (elapsed seconds; local suppression: one run, and
# sdcMicro's stopped after `limit` seconds); the results are checked to agree (to 1e-8;
# SUDA2: the scores identical, the largest DIS-SUDA difference printed) before the ratio
# is printed. The table is also written to bench/results/categorical.txt,
# with the load of the machine before and after.
suppressMessages({
  library(detanon)
  library(sdcMicro)
})
args <- commandArgs(trailingOnly = TRUE)
sizes <- if (length(args)) as.numeric(args) else c(1e5, 1e6)
reps <- 3L
limit <- 300 # seconds for one run of sdcMicro's localSuppression()
load_avg <- function() scan("/proc/loadavg", what = "", n = 3L, quiet = TRUE)
load_before <- if (file.exists("/proc/loadavg")) load_avg() else NA

make_data <- function(n, seed = 1) {
  set.seed(seed)
  data.frame(
    urbrur = sample(1:2, n, TRUE), water = sample(1:8, n, TRUE, prob = 8:1),
    sex = sample(1:2, n, TRUE), age = pmin(99L, as.integer(rexp(n, 1 / 30))),
    relat = sample(1:9, n, TRUE, prob = 9:1),
    w = round(runif(n, 50, 150)), hh = sort(sample(ceiling(n / 3), n, TRUE))
  )
}
best <- function(expr) {
  e <- substitute(expr)
  t <- vapply(seq_len(reps), function(i) system.time(eval(e, parent.frame(3)))[["elapsed"]], 0)
  min(t)
}
keys <- c("urbrur", "water", "sex", "age")
rows <- list()
for (n in sizes) {
  d <- make_data(n)
  r <- risk_individual(d, keys, weights = "w", household = "hh")
  s <- measure_risk(d, keyVars = keys, w = "w", hid = "hh")
  stopifnot(isTRUE(all.equal(r$risk, unname(s$Res[, 1]), tolerance = 1e-8)),
            isTRUE(all.equal(r$household_risk, unname(s$Res[, 4]), tolerance = 1e-8)))
  t_d <- best(risk_individual(d, keys, weights = "w", household = "hh"))
  t_s <- best(measure_risk(d, keyVars = keys, w = "w", hid = "hh"))
  rows[[length(rows) + 1L]] <- data.frame(task = "individual + household risk", n = n, detanon = t_d,
                                          sdcMicro = t_s)
  l <- risk_ldiversity(d, keys, sensitive = "relat")
  ls <- ldiversity(d, keyVars = keys, ldiv_index = "relat")
  stopifnot(isTRUE(all.equal(l$entropy, unname(ls[, 2]), tolerance = 1e-8)),
            isTRUE(all.equal(l$recursive, unname(ls[, 3]))))
  t_d <- best(risk_ldiversity(d, keys, sensitive = "relat"))
  t_s <- best(ldiversity(d, keyVars = keys, ldiv_index = "relat"))
  rows[[length(rows) + 1L]] <- data.frame(task = "l-diversity", n = n, detanon = t_d, sdcMicro = t_s)
  f <- risk_frequencies(d, keys, weights = "w")
  fs <- freqCalc(d, keyVars = keys, w = "w")
  stopifnot(isTRUE(all.equal(f$fk, fs$fk)), isTRUE(all.equal(f$Fk, fs$Fk, tolerance = 1e-8)))
  t_d <- best(risk_frequencies(d, keys, weights = "w"))
  t_s <- best(freqCalc(d, keyVars = keys, w = "w"))
  rows[[length(rows) + 1L]] <- data.frame(task = "frequencies fk, Fk", n = n, detanon = t_d, sdcMicro = t_s)
  su <- risk_suda2(d, keys)
  ss <- suppressWarnings(suda2(d, variables = keys))
  stopifnot(identical(su$score, ss$score))
  t_d <- best(risk_suda2(d, keys))
  t_s <- best(suppressWarnings(suda2(d, variables = keys)))
  rows[[length(rows) + 1L]] <- data.frame(
    task = sprintf("SUDA2 (scores identical; DIS-SUDA: max |diff| %.1e, %d NaN in sdcMicro's)",
                   max(abs(su$dis_score - ss$disScore), na.rm = TRUE), sum(is.nan(ss$disScore))),
    n = n, detanon = t_d, sdcMicro = t_s)
  # local suppression to 3-anonymity on 5 keys (on the 4, 1e6 records leave no cell below 3):
  # the cells each suppresses beside the time
  k5 <- c(keys, "relat")
  t_d <- system.time(ls_d <- suppressMessages(suppress_local(d, k5, k = 3)))[["elapsed"]]
  cells_d <- sum(release_info(ls_d)$counts$changed_by_key)
  stopifnot(min(risk_frequencies(ls_d, k5)$fk) >= 3) # (freqCalc()'s count, tested equal)
  t_s <- tryCatch({
    setTimeLimit(elapsed = limit, transient = TRUE)
    tt <- system.time(ls_s <- localSuppression(d[k5], keyVars = k5, k = 3))[["elapsed"]]
    setTimeLimit(elapsed = Inf)
    tt
  }, error = function(e) {
    setTimeLimit(elapsed = Inf)
    NA_real_
  })
  cells_s <- if (is.na(t_s)) NA_integer_ else sum(unlist(ls_s$totalSupps))
  rows[[length(rows) + 1L]] <- data.frame(
    task = sprintf("local suppression, 5 keys, k = 3 (cells: detanon %d, sdcMicro %s)", cells_d,
                   if (is.na(t_s)) sprintf("not finished in %d s", limit) else cells_s),
    n = n, detanon = t_d, sdcMicro = t_s)
  if (n <= 1e5) {
    # freqCalc() loops in R over the distinct keys with a missing value: 1e5 only
    set.seed(2)
    for (v in keys) d[[v]][runif(n) < 0.02] <- NA
    f <- risk_frequencies(d, keys, weights = "w")
    fs <- freqCalc(d, keyVars = keys, w = "w")
    stopifnot(isTRUE(all.equal(f$Fk, fs$Fk, tolerance = 1e-8)))
    t_d <- best(risk_individual(d, keys, weights = "w"))
    t_s <- best(measure_risk(d, keyVars = keys, w = "w"))
    rows[[length(rows) + 1L]] <- data.frame(task = "individual risk, 2% keys missing", n = n,
                                            detanon = t_d, sdcMicro = t_s)
  }
}
res <- do.call(rbind, rows)
res$ratio <- res$sdcMicro / res$detanon
options(width = 150)
out <- c(sprintf("%s; sdcMicro %s, detanon %s, R %s; best of %d runs (local suppression: one), elapsed seconds",
                 format(Sys.time(), "%Y-%m-%d %H:%M %Z"), packageVersion("sdcMicro"), packageVersion("detanon"),
                 getRversion(), reps),
         sprintf("load average (1, 5, 15 min) before: %s; after: %s", paste(load_before, collapse = " "),
                 if (file.exists("/proc/loadavg")) paste(load_avg(), collapse = " ") else NA),
         utils::capture.output(print(format(res, digits = 3), row.names = FALSE)))
cat(out, sep = "\n")
if (dir.exists(file.path("bench", "results"))) writeLines(out, file.path("bench", "results", "categorical.txt"))
