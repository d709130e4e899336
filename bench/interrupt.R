# Interrupt latency: starts a verb on n rows in a child R process, sends it SIGINT after
# `after` seconds, and reports how long it took until R code ran again and which condition
# arrived (an `interrupt`, wherever the run was).
#
#   Rscript bench/interrupt.R all [n] [after] [verb ...]   # every verb (or those named), n = 1e6
#   Rscript bench/interrupt.R [n] [after] [one] [k]        # anonymise() only (as before)
#   Rscript bench/interrupt.R 4000 1 one 4000               # one stratum with k = n
#
# The data: a factor `g` of 8 strata, four continuous variables x1..x4 and two whole-number
# columns a1, a2 (for OLA), plus the inputs some verbs need (a release far from the originals:
# each column shuffled within the strata; classes with many small clusters). The setup runs
# before the clock starts; the child writes its pid just before it calls the verb. A verb that
# finishes before the signal is reported with its run time (then there was nothing to interrupt).
args <- commandArgs(trailingOnly = TRUE)

setup <- c(
  "library(detanon)",
  "set.seed(1)",
  "d <- data.frame(g = factor(sample(8, n, TRUE)), x1 = rnorm(n), x2 = rexp(n), x3 = runif(n), x4 = rnorm(n),",
  "                a1 = sample(0:99, n, TRUE), a2 = sample(0:63, n, TRUE))",
  "far <- function() { m <- d; for (v in c('x1', 'x2', 'x3', 'x4')) m[[v]] <- ave(m[[v]], m$g, FUN = sample); m }"
)

# verb -> list(prep = code run before the clock, call = the call that is interrupted)
verbs <- list(
  anonymise = list(call = "anonymise(d, vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g', k = 5)"),
  anonymise_adaptive = list(call = "anonymise_adaptive(d, vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g', k = 3, m = 2, check_identifiers = FALSE)"),
  anonymise_adaptive_w1 = list(call = "anonymise_adaptive(d, vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g', k = 3, w1 = 0.01, check_identifiers = FALSE)"),
  anonymise_keps = list(call = "anonymise_keps(d, vars = c('x1', 'x2'), quasi = c('x3', 'x4'), strata = 'g', k = 5, epsilon = 1)"),
  mondrian = list(call = "equivalence_classes(d, quasi = c('x1', 'x2', 'x3', 'x4'), strata = 'g', k = 5)"),
  ola = list(prep = "h <- list(a1 = hierarchy_bands(d$a1, width = 2, levels = 6), a2 = hierarchy_bands(d$a2, width = 2, levels = 5))",
             call = "equivalence_classes(d, quasi = c('a1', 'a2'), strata = 'g', k = 5, method = 'ola', hierarchies = h)"),
  stir = list(call = "stir(d, vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g', k = 3, seed = 1)"),
  stir_flatten = list(call = "stir(d, vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g', k = 3, method = 'flatten', seed = 1)"),
  blend_outliers = list(prep = "ns <- round(n / 15); cl <- c(rep(seq_len(ns), each = 2), rep(ns + seq_len(round(n / 10)), length.out = n - 2 * ns))",
                        call = "blend_outliers(d, vars = c('x1', 'x2'), classes = cl, k = 3, seed = 1)"),
  stir_clusters = list(call = "stir_clusters(d, quasi = c('g', 'x1'), radius = c(g = 0, x1 = 1e-4))"),
  distance_map = list(call = "distance_map(d, vars = c('x1', 'x2'), n_sample = 3e4)"),
  merge_small_strata = list(prep = "d$g2 <- factor(ifelse(seq_len(n) <= 200, paste0('r', seq_len(n) %% 100), as.character(d$g)))",
                            call = "merge_small_strata(d[-1], vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g2', k = 5)"),
  risk_linkage = list(prep = "m <- far()", call = "risk_linkage(d, m, vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g')"),
  risk_linkage_near = list(prep = "m <- d; m$x1 <- m$x1 + rnorm(n, 0, 1e-3)", call = "risk_linkage(d, m, vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g', m = 3)"),
  risk_rmd = list(prep = "m <- far()", call = "risk_rmd(d, m, vars = c('x1', 'x2', 'x3', 'x4'))"),
  risk_replay = list(prep = "m <- far()", call = "risk_replay(d, m, vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g', mask = function(x) x, seed = 1)"),
  risk_class_link = list(prep = "m <- far()", call = "risk_class_link(d, m, vars = c('x1', 'x2'), classes = d$a1)"),
  utility_delta = list(prep = "m <- far()", call = "utility_delta(d, m, vars = c('x1', 'x2', 'x3', 'x4'))"),
  utility_pmse = list(prep = "m <- far()", call = "utility_pmse(d, m, vars = c('x1', 'x2', 'x3', 'x4'))"),
  utility_model = list(prep = "m <- far()", call = "utility_model(d, m, x1 ~ x2 + x3 + x4)"),
  assess = list(prep = "m <- far()", call = "assess(d, m, vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g', mask = function(x) x)"),
  tune_release = list(call = "tune_release(d, vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g')"),
  kanon_check = list(call = "kanon_check(d, strata = c('g', 'a1', 'a2'), k = 5)"),
  strata_table = list(call = "strata_table(d, strata = c('g', 'a1', 'a2'), k = 5)"),
  safe_table = list(call = "safe_table(d, strata = c('g', 'a2'))"),
  generalise_strata = list(prep = "d$a3 <- factor(d$a1 * 64 + d$a2)", call = "generalise_strata(d, 'a3', strata = c('g', 'a3'), k = 5)"),
  detect_identifiers = list(call = "detect_identifiers(d)")
)

# Run `call` (after `prep`) in a child R process on `n` rows; SIGINT after `after` s.
latency <- function(name, prep, call, n, after) {
  pidfile <- tempfile(); donefile <- tempfile(); condfile <- tempfile(); script <- tempfile(fileext = ".R")
  writeLines(c(
    sprintf("options(error = function() { writeLines('-1', '%s'); q(status = 1) })", pidfile),
    sprintf("n <- %.0f", n), setup, if (!is.null(prep)) prep,
    sprintf("writeLines(as.character(Sys.getpid()), '%s')", pidfile),
    "t0 <- Sys.time()",
    sprintf("cond <- tryCatch({suppressWarnings(suppressMessages(%s)); sprintf('none (finished in %%.1f s)', as.numeric(difftime(Sys.time(), t0, units = 'secs')))}, interrupt = function(e) 'an interrupt', error = function(e) paste('an error:', conditionMessage(e)))", call),
    sprintf("writeLines(cond, '%s')", condfile),
    sprintf("writeLines('returned', '%s')", donefile)
  ), script)
  system2("Rscript", script, wait = FALSE, stdout = FALSE, stderr = FALSE)
  while (!file.exists(pidfile) || length(readLines(pidfile)) == 0L) Sys.sleep(0.05)
  pid <- as.integer(readLines(pidfile))
  if (pid < 0) return(data.frame(verb = name, latency_s = NA_real_, condition = "setup failed"))
  t_start <- Sys.time()
  while (!file.exists(donefile) && as.numeric(difftime(Sys.time(), t_start, units = "secs")) < after) Sys.sleep(0.02)
  t0 <- Sys.time()
  if (!file.exists(donefile)) tools::pskill(pid, tools::SIGINT)
  while (!file.exists(donefile) && tools::pskill(pid, 0L)) Sys.sleep(0.01)
  lat <- as.numeric(difftime(Sys.time(), t0, units = "secs"))
  Sys.sleep(0.1)
  cond <- if (file.exists(condfile)) readLines(condfile) else "?"
  if (tools::pskill(pid, 0L)) tools::pskill(pid, tools::SIGKILL)
  data.frame(verb = name, latency_s = if (cond == "an interrupt") round(lat, 2) else NA_real_, condition = cond)
}

if (length(args) >= 1 && args[1] == "all") {
  n <- if (length(args) >= 2) as.numeric(args[2]) else 1e6
  after <- if (length(args) >= 3) as.numeric(args[3]) else 2
  which <- if (length(args) >= 4) args[-(1:3)] else names(verbs)
  cat(sprintf("machine: %d cores, %s; R %s; n = %.0f, SIGINT %.1f s into the call\n", parallel::detectCores(),
              sub("model name\t: ", "", grep("model name", readLines("/proc/cpuinfo"), value = TRUE)[1]),
              getRversion(), n, after))
  res <- do.call(rbind, lapply(which, function(v) {
    r <- latency(v, verbs[[v]]$prep, verbs[[v]]$call, n, after)
    cat(sprintf("%-22s %8s  %s\n", r$verb, format(r$latency_s), r$condition))
    r
  }))
  cat("\nSummary (latency in seconds from SIGINT to R code running again; NA: finished before the signal):\n")
  print(res, row.names = FALSE)
  cat(sprintf("largest latency: %.2f s\n", max(res$latency_s, na.rm = TRUE)))
} else {
  n <- if (length(args) >= 1) as.numeric(args[1]) else 1e7
  after <- if (length(args) >= 2) as.numeric(args[2]) else 4
  strata <- if (length(args) >= 3 && args[3] == "one") 1L else 8L
  k <- if (length(args) >= 4) as.numeric(args[4]) else 5
  r <- latency("anonymise", sprintf("d$g <- factor(sample(%d, n, TRUE))", strata),
               sprintf("anonymise(d, vars = c('x1', 'x2', 'x3', 'x4'), strata = 'g', k = %.0f, nthreads = 1)", k), n, after)
  cat(sprintf("n = %.0f, %d strata, k = %.0f: SIGINT after %.1f s into anonymise(); back after %.2f s; condition: %s\n",
              n, strata, k, after, r$latency_s, r$condition))
}
