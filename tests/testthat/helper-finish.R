# The releases of every masking verb on the Titanic and on a tie-heavy random set, and a
# digest of their masked columns (the hexadecimal form of every value, so the same bits
# give the same digest on every R version): test-finish.R pins the releases that the
# finishing step must give bit for bit.
finish_tie_data <- function() {
  set.seed(42)
  n <- 1200
  d <- data.frame(a = sample(0:20, n, TRUE), b = round(stats::rexp(n, 0.1), 1), c = round(stats::rnorm(n, 50, 10)),
                  w = as.integer(sample(c(0L, 0L, 0L, 1000L, 2500L, 4000L), n, TRUE) + sample(0:3000, n, TRUE)),
                  g = sample(c("x", "y", "z"), n, TRUE), stringsAsFactors = FALSE)
  d$b[sample(n, 200)] <- 0
  d
}

finish_digest <- function(release, vars) {
  f <- tempfile()
  on.exit(unlink(f))
  writeLines(unlist(lapply(vars, function(v) c(v, typeof(release[[v]]), sprintf("%a", as.double(release[[v]]))))), f)
  unname(tools::md5sum(f))
}

finish_releases <- function(formats = c("precision", "none")) {
  sets <- list(titanic = list(d = titanic_paper()[-1], vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family")),
               tie = list(d = finish_tie_data(), vars = c("a", "b", "c", "w"), strata = "g"))
  key <- "a-secret-of-the-custodian-0f3c9"
  q <- function(expr) suppressWarnings(suppressMessages(expr))
  out <- list()
  for (nm in names(sets)) {
    s <- sets[[nm]]
    for (f in formats) for (k in c(3, 10)) {
      id <- function(verb) sprintf("%s/%s/%s/k%d", nm, verb, f, k)
      out[[id("anonymise")]] <- q(anonymise(s$d, s$vars, s$strata, k = k, format = f))
      out[[id("adaptive")]] <- q(anonymise_adaptive(s$d, s$vars, s$strata, k = k, format = f))
      out[[id("keyed")]] <- q(anonymise_keyed(s$d, s$vars, s$strata, k = k, key = key, size = 2 * k + 4, format = f))
      out[[id("mdav")]] <- q(anonymise_mdav(s$d, s$vars, s$strata, k = k, format = f))
      out[[id("mdav_noise")]] <- q(anonymise_mdav(s$d, s$vars, s$strata, k = k, noise = TRUE, key = key, format = f))
      # chunks in the order of the data: the partitioned release has its rows
      out[[id("partitioned")]] <- q(anonymise_partitioned(split(s$d, rep(1:3, each = ceiling(nrow(s$d) / 3),
                                                                         length.out = nrow(s$d))),
                                                          s$vars, s$strata, k = k, format = f))
    }
    out[[sprintf("%s/anonymise/rann/k3", nm)]] <- q(anonymise(s$d, s$vars, s$strata, k = 3, engine = "rann"))
  }
  out
}

finish_digests <- function(formats = c("precision", "none")) {
  rel <- finish_releases(formats)
  vapply(names(rel), function(nm) finish_digest(rel[[nm]], release_info(rel[[nm]])$settings$vars), "")
}
