# Interrupt latency of a call in a child R process (as bench/interrupt.R measures it): runs
# `setup` then `call` (code as text) in Rscript with the installed detanon, sends SIGINT
# `after` seconds into the call, and returns the seconds until the child's R code ran
# again, NA when the call ended before the signal (or the child failed to start).
interrupt_latency <- function(setup, call, after = 1, give_up = 120) {
  dir <- tempfile("intr")
  dir.create(dir)
  on.exit(unlink(dir, recursive = TRUE), add = TRUE)
  f <- function(x) file.path(dir, x)
  lib <- paste(deparse(.libPaths()), collapse = "")
  writeLines(c(
    sprintf(".libPaths(%s)", lib),
    sprintf("options(error = function() { writeLines('-1', '%s'); q(status = 1) })", f("pid")),
    "suppressPackageStartupMessages(library(detanon))",
    setup,
    sprintf("writeLines(as.character(Sys.getpid()), '%s')", f("pid")),
    sprintf("cond <- tryCatch({suppressWarnings(suppressMessages(%s)); 'finished'}, interrupt = function(e) 'interrupt')", call),
    sprintf("writeLines(cond, '%s')", f("cond"))
  ), f("child.R"))
  rscript <- file.path(R.home("bin"), "Rscript")
  system2(rscript, f("child.R"), wait = FALSE, stdout = FALSE, stderr = FALSE)
  t_start <- Sys.time()
  waited <- function(t) as.numeric(difftime(Sys.time(), t, units = "secs"))
  while (!file.exists(f("pid")) || !length(readLines(f("pid")))) {
    if (waited(t_start) > give_up) return(NA_real_)
    Sys.sleep(0.05)
  }
  pid <- as.integer(readLines(f("pid")))
  if (pid < 0) return(NA_real_)
  t_call <- Sys.time()
  while (!file.exists(f("cond")) && waited(t_call) < after) Sys.sleep(0.02)
  if (file.exists(f("cond"))) return(NA_real_)
  t0 <- Sys.time()
  tools::pskill(pid, tools::SIGINT)
  while (!file.exists(f("cond")) && waited(t0) < give_up) Sys.sleep(0.01)
  lat <- waited(t0)
  Sys.sleep(0.05)
  cond <- if (file.exists(f("cond"))) readLines(f("cond")) else "none"
  if (tools::pskill(pid, 0L)) tools::pskill(pid, tools::SIGKILL)
  if (identical(cond, "finished")) NA_real_ else lat
}

expect_interruptible <- function(setup, call, after = 1, limit = 1.5) {
  skip_on_cran()
  skip_on_os("windows")
  lat <- interrupt_latency(setup, call, after)
  if (is.na(lat)) skip("the call ended before the signal (or the child did not start)")
  expect_lt(lat, limit)
}
