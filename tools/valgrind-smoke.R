# Exercises every native entry point on small data, for valgrind memcheck (tools/sanitize.sh).
library(detanon)
set.seed(1)
n <- 300
d <- data.frame(g = factor(sample(c("a", "b"), n, TRUE)), h = factor(sample(1:3, n, TRUE)),
                x1 = rnorm(n), x2 = round(rexp(n), 1), x3 = runif(n))
vars <- c("x1", "x2", "x3")
for (nt in 1:2) {
  m <- anonymise(d, k = 4, vars = vars, strata = c("g", "h"), nthreads = nt)
  r <- risk_rmd(d, m, vars = vars, deterministic = TRUE, nthreads = nt)
  l <- risk_linkage(d, m, vars = vars, strata = c("g", "h"), nthreads = nt)
}
big <- data.frame(x1 = rnorm(5000), x2 = rnorm(5000)) # one stratum on the parallel query path
invisible(anonymise(big, k = 3, strata = character(), nthreads = 2))
# large strata of unequal sizes, more than the threads: their trees in rounds, memory reused;
# the release forms of all columns in one threaded pass (kk > 64: a buffer per thread)
gl <- data.frame(g = rep(c("p", "q", "r"), c(4200, 5000, 4100)), x1 = rnorm(13300), x2 = rexp(13300))
invisible(anonymise(gl, k = 3, strata = "g", nthreads = 2))
fs <- .Call(detanon:::C_ffi_form_stats_cols, as.matrix(gl[2:3]), 70, 2L)
# the search's scratch memory kept between calls: reused at the same size, used then shrunk
# by a call needing less than a quarter of it, partly used then grown by a larger call
invisible(anonymise(gl, k = 3, strata = "g", nthreads = 2))
invisible(anonymise(d, k = 4, vars = vars, strata = c("g", "h"), nthreads = 2))
invisible(anonymise(gl, k = 3, strata = "g", nthreads = 1))
# the natural form's map written over the squeezed values
fa <- detanon:::apply_fit(gl$x1 + 0, list(L = -1, U = 1, a = 0.1, b = 0.9, tL = -Inf, tU = Inf), 2L, into = TRUE)
# the release form's squeeze in blocks of rows, the finite check, the matrix of columns and the
# fingerprint's checksums, over threads (integer NA, logical, a matrix column, other types)
sq <- detanon:::form_squeeze(c(-40, gl$x1, 30), -1, 1, 2L)
gl$i <- c(NA, seq_len(13299))
gl$l <- gl$x1 > 0
fc <- detanon:::finite_columns(gl, names(gl))
nm <- detanon:::numeric_matrix(gl, c("x1", "i", "l"), 2L)
gl$m <- matrix(1, 13300, 2)
ck <- detanon:::fast_checksums(as.list(gl), 2L)
a <- assess(d, m, vars = vars, strata = c("g", "h"), deterministic = TRUE)
cl <- equivalence_classes(d, k = 5, quasi = c("x1", "x2"), strata = "g")
kp <- anonymise_keps(d, epsilon = 2, k = 5, vars = "x3", quasi = c("x1", "x2"), strata = "g",
                     confidence = 0.9)
e <- keps_error(d, epsilon = c(1, 2), k = 5, vars = "x3", quasi = c("x1", "x2"), strata = "g")
z <- scale(as.matrix(d[vars]))
idx <- .Call(detanon:::C_ffi_knn_index, z, order(d$g), c(0, cumsum(tabulate(d$g))), 5L, 2L)
lap <- .Call(detanon:::C_ffi_rlaplace, 1000, 2)
cs <- detanon:::col_stats(matrix(c(rnorm(3000), 1e300, -1e300), ncol = 2), 2L) # long: delayed carries
# several blocks of rows on two threads: the column statistics, step 5 with the centroids'
# exact SDs (one column flat), the natural form's sums
cs3 <- detanon:::col_stats(cbind(rnorm(20000), rexp(20000)), 2L)
r5 <- .Call(detanon:::C_ffi_rescale, cbind(rnorm(20000), 1), c(1, 2), c(3, 4), NULL, 2L)
fs3 <- .Call(detanon:::C_ffi_fit_sums, NULL, rnorm(20000), c(-2, 2, 0, 1, -1, 1, 0.1, 0.1, -5, 5), 0, FALSE, 2L)
# large k: heap of neighbours, chunked heavy stratum with stratum-order sums, index at k = 30
invisible(suppressWarnings(anonymise(big[1:1100, ], k = 1000, strata = character(), nthreads = 2)))
idx30 <- .Call(detanon:::C_ffi_knn_index, z, order(d$g), c(0, cumsum(tabulate(d$g))), 30L, 2L)
# the recipe's centroids at several k from one search (k above a stratum's size: NA rows;
# heap mode, chunks of queries on two threads)
cm <- detanon:::strata_centroids_multi(z, as.integer(d$g), c(2L, 5L, 30L, 200L), 2L)
cm2 <- detanon:::strata_centroids_multi(as.matrix(big), rep(1L, 5000), 1:40, 2L)
# progress bars drawn from the native loops
old <- options(detanon.progress = TRUE, cli.progress_show_after = 0)
invisible(suppressMessages(anonymise(big, k = 40, strata = character(), nthreads = 2)))
options(old)
thr <- .Call(detanon:::C_ffi_threads, 2L, 1e6)
# cluster stirring: clusters, centroids, nearest cluster (blend) and shuffles
sc <- stir_clusters(d, quasi = c("x1", "x2"), strata = "g", eps = c(0.5, 0.5))
b <- suppressMessages(blend_outliers(d, vars = c("x1", "x2"), classes = sc, k = 3, method = "noise", seed = 1))
s <- suppressMessages(stir(d, vars = vars, classes = sc, k = 3, small_strata = "blend", seed = 1))
f <- stir(d, vars = c(vars, "h"), strata = "g", method = "flatten")
# distance map: the knots counted in C (all distinct distances, and the selected ones)
dm <- distance_map(d, vars = c("x1", "x2"), n_sample = 300, n_knots = 16)
dm2 <- distance_map(data.frame(v = rep(1:3, 5)), vars = "v")
# OLA: dense, hashed and compressed (radix product past 2^62) class counts
ola <- equivalence_classes(d, k = 5, quasi = c("g", "h"), strata = character(), method = "ola",
                           loss = "entropy")
wide <- as.data.frame(lapply(stats::setNames(1:7, paste0("v", 1:7)), function(j) sample(1500L, n, TRUE)))
ola_w <- equivalence_classes(wide, k = 2, quasi = names(wide), strata = character(), method = "ola",
                             max_suppression = 1, loss = "discernibility")
kp2 <- anonymise_keps(d, epsilon = 2, vars = "x3", classes = ola, confidence = 0.9)
# rank index (top-m linkage, replay), adaptive k (stages, k per stratum, interval test) and
# the search that shares one index between its candidates
l3 <- risk_linkage(d, m, vars = vars, strata = c("g", "h"), m = 3, nthreads = 2)
rp <- risk_replay(d, m, vars = vars, strata = c("g", "h"), p = c(1, 0.5), seed = 1)
# tied originals and released points counted as groups (a NaN-free tie-heavy copy)
dt <- d; dt$x1 <- round(dt$x1); dt$x3 <- round(dt$x3)
lt <- risk_linkage(dt, anonymise_mdav(dt, vars = vars, strata = "g", k = 5, noise = FALSE),
                   vars = vars, strata = "g", m = 3, nthreads = 2)
ad <- anonymise_adaptive(d, vars = vars, strata = c("g", "h"), k = 2, k_max = c(20, 40), m = 3,
                         rate = c(0.4, 0.2), w1 = 0.01, nthreads = 2, check_identifiers = FALSE)
# more than 2048 records on two threads, caps beyond the 64 neighbours kept per grown
# record, and stages resumed from the one before
adl <- anonymise_adaptive(gl[seq(1, 13300, by = 3), ], vars = c("x1", "x2"), strata = "g", k = 2,
                          k_max = c(20, 90), m = 3, rate = c(0.4, 0.1), nthreads = 2, check_identifiers = FALSE)
tab <- unique(d[c("g", "h")]); tab$k <- 3 + seq_len(nrow(tab))
at <- anonymise_adaptive(d, vars = vars, strata = c("g", "h"), k = tab, k_max = 20, m = 0,
                         check_identifiers = FALSE)
# several k from one search (the search's rungs of k per stratum)
pr <- detanon:::adaptive_setup(d, vars, c("g", "h"), rmd = FALSE, nthreads = 2)
rg <- detanon:::adaptive_rungs(pr, sapply(c(3L, 7L, 30L), function(k) pmin(k, pr$sizes[pr$id])), 2)
# the partitioned adaptive method: the steps of its rounds on each group (centroids, tests)
pa <- anonymise_partitioned(split(d, rep(1:3, length.out = n)), vars = vars, strata = c("g", "h"), k = 2,
                            method = "adaptive", k_max = c(20, 40), m = 3, rate = c(0.4, 0.2), group_size = 100,
                            future = FALSE, check_identifiers = FALSE, nthreads = 2)
# (seed = NULL: the search stays in this process; its forks, R code around the same kernels,
# are not run under valgrind, where a child of parallel::mcparallel() or mclapply() in an
# `R -f` script returns to the script and runs the rest of it: base R alone does this, with a
# 12-line script of mcparallel(), mclapply() and pskill(), and not without valgrind)
tu <- suppressWarnings(tune_release(d, vars = vars, strata = c("g", "h"), linkage = 0.2, top_m = 0.5,
                                   risk1 = 1, risk2 = 1, nthreads = 2, seed = NULL))
# the risk battery: capped ranks, NNDR (2 nearest), neighbour sets (categorical and
# numeric, heap and radius paths, leave-out), singling out
bm <- m
bm$h2 <- sample(c("u", "v"), n, TRUE); bd <- d; bd$h2 <- bm$h2
bat <- risk_battery(bd, bm, intruder = intruder(vars = vars, strata = c("g", "h")), sensitive = "h2",
                    seed = 1, nthreads = 2)
inf30 <- attack_inference(d, m, sensitive = "x3", intruder = intruder(vars = c("x1", "x2"), strata = "g"),
                          m = 30, nthreads = 2)
# the battery's assignment (dense, sparse with column generation and expansion), the
# nearest-in-cells lookup (recipe, Fellegi-Sunter candidates)
as1 <- attack_assignment(d, m, intruder = intruder(vars = vars, strata = c("g", "h")), seed = 1)
as2 <- attack_assignment(d, m, intruder = intruder(vars = vars, strata = "g", p = 0.5), limit = 10,
                         candidates = 1, rounds = 5, seed = 1, nthreads = 2)
# a noisy MDAV release: several new edges per row group and round of column generation
nm <- anonymise_mdav(d, k = 3, vars = c("x1", "x2"), noise = TRUE)
as3 <- attack_assignment(d, nm, intruder = intruder(vars = c("x1", "x2")), limit = 10, candidates = 3,
                         control = FALSE)
# the auction's restart of square cells (noisy MDAV k = 5, one candidate: the nearest
# groups leave many records unmatched)
as4 <- attack_assignment(d, anonymise_mdav(d, k = 5, vars = vars, noise = TRUE), intruder = intruder(vars = vars),
                         limit = 10, candidates = 1, control = FALSE)
# the auction's lists from the tree of the prices' trend (noisy MDAV k = 3, two candidates:
# 100 groups, lists of 4), and the pricing that skips the groups their candidates prove
as5 <- attack_assignment(d, anonymise_mdav(d, k = 3, vars = vars, noise = TRUE), intruder = intruder(vars = vars),
                         limit = 10, candidates = 2, control = FALSE)
# searches that fail into closed full regions (skipped once a failed search closed them) and
# row groups numbered in tree order: noisy MDAV of groups of 10 with duplicate originals, one
# candidate, on one and on two threads
dd <- d[c(seq_len(n), 1:40), ]
for (nt in 1:2) {
  as6 <- attack_assignment(dd, anonymise_mdav(dd, k = 10, vars = vars, noise = TRUE, check_identifiers = FALSE),
                           intruder = intruder(vars = vars), limit = 10, candidates = 1, control = FALSE,
                           nthreads = nt)
}
# the auction in all six cells of one call (noisy MDAV in strata, one candidate): its buffers
# made on the first auction (a cell of 22 records), grown for the next (51), used by the others
ds <- d[d$g != "a" | d$h != 1 | seq_len(n) %% 3 == 0, ]
am <- anonymise_mdav(ds, k = 5, vars = vars, strata = c("g", "h"), noise = TRUE)
as8 <- attack_assignment(ds, am, intruder = intruder(vars = vars, strata = c("g", "h")), limit = 10,
                         candidates = 1, control = FALSE)
# the confidence from the greatest optimal dual (canon_dual()) on a plain release (released
# records of their own): square sparse cells after expansion and rounds (as1: dense cells;
# as2: rectangular sparse ones)
as7 <- attack_assignment(d, m, intruder = intruder(vars = vars, strata = "g"), limit = 10, candidates = 1,
                         control = FALSE)
# a tied release (Titanic resampled, whole-year ages, fares to the cent; anonymise(k = 10)):
# rounds of column generation solved again from zero duals, groups of several identical
# originals given edges in proportion to their size
set.seed(2)
tt <- titanic_paper()[-1]
tt <- tt[sample(nrow(tt), 3000, TRUE), ]
tt$Age <- round(pmax(0.5, tt$Age + rnorm(3000, 0, 3)))
tt$Fare <- round(pmax(0, tt$Fare * exp(rnorm(3000, 0, 0.2))), 2)
tm <- anonymise(tt, k = 10, vars = c("Age", "Fare"), strata = "Pclass", check_identifiers = FALSE)
as9 <- attack_assignment(tt, tm, intruder = intruder(vars = c("Age", "Fare"), strata = "Pclass"), limit = 50,
                         candidates = 2, control = FALSE)
stopifnot(as9$details$gap < 1e-9 * as9$details$cost)
# the buffers the assignment grows (host->grow: malloc'd, each freed when a larger one replaces
# it, the rest by the cleanup): noisy MDAV of the tied sample in three cells of unequal sizes,
# one candidate (expansion, the auction's lists and the stores of edges made again per cell)
tm2 <- anonymise_mdav(tt, k = 5, vars = c("Age", "Fare"), strata = "Pclass", noise = TRUE, check_identifiers = FALSE)
as10 <- attack_assignment(tt, tm2, intruder = intruder(vars = c("Age", "Fare"), strata = "Pclass"), limit = 50,
                          candidates = 1, control = FALSE)
# the auction on a tied noisy MDAV release (the same resampled Titanic, groups of 10 with the
# keyed noise, one candidate): identical originals against shared centroids, the auction's
# coarse last epsilon, then the exact paths and the rounds prove the optimum
tn <- anonymise_mdav(tt, k = 10, vars = c("Age", "Fare"), strata = "Pclass", noise = TRUE,
                     key = "valgrind-smoke-key-0123456789", check_identifiers = FALSE)
as11 <- attack_assignment(tt, tn, intruder = intruder(vars = c("Age", "Fare"), strata = "Pclass"), limit = 50,
                          candidates = 1, control = FALSE)
stopifnot(as11$details$gap < 1e-9 * as11$details$cost)
rc <- attack_recipe(d, m, intruder = intruder(vars = vars, strata = c("g", "h"), p = 0.5, knows = "recipe"),
                    k_max = 4, seed = 1)
fs <- attack_fellegi_sunter(d, m, intruder = intruder(vars = vars, strata = "g"), max_pairs = 100,
                            candidates = 5, seed = 1)
# every pair compared, a categorical key (the patterns and claims of src/fellegi.c)
fs2 <- attack_fellegi_sunter(d, m, intruder = intruder(vars = vars, strata = "g", held = "h"), seed = 1)
# the linkage's ranks and two nearest points in one descent (src/rank.c), caps 0 to all, on
# two threads; the k nearest in cells (src/nn2.c) with an empty cell, on two threads; the
# pair codes of Fellegi-Sunter on two threads
zr <- matrix(round(stats::rnorm(3000 * 2), 1), 3000, 2)
zr[1:50, ] <- zr[51:100, ]
cr <- detanon:::cell_setup(sample(1:3, 3000, TRUE, prob = c(10, 10, 0.01)))
ir <- detanon:::rank_index(zr, cr)
for (cap in c(0, 3, 1e6)) rn <- .Call(detanon:::C_ffi_index_rank_nn2, ir, zr[sample(3000), ], rep(TRUE, 3000), cap, 2L)
# the same, and the counts of link_ranks() (capped, and lazy), with queries sharing their
# point (groups of 1 to 60, as a shared-centroid release) on a tree of many tied points (its
# distinct points searched), near-underflow and huge magnitudes, and strata of 1 and 2
zg <- zr[rep(seq_len(100), 1:100)[seq_len(3000)], ]
for (sc in c(1, 1e-160, 1e200)) {
  ig <- detanon:::rank_index(zg * sc, cr)
  for (cap in c(0, 3, 1e6)) {
    rn <- .Call(detanon:::C_ffi_index_rank_nn2, ig, zr * sc, rep(TRUE, 3000), cap, 2L)
    rn <- .Call(detanon:::C_ffi_index_rank_nn2, ir, zg * sc, rep(TRUE, 3000), cap, 2L)
  }
  for (lazy in c(FALSE, TRUE)) rk <- .Call(detanon:::C_ffi_index_rank, ig, zg[sample(3000), ] * sc, rep(TRUE, 3000), 3,
                                           2L, FALSE, lazy)
}
# queries sharing a point (groups of 3, at a distance from their points) over balls that pass
# the 2^14 where "at most as near" stops (counted level by level), on distinct and on tied
# tree points (single queries too, level by level in a stratum of 70,000), two threads
zb <- rbind(matrix(stats::rnorm(70000 * 2), 70000, 2), matrix(sample(0:8, 2 * 17000, TRUE) / 4, 17000, 2))
cb <- detanon:::cell_setup(rep(1:2, c(70000, 17000)))
qb <- zb[rep(seq(1, 87000, by = 3), each = 3)[1:87000], ] + 0.5
wb <- seq_len(87000) %% 100 < 3
ib <- detanon:::rank_index(zb, cb)
for (cap in c(3, 1e6)) rk <- .Call(detanon:::C_ffi_index_rank, ib, qb, wb, cap, 2L, FALSE, FALSE)
i12 <- detanon:::rank_index(zr[1:3, ], detanon:::cell_setup(c(1L, 2L, 2L)))
rk <- .Call(detanon:::C_ffi_index_rank_nn2, i12, zr[c(2, 2, 2), ], rep(TRUE, 3), 3, 1L)
kc <- detanon:::nearest_in_cells(zr, zr[1:2500, ], sample(1:2, 3000, TRUE), sample(1:3, 2500, TRUE), k = 10L,
                                 nthreads = 2L)
cf <- detanon:::cell_orders(sample(1:2, 3000, TRUE), sample(1:3, 2500, TRUE), sample(3000L, 2500))
fc <- .Call(detanon:::C_ffi_fs_candidates, zr, zr, matrix(1L, 3000, 1), matrix(c(1L, NA), 3000, 1), cf$t_order,
            cf$t_off, cf$q_order, cf$q_off, 10L, c(0.1, 0.3), c(1, 3, 9), 2L, TRUE)
bp <- detanon:::random_block_pairs(sample(3000L, 2000), sample(c(1L, 3L, 7L), 3000, TRUE), 50000)
kr <- .Call(detanon:::C_ffi_knn_ranks, fc$d2, sample(c(3L, 20L), 3000, TRUE), zr, zr[sample(3000), ],
            rep(c(TRUE, FALSE), 1500), 3)
# the inference's neighbour sets from the same list (categorical and numeric, leave-out, a
# set past the list's end)
kz <- sample(c(3L, 20L), 3000, TRUE)
kw <- !is.na(fc$index[, 1L]) & rep(c(TRUE, FALSE), 1500)
for (lo in c(FALSE, TRUE)) {
  kb <- .Call(detanon:::C_ffi_knn_neighbours, fc$index, fc$d2, kz, kw, 3L, lo,
              sample(c(1:3, NA), 3000, TRUE), sample(1:3, 3000, TRUE), 0, 3L)
  kb <- .Call(detanon:::C_ffi_knn_neighbours, fc$index, fc$d2, kz, kw, 12L, lo,
              round(zr[, 1], 1), zr[sample(3000), 2], 0.25, 0L)
}
# the battery's inference from Fellegi-Sunter's search of the view (no key, more than 2e7
# pairs), with the own record left out (a keyed release: no holdout)
kd <- data.frame(x1 = round(stats::rnorm(7000), 1), x2 = stats::rnorm(7000), g = sample(c("a", "b"), 7000, TRUE),
                 s = sample(c("u", "v", NA), 7000, TRUE))
kk <- anonymise_keyed(kd, vars = c("x1", "x2"), strata = "g", k = 3, key = "valgrind-smoke-key-0002", size = 6,
                      check_identifiers = FALSE)
kbat <- risk_battery(kd, kk, intruder = intruder(vars = c("x1", "x2"), strata = "g"), sensitive = "s",
                     attacks = c("linkage_original", "inference", "fellegi_sunter"), seed = 1, nthreads = 2)
fl <- .Call(detanon:::C_ffi_fs_levels, zr, zr, matrix(1L, 3000, 1), matrix(c(1L, NA), 3000, 1),
            sample(3000L, 5000, TRUE), sample(3000L, 5000, TRUE), c(0.1, 0.3), c(1, 3, 9), FALSE, 2L)
# anonymise_keyed(): the keyed k-means, its recipe intruder, and the test-only SipHash and
# uniforms
km <- anonymise_keyed(d, vars = vars, strata = "g", k = 3, key = "valgrind-smoke-key-0001", size = 6,
                      check_identifiers = FALSE)
rk <- attack_recipe(d, km, intruder = intruder(vars = vars, strata = "g", p = 0.5), seed = 1)
if (exists("C_ffi_siphash", envir = asNamespace("detanon"))) { # test-only entry points
  sh <- .Call(detanon:::C_ffi_siphash, as.raw(0:20), as.raw(0:15))
  ku <- .Call(detanon:::C_ffi_keyed_uniforms, matrix(c(1, 2, 3, 1, 2, 3), 3), 1L, charToRaw("0123456789abcdef"), 3L)
}
# anonymise_mdav(): the MDAV kernel (one stratum alone, strata in parallel, copies, a table
# of k) and its replay by the algorithm-aware intruder
for (nt in 1:2) mdc <- anonymise_mdav(rbind(d, d[1:40, ]), vars = vars, strata = c("g", "h"), k = 3,
                                      nthreads = nt, check_identifiers = FALSE)
md <- anonymise_mdav(d, vars = vars, strata = c("g", "h"), k = 3, check_identifiers = FALSE)
md1 <- anonymise_mdav(big, k = 4, strata = character(), check_identifiers = FALSE)
# (a skewed stratum of 12,000 records: renewed reference points, their order sorted a part
# at a time and extended, rebuilt trees; the means over two threads)
md2 <- anonymise_mdav(data.frame(x1 = rnorm(12000), x2 = exp(3 * rnorm(12000))), k = 3, strata = character(),
                      nthreads = 2, check_identifiers = FALSE)
mdt <- anonymise_mdav(d, vars = vars, strata = "g", k = data.frame(g = c("a", "b"), k = c(3L, 5L)),
                      check_identifiers = FALSE)
rm <- attack_recipe(d, md, intruder = intruder(vars = vars, strata = c("g", "h"), p = 0.5), seed = 1)
# partitioned anonymise(): mergeable accumulators, radix select (median imputation), the
# per-stratum search, the release form's scans merged over pieces (ffi_form_scan/_apply)
dp <- d
dp$x2[1:5] <- NA
dp$x3 <- dp$x3^6 * 1e3 # a skewed tail: the release form squeezes it (merged scans)
pp <- suppressMessages(anonymise_partitioned(unname(split(dp, rep(1:3, length.out = n))), vars = vars,
                                             strata = c("g", "h"), k = 4, na = "median", future = FALSE,
                                             check_identifiers = FALSE))
# categorical measures: SUDA2's search of minimal sample uniques, sums per key combination
# (individual and household risk); the keyed k-means with threaded restarts
dc <- data.frame(g = d$g, h = d$h, b = round(d[[vars[1]]]) %% 4, w = 1 + seq_len(n) %% 7,
                 hh = (seq_len(n) - 1L) %/% 3L)
s2 <- risk_suda2(dc, strata = c("g", "h", "b"))
# SUDA2 with missing values and equal records; keys wider than one 64-bit word
dw <- as.data.frame(matrix(sample(1:40, 40 * 13, TRUE), 40))
dw[36:40, ] <- dw[1:5, ]
dw[cbind(1:13, 1:13)] <- NA
s2w <- risk_suda2(dw, names(dw))
s2n <- risk_suda2(rbind(dc, dc[1:3, ]), strata = c("g", "h", "b"), missing = 3)
dr <- as.data.frame(matrix(sample(1:10, 3000 * 3, TRUE), 3000)) # a growing table of distinct records
s2r <- risk_suda2(dr, names(dr))
ri <- risk_individual(dc, strata = c("g", "h", "b"), weights = "w", household = "hh")
km2 <- anonymise_keyed(d, vars = vars, strata = "g", k = 3, key = "valgrind-smoke-key-0001", size = 6,
                       nthreads = 2, check_identifiers = FALSE)
# a stratum above 1000 records, with ties: split into blocks (ffi_keyed_kmeans), the blocks'
# grids and partitions (ffi_keyed_grid, ffi_keyed_partition) on one and on two threads
kb <- data.frame(x1 = round(rnorm(2200), 1), x2 = round(rexp(2200), 1))
for (nt in 1:2) kmb <- anonymise_keyed(kb, k = 3, key = "valgrind-smoke-key-0001", size = 10, nthreads = nt,
                                       check_identifiers = FALSE)
# the allocator's free memory returned before a fork of the search (ffi_heap_trim)
stopifnot(is.logical(detanon:::tune_fork_trim()))
cat("valgrind-smoke: done\n")
