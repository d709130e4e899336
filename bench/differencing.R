# Differencing and composition of two releases of the same people (issue 36, item 3), and
# the cost of the keyed noise of shared centroids (centroid_noise()) in delta and pMSE.
#   Rscript bench/differencing.R                 # titanic, testdata, casc
# Per data set (those of bench/frontier.R):
# * cost: utility_delta() (largest over vars) and utility_pmse()'s U (pMSE) and S_pMSE of the keyed
#   release (anonymise_keyed(), size 10) and of MDAV groups of 10 within strata, with exact
#   group means (noise = FALSE) and with the keyed noise (noise = TRUE, the default);
# * differencing: 8 targets (the largest value of each masked variable, the rest at random)
#   withdrawn one at a time, the same key: the share recovered within 5% (every variable)
#   by the difference of the two releases' sums (attack_differencing());
# * composition: two keyed releases of size 20 under two keys, joined row by row
#   (attack_composition()) against the other one shuffled.
suppressMessages(library(detanon))
sets <- list(
  titanic = function() list(data = titanic_paper()[-1], vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family")),
  testdata = function() {
    e <- new.env(); utils::data("testdata", package = "sdcMicro", envir = e)
    d <- e$testdata[c("urbrur", "sex", "expend", "income", "savings")]
    d$urbrur <- factor(d$urbrur); d$sex <- factor(d$sex)
    list(data = d, vars = c("expend", "income", "savings"), strata = c("urbrur", "sex"))
  },
  casc = function() {
    e <- new.env(); utils::data("CASCrefmicrodata", package = "sdcMicro", envir = e)
    v <- c("AGI", "EMCONTRB", "FEDTAX", "STATETAX", "INTVAL")
    list(data = e$CASCrefmicrodata[c("AFNLWGT", v)], vars = v, strata = NULL)
  })
which_sets <- commandArgs(trailingOnly = TRUE)
if (!length(which_sets)) which_sets <- names(sets)
bench_key <- "bench-differencing-custodian-key"
q <- function(expr) suppressMessages(suppressWarnings(expr))

keyed <- function(s, d, noise, key = bench_key, size = 10) {
  q(anonymise_keyed(d, vars = s$vars, strata = s$strata, k = 3, key = key, size = size, noise = noise,
                    check_identifiers = FALSE))
}
# MDAV groups of 10 within strata (the groups of tune_release()'s MDAV family), exact or
# noisy means (the noise of the MDAV family under the key)
mdav <- function(s, d, noise) {
  x <- as.matrix(d[s$vars])
  id <- if (length(s$strata)) as.integer(interaction(d[s$strata], drop = TRUE)) else rep(1L, nrow(d))
  g <- if (exists("anonymise_mdav", asNamespace("detanon"))) {
    # the groups of anonymise_mdav() (exact means): the records sharing a released point
    rel <- q(detanon::anonymise_mdav(d, vars = s$vars, strata = s$strata, k = 10, format = "none",
                                     check_identifiers = FALSE))
    as.integer(factor(do.call(paste, c(list(id), unname(as.list(rel[s$vars]))))))
  } else {
    detanon:::mdav_strata(scale(x), id, 10L)
  }
  m <- rowsum(x, g, reorder = TRUE) / tabulate(g)
  if (noise) m <- detanon:::centroid_noise(x, g, m, charToRaw(bench_key))
  out <- d
  out[s$vars] <- m[g, , drop = FALSE]
  out
}
rows <- list()
for (nm in which_sets) {
  s <- sets[[nm]]()
  d <- s$data
  cat(sprintf("\n== %s: %d records, %s masked%s\n", nm, nrow(d), paste(s$vars, collapse = ", "),
              if (length(s$strata)) paste0(" within ", paste(s$strata, collapse = " x ")) else ""))
  for (method in c("keyed", "mdav")) {
    make <- if (method == "keyed") function(x, noise) keyed(s, x, noise) else function(x, noise) mdav(s, x, noise)
    set.seed(36)
    big <- unique(vapply(s$vars, function(v) which.max(d[[v]]), 1L))
    targets <- c(big, sample(setdiff(seq_len(nrow(d)), big), 8L - length(big)))
    for (noise in c(FALSE, TRUE)) {
      t0 <- proc.time()[[3L]]
      a <- make(d, noise)
      delta <- max(utility_delta(d, a, vars = s$vars)$delta)
      pm <- utility_pmse(d, a)
      rec <- vapply(targets, function(t) {
        b <- make(d[-t, ], noise)
        att <- attack_differencing(d, a, previous = b, previous_original = d[-t, ], control = FALSE,
                                   intruder = intruder(vars = s$vars, strata = s$strata))
        max(att$success, na.rm = TRUE) # the one person who left (or a copy of the same values)
      }, 0)
      rows[[length(rows) + 1L]] <- data.frame(data = nm, method = method, noise = noise, delta = delta,
                                              U = pm$U, S_pMSE = pm$S_pMSE, differencing = mean(rec),
                                              seconds = proc.time()[[3L]] - t0)
      print(rows[[length(rows)]], row.names = FALSE, digits = 4)
    }
  }
  a <- keyed(s, d, TRUE, key = "the-first-key-of-the-custodian", size = 20)
  b <- keyed(s, d, TRUE, key = "the-second-key-of-the-custodian", size = 20)
  set.seed(1)
  # the narrower intruder (vars and strata): the published columns as keys (CASC's weight
  # AFNLWGT, unique per record) would re-identify everyone whatever the join
  it <- intruder(vars = s$vars, strata = s$strata)
  al <- attack_composition(d, a, previous = b, intruder = it, seed = 1)$rate
  sh <- attack_composition(d, a, previous = b[sample(nrow(b)), ], intruder = it, seed = 1)$rate
  cat(sprintf("composition, keyed size 20, two keys: %.3f joined row by row, %.3f with the other shuffled\n", al, sh))
}
cat("\n")
print(do.call(rbind, rows), row.names = FALSE, digits = 4)
