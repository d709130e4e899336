# Scale-out: anonymise_db() on a table in SQLite (or PostgreSQL) of n records x 4 variables,
# stratum by stratum, against anonymise() on the same table read into memory. Every measured
# step runs in a fresh R process, whose peak resident memory (Linux VmHWM) is its own.
#
#   Rscript bench/scale-out.R make   <n> <file> [stratum_size]   # write the table (SQLite file)
#   Rscript bench/scale-out.R db     <file> [read] [chunk] [group_size] [nthreads] [check]
#   Rscript bench/scale-out.R memory <file> [nthreads]            # anonymise() in memory
#   Rscript bench/scale-out.R bound  <dir> [stratum_size] [n...]  # peak memory against n
#
# The table `records`: id (integer key), s1 (integer), s2 (text, with NULLs), x1 (normal), x2
# (exponential, 2 decimals), x3 (whole numbers 0-100, an INTEGER column), x4 (uniform); the
# strata are s1 x s2, about `stratum_size` records each (default 1e6). k = 5.
# `check = TRUE` (db) also reads both tables back and compares the masked values with
# anonymise() in the same process (needs memory for the whole table: small n only).
# DETANON_BENCH_METHOD=mdav, keyed or adaptive (db, memory): the method of anonymise_db() (a
# per-stratum method of masking_methods()), against its verb in memory; keyed with size = 10
# and the key in DETANON_BENCH_KEY (a fixed bench key by default); adaptive with the verb's
# settings (m = 1, rate = 0, k_max = 33). Peak memory of a whole run, with the time:
# /usr/bin/time -v Rscript bench/scale-out.R db ...
args <- commandArgs(trailingOnly = TRUE)
step <- if (length(args)) args[1] else "help"
lib <- function() suppressMessages(library(detanon))
peak_mb <- function() {
  s <- readLines("/proc/self/status")
  as.numeric(gsub("[^0-9]", "", s[grepl("^VmHWM", s)])) / 1024
}
connect <- function(file) DBI::dbConnect(RSQLite::SQLite(), file)
method <- Sys.getenv("DETANON_BENCH_METHOD", "anonymise")
verb <- function() match.fun(masking_methods()[[method]]$verb)
method_args <- if (method == "keyed") list(key = Sys.getenv("DETANON_BENCH_KEY", "bench-secret-of-the-custodian-01"), size = 10)

make_table <- function(n, file, stratum_size = 1e6) {
  n_s1 <- max(1, round(n / stratum_size / 3))
  unlink(file)
  con <- connect(file)
  on.exit(DBI::dbDisconnect(con))
  DBI::dbExecute(con, "PRAGMA journal_mode = OFF")
  DBI::dbExecute(con, "PRAGMA synchronous = OFF")
  DBI::dbExecute(con, paste("CREATE TABLE records (id INTEGER, s1 INTEGER, s2 TEXT,",
                            "x1 REAL, x2 REAL, x3 INTEGER, x4 REAL)"))
  block <- 1e6
  t <- system.time(for (b in seq_len(ceiling(n / block))) {
    set.seed(b)
    m <- min(block, n - (b - 1) * block)
    d <- data.frame(id = as.integer((b - 1) * block + seq_len(m)),
                    s1 = sample.int(n_s1, m, TRUE),
                    s2 = sample(c("f", "m", NA), m, TRUE),
                    x1 = stats::rnorm(m), x2 = round(stats::rexp(m) * 1000, 2),
                    x3 = sample(0:100, m, TRUE), x4 = stats::runif(m),
                    stringsAsFactors = FALSE)
    DBI::dbAppendTable(con, "records", d)
  })
  cat(sprintf("made %s: %.0f records, %d strata of about %.0f, %.0f s, %.1f GB\n", file, n, 3L * n_s1,
              n / (3 * n_s1), t[["elapsed"]], file.size(file) / 1e9))
}

run_db <- function(file, read = "order", chunk = 1e5, group_size = 1e6, nthreads = 1L, check = FALSE) {
  lib()
  con <- connect(file)
  on.exit(DBI::dbDisconnect(con))
  # (two more scans of the table, left out with DETANON_BENCH_FAST=true: the sizes are in the
  # line printed by `make`)
  fast <- identical(Sys.getenv("DETANON_BENCH_FAST"), "true")
  n <- if (fast) NA else DBI::dbGetQuery(con, "SELECT COUNT(*) AS n FROM records")$n
  largest <- if (fast) NA else max(DBI::dbGetQuery(con, "SELECT COUNT(*) AS n FROM records GROUP BY s1, s2")$n)
  base <- peak_mb()
  vars <- c("x1", "x2", "x3", "x4")
  options(detanon.db_trace = TRUE)
  t <- system.time(meta <- do.call(anonymise_db, c(list(con, "records", vars = vars, strata = c("s1", "s2"), k = 5,
                                        output = "masked", method = method, read = read, chunk = chunk, group_size = group_size,
                                        overwrite = TRUE, check_identifiers = FALSE, nthreads = nthreads), method_args)))
  if (fast) n <- meta$counts$n
  cpu <- t[["user.self"]] + t[["sys.self"]]
  cat(sprintf(paste("anonymise_db  method = %s n = %.0f (largest stratum %.0f) read = %s chunk = %.0f group_size = %.0f",
                    "threads = %d: %.1f s elapsed (%.1f s per 1e7 records), %.1f s CPU (%.1f s per 1e7);",
                    "peak RSS %.0f MB (%.0f MB before)\n"),
              method, n, largest, read, chunk, group_size, nthreads, t[["elapsed"]], t[["elapsed"]] / n * 1e7, cpu,
              cpu / n * 1e7, peak_mb(), base))
  if (method == "adaptive") cat(sprintf("  rounds %d, mean k %.2f\n", meta$counts$rounds, meta$counts$mean_k))
  if (check) {
    d <- DBI::dbGetQuery(con, "SELECT * FROM records ORDER BY id")
    m <- do.call(verb(), c(list(d, vars = vars, strata = c("s1", "s2"), k = 5, check_identifiers = FALSE,
                                nthreads = nthreads), method_args))
    attr(m, "detanon") <- NULL
    got <- DBI::dbGetQuery(con, "SELECT * FROM masked ORDER BY id")
    cat(paste0("identical to ", masking_methods()[[method]]$verb, "() in memory: ", identical(got, m)), "\n")
  }
}

run_memory <- function(file, nthreads = 1L) {
  lib()
  con <- connect(file)
  on.exit(DBI::dbDisconnect(con))
  t_read <- system.time(d <- DBI::dbGetQuery(con, "SELECT * FROM records"))
  base <- peak_mb()
  t <- system.time(m <- do.call(verb(), c(list(d, vars = c("x1", "x2", "x3", "x4"), strata = c("s1", "s2"), k = 5,
                                                check_identifiers = FALSE, nthreads = nthreads), method_args)))
  t_write <- system.time(DBI::dbWriteTable(con, "masked_memory", as.data.frame(m), overwrite = TRUE))
  DBI::dbExecute(con, "DROP TABLE masked_memory")
  total <- t_read[["elapsed"]] + t[["elapsed"]] + t_write[["elapsed"]]
  cpu <- sum(vapply(list(t_read, t, t_write), function(x) x[["user.self"]] + x[["sys.self"]], numeric(1)))
  cat(sprintf(paste("in memory     method = %s n = %.0f threads = %d: read %.1f s + verb %.1f s + write %.1f s =",
                    "%.1f s (%.1f s per 1e7 records), %.1f s CPU (%.1f s per 1e7); peak RSS %.0f MB",
                    "(%.0f MB after reading)\n"),
              method, nrow(d), nthreads, t_read[["elapsed"]], t[["elapsed"]], t_write[["elapsed"]], total,
              total / nrow(d) * 1e7, cpu, cpu / nrow(d) * 1e7, peak_mb(), base))
  if (method == "adaptive") {
    cat(sprintf("  rounds %d, mean k %.2f\n", release_info(m)$counts$rounds, release_info(m)$counts$mean_k))
  }
}

fresh <- function(...) {
  rscript <- file.path(R.home("bin"), "Rscript")
  system2(rscript, c(shQuote(normalizePath(sys_file)), ...))
}
sys_file <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))

switch(step,
  make = make_table(as.numeric(args[2]), args[3], if (length(args) >= 4) as.numeric(args[4]) else 1e6),
  db = run_db(args[2], if (length(args) >= 3) args[3] else "order", if (length(args) >= 4) as.numeric(args[4]) else 1e5,
              if (length(args) >= 5) as.numeric(args[5]) else 1e6, if (length(args) >= 6) as.integer(args[6]) else 1L,
              if (length(args) >= 7) as.logical(args[7]) else FALSE),
  memory = run_memory(args[2], if (length(args) >= 3) as.integer(args[3]) else 1L),
  bound = {
    dir <- args[2]
    size <- if (length(args) >= 3) as.numeric(args[3]) else 1e5
    ns <- if (length(args) >= 4) as.numeric(args[-(1:3)]) else c(1e6, 3e6, 1e7)
    dir.create(dir, showWarnings = FALSE)
    for (n in ns) {
      f <- file.path(dir, sprintf("bound-%.0f.sqlite", n))
      fresh("make", n, f, size)
      fresh("db", f, "order", 1e5, size)
      fresh("memory", f)
      unlink(f)
    }
  },
  cat("usage: see the comments at the top of bench/scale-out.R\n"))
