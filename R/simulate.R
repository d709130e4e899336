# Non-normal multivariate simulation (Fleishman 1978; Vale and Maurelli 1983) and the
# SYNTHETIC stand-in for the paper's 1958 birth cohort (NCDS) data.

#' Fleishman power-polynomial coefficients
#'
#' Finds the coefficients of Fleishman's (1978) polynomial
#' \eqn{Y = a + bZ + cZ^2 + dZ^3} (with \eqn{a = -c}) that turns a standard normal
#' \eqn{Z} into a variable with mean 0, variance 1 and the requested skewness and excess
#' kurtosis, by Newton's method on Fleishman's three moment equations (started from
#' several points; the solution with \eqn{b > 0} and the smallest \eqn{|d|} is kept).
#'
#' Not every pair of skewness and kurtosis can be reached by a cubic polynomial of a
#' normal variable: roughly, the excess kurtosis must exceed
#' \eqn{1.5\,\mathrm{skew}^2 - 1.2} or so, and it cannot be far below 0. Unreachable
#' pairs give an error.
#'
#' @param skewness Target skewness (third standardised moment).
#' @param kurtosis Target *excess* kurtosis (fourth standardised moment minus 3; 0 for
#'   the normal distribution).
#' @param tol Convergence tolerance on the moment equations.
#' @return A named numeric vector `c(a, b, c, d)`.
#' @references Fleishman AI (1978). A method for simulating non-normal distributions.
#'   *Psychometrika*, 43, 521-532.
#' @seealso [vale_maurelli_cor()], [rvale_maurelli()].
#' @examples
#' cf <- detanon:::fleishman_coef(skewness = 1, kurtosis = 1.5)
#' cf
#' z <- stats::rnorm(1e5)
#' y <- cf[["a"]] + cf[["b"]] * z + cf[["c"]] * z^2 + cf[["d"]] * z^3
#' c(mean(y), stats::sd(y))
#' @family simulation
#' @keywords internal
fleishman_coef <- function(skewness, kurtosis, tol = 1e-10) {
  skewness <- check_number(skewness, "skewness")
  kurtosis <- check_number(kurtosis, "kurtosis")
  tol <- check_number(tol, "tol", lower = 0, lower_open = TRUE)
  if (skewness == 0 && kurtosis == 0) return(c(a = 0, b = 1, c = 0, d = 0))
  eqs <- function(p) {
    b <- p[1L]; c <- p[2L]; d <- p[3L]
    c(b^2 + 6 * b * d + 2 * c^2 + 15 * d^2 - 1,
      2 * c * (b^2 + 24 * b * d + 105 * d^2 + 2) - skewness,
      24 * (b * d + c^2 * (1 + b^2 + 28 * b * d) +
              d^2 * (12 + 48 * b * d + 141 * c^2 + 225 * d^2)) - kurtosis)
  }
  jac <- function(p) {
    b <- p[1L]; c <- p[2L]; d <- p[3L]
    rbind(
      c(2 * b + 6 * d, 4 * c, 6 * b + 30 * d),
      c(2 * c * (2 * b + 24 * d), 2 * (b^2 + 24 * b * d + 105 * d^2 + 2), 2 * c * (24 * b + 210 * d)),
      24 * c(d + c^2 * (2 * b + 28 * d) + d^2 * 48 * d,
             2 * c * (1 + b^2 + 28 * b * d) + d^2 * 282 * c,
             b + c^2 * 28 * b + 2 * d * (12 + 48 * b * d + 141 * c^2 + 225 * d^2) + d^2 * (48 * b + 450 * d))
    )
  }
  starts <- list(c(1, 0, 0), c(0.9, skewness / 6, 0.02), c(0.8, skewness / 8, 0.05),
                 c(1.1, skewness / 4, -0.05), c(0.6, skewness / 10, 0.1), c(1.2, 0.1, -0.1))
  best <- NULL
  for (p in starts) {
    for (it in seq_len(200L)) {
      f <- eqs(p)
      if (max(abs(f)) < tol) break
      step <- tryCatch(solve(jac(p), f), error = function(e) NULL)
      if (is.null(step) || any(!is.finite(step))) break
      # damped Newton: halve the step while the residual grows
      lambda <- 1
      repeat {
        q <- p - lambda * step
        if (sum(eqs(q)^2) < sum(f^2) || lambda < 1e-8) break
        lambda <- lambda / 2
      }
      p <- q
    }
    if (all(is.finite(p)) && max(abs(eqs(p))) < tol && p[1L] > 0) {
      if (is.null(best) || abs(p[3L]) < abs(best[3L])) best <- p
    }
  }
  if (is.null(best)) {
    stop_arg("No Fleishman polynomial has skewness ", format(skewness), " and excess kurtosis ",
             format(kurtosis), ": raise `kurtosis` (it must be well above 1.5 * skewness^2 - 1.2) ",
             "or lower |`skewness`|.", kind = "data")
  }
  c(a = -best[2L], b = best[1L], c = best[2L], d = best[3L])
}

#' Vale-Maurelli intermediate correlations
#'
#' Vale and Maurelli (1983) generate correlated non-normal variables by drawing
#' multivariate normal \eqn{Z} with an *intermediate* correlation matrix and applying
#' each variable's Fleishman polynomial. This function solves, for every pair
#' \eqn{(i, j)}, the cubic
#' \deqn{r_{ij} = \rho(b_i b_j + 3 b_i d_j + 3 d_i b_j + 9 d_i d_j) + 2\rho^2 c_i c_j +
#'   6\rho^3 d_i d_j}
#' for the intermediate correlation \eqn{\rho \in [-1, 1]} that yields the target
#' correlation \eqn{r_{ij}} after the transformation.
#'
#' @param cor Target correlation matrix (symmetric, unit diagonal).
#' @param coef Matrix of Fleishman coefficients, one row per variable with columns
#'   `a, b, c, d` (e.g. from [fleishman_coef()]).
#' @return The intermediate correlation matrix. An error if a target correlation cannot
#'   be reached or the intermediate matrix is not positive definite (the targets are then
#'   incompatible with the margins).
#' @references Vale CD, Maurelli VA (1983). Simulating multivariate nonnormal
#'   distributions. *Psychometrika*, 48, 465-471.
#' @examples
#' cf <- rbind(detanon:::fleishman_coef(1, 1.5), detanon:::fleishman_coef(0, 0))
#' detanon:::vale_maurelli_cor(matrix(c(1, 0.5, 0.5, 1), 2), cf)
#' @family simulation
#' @keywords internal
vale_maurelli_cor <- function(cor, coef) {
  p <- check_cor(cor)
  if (!is.matrix(coef) || !is.numeric(coef) || nrow(coef) != p || ncol(coef) != 4L || anyNA(coef)) {
    stop_arg("`coef` must be a numeric matrix with one row per variable of `cor` (", p,
             ") and four columns a, b, c, d, e.g. rbind(fleishman_coef(...), ...).")
  }
  b <- coef[, 2L]; c <- coef[, 3L]; d <- coef[, 4L]
  out <- diag(p)
  for (i in seq_len(p - 1L)) for (j in (i + 1L):p) {
    r <- cor[i, j]
    poly <- c(-r, b[i] * b[j] + 3 * b[i] * d[j] + 3 * d[i] * b[j] + 9 * d[i] * d[j],
              2 * c[i] * c[j], 6 * d[i] * d[j])
    roots <- polyroot(poly)
    real <- Re(roots)[abs(Im(roots)) < 1e-8 & abs(Re(roots)) <= 1 + 1e-10]
    if (!length(real)) {
      stop_arg("The target correlation ", format(r), " between variables ", i, " and ", j,
               " of `cor` cannot be reached with these margins; choose a smaller |correlation|.", kind = "data")
    }
    rho <- real[which.min(abs(real - r))]
    out[i, j] <- out[j, i] <- max(-1, min(1, rho))
  }
  dimnames(out) <- dimnames(cor)
  ev <- eigen(out, symmetric = TRUE, only.values = TRUE)$values
  if (min(ev) <= 0) {
    stop_arg("The intermediate correlation matrix is not positive definite: the target `cor` ",
             "is incompatible with these skewness and kurtosis values; weaken the correlations.", kind = "data")
  }
  out
}

#' Correlated non-normal random variables (Vale-Maurelli method)
#'
#' Draws `n` records of variables with the given means, SDs, skewness, excess kurtosis
#' and correlations, by the method of Vale and Maurelli (1983): multivariate normal
#' draws with intermediate correlations ([vale_maurelli_cor()]), each transformed by
#' its Fleishman polynomial ([fleishman_coef()]), then scaled and shifted. Uses R's
#' random number generator, so [set.seed()] makes the draws reproducible.
#'
#' The first four moments and the correlations are matched in expectation; a sample's
#' moments scatter around them (skewness and kurtosis estimates are noisy below a few
#' thousand records).
#'
#' @param n Number of records (a whole number >= 1).
#' @param mean,sd Numeric vectors of means and SDs (SD > 0), one per variable.
#' @param skewness,kurtosis Numeric vectors of skewness and excess kurtosis, one per
#'   variable (recycled from length 1).
#' @param cor Target correlation matrix; default the identity.
#' @param names Optional variable names (default the names of `mean`, else `V1`, ...).
#' @return A data frame with `n` rows and one column per variable.
#' @references Vale CD, Maurelli VA (1983). Simulating multivariate nonnormal
#'   distributions. *Psychometrika*, 48, 465-471.
#' @examples
#' set.seed(1)
#' x <- detanon:::rvale_maurelli(1000, mean = c(a = 0, b = 10), sd = c(1, 2),
#'                               skewness = c(1, 0), kurtosis = c(1.5, 0),
#'                               cor = matrix(c(1, 0.4, 0.4, 1), 2))
#' round(cor(x), 2)
#' @family simulation
#' @keywords internal
rvale_maurelli <- function(n, mean, sd, skewness = 0, kurtosis = 0, cor = NULL, names = NULL) {
  n <- check_whole(n, "n", min = 1, max = .Machine$integer.max)
  p <- length(mean)
  if (!is.numeric(mean) || !p || any(!is.finite(mean))) {
    stop_arg("`mean` must be a numeric vector of finite means, one per variable.")
  }
  vec <- function(x, arg, positive = FALSE) {
    if (!is.numeric(x) || !(length(x) %in% c(1L, p)) || any(!is.finite(x)) || (positive && any(x <= 0))) {
      stop_arg("`", arg, "` must be a numeric vector of length 1 or ", p, " (the length of `mean`)",
               if (positive) " with values > 0" else " with finite values", ".")
    }
    rep_len(as.numeric(x), p)
  }
  sd <- vec(sd, "sd", positive = TRUE)
  skewness <- vec(skewness, "skewness")
  kurtosis <- vec(kurtosis, "kurtosis")
  if (is.null(cor)) cor <- diag(p)
  if (check_cor(cor) != p) stop_arg("`cor` must be a ", p, " x ", p, " matrix (one row per variable of `mean`).")
  if (is.null(names)) names <- if (!is.null(base::names(mean))) base::names(mean) else paste0("V", seq_len(p))
  if (!is.character(names) || length(names) != p || anyNA(names) || anyDuplicated(names)) {
    stop_arg("`names` must be ", p, " distinct variable names.")
  }
  coef <- t(vapply(seq_len(p), function(j) fleishman_coef(skewness[j], kurtosis[j]), numeric(4)))
  inter <- vale_maurelli_cor(cor, coef)
  z <- matrix(stats::rnorm(n * p), n, p) %*% chol(inter)
  y <- vapply(seq_len(p), function(j) {
    zj <- z[, j]
    mean[j] + sd[j] * (coef[j, 1L] + coef[j, 2L] * zj + coef[j, 3L] * zj^2 + coef[j, 4L] * zj^3)
  }, numeric(n))
  dim(y) <- c(n, p)
  colnames(y) <- names
  as.data.frame(y)
}

check_cor <- function(cor) {
  ok <- is.matrix(cor) && is.numeric(cor) && nrow(cor) == ncol(cor) && nrow(cor) >= 1L &&
    !anyNA(cor) && all(abs(cor) <= 1) && isTRUE(all.equal(cor, t(cor), check.attributes = FALSE)) &&
    all(diag(cor) == 1)
  if (!ok) {
    stop_arg("`cor` must be a symmetric numeric correlation matrix with unit diagonal and ",
             "entries in [-1, 1].")
  }
  nrow(cor)
}

#' Targets of the SYNTHETIC 1958 birth cohort stand-in
#'
#' The per-stratum moments and correlations used by [simulate_ncds()], with the public
#' source or the assumption behind each value. The real National Child Development
#' Study (NCDS, 1958 birth cohort) data used by Avraam, Jones and Burton (2022) are not
#' public; these targets describe *plausible* 45-year-old British adults, not the NCDS.
#'
#' @return A list with `margins` (a data frame: stratum `sex`, `smoker`, `variable`,
#'   `mean`, `sd`, `skewness`, `kurtosis`, `source`), `cor` (the within-stratum
#'   correlation matrix of HDL, height and weight), `beta` (the paper's Table 4 original
#'   coefficients used to generate glucose), `sigma`, `skewness`, `kurtosis` (of the
#'   glucose residual), `sizes` (the paper's stratum sizes) and `sources` (the
#'   references).
#' @examples
#' ncds_targets()$margins
#' @family simulation
#' @export
ncds_targets <- function() {
  src_hse <- "HSE 2003 (ages 45-54), rounded"
  src_ass <- "assumption"
  row <- function(sex, smoker, variable, mean, sd, skew, kurt, source) {
    data.frame(sex = sex, smoker = smoker, variable = variable, mean = mean, sd = sd,
               skewness = skew, kurtosis = kurt, source = source, stringsAsFactors = FALSE)
  }
  m <- rbind(
    # men, non-smokers / smokers
    row("male", 0L, "HDL", 1.30, 0.33, 0.8, 1.0, src_hse),
    row("male", 0L, "Height", 176.0, 6.8, 0.0, 0.2, src_hse),
    row("male", 0L, "Weight", 87.0, 13.5, 0.6, 0.8, src_hse),
    row("male", 1L, "HDL", 1.22, 0.33, 0.8, 1.0, src_ass),
    row("male", 1L, "Height", 175.0, 6.8, 0.0, 0.2, src_ass),
    row("male", 1L, "Weight", 84.0, 13.5, 0.6, 0.8, src_ass),
    # women, non-smokers / smokers
    row("female", 0L, "HDL", 1.62, 0.40, 0.6, 0.7, src_hse),
    row("female", 0L, "Height", 162.5, 6.3, 0.0, 0.2, src_hse),
    row("female", 0L, "Weight", 71.0, 14.0, 0.9, 1.2, src_hse),
    row("female", 1L, "HDL", 1.52, 0.40, 0.6, 0.7, src_ass),
    row("female", 1L, "Height", 161.5, 6.3, 0.0, 0.2, src_ass),
    row("female", 1L, "Weight", 68.0, 14.0, 0.9, 1.2, src_ass)
  )
  cor <- matrix(c(1, -0.05, -0.30,
                  -0.05, 1, 0.40,
                  -0.30, 0.40, 1), 3, 3,
                dimnames = list(c("HDL", "Height", "Weight"), c("HDL", "Height", "Weight")))
  list(
    margins = m,
    cor = cor,
    beta = c("(Intercept)" = 6.430, Sex1 = -0.098, Smoker1 = 0.110, HDL = -0.229,
             Height = -0.013, Weight = 0.010),
    sigma = 0.65, skewness = 1.5, kurtosis = 4,
    sizes = data.frame(sex = c("male", "male", "female", "female"), smoker = c(0L, 1L, 0L, 1L),
                       n = c(492L, 111L, 468L, 140L)),
    sources = c(
      "HSE 2003" = paste("Health Survey for England 2003 (Department of Health / NHS Information",
                         "Centre): measured height, weight and HDL cholesterol of adults by",
                         "age and sex; values rounded to the 45-54 age band as published."),
      "Table 4" = paste("Avraam, Jones and Burton (2022), Table 4, 'Original data' estimates:",
                        "glucose = 6.430 - 0.098 female + 0.110 smoker - 0.229 HDL - 0.013",
                        "height + 0.010 weight."),
      "assumption" = paste("Smokers: HDL about 0.1 mmol/L lower, weight about 3 kg lower and",
                           "height about 1 cm lower than non-smokers of the same sex; skewness,",
                           "kurtosis, within-stratum correlations and the glucose residual",
                           "(SD 0.65 mmol/L, skewness 1.5, excess kurtosis 4) are assumptions",
                           "chosen so that the regression's standard errors are close to Table 4.")
    )
  )
}

#' SYNTHETIC stand-in for the paper's 1958 birth cohort data
#'
#' Simulates a SYNTHETIC data set shaped like the NCDS sample analysed by Avraam, Jones
#' and Burton (2022): complete cases in the four strata of sex and current smoking
#' (492 male non-smokers, 111 male smokers, 468 female non-smokers, 140 female smokers
#' for `n = 1211`, other `n` in the same proportions), with HDL cholesterol (mmol/L),
#' height (cm) and weight (kg) drawn in each stratum by [rvale_maurelli()] with the
#' moments of [ncds_targets()], and fasting glucose (mmol/L) generated from them by the
#' paper's Table 4 (original data) regression plus a skewed Fleishman residual.
#'
#' These are **not** NCDS data: no record corresponds to a cohort member, and only the
#' targets listed in [ncds_targets()] (with their sources and assumptions) are built in.
#' Numbers computed from them can be compared with the paper's only in kind, not digit
#' by digit.
#'
#' @param n Total number of records (>= 4); strata sizes follow the paper's proportions
#'   (40.6%, 9.2%, 38.6%, 11.6%), rounded so that they add up to `n`.
#' @param seed Optional seed; when given, the simulation runs under `set.seed(seed)`
#'   and restores the caller's random number stream afterwards.
#' @return A data frame with columns `ID`, `Sex` (factor 0 = male, 1 = female),
#'   `Smoker` (factor 0/1), `Glucose`, `HDL`, `Height`, `Weight`, and the attribute
#'   `"synthetic"` set to a note saying the data are SYNTHETIC.
#' @examples
#' d <- simulate_ncds(seed = 1958)
#' table(d$Sex, d$Smoker)
#' summary(d[c("Glucose", "HDL", "Height", "Weight")])
#' @family simulation
#' @export
simulate_ncds <- function(n = 1211, seed = NULL) {
  n <- check_whole(n, "n", min = 4, max = 1e7)
  if (!is.null(seed)) {
    seed <- check_whole(seed, "seed", min = -.Machine$integer.max, max = .Machine$integer.max)
    if (exists(".Random.seed", envir = globalenv(), inherits = FALSE)) {
      old <- get(".Random.seed", envir = globalenv(), inherits = FALSE)
      on.exit(assign(".Random.seed", old, envir = globalenv()), add = TRUE)
    } else {
      on.exit(rm(".Random.seed", envir = globalenv()), add = TRUE)
    }
    set.seed(seed)
  }
  tg <- ncds_targets()
  sizes <- stratum_sizes(n, tg$sizes$n)
  vars <- c("HDL", "Height", "Weight")
  parts <- vector("list", 4L)
  for (s in 1:4) {
    m <- tg$margins[tg$margins$sex == tg$sizes$sex[s] & tg$margins$smoker == tg$sizes$smoker[s], ]
    m <- m[match(vars, m$variable), ]
    x <- rvale_maurelli(sizes[s], mean = m$mean, sd = m$sd, skewness = m$skewness,
                        kurtosis = m$kurtosis, cor = tg$cor, names = vars)
    parts[[s]] <- data.frame(Sex = as.integer(tg$sizes$sex[s] == "female"),
                             Smoker = tg$sizes$smoker[s], x)
  }
  d <- do.call(rbind, parts)
  eps <- rvale_maurelli(n, mean = 0, sd = tg$sigma, skewness = tg$skewness,
                        kurtosis = tg$kurtosis)[[1L]]
  b <- tg$beta
  glucose <- b[[1L]] + b[["Sex1"]] * d$Sex + b[["Smoker1"]] * d$Smoker + b[["HDL"]] * d$HDL +
    b[["Height"]] * d$Height + b[["Weight"]] * d$Weight + eps
  out <- data.frame(ID = seq_len(n), Sex = factor(d$Sex, levels = 0:1),
                    Smoker = factor(d$Smoker, levels = 0:1), Glucose = glucose,
                    HDL = d$HDL, Height = d$Height, Weight = d$Weight)
  attr(out, "synthetic") <- paste("SYNTHETIC data simulated by detanon::simulate_ncds();",
                                  "not National Child Development Study data.")
  out
}

# Stratum sizes in the paper's proportions adding up to n (largest remainders; each >= 1).
stratum_sizes <- function(n, base) {
  raw <- n * base / sum(base)
  out <- floor(raw)
  short <- n - sum(out)
  if (short > 0) {
    add <- order(raw - out, decreasing = TRUE)[seq_len(short)]
    out[add] <- out[add] + 1
  }
  out[out < 1] <- 1
  while (sum(out) > n) {
    j <- which.max(out)
    out[j] <- out[j] - 1
  }
  as.integer(out)
}
