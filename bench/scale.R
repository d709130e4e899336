# Scale: anonymise(), risk_rmd() and risk_linkage() on n rows (default 1e7; 4 continuous
# variables, 8 strata, k = 5), each step in a fresh R process so that its peak memory
# (maximum resident set size, Linux VmHWM) is its own.
#   Rscript bench/scale.R [n] [nthreads]
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 1e7
nt <- if (length(args) >= 2) as.integer(args[2]) else 2L
dir <- tempfile("scale"); dir.create(dir)
common <- c(
  "suppressMessages(library(detanon))",
  "peak <- function() { s <- readLines('/proc/self/status'); as.numeric(gsub('[^0-9]', '', s[grepl('^VmHWM', s)])) / 1024 }",
  sprintf("set.seed(1); n <- %.0f", n),
  "d <- data.frame(g = factor(sample(8, n, TRUE)), x1 = rnorm(n), x2 = rexp(n), x3 = rgamma(n, 2), x4 = runif(n, 20, 80))",
  "vars <- c('x1', 'x2', 'x3', 'x4')",
  "base <- peak()")
steps <- list(
  anonymise = sprintf("t <- system.time(m <- anonymise(d, k = 5, vars = vars, strata = 'g', nthreads = %d))", nt),
  risk_rmd = sprintf(paste("m <- anonymise(d, k = 5, vars = vars, strata = 'g', nthreads = %d); invisible(gc()); base <- peak()",
                           "t <- system.time(r <- risk_rmd(d, m, vars = vars, nthreads = %d))", sep = "\n"), nt, nt),
  risk_linkage = sprintf(paste("m <- anonymise(d, k = 5, vars = vars, strata = 'g', nthreads = %d); invisible(gc()); base <- peak()",
                               "t <- system.time(l <- risk_linkage(d, m, vars = vars, strata = 'g', nthreads = %d))", sep = "\n"), nt, nt)
)
cat(sprintf("n = %.0f, 4 variables, 8 strata, k = 5, %d threads\n", n, nt))
for (s in names(steps)) {
  f <- file.path(dir, paste0(s, ".R"))
  writeLines(c(common, steps[[s]],
               sprintf("cat(sprintf('%%-13s %%6.1f s elapsed; peak RSS %%6.0f MB (%%6.0f MB before the step; the data %%4.0f MB)\\n', '%s', t[['elapsed']], peak(), base, as.numeric(object.size(d)) / 2^20))", s)), f)
  system2("Rscript", f)
}
