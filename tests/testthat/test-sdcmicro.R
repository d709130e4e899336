# sdcMicroObj in, sdcMicroObj out (R/sdcmicro.R): round trips on sdcMicro's testdata and
# CASCrefmicrodata against the verbs run on the extracted data frame, sdcMicro's own risk
# and utility functions on the result, undolast(), and what the object would publish.

sdc_nums <- c("expend", "income", "savings")
sdc_keys <- c("urbrur", "roof", "sex")

sdc_testdata <- function(...) {
  e <- new.env()
  utils::data("testdata", package = "sdcMicro", envir = e)
  sdcMicro::createSdcObj(e$testdata, keyVars = sdc_keys, numVars = sdc_nums, ...)
}

sdc_casc <- function() {
  e <- new.env()
  utils::data("CASCrefmicrodata", package = "sdcMicro", envir = e)
  d <- e$CASCrefmicrodata
  # CASCrefmicrodata has no categorical variable: a key made of weight bands
  d$band <- cut(d$AFNLWGT, stats::quantile(d$AFNLWGT, 0:4 / 4), include.lowest = TRUE, labels = FALSE)
  # (PTOTVAL = POTHVAL + PEARNVAL, and WSALVAL, ERNVAL near PEARNVAL, make the robust
  # covariance of dRiskRMD() singular: they are left out)
  sdcMicro::createSdcObj(d, keyVars = "band", numVars = c("AGI", "EMCONTRB", "FEDTAX", "STATETAX", "TAXINC",
                                                          "POTHVAL", "INTVAL", "PEARNVAL", "FICA"))
}

# the numerical variables of a release as sdcMicro publishes them
published <- function(obj, nums) sdcMicro::extractManipData(obj)[nums]

plain <- function(d) {
  d <- as.data.frame(lapply(d, function(v) {
    attributes(v) <- NULL
    v
  }))
  d
}

test_that("anonymise() on an sdcMicroObj equals anonymise() on the extracted data, and undolast() restores", {
  skip_if_not_installed("sdcMicro")
  sdc <- sdc_testdata(weightVar = "sampling_weight", hhId = "ori_hid")
  msgs <- list()
  out <- withCallingHandlers(anonymise(sdc, k = 3, small_strata = "merge"),
                             message = function(m) {
                               msgs[[length(msgs) + 1L]] <<- m
                               invokeRestart("muffleMessage")
                             })
  expect_s4_class(out, "sdcMicroObj")
  ex <- sdc_extract(sdc)
  expect_identical(names(ex), c(sdc_keys, sdc_nums))
  expect_identical(nrow(ex), nrow(sdc@origData))
  ref <- suppressMessages(anonymise(ex, vars = sdc_nums, strata = sdc_keys, k = 3, small_strata = "merge"))
  expect_identical(plain(out@manipNumVars), plain(ref[sdc_nums]))
  expect_identical(plain(published(out, sdc_nums)), plain(ref[sdc_nums]))
  # merged records take the keys of their new stratum, in manipKeyVars (types kept)
  expect_identical(plain(out@manipKeyVars), plain(ref[sdc_keys]))
  expect_identical(vapply(out@manipKeyVars, typeof, ""), vapply(sdc@manipKeyVars, typeof, ""))
  expect_identical(out@origData, sdc@origData)
  # classed messages: the weights are not used (the households are); the merge is reported
  kinds <- vapply(msgs, function(m) class(m)[1L], "")
  expect_true("detanon_message_merge" %in% kinds)
  ign <- vapply(msgs[kinds == "detanon_message_ignored"], conditionMessage, "")
  expect_true(any(grepl("^anonymise\\(\\): the sampling weights `sampling_weight`", ign)))
  expect_false(any(grepl("household ids", ign)))
  res <- sdc_results(out)
  expect_identical(res$text[res$measure == "household"], "ori_hid")
  # undolast() gives back the object as it was
  back <- sdcMicro::undolast(out)
  expect_identical(back@manipNumVars, sdc@manipNumVars)
  expect_identical(back@manipKeyVars, sdc@manipKeyVars)
  expect_identical(back@risk, sdc@risk)
  expect_identical(back@utility, sdc@utility)
})

test_that("sdcMicro's own risk and utility run on the result and agree with a direct computation", {
  skip_if_not_installed("sdcMicro")
  sdc <- sdc_testdata()
  out <- anonymise(sdc, k = 5, strata = c("urbrur", "sex"))
  x <- sdc@origData[sdc_nums]
  xm <- out@manipNumVars
  # the slots are recomputed the way sdcMicro's numerical methods do (dRisk(), dUtility())
  expect_equal(out@risk$numeric, sdcMicro::dRisk(x, xm = xm))
  expect_equal(out@utility$il1, sdcMicro::dUtility(x, xm = xm, method = "IL1"))
  expect_equal(out@utility$eigen, sdcMicro::dUtility(x, xm = xm, method = "eigen"))
  expect_false(identical(out@risk$numeric, sdc@risk$numeric))
  # dRiskRMD() on the object and risk_rmd() on the object: the same numbers for the same seed
  set.seed(3)
  s <- sdcMicro::dRiskRMD(out)
  set.seed(3)
  r <- risk_rmd(out)
  expect_equal(s@risk$numericRMD$risk1, r$risk1)
  expect_equal(s@risk$numericRMD$risk2, r$risk2)
  # sdcMicro's whole recomputation runs too
  expect_s4_class(sdcMicro::calcRisks(out), "sdcMicroObj")
  expect_s4_class(sdcMicro::dUtility(out), "sdcMicroObj")
})

test_that("nothing of the original, and no detanon trace, reaches what sdcMicro publishes", {
  skip_if_not_installed("sdcMicro")
  sdc <- sdc_testdata()
  out <- suppressMessages(anonymise(sdc, k = 4, small_strata = "suppress"))
  info <- out@additionalResults$detanon$release
  n_sup <- info$counts$n_suppressed
  expect_gt(n_sup, 0L)
  pub <- sdcMicro::extractManipData(out)
  expect_identical(names(pub), names(sdc@origData))
  expect_identical(attr(pub, "row.names"), seq_len(nrow(pub)))
  removed <- !stats::complete.cases(pub[sdc_nums])
  expect_identical(sum(removed), as.integer(n_sup))
  # the removed records keep no numerical value; the released ones are the masked values
  expect_true(all(is.na(as.matrix(pub[removed, sdc_nums]))))
  ex <- sdc_extract(sdc)
  ref <- suppressMessages(anonymise(ex, vars = sdc_nums, strata = sdc_keys, k = 4, small_strata = "suppress"))
  expect_identical(plain(pub[!removed, sdc_nums]), plain(ref[sdc_nums]))
  # the masked columns are plain vectors: no names, attributes or row names from the verb
  for (v in sdc_nums) expect_null(attributes(out@manipNumVars[[v]]))
  expect_identical(attr(out@manipNumVars, "row.names"), seq_len(nrow(pub)))
  # no row column or release attribute anywhere in the object
  slots <- lapply(slotNames(out), function(s) slot(out, s))
  txt <- paste(utils::capture.output(str(slots[slotNames(out) != "prev"])), collapse = "\n")
  expect_false(grepl(".detanon_row", txt, fixed = TRUE))
  expect_null(attr(out@manipNumVars, "detanon"))
  # the release record holds settings and counts only (no fingerprint, no per-record data)
  expect_setequal(names(info), c("verb", "settings", "counts", "stats"))
  expect_true(all(lengths(info$counts) == 1L))
  expect_true(all(lengths(info$stats) <= length(sdc_nums)))
  # row names of origData are published by sdcMicro: a warning when they are not row numbers
  e <- new.env()
  utils::data("testdata", package = "sdcMicro", envir = e)
  named <- e$testdata[1:300, ]
  rownames(named) <- paste0("person", 1:300)
  named <- sdcMicro::createSdcObj(named, keyVars = "urbrur", numVars = sdc_nums)
  expect_warning(anonymise(named, k = 3), "person1", class = "detanon_warning_identifier")
  # the message says what happened to the removed records
  expect_message(anonymise(sdc, k = 4, small_strata = "suppress"), "set to NA", class = "detanon_message_suppress")
})

test_that("the other verbs: anonymise_adaptive(), anonymise_keps(), stir(), blend_outliers()", {
  skip_if_not_installed("sdcMicro")
  sdc <- sdc_testdata()
  strata <- c("urbrur", "sex")
  ex <- sdc_extract(sdc)

  a <- anonymise_adaptive(sdc, strata = strata, k = 3, m = 1)
  ra <- anonymise_adaptive(ex, vars = sdc_nums, strata = strata, k = 3, m = 1)
  expect_identical(plain(a@manipNumVars), plain(ra[sdc_nums]))
  expect_identical(a@additionalResults$detanon$release$verb, "anonymise_adaptive")

  # (k, epsilon): each record keeps its row in the object (the shuffle is for export)
  set.seed(7)
  kp <- suppressMessages(anonymise_keps(sdc, k = 5, epsilon = 2, small_strata = "suppress"))
  set.seed(7)
  rk <- suppressMessages(anonymise_keps_with_key(ex, vars = sdc_nums, strata = sdc_keys, k = 5, epsilon = 2,
                                                 small_strata = "suppress"))
  pub <- published(kp, sdc_nums)
  expect_identical(plain(pub[rk$origin_row, ]), plain(rk$data[sdc_nums]))
  gone <- setdiff(seq_len(nrow(ex)), rk$origin_row)
  expect_gt(length(gone), 0L)
  expect_true(all(is.na(as.matrix(pub[gone, ]))))

  # stirring: the same draws as on the data frame
  s <- stir(sdc, strata = strata, k = 3, seed = 11)
  rs <- stir(ex, vars = sdc_nums, strata = strata, k = 3, seed = 11)
  expect_identical(plain(s@manipNumVars), plain(rs[sdc_nums]))

  # blending moves records between clusters: their key values land in manipKeyVars and
  # sdcMicro's key-variable risk is recomputed
  b <- suppressMessages(blend_outliers(sdc, strata = sdc_keys, k = 5, seed = 2))
  rb <- suppressMessages(blend_outliers(ex, vars = sdc_nums, strata = sdc_keys, k = 5, seed = 2))
  expect_identical(plain(b@manipNumVars), plain(rb[sdc_nums]))
  expect_identical(plain(b@manipKeyVars), plain(rb[sdc_keys]))
  expect_false(identical(b@manipKeyVars, sdc@manipKeyVars))
  expect_equal(b@risk$individual, sdcMicro::measure_risk(b)@risk$individual)
  expect_identical(sdcMicro::undolast(b)@manipKeyVars, sdc@manipKeyVars)
})

test_that("locally suppressed keys go to the verb as missing strata values", {
  skip_if_not_installed("sdcMicro")
  sdc <- sdc_testdata()
  sup <- suppressWarnings(sdcMicro::localSuppression(sdc, k = 5))
  n_na <- sum(is.na(sup@manipKeyVars))
  expect_gt(n_na, 0L)
  ex <- sdc_extract(sup)
  expect_identical(sum(is.na(ex[sdc_keys])), n_na)
  out <- suppressMessages(anonymise(sup, k = 3, small_strata = "suppress"))
  ref <- suppressMessages(anonymise(ex, vars = sdc_nums, strata = sdc_keys, k = 3, small_strata = "suppress"))
  keep <- stats::complete.cases(out@manipNumVars)
  expect_identical(plain(out@manipNumVars[keep, ]), plain(ref[sdc_nums]))
  # suppressed values stay suppressed
  expect_identical(out@manipKeyVars, sup@manipKeyVars)
  # stir() takes a missing stratum value as a value of its own, as anonymise() does (and
  # tune_release() after suppressing keys): here two of those clusters are too small
  expect_error(suppressMessages(stir(sup, k = 3, seed = 1)), class = "detanon_error_small_strata")
})

test_that("round trip on CASCrefmicrodata", {
  skip_if_not_installed("sdcMicro")
  sdc <- sdc_casc()
  nums <- names(sdc@origData)[sdc@numVars]
  ex <- sdc_extract(sdc)
  out <- anonymise(sdc, k = 3)
  ref <- anonymise(ex, vars = nums, strata = "band", k = 3)
  expect_identical(plain(published(out, nums)), plain(ref[nums]))
  expect_equal(out@risk$numeric, sdcMicro::dRisk(sdc@origData[nums], xm = out@manipNumVars))
  expect_s4_class(sdcMicro::dRiskRMD(out), "sdcMicroObj")
  expect_identical(sdcMicro::undolast(out)@manipNumVars, sdc@manipNumVars)
  # a subset of the numerical variables: the others are left as they were
  # (the identifier check sees the unmasked ones, as on a data frame: tax amounts are
  # measurements, not identifiers)
  expect_no_warning(part <- anonymise(sdc, vars = c("AGI", "FEDTAX"), k = 3))
  expect_identical(plain(part@manipNumVars[setdiff(nums, c("AGI", "FEDTAX"))]),
                   plain(sdc@manipNumVars[setdiff(nums, c("AGI", "FEDTAX"))]))
  ref2 <- anonymise(ex, vars = c("AGI", "FEDTAX"), strata = "band", k = 3, check_identifiers = FALSE)
  expect_identical(plain(part@manipNumVars[c("AGI", "FEDTAX")]), plain(ref2[c("AGI", "FEDTAX")]))
  # verbs compose, as sdcMicro's numerical methods do: the second starts from the first
  twice <- stir(out, k = 3, seed = 1)
  expect_identical(plain(twice@manipNumVars),
                   plain(stir(sdc_extract(out), vars = nums, strata = "band", k = 3, seed = 1)[nums]))
})

test_that("tune_release() on an sdcMicroObj returns its report with the object as the release", {
  skip_if_not_installed("sdcMicro")
  sdc <- sdc_testdata()
  # (the narrower intruder: roof, a key variable published unchanged, is no key of it)
  args <- list(strata = c("urbrur", "sex"), methods = "anonymise", worst = 1, top_m = 1, tail = 1, intruder = intruder())
  tuned <- suppressMessages(do.call(tune_release, c(list(sdc), args)))
  ref <- suppressMessages(do.call(tune_release, c(list(sdc_extract(sdc), vars = sdc_nums), args)))
  expect_s3_class(tuned, "detanon_tuned")
  expect_s4_class(tuned$release, "sdcMicroObj")
  expect_identical(plain(tuned$release@manipNumVars), plain(ref$release[sdc_nums]))
  expect_identical(tuned$tried$loss, ref$tried$loss)
  # the default intruder holds roof too (published unchanged), not the row column the
  # object's data carry into the search
  pub <- suppressMessages(tune_release(sdc, strata = c("urbrur", "sex"), methods = "anonymise", worst = 1,
                                       top_m = 1))
  expect_identical(pub$keys, "roof")
  expect_error(tune_release(sdc, small_strata = "suppress"), class = "detanon_error_argument")
})

test_that("the measures take the object alone and compare original with manipulated values", {
  skip_if_not_installed("sdcMicro")
  sdc <- sdc_testdata(weightVar = "sampling_weight")
  out <- suppressMessages(anonymise(sdc, k = 3, small_strata = "suppress"))
  o <- sdc_extract(out, "original")
  m <- sdc_extract(out)
  expect_identical(o[sdc_nums], plain(sdc@origData[sdc_nums]))
  keep <- stats::complete.cases(m)
  expect_message(l <- risk_linkage(out), "left out", class = "detanon_message_na")
  ref <- risk_linkage(o[keep, ], m[keep, ], vars = sdc_nums, strata = sdc_keys)
  expect_identical(l$rate, ref$rate)
  expect_identical(l$strata, sdc_keys)
  expect_message(risk_linkage(out), "weights", class = "detanon_message_ignored")
  set.seed(1)
  a <- suppressMessages(assess(out, seed = 1))
  set.seed(1)
  ra <- assess(o[keep, ], m[keep, ], vars = sdc_nums, strata = sdc_keys, seed = 1)
  expect_equal(as.data.frame(a), as.data.frame(ra))
  expect_error(risk_rmd(out, m), "leave `masked` out", class = "detanon_error_argument")
  expect_error(risk_rmd(out, vars = "age"), "numerical variables", class = "detanon_error_column")
  expect_error(anonymise(sdc, strata = "age"), "key variables", class = "detanon_error_column")
  expect_error(anonymise(sdc, vars = "nope"), class = "detanon_error_column")
})

test_that("measure results are attached to the object, listed, and written beside the report", {
  skip_if_not_installed("sdcMicro")
  sdc <- anonymise(sdc_testdata(), k = 3, strata = c("urbrur", "sex"))
  a <- assess(sdc, seed = 1)
  l <- risk_linkage(sdc)
  # any measure object with an as.data.frame() method (the risk battery), else its single numbers
  fake <- structure(list(rate = 0.5, table = data.frame(attack = c("a", "b"), rate = c(0.1, 0.2))),
                    class = "detanon_fakebattery")
  registerS3method("as.data.frame", "detanon_fakebattery", function(x, ...) x$table)
  sdc2 <- sdc_attach(sdc, a, linkage = l, fake)
  expect_identical(names(sdc2@additionalResults$detanon$results), c("assess", "linkage", "fakebattery"))
  res <- sdc_results(sdc2)
  expect_identical(unique(res$result), c("release", "assess", "linkage", "fakebattery"))
  expect_equal(res$value[res$result == "assess"], as.data.frame(a)$value)
  expect_equal(res$value[res$result == "linkage" & res$measure == "rate"], l$rate)
  expect_identical(res$attack[res$result == "fakebattery"], c("a", "b"))
  expect_identical(res$value[res$result == "release" & res$measure == "k"], 3)
  # what extractManipData() publishes is untouched by attaching
  expect_identical(sdcMicro::extractManipData(sdc2), sdcMicro::extractManipData(sdc))
  # masking again drops results of the previous state; undolast() brings them back
  sdc3 <- stir(sdc2, k = 3, seed = 1, strata = c("urbrur", "sex"))
  expect_identical(unique(sdc_results(sdc3)$result), "release")
  expect_identical(sdc_results(sdcMicro::undolast(sdc3)), res)
  # files beside the report
  dir <- tempfile()
  dir.create(dir)
  files <- sdc_report(sdc2, outdir = dir, filename = "rel", report = FALSE)
  expect_identical(basename(files), c("rel-detanon.csv", "rel-detanon.html"))
  csv <- utils::read.csv(files[1L], stringsAsFactors = FALSE)
  expect_identical(nrow(csv), nrow(res))
  html <- readLines(files[2L])
  expect_true(any(grepl("<h2>fakebattery</h2>", html, fixed = TRUE)))
  expect_error(sdc_attach(sdc, 1:3), class = "detanon_error_argument")
  expect_error(sdc_attach(data.frame(), a), "sdcMicroObj", class = "detanon_error_argument")
})

test_that("sdcMicro's report() runs on the result (when it can render)", {
  skip_if_not_installed("sdcMicro")
  skip_on_cran()
  skip_if_not(requireNamespace("rmarkdown", quietly = TRUE) && rmarkdown::pandoc_available())
  sdc <- anonymise(sdc_testdata(), k = 3, strata = c("urbrur", "sex"))
  dir <- tempfile()
  dir.create(dir)
  files <- sdc_report(sdc_attach(sdc, linkage = risk_linkage(sdc)), outdir = dir, filename = "rel")
  expect_true(all(file.exists(files)))
  expect_identical(basename(files), c("rel.html", "rel-detanon.csv", "rel-detanon.html"))
})

test_that("hhId keeps household-level variables shared; verbs without `household` count the split ones", {
  skip_if_not_installed("sdcMicro")
  e <- new.env()
  utils::data("testdata", package = "sdcMicro", envir = e)
  d <- e$testdata
  d$hinc <- stats::ave(d$income, d$ori_hid) # a household-level variable
  sdc <- sdcMicro::createSdcObj(d, keyVars = c("urbrur", "sex"), numVars = c("hinc", "savings"), hhId = "ori_hid")
  multi <- d$ori_hid %in% d$ori_hid[duplicated(d$ori_hid)]
  n_split <- function(x) sum(vapply(split(x[multi], d$ori_hid[multi]), function(v) length(unique(v)) > 1L, NA))
  for (verb in list(anonymise, anonymise_mdav, anonymise_adaptive)) {
    out <- expect_no_message(verb(sdc, k = 3), class = "detanon_message_ignored")
    expect_identical(n_split(out@manipNumVars$hinc), 0L)
    expect_gt(n_split(out@manipNumVars$savings), 0L)
    # the household ids were the verb's `household`
    ref <- suppressWarnings(verb(sdc_extract(sdc), vars = c("hinc", "savings"), strata = c("urbrur", "sex"),
                                 k = 3, household = NULL))
    expect_false(identical(out@manipNumVars$hinc, ref$hinc))
  }
  out <- expect_no_message(anonymise_keyed(sdc, k = 3, key = "a secret of sixteen chars"),
                           class = "detanon_message_ignored")
  expect_identical(n_split(out@manipNumVars$hinc), 0L)
  # stir() has no `household`: the message counts the households it split
  msg <- NULL
  out <- withCallingHandlers(stir(sdc, k = 3, seed = 1), detanon_message_ignored = function(m) {
    msg <<- conditionMessage(m)
    invokeRestart("muffleMessage")
  })
  split <- n_split(out@manipNumVars$hinc)
  expect_gt(split, 0L)
  expect_match(msg, paste0("so ", split, " households whose members shared a value"), fixed = TRUE)
})

test_that("testdata's 7-key object with weights and households: suppress_local() and anonymise_pram()", {
  skip_if_not_installed("sdcMicro")
  e <- new.env()
  utils::data("testdata", package = "sdcMicro", envir = e)
  d <- e$testdata
  keys7 <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex")
  hh_keys <- c("urbrur", "roof", "walls", "water", "electcon")
  sdc <- sdcMicro::createSdcObj(d, keyVars = keys7, numVars = sdc_nums, w = "sampling_weight", hhId = "ori_hid")
  shared <- function(x) all(tapply(seq_along(x), d$ori_hid, function(i) length(unique(x[i])) == 1L))
  # the object's risk is the one detanon measures, with the weights and the households
  same_risk <- function(obj) {
    r <- risk_individual(obj)
    mk <- sdcMicro::get.sdcMicroObj(obj, "manipKeyVars")
    m <- sdcMicro::measure_risk(cbind(mk, d[c("sampling_weight", "ori_hid")]), keyVars = keys7,
                                w = "sampling_weight", hid = "ori_hid")
    expect_equal(r$risk, unname(m$Res[, "risk"]), tolerance = 1e-8)
    expect_equal(r$household_risk, unname(m$Res[, "hier_risk"]), tolerance = 1e-8)
    expect_equal(r$global_risk, m$global_risk, tolerance = 1e-8)
    expect_equal(r$household_global_risk, m$hier_risk, tolerance = 1e-8)
    expect_equal(r$global_risk, obj@risk$global$risk, tolerance = 1e-8)
    expect_equal(r$household_global_risk, obj@risk$global$hier_risk, tolerance = 1e-8)
    expect_equal(risk_frequencies(obj)$Fk, unname(m$Res[, "Fk"]), tolerance = 1e-8)
    r
  }
  before <- same_risk(sdc)
  s <- suppressMessages(suppress_local(sdc, k = 3))
  mk <- s@manipKeyVars
  ref <- suppressMessages(suppress_local(cbind(sdc_extract(sdc)[keys7], ori_hid = d$ori_hid), keys7, k = 3,
                                         household = "ori_hid"))
  expect_identical(plain(mk), plain(ref[keys7]))
  for (v in hh_keys) expect_true(shared(mk[[v]]), info = v)
  expect_gte(min(risk_frequencies(s)$fk), 3)
  after <- same_risk(s)
  expect_lt(after$expected, before$expected)
  expect_identical(s@manipNumVars, sdc@manipNumVars)
  res <- sdc_results(s)
  expect_identical(res$text[res$measure == "household_vars"], paste(hh_keys, collapse = ", "))
  back <- sdcMicro::undolast(s)
  expect_identical(back@manipKeyVars, sdc@manipKeyVars)
  # sdcMicro's own local suppression of the object, for comparison (it splits households)
  ls <- sdcMicro::localSuppression(sdc, k = 3)
  expect_gt(sum(is.na(ls@manipKeyVars)), sum(is.na(mk)))
  p <- suppressMessages(anonymise_pram(sdc, vars = c("walls", "water", "relat"), strata = "urbrur", seed = 4))
  expect_true(shared(p@manipKeyVars$walls))
  expect_true(shared(p@manipKeyVars$water))
  expect_false(shared(p@manipKeyVars$relat))
  expect_gt(sum(p@manipKeyVars$water != d$water), 0L)
  same_risk(p)
  expect_error(anonymise_pram(sdc, vars = "age", seed = 1), "must name its key variables",
               class = "detanon_error_column")
})

test_that("factor keys changed by a merge keep their type and levels; a fake object is not taken", {
  skip_if_not_installed("sdcMicro")
  set.seed(5)
  d <- data.frame(a = factor(sample(c("p", "q"), 400, TRUE)),
                  c = factor(sample(c("r", "s", "t"), 400, TRUE, prob = c(0.98, 0.01, 0.01))),
                  x = stats::rnorm(400), y = stats::rexp(400))
  sdc <- sdcMicro::createSdcObj(d, keyVars = c("a", "c"), numVars = c("x", "y"))
  out <- suppressMessages(anonymise(sdc, k = 10, small_strata = "merge"))
  ref <- suppressMessages(anonymise(sdc_extract(sdc), vars = c("x", "y"), strata = c("a", "c"), k = 10,
                                    small_strata = "merge"))
  expect_true(is.factor(out@manipKeyVars$c))
  expect_identical(levels(out@manipKeyVars$c), levels(sdc@manipKeyVars$c))
  expect_identical(as.character(out@manipKeyVars$c), as.character(ref$c))
  expect_gt(sum(as.character(out@manipKeyVars$c) != as.character(d$c)), 0L)
  expect_identical(plain(out@manipNumVars), plain(ref[c("x", "y")]))
  expect_error(anonymise(structure(list(), class = "sdcMicroObj")), "must be a data frame",
               class = "detanon_error_argument")
})

test_that("sdcMicro's documented testdata object: every key variable as a stratum fails saying what to do", {
  skip_if_not_installed("sdcMicro")
  e <- new.env()
  utils::data("testdata", package = "sdcMicro", envir = e)
  keys7 <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex")
  sdc <- sdcMicro::createSdcObj(e$testdata, keyVars = keys7, numVars = sdc_nums, w = "sampling_weight",
                                hhId = "ori_hid")
  # the seven keys make 219 strata below k = 3 in anonymise(), strata of 1 in tune_release()
  err <- tryCatch(suppressMessages(anonymise(sdc, k = 3)), error = identity)
  expect_s3_class(err, "detanon_error_small_strata")
  expect_match(conditionMessage(err), "^anonymise\\(\\): 219 strata have fewer than k = 3 records")
  expect_match(conditionMessage(err), "every key variable is a stratum unless `strata` names fewer: 7 key")
  expect_match(conditionMessage(err), "strata = c(\"urbrur\", \"roof\")", fixed = TRUE)
  err <- tryCatch(suppressMessages(tune_release(sdc)), error = identity)
  expect_s3_class(err, "detanon_error_argument")
  expect_match(conditionMessage(err), "^tune_release\\(\\): the limit `k_strata` = 3 cannot be met")
  expect_match(conditionMessage(err), "Name the few that matter in `strata`")
  # what the message advises works: fewer key variables as strata
  out <- suppressMessages(anonymise(sdc, k = 3, strata = c("urbrur", "sex")))
  expect_s4_class(out, "sdcMicroObj")
  # and so does k = 2 with all of them? no: a stratum of 1 record stays; the hint is given
  # only when the strata were not named
  err <- tryCatch(suppressMessages(anonymise(sdc, k = 3, strata = keys7)), error = identity)
  expect_s3_class(err, "detanon_error_small_strata")
  expect_no_match(conditionMessage(err), "unless `strata` names fewer")
})

test_that("small_strata = \"merge\" on the testdata object: one summary line, and the key changes counted", {
  skip_if_not_installed("sdcMicro")
  e <- new.env()
  utils::data("testdata", package = "sdcMicro", envir = e)
  keys7 <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex")
  sdc <- sdcMicro::createSdcObj(e$testdata, keyVars = keys7, numVars = sdc_nums)
  msgs <- list()
  out <- withCallingHandlers(anonymise(sdc, k = 3, small_strata = "merge"), detanon_message_merge = function(m) {
    msgs[[length(msgs) + 1L]] <<- m
    invokeRestart("muffleMessage")
  })
  expect_length(msgs, 1L)
  m <- msgs[[1L]]
  txt <- conditionMessage(m)
  expect_identical(lengths(regmatches(txt, gregexpr("\n", txt))), 1L) # one line
  changed <- vapply(keys7, function(v) sum(as.character(out@manipKeyVars[[v]]) != as.character(sdc@manipKeyVars[[v]])),
                    integer(1))
  expect_identical(m$changed, changed)
  moved <- sum(Reduce(`|`, lapply(keys7, function(v) {
    as.character(out@manipKeyVars[[v]]) != as.character(sdc@manipKeyVars[[v]])
  })))
  expect_identical(moved, 281L)
  expect_match(txt, "moved 281 records of 219 strata smaller than k = 3", fixed = TRUE)
  shown <- changed[changed > 0L]
  expect_match(txt, paste0("`", names(shown), "` of ", shown, " record", collapse = ".*"))
  expect_identical(sum(m$moves$n), 281L)
})

test_that("suppressed (NA) keys are said to be categories of their own, unlike sdcMicro's wildcard", {
  skip_if_not_installed("sdcMicro")
  sdc <- sdc_testdata()
  sup <- suppressWarnings(sdcMicro::kAnon(sdc, k = 3))
  n_na <- colSums(is.na(sup@manipKeyVars))
  expect_gt(sum(n_na), 0L)
  msg <- NULL
  out <- withCallingHandlers(anonymise(sup, k = 3, small_strata = "suppress"), detanon_message_na = function(m) {
    msg <<- m
    invokeRestart("muffleMessage")
  }, detanon_message = function(m) invokeRestart("muffleMessage"))
  expect_false(is.null(msg))
  expect_equal(msg$n_na, n_na[n_na > 0L])
  expect_match(conditionMessage(msg), paste0("hold ", sum(n_na), " suppressed values"))
  expect_match(conditionMessage(msg), "wildcard")
  # a variant: the same in tune_release(), on the strata it is given
  msg <- NULL
  tuned <- withCallingHandlers(tune_release(sup, strata = "roof", methods = "anonymise", worst = 1, top_m = 1),
                               detanon_message_na = function(m) {
                                 msg <<- m
                                 invokeRestart("muffleMessage")
                               }, detanon_message = function(m) invokeRestart("muffleMessage"))
  if (n_na[["roof"]] > 0L) expect_equal(msg$n_na, c(roof = n_na[["roof"]])) else expect_null(msg)
  # no message without NA keys
  expect_no_message(anonymise(sdc, k = 3, strata = c("urbrur", "sex")), class = "detanon_message_na")
})

test_that("sdc_attach(), sdc_results(), sdc_report() and release_report() take what tune_release(sdc) returns", {
  skip_if_not_installed("sdcMicro")
  sdc <- sdc_testdata()
  # (the narrower intruder, as above: roof is published unchanged)
  tuned <- suppressMessages(tune_release(sdc, strata = c("urbrur", "sex"), methods = "anonymise",
                                         worst = 1, top_m = 1, tail = 1, intruder = intruder()))
  l <- risk_linkage(tuned$release)
  t2 <- sdc_attach(tuned, linkage = l)
  expect_s3_class(t2, "detanon_tuned")
  expect_identical(t2$tried, tuned$tried)
  expect_identical(sdc_results(t2), sdc_results(sdc_attach(tuned$release, linkage = l)))
  dir <- tempfile()
  dir.create(dir)
  files <- sdc_report(t2, outdir = dir, filename = "rel", report = FALSE)
  html <- readLines(files[2L])
  # counts as whole numbers, never 4.600e+01
  expect_false(any(grepl("e\\+", html)))
  expect_true(any(grepl(paste0("<td>n</td><td>", l$n, "</td>"), html, fixed = TRUE)))
  expect_identical(detanon:::sdc_number(c(46, 4496, 0.123456, 1e-7, NA)),
                   c("46", "4496", "0.1235", "1e-07", "NA"))
  f <- tempfile(fileext = ".html")
  suppressMessages(release_report(t2, file = f))
  page <- paste(readLines(f), collapse = "\n")
  expect_match(page, "tune_release")
  f2 <- tempfile(fileext = ".html")
  suppressMessages(release_report(tuned$release, file = f2))
  expect_true(file.exists(f2))
  # no release: a clear error naming the argument
  none <- tuned
  none$release <- NULL
  expect_error(sdc_attach(none, linkage = l), "no candidate met every limit", class = "detanon_error_data")
  expect_error(release_report(tuned, masked = tuned$release, file = f), "leave `masked` out",
               class = "detanon_error_argument")
})
