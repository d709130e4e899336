# The experiments of Holohan et al. (2017), section VI-VII, on the UCI Adult training data
# (detanon's `adult`, 32,561 records): (k, epsilon)-anonymisation with OLA and Mondrian
# classes on the k-quasi-identifiers year of birth, sex, race and marital status
# (hierarchies of Table I), Laplace noise on a synthetic height column.
#
#   * k in {2, 5, 10, 20, 50, 100}, epsilon in {0.05, 0.5, 1, 2, 4, 8, 16}, 30 runs each;
#   * OLA: categorical precision loss, at most 5% suppression (Table IV);
#   * Mondrian on the integer codes of the four k-quasis;
#   * per run: average relative error on height (Figures 3-4), linking risk (Figure 5),
#     share of records suppressed for 0.99-confident k-anonymity (Figure 6).
#
# Run r of design point (method, k, epsilon) uses seed 100000 + 1000 * i_k + 100 * i_eps + r,
# so every stored value can be regenerated on its own (see adult_one()).
#
# Full run, from the package source directory (writes inst/extdata/adult_keps.rds):
#   Rscript inst/scripts/adult-keps.R
# Reduced run (e.g. 3 runs per point) to another file:
#   Rscript inst/scripts/adult-keps.R 3 /tmp/adult-small.rds
# Sourcing the file only defines the functions.

adult_design <- function() {
  list(k = c(2L, 5L, 10L, 20L, 50L, 100L), epsilon = c(0.05, 0.5, 1, 2, 4, 8, 16))
}

# Mean and SD (cm) of height by age band and sex, approximately the US values of Fryar,
# Gu and Ogden (2012), Anthropometric reference data for children and adults: United
# States, 2007-2010 (NHANES), Vital Health Stat 11(252): means from its tables by age,
# SDs from its 5th-95th percentile spread ((p95 - p5) / 3.29), the same for all ages.
adult_height_table <- function() {
  data.frame(
    lower = c(17, 20, 30, 40, 50, 60, 70, 80),
    male = c(176.0, 176.4, 176.6, 176.3, 175.7, 174.9, 173.4, 170.6),
    female = c(162.8, 162.8, 163.2, 162.9, 162.1, 160.7, 159.0, 155.6),
    sd_male = 7.6, sd_female = 6.7
  )
}

# The synthetic height: normal, mean and SD by age band and sex (seed 2017).
adult_height <- function(age, sex, seed = 2017L) {
  t <- adult_height_table()
  band <- findInterval(age, t$lower)
  male <- sex == "Male"
  mu <- ifelse(male, t$male[band], t$female[band])
  sd <- ifelse(male, t$sd_male[band], t$sd_female[band])
  set.seed(seed)
  stats::rnorm(length(age), mu, sd)
}

# Table I hierarchies for the four k-quasi-identifiers.
adult_hierarchies <- function(d) {
  ms <- levels(d$marital_status)
  list(
    year_of_birth = detanon::hierarchy_bands(d$year_of_birth, width = 2, levels = 3),
    sex = detanon::hierarchy(data.frame(value = levels(d$sex), person = "Person")),
    race = detanon::hierarchy(data.frame(value = levels(d$race))),
    marital_status = detanon::hierarchy(data.frame(
      value = ms, living = ifelse(ms %in% c("Married-civ-spouse", "Married-AF-spouse"), "In marriage", "Alone")))
  )
}

adult_data <- function() {
  e <- new.env()
  utils::data("adult", package = "detanon", envir = e)
  d <- e$adult
  d$height <- adult_height(d$age, d$sex)
  # Mondrian works on numbers: the k-quasis as integer codes (marital status ordered so
  # that the two "In marriage" statuses are adjacent)
  ms <- levels(d$marital_status)
  ms_order <- c(setdiff(ms, c("Married-AF-spouse", "Married-civ-spouse")), "Married-AF-spouse", "Married-civ-spouse")
  d$sex_code <- as.integer(d$sex)
  d$race_code <- as.integer(d$race)
  d$marital_code <- match(as.character(d$marital_status), ms_order)
  d
}

adult_classes <- function(d, method, k) {
  if (method == "ola") {
    h <- adult_hierarchies(d)
    detanon::equivalence_classes(d, k = k, quasi = names(h), strata = character(), method = "ola",
                                 hierarchies = h, max_suppression = 0.05, loss = "precision")
  } else {
    detanon::equivalence_classes(d, k = k, quasi = c("year_of_birth", "sex_code", "race_code", "marital_code"),
                                 strata = character(), method = "mondrian")
  }
}

# One run: relative error (released records), expected error (8), linking risk (all
# classified records, before suppression) and the share of records suppressed for
# 0.99-confident k-anonymity.
# OLA's choice and suppression for each loss (Table IV does not say which loss it used).
adult_ola_losses <- function(d) {
  h <- adult_hierarchies(d)
  out <- list()
  for (loss in c("precision", "discernibility", "entropy")) {
    for (k in adult_design()$k) {
      ec <- detanon::equivalence_classes(d, k = k, quasi = names(h), strata = character(), method = "ola",
                                         hierarchies = h, max_suppression = 0.05, loss = loss)
      out[[length(out) + 1L]] <- data.frame(loss = loss, k = k, levels = paste(ec$levels, collapse = ""),
                                            suppression = ec$n_suppressed / nrow(d),
                                            n_evaluated = ec$lattice$n_evaluated)
    }
  }
  do.call(rbind, out)
}

adult_one <- function(d, ec, epsilon, seed) {
  set.seed(seed)
  r <- detanon::anonymise_keps_with_key(d[c("height", ec$quasi)], epsilon = epsilon, vars = "height",
                               classes = ec, confidence = 0.99)
  orig <- d$height[r$origin_row]
  i <- r$info
  c(rel_error = mean(abs(r$data$height - orig) / orig),
    expected_error = unname(i$expected_error),
    linking_risk = i$linking_risk,
    extra_suppression = (i$n_suppressed_records + i$n_suppressed_class_records) / i$n)
}

adult_run <- function(reps = 30L, progress = TRUE) {
  des <- adult_design()
  d <- adult_data()
  runs <- list()
  classes <- list()
  start <- proc.time()[["elapsed"]]
  for (method in c("ola", "mondrian")) {
    for (ik in seq_along(des$k)) {
      k <- des$k[ik]
      t0 <- proc.time()[["elapsed"]]
      ec <- adult_classes(d, method, k)
      t_cls <- proc.time()[["elapsed"]] - t0
      sz <- ec$classes$n
      # records in classes above 2k - 1 whose records all share their k-quasi values (no
      # algorithm could cut them)
      kept <- !is.na(ec$class)
      tuple <- do.call(paste, c(d[kept, c("year_of_birth", "sex", "race", "marital_status")], sep = "|"))
      n_tuples <- tapply(tuple, ec$class[kept], function(x) length(unique(x)))
      big <- sz > 2 * k - 1
      classes[[length(classes) + 1L]] <- data.frame(
        method = method, k = k, n_classes = length(sz), suppression = ec$n_suppressed / nrow(d),
        levels = if (method == "ola") paste(ec$levels, collapse = "") else NA_character_,
        precision_loss = if (method == "ola") unname(ec$loss) else NA_real_,
        share_above_2k = sum(sz[big]) / sum(sz),
        share_above_2k_identical = sum(sz[big & n_tuples == 1L]) / sum(sz), seconds = t_cls)
      for (ie in seq_along(des$epsilon)) {
        for (r in seq_len(reps)) {
          seed <- 100000L + 1000L * ik + 100L * ie + r
          v <- adult_one(d, ec, des$epsilon[ie], seed)
          runs[[length(runs) + 1L]] <- data.frame(method = method, k = k, epsilon = des$epsilon[ie],
                                                  run = r, seed = seed, t(v))
        }
      }
      if (progress) message(sprintf("%s k = %d done (%.0f s)", method, k, proc.time()[["elapsed"]] - start))
    }
  }
  list(runs = do.call(rbind, runs), classes = do.call(rbind, classes), ola_losses = adult_ola_losses(d),
       reps = reps,
       height = adult_height_table(), created = format(Sys.Date()),
       detanon = as.character(utils::packageVersion("detanon")))
}

if (sys.nframe() == 0L) {
  args <- commandArgs(trailingOnly = TRUE)
  reps <- if (length(args) >= 1L) as.integer(args[1L]) else 30L
  out <- if (length(args) >= 2L) args[2L] else "inst/extdata/adult_keps.rds"
  res <- adult_run(reps)
  saveRDS(res, out, compress = "xz")
  message("wrote ", out)
}
