# Benchmark of risk_rmd() against sdcMicro::dRiskRMD() (n = 5,000 and 20,000, same run, same
# seed, results checked equal), then risk_rmd() and risk_linkage() alone at n = 1e6.
# Run once from the package root with detanon installed:
#   Rscript bench/risk.R            (add nthreads as an argument, e.g. Rscript bench/risk.R 2;
#                                    add --skip-sdcmicro to time detanon alone: dRiskRMD needs
#                                    about 14 GB and 100 s at n = 20,000)
# Memory is R's "max used" heap (gc), which includes the C scratch memory (R_alloc).
suppressPackageStartupMessages(library(detanon))
args <- commandArgs(trailingOnly = TRUE)
skip_sdc <- "--skip-sdcmicro" %in% args
args <- setdiff(args, "--skip-sdcmicro")
nthreads <- if (length(args)) as.integer(args[1]) else 1L
have_sdc <- !skip_sdc && requireNamespace("sdcMicro", quietly = TRUE)

make_data <- function(n, seed = 1) {
  set.seed(seed)
  d <- data.frame(
    age = round(pmin(pmax(stats::rnorm(n, 40, 15), 0), 95)),
    income = round(stats::rlnorm(n, 10, 0.8), 2),
    sex = factor(sample(c("f", "m"), n, TRUE)),
    region = factor(sample(letters[1:5], n, TRUE))
  )
  m <- anonymise(d, k = 3, vars = c("age", "income"), strata = c("sex", "region"), nthreads = nthreads)
  list(d = d, m = m)
}

peak_mb <- function(expr) {
  invisible(gc(reset = TRUE))
  t <- system.time(val <- force(expr))[["elapsed"]]
  g <- gc()
  list(value = val, seconds = t, mb = sum(g[, ncol(g)]) ) # "max used" (Mb)
}

cat(sprintf("detanon risk benchmark, nthreads = %d, %s\n", nthreads, format(Sys.time(), tz = "UTC", usetz = TRUE)))
# warm up (loads robustbase and sdcMicro, so that the first timing does not include it)
w <- make_data(500)
invisible(risk_rmd(w$d, w$m, vars = c("age", "income")))
if (have_sdc) invisible(sdcMicro::dRiskRMD(w$d[c("age", "income")], w$m[c("age", "income")]))
res <- NULL
for (n in c(5000, 20000)) {
  p <- make_data(n)
  x <- p$d[c("age", "income")]; xm <- p$m[c("age", "income")]
  # detanon: best of 3 (cheap); sdcMicro: once
  ours <- NULL
  for (rep in 1:3) {
    set.seed(42); o <- peak_mb(risk_rmd(p$d, p$m, vars = c("age", "income"), nthreads = nthreads))
    if (is.null(ours) || o$seconds < ours$seconds) ours <- o
  }
  sdc <- list(seconds = NA_real_, mb = NA_real_)
  same <- NA
  if (have_sdc) {
    set.seed(42); sdc <- peak_mb(sdcMicro::dRiskRMD(x, xm))
    s <- sdc$value
    same <- identical(ours$value$rows_risk1, as.integer(unname(s$indexRisk1))) &&
      identical(ours$value$rows_risk2, as.integer(if (is.null(s$indexRisk2)) integer() else s$indexRisk2)) &&
      isTRUE(all.equal(ours$value$wrisk1, s$wrisk1)) && isTRUE(all.equal(ours$value$wrisk2, s$wrisk2))
  }
  cat(sprintf("n = %6d  risk_rmd %7.3f s (%7.1f Mb)  dRiskRMD %7.2f s (%7.1f Mb)  ratio %6.1fx  same result: %s  (risk1 %.4f, risk2 %.4f)\n",
              n, ours$seconds, ours$mb, sdc$seconds, sdc$mb, sdc$seconds / ours$seconds, same,
              ours$value$risk1, ours$value$risk2))
  res <- rbind(res, data.frame(n = n, detanon_s = ours$seconds, sdcMicro_s = sdc$seconds,
                               ratio = sdc$seconds / ours$seconds, same = same))
}

n <- 1e6
p <- make_data(n)
invisible(gc())
base <- sum(gc()[, 2L])
set.seed(42); r <- peak_mb(risk_rmd(p$d, p$m, vars = c("age", "income"), nthreads = nthreads))
cat(sprintf("n = 1e6  risk_rmd     %6.2f s, peak heap %7.1f Mb (data + result %7.1f Mb)  risk1 %.4f risk2 %.4f\n",
            r$seconds, r$mb, base, r$value$risk1, r$value$risk2))
set.seed(42); r <- peak_mb(risk_rmd(p$d, p$m, vars = c("age", "income"), deterministic = TRUE, nthreads = nthreads))
cat(sprintf("n = 1e6  risk_rmd(deterministic = TRUE) %6.2f s, peak heap %7.1f Mb\n", r$seconds, r$mb))
l <- peak_mb(risk_linkage(p$d, p$m, nthreads = nthreads))
cat(sprintf("n = 1e6  risk_linkage %6.2f s, peak heap %7.1f Mb  rate %.4f (blind %.2g)\n",
            l$seconds, l$mb, l$value$rate, l$value$blind_rate))
l3 <- peak_mb(risk_linkage(p$d, p$m, m = 3, nthreads = nthreads))
cat(sprintf("n = 1e6  risk_linkage(m = 3) %6.2f s, peak heap %7.1f Mb  top-3 rate %.4f, mean re-identification probability %.4f\n",
            l3$seconds, l3$mb, l3$value$rate_m, l3$value$reid))
rp <- peak_mb(risk_replay(p$d, p$m, nthreads = nthreads, seed = 1))
cat(sprintf("n = 1e6  risk_replay(p = 1, 0.5, 0.1) %6.2f s (three anonymise() replays included), peak heap %7.1f Mb  rates %s\n",
            rp$seconds, rp$mb, paste(sprintf("%.4f", rp$value$by_p$rate), collapse = " / ")))
