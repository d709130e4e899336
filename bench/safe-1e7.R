# A safe release of a table in SQLite, searched on a sample of strata and verified on all
# (issue 39, item 4): the table of bench/scale-out.R (n records x 4 variables, strata s1 x s2
# of about `stratum_size` records, NULLs in s2), then
#   1. search: a deterministic sample of whole strata read from the table (strata sorted by
#      size, then by their values, taken at evenly spaced ranks until about `sample_size`
#      records), tune_release() on it with its default limits;
#   2. release: anonymise_db() on the whole table with the chosen method and settings;
#   3. verify: verify_db() on every stratum, against the limits of the search.
# Each step runs in a fresh R process under `nice -n 19 /usr/bin/time -v`; the step's elapsed
# time, CPU time and peak resident memory are printed with the load average.
#
#   Rscript bench/safe-1e7.R all <n> <dir> [stratum_size] [sample_size]   # make + the 3 steps
#   Rscript bench/safe-1e7.R steps <file> <settings.rds> release verify     # some steps, timed
#   Rscript bench/safe-1e7.R search|release|verify <file> <settings.rds> [sample_size]
# (copy this script and bench/scale-out.R elsewhere before a long run: Rscript reads the
# script as it runs, so editing it meanwhile breaks the run)
#
# DETANON_BENCH_METHODS (default "anonymise,mdav"): the families searched, among those
# anonymise_db() runs ("anonymise", "stratum", "adaptive", "mdav", "keyed"). The search asks
# for noise = FALSE, as the database path's MDAV releases exact group means; with "keyed" the
# custodian's key is drawn from /dev/urandom by `all` and handed to the steps in the
# environment (DETANON_BENCH_KEY, hex), never written to a file. The release step runs the
# chosen family with the settings the search chose (release_info() of its release: k, and
# k_max, m and rate for "stratum" and "adaptive"). One k per stratum ("stratum") is chosen
# for the sampled strata only: every other stratum takes the largest k chosen (capped by its
# size), and the verification covers all strata.
# DETANON_BENCH_LIMITS (default: tune_release()'s): the search's limits, as "worst=0.1,top_m=0.3".
args <- commandArgs(trailingOnly = TRUE)
step <- if (length(args)) args[1] else "help"
vars <- c("x1", "x2", "x3", "x4")
strata <- c("s1", "s2")
methods <- strsplit(Sys.getenv("DETANON_BENCH_METHODS", "anonymise,mdav"), ",")[[1]]
limits <- local({
  l <- strsplit(strsplit(Sys.getenv("DETANON_BENCH_LIMITS"), ",")[[1]], "=")
  stats::setNames(lapply(l, function(x) as.numeric(x[2])), vapply(l, `[`, "", 1))
})
key <- function() {
  hex <- Sys.getenv("DETANON_BENCH_KEY")
  if (!nzchar(hex)) return(NULL)
  as.raw(strtoi(substring(hex, seq(1, nchar(hex), 2), seq(2, nchar(hex), 2)), 16L))
}
connect <- function(file) DBI::dbConnect(RSQLite::SQLite(), file)
here <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))

# whole strata at evenly spaced ranks of size, about `sample_size` records in all
read_sample <- function(con, sample_size) {
  sizes <- DBI::dbGetQuery(con, "SELECT s1, s2, COUNT(*) AS n FROM records GROUP BY s1, s2")
  sizes <- sizes[order(sizes$n, sizes$s1, sizes$s2), ]
  n_pick <- min(nrow(sizes), max(1, round(sample_size / stats::median(sizes$n))))
  pick <- sizes[unique(round(seq(1, nrow(sizes), length.out = n_pick))), ]
  # (`IS` matches NULL to NULL in SQLite; PostgreSQL: IS NOT DISTINCT FROM)
  do.call(rbind, lapply(seq_len(nrow(pick)), function(i) {
    DBI::dbGetQuery(con, "SELECT * FROM records WHERE s1 IS ? AND s2 IS ?", params = list(pick$s1[i], pick$s2[i]))
  }))
}

run_search <- function(file, out, sample_size) {
  suppressMessages(library(detanon))
  con <- connect(file)
  on.exit(DBI::dbDisconnect(con))
  t_read <- system.time(d <- read_sample(con, sample_size))
  # the key column is not published: the search sees the columns of the release's intruder
  d$id <- NULL
  t <- system.time(tuned <- do.call(tune_release, c(list(d, vars = vars, strata = strata, methods = methods,
                                                         noise = FALSE, key = key(), nthreads = 1L), limits)))
  set <- release_info(tuned$release)$settings
  if (is.data.frame(set$k)) set$k <- all_strata_k(con, set$k)
  cat(sprintf("search: sample of %d records in %d strata (read %.1f s); tune_release() %.1f s elapsed, %d candidates\n",
              nrow(d), nrow(unique(d[strata])), t_read[["elapsed"]], t[["elapsed"]], nrow(tuned$tried)))
  print(tuned$tried[c("method", "settings", "worst", "top_m", "loss", "meets", "verified", "seconds")])
  if (is.null(tuned$release)) stop("the search returned no release: ", tuned$stop)
  print(tuned$chosen[c("method", "settings", "worst", "top_m", "verify_worst", "verify_worst_attack", "verify_top_m")])
  saveRDS(list(method = tuned$chosen$method, k = set$k, size = set$size, noise = set$noise, format = set$format,
               k_max = set$k_max, m = set$m, rate = set$rate, limits = tuned$limits), out)
}

# A table of k per stratum chosen on the sample, for every stratum of the table: the
# sampled strata keep theirs, the others take the largest k chosen (capped by their size).
all_strata_k <- function(con, k) {
  all <- DBI::dbGetQuery(con, "SELECT s1, s2, COUNT(*) AS n FROM records GROUP BY s1, s2")
  # (merge() matches a missing s2 to a missing s2)
  tab <- merge(all, k, by = strata, all.x = TRUE, sort = FALSE)
  tab$k <- as.integer(ifelse(is.na(tab$k), pmin(max(k$k), tab$n), tab$k))
  tab[c(strata, "k")]
}

run_release <- function(file, settings) {
  suppressMessages(library(detanon))
  s <- readRDS(settings)
  con <- connect(file)
  on.exit(DBI::dbDisconnect(con))
  options(detanon.db_trace = TRUE)
  extra <- switch(s$method, keyed = list(key = key(), size = s$size, noise = s$noise),
                  stratum = , adaptive = list(k_max = s$k_max, m = s$m, rate = s$rate))
  meta <- do.call(anonymise_db, c(list(con, "records", vars = vars, strata = strata, k = s$k, output = "released",
                                       method = s$method, format = s$format, overwrite = TRUE,
                                       check_identifiers = FALSE), extra))
  k <- if (is.data.frame(s$k)) paste0(min(s$k$k), " to ", max(s$k$k), " per stratum") else s$k
  cat(sprintf("release: method %s, k = %s: %d records written\n", s$method, k, meta$n_written))
  print(meta)
}

run_verify <- function(file, settings) {
  suppressMessages(library(detanon))
  s <- readRDS(settings)
  con <- connect(file)
  on.exit(DBI::dbDisconnect(con))
  v <- verify_db(con, "records", "released", by = "id", vars = vars, strata = strata,
                 worst = s$limits$worst, top_m = s$limits$top_m, m = s$limits$m)
  print(v)
}

# one step in a fresh process: its output, then elapsed, CPU and peak memory of /usr/bin/time -v
timed <- function(...) {
  log <- tempfile()
  load <- readLines("/proc/loadavg")
  out <- system2("nice", c("-n", "19", "/usr/bin/time", "-v", file.path(R.home("bin"), "Rscript"), shQuote(here),
                           ...), stdout = TRUE, stderr = log)
  tv <- readLines(log)
  # the step's own messages, then the statistics of /usr/bin/time
  at <- grep("Command being timed", tv, fixed = TRUE)[1]
  cat(c(out, tv[seq_len(at - 1L)]), sep = "\n")
  grab <- function(what) as.numeric(sub(".*: ", "", grep(what, tv, value = TRUE, fixed = TRUE)[1]))
  el <- sub(".*: ", "", grep("Elapsed (wall clock)", tv, value = TRUE, fixed = TRUE))
  parts <- as.numeric(strsplit(el, ":")[[1]])
  secs <- sum(parts * 60^(rev(seq_along(parts)) - 1))
  cat(sprintf("  -> %s: %.1f s elapsed, %.1f s CPU (user %.1f + system %.1f), peak RSS %.0f MB; load before: %s\n",
              list(...)[[1]], secs, grab("User time") + grab("System time"), grab("User time"), grab("System time"),
              grab("Maximum resident set size") / 1024, load))
  if (any(grepl("Exit status: [1-9]", tv))) stop("the step ", list(...)[[1]], " failed")
}

switch(step,
  all = {
    n <- as.numeric(args[2])
    dir <- args[3]
    stratum_size <- if (length(args) >= 4) args[4] else "1e5"
    sample_size <- if (length(args) >= 5) args[5] else "2e5"
    dir.create(dir, showWarnings = FALSE, recursive = TRUE)
    file <- file.path(dir, sprintf("safe-%.0f.sqlite", n))
    settings <- file.path(dir, sprintf("safe-%.0f-settings.rds", n))
    if ("keyed" %in% methods) {
      urandom <- file("/dev/urandom", "rb", raw = TRUE)
      Sys.setenv(DETANON_BENCH_KEY = paste(readBin(urandom, "raw", 32L), collapse = ""))
      close(urandom)
    }
    system2(file.path(R.home("bin"), "Rscript"), c(shQuote(file.path(dirname(here), "scale-out.R")), "make",
                                                  format(n, scientific = FALSE), file, stratum_size))
    timed("search", file, settings, sample_size)
    timed("release", file, settings)
    timed("verify", file, settings)
  },
  steps = for (s in args[-(1:3)]) timed(s, args[2], args[3]),
  search = run_search(args[2], args[3], if (length(args) >= 4) as.numeric(args[4]) else 2e5),
  release = run_release(args[2], args[3]),
  verify = run_verify(args[2], args[3]),
  cat("usage: see the comments at the top of bench/safe-1e7.R\n"))
