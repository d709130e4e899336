# The finishing step (R/finish.R): the same releases as before it was one step, and the
# natural form's mean, SD and domain.

test_that("every verb's release is bit for bit the one made before the finishing step was one step", {
  skip_on_cran() # digests of exact bits, pinned on one platform
  skip_if_not_installed("RANN")
  # the digests of the releases made by main before the change (helper-finish.R); the
  # natural form changed on purpose (mean, SD and sign kept), except where group means
  # need no change (MDAV without noise on the Titanic: nothing rounded)
  want <- c(
    "titanic/anonymise/precision/k3" = "7a89fe90d5464577de9007dd647c412f",
    "titanic/adaptive/precision/k3" = "98369d72e2ba45f66e5778435efd9bbb",
    "titanic/keyed/precision/k3" = "3b9522d4f4e7507303bc886bda55bcfe",
    "titanic/mdav/precision/k3" = "11ba2e3cd77882c9704b6ccab508c1d4",
    "titanic/mdav_noise/precision/k3" = "ad60e606f358bc58197b979b6b3ffc15",
    "titanic/partitioned/precision/k3" = "7a89fe90d5464577de9007dd647c412f",
    "titanic/anonymise/precision/k10" = "e8288eeac6a622ecc408486ae4682a40",
    "titanic/adaptive/precision/k10" = "f2f3178678b0b359a6eee51ef9db9605",
    "titanic/keyed/precision/k10" = "324bd16d0d1cfa0714b7f7b60f6698ea",
    "titanic/mdav/precision/k10" = "527e6768c42ca8ffe4979751def35f64",
    "titanic/mdav_noise/precision/k10" = "a33713182fbd3ab7c9a6f39fc53f4c1f",
    "titanic/partitioned/precision/k10" = "e8288eeac6a622ecc408486ae4682a40",
    "titanic/anonymise/none/k3" = "30e8e3bfa94625489340bc9785de5f87",
    "titanic/adaptive/none/k3" = "6ca7960da2f4fd8ac2892e7f353ff5d1",
    "titanic/keyed/none/k3" = "6c76dd77811b2d3c60f99b158fd666a9",
    "titanic/mdav/none/k3" = "8d570c57b9dd7fa594de35965f738630",
    "titanic/mdav_noise/none/k3" = "1bef1455342527007f4ab3db0561749a",
    "titanic/partitioned/none/k3" = "30e8e3bfa94625489340bc9785de5f87",
    "titanic/anonymise/none/k10" = "f5f189d2559b329388125aeb53533375",
    "titanic/adaptive/none/k10" = "f2e1288048de274fc497d3f41eab9756",
    "titanic/keyed/none/k10" = "7afeb26647c908a06c053ff61184783c",
    "titanic/mdav/none/k10" = "2ccf3a5ec0411bb671c21dc17c83b113",
    "titanic/mdav_noise/none/k10" = "a377979f769bdcc93b257a9179419a66",
    "titanic/partitioned/none/k10" = "f5f189d2559b329388125aeb53533375",
    "titanic/anonymise/rann/k3" = "d5de4891e78f13ca9c108a6aa2c2e4b4",
    "tie/anonymise/precision/k3" = "d63ae809a2f1f472cb3071bc790b78e8",
    "tie/adaptive/precision/k3" = "792f2270f813a34199564493b6574ad1",
    "tie/keyed/precision/k3" = "f076ea68a323f6934ddf3fe4e4b33d58",
    "tie/mdav/precision/k3" = "8259851b8dd9806974d113b7daecd625",
    "tie/mdav_noise/precision/k3" = "32de610bfdbbea1ac58693abf595de99",
    "tie/partitioned/precision/k3" = "d63ae809a2f1f472cb3071bc790b78e8",
    "tie/anonymise/precision/k10" = "d092858874a3992791d84d1da7796f0e",
    "tie/adaptive/precision/k10" = "ed79763ad30c90787f36506503604203",
    "tie/keyed/precision/k10" = "bed9df48312a54bbd60f97df8f1e7351",
    "tie/mdav/precision/k10" = "034b8ecf892e61d995b7969eaa6bcafa",
    "tie/mdav_noise/precision/k10" = "a711dd8f242b3b890ecaaaccf246e62e",
    "tie/partitioned/precision/k10" = "d092858874a3992791d84d1da7796f0e",
    "tie/anonymise/none/k3" = "9d1f9d5b8141bf1faa9909a992d49b8c",
    "tie/adaptive/none/k3" = "540b42b936d6e92c3a8e9e0a7a832cb7",
    "tie/keyed/none/k3" = "4e2c55db3de63d70d97e3c49d0ee4bb8",
    "tie/mdav/none/k3" = "29750276c5e763d382ad7b1c78e651bf",
    "tie/mdav_noise/none/k3" = "5565942c49be896ed46edc7f06dc24a1",
    "tie/partitioned/none/k3" = "9d1f9d5b8141bf1faa9909a992d49b8c",
    "tie/anonymise/none/k10" = "ddaa94da8221009eddd076c5c9dd588b",
    "tie/adaptive/none/k10" = "21ba96fb28f09c9096e802c1cf20b34d",
    "tie/keyed/none/k10" = "fdddf8e272248639c603164c71511298",
    "tie/mdav/none/k10" = "45dcf0fb5f1109c1f7406655d96f104a",
    "tie/mdav_noise/none/k10" = "e7cc2fd2e3686756d718f1210134d490",
    "tie/partitioned/none/k10" = "ddaa94da8221009eddd076c5c9dd588b",
    "tie/anonymise/rann/k3" = "9613ab6ece6f8b3bbc11bcbb5274e332",
    "titanic/mdav/natural/k3" = "8d570c57b9dd7fa594de35965f738630",
    "titanic/mdav/natural/k10" = "2ccf3a5ec0411bb671c21dc17c83b113")
  got <- finish_digests()
  rel <- finish_releases("natural")
  nat <- grep("natural", names(want), value = TRUE)
  got <- c(got, vapply(rel[nat], function(r) finish_digest(r, release_info(r)$settings$vars), ""))
  expect_identical(got[names(want)], want)
})

# Whether the released values `r` keep the mean and SD of `x` (exactly; whole numbers that
# are rounded to within 1e-5 of the SD), lie in [lo, hi], and keep the order of the
# unformatted values `raw`.
expect_finished <- function(r, x, raw, lo = -Inf, hi = Inf, info = NULL) {
  tol <- if (all(r == round(r)) && stats::sd(x) >= 500) 1e-5 else 1e-12
  expect_equal(mean(r), mean(x), tolerance = tol * stats::sd(x) / abs(mean(x)), info = info)
  expect_equal(stats::sd(r), stats::sd(x), tolerance = tol, info = info)
  expect_gte(min(r), lo)
  expect_lte(max(r), hi)
  expect_true(all(diff(r[order(raw)]) >= 0), info = info)
}

test_that("the natural Titanic release keeps the means and SDs and has no negative fare or age", {
  d <- titanic_paper()
  for (k in c(3, 10, 20)) {
    run <- function(...) anonymise(d, k = k, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                                   check_identifiers = FALSE, ...)
    raw <- run(format = "none")
    nat <- run()
    # (the paper's values: fares below zero, means off)
    expect_gt(sum(raw$Fare < 0), 0L)
    expect_gt(abs(mean(raw$Fare) - mean(d$Fare)), 0.1)
    for (v in c("Age", "Fare")) expect_finished(nat[[v]], d[[v]], raw[[v]], lo = 0, info = paste(v, k))
    # the fares the affine map would put below 0 are held at 0, the lowest of the unformatted
    zero <- nat$Fare == 0
    expect_true(max(raw$Fare[zero]) <= min(raw$Fare[!zero]))
    # the same for any row order
    p <- sample(nrow(d))
    nat_p <- anonymise(d[p, ], k = k, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"),
                       check_identifiers = FALSE)
    expect_identical(nat_p$Fare, nat$Fare[p])
    expect_identical(nat_p$Age, nat$Age[p])
  }
})

test_that("every verb's natural release keeps the means, SDs and signs of sdcMicro's testdata", {
  skip_if_not_installed("sdcMicro")
  data(testdata, package = "sdcMicro", envir = environment())
  vars <- c("expend", "income", "savings")
  args <- list(data = testdata, vars = vars, strata = c("sex", "urbrur"), k = 3, check_identifiers = FALSE)
  raw <- do.call(anonymise, c(args, format = "none"))
  nat <- do.call(anonymise, args)
  ada <- do.call(anonymise_adaptive, args)
  mdav <- do.call(anonymise_mdav, args)
  keyed <- do.call(anonymise_keyed, c(args, key = "a-secret-of-the-custodian-0f3c9", size = 10))
  keyed_raw <- do.call(anonymise_keyed, c(args, key = "a-secret-of-the-custodian-0f3c9", size = 10, format = "none"))
  expect_gt(sum(raw$income < 0), 0L) # (step 5 goes below zero)
  for (v in vars) {
    x <- testdata[[v]]
    expect_finished(nat[[v]], x, raw[[v]], lo = 0, info = v)
    expect_gte(min(ada[[v]]), 0)
    expect_equal(mean(ada[[v]]), mean(x), tolerance = 1e-6)
    # group means keep the mean; their SD is the method's
    expect_equal(mean(mdav[[v]]), mean(x), tolerance = 1e-6)
    # keyed noise moves the group means, and the release keeps that mean: the exact mean
    # would give back the column's sum, and a withdrawn person's values with it
    expect_equal(mean(keyed[[v]]), mean(keyed_raw[[v]]), tolerance = 1e-6)
    expect_gt(abs(mean(keyed[[v]]) - mean(x)), 1e-6 * abs(mean(x)))
    expect_gte(min(keyed[[v]]), 0)
  }
  # whole numbers of wide spread (expend): rounded keeping the sum to a unit (the mean to
  # 1 / n); the records of a group share their value and go alike (groups of 3 to 5, of
  # 10 to 20 keyed): off by at most half a group
  for (r in list(nat, ada, mdav, keyed)) expect_true(all(r$expend == round(r$expend)))
  off <- vapply(list(nat, ada, mdav, keyed), function(r) abs(sum(r$expend) - sum(testdata$expend)), 1)
  off[4] <- abs(sum(keyed$expend) - sum(keyed_raw$expend))
  expect_lte(max(off[1:2]), 1)
  expect_lte(off[3], 2)
  expect_lte(off[4], 5)
  expect_gt(abs(sum(round(raw$expend)) - sum(testdata$expend)), 5) # (to nearest, off by more)
  expect_type(nat$expend, "integer")
  expect_type(nat$income, "double") # (a double column of whole numbers stays double)
})

test_that("the natural release in pieces is the release in memory, bit for bit", {
  skip_if_not_installed("RSQLite")
  d <- finish_tie_data()
  for (k in c(3, 10)) {
    mem <- anonymise(d, vars = c("a", "b", "c", "w"), strata = "g", k = k, check_identifiers = FALSE)
    part <- anonymise_partitioned(split(d, rep(1:4, each = 300)), vars = c("a", "b", "c", "w"), strata = "g", k = k,
                                  check_identifiers = FALSE)
    for (v in c("a", "b", "c", "w")) expect_identical(part[[v]], mem[[v]])
    con <- DBI::dbConnect(RSQLite::SQLite(), ":memory:")
    DBI::dbWriteTable(con, "t", d)
    suppressMessages(anonymise_db(con, "t", vars = c("a", "b", "c", "w"), strata = "g", k = k, output = "o",
                                  check_identifiers = FALSE))
    db <- DBI::dbReadTable(con, "o")
    DBI::dbDisconnect(con)
    # (the table's rows in the order of the strata)
    o <- do.call(order, unname(as.list(db)))
    m <- as.data.frame(mem)[names(db)]
    for (v in c("a", "b", "c", "w")) expect_identical(as.double(sort(db[[v]])), as.double(sort(m[[v]])))
    # group means (MDAV): their mean kept and their SD, the whole numbers of w rounded
    # keeping the sum, in pieces as in memory
    mdav <- anonymise_mdav(d, vars = c("a", "b", "c", "w"), strata = "g", k = k, check_identifiers = FALSE)
    mdav_p <- anonymise_partitioned(split(d, rep(1:4, each = 300)), vars = c("a", "b", "c", "w"), strata = "g",
                                    k = k, method = "mdav", check_identifiers = FALSE)
    for (v in c("a", "b", "c", "w")) expect_identical(mdav_p[[v]], mdav[[v]])
    expect_lte(abs(sum(mdav$w) - sum(d$w)), k)
    raw <- anonymise(d, vars = c("a", "b", "c", "w"), strata = "g", k = k, format = "none")
    # (a and c, whole numbers left unrounded, have no sign limit: see the help of anonymise())
    for (v in c("a", "b", "c", "w")) {
      expect_finished(mem[[v]], d[[v]], raw[[v]], lo = if (v %in% c("b", "w")) 0 else -Inf, info = paste(v, k))
    }
  }
})

test_that("the release forms of all columns at once are each column's, and the verb's statistics change nothing", {
  d <- finish_tie_data()
  d$t <- stats::runif(nrow(d)) * 1e-200 # tiny: on its scale 2^e
  vars <- c("a", "b", "c", "w", "t")
  x <- detanon:::numeric_matrix(d, vars)
  as_int <- vapply(d[vars], is.integer, logical(1))
  for (format in c("natural", "precision", "none")) for (k in c(3, 70)) for (nt in 1:2) {
    forms <- detanon:::column_forms(x, k, format, as_int, nthreads = nt)
    for (j in seq_along(vars)) {
      expect_identical(forms[[j]], detanon:::column_form(x[, j], k, format, as_int[[j]]), info = paste(format, k, j))
    }
  }
  # finish_release() with the exact statistics a verb made (anonymise(): those of its
  # z-scale) gives the release it makes with its own
  set.seed(3)
  cols <- lapply(vars, function(v) x[, v] + stats::rnorm(nrow(x)) * stats::sd(x[, v]) / 4)
  e <- detanon:::pow2_factors(x)
  st <- detanon:::col_stats(detanon:::scale_tiny(x, e))
  fin <- function(format, keep, x_stats) {
    detanon:::finish_release(d, d, vars, "g", cols, x, 5, format, FALSE, keep = keep, verb = "anonymise",
                             settings = list(vars = vars), counts = list(), nthreads = 2L, x_stats = x_stats)
  }
  for (format in c("natural", "precision", "none")) for (keep in c("data", "masked")) {
    own <- fin(format, keep, NULL)
    expect_identical(fin(format, keep, list(mean = st$mean, sd = st$sd, e = e)), own)
    for (j in seq_along(vars)) {
      expect_identical(own[[vars[j]]], detanon:::format_masked(cols[[j]], x[, j], 5, format, as_int[[j]], keep),
                       info = paste(format, keep, j))
    }
  }
})

test_that("the map of the natural form: values held at the limits, the others affine, mean and SD exact", {
  fold_of <- function(v) function(init, f) f(init, v)
  form <- list(range = c(0, 100), bounds = list(lo = -Inf, hi = Inf, d = NA_integer_))
  v <- c(-3, -1, 0:10, 30)
  target <- list(n = length(v), mean = 4, sd = 6)
  fit <- detanon:::finish_fit(fold_of(v), form, target, c(-Inf, Inf))
  r <- detanon:::apply_fit(v, fit)
  expect_equal(mean(r), 4, tolerance = 1e-14)
  expect_equal(stats::sd(r), 6, tolerance = 1e-14)
  expect_identical(fit$L, 0)
  # the values the map would put below 0 are held in the first half of the gap between 0
  # and the lowest of the others, in their order; the others affine
  held <- v < fit$tL
  expect_gt(sum(held), 1L)
  expect_identical(r[held][1L], 0)
  expect_true(all(diff(r[held]) > 0))
  expect_lte(max(r[held]), min(r[!held]) / 2 + 1e-12)
  expect_equal(r[!held], fit$a + fit$b * v[!held])
  # an upper limit too (a k-record bound the squeeze keeps), the SD wider than the room
  # left: the values only held inside the limits
  fit2 <- detanon:::finish_fit(fold_of(v), form, list(n = length(v), mean = 8, sd = 60), c(-Inf, 12))
  expect_identical(detanon:::apply_fit(v, fit2), pmin(pmax(v, 0), 12))
  # values already with the target's mean and SD, inside the limits: unchanged
  w <- c(1, 2, 4, 9)
  same <- detanon:::finish_fit(fold_of(w), form, list(n = 4L, mean = 4, sd = stats::sd(w)), c(-Inf, Inf))
  expect_identical(detanon:::apply_fit(w, same), w)
  # data all <= 0 stay <= 0
  neg <- list(range = c(-100, 0), bounds = list(lo = -Inf, hi = Inf, d = NA_integer_))
  fit3 <- detanon:::finish_fit(fold_of(-v), neg, list(n = length(v), mean = -4, sd = 6), c(-Inf, Inf))
  r3 <- detanon:::apply_fit(-v, fit3)
  expect_lte(max(r3), 0)
  expect_equal(c(mean(r3), stats::sd(r3)), c(-4, 6), tolerance = 1e-14)
  # pieces: the same map from the same values in any split
  fold2 <- function(init, f) f(f(init, v[8:14]), v[1:7])
  expect_identical(detanon:::finish_fit(fold2, form, target, c(-Inf, Inf)), fit)
})

test_that("whole numbers are rounded keeping the sum, equal values alike", {
  fold_of <- function(v) function(init, f) f(init, v)
  form <- list(range = c(0, 1e4), bounds = list(lo = -Inf, hi = Inf, d = 0L))
  set.seed(3)
  v <- round(runif(500, 100, 5000), 2)
  v[1:40] <- 1234.4 # a tie group
  fit <- detanon:::finish_fit(fold_of(v), form, NULL, c(-Inf, Inf))
  r <- detanon:::apply_fit(v, fit)
  expect_true(all(r == round(r)))
  expect_lte(abs(sum(r) - sum(v)), 20) # at most half the tie group off
  expect_true(all(abs(r - v) < 1))
  expect_length(unique(r[1:40]), 1L)
  expect_true(all(diff(r[order(v)]) >= 0))
  # without ties: the sum kept to a unit
  u <- v[-(1:40)] + (1:460) * 1e-4
  ru <- detanon:::apply_fit(u, detanon:::finish_fit(fold_of(u), form, NULL, c(-Inf, Inf)))
  expect_lte(abs(sum(ru) - sum(u)), 1)
  # to nearest, it was off by more
  expect_gt(abs(sum(round(u)) - sum(u)), 1)
})

test_that("the map's C kernels equal their R references (apply and sums, in pieces, any threads)", {
  # references: the map and its sums written plainly in R
  held_ref <- function(v, fit) {
    ifelse(v < fit$tL, fit$L + fit$dL * ((v - fit$vmin) / (fit$tL - fit$vmin)),
           fit$U - fit$dU * ((fit$vmax - v) / (fit$vmax - fit$tU)))
  }
  apply_ref <- function(v, fit) {
    w <- fit$a + fit$b * v
    held <- v < fit$tL | v > fit$tU
    w[held] <- held_ref(v[held], fit)
    pmin(pmax(w, fit$L), fit$U)
  }
  exact <- function(x) detanon:::acc_round(.Call(detanon:::C_ffi_acc_add, NULL, matrix(as.double(x)), NULL))
  exact_dev <- function(x, c) detanon:::acc_round(.Call(detanon:::C_ffi_acc_add, NULL, matrix(as.double(x)), c))
  sums_of <- function(pieces, fit, mu, nt) {
    s <- NULL
    for (p in pieces) s <- .Call(detanon:::C_ffi_fit_sums, s, p, detanon:::fit_par(fit), mu, FALSE, nt)
    acc <- function(i) detanon:::acc_round(matrix(s[4L + (i - 1L) * 70L + 1:70]))
    d <- NULL
    for (p in pieces) d <- .Call(detanon:::C_ffi_fit_sums, d, p, detanon:::fit_par(fit), mu + 1, TRUE, nt)
    list(counts = s[1:4], free = acc(1L), held = acc(2L), held2 = acc(3L), dev = detanon:::acc_round(matrix(d)))
  }
  set.seed(11)
  cases <- list(
    random = stats::rnorm(3000),
    ties = rep(c(-2, 0, 0, 1.5, 7), 400),
    tiny = stats::rnorm(500) * 1e-300,
    one = 4,
    all_held = c(-5, -4, 9, 10),
    wide = c(stats::rexp(2000) * 1e6, -1e-3)
  )
  for (nm in names(cases)) {
    v <- cases[[nm]]
    q <- stats::quantile(v, c(0.1, 0.9), names = FALSE)
    fits <- list(
      none = list(L = -Inf, U = Inf, a = 0, b = 1, tL = -Inf, tU = Inf),
      held = list(L = q[1] - 1, U = q[2] + 1, a = 0.3, b = 1.7, tL = q[1], tU = q[2], dL = 0.25, dU = 0.5,
                  vmin = min(v), vmax = max(v)),
      low_only = list(L = 0, U = Inf, a = -1, b = 3, tL = q[1], tU = Inf, dL = 1e-3, dU = 0, vmin = min(v), vmax = max(v))
    )
    for (fn in names(fits)) {
      fit <- fits[[fn]]
      info <- paste(nm, fn)
      for (nt in 1:2) expect_identical(detanon:::apply_fit(v, fit, nt), apply_ref(v, fit), info = info)
      # written over a vector of the caller's own
      w <- v + 0
      for (nt in 1:2) expect_identical(detanon:::apply_fit(w + 0, fit, nt, into = TRUE), apply_ref(v, fit), info = info)
      r <- detanon:::apply_fit(w, fit, 2L, into = TRUE)
      expect_identical(w, r)
      expect_identical(w, apply_ref(v, fit), info = info)
      free <- v >= fit$tL & v <= fit$tU
      h <- if (any(!free)) held_ref(v[!free], fit) else numeric()
      mu <- mean(v)
      want <- list(counts = c(sum(v < fit$tL), sum(v > fit$tU), min(v[free], Inf), max(v[free], -Inf)),
                   free = exact(v[free]), held = exact(h), held2 = exact_dev(h, mu), dev = exact_dev(v[free], mu + 1))
      # in one piece, and in pieces of any sizes (one of them empty)
      for (nt in 1:2) expect_identical(sums_of(list(v), fit, mu, nt), want, info = paste(info, nt))
      cut <- sort(unique(c(0L, sample(length(v), min(3L, length(v))), length(v))))
      pieces <- c(lapply(seq_len(length(cut) - 1L), function(i) v[seq.int(cut[i] + 1L, length.out = cut[i + 1L] - cut[i])]),
                  list(numeric()))
      expect_identical(sums_of(rev(pieces), fit, mu, 2L), want, info = info)
    }
  }
})

test_that("form_squeeze() (blocks of rows on threads) equals the plain-R squeeze and the serial scan", {
  set.seed(11)
  n <- 6001 # above the threads' minimum work, and blocks of unequal length
  cases <- list(
    normal = rnorm(n) * 3,
    extremes = c(rexp(n - 2), -50, 80),
    crowd_below = c(rep(-5, 900), runif(n - 900)),
    none_inside = rep(c(-1, 2), length.out = n),
    inside = runif(n, 0.2, 0.8),
    one_low = c(-3, runif(n - 1, 0, 0.5))
  )
  bounds <- list(c(-1, 1), c(0, 0.5), c(-Inf, 1), c(0.1, Inf))
  for (v in cases) for (b in bounds) {
    ref <- ref_squeeze_range(v, b[1L], b[2L])
    scan <- detanon:::form_scan(v, b[1L], b[2L])
    for (nt in 1:2) {
      sq <- detanon:::form_squeeze(v, b[1L], b[2L], nt)
      expect_identical(sq$values, ref)
      expect_identical(sq$scan, scan)
    }
  }
  # a short column runs on one thread; an empty one has nothing to squeeze
  expect_identical(detanon:::form_squeeze(c(-9, 0.5, 3), 0, 1, 2L)$values, ref_squeeze_range(c(-9, 0.5, 3), 0, 1))
  expect_identical(detanon:::form_squeeze(numeric(), 0, 1, 2L)$values, numeric())
})

test_that("the map's sums and values and the squeeze in several blocks of rows: the serial results, any threads", {
  # blocks of 8192 rows (threads.h) taken by either thread: each piece's results must be
  # those of the same piece summed, mapped or scanned serially (pieces of one block each)
  set.seed(31)
  n <- 4L * 8192L + 123L
  v <- c(stats::rnorm(n - 4L) * 3, -40, 55, 1e-300, 0)
  q <- stats::quantile(v, c(0.1, 0.9), names = FALSE)
  fit <- list(L = q[1] - 1, U = q[2] + 1, a = 0.3, b = 1.7, tL = q[1], tU = q[2], dL = 0.25, dU = 0.5,
              vmin = min(v), vmax = max(v))
  par <- detanon:::fit_par(fit)
  small <- split(v, ceiling(seq_along(v) / 5000))
  sums <- function(pieces, dev, nt) {
    s <- NULL
    for (p in pieces) s <- .Call(detanon:::C_ffi_fit_sums, s, p, par, 0.5, dev, nt)
    s
  }
  total <- function(s, off) {
    vapply(seq_len((length(s) - off) / 70L), function(i) detanon:::acc_round(matrix(s[off + (i - 1L) * 70L + 1:70])), 0)
  }
  for (dev in c(FALSE, TRUE)) {
    off <- if (dev) 0L else 4L
    want <- sums(small, dev, 1L)
    for (nt in 1:2) {
      got <- sums(list(v), dev, nt)
      if (!dev) expect_identical(got[1:4], want[1:4])
      expect_identical(total(got, off), total(want, off))
    }
  }
  mapped <- unlist(lapply(small, function(p) .Call(detanon:::C_ffi_fit_apply, p, par, 1L, FALSE)), use.names = FALSE)
  for (nt in 1:2) expect_identical(detanon:::apply_fit(v, fit, nt), mapped)
  for (b in list(c(-1, 1), c(-Inf, 0.5))) {
    for (nt in 1:2) {
      sq <- detanon:::form_squeeze(v, b[1L], b[2L], nt)
      expect_identical(sq$values, ref_squeeze_range(v, b[1L], b[2L]))
      expect_identical(sq$scan, detanon:::form_scan(v, b[1L], b[2L]))
    }
  }
})
