#' Attribute-inference attack on a sensitive column
#'
#' The intruder holds the keys of a person (see [intruder()]) and guesses the person's value
#' of the `sensitive` column from the release: it looks up the person's `m` nearest
#' released records (Euclidean distance on the z-scale of the original data over the
#' masked variables and numeric keys, within the cell of the person's strata and
#' categorical keys; released records exactly as far as the `m`-th nearest are taken too)
#' and reads their released sensitive values.
#'
#' * Categorical `sensitive` (see `type`): the claim about a person is right with the probability that a
#'   neighbour drawn at random carries the person's own value: the correct attribution
#'   probability (CAP) of Templ's riskutility, with the neighbours as the person's
#'   equivalence class. The intruder's confidence is the share of the most frequent value
#'   among the neighbours; `details$tcap` is the mean success over the people whose
#'   neighbours all agree (the targeted CAP, TCAP), `details$n_tcap` their number.
#' * Numeric `sensitive`: the same with "carries the person's own value" read as "lies
#'   within `tolerance` standard deviations (of the original column) of it"; the
#'   confidence is `1 / (1 + range / tol)`, `range` the range of the neighbours' values and
#'   `tol` the tolerance in the column's units (1 when the neighbours agree).
#'
#' Two references come with it. The *baseline* (`baseline`) is the same guess from the
#' released column's marginal distribution (a released record drawn at random, whatever
#' the keys): what the release says about everyone. The *control* (`control_rate`) is a
#' holdout, as anonymeter's: a share `holdout` of the original records, drawn under
#' `seed`, is held out; the release is made again from the other records with the
#' masking and settings its metadata record ([anonymise()], [anonymise_adaptive()], the
#' MDAV candidates of [tune_release()]), and the same attack is run on the held-out people
#' against that release, which does not hold them: what a release of this kind says
#' about people who are not in it. The advantage over the control is what being in the
#' release gives away. Leaving only the person's own record out of the neighbours (the
#' control before this release) understates it when the person's group shares one
#' released value: the other members of the group still carry the person's value. A
#' release that cannot be made again (no metadata, or a secret key, as
#' [anonymise_keyed()]) falls back to that leave-one-out control, and the result says so
#' (`control_kind`).
#'
#' @section Its intruder:
#' Holds the original values of its columns (masked variables, strata and `held`) of the
#' share `p` of the people (the attacked records) and reads the release; knowledge of the
#' masking algorithm is not used.
#'
#' @section What it does not cover:
#' Inference by models fitted on the release (regression, classifiers), combining
#' several sensitive columns, an intruder who knows the algorithm, and inference about
#' people who are not in the data (a population-level inference is not a disclosure the
#' control can tell from one). A person whose cell is missing from the release is
#' attacked and missed.
#'
#' @inheritParams risk_battery
#' @param sensitive The column whose value the intruder guesses: a column of both data
#'   sets that is not one of the intruder's keys.
#' @param m The number of nearest released records the intruder reads, a whole number >= 1.
#' @param type How to read `sensitive`: `"auto"` (categorical unless it is numeric with
#'   more than 10 distinct values or values that are not whole numbers: a 0/1 outcome is
#'   categorical), `"categorical"` or `"numeric"`.
#' @param tolerance For a numeric `sensitive` column: a guess is right within `tolerance`
#'   standard deviations of the original column (a number >= 0; exact equality when the
#'   column is constant).
#' @param holdout The share of the records held out for the control, a number in (0, 0.9].
#' @return An object of class `detanon_attack` (see [risk_battery()] for its fields) with
#'   `baseline`, and `details$tcap`, `details$n_tcap` for a categorical column.
#' @references Templ M (2017). *Statistical Disclosure Control for Microdata: Methods and
#'   Applications in R*. Springer (CAP, TCAP).
#'
#'   Taub J, Elliot M, Pampaka M, Smith D (2018). Differential correct attribution
#'   probability for synthetic data: an exploration. *Privacy in Statistical Databases*,
#'   122-137.
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' attack_inference(d, masked, sensitive = "Survived", seed = 1)
#' @family attacks
#' @export
attack_inference <- function(original, masked, sensitive, intruder = NULL, m = 3,
                             type = c("auto", "categorical", "numeric"), tolerance = 0.1,
                             holdout = 0.2, control = TRUE,
                             nthreads = getOption("detanon.nthreads", 1L), seed = NULL) {
  tolerance <- check_number(tolerance, "tolerance", lower = 0)
  holdout <- check_number(holdout, "holdout", lower = 0, upper = 0.9, lower_open = TRUE)
  type <- match_choice(type, "type")
  # `sensitive` is checked by inference_core(), on the intruder's view
  attack_verb(battery_attacks()$inference, list(tolerance = tolerance, type = type, holdout_share = holdout),
              original, masked,
              intruder, m, control, seed, nthreads, sensitive = sensitive)
}

check_sensitive <- function(sensitive, s) {
  if (!is.character(sensitive) || length(sensitive) != 1L || is.na(sensitive)) {
    stop_arg("`sensitive` must be one column name, not ", show_value(sensitive), ".")
  }
  check_columns(sensitive, s$original, "sensitive")
  check_columns(sensitive, s$masked, "sensitive")
  keys <- c(s$vars, s$strata, s$key_num, s$key_cat)
  if (sensitive %in% keys) {
    stop_arg("`sensitive` column `", sensitive, "` is one of the intruder's keys; the intruder ",
             "would already hold it.", kind = "column")
  }
  invisible(sensitive)
}

# The sensitive values as the C kernel reads them: integer codes over the values of both
# sides (categorical), or doubles with the tolerance in the column's units (numeric).
inference_values <- function(s, sensitive, tolerance, type = "auto") {
  yo <- s$original[[sensitive]]
  ym <- s$masked[[sensitive]]
  numeric <- is_continuous(yo) && is_continuous(ym)
  if (type == "numeric" && !numeric) {
    stop_arg("`sensitive` column `", sensitive, "` is not numeric in both data sets; use ",
             "`type = \"categorical\"`.", kind = "column")
  }
  if (type == "auto" && numeric) {
    v <- unique(yo[!is.na(yo)])
    numeric <- length(v) > 10L || any(v != round(v))
  }
  if (type != "categorical" && numeric) {
    sd <- stats::sd(yo, na.rm = TRUE)
    tol <- if (is.finite(sd) && sd > 0) tolerance * sd else 0
    return(list(cat = FALSE, o = as.double(yo), m = as.double(ym), tol = tol, n_levels = 0L))
  }
  lev <- unique(c(as.character(yo), as.character(ym)))
  lev <- lev[!is.na(lev)]
  list(cat = TRUE, o = match(as.character(yo), lev), m = match(as.character(ym), lev), tol = 0,
       n_levels = length(lev))
}

# The confidence of a numeric guess from the range of the neighbours' values: 1 when they
# agree, 1 / (1 + range / tol) otherwise (0 with tol = 0, or without a known value).
range_confidence <- function(range, tol) {
  conf <- if (tol > 0) 1 / (1 + range / tol) else as.double(range == 0)
  conf[is.na(conf)] <- 0
  conf
}

# The share of the released values that match each target (the marginal baseline).
inference_baseline <- function(y, rows) {
  n <- length(y$m)
  if (!n || !length(rows)) return(rep(NA_real_, length(rows)))
  t <- y$o[rows]
  if (y$cat) {
    freq <- tabulate(y$m[!is.na(y$m)], y$n_levels)
    out <- freq[t] / n
  } else {
    v <- sort(y$m[!is.na(y$m)])
    out <- (findInterval(t + y$tol, v) - findInterval(t - y$tol, v, left.open = TRUE)) / n
  }
  out[is.na(t)] <- NA_real_
  out
}

inference_core <- function(s, sensitive, m, nthreads, tolerance = 0.1, type = "auto", leave_out = FALSE,
                           holdout = FALSE, holdout_share = 0.2, seed = NULL, ...) {
  check_sensitive(sensitive, s)
  if (holdout) {
    ctrl <- inference_holdout(s, sensitive, m, nthreads, tolerance, type, holdout_share, seed)
    if (!is.null(ctrl)) return(ctrl)
    out <- inference_core(s, sensitive, m, nthreads, tolerance, type, leave_out = TRUE)
    out$control_kind <- "leave_out"
    return(out)
  }
  n <- s$n
  y <- inference_values(s, sensitive, tolerance, type)
  zo <- view_key_z(s, "original")
  zm <- view_key_z(s, "masked")
  # trees over the released records, one per released cell; the intruder searches the cell
  # of the person's original keys
  cells <- sort(unique(s$cell_m))
  attacked <- s$known & !is.na(y$o)
  tree_of <- match(s$cell_o, cells)
  tree_of[is.na(tree_of) | !attacked] <- 0L
  success <- confidence <- rep(NA_real_, n)
  if (n) {
    ym <- if (y$cat) as.integer(y$m) else y$m
    yo <- if (y$cat) as.integer(y$o) else y$o
    search <- function(tree_of) {
      .Call(C_ffi_battery_neighbours, released_index(s, zm), zo, as.integer(tree_of), as.integer(m),
            isTRUE(leave_out), ym, yo, as.double(y$tol), as.integer(y$n_levels), nthreads)
    }
    # the sets from the nearest released records the battery searched once for several
    # attacks (released_knn(): its trees are these, its distances the search's); a row the
    # list cannot decide (ties past its end) is searched on the tree
    kn <- released_knn(s, zo, zm, nthreads)
    if (is.null(kn)) {
      nb <- search(tree_of)
    } else {
      want <- tree_of > 0L
      nb <- .Call(C_ffi_knn_neighbours, kn$index, kn$d2, kn$size, want, as.integer(m), isTRUE(leave_out),
                  ym, yo, as.double(y$tol), as.integer(y$n_levels))
      redo <- want & is.na(nb[, 1L])
      if (any(redo)) nb[redo, ] <- search(replace(tree_of, !redo, 0L))[redo, ]
    }
    has <- attacked & !is.na(nb[, 1L]) & nb[, 1L] > 0
    success[attacked] <- 0
    confidence[attacked] <- 0
    success[has] <- nb[has, 2L] / nb[has, 1L]
    confidence[has] <- if (y$cat) nb[has, 3L] / nb[has, 1L] else range_confidence(nb[has, 3L], y$tol)
  }
  rows <- which(attacked)
  unanimous <- attacked & !is.na(confidence) & confidence == 1
  list(success = success, confidence = confidence,
       baseline = if (length(rows)) mean(inference_baseline(y, rows)) else NA_real_,
       tcap = if (y$cat && any(unanimous)) mean(success[unanimous]) else NA_real_,
       n_tcap = if (y$cat) sum(unanimous) else NA_integer_,
       sensitive = sensitive,
       not_covered = paste("inference by models fitted on the release, several sensitive columns",
                           "at once, an intruder who knows the algorithm, population-level",
                           "inference."))
}

# The holdout control of the inference attack: a share `share` of the records (drawn under
# `seed` + 2) is held out, the release is made again from the others (holdout_mask()), and
# the attack runs on the held-out people against that release. Per record: `success` and
# `confidence` for the held-out people attacked, NA for the others; NULL when the release
# cannot be made again (the caller falls back to leaving the own record out).
inference_holdout <- function(s, sensitive, m, nthreads, tolerance, type, share, seed) {
  n <- s$n
  mask <- holdout_mask(s$masked)
  n_out <- round(share * n)
  if (is.null(mask) || n_out < 1L || n - n_out < 2L) return(NULL)
  out <- with_seed(if (!is.null(seed)) seed + 2L, sample.int(n, n_out))
  held <- logical(n)
  held[out] <- TRUE
  train <- s$original[!held, , drop = FALSE]
  rel <- tryCatch(suppressMessages(suppressWarnings(mask(train))), error = function(e) NULL)
  if (is.null(rel) || nrow(rel) != nrow(train)) return(NULL)
  rel <- as.data.frame(rel, stringsAsFactors = FALSE)
  y <- inference_values(s, sensitive, tolerance, type)
  # the released values of the remade release, coded as the view codes them
  ym <- if (y$cat) {
    match(as.character(rel[[sensitive]]), unique(c(as.character(s$original[[sensitive]]),
                                                   as.character(s$masked[[sensitive]]),
                                                   as.character(rel[[sensitive]]))))
  } else as.double(rel[[sensitive]])
  n_levels <- if (y$cat) max(c(y$n_levels, ym), na.rm = TRUE) else 0L
  targets <- which(held & s$known & !is.na(y$o))
  cells <- cells_of_pair(s, s$original[targets, , drop = FALSE], rel)
  zq <- view_z(s, s$original[targets, , drop = FALSE])
  zt <- view_z(s, rel)
  success <- confidence <- rep(NA_real_, n)
  if (length(targets)) {
    tc <- sort(unique(cells$b))
    index <- rank_index(zt, cell_setup(cells$b))
    tree_of <- match(cells$a, tc)
    tree_of[is.na(tree_of)] <- 0L
    nb <- .Call(C_ffi_battery_neighbours, index, zq, as.integer(tree_of), as.integer(m), FALSE,
                if (y$cat) as.integer(ym) else ym, if (y$cat) as.integer(y$o[targets]) else y$o[targets],
                as.double(y$tol), as.integer(n_levels), nthreads)
    has <- !is.na(nb[, 1L]) & nb[, 1L] > 0
    sc <- cf <- numeric(length(targets))
    sc[has] <- nb[has, 2L] / nb[has, 1L]
    cf[has] <- if (y$cat) nb[has, 3L] / nb[has, 1L] else range_confidence(nb[has, 3L], y$tol)
    success[targets] <- sc
    confidence[targets] <- cf
  }
  list(success = success, confidence = confidence, holdout = TRUE, control_kind = "holdout")
}

# The masking of a release as its metadata record it, as a function of a data frame (for
# the holdout), or NULL when it cannot be made again: no current metadata, or a masking
# that needs what the metadata do not hold (a secret key, the keyed noise of its means).
holdout_mask <- function(masked) {
  info <- tryCatch(suppressWarnings(release_info(masked)), error = function(e) NULL)
  if (is.null(info) || !replay_known(info) || isTRUE(info$settings$noise)) return(NULL)
  replay_mask(info)
}
