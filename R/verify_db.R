#' Verify a release in a database against risk limits, stratum by stratum
#'
#' `verify_db()` runs the within-stratum attacks of [risk_partitioned()] on a release written
#' by [anonymise_db()] (or any table of masked records with a key in common with the
#' original) without reading either table into memory, and says whether every attack stays
#' within the limits of [tune_release()]: the one-record rate of each attack at most `worst`
#' and its top-`m` rate at most `top_m`. It is the verification on all strata of a release
#' whose method and settings were searched on a sample of strata (see
#' `vignette("database")`).
#'
#' The tables are joined on `by` (the records of `release`, each with its original) and the
#' join is read three times: twice over chunks of `chunk` rows for the exact z-scale of the
#' original `vars` (the scale of all the released records' originals, as
#' [risk_partitioned()] and the attacks in memory take it), then as one stream sorted by
#' `strata`, cut into groups of whole strata of about `group_size` records (the readers of
#' [anonymise_db()]). Each group is attacked by an intruder who holds all original records
#' of `vars` and `strata` (`intruder(vars, strata)`, `p = 1`) and no control is run, so each
#' record's success is the one of [risk_partitioned()], and of the attack in memory with
#' `control = FALSE`; the rates are the means of those successes over all attacked records.
#' `by` is never given to the attacks: it is the custodian's key, not a published column
#' (drop it from the release before publication, or make sure it identifies no one outside
#' the database).
#'
#' Everything is read in one transaction (as [anonymise_db()] reads: a savepoint inside the
#' caller's open transaction, `REPEATABLE READ` on PostgreSQL), which is rolled back at the
#' end: nothing in the database changes.
#'
#' @section Memory and workers:
#' The R process holds one chunk during the scale passes and one group of whole strata of
#' both tables (the largest stratum, or `group_size` records of small strata) with the
#' attacks' working memory while verifying; with a `future` plan of W workers
#' ([future::plan()]), W groups are read and attacked at a time, each on its worker. The
#' table size does not enter.
#'
#' @param con A DBI connection ([DBI::dbConnect()]).
#' @param table The name of the table of original records (one string).
#' @param release The name of the table of masked records (one string).
#' @param by The key column (one name) that both tables hold, unique in each: a record of
#'   `release` is compared with the record of `table` of the same key. Records of `table`
#'   without a released record (strata suppressed by `small_strata = "suppress"`) are not
#'   attacked.
#' @param vars,strata The masked columns and the strata of the release, as given to
#'   [anonymise_db()] (the intruder's variables and strata).
#' @param worst,top_m,m The limits, as in [tune_release()]: the largest one-record rate of
#'   any attack, the largest top-`m` rate, and `m`. For the limits of a search:
#'   `worst = tuned$limits$worst, top_m = tuned$limits$top_m, m = tuned$limits$m`.
#' @param attacks The attacks, names from [battery_attacks()] that run within strata:
#'   `"linkage_released"`, `"linkage_original"` ([attack_linkage()] in either direction) and
#'   `"assignment"` ([attack_assignment()]).
#' @param chunk Rows fetched at a time during the scale passes and the sorted stream.
#' @param group_size Strata are attacked in groups of about this many records.
#' @param nthreads Number of threads of each attack.
#' @return An object of class `detanon_db_verification`, printed as a short report: a list
#'   with `pass` (`TRUE` when every attack is within both limits), `attacks` (a data frame,
#'   one row per attack: `attack`, `rate`, `rate_m` (the top-`m` rate; `NA` for the
#'   assignment, which makes one claim per record), `n_attacked`, `worst_stratum_rate` (the
#'   largest rate within one stratum, for information: the limits are on the rates over all
#'   records), `pass`), `limits` (`worst`, `top_m`, `m`), `n` (the records verified),
#'   `n_strata`, `n_groups`, `table` and `release`.
#' @seealso [anonymise_db()], [tune_release()], [risk_partitioned()] for data in memory.
#' @family partitioned anonymisation
#' @examples
#' if (requireNamespace("DBI", quietly = TRUE) && requireNamespace("RSQLite", quietly = TRUE)) {
#'   con <- DBI::dbConnect(RSQLite::SQLite(), ":memory:")
#'   d <- titanic_paper()
#'   DBI::dbWriteTable(con, "titanic", d)
#'   anonymise_db(con, "titanic", vars = c("Age", "Fare"), strata = c("Pclass", "Sex"),
#'                k = 10, output = "titanic_masked", method = "mdav", check_identifiers = FALSE)
#'   v <- verify_db(con, "titanic", "titanic_masked", by = "PassengerId", vars = c("Age", "Fare"),
#'                  strata = c("Pclass", "Sex"))
#'   print(v)
#'   DBI::dbDisconnect(con)
#' }
#' @export
verify_db <- function(con, table, release, by, vars, strata, worst = 0.1, top_m = 0.3, m = 3,
                      attacks = c("linkage_released", "linkage_original", "assignment"), chunk = 1e5,
                      group_size = 1e6, nthreads = getOption("detanon.nthreads", 1L)) {
  rng <- db_rng_state()
  on.exit(db_rng_restore(rng), add = TRUE)
  check_db_connection(con)
  table <- check_table_name(table, "table")
  release <- check_table_name(release, "release")
  for (a in c("by", "vars", "strata")) {
    if (eval(call("missing", as.name(a)))) stop_arg("`", a, "` must be given.")
  }
  if (!is.character(by) || length(by) != 1L || is.na(by)) {
    stop_arg("`by` must be one column name, not ", show_value(by), ".")
  }
  worst <- check_number(worst, "worst", 0, 1)
  top_m <- check_number(top_m, "top_m", 0, 1)
  m <- check_whole(m, "m", min = 1)
  choices <- eval(formals(verify_db)$attacks)
  if (!is.character(attacks) || !length(attacks) || anyNA(attacks) || !all(attacks %in% choices)) {
    stop_arg("`attacks` must name attacks that run within strata: ", paste0("\"", choices, "\"", collapse = ", "),
             ", not ", show_value(attacks), ".")
  }
  attacks <- unique(attacks)
  chunk <- check_whole(chunk, "chunk", min = 1)
  group_size <- check_whole(group_size, "group_size", min = 1)
  nthreads <- check_nthreads(nthreads)
  tabs <- list(table = table, release = release)
  src <- lapply(names(tabs), function(a) {
    s <- db_relation(con, tabs[[a]], a)
    if (is.null(s)) stop_arg("`", a, "` \"", tabs[[a]], "\" cannot be read: there is no such table.", kind = "data")
    s
  })
  names(src) <- names(tabs)
  proto <- lapply(src, function(s) db_prototype(con, s))
  for (a in names(tabs)) {
    check_columns(by, proto[[a]], "by")
    check_columns(strata, proto[[a]], "strata")
    check_columns(vars, proto[[a]], "vars")
  }
  check_vars(proto$table, vars, c(strata, by))

  made <- new.env(parent = emptyenv())
  made$close <- list()
  tx <- NULL
  on.exit({
    for (close in made$close) try(close(), silent = TRUE)
    if (!is.null(tx)) db_rollback(con, tx)
  }, add = TRUE, after = FALSE)
  tx <- db_begin(con)
  db_run(con, {
    cols <- c(by, strata, vars)
    cast_o <- db_column_types(con, src$table, proto$table[cols])
    cast_r <- db_column_types(con, src$release, proto$release[cols])
    # each released record beside its original: the originals' columns by their names, the
    # released ones as r1, r2, ... (cut apart and given their tables' types by verify_split())
    rcols <- paste0("r", seq_along(cols))
    q <- function(x) db_quote(con, x)
    join <- list(sql = paste0("(SELECT ", paste0("o.", q(cols), collapse = ", "), ", ",
                              paste0("r.", q(cols), " AS ", q(rcols), collapse = ", "), " FROM ", src$table$sql,
                              " AS o JOIN ", src$release$sql, " AS r ON o.", q(by), " = r.", q(by),
                              ") AS detanon_pairs"))
    split_pair <- function(d) verify_split(d, cols, rcols, by, strata, cast_o, cast_r)
    n_release <- DBI::dbGetQuery(con, paste("SELECT COUNT(*) AS n FROM", src$release$sql))$n
    scale <- db_scale(db_chunk_source(con, db_select(con, join, vars), chunk, made, cast_o), vars)
    if (scale$n != n_release) {
      stop_arg("`release` \"", release, "\" holds ", plural(n_release, "record"), " of which ", scale$n,
               " have a record of `table` \"", table, "\" with the same `by` (", by, "): every released record ",
               "needs its original, once.", kind = "data")
    }
    works <- lapply(attacks, function(a) {
      measure <- paste0("attack_", a)
      args <- list(intruder = intruder(vars = vars, strata = strata), control = FALSE, m = m)
      risk_worker(measure, vars, strata, args, nthreads, scale$scale, NULL, function(...) NULL)
    })
    groups <- db_group_reader(con, join, c(cols, rcols), strata, NULL, "order", chunk, group_size, made)
    workers <- db_workers()
    acc <- matrix(0, length(attacks), 4L, dimnames = list(attacks, c("n", "s", "s_m", "worst")))
    n_groups <- n_strata <- 0L
    repeat {
      batch <- list()
      while (length(batch) < workers && !is.null(g <- groups())) batch[[length(batch) + 1L]] <- split_pair(g)
      if (!length(batch)) break
      parts <- if (length(batch) > 1L) {
        tryCatch(future.apply::future_lapply(batch, verify_group, works = works, strata = strata,
                                             future.packages = "detanon", future.seed = NULL),
                 error = function(e) stop_arg("a worker failed while attacking a group of strata: ",
                                              conditionMessage(e), kind = "worker"))
      } else {
        lapply(batch, verify_group, works = works, strata = strata)
      }
      for (p in parts) {
        if (inherits(p, "detanon_worker_failure")) stop_arg("attacking a group of strata failed: ", p$message,
                                                            kind = "worker")
        acc[, 1:3] <- acc[, 1:3] + p$sums[, 1:3, drop = FALSE]
        acc[, 4L] <- pmax(acc[, 4L], p$sums[, 4L])
        n_strata <- n_strata + p$n_strata
      }
      n_groups <- n_groups + length(batch)
    }
    rate <- acc[, "s"] / acc[, "n"]
    rate_m <- acc[, "s_m"] / acc[, "n"]
    res <- data.frame(attack = attacks, rate = unname(rate), rate_m = unname(rate_m),
                      n_attacked = unname(acc[, "n"]), worst_stratum_rate = unname(acc[, "worst"]),
                      pass = unname(!is.na(rate) & rate <= worst & (is.na(rate_m) | rate_m <= top_m)),
                      stringsAsFactors = FALSE)
    structure(list(pass = all(res$pass), attacks = res, limits = list(worst = worst, top_m = top_m, m = m),
                   n = scale$n, n_strata = n_strata, n_groups = n_groups, table = table, release = release),
              class = "detanon_db_verification")
  })
}

#' @export
print.detanon_db_verification <- function(x, ...) {
  cat(sprintf("<detanon database verification> release \"%s\" of table \"%s\": %s\n", x$release, x$table,
              if (x$pass) "PASS" else "FAIL"))
  cat(sprintf("  %s in %s (%s), limits: worst <= %s, top-%d <= %s\n", plural(x$n, "record"),
              plural(x$n_strata, "stratum", "strata"), plural(x$n_groups, "group"), format(x$limits$worst),
              x$limits$m, format(x$limits$top_m)))
  a <- x$attacks
  for (i in seq_len(nrow(a))) {
    top <- if (is.na(a$rate_m[i])) "" else sprintf(", top-%d %.4f", x$limits$m, a$rate_m[i])
    cat(sprintf("  %-17s rate %.4f%s (worst stratum %.4f)%s\n", a$attack[i], a$rate[i], top,
                a$worst_stratum_rate[i], if (a$pass[i]) "" else "  over a limit"))
  }
  invisible(x)
}

# The exact z-scale (column_scale()) of the columns `vars` over a chunk source: two passes
# of exact sums, as anonymise_stats() makes them (the same bits as column_scale() on all the
# rows at once). list(scale, n).
db_scale <- function(read, vars) {
  acc <- NULL
  big <- numeric(length(vars))
  n <- 0
  for_each_chunk(read, function(d, i) {
    x <- numeric_matrix(d, vars)
    if (anyNA(x)) stop_arg("`vars` hold missing values in `table`; the attacks need complete records.", kind = "data")
    big <<- pmax(big, .Call(C_ffi_col_maxabs, x))
    acc <<- acc_add(acc, x)
    n <<- n + nrow(x)
  })
  e <- ifelse(is.finite(big) & big > 0 & big < 1e-100, -floor(log2(big)), 0)
  if (!n) return(list(scale = NULL, n = 0))
  mean <- acc_round(acc, e) / n
  acc2 <- NULL
  for_each_chunk(read, function(d, i) acc2 <<- acc_add(acc2, scale_tiny(numeric_matrix(d, vars), e), centre = mean))
  sd <- if (n < 2) rep(NaN, length(vars)) else sqrt(acc_round(acc2) / (n - 1))
  named <- function(x) stats::setNames(x, vars)
  list(scale = list(mean = named(mean), sd = named(sd), e = named(e), keep = named(is.finite(sd) & sd > 0)), n = n)
}

# A group read from the join: the originals and the released records, each with its table's
# column types, sorted by `by` (the attacks see the same rows whatever order the database
# returns them in), without `by`. The strata must be those of the original.
verify_split <- function(d, cols, rcols, by, strata, cast_o, cast_r) {
  if (anyDuplicated(d[[by]])) {
    stop_arg("`by` (", by, ") is not unique in `table` or in `release`: every released record needs its original, ",
             "once.", kind = "data")
  }
  d <- d[order(d[[by]], method = "radix"), , drop = FALSE]
  o <- cast_o(d[cols])
  r <- cast_r(stats::setNames(d[rcols], cols))
  rownames(o) <- rownames(r) <- NULL
  for (v in strata) {
    if (!identical(as.character(o[[v]]), as.character(r[[v]]))) {
      stop_arg("`release` has other values of the `strata` column `", v, "` than `table` for the same `by`: ",
               "the release must keep the strata of its records.", kind = "data")
    }
  }
  keep <- setdiff(cols, by)
  list(o = o[keep], m = r[keep])
}

# The attacks on one group (list(o, m)): per attack the number of records attacked, the sums
# of their successes (one-record and top-m), and the largest rate within one stratum; a
# failure returned as a value.
verify_group <- function(task, works, strata) {
  id <- stratum_ids(task$o, strata)
  sums <- matrix(0, length(works), 4L)
  for (i in seq_along(works)) {
    r <- works[[i]](task)
    if (inherits(r, "detanon_worker_failure")) return(r)
    on <- !is.na(r$success)
    by <- tapply(r$success[on], id[on], mean)
    # (an attack without a top-m claim, the one-to-one assignment: NA)
    s_m <- if (is.null(r$success_m)) NA_real_ else sum(r$success_m[on])
    sums[i, ] <- c(sum(on), sum(r$success[on]), s_m, if (length(by)) max(by) else 0)
  }
  list(sums = sums, n_strata = max(c(0L, id)))
}
