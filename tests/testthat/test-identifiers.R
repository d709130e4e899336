nhs_numbers <- function(n) {
  out <- character()
  while (length(out) < n) {
    v <- sample(0:9, 9, TRUE)
    chk <- 11 - sum(v * (10:2)) %% 11
    if (chk == 11) chk <- 0
    if (chk == 10) next
    out <- c(out, paste0(c(v, chk), collapse = ""))
  }
  out
}

id_data <- function(n = 40) {
  set.seed(11)
  data.frame(
    record_no = sample(1000:9999, n),
    nhs = nhs_numbers(n),
    contact = paste0("user", seq_len(n), "@example.org"),
    ni = sprintf("AB%06dC", sample.int(999999, n)),
    tel = sprintf("0113 %03d %04d", sample.int(999, n), sample.int(9999, n)),
    notes = paste("patient reported pain in the lower back after", seq_len(n), "days"),
    who = paste0(sample(c("Smith", "Jones", "Brown"), n, TRUE), ", Mr. ", sample(LETTERS, n, TRUE)),
    age = round(runif(n, 20, 80), 3),
    sex = sample(c("F", "M"), n, TRUE),
    score = sample(1:5, n, TRUE),
    stringsAsFactors = FALSE
  )
}

test_that("detect_identifiers() flags each kind of direct identifier and not the others", {
  d <- id_data()
  found <- detect_identifiers(d)
  expect_setequal(found$column, c("record_no", "nhs", "contact", "ni", "tel", "notes", "who"))
  f <- function(col, flag) found[[flag]][found$column == col]
  expect_true(f("record_no", "unique"))
  expect_true(f("nhs", "id_like"))
  expect_match(found$reason[found$column == "nhs"], "NHS numbers")
  expect_match(found$reason[found$column == "contact"], "email addresses")
  expect_match(found$reason[found$column == "ni"], "National Insurance numbers")
  expect_match(found$reason[found$column == "tel"], "telephone numbers")
  expect_true(f("notes", "free_text"))
  expect_true(f("who", "name_like"))
  # continuous measurements unique per row are not flagged; neither are categories
  expect_false("age" %in% found$column)
  # NHS numbers with a wrong check digit are not NHS numbers
  bad <- d$nhs
  substr(bad, 10, 10) <- as.character((as.integer(substr(bad, 10, 10)) + 1) %% 10)
  expect_false(any(detanon:::is_nhs_number(bad)))
  expect_true(all(detanon:::is_nhs_number(d$nhs)))
  expect_equal(detanon:::is_nhs_number(c("9434765919", "9434765910", "943 476 5919", "12345")),
               c(TRUE, FALSE, TRUE, FALSE))
})

test_that("detect_identifiers() on the Titanic data and on small or odd data", {
  found <- detect_identifiers(titanic)
  expect_setequal(found$column, c("PassengerId", "Name"))
  expect_match(found$reason[found$column == "PassengerId"], "consecutive whole numbers")
  expect_equal(nrow(detect_identifiers(titanic_paper()[c("Survived", "Age", "Sex")])), 0L)
  # tiny data: uniqueness is not judged below 10 records
  expect_equal(nrow(detect_identifiers(data.frame(x = 1:3))), 0L)
  expect_equal(nrow(detect_identifiers(data.frame(x = 1))), 0L)
  expect_equal(nrow(detect_identifiers(data.frame(x = rep(NA, 20)))), 0L)
  expect_equal(detect_identifiers(data.frame(patientId = 1))$column, "patientId")
  expect_equal(nrow(detect_identifiers(data.frame(x = c(1:20, Inf)))), 1L)
  expect_error(detect_identifiers(1:3), "`data` must be a data frame")
})

test_that("anonymise() warns when a likely identifier would be released unmasked", {
  d <- titanic_paper()
  expect_warning(
    anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family")),
    "^anonymise\\(\\): `PassengerId` would be released unmasked", class = "detanon_warning_identifier")
  expect_no_warning(
    anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), check_identifiers = FALSE))
  expect_no_warning(anonymise(d[-1], k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family")))
  # a masked identifier is not released as is: no warning
  expect_no_warning(anonymise(d, k = 3, vars = c("PassengerId", "Age", "Fare"), strata = c("Pclass", "Sex", "Family")))
  expect_error(anonymise(d, check_identifiers = NA), "`check_identifiers` must be TRUE or FALSE")
})

test_that("remove_identifiers() drops columns", {
  d <- id_data()
  out <- remove_identifiers(d, c("nhs", "who"))
  expect_equal(names(out), setdiff(names(d), c("nhs", "who")))
  expect_identical(out$age, d$age)
  auto <- remove_identifiers(d)
  expect_equal(names(auto), c("age", "sex", "score"))
  expect_message(same <- remove_identifiers(d[c("age", "sex")]), "nothing changed")
  expect_identical(release_info(same)$counts$n_columns, 0L)
  attr(same, "detanon") <- NULL
  expect_identical(same, d[c("age", "sex")])
  skip_if_not_installed("data.table")
  expect_s3_class(remove_identifiers(data.table::as.data.table(d), "nhs"), "data.table")
})

test_that("pseudonymise_with_key(), the old name of pseudonymise_with_table(), still works and warns", {
  d <- data.frame(id = c("b", "a", "c", "a", NA, "b"), v = 1:6, stringsAsFactors = FALSE)
  set.seed(5)
  expect_warning(old <- pseudonymise_with_key(d, "id"),
                 "^pseudonymise_with_key\\(\\): this function is deprecated; use pseudonymise_with_table\\(\\)",
                 class = "detanon_warning_deprecated")
  set.seed(5)
  expect_identical(old, pseudonymise_with_table(d, "id"))
  expect_error(suppressWarnings(pseudonymise_with_key(d, "nope")), "^pseudonymise_with_key\\(\\): `cols` names")
})

test_that("remove_identifiers() pseudonymises with R's RNG, consistently and irreversibly", {
  d <- data.frame(id = c("b", "a", "c", "a", NA, "b"), v = 1:6, stringsAsFactors = FALSE)
  set.seed(5)
  res <- pseudonymise_with_table(d, "id")
  expect_s3_class(res, "detanon_pseudonyms")
  expect_output(print(res), "Pseudonymised 1 column of 6 records")
  p <- res$data$id
  expect_true(is.na(p[5]))
  expect_equal(p[2], p[4])
  expect_equal(p[1], p[6])
  expect_equal(length(unique(p[!is.na(p)])), 3L)
  expect_true(all(grepl("^P[0-9]$", p[!is.na(p)])))
  expect_false(any(p[!is.na(p)] %in% d$id))
  # the key reverses the pseudonyms; it is not attached to the data
  key <- res$pseudonyms$id
  expect_equal(key$value[match(p, key$pseudonym)], d$id)
  expect_null(attributes(res$data)$key)
  expect_setequal(names(attributes(res$data)), c("names", "row.names", "class", "detanon"))
  expect_false(any(unlist(attr(res$data, "detanon")) %in% d$id))
  # reproducible with the seed (remove_identifiers() makes the same codes), different with another seed
  set.seed(5)
  again <- remove_identifiers(d, "id", method = "pseudonymise")
  expect_identical(again, res$data)
  # the deprecated key = TRUE still returns the old list, with a warning
  set.seed(5)
  expect_warning(old <- remove_identifiers(d, "id", method = "pseudonymise", key = TRUE),
                 class = "detanon_warning_deprecated")
  expect_identical(old, list(data = res$data, key = res$pseudonyms))
  codes <- vapply(1:30, function(s) { set.seed(s); remove_identifiers(d, "id", method = "pseudonymise")$id[2] }, "")
  expect_gt(length(unique(codes)), 1L)
  # the order of the codes does not follow the order of the values
  set.seed(9)
  big <- data.frame(id = sprintf("x%03d", 1:200))
  pb <- remove_identifiers(big, "id", method = "pseudonymise", prefix = "Q")$id
  expect_true(all(grepl("^Q[0-9]{3}$", pb)))
  expect_lt(abs(cor(seq_len(200), as.integer(sub("Q", "", pb)))), 0.3)
  # factors and numbers
  f <- remove_identifiers(data.frame(id = factor(c("u", "v", "u")), n = c(7, 7, 8)), c("id", "n"),
                          method = "pseudonymise")
  expect_equal(f$id[1], f$id[3])
  expect_type(f$n, "character")
})

test_that("remove_identifiers() rejects bad input", {
  d <- id_data()
  expect_error(remove_identifiers(d, "nope"), "`cols` names columns that are not in the data")
  expect_error(remove_identifiers(d, "nhs", method = "hash"), "`method` must be one of")
  expect_error(remove_identifiers(d, "nhs", prefix = 1), "`prefix` must be a single string")
  expect_error(remove_identifiers(d, "nhs", key = "yes"), "`key` must be TRUE or FALSE")
  expect_error(pseudonymise_with_table(d, "nope"), "^pseudonymise_with_table\\(\\): `cols` names columns")
  m <- data.frame(a = 1:2)
  m$l <- list(1, 2)
  expect_error(remove_identifiers(m, "l", method = "pseudonymise"), "cannot be pseudonymised")
})

test_that("pseudonymising a column with no values keeps it missing", {
  d <- data.frame(id = c(NA_character_, NA), v = 1:2)
  expect_identical(remove_identifiers(d, "id", method = "pseudonymise")$id, c(NA_character_, NA))
})

test_that("column names: identifier words, qualified number words, and no false alarms", {
  nm <- function(x) detanon:::name_suggests_identifier(x)
  expect_true(all(vapply(c("PassengerId", "patient_id", "NHSNumber", "nhs_no", "Hospital Number", "surname",
                           "e.mail", "HomeAddress", "ni.number", "mrn", "recordNo"), nm, logical(1))))
  expect_false(any(vapply(c("patient_age", "record_date", "hospital_site", "Age", "Fare", "number_of_visits",
                            "Survived", "provider", "identity_confirmed", "Pclass"), nm, logical(1))))
})

test_that("ISO date strings are not taken for telephone numbers", {
  d <- data.frame(when = format(as.Date("2012-01-01") + 0:19))
  expect_equal(nrow(detect_identifiers(d)), 1L) # unique per row only
  expect_false(detect_identifiers(d)$id_like)
})

test_that("whole-number measurements are not identifiers; codes of one width or dense are", {
  set.seed(3)
  n <- 500
  d <- data.frame(
    income = round(rlnorm(n, 10, 1)),           # skewed, several orders of magnitude
    weight_g = round(rnorm(n, 70000, 9000)),    # peaked, one width
    record = sample(100000:999999, n),          # a block of six-digit numbers
    row = sample.int(n),                        # a shuffled record number
    person = sample(2 * n)[seq_len(n)]          # dense: half of 1..2n
  )
  found <- detect_identifiers(d)$column
  expect_setequal(found, c("record", "row", "person"))
  expect_false(detanon:::code_like_numbers(c(1106874, 90929693, 27338058)))
  expect_true(detanon:::code_like_numbers(c(3, 1, 2)))
})

test_that("no column of the standard SDC test data sets is taken for an identifier", {
  skip_if_not_installed("sdcMicro")
  for (nm in c("testdata", "testdata2", "CASCrefmicrodata", "EIA", "Tarragona")) {
    e <- new.env()
    utils::data(list = nm, package = "sdcMicro", envir = e)
    expect_identical(detect_identifiers(as.data.frame(get(nm, e)))$column, character(), label = nm)
  }
  skip_if_not_installed("synthpop")
  # a questionnaire item with long answers is not free text
  expect_identical(detect_identifiers(synthpop::SD2011)$column, character())
})
