# Interrupt latency: starts anonymise() on n rows (4 variables, 8 strata, k = 5 by default;
# default n = 1e7, or one stratum with `one`) in a child R process, sends it SIGINT after
# `after` seconds, and reports how long it took until R code ran again and which condition
# arrived (an `interrupt`, wherever the run was: tree build or search, any k).
#   Rscript bench/interrupt.R [n] [after] [one] [k]
#   Rscript bench/interrupt.R 4000 1 one 4000    # one stratum with k = n
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 1e7
after <- if (length(args) >= 2) as.numeric(args[2]) else 4
strata <- if (length(args) >= 3 && args[3] == "one") 1L else 8L
k <- if (length(args) >= 4) as.numeric(args[4]) else 5
condfile <- tempfile()
pidfile <- tempfile(); donefile <- tempfile(); script <- tempfile(fileext = ".R")
writeLines(c(
  "library(detanon)",
  sprintf("set.seed(1); n <- %.0f", n),
  sprintf("d <- data.frame(g = factor(sample(%d, n, TRUE)), x1 = rnorm(n), x2 = rexp(n), x3 = runif(n), x4 = rnorm(n))", strata),
  sprintf("writeLines(as.character(Sys.getpid()), '%s')", pidfile),
  sprintf("cond <- tryCatch({anonymise(d, k = %.0f, strata = 'g', nthreads = 1); 'none (finished)'}, interrupt = function(e) 'an interrupt', error = function(e) paste('an error:', conditionMessage(e)))", k),
  sprintf("writeLines(cond, '%s')", condfile),
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
cat(sprintf("n = %.0f, %d strata, k = %.0f: SIGINT after %.1f s into anonymise(); %s after %.2f s; condition: %s\n",
            n, strata, k, after,
            if (file.exists(donefile)) "the session was back (returned to R code)" else "the process ended", latency,
            if (file.exists(condfile)) readLines(condfile) else "?"))
