# The memory of each attack of the verification battery (issue 39, item 3): on the release
# the default search chooses on the sim data of bench/tune_scale.R (MDAV k = 30 with noise),
# each attack of risk_battery() run alone on the intruder's view and its control, one thread,
# each in a fresh process: its peak resident memory above the process's before it (VmHWM
# reset through /proc/self/clear_refs; Linux), and the size of its result. Also the view and
# its control.
#   Rscript bench/tune_attack_memory.R [n] [attack]
# Results: bench/results/tune-scale.txt.
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 1e5
one <- if (length(args) >= 2) args[2]
if (is.null(one)) {
  me <- sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE))
  for (a in c("view", "linkage_released", "linkage_original", "singling_out", "assignment", "fellegi_sunter",
              "recipe", "tail_outliers", "tail_extremes")) {
    system2(file.path(R.home("bin"), "Rscript"), c(me, n, a))
  }
  quit(save = "no")
}
suppressMessages(library(detanon))
ns <- asNamespace("detanon")
set.seed(1)
d <- data.frame(g = factor(rep(c("a", "b", "c", "d"), each = n / 4)), x1 = round(rnorm(n, 50, 10), 1),
                x2 = round(rexp(n, 0.1), 1), x3 = round(runif(n, 20, 80)))
rel <- suppressMessages(anonymise_mdav(d, vars = c("x1", "x2", "x3"), strata = "g", k = 30, noise = TRUE,
                                       check_identifiers = FALSE))
status <- function(field) {
  s <- readLines("/proc/self/status")
  as.numeric(gsub("[^0-9]", "", s[startsWith(s, field)])) / 1024
}
reset <- function() { invisible(gc()); cat("5", file = "/proc/self/clear_refs"); status("VmRSS:") }
before <- reset()
v <- ns$attack_view(d, rel, intruder_published(vars = c("x1", "x2", "x3"), strata = "g"), TRUE, 1L)
if (one == "view") {
  cat(sprintf("n = %g; the view and its control: peak +%.0f MiB above %.0f MiB, kept %.0f MiB\n", n,
              status("VmHWM:") - before, before, as.numeric(object.size(v)) / 2^20))
} else {
  a <- one
  reg <- battery_attacks()
  before <- reset()
  t <- system.time(res <- ns$run_attack(reg[[a]], v$s, v$ctrl, m = 3L, sensitive = NULL, nthreads = 1L, seed = 1L))
  cat(sprintf("%-18s peak +%5.0f MiB above %5.0f MiB; result %4.0f MiB; %6.1f s\n", a, status("VmHWM:") - before, before,
              as.numeric(object.size(res)) / 2^20, t[["elapsed"]]))
}
