# Safe by default (issues 36 and 37): the table attack x data set for the old behaviour and
# for the default path a custodian follows now, with the loss paid.
#   Rscript bench/safe-default.R                  # titanic, testdata, casc
#   Rscript bench/safe-default.R testdata         # one data set
# Data sets as a custodian publishes them:
# * titanic: titanic_paper() without the passenger number; Age, Fare masked within Pclass x
#   Sex x Family; Survived published unchanged;
# * testdata (sdcMicro): expend, income, savings masked; urbrur, roof, walls, water,
#   electcon, relat, sex, age, hhcivil published unchanged;
# * casc (sdcMicro's CASCrefmicrodata): AGI, EMCONTRB, FEDTAX, STATETAX, INTVAL masked; the
#   weight AFNLWGT published unchanged.
# Old: tune_release() with the narrower intruder (intruder(): vars and strata only), exact
# group means (noise = FALSE), no tail limit, MDAV only (the issue-36 figures), the release
# in the input's row order, then attacked by the battery's default intruder, who holds every
# published column. New: the README's path, tune_release() with a key and its defaults
# (the keys' categorical family, keyed noise, the published intruder), the release written by
# write_release(). Every attack of the battery (with the differencing and composition
# attacks, which need a second release, left to bench/differencing.R), its rate (top-m
# rate in brackets), the keys' global risk (expected re-identifications by the categorical
# keys alone, NA matching any value), the share of the file's rows at their input position,
# and the loss: delta (largest utility_delta() over vars) and the largest coefficient move
# of utility_model() in standard errors.
suppressMessages(library(detanon))
key <- "a long secret phrase kept by the custodian"
sets <- list(
  titanic = function() list(data = titanic_paper()[-1], vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                            formula = Survived ~ Pclass + Sex + Age + Fare + Family, family = stats::binomial()),
  testdata = function() {
    e <- new.env(); utils::data("testdata", package = "sdcMicro", envir = e)
    cols <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age", "hhcivil",
              "expend", "income", "savings")
    list(data = e$testdata[cols], vars = c("expend", "income", "savings"), strata = NULL,
         formula = income ~ expend + savings, family = stats::gaussian())
  },
  casc = function() {
    e <- new.env(); utils::data("CASCrefmicrodata", package = "sdcMicro", envir = e)
    v <- c("AGI", "EMCONTRB", "FEDTAX", "STATETAX", "INTVAL")
    list(data = e$CASCrefmicrodata[c("AFNLWGT", v)], vars = v, strata = NULL,
         formula = AGI ~ EMCONTRB + FEDTAX + STATETAX + INTVAL, family = stats::gaussian())
  })
which_sets <- commandArgs(trailingOnly = TRUE)
if (!length(which_sets)) which_sets <- names(sets)
q <- function(expr) suppressMessages(suppressWarnings(expr))
fmt <- function(r, m) ifelse(is.na(m), sprintf("%.3f", r), sprintf("%.3f (%.2f)", r, m))

measure <- function(nm, path, s, orig, rel, file_rows, tuned, seconds) {
  b <- q(risk_battery(orig, rel, m = 3, seed = 1))
  tab <- as.data.frame(b)
  loss_delta <- max(utility_delta(orig, rel, vars = s$vars)$delta)
  coef <- max(abs(q(utility_model(orig, rel, s$formula, family = s$family))$std_diff), na.rm = TRUE)
  out <- data.frame(data = nm, path = path, attack = tab$name, rate = fmt(tab$rate, tab$rate_m),
                    stringsAsFactors = FALSE)
  extra <- data.frame(data = nm, path = path,
                      attack = c("keys' global risk", "file rows at input position", "delta", "coef move (SE)",
                                 "records released", "verified by the search", "seconds"),
                      rate = c(if (is.null(b$categorical)) "-" else sprintf("%.4f", b$categorical$global_risk),
                               if (is.na(file_rows)) "(input order)" else sprintf("%.4f", file_rows),
                               sprintf("%.4f", loss_delta), sprintf("%.3f", coef), nrow(rel),
                               if (is.null(tuned$chosen)) "none" else as.character(tuned$chosen$verified),
                               sprintf("%.0f", seconds)),
                      stringsAsFactors = FALSE)
  rbind(out, extra)
}

rows <- list()
for (nm in which_sets) {
  s <- sets[[nm]]()
  d <- s$data
  cat(sprintf("\n== %s: %d records\n", nm, nrow(d)))
  # old: the narrower intruder, exact means, MDAV, input row order
  t0 <- proc.time()[[3L]]
  old <- q(tune_release(d, vars = s$vars, strata = s$strata, methods = "mdav", intruder = intruder(),
                        noise = FALSE, tail = 1, seed = 1, nthreads = 1))
  rows[[length(rows) + 1L]] <- measure(nm, "old", s, d, old$release, NA_real_, old, proc.time()[[3L]] - t0)
  # new: the README's path, with its key; the file written by write_release()
  t0 <- proc.time()[[3L]]
  new <- q(tune_release(d, vars = s$vars, strata = s$strata, key = key, seed = 1, nthreads = 1))
  secs <- proc.time()[[3L]] - t0
  if (is.null(new$release)) {
    cat("new: no release:", new$stop, "\n")
    next
  }
  print(new$categorical$changes, row.names = FALSE)
  cat("categorical step:", new$categorical$settings, sprintf("(loss %.4f)\n", new$categorical$loss))
  f <- tempfile(fileext = ".csv")
  write_release(new$release, f, seed = 1)
  back <- utils::read.csv(f)
  unlink(f)
  # the file's rows at their input position: the released record at row i of the file is
  # record i of the input (matched on every masked value)
  at <- mean(vapply(seq_len(nrow(back)), function(i) {
    x <- unlist(back[i, s$vars])
    y <- unlist(new$release[i, s$vars])
    isTRUE(all(abs(x - y) <= 1e-9 * pmax(1, abs(y))))
  }, NA))
  # the keys as published (generalised, suppressed) are what the intruder matches
  orig <- d
  if (!is.null(new$kept)) orig <- orig[new$kept, , drop = FALSE]
  for (v in new$categorical$changes$column) orig[[v]] <- new$release[[v]]
  rows[[length(rows) + 1L]] <- measure(nm, "new", s, orig, new$release, at, new, secs)
}
tab <- do.call(rbind, rows)
cols <- unique(paste(tab$data, tab$path))
att <- unique(tab$attack)
out <- data.frame(attack = att, stringsAsFactors = FALSE)
for (cc in cols) {
  part <- tab[paste(tab$data, tab$path) == cc, ]
  out[[cc]] <- part$rate[match(att, part$attack)]
}
out[is.na(out)] <- "-"
cat("\nRate of each attack (top-3 rate in brackets), old behaviour against the default path:\n")
print(out, row.names = FALSE, right = FALSE)
