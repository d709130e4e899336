# Partitioned anonymise() against anonymise() in memory, at n = 1e6 and 1e7 (4 variables,
# strata of about `size` records, k = 5, format "natural"), each run in a fresh R process
# whose peak resident memory (Linux VmHWM) is its own.
#   Rscript bench/scale-core.R [parallel] [n ...]
# (`parallel`: the three runs of each n at once, for a loaded machine: their CPU times and
# peak memory stay their own, their elapsed times do not)
# Runs:
#   memory       anonymise() on the whole data frame;
#   partitioned  anonymise_partitioned() on a list of 10 random chunks (all in memory);
#   bounded      the passes by hand with a memory bound: the chunks are made on the fly
#                (blocks of rows, each stratum split over two chunks), the masked pieces
#                and the released pieces are written to disk one by one (saveRDS), so that
#                at most one stratum and one chunk are in memory.
# `check` (n = 1e6): the three releases are compared value for value in one process.
args <- commandArgs(trailingOnly = TRUE)
if (length(args) && args[1] == "child") {
  suppressMessages(library(detanon))
  peak <- function() {
    s <- readLines("/proc/self/status")
    as.numeric(gsub("[^0-9]", "", s[grepl("^VmHWM", s)])) / 1024
  }
  mode <- args[2]
  n <- as.numeric(args[3])
  size <- 2.5e5
  S <- max(1, round(n / size))
  vars <- c("x1", "x2", "x3", "x4")
  # stratum s: its records made from seed s (so a stratum can be made alone)
  block <- function(s, part = 0) {
    set.seed(s)
    m <- round(n / S)
    d <- data.frame(g = sprintf("s%03d", s), x1 = stats::rnorm(m), x2 = round(stats::rexp(m) * 1000, 2),
                    x3 = as.integer(round(stats::runif(m, 0, 100))), x4 = stats::runif(m, 20, 80))
    if (part == 0) d else d[if (part == 1) seq_len(m %/% 2) else (m %/% 2 + 1):m, ]
  }
  cpu <- function() sum(proc.time()[c("user.self", "sys.self")])
  t0 <- proc.time()[["elapsed"]]
  c0 <- cpu()
  if (mode %in% c("memory", "partitioned", "check")) {
    d <- do.call(rbind, lapply(seq_len(S), block))
    base <- peak()
    t0 <- proc.time()[["elapsed"]]
    c0 <- cpu()
    if (mode != "partitioned") m1 <- anonymise(d, vars = vars, strata = "g", k = 5, check_identifiers = FALSE)
    if (mode != "memory") {
      set.seed(99)
      chunks <- unname(split(d, sample(10, nrow(d), TRUE)))
      if (mode == "check") ref <- anonymise(do.call(rbind, chunks), vars = vars, strata = "g", k = 5, check_identifiers = FALSE)
      m2 <- anonymise_partitioned(chunks, vars = vars, strata = "g", k = 5, check_identifiers = FALSE, future = FALSE)
    }
    if (mode == "check") cat(sprintf("check n = %.0f: partitioned identical() to anonymise(): %s\n", n, identical(m2, ref)))
  } else {
    base <- peak()
    t0 <- proc.time()[["elapsed"]]
    c0 <- cpu()
    dir <- tempfile("pieces")
    dir.create(dir)
    chunk <- function(i) if (i <= 2 * S) block((i + 1) %/% 2, 2 - i %% 2)
    st <- detanon:::anonymise_stats(chunk, vars = vars, strata = "g", k = 5)
    for (s in seq_len(S)) saveRDS(detanon:::anonymise_stratum(block(s), st), file.path(dir, sprintf("p%05d.rds", s)), compress = FALSE)
    piece <- function(i) if (i <= S) readRDS(file.path(dir, sprintf("p%05d.rds", i)))
    s5 <- detanon:::anonymise_rescale(piece, st)
    for (s in seq_len(S)) saveRDS(detanon:::anonymise_release(piece(s), st, s5), file.path(dir, sprintf("r%05d.rds", s)), compress = FALSE)
    el <- proc.time()[["elapsed"]] - t0
    ec <- cpu() - c0
    pk <- peak()
    if (n <= 1e6) {
      d <- do.call(rbind, lapply(seq_len(S), block))
      ref <- anonymise(d, vars = vars, strata = "g", k = 5, check_identifiers = FALSE)
      out <- do.call(rbind, lapply(seq_len(S), function(s) readRDS(file.path(dir, sprintf("r%05d.rds", s)))))
      cat(sprintf("check n = %.0f: bounded pieces identical() to anonymise(): %s\n", n,
                  identical(lapply(out[vars], unname), lapply(as.data.frame(ref)[vars], unname))))
    }
    unlink(dir, recursive = TRUE)
  }
  if (mode != "bounded") {
    el <- proc.time()[["elapsed"]] - t0
    ec <- cpu() - c0
    pk <- peak()
  }
  cat(sprintf("%-12s n = %5.0e: %7.1f s elapsed, %7.1f s CPU, peak RSS %6.0f MB (%6.0f MB before the run)\n",
              mode, n, el, ec, pk, base))
  quit(save = "no")
}
parallel_runs <- length(args) && args[1] == "parallel" # the three runs at once (a loaded machine: compare CPU times)
if (parallel_runs) args <- args[-1]
ns <- if (length(args)) as.numeric(args) else c(1e6, 1e7)
self <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
cat(sprintf("4 variables, strata of 250,000 records, k = 5, format natural, 1 thread; %s\n", date()))
for (n in ns) {
  if (n <= 1e6) system2("Rscript", c(self, "child", "check", n))
  for (mode in c("memory", "partitioned", "bounded")) system2("Rscript", c(self, "child", mode, n), wait = !parallel_runs)
}
