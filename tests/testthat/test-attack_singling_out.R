# attack_singling_out() against the slow transcription of helper-battery.R.

test_that("attack_singling_out equals brute force, with ties, duplicates, small strata and a constant column", {
  for (seed in 1:3) {
    bd <- battery_data(150, seed = seed)
    o <- bd$o; m <- bd$m
    for (keys in list(character(), "s", c("s", "y"))) {
      vars <- c("a", "b", "c")
      it <- intruder(vars = vars, strata = "g", held = if (length(keys)) keys)
      v <- ref_view(o, m, vars, "g", keys)
      num <- c(vars, intersect(keys, "y"))
      for (bins in list(NULL, c(2, 4, 8, 16, 32), 3, c(1, 5), 150)) {
        got <- attack_singling_out(o, m, intruder = it, bins = bins, seed = 4)
        if (is.null(bins)) bins <- 2^seq_len(ceiling(log2(4 * 150) / length(num)))
        want <- ref_singling_out(v, as.matrix(o[num]), as.matrix(m[num]), bins)
        expect_equal(got$success, want$success)
        expect_equal(got$confidence, want$confidence)
        expect_equal(got$rate, mean(want$success))
        expect_equal(got$precision_top10, ref_precision(want$success, want$confidence))
        # the control: the same predicates on the release deranged within strata
        perm <- detanon:::with_seed(5, detanon:::derange_within(detanon:::stratum_ids(o, "g")))
        vc <- v
        vc$cell_m <- v$cell_m[perm]
        ctrl <- ref_singling_out(vc, as.matrix(o[num]), as.matrix(m[perm, num, drop = FALSE]), bins)
        ctrl$success[perm == seq_along(perm)] <- 0 # strata of one: no stand-in, a miss
        expect_equal(got$control_rate, mean(ctrl$success))
      }
    }
  }
})

test_that("singling out: an unmasked release singles out every unique record; one column of ties none", {
  set.seed(1)
  d <- data.frame(a = stats::runif(64), g = rep(c("x", "y"), 32))
  got <- attack_singling_out(d, d, intruder = intruder(vars = "a", strata = "g"), bins = 64, control = FALSE)
  expect_equal(got$rate, 1)
  d$a <- rep(1:2, each = 32)
  m <- d
  m$a <- m$a + 0.5
  got <- attack_singling_out(d, m, intruder = intruder(vars = "a", strata = "g"), control = FALSE)
  expect_equal(got$rate, 0)
  # one record
  one <- attack_singling_out(d[1, ], d[1, ], intruder = intruder(vars = "a", strata = "g"))
  expect_equal(one$success, 1)
  expect_equal(one$control_rate, 0)
})

test_that("attack_singling_out refuses bad bins", {
  d <- data.frame(a = 1:5 + 0.5, g = "x")
  for (bad in list(0, 2.5, NA, "4", numeric()))
    expect_error(attack_singling_out(d, d, intruder = intruder(vars = "a", strata = "g"), bins = bad),
                 class = "detanon_error_argument")
})

test_that("the control is derived from the attack's bins: equal to binning it again", {
  ns <- asNamespace("detanon")
  key <- "a custodian's key, 16+ bytes"
  spec <- ns$battery_attacks()$singling_out
  for (kind in c("normal", "ties", "dup")) for (n in c(1L, 40L, 700L)) {
    x <- shared_case(max(n, 2L), kind, n)[seq_len(n), , drop = FALSE]
    x$w <- round(stats::rnorm(n), 1) # a numeric key, released unchanged
    rel <- list(plain = if (n >= 3L) anonymise(x, vars = c("a", "b"), strata = character(), k = 3),
                keyed = if (n >= 3L) anonymise_keyed(x, vars = c("a", "b"), strata = character(), k = 3, size = 6, key = key),
                noise = transform(x, a = a + stats::rnorm(n, sd = 0.1), b = round(b, 1)))
    for (r in names(rel)) for (bins in list(NULL, c(2L, 8L))) {
      if (is.null(rel[[r]])) next
      info <- paste(kind, n, r, length(bins))
      sp <- spec
      sp$args$bins <- bins
      it <- intruder(vars = c("a", "b"), strata = "g", held = "w")
      v <- ns$attack_view(x, rel[[r]], it, TRUE, 1)
      got <- count_calls("quantile_bin", ns$run_attack(sp, v$s, v$ctrl, 3, NULL, 1L, 1))
      want <- count_calls("quantile_bin", ref_run_unshared(sp, v))
      expect_identical(got$calls * 2L, want$calls, info = info) # the control bins nothing
      expect_null(v$s$shared$singling_out, info = info) # held between the view and its control only
      f <- c("rate", "control_rate", "success", "confidence", "details", "by_stratum")
      expect_identical(got$value[f], want$value[f], info = info)
      # the control's own records, one by one
      v <- ns$attack_view(x, rel[[r]], it, TRUE, 1)
      args <- list(bins = bins)
      do.call(ns$singling_out_core, c(list(v$s), args))
      c_new <- do.call(ns$singling_out_core, c(list(v$ctrl), args))
      c0 <- v$ctrl
      c0$shared <- NULL
      expect_identical(c_new, do.call(ns$singling_out_core, c(list(c0), args)), info = info)
    }
  }
})
