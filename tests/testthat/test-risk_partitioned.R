# risk_partitioned(): measures run on groups of whole strata, merged, equal the in-memory ones.

rp_fixture <- function(format) {
  d <- titanic_paper()[-1]
  list(d = d, m = anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3, format = format,
                            check_identifiers = FALSE))
}

test_that("linkage measured stratum by stratum is identical() to risk_linkage()", {
  for (format in c("none", "natural")) {
    f <- rp_fixture(format)
    for (m in c(1, 3)) {
      for (size in c(1, 200, 1e6)) {
        r <- risk_partitioned(f$d, f$m, "linkage", vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), m = m,
                              group_size = size, future = FALSE)
        expect_identical(r, risk_linkage(f$d, f$m, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), m = m))
      }
    }
  }
})

test_that("the battery's linkage, assignment and recipe attacks merge to the in-memory ones", {
  f <- rp_fixture("none")
  it <- intruder(vars = c("Age", "Fare"), strata = c("Pclass", "Sex"))
  runs <- list(
    attack_linkage_released = function(...) attack_linkage(..., direction = "released"),
    attack_linkage_original = function(...) attack_linkage(..., direction = "original"),
    attack_assignment = attack_assignment,
    attack_recipe = attack_recipe)
  for (ms in names(runs)) {
    ref <- runs[[ms]](f$d, f$m, intruder = it, control = FALSE)
    ref$details <- NULL
    r <- risk_partitioned(f$d, f$m, ms, intruder = it, group_size = 150, future = FALSE)
    expect_identical(r, ref, label = ms)
  }
})

test_that("tiny-valued columns and numeric keys use the scale of all the records", {
  set.seed(21)
  d <- data.frame(g = sample(c("a", "b", "c"), 120, TRUE), x = stats::runif(120) * 1e-200,
                  y = round(stats::rnorm(120), 1), key = stats::rnorm(120))
  m <- anonymise(d, vars = c("x", "y"), strata = "g", k = 3, format = "none", check_identifiers = FALSE)
  expect_identical(risk_partitioned(d, m, "linkage", vars = c("x", "y"), strata = "g", group_size = 1, future = FALSE),
                   risk_linkage(d, m, vars = c("x", "y"), strata = "g"))
  it <- intruder(vars = c("x", "y"), strata = "g", held = "key")
  ref <- attack_linkage(d, m, intruder = it, control = FALSE)
  ref$details <- NULL
  expect_identical(risk_partitioned(d, m, "attack_linkage_released", intruder = it, group_size = 1, future = FALSE), ref)
})

test_that("constant, near-constant and tiny numeric keys use the scale of all the records", {
  set.seed(22)
  d <- data.frame(g = sample(c("a", "b", "c"), 150, TRUE), x = round(stats::rnorm(150), 1),
                  tiny = sample(1:3, 150, TRUE) * 1e-300, const = 7, near = 1 + sample(0:1, 150, TRUE) * 1e-15,
                  w = sample(c(1, 2, 50), 150, TRUE))
  m <- anonymise(d, vars = "x", strata = "g", k = 3, format = "none", check_identifiers = FALSE)
  m$const[1:4] <- 8
  it <- intruder(vars = "x", strata = "g", held = c("tiny", "const", "near", "w"))
  for (ms in c("attack_linkage_released", "attack_linkage_original")) {
    ref <- attack_linkage(d, m, intruder = it, direction = sub("attack_linkage_", "", ms), control = FALSE)
    ref$details <- NULL
    expect_identical(risk_partitioned(d, m, ms, intruder = it, group_size = 40, future = FALSE), ref, label = ms)
  }
})

test_that("the global scale reaches the measures as an argument: nothing outlives a run", {
  f <- rp_fixture("none")
  it <- intruder(vars = c("Age", "Fare"), strata = c("Pclass", "Sex"))
  part <- f$d$Pclass == 1
  alone <- function() {
    list(attack_linkage(f$d[part, ], f$m[part, ], intruder = it, control = FALSE),
         risk_linkage(f$d[part, ], f$m[part, ], vars = c("Age", "Fare"), strata = c("Pclass", "Sex")))
  }
  before <- alone()
  # a run whose worker fails part-way, and one that succeeds
  expect_error(risk_partitioned(f$d, f$m, "attack_recipe", intruder = it, k = 1, group_size = 150, future = FALSE),
               class = "detanon_error")
  risk_partitioned(f$d, f$m, "attack_linkage_released", intruder = it, group_size = 150, future = FALSE)
  expect_identical(alone(), before)
  # the scale of all the records, given to a group, gives that group's share of the whole run
  g <- detanon:::global_scale(f$d, c("Age", "Fare"))
  s_all <- detanon:::linkage_setup(f$d, f$m, c("Age", "Fare"), c("Pclass", "Sex"))
  s_grp <- detanon:::linkage_setup(f$d[part, ], f$m[part, ], c("Age", "Fare"), c("Pclass", "Sex"), g)
  expect_identical(unname(s_grp$zo), unname(s_all$zo[part, ]))
  expect_identical(unname(s_grp$zm), unname(s_all$zm[part, ]))
})

test_that("the plan does not change the result", {
  skip_if_not_installed("future.apply")
  f <- rp_fixture("none")
  ref <- risk_linkage(f$d, f$m, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"))
  old <- future::plan(future::sequential)
  on.exit(future::plan(old), add = TRUE)
  expect_identical(risk_partitioned(f$d, f$m, "linkage", vars = c("Age", "Fare"), strata = c("Pclass", "Sex"),
                                    group_size = 200, future = TRUE), ref)
  ok <- tryCatch({
    future::plan(future::multisession, workers = 2)
    TRUE
  }, error = function(e) FALSE)
  skip_if_not(ok, "multisession workers could not start")
  expect_identical(risk_partitioned(f$d, f$m, "linkage", vars = c("Age", "Fare"), strata = c("Pclass", "Sex"),
                                    group_size = 200, future = TRUE), ref)
})

test_that("what cannot be partitioned exactly is a classed error", {
  f <- rp_fixture("natural")
  it <- intruder(vars = c("Age", "Fare"), strata = c("Pclass", "Sex"))
  expect_error(risk_partitioned(f$d, f$m, "attack_recipe", intruder = it, future = FALSE),
               class = "detanon_error_argument")
  expect_error(risk_partitioned(f$d, f$m, "attack_linkage_released", intruder = intruder(vars = "Age", p = 0.5),
                                future = FALSE), class = "detanon_error_argument")
  expect_error(risk_partitioned(f$d, f$m, "attack_assignment", intruder = it, control = TRUE, future = FALSE),
               class = "detanon_error_argument")
})

test_that("strata that print alike are measured apart, as in memory (issue 34, item 4)", {
  set.seed(35)
  t0 <- as.POSIXct("2024-01-01 10:00:00", tz = "UTC")
  for (s in list(rep(c(0.1 + 0.2, 0.3), each = 20), rep(t0 + c(0, 0.4, 0.8), length.out = 40))) {
    d <- data.frame(x = stats::rnorm(40), y = stats::rnorm(40), s = s)
    m <- anonymise(d, vars = c("x", "y"), strata = "s", k = 3, format = "none", check_identifiers = FALSE)
    expect_identical(risk_partitioned(d, m, "linkage", vars = c("x", "y"), strata = "s", group_size = 1,
                                      future = FALSE),
                     risk_linkage(d, m, vars = c("x", "y"), strata = "s"))
    it <- intruder(vars = c("x", "y"), strata = "s")
    for (ms in c("attack_linkage_released", "attack_assignment")) {
      ref <- if (ms == "attack_assignment") attack_assignment(d, m, intruder = it, control = FALSE)
             else attack_linkage(d, m, intruder = it, control = FALSE)
      ref$details <- NULL
      expect_identical(risk_partitioned(d, m, ms, intruder = it, group_size = 1, future = FALSE), ref, label = ms)
    }
  }
})

test_that("no records: the in-memory result (issue 34, item 9)", {
  f <- rp_fixture("none")
  d0 <- f$d[0, ]
  m0 <- f$m[0, ]
  expect_identical(risk_partitioned(d0, m0, "linkage", vars = c("Age", "Fare"), strata = c("Pclass", "Sex"),
                                    future = FALSE),
                   risk_linkage(d0, m0, vars = c("Age", "Fare"), strata = c("Pclass", "Sex")))
  # variant: no strata, and an attack
  expect_identical(risk_partitioned(d0, m0, "linkage", vars = c("Age", "Fare"), strata = character(), future = FALSE),
                   risk_linkage(d0, m0, vars = c("Age", "Fare"), strata = character()))
  it <- intruder(vars = c("Age", "Fare"), strata = c("Pclass", "Sex"))
  ref <- attack_assignment(d0, m0, intruder = it, control = FALSE)
  ref$details <- NULL
  expect_identical(risk_partitioned(d0, m0, "attack_assignment", intruder = it, future = FALSE), ref)
})

test_that("arguments the measure does not take are refused (issue 34, item 9)", {
  f <- rp_fixture("none")
  it <- intruder(vars = c("Age", "Fare"), strata = c("Pclass", "Sex"))
  expect_snapshot(error = TRUE, {
    risk_partitioned(f$d, f$m, "linkage", vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), future = FALSE,
                     bogus = 1)
    risk_partitioned(f$d, f$m, "linkage", vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), future = FALSE,
                     intruder = it)
    risk_partitioned(f$d, f$m, "attack_assignment", intruder = it, future = FALSE, limt = 10)
  })
  # the measure's own arguments pass
  expect_s3_class(risk_partitioned(f$d, f$m, "attack_assignment", intruder = it, future = FALSE, limit = 100),
                  "detanon_attack")
})
