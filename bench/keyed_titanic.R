# anonymise_keyed() on Titanic beside plain anonymise(), sdcMicro's MDAV per stratum and
# rank swapping: the whole risk battery (without attribute inference) for two intruders
# (intruder(vars, strata) and intruder(vars, strata, held = "Survived"), both knowing the
# settings) and the utility measures. Age and Fare within Pclass x Sex x Family (as
# bench/battery_titanic.R); "+S" releases group within Survived too (strata + Survived).
# Columns: worst = the highest rate of a one-record attack (linkage both ways, singling
# out, assignment, Fellegi-Sunter, recipe), for each intruder; top3_ro / top3_or = top-3
# linkage released -> original / original -> released (worst of the two intruders);
# dAge, dFare = utility_delta(); pmse2 = utility_pmse(interactions = TRUE)$U; cart =
# utility_pmse(method = "cart")$U; ovl = the smallest CI overlap of Age and Fare in
# utility_model(Survived ~ Pclass + Sex + Age + Fare + Family, binomial); inf_adv = the
# advantage of attribute inference of Survived (intruder without keys) over its control.
# The worst one-record attack leaves attribute inference out.
# Usage (package root; detanon and sdcMicro installed): Rscript bench/keyed_titanic.R
suppressMessages(library(detanon))
d <- titanic_paper()[-1]
vars <- c("Age", "Fare")
st <- c("Pclass", "Sex", "Family")
key <- "bench-key-not-a-secret-0001"
mdav <- function(k) {
  md <- d
  g <- interaction(d[st], drop = TRUE)
  for (lv in levels(g)) {
    r <- which(g == lv)
    res <- suppressWarnings(sdcMicro::microaggregation(as.data.frame(d[r, vars]), variables = vars,
                                                       aggr = k, method = "mdav"))
    md[r, vars] <- res$mx[, vars]
  }
  md
}
rels <- list(
  plain_k3 = anonymise(d, k = 3, vars = vars, strata = st),
  plain_k5 = anonymise(d, k = 5, vars = vars, strata = st),
  plain_k10 = anonymise(d, k = 10, vars = vars, strata = st),
  mdav_k5 = mdav(5), mdav_k10 = mdav(10),
  rankswap = within(d, {
    rs <- sdcMicro::rankSwap(d[vars], variables = vars, seed = 1)
    Age <- rs$Age
    Fare <- rs$Fare
    rm(rs)
  })
)
for (size in c(5, 6, 8, 10, 12, 14, 16, 20)) for (k in c(2, 3)) {
  rels[[sprintf("keyed_s%d_k%d", size, k)]] <- anonymise_keyed(d, vars = vars, strata = st, k = k, key = key, size = size)
}
for (size in c(10, 12, 14, 16, 20)) {
  rels[[sprintf("keyed+S_s%d_k2", size)]] <- anonymise_keyed(d, vars = vars, strata = st, held = "Survived", k = 2,
                                                              key = key, size = size)
}
f <- Survived ~ Pclass + Sex + Age + Fare + Family
one_row <- function(nm, m) {
  ws <- list()
  for (keys in list(NULL, "Survived")) {
    b <- as.data.frame(risk_battery(d, m, intruder = intruder(vars = vars, strata = st, held = keys),
                                    sensitive = if (is.null(keys)) "Survived", seed = 1))
    ws[[length(ws) + 1L]] <- b
  }
  inf_adv <- ws[[1]]$advantage[ws[[1]]$name == "inference"]
  ws <- lapply(ws, function(b) b[b$name != "inference", ])
  worst <- vapply(ws, function(b) max(b$rate, na.rm = TRUE), 0)
  wname <- vapply(ws, function(b) b$name[which.max(b$rate)], "")
  t3 <- function(dir) max(vapply(ws, function(b) b$rate_m[b$name == dir], 0))
  dl <- utility_delta(d, m)$delta
  um <- suppressMessages(utility_model(d, m, f, family = binomial()))
  data.frame(release = nm, worst = worst[1], worst_S = worst[2], by = wname[1], by_S = wname[2],
             top3_ro = t3("linkage_released"), top3_or = t3("linkage_original"),
             recipe = ws[[1]]$rate[ws[[1]]$name == "recipe"], assign = ws[[1]]$rate[ws[[1]]$name == "assignment"],
             dAge = dl[["Age"]], dFare = dl[["Fare"]],
             pmse2 = utility_pmse(d, m, interactions = TRUE)$U, cart = utility_pmse(d, m, method = "cart")$U,
             ovl = min(um$ci_overlap[um$term %in% c("Age", "Fare")]), inf_adv = inf_adv)
}
set.seed(1) # CART pMSE is seeded by the global stream
tab <- do.call(rbind, lapply(names(rels), function(nm) one_row(nm, rels[[nm]])))
old <- options(width = 200)
print(format(tab, digits = 3), row.names = FALSE)
options(old)
