# A small driver for headless Chromium, for the browser test of detanon_app() (test-app.R).
# It speaks the Chrome DevTools Protocol over --remote-debugging-pipe: JSON messages ended
# by a NUL byte, read by the browser on file descriptor 3 and written on descriptor 4.
# The two descriptors are named pipes (mkfifo) opened by a shell, so the driver needs only
# base R, processx and jsonlite (no websocket client, no chromote). Unix only.

# The Chromium (or Chrome) binary: $DETANON_CHROMIUM, else the first one on the PATH
# (DETANON_CHROMIUM=none skips the browser test).
chromium_path <- function() {
  if (.Platform$OS.type != "unix" || !nzchar(Sys.which("mkfifo"))) return(NULL)
  p <- Sys.getenv("DETANON_CHROMIUM")
  if (identical(p, "none")) return(NULL)
  if (nzchar(p) && file.exists(p)) return(p)
  for (b in c("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")) {
    w <- Sys.which(b)
    if (nzchar(w)) return(unname(w))
  }
  NULL
}

# A free TCP port on 127.0.0.1.
free_port <- function() {
  for (i in 1:50) {
    port <- sample(20000:40000, 1L)
    ok <- tryCatch({
      s <- serverSocket(port)
      close(s)
      TRUE
    }, error = function(e) FALSE)
    if (ok) return(port)
  }
  stop("no free port found")
}

# detanon_app() in a background R process listening on 127.0.0.1 only.
start_app_process <- function(timeout = 60) {
  port <- free_port()
  log <- tempfile("app", fileext = ".log")
  tmp <- tempfile("apptmp") # the app's own temporary files (uploads), removed with it
  dir.create(tmp)
  script <- sprintf("detanon::detanon_app(run = TRUE, host = \"127.0.0.1\", port = %dL, launch.browser = FALSE)", port)
  p <- processx::process$new(file.path(R.home("bin"), "Rscript"), c("-e", script), stdout = log, stderr = "2>&1",
                             env = c("current", R_LIBS = paste(.libPaths(), collapse = .Platform$path.sep),
                                     R_TESTS = "", TMPDIR = tmp),
                             cleanup = TRUE)
  url <- sprintf("http://127.0.0.1:%d/", port)
  deadline <- Sys.time() + timeout
  repeat {
    up <- tryCatch(local({
      con <- url(url)
      on.exit(close(con))
      length(suppressWarnings(readLines(con, n = 1L))) > 0L
    }), error = function(e) FALSE)
    if (isTRUE(up)) break
    if (!p$is_alive() || Sys.time() > deadline) {
      p$kill()
      unlink(tmp, recursive = TRUE)
      stop("the app did not start:\n", paste(readLines(log), collapse = "\n"))
    }
    Sys.sleep(0.2)
  }
  list(url = url, log = log, process = p, kill = function() {
    p$kill()
    unlink(tmp, recursive = TRUE)
  })
}

# Wait until a downloaded file is complete.
wait_file <- function(path, timeout = 30) {
  deadline <- Sys.time() + timeout
  while (Sys.time() < deadline) {
    if (file.exists(path) && !file.exists(paste0(path, ".crdownload")) && file.size(path) > 0) {
      s <- file.size(path)
      Sys.sleep(0.3)
      if (identical(file.size(path), s)) return(TRUE)
    }
    Sys.sleep(0.1)
  }
  FALSE
}

# Start headless Chromium and attach to a new page. Returns a list of functions: call (a
# protocol method), eval (JavaScript, returns its value), wait_for (until a JavaScript
# condition holds), navigate, set_file (a file input, as a user choosing a file),
# screenshot (the whole page, or the first screen with `full = FALSE`, as PNG) and close.
cdp_browser <- function(chrome, width = 1280, height = 900) {
  dir <- tempfile("cdp")
  dir.create(dir)
  fin <- file.path(dir, "to-browser")
  fout <- file.path(dir, "from-browser")
  if (system2("mkfifo", c(shQuote(fin), shQuote(fout))) != 0L) stop("mkfifo failed")
  args <- c("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--remote-debugging-pipe",
            paste0("--user-data-dir=", file.path(dir, "profile")), sprintf("--window-size=%d,%d", width, height),
            "about:blank")
  # (TMPDIR: Chromium's own scratch files go into `dir`, which is removed, not R's tempdir)
  cmd <- sprintf("exec env TMPDIR=%s %s %s 3<%s 4>%s", shQuote(dir), shQuote(chrome),
                 paste(shQuote(args), collapse = " "), shQuote(fin), shQuote(fout))
  proc <- processx::process$new("sh", c("-c", cmd), stdout = file.path(dir, "stdout"),
                                stderr = file.path(dir, "stderr"), cleanup = TRUE)
  # the shell opens the browser's input first (it waits for a writer), then its output
  w <- NULL
  deadline <- Sys.time() + 20
  while (is.null(w)) {
    w <- tryCatch(suppressWarnings(fifo(fin, open = "wb", blocking = FALSE)), error = function(e) NULL)
    if (is.null(w)) {
      if (!proc$is_alive() || Sys.time() > deadline) {
        proc$kill()
        stop("Chromium did not start: ", paste(readLines(file.path(dir, "stderr")), collapse = "\n"))
      }
      Sys.sleep(0.05)
    }
  }
  r <- fifo(fout, open = "rb", blocking = FALSE)
  id <- 0L
  buf <- raw(0)
  sid <- NULL
  send <- function(method, params, session) {
    id <<- id + 1L
    msg <- list(id = id, method = method,
                params = if (is.null(params)) structure(list(), names = character()) else params)
    if (session) msg$sessionId <- sid
    writeBin(c(charToRaw(as.character(jsonlite::toJSON(msg, auto_unbox = TRUE, null = "null"))), as.raw(0L)), w)
    flush(w)
    id
  }
  receive <- function() {
    repeat {
      # (an empty non-blocking pipe is an error for readBin(): nothing to read yet)
      chunk <- tryCatch(readBin(r, "raw", 1048576L), error = function(e) raw(0))
      if (!length(chunk)) break
      buf <<- c(buf, chunk)
    }
    out <- list()
    while (length(z <- which(buf == as.raw(0L)))) {
      z <- z[1L]
      out[[length(out) + 1L]] <- jsonlite::fromJSON(rawToChar(buf[seq_len(z - 1L)]), simplifyVector = FALSE)
      buf <<- buf[-seq_len(z)]
    }
    out
  }
  call <- function(method, params = NULL, session = TRUE, timeout = 30) {
    my <- send(method, params, session)
    deadline <- Sys.time() + timeout
    repeat {
      for (m in receive()) {
        if (identical(m$id, my)) {
          if (!is.null(m$error)) stop(method, ": ", m$error$message)
          return(m$result)
        }
      }
      if (Sys.time() > deadline) stop(method, ": no answer in ", timeout, " s")
      Sys.sleep(0.02)
    }
  }
  target <- call("Target.createTarget", list(url = "about:blank"), session = FALSE)$targetId
  sid <- call("Target.attachToTarget", list(targetId = target, flatten = TRUE), session = FALSE)$sessionId
  call("Emulation.setDeviceMetricsOverride", list(width = width, height = height, deviceScaleFactor = 1, mobile = FALSE))
  js <- function(expr) {
    res <- call("Runtime.evaluate", list(expression = expr, returnByValue = TRUE, awaitPromise = TRUE))
    if (!is.null(res$exceptionDetails)) {
      stop("JavaScript error: ", res$exceptionDetails$exception$description %||||% res$exceptionDetails$text)
    }
    res$result$value
  }
  wait_for <- function(expr, timeout = 30) {
    deadline <- Sys.time() + timeout
    while (Sys.time() < deadline) {
      ok <- tryCatch(isTRUE(js(paste0("!!(", expr, ")"))), error = function(e) FALSE)
      if (ok) return(TRUE)
      Sys.sleep(0.1)
    }
    FALSE
  }
  navigate <- function(url) {
    call("Page.navigate", list(url = url))
    Sys.sleep(0.2)
    wait_for("document.readyState === 'complete'")
  }
  set_file <- function(selector, path) {
    root <- call("DOM.getDocument", list(depth = 0L))$root$nodeId
    node <- call("DOM.querySelector", list(nodeId = root, selector = selector))$nodeId
    if (!length(node) || node == 0) stop("no element ", selector)
    call("DOM.setFileInputFiles", list(files = list(normalizePath(path)), nodeId = node))
    invisible(TRUE)
  }
  screenshot <- function(path, full = TRUE) {
    h <- js("Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    h <- if (full) min(max(as.numeric(h), height), 6000) else height
    res <- call("Page.captureScreenshot", list(format = "png", captureBeyondViewport = TRUE,
                                               clip = list(x = 0, y = 0, width = width, height = h, scale = 1)))
    writeBin(jsonlite::base64_dec(res$data), path)
    invisible(path)
  }
  close_all <- function() {
    try(call("Browser.close", session = FALSE, timeout = 5), silent = TRUE)
    try(close(w), silent = TRUE)
    try(close(r), silent = TRUE)
    proc$kill()
    unlink(dir, recursive = TRUE)
  }
  list(call = call, eval = js, wait_for = wait_for, navigate = navigate, set_file = set_file,
       screenshot = screenshot, close = close_all)
}

`%||||%` <- function(a, b) if (is.null(a)) b else a
