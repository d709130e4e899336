# Benchmark: anonymise() (default settings: the natural form and the release metadata
# included) against the obvious alternative, an R implementation of the same five steps
# with a kd-tree per stratum (nabor::knn() and RANN::nn2()), on 4 continuous variables,
# 4 strata, k = 5.
# Run from the package root after installing detanon:
#   Rscript bench/anonymise.R            # n = 1e5 and 1e6
#   Rscript bench/anonymise.R 1e7        # one large size, peak memory of anonymise() only
#   Rscript bench/anonymise.R large-k    # one stratum with large k: n = k = 4000, and k near n/2
# Peak memory is the process's maximum resident set size (Linux /proc/self/status VmHWM),
# measured in a fresh R process per engine so one run cannot hide another's peak.
library(detanon)
args <- commandArgs(trailingOnly = TRUE)

make_data <- function(n, seed = 1) {
  set.seed(seed)
  data.frame(
    g = factor(sample(c("a", "b", "c", "d"), n, replace = TRUE)),
    x1 = rnorm(n), x2 = rexp(n), x3 = rgamma(n, 2), x4 = round(runif(n, 20, 80))
  )
}

# The alternatives: the paper's five steps in R with a kd-tree search in each stratum,
# RANN::nn2() (ANN) or nabor::knn() (libnabo), one thread each.
r_anonymise <- function(data, vars, strata, k, knn) {
  x <- as.matrix(data[vars])
  z <- scale(x)
  cen <- z
  for (rows in split(seq_len(nrow(z)), data[[strata]], drop = TRUE)) {
    nn <- knn(z[rows, , drop = FALSE], k)
    for (j in seq_along(vars)) cen[rows, j] <- rowMeans(matrix(z[rows, j][nn], ncol = k))
  }
  out <- sweep(sweep(cen, 2, apply(cen, 2, sd), "/"), 2, apply(x, 2, sd), "*")
  data[vars] <- as.data.frame(sweep(out, 2, colMeans(x), "+"))
  data
}
rann_anonymise <- function(data, vars, strata, k) {
  r_anonymise(data, vars, strata, k, function(z, k) RANN::nn2(z, k = k)$nn.idx)
}
nabor_anonymise <- function(data, vars, strata, k) {
  r_anonymise(data, vars, strata, k, function(z, k) nabor::knn(z, k = k)$nn.idx)
}

# Best of `reps` elapsed times of each function, run in turns (a, b, c, a, b, c, ...) so that
# a slow spell of a shared machine does not fall on one contender only. Each run starts
# after a full garbage collection (untimed): otherwise a run collects the garbage of the run
# before it, and how much depends on the order of the turns (measured at 1e6: the two-thread
# run, after the one-thread run, made 5 to 6 collections, the one-thread run, after the
# R + nabor run, 3; 0.05 s more of them).
# Attribute "cpu": the best user + system times (the fairer measure when other jobs share
# the machine; the same as elapsed on one thread of an idle machine). Attribute "sched": of
# the fastest run of each, the time the calling thread ran, the time all the process's
# threads ran, and the time they waited for a CPU (Linux schedstat): a wait of more than a
# few milliseconds means other jobs held the cores, and a two-thread time then does not
# measure the threads.
time_turns <- function(fns, reps) {
  t <- cpu <- matrix(NA_real_, reps, length(fns), dimnames = list(NULL, names(fns)))
  sched <- array(NA_real_, c(reps, length(fns), 3L), list(NULL, names(fns), c("main", "all", "wait")))
  for (i in seq_len(reps)) for (f in names(fns)) {
    invisible(gc())
    s0 <- thread_times()
    st <- system.time(fns[[f]](), gcFirst = FALSE)
    sched[i, f, ] <- thread_times(s0)
    t[i, f] <- st[["elapsed"]]
    cpu[i, f] <- st[["user.self"]] + st[["sys.self"]]
  }
  best <- apply(t, 2L, which.min)
  structure(apply(t, 2L, min), cpu = apply(cpu, 2L, min), turns = t,
            sched = vapply(names(fns), function(f) sched[best[[f]], f, ], numeric(3)))
}

# The seconds each thread of this process has run and waited for a CPU
# (/proc/self/task/*/schedstat); with `since` (an earlier result), the calling thread's run
# time, all threads' run time and their wait since then (NA without Linux's /proc).
thread_times <- function(since) {
  # (a running thread's count is brought up to date when it leaves the CPU: sleep first)
  Sys.sleep(0.001)
  tasks <- list.files("/proc/self/task")
  if (!length(tasks)) return(if (missing(since)) NULL else rep(NA_real_, 3L))
  now <- vapply(tasks, function(tk) {
    v <- suppressWarnings(as.numeric(strsplit(readLines(file.path("/proc/self/task", tk, "schedstat")), " ")[[1L]][1:2]))
    if (length(v) == 2L) v / 1e9 else c(NA_real_, NA_real_)
  }, numeric(2))
  if (missing(since)) return(now)
  was <- since[, match(colnames(now), colnames(since)), drop = FALSE]
  was[is.na(was)] <- 0
  main <- as.character(Sys.getpid())
  c(main = now[1L, main] - was[1L, main], all = sum(now[1L, ] - was[1L, ]), wait = sum(now[2L, ] - was[2L, ]))
}

peak_rss_mb <- function() {
  s <- readLines("/proc/self/status")
  as.numeric(gsub("[^0-9]", "", s[grepl("^VmHWM", s)])) / 1024
}

vars <- c("x1", "x2", "x3", "x4")
if (length(args) == 0L) {
  cat(sprintf("machine: %d cores, %s; R %s\n", parallel::detectCores(),
              sub("model name\t: ", "", grep("model name", readLines("/proc/cpuinfo"), value = TRUE)[1]),
              getRversion()))
  rows <- sched <- list()
  for (n in c(1e5, 1e6)) {
    d <- make_data(n)
    reps <- if (n <= 1e5) 5L else 3L
    t <- time_turns(list(
      rann = function() rann_anonymise(d, vars, "g", 5),
      nabor = function() nabor_anonymise(d, vars, "g", 5),
      t1 = function() anonymise(d, k = 5, vars = vars, strata = "g", nthreads = 1),
      t2 = function() anonymise(d, k = 5, vars = vars, strata = "g", nthreads = 2)
    ), reps)
    rows[[length(rows) + 1L]] <- data.frame(n = n, r_rann_s = t[["rann"]], r_nabor_s = t[["nabor"]],
                                            detanon_1t_s = t[["t1"]], detanon_2t_s = t[["t2"]],
                                            vs_nabor_1t = t[["nabor"]] / t[["t1"]],
                                            vs_rann_1t = t[["rann"]] / t[["t1"]],
                                            threads_gain = t[["t1"]] / t[["t2"]],
                                            cpu_vs_nabor_1t = attr(t, "cpu")[["nabor"]] / attr(t, "cpu")[["t1"]],
                                            cpu_vs_rann_1t = attr(t, "cpu")[["rann"]] / attr(t, "cpu")[["t1"]])
    sched[[length(sched) + 1L]] <- data.frame(n = n, cpu_1t_s = attr(t, "sched")["all", "t1"],
                                              cpu_2t_s = attr(t, "sched")["all", "t2"],
                                              calling_thread_2t_s = attr(t, "sched")["main", "t2"],
                                              wait_1t_s = attr(t, "sched")["wait", "t1"],
                                              wait_2t_s = attr(t, "sched")["wait", "t2"],
                                              gain_each_turn = paste(sprintf("%.2f", attr(t, "turns")[, "t1"] /
                                                                               attr(t, "turns")[, "t2"]), collapse = " "))
  }
  cat("Times: best of the runs (elapsed s) on the same data, in turns; ratios > 1: anonymise() faster.\n")
  cat("CPU times are printed too: on a shared machine they are the fairer measure.\n")
  print(do.call(rbind, rows), digits = 3, row.names = FALSE)
  cat("anonymise() in its fastest run: CPU seconds, the calling thread's run time and the threads' wait for a CPU\n",
      "(a wait above a few ms: other jobs held the cores, and threads_gain is then not a measure of the threads);\n",
      "gain_each_turn: one thread's time over two threads' in each turn (the spread).\n")
  print(do.call(rbind, sched), digits = 3, row.names = FALSE)
  cat("load average at the end (1, 5, 15 min):", readLines("/proc/loadavg"), "\n")
} else if (args[1] == "large-k") {
  # one stratum of 4 variables; k = n makes every record's k points the whole stratum
  d <- make_data(4000)
  for (k in c(4000, 3999, 2000, 100)) {
    t <- time_turns(list(
      t1 = function() suppressWarnings(anonymise(d, k = k, vars = vars, strata = character(), nthreads = 1)),
      t2 = function() suppressWarnings(anonymise(d, k = k, vars = vars, strata = character(), nthreads = 2))
    ), 3L)
    cat(sprintf("n = 4000, k = %4d, one stratum: %.2f s on one thread, %.2f s on two\n", k, t[["t1"]], t[["t2"]]))
  }
} else {
  n <- as.numeric(args[1])
  d <- make_data(n)
  gc(reset = TRUE)
  base <- peak_rss_mb()
  t <- system.time(m <- anonymise(d, k = 5, vars = vars, strata = "g",
                                  nthreads = as.integer(if (length(args) > 1) args[2] else 2)))
  cat(sprintf("n = %.0f: anonymise() %.1f s elapsed; peak RSS %.0f MB (data alone: %.0f MB, %.0f MB before the call)\n",
              n, t[["elapsed"]], peak_rss_mb(), as.numeric(object.size(d)) / 2^20, base))
}
