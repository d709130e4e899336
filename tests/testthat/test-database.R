# anonymise_db(): the table masked in the database is the one anonymise() gives on the table
# read into memory, bit for bit; failures leave the database as it was.

db_data <- function(n = 600, seed = 1) {
  set.seed(seed)
  data.frame(id = sample.int(n),
             grp = sample(c("a", "b", NA), n, TRUE, prob = c(0.5, 0.3, 0.2)),
             cls = sample(c(1L, 2L, NA), n, TRUE),
             x = stats::rnorm(n),
             y = round(stats::rexp(n) * 100, 2),
             z = sample(18:90, n, TRUE),
             note = sample(letters, n, TRUE),
             stringsAsFactors = FALSE)
}

# anonymise() on the table read into memory, without its release attribute, sorted by key
db_expected <- function(con, table, order_by, ...) {
  d <- DBI::dbGetQuery(con, paste("SELECT * FROM", DBI::dbQuoteIdentifier(con, table), "ORDER BY",
                                  DBI::dbQuoteIdentifier(con, order_by)))
  m <- anonymise(d, ..., check_identifiers = FALSE)
  attr(m, "detanon") <- NULL
  m
}

db_result <- function(con, table, key) {
  DBI::dbGetQuery(con, paste("SELECT * FROM", DBI::dbQuoteIdentifier(con, table), "ORDER BY",
                             DBI::dbQuoteIdentifier(con, key)))
}

# Replaces the internal function `name` of detanon by `value` until the calling test ends
# (failures are injected from the tests, through the functions the package really calls).
local_detanon_binding <- function(name, value, env = parent.frame()) {
  ns <- asNamespace("detanon")
  old <- get(name, envir = ns)
  set <- function(v) {
    unlockBinding(name, ns)
    assign(name, v, envir = ns)
    lockBinding(name, ns)
  }
  set(value)
  withr::defer(set(old), envir = env)
  old
}

# db_append() failing (with a backend's plain error) on its `at`-th call
local_append_failure <- function(at, env = parent.frame()) {
  calls <- 0L
  orig <- NULL
  orig <- local_detanon_binding("db_append", function(con, name, d) {
    calls <<- calls + 1L
    if (calls >= at) stop("disk full (injected by the test)")
    orig(con, name, d)
  }, env = env)
}

identical_level <- function(v, level) if (is.na(level)) is.na(v) else !is.na(v) & v == level

db_state <- function(con) {
  tabs <- sort(DBI::dbListTables(con))
  list(tables = tabs, rows = lapply(tabs, function(t) db_result(con, t, DBI::dbListFields(con, t)[1L])))
}

db_check_identical <- function(con, read, format = "natural", chunk = 97, group_size = 150, k = 3) {
  vars <- c("x", "y", "z")
  strata <- c("grp", "cls")
  out <- paste0("masked_", read, "_", format)
  meta <- anonymise_db(con, "people", vars = vars, strata = strata, k = k, output = out, format = format,
                       read = read, chunk = chunk, group_size = group_size, overwrite = TRUE,
                       check_identifiers = FALSE)
  expected <- db_expected(con, "people", "id", vars = vars, strata = strata, k = k, format = format)
  got <- db_result(con, out, "id")
  expect_identical(got, expected)
  expect_identical(meta$output, out)
  info <- release_info(anonymise(DBI::dbGetQuery(con, "SELECT * FROM people"), vars = vars, strata = strata,
                                 k = k, format = format, check_identifiers = FALSE))
  expect_identical(meta$counts, info$counts)
  expect_identical(meta$stats, info$stats)
  # no temporary table is left behind
  expect_false(any(grepl("^detanon_", DBI::dbListTables(con))))
}

test_that("anonymise_db() on SQLite is anonymise() on the table in memory, for both ways of reading", {
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data())
  for (read in c("order", "index")) {
    for (format in c("natural", "none")) db_check_identical(con, read, format)
  }
  # the index made for read = "index" is dropped again
  expect_identical(nrow(DBI::dbGetQuery(con, "SELECT * FROM sqlite_master WHERE type = 'index'")), 0L)
  # a chunk or group smaller than a stratum, and larger than the table; progress reported
  if (requireNamespace("progressr", quietly = TRUE)) {
    progressr::with_progress(db_check_identical(con, "order", chunk = 5, group_size = 1),
                             handlers = progressr::handler_void())
  } else {
    db_check_identical(con, "order", chunk = 5, group_size = 1)
  }
  db_check_identical(con, "index", chunk = 1e6, group_size = 1e6)
})

test_that("anonymise_db() without strata masks the whole table as one stratum", {
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data(200, seed = 4))
  for (read in c("order", "index")) {
    anonymise_db(con, "people", vars = c("x", "z"), strata = character(), k = 4, output = "m", read = read,
                 chunk = 30, group_size = 50, overwrite = TRUE, check_identifiers = FALSE)
    expect_identical(db_result(con, "m", "id"),
                     db_expected(con, "people", "id", vars = c("x", "z"), strata = character(), k = 4))
  }
})

test_that("anonymise_db() follows the na and small_strata policies as anonymise() does", {
  con <- local_sqlite_connection()
  d <- db_data(400, seed = 6)
  d$x[c(3, 50, 77)] <- NA
  d$tiny <- ifelse(seq_len(nrow(d)) <= 2, "rare", "common")
  DBI::dbWriteTable(con, "people", d)
  for (read in c("order", "index")) {
    for (na in c("complete", "median", "mean")) {
      args <- list(vars = c("x", "y"), strata = c("grp", "tiny"), k = 3, na = na, small_strata = "suppress")
      expected <- suppressMessages(do.call(db_expected, c(list(con, "people", "id"), args)))
      suppressMessages(do.call(anonymise_db, c(list(con, "people", output = "m", read = read, chunk = 64,
                                                    group_size = 100, overwrite = TRUE,
                                                    check_identifiers = FALSE), args)))
      got <- db_result(con, "m", "id")
      expect_identical(got, `rownames<-`(expected, NULL))
    }
  }
})

test_that("anonymise_db() warns when a released column looks like an identifier", {
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data(300, seed = 5))
  expect_warning(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m"),
                 class = "detanon_warning_identifier")
  expect_true(DBI::dbExistsTable(con, "m"))
})

test_that("anonymise_db() quotes identifiers and keeps an existing index", {
  con <- local_sqlite_connection()
  d <- db_data(300, seed = 2)
  names(d) <- c("the id", "Group \"g\"", "class", "x;drop", "y", "z", "note")
  DBI::dbWriteTable(con, "my table", d)
  DBI::dbExecute(con, 'CREATE INDEX own_index ON "my table" ("class", "Group ""g""")')
  vars <- c("x;drop", "y")
  strata <- c("Group \"g\"", "class")
  for (read in c("order", "index")) {
    anonymise_db(con, "my table", vars = vars, strata = strata, k = 4, output = "Masked Table", read = read,
                 chunk = 50, overwrite = TRUE, check_identifiers = FALSE)
    expect_identical(db_result(con, "Masked Table", "the id"),
                     db_expected(con, "my table", "the id", vars = vars, strata = strata, k = 4))
  }
  idx <- DBI::dbGetQuery(con, "SELECT name FROM sqlite_master WHERE type = 'index'")$name
  expect_identical(idx, "own_index")
})

test_that("anonymise_db() leaves no output table and nothing else when it fails", {
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data())
  DBI::dbWriteTable(con, "masked", data.frame(old = 1:3))
  before <- db_state(con)
  for (read in c("order", "index")) {
    # the database refuses the last rows of the release: a classed error, nothing written
    local({
      local_append_failure(at = 2L)
      expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "new_masked",
                                read = read, group_size = 200, check_identifiers = FALSE),
                   "disk full", class = "detanon_error_database")
      expect_identical(db_state(con), before)
      # with overwrite = TRUE, the old output table survives a failure unchanged
      expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "masked",
                                read = read, group_size = 200, overwrite = TRUE, check_identifiers = FALSE),
                   "disk full", class = "detanon_error_database")
      expect_identical(db_state(con), before)
    })
    # a group that is not whole strata (rows lost on the way): the masking refuses it
    local({
      orig <- NULL
      orig <- local_detanon_binding("db_group_reader", function(...) {
        read_group <- orig(...)
        function() {
          g <- read_group()
          if (is.null(g)) g else g[-1L, , drop = FALSE]
        }
      })
      expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "new_masked",
                                read = read, check_identifiers = FALSE),
                   "must hold whole strata", class = "detanon_error_data")
      expect_identical(db_state(con), before)
    })
  }
  # a stratum smaller than k: the classed error of anonymise(), nothing written
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = c("grp", "cls", "note"), k = 30,
                            output = "new_masked", check_identifiers = FALSE), class = "detanon_error")
  expect_identical(db_state(con), before)
  # no test-only code in the package: failures are injected from here
  fns <- Filter(is.function, mget(ls(asNamespace("detanon"), all.names = TRUE), envir = asNamespace("detanon")))
  expect_false(any(vapply(fns, function(f) any(grepl("db_fault|injected", deparse(f))), logical(1))))
})

test_that("anonymise_db() gives the same table under a multisession future plan, and a failed worker writes nothing", {
  skip_on_cran()
  skip_if_not_installed("future")
  skip_if_not_installed("future.apply")
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data())
  old <- future::plan(future::multisession, workers = 2)
  on.exit(future::plan(old), add = TRUE)
  db_check_identical(con, "order", group_size = 100)
  before <- db_state(con)
  # the worker is handed a group that lacks a record of its stratum: it fails there
  orig <- NULL
  orig <- local_detanon_binding("db_group_reader", function(...) {
    read_group <- orig(...)
    function() {
      g <- read_group()
      if (is.null(g)) g else g[-1L, , drop = FALSE]
    }
  })
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "new_masked",
                            group_size = 50, check_identifiers = FALSE),
               class = "detanon_error_worker")
  expect_identical(db_state(con), before)
})

test_that("anonymise_db() on PostgreSQL is anonymise() on the table in memory (private server)", {
  skip_on_cran()
  con <- local_pg_connection()
  d <- db_data(500, seed = 3)
  # values whose 15-digit text differs from the double
  d$x <- d$x + 1 / 3
  DBI::dbWriteTable(con, "people", d, row.names = FALSE)
  for (read in c("order", "index")) db_check_identical(con, read)
  db_check_identical(con, "order", format = "none")
  idx <- DBI::dbGetQuery(con, "SELECT indexname FROM pg_indexes WHERE tablename = 'people'")
  expect_identical(nrow(idx), 0L)
  before <- db_state(con)
  local_append_failure(at = 1L)
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "new_masked",
                            read = "index", check_identifiers = FALSE), class = "detanon_error_database")
  expect_identical(db_state(con), before)
})

test_that("the sorted stream cuts groups of whole strata of at most group_size rows, or one larger stratum", {
  con <- local_sqlite_connection()
  sizes <- c(30, 70, 5, 120, 1, 99, 100, 40, 250, 2)
  d <- data.frame(s = rep(sprintf("s%02d", seq_along(sizes)), sizes), v = seq_len(sum(sizes)))
  d$s[d$s == "s05"] <- NA
  DBI::dbWriteTable(con, "t", d[sample(nrow(d)), ])
  for (chunk in c(7, 64, 1000)) {
    made <- new.env()
    src <- detanon:::db_relation(con, "t", "table")
    read <- detanon:::db_group_reader(con, src, c("s", "v"), "s", NULL, "order", chunk, 100, made)
    groups <- list()
    while (!is.null(g <- read())) groups[[length(groups) + 1L]] <- g
    all <- do.call(rbind, groups)
    expect_setequal(all$v, d$v)
    expect_identical(nrow(all), nrow(d))
    for (g in groups) {
      expect_true(nrow(g) <= 100 || length(unique(g$s)) == 1L)
      # whole strata: each stratum's rows all in this group
      for (s in unique(g$s)) expect_identical(sum(identical_level(g$s, s)), sum(identical_level(d$s, s)))
    }
  }
})
