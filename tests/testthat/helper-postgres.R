# A private PostgreSQL server for the database tests: initdb into a new directory, pg_ctl start
# on a free loopback port (TCP on 127.0.0.1 only, its Unix socket in the same directory), and,
# when the test run ends, pg_ctl stop and the directory removed. Started once, on first use,
# for the whole run (testthat's teardown_env()); a test that needs it calls local_postgres(),
# which skips, saying why, where the server binaries or the DBI packages are absent.
#
# PostgreSQL refuses to run as root. When the tests run as root (containers, CI), the server
# runs as the unprivileged user `nobody` through `runuser -u nobody --` (util-linux); the
# directory is then made under the temporary root (TMPDIR or /tmp), not inside R's own
# temporary directory, which is private to root, and given to `nobody`. The server is
# reached over TCP with the trust method, so the R session (root) never touches the files.
# The binaries are looked up in DETANON_PG_BIN, on PATH, then in /usr/lib/postgresql/*/bin
# (Debian keeps them off PATH).

pg_bin_dir <- function() {
  cands <- c(Sys.getenv("DETANON_PG_BIN", ""), dirname(Sys.which("initdb")),
             rev(sort(Sys.glob("/usr/lib/postgresql/*/bin"))))
  for (d in cands[nzchar(cands) & cands != "."]) {
    if (all(file.exists(file.path(d, c("initdb", "pg_ctl", "postgres"))))) return(d)
  }
  ""
}

pg_env <- new.env(parent = emptyenv())

# A port nobody listens on (free now; start_postgres() retries on a clash).
pg_free_port <- function() {
  for (i in 1:50) {
    port <- sample(20000:60000, 1L)
    s <- tryCatch(serverSocket(port), error = function(e) NULL)
    if (!is.null(s)) {
      close(s)
      return(port)
    }
  }
  stop("no free port found")
}

# Start a server; returns a list (dir, port, bin, run) or a string saying why it cannot.
start_postgres <- function() {
  if (.Platform$OS.type != "unix") return("the PostgreSQL tests run on Unix only")
  for (pkg in c("DBI", "RPostgreSQL")) {
    if (!requireNamespace(pkg, quietly = TRUE)) return(paste0("the package ", pkg, " is not installed"))
  }
  bin <- pg_bin_dir()
  if (!nzchar(bin)) {
    return(paste("the PostgreSQL server binaries (initdb, pg_ctl) are not found; install the",
                 "Debian package postgresql or set DETANON_PG_BIN"))
  }
  root <- identical(system2("id", "-u", stdout = TRUE), "0")
  run <- character()
  if (root) {
    runuser <- Sys.which("runuser")
    if (!nzchar(runuser)) return("running as root and `runuser` (util-linux) is absent: PostgreSQL refuses root")
    run <- c(runuser, "-u", "nobody", "--")
    # a temporary root that `nobody` can reach (R CMD check may set TMPDIR to a private one)
    roots <- unique(c(dirname(tempdir()), "/tmp", "/var/tmp"))
    reachable <- vapply(roots, function(r) {
      dir.exists(r) && identical(suppressWarnings(system2(run[1L], c(run[-1L], "test", "-x", shQuote(r)))), 0L)
    }, logical(1))
    if (!any(reachable)) return("running as root and no temporary directory is reachable by the user `nobody`")
    dir <- tempfile("detanon-pg-", tmpdir = roots[reachable][1L])
  } else {
    dir <- tempfile("detanon-pg-")
  }
  dir.create(dir, mode = "0700")
  if (root) system2("chown", c("nobody", shQuote(dir)))
  cmd <- function(prog, args) {
    exe <- c(run, file.path(bin, prog), args)
    suppressWarnings(system2(exe[1L], exe[-1L], stdout = TRUE, stderr = TRUE))
  }
  out <- cmd("initdb", c("-D", shQuote(file.path(dir, "data")), "-A", "trust", "-U", "postgres",
                         "-E", "UTF8", "--no-locale", "--no-sync"))
  if (!is.null(attr(out, "status"))) {
    unlink(dir, recursive = TRUE)
    return(paste("initdb failed:", paste(utils::tail(out, 3L), collapse = " ")))
  }
  for (attempt in 1:5) {
    port <- pg_free_port()
    opts <- paste("-p", port, "-k", dir, "-c listen_addresses=127.0.0.1 -c fsync=off",
                  "-c full_page_writes=off -c synchronous_commit=off")
    out <- cmd("pg_ctl", c("-D", shQuote(file.path(dir, "data")), "-l", shQuote(file.path(dir, "log")),
                           "-o", shQuote(opts), "-w", "-t", "30", "start"))
    if (is.null(attr(out, "status"))) {
      pg_watchdog(dir, bin, run)
      return(list(dir = dir, port = port, bin = bin, run = run, cmd = cmd))
    }
  }
  log <- tryCatch(readLines(file.path(dir, "log")), error = function(e) character())
  unlink(dir, recursive = TRUE)
  paste("pg_ctl start failed:", paste(utils::tail(c(out, log), 3L), collapse = " "))
}

# Should this R process die without its teardown (killed, crashed), a background shell stops
# the server and removes its directory once the process is gone; it ends by itself as soon
# as the directory is removed by the normal teardown.
pg_watchdog <- function(dir, bin, run) {
  stop_cmd <- paste(c(shQuote(run), shQuote(file.path(bin, "pg_ctl")), "-D", shQuote(file.path(dir, "data")),
                      "-m immediate -w stop"), collapse = " ")
  script <- sprintf("while kill -0 %d 2>/dev/null && [ -d %s ]; do sleep 1; done; if [ -d %s ]; then %s; rm -rf %s; fi",
                    Sys.getpid(), shQuote(dir), shQuote(dir), stop_cmd, shQuote(dir))
  system2("sh", c("-c", shQuote(script)), stdout = FALSE, stderr = FALSE, wait = FALSE)
}

stop_postgres <- function(pg) {
  if (!is.list(pg)) return(invisible())
  pg$cmd("pg_ctl", c("-D", shQuote(file.path(pg$dir, "data")), "-m", "fast", "-w", "-t", "30", "stop"))
  unlink(pg$dir, recursive = TRUE)
  invisible()
}

# The running test server (started on first use, stopped when the run ends), or a skip.
local_postgres <- function() {
  if (is.null(pg_env$server)) {
    pg_env$server <- start_postgres()
    if (is.list(pg_env$server)) {
      server <- pg_env$server
      withr::defer(stop_postgres(server), envir = testthat::teardown_env())
    }
  }
  if (!is.list(pg_env$server)) testthat::skip(paste("no PostgreSQL test server:", pg_env$server))
  pg_env$server
}

# A connection to the test server's database (a new, empty database per call: tests do not see
# each other's tables), closed and the database dropped when the calling test ends.
local_pg_connection <- function(env = parent.frame()) {
  pg <- local_postgres()
  admin <- DBI::dbConnect(RPostgreSQL::PostgreSQL(), host = "127.0.0.1", port = pg$port, user = "postgres",
                          dbname = "postgres")
  name <- paste0("t", paste(sample(letters, 12L, TRUE), collapse = ""))
  DBI::dbExecute(admin, paste("CREATE DATABASE", name))
  con <- DBI::dbConnect(RPostgreSQL::PostgreSQL(), host = "127.0.0.1", port = pg$port, user = "postgres",
                        dbname = name)
  withr::defer({
    DBI::dbDisconnect(con)
    DBI::dbExecute(admin, paste("DROP DATABASE", name))
    DBI::dbDisconnect(admin)
  }, envir = env)
  con
}

# An in-memory SQLite connection, closed when the calling test ends.
local_sqlite_connection <- function(env = parent.frame()) {
  testthat::skip_if_not_installed("DBI")
  testthat::skip_if_not_installed("RSQLite")
  con <- DBI::dbConnect(RSQLite::SQLite(), ":memory:")
  withr::defer(DBI::dbDisconnect(con), envir = env)
  con
}
