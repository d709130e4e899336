# Benchmark: risk_suda2() against sdcMicro::suda2(), and suppress_local() against
# sdcMicro::localSuppression(), in the same run, on data drawn column by column from the
# marginals of sdcMicro's `testdata` (keys urbrur, water, sex, age; and with roof, walls,
# relat for 7 keys). One thread (neither function is threaded).
# Run from the package root after installing detanon:
#   Rscript bench/suda2.R            # n = 1e5
#   Rscript bench/suda2.R 1e6        # n = 1e6 (SUDA2 only: localSuppression() is too slow)
# Results: bench/results/suda2.txt (CPU times, median of 3 runs; 1e6: 48x with 4 keys, 27x with 7).
suppressMessages({
  library(detanon)
  library(sdcMicro)
})
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args)) as.numeric(args[1]) else 1e5

env <- new.env()
utils::data("testdata", package = "sdcMicro", envir = env)
td <- env$testdata
make_data <- function(n, seed = 1) {
  set.seed(seed)
  keys <- c("urbrur", "water", "sex", "age", "roof", "walls", "relat")
  as.data.frame(lapply(td[keys], function(x) sample(x, n, replace = TRUE)))
}
d <- make_data(n)
# CPU time (user + system) is the steady figure on a shared host: the median of `reps` runs
# (elapsed time is shown too)
time <- function(expr, reps = 3) {
  expr <- substitute(expr)
  env <- parent.frame()
  runs <- lapply(seq_len(reps), function(i) {
    gc()
    t <- system.time(v <- eval(expr, env))
    list(value = v, cpu = t[["user.self"]] + t[["sys.self"]], elapsed = t[["elapsed"]])
  })
  list(value = runs[[1]]$value, time = stats::median(vapply(runs, `[[`, 0, "cpu")),
       elapsed = stats::median(vapply(runs, `[[`, 0, "elapsed")))
}
load <- function() if (file.exists("/proc/loadavg")) readLines("/proc/loadavg") else "unknown"
cat(sprintf("n = %g records; load average at start: %s\n", n, load()))
for (keys in list(c("urbrur", "water", "sex", "age"),
                  c("urbrur", "water", "sex", "age", "roof", "walls", "relat"))) {
  a <- time(risk_suda2(d, keys))
  b <- time(suppressWarnings(suda2(d, variables = keys)))
  same <- identical(a$value$score, b$value$score)
  dis <- max(abs(a$value$dis_score - b$value$disScore))
  cat(sprintf("suda2, %d keys: CPU detanon %.2f s, sdcMicro %.2f s, ratio %.1fx (elapsed %.2f s vs %.2f s); scores identical: %s; max |DIS diff| %.1e; %s\n",
              length(keys), a$time, b$time, b$time / a$time, a$elapsed, b$elapsed, same, dis,
              paste(a$value$n_msu, "MSUs")))
}
if (n <= 1e5) {
  for (keys in list(c("urbrur", "water", "sex", "age"), c("urbrur", "water", "sex", "age", "roof"))) {
    a <- time(suppressMessages(suppress_local(d, keys, k = 3)), reps = 1)
    b <- time(localSuppression(d[keys], keyVars = keys, k = 3), reps = 1)
    ca <- release_info(a$value)$counts$changed_by_key
    cb <- unlist(b$value$totalSupps)
    fk <- freqCalc(as.data.frame(a$value), keyVars = keys, alpha = 1)$fk
    cat(sprintf("local suppression, %d keys, k = 3: CPU detanon %.2f s, %d cells (%s); sdcMicro %.2f s, %d cells (%s); detanon's min count %d\n",
                length(keys), a$time, sum(ca), paste(ca, collapse = "/"), b$time, sum(cb),
                paste(cb, collapse = "/"), min(fk)))
  }
}
cat(sprintf("load average at end: %s\n", load()))
