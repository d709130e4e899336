# Runs the testthat suite and prints one line "tests: N passed, N failed, N skipped",
# counted from testthat's per-expectation results, for CI to read from testthat.Rout.
library(testthat)
library(detanon)

results <- as.data.frame(test_check("detanon", stop_on_failure = FALSE,
                                    stop_on_warning = FALSE))
n_failed <- sum(results$failed) + sum(results$error)
n_skipped <- sum(results$skipped)
n_passed <- sum(results$nb) - sum(results$failed) - sum(results$skipped) - sum(results$warning)
cat(sprintf("\ntests: %d passed, %d failed, %d skipped\n", n_passed, n_failed, n_skipped))
if (n_failed > 0) stop(n_failed, " test(s) failed", call. = FALSE)
