#' Anonymise a table in a database, stratum by stratum
#'
#' `anonymise_db()` masks a table that lives in a database (through DBI: SQLite, PostgreSQL or
#' any DBI backend) without reading it into memory, and writes the masked table back to the
#' same database. The result is the one [anonymise()] gives on the same table read into
#' memory, bit for bit: the same masked values for the same records.
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
#'    files, and a killed process leaves its temporary table `detanon_tmp_*` in the
#'    database);
#' 3. step 5 rescales over all pieces (exact sums of the centroids);
#' 4. the release pass writes each piece's masked rows to a new table with a temporary name,
#'    which is renamed to `output` only when every row is written. A failure (an error, an
#'    interrupt, a failed worker) drops the temporary table: `output` is never left half
#'    written, and nothing else in the database changes.
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
#' stratum plus one chunk.
#'
#' @section Types and row order:
#' The output table has the input's columns in the same order. Its column types are those
#' [DBI::dbDataType()] gives for the R types the input columns are read as; integer `vars`
#' stay integer when [anonymise()] would return them as integers. Rows are written group by
#' group (sorted by stratum with `read = "order"`), not in the input's order: keep a key
#' column (not in `vars`) to join the release to other tables, or to compare it with
#' [anonymise()] on the table read into memory (sorted by the key).
#'
#' @section Progress:
#' The masking pass reports the records masked through progressr: wrap the call in
#' `progressr::with_progress()` to see it.
#'
#' @section PostgreSQL:
#' RPostgreSQL writes doubles with 15 significant digits; `anonymise_db()` sends them as text
#' with 17 digits instead, which PostgreSQL reads back exactly.
#'
#' @param con A DBI connection ([DBI::dbConnect()]).
#' @param table The name of the table to mask (one string).
#' @param vars,strata,k As in [anonymise()]; `vars` and `strata` must be given.
#' @param output The name of the table to create with the masked records (one string, not
#'   `table`).
#' @param format As in [anonymise()]: `"natural"`, `"precision"` or `"none"`.
#' @param read How strata are read: `"order"` (one sorted stream) or `"index"` (one query per
#'   stratum through an index on the `strata` columns). See the section above.
#' @param chunk Rows fetched at a time (statistics pass, and the sorted stream).
#' @param group_size Small strata are masked together in groups of about this many records.
#' @param overwrite Replace `output` if it exists? `FALSE` (the default) is an error when it
#'   exists.
#' @param na,small_strata As in [anonymise()], with the choices the partitioned path supports
#'   (see [anonymise_stats()]).
#' @param check_identifiers Warn when a column released unmasked looks like a direct
#'   identifier? It is judged on the first group of strata read.
#' @param nthreads Number of OpenMP threads for the masking, as in [anonymise()].
#' @return Invisibly, the release metadata that [release_info()] gives for [anonymise()] on
#'   the same table (settings, counts and the step-5 scaling factors), with the name of the
#'   output table in `output`.
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
anonymise_db <- function(con, table, vars, strata, k = 3, output, format = c("natural", "precision", "none"),
                         read = c("order", "index"), chunk = 1e5, group_size = 1e6, overwrite = FALSE,
                         na = c("fail", "complete", "mean", "median"), small_strata = c("fail", "suppress"),
                         check_identifiers = TRUE, nthreads = getOption("detanon.nthreads", 1L)) {
  check_db_connection(con)
  table <- check_table_name(table, "table")
  if (missing(output)) stop_arg("`output` must be given: the name of the table to write the release to.")
  output <- check_table_name(output, "output")
  if (identical(output, table)) {
    stop_arg("`output` must differ from `table` (\"", table, "\"): the input is never overwritten.")
  }
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
  proto <- db_prototype(con, table)
  strata <- check_columns(strata, proto, "strata")
  vars <- check_columns(vars, proto, "vars")
  check_vars(proto, vars, strata)
  k <- check_whole(k, "k", min = 2)
  if (db_table_exists(con, output) && !overwrite) {
    stop_arg("`output` table \"", output, "\" exists; choose another name or set `overwrite = TRUE`.")
  }

  # everything this call creates is removed when it ends, however it ends, except the
  # output table once renamed
  made <- new.env(parent = emptyenv())
  made$tables <- character()
  made$index <- NULL
  made$close <- list()
  spill <- tempfile("detanon-db-")
  dir.create(spill, mode = "0700")
  on.exit({
    unlink(spill, recursive = TRUE)
    db_cleanup(con, made)
  }, add = TRUE)

  clock <- db_clock()
  # 1. statistics over chunks of the vars and strata columns
  cols <- c(strata, vars)
  src <- db_chunk_source(con, db_select(con, table, cols), chunk, made)
  st <- anonymise_stats(src, vars = vars, strata = strata, k = k, na = na, small_strata = small_strata,
                        format = format)
  clock("statistics pass")

  # 2. masking: groups of whole strata, `workers` groups at a time, pieces spilled to files
  groups <- db_group_reader(con, table, names(proto), strata, st, read, chunk, group_size, made)
  workers <- db_workers()
  # progress through progressr (shown inside progressr::with_progress()): records masked
  prog <- if (requireNamespace("progressr", quietly = TRUE)) progressr::progressor(steps = st$n) else function(...) NULL
  files <- character()
  first <- TRUE
  fault <- getOption("detanon.db_fault", "")
  repeat {
    batch <- list()
    while (length(batch) < workers && !is.null(g <- groups())) batch[[length(batch) + 1L]] <- g
    if (!length(batch)) break
    if (first && check_identifiers) warn_identifiers(batch[[1L]], vars, strata)
    first <- FALSE
    pieces <- db_mask_batch(batch, st, nthreads, fail = identical(fault, "worker"))
    prog(amount = sum(vapply(batch, nrow, integer(1))))
    rm(batch)
    for (p in pieces) {
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
  clock(paste0("masking pass (", length(files), " groups)"))

  # 3. step 5 over all pieces
  read_piece <- function(i) if (i <= length(files)) readRDS(files[i]) else NULL
  read_centroids <- function(i) if (i <= length(files)) readRDS(sub("piece-", "centroids-", files[i], fixed = TRUE))
  s5 <- anonymise_rescale(read_centroids, stats = st)
  clock("step 5")

  # 4. release into a table with a temporary name, renamed at the end
  tmp <- db_temp_name(con, "detanon_tmp_")
  for (i in seq_along(files)) {
    out <- anonymise_release(read_piece(i), stats = st, step5 = s5)
    out <- out[names(proto)]
    if (i == 1L) {
      made$tables <- c(made$tables, tmp)
      DBI::dbCreateTable(con, tmp, db_fields(con, out))
    }
    if (identical(fault, "release") && i == length(files)) stop("injected failure (detanon.db_fault)")
    db_append(con, tmp, out)
    rm(out)
  }
  db_rename(con, tmp, output, overwrite)
  made$tables <- setdiff(made$tables, tmp)
  clock("release pass (written and renamed)")
  meta <- release_meta(st, s5)
  meta$verb <- "anonymise_db"
  meta$output <- output
  invisible(meta)
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

# A data frame with the table's columns and no rows, typed as DBI reads them (one row is
# read: some backends type an empty result by its declared types only).
db_prototype <- function(con, table) {
  if (!db_table_exists(con, table)) {
    stop_arg("`table` \"", table, "\" cannot be read: there is no such table in the database.", kind = "data")
  }
  sql <- paste("SELECT * FROM", DBI::dbQuoteIdentifier(con, table), "LIMIT 1")
  d <- tryCatch(DBI::dbGetQuery(con, sql), error = function(e) e)
  if (inherits(d, "error") || !is.data.frame(d)) {
    stop_arg("`table` \"", table, "\" cannot be read", if (inherits(d, "error")) paste0(": ", conditionMessage(d)),
             ".", kind = "data")
  }
  d[0L, , drop = FALSE]
}

db_table_exists <- function(con, name) {
  isTRUE(tryCatch(DBI::dbExistsTable(con, name), error = function(e) FALSE))
}

# ---- reading -----------------------------------------------------------------------------

db_select <- function(con, table, cols, order = NULL) {
  q <- function(x) paste(DBI::dbQuoteIdentifier(con, x), collapse = ", ")
  paste0("SELECT ", q(cols), " FROM ", DBI::dbQuoteIdentifier(con, table),
         if (length(order)) paste0(" ORDER BY ", q(order)))
}

# A re-readable chunk source over a query: f(1) (re)starts it, f(i) returns the next `chunk`
# rows, NULL at the end.
db_chunk_source <- function(con, sql, chunk, made = NULL) {
  res <- NULL
  # an open result is cleared by db_cleanup() when the call ends early
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
    d
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
db_group_reader <- function(con, table, columns, strata, st, read, chunk, group_size, made) {
  if (!length(strata) || read == "order") {
    src <- db_chunk_source(con, db_select(con, table, columns, order = strata), chunk, made)
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
        d <- src(i)
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
  made$index <- db_ensure_index(con, table, strata)
  tab <- st$strata_table
  tab <- tab[tab$keep, , drop = FALSE]
  # strata in groups of about group_size records (a large stratum alone)
  grp <- db_size_groups(tab$n, group_size)
  sql <- db_select(con, table, columns)
  g <- 0L
  function() {
    g <<- g + 1L
    rows <- which(grp == g)
    if (!length(rows)) return(NULL)
    parts <- lapply(rows, function(r) db_read_stratum(con, sql, strata, tab[r, strata, drop = FALSE]))
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

# All rows of one stratum (`values`: a one-row data frame of its strata values) by a
# parameterised WHERE.
db_read_stratum <- function(con, sql, strata, values) {
  conds <- character(length(strata))
  params <- list()
  for (j in seq_along(strata)) {
    v <- values[[strata[j]]]
    col <- DBI::dbQuoteIdentifier(con, strata[j])
    if (is.na(v)) {
      conds[j] <- paste(col, "IS NULL")
    } else {
      params[[length(params) + 1L]] <- if (is.factor(v)) as.character(v) else v
      conds[j] <- paste(col, "=", db_placeholder(con, length(params)))
    }
  }
  sql <- paste(sql, "WHERE", paste(conds, collapse = " AND "))
  db_query_params(con, sql, params)
}

db_placeholder <- function(con, i) {
  if (inherits(con, c("PostgreSQLConnection", "PqConnection"))) paste0("$", i) else "?"
}

db_query_params <- function(con, sql, params) {
  if (!length(params)) return(DBI::dbGetQuery(con, sql))
  if (inherits(con, "PostgreSQLConnection")) {
    # RPostgreSQL sends parameters as text: doubles with 17 digits (exact), logicals as words
    txt <- vapply(params, function(v) {
      if (is.double(v)) sprintf("%.17g", v) else if (is.logical(v)) if (v) "true" else "false" else as.character(v)
    }, character(1))
    res <- DBI::dbSendQuery(con, sql, txt)
    on.exit(DBI::dbClearResult(res))
    return(DBI::dbFetch(res, n = -1))
  }
  DBI::dbGetQuery(con, sql, params = unname(params))
}

# An index on the strata columns (created unless one starting with them exists); returns
# its name when this call created it (to drop at the end), else NULL.
db_ensure_index <- function(con, table, strata) {
  if (db_has_index(con, table, strata)) return(NULL)
  name <- db_temp_name(con, "detanon_idx_")
  DBI::dbExecute(con, paste0("CREATE INDEX ", DBI::dbQuoteIdentifier(con, name), " ON ",
                             DBI::dbQuoteIdentifier(con, table), " (",
                             paste(DBI::dbQuoteIdentifier(con, strata), collapse = ", "), ")"))
  name
}

# Does an index on `table` have the strata columns as its leading columns (in any order)?
# Known for SQLite and PostgreSQL; FALSE (an index is made) for other backends.
db_has_index <- function(con, table, strata) {
  leading <- tryCatch({
    if (inherits(con, "SQLiteConnection")) {
      idx <- DBI::dbGetQuery(con, paste0("PRAGMA index_list(", DBI::dbQuoteIdentifier(con, table), ")"))$name
      lapply(idx, function(i) {
        info <- DBI::dbGetQuery(con, paste0("PRAGMA index_info(", DBI::dbQuoteIdentifier(con, i), ")"))
        info$name[order(info$seqno)]
      })
    } else if (inherits(con, c("PostgreSQLConnection", "PqConnection"))) {
      sql <- paste("SELECT i.indexrelid AS id, a.attname AS col, k.ord AS ord FROM pg_index i",
                   "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)",
                   "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum",
                   "WHERE i.indrelid = ", DBI::dbQuoteString(con, as.character(DBI::dbQuoteIdentifier(con, table))),
                   "::regclass")
      d <- DBI::dbGetQuery(con, sql)
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
db_stratum_worker <- function(d, st, nthreads, fail) {
  if (fail) stop("injected worker failure (detanon.db_fault)")
  anonymise_stratum(d, stats = st, nthreads = nthreads)
}

db_mask_batch <- function(batch, st, nthreads, fail = FALSE) {
  worker <- db_stratum_worker
  if (length(batch) > 1L && db_workers() > 1L) {
    res <- tryCatch(future.apply::future_lapply(batch, worker, st = st, nthreads = nthreads, fail = fail,
                                                future.packages = "detanon", future.seed = NULL),
                    error = function(e) {
                      stop_arg("a worker failed while masking a group of strata: ", conditionMessage(e),
                               " No output table was written.", kind = "worker")
                    })
    return(res)
  }
  lapply(batch, worker, st = st, nthreads = nthreads, fail = fail)
}

# ---- writing -----------------------------------------------------------------------------

db_temp_name <- function(con, prefix) {
  repeat {
    name <- paste0(prefix, paste(sample(c(letters, 0:9), 12L, TRUE), collapse = ""))
    if (!db_table_exists(con, name)) return(name)
  }
}

# Column types for the output: dbDataType() of each released column.
db_fields <- function(con, out) {
  vapply(out, function(x) DBI::dbDataType(con, x), character(1))
}

# Append rows exactly: RPostgreSQL writes doubles with 15 digits, so they go as 17-digit text.
db_append <- function(con, name, d) {
  if (inherits(con, "PostgreSQLConnection")) {
    for (v in names(d)) {
      x <- d[[v]]
      if (is.double(x) && !inherits(x, c("Date", "POSIXct"))) {
        s <- sprintf("%.17g", x)
        s[is.na(x)] <- NA_character_
        d[[v]] <- s
      } else if (is.factor(x)) {
        d[[v]] <- as.character(x)
      }
    }
    ok <- DBI::dbWriteTable(con, name, d, append = TRUE, row.names = FALSE)
    if (!isTRUE(ok)) stop("writing to the temporary table failed")
    return(invisible())
  }
  DBI::dbAppendTable(con, name, d)
  invisible()
}

db_rename <- function(con, from, to, overwrite) {
  sql <- paste("ALTER TABLE", DBI::dbQuoteIdentifier(con, from), "RENAME TO", DBI::dbQuoteIdentifier(con, to))
  if (overwrite && db_table_exists(con, to)) {
    DBI::dbWithTransaction(con, {
      DBI::dbExecute(con, paste("DROP TABLE", DBI::dbQuoteIdentifier(con, to)))
      DBI::dbExecute(con, sql)
    })
  } else {
    DBI::dbExecute(con, sql)
  }
  invisible()
}

# Drop what this call created (temporary tables, an index); errors here (a lost connection)
# are reported as a warning, not raised over the original error.
db_cleanup <- function(con, made) {
  if (!db_is_valid(con)) return(invisible())
  for (close in made$close) try(close(), silent = TRUE)
  for (t in made$tables) {
    tryCatch(DBI::dbExecute(con, paste("DROP TABLE IF EXISTS", DBI::dbQuoteIdentifier(con, t))),
             error = function(e) warn_detanon("could not drop the temporary table \"", t, "\": ",
                                              conditionMessage(e), kind = "database"))
  }
  if (!is.null(made$index)) {
    tryCatch(DBI::dbExecute(con, paste("DROP INDEX IF EXISTS", DBI::dbQuoteIdentifier(con, made$index))),
             error = function(e) warn_detanon("could not drop the index \"", made$index, "\": ",
                                              conditionMessage(e), kind = "database"))
  }
  invisible()
}
