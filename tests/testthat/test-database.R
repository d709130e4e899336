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

# anonymise() (or the verb of `method`) on the table read into memory, without its release
# attribute, sorted by key
db_expected <- function(con, table, order_by, ..., method = "anonymise") {
  d <- DBI::dbGetQuery(con, paste("SELECT * FROM", DBI::dbQuoteIdentifier(con, table), "ORDER BY",
                                  DBI::dbQuoteIdentifier(con, order_by)))
  m <- match.fun(masking_methods()[[method]]$verb)(d, ..., check_identifiers = FALSE)
  attr(m, "detanon") <- NULL
  m
}

db_result <- function(con, table, key) {
  DBI::dbGetQuery(con, paste("SELECT * FROM", DBI::dbQuoteIdentifier(con, table), "ORDER BY",
                             DBI::dbQuoteIdentifier(con, key)))
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

# (`...`: the keyed method's key, size and noise)
db_check_identical <- function(con, read, format = "natural", chunk = 97, group_size = 150, k = 3,
                               method = "anonymise", ...) {
  vars <- c("x", "y", "z")
  strata <- c("grp", "cls")
  out <- paste0("masked_", read, "_", format)
  meta <- anonymise_db(con, "people", vars = vars, strata = strata, k = k, output = out, method = method,
                       format = format, read = read, chunk = chunk, group_size = group_size, overwrite = TRUE,
                       check_identifiers = FALSE, ...)
  expected <- db_expected(con, "people", "id", vars = vars, strata = strata, k = k, format = format,
                          method = method, ...)
  got <- db_result(con, out, "id")
  expect_identical(got, expected)
  expect_identical(meta$output, out)
  expect_identical(meta$method, method)
  verb <- match.fun(masking_methods()[[method]]$verb)
  info <- release_info(verb(DBI::dbGetQuery(con, "SELECT * FROM people"), vars = vars, strata = strata,
                            k = k, format = format, check_identifiers = FALSE, ...))
  expect_identical(meta$settings, info$settings)
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

test_that("anonymise_db(method = \"mdav\") on SQLite is anonymise_mdav() on the table in memory", {
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data())
  for (read in c("order", "index")) {
    for (format in c("natural", "none")) db_check_identical(con, read, format, method = "mdav")
  }
  # strata split over groups and chunks, one stratum per group; another k
  db_check_identical(con, "order", chunk = 5, group_size = 1, k = 5, method = "mdav")
  # a tie-heavy table (many duplicate records): MDAV's groups among equal distances
  d <- db_data(400, seed = 9)
  d$x <- round(d$x)
  d$y <- round(d$y / 50) * 50
  DBI::dbWriteTable(con, "people", d, overwrite = TRUE)
  db_check_identical(con, "order", group_size = 60, method = "mdav")
})

test_that("anonymise_db(method = \"keyed\") on SQLite is anonymise_keyed() on the table in memory", {
  con <- local_sqlite_connection()
  # a stratum of more than 1000 records (split into blocks) and small ones
  d <- db_data(2400, seed = 5)
  d$grp[d$grp %in% "b"] <- sample(c("b", "c", "d"), sum(d$grp %in% "b"), TRUE)
  DBI::dbWriteTable(con, "people", d)
  key <- "secret-of-the-database-tests"
  for (read in c("order", "index")) {
    for (format in c("natural", "none")) db_check_identical(con, read, format, method = "keyed", key = key)
  }
  # strata split over chunks, one stratum per group; other k, size, no noise
  db_check_identical(con, "order", chunk = 50, group_size = 1, k = 5, method = "keyed", key = key, size = 7.5,
                     noise = FALSE)
  db_check_identical(con, "index", group_size = 1e6, method = "keyed", key = key, size = 30)
  # the index made for read = "index" (read twice: the plan pass and the masking pass) is dropped
  idx <- DBI::dbGetQuery(con, "SELECT name FROM sqlite_master WHERE type = 'index'")
  expect_identical(nrow(idx), 0L)
})

test_that("anonymise_db(method = \"adaptive\") on SQLite is anonymise_adaptive() on the table in memory", {
  con <- local_sqlite_connection()
  # (anonymise_adaptive() takes complete records: x, y and z have none missing)
  d <- db_data(700, seed = 13)
  d[1:30, c("x", "y", "z")] <- d[31:60, c("x", "y", "z")] # duplicated records
  DBI::dbWriteTable(con, "people", d)
  for (read in c("order", "index")) {
    for (format in c("natural", "none")) {
      db_check_identical(con, read, format, method = "adaptive", m = 2, rate = 0.1, k_max = 20)
    }
  }
  # strata split over chunks, one stratum per group, stages; the defaults; m = 0
  db_check_identical(con, "order", chunk = 40, group_size = 1, k = 2, method = "adaptive", m = 3,
                     rate = c(0.4, 0.1), k_max = c(10, 30))
  db_check_identical(con, "index", chunk = 1e6, group_size = 1e6, method = "adaptive", nthreads = 2L)
  db_check_identical(con, "order", group_size = 200, k = 4, method = "adaptive", m = 0)
  # the index made for read = "index" (read once per round) is dropped
  expect_identical(nrow(DBI::dbGetQuery(con, "SELECT * FROM sqlite_master WHERE type = 'index'")), 0L)
  # the settings that cannot run partitioned: classed errors, nothing written
  before <- db_state(con)
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m", method = "adaptive",
                            w1 = 0.01), class = "detanon_error_argument")
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m", method = "adaptive",
                            na = "complete"), class = "detanon_error_argument")
  expect_identical(db_state(con), before)
})

# A table of k per stratum (method "stratum") of the strata grp x cls of `d`, k from 2 to 25.
db_k_table <- function(d) {
  tab <- unique(d[c("grp", "cls")])
  rownames(tab) <- NULL
  tab$k <- rep_len(c(3L, 25L, 2L, 8L, 5L), nrow(tab))
  tab
}

test_that("anonymise_db(method = \"stratum\") on SQLite is anonymise_adaptive() with the table of k, m = 0, in memory", {
  con <- local_sqlite_connection()
  d <- db_data(700, seed = 17)
  d[1:30, c("x", "y", "z")] <- d[31:60, c("x", "y", "z")] # duplicated records
  # a tiny stratum whose k is its size
  d$grp[61:63] <- "tiny"
  d$cls[61:63] <- 1L
  DBI::dbWriteTable(con, "people", d)
  tab <- db_k_table(d)
  tab$k[tab$grp %in% "tiny"] <- 3L
  for (read in c("order", "index")) {
    for (format in c("natural", "none")) {
      db_check_identical(con, read, format, k = tab, method = "stratum", m = 0, k_max = 25)
    }
  }
  # strata split over chunks, one stratum per group, two threads; the table in another order,
  # with a stratum absent from the table in the database, stages of `rate` (nothing grows)
  other <- rbind(tab[rev(seq_len(nrow(tab))), ], data.frame(grp = "absent", cls = 2L, k = 4L))
  db_check_identical(con, "order", chunk = 40, group_size = 1, k = other, method = "stratum", m = 0, k_max = 30,
                     rate = c(0.4, 0.1), nthreads = 2L)
  db_check_identical(con, "index", chunk = 1e6, group_size = 1e6, k = 3, method = "stratum", m = 0)
  meta <- anonymise_db(con, "people", vars = c("x", "y", "z"), strata = c("grp", "cls"), k = tab, k_max = 25,
                       output = "masked", method = "stratum", check_identifiers = FALSE)
  expect_output(print(meta), "700 records written")
  expect_output(print(meta), "k = 2 to 25 per stratum")
  expect_identical(meta$counts$n_grown, 0L)
  # a bad table: the verb's classed error, nothing written
  before <- db_state(con)
  for (bad in list(tab[-1, ], within(tab, k[1] <- NA), within(tab, k[1] <- 2.5), within(tab, k[1] <- 1e4),
                   rbind(tab, tab[1, ]))) {
    ref <- tryCatch(anonymise_adaptive(d, vars = c("x", "y", "z"), strata = c("grp", "cls"), k = bad, m = 0,
                                       k_max = 25, check_identifiers = FALSE), error = function(e) e)
    out <- tryCatch(anonymise_db(con, "people", vars = c("x", "y", "z"), strata = c("grp", "cls"), k = bad,
                                 k_max = 25, output = "m2", method = "stratum", check_identifiers = FALSE),
                    error = function(e) e)
    expect_s3_class(ref, "detanon_error")
    expect_identical(class(out), class(ref))
  }
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m2", method = "stratum",
                            m = 1), class = "detanon_error_argument")
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m2", method = "stratum",
                            na = "complete"), class = "detanon_error_argument")
  expect_identical(db_state(con), before)
})

test_that("anonymise_db() refuses the methods that do not run per stratum, and changes nothing", {
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data(100))
  before <- db_state(con)
  for (method in c("stir", "nonsense")) {
    expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m", method = method),
                 class = "detanon_error_argument")
  }
  # the keyed method without its key
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m", method = "keyed"),
               class = "detanon_error_argument")
  expect_snapshot(error = TRUE, {
    anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m", method = "stir")
  })
  expect_identical(db_state(con), before)
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

test_that("anonymise_db() returns a classed summary of what it wrote", {
  con <- local_sqlite_connection()
  d <- db_data(300, seed = 8)
  d$x[c(4, 90)] <- NA
  d$tiny <- ifelse(seq_len(nrow(d)) <= 2, "rare", "common")
  DBI::dbWriteTable(con, "people", d)
  res <- suppressMessages(anonymise_db(con, "people", vars = c("x", "y"), strata = c("grp", "tiny"), k = 3,
                                       output = "m", na = "complete", small_strata = "suppress",
                                       check_identifiers = FALSE))
  expect_s3_class(res, "detanon_db_release")
  expect_identical(res$output, "m")
  expect_identical(res$n_written, nrow(DBI::dbGetQuery(con, "SELECT id FROM m")))
  expect_identical(res$n_written, nrow(d) - res$counts$n_suppressed - res$counts$n_dropped)
  expect_gt(res$counts$n_suppressed, 0L)
  expect_identical(res$counts$n_dropped, 2L)
  expect_snapshot(print(res))
  # without strata
  res <- anonymise_db(con, "people", vars = "z", strata = character(), k = 4, output = "m1",
                      check_identifiers = FALSE)
  expect_identical(res$n_written, nrow(d))
  expect_output(print(res), "strata: none; vars: z")
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
  # an interrupt (Ctrl-C) while the release is written: rolled back as well
  local({
    orig <- NULL
    orig <- local_detanon_binding("db_append", function(con, name, d) {
      orig(con, name, d)
      # (as Ctrl-C signals it: a condition of class "interrupt", caught by the tryCatch() below)
      signalCondition(structure(list(message = "", call = NULL), class = c("interrupt", "condition")))
    })
    got <- tryCatch(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "masked",
                                 overwrite = TRUE, check_identifiers = FALSE),
                    interrupt = function(e) "interrupted")
    expect_identical(got, "interrupted")
    expect_identical(db_state(con), before)
  })
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
  db_check_identical(con, "order", group_size = 100, k = db_k_table(db_data()), method = "stratum", m = 0)
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
  for (read in c("order", "index")) db_check_identical(con, read, method = "mdav")
  for (read in c("order", "index")) db_check_identical(con, read, method = "keyed", key = "secret-of-the-pg-tests-0")
  for (read in c("order", "index")) db_check_identical(con, read, method = "adaptive", m = 2, rate = 0.1)
  for (read in c("order", "index")) db_check_identical(con, read, k = db_k_table(d), method = "stratum", m = 0, k_max = 25)
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

# ---- issue 34: hostile input --------------------------------------------------------------

test_that("anonymise_db() never overwrites the input: names resolved as SQLite resolves them", {
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data(200, seed = 7))
  DBI::dbWriteTable(con, "my Table", db_data(200, seed = 8))
  before <- db_state(con)
  # the reported input: SQLite compares names regardless of case
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "PEOPLE", overwrite = TRUE,
                            check_identifiers = FALSE),
               "`output` must differ from `table`.*regardless of case", class = "detanon_error_argument")
  expect_error(anonymise_db(con, "My TABLE", vars = c("x", "y"), strata = "grp", output = "my table",
                            overwrite = TRUE, check_identifiers = FALSE), class = "detanon_error_argument")
  expect_identical(db_state(con), before)
  # the input named in another case is read (and an output named in another case of an
  # existing table is that table)
  DBI::dbWriteTable(con, "masked", data.frame(old = 1:3))
  expect_error(anonymise_db(con, "PEOPLE", vars = c("x", "y"), strata = "grp", output = "MASKED",
                            check_identifiers = FALSE), "exists.*overwrite = TRUE")
  anonymise_db(con, "PEOPLE", vars = c("x", "y"), strata = "grp", output = "MASKED", overwrite = TRUE,
               check_identifiers = FALSE)
  expect_identical(db_result(con, "masked", "id"),
                   db_expected(con, "people", "id", vars = c("x", "y"), strata = "grp", k = 3))
  # SQLite folds ASCII letters only: "tablé" and "TABLÉ" are two tables
  DBI::dbWriteTable(con, "tabl\u00e9", db_data(200, seed = 9))
  anonymise_db(con, "tabl\u00e9", vars = c("x", "y"), strata = "grp", output = "TABL\u00c9",
               check_identifiers = FALSE)
  expect_identical(db_result(con, "tabl\u00e9", "id"), db_data(200, seed = 9)[order(db_data(200, seed = 9)$id), ],
                   ignore_attr = TRUE)
  expect_identical(nrow(db_result(con, "TABL\u00c9", "id")), 200L)
})

test_that("anonymise_db() refuses an output that is a view, and changes nothing", {
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data(200, seed = 7))
  DBI::dbExecute(con, "CREATE VIEW adults AS SELECT * FROM people WHERE z >= 18")
  before <- db_state(con)
  for (overwrite in c(FALSE, TRUE)) {
    expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "adults",
                              overwrite = overwrite, check_identifiers = FALSE),
                 "`output` \"adults\" is a view in the database, not a table", class = "detanon_error_argument")
    expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "ADULTS",
                              overwrite = overwrite, check_identifiers = FALSE), "is a view")
  }
  expect_identical(db_state(con), before)
  views <- DBI::dbGetQuery(con, "SELECT name FROM sqlite_master WHERE type = 'view'")$name
  expect_identical(views, "adults")
  # a view is a valid input (read without an index)
  for (read in c("order", "index")) {
    anonymise_db(con, "adults", vars = c("x", "y"), strata = "grp", output = "m", read = read, overwrite = TRUE,
                 check_identifiers = FALSE)
    expect_identical(db_result(con, "m", "id"), db_expected(con, "adults", "id", vars = c("x", "y"), strata = "grp"))
  }
})

test_that("anonymise_db() inside the caller's transaction (SQLite) neither commits nor breaks it", {
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data(300, seed = 11))
  before <- db_state(con)
  # the reported input: an open transaction and overwrite = TRUE (was an unclassed error)
  DBI::dbWriteTable(con, "m", data.frame(old = 1:2))
  before <- db_state(con)
  DBI::dbBegin(con)
  DBI::dbExecute(con, "INSERT INTO people (id, grp, cls, x, y, z, note) VALUES (10001, 'a', 1, 0.5, 1, 40, 'q')")
  anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m", overwrite = TRUE,
               check_identifiers = FALSE)
  # inside the transaction the release holds the pending row ...
  expect_identical(nrow(DBI::dbGetQuery(con, "SELECT * FROM m")), 301L)
  DBI::dbRollback(con)
  # ... and the caller's rollback undoes it all
  expect_identical(db_state(con), before)
  # a failure inside the caller's transaction undoes this call's work only
  DBI::dbBegin(con)
  DBI::dbExecute(con, "INSERT INTO people (id, grp, cls, x, y, z, note) VALUES (10002, 'b', 2, 0.5, 1, 40, 'q')")
  local({
    local_append_failure(at = 1L)
    expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m2",
                              check_identifiers = FALSE), class = "detanon_error_database")
  })
  expect_false(DBI::dbExistsTable(con, "m2"))
  DBI::dbCommit(con)
  expect_identical(nrow(DBI::dbGetQuery(con, "SELECT * FROM people WHERE id = 10002")), 1L)
  # the variant: DBI::dbWithTransaction()
  DBI::dbWithTransaction(con, {
    anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m3", check_identifiers = FALSE)
  })
  expect_identical(db_result(con, "m3", "id"), db_expected(con, "people", "id", vars = c("x", "y"), strata = "grp"))
})

test_that("anonymise_db() leaves the caller's random stream as it was", {
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data(200, seed = 3))
  set.seed(42)
  seed <- .Random.seed
  for (read in c("order", "index")) {
    anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m", read = read, overwrite = TRUE,
                 check_identifiers = FALSE)
  }
  expect_identical(.Random.seed, seed)
  # also when it fails
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "note", k = 50, output = "m2",
                            check_identifiers = FALSE), class = "detanon_error_small_strata")
  expect_identical(.Random.seed, seed)
  # a session that has drawn nothing yet still has no random stream afterwards
  rm(".Random.seed", envir = globalenv())
  anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m", overwrite = TRUE,
               check_identifiers = FALSE)
  expect_false(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
})

test_that("anonymise_db() types SQLite columns by the whole table, and refuses numbers mixed with text", {
  con <- local_sqlite_connection()
  # the reported input: a column of whole numbers and text (SQLite keeps a type per value)
  d <- db_data(200, seed = 5)
  DBI::dbWriteTable(con, "people", d)
  DBI::dbExecute(con, "UPDATE people SET cls = 'x' WHERE id = 150")
  before <- suppressWarnings(db_state(con))
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m",
                            check_identifiers = FALSE),
               "column `cls` holds numbers and text", class = "detanon_error_column")
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "cls", output = "m", read = "index",
                            check_identifiers = FALSE), class = "detanon_error_column")
  expect_identical(suppressWarnings(db_state(con)), before)
  # the variant: whole numbers and fractions in a column; the rows read first hold whole
  # numbers only, so chunk by chunk they read as integers: released as anonymise() gives
  DBI::dbExecute(con, "UPDATE people SET cls = 1 WHERE id = 150")
  DBI::dbExecute(con, "CREATE TABLE mixed AS SELECT * FROM people ORDER BY id")
  DBI::dbExecute(con, "UPDATE mixed SET z = z + 0.5 WHERE id > 150")
  DBI::dbExecute(con, "UPDATE mixed SET cls = NULL WHERE id < 20")
  for (read in c("order", "index")) {
    anonymise_db(con, "mixed", vars = c("x", "y"), strata = "grp", output = "m", read = read, chunk = 10,
                 overwrite = TRUE, check_identifiers = FALSE)
    got <- db_result(con, "m", "id")
    expect_identical(got, db_expected(con, "mixed", "id", vars = c("x", "y"), strata = "grp"))
    expect_type(got$z, "double")
    # z masked too: a double column in anonymise() as in the release
    anonymise_db(con, "mixed", vars = c("x", "z"), strata = "grp", output = "m", read = read, chunk = 10,
                 overwrite = TRUE, check_identifiers = FALSE)
    expect_identical(db_result(con, "m", "id"), db_expected(con, "mixed", "id", vars = c("x", "z"), strata = "grp"))
  }
})

test_that("anonymise_db() refuses values that changed between its passes", {
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data(300, seed = 12))
  DBI::dbWriteTable(con, "m", data.frame(old = 1:2))
  for (change in c("UPDATE people SET x = x + 1 WHERE id = 7",
                   "UPDATE people SET y = -y WHERE id IN (3, 4, 5)")) {
    before <- db_state(con)
    local({
      orig <- NULL
      # the change, through the call's own connection, right after the statistics pass
      orig <- local_detanon_binding("anonymise_stats", function(...) {
        st <- orig(...)
        DBI::dbExecute(con, change)
        st
      })
      expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m", overwrite = TRUE,
                                check_identifiers = FALSE),
                   "changed while it was read", class = "detanon_error_data")
    })
    # the change was this call's, rolled back with it
    expect_identical(db_state(con), before)
  }
})

test_that("anonymise_db() on PostgreSQL: names cut at 63 bytes and views never take the input's place", {
  skip_on_cran()
  con <- local_pg_connection()
  long <- strrep("p", 63L)
  DBI::dbWriteTable(con, long, db_data(200, seed = 13), row.names = FALSE)
  DBI::dbWriteTable(con, "people", db_data(200, seed = 14), row.names = FALSE)
  DBI::dbExecute(con, "CREATE VIEW adults AS SELECT * FROM people WHERE z >= 18")
  before <- db_state(con)
  # the reported input: PostgreSQL would cut the output's name to the input's
  expect_error(anonymise_db(con, long, vars = c("x", "y"), strata = "grp", output = paste0(long, "_masked"),
                            overwrite = TRUE, check_identifiers = FALSE),
               "`output` \"p+_masked\" is longer than PostgreSQL's limit of 63 bytes", class = "detanon_error_argument")
  # the variant: a table name over the limit (it would read another table)
  expect_error(anonymise_db(con, paste0(long, "q"), vars = c("x", "y"), strata = "grp", output = "m",
                            check_identifiers = FALSE), "`table` .* is longer than", class = "detanon_error_argument")
  # 63 bytes of two-byte letters
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = strrep("\u00e9", 32L),
                            check_identifiers = FALSE), "`output` .* longer than", class = "detanon_error_argument")
  # an output that is a view
  for (overwrite in c(FALSE, TRUE)) {
    expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "adults",
                              overwrite = overwrite, check_identifiers = FALSE),
                 "is a view in the database", class = "detanon_error_argument")
  }
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "people", overwrite = TRUE,
                            check_identifiers = FALSE), "must differ from `table`")
  expect_identical(db_state(con), before)
  # quoted names are case-sensitive in PostgreSQL: "PEOPLE" is another table
  anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "PEOPLE", check_identifiers = FALSE)
  expect_identical(db_result(con, "PEOPLE", "id"), db_expected(con, "people", "id", vars = c("x", "y"), strata = "grp"))
  expect_identical(db_result(con, "people", "id"), before$rows[[which(before$tables == "people")]])
  # a name of exactly 63 bytes is fine
  anonymise_db(con, long, vars = c("x", "y"), strata = "grp", output = paste0(substr(long, 1, 60), "_m"),
               check_identifiers = FALSE)
  expect_identical(db_result(con, paste0(substr(long, 1, 60), "_m"), "id"),
                   db_expected(con, long, "id", vars = c("x", "y"), strata = "grp"))
})

test_that("anonymise_db() on PostgreSQL never commits the caller's transaction", {
  skip_on_cran()
  con <- local_pg_connection()
  DBI::dbWriteTable(con, "people", db_data(300, seed = 15), row.names = FALSE)
  DBI::dbWriteTable(con, "m", data.frame(old = 1:2), row.names = FALSE)
  before <- db_state(con)
  ins <- "INSERT INTO people (id, grp, cls, x, y, z, note) VALUES (10001, 'a', 1, 0.5, 1, 40, 'q')"
  # the reported input: a pending INSERT, then overwrite = TRUE, then the caller rolls back
  DBI::dbBegin(con)
  DBI::dbExecute(con, ins)
  anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m", overwrite = TRUE,
               check_identifiers = FALSE)
  expect_identical(nrow(DBI::dbGetQuery(con, "SELECT * FROM m")), 301L)
  DBI::dbRollback(con)
  expect_identical(db_state(con), before)
  # a failure inside the caller's transaction: the transaction goes on, the caller commits
  DBI::dbBegin(con)
  DBI::dbExecute(con, ins)
  local({
    local_append_failure(at = 1L)
    expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m2",
                              check_identifiers = FALSE), class = "detanon_error_database")
  })
  DBI::dbExecute(con, "INSERT INTO people (id, grp, cls, x, y, z, note) VALUES (10002, 'b', 1, 0.5, 1, 40, 'q')")
  DBI::dbCommit(con)
  expect_identical(DBI::dbGetQuery(con, "SELECT id FROM people WHERE id > 10000 ORDER BY id")$id, c(10001L, 10002L))
  expect_false("m2" %in% DBI::dbListTables(con))
  # a transaction already aborted by an error: refused, and left for the caller to roll back
  DBI::dbBegin(con)
  try(suppressWarnings(DBI::dbExecute(con, "SELECT * FROM no_such_table")), silent = TRUE)
  expect_error(anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m3",
                            check_identifiers = FALSE), "aborted by an earlier error", class = "detanon_error_database")
  DBI::dbRollback(con)
  # the variant: DBI::dbWithTransaction()
  DBI::dbWithTransaction(con, {
    anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m3", check_identifiers = FALSE)
  })
  expect_identical(db_result(con, "m3", "id"), db_expected(con, "people", "id", vars = c("x", "y"), strata = "grp"))
})

test_that("anonymise_db() on PostgreSQL reads one snapshot, and a lost connection leaves no temporary table", {
  skip_on_cran()
  con <- local_pg_connection()
  pg <- local_postgres()
  dbname <- DBI::dbGetQuery(con, "SELECT current_database() AS d")$d
  other <- DBI::dbConnect(RPostgreSQL::PostgreSQL(), host = "127.0.0.1", port = pg$port, user = "postgres",
                          dbname = dbname)
  withr::defer(DBI::dbDisconnect(other))
  DBI::dbWriteTable(con, "people", db_data(300, seed = 16), row.names = FALSE)
  expected <- db_expected(con, "people", "id", vars = c("x", "y"), strata = "grp")
  # another session changes a value between the passes: the call reads its snapshot
  local({
    orig <- NULL
    orig <- local_detanon_binding("anonymise_stats", function(...) {
      st <- orig(...)
      DBI::dbExecute(other, "UPDATE people SET x = x + 1 WHERE id = 7")
      st
    })
    anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m", check_identifiers = FALSE)
  })
  expect_identical(db_result(con, "m", "id"), expected)
  # the connection dies while the release is written (the reported case), or while strata
  # are read: nothing is left in the database
  for (where in c("db_append", "db_read_stratum")) {
    victim <- DBI::dbConnect(RPostgreSQL::PostgreSQL(), host = "127.0.0.1", port = pg$port, user = "postgres",
                             dbname = dbname)
    pid <- DBI::dbGetQuery(victim, "SELECT pg_backend_pid() AS p")$p
    local({
      orig <- NULL
      calls <- 0L
      orig <- local_detanon_binding(where, function(...) {
        calls <<- calls + 1L
        if (calls == 2L) DBI::dbGetQuery(other, paste("SELECT pg_terminate_backend(", pid, ")"))
        orig(...)
      })
      expect_error(suppressWarnings(anonymise_db(victim, "people", vars = c("x", "y"), strata = "grp",
                                                 output = "m_killed", read = "index", group_size = 50,
                                                 check_identifiers = FALSE)),
                   class = "detanon_error")
    })
    try(DBI::dbDisconnect(victim), silent = TRUE)
    # (the killed session is gone before the test's database is dropped)
    for (i in 1:50) {
      if (!nrow(DBI::dbGetQuery(other, paste("SELECT 1 FROM pg_stat_activity WHERE pid =", pid)))) break
      Sys.sleep(0.1)
    }
    tabs <- DBI::dbListTables(other)
    expect_false(any(grepl("^detanon_|m_killed", tabs)))
    expect_identical(nrow(DBI::dbGetQuery(other, "SELECT indexname FROM pg_indexes WHERE tablename = 'people'")), 0L)
  }
})

test_that("anonymise_db() on PostgreSQL: dates, timestamps and numeric(p, s) as strata and released columns", {
  skip_on_cran()
  con <- local_pg_connection()
  d <- db_data(300, seed = 17)
  DBI::dbWriteTable(con, "people", d, row.names = FALSE)
  DBI::dbExecute(con, paste("ALTER TABLE people ADD COLUMN day date, ADD COLUMN seen timestamp,",
                            "ADD COLUMN seen_tz timestamptz, ADD COLUMN price numeric(6, 2), ADD COLUMN big numeric"))
  DBI::dbExecute(con, paste("UPDATE people SET day = DATE '2024-01-01' + (id % 3),",
                            "seen = TIMESTAMP '2024-05-06 07:08:09.123456' + (id % 2) * INTERVAL '1.000001 second',",
                            "seen_tz = TIMESTAMPTZ '2024-05-06 07:08:09.999999+02' + id * INTERVAL '1 microsecond',",
                            "price = 1.10 + (id % 2) * 0.01,",
                            "big = 0.1000000000000000000001 + (id % 2)"))
  DBI::dbExecute(con, "UPDATE people SET day = NULL, seen = NULL, price = NULL WHERE id % 10 = 0")
  for (read in c("order", "index")) {
    # the reported inputs: Date and POSIXct strata read by index; numeric(p, s) strata
    for (strata in list("day", "seen", "price", c("day", "price"), "big")) {
      anonymise_db(con, "people", vars = c("x", "y"), strata = strata, output = "m", read = read, overwrite = TRUE,
                   check_identifiers = FALSE)
      got <- db_result(con, "m", "id")
      want <- db_expected(con, "people", "id", vars = c("x", "y"), strata = strata)
      # timestamps released to the microsecond (the output column is timestamptz)
      expect_identical(unclass(got$seen), unclass(want$seen), ignore_attr = TRUE)
      expect_identical(unclass(got$seen_tz), unclass(want$seen_tz), ignore_attr = TRUE)
      got$seen <- want$seen <- got$seen_tz <- want$seen_tz <- NULL
      expect_identical(got, want)
    }
  }
  seen <- unclass(db_result(con, "m", "id")$seen)
  expect_true(any(abs(seen %% 1 - 0.123456) < 5e-7, na.rm = TRUE))
  expect_true(any(abs(seen %% 1 - 0.123457) < 5e-7, na.rm = TRUE))
})

test_that("the errors of anonymise_db() for hostile input are pinned", {
  con <- local_sqlite_connection()
  DBI::dbWriteTable(con, "people", db_data(60, seed = 19))
  DBI::dbExecute(con, "CREATE VIEW adults AS SELECT * FROM people")
  expect_snapshot(error = TRUE, {
    anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "PEOPLE", overwrite = TRUE)
    anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "adults", overwrite = TRUE)
  })
  DBI::dbExecute(con, "UPDATE people SET cls = 'x' WHERE id = 5")
  expect_snapshot(error = TRUE, anonymise_db(con, "people", vars = c("x", "y"), strata = "grp", output = "m"))
})
