#' One-to-one assignment attack within strata
#'
#' The maximum-knowledge intruder of Domingo-Ferrer and Muralidhar's permutation paradigm:
#' it holds the originals of the keys (see [intruder()]) and, knowing that the release
#' holds every person exactly once, matches original and released records *one-to-one*
#' within each cell (stratum, and categorical keys), at the least total cost, the squared
#' Euclidean distance on the z-scale of the original data. Unlike nearest-record linkage,
#' two people cannot claim the same released record: once the easy matches are made, the
#' rest fall into place.
#'
#' @section The solver:
#' Cells of at most `limit` records are solved exactly (the shortest augmenting path
#' algorithm of Jonker and Volgenant, in the rectangular form of Crouse; equal to
#' `clue::solve_LSAP()`). Larger cells use a sparse assignment over candidate pairs, in
#' which identical records are one group on either side (the released records sharing one
#' point, as under [anonymise_mdav()] or [anonymise_keyed()], and duplicate originals): a
#' group of released records takes as many originals as it holds, a group of originals
#' places as many (a transportation problem, equal in cost to the one-to-one assignment).
#' The candidates are the `candidates` nearest released groups of every group of originals
#' and the `candidates` nearest groups of originals of every released group (kd-trees over
#' the distinct points; points tied with the last candidate are added too). A group the
#' candidates cannot match gets twice as many, until all are matched (but see the auction
#' below). Then, for up to `rounds` rounds of column generation, a search over every group
#' (not only the candidates) looks for pairs of negative reduced cost under the dual
#' solution (skipped for a group whose two least values over its candidates are at most the
#' distance of its nearest group off them, which bounds every other value, until one of its
#' records has a better pair); for every group of originals with one, its `candidates` (at
#' least 2) least such pairs per record of the group are added (doubled for every earlier
#' round that added it pairs, as long as a round adds at most `candidates` pairs per record of
#' the cell) and the cell is solved again: from its duals, or from zero when 1 record in 8 or
#' more had a better pair or the round did not lower the cost (on tied releases the records
#' that needed more candidates raise the duals of the groups they reach far beyond the cell's
#' costs, the least reduced costs then point at those groups, not at the optimal ones, and
#' such duals kept showing better pairs at the optimal cost). Every round gives a
#' feasible dual solution of the full problem and so a lower bound of its optimal cost: the
#' result reports the cost, the bound and the gap (0 when the sparse solution is proven
#' optimal).
#'
#' When the candidates leave 1 record in 20 or more unmatched in a cell with as many
#' originals as released records (and `rounds` > 0), as on noisy releases of small groups
#' ([anonymise_mdav()] with `noise = TRUE`, where the optimal pairs reach hundreds of groups
#' past the nearest), the cell is solved again from near-optimal duals instead: an
#' epsilon-scaling auction (Bertsekas) over every released group, started from the prices
#' under which the affine map of the originals' means and deviations onto the released
#' records' (per variable) is the best assignment, whose bids take the best
#' and second best group of least distance + price from a list of `2 x candidates` groups
#' per original, searched again in a kd-tree weighted by the prices when a group off the
#' list could beat them (first in a kd-tree of the prices' quadratic trend, the groups'
#' points scaled per variable and lifted by the rest of each price, fitted again as the
#' prices rise; its list is used when it is provably the same as the plain search's). The
#' pairs of those lists and of the auction's assignment become the
#' candidates, the exact augmenting paths start from the auction's prices, and column
#' generation proves the optimum as above. The optimal cost and the confidence (see "Ties")
#' are the same; the choice among different records at equal total cost may differ from a
#' solve without the auction. Its time grows faster than the cell
#' (noisy MDAV, k = 3, 4 variables: about 1.2 s of CPU for 5,000 records, 25 s for
#' 25,000).
#'
#' Memory: O(n d) for the points and O(n x `candidates`) candidate pairs per cell (n its
#' records), whatever the ties (the auction adds at most 2 x `candidates` + 1 pairs per
#' record, and O(n) prices); only the records the candidates cannot match get more. The
#' buffers are made for the largest cell and used by every cell in turn, so a call needs the
#' memory of its largest cell, not of all its cells. Time: a search passes through a group
#' of tied records once, not once per record.
#'
#' @section Ties:
#' Identical records are interchangeable: when several originals (or several released
#' records) of a cell have the same values, any assignment that permutes them is as good,
#' and the success of a record is the expected share over those permutations: with `H` the
#' originals identical to the record's, `G` the released records identical to its own
#' released record and `n` the number of originals of `H` assigned into `G`, it is
#' `n / (|H| |G|)`. Other ties (different records at equal total cost) are not averaged
#' over: the success is that of *one* optimal assignment, the one the solver finds, with
#' identical records averaged over; which one it finds may depend on the solver's path
#' (candidates, expansion, rounds, auction). The cost, the bound (to rounding) and the
#' confidence do not depend on it. How much the success varied in our runs, between solvers
#' that both proved the optimum (Titanic resampled to 100,000 records, rounded ages and fares):
#' on MDAV k = 10 without noise 49 of 100,000 records differed, by at most 0.0023, the rate by
#' 1e-6; on `anonymise()` k = 3 and MDAV k = 30 without noise, none.
#'
#' The confidence of a claim is its *regret*: a lower bound of how much the total cost
#' would rise if the record were assigned elsewhere, the least reduced cost of another
#' released record under the *greatest* optimal dual solution (the released records' duals
#' v <= 0, each as large as any optimal dual allows; infinite when the cell has one released
#' record, 0 when its released record shares its point with others, as under shared
#' centroids, and 0 for the records of a cell with more originals than released records).
#' The optimal duals are not unique, and the solver's own depend on its path (expansion,
#' rounds, the auction), the candidates and the order of the rows; their greatest is a
#' function of the cell's records only, the same for every optimal assignment, so the
#' confidence is the same whatever the solver, the thread count and the row order. It is
#' computed after the solve, from the solver's duals, by a Dijkstra over the released groups
#' whose steps are searches of their kd-tree weighted by the duals (about one more round of
#' column generation; skipped where every regret is 0). When the assignment is not proven
#' optimal (a `gap` after `rounds` rounds), it is the greatest dual of the assignment found if
#' one exists, else the solver's.
#'
#' @section What it does not cover:
#' An intruder who knows the algorithm (see [attack_recipe()]), probabilistic weights
#' (see [attack_fellegi_sunter()]), averaging over assignments that tie at equal cost but
#' differ in more than identical records, and attribute inference.
#' @inheritParams risk_battery
#' @param limit Cells up to this many records (on the larger side) are solved exactly;
#'   larger ones by the sparse assignment.
#' @param candidates Candidate released records per original (and originals per released
#'   record) in the sparse assignment, a whole number >= 1.
#' @param rounds Rounds of column generation in the sparse assignment, at most (0: none,
#'   only the bound).
#' @return An object of class `detanon_attack` (see [risk_battery()]); its `details` hold
#'   `cost` (the total squared distance of the assignment), `bound` (a lower bound of the
#'   optimal total), `gap` (`cost - bound`, 0 when proven optimal), `n_sparse` (cells solved
#'   by the sparse assignment) and `n_expanded` (records that needed more candidates).
#' @references Domingo-Ferrer J, Muralidhar K (2016). New directions in anonymization:
#'   permutation paradigm, verifiability by subjects and intruders, transparency to users.
#'   *Information Sciences* 337, 11-24.
#'
#'   Jonker R, Volgenant A (1987). A shortest augmenting path algorithm for dense and sparse
#'   linear assignment problems. *Computing* 38, 325-340.
#'
#'   Crouse DF (2016). On implementing 2D rectangular assignment algorithms. *IEEE
#'   Transactions on Aerospace and Electronic Systems* 52(4), 1679-1696.
#' @examples
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' masked <- anonymise(d, k = 3, vars = c("Age", "Fare"),
#'                     strata = c("Pclass", "Sex", "Family"))
#' attack_assignment(d, masked, seed = 1)
#' @family attacks
#' @export
attack_assignment <- function(original, masked, intruder = NULL, limit = 2000, candidates = 5,
                              rounds = 10, m = 3, control = TRUE,
                              nthreads = getOption("detanon.nthreads", 1L), seed = NULL) {
  limit <- check_whole(limit, "limit", min = 1)
  candidates <- check_whole(candidates, "candidates", min = 1)
  rounds <- check_whole(rounds, "rounds", min = 0)
  attack_verb(assignment_spec(), list(limit = limit, candidates = candidates, rounds = rounds),
              original, masked, intruder, m, control, seed, nthreads)
}

# The registry entry of the attack (battery_attacks()).
assignment_spec <- function() {
  list(label = "one-to-one assignment within strata", fun = "attack_assignment",
       args = list(limit = 2000, candidates = 5, rounds = 10), core = assignment_core,
       needs_sensitive = FALSE)
}

# The intruder's originals (rows) assigned one-to-one to the released records (columns)
# within cells; success from the assignment with identical records averaged over.
assignment_core <- function(s, m, nthreads, limit = 2000, candidates = 5, rounds = 10, ...) {
  zo <- cbind(s$zo, key_z(s, "original"))
  zm <- cbind(s$zm, key_z(s, "masked"))
  n <- s$n
  rows <- which(s$known)
  res <- assignment_solve(s, zo, zm, rows, limit, candidates, rounds, nthreads)
  success <- confidence <- rep(NA_real_, n)
  success[rows] <- assignment_success(res$col, rows, zo, zm, s$cell_o, s$cell_m, assignment_groups(s, zo, zm, rows))
  reg <- res$regret[rows]
  confidence[rows] <- ifelse(is.na(reg), 0, reg)
  cost <- sum(res$cost)
  bound <- sum(res$bound)
  list(success = success, confidence = confidence,
       cost = cost, bound = bound, gap = max(0, cost - bound),
       n_sparse = sum(res$sparse), n_expanded = sum(res$fallback),
       not_covered = paste("an intruder who knows the algorithm, probabilistic weights, averaging",
                           "over assignments that tie at equal cost (other than identical records),",
                           "attribute inference."))
}

# assign_cells() on the view, once for the view and its control: the control release is the
# same released records within the same cells, only their rows permuted (battery_permute(),
# `s$perm`), so its one-to-one assignment is the attack's with the released rows relabelled
# (the same problem: the same cost, bound and regrets). The attack's solution is kept in
# `s$shared` (view_shared()) and the control's derived from it when the control's released
# records are the attack's permuted by `s$perm` (and then dropped: run_attack() runs the
# view, then its control, so it is held between the two only); otherwise solved.
assignment_solve <- function(s, zo, zm, rows, limit, candidates, rounds, nthreads) {
  memo <- s$shared
  inputs <- list(zo = zo, rows = rows, cell_o = s$cell_o, settings = c(limit, candidates, rounds))
  prev <- if (is.environment(memo)) memo$assignment
  if (!is.null(s$perm) && !is.null(prev) && identical(prev$inputs, inputs) &&
      identical(prev$zm[s$perm, , drop = FALSE], zm) && identical(prev$cell_m[s$perm], s$cell_m)) {
    rm("assignment", envir = memo) # used once: not held for the other attacks
    inv <- integer(length(s$perm))
    inv[s$perm] <- seq_along(s$perm)
    res <- prev$res
    res$col <- inv[res$col] # NA (not assigned) stays NA
    return(res)
  }
  res <- assign_cells(zo, zm, rows, s$cell_o, s$cell_m, limit, candidates, rounds, nthreads)
  if (is.environment(memo) && is.null(s$perm)) {
    memo$assignment <- list(inputs = inputs, zm = zm, cell_m = s$cell_m, res = res)
  }
  res
}

# The assignment of originals `rows` (of zo, in cells cell_o) to every released record (of
# zm, in cells cell_m), cell by cell, in C. Returns ffi_assign()'s list: col (for every row
# of zo: the row of zm assigned, NA if none), regret, and per cell cost, bound, sparse,
# fallback, rounds.
assign_cells <- function(zo, zm, rows, cell_o, cell_m, limit, candidates, rounds, nthreads) {
  storage.mode(zo) <- storage.mode(zm) <- "double"
  levels <- sort(unique(c(cell_o[rows], cell_m)))
  co <- match(cell_o[rows], levels)
  cm <- match(cell_m, levels)
  k <- length(levels)
  r_order <- rows[order(co, method = "radix")]
  c_order <- order(cm, method = "radix")
  r_off <- c(0L, cumsum(tabulate(co, k)))
  c_off <- c(0L, cumsum(tabulate(cm, k)))
  .Call(C_ffi_assign, zo, zm, as.integer(r_order), as.integer(r_off), as.integer(c_order),
        as.integer(c_off), as.double(limit), as.integer(candidates), as.integer(rounds), nthreads)
}

# Group ids of identical rows of z within cells (ids shared by rows with the same cell and
# the same values in every column).
identical_groups <- function(cell, z) {
  n <- length(cell)
  if (!n) return(integer())
  cols <- c(list(cell), lapply(seq_len(ncol(z)), function(j) z[, j]))
  o <- do.call(order, c(cols, list(method = "radix")))
  new <- rep(FALSE, n)
  new[1L] <- TRUE
  for (v in cols) {
    vo <- v[o]
    new[-1L] <- new[-1L] | vo[-1L] != vo[-n]
  }
  g <- integer(n)
  g[o] <- cumsum(new)
  g
}

# The groups of identical records of assignment_success(): list(h, g), h of the originals
# `rows` (zo, within s$cell_o), g of every released record (zm, within s$cell_m). The control
# takes the view's (control_keep(), control_take()): the same originals, and its released
# records the view's with rows permuted, so its row p is in the view's group of row
# s$perm[p] (a group's id is the place of its values among the distinct ones, whatever the
# rows' order).
assignment_groups <- function(s, zo, zm, rows) {
  inputs <- list(zo = zo, rows = rows, cell_o = s$cell_o)
  prev <- control_take(s, "assignment groups", list(zm, s$cell_m))
  if (!is.null(prev) && identical(prev$inputs, inputs)) return(list(h = prev$h, g = prev$g[s$perm]))
  rm(prev)
  h <- identical_groups(s$cell_o[rows], zo[rows, , drop = FALSE])
  g <- identical_groups(s$cell_m, zm)
  control_keep(s, "assignment groups", list(inputs = inputs, h = h, g = g), list(zm, s$cell_m))
  list(h = h, g = g)
}

# Expected success of each known row under a uniform relabelling of identical records:
# n(H, G) / (|H| |G|), H the row's group of identical originals, G the group of identical
# released records holding its own released record, n(H, G) the rows of H assigned into G.
# `groups`: the groups when made already (assignment_groups()).
assignment_success <- function(col, rows, zo, zm, cell_o, cell_m, groups = NULL) {
  h <- if (is.null(groups)) identical_groups(cell_o[rows], zo[rows, , drop = FALSE]) else groups$h
  g <- if (is.null(groups)) identical_groups(cell_m, zm) else groups$g
  a <- col[rows]
  ok <- !is.na(a)
  # one number per (H, G) pair (exact: below 2^53 for any n R can hold), not text
  base <- as.double(max(c(0L, g)) + 1L)
  pairs <- h[ok] * base + g[a[ok]]
  u <- unique(pairs)
  counts <- tabulate(match(pairs, u), length(u))
  n_hg <- counts[match(h * base + g[rows], u)]
  n_hg[is.na(n_hg)] <- 0
  size_h <- tabulate(h)[h]
  size_g <- tabulate(g)[g[rows]]
  n_hg / (size_h * size_g)
}
