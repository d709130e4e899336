# Interrupt latency: starts anonymise() on n rows (4 variables, 8 strata, k = 5; default
# 1e7, or one stratum with `one`) in a child R process, sends it SIGINT after `after`
# seconds, and reports how long it took until R code ran again (an interrupt during a
# kd-tree build surfaces as the error "interrupted by the user").
#   Rscript bench/interrupt.R [n] [after] [one]
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 1e7
after <- if (length(args) >= 2) as.numeric(args[2]) else 4
strata <- if (length(args) >= 3 && args[3] == "one") 1L else 8L
pidfile <- tempfile(); donefile <- tempfile(); script <- tempfile(fileext = ".R")
writeLines(c(
  "library(detanon)",
  sprintf("set.seed(1); n <- %.0f", n),
  sprintf("d <- data.frame(g = factor(sample(%d, n, TRUE)), x1 = rnorm(n), x2 = rexp(n), x3 = runif(n), x4 = rnorm(n))", strata),
  sprintf("writeLines(as.character(Sys.getpid()), '%s')", pidfile),
  "tryCatch(anonymise(d, k = 5, strata = 'g', nthreads = 1), interrupt = function(e) NULL, error = function(e) message(conditionMessage(e)))",
  sprintf("writeLines('returned', '%s')", donefile)
), script)
child <- system2("Rscript", script, wait = FALSE)
while (!file.exists(pidfile) || length(readLines(pidfile)) == 0L) Sys.sleep(0.05)
pid <- as.integer(readLines(pidfile))
Sys.sleep(after)
t0 <- Sys.time()
tools::pskill(pid, tools::SIGINT)
while (!file.exists(donefile) && tools::pskill(pid, 0L)) Sys.sleep(0.01)
latency <- as.numeric(difftime(Sys.time(), t0, units = "secs"))
cat(sprintf("n = %.0f, %d strata: SIGINT after %.1f s into anonymise(); %s after %.2f s\n", n, strata, after,
            if (file.exists(donefile)) "the session was back (returned to R code)" else "the process ended", latency))
