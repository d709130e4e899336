#' Singling-out attack: rare combinations of released values
#'
#' The singling-out attack of anonymeter (Giomi et al. 2023), one predicate per released
#' record. The intruder reads the release only: for every released record it writes a
#' predicate from the record's own released values, "the person whose categorical keys
#' are these (the strata and the categorical `held` columns of [intruder()]) and whose numeric
#' values (the masked variables and numeric keys) fall in these bins", and claims that
#' exactly one person of the data satisfies it. The bins of a numeric column are the
#' quantile bins of its released values (`b` bins of equal count, ties kept together: the
#' cut points are the released values of rank `ceiling(j n / b)`, `j = 1, ..., b - 1`);
#' the intruder tries the resolutions `bins` from the coarsest and keeps the first at which
#' the record's combination is unique in the release (the finest if none is). The claim
#' about a record is right (`success` 1) when exactly one original record satisfies the
#' predicate and it is the record's own: the release has singled the person out. The
#' intruder's confidence is one over the number of released records sharing the chosen
#' combination (1: unique in the release). `details$isolates` gives anonymeter's figure: the
#' share of predicates that hold for exactly one original record, whoever it is.
#'
#' The control runs the same predicates on the control release (every record's row holds
#' the released record of another person of its stratum, see [risk_battery()]): a claim is
#' right there when the predicate written from that other person's released record
#' isolates the record's own original, which is what a release of resembling people gives
#' away.
#'
#' @section Its intruder:
#' Reads the release and knows which columns are keys; holds no original record (the
#' intruder's share `p` is not used: every record is attacked). Knowledge of the masking
#' algorithm is not used.
#'
#' @section What it does not cover:
#' Predicates on other columns than the intruder's keys or of other shapes (inequalities
#' on single columns, unions), predicates chosen with knowledge of the originals,
#' linking the singled-out person to an identity (see [attack_linkage()]) and attribute
#' inference (see [attack_inference()]).
#'
#' @inheritParams risk_battery
#' @param bins Numbers of quantile bins of the numeric columns the intruder tries, whole
#'   numbers >= 1 (tried coarsest first), or `NULL` for 2, 4, 8, ... up to the first `b`
#'   with `b^d >= 4 n` (`d` numeric columns, `n` records; at most `2^20`), fine enough for
#'   most combinations to be unique.
#' @return An object of class `detanon_attack` (see [risk_battery()] for its fields).
#' @references Giomi M, Boenisch F, Wehmeyer C, Tasnadi B (2023). A unified framework for
#'   quantifying privacy risk in synthetic data. *Proceedings on Privacy Enhancing
#'   Technologies* 2023(2), 312-328 (anonymeter).
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' attack_singling_out(d, masked, seed = 1)
#' @family attacks
#' @export
attack_singling_out <- function(original, masked, intruder = NULL, bins = NULL,
                                control = TRUE,
                                nthreads = getOption("detanon.nthreads", 1L), seed = NULL) {
  if (!is.null(bins)) bins <- check_bins(bins)
  attack_verb(battery_attacks()$singling_out, list(bins = bins), original, masked, intruder, 1L, control,
              seed, nthreads)
}

check_bins <- function(bins) {
  if (!is.numeric(bins) || !length(bins) || anyNA(bins) || any(!is.finite(bins)) ||
      any(bins < 1) || any(bins != round(bins)) || any(bins > .Machine$integer.max)) {
    stop_arg("`bins` must be whole numbers >= 1, such as c(2, 4, 8, 16, 32), not ", show_value(bins), ".")
  }
  sort(unique(as.integer(bins)))
}

# The numeric columns the intruder bins: the masked variables and the numeric keys, raw.
singling_out_columns <- function(s) {
  cols <- c(s$vars, s$key_num)
  list(o = numeric_matrix(s$original, cols), m = numeric_matrix(s$masked, cols))
}

# The bins of values x by the released values `sorted` (sorted, length n) for b bins: the
# number of cut points below each value, the cut points being the distinct released values
# of rank ceiling(j n / b), j = 1..b-1 (the type-1 quantiles; the cuts for 2b bins refine
# those for b).
quantile_bin <- function(x, sorted, b) {
  n <- length(sorted)
  if (b < 2L || !n) return(integer(length(x)))
  j <- seq_len(b - 1L)
  cuts <- unique(sorted[(j * as.double(n) + b - 1) %/% b])
  findInterval(x, cuts, left.open = TRUE)
}

# quantile_bin(x, sorted, b) for every b of `bins`, as a function of b, from one search of
# the finest cuts when every b divides the largest, B: the cut of rank ceiling(j n / b) is
# that of rank ceiling(j (B / b) n / B), so the cuts for b are among those for B, and the
# bin of a value for b is the number of b's cuts among the B cuts below it.
nested_bins <- function(x, sorted, bins) {
  top <- max(bins)
  if (top < 2L || !length(sorted) || any(top %% bins != 0)) return(function(b) quantile_bin(x, sorted, b))
  n <- length(sorted)
  cuts <- function(b) unique(sorted[(seq_len(b - 1L) * as.double(n) + b - 1) %/% b])
  fine <- cuts(top)
  at <- findInterval(x, fine, left.open = TRUE) + 1L
  rm(x) # the closure keeps the bins of the finest cuts only
  function(b) if (b < 2L) integer(length(at)) else c(0L, cumsum(fine %in% cuts(b)))[at]
}

# The default resolutions: 2, 4, 8, ... bins per numeric column, up to the first number of
# bins b with b^d >= 4 n (d numeric columns; at most 2^20): fine enough for most
# combinations to be unique.
default_bins <- function(n, d) {
  if (d < 1L || n < 2L) return(2L)
  top <- min(20L, max(1L, ceiling(log2(4 * n) / d)))
  as.integer(2^seq_len(top))
}

singling_out_core <- function(s, bins = NULL, ...) {
  n <- s$n
  x <- singling_out_columns(s)
  if (is.null(bins)) bins <- default_bins(n, ncol(x$m))
  shared_in <- list(o = x$o, cell_o = s$cell_o, bins = bins)
  ctrl <- singling_out_shared(s, shared_in, x$m)
  if (!is.null(ctrl)) {
    ctrl$success <- pmax(ctrl$success, wildcard_singled_out(s))
    return(ctrl)
  }
  keep <- is.environment(s$shared) && is.null(s$perm)
  ido_at <- list()
  success <- confidence <- numeric(n)
  chosen <- rep(NA_integer_, n)
  isolates <- logical(n)
  idm_chosen <- if (keep) integer(n)
  binners <- lapply(seq_len(ncol(x$m)), function(j) nested_bins(c(x$m[, j], x$o[, j]), sort(x$m[, j]), bins))
  if (n) {
    # ids over the released records (rows 1..n) then the originals (n + 1..2n)
    cells <- as.double(c(s$cell_m, s$cell_o))
    cells_size <- max(cells)
    for (b in sort(bins)) {
      id <- cells
      size <- cells_size
      for (j in seq_len(ncol(x$m))) {
        # mixed radix codes, compacted when they would leave the exact doubles
        if (size * b > 2^52) {
          id <- as.double(match(id, unique(id)))
          size <- max(id)
        }
        id <- id + size * binners[[j]](b)
        size <- size * b
      }
      # the codes (1..size) are counted as they are while tabulate() can count them cheaply,
      # else compacted
      id <- if (size > 8 * n + 65536) match(id, unique(id)) else as.integer(id)
      idm <- id[seq_len(n)]
      ido <- id[n + seq_len(n)]
      if (keep) ido_at[[as.character(b)]] <- ido
      k <- max(id)
      # the counts of released records and originals of each cell, read by the records
      # without a resolution yet (`open`)
      cnt_rel <- tabulate(idm, k)
      cnt_orig <- tabulate(ido, k)
      open <- which(is.na(chosen))
      # the coarsest unique resolution; the finest when none is
      take <- if (b == max(bins)) open else open[cnt_rel[idm[open]] == 1L]
      idm_take <- idm[take]
      n_rel <- cnt_rel[idm_take]
      n_orig <- cnt_orig[idm_take]
      chosen[take] <- b
      if (keep) idm_chosen[take] <- idm_take
      confidence[take] <- 1 / n_rel
      isolates[take] <- n_orig == 1L
      success[take] <- as.double(n_orig == 1L & ido[take] == idm_take)
      if (!anyNA(chosen)) break
    }
    # a released key left missing (suppressed) matches any value
    success <- pmax(success, wildcard_singled_out(s))
  }
  out <- list(success = success, confidence = confidence,
              isolates = if (n) mean(isolates) else NA_real_,
              bins_used = chosen,
              not_covered = paste("predicates of other shapes or on other columns, predicates chosen with",
                                  "knowledge of the originals, linking the singled-out person to an",
                                  "identity, attribute inference."))
  if (keep && n) {
    s$shared$singling_out <- list(inputs = shared_in, m = x$m, cell_m = s$cell_m, out = out,
                                  isolated = isolates, ido_at = ido_at, idm_chosen = idm_chosen)
  }
  out
}

# The result on a control view `s` (released rows permuted by s$perm) from the view's, kept
# in s$shared by singling_out_core(): when the control's released values and cells are the
# view's permuted (`m`) and the originals and bins the same (`inputs`), the bins and cells
# of every released record, hence its resolution, confidence and whether it isolates one
# original, are those of the view's record s$perm[p] that the control puts at row p; the
# claim succeeds when that original is p's own, i.e. when p's original falls in the cell of
# the view's record s$perm[p] at that record's resolution. NULL when there is nothing to
# reuse; the view's result is dropped once used (run_attack() runs the view, then its
# control).
singling_out_shared <- function(s, inputs, m) {
  prev <- if (!is.null(s$perm) && is.environment(s$shared)) s$shared$singling_out
  if (is.null(prev) || !identical(prev$inputs, inputs)) return(NULL)
  perm <- s$perm
  if (!identical(prev$m[perm, , drop = FALSE], m) || !identical(prev$cell_m[perm], s$cell_m)) return(NULL)
  rm("singling_out", envir = s$shared)
  out <- prev$out
  b <- out$bins_used[perm]
  same <- logical(length(perm))
  for (r in names(prev$ido_at)) {
    at <- which(b == as.integer(r))
    same[at] <- prev$ido_at[[r]][at] == prev$idm_chosen[perm[at]]
  }
  out$success <- as.double(prev$isolated[perm] & same)
  out$confidence <- out$confidence[perm]
  out$bins_used <- b
  out
}

# The claims on the released records with missing categorical keys (cells suppressed, as by
# suppress_local() or tune_release()), a missing value matching any value as sdcMicro
# counts: the predicate "the person whose keys equal these wherever they are given" is right
# (1) when exactly one original record satisfies it and it is the record's own. (The exact
# predicates of singling_out_core() name a missing value, which no original holds.) 0 for
# the records without missing keys.
wildcard_singled_out <- function(s) {
  cols <- c(s$strata, s$key_cat)
  out <- numeric(s$n)
  if (!length(cols) || !s$n) return(out)
  miss <- vapply(cols, function(v) is.na(s$masked[[v]]), logical(s$n))
  miss <- matrix(miss, nrow = s$n)
  holes <- which(rowSums(miss) > 0L)
  if (!length(holes)) return(out)
  pattern <- apply(miss[holes, , drop = FALSE], 1L, function(r) paste(which(r), collapse = ","))
  ko_all <- cell_text(s$original, cols)
  km_all <- cell_text(s$masked, cols)
  for (p in unique(pattern)) {
    r <- holes[pattern == p]
    given <- cols[!miss[r[1L], ]]
    if (!length(given)) next # nothing given: every original satisfies it
    id <- stratum_ids(rbind(ko_all[given], km_all[r, given, drop = FALSE]), given)
    io <- id[seq_len(s$n)]
    im <- id[s$n + seq_along(r)]
    count <- tabulate(io, max(id))[im]
    out[r] <- as.double(count == 1L & io[r] == im)
  }
  out
}
