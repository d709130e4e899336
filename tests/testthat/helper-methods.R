# Inputs of the saved digests of every masking verb's release
# (tests/testthat/fixtures/method-releases.csv, made by tools/method-releases.R from detanon
# at commit 406d332, before the registry of masking methods): the verbs on the registry must
# give the same releases bit for bit.
method_fixture_key <- "fixture-key-of-the-method-registry-01"
method_fixture_data <- function() {
  set.seed(20261126)
  n <- 1200
  # tie-heavy: few distinct values, many duplicate records, two strata
  ties <- data.frame(g = sample(c("a", "b"), n, replace = TRUE, prob = c(0.7, 0.3)),
                     x = sample(c(1, 2, 2.5, 4), n, replace = TRUE),
                     y = round(stats::rexp(n) * 3), z = sample(10:14, n, replace = TRUE))
  list(titanic = list(data = titanic_paper()[-1], vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family")),
       ties = list(data = ties, vars = c("x", "y", "z"), strata = "g"))
}

# Every verb's release on both sets, as functions of nthreads (the same for any).
method_fixture_calls <- function() {
  sets <- method_fixture_data()
  key <- method_fixture_key
  out <- list()
  for (nm in names(sets)) local({
    s <- sets[[nm]]
    d <- s$data
    v <- s$vars
    g <- s$strata
    tab <- unique(d[g])
    tab$k <- 3L + seq_len(nrow(tab)) %% 3L
    out[[paste0(nm, "/anonymise")]] <<- function(nt) anonymise(d, vars = v, strata = g, k = 3, nthreads = nt)
    out[[paste0(nm, "/anonymise k5 none")]] <<- function(nt) {
      anonymise(d, vars = v, strata = g, k = 5, format = "none", nthreads = nt)
    }
    out[[paste0(nm, "/adaptive")]] <<- function(nt) {
      anonymise_adaptive(d, vars = v, strata = g, k = 3, m = 1, nthreads = nt)
    }
    out[[paste0(nm, "/adaptive rate w1")]] <<- function(nt) {
      anonymise_adaptive(d, vars = v, strata = g, k = tab, k_max = 20, m = 2, rate = c(0.3, 0.1), w1 = 0.01,
                         nthreads = nt)
    }
    out[[paste0(nm, "/mdav")]] <<- function(nt) anonymise_mdav(d, vars = v, strata = g, k = 3, nthreads = nt)
    out[[paste0(nm, "/mdav table noise")]] <<- function(nt) {
      anonymise_mdav(d, vars = v, strata = g, k = tab, noise = TRUE, key = key, nthreads = nt)
    }
    out[[paste0(nm, "/keyed")]] <<- function(nt) {
      anonymise_keyed(d, vars = v, strata = g, k = 3, key = key, size = 8, nthreads = nt)
    }
    out[[paste0(nm, "/keyed exact")]] <<- function(nt) {
      anonymise_keyed(d, vars = v, strata = g, k = 2, key = key, size = 5, noise = FALSE, format = "none",
                      nthreads = nt)
    }
    # the search over every family (keps included), verified on the recipe attack too
    out[[paste0(nm, "/tune_release")]] <<- function(nt) {
      tune_release(d, vars = v, strata = g, k = 2, small_strata = "suppress", key = key, keps_epsilon = 1,
                   intruder = intruder(vars = v, strata = g), verify = c("linkage_released", "recipe"),
                   nthreads = nt)
    }
  })
  out <- lapply(out, function(f) function(nt) suppressWarnings(suppressMessages(f(nt))))
  out
}

# An exact digest of a release: every column (doubles as hexadecimal floats), its names and
# classes, and the release metadata.
method_digest <- function(x) {
  if (inherits(x, "detanon_tuned")) {
    tried <- x$tried
    tried$seconds <- NULL
    lines <- c(unlist(lapply(tried, function(v) if (is.double(v)) sprintf("%a", v) else as.character(v))),
               if (!is.null(x$release)) method_digest(x$release), x$stop)
    return(method_md5(lines))
  }
  info <- release_info(x)
  x <- as.data.frame(x)
  lines <- c(names(x), unlist(lapply(x, function(v) {
    c(class(v), if (is.double(v)) sprintf("%a", v) else as.character(v))
  }), use.names = FALSE),
  deparse(info[c("verb", "settings", "counts", "stats")], control = c("keepNA", "keepInteger", "hexNumeric")))
  method_md5(lines)
}

method_md5 <- function(lines) {
  f <- tempfile()
  on.exit(unlink(f))
  writeLines(lines, f)
  unname(tools::md5sum(f))
}
