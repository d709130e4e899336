test_that("every verb gives the releases saved before the registry of masking methods", {
  # fixtures/method-releases.csv: made by tools/method-releases.R at commit 406d332
  want <- utils::read.csv(test_path("fixtures", "method-releases.csv"), stringsAsFactors = FALSE)
  calls <- method_fixture_calls()
  expect_setequal(want$call, names(calls))
  for (nm in names(calls)) {
    threads <- if (grepl("tune_release", nm)) 1L else 1:2
    for (nt in threads) {
      expect_identical(method_digest(calls[[nm]](nt)), want$md5[want$call == nm], info = paste(nm, "nthreads", nt))
    }
  }
})
