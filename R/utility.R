#' Global utility: the propensity-score mean squared error (pMSE)
#'
#' Stacks `original` (indicator 0) on `masked` (indicator 1), fits a model of the
#' indicator on the variables (a logistic regression, or with `method = "cart"` a
#' classification tree), and summarises how well the fitted propensity scores \eqn{p_i}
#' tell the two apart (Woo et al. 2009):
#' \deqn{U = \frac{1}{N} \sum_{i=1}^N (p_i - c)^2,}
#' where N is the number of stacked rows and c the share of masked rows (0.5 here).
#' U is 0 when the model cannot tell the data sets apart and 1/4 when it separates them
#' completely. `S_pMSE` divides U by its expectation when both data sets come from the
#' same distribution, \eqn{(K - 1)(1 - c)^2 c / N} for a model with K estimable
#' coefficients (Snoke et al. 2018): values near 1 mean "as similar as two samples of one
#' population". Both agree with `synthpop::utility.gen(method = "logit", maxorder = 0)`
#' (`maxorder = 1` for `interactions = TRUE`).
#'
#' `method = "cart"` is synthpop's default: a classification tree (`rpart`, with
#' synthpop's settings `cp = 0.001`, `minbucket = 5`, the masked rows stacked first) whose
#' leaf shares are the scores. U agrees with `synthpop::utility.gen(masked, original,
#' method = "cart")`. A tree sees what a main-effects logit cannot, e.g. masked values that
#' carry decimals where the originals are whole numbers, or that leave the variable's range
#' (U = 0.25 is complete separation). `S_pMSE` is `NA` for CART: its null expectation
#' has no closed form (synthpop estimates it by permutations).
#'
#' Columns that look like direct identifiers in `original` (see [detect_identifiers()])
#' are left out of the default `vars`, with a message: a record number or a name is
#' unique per record and makes any two data sets look alike or apart for reasons that
#' have nothing to do with the masking. Name them in `vars` to include them.
#'
#' With the default `vars` (every column common to both), the paper's U = 0.000117 for
#' the Titanic data is reproduced (0.0001167 for
#' `anonymise(titanic_paper(), k = 3, vars = c("Age", "Fare"), strata = c("Pclass",
#' "Sex", "Family"), engine = "rann")`; the same to three significant digits with or
#' without `PassengerId` and `Survived`; only Age and Fare give 0.0000625).
#'
#' @section What it measures and what it does not:
#' U measures how much the joint distribution of the variables changed, as far as a
#' main-effects (or two-way) logistic model can see. It ignores the pairing of each
#' masked record with its original (a release that shuffles values between records can
#' score 0), it is not a disclosure-risk measure, and a small U does not guarantee that a
#' particular analysis gives the same answer (see [utility_model()]).
#'
#' @inheritParams risk_rmd
#' @param vars Columns entering the propensity model (numeric, factor, character or
#'   logical), present in both. Default: all columns common to both, except those that
#'   look like direct identifiers.
#' @param interactions If `TRUE`, all two-way interactions as well as the main effects
#'   (`method = "logit"` only: a tree finds interactions itself).
#' @param method `"logit"` (logistic regression, the paper's U) or `"cart"` (a
#'   classification tree, synthpop's default; needs the recommended package rpart).
#' @return An object of class `detanon_pmse`: a list with `method`, `U` (the pMSE), `S_pMSE`, `c`,
#'   `n_coef` (K - 1, the estimable coefficients besides the intercept), `scores` (the
#'   propensity scores of the stacked rows, original rows first), `vars`, `interactions`
#'   and `converged`.
#' @references Woo M-J, Reiter JP, Oganian A, Karr AF (2009). Global measures of data
#'   utility for microdata masked for disclosure limitation. *Journal of Privacy and
#'   Confidentiality* 1(1). Snoke J, Raab GM, Nowok B, Dibben C, Slavkovic A (2018).
#'   General and specific utility measures for synthetic data. *JRSS A* 181, 663-688.
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' utility_pmse(d, masked)
#' @family measures
#' @export
utility_pmse <- function(original, masked, vars = NULL, interactions = FALSE,
                         method = c("logit", "cart")) {
  check_data_frame(original, "original")
  check_data_frame(masked, "masked")
  check_same_rows(original, masked)
  interactions <- check_flag(interactions, "interactions")
  method <- match_choice(method, "method")
  if (method == "cart" && !requireNamespace("rpart", quietly = TRUE)) {
    stop_arg("`method = \"cart\"` needs the package rpart: install.packages(\"rpart\"), or use ",
             "method = \"logit\".")
  }
  if (method == "cart" && interactions) {
    stop_arg("`interactions = TRUE` applies to `method = \"logit\"`; a tree finds interactions itself.")
  }
  if (is.null(vars)) vars <- default_pmse_vars(original, masked)
  vars <- check_columns(vars, original, "vars")
  check_columns(vars, masked, "vars")
  if (!length(vars)) stop_arg("`vars` is empty: name at least one column for the propensity model.")
  if (!nrow(original)) stop_arg("`original` and `masked` have no rows: the propensity model needs records.", kind = "data")
  if (interactions && length(vars) < 2L) {
    stop_arg("`interactions = TRUE` needs at least two columns in `vars`.")
  }
  stacked <- vector("list", length(vars))
  names(stacked) <- vars
  for (v in vars) {
    a <- original[[v]]
    b <- masked[[v]]
    ok_type <- function(x) (is.numeric(x) || is.factor(x) || is.character(x) || is.logical(x)) &&
      is.null(dim(x))
    if (!ok_type(a) || !ok_type(b)) {
      stop_arg("`vars` column `", v, "` must be numeric, factor, character or logical in both ",
               "data frames; leave it out of `vars`.", kind = "column")
    }
    if (anyNA(a) || anyNA(b) || (is.numeric(a) && any(is.infinite(a))) ||
        (is.numeric(b) && any(is.infinite(b)))) {
      stop_arg("`vars` column `", v, "` has missing or infinite values; the propensity model ",
               "needs complete data: impute them or leave the column out of `vars`.", kind = "data")
    }
    if (is.numeric(a) != is.numeric(b)) {
      stop_arg("`vars` column `", v, "` is numeric in one data frame and not in the other; ",
               "give it the same type in both.", kind = "column")
    }
    stacked[[v]] <- if (is.numeric(a)) c(as.double(a), as.double(b))
                    else factor(c(as.character(a), as.character(b)))
  }
  n_o <- nrow(original)
  N <- 2L * n_o
  c_share <- 0.5
  if (method == "cart") return(pmse_cart(stacked, n_o, vars, c_share))
  resp <- ".detanon_masked"
  df <- as.data.frame(stacked, stringsAsFactors = FALSE, optional = TRUE)
  df[[resp]] <- rep(c(0, 1), each = n_o)
  # drop one-level factors (they have no contrast)
  keep <- vapply(vars, function(v) !is.factor(df[[v]]) || nlevels(df[[v]]) > 1L, logical(1))
  rhs <- paste0("`", vars[keep], "`")
  rhs <- if (!length(rhs)) "1" else if (interactions && length(rhs) > 1L) {
    paste0("(", paste(rhs, collapse = " + "), ")^2")
  } else paste(rhs, collapse = " + ")
  f <- stats::as.formula(paste0("`", resp, "` ~ ", rhs), env = baseenv())
  fit <- suppressWarnings(stats::glm(f, family = stats::binomial(), data = df, model = FALSE,
                                     x = FALSE, y = FALSE))
  scores <- unname(stats::fitted(fit))
  U <- sum((scores - c_share)^2) / N
  km1 <- sum(!is.na(stats::coef(fit))) - 1L
  S <- if (km1 > 0) U / (km1 * (1 - c_share)^2 * c_share / N) else NA_real_
  structure(list(method = "logit", U = U, S_pMSE = S, c = c_share, n_coef = km1, scores = scores,
                 vars = vars, interactions = interactions, converged = isTRUE(fit$converged)),
            class = "detanon_pmse")
}

# synthpop's utility.gen(method = "cart"): masked rows first (indicator 1), then the
# originals, rpart(t ~ ., method = "class", cp = 0.001, minbucket = 5); the score of a row
# is the masked share of its leaf. xval = 0: no cross-validation, which leaves the tree
# unchanged and the caller's random number stream untouched.
pmse_cart <- function(stacked, n_o, vars, c_share) {
  N <- 2L * n_o
  swap <- c(n_o + seq_len(n_o), seq_len(n_o))
  df <- as.data.frame(lapply(stacked, function(v) v[swap]), stringsAsFactors = FALSE, optional = TRUE)
  names(df) <- paste0("v", seq_along(vars)) # any column name, also "t" or non-syntactic ones
  df$t <- rep(c(1, 0), each = n_o)
  fit <- rpart::rpart(t ~ ., data = df, method = "class",
                      control = rpart::rpart.control(cp = 0.001, minbucket = 5, xval = 0))
  score <- unname(stats::predict(fit)[, 2L])
  scores <- score[order(swap)] # original rows first, as for the logit
  structure(list(method = "cart", U = sum((scores - c_share)^2) / N, S_pMSE = NA_real_, c = c_share,
                 n_coef = nrow(fit$frame) - 1L, scores = scores, vars = vars, interactions = FALSE,
                 converged = TRUE),
            class = "detanon_pmse")
}

# Columns common to both, without those that look like direct identifiers in `original`.
default_pmse_vars <- function(original, masked) {
  common <- intersect(names(original), names(masked))
  ids <- detect_identifiers(original[common])$column
  if (length(ids)) {
    one <- length(ids) == 1L
    inform_detanon("left out ", quote_names(ids), " of the propensity model, which ",
                   if (one) "looks like a direct identifier" else "look like direct identifiers",
                   "; name ", if (one) "it" else "them", " in `vars` to include ", if (one) "it" else "them", ".",
                   kind = "identifier")
  }
  setdiff(common, ids)
}

#' @export
print.detanon_pmse <- function(x, ...) {
  model <- if (identical(x$method, "cart")) sprintf("classification tree, %d nodes", x$n_coef + 1L) else
    sprintf("%s, %d coefficients", if (x$interactions) "main effects + two-way interactions" else "main effects",
            x$n_coef)
  cat(sprintf("Propensity-score utility (%s) on %d + %d rows\n", model,
              length(x$scores) / 2, length(x$scores) / 2))
  cat(sprintf("  U (pMSE) = %.6g  (0 = indistinguishable, 0.25 = fully separable)\n", x$U))
  if (!is.na(x$S_pMSE)) {
    cat(sprintf("  S_pMSE   = %.4g  (about 1 when both look like samples of one population)\n", x$S_pMSE))
  }
  if (!x$converged) cat("  note: the logistic regression did not converge\n")
  invisible(x)
}

#' Per-variable information loss (delta)
#'
#' For each variable, the mean squared difference between original and masked values
#' relative to the original variance (the paper's \eqn{\delta_x}):
#' \deqn{\delta_x = \frac{\frac{1}{n}\sum_i (x_i^{or} - x_i^{an})^2}{\mathrm{Var}(x^{or})},}
#' with `Var` the usual sample variance (denominator n - 1, as `var()`). A delta of 0.04
#' says that about 4% of the variability of the masked variable comes from the masking.
#' The paper's Titanic values, Age 0.0114 and Fare 0.0473, are reproduced exactly
#' (0.011361 and 0.047336 with `engine = "rann"`).
#'
#' @section What it measures and what it does not:
#' Delta uses the pairing of each masked record with its original, so it measures how far
#' values moved; it says nothing about relationships between variables (see
#' [utility_pmse()], [utility_model()]) and nothing about disclosure risk: small deltas
#' mean masked values close to the originals, which is exactly what the risk measures flag.
#'
#' @inheritParams risk_rmd
#' @return An object of class `detanon_delta`: a list with `delta` (a named numeric
#'   vector, one delta per variable in `vars`), `vars` and `n` (records).
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' utility_delta(d, masked)
#' @family measures
#' @export
utility_delta <- function(original, masked, vars = NULL) {
  vars <- check_pair(original, masked, vars)
  x <- numeric_matrix(original, vars)
  xm <- numeric_matrix(masked, vars)
  tiny <- pow2_normalise(x, xm) # delta is a ratio: exact power-of-two scaling keeps it
  x <- tiny$x
  xm <- tiny$y
  if (nrow(x) < 2L) stop_arg("at least 2 records are needed (a variance), not ", nrow(x), ".", kind = "data")
  v <- apply(x, 2L, stats::var)
  if (any(v == 0)) {
    stop_arg("`vars` ", plural(sum(v == 0), "column", count = FALSE), " ", quote_names(vars[v == 0]),
             " ", plural(sum(v == 0), "is", "are", count = FALSE),
             " constant in `original`: delta (relative to the variance) is undefined; leave ",
             plural(sum(v == 0), "it", "them", count = FALSE), " out of `vars`.", kind = "data")
  }
  structure(list(delta = stats::setNames(colMeans((x - xm)^2) / v, vars), vars = vars, n = nrow(x)),
            class = "detanon_delta")
}

#' @export
print.detanon_delta <- function(x, ...) {
  cat(sprintf("Information loss (delta) over %s:\n", plural(x$n, "record")))
  cat("  the share of each variable's variance added by masking\n")
  cat(sprintf("  %-12s %.4g\n", names(x$delta), x$delta), sep = "")
  invisible(x)
}

#' Model-based utility: one regression on the original and on the masked data
#'
#' Fits the same generalised linear model to `original` and to `masked` and compares the
#' coefficients, as the paper's Table 3 does:
#' * `std_diff` = \eqn{|b_{or} - b_{an}| / SE(b_{or})};
#' * `ci_overlap`, the confidence-interval overlap of Karr et al. (2006): the length of
#'   the intersection of the two intervals divided by the length of each, averaged
#'   (1 for identical intervals, 0 or less when they do not meet; negative values say how
#'   far apart they are).
#'
#' Intervals are Wald intervals at `level`: with t quantiles (residual degrees of freedom)
#' for families with an estimated dispersion (gaussian, Gamma, inverse.gaussian, quasi
#' families) and normal quantiles otherwise, as `summary.glm()` uses for its p-values.
#' `family = gaussian()` gives the least-squares fit of `lm()`.
#'
#' For the paper's Table 3 (`Survived ~ Pclass + Sex + Age + Fare + Family`, binomial, on
#' `anonymise(titanic_paper(), k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex",
#' "Family"), engine = "rann")`), both columns and the standardised differences are
#' reproduced to every printed digit.
#'
#' @section What it measures and what it does not:
#' It measures whether one chosen analysis gives the same answer on the masked data; other
#' analyses (other outcomes, subgroups, interactions) can be affected differently, and it
#' says nothing about disclosure risk.
#'
#' @inheritParams risk_rmd
#' @param formula A model formula whose variables are in both data frames. It is
#'   evaluated in its own environment, so functions such as `poly()`, `ns()` or `offset()`
#'   work; `y ~ .` takes every other column of `original`. Records with missing values
#'   in the formula's variables are left out of each fit, with a message giving the
#'   number of records used.
#' @param family A family object, function or name, as for [stats::glm()].
#' @param level Confidence level of the intervals, in (0, 1).
#' @return A data frame of class `detanon_model`, one row per coefficient, with columns
#'   `term`, `estimate_or`, `se_or`, `estimate_an`, `se_an`, `std_diff`, `ci_overlap`,
#'   then `lower_or`, `upper_or`, `lower_an`, `upper_an`, `stat_or`, `p_or`, `stat_an`,
#'   `p_an` (z or t statistics and p-values).
#' @references Karr AF, Kohnen CN, Oganian A, Reiter JP, Sanil AP (2006). A framework for
#'   evaluating the utility of data altered to protect confidentiality. *The American
#'   Statistician* 60(3), 224-232.
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' utility_model(d, masked, Survived ~ Pclass + Sex + Age + Fare + Family,
#'               family = binomial())
#' @family measures
#' @export
utility_model <- function(original, masked, formula, family = stats::gaussian(), level = 0.95) {
  check_data_frame(original, "original")
  check_data_frame(masked, "masked")
  check_same_rows(original, masked)
  if (missing(formula) || !inherits(formula, "formula") || length(formula) != 3L) {
    stop_arg("`formula` must be a two-sided model formula such as `y ~ x1 + x2`, not ",
             if (missing(formula)) "missing" else show_value(formula), ".")
  }
  family <- check_family(family)
  level <- check_number(level, "level", lower = 0, upper = 1, lower_open = TRUE)
  if (level >= 1) stop_arg("`level` must be below 1, not ", level, ".")
  if ("." %in% all.vars(formula)) {
    # `y ~ .`: every other column of `original`, expanded before the fits
    formula <- tryCatch(stats::formula(stats::terms(formula, data = as.data.frame(original))),
                        error = function(e) stop_arg("`formula` cannot be expanded: ", conditionMessage(e)))
  }
  used <- all.vars(formula)
  # names that are columns of neither data frame may be constants of the formula's
  # environment (e.g. a degree); a column of only one of them is an error
  env <- environment(formula)
  if (is.null(env)) env <- parent.frame()
  for (nm in c("original", "masked")) {
    data <- if (nm == "original") original else masked
    miss <- setdiff(used, names(data))
    miss <- miss[miss %in% c(names(original), names(masked)) | !vapply(miss, exists, logical(1), envir = env)]
    if (length(miss)) {
      stop_arg("`formula` uses variables that are not columns of `", nm, "`: ", quote_names(miss), ".", kind = "column")
    }
  }
  used <- intersect(used, names(original))
  for (nm in c("original", "masked")) {
    data <- if (nm == "original") original else masked
    listed <- used[vapply(used, function(v) is.list(data[[v]]), logical(1))]
    if (length(listed)) {
      stop_arg("`formula` uses ", plural(length(listed), "column", count = FALSE), " ", quote_names(listed),
               " of `", nm, "` that ", plural(length(listed), "is a list", "are lists", count = FALSE),
               "; a model needs vectors (numbers, factors, strings): flatten or leave ",
               if (length(listed) == 1L) "it" else "them", " out.", kind = "column")
    }
  }
  for (nm in c("original", "masked")) {
    data <- if (nm == "original") original else masked
    n_ok <- sum(stats::complete.cases(as.data.frame(data)[used]))
    if (n_ok < 2L) {
      stop_arg("`", nm, "` has ", plural(n_ok, "complete record"),
               " for the variables of `formula`; the model needs more records than coefficients.", kind = "data")
    }
    if (n_ok < nrow(data)) {
      inform_detanon(sprintf("the fit to `%s` uses %d of %d records (%d with missing values left out).",
                             nm, n_ok, nrow(data), nrow(data) - n_ok), kind = "na")
    }
  }
  fit_one <- function(data, nm) {
    fit <- tryCatch(
      stats::glm(formula, family = family, data = as.data.frame(data), model = FALSE),
      error = function(e) stop_arg("The model could not be fitted to `", nm, "`: ", conditionMessage(e), kind = "data"))
    if (!fit$converged) warn_detanon("the fit to `", nm, "` did not converge.", kind = "data")
    if (fit$df.residual < 1) {
      stop_arg("The model has no residual degrees of freedom on `", nm, "` (", length(stats::coef(fit)),
               " coefficients for ", nrow(data), " records): simplify `formula` or use more records.", kind = "data")
    }
    s <- summary(fit)$coefficients
    co <- stats::coef(fit)
    se <- rep(NA_real_, length(co)); stat <- se; p <- se
    names(se) <- names(co)
    se[rownames(s)] <- s[, 2L]; stat[match(rownames(s), names(co))] <- s[, 3L]
    p[match(rownames(s), names(co))] <- s[, 4L]
    est_disp <- !(family$family %in% c("binomial", "poisson"))
    q <- if (est_disp) stats::qt((1 + level) / 2, fit$df.residual) else stats::qnorm((1 + level) / 2)
    list(est = co, se = unname(se), stat = stat, p = p, lo = co - q * se, hi = co + q * se)
  }
  a <- fit_one(original, "original")
  b <- fit_one(masked, "masked")
  if (!identical(names(a$est), names(b$est))) {
    stop_arg("The model has different coefficients on `original` and `masked` (e.g. a factor ",
             "level missing from one); make the factor levels agree.", kind = "data")
  }
  ov <- ci_overlap(a$lo, a$hi, b$lo, b$hi)
  out <- data.frame(
    term = names(a$est),
    estimate_or = unname(a$est), se_or = a$se,
    estimate_an = unname(b$est), se_an = b$se,
    std_diff = unname(abs(a$est - b$est) / a$se),
    ci_overlap = ov,
    lower_or = unname(a$lo), upper_or = unname(a$hi),
    lower_an = unname(b$lo), upper_an = unname(b$hi),
    stat_or = a$stat, p_or = a$p, stat_an = b$stat, p_an = b$p,
    stringsAsFactors = FALSE
  )
  attr(out, "level") <- level
  attr(out, "family") <- family$family
  class(out) <- c("detanon_model", "data.frame")
  out
}

ci_overlap <- function(lo1, hi1, lo2, hi2) {
  inter <- pmin(hi1, hi2) - pmax(lo1, lo2)
  unname(0.5 * (inter / (hi1 - lo1) + inter / (hi2 - lo2)))
}

#' @export
print.detanon_model <- function(x, digits = 3, ...) {
  cat(sprintf("Coefficients on original vs masked data (%s family, %g%% intervals)\n",
              attr(x, "family"), 100 * attr(x, "level")))
  show <- as.data.frame(unclass(x)[c("term", "estimate_or", "se_or", "estimate_an", "se_an",
                                     "std_diff", "ci_overlap")], stringsAsFactors = FALSE)
  print(show, digits = digits, row.names = FALSE)
  invisible(x)
}

check_family <- function(family) {
  if (is.character(family) && length(family) == 1L && !is.na(family)) {
    f <- tryCatch(get(family, mode = "function", envir = asNamespace("stats")), error = function(e) NULL)
    if (is.null(f)) stop_arg("`family` must be a family such as gaussian() or binomial(), not \"", family, "\".")
    family <- f
  }
  if (is.function(family)) family <- tryCatch(family(), error = function(e) NULL)
  if (!inherits(family, "family")) {
    stop_arg("`family` must be a family object such as gaussian() or binomial().")
  }
  family
}
