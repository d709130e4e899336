# Benchmark: the categorical risk measures against sdcMicro in the same run:
# risk_individual() (weights and households) against measure_risk(), and
# risk_ldiversity() against ldiversity(), on 4 key variables shaped like sdcMicro's
# testdata (urbrur 2, water 8, sex 2, age 0..99 levels), sampling weights and households
# of about 3 people; and once with 2 % of the key values suppressed (missing: wildcards).
# Run from the package root after installing detanon and sdcMicro:
#   Rscript bench/categorical.R            # n = 1e5 and 1e6
#   Rscript bench/categorical.R 2e5        # other sizes
# Every timing is the best of `reps` runs (elapsed seconds); the results are checked to
# agree to 1e-8 before the ratio is printed.
suppressMessages({
  library(detanon)
  library(sdcMicro)
})
args <- commandArgs(trailingOnly = TRUE)
sizes <- if (length(args)) as.numeric(args) else c(1e5, 1e6)
reps <- 3L

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
cat(sprintf("sdcMicro %s, detanon %s, R %s; best of %d runs, elapsed seconds\n",
            packageVersion("sdcMicro"), packageVersion("detanon"), getRversion(), reps))
print(format(res, digits = 3), row.names = FALSE)
