# The memory of each attack of the verification battery (issue 39, item 3): on a release the
# default search verifies (MDAV k = 30 with noise by default; the data of bench/tune_scale.R,
# sim or titanic: tune_bench_data() of bench/tune_data.R; the noise drawn under set.seed(1)),
# each attack of risk_battery() run alone on the intruder's view and its control, one thread,
# each in a fresh process: its peak resident memory above the process's before it (VmHWM
# reset through /proc/self/clear_refs; Linux), and the size of its result. Also the view and
# its control.
#   Rscript bench/tune_attack_memory.R [n] [attack|all] [case] [k]   (case: sim (default) or titanic; k default 30)
# Results: bench/results/tune-scale.txt.
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 1e5
one <- if (length(args) >= 2 && args[2] != "all") args[2]
case <- if (length(args) >= 3) args[3] else "sim"
k <- if (length(args) >= 4) as.integer(args[4]) else 30L
me <- sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE))
if (is.null(one)) {
  for (a in c("view", "linkage_released", "linkage_original", "singling_out", "assignment", "fellegi_sunter",
              "recipe", "tail_outliers", "tail_extremes")) {
    system2(file.path(R.home("bin"), "Rscript"), c(me, n, a, case, k))
  }
  quit(save = "no")
}
suppressMessages(library(detanon))
ns <- asNamespace("detanon")
source(file.path(dirname(me), "tune_data.R"))
b <- tune_bench_data(case, n)
d <- b$d
set.seed(1)
rel <- suppressMessages(anonymise_mdav(d, vars = b$vars, strata = b$strata, k = k, noise = TRUE,
                                       check_identifiers = FALSE))
status <- function(field) {
  s <- readLines("/proc/self/status")
  as.numeric(gsub("[^0-9]", "", s[startsWith(s, field)])) / 1024
}
reset <- function() { invisible(gc()); cat("5", file = "/proc/self/clear_refs"); status("VmRSS:") }
before <- reset()
v <- ns$attack_view(d, rel, intruder_published(vars = b$vars, strata = b$strata), TRUE, 1L)
if (one == "view") {
  cat(sprintf("%s, MDAV k = %d, n = %g; the view and its control: peak +%.0f MiB above %.0f MiB, kept %.0f MiB\n", case, k, n,
              status("VmHWM:") - before, before, as.numeric(object.size(v)) / 2^20))
} else {
  a <- one
  reg <- battery_attacks()
  before <- reset()
  t <- system.time(res <- ns$run_attack(reg[[a]], v$s, v$ctrl, m = 3L, sensitive = NULL, nthreads = 1L, seed = 1L))
  cat(sprintf("%-18s peak +%5.0f MiB above %5.0f MiB; result %4.0f MiB; %6.1f s\n", a, status("VmHWM:") - before, before,
              as.numeric(object.size(res)) / 2^20, t[["elapsed"]]))
  # (ATTACK_MEMORY_SAVE=dir: the result is kept there, to compare two builds with identical())
  if (nzchar(Sys.getenv("ATTACK_MEMORY_SAVE"))) {
    saveRDS(res, file.path(Sys.getenv("ATTACK_MEMORY_SAVE"), sprintf("%s-%s-%g-k%d.rds", a, case, n, k)))
  }
}
