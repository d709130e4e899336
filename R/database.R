#' Anonymise a table in a database, stratum by stratum
#'
#' `anonymise_db()` masks a table that lives in a database (through DBI: SQLite, PostgreSQL or
#' any DBI backend) without reading it into memory, and writes the masked table back to the
#' same database. The result is the one [anonymise()] gives on the same table read into
#' memory, bit for bit: the same masked values for the same records. It leaves the caller's
#' random stream ([set.seed()]) as it was.
#'
#' It runs the passes of the partitioned path ([anonymise_stats()], [anonymise_stratum()],
#' [anonymise_rescale()], [anonymise_release()]):
#' 1. the statistics pass reads the `vars` and `strata` columns in chunks of `chunk` rows
#'    (`dbSendQuery()` and `dbFetch(n = chunk)`) and merges their exact sums, so the means,
#'    SDs and the release bounds are those of the whole table;
#' 2. the masking pass reads whole strata (groups of small strata, up to about
#'    `group_size` records) and masks each group; the pieces are kept in files in a private
#'    temporary directory (they hold original values: they are removed when the call ends,
#'    also on error, but a killed R process leaves them, as it leaves all its temporary
#'    files). The exact sums of the values masked must be those of the statistics pass
#'    (else a classed error: the table changed between the passes);
#' 3. step 5 rescales over all pieces (exact sums of the centroids);
#' 4. the release pass writes each piece's masked rows to a new table with a temporary name,
#'    which is renamed to `output` only when every row is written.
#'
#' @section Transactions:
#' Everything the call does in the database (the temporary table, an index for
#' `read = "index"`, dropping an existing `output`, the rename) happens in one transaction:
#' its own, or, when the connection is already in a transaction (e.g. inside
#' [DBI::dbWithTransaction()]), a `SAVEPOINT` inside it. It commits its own transaction;
#' it never commits the caller's, whose rollback also undoes the release. A failure (an
#' error, an interrupt, a failed worker, a lost connection) rolls back to where the call
#' started: `output` is never left half written, no `detanon_tmp_*` table or index is left,
#' and nothing else in the database changes (the database rolls back the work of a
#' connection that dies). On PostgreSQL its own transaction is `REPEATABLE READ`, so all
#' passes read one snapshot of the table even while other sessions write to it; inside the
#' caller's transaction they read what its isolation level shows, and a table changed
#' between the passes is an error (class `detanon_error_data`). On SQLite the
#' transaction keeps other connections from writing until the call ends. Other DBI
#' backends get [DBI::dbBegin()], and an error inside an open transaction. Errors from the
#' database are raised with class `detanon_error_database`.
#'
#' @section Table names:
#' `table` and `output` are resolved as the database resolves them, never compared as
#' strings: on SQLite names differ only when they differ beyond (ASCII) case, so
#' `output = "PEOPLE"` is the table `people`; on PostgreSQL (names are quoted, so case
#' counts) `table` is found on the search path and `output` is made in
#' `current_schema()`, and a name longer than PostgreSQL's 63-byte limit is refused
#' (PostgreSQL would cut it, possibly to another table's name). `output` naming the input
#' table is an error, also with `overwrite = TRUE`; so is an `output` that is a view (only
#' tables are replaced). `table` may be a view (it is then read without an index). On other
#' backends, names that differ only in case are refused as possibly the same table.
#'
#' @section Reading strata:
#' `read = "order"` (the default) streams the table once, sorted by the `strata` columns
#' (`ORDER BY`), and cuts it at stratum boundaries. `read = "index"` reads each stratum with a
#' parameterised `WHERE` on the `strata` columns (`IS NULL` for a missing level), through an
#' index on the `strata` columns that it creates when the table has none (and drops at the
#' end). Missing values (`NULL`) in `strata` columns form a stratum level of their own, as in
#' [anonymise()].
#'
#' @section Memory:
#' The R process holds at most one chunk during the statistics pass, and one group of whole
#' strata (the largest stratum, or `group_size` records of small strata) during the masking
#' and release passes; with a `future` plan of W workers ([future::plan()]), W groups are read
#' and masked at a time. The table size does not enter: peak memory is bounded by the largest
#' stratum plus one chunk. With `method = "adaptive"` the R process also holds the state of
#' its rounds, (16 + 8 x masked columns) bytes per record (48 MB per million records of four
#' `vars`), and, while the strata are read for its indexes, the indexes of all groups
#' (about 100 bytes per record of four `vars`) before they go to temporary files.
#'
#' @section Types and row order:
#' The output table has the input's columns in the same order. Its column types are those
#' [DBI::dbDataType()] gives for the R types the input columns are read as (the types of
#' [DBI::dbGetQuery()] on the whole table); integer `vars` stay integer when [anonymise()]
#' would return them as integers. SQLite keeps a type per value: a column holding whole
#' numbers and fractions is read as double throughout, and a column holding numbers and
#' text (which DBI reads as numbers or as text depending on the rows read together) is
#' refused with a classed error. Rows are written group by group (sorted by stratum with
#' `read = "order"`), not in the input's order: keep a key column (not in `vars`) to join
#' the release to other tables, or to compare it with [anonymise()] on the table read into
#' memory (sorted by the key).
#'
#' @section Progress:
#' The masking pass reports the records masked through progressr: wrap the call in
#' `progressr::with_progress()` to see it.
#'
#' @section PostgreSQL:
#' RPostgreSQL writes doubles with 15 significant digits and timestamps to the second;
#' `anonymise_db()` sends doubles as text with 17 digits and timestamps to the microsecond
#' instead, which PostgreSQL reads back exactly. With `read = "index"`, each stratum's
#' values are cast to their columns' types (dates, timestamps, `numeric(p, s)`); a
#' `numeric` column with more digits than a double holds is compared as the double R
#' reads.
#'
#' @param con A DBI connection ([DBI::dbConnect()]).
#' @param table The name of the table to mask (one string).
#' @param vars,strata,k As in [anonymise()]; `vars` and `strata` must be given. With
#'   `method = "stratum"`, `k` may be a table of k per stratum, as in [anonymise_adaptive()].
#' @param output The name of the table to create with the masked records (one string, not
#'   `table` under the database's rules for names; see the section on table names).
#' @param method The masking method, as in [anonymise_stats()]: `"anonymise"` (the default),
#'   `"stratum"` (one k per stratum: [anonymise_adaptive()] with a table `k` and `m = 0`, the
#'   release [tune_release()] makes for its k-per-stratum candidates), `"mdav"`
#'   ([anonymise_mdav()] with `noise = FALSE`) or `"keyed"` ([anonymise_keyed()]:
#'   the strata are read once more, for the pass that shares its budget of groups over all
#'   strata, see [anonymise_partitioned()]) or `"adaptive"` ([anonymise_adaptive()] without
#'   `w1`: the strata are read once more, to build the search indexes its rounds run on; see
#'   [anonymise_partitioned()]); the table written is then the release of that verb on the
#'   table read into memory.
#' @param key,size,noise For `method = "keyed"`, as in [anonymise_keyed()].
#' @param k_max,m,rate,w1 For `method = "adaptive"` and `"stratum"`, as in
#'   [anonymise_adaptive()] (`w1` must be `NULL`; `m = NULL` is 1 for `"adaptive"`, and 0,
#'   the only value, for `"stratum"`).
#' @param format As in [anonymise()]: `"natural"`, `"precision"` or `"none"`.
#' @param read How strata are read: `"order"` (one sorted stream) or `"index"` (one query per
#'   stratum through an index on the `strata` columns). See the section above.
#' @param chunk Rows fetched at a time (statistics pass, and the sorted stream).
#' @param group_size Small strata are masked together in groups of about this many records.
#' @param overwrite Replace `output` if it exists (a table, never the input nor a view)?
#'   `FALSE` (the default) is an error when it exists.
#' @param na,small_strata As in [anonymise()], with the choices the partitioned path supports
#'   (see [anonymise_stats()]).
#' @param check_identifiers Warn when a column released unmasked looks like a direct
#'   identifier? It is judged on the first group of strata read.
#' @param nthreads Number of OpenMP threads for the masking, as in [anonymise()].
#' @return An object of class `detanon_db_release`, printed as a short summary: a list with
#'   `verb = "anonymise_db"`, `method`, `output` (the name of the table written),
#'   `n_written` (the records written to it) and the release metadata that
#'   [release_info()] gives for [anonymise()] (or the verb of `method`) on the same table:
#'   `settings`, `counts` (`n`, `n_strata`, `min_size`, `n_suppressed`, `n_dropped`, ...)
#'   and, for [anonymise()], `stats` (the step-5 scaling factors).
#' @seealso [anonymise_partitioned()] for data in memory or in files.
#' @family masking verbs
#' @examples
#' if (requireNamespace("DBI", quietly = TRUE) && requireNamespace("RSQLite", quietly = TRUE)) {
#'   con <- DBI::dbConnect(RSQLite::SQLite(), ":memory:")
#'   d <- titanic_paper()
#'   DBI::dbWriteTable(con, "titanic", d)
#'   anonymise_db(con, "titanic", vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
#'                k = 3, output = "titanic_masked")
#'   masked <- DBI::dbGetQuery(con, "SELECT * FROM titanic_masked ORDER BY PassengerId")
#'   head(masked)
#'   DBI::dbDisconnect(con)
#' }
#' @export
anonymise_db <- function(con, table, vars, strata, k = 3, output, method = "anonymise",
                         format = c("natural", "precision", "none"), read = c("order", "index"), chunk = 1e5,
                         group_size = 1e6, overwrite = FALSE,
                         na = c("fail", "complete", "mean", "median"), small_strata = c("fail", "suppress"),
                         check_identifiers = TRUE, key = NULL, size = 10, noise = TRUE, k_max = 33, m = NULL, rate = 0,
                         w1 = NULL, nthreads = getOption("detanon.nthreads", 1L)) {
  # the caller's random stream is left as it was (DBI backends draw names of savepoints)
  rng <- db_rng_state()
  on.exit(db_rng_restore(rng), add = TRUE)
  check_db_connection(con)
  table <- check_table_name(table, "table")
  if (missing(output)) stop_arg("`output` must be given: the name of the table to write the release to.")
  output <- check_table_name(output, "output")
  if (missing(vars)) stop_arg("`vars` must be given: the columns of `table` to mask.")
  if (missing(strata)) stop_arg("`strata` must be given: the columns of `table` to stratify by (or character()).")
  format <- match_choice(format, "format")
  read <- match_choice(read, "read")
  chunk <- check_whole(chunk, "chunk", min = 1)
  group_size <- check_whole(group_size, "group_size", min = 1)
  check_flag(overwrite, "overwrite")
  na <- match_choice(na, "na")
  small_strata <- match_choice(small_strata, "small_strata")
  check_flag(check_identifiers, "check_identifiers")
  nthreads <- check_nthreads(nthreads)
  # both names resolved as the database resolves them (SQLite: case-insensitive; PostgreSQL:
  # the schema on the search path), so that `output` can never be the input
  src <- db_relation(con, table, "table")
  if (is.null(src)) {
    stop_arg("`table` \"", table, "\" cannot be read: there is no such table in the database.", kind = "data")
  }
  dst <- db_relation(con, output, "output", create = TRUE)
  if (db_same_relation(con, src, dst)) {
    stop_arg("`output` must differ from `table` (\"", table, "\"): ", db_same_reason(con, table, output),
             "; the input is never overwritten.")
  }
  proto <- db_prototype(con, src)
  strata <- check_columns(strata, proto, "strata")
  vars <- check_columns(vars, proto, "vars")
  check_vars(proto, vars, strata)
  method <- check_partitioned_method(method)
  # (a table `k` of method "stratum" is checked by anonymise_stats())
  if (method != "stratum" || !is.data.frame(k)) k <- check_whole(k, "k", min = 2)
  if (dst$exists && !identical(dst$kind, "table")) {
    stop_arg("`output` \"", output, "\" is a ", dst$kind, " in the database, not a table; anonymise_db() writes ",
             "and replaces only tables: choose another name.")
  }
  if (dst$exists && !overwrite) {
    stop_arg("`output` table \"", output, "\" exists; choose another name or set `overwrite = TRUE`.")
  }

  # Everything this call does to the database happens in one transaction (a savepoint inside
  # the caller's open transaction, which is neither committed nor rolled back): the passes
  # read one snapshot, and an error, an interrupt or a lost connection leaves nothing behind
  # (the database rolls the transaction back).
  made <- new.env(parent = emptyenv())
  made$close <- list()
  spill <- tempfile("detanon-db-")
  dir.create(spill, mode = "0700")
  tx <- NULL
  done <- FALSE
  # (run before the random stream is restored)
  on.exit({
    unlink(spill, recursive = TRUE)
    for (close in made$close) try(close(), silent = TRUE)
    if (!done && !is.null(tx)) db_rollback(con, tx)
  }, add = TRUE, after = FALSE)
  tx <- db_begin(con)
  meta <- db_run(con, {
    clock <- db_clock()
    # the column types of the whole table (SQLite stores a type per value)
    cast <- db_column_types(con, src, proto)
    proto <- cast(proto)
    # 1. statistics over chunks of the vars and strata columns
    cols <- c(strata, vars)
    st <- anonymise_stats(db_chunk_source(con, db_select(con, src, cols), chunk, made, cast),
                          vars = vars, strata = strata, k = k, method = method, na = na,
                          small_strata = small_strata, format = format, key = key, size = size, noise = noise,
                          k_max = k_max, m = m, rate = rate, w1 = w1)
    clock("statistics pass")
    # the quantities over all strata of a method that shares them (method_registry()): one
    # more pass over the groups of whole strata
    plan <- partitioned_method(st)$plan
    if (!is.null(plan)) {
      st <- plan(st, function(fun) {
        groups <- db_group_reader(con, src, names(proto), strata, st, read, chunk, group_size, made, cast)
        out <- list()
        repeat {
          batch <- list()
          while (length(batch) < db_workers() && !is.null(g <- groups())) batch[[length(batch) + 1L]] <- g
          if (!length(batch)) break
          out <- c(out, db_mask_batch(batch, st, nthreads, fun))
        }
        out
      })
      clock("plan pass")
    }

    # 2. masking: groups of whole strata, `workers` groups at a time, pieces spilled to files
    groups <- db_group_reader(con, src, names(proto), strata, st, read, chunk, group_size, made, cast)
    workers <- db_workers()
    # progress through progressr (shown inside progressr::with_progress()): records masked
    prog <- task_progress(st$n)
    files <- character()
    first <- TRUE
    # the values masked, summed exactly, must be those the statistics were made of
    seen <- db_seen(st)
    repeat {
      batch <- list()
      while (length(batch) < workers && !is.null(g <- groups())) batch[[length(batch) + 1L]] <- g
      if (!length(batch)) break
      if (first && check_identifiers) warn_identifiers(batch[[1L]], vars, strata)
      first <- FALSE
      pieces <- db_mask_batch(batch, st, nthreads)
      prog(amount = sum(vapply(batch, nrow, integer(1))))
      rm(batch)
      for (p in pieces) {
        seen$add(p$x)
        # the whole piece for the release pass, and without its records for step 5 (which
        # reads only the centroids, up to five times)
        f <- file.path(spill, sprintf("piece-%08d.rds", length(files) + 1L))
        saveRDS(p, f, compress = FALSE)
        p$data <- p$x <- p$rows <- NULL
        saveRDS(p, sub("piece-", "centroids-", f, fixed = TRUE), compress = FALSE)
        files <- c(files, f)
      }
      rm(pieces)
    }
    if (!length(files)) stop_arg("`table` \"", table, "\" has no records to mask.", kind = "data")
    if (!seen$same()) {
      stop_arg("`table` \"", table, "\" changed while it was read: the `vars` values of the masking pass are not ",
               "those of the statistics pass. Stop the writers to the table (or run outside a transaction, ",
               "which reads one snapshot) and call anonymise_db() again. Nothing was written.", kind = "data")
    }
    clock(paste0("masking pass (", length(files), " groups)"))

    # 3. step 5 over all pieces
    read_piece <- function(i) if (i <= length(files)) readRDS(files[i]) else NULL
    read_centroids <- function(i) if (i <= length(files)) readRDS(sub("piece-", "centroids-", files[i], fixed = TRUE))
    s5 <- anonymise_rescale(read_centroids, stats = st)
    clock("step 5")

    # 4. release into a table with a temporary name, renamed at the end
    tmp <- db_temp_name("detanon_tmp_")
    n_written <- 0L
    for (i in seq_along(files)) {
      out <- anonymise_release(read_piece(i), stats = st, step5 = s5)
      out <- out[names(proto)]
      if (i == 1L) DBI::dbCreateTable(con, tmp, db_fields(con, out))
      db_append(con, tmp, out)
      n_written <- n_written + nrow(out)
      rm(out)
    }
    if (!is.null(made$index)) db_drop_index(con, src, made$index)
    db_replace(con, tmp, dst, overwrite)
    clock("release pass (written and renamed)")
    meta <- release_meta(st, s5)
    meta$verb <- "anonymise_db"
    meta$method <- method
    meta$output <- output
    meta$n_written <- n_written
    structure(meta, class = "detanon_db_release")
  })
  db_commit(con, tx)
  done <- TRUE
  meta
}

#' @export
print.detanon_db_release <- function(x, ...) {
  cn <- x$counts
  cat(sprintf("<detanon database release> table \"%s\", masked by method \"%s\"\n", x$output, x$method))
  # (the adaptive verb's counts have neither suppressed nor dropped records)
  cat("  ", plural(x$n_written, "record"), " written",
      if (!is.null(cn$n_suppressed)) {
        sprintf(" (%d suppressed in small strata, %d dropped for missing values)", cn$n_suppressed, cn$n_dropped)
      }, "\n", sep = "")
  strata <- if (length(x$settings$strata)) paste(x$settings$strata, collapse = " x ") else "none"
  k <- x$settings$k
  k <- if (is.data.frame(k)) sprintf("%d to %d per stratum", min(k$k), max(k$k)) else as.integer(k)
  cat(sprintf("  %s (smallest %s), k = %s\n", plural(cn$n_strata, "stratum", "strata"),
              plural(cn$min_size, "record"), k))
  cat(strwrap(paste0("strata: ", strata, "; vars: ", paste(x$settings$vars, collapse = ", ")),
              width = 78, indent = 2, exdent = 4), sep = "\n")
  invisible(x)
}

db_rng_state <- function() get0(".Random.seed", envir = globalenv(), inherits = FALSE)

db_rng_restore <- function(old) {
  if (!is.null(old)) {
    assign(".Random.seed", old, envir = globalenv())
  } else if (exists(".Random.seed", envir = globalenv(), inherits = FALSE)) {
    rm(".Random.seed", envir = globalenv())
  }
}

# With the option `detanon.db_trace = TRUE` (benchmarks), a line per pass with its time.
db_clock <- function() {
  t0 <- proc.time()[["elapsed"]]
  function(what) {
    if (!isTRUE(getOption("detanon.db_trace"))) return(invisible())
    t1 <- proc.time()[["elapsed"]]
    message(sprintf("anonymise_db: %-40s %8.1f s", what, t1 - t0))
    t0 <<- t1
  }
}

# ---- arguments ---------------------------------------------------------------------------

check_db_connection <- function(con) {
  if (!requireNamespace("DBI", quietly = TRUE)) {
    stop_arg("`con` needs the package DBI: install.packages(\"DBI\").")
  }
  if (!inherits(con, "DBIConnection")) {
    stop_arg("`con` must be a DBI connection (DBI::dbConnect()), not ", class_label(con), ".")
  }
  if (!db_is_valid(con)) stop_arg("`con` is not a valid connection (closed?); reconnect first.")
  if (db_is_pg(con)) {
    # in a transaction aborted by an error, PostgreSQL runs no statement until a rollback
    # (RPostgreSQL's dbGetQuery() warns and returns NULL where others raise an error)
    ok <- tryCatch(DBI::dbGetQuery(con, "SELECT 1"), error = function(e) e, warning = function(w) w)
    if (!is.data.frame(ok)) {
      why <- if (inherits(ok, "condition")) trimws(conditionMessage(ok)) else "no result"
      stop_arg("`con` cannot run statements (", why, "): if its transaction was ",
               "aborted by an earlier error, roll it back (DBI::dbRollback()) first; if it is closed, reconnect.",
               kind = "database")
    }
  }
  invisible(con)
}

# dbIsValid(), for backends that have it (RPostgreSQL has not: a closed connection then
# fails at its first query instead)
db_is_valid <- function(con) {
  tryCatch(isTRUE(DBI::dbIsValid(con)), error = function(e) TRUE)
}

check_table_name <- function(x, arg) {
  if (!is.character(x) || length(x) != 1L || is.na(x) || !nzchar(x)) {
    stop_arg("`", arg, "` must be one table name (a string), not ", show_value(x), ".")
  }
  x
}

db_is_sqlite <- function(con) inherits(con, "SQLiteConnection")
db_is_pg <- function(con) inherits(con, c("PostgreSQLConnection", "PqConnection"))

db_quote <- function(con, x) as.character(DBI::dbQuoteIdentifier(con, x))

# ---- which table a name is -----------------------------------------------------------------
#
# A name is resolved as the database resolves it, never compared as a string: SQLite compares
# names regardless of (ASCII) case and looks in `temp`, then `main`, then the attached
# databases; PostgreSQL (names quoted) finds `table` on the search path and creates `output`
# in current_schema(), and would cut a name longer than max_identifier_length (63) bytes, which
# is refused. The result: `name` (as given), `exists`, `kind` ("table", "view", ...), `schema`,
# `stored` (the name as the database stores it), `oid` (PostgreSQL) and `sql`, the qualified
# name for statements. `create = TRUE` (the output): where an unqualified CREATE TABLE puts
# it. Other DBI backends: dbExistsTable(), and `sql` the quoted name.
db_relation <- function(con, name, arg, create = FALSE) {
  if (db_is_sqlite(con)) {
    schemas <- if (create) "main" else unique(c("temp", "main", DBI::dbGetQuery(con, "PRAGMA database_list")$name))
    for (s in schemas) {
      master <- if (s == "temp") "sqlite_temp_master" else paste0(db_quote(con, s), ".sqlite_master")
      d <- DBI::dbGetQuery(con, paste("SELECT name, type FROM", master,
                                      "WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE"),
                           params = list(name))
      if (nrow(d)) {
        return(list(name = name, exists = TRUE, kind = d$type[1L], schema = s, stored = d$name[1L],
                    sql = paste0(db_quote(con, s), ".", db_quote(con, d$name[1L]))))
      }
    }
    if (!create) return(NULL)
    return(list(name = name, exists = FALSE, kind = NULL, schema = "main", stored = name,
                sql = paste0(db_quote(con, "main"), ".", db_quote(con, name))))
  }
  if (db_is_pg(con)) {
    limit <- as.integer(DBI::dbGetQuery(con, "SHOW max_identifier_length")[[1L]])
    if (nchar(name, type = "bytes") > limit) {
      stop_arg("`", arg, "` \"", name, "\" is longer than PostgreSQL's limit of ", limit, " bytes for a name, ",
               "which would cut it (and could make it name another table); choose a shorter name.")
    }
    cols <- paste("SELECT c.oid::text AS oid, n.nspname AS schema, c.relname AS stored, c.relkind::text AS kind",
                  "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE")
    d <- if (create) {
      schema <- DBI::dbGetQuery(con, "SELECT current_schema() AS s")$s
      if (!length(schema) || is.na(schema)) {
        stop_arg("`output` cannot be created: PostgreSQL's search_path names no schema to create it in; ",
                 "set search_path first.", kind = "database")
      }
      db_query_params(con, paste(cols, "n.nspname = $1 AND c.relname = $2"), list(schema, name))
    } else {
      db_query_params(con, paste(cols, "c.oid = to_regclass(quote_ident($1))"), list(name))
    }
    if (!nrow(d)) {
      if (!create) return(NULL)
      return(list(name = name, exists = FALSE, kind = NULL, schema = schema, stored = name, oid = NA_character_,
                  sql = paste0(db_quote(con, schema), ".", db_quote(con, name))))
    }
    kinds <- c(r = "table", p = "table", v = "view", m = "materialized view", f = "foreign table")
    kind <- if (d$kind[1L] %in% names(kinds)) kinds[[d$kind[1L]]] else "relation other than a table"
    return(list(name = name, exists = TRUE, kind = kind, schema = d$schema[1L], stored = d$stored[1L],
                oid = d$oid[1L], sql = paste0(db_quote(con, d$schema[1L]), ".", db_quote(con, d$stored[1L]))))
  }
  exists <- db_table_exists(con, name)
  if (!exists && !create) return(NULL)
  list(name = name, exists = exists, kind = if (exists) "table", schema = NULL, stored = name,
       sql = db_quote(con, name))
}

# Do the two resolved names denote one table? Other backends: names equal regardless of
# case are taken as the same (refused rather than risked).
db_same_relation <- function(con, src, dst) {
  if (db_is_pg(con)) return(isTRUE(dst$exists) && identical(src$oid, dst$oid))
  if (db_is_sqlite(con)) {
    return(isTRUE(dst$exists) && identical(src$schema, dst$schema) && identical(src$stored, dst$stored))
  }
  identical(tolower(src$name), tolower(dst$name))
}

db_same_reason <- function(con, table, output) {
  if (identical(table, output)) return("they are the same name")
  if (db_is_sqlite(con)) return("SQLite compares table names regardless of case, so both name one table")
  if (db_is_pg(con)) return("PostgreSQL resolves both to one table")
  "names that differ only in case may name one table in this database"
}

db_table_exists <- function(con, name) {
  isTRUE(tryCatch(DBI::dbExistsTable(con, name), error = function(e) FALSE))
}

# A data frame with the table's columns and no rows, typed as DBI reads them (one row is
# read: some backends type an empty result by its declared types only).
db_prototype <- function(con, src) {
  d <- tryCatch(DBI::dbGetQuery(con, paste("SELECT * FROM", src$sql, "LIMIT 1")), error = function(e) e)
  if (inherits(d, "error") || !is.data.frame(d)) {
    stop_arg("`table` \"", src$name, "\" cannot be read", if (inherits(d, "error")) paste0(": ", conditionMessage(d)),
             ".", kind = "data")
  }
  d[0L, , drop = FALSE]
}

# The type each column is read as over the whole table, and a function that gives every
# chunk read those types (a chunk whose values of a column are all NULL, or are all whole
# numbers in a column that also holds fractions, would otherwise come back with another
# type than the table read at once). SQLite keeps a storage class per value: a column holding
# both numbers and text (or blobs) reads as numbers or as text depending on which rows are
# read together, and is refused.
db_column_types <- function(con, src, proto) {
  target <- lapply(proto, function(x) x)
  if (db_is_sqlite(con) && length(proto)) {
    # a column of TEXT affinity stores numbers as text: only the others can mix
    info <- DBI::dbGetQuery(con, paste0("PRAGMA ", db_quote(con, src$schema), ".table_info(",
                                        db_quote(con, src$stored), ")"))
    decl <- toupper(info$type[match(names(proto), info$name)])
    decl[is.na(decl)] <- ""
    text <- !grepl("INT", decl, fixed = TRUE) & grepl("CHAR|CLOB|TEXT", decl)
    cols <- names(proto)[!text]
    for (part in split(seq_along(cols), ceiling(seq_along(cols) / 400))) {
      # the smallest and largest storage class of the non-NULL values (in the order blob <
      # integer < null < real < text, NULL left out): one class, or integer and real, or mixed
      q <- db_quote(con, cols[part])
      sel <- paste0(rep(c("min", "max"), length(q)), "(nullif(typeof(", rep(q, each = 2L), "), 'null'))")
      has <- matrix(unlist(DBI::dbGetQuery(con, paste("SELECT", paste(sel, collapse = ", "), "FROM", src$sql)),
                           use.names = FALSE),
                    ncol = 2L, byrow = TRUE, dimnames = list(cols[part], c("min", "max")))
      for (v in cols[part]) {
        lo <- has[v, "min"]
        hi <- has[v, "max"]
        if (is.na(lo)) next # NULL only
        if (lo != hi && !(lo == "integer" && hi == "real")) {
          kinds <- c(integer = "numbers", real = "numbers", text = "text", blob = "blobs")[c(lo, hi)]
          stop_arg("`table` \"", src$name, "\" column `", v, "` holds ", paste(unique(kinds), collapse = " and "),
                   " (SQLite keeps a type per value); DBI reads such a column as numbers or as text depending on ",
                   "the rows read together. Store it as one type first (e.g. `UPDATE ... SET ", v,
                   " = CAST(", v, " AS TEXT)`).", kind = "column")
        }
        if (lo == "integer" && hi == "real") {
          target[[v]] <- double()
        } else if (is.logical(proto[[v]])) {
          # NULL in the row read for the prototype: the type of a value
          one <- DBI::dbGetQuery(con, paste("SELECT", db_quote(con, v), "FROM", src$sql, "WHERE",
                                            db_quote(con, v), "IS NOT NULL LIMIT 1"))
          target[[v]] <- one[[1L]][0L]
        }
      }
    }
  }
  function(d) {
    for (v in intersect(names(d), names(target))) {
      x <- d[[v]]
      want <- target[[v]]
      if (identical(class(x), class(want)) && typeof(x) == typeof(want)) next
      if (is.double(want) && !is.object(want) && is.integer(x) && !is.object(x)) {
        d[[v]] <- as.double(x)
      } else if (all(is.na(x))) {
        d[[v]] <- want[rep(NA_integer_, length(x))]
      }
    }
    d
  }
}

# ---- transactions --------------------------------------------------------------------------
#
# The call's transaction: inside the caller's open transaction a SAVEPOINT (released at the
# end, or rolled back to: the caller's own work is neither committed nor undone), else its
# own transaction (PostgreSQL: REPEATABLE READ, so that every pass reads one snapshot).
# SQLite: a SAVEPOINT outside a transaction is one. Other backends: DBI's dbBegin(), and an
# error inside an open transaction (they cannot nest).
db_begin <- function(con) {
  name <- db_temp_name("detanon_sp_")
  sp <- paste("SAVEPOINT", db_quote(con, name))
  if (db_is_sqlite(con)) {
    db_tx_statement(con, sp)
    return(list(kind = "savepoint", name = name))
  }
  if (db_is_pg(con)) {
    # a SAVEPOINT outside a transaction block is an error in PostgreSQL: the probe
    if (!inherits(tryCatch(DBI::dbExecute(con, sp), error = function(e) e), "error")) {
      return(list(kind = "savepoint", name = name))
    }
    db_tx_statement(con, "BEGIN ISOLATION LEVEL REPEATABLE READ")
    return(list(kind = "begin"))
  }
  ok <- tryCatch({
    DBI::dbBegin(con)
    TRUE
  }, error = function(e) e)
  if (inherits(ok, "error")) {
    stop_arg("`con` could not start a transaction (", conditionMessage(ok), "). On this backend anonymise_db() ",
             "cannot run inside an open transaction: commit or roll it back first.", kind = "database")
  }
  list(kind = "dbi")
}

db_tx_statement <- function(con, sql) {
  tryCatch(DBI::dbExecute(con, sql), error = function(e) {
    stop_arg("the database refused `", sql, "`: ", trimws(conditionMessage(e)), kind = "database")
  })
  invisible()
}

db_commit <- function(con, tx) {
  switch(tx$kind,
         savepoint = db_tx_statement(con, paste("RELEASE SAVEPOINT", db_quote(con, tx$name))),
         begin = db_tx_statement(con, "COMMIT"),
         dbi = tryCatch(DBI::dbCommit(con), error = function(e) {
           stop_arg("the database refused to commit: ", trimws(conditionMessage(e)), kind = "database")
         }))
  invisible()
}

# Undo everything the call did; errors (a lost connection: the database rolls back itself)
# are ignored.
db_rollback <- function(con, tx) {
  if (!db_is_valid(con)) return(invisible())
  run <- function(sql) try(DBI::dbExecute(con, sql), silent = TRUE)
  switch(tx$kind,
         savepoint = {
           run(paste("ROLLBACK TO SAVEPOINT", db_quote(con, tx$name)))
           run(paste("RELEASE SAVEPOINT", db_quote(con, tx$name)))
         },
         begin = run("ROLLBACK"),
         dbi = try(DBI::dbRollback(con), silent = TRUE))
  invisible()
}

# Evaluates the body of anonymise_db(): an error that is not one of detanon's (a statement
# the database refused) becomes a classed error; the caller's on.exit() rolls back.
db_run <- function(con, expr) {
  tryCatch(expr, error = function(e) {
    if (inherits(e, "detanon_error")) stop(e)
    stop_arg("the database gave an error: ", trimws(conditionMessage(e)),
             " (nothing was written: the changes were rolled back).", kind = "database")
  })
}

# ---- reading -----------------------------------------------------------------------------

db_select <- function(con, src, cols, order = NULL) {
  q <- function(x) paste(db_quote(con, x), collapse = ", ")
  paste0("SELECT ", q(cols), " FROM ", src$sql, if (length(order)) paste0(" ORDER BY ", q(order)))
}

# A re-readable chunk source over a query: f(1) (re)starts it, f(i) returns the next `chunk`
# rows, NULL at the end; `cast` gives them the column types of the whole table.
db_chunk_source <- function(con, sql, chunk, made = NULL, cast = identity) {
  force(sql)
  res <- NULL
  # an open result is cleared when the call ends early
  if (!is.null(made)) made$close <- c(made$close, function() if (!is.null(res)) DBI::dbClearResult(res))
  function(i) {
    if (i == 1L) {
      if (!is.null(res)) DBI::dbClearResult(res)
      res <<- NULL
      res <<- DBI::dbSendQuery(con, sql)
    }
    if (is.null(res)) return(NULL)
    d <- DBI::dbFetch(res, n = chunk)
    if (!nrow(d)) {
      DBI::dbClearResult(res)
      res <<- NULL
      return(NULL)
    }
    cast(d)
  }
}

# Positions p (1 .. n - 1) of a sorted frame after which a new stratum starts (row p + 1
# differs from row p in some strata column; NULL equals NULL).
stratum_starts <- function(d, strata) {
  n <- nrow(d)
  if (n < 2L) return(integer())
  differ <- logical(n - 1L)
  for (s in strata) {
    v <- d[[s]]
    a <- v[-n]
    b <- v[-1L]
    na_a <- is.na(a)
    na_b <- is.na(b)
    ne <- a != b
    ne[is.na(ne)] <- FALSE
    differ <- differ | (na_a != na_b) | (!na_a & !na_b & ne)
  }
  which(differ)
}

# A function returning the next group of whole strata (a data frame of all columns), NULL
# at the end. Suppressed strata (small_strata = "suppress") are passed along: the stratum
# pass drops them.
db_group_reader <- function(con, src, columns, strata, st, read, chunk, group_size, made, cast = identity) {
  if (!length(strata) || read == "order") {
    stream <- db_chunk_source(con, db_select(con, src, columns, order = strata), chunk, made, cast)
    buf <- list()    # chunks read and not yet returned (bound once per group: no repeated copying)
    held <- 0        # rows in buf
    bpos <- integer() # stratum boundaries in buf: after row p a new stratum starts
    last <- NULL     # the last row read
    i <- 0L
    done <- FALSE
    cut_at <- function(p) {
      all_rows <- if (length(buf) == 1L) buf[[1L]] else do.call(rbind, buf)
      out <- all_rows[seq_len(p), , drop = FALSE]
      rest <- all_rows[p + seq_len(held - p), , drop = FALSE]
      rownames(out) <- NULL
      rownames(rest) <- NULL
      buf <<- if (nrow(rest)) list(rest) else list()
      held <<- nrow(rest)
      bpos <<- bpos[bpos > p] - p
      out
    }
    return(function() {
      repeat {
        # a group: whole strata of at most group_size rows together, or one larger stratum
        if (length(strata) && held > group_size && length(bpos)) {
          small <- bpos[bpos <= group_size]
          return(cut_at(if (length(small)) max(small) else min(bpos)))
        }
        if (done) return(if (held) cut_at(held) else NULL)
        i <<- i + 1L
        d <- stream(i)
        if (is.null(d)) {
          done <<- TRUE
          next
        }
        if (length(strata)) {
          b <- stratum_starts(if (is.null(last)) d else rbind(last, d), strata)
          bpos <<- c(bpos, held + b - !is.null(last))
          bpos <<- bpos[bpos > 0L]
        }
        last <<- d[nrow(d), , drop = FALSE]
        buf[[length(buf) + 1L]] <<- d
        held <<- held + nrow(d)
      }
    })
  }
  # (a second reader, e.g. the keyed method's plan pass, reads through the index the first made)
  if (is.null(made$index)) made$index <- db_ensure_index(con, src, strata)
  types <- db_sql_types(con, src, strata)
  tab <- st$strata_table
  tab <- tab[tab$keep, , drop = FALSE]
  # strata in groups of about group_size records (a large stratum alone)
  grp <- db_size_groups(tab$n, group_size)
  sql <- db_select(con, src, columns)
  g <- 0L
  function() {
    g <<- g + 1L
    rows <- which(grp == g)
    if (!length(rows)) return(NULL)
    parts <- lapply(rows, function(r) cast(db_read_stratum(con, sql, strata, tab[r, strata, drop = FALSE], types)))
    out <- do.call(rbind, parts)
    rownames(out) <- NULL
    out
  }
}

# Group ids for strata of sizes n, consecutive, each group about `size` records at most
# (a stratum larger than `size` alone).
db_size_groups <- function(n, size) {
  g <- integer(length(n))
  cur <- 0L
  acc <- Inf
  for (i in seq_along(n)) {
    if (acc + n[i] > size) {
      cur <- cur + 1L
      acc <- 0
    }
    acc <- acc + n[i]
    g[i] <- cur
  }
  g
}

# The SQL types of columns (PostgreSQL: format_type(), e.g. "numeric(5,2)"); NULL elsewhere.
db_sql_types <- function(con, src, cols) {
  if (!db_is_pg(con)) return(NULL)
  d <- db_query_params(con, paste("SELECT attname AS col, format_type(atttypid, atttypmod) AS type",
                                  "FROM pg_attribute WHERE attrelid = $1::oid AND attnum > 0 AND NOT attisdropped"),
                       list(src$oid))
  stats::setNames(d$type[match(cols, d$col)], cols)
}

# All rows of one stratum (`values`: a one-row data frame of its strata values) by a
# parameterised WHERE. PostgreSQL: each value is sent as text and cast to the column's type
# (dates, timestamps to the microsecond, numeric(p, s)); a numeric column of more digits than
# a double holds is compared as the double R read.
db_read_stratum <- function(con, sql, strata, values, types = NULL) {
  conds <- character(length(strata))
  params <- list()
  for (j in seq_along(strata)) {
    v <- values[[strata[j]]]
    col <- db_quote(con, strata[j])
    if (is.na(v)) {
      conds[j] <- paste(col, "IS NULL")
      next
    }
    params[[length(params) + 1L]] <- if (is.factor(v)) as.character(v) else v
    ph <- db_placeholder(con, length(params))
    type <- if (is.null(types)) NA else types[[strata[j]]]
    conds[j] <- if (is.na(type)) {
      paste(col, "=", ph)
    } else if (db_pg_inexact_numeric(type)) {
      paste0("CAST(", col, " AS double precision) = CAST(", ph, " AS double precision)")
    } else {
      paste0(col, " = CAST(", ph, " AS ", type, ")")
    }
    if (!is.na(type) && inherits(v, "POSIXct")) {
      params[[length(params)]] <- db_time_text(v, utc = grepl("with time zone", type, fixed = TRUE))
    }
  }
  sql <- paste(sql, "WHERE", paste(conds, collapse = " AND "))
  db_query_params(con, sql, params)
}

# numeric without a precision, or with more digits than a double holds exactly
db_pg_inexact_numeric <- function(type) {
  if (!grepl("^numeric", type)) return(FALSE)
  p <- suppressWarnings(as.integer(sub("^numeric\\((\\d+).*$", "\\1", type)))
  is.na(p) || p > 15L
}

# Text of POSIXct values to the microsecond (rounded, not cut as format() does): in UTC with
# its offset (`utc = TRUE`), or in the values' own time zone (a timestamp without time zone,
# which RPostgreSQL reads as local time).
db_time_text <- function(x, utc) {
  s <- unclass(x)
  attributes(s) <- NULL
  whole <- floor(s)
  us <- round((s - whole) * 1e6)
  carry <- !is.na(us) & us >= 1e6
  whole[carry] <- whole[carry] + 1
  us[carry] <- 0
  tz <- if (utc) "UTC" else if (is.null(attr(x, "tzone"))) "" else attr(x, "tzone")[1L]
  out <- paste0(format(.POSIXct(whole, tz = tz), "%Y-%m-%d %H:%M:%S"), sprintf(".%06.0f", us), if (utc) "+00")
  out[is.na(s)] <- NA_character_
  out
}

db_placeholder <- function(con, i) {
  if (db_is_pg(con)) paste0("$", i) else "?"
}

db_query_params <- function(con, sql, params) {
  if (!length(params)) return(DBI::dbGetQuery(con, sql))
  if (inherits(con, "PostgreSQLConnection")) {
    # RPostgreSQL sends parameters as text: doubles with 17 digits (exact), dates as ISO
    # dates, logicals as words
    txt <- vapply(params, function(v) {
      if (inherits(v, "Date")) format(v, "%Y-%m-%d")
      else if (inherits(v, "POSIXct")) db_time_text(v, utc = TRUE)
      else if (is.double(v)) sprintf("%.17g", v)
      else if (is.logical(v)) if (v) "true" else "false"
      else as.character(v)
    }, character(1))
    res <- DBI::dbSendQuery(con, sql, txt)
    on.exit(DBI::dbClearResult(res))
    return(DBI::dbFetch(res, n = -1))
  }
  DBI::dbGetQuery(con, sql, params = unname(params))
}

# An index on the strata columns of a table (created unless one starting with them exists;
# none on a view); returns its name when this call created it (dropped before the call
# commits, and with everything else when it rolls back), else NULL.
db_ensure_index <- function(con, src, strata) {
  if (!identical(src$kind, "table") || db_has_index(con, src, strata)) return(NULL)
  name <- db_temp_name("detanon_idx_")
  cols <- paste(db_quote(con, strata), collapse = ", ")
  DBI::dbExecute(con, if (db_is_sqlite(con)) {
    paste0("CREATE INDEX ", db_quote(con, src$schema), ".", db_quote(con, name), " ON ",
           db_quote(con, src$stored), " (", cols, ")")
  } else {
    paste0("CREATE INDEX ", db_quote(con, name), " ON ", src$sql, " (", cols, ")")
  })
  name
}

db_drop_index <- function(con, src, name) {
  q <- if (is.null(src$schema)) db_quote(con, name) else paste0(db_quote(con, src$schema), ".", db_quote(con, name))
  DBI::dbExecute(con, paste("DROP INDEX", q))
  invisible()
}

# Does an index on the table have the strata columns as its leading columns (in any order)?
# Known for SQLite and PostgreSQL; FALSE (an index is made) for other backends.
db_has_index <- function(con, src, strata) {
  leading <- tryCatch({
    if (db_is_sqlite(con)) {
      pragma <- function(what, x) {
        DBI::dbGetQuery(con, paste0("PRAGMA ", db_quote(con, src$schema), ".", what, "(", db_quote(con, x), ")"))
      }
      idx <- pragma("index_list", src$stored)$name
      lapply(idx, function(i) {
        info <- pragma("index_info", i)
        info$name[order(info$seqno)]
      })
    } else if (db_is_pg(con)) {
      sql <- paste("SELECT i.indexrelid AS id, a.attname AS col, k.ord AS ord FROM pg_index i",
                   "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)",
                   "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum",
                   "WHERE i.indrelid = $1::oid")
      d <- db_query_params(con, sql, list(src$oid))
      lapply(split(d, d$id), function(x) x$col[order(x$ord)])
    } else {
      list()
    }
  }, error = function(e) list())
  any(vapply(leading, function(cols) length(cols) >= length(strata) &&
               setequal(cols[seq_along(strata)], strata), logical(1)))
}

# ---- masking -----------------------------------------------------------------------------

# Workers of the user's future plan (1 without future.apply).
db_workers <- function() {
  if (!requireNamespace("future.apply", quietly = TRUE) || !requireNamespace("future", quietly = TRUE)) return(1L)
  w <- future::nbrOfWorkers()
  if (!is.finite(w) || w < 1) 1L else as.integer(w)
}

# The function a worker runs on one group: defined here, in the namespace, so that it carries
# no enclosing frame (a closure made inside db_mask_batch() would ship the whole batch to
# every worker).
db_stratum_worker <- function(d, st, nthreads, fun = anonymise_stratum) {
  # a group whose records or values are not those the statistics counted: the table changed
  tryCatch(fun(d, st, nthreads = nthreads), detanon_error_data = function(e) {
    stop_arg("the strata read for masking are not those the statistics pass counted (",
             sub("^[A-Za-z_.]+\\(\\): ", "", conditionMessage(e)), "): `table` changed while it was read (stop ",
             "the writers, or run outside a transaction, which reads one snapshot), or, with read = \"index\", the ",
             "database matched a `strata` value otherwise than R does (try read = \"order\"). Nothing was written.",
             kind = "data")
  })
}

db_mask_batch <- function(batch, st, nthreads, fun = anonymise_stratum) {
  worker <- db_stratum_worker
  if (length(batch) > 1L && db_workers() > 1L) {
    res <- tryCatch(future.apply::future_lapply(batch, worker, st = st, nthreads = nthreads, fun = fun,
                                                future.packages = "detanon", future.seed = NULL),
                    error = function(e) {
                      stop_arg("a worker failed while masking a group of strata: ", conditionMessage(e),
                               " No output table was written.", kind = "worker")
                    })
    return(res)
  }
  lapply(batch, worker, st = st, nthreads = nthreads, fun = fun)
}

# The exact sums of the `vars` values masked (and of their squared deviations from the
# statistics' means): equal to the statistics' means and SDs when the masking pass read
# the values the statistics pass read.
db_seen <- function(st) {
  acc <- acc2 <- NULL
  centre <- unname(st$mean)
  list(add = function(x) {
    if (!nrow(x)) return(invisible())
    acc <<- acc_add(acc, x)
    acc2 <<- acc_add(acc2, scale_tiny(x, st$e), centre = centre)
  }, same = function() {
    if (is.null(acc)) return(st$n == 0)
    identical(acc_round(acc, st$e) / st$n, centre) &&
      identical(sqrt(acc_round(acc2) / (st$n - 1)), unname(st$sd))
  })
}

# ---- writing -----------------------------------------------------------------------------

# A name for a table, index or savepoint of this call, drawn without R's random numbers (the
# caller's random stream is left as it was): tempfile() makes it unique.
db_temp_name <- function(prefix) {
  paste0(prefix, sub("^file", "", basename(tempfile())))
}

# Column types for the output: dbDataType() of each released column.
db_fields <- function(con, out) {
  vapply(out, function(x) DBI::dbDataType(con, x), character(1))
}

# Append rows exactly: RPostgreSQL writes doubles with 15 digits and timestamps to the
# second, so they go as text (17 digits; microseconds with the offset).
db_append <- function(con, name, d) {
  if (inherits(con, "PostgreSQLConnection")) {
    for (v in names(d)) {
      x <- d[[v]]
      if (inherits(x, "POSIXct")) {
        d[[v]] <- db_time_text(x, utc = TRUE)
      } else if (is.double(x) && !inherits(x, "Date")) {
        s <- sprintf("%.17g", x)
        s[is.na(x)] <- NA_character_
        d[[v]] <- s
      } else if (is.factor(x)) {
        d[[v]] <- as.character(x)
      }
    }
    ok <- DBI::dbWriteTable(con, name, d, append = TRUE, row.names = FALSE)
    if (!isTRUE(ok)) stop_arg("writing the release to the database failed.", kind = "database")
    return(invisible())
  }
  DBI::dbAppendTable(con, name, d)
  invisible()
}

# The written table takes the output's name (an existing output table dropped first:
# `overwrite` was checked), inside the call's transaction.
db_replace <- function(con, tmp, dst, overwrite) {
  if (dst$exists) {
    if (!overwrite) stop_arg("`output` table \"", dst$name, "\" exists; choose another name or set `overwrite = TRUE`.")
    DBI::dbExecute(con, paste("DROP TABLE", dst$sql))
  }
  DBI::dbExecute(con, paste("ALTER TABLE", db_quote(con, tmp), "RENAME TO", db_quote(con, dst$name)))
  invisible()
}
