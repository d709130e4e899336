# utility_pmse(), utility_delta(), utility_model() against slow transcriptions, synthpop and
# the paper's Titanic numbers.

# Logistic regression by Newton-Raphson on the model matrix, then the pMSE formula.
ref_pmse <- function(original, masked, vars, interactions = FALSE) {
  st <- rbind(original[vars], masked[vars])
  for (v in vars) if (is.character(st[[v]])) st[[v]] <- factor(st[[v]])
  f <- if (interactions) stats::as.formula(paste("~ (", paste(vars, collapse = "+"), ")^2"))
       else stats::as.formula(paste("~", paste(vars, collapse = "+")))
  X <- stats::model.matrix(f, st)
  X <- X[, qr(X)$pivot[seq_len(qr(X)$rank)], drop = FALSE]
  y <- rep(0:1, each = nrow(original))
  b <- rep(0, ncol(X))
  for (it in 1:50) {
    p <- 1 / (1 + exp(-drop(X %*% b)))
    b <- b + solve(crossprod(X, X * (p * (1 - p))), crossprod(X, y - p))
  }
  p <- 1 / (1 + exp(-drop(X %*% b)))
  N <- length(y)
  U <- sum((p - 0.5)^2) / N
  list(U = U, S = U / ((ncol(X) - 1) * 0.25 * 0.5 / N), p = p)
}

test_that("utility_pmse equals the slow reference, with and without interactions", {
  set.seed(12)
  n <- 300
  o <- data.frame(a = stats::rnorm(n), b = stats::rexp(n), g = sample(c("p", "q", "r"), n, TRUE),
                  h = factor(sample(c("u", "v"), n, TRUE)))
  m <- o
  m$a <- o$a + stats::rnorm(n, sd = 0.3) + 0.1
  m$b <- o$b * 1.2
  for (inter in c(FALSE, TRUE)) {
    got <- utility_pmse(o, m, interactions = inter)
    want <- ref_pmse(o, m, c("a", "b", "g", "h"), inter)
    expect_equal(got$U, want$U, tolerance = 1e-8)
    expect_equal(got$S_pMSE, want$S, tolerance = 1e-8)
    expect_equal(got$scores, unname(want$p), tolerance = 1e-7)
    expect_equal(got$c, 0.5)
  }
  # identical data sets: U is 0
  expect_equal(utility_pmse(o, o)$U, 0, tolerance = 1e-20)
  # a constant column adds no coefficient
  o$k <- 1; m$k <- 1
  expect_equal(utility_pmse(o, m)$n_coef, utility_pmse(o, m, vars = c("a", "b", "g", "h"))$n_coef)
})

test_that("utility_pmse agrees with synthpop::utility.gen(method = 'logit')", {
  skip_if_not_installed("synthpop")
  set.seed(13)
  n <- 250
  o <- data.frame(a = stats::rnorm(n), b = stats::rexp(n), g = factor(sample(c("p", "q", "r"), n, TRUE)))
  m <- o
  m$a <- o$a + stats::rnorm(n, sd = 0.5)
  m$b <- o$b + 0.2
  for (ord in 0:1) {
    s <- suppressMessages(utils::capture.output(
      u <- synthpop::utility.gen(m, o, method = "logit", maxorder = ord, print.flag = FALSE)))
    got <- utility_pmse(o, m, interactions = ord == 1)
    expect_equal(got$U, unname(u$pMSE), tolerance = 1e-8)
    expect_equal(got$S_pMSE, unname(u$S_pMSE), tolerance = 1e-8)
  }
})

test_that("utility_pmse checks its input", {
  o <- data.frame(a = c(1, 2, 3, 4), g = c("x", "y", "x", "y"))
  m <- o
  expect_error(utility_pmse(o, m[1:3, ]), "`original` has 4 rows but `masked` has 3")
  expect_error(utility_pmse(o, m, vars = "zz"), "`vars` names columns that are not in the data: `zz`")
  on <- o; on$a[1] <- NA
  expect_error(utility_pmse(on, m), "`vars` column `a` has missing or infinite values")
  ol <- o; ol$l <- I(list(1, 2, 3, 4)); ml <- m; ml$l <- ol$l
  expect_error(utility_pmse(ol, ml), "`vars` column `l` must be numeric, factor, character or logical")
  mm <- m; mm$a <- as.character(mm$a)
  expect_error(utility_pmse(o, mm), "is numeric in one data frame and not in the other")
  expect_error(utility_pmse(o, m, interactions = "yes"), "`interactions` must be TRUE or FALSE")
  expect_error(utility_pmse(o, m, vars = "a", interactions = TRUE), "needs at least two columns")
})

test_that("utility_delta equals its formula on random and adversarial data", {
  set.seed(14)
  o <- data.frame(a = stats::rnorm(50), b = c(rep(3, 49), 4), c = 1:50)
  m <- o
  m$a <- m$a + stats::rnorm(50)
  m$b <- 3.02
  m$c <- rev(m$c)
  got <- utility_delta(o, m, vars = c("a", "b", "c"))$delta
  want <- vapply(c("a", "b", "c"), function(v) {
    s <- 0
    for (i in 1:50) s <- s + (o[[v]][i] - m[[v]][i])^2
    (s / 50) / (sum((o[[v]] - mean(o[[v]]))^2) / 49)
  }, 0)
  expect_equal(got, want)
  expect_identical(names(got), c("a", "b", "c"))
  expect_equal(unname(utility_delta(o, o, vars = "a")$delta), 0)
  ok <- o; ok$a <- 2
  expect_error(utility_delta(ok, m, vars = "a"), "`a` is constant in `original`")
  expect_error(utility_delta(o[1, ], m[1, ], vars = "a"), "at least 2 records")
  expect_error(utility_delta(o, m[-1, ], vars = "a"), "`original` has 50 rows but `masked` has 49")
})

test_that("utility_model matches lm / glm and the CI-overlap formula", {
  set.seed(15)
  n <- 200
  o <- data.frame(x = stats::rnorm(n), g = factor(sample(c("a", "b"), n, TRUE)))
  o$y <- 1 + 2 * o$x + (o$g == "b") + stats::rnorm(n)
  o$z <- stats::rbinom(n, 1, stats::plogis(o$x))
  o$cnt <- stats::rpois(n, exp(0.5 + 0.3 * o$x))
  m <- o
  m$x <- o$x + stats::rnorm(n, sd = 0.2)
  res <- utility_model(o, m, y ~ x + g)
  expect_s3_class(res, "detanon_model")
  expect_named(res[1:7], c("term", "estimate_or", "se_or", "estimate_an", "se_an", "std_diff", "ci_overlap"))
  lo <- summary(stats::lm(y ~ x + g, o))$coefficients
  la <- summary(stats::lm(y ~ x + g, m))$coefficients
  expect_equal(res$estimate_or, unname(lo[, 1]))
  expect_equal(res$se_or, unname(lo[, 2]))
  expect_equal(res$estimate_an, unname(la[, 1]))
  expect_equal(res$se_an, unname(la[, 2]))
  expect_equal(res$std_diff, unname(abs(lo[, 1] - la[, 1]) / lo[, 2]))
  cio <- stats::confint(stats::lm(y ~ x + g, o)); cia <- stats::confint(stats::lm(y ~ x + g, m))
  expect_equal(res$lower_or, unname(cio[, 1])); expect_equal(res$upper_an, unname(cia[, 2]))
  ov <- numeric(3)
  for (i in 1:3) {
    inter <- min(cio[i, 2], cia[i, 2]) - max(cio[i, 1], cia[i, 1])
    ov[i] <- (inter / (cio[i, 2] - cio[i, 1]) + inter / (cia[i, 2] - cia[i, 1])) / 2
  }
  expect_equal(res$ci_overlap, ov)
  # disjoint intervals give a negative overlap; identical data give 1 and 0
  same <- utility_model(o, o, y ~ x)
  expect_equal(same$ci_overlap, c(1, 1)); expect_equal(same$std_diff, c(0, 0))
  far <- m; far$y <- far$y + 100
  expect_lt(utility_model(o, far, y ~ x)$ci_overlap[1], 0)
  cases <- list(list(stats::binomial(), z ~ x), list("poisson", cnt ~ x), list(stats::quasipoisson, cnt ~ x))
  for (cs in cases) {
    fam <- cs[[1]]; f <- cs[[2]]
    r <- utility_model(o, m, f, family = fam)
    fam_obj <- if (is.character(fam)) get(fam)() else if (is.function(fam)) fam() else fam
    go <- summary(stats::glm(f, fam_obj, o))$coefficients
    expect_equal(r$estimate_or, unname(go[, 1]))
    expect_equal(r$se_or, unname(go[, 2]))
    expect_equal(r$p_or, unname(go[, 4]))
  }
})

test_that("utility_model checks its input", {
  o <- data.frame(y = c(1, 3, 2, 5, 4), x = c(1, 2, 3, 4, 5), g = factor(c("a", "a", "b", "b", "b")))
  m <- o
  expect_error(utility_model(o, m), "`formula` must be a two-sided model formula")
  expect_error(utility_model(o, m, "y ~ x"), "`formula` must be a two-sided model formula")
  expect_error(utility_model(o, m, ~ x), "`formula` must be a two-sided model formula")
  expect_error(utility_model(o, m, y ~ w), "`formula` uses variables that are not columns of `original`: `w`")
  expect_error(utility_model(o, m, y ~ x, family = "nofamily"), "`family` must be a family")
  expect_error(utility_model(o, m, y ~ x, family = 3), "`family` must be a family object")
  expect_error(utility_model(o, m, y ~ x, level = 1), "`level` must be")
  expect_error(utility_model(o, m[1:4, ], y ~ x), "`original` has 5 rows but `masked` has 4")
  m2 <- m; m2$g <- factor(c("a", "a", "a", "a", "a"))
  expect_error(utility_model(o, m2, y ~ g), "could not be fitted to `masked`|different coefficients")
})

test_that("the paper's Titanic utility numbers are reproduced", {
  skip_if_not_installed("RANN")
  d <- titanic_paper()
  m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                 engine = "rann", check_identifiers = FALSE)
  # paper: delta Age 0.0114, Fare 0.0473
  dl <- utility_delta(d, m)$delta
  expect_equal(round(dl[["Age"]], 4), 0.0114)
  expect_equal(round(dl[["Fare"]], 4), 0.0473)
  # paper: U = 0.000117 (propensity model on all variables)
  p <- utility_pmse(d, m)
  expect_equal(signif(p$U, 3), 0.000117)
  expect_equal(signif(utility_pmse(d, m, vars = c("Survived", "Pclass", "Sex", "Age", "Fare", "Family"))$U, 3),
               0.000117)
  # Table 3, original data: every printed digit
  t3 <- utility_model(d, m, Survived ~ Pclass + Sex + Age + Fare + Family, family = stats::binomial())
  expect_identical(t3$term, c("(Intercept)", "Pclass2", "Pclass3", "Sexmale", "Age", "Fare", "Family1"))
  expect_equal(round(t3$estimate_or, 3), c(3.519, -1.067, -2.283, -2.628, -0.033, 0.001, -0.091))
  expect_equal(round(t3$se_or, 3), c(0.437, 0.286, 0.281, 0.194, 0.008, 0.002, 0.194))
  expect_equal(round(t3$stat_or, 3), c(8.054, -3.732, -8.135, -13.527, -4.437, 0.466, -0.471))
  expect_equal(signif(t3$p_or[c(1, 3, 5, 6, 7)], 3), c(8.00e-16, 4.12e-16, 9.13e-06, 0.641, 0.638))
  expect_equal(round(t3$p_or[2], 4), 0.0002)
  # Table 3, anonymised data and standardised differences: every printed digit
  paper_an <- c(3.615, -1.112, -2.343, -2.625, -0.035, 0.001, -0.089)
  expect_equal(round(t3$estimate_an, 3), paper_an)
  expect_equal(round(t3$se_an, 3), c(0.454, 0.300, 0.300, 0.194, 0.008, 0.002, 0.197))
  expect_equal(round(t3$stat_an, 3), c(7.972, -3.707, -7.822, -13.508, -4.586, 0.217, -0.452))
  expect_equal(round(t3$std_diff, 3), c(0.220, 0.159, 0.216, 0.012, 0.205, 0.223, 0.010))
  # the std. difference is |b_or - b_an| / SE(b_or): the paper's own columns satisfy it
  paper_or <- c(3.519, -1.067, -2.283, -2.628, -0.033, 0.001, -0.091)
  expect_equal(round(abs(paper_or - paper_an)[1] / 0.437, 3), 0.220)
})

test_that("utility_pmse(method = \"cart\") equals synthpop's CART pMSE on SD2011", {
  skip_if_not_installed("synthpop")
  skip_if_not_installed("rpart")
  vars <- c("sex", "age", "placesize", "edu", "socprof", "marital", "height", "weight", "nofriend")
  d <- synthpop::SD2011[vars]
  d <- d[stats::complete.cases(d), ]
  run <- function(format) suppressMessages(anonymise(d, k = 3, strata = "sex", format = format,
                                                     check_identifiers = FALSE))
  raw <- run("none")
  # "precision" rounds the whole numbers; "natural" keeps their decimals when their SD is
  # below 500 (all four here): rounding put masked values back on the originals (risk1 0.35
  # against 0.04 unformatted, singling out 0.24 against 0.13)
  nat <- run("precision")
  sp <- function(m) suppressMessages(synthpop::utility.gen(as.data.frame(m), d, method = "cart",
                                                           print.flag = FALSE))$pMSE
  seed_before <- .Random.seed
  u_raw <- utility_pmse(d, raw, method = "cart")
  expect_identical(.Random.seed, seed_before) # no cross-validation: the RNG is untouched
  u_nat <- utility_pmse(d, nat, method = "cart")
  expect_equal(u_raw$U, sp(raw), tolerance = 1e-12)
  expect_equal(u_nat$U, sp(nat), tolerance = 1e-12)
  # decimals on whole-number variables make the raw release separable; rounded, not
  expect_gt(u_raw$U, 0.2)
  expect_lt(u_nat$U, 0.05)
  expect_equal(utility_pmse(d, run(NULL), method = "cart")$U, u_raw$U, tolerance = 0.01)
  # the logit does not see it
  expect_lt(utility_pmse(d, raw)$U, 1e-3)
  expect_identical(u_raw$method, "cart")
  expect_true(is.na(u_raw$S_pMSE))
  expect_output(print(u_raw), "classification tree")
  # column names the tree formula could not take
  names(d)[1:2] <- c("t", "my age")
  names(raw)[1:2] <- c("t", "my age")
  expect_equal(utility_pmse(d, raw, method = "cart")$U, u_raw$U)
})

test_that("utility_model() uses the formula's environment, expands dots and reports dropped rows", {
  d <- titanic_paper()[-1]
  m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
  knots <- 2
  # (fares below the pile of zero fares stay negative in the natural form: log(Fare + 10))
  r <- utility_model(d, m, Survived ~ poly(Age, knots) + Sex + offset(log(Fare + 10)), family = binomial())
  expect_identical(r$term, c("(Intercept)", "poly(Age, knots)1", "poly(Age, knots)2", "Sexmale"))
  dot <- utility_model(d, m, Fare ~ .)
  expect_identical(dot$term, c("(Intercept)", "Survived", "Pclass2", "Pclass3", "Sexmale", "Age", "Family1"))
  d$Age[1:5] <- NA
  expect_message(utility_model(d, m, Fare ~ Age), "uses 886 of 891 records \\(5 with missing values left out\\)")
})
