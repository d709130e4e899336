# assess(): the measures in one object, and its methods.

make_pair <- function() {
  d <- titanic_paper()
  m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                 check_identifiers = FALSE)
  list(d = d, m = m)
}

test_that("assess() holds exactly the individual measures", {
  p <- make_pair()
  f <- Survived ~ Pclass + Sex + Age + Fare + Family
  a <- assess(p$d, p$m, formula = f, family = stats::binomial(), deterministic = TRUE, w1 = 0.02)
  expect_s3_class(a, "detanon_assess")
  expect_identical(a$rmd, risk_rmd(p$d, p$m, deterministic = TRUE, w1 = 0.02))
  expect_identical(a$linkage, risk_linkage(p$d, p$m))
  expect_identical(a$linkage_top, risk_linkage(p$d, p$m, m = 3))
  a1 <- assess(p$d, p$m, deterministic = TRUE, m = 5, p = c(1, 0.2), seed = 7)
  expect_identical(a1$linkage_top, risk_linkage(p$d, p$m, m = 5))
  expect_identical(a1$replay, risk_replay(p$d, p$m, p = c(1, 0.2), seed = 7))
  expect_output(print(a1), "replay .*\n +p = 1: ")
  expect_output(print(a1), "top-5")
  df1 <- as.data.frame(a1)
  expect_equal(df1$value[df1$measure == "replay_rate"], a1$replay$by_p$rate)
  expect_equal(df1$value[df1$measure == "linkage_top_rate"], a1$linkage_top$rate_m)
  plain <- as.data.frame(p$m)
  attr(plain, "detanon") <- NULL
  a2 <- assess(p$d, plain, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
               deterministic = TRUE)
  expect_null(a2$replay)
  expect_output(print(a2), "replay +\\(not run\\)")
  expect_identical(a$pmse, utility_pmse(p$d, p$m))
  expect_identical(a$delta, utility_delta(p$d, p$m)$delta)
  expect_identical(a$model, utility_model(p$d, p$m, f, family = stats::binomial()))
  expect_identical(a$vars, c("Age", "Fare"))
  expect_identical(a$strata, c("Pclass", "Sex", "Family"))
  a0 <- assess(p$d, p$m, deterministic = TRUE, strata = character())
  expect_null(a0$model)
  expect_identical(a0$strata, character())
})

test_that("the assessment keeps no original record values", {
  p <- make_pair()
  a <- assess(p$d, p$m, formula = Survived ~ Age + Fare, family = "binomial", deterministic = TRUE)
  # the per-record link shares and re-identification probabilities are fractions j / t of
  # counts (0.75 is also a Titanic age); they are checked to be exactly that instead
  for (l in list(a$linkage, a$linkage_top)) {
    for (v in list(l$linked, l$linked_m, l$reid_prob)) {
      expect_true(all(vapply(v, function(x) any(abs(x * seq_len(891) - round(x * seq_len(891))) < 1e-9), NA)))
    }
  }
  a$linkage$linked <- a$linkage$linked_m <- a$linkage$reid_prob <- NULL
  a$linkage_top$linked <- a$linkage_top$linked_m <- a$linkage_top$reid_prob <- NULL
  # the replay holds rates and sums of such fractions per share p only
  expect_identical(names(a$replay$by_p), c("p", "n_known", "rate", "n_linked", "rate_m", "n_linked_m", "reid",
                                           "blind_rate", "blind_rate_m"))
  a$replay <- NULL
  # the battery's per-record successes and confidences are shares in [0, 1] (fractions
  # j / t, or one minus a ratio of distances); its tables hold strata values and rates
  # (the assignment's confidence is a regret: a non-negative difference of squared z-distances)
  for (at in a$battery$attacks) {
    for (v in list(at$success, at$success_m)) expect_true(all(is.na(v) | (v >= 0 & v <= 1)))
    expect_true(all(is.na(at$confidence) | at$confidence >= 0))
  }
  a$battery <- lapply(a$battery$attacks, function(at) at[c("rate", "rate_m", "control_rate", "advantage",
                                                           "worst_stratum", "precision_top10")])
  vals <- unlist(a, use.names = FALSE)
  vals <- suppressWarnings(as.numeric(vals[!is.na(suppressWarnings(as.numeric(vals)))]))
  fares <- unique(p$d$Fare[p$d$Fare != round(p$d$Fare)])
  expect_false(any(fares %in% vals))
  ages <- unique(p$d$Age[p$d$Age != round(p$d$Age)])
  expect_false(any(ages %in% vals))
})

test_that("print, summary and as.data.frame report every measure", {
  p <- make_pair()
  a <- assess(p$d, p$m, formula = Survived ~ Pclass + Sex + Age + Fare + Family,
              family = stats::binomial(), deterministic = TRUE)
  out <- utils::capture.output(print(a))
  expect_lte(length(out), 46L) # the battery adds a table (with its two tail attacks)
  expect_lte(max(nchar(out)), 80L)
  txt <- paste(out, collapse = "\n")
  expect_match(txt, sprintf("risk1 +%.4f \\(%d\\)", a$rmd$risk1, a$rmd$n_risk1))
  expect_match(txt, sprintf("risk2 +%.4f", a$rmd$risk2))
  expect_match(txt, "\\(blind ")
  expect_match(txt, "do NOT cover")
  expect_match(txt, "None of them measures disclosure risk")
  expect_match(txt, sprintf("delta +%.4f +Age: .*\n +%.4f +Fare:", a$delta[["Age"]], a$delta[["Fare"]]))
  df <- as.data.frame(a)
  expect_named(df, c("kind", "measure", "term", "value"))
  expect_equal(df$value[df$measure == "risk1"], a$rmd$risk1)
  expect_equal(df$value[df$measure == "U"], a$pmse$U)
  expect_equal(df$value[df$measure == "delta" & df$term == "Fare"], a$delta[["Fare"]])
  expect_equal(df$value[df$measure == "std_diff"], a$model$std_diff)
  expect_equal(df$value[df$measure == "linkage_rate"], a$linkage$rate)
  s <- summary(a)
  expect_s3_class(s, "summary.detanon_assess")
  expect_identical(s$table, df)
  expect_output(print(s), "ci_overlap")
  expect_output(print(a$rmd), "risk1 = ")
  expect_output(print(a$pmse), "S_pMSE")
  expect_output(print(a$model), "std_diff")
})

test_that("plot draws the three figures and checks its input", {
  p <- make_pair()
  a <- assess(p$d, p$m, formula = Survived ~ Pclass + Sex + Age + Fare + Family,
              family = stats::binomial(), deterministic = TRUE)
  a0 <- assess(p$d, p$m, deterministic = TRUE)
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_invisible(plot(a, original = p$d, masked = p$m))
  expect_silent(plot(a))
  expect_silent(plot(a, type = "risk", original = p$d, masked = p$m, vars = "Fare"))
  expect_silent(plot(a0, type = "pmse"))
  expect_silent(plot(a, type = "model"))
  expect_error(plot(a, type = "risk"), "needs the data")
  expect_error(plot(a0, type = "model"), "needs an assessment made with a `formula`")
  expect_error(plot(a, type = "qq"), "`type` must name one or more of")
  expect_error(plot(a, type = "risk", original = p$d[1:5, ], masked = p$m[1:5, ]), "891 rows")
  expect_error(plot(a, type = "risk", original = p$d, masked = p$m, vars = "Survived"),
               "`vars` must name one or two of the assessed variables")
})

test_that("assess() validates before computing anything", {
  p <- make_pair()
  expect_error(assess(p$d, p$m[-1, ]), "`original` has 891 rows but `masked` has 890")
  expect_error(assess(p$d, p$m, formula = "Survived ~ Age"), "`formula` must be NULL or a model formula")
  expect_error(assess(p$d, p$m, family = "nofamily"), "`family` must be a family")
  expect_error(assess(p$d, p$m, w1 = 0), "`w1` must be a single finite number > 0")
  expect_error(assess(p$d, p$m, m = 0), "`m` must be a single whole number >= 1")
  expect_error(assess(p$d, p$m, vars = "Sex"), "`vars` must name numeric columns")
})

test_that("assess(): `top_m` is the deprecated name of `m`; risk_rmd()'s count is `neighbours`", {
  d <- titanic_paper()[-1]
  m <- anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3)
  new <- assess(d, m, deterministic = TRUE, m = 5, neighbours = 2)
  expect_identical(new$linkage_top, risk_linkage(d, m, m = 5))
  expect_identical(new$rmd, risk_rmd(d, m, deterministic = TRUE, neighbours = 2))
  expect_warning(old <- assess(d, m, deterministic = TRUE, top_m = 5), class = "detanon_warning_deprecated")
  expect_identical(old$linkage_top, new$linkage_top)
  # the old reading of a call with both: m for risk_rmd(), top_m for the linkage
  expect_warning(expect_warning(both <- assess(d, m, deterministic = TRUE, m = 2, top_m = 5),
                                class = "detanon_warning_deprecated"), class = "detanon_warning_deprecated")
  expect_identical(both$rmd, new$rmd)
  expect_identical(both$linkage_top, new$linkage_top)
  out <- utils::capture.output(print(new))
  expect_true(all(nchar(out) <= 80))
})

test_that("assess() runs the risk battery last, leaving every other measure unchanged", {
  p <- make_pair()
  d <- p$d[-1]
  m <- p$m[-1]
  a0 <- assess(d, m, deterministic = TRUE, battery = FALSE, seed = 3)
  expect_null(a0$battery)
  a1 <- assess(d, m, deterministic = TRUE, seed = 3, sensitive = "Survived",
               intruder = intruder(held = NULL))
  for (f in c("rmd", "linkage", "linkage_top", "replay", "pmse", "delta")) expect_identical(a1[[f]], a0[[f]])
  b <- risk_battery(d, m, intruder = intruder(held = NULL), sensitive = "Survived", seed = 3)
  expect_equal(as.data.frame(a1$battery), as.data.frame(b))
  expect_output(print(a1), "Risk battery, worst attack")
  expect_output(print(a1), "linkage_original")
  df <- as.data.frame(a1)
  expect_equal(df$value[df$measure == "battery_rate" & df$term == "inference"], b$attacks$inference$rate)
  expect_equal(df$value[df$measure == "battery_advantage" & df$term == "singling_out"],
               b$attacks$singling_out$advantage)
  expect_equal(df[seq_len(nrow(as.data.frame(a0))), ][df$kind[seq_len(nrow(as.data.frame(a0)))] == "risk" &
                 !grepl("^battery", df$measure[seq_len(nrow(as.data.frame(a0)))]), ],
               as.data.frame(a0)[as.data.frame(a0)$kind == "risk", ], ignore_attr = TRUE)
  a2 <- assess(d, m, deterministic = TRUE, seed = 3, intruder = intruder(held = "Survived"))
  expect_equal(a2$battery$attacks$linkage_original$rate,
               attack_linkage(d, m, intruder = intruder(held = "Survived"), direction = "original", seed = 3)$rate)
  expect_error(assess(d, m, battery = NA), class = "detanon_error_argument")
})
