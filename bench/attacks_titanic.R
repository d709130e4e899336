# attack_assignment(), attack_fellegi_sunter() and attack_recipe() (beside nearest linkage) on
# Titanic: plain k = 3, the release tune_release() returns for the README limits, and
# sdcMicro MDAV with k = 5 and 10 per stratum. Usage: Rscript bench/attacks_titanic.R
suppressMessages(library(detanon))
d <- titanic_paper()[-1]
st <- c("Pclass", "Sex", "Family")
plain <- anonymise(d, k = 3, vars = c("Age","Fare"), strata = st)
tuned <- tune_release(d, vars = c("Age", "Fare"), strata = st, linkage = 0.01, top_m = 0.15, m = 3,
                      risk1 = 0.005, risk2 = 0)$release
mdav <- function(k) {
  md <- d
  key <- interaction(d[st], drop = TRUE)
  for (g in levels(key)) {
    r <- which(key == g)
    x <- as.data.frame(d[r, c("Age", "Fare")])
    res <- suppressWarnings(sdcMicro::microaggregation(x, variables = c("Age","Fare"), aggr = k, method = "mdav"))
    md[r, c("Age", "Fare")] <- res$mx[, c("Age", "Fare")]
  }
  md
}
rels <- list(plain_k3 = plain, tuned = tuned, mdav_k5 = mdav(5), mdav_k10 = mdav(10))
row <- function(name, a, extra = "") cat(sprintf("%-9s %-48s rate %.3f control %.3f adv %.3f top-m %s prec10 %.3f %s\n", name, a$attack, a$rate, a$control_rate, a$advantage,
                                                 if (is.na(a$rate_m)) "  -  " else sprintf("%.3f", a$rate_m), a$precision_top10, extra))
for (nm in names(rels)) {
  m <- rels[[nm]]
  is_rel <- !is.null(suppressWarnings(release_info(m)))
  a <- attack_assignment(d, m, intruder = intruder(strata = st), seed = 1); row(nm, a, sprintf("gap %.3g", a$details$gap))
  l <- attack_linkage(d, m, intruder = intruder(strata = st), seed = 1); row(nm, l)
  for (keys in list(NULL, "Survived")) {
    f <- attack_fellegi_sunter(d, m, intruder = intruder(strata = st, held = keys), seed = 1); row(nm, f, if (length(keys)) "keys Survived" else "")
  }
  for (kn in c("settings", "recipe")) for (p in c(1, 0.1, 0.01)) {
    if (kn == "settings" && !is_rel) next
    r <- attack_recipe(d, m, intruder = intruder(vars = c("Age","Fare"), strata = st, p = p, knows = kn), k_max = 10, seed = 1)
    row(nm, r, sprintf("%s p=%g certain %.3f prec_certain %.3f", kn, p, r$details$share_certain, r$details$precision_certain))
  }
}
