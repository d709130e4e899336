# tune_release() at the scale of a register (issue 39): the search with its defaults and a
# key (every family: plain, per stratum, adaptive, MDAV, keyed, stirred) on
#   sim:     1e6 records x 3 continuous variables, 4 strata of 250,000 records;
#   titanic: Titanic resampled to 1e6 records (ages and fares jittered and rounded: 43% of
#            the rows are duplicates), its published columns held by the default intruder.
# Each case runs in a fresh R process (its peak memory, Linux VmHWM, is its own) under
# R's profiler, so that the time of every family's candidates, of the verification battery
# and of each attack is known even when the run is stopped at its time limit (the profile
# is kept in $TUNE_SCALE_DIR when set). With two or more threads the search forks (see tune_release()):
# the peak memory of the process and its children together (the sum of their proportional set sizes,
# sampled every 0.5 s) is printed beside VmHWM, with the peak of each process (the search, each fork in
# turn; the samples are kept in the same directory, <case>.pss: seconds, total KiB, pid:KiB of each).
# TUNE_KEY=none searches without a key (no keyed family). Each sample also holds each process's
# Private_Dirty (pid:PSS:private dirty, KiB): what it alone holds, the rest of its PSS being its share of
# the pages it still shares with the others (a fork's copied pages are private dirty).
# TUNE_SCALE_TRACE=<file> logs R's heap (gc(): a full collection, so it changes what is measured) before
# each fork, after the candidates and at each verification, with the sizes of the releases kept and of the
# evaluator's parts; TUNE_SCALE_PRE=<file.R> is sourced before the data are made (e.g. a trace()).
# Results: bench/results/tune-scale.txt.
#   Rscript bench/tune_scale.R [case] [nthreads] [minutes] [n]   (case: sim, titanic or both; n default 1e6)
args <- commandArgs(trailingOnly = TRUE)
cases <- if (length(args) >= 1 && args[1] != "both") args[1] else c("sim", "titanic")
nt <- if (length(args) >= 2) as.integer(args[2]) else 2L
minutes <- if (length(args) >= 3) as.numeric(args[3]) else 20
n <- if (length(args) >= 4) as.numeric(args[4]) else 1e6
dir <- Sys.getenv("TUNE_SCALE_DIR", tempfile("tune_scale")); dir.create(dir, showWarnings = FALSE)
data_code <- list(
  sim = c(paste0("set.seed(1); n <- ", n),
          "d <- data.frame(g = factor(rep(c('a', 'b', 'c', 'd'), each = n / 4)), x1 = round(rnorm(n, 50, 10), 1),",
          "                x2 = round(rexp(n, 0.1), 1), x3 = round(runif(n, 20, 80)))",
          "vars <- c('x1', 'x2', 'x3'); strata <- 'g'"),
  titanic = c(paste0("set.seed(1); n <- ", n, "; t0 <- titanic_paper()[-1]"),
              "d <- t0[sample(nrow(t0), n, TRUE), ]",
              "d$Age <- round(pmax(0.5, d$Age + stats::rnorm(n, 0, 3)))",
              "d$Fare <- round(pmax(0, d$Fare * exp(stats::rnorm(n, 0, 0.2))), 2); rownames(d) <- NULL",
              "cat(sprintf('duplicate rows: %.1f%%\\n', 100 * mean(duplicated(d))))",
              "vars <- c('Age', 'Fare'); strata <- c('Pclass', 'Sex', 'Family')"))
for (case in cases) {
  f <- file.path(dir, paste0(case, ".R"))
  prof <- file.path(dir, paste0(case, ".prof"))
  writeLines(c(
    "suppressMessages(library(detanon))",
    "peak <- function() { s <- readLines('/proc/self/status'); as.numeric(gsub('[^0-9]', '', s[grepl('^VmHWM', s)])) / 1024 }",
    sprintf("pss <- %s", deparse(file.path(dir, paste0(case, ".pss")))), # (kept: read it when the run is stopped)
    "me <- Sys.getpid()",
    paste0("system2('sh', c('-c', shQuote(sprintf(paste('while kill -0 %d 2>/dev/null; do t=0; l=; for p in %d $(pgrep -P %d);',",
           "'do set -- $(awk \\'/^Pss:/ {p=$2} /^Private_Dirty:/ {d=$2} END {print p+0, d+0}\\' /proc/$p/smaps_rollup 2>/dev/null);',",
           "'v=${1:-0}; t=$((t + v)); l=\\\"$l $p:$v:${2:-0}\\\"; done;',",
           "'echo $(date +%%s) $t $l >> %s; sleep 0.5; done'), me, me, me, pss))), wait = FALSE)"),
    if (nzchar(Sys.getenv("TUNE_SCALE_PRE"))) sprintf("source(%s)", deparse(Sys.getenv("TUNE_SCALE_PRE"))),
    if (nzchar(Sys.getenv("TUNE_SCALE_TRACE"))) c( # (a full gc() before each fork: it changes what is measured)
      sprintf("tl <- %s; t00 <- proc.time()[[3]]", deparse(Sys.getenv("TUNE_SCALE_TRACE"))),
      "mib <- function(x) as.numeric(utils::object.size(x)) / 2^20",
      "note <- function(what) { g <- gc(); cat(sprintf('%6.0f s %s: R heap in use %.0f MiB (Ncells %.0f, Vcells %.0f)\\n', proc.time()[[3]] - t00, what, g[1, 2] + g[2, 2], g[1, 2], g[2, 2]), file = tl, append = TRUE) }",
      "trace('mcparallel', where = asNamespace('parallel'), print = FALSE, tracer = quote(note('fork')))",
      "trace('tune_result', where = asNamespace('detanon'), print = FALSE, tracer = quote({ note('candidates done'); e <- environment(ctx$ev); sz <- sort(vapply(ls(e), function(v) mib(get(v, e)), 0), decreasing = TRUE)",
      "  rel <- Filter(Negate(is.null), lapply(cands, `[[`, 'release')); cat(sprintf('  %d candidates, %d releases kept (%.0f MiB); ctx$df %.0f MiB; the evaluator\\'s largest: %s\\n', length(cands), length(rel), mib(rel), mib(ctx$df), paste(sprintf('%s %.0f', names(sz), sz)[1:min(8, length(sz))], collapse = ', ')), file = tl, append = TRUE) }))",
      "trace('tune_verify', where = asNamespace('detanon'), print = FALSE, tracer = quote(note('verify')))"),
    data_code[[case]],
    sprintf("Rprof(%s, interval = 0.05)", deparse(prof)),
    sprintf(paste("t <- system.time(tu <- tune_release(d, vars = vars, strata = strata, key = %s,",
                  "nthreads = %d))"), if (Sys.getenv("TUNE_KEY") == "none") "NULL" else "'the custodian bench key 01'", nt),
    "Rprof(NULL)",
    "pl <- strsplit(trimws(readLines(pss)), ' +'); pss_total <- vapply(pl, function(x) as.numeric(x[2]), 0)",
    "pp <- strsplit(unlist(lapply(pl, function(x) x[-(1:2)])), ':'); pid <- vapply(pp, `[`, '', 1L)",
    "v <- as.numeric(vapply(pp, `[`, '', 2L)) / 1024; pd <- as.numeric(vapply(pp, `[`, '', 3L)) / 1024",
    "at <- which.max(pss_total); t0 <- as.numeric(pl[[1]][1])",
    "cat(sprintf('with the forks: peak %.0f MiB at %.0f s (pid:KiB %s); each process\\'s peak PSS (MiB): the search %.0f, its forks %s\\n',",
    "            pss_total[at] / 1024, as.numeric(pl[[at]][1]) - t0, paste(pl[[at]][-(1:2)], collapse = ' '), max(v[pid == me]),",
    "            paste(vapply(setdiff(unique(pid), me), function(q) sprintf('%.0f', max(v[pid == q])), ''), collapse = ', ')))",
    "cat(sprintf('each process\\'s peak private dirty (MiB; the rest of its PSS is its share of pages shared with the others): the search %.0f, its forks %s\\n',",
    "            max(pd[pid == me]), paste(vapply(setdiff(unique(pid), me), function(q) sprintf('%.0f', max(pd[pid == q])), ''), collapse = ', ')))",
    "tr <- tu$tried",
    sprintf(paste("cat(sprintf('%s: %%.0f s elapsed, %%.0f s CPU (%%.0f s of it in forks); peak RSS %%.0f MB, with the forks",
                  "%%.0f MB\\n', t[['elapsed']], sum(t[c(1, 2, 4, 5)], na.rm = TRUE), sum(t[4:5], na.rm = TRUE), peak(),",
                  "max(pss_total) / 1024))"), case),
    "cat(sprintf('CPU per process: the search %.0f s, its forked children %.0f s; critical path (the busier side) %.0f s\\n',",
    "            sum(t[1:2]), sum(t[4:5], na.rm = TRUE), max(sum(t[1:2]), sum(t[4:5], na.rm = TRUE))))",
    "print(aggregate(seconds ~ method, tr, sum))",
    "print(tr[c('method', 'settings', 'seconds', 'meets', 'verified')], right = FALSE)",
    "cat(sprintf('candidates %.0f s, the rest (setup, verification) %.0f s\\n', sum(tr$seconds), t[['elapsed']] - sum(tr$seconds)))",
    "cat('chosen:', if (is.null(tu$release)) 'none' else tu$chosen$method, '\\n'); cat('stop:', tu$stop, sep = '\\n')",
    "if (!is.null(tu$left_out)) print(tu$left_out[c('settings', 'pilot_worst', 'pilot_loss', 'pilot_meets', 'seconds')])"
  ), f)
  cat(sprintf("\n%s, n = %g, nthreads = %d; load before: %s\n", case, n, nt, system("uptime", intern = TRUE)))
  status <- system2("timeout", c(sprintf("%.0fm", minutes), "Rscript", f))
  cat(sprintf("\n%s: exit status %d%s; where the time went (R's profiler, total seconds by function):\n", case,
              status, if (status == 124) " (stopped at the time limit)" else ""))
  if (file.exists(prof) && file.size(prof) > 0) {
    tot <- summaryRprof(prof)$by.total
    keep <- grepl(paste0("^\"(tune_|risk_battery|run_attack|anonymise|assignment_core|recipe_core|fellegi_sunter_core|linkage_core|",
                         "singling_out_core|inference_core|tail_|keyed_|mdav_|stir|assign_cells|tune_result|ctx\\$ev|",
                         "adaptive_setup|rmd_|link_ranks|battery_ranks|replay_|finish_release|equivalence_classes)"), rownames(tot))
    print(utils::head(tot[keep, c("total.time", "total.pct")], 40))
    cat("profile kept in", prof, "\n")
  }
}
