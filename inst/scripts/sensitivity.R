# Sensitivity analyses of Avraam, Jones and Burton (2022), Figures 7 and 8, on SYNTHETIC
# data from detanon::simulate_ncds().
#
#   * choice of k: n = 500, k in {3, 5, 7, 10, 15, 20, 25, 30, 35, 40, 46}, 100 data sets per k;
#   * sample size: k = 5, n in {50, 100, 200, 500, 1000, 1500, 2000, 2500, 3000}, 100 data sets per n.
#
# For every data set: anonymise Glucose, HDL, Height and Weight within the strata of Sex and
# Smoker, then record U (propensity scores), the delta of each variable, the standardised
# difference of each coefficient of lm(Glucose ~ Sex + Smoker + HDL + Height + Weight), and
# risk1 / risk2 (w1 = 0.01, w2 = 0.05). Data set r of design point j uses seed 1000 * j + r
# for both the simulation and the risk measure's robust covariance, so every stored value can
# be regenerated on its own (see sensitivity_one()).
#
# Full run, from the package source directory (writes inst/extdata/sensitivity.rds):
#   Rscript inst/scripts/sensitivity.R
# The same with a progress bar (non-interactive sessions show none unless asked):
#   Rscript inst/scripts/sensitivity.R 100 inst/extdata/sensitivity.rds progress
# Reduced run (e.g. 5 data sets per design point) to another file:
#   Rscript inst/scripts/sensitivity.R 5 /tmp/sensitivity-small.rds
# Sourcing the file (e.g. sys.source(system.file("scripts", "sensitivity.R", package =
# "detanon"), envir = e)) only defines the functions.

sensitivity_design <- function() {
  rbind(
    data.frame(design = "k", n = 500L, k = c(3L, 5L, 7L, 10L, 15L, 20L, 25L, 30L, 35L, 40L, 46L)),
    data.frame(design = "n", n = c(50L, 100L, 200L, 500L, 1000L, 1500L, 2000L, 2500L, 3000L), k = 5L)
  )
}

# One data set: a named numeric vector of all metrics.
sensitivity_one <- function(n, k, seed) {
  vars <- c("Glucose", "HDL", "Height", "Weight")
  strata <- c("Sex", "Smoker")
  f <- Glucose ~ Sex + Smoker + HDL + Height + Weight
  d <- detanon::simulate_ncds(n, seed = seed)
  m <- detanon::anonymise(d, k = k, vars = vars, strata = strata, format = "none", check_identifiers = FALSE)
  set.seed(seed)
  r <- detanon::risk_rmd(d, m, vars = vars, w1 = 0.01, w2 = 0.05)
  pm <- detanon::utility_pmse(d, m, vars = c(strata, vars))
  de <- detanon::utility_delta(d, m, vars = vars)$delta
  um <- detanon::utility_model(d, m, f)
  c(U = pm$U,
    stats::setNames(as.numeric(de[vars]), paste0("delta_", vars)),
    stats::setNames(um$std_diff, paste0("diff_", um$term)),
    risk1 = r$risk1, risk2 = r$risk2)
}

# `progress`: a cli progress bar over the data sets; by default in interactive sessions, or
# when options(detanon.progress = TRUE) asks for one (e.g. under Rscript). It never changes
# the results.
sensitivity_run <- function(reps = 100L, design = sensitivity_design(),
                            progress = interactive() || isTRUE(getOption("detanon.progress"))) {
  if (progress) {
    cli::cli_progress_bar("Sensitivity analyses", total = nrow(design) * reps,
                          format = "{cli::pb_name} {cli::pb_bar} {cli::pb_current}/{cli::pb_total} data sets | ETA {cli::pb_eta}")
  }
  out <- vector("list", nrow(design) * reps)
  i <- 0L
  start <- proc.time()[["elapsed"]]
  for (j in seq_len(nrow(design))) {
    for (r in seq_len(reps)) {
      seed <- 1000L * j + r
      v <- sensitivity_one(design$n[j], design$k[j], seed)
      i <- i + 1L
      out[[i]] <- data.frame(design = design$design[j], n = design$n[j], k = design$k[j],
                             rep = r, seed = seed, metric = names(v), value = unname(v),
                             stringsAsFactors = FALSE)
      if (progress) cli::cli_progress_update()
    }
  }
  if (progress) cli::cli_progress_done()
  res <- do.call(rbind, out)
  rownames(res) <- NULL
  list(results = res, design = design, reps = reps,
       seed_rule = "data set r of design row j: seed = 1000 * j + r (simulate_ncds and risk_rmd)",
       elapsed_seconds = proc.time()[["elapsed"]] - start,
       made_by = "inst/scripts/sensitivity.R",
       detanon_version = as.character(utils::packageVersion("detanon")),
       r_version = R.version.string,
       robustbase_version = as.character(utils::packageVersion("robustbase")),
       date = format(Sys.time(), "%Y-%m-%d", tz = "UTC"))
}

# Mean and SD of each metric at each design point.
sensitivity_summary <- function(res) {
  x <- res$results
  key <- interaction(x$design, x$n, x$k, x$metric, drop = TRUE, lex.order = TRUE)
  first <- x[match(levels(key), key), c("design", "n", "k", "metric")]
  first$mean <- as.vector(tapply(x$value, key, mean))
  first$sd <- as.vector(tapply(x$value, key, stats::sd))
  first$count <- as.vector(tapply(x$value, key, length))
  rownames(first) <- NULL
  first
}

if (sys.nframe() == 0L) {
  args <- commandArgs(trailingOnly = TRUE)
  reps <- if (length(args) >= 1L) as.integer(args[1L]) else 100L
  file <- if (length(args) >= 2L) args[2L] else file.path("inst", "extdata", "sensitivity.rds")
  if (is.na(reps) || reps < 2L) stop("reps must be a whole number >= 2 (for the SDs)", call. = FALSE)
  if (!dir.exists(dirname(file))) stop("directory ", dirname(file), " does not exist", call. = FALSE)
  if (length(args) >= 3L && args[3L] == "progress") options(detanon.progress = TRUE)
  res <- sensitivity_run(reps)
  saveRDS(res, file, version = 2, compress = "xz")
  cat(sprintf("\n%d data sets in %.0f s; written to %s\n", nrow(res$design) * reps,
              res$elapsed_seconds, file))
}
