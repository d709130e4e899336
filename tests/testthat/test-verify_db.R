# verify_db(): the within-stratum attacks of risk_partitioned() on a release in a database,
# read group by group, against the limits of tune_release(); the database is left as it was.

vd_data <- function(n = 900, seed = 1) {
  set.seed(seed)
  data.frame(id = sample.int(n),
             grp = sample(c("a", "b", NA), n, TRUE, prob = c(0.5, 0.3, 0.2)),
             cls = sample(c(1L, 2L), n, TRUE),
             x = stats::rnorm(n),
             y = round(stats::rexp(n) * 100, 2),
             z = sample(18:90, n, TRUE),
             stringsAsFactors = FALSE)
}

# a SQLite database in a temporary file with the table `people` and its release `masked`
vd_connection <- function(d = vd_data(), env = parent.frame(), ...) {
  skip_if_not_installed("DBI")
  skip_if_not_installed("RSQLite")
  file <- withr::local_tempfile(fileext = ".sqlite", .local_envir = env)
  con <- DBI::dbConnect(RSQLite::SQLite(), file)
  withr::defer(DBI::dbDisconnect(con), envir = env)
  DBI::dbWriteTable(con, "people", d)
  anonymise_db(con, "people", vars = c("x", "y", "z"), strata = c("grp", "cls"), output = "masked",
               check_identifiers = FALSE, ...)
  con
}

vd_state <- function(con) {
  tabs <- sort(DBI::dbListTables(con))
  list(tabs, lapply(tabs, function(t) DBI::dbGetQuery(con, paste("SELECT * FROM", t, "ORDER BY id"))),
       DBI::dbGetQuery(con, "SELECT name FROM sqlite_master WHERE type = 'index'"))
}

# the rates of risk_partitioned() on both tables read into memory (matched by id, id left out)
vd_expected <- function(con, attacks, m = 3, vars = c("x", "y", "z"), strata = c("grp", "cls")) {
  masked <- DBI::dbGetQuery(con, "SELECT * FROM masked ORDER BY id")
  original <- DBI::dbGetQuery(con, "SELECT * FROM people ORDER BY id")
  original <- original[original$id %in% masked$id, ]
  masked$id <- original$id <- NULL
  it <- intruder(vars = vars, strata = strata)
  do.call(rbind, lapply(attacks, function(a) {
    r <- risk_partitioned(original, masked, paste0("attack_", a), m = if (a != "assignment") m, intruder = it,
                          future = FALSE)
    data.frame(attack = a, rate = r$rate, rate_m = r$rate_m, n_attacked = r$n_attacked,
               worst_stratum_rate = max(r$by_stratum$rate, na.rm = TRUE), stringsAsFactors = FALSE)
  }))
}

vd_attacks <- c("linkage_released", "linkage_original", "assignment")

test_that("verify_db() gives the rates of risk_partitioned() in memory, for any grouping and chunk", {
  con <- vd_connection(method = "mdav", k = 5)
  want <- vd_expected(con, vd_attacks)
  before <- vd_state(con)
  for (g in list(c(chunk = 1e5, group_size = 1e6), c(chunk = 37, group_size = 100), c(chunk = 200, group_size = 1))) {
    v <- verify_db(con, "people", "masked", by = "id", vars = c("x", "y", "z"), strata = c("grp", "cls"),
                   chunk = g[["chunk"]], group_size = g[["group_size"]])
    expect_equal(v$attacks[names(want)], want, tolerance = 1e-12)
    expect_identical(v$n, 900)
    expect_identical(v$n_strata, 6L)
    expect_identical(v$n_groups, if (g[["group_size"]] == 1e6) 1L else 6L)
  }
  expect_identical(vd_state(con), before)
  # the attacks see the records by key, whatever order the database keeps them in
  DBI::dbExecute(con, "CREATE TABLE shuffled AS SELECT * FROM masked ORDER BY x DESC")
  args <- list(con, "people", by = "id", vars = c("x", "y", "z"), strata = c("grp", "cls"))
  expect_identical(do.call(verify_db, c(args, release = "shuffled"))$attacks,
                   do.call(verify_db, c(args, release = "masked"))$attacks)
})

test_that("verify_db() without strata attacks the whole table as one stratum", {
  skip_if_not_installed("DBI")
  skip_if_not_installed("RSQLite")
  file <- withr::local_tempfile(fileext = ".sqlite")
  con <- DBI::dbConnect(RSQLite::SQLite(), file)
  on.exit(DBI::dbDisconnect(con), add = TRUE)
  DBI::dbWriteTable(con, "people", vd_data(400, seed = 5))
  anonymise_db(con, "people", vars = c("x", "y"), strata = character(), k = 6, output = "masked",
               method = "mdav", check_identifiers = FALSE)
  v <- verify_db(con, "people", "masked", by = "id", vars = c("x", "y"), strata = character(), chunk = 64)
  want <- vd_expected(con, vd_attacks, vars = c("x", "y"), strata = character())
  expect_equal(v$attacks[names(want)], want, tolerance = 1e-12)
  expect_identical(c(v$n_strata, v$n_groups), c(1L, 1L))
})

test_that("verify_db() passes a release within the limits and fails one above them", {
  con <- vd_connection(method = "mdav", k = 10)
  args <- list(con, "people", "masked", by = "id", vars = c("x", "y", "z"), strata = c("grp", "cls"))
  v <- do.call(verify_db, args)
  want <- vd_expected(con, vd_attacks)
  expect_identical(v$pass, all(v$attacks$pass))
  expect_identical(v$attacks$pass, want$rate <= 0.1 & (is.na(want$rate_m) | want$rate_m <= 0.3))
  # limits just below and just above the largest rates
  top <- max(want$rate)
  top_m <- max(want$rate_m, na.rm = TRUE)
  expect_true(do.call(verify_db, c(args, worst = top, top_m = top_m))$pass)
  low <- do.call(verify_db, c(args, worst = top - 1e-9, top_m = 1))
  expect_false(low$pass)
  expect_identical(low$attacks$pass, want$rate < top)
  expect_false(do.call(verify_db, c(args, worst = 1, top_m = top_m - 1e-9))$pass)
  # the top-m rate follows `m`
  v5 <- do.call(verify_db, c(args, m = 5, attacks = "linkage_released"))
  expect_equal(v5$attacks$rate_m, vd_expected(con, "linkage_released", m = 5)$rate_m, tolerance = 1e-12)
  expect_snapshot(print(v))
  # a plain release of k = 3 is over the limits
  con3 <- vd_connection(k = 3)
  expect_false(verify_db(con3, "people", "masked", by = "id", vars = c("x", "y", "z"), strata = c("grp", "cls"))$pass)
})

test_that("verify_db() attacks the released records only when strata were suppressed", {
  d <- vd_data(500, seed = 3)
  d$grp[d$grp %in% "b"][1:3] <- "tiny"
  con <- suppressMessages(vd_connection(d, env = environment(), k = 5, method = "mdav", small_strata = "suppress"),
                          classes = "detanon_message_suppress")
  expect_identical(DBI::dbGetQuery(con, "SELECT COUNT(*) AS n FROM masked")$n, 497L)
  v <- verify_db(con, "people", "masked", by = "id", vars = c("x", "y", "z"), strata = c("grp", "cls"),
                 group_size = 50)
  expect_identical(v$n, 497)
  expect_equal(v$attacks[c("attack", "rate", "rate_m", "n_attacked")],
               vd_expected(con, vd_attacks)[c("attack", "rate", "rate_m", "n_attacked")], tolerance = 1e-12)
})

test_that("verify_db() runs its groups on the workers of a multisession future plan", {
  skip_on_cran()
  skip_if_not_installed("future")
  skip_if_not_installed("future.apply")
  con <- vd_connection(method = "mdav", k = 5)
  want <- verify_db(con, "people", "masked", by = "id", vars = c("x", "y", "z"), strata = c("grp", "cls"),
                    group_size = 100)
  old <- future::plan(future::multisession, workers = 2)
  on.exit(future::plan(old), add = TRUE)
  got <- verify_db(con, "people", "masked", by = "id", vars = c("x", "y", "z"), strata = c("grp", "cls"),
                   group_size = 100)
  expect_identical(got, want)
})

test_that("verify_db() reads PostgreSQL as it reads SQLite", {
  skip_on_cran()
  skip_if_not_installed("RPostgreSQL")
  con <- local_pg_connection()
  DBI::dbWriteTable(con, "people", vd_data(), row.names = FALSE)
  anonymise_db(con, "people", vars = c("x", "y", "z"), strata = c("grp", "cls"), output = "masked",
               method = "mdav", k = 5, check_identifiers = FALSE)
  want <- vd_expected(con, vd_attacks)
  before <- DBI::dbListTables(con)
  v <- verify_db(con, "people", "masked", by = "id", vars = c("x", "y", "z"), strata = c("grp", "cls"),
                 chunk = 50, group_size = 200)
  expect_equal(v$attacks[names(want)], want, tolerance = 1e-12)
  expect_identical(v$n_strata, 6L)
  expect_identical(sort(DBI::dbListTables(con)), sort(before))
})

test_that("verify_db() refuses a release that does not hold its records once, and bad arguments", {
  con <- vd_connection(method = "mdav", k = 5)
  v <- function(...) verify_db(con, "people", ..., vars = c("x", "y"), strata = c("grp", "cls"))
  before <- vd_state(con)
  # a released record without its original, a duplicated key, another stratum
  DBI::dbExecute(con, "CREATE TABLE extra AS SELECT * FROM masked")
  DBI::dbExecute(con, "UPDATE extra SET id = 100000 WHERE id = 1")
  DBI::dbExecute(con, "CREATE TABLE twice AS SELECT * FROM masked UNION ALL SELECT * FROM masked WHERE id = 2")
  DBI::dbExecute(con, "CREATE TABLE moved AS SELECT * FROM masked")
  DBI::dbExecute(con, "UPDATE moved SET cls = 3 - cls WHERE id = 3")
  before <- vd_state(con)
  for (t in c("extra", "twice", "moved")) {
    expect_error(v(t, by = "id"), class = "detanon_error_data")
  }
  expect_snapshot(error = TRUE, {
    v("extra", by = "id")
    v("moved", by = "id")
    v("nope", by = "id")
    v("masked", by = "key")
    v("masked", by = c("id", "x"))
    v("masked")
    v("masked", by = "id", attacks = "singling_out")
    v("masked", by = "id", worst = 2)
    v("masked", by = "id", m = 0)
    verify_db(con, "people", "masked", by = "id", vars = c("x", "grp"), strata = "grp")
  })
  expect_error(v("masked", by = "id", group_size = 0), class = "detanon_error_argument")
  expect_error(verify_db("con", "people", "masked", by = "id", vars = "x", strata = "grp"),
               class = "detanon_error_argument")
  expect_identical(vd_state(con), before)
})

test_that("verify_db() leaves the caller's random stream and open transaction alone", {
  con <- vd_connection(method = "mdav", k = 5)
  set.seed(7)
  seed <- .Random.seed
  DBI::dbBegin(con)
  DBI::dbExecute(con, "CREATE TABLE mine (a INTEGER)")
  verify_db(con, "people", "masked", by = "id", vars = c("x", "y", "z"), strata = c("grp", "cls"))
  expect_identical(.Random.seed, seed)
  expect_true("mine" %in% DBI::dbListTables(con))
  DBI::dbRollback(con)
  expect_false("mine" %in% DBI::dbListTables(con))
})
