test_that("every verb gives the releases saved before the registry of masking methods", {
  # fixtures/method-releases.csv: made by tools/method-releases.R at commit 406d332; the
  # natural releases that the natural form's map changes (means, SDs and signs kept:
  # anonymise, adaptive, keyed and MDAV with noise, tune_release) made again on branch
  # finish, the others (format = "none", MDAV without noise, keyed exact) unchanged;
  # titanic/tune_release made again when the recipe attack began to replay k-per-stratum
  # releases at their own k (the same release; the verification figures of the failed
  # k-per-stratum candidate it records rose: recipe worst 0.139 -> 0.438)
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

test_that("every entry of the registry is complete: verb, kernel or why not, search, replay or why not", {
  reg <- masking_methods()
  expect_identical(names(reg), names(method_registry()))
  exported <- getNamespaceExports("detanon")
  for (nm in names(reg)) {
    m <- reg[[nm]]
    internal <- method_registry()[[nm]]
    expect_true(m$verb %in% exported, info = nm)
    expect_true(is.character(m$label) && nzchar(m$label), info = nm)
    # a kernel, or the reason the method is not per stratum (a method with a kernel may name
    # the settings that do not run partitioned)
    expect_true(is.function(m$kernel) || is.character(m$why_not), info = nm)
    if (m$per_stratum) {
      expect_true(internal$finish %in% c("step5", "means"), info = nm)
      expect_true(is.function(internal$meta), info = nm)
    }
    # a replay, or the reason there is none
    expect_true(xor(m$replay, is.character(m$no_replay)), info = nm)
    expect_true(is.function(internal$tune) && is.list(m$settings), info = nm)
    expect_true(is.character(internal$colour) && is.character(internal$legend), info = nm)
    # a release of the verb is found back in the registry by its metadata
    expect_identical(method_of_verb(m$verb)$verb, m$verb)
  }
  # the search's choices come from the registry ((k, epsilon) is asked for by keps_epsilon)
  expect_identical(search_methods(), c("anonymise", "stratum", "adaptive", "mdav", "keyed", "stir"))
})

test_that("tune_release(methods = ) takes the registry's choices and refuses others", {
  d <- titanic_paper()[-1]
  args <- list(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), intruder = intruder(vars = c("Age", "Fare"),
               strata = c("Pclass", "Sex")), verify = "linkage_released")
  tu <- suppressWarnings(do.call(tune_release, c(args, list(methods = "mdav"))))
  expect_identical(unique(tu$tried$method), "mdav")
  expect_identical(tu$tried$settings, sprintf("MDAV groups of k = %d within strata", method_registry()$mdav$settings$k))
  expect_error(do.call(tune_release, c(args, list(methods = "keps"))), class = "detanon_error_argument")
  expect_error(do.call(tune_release, c(args, list(methods = "mdav2"))), "must be some of \"anonymise\", \"stratum\"")
})

test_that("the replay of a release is its method's replay in the registry", {
  d <- titanic_paper()[-1]
  vars <- c("Age", "Fare")
  strata <- c("Pclass", "Sex")
  for (verb in c("anonymise", "anonymise_adaptive", "anonymise_mdav")) {
    rel <- suppressWarnings(match.fun(verb)(d, vars = vars, strata = strata, k = 3, check_identifiers = FALSE))
    info <- release_info(rel)
    expect_true(replay_known(info))
    # on all records, the replay is the release
    expect_identical(replay_mask(info)(d)[vars], rel[vars], info = verb)
  }
  keyed <- suppressWarnings(anonymise_keyed(d, vars = vars, strata = strata, k = 3, key = method_fixture_key,
                                            check_identifiers = FALSE))
  expect_false(replay_known(release_info(keyed)))
  expect_error(replay_mask(release_info(keyed)), "anonymise\\(\\), anonymise_adaptive\\(\\) or anonymise_mdav\\(\\)")
})
