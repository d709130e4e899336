# link_ranks() (the ranks behind linkage, top-m and reid in risk_linkage(), the battery and tune_release())
# on the search's noisy MDAV candidates, on plain anonymise(k = 3) and on stir(k = 3), sim data of bench/tune_steps.R
# (issue 39): one thread, CPU seconds, with a digest of the ranks (a weighted sum of their bits) and the share of counts "at most as near"
# at the 2^14 cap. CACHE: a directory to keep the releases in between runs (main and branch are then timed
# on the same releases); OUT: save the ranks there, to compare runs with identical().
#   N=1e6 KS=3,5,10 CACHE=/tmp/x OUT=/tmp/y Rscript bench/link_ranks.R
suppressMessages(library(detanon))
n <- as.numeric(Sys.getenv("N", "1e6"))
ks <- as.integer(strsplit(Sys.getenv("KS", "3,5,10"), ",")[[1]])
cache <- Sys.getenv("CACHE", tempdir())
out_dir <- Sys.getenv("OUT", "")
reps <- as.integer(Sys.getenv("REPS", "1"))
ns <- asNamespace("detanon")
set.seed(1)
d <- data.frame(g = factor(rep(c('a', 'b', 'c', 'd'), each = n / 4)), x1 = round(rnorm(n, 50, 10), 1),
                x2 = round(rexp(n, 0.1), 1), x3 = round(runif(n, 20, 80)))
vars <- c('x1', 'x2', 'x3'); strata <- 'g'
release <- function(name) {
  f <- file.path(cache, sprintf("link_ranks-%g-%s.rds", n, gsub("[^a-z0-9]", "", name)))
  if (file.exists(f)) return(readRDS(f))
  k <- as.integer(sub(".*k = ", "", name))
  r <- if (startsWith(name, "MDAV")) {
    suppressMessages(anonymise_mdav(d, vars = vars, strata = strata, k = k, noise = TRUE,
                                    key = "the custodian bench key 01", check_identifiers = FALSE))
  } else if (startsWith(name, "stir")) {
    suppressMessages(stir(d, vars = vars, strata = strata, k = k, seed = 1))[names(d)]
  } else anonymise(d, vars = vars, strata = strata, k = k, check_identifiers = FALSE)
  saveRDS(r, f)
  r
}
for (name in c(sprintf("MDAV k = %d", ks), "anonymise k = 3", "stir k = 3")) {
  rel <- release(name)
  s <- ns$linkage_setup(d, rel, vars, strata)
  idx <- ns$rank_index(s$zo, s)
  cpu <- numeric()
  for (i in seq_len(reps)) {
    t <- system.time(r <- ns$link_ranks(s, s$zo, s$zm, rep(TRUE, n), 3, 1L, index = idx))
    cpu[i] <- sum(t[c("user.self", "sys.self")])
  }
  if (nzchar(out_dir)) saveRDS(r, file.path(out_dir, sprintf("ranks-%g-%s.rds", n, gsub("[^a-z0-9]", "", name))))
  cat(sprintf("%-16s %7.2f s (min of %d)  mean le %8.0f  at cap %4.1f%%  digest %s\n", name, min(cpu), reps,
              mean(r[, 2]), 100 * mean(r[, 2] >= 2^14), format(sum(r * seq_along(r)), digits = 17)))
}
