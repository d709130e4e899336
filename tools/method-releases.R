# Writes tests/testthat/fixtures/method-releases.csv: the digest of every masking verb's
# release on the inputs of tests/testthat/helper-methods.R. Run from the package root with
# the version whose releases are to be kept installed:
#   R_LIBS=<lib> Rscript tools/method-releases.R
library(detanon)
source("tests/testthat/helper-methods.R")
calls <- method_fixture_calls()
out <- data.frame(call = names(calls), md5 = vapply(calls, function(f) method_digest(f(1L)), ""))
utils::write.csv(out, "tests/testthat/fixtures/method-releases.csv", row.names = FALSE)
print(out)
