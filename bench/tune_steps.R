# The steps of tune_release() that every candidate shares (issue 39): the CPU time of the search's set-up
# (tune_setup(): scales, trees, the robust covariance, the categorical family) and of the measurement of three
# candidates, one thread, with the figures measured; the same three measured two at a time in forks (where the
# package does that: tune_measure()), with the peak memory of the process and its children; then the making
# of the k-per-stratum rungs k = 40, 80, 160 (as the search makes them) and of the search's first adaptive
# stages, rates 0.5, 0.3, 0.27, each from the one before (bench/results/tune-scale.txt).
#   CASE=sim|titanic N=1e6 Rscript bench/tune_steps.R
suppressMessages(library(detanon))
n <- as.numeric(Sys.getenv("N", "1e6"))
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE))), "tune_data.R"))
b <- tune_bench_data(if (Sys.getenv("CASE") == "titanic") "titanic" else "sim", n)
d <- b$d
vars <- b$vars
strata <- b$strata
ns <- asNamespace("detanon")
cpu <- function(expr) { # (CPU of this process and of its children: the forks)
  t <- system.time(expr)
  c(cpu = sum(t[c("user.self", "sys.self", "user.child", "sys.child")], na.rm = TRUE), wall = t[["elapsed"]])
}
out <- list()
out$setup <- cpu(ctx <- ns$tune_setup(d, vars, strata, 2, NULL, 3, "delta", NULL, gaussian(), NULL, "natural", NULL, 4, 1L,
   limits = list(worst = 0.1, top_m = 0.3, linkage = 1, linkage_stratum = 1, top_m_stratum = 1, risk1 = 1, risk2 = 1, tail = 0.2),
   attacks = c("linkage_released", "linkage_original"), verify = NULL, intruder = NULL, sensitive = NULL, seed = 1, secret = NULL,
   categorical = c("generalise", "suppress")))
rels <- list(`anonymise k = 3` = anonymise(d, vars = vars, strata = strata, k = 3, check_identifiers = FALSE),
             `MDAV k = 10` = suppressMessages(anonymise_mdav(d, vars = vars, strata = strata, k = 10, noise = TRUE,
                                                             key = "the custodian bench key 01",
                                                             check_identifiers = FALSE)),
             `adaptive rate 0.3` = anonymise_adaptive(d, vars = vars, strata = strata, k = 2, m = 3, rate = 0.3,
                                                      check_identifiers = FALSE))
res <- list()
figures <- function(e) unlist(e[c("worst", "top_m", "linkage", "top_m_released", "risk1", "risk2", "reid", "loss")])
evs <- list()
for (nm in names(rels)) {
  out[[nm]] <- cpu(evs[[nm]] <- ctx$ev(rels[[nm]]))
  res[[nm]] <- figures(evs[[nm]])
}
# the peak memory of this process and its children (the sum of their proportional set sizes, sampled every
# 0.2 s by a shell loop; Linux)
pss_sampler <- function(file) {
  sh <- sprintf(paste("while kill -0 %d 2>/dev/null; do t=0; for p in %d $(pgrep -P %d); do",
                      "v=$(awk '/^Pss:/ {print $2}' /proc/$p/smaps_rollup 2>/dev/null); t=$((t + ${v:-0})); done;",
                      "echo $t >> %s; sleep 0.2; done"), Sys.getpid(), Sys.getpid(), Sys.getpid(), file)
  system2("sh", c("-c", shQuote(sh)), wait = FALSE)
}
if (exists("tune_measure", ns)) {
  pss <- tempfile(); pss_sampler(pss)
  out$`the three, two at a time` <- cpu(two <- ns$tune_measure(rels, ctx$ev))
  cat("the same figures (and whole evaluations) measured two at a time in forks:",
      identical(unname(lapply(two, function(g) figures(g$e))), unname(res)),
      identical(unname(lapply(two, `[[`, "e")), unname(evs)), "\n")
  cat(sprintf("peak PSS of the process and its forks while measuring: %.0f MB\n",
              max(as.numeric(readLines(pss))) / 1024))
}
ks <- c(40L, 80L, 160L)
k <- vapply(ks, function(kk) pmin(kk, ctx$p$sizes[ctx$p$id]), integer(n))
out$`rungs k = 40, 80, 160` <- cpu(rungs <- if (exists("adaptive_rungs", ns)) ns$adaptive_rungs(ctx$p, k, 1L) else
  lapply(seq_along(ks), function(j) ns$adaptive_fit(ctx$p, k[, j], k[, j], 0L, 0, NULL, 1L)))
# the first stages of the search's adaptive path (tune_adaptive()), each from the end of the one before
resume <- "state" %in% names(formals(ns$adaptive_fit))
fit <- list(k = rep(2L, n), state = NULL)
stages <- list()
for (rate in c(0.5, 0.3, 0.27)) {
  out[[sprintf("adaptive stage %.2f", rate)]] <- cpu(fit <- if (resume) {
    ns$adaptive_fit(ctx$p, fit$k, 33L, 3L, rate, NULL, 1L, state = fit$state, keep_state = TRUE)
  } else ns$adaptive_fit(ctx$p, fit$k, 33L, 3L, rate, NULL, 1L))
  stages[[length(stages) + 1L]] <- fit$centroids
}
cat(sprintf("%-26s cpu %6.1f s  wall %6.1f s\n", names(out), sapply(out, `[`, 1), sapply(out, `[`, 2)), sep = "")
cat("centroids of the rungs and of the stages (a digest of their bits):",
    format(sum(vapply(rungs, function(f) sum(f$centroids * seq_along(f$centroids)), 0)), digits = 17),
    vapply(stages, function(cc) format(sum(cc * seq_along(cc)), digits = 17), ""), "\n")
print(do.call(rbind, res), digits = 6)
s <- readLines("/proc/self/status"); cat(grep("VmHWM", s, value = TRUE), "\n")
