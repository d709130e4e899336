#' Keyed anonymisation: shared group centroids, the algorithm public, a key secret
#'
#' Masks the continuous variables by *shared* centroids: every stratum is partitioned into
#' groups of at least `k` records, and every record is released as the mean of its group.
#' The partition is a keyed k-means: its random choices come from the custodian's secret
#' `key`, so the method and all its settings may be published (Kerckhoffs' principle) and
#' the custodian, holding the key, reproduces the release bit for bit.
#'
#' The steps:
#' 1. standardise every variable in `vars` to z-scores over the whole data (exact mean and
#'    SD, as [anonymise()]);
#' 2. stratify by `strata` (strata smaller than `k` as `small_strata` says);
#' 3. for each stratum, k-means on the z-scores for a grid of numbers of groups around its
#'    share of the budget (every number up to three times the share when that is at most
#'    48; at most one group per `k` records): the
#'    best of 10 keyed k-means++ starts, Lloyd iterations, groups smaller than `k` merged
#'    into the group with the nearest centre. A stratum of more than 1000 records is
#'    first split in two by the same keyed k-means, again and again, into blocks of at
#'    most 1000, each treated as a stratum;
#' 4. the budget of `round(n / size)` groups (at least one per stratum) is handed out one
#'    group at a time to the stratum where one more group lowers the within-group sum of
#'    squares most (greedy, on the sums of squares interpolated between the grid points),
#'    and each stratum is partitioned with its number of groups;
#' 5. every record is released as its group's mean (on the original scale, exact means),
#' 6. with `noise = TRUE` (the default), plus the group's keyed noise (see the section
#'    Releasing the same people again), then in the release `format` of [anonymise()].
#'
#' `size` is the mean number of records per released point. For an intruder who holds only
#' `vars` and `strata`, an attack that names one released record per person, sharing ties
#' among equal released points at random (as the battery's linkage, assignment and recipe
#' attacks do), is right for at most about one record per group: a share of about
#' `n_groups / n`, close to `1 / size`. Columns released unchanged that the intruder also
#' holds can split a group and do better (see `held`); other attacks (attribute inference)
#' are not bounded this way. The sum of squares, and so the information loss
#' ([utility_delta()]), is what the grouping minimises for that budget: dense regions get
#' larger groups, sparse tails smaller ones (never smaller than `k`).
#'
#' @section What the key protects, and what it does not:
#' * Without the key, nobody can recompute the exact partition, even holding all the
#'   originals and knowing every setting. But because records of a group release the same
#'   point, recomputing the partition (with or without the key) reveals only which records
#'   share a released point, which the release shows anyway: the algorithm-aware attack
#'   ([attack_recipe()], which plays an intruder who runs this verb with a wrong key) falls
#'   to the level of the other attacks. The key is what lets the custodian reproduce and
#'   verify the release; the protection comes from the shared centroids.
#' * The key does not hide group membership from someone who holds the originals: an
#'   intruder who knows a person's values finds the nearest released point and knows that
#'   the person is one of that group's records. Released columns left unmasked (e.g. an
#'   outcome such as `Survived`) split a group when the intruder holds them: name them in
#'   `held` or `strata` so that groups never mix their values (at a cost in loss).
#' * The key is not a cipher: the release is not encrypted and needs no key to be used.
#'   Anyone holding the key and the originals recomputes the release exactly, so keep the
#'   key as secret as the originals (and never reuse it for another release of the same
#'   people).
#' * Group means of whole-number data of SD 500 or more are rounded by the default `format`
#'   (narrower ones keep their decimals, see [anonymise()]); a group of records with equal
#'   values releases that value (as any centroid would).
#'
#' @section Releasing the same people again:
#' Exact group means keep every stratum's column sums: released again after one person is
#' added or withdrawn, the difference of the two releases' sums would be that person's
#' values, exactly, with no background knowledge ([attack_differencing()]). With
#' `noise = TRUE` every group mean gets uniform noise on `[-2 b, 2 b]` per variable,
#' `b = (unit + range + offset) / size`: `unit` the variable's SD rounded down to a
#' power of two, `range` the spread of the group's values, `offset` the distance of the
#' group's mean from the variable's median (rounded to a multiple of `unit`), `size` the
#' group's size. The noise is drawn from the key and the group's membership (a keyed hash
#' of its records' values): a group with the same members in two releases under the same
#' key gets the same noise, so their difference shows nothing new, and a group that gained
#' or lost a member gets fresh noise, so the difference of the sums is off by about the
#' person's own distance from the centre plus one SD. The records of a group still share
#' one released point; the stratum sums are no longer exact (the cost in
#' [utility_delta()] is that of noise of about one SD over the group size, more in the
#' tails: on Titanic, MDAV groups of 10, Age 0.13 -> 0.20 and Fare 0.25 -> 0.35-0.40). `noise = FALSE`
#' gives the exact group means (the published method; unsafe to release twice).
#'
#' @section Reproducibility:
#' The random choices are keyed hashes (SipHash-2-4) of the key and of each record's
#' z-coordinates, never R's random number generator: the same data, settings and key give
#' the same release bit for bit, for every `nthreads`, and permuting the input rows only
#' permutes the output. (The seeding compares `-log(u)` values computed by the C library's
#' `log()`: across platforms whose `log()` differs in the last bit a near-tie could in
#' principle resolve differently; on one platform the result is exact.) Records equal in `vars` and `strata` always share a group. The key
#' never appears in the release, its metadata ([release_info()] says only `keyed = TRUE`)
#' or printed output.
#'
#' @section Cost:
#' The k-means is exact: the same groups as the plain algorithm (every point against every
#' centre), found with shortcuts that never change a choice (bounds on distances in the
#' Lloyd iterations, no logarithm for a point that cannot be the next seed). A start's
#' k-means++ seeds for a number of groups are the first of its seeds for any larger number,
#' so each block draws them once per start for its whole grid, and its final partition
#' starts from them. Blocks run on up to `nthreads` threads. With strata split into blocks
#' of at most 1000 records the cost grows linearly with the number of records, but it
#' stays far slower than [anonymise()]: every block runs 10 starts for each number of
#' groups of its grid, each drawing its seeds among all points of the block. About
#' 13 s of CPU for 100,000 records and 143 s for 1e6 (four strata, three variables,
#' `k = 3`, `size = 10`, one thread; `bench/keyed.R`), some 120 times [anonymise()]. The
#' metadata count `n_groups` may be below `round(n / size)`: groups smaller than `k` are
#' merged.
#'
#' @inheritParams anonymise
#' @param k The smallest group: every released point is shared by at least `k` records
#'   (whole number >= 2).
#' @param key The custodian's secret: a string of at least 16 characters (counted as
#'   characters, not bytes: 8 two-byte characters such as `"\u00e9"` are 8, and are
#'   refused) or a raw vector of at least 16 bytes (e.g. from a password manager or
#'   `openssl::rand_bytes(16)`), kept with the originals and never published. Its strength
#'   is its unpredictability: a random key of 16 characters or bytes, not a word. Never
#'   printed or stored by detanon.
#' @param size The mean number of records per released point (a number >= `k`): the
#'   budget is `round(n / size)` groups.
#' @param held Released categorical columns an intruder may hold (e.g. an outcome released
#'   unchanged, `"Survived"`; `held` of [intruder()]): groups are formed within their
#'   values, so that holding them does not split a group; within a stratum, values held by
#'   fewer than `k` records are pooled with the stratum's largest cell. `NULL` (default):
#'   none. These columns are released unchanged.
#' @param noise If `TRUE` (the default), every group mean gets keyed noise (see
#'   the section Releasing the same people again), so that two releases of the same people
#'   with one person more or fewer do not give that person's values away; `FALSE`: exact
#'   group means.
#' @param format The release form of the masked values, as in [anonymise()]: `"natural"`
#'   (default), `"precision"` or `"none"`.
#' @param nthreads Number of OpenMP threads for the blocks (and the starts of the
#'   splitting of large strata) of the k-means (capped by the machine). The default is the
#'   option `detanon.nthreads`, else 1. The release does not depend on it.
#' @param keys Deprecated name of `held` (`key` is the custodian's secret).
#' @return An object of the same class as `data` with the masked columns replaced, as
#'   [anonymise()] returns. Its release metadata ([release_info()]) hold the settings
#'   (`k`, `size`, `vars`, `strata`, `held`, `noise`, `na`, `small_strata`, `format`, `keyed = TRUE`) and
#'   counts (`n`, `n_strata`, `min_size`, `n_groups`, `min_group`, `n_suppressed`,
#'   `n_dropped`, `n_imputed`, `n_moved`); never the key.
#' @references Domingo-Ferrer J, Mateo-Sanz JM (2002). Practical data-oriented
#'   microaggregation for statistical disclosure control. *IEEE Transactions on Knowledge
#'   and Data Engineering* 14(1), 189-201.
#'
#'   Aumasson J-P, Bernstein DJ (2012). SipHash: a fast short-input PRF. *INDOCRYPT 2012*,
#'   LNCS 7668, 489-508.
#' @family masking verbs
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' key <- "a-secret-of-the-custodian-0f3c9" # keep it with the originals, never publish it
#' masked <- anonymise_keyed(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
#'                           k = 2, key = key, size = 14)
#' release_info(masked)
#' # the custodian reproduces it bit for bit
#' identical(masked, anonymise_keyed(d, vars = c("Age", "Fare"),
#'                                   strata = c("Pclass", "Sex", "Family"),
#'                                   k = 2, key = key, size = 14))
#' @export
anonymise_keyed <- function(data, vars = NULL, strata = NULL, k = 3, key, size = 10, held = NULL,
                            noise = TRUE, format = NULL,
                            na = c("fail", "median", "mean", "median_stratum", "mean_stratum", "complete"),
                            small_strata = c("fail", "suppress", "merge"),
                            check_identifiers = TRUE, household = NULL,
                            nthreads = getOption("detanon.nthreads", 1L), keys) {
  if (is_sdc(data)) return(sdc_verb(anonymise_keyed, data, match.call(), parent.frame())) # R/sdcmicro.R
  if (!is.null(household)) return(household_verb(anonymise_keyed, data, household, match.call(), parent.frame()))
  if (!missing(keys)) held <- renamed_arg(keys, "keys", "held", !missing(held))
  f <- check_masking_args(data, vars, strata, k, na = na, small_strata = small_strata,
                          choices = list(na = na_choices, small_strata = small_strata_choices),
                          check_identifiers = check_identifiers, nthreads = nthreads)
  secret <- check_key(if (missing(key)) NULL else key)
  size <- check_number(size, "size", lower = f$k)
  noise <- check_flag(noise, "noise")
  format <- check_format(format, "kdtree")
  held <- check_columns(held, data, "held", character())
  both <- intersect(held, c(f$vars, f$strata))
  if (length(both)) stop_arg("`held` repeats columns of `vars` or `strata`: ", quote_names(both), ".", kind = "column")
  f <- mask_input(data, f)
  res <- keyed_mask(f$x, keyed_cells(f$df, f$id, held, f$strata, f$k), f$k, size, secret, f$nthreads, noise)
  sizes <- nonempty_sizes(f$id)
  finish_release(f$df, data, f$vars, f$strata, res$columns, f$x, f$k, format, f$check_identifiers, keep = "masked",
                 verb = "anonymise_keyed",
                 settings = list(k = f$k, size = size, vars = f$vars, strata = f$strata, held = held, noise = noise,
                                 na = f$na, small_strata = f$small_strata, format = format, keyed = TRUE),
                 counts = c(list(n = nrow(f$df), n_strata = length(sizes), min_size = min(sizes),
                                 n_groups = res$n_groups, min_group = res$min_group), f[policy_counts]))
}

# The cells the groups are formed in: the strata (ids `id`), split by the values of the
# `keys` columns of `df`; within a stratum, the cells smaller than k are pooled with the
# stratum's largest cell (the first in sort order among equals). Returns cell ids.
keyed_cells <- function(df, id, keys, strata, k) {
  if (!length(keys)) return(id)
  # by position, not by name: a user's column may carry any name
  cell <- combination_ids(c(list(id), lapply(keys, function(v) df[[v]])))
  size <- tabulate(cell)
  # the largest cell of each stratum
  o <- order(id, -size[cell], cell, method = "radix")
  largest <- cell[o][!duplicated(id[o])]
  big <- largest[match(id, id[o][!duplicated(id[o])])]
  small <- size[cell] < k
  cell[small] <- big[small]
  cell
}

# The key as raw bytes (never echoed in a message).
check_key <- function(key) {
  what <- if (is.null(key)) "nothing" else sprintf("a %s of length %d", class(key)[1L], length(key))
  # characters, not bytes: a string of 8 two-byte characters is 8 characters (a
  # passphrase's strength grows with the characters chosen, not with their encoding)
  if (is.character(key) && length(key) == 1L && !is.na(key) &&
      isTRUE(nchar(enc2utf8(key), type = "chars", allowNA = TRUE) >= 16L)) {
    return(charToRaw(enc2utf8(key)))
  }
  if (is.raw(key) && length(key) >= 16L) return(key)
  stop_arg("`key` must be the custodian's secret: a string of at least 16 characters or a raw vector ",
           "of at least 16 bytes (", what, " was given; its value is not shown).")
}

# The number of k-means starts per stratum and number of groups, and the Lloyd cap.
KEYED_RESTARTS <- 10L
KEYED_MAXIT <- 100L

# Steps 1 and 3-6 on a complete matrix x with stratum ids: the masked columns (group
# means on the x-scale, with the keyed noise of centroid_noise() when `noise`; constant
# columns copied), the number of groups and the smallest.
keyed_mask <- function(x, id, k, size, secret, nthreads = 1L, noise = FALSE) {
  x_in <- x
  tiny <- pow2_normalise(x)
  x <- tiny$x
  st <- column_scale(x)
  cols <- masked_columns(x, st)
  columns <- lapply(seq_len(ncol(x)), function(j) x[, j])
  if (!length(cols)) return(list(columns = columns, n_groups = NA_integer_, min_group = NA_integer_))
  if (length(cols) > 64L) {
    stop_arg("At most 64 varying `vars` can be masked together (", length(cols), " given); ",
             "mask them in sets of at most 64, or reduce them first.", kind = "column")
  }
  z <- z_scores(x, st)
  g <- keyed_groups(z, id, k, size, secret, nthreads)
  # exact group means, summed in a canonical order (group, then the values)
  o <- do.call(order, c(list(g$group), unname(as.data.frame(x[, cols, drop = FALSE])), method = "radix"))
  xo <- x[o, cols, drop = FALSE]
  sums <- rowsum(xo, g$group[o], reorder = TRUE)
  cnt <- tabulate(g$group, nrow(sums))
  means <- sums / cnt
  for (a in seq_along(cols)) {
    if (tiny$e[cols[a]] != 0) means[, a] <- times_pow2(means[, a], -tiny$e[cols[a]])
  }
  # step 6: the keyed noise of the group means, on the scale of the input
  if (noise) means <- centroid_noise(x_in[, cols, drop = FALSE], g$group, means, secret)
  for (a in seq_along(cols)) columns[[cols[a]]] <- means[g$group, a]
  list(columns = columns, n_groups = nrow(sums), min_group = min(cnt))
}

# The keyed partition of every stratum (steps 3 and 4): z the n x d z-scores, id the
# strata (1..S, gaps allowed), k the smallest group, size the mean group size, secret the
# raw key. Each block's within-group sum of squares (SSE) is measured for a grid of group
# counts around its proportional share n_b / size (keyed_grid()), interpolated between them
# (log SSE linear in log count), and the budget is given to the largest drops of SSE (each
# block's drops made non-increasing, so that this is the greedy allocation); then each
# block is partitioned once with its count. The grid and the partitions are two C calls
# over all blocks (threads over blocks); the partitions start from the grid's k-means++
# seeds. Returns list(group = 1..G per row, per_stratum = groups per block).
keyed_groups <- function(z, id, k, size, secret, nthreads = 1L) {
  b <- keyed_gains(z, id, k, size, secret, nthreads)
  cur <- keyed_allocate(b$gains, max(length(b$gains), round(nrow(z) / size)))
  keyed_partition(b, cur, nrow(z), k, nthreads)
}

# The blocks of every stratum (strata in the order of their ids, keyed_stratum_blocks()) as
# one matrix `zb` of their rows `rows` (block after block), with the blocks' sizes, offsets
# and numbers of distinct points.
keyed_layout <- function(z, id, k, secret, nthreads = 1L) {
  blocks <- keyed_stratum_blocks(z, id, k, secret, nthreads)
  rows <- unlist(blocks, use.names = FALSE)
  n <- length(rows)
  zb <- z[rows, , drop = FALSE]
  size_b <- lengths(blocks)
  off <- c(0L, cumsum(size_b))
  # the distinct points of every block: in canonical order, equal points are adjacent
  new <- c(TRUE, rowSums(zb[-1L, , drop = FALSE] != zb[-n, , drop = FALSE]) > 0L)
  new[off[-length(off)] + 1L] <- TRUE
  list(rows = rows, zb = zb, size = size_b, off = off,
       distinct = tabulate(rep(seq_along(blocks), size_b)[new], length(blocks)))
}

# The keyed k-means of every block of `b` (keyed_layout()) for its counts `grids` (a list,
# one increasing vector per block): the SSE of every count (after at most `maxit` Lloyd
# iterations) and the k-means++ seeds of the restarts for the largest, which do not depend
# on `maxit` (src/keyed.c, threads over blocks).
keyed_run_grid <- function(b, grids, k, secret, nthreads = 1L, maxit = KEYED_MAXIT) {
  .Call(C_ffi_keyed_grid, b$zb, as.integer(b$off), as.integer(unlist(grids)),
        as.integer(c(0L, cumsum(lengths(grids)))), as.integer(k), KEYED_RESTARTS, as.integer(maxit), secret,
        nthreads)
}

# Step 3: keyed_layout() with, for every block, the drops of its SSE for one group more
# (`gains`), and the grid's seeds (`seeds`, for the largest count `gmax`) that the
# partitions start from. The partitioned path (keyed_plan()) runs it stratum by stratum and
# hands the budget out over all of them.
keyed_gains <- function(z, id, k, size, secret, nthreads = 1L) {
  b <- keyed_layout(z, id, k, secret, nthreads)
  grids <- lapply(seq_along(b$size), function(i) {
    keyed_grid(b$size[i] / size, max(1L, min(b$size[i] %/% k, b$distinct[i])))
  })
  fit <- keyed_run_grid(b, grids, k, secret, nthreads)
  sses <- split(fit$sse, rep(seq_along(grids), lengths(grids)))
  b$gains <- lapply(seq_along(grids), function(i) {
    sse <- sses[[i]]
    ok <- sse >= 0
    grid <- grids[[i]][ok]
    cmax <- max(grid)
    # the best SSE with at most c groups, interpolated on the log-log scale
    sse <- cummin(sse[ok])
    floor_ <- 1e-12 * sse[1L] + 1e-300
    curve <- if (length(grid) == 1L) sse else {
      exp(stats::approx(log(grid), log(sse + floor_), xout = log(seq_len(cmax)))$y) - floor_
    }
    if (cmax > 1L) pmax(cummin(-diff(curve)), 0) else numeric()
  })
  b$seeds <- fit$seeds
  b$gmax <- vapply(grids, function(g) g[length(g)], 1L)
  b
}

# The rows of every block of every stratum (strata in the order of their ids).
keyed_stratum_blocks <- function(z, id, k, secret, nthreads = 1L) {
  # canonical order within each stratum: by the values, so that the result does not depend
  # on the row order; strata above KEYED_BLOCK records split into blocks (keyed_blocks())
  unlist(lapply(sort(unique(id)), function(s) {
    r <- which(id == s)
    o <- do.call(order, c(unname(as.data.frame(z[r, , drop = FALSE])), method = "radix"))
    r <- r[o]
    lapply(keyed_blocks(z[r, , drop = FALSE], k, secret, nthreads), function(b) r[b])
  }), recursive = FALSE)
}

# Step 4: the budget to the largest drops (ties: the first block, the smaller count); the
# number of groups of every block.
keyed_allocate <- function(gains, budget) {
  flat <- unlist(gains, use.names = FALSE)
  who <- rep(seq_along(gains), lengths(gains))
  step <- unlist(lapply(gains, seq_along), use.names = FALSE)
  take <- order(-flat, who, step)[seq_len(min(length(flat), budget - length(gains)))]
  take <- take[flat[take] > 0]
  1L + tabulate(who[take], length(gains))
}

# Every block of `b` (keyed_gains(), or keyed_layout() with the seeds of a grid run)
# partitioned with its number of groups `cur`, from the seeds of the grid; the groups
# numbered block after block (n rows in all).
keyed_partition <- function(b, cur, n, k, nthreads = 1L) {
  gi <- .Call(C_ffi_keyed_partition, b$zb, as.integer(b$off), as.integer(cur), as.integer(b$gmax), b$seeds,
              as.integer(k), KEYED_RESTARTS, KEYED_MAXIT, nthreads)
  per <- vapply(split(gi, rep(seq_along(b$size), b$size)), max, 1L)
  group <- integer(n)
  group[b$rows] <- gi + rep(c(0L, cumsum(per)[-length(per)]), b$size)
  list(group = group, per_stratum = unname(per))
}

# The blocks of a large stratum (zs, in canonical order): split in two by the keyed
# 2-means (halves of at least k records) until every block holds at most KEYED_BLOCK
# records, so that the cost grows with n, not n^2. A list of row positions in zs, each in
# canonical order.
KEYED_BLOCK <- 1000L
keyed_blocks <- function(zs, k, secret, nthreads = 1L) {
  todo <- list(seq_len(nrow(zs)))
  done <- list()
  while (length(todo)) {
    b <- todo[[1L]]
    todo <- todo[-1L]
    if (length(b) <= KEYED_BLOCK) {
      done[[length(done) + 1L]] <- b
      next
    }
    fit <- .Call(C_ffi_keyed_kmeans, zs[b, , drop = FALSE], 2L, k, KEYED_RESTARTS, KEYED_MAXIT, secret,
                 nthreads)
    if (fit$sse < 0 || max(fit$group) < 2L) {
      done[[length(done) + 1L]] <- b
      next
    }
    todo <- c(todo, list(b[fit$group == 1L], b[fit$group == 2L]))
  }
  done
}

# The group counts measured for a stratum whose proportional share is `share` groups and
# which allows at most `cmax`: every count up to three times the share when that is at most
# 48, else 1, cmax and the share times 2^(-1.5, -1, ..., 1.5).
keyed_grid <- function(share, cmax) {
  full <- min(cmax, ceiling(3 * share))
  if (full <= 48L) return(seq_len(max(1L, full)))
  g <- round(share * 2^seq(-1.5, 1.5, by = 0.5))
  sort(unique(pmin(pmax(c(1L, as.integer(g), cmax), 1L), cmax)))
}
