# The algorithm-aware intruder who knows the settings of an adaptive release (k grown per
# record, m = 1): it tries every k from the smallest to k_max (158 k). Titanic resampled to
# n records as bench/battery_ties.R makes it. In a fresh R process, for its peak memory:
#   Rscript bench/recipe_many_k.R n file.rds   makes the release and saves (data, release);
#   Rscript bench/recipe_many_k.R time file.rds nthreads [out.rds]
#     attack_recipe() with its control: CPU and elapsed seconds, VmHWM, rate, share certain,
#     digest of the result (R_LIBS=<library> to compare two builds).
args <- commandArgs(trailingOnly = TRUE)
suppressMessages(library(detanon))
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE))), "tune_data.R"))
if (args[1] != "time") {
  n <- as.numeric(args[1])
  d <- tune_bench_data("titanic", n)$d
  m <- anonymise_adaptive(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3, m = 1,
                          k_max = 160)
  saveRDS(list(d = d, m = m), args[2])
} else {
  cap <- readRDS(args[2])
  nt <- as.integer(args[3])
  t0 <- proc.time()
  a <- attack_recipe(cap$d, cap$m, seed = 1, nthreads = nt)
  t <- proc.time() - t0
  st <- readLines("/proc/self/status")
  cat(sprintf("n = %d, nthreads = %d: %.1f s CPU, %.1f s elapsed, VmHWM %.0f MB; %d k, rate %.4f, share certain %.5f, control %.4f; digest %s\n",
              nrow(cap$d), nt, sum(t[c(1, 2, 4, 5)], na.rm = TRUE), t[[3]],
              as.numeric(gsub("[^0-9]", "", st[grepl("^VmHWM", st)])) / 1024, length(a$details$k), a$rate,
              a$details$share_certain, a$control_rate, digest::digest(a)))
  if (length(args) >= 4) saveRDS(a, args[4])
}
