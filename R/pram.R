#' PRAM: post-randomisation of categorical variables
#'
#' Replaces each value of the categorical columns `vars` by a category drawn from a
#' transition matrix (the Post RAndomisation Method of Gouweleeuw, Kooiman, Willenborg and
#' De Wolf, 1998), independently for every record, within each stratum of `strata`.
#'
#' For a column with categories `1..L` (a factor's levels, or the sorted distinct values)
#' in one stratum, with shares `p` of its non-missing values, every category `i` gets a
#' probability of being kept `theta[i]`, drawn uniformly between `pd` and 1 (as sdcMicro's
#' `pram()` draws them). With `invariant = TRUE` (the default) the transition matrix is
#' `R[i, j] = theta[i] (i == j) + (1 - theta[i]) q[j]`, with
#' `q[j] = p[j] (1 - theta[j]) / sum(p (1 - theta))`: a value is kept with probability
#' `theta[i]`, and otherwise redrawn from the categories in proportion to the values
#' that leave them. Then `p %*% R == p`: the expected distribution of the released
#' column equals the original one, in every stratum (invariant PRAM, Kooiman, Willenborg
#' and Gouweleeuw 1997), and no category that is absent from a stratum appears in it. With
#' `invariant = FALSE`, `R[i, i] = theta[i]` and the rest of row `i` is spread evenly over
#' the other `L - 1` categories (sdcMicro's starting matrix). In both cases the matrix used
#' is `alpha R + (1 - alpha) I` (sdcMicro's `alpha`: 1 keeps `R`, 0 changes nothing),
#' whose rows sum to 1 and whose diagonal is at least `pd`; it stays invariant when `R`
#' is. (sdcMicro's invariant matrix is a different one, `alpha P Q + (1 - alpha) I` with
#' `Q` the backward matrix of `P`, whose diagonal can fall below `pd`.) Missing values stay
#' missing.
#'
#' @section What it protects against and what it does not:
#' PRAM protects against re-identification and attribute disclosure through the pramed
#' columns by uncertainty: a released value is the true one only with a probability,
#' so an intruder cannot be sure that a record with a rare released combination is the
#' person who has it, nor that a released sensitive category is true. It does not
#' guarantee k-anonymity (a released combination can still be unique; check with
#' [kanon_check()] or [risk_suda2()]), the values kept unchanged are the true ones (with
#' probability at least `pd`), records in strata (which PRAM does not change) keep their
#' strata, and an intruder who knows the transition matrix can compute the probability
#' that a released value is true. Univariate PRAM distorts the relations between
#' the pramed columns and other columns; invariance keeps only each column's distribution
#' within strata, in expectation.
#'
#' @param data A data frame.
#' @param vars Character vector of the categorical columns to post-randomise (factor,
#'   character, logical or whole numbers).
#' @param strata Character vector of categorical columns within whose combinations PRAM
#'   is applied (the shares `p` and the matrices are per stratum), or `NULL` (one stratum).
#'   The strata columns are not changed.
#' @param pd The smallest probability that a value is kept: one number in \[0, 1\], or one
#'   per column of `vars` (sdcMicro's `pd`, default 0.8).
#' @param alpha The weight of the perturbation: one number in \[0, 1\], or one per column of
#'   `vars` (sdcMicro's `alpha`, default 0.5).
#' @param invariant `TRUE` for invariant PRAM (the expected released distribution equals
#'   the original one in every stratum), `FALSE` for sdcMicro's starting matrix.
#' @param household Name of a column of household ids, or `NULL`. With it, the columns of
#'   `vars` that are constant within every household of `data` (e.g. the roof or the
#'   water supply of the dwelling) are post-randomised on the household table (the first
#'   record of each household, within the household-level `strata` only) and copied to
#'   every member, so that members still share them; the other columns record by record.
#' @param seed A whole number for [set.seed()], used for this call only (the caller's random
#'   stream is restored), or `NULL` to draw from the current stream.
#' @return `data`, in its class, with the columns `vars` post-randomised (of the same type:
#'   a factor keeps its levels) and release metadata (see [release_info()]) with the
#'   settings and the counts `n` (records) and `n_changed` (values changed). A message of
#'   class `detanon_message_pram` reports the values changed per column; its field
#'   `transitions` holds the transition matrices used: a list with one element per column of
#'   `vars`, each a list of matrices, one per stratum (named by the stratum's values), with
#'   the categories as row and column names. The matrices of the invariant method show the
#'   shares of the categories in each stratum: they are for the data custodian, and go into
#'   a release only if the strata are large.
#' @references Gouweleeuw, J. M., Kooiman, P., Willenborg, L. C. R. J. and De Wolf, P.-P.
#'   (1998) Post randomisation for statistical disclosure control: theory and
#'   implementation. *Journal of Official Statistics* 14(4), 463--478.
#'
#'   Kooiman, P., Willenborg, L. and Gouweleeuw, J. (1997) PRAM: a method for disclosure
#'   limitation of microdata. Statistics Netherlands, research paper 9705.
#' @examples
#' d <- data.frame(region = sample(c("N", "S", "E", "W"), 200, replace = TRUE),
#'                 sex = sample(c("f", "m"), 200, replace = TRUE))
#' out <- anonymise_pram(d, vars = "region", strata = "sex", pd = 0.7, seed = 1)
#' table(d$region, out$region)
#' @family masking verbs
#' @export
anonymise_pram <- function(data, vars, strata = NULL, pd = 0.8, alpha = 0.5, invariant = TRUE,
                           household = NULL, seed = NULL) {
  if (is_sdc(data)) return(sdc_key_verb(anonymise_pram, data, match.call(), parent.frame())) # R/sdcmicro.R
  if (!is.null(household)) return(household_verb(anonymise_pram, data, household, match.call(), parent.frame()))
  check_data_frame(data, "data")
  if (missing(vars)) stop_arg("`vars` is missing: name the categorical columns to post-randomise.")
  vars <- check_columns(vars, data, "vars")
  if (!length(vars)) stop_arg("`vars` is empty: name the categorical columns to post-randomise.")
  check_strata_columns(data, vars, "vars")
  strata <- check_columns(strata, data, "strata")
  check_strata_columns(data, strata)
  both <- intersect(vars, strata)
  if (length(both)) {
    stop_arg("Columns cannot be in both `vars` and `strata`: ", quote_names(both), ".", kind = "column")
  }
  pd <- check_probabilities(pd, "pd", length(vars))
  alpha <- check_probabilities(alpha, "alpha", length(vars))
  check_flag(invariant, "invariant")
  stir_seed(seed)
  df <- as.data.frame(data)
  n <- nrow(df)
  sid <- if (n && length(strata)) stratum_ids(df, strata) else rep.int(1L, n)
  n_strata <- if (n) max(sid) else 0L
  labels <- if (length(strata) && n) {
    first <- match(seq_len(n_strata), sid)
    do.call(paste, c(lapply(df[strata], function(v) as.character(v[first])), sep = ":"))
  } else rep("all", n_strata)
  transitions <- list()
  changed <- stats::setNames(integer(length(vars)), vars)
  for (j in seq_along(vars)) {
    v <- vars[j]
    cd <- suda_codes(df[[v]])
    code <- cd$code
    L <- length(cd$levels)
    new <- code
    mats <- vector("list", n_strata)
    for (s in seq_len(n_strata)) {
      rows <- which(sid == s & !is.na(code))
      cnt <- tabulate(code[rows], L)
      R <- pram_matrix(cnt, pd[j], alpha[j], invariant)
      dimnames(R) <- list(as.character(cd$levels), as.character(cd$levels))
      mats[[s]] <- R
      for (i in which(cnt > 0L)) {
        ri <- rows[code[rows] == i]
        new[ri] <- if (L == 1L) 1L else sample.int(L, length(ri), replace = TRUE, prob = R[i, ])
      }
    }
    names(mats) <- labels
    transitions[[v]] <- mats
    changed[j] <- sum(new != code, na.rm = TRUE)
    x <- df[[v]]
    df[[v]] <- if (is.factor(x)) {
      factor(cd$levels[new], levels = levels(x), ordered = is.ordered(x))
    } else {
      cd$levels[new]
    }
  }
  inform_detanon("changed ", plural(sum(changed), "value"), " (",
                 paste0("`", vars, "` ", changed, collapse = ", "), ") by ",
                 if (invariant) "invariant ", "PRAM.", kind = "pram",
                 fields = list(transitions = transitions))
  as_release(as_release_frame(df, data), "anonymise_pram",
             settings = list(vars = vars, strata = strata, pd = pd, alpha = alpha, invariant = invariant),
             counts = list(n = n, n_strata = n_strata, n_changed = sum(changed)))
}

# One probability in [0, 1], or one per column of `vars`.
check_probabilities <- function(x, arg, m) {
  ok <- is.numeric(x) && (length(x) == 1L || length(x) == m) && !anyNA(x) && all(x >= 0 & x <= 1)
  if (!ok) {
    stop_arg("`", arg, "` must be one number between 0 and 1, or one per column of `vars` (",
             m, "), not ", show_value(x), ".")
  }
  rep_len(as.numeric(x), m)
}

# The PRAM transition matrix of one column in one stratum (see ?anonymise_pram): `cnt` the
# counts of the L categories; the keep probabilities theta are drawn from U(pd, 1).
pram_matrix <- function(cnt, pd, alpha, invariant) {
  L <- length(cnt)
  theta <- stats::runif(L, pd, 1)
  R <- pram_transition(cnt / max(sum(cnt), 1), theta, invariant)
  alpha * R + (1 - alpha) * diag(L)
}

# The matrix for the shares p and keep probabilities theta, before the mixing with alpha.
pram_transition <- function(p, theta, invariant) {
  L <- length(p)
  if (L == 1L) return(matrix(1, 1L, 1L))
  if (invariant) {
    leave <- p * (1 - theta)
    if (sum(leave) <= 0) return(diag(L))
    R <- outer(1 - theta, leave / sum(leave))
    diag(R) <- diag(R) + theta
  } else {
    R <- matrix((1 - theta) / (L - 1), L, L)
    diag(R) <- theta
  }
  R
}
