#' (k, epsilon)-anonymisation: Laplace noise inside equivalence classes
#'
#' Implements the (k, epsilon)-anonymity workflow of Holohan et al. (2017, Algorithm 1):
#' the records are grouped into equivalence classes of at least `k` records on the
#' k-quasi-identifiers (categorical `strata`, cut further by Mondrian on the numeric
#' `quasi`, see [equivalence_classes()]); inside each class every epsilon-quasi-identifier
#' (`vars`) gets Laplace noise whose scale is the class diameter divided by epsilon
#' (sections II-D3 and IV); optionally records that stay linkable with confidence
#' `confidence` are suppressed (section V-C); finally the records are shuffled.
#'
#' @section The noise:
#' For a class `ec` and an epsilon-quasi `v`, `diam` is `max - min` of `v` in the class
#' (equation 3) and every record of the class gets `v + Lap(0, diam / eps_v)`. A class
#' with `diam = 0` gets no noise (its records are already indistinguishable on `v`).
#' The class is treated as a collection of records, not of attributes (section IV): with
#' several epsilon-quasis the record's budget `epsilon` is split over them, `eps_v =
#' epsilon * budget[v]` with `budget` summing to 1 (equal by default), so that by
#' sequential composition the record as a whole gets `epsilon`. Draws use R's random
#' number generator (one uniform per value, in row order), so `seed` (or [set.seed()]
#' before the call) reproduces a release. Noisy values are not clipped: they can leave the variable's natural range
#' (negative ages), because clipping would bias means and reveal the class bounds.
#'
#' @section Shuffling and the key:
#' The released rows are in a random order (Algorithm 1, step 10) with fresh row names
#' and no attribute derived from the input order. `anonymise_keps()` returns the release
#' only. `anonymise_keps_with_key()` makes the same release (the same draws for the same
#' seed) and returns it with what only the custodian may hold: `$origin_row`, the input
#' row of each released row (it undoes the shuffle: keep it apart from the release),
#' the class of each released record and the class table. Risk and utility measures that
#' compare records need it: `risk_rmd(data[res$origin_row, ], res$data)` compares each
#' released record with its origin.
#'
#' @section c-confident k-anonymity (section V-C):
#' With `confidence = c`, each class's linking half-width for `v` is
#' `r_v = -(diam / eps_v) * log(1 - c')`, where `c' = c^(1/p)` for `p` epsilon-quasis, so
#' that the box `[v' - r, v' + r]` over all `p` variables holds the original record with
#' probability `c` (for `p = 1` this is the paper's `r_c = -diam / epsilon * ln(1 - c)`).
#' `l_i` counts the original records of the class that fall in record `i`'s box around
#' its released values (the text of section V-C; its displayed formula centres the
#' interval on the original value, a typo). Records with `0 < l_i < k` are suppressed,
#' records with `l_i = 0` are kept (the noise made them outliers), and a class is
#' suppressed whole when fewer than `k` of its records have `l_i >= k`, i.e. when
#' `|ec| - |{i : l_i < k}| < k`. The counts are in the release metadata ([release_info()]).
#'
#' @section What it protects against, and what not:
#' Generalisation makes every record share its k-quasi-identifiers with `k - 1` others;
#' the noise makes the epsilon-quasis of a class stochastically indistinguishable, so an
#' attacker who knows a person's class and exact values can no longer pick the record by
#' the nearest value with certainty (measured by the `linking_risk` in the release
#' metadata, section V-B, and
#' [risk_class_link()]). It is not epsilon-differential privacy of the data set: the
#' class diameters come from the data, the classes are public, and records of a class
#' with equal values stay linked. It does not protect the categorical `strata` values
#' (they are released unchanged), nor variables outside `vars`, `quasi` and `strata`,
#' and it does not prevent attribute disclosure within a class.
#'
#' @param data A data frame (data.frame, tibble or data.table).
#' @param vars The epsilon-quasi-identifiers: numeric columns that receive noise.
#'   Default: the numeric columns not in `quasi` or `strata`.
#' @param k Minimum equivalence class size, a whole number >= 2 and at most the number of
#'   records.
#' @param epsilon The privacy budget per record, a single number > 0. Smaller is more
#'   noise. See [keps_error()] to pick it for a target error.
#' @param quasi Numeric k-quasi-identifiers partitioned by Mondrian and released
#'   generalised (see `generalise`). Default `character()`.
#' @param strata Categorical k-quasi-identifiers (released unchanged; their combinations
#'   must have at least `k` records). Default: the factor, character and logical columns
#'   not in `quasi`.
#' @param classes Equivalence classes built beforehand: a `detanon_classes` object from
#'   [equivalence_classes()] on the same `data` (Mondrian or OLA; its `quasi`, `strata`
#'   and `k` are used, so leave `quasi` and `strata` unset), or a whole number per record
#'   (`NA` for suppressed records; every class needs `k` records). Records the class
#'   builder suppressed (OLA's budget, small strata) are not released. With OLA classes
#'   the `quasi` columns are released as their generalised labels (a factor).
#' @param budget Shares of the budget `epsilon` for the columns of `vars`: positive
#'   numbers, rescaled to sum 1. Default: equal shares.
#' @param weights Deprecated name of `budget` (`weights` names sampling weights elsewhere).
#' @param confidence `NULL` (no suppression) or the confidence `c` in (0, 1) of
#'   c-confident k-anonymity, e.g. 0.99 as in the paper.
#' @param generalise How `quasi` columns are released: `"midpoint"` (the default: the
#'   numeric centre of the class range, which keeps the column numeric for analysis and
#'   equals the shared value when the class has one) or `"interval"` (a factor of the
#'   class ranges `"[lo, hi]"`, the usual Mondrian recoding; note that its bounds are the
#'   smallest and largest original values in the class, printed to 6 significant digits).
#' @param na Missing values in `vars` or `quasi`: `"fail"` (an error) or `"complete"`
#'   (drop those records, counted in `$info`).
#' @param small_strata `"fail"` or `"suppress"` strata with fewer than `k` records.
#' @param seed Seed for R's random number generator (the noise and the shuffle); `NULL`
#'   uses the current stream. With a seed the caller's stream is left as it was.
#' @return `anonymise_keps()`: the release, the same kind of data frame as `data`,
#'   shuffled, without the suppressed records, row names or factor levels left without
#'   records; `vars` noisy (doubles), `quasi` generalised, other columns unchanged. When
#'   the noise scale (class diameter / epsilon share) overflows, as with a tiny `epsilon`
#'   or extreme `budget`, there is an error instead of infinite values. Its release metadata ([release_info()]) hold
#'   the settings (`epsilon`, the per-variable budgets `eps`, `k`, `confidence`, `vars`,
#'   `quasi`, `strata`, `generalise`, `na`, `small_strata`), the counts (`n` records in,
#'   `n_released`, `n_classes`, `n_dropped` incomplete, `n_suppressed` in strata smaller
#'   than `k` or by OLA (the class builder), `n_suppressed_records`, `n_suppressed_classes` and
#'   `n_suppressed_class_records` by c-confidence) and, in `stats`, `expected_error`
#'   (formula 8 per variable), `linking_risk` (section V-B, all classified records, before
#'   suppression) and `linking_risk_released` (the released records only).
#'
#'   `anonymise_keps_with_key()`: an object of class `detanon_keps`, a list for the
#'   custodian, never to be released as a whole:
#'   * `data`: the release (as above).
#'   * `origin_row`: for each released row, its row number in `data`.
#'   * `class`: the equivalence class of each released row.
#'   * `classes`: one row per class: `class`, `n`, strata values, `lo_`/`hi_` ranges of
#'     `quasi`, `diam_<v>` and noise scale `scale_<v>` for each of `vars`, and the
#'     records suppressed. Class diameters are properties of the original values.
#'   * `info`: the release metadata as a list (settings, counts and stats together).
#' @references Holohan N, Antonatos S, Braghin S, Mac Aonghusa P (2017).
#'   (k, epsilon)-anonymity: k-anonymity with epsilon-differential privacy.
#'   arXiv:1710.01615.
#' @seealso [keps_error()] for the expected error before noise is drawn,
#'   [equivalence_classes()], [risk_class_link()], and [anonymise()] for the
#'   deterministic method.
#' @examples
#' d <- titanic_paper()
#' released <- anonymise_keps(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
#'                            k = 3, epsilon = 8, confidence = 0.99, seed = 1)
#' head(released)
#' release_info(released)
#' # the custodian's version: the same release and the key to it
#' res <- anonymise_keps_with_key(d, vars = c("Age", "Fare"),
#'                                strata = c("Pclass", "Sex", "Family"),
#'                                k = 3, epsilon = 8, confidence = 0.99, seed = 1)
#' res
#' summary(res$data$Age - d$Age[res$origin_row])
#' @family masking verbs
#' @section sdcMicro: `data` may be an `sdcMicroObj`; the result is then one too ([sdc_extract()]).
#' @export
anonymise_keps <- function(data, vars = NULL, strata = NULL, quasi = NULL, classes = NULL, k = 3,
                           epsilon, budget = NULL, confidence = NULL,
                           generalise = c("midpoint", "interval"),
                           na = c("fail", "complete"),
                           small_strata = c("fail", "suppress"), seed = NULL, weights) {
  if (is_sdc(data)) return(sdc_verb(anonymise_keps, data, match.call(), parent.frame())) # R/sdcmicro.R
  if (!missing(weights)) budget <- renamed_arg(weights, "weights", "budget", !missing(budget))
  generalise <- match_choice(generalise, "generalise")
  na <- match_choice(na, "na")
  small_strata <- match_choice(small_strata, "small_strata")
  stir_seed(seed)
  keps_core(data, vars, strata, quasi, classes, k, epsilon, budget, confidence, generalise, na,
            small_strata, k_missing = missing(k))$data
}

#' @rdname anonymise_keps
#' @export
anonymise_keps_with_key <- function(data, vars = NULL, strata = NULL, quasi = NULL, classes = NULL,
                                    k = 3, epsilon, budget = NULL, confidence = NULL,
                                    generalise = c("midpoint", "interval"),
                                    na = c("fail", "complete"),
                                    small_strata = c("fail", "suppress"), seed = NULL, weights) {
  if (!missing(weights)) budget <- renamed_arg(weights, "weights", "budget", !missing(budget))
  generalise <- match_choice(generalise, "generalise")
  na <- match_choice(na, "na")
  small_strata <- match_choice(small_strata, "small_strata")
  stir_seed(seed)
  keps_core(data, vars, strata, quasi, classes, k, epsilon, budget, confidence, generalise, na,
            small_strata, k_missing = missing(k))
}

# Both keps verbs: the release and the custodian's parts.
keps_core <- function(data, vars, strata, quasi, classes, k, epsilon, weights, confidence, generalise,
                      na, small_strata, k_missing = TRUE) {
  args <- keps_args(data, epsilon, k, vars, quasi, strata, weights, na, small_strata,
                    classes = classes, k_missing = k_missing)
  if (!is.null(confidence)) confidence <- check_number(confidence, "confidence", 0, 1, lower_open = TRUE)
  if (!is.null(confidence) && confidence >= 1) {
    stop_arg("`confidence` must be below 1 (the linking range is infinite at 1), not ", confidence, ".")
  }
  df <- args$df
  vars <- args$vars
  quasi <- args$quasi
  # a bar for each long native step (Mondrian, linking, c-confidence) of a long run
  show <- show_progress(nrow(df) * log2(nrow(df) + 2) * (1 + !is.null(confidence) * 4) / 4)
  ec <- keps_classes(args, progress = show)
  rows <- which(!is.na(ec$row_class))
  cls <- ec$row_class[rows]
  n_classes <- nrow(ec$classes)
  y <- numeric_matrix(df[rows, , drop = FALSE], vars)
  eps_v <- args$eps_v
  noisy <- .Call(C_ffi_keps_noise, y, cls, n_classes, eps_v)
  diam <- noisy$diam
  if (!all(is.finite(noisy$y))) {
    # diameter / epsilon overflowed (a tiny `epsilon`, extreme `budget` or huge values):
    # the noise would be infinite and the release meaningless
    bad <- vars[colSums(!is.finite(noisy$y)) > 0]
    stop_arg("The noise scale (class diameter / epsilon) of ", quote_names(bad),
             " overflows: `epsilon` (", format(args$epsilon), ") or its share by `budget` is too small ",
             "for the range of the values. Raise `epsilon`, balance `budget`, or rescale the column.",
             kind = "data")
  }
  scale <- sweep(diam, 2L, eps_v, "/")

  grouped <- class_groups(cls, n_classes)
  link_scale <- ifelse(diam > 0, diam, 1)
  linked <- with_progress(show, .Call(C_ffi_keps_link, y, noisy$y, grouped$order, grouped$offsets,
                                      link_scale, show))

  keep <- rep(TRUE, length(rows))
  n_sup_rec <- 0L
  n_sup_cls <- 0L
  n_sup_cls_rec <- 0L
  sup_by_class <- integer(n_classes)
  if (!is.null(confidence)) {
    cprime <- confidence^(1 / length(vars))
    r <- -scale * log1p(-cprime)
    l <- with_progress(show, .Call(C_ffi_keps_confident, y, noisy$y, grouped$order, grouped$offsets, r,
                                   args$k, show))
    sup <- keps_confident_suppression(l, cls, ec$classes$n, args$k)
    keep <- sup$keep
    n_sup_rec <- sup$n_records
    n_sup_cls <- sup$n_classes
    n_sup_cls_rec <- sup$n_class_records
    sup_by_class <- tabulate(cls[!keep], n_classes)
  }

  out <- df[rows, , drop = FALSE]
  for (j in seq_along(vars)) out[[vars[j]]] <- noisy$y[, j]
  for (q in quasi) out[[q]] <- generalise_quasi(ec, q, cls, generalise)
  kept <- which(keep)
  perm <- kept[sample.int(length(kept))]
  release <- shuffled_release(out, perm, args$data)

  classes <- ec$classes
  for (j in seq_along(vars)) {
    classes[[paste0("diam_", vars[j])]] <- diam[, j]
    classes[[paste0("scale_", vars[j])]] <- scale[, j]
  }
  classes$suppressed <- sup_by_class
  err <- keps_error_core(y, cls, n_classes, eps_v)
  settings <- list(epsilon = args$epsilon, eps = stats::setNames(eps_v, vars), k = args$k,
                   confidence = confidence, vars = vars, quasi = quasi, strata = args$strata,
                   generalise = generalise, na = na, small_strata = small_strata,
                   classes = if (is.null(ec$method)) "mondrian" else ec$method)
  counts <- list(n = nrow(args$df) + args$n_dropped, n_released = length(perm), n_classes = n_classes,
                 n_dropped = args$n_dropped, n_suppressed = ec$n_suppressed,
                 n_suppressed_records = n_sup_rec, n_suppressed_classes = n_sup_cls,
                 n_suppressed_class_records = n_sup_cls_rec)
  stats <- list(expected_error = stats::setNames(err, vars),
                linking_risk = mean(linked == 1L),
                linking_risk_released = if (length(kept)) mean(linked[kept] == 1L) else NA_real_)
  release <- as_release(release, "anonymise_keps", settings = settings, counts = counts, stats = stats,
                        columns = names(release))
  structure(list(data = release, origin_row = args$rows[rows[perm]], class = cls[perm],
                 classes = classes, info = c(settings, counts, stats)),
            class = "detanon_keps")
}

# c-confidence (section V-C): `l` holds, per record, the number of original records of its
# class inside its linking box. Records with 0 < l < k go, and whole classes in which fewer
# than k records have l >= k.
keps_confident_suppression <- function(l, cls, class_sizes, k) {
  risky <- l > 0L & l < k
  low <- tabulate(cls[l < k], length(class_sizes))
  bad_class <- class_sizes - low < k
  drop_class <- bad_class[cls]
  list(keep = !(risky | drop_class), n_records = sum(risky & !drop_class), n_classes = sum(bad_class),
       n_class_records = sum(drop_class))
}

# The released value of quasi-identifier `q` for records of classes `cls`: the midpoint of
# the class range, or the range as a factor "[lo, hi]" (Mondrian).
# OLA classes (global recoding): every record shows its class's generalised label.
generalise_quasi <- function(ec, q, cls, generalise) {
  classes <- ec$classes
  if (identical(ec$method, "ola")) return(factor(classes[[q]][cls], levels = unique(classes[[q]])))
  lo <- classes[[paste0("lo_", q)]]
  hi <- classes[[paste0("hi_", q)]]
  if (generalise == "midpoint") return(((lo + hi) / 2)[cls])
  lab <- paste0("[", fmt_num(lo), ", ", fmt_num(hi), "]")
  factor(lab[cls], levels = unique(lab))
}

# Rows `perm` of `out` as a fresh data frame of the class of `like`: no names, row names or
# attributes that follow the input order.
shuffled_release <- function(out, perm, like) {
  release <- out[perm, , drop = FALSE]
  release <- as.data.frame(lapply(release, strip_names), stringsAsFactors = FALSE, optional = TRUE)
  names(release) <- names(out)
  rownames(release) <- NULL
  as_release_frame(release, like)
}

strip_names <- function(x) {
  names(x) <- NULL
  x
}

fmt_num <- function(x) sprintf("%.6g", x)

# Rows grouped by class: order (1-based) and offsets for the C per-class loops.
class_groups <- function(cls, n_classes) {
  list(order = order(cls, method = "radix"), offsets = c(0, cumsum(tabulate(cls, n_classes))))
}

# Validation shared by anonymise_keps() and keps_error().
keps_args <- function(data, epsilon, k, vars, quasi, strata, weights, na, small_strata,
                      eps_vector = FALSE, classes = NULL, k_missing = TRUE) {
  check_data_frame(data, "data")
  if (!is.null(vars)) check_columns(vars, data, "vars")
  if (missing(epsilon)) {
    stop_arg("`epsilon` is missing: give the privacy budget per record, a number > 0 (e.g. `epsilon = 1`).")
  }
  if (eps_vector) {
    if (!is.numeric(epsilon) || !length(epsilon) || anyNA(epsilon) || any(!is.finite(epsilon)) ||
        any(epsilon <= 0)) {
      stop_arg("`epsilon` must be finite numbers > 0, not ", show_value(epsilon), ".")
    }
  } else {
    epsilon <- check_number(epsilon, "epsilon", 0, lower_open = TRUE)
  }
  k <- check_whole(k, "k", min = 2)
  if (is.null(classes)) {
    cols <- check_quasi_strata(data, quasi, strata)
  } else {
    cols <- check_given_classes(classes, data, quasi, strata, k, k_missing)
    k <- cols$k
  }
  quasi <- cols$quasi
  strata <- cols$strata
  vars <- check_columns(vars, data, "vars",
                        setdiff(default_vars(data), c(strata, quasi)))
  if (!length(vars)) {
    stop_arg("There is no epsilon-quasi-identifier to perturb: name numeric columns in `vars` ",
             "(the default takes the numeric columns not in `quasi` or `strata`).", kind = "column")
  }
  both <- intersect(vars, c(quasi, strata))
  if (length(both)) {
    stop_arg("Columns cannot be both noised (`vars`) and k-quasi-identifiers (`quasi`, `strata`): ",
             quote_names(both), ".", kind = "column")
  }
  check_quasi(data, vars, "vars")
  if (is.null(weights)) {
    weights <- rep(1, length(vars))
  } else if (!is.numeric(weights) || length(weights) != length(vars) || anyNA(weights) ||
             any(!is.finite(weights)) || any(weights <= 0)) {
    stop_arg("`budget` must be ", plural(length(vars), "positive number"),
             " (one per column of `vars`), not ", show_value(weights), ".")
  }
  weights <- weights / sum(weights)
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  rows <- seq_len(nrow(df))
  n_dropped <- 0L
  has_na <- !stats::complete.cases(df[c(vars, quasi)])
  if (any(has_na)) {
    if (na == "fail") {
      counts <- colSums(is.na(df[c(vars, quasi)]))
      counts <- counts[counts > 0]
      stop_arg("`vars`/`quasi` have missing values (",
               paste0("`", names(counts), "`: ", counts, collapse = ", "),
               "). Use `na = \"complete\"` to drop those records, or impute them first.", kind = "data")
    }
    n_dropped <- sum(has_na)
    rows <- which(!has_na)
    df <- df[rows, , drop = FALSE]
    inform_detanon("dropped ", plural(n_dropped, "incomplete record"), " (na = \"complete\").", kind = "na")
  }
  check_k_n(k, nrow(df))
  list(data = data, df = df, rows = rows, epsilon = epsilon, k = k, vars = vars, quasi = quasi,
       classes = cols$classes, strata = strata, eps_v = if (eps_vector) weights else epsilon * weights, weights = weights,
       na = na, small_strata = small_strata, n_dropped = n_dropped)
}

# Classes given to anonymise_keps()/keps_error(): a detanon_classes object built on
# `data`, or an integer class per row (NA = suppressed). Their columns and k replace
# `quasi`, `strata` and `k`.
check_given_classes <- function(classes, data, quasi, strata, k, k_missing) {
  n <- nrow(data)
  if (!is.null(quasi) || !is.null(strata)) {
    stop_arg("Give either `classes` or `quasi`/`strata`, not both: the classes already fix the ",
             "k-quasi-identifiers.")
  }
  if (inherits(classes, "detanon_classes")) {
    if (length(classes$class) != n) {
      stop_arg("`classes` were built on ", plural(length(classes$class), "record"), ", but `data` has ",
               n, "; build them with equivalence_classes() on the same data.")
    }
    if (!k_missing && k != classes$k) {
      stop_arg("`k` (", k, ") differs from the `k` the classes were built with (", classes$k, ").")
    }
    missing_cols <- setdiff(c(classes$quasi, classes$strata), names(data))
    if (length(missing_cols)) stop_arg("`classes` refer to columns not in `data`: ", quote_names(missing_cols), ".")
    return(list(quasi = classes$quasi, strata = classes$strata, k = classes$k, classes = classes))
  }
  if (!is.numeric(classes) || length(classes) != n || any(classes != round(classes), na.rm = TRUE) ||
      all(is.na(classes))) {
    stop_arg("`classes` must be a detanon_classes object (equivalence_classes()) or a whole number per ",
             "record (", n, "; NA for suppressed records), not ", show_value(classes), ".")
  }
  ids <- match(classes, sort(unique(classes[!is.na(classes)])))
  sizes <- tabulate(ids)
  if (any(sizes < k)) {
    stop_arg("`classes` has ", plural(sum(sizes < k), "class", "classes"), " with fewer than `k` = ", k,
             " records; merge them or suppress their records (NA) first.")
  }
  cl <- structure(list(class = ids, classes = data.frame(class = seq_along(sizes), n = sizes),
                       k = k, quasi = character(), strata = character(),
                       n_suppressed = sum(is.na(ids)), method = "given"),
                  class = "detanon_classes")
  list(quasi = character(), strata = character(), k = k, classes = cl)
}

# The classes of the checked records in args$df: built, or the given ones restricted to
# the records kept by `na`.
keps_classes <- function(args, progress = FALSE) {
  if (is.null(args$classes)) {
    return(classes_core(args$df, args$k, args$quasi, args$strata, args$small_strata, progress = progress))
  }
  ec <- unclass(args$classes)
  row_class <- ec$class[args$rows]
  if (length(args$rows) < length(ec$class)) {
    sizes <- tabulate(row_class, nrow(ec$classes))
    if (any(sizes > 0L & sizes < args$k)) {
      stop_arg("Dropping the incomplete records (`na = \"complete\"`) leaves classes below `k`; ",
               "build the classes on the complete records instead.")
    }
    ec$classes$n <- sizes
  }
  ec$row_class <- row_class
  ec
}

# Formula (8) per column of y with budgets eps_v.
keps_error_core <- function(y, cls, n_classes, eps_v) {
  n <- length(cls)
  counts <- tabulate(cls, n_classes)
  ends <- cumsum(counts)
  starts <- ends - counts + 1L
  vapply(seq_len(ncol(y)), function(j) {
    v <- y[, j]
    sorted <- v[order(cls, v, method = "radix")]
    diam <- sorted[ends] - sorted[starts]
    inv_sum <- as.vector(rowsum(1 / abs(v), cls, reorder = TRUE))  # sum_i 1/|ec_i| = |ec| / H(ec)
    terms <- ifelse(diam == 0, 0, diam * inv_sum)
    sum(terms) / n / eps_v[j]
  }, numeric(1))
}

#' Expected relative error of (k, epsilon)-anonymisation, before any noise is drawn
#'
#' Computes formula (8) of Holohan et al. (2017),
#' \deqn{err = \frac{1}{\epsilon_v} \sum_{ec} \frac{diam(ec)}{H(ec)} \frac{|ec|}{n},}{err = (1/eps_v) sum over classes of diam(ec) / H(ec) * |ec| / n,}
#' the expected mean relative error `E|v' - v| / |v|` over the records of each
#' epsilon-quasi `v`, where `H(ec)` is the harmonic mean of `|v|` in the class
#' (equations 6-7: `E|Lap(0, b)| = b = diam / eps_v`). It depends on the data only
#' through the classes, which are deterministic, so it is known before noise is drawn:
#' as it is proportional to `1 / epsilon`, the budget for a target error `e` is
#' `epsilon * err / e` (see the example).
#'
#' A value of 0 in a class with a positive diameter makes its relative error infinite
#' (`Inf`); relative error suits strictly positive variables (heights, weights, fares
#' above 0). Classes with diameter 0 get no noise and contribute 0. The error is that of
#' the noise step on all classified records, before any c-confidence suppression.
#'
#' @inheritParams anonymise_keps
#' @param epsilon One or more budgets per record (> 0).
#' @return A data frame of class `detanon_keps_error` with one row per `epsilon` and
#'   variable of `vars`: `epsilon`,
#'   `variable`, `eps_v` (its share of the budget) and `error` (formula 8).
#' @examples
#' d <- titanic_paper()
#' d <- d[d$Fare > 0, ]
#' e <- keps_error(d, vars = "Fare", strata = c("Pclass", "Sex", "Family"), k = 3,
#'                 epsilon = c(1, 8, 16))
#' e
#' # budget for a 5% expected error on Fare
#' e$epsilon[1] * e$error[1] / 0.05
#' @family measures
#' @export
keps_error <- function(data, vars = NULL, strata = NULL, quasi = NULL, classes = NULL, k = 3, epsilon,
                       budget = NULL, na = c("fail", "complete"),
                       small_strata = c("fail", "suppress"), weights) {
  if (!missing(weights)) budget <- renamed_arg(weights, "weights", "budget", !missing(budget))
  na <- match_choice(na, "na")
  small_strata <- match_choice(small_strata, "small_strata")
  args <- keps_args(data, epsilon, k, vars, quasi, strata, budget, na, small_strata,
                    eps_vector = TRUE, classes = classes, k_missing = missing(k))
  ec <- keps_classes(args)
  rows <- which(!is.na(ec$row_class))
  y <- numeric_matrix(args$df[rows, , drop = FALSE], args$vars)
  base <- keps_error_core(y, ec$row_class[rows], nrow(ec$classes), args$weights)  # at epsilon = 1
  grid <- expand.grid(variable = args$vars, epsilon = epsilon, stringsAsFactors = FALSE)
  j <- match(grid$variable, args$vars)
  out <- data.frame(epsilon = grid$epsilon, variable = grid$variable,
                    eps_v = grid$epsilon * args$weights[j], error = base[j] / grid$epsilon)
  class(out) <- c("detanon_keps_error", "data.frame")
  out
}

#' @export
print.detanon_keps_error <- function(x, ...) {
  cat("Expected relative error of (k, epsilon)-anonymisation (formula 8),\n",
      "before noise is drawn\n", sep = "")
  print(structure(x, class = "data.frame"), row.names = FALSE, ...)
  invisible(x)
}

#' Nearest-neighbour linking risk within equivalence classes
#'
#' The linking model of section V-B of Holohan et al. (2017): for each released record,
#' an attacker who knows its equivalence class picks the original record of that class
#' whose values are closest to the released ones; the link succeeds when the true origin
#' is at the smallest distance (ties count as successes, as in the paper's indicator, so
#' records with equal original values all count as linked). The risk is the share of
#' records linked. With several variables the distance is Euclidean after dividing each
#' variable by its diameter in the class (range of the original values; a variable
#' constant in the class does not separate its records and is left unscaled).
#'
#' It differs from [risk_linkage()] in three ways: classes can be any grouping (e.g.
#' Mondrian classes from [anonymise_keps()]); distances are scaled per class by the
#' diameters (the noise scale of [anonymise_keps()] up to the budget split) rather than by
#' global SDs; and a tie counts as a full link (the paper's indicator) rather than 1/t.
#'
#' It applies to any masking that keeps records aligned: the output of [anonymise()],
#' or of [anonymise_keps_with_key()] with the original rows put in release order
#' (`original[res$origin_row, ]`, `classes = res$class`).
#'
#' @section What it measures and what not:
#' It is a worst-case attacker who already knows everyone's exact original values and
#' classes; it is the share of records such an attacker links correctly, not a
#' probability of re-identification for an attacker with less knowledge, and it says
#' nothing about attribute disclosure or linkage through other variables.
#'
#' @param original,masked Data frames with the same rows in the same order.
#' @param vars Numeric columns compared. Default: the numeric columns of `masked` (not
#'   labelled codes), as for every verb.
#' @param strata Categorical columns of `original` whose combinations group the records
#'   (with `classes`: classes within strata).
#' @param classes `NULL` (one class), a vector with the class of each row, or a
#'   `detanon_classes` object from [equivalence_classes()] (Mondrian or OLA) without
#'   suppressed records. (Column names here are deprecated: pass them as `strata`.)
#' @return An object of class `detanon_class_link`: a list with `rate` (share linked),
#'   `n_linked`, `n`, and `linked` (a logical per row).
#' @examples
#' d <- titanic_paper()
#' m <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))
#' risk_class_link(d, m, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"))$rate
#' @family measures
#' @export
risk_class_link <- function(original, masked, vars = NULL, strata = NULL, classes = NULL) {
  check_data_frame(original, "original")
  check_data_frame(masked, "masked")
  if (is.character(classes) && length(classes) && all(classes %in% names(original)) &&
      length(classes) != nrow(original)) {
    strata <- renamed_arg(classes, "classes = <column names>", "strata", !is.null(strata))
    classes <- NULL
  }
  strata <- check_columns(strata, original, "strata")
  if (nrow(original) != nrow(masked)) {
    stop_arg("`original` and `masked` must have the same rows in the same order (",
             nrow(original), " vs ", nrow(masked), " rows); for anonymise_keps_with_key() output use ",
             "`original[res$origin_row, ]`.", kind = "data")
  }
  vars <- check_columns(vars, masked, "vars", setdiff(default_vars(masked), strata))
  if (!length(vars)) stop_arg("`vars` is empty: name numeric columns to compare.")
  check_columns(vars, original, "vars")
  check_quasi(original, vars, "vars")
  check_quasi(masked, vars, "vars")
  n <- nrow(original)
  o <- numeric_matrix(as.data.frame(original), vars)
  q <- numeric_matrix(as.data.frame(masked), vars)
  if (anyNA(o) || anyNA(q)) stop_arg("`vars` have missing values in `original` or `masked`; drop those rows first.", kind = "data")
  if (inherits(classes, "detanon_classes")) {
    if (anyNA(classes$class)) {
      stop_arg("`classes` has suppressed records (class NA): keep only the classified rows of ",
               "`original` and `masked`, and pass `classes$class` for those rows.")
    }
    classes <- classes$class
  }
  cls <- if (is.null(classes)) {
    rep.int(1L, n)
  } else {
    if (!is.atomic(classes) || length(classes) != n) {
      stop_arg("`classes` must be a vector with one class per row (", n, "), not ", show_value(classes),
               "; pass column names as `strata`.")
    }
    match(classes, unique(classes))
  }
  if (length(strata)) { # classes within strata
    sid <- stratum_ids(as.data.frame(original), strata)
    cls <- match(paste(sid, cls), unique(paste(sid, cls)))
  }
  n_classes <- max(c(0L, cls))
  g <- class_groups(cls, n_classes)
  sc <- matrix(1, n_classes, length(vars))
  for (j in seq_along(vars)) {
    r <- vapply(split(o[, j], factor(cls, levels = seq_len(n_classes))), function(v) diff(range(v)), 0)
    sc[, j] <- ifelse(r > 0, r, 1)
  }
  linked <- .Call(C_ffi_keps_link, o, q, g$order, g$offsets, sc, FALSE) == 1L
  structure(list(rate = if (n) mean(linked) else NA_real_, n_linked = sum(linked), n = n,
                 linked = linked), class = "detanon_class_link")
}

#' @export
print.detanon_class_link <- function(x, ...) {
  cat(sprintf("Linking risk within classes: %d of %d records linked (%.2f%%)\n",
              x$n_linked, x$n, 100 * x$rate))
  invisible(x)
}

#' @export
print.detanon_keps <- function(x, ...) {
  i <- x$info
  cat(sprintf("(k, epsilon)-anonymisation: k = %d, epsilon = %s (%s)\n", i$k, format(i$epsilon),
              paste0(names(i$eps), " ", format(signif(i$eps, 4)), collapse = ", ")))
  cat(sprintf("  %d classes; %d of %d records released (shuffled; keep `$origin_row` apart)\n",
              i$n_classes, i$n_released, i$n))
  cat("  expected relative error (8):",
      paste0(names(i$expected_error), " ", format(signif(i$expected_error, 4)), collapse = ", "), "\n")
  cat(sprintf("  linking risk (V-B): %.2f%% of classified records, %.2f%% of released\n",
              100 * i$linking_risk, 100 * i$linking_risk_released))
  if (!is.null(i$confidence)) {
    cat(sprintf("  %g-confident k-anonymity: suppressed %d records and %d classes (%d records)\n",
                i$confidence, i$n_suppressed_records, i$n_suppressed_classes,
                i$n_suppressed_class_records))
  }
  if (i$n_dropped + i$n_suppressed > 0) {
    cat(sprintf("  dropped %d incomplete, suppressed %d when building the classes\n", i$n_dropped,
                i$n_suppressed))
  }
  invisible(x)
}
