test_that("hierarchy() validates coarsening and adds the top level", {
  h <- hierarchy(data.frame(value = c("a", "b", "c"), g = c("ab", "ab", "c")))
  expect_s3_class(h, "detanon_hierarchy")
  expect_identical(names(h$table), c("value", "g", "*"))
  expect_identical(unname(h$n_groups), c(3L, 2L, 1L))
  expect_identical(names(hierarchy(data.frame(v = c("a", "b"), all = "x"))$table), c("v", "all"))
  expect_identical(ncol(hierarchy(data.frame(v = c("a", "b")), top = FALSE)$table), 1L)
  expect_error(hierarchy(data.frame(v = c("a", "b", "c"), g = c("x", "y", "x"), h = c("p", "q", "q"))),
               "level 2 \\(`h`\\) is not a coarsening of level 1 \\(`g`\\): `x`")
  expect_error(hierarchy(data.frame(v = c("a", "a"), g = c("x", "y"))), "more than once")
  expect_error(hierarchy(data.frame(v = c("a", NA))), "missing labels")
  expect_error(hierarchy(list(1)), "must be a data frame or matrix")
  expect_error(hierarchy(data.frame(v = "a"), top = NA), "`top` must be TRUE or FALSE")
  expect_output(print(h), "Generalisation hierarchy: 3 values, 3 levels")
})

test_that("hierarchy_bands() nests bands of doubling width", {
  x <- c(1950, 1961, 1967, 1982, 1999)
  h <- hierarchy_bands(x, width = 2, levels = 3)
  expect_identical(names(h$table), c("value", "width 2", "width 4", "width 8", "*"))
  expect_identical(h$table[["width 2"]], c("1950-1951", "1960-1961", "1966-1967", "1982-1983", "1998-1999"))
  expect_identical(h$table[["width 8"]], c("1944-1951", "1960-1967", "1960-1967", "1976-1983", "1992-1999"))
  for (l in 2:3) {
    lo <- as.numeric(sub("-.*", "", h$table[[l]]))
    lo_next <- as.numeric(sub("-.*", "", h$table[[l + 1L]]))
    expect_true(all(lo >= lo_next))
  }
  expect_error(hierarchy_bands("a", width = 2), "`x` must be numeric")
  expect_error(hierarchy_bands(x, width = 0), "`width` must be")
  expect_error(hierarchy_bands(x, width = 2, origin = 1960), "below `origin`")
  expect_error(hierarchy_bands(c(NA_real_, NA), width = 2), "no non-missing values")
})

test_that("date and postcode hierarchies", {
  h <- hierarchy_date(as.Date(c("2013-11-02", "2012-03-14", "2012-03-01")))
  expect_identical(h$table$month, c("2012-03", "2012-03", "2013-11"))
  expect_identical(h$table$year, c("2012", "2012", "2013"))
  p <- hierarchy_postcode(c("LS1 4AP", "LS2 7EW", "M1 1AE"))
  expect_identical(p$table$district, c("LS1", "LS2", "M1"))
  expect_identical(p$table$area, c("LS", "LS", "M"))
  expect_identical(names(p$table)[4], "*")
})
