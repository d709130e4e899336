# Regenerates inst/extdata/keps_comparison.csv, the table behind vignettes/keps.Rmd.
# Run from the package root with detanon installed:
#   Rscript inst/scripts/keps_comparison.R
# It compares, on the Titanic data and on a simulated data set, deterministic k-NN masking
# (anonymise()), (k, epsilon)-anonymisation (anonymise_keps()) and k-NN masking followed
# by (k, epsilon) noise, with the same risk and utility measures. One seed per setting.
library(detanon)

simulate_people <- function(n = 2000, seed = 2026) {
  set.seed(seed)
  sex <- factor(sample(c("female", "male"), n, TRUE))
  age <- sample(18:90, n, TRUE)
  height <- round(rnorm(n, ifelse(sex == "male", 176, 163), 7), 1)
  weight <- round(pmax(40, 0.9 * height - 80 + 0.1 * age + rnorm(n, 0, 9)), 1)
  sbp <- round(90 + 0.45 * age + 0.35 * weight + 4 * (sex == "male") + rnorm(n, 0, 10))
  data.frame(sex = sex, age = age, height = height, weight = weight, sbp = sbp)
}

setups <- list(
  titanic = list(
    data = titanic_paper(), all_vars = c("Age", "Fare"), eps_vars = c("Age", "Fare"),
    quasi = character(), strata = c("Pclass", "Sex", "Family"), keps_k = 3,
    formula = Survived ~ Pclass + Sex + Age + Fare + Family, family = stats::binomial()
  ),
  simulated = list(
    data = simulate_people(), all_vars = c("age", "height", "weight"),
    eps_vars = c("height", "weight"), quasi = "age", strata = "sex", keps_k = 5,
    formula = sbp ~ age + sex + height + weight, family = stats::gaussian()
  )
)

rel_err <- function(o, m, vars) {
  ok <- vapply(vars, function(v) all(o[[v]] != 0), logical(1))
  if (!any(ok)) return(NA_real_)
  mean(vapply(vars[ok], function(v) mean(abs(m[[v]] - o[[v]]) / abs(o[[v]])), numeric(1)))
}

measure <- function(s, o, m, classes, err8 = NA_real_, supp99 = NA_real_, n_released = nrow(m)) {
  rmd <- risk_rmd(o, m, vars = s$all_vars, deterministic = TRUE)
  link <- risk_linkage(o, m, vars = s$all_vars, strata = s$strata)
  cls_link <- risk_class_link(o, m, vars = s$eps_vars, classes = classes)
  pm <- utility_pmse(o, m, vars = c(s$all_vars, s$strata))
  dl <- utility_delta(o, m, vars = s$all_vars)$delta
  mod <- utility_model(o, m, s$formula, family = s$family)
  data.frame(risk1 = rmd$risk1, risk2 = rmd$risk2, linkage = link$rate,
             linkage_blind = link$blind_rate, link_classes = cls_link$rate,
             U = pm$U, delta = mean(dl), max_std_diff = max(abs(mod$std_diff)),
             min_ci_overlap = min(mod$ci_overlap), err8 = err8,
             err_obs = rel_err(o, m, s$eps_vars), supp99 = supp99, n_released = n_released)
}

epsilons <- c(0.5, 1, 2, 4, 8, 16, 32, 64)
rows <- list()
for (name in names(setups)) {
  s <- setups[[name]]
  d <- s$data
  positive <- function(v) all(d[[v]] != 0)
  for (k in c(3, 5, 10)) {
    m <- anonymise(d, k = k, vars = s$all_vars, strata = s$strata, format = "none")
    st <- if (length(s$quasi)) s$strata else s$strata
    rows[[length(rows) + 1L]] <- cbind(
      data.frame(data = name, method = "kNN", k = k, epsilon = NA_real_),
      measure(s, d, m, classes = do.call(interaction, c(d[st], drop = TRUE))))
  }
  m_knn <- anonymise(d, k = s$keps_k, vars = s$all_vars, strata = s$strata, format = "none")
  for (method in c("keps", "kNN+noise")) {
    base <- if (method == "keps") d else m_knn
    for (eps in epsilons) {
      args <- list(epsilon = eps, k = s$keps_k, vars = s$eps_vars, quasi = s$quasi,
                   strata = s$strata, generalise = "midpoint")
      set.seed(1)
      res <- do.call(anonymise_keps_with_key, c(list(base), args))
      set.seed(1)
      res99 <- do.call(anonymise_keps_with_key, c(list(base), args, list(confidence = 0.99)))
      o <- d[res$origin_row, ]
      e8 <- res$info$expected_error
      e8 <- if (method == "keps") mean(e8[is.finite(e8)]) else NA_real_
      supp <- 1 - res99$info$n_released / res99$info$n
      rows[[length(rows) + 1L]] <- cbind(
        data.frame(data = name, method = method, k = s$keps_k, epsilon = eps),
        measure(s, o, res$data, classes = res$class, err8 = e8, supp99 = supp))
    }
  }
}
out <- do.call(rbind, rows)
num <- vapply(out, is.double, logical(1))
out[num] <- lapply(out[num], signif, digits = 5)
utils::write.csv(out, file.path("inst", "extdata", "keps_comparison.csv"), row.names = FALSE)
print(out)
