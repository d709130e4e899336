# risk_rmd() beyond memory: what a partitioned run would approximate, measured.
#   Rscript bench/scale-rmd.R [sample_size]
# risk_rmd() has three global parts:
#   1. the standardisation of both data sets (scale()): column means and SDs, which chunks
#      can merge exactly (anonymise_stats()); base scale()'s own rounding differs from the
#      exact sums in the last bits only;
#   2. the robust (MCD) covariance of the originals: a FAST-MCD search over all records,
#      which does not merge over chunks. The approach measured here: the MCD of a uniform
#      random sample of `sample_size` records (one pass over the chunks), then every
#      record's robust distance and interval test exactly, chunk by chunk;
#   3. the neighbour counts of risk2 (masked records within w2 of each risk1 record, over
#      ALL masked records, not within strata): counts add up over chunks of masked records
#      (a record is safe once the sum reaches `neighbours`), so they are exact, one pass of
#      kd-tree queries per chunk.
# So only the covariance is approximated. This script compares risk1/risk2 with the full
# MCD and with the MCD of a sample (5 samples each) on Titanic, Adult and simulated data.
suppressMessages(library(detanon))
args <- commandArgs(trailingOnly = TRUE)
size <- if (length(args)) as.numeric(args[1]) else 1e4
rmd_sampled <- function(original, masked, vars, size, seed) {
  x <- as.matrix(original[vars])
  xm <- as.matrix(masked[vars])
  storage.mode(x) <- storage.mode(xm) <- "double"
  xs <- scale(x)
  set.seed(seed)
  rows <- if (nrow(xs) > size) sample.int(nrow(xs), size) else seq_len(nrow(xs))
  covs <- robustbase::covMcd(xs[rows, , drop = FALSE])$cov
  rmd <- sqrt(stats::mahalanobis(xs, center = colMeans(xs), cov = covs)) * 0.05
  detanon:::rmd_result(list(x = xs, cov = covs, rmd = rmd, cov_method = "mcd"), xm, 0.01, 0.05, 1, vars, FALSE, 1L)
}
compare <- function(label, original, masked, vars) {
  t_full <- system.time(full <- risk_rmd(original, masked, vars = vars, seed = 1))[["elapsed"]]
  res <- lapply(1:5, function(s) {
    t <- system.time(r <- rmd_sampled(original, masked, vars, size, seed = s))[["elapsed"]]
    c(risk1 = r$risk1, risk2 = r$risk2, t = t,
      agree1 = mean(seq_len(r$n) %in% r$rows_risk1 == seq_len(r$n) %in% full$rows_risk1))
  })
  res <- do.call(rbind, res)
  cat(sprintf("%-22s n = %7d: full MCD risk1 %.4f risk2 %.4f (%.1f s) | sample of %g: risk1 %.4f-%.4f, risk2 %.4f-%.4f, records classified alike %.4f-%.4f (%.1f s)\n",
              label, nrow(original), full$risk1, full$risk2, t_full, size, min(res[, "risk1"]), max(res[, "risk1"]),
              min(res[, "risk2"]), max(res[, "risk2"]), min(res[, "agree1"]), max(res[, "agree1"]), mean(res[, "t"])))
}
tit <- titanic_paper()[-1]
compare("Titanic (Age, Fare)", tit,
        anonymise(tit, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3), c("Age", "Fare"))
ad <- utils::read.csv(if (file.exists("/work/shared/data/adult_train.csv")) "/work/shared/data/adult_train.csv" else
  stop("needs the Adult training set"), check.names = FALSE)
ad <- ad[stats::complete.cases(ad[c("age", "fnlwgt", "hours-per-week", "sex")]), c("age", "fnlwgt", "hours-per-week", "sex")]
names(ad) <- c("age", "fnlwgt", "hours", "sex")
compare("Adult (age, fnlwgt, hours)", ad,
        anonymise(ad, vars = c("age", "fnlwgt", "hours"), strata = "sex", k = 3, check_identifiers = FALSE),
        c("age", "fnlwgt", "hours"))
set.seed(3)
n <- 1e6
sim <- data.frame(g = factor(sample(8, n, TRUE)), x1 = stats::rnorm(n), x2 = stats::rexp(n), x3 = stats::rgamma(n, 2))
compare("simulated (3 vars)", sim, anonymise(sim, vars = c("x1", "x2", "x3"), strata = "g", k = 5, check_identifiers = FALSE),
        c("x1", "x2", "x3"))
