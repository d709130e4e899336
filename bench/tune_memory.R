# Where the memory of tune_release() goes (issue 39, item 3): the default search (no key) on
#   sim:     n records x 3 continuous variables, 4 strata (as bench/tune_scale.R);
#   titanic: Titanic resampled to n records (tie-heavy).
# Every 0.25 s a shell loop samples VmRSS and the proportional set size (smaps_rollup Pss) of
# the search's process and of each forked child, with a timestamp; the search's phases (each
# family, each candidate's measurement, the verification's attacks) are marked by traces in
# the same log, with R's heap (gc()) at each mark when MARK_GC=1. At the start of the
# verification the sizes of the objects alive are printed (the candidates' releases, the
# view, the evaluator's parts). Prints the peak RSS of the search's process and the peak of
# the sum of the PSS of the process and its children, and where (in which phase) it was.
#   [MARK_GC=1] Rscript bench/tune_memory.R [case] [n] [nthreads] [log prefix]
# Results: bench/results/tune-scale.txt.
args <- commandArgs(trailingOnly = TRUE)
case <- if (length(args) >= 1) args[1] else "sim"
n <- if (length(args) >= 2) as.numeric(args[2]) else 1e5
nt <- if (length(args) >= 3) as.integer(args[3]) else 2L
prefix <- if (length(args) >= 4) args[4] else tempfile("tune_memory")
mark_gc <- Sys.getenv("MARK_GC") == "1"
suppressMessages(library(detanon))
ns <- asNamespace("detanon")
me_file <- sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE))
source(file.path(dirname(me_file), "tune_data.R"))
b <- tune_bench_data(case, n)
d <- b$d
vars <- b$vars
strata <- b$strata
mem_log <- paste0(prefix, ".mem")  # time pid VmRSS(kB) Pss(kB)
mark_log <- paste0(prefix, ".marks") # time pid what [R heap MB]
file.create(mark_log)
me <- Sys.getpid()
system2("sh", c("-c", shQuote(sprintf(paste(
  "while kill -0 %d 2>/dev/null; do t=$(date +%%s.%%N);",
  "for p in %d $(pgrep -P %d); do",
  "r=$(awk '/^VmRSS:/ {print $2}' /proc/$p/status 2>/dev/null);",
  "s=$(awk '/^Pss:/ {print $2}' /proc/$p/smaps_rollup 2>/dev/null);",
  "[ -n \"$r\" ] && echo \"$t $p $r ${s:-0}\";",
  "done; sleep 0.25; done >> %s"), me, me, me, mem_log))), wait = FALSE)
mark <- function(what) {
  heap <- if (mark_gc) sprintf(" %.0f", sum(gc()[, 2L])) else ""
  cat(sprintf("%.3f %d %s%s\n", as.numeric(Sys.time()), Sys.getpid(), gsub(" ", "_", what), heap),
      file = mark_log, append = TRUE)
}
traced <- c("tune_fixed_k", "tune_per_stratum", "tune_adaptive", "tune_mdav", "tune_keyed", "tune_stir",
            "tune_verify")
for (f in traced) {
  trace(f, tracer = substitute(mark(paste0("enter:", F)), list(F = f)),
        exit = substitute(mark(paste0("exit:", F)), list(F = f)), where = ns, print = FALSE)
}
trace("run_attack", tracer = quote(mark(paste0("attack:", spec$label))),
      exit = quote(mark("attack_done")), where = ns, print = FALSE)
# the objects alive when the verification starts
size_mb <- function(x) as.numeric(utils::object.size(x)) / 2^20
trace("tune_result", where = ns, print = FALSE, exit = quote(mark("exit:tune_result")), tracer = quote({
  mark("enter:tune_result")
  rel <- Filter(Negate(is.null), lapply(cands, `[[`, "release"))
  addr <- unlist(lapply(rel, function(r) vapply(r, data.table::address, "")))
  cols <- unlist(lapply(rel, function(r) as.list(r)), recursive = FALSE)
  u <- !duplicated(addr)
  cat(sprintf(paste("alive at the verification: %d candidates, %d releases: columns %.0f MB (distinct: %.0f MB),",
                    "metadata %.1f MB\n"),
              length(cands), length(rel), sum(vapply(cols, size_mb, 0)), sum(vapply(cols[u], size_mb, 0)),
              sum(vapply(rel, function(r) size_mb(attributes(r)$detanon), 0))))
  ev_env <- environment(ctx$ev)
  cat("evaluator's parts (MB):", paste(sprintf("%s %.1f", ls(ev_env),
                                               vapply(ls(ev_env), function(v) size_mb(get(v, ev_env)), 0)),
                                       collapse = ", "), "\n")
  cat("ctx (MB):", paste(sprintf("%s %.1f", names(ctx), vapply(ctx, size_mb, 0))[vapply(ctx, size_mb, 0) > 1],
                         collapse = ", "), "\n")
  cat("ctx$p (MB):", paste(sprintf("%s %.1f", names(ctx$p), vapply(ctx$p, size_mb, 0))[vapply(ctx$p, size_mb, 0) > 1],
                           collapse = ", "), "\n")
  v <- attr(ctx$ev, "view")
  cat("view (MB):", paste(sprintf("%s %.1f", names(v), vapply(v, size_mb, 0))[vapply(v, size_mb, 0) > 1],
                          collapse = ", "), "\n")
}))
cat(sprintf("%s, n = %g, nthreads = %d; load before: %s\n", case, n, nt, system("uptime", intern = TRUE)))
mark("start")
t <- system.time(tu <- tune_release(d, vars = vars, strata = strata, nthreads = nt))
mark("end")
Sys.sleep(0.6)
m <- utils::read.table(mem_log, col.names = c("time", "pid", "rss", "pss"))
k <- utils::read.table(mark_log, fill = TRUE, col.names = c("time", "pid", "what", "heap"))
main <- m[m$pid == me, ]
tot <- stats::aggregate(pss ~ round(time * 4), m, sum) # one sample of every process per loop
names(tot) <- c("tick", "pss")
at <- tot$tick[which.max(tot$pss)] / 4
phase <- function(time) { # the last mark of the search's process before `time`
  km <- k[k$pid == me & k$time <= time, ]
  if (nrow(km)) km$what[nrow(km)] else "start"
}
cat(sprintf(paste("%s: %.0f s elapsed, %.0f s CPU (%.0f s in forks); peak RSS of the search's process %.0f MiB",
                  "(in %s); peak of the PSS summed with the forks %.0f MiB (in %s; the fork's own %.0f MiB)\n"),
            case, t[["elapsed"]], sum(t[c(1, 2, 4, 5)], na.rm = TRUE), sum(t[4:5], na.rm = TRUE),
            max(main$rss) / 1024, phase(main$time[which.max(main$rss)]), max(tot$pss) / 1024, phase(at),
            max(c(0, m$pss[m$pid != me & round(m$time * 4) / 4 == at])) / 1024))
cat("chosen:", if (is.null(tu$release)) "none" else paste(tu$chosen$method, tu$chosen$settings), "\n")
cat(sprintf("%d candidates, %d verified\n", nrow(tu$tried), sum(!is.na(tu$tried$verified))))
saveRDS(list(tried = tu$tried, stop = tu$stop, battery = tu$battery, release = tu$release), paste0(prefix, ".rds"))
cat("logs:", mem_log, mark_log, "\n")
