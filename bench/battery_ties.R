# The verification battery of tune_release() on tie-heavy data (issue 39, item 3): Titanic
# resampled to n records (ages and fares jittered and rounded: 14.5% duplicate rows at 1e5,
# 38% at 1e6; as bench/tune_scale.R titanic), no key. Two steps, each in a fresh R process so
# that its peak memory (Linux VmHWM) is its own:
#   Rscript bench/battery_ties.R capture n file
#     runs the search with its defaults (one thread) up to its verification and saves the
#     candidates the verification would run, in its order (with the data, intruder, attacks,
#     m and seed), and prints them;
#   Rscript bench/battery_ties.R time file recipe|battery nthreads [out.rds]
#     runs risk_battery() as the verification does on the first of them: the recipe attack
#     alone, or every attack of the verification; prints CPU and elapsed seconds, VmHWM, the
#     recipe attack's rate, worst stratum's rate, top-m rate and control rate, and a digest
#     of the result (to compare two builds: R_LIBS=<library> Rscript ...); saves the result
#     to out.rds when given.
# Results: bench/results/battery.txt.
args <- commandArgs(trailingOnly = TRUE)
suppressMessages(library(detanon))
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE))), "tune_data.R"))
if (args[1] == "capture") {
  n <- as.numeric(args[2])
  d <- tune_bench_data("titanic", n)$d
  trace("tune_result", where = asNamespace("detanon"), print = FALSE, tracer = bquote({
    tried <- do.call(rbind, lapply(cands, `[[`, "row"))
    rel <- lapply(cands, `[[`, "release")
    ok <- which(tried$meets & !vapply(rel, is.null, NA))
    ord <- ok[order(tried$loss[ok])]
    saveRDS(list(d = ctx$df, tried = tried, ord = ord, releases = rel[ord], intruder = ctx$intruder,
                 verify = ctx$verify, m = ctx$m, seed = seed), .(args[3]))
    print(tried[ord, c("method", "settings", "loss")])
    quit(save = "no")
  }))
  tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), key = NULL, nthreads = 1)
} else {
  cap <- readRDS(args[2])
  nt <- as.integer(args[4])
  attacks <- if (args[3] == "recipe") "recipe" else cap$verify
  t0 <- proc.time()
  b <- suppressWarnings(risk_battery(cap$d, cap$releases[[1]], intruder = cap$intruder, attacks = attacks,
                                     m = cap$m, seed = cap$seed, nthreads = nt))
  t <- proc.time() - t0
  st <- readLines("/proc/self/status")
  a <- b$attacks$recipe
  cat(sprintf(paste("%s, n = %d, %s, nthreads = %d: %.1f s CPU, %.1f s elapsed, VmHWM %.0f MB; recipe: %d k,",
                    "rate %.4f, worst stratum %.4f, top-m %.4f, control %.4f; digest %s\n"),
              cap$tried$settings[cap$ord[1]], nrow(cap$d), args[3], nt, sum(t[c(1, 2, 4, 5)], na.rm = TRUE),
              t[[3]], as.numeric(gsub("[^0-9]", "", st[grepl("^VmHWM", st)])) / 1024,
              length(a$details$k), a$rate, max(a$by_stratum$rate, na.rm = TRUE), a$rate_m, a$control_rate,
              digest::digest(b)))
  if (length(args) >= 5) saveRDS(b, args[5])
}
