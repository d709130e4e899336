# The natural release form against the unformatted one (issue 28 item 3): every attack of
# risk_battery() (rate and top-m rate) and risk1/risk2 of risk_rmd(), and the deltas (mean
# absolute change / SD of the original) per variable, for format = "natural" and "none".
#   Rscript bench/natural_form.R [out.csv]
# with the package to measure installed (R_LIBS). bench/results/natural-form.csv holds the
# result of this script on the commit before the change (1c4b431, natural_before) and after
# it (natural_after), with the deltas d_* = natural - none; the rows of anonymise_keyed()
# (k = 2, size = 20) and of MDAV groups of 5 within strata (anonymise_mdav(), as
# tune_release()'s "mdav" family makes it) have method "keyed2x20" and "mdav5".
suppressPackageStartupMessages(library(detanon))
sdc <- function(name) { e <- new.env(); utils::data(list = name, package = "sdcMicro", envir = e); e[[name]] }
sets <- list(
  titanic = function() list(d = titanic_paper()[-1], v = c("Age", "Fare"), st = c("Pclass", "Sex", "Family"), ks = c(3, 4, 10)),
  testdata = function() list(d = sdc("testdata")[c("urbrur", "sex", "expend", "income", "savings")],
                             v = c("expend", "income", "savings"), st = c("urbrur", "sex"), ks = c(3, 5, 10)),
  counts_strata = function() sim_counts(TRUE), counts = function() sim_counts(FALSE),
  adult = function() {
    a <- utils::read.csv("/work/shared/data/adult_train.csv", check.names = FALSE, stringsAsFactors = TRUE)
    set.seed(1); a <- a[sample(nrow(a), 5000), ]
    list(d = data.frame(age = as.numeric(a$age), fnlwgt = as.numeric(a$fnlwgt), hours = as.numeric(a[["hours-per-week"]]),
                        sex = a$sex), v = c("age", "fnlwgt", "hours"), st = "sex", ks = c(3, 10))
  },
  casc = function() { v <- c("AGI", "EMCONTRB", "FEDTAX", "STATETAX", "INTVAL")
    list(d = sdc("CASCrefmicrodata")[c("AFNLWGT", v)], v = v, st = character(), ks = c(3, 10)) },
  eia = function() { v <- c("RESSALES", "COMSALES", "INDSALES", "OTHRSALES", "TOTREVENUE")
    list(d = sdc("EIA")[c("MONTH", v)], v = v, st = character(), ks = c(3, 10)) },
  tarragona = function() { v <- c("FIXED.ASSETS", "CURRENT.ASSETS", "SALES", "LABOR.COSTS", "NET.PROFIT")
    list(d = sdc("Tarragona")[c("PAID.UP.CAPITAL", v)], v = v, st = character(), ks = c(3, 10)) })
# simulated counts: Poisson(1), Poisson(3), 1..6 and a whole-number N(50, 10), 1000 records
sim_counts <- function(strata) {
  set.seed(1); n <- 1000
  d <- data.frame(g = sample(c("a", "b", "c"), n, TRUE), p1 = rpois(n, 1), p3 = rpois(n, 3), r = sample(1:6, n, TRUE),
                  w = round(rnorm(n, 50, 10)))
  list(d = d, v = c("p1", "p3", "r", "w"), st = if (strata) "g" else character(), ks = c(3, 10))
}
measure <- function(o, rel, v, st) {
  tab <- as.data.frame(risk_battery(o, rel, vars = v, strata = st, control = FALSE, seed = 1))
  r <- risk_rmd(o, rel, vars = v, deterministic = TRUE)
  c(stats::setNames(tab$rate, tab$name), stats::setNames(tab$rate_m, paste0(tab$name, "@m"))[!is.na(tab$rate_m)],
    risk1 = r$risk1, risk2 = r$risk2,
    stats::setNames(vapply(v, function(j) mean(abs(rel[[j]] - o[[j]])) / stats::sd(o[[j]]), 0), paste0("delta:", v)))
}
rows <- list()
add <- function(set, method, k, form, x) rows[[length(rows) + 1L]] <<- data.frame(set, method, k, form, attack = names(x), rate = x)
for (nm in names(sets)) {
  s <- sets[[nm]]()
  for (f in c("natural", "none")) {
    for (k in s$ks) {
      rel <- suppressMessages(anonymise(s$d, k = k, vars = s$v, strata = s$st, format = f, check_identifiers = FALSE))
      add(nm, "anonymise", k, f, measure(s$d, rel, s$v, s$st))
    }
    if (nm %in% c("counts", "casc", "eia")) next
    rel <- suppressMessages(anonymise_keyed(s$d, vars = s$v, strata = s$st, k = 2, key = "bench-frontier-key", size = 20,
                                            format = f, check_identifiers = FALSE))
    add(nm, "keyed2x20", 2, f, measure(s$d, rel, s$v, s$st))
    # k = 5, capped by each stratum's size (a table of k), as tune_release() makes it
    id <- detanon:::stratum_ids(s$d, s$st)
    k5 <- pmin(5L, tabulate(id))
    kk <- if (all(k5 == 5L)) 5L else {
      tab <- s$d[match(seq_along(k5), id), s$st, drop = FALSE]
      tab$k <- k5
      tab
    }
    rel <- suppressMessages(anonymise_mdav(s$d, vars = s$v, strata = s$st, k = kk, format = f,
                                           check_identifiers = FALSE))
    add(nm, "mdav5", 5, f, measure(s$d, rel, s$v, s$st))
  }
  message(nm)
}
out <- do.call(rbind, rows)
args <- commandArgs(TRUE)
utils::write.csv(out, if (length(args)) args[1] else "natural-form-long.csv", row.names = FALSE)
