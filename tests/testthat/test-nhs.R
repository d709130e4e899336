health_data <- function() {
  set.seed(3)
  n <- 60
  data.frame(
    nhs_no = sprintf("%010d", sample.int(1e9, n)),
    dob = as.Date("1950-01-01") + sample.int(20000, n),
    sex = rep(c("F", "M"), length.out = n),
    ethnic = rep(c("A", "B", "C"), each = 20),
    postcode = sample(c("LS1 4AP", "LS2 7EW", "M1 1AE"), n, TRUE),
    admitted = as.Date("2012-01-01") + sample.int(365, n),
    employer = sample(c("NHS", "Council"), n, TRUE),
    diagnosis = sample(c("F106", "J45"), n, TRUE),
    stringsAsFactors = FALSE
  )
}

roles <- c(nhs_no = "direct", dob = "dob", sex = "gender", ethnic = "ethnicity", postcode = "postcode",
           admitted = "event_date", employer = "employer")

status_of <- function(res, item) res$items$status[res$items$item == item]

test_that("raw health data fail the weak plan item by item", {
  res <- nhs_check(health_data(), roles, plan = "weak")
  expect_false(res$conforms)
  expect_equal(status_of(res, "Suppression of direct identifiers"), "fail")
  expect_equal(status_of(res, "Reduction in detail: postcode"), "fail")
  expect_equal(status_of(res, "Reduction in detail: date of birth"), "fail")
  expect_equal(status_of(res, "Reduction in detail: event dates"), "fail")
  expect_equal(status_of(res, "Weak k-anonymity: k"), "fail")
  expect_equal(status_of(res, "Weak k-anonymity: variables not controlled"), "pass")
  expect_equal(res$k, 3L)
  expect_setequal(res$strata, c("dob", "sex", "ethnic", "postcode", "admitted", "employer"))
  expect_equal(res$uncontrolled, "diagnosis")
  expect_match(res$items$requirement[res$items$item == "Reduction in detail: postcode"],
               "Post code truncated to either area code or district code.", fixed = TRUE)
  expect_output(print(res), "does NOT conform")
})

test_that("after identifiers are dropped and detail reduced the weak plan passes", {
  d <- health_data()
  d <- remove_identifiers(d, "nhs_no")
  d$dob <- generalise_bands(as.numeric(format(d$dob, "%Y")), width = 20, origin = 1940)
  d$postcode <- generalise_postcode(d$postcode, "area")
  d$admitted <- generalise_date(d$admitted, "year")
  r <- roles[names(roles) != "nhs_no"]
  res <- nhs_check(d, r, plan = "weak", strata = c("dob", "sex", "postcode"))
  expect_equal(status_of(res, "Reduction in detail: postcode"), "pass")
  expect_equal(status_of(res, "Reduction in detail: date of birth"), "pass")
  expect_equal(status_of(res, "Reduction in detail: event dates"), "pass")
  # ethnic category and employer are outside k-anonymity control: not allowed
  expect_equal(status_of(res, "Weak k-anonymity: variables not controlled"), "fail")
  expect_match(res$items$detail[res$items$item == "Weak k-anonymity: variables not controlled"],
               "`ethnic` \\(ethnic category\\), `employer` \\(employer\\)")
  # event dates at year level may stay outside control
  expect_match(res$items$detail[res$items$item == "Weak k-anonymity: variables not controlled"],
               "event dates at month/year level, acceptable: `admitted`")
  res2 <- nhs_check(d, r, plan = "weak", strata = c("dob", "sex", "postcode", "ethnic", "employer"))
  expect_true(kanon_check(d, res2$strata, 3)$conforms == (status_of(res2, "Weak k-anonymity: k") == "pass"))
  d2 <- d[d$ethnic != "C" | d$sex == "F", ]
  d2$dob <- factor("1940-1999")
  d2$postcode <- "L"
  d2$employer <- "x"
  res3 <- nhs_check(d2, r, plan = "weak")
  expect_true(res3$conforms)
  expect_output(print(res3), "=> conforms")
  expect_identical(nhs_gate(d2, r, plan = "weak"), d2)
})

test_that("the strong plan allows one uncontrolled variable, not DOB, ethnicity or full postcode", {
  d <- nhs_example_strong <- data.frame(age = rep(c("0-9", "10-19"), each = 10), sex = rep(c("F", "M"), 10),
                                        diag = rep(c("a", "b"), each = 10), eth = "W", pc = "LS1 4AP")
  res <- nhs_check(d[c("age", "sex", "diag")], c(age = "dob", sex = "gender"), plan = "strong",
                   strata = c("age", "sex"))
  expect_equal(res$k, 5L)
  expect_equal(status_of(res, "Strong k-anonymity: k"), "pass")
  expect_equal(status_of(res, "Strong k-anonymity: all variables but one controlled"), "pass")
  expect_equal(status_of(res, "Strong k-anonymity: the uncontrolled variable"), "pass")
  expect_true(res$conforms)
  two <- nhs_check(d[c("age", "sex", "diag", "eth")], c(age = "dob", sex = "gender", eth = "ethnicity"),
                   plan = "strong", strata = c("age", "sex"))
  expect_equal(status_of(two, "Strong k-anonymity: all variables but one controlled"), "fail")
  expect_equal(status_of(two, "Strong k-anonymity: the uncontrolled variable"), "fail")
  pc <- nhs_check(d[c("age", "sex", "diag", "pc")], c(age = "dob", sex = "gender", pc = "postcode"),
                  plan = "strong", strata = c("age", "sex", "diag"))
  expect_equal(status_of(pc, "Strong k-anonymity: the uncontrolled variable"), "fail")
  d$pc <- "LS1"
  dist <- nhs_check(d[c("age", "sex", "diag", "pc")], c(age = "dob", sex = "gender", pc = "postcode"),
                    plan = "strong", strata = c("age", "sex", "diag"))
  expect_equal(status_of(dist, "Strong k-anonymity: the uncontrolled variable"), "review")
  expect_true(dist$conforms)
  expect_warning(nhs_gate(d[c("age", "sex", "diag", "pc")], c(age = "dob", sex = "gender", pc = "postcode"),
                          plan = "strong", strata = c("age", "sex", "diag")), "review")
  # k = 5 fails where k = 3 passes
  small <- d[c(1:6, 11:20), c("age", "sex")]
  expect_equal(status_of(nhs_check(small, c(age = "dob", sex = "gender"), plan = "weak"), "Weak k-anonymity: k"), "pass")
  expect_equal(status_of(nhs_check(small, c(age = "dob", sex = "gender"), plan = "strong"), "Strong k-anonymity: k"), "fail")
  expect_equal(nhs_check(small, c(age = "dob", sex = "gender"), plan = "weak", k = 8)$k, 8L)
})

test_that("the check screens for undeclared identifiers and free text", {
  d <- titanic_paper()
  d$Age <- generalise_bands(d$Age, width = 10, top = 60)
  res <- nhs_check(d, c(Age = "dob", Sex = "gender"), plan = "weak")
  expect_equal(status_of(res, "Other data items that could uniquely identify (screen)"), "review")
  expect_match(res$items$detail[2], "PassengerId")
  expect_warning(nhs_gate(d, c(Age = "dob", Sex = "gender"), plan = "weak"), "PassengerId")
  d$notes <- paste("a long free text note about passenger number", d$PassengerId)
  expect_equal(status_of(nhs_check(d, c(Age = "dob", Sex = "gender"), plan = "weak"), "Data suppression: free text"), "review")
  expect_equal(status_of(nhs_check(d, c(Age = "dob", Sex = "gender", notes = "free_text"), plan = "weak"),
                         "Data suppression: free text"), "fail")
})

test_that("nhs_gate() stops a release pipeline before anonymise() writes anything", {
  d <- titanic_paper()
  r <- c(PassengerId = "direct", Sex = "gender")
  expect_error(nhs_gate(d, r, plan = "weak") |> anonymise(k = 3, vars = c("Age", "Fare")),
               "do not conform to NHS ISB 1523 weak k-anonymity \\(plan 3\\)")
  ok <- remove_identifiers(d, "PassengerId")
  out <- nhs_gate(ok, c(Sex = "gender"), plan = "weak", strata = c("Sex", "Pclass", "Family")) |>
    anonymise(k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  expect_equal(nrow(out), nrow(d))
})

test_that("the old argument names and order still work, with a deprecation warning", {
  d <- health_data()
  roles <- c(nhs_no = "direct", dob = "dob", sex = "gender")
  new <- nhs_check(d, roles, strata = c("dob", "sex"), k = 4, plan = "weak")
  expect_warning(old <- nhs_check(d, roles, "weak", c("dob", "sex"), 4), class = "detanon_warning_deprecated")
  expect_identical(old, new)
  expect_warning(old2 <- nhs_check(d, roles, plan = "weak", controlled = c("dob", "sex"), k = 4),
                 "`controlled` is deprecated; use `strata`", class = "detanon_warning_deprecated")
  expect_identical(old2, new)
  expect_error(suppressWarnings(nhs_check(d, roles, strata = "dob", controlled = "sex")), "give `strata` only")
})

test_that("nhs_check() rejects bad input", {
  d <- health_data()
  expect_error(nhs_check(d, c("direct")), "`roles` must be a named character vector")
  expect_error(nhs_check(d, c(nhs_no = "identifier")), "unknown roles: \"identifier\"")
  expect_error(nhs_check(d, c(nhsno = "direct")), "`roles` names columns that are not in the data: `nhsno`")
  expect_error(nhs_check(d, roles, plan = "medium"), "`plan` must be one of")
  expect_error(nhs_check(d, roles, plan = "strong", k = 3), "`k` must be a single whole number >= 5")
  expect_error(nhs_check(d, roles, strata = "nhs_no"), "`strata` includes direct identifiers")
  expect_error(nhs_check(d, roles, strata = "zip"), "`strata` names columns")
  expect_equal(status_of(nhs_check(d["diagnosis"], list(diagnosis = "other")), "Weak k-anonymity: k"), "fail")
  empty <- nhs_check(d[0, ], roles)
  expect_equal(status_of(empty, "Weak k-anonymity: k"), "fail")
  expect_match(empty$items$detail[empty$items$item == "Weak k-anonymity: k"], "no records")
})
