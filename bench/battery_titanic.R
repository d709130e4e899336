# The whole risk battery (risk_battery(), every attack with its control and its defaults) on
# Titanic for five releases of Age and Fare within Pclass x Sex x Family:
#   plain_k3   anonymise(k = 3);
#   tuned      the release of vignette("tuning") (tune_release(k = 2, linkage = 0.01,
#              top_m = 0.15, m = 3, risk1 = 0.005, risk2 = 0, keps_epsilon = c(16, 64), seed = 1));
#   mdav_k5, mdav_k10   sdcMicro::microaggregation(method = "mdav") per stratum;
#   rankswap   sdcMicro::rankSwap() on Age and Fare, default settings, seed 1.
# Two intruders: intruder(vars, strata) (with attribute inference of Survived) and
# intruder(vars, strata, held = "Survived") (Survived, an integer, is a numeric key matched
# by distance; no inference of the key itself). The recipe attack plays an intruder who
# knows the settings: for the releases of sdcMicro no settings are recorded, so it tries
# every k from 2 to 10 of anonymise(). Seed 1 throughout.
# Usage (from the package root, detanon and sdcMicro installed): Rscript bench/battery_titanic.R
suppressMessages(library(detanon))
d <- titanic_paper()[-1]
vars <- c("Age", "Fare")
st <- c("Pclass", "Sex", "Family")
plain <- anonymise(d, k = 3, vars = vars, strata = st)
tuned <- tune_release(d, vars = vars, strata = st, k = 2, linkage = 0.01, top_m = 0.15, m = 3,
                      risk1 = 0.005, risk2 = 0, keps_epsilon = c(16, 64), seed = 1)$release
mdav <- function(k) {
  md <- d
  key <- interaction(d[st], drop = TRUE)
  for (g in levels(key)) {
    r <- which(key == g)
    x <- as.data.frame(d[r, vars])
    res <- suppressWarnings(sdcMicro::microaggregation(x, variables = vars, aggr = k, method = "mdav"))
    md[r, vars] <- res$mx[, vars]
  }
  md
}
rankswap <- function() {
  rs <- d
  rs[vars] <- sdcMicro::rankSwap(d[vars], variables = vars, seed = 1)
  rs
}
rels <- list(plain_k3 = plain, tuned = tuned, mdav_k5 = mdav(5), mdav_k10 = mdav(10), rankswap = rankswap())
cols <- c("name", "rate", "control_rate", "advantage", "rate_m", "control_rate_m", "worst_stratum",
          "precision_top10", "baseline")
old <- options(width = 150)
for (nm in names(rels)) {
  m <- rels[[nm]]
  for (keys in list(NULL, "Survived")) {
    b <- risk_battery(d, m, intruder = intruder(vars = vars, strata = st, held = keys),
                      sensitive = if (is.null(keys)) "Survived", seed = 1)
    tab <- as.data.frame(b)[cols]
    cat(sprintf("\n%s, intruder(%s)%s\n", nm, if (is.null(keys)) "" else "held = \"Survived\"",
                if (!is.null(b$attacks$assignment)) sprintf(", assignment gap %.3g", b$attacks$assignment$details$gap) else ""))
    print(format(tab, digits = 3), row.names = FALSE)
  }
}
options(old)
