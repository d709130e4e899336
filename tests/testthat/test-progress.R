# Progress bars (R/progress.R, src/progress.c): shown only when asked or interactive, never
# changing results.

catch_messages <- function(expr) {
  msgs <- list()
  value <- withCallingHandlers(expr, message = function(m) {
    msgs[[length(msgs) + 1L]] <<- m
    invokeRestart("muffleMessage")
  })
  list(value = value, messages = msgs)
}

test_that("show_progress(): the option decides, else interactive sessions and long runs", {
  withr_opt <- function(value, code) {
    old <- options(detanon.progress = value)
    on.exit(options(old))
    code
  }
  expect_true(withr_opt(TRUE, detanon:::show_progress(1)))
  expect_false(withr_opt(FALSE, detanon:::show_progress(1e12)))
  # tests run non-interactively: unset means no bar, however long the run
  expect_false(withr_opt(NULL, detanon:::show_progress(1e12)))
})

test_that("anonymise(): identical results with the bar on and off; silent when off", {
  set.seed(1)
  n <- 20000L # one stratum, k = 60: the search comes in two chunks, with a tick between
  d <- data.frame(x1 = stats::rnorm(n), x2 = stats::rexp(n), x3 = round(stats::runif(n), 1))
  old <- options(detanon.progress = TRUE, cli.progress_show_after = 0)
  on.exit(options(old))
  on <- catch_messages(anonymise(d, k = 60, check_identifiers = FALSE, nthreads = 2))
  # the bar was drawn, from the native loop, through cli
  expect_true(any(vapply(on$messages, inherits, TRUE, "cliMessage")))
  expect_true(any(grepl("Masking", vapply(on$messages, conditionMessage, ""))))
  options(detanon.progress = FALSE)
  expect_silent(off <- anonymise(d, k = 60, check_identifiers = FALSE, nthreads = 2))
  expect_identical(on$value, off)
  options(detanon.progress = NULL)
  expect_silent(dflt <- anonymise(d, k = 60, check_identifiers = FALSE, nthreads = 1))
  expect_identical(dflt, off)
  expect_identical(cli::cli_progress_num(), 0L) # every bar was terminated
})

test_that("risk_rmd(), risk_linkage() and anonymise_keps(): identical with the bar on and off", {
  set.seed(2)
  n <- 3000L
  d <- data.frame(g = factor(sample(c("a", "b"), n, TRUE)), x1 = stats::rnorm(n), x2 = stats::rexp(n))
  m <- anonymise(d, k = 4, vars = c("x1", "x2"), strata = "g", check_identifiers = FALSE)
  run <- function(show) {
    old <- options(detanon.progress = show, cli.progress_show_after = 0)
    on.exit(options(old))
    set.seed(3)
    rmd <- risk_rmd(d, m, vars = c("x1", "x2"))
    link <- risk_linkage(d, m, vars = c("x1", "x2"), strata = "g")
    set.seed(4)
    keps <- anonymise_keps(d, epsilon = 4, k = 5, vars = c("x1", "x2"), strata = "g", confidence = 0.9)
    list(rmd = rmd, link = link, keps = keps)
  }
  on <- suppressMessages(run(TRUE))
  expect_silent(off <- run(FALSE))
  expect_identical(on, off)
  expect_identical(cli::cli_progress_num(), 0L)
})

test_that("a bar left open by an error or interrupt is cleaned up", {
  f <- function() {
    detanon:::with_progress(TRUE, {
      cli::cli_progress_bar("left open", total = 10, .envir = globalenv())
      stop("boom")
    })
  }
  expect_error(f(), "boom")
  expect_identical(cli::cli_progress_num(), 0L)
  # a normal exit leaves bars alone (the C code terminates its own)
  expect_identical(detanon:::with_progress(TRUE, 1 + 1), 2)
})

test_that("task_progress(): progressr's progressions of the given steps, or nothing without it", {
  skip_if_not_installed("progressr")
  old <- options(progressr.enable = TRUE) # progressr is off in non-interactive sessions otherwise
  on.exit(options(old))
  got <- list()
  withCallingHandlers({
    p <- detanon:::task_progress(3)
    p()
    p(amount = 2)
  }, progression = function(c) got[[length(got) + 1L]] <<- c)
  type <- vapply(got, function(c) c$type, "")
  expect_identical(as.numeric(got[[which(type == "initiate")]]$steps), 3)
  expect_identical(vapply(got[type == "update"], function(c) as.numeric(c$amount), numeric(1)), c(1, 2))
})
