# anonymise_partitioned(): the composition of the passes gives anonymise()'s release.

titanic_chunks <- function(seed, n_chunks = 4) {
  set.seed(seed)
  d <- titanic_paper()[c("Age", "Fare", "Sex", "Pclass", "Survived")]
  d$Age[sample(nrow(d), 100)] <- NA
  d$Fare[sample(nrow(d), 30)] <- NA
  part_chunks(d, n_chunks)
}

# every method of the registry that runs per stratum (masking_methods()), against its verb
part_methods <- names(Filter(function(m) m$per_stratum, masking_methods()))

# anonymise_adaptive() has no `na` and no `small_strata` (it takes complete records and
# strata of k records): the choices a method's verb takes, and its arguments
part_na <- function(method, na) if (method %in% c("adaptive", "stratum")) "fail" else na
part_policies <- function(method, ...) if (method %in% c("adaptive", "stratum")) list() else list(...)

test_that("partitioned runs are identical() to the verb on Titanic, every method, format and na", {
  for (method in part_methods) {
    for (format in c("natural", "precision", "none")) {
      for (na in part_na(method, c("fail", "median", "mean", "complete"))) {
        chunks <- titanic_chunks(1)
        if (na == "fail") chunks <- lapply(chunks, function(ch) ch[stats::complete.cases(ch), ])
        r <- do.call(part_compare, c(list(chunks, vars = c("Age", "Fare", "Survived"), strata = c("Sex", "Pclass"),
                                          k = 3, format = format, group_size = 100, future = FALSE, method = method),
                                     part_policies(method, na = na)))
        expect_false(inherits(r$ref, "error"))
        expect_identical(r$out, r$ref, label = paste(method, format, na))
        expect_identical(release_info(r$out), release_info(r$ref))
      }
    }
  }
})

test_that("suppressed small strata and messages match anonymise()", {
  chunks <- titanic_chunks(2)
  args <- list(vars = c("Age", "Fare"), strata = c("Sex", "Pclass", "Survived"), k = 60, na = "complete",
               small_strata = "suppress", check_identifiers = FALSE)
  full <- do.call(rbind, chunks)
  expect_message(ref <- do.call(anonymise, c(list(full), args)), class = "detanon_message_suppress")
  expect_message(out <- do.call(anonymise_partitioned, c(list(chunks, future = FALSE), args)),
                 class = "detanon_message_suppress")
  expect_identical(out, ref)
  expect_gt(release_info(out)$counts$n_suppressed, 0L)
  expect_gt(release_info(out)$counts$n_dropped, 0L)
})

test_that("random and adversarial data: identical results or the same error class, every method", {
  for (method in part_methods) for (seed in 1:60) {
    d <- part_data(seed)
    vars <- sample(c("a", "b", "c", "t", "i", "w", if (method != "anonymise") c("z", "big")), sample(2:6, 1))
    strata <- sample(list(character(), "s1", c("s1", "s2")), 1)[[1]]
    na <- sample(part_na(method, c("fail", "median", "mean", "complete")), 1)
    if (na != "fail") for (v in vars) d[[v]][sample(nrow(d), 2)] <- NA
    # (the adaptive method's own settings, at random)
    own <- if (method == "adaptive") {
      list(m = sample(0:3, 1), rate = sample(list(0, 0.2, c(0.5, 0.1)), 1)[[1]], k_max = sample(c(5, 33), 1))
    }
    # (the stratum method: one k, or a table of k per stratum, at random with errors)
    k_tab <- if (method == "stratum" && stats::runif(1) < 0.7) part_k_table(d, strata)
    r <- do.call(part_compare, c(list(part_chunks(d, sample(1:6, 1)), vars = vars, strata = strata,
                                      k = if (is.null(k_tab)) sample(2:4, 1) else k_tab,
                                      format = sample(c("natural", "precision", "none"), 1),
                                      group_size = sample(c(1, 10, 1e6), 1), future = FALSE, method = method),
                                 own, part_policies(method, na = na, small_strata = sample(c("fail", "suppress"), 1))))
    if (inherits(r$ref, "error")) {
      expect_s3_class(r$out, class(r$ref)[1])
    } else {
      expect_identical(r$out, r$ref, label = paste(method, "seed", seed))
    }
  }
})

test_that("the passes by hand: any chunking, any order of strata, sources as functions", {
  chunks <- titanic_chunks(3, n_chunks = 7)
  full <- do.call(rbind, chunks)
  rownames(full) <- NULL
  vars <- c("Age", "Fare")
  ref <- suppressMessages(anonymise(full, vars = vars, strata = "Pclass", k = 4, na = "median",
                                    check_identifiers = FALSE))
  st <- suppressMessages(anonymise_stats(function(i) if (i <= length(chunks)) chunks[[i]], vars = vars,
                                         strata = "Pclass", k = 4, na = "median"))
  expect_s3_class(st, "detanon_anonymise_stats")
  expect_output(print(st), "exact statistics")
  by <- split(seq_len(nrow(full)), full$Pclass)
  by <- by[sample(length(by))] # any order of strata
  pieces <- lapply(by, function(r) anonymise_stratum(full[sample(r), ], stats = st)) # any row order inside
  s5 <- anonymise_rescale(function(i) if (i <= length(pieces)) pieces[[i]], stats = st)
  expect_identical(s5$scale, release_info(ref)$stats$scale)
  for (i in seq_along(pieces)) {
    rel <- anonymise_release(pieces[[i]], stats = st, step5 = s5)
    rows <- as.integer(rownames(pieces[[i]]$data))
    for (v in vars) expect_identical(rel[[v]], ref[[v]][rows])
  }
})

test_that("strata groups cover every kept stratum once, largest first", {
  chunks <- titanic_chunks(4)
  st <- suppressMessages(anonymise_stats(chunks, vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = 3,
                                         na = "complete"))
  for (size in c(1, 150, 1e6)) {
    g <- strata_groups(st, group_size = size)
    expect_setequal(unlist(g), which(st$strata_table$keep))
    expect_false(anyDuplicated(unlist(g)) > 0)
    sizes <- vapply(g, function(i) sum(st$strata_table$n[i]), numeric(1))
    expect_true(all(sizes <= size | lengths(g) == 1L))
  }
})

test_that("a strata source (e.g. a database) gives the same values, strata by group", {
  chunks <- titanic_chunks(5)
  full <- do.call(rbind, chunks)
  full$id <- seq_len(nrow(full))
  chunks <- unname(split(full, rep(1:3, length.out = nrow(full))))
  source <- function(strata) full[stratum_keys_for_test(full, c("Sex", "Pclass")) %in% strata$key, ]
  out <- suppressMessages(anonymise_partitioned(chunks, vars = c("Age", "Fare"), strata = c("Sex", "Pclass"),
                                                k = 3, na = "mean", strata_source = source, future = FALSE,
                                                check_identifiers = FALSE))
  ref <- suppressMessages(anonymise(full, vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = 3, na = "mean",
                                    check_identifiers = FALSE))
  out <- as.data.frame(out)[order(out$id), ]
  rownames(out) <- NULL
  expect_identical(out$Age, ref$Age)
  expect_identical(out$Fare, ref$Fare)
  expect_identical(release_info(ref)$counts, attr(out, "detanon")$counts)
})

# ---- every per-stratum method of the registry -----------------------------------------------
test_that("method = \"mdav\": the passes by hand, any order of strata and of rows inside them", {
  chunks <- titanic_chunks(3, n_chunks = 5)
  full <- do.call(rbind, chunks)
  rownames(full) <- NULL
  ref <- suppressMessages(anonymise_mdav(full, vars = c("Age", "Fare"), strata = "Pclass", k = 4, na = "median",
                                         check_identifiers = FALSE))
  st <- suppressMessages(anonymise_stats(chunks, vars = c("Age", "Fare"), strata = "Pclass", k = 4,
                                         method = "mdav", na = "median"))
  by <- split(seq_len(nrow(full)), full$Pclass)
  by <- by[sample(length(by))]
  pieces <- lapply(by, function(r) anonymise_stratum(full[sample(r), ], stats = st))
  s5 <- anonymise_rescale(pieces, stats = st)
  expect_identical(s5$n_groups, release_info(ref)$counts$n_groups)
  expect_identical(s5$max_group, release_info(ref)$counts$max_group)
  expect_output(print(s5), "Age: not scaled")
  for (i in seq_along(pieces)) {
    rel <- anonymise_release(pieces[[i]], stats = st, step5 = s5)
    rows <- as.integer(rownames(pieces[[i]]$data))
    for (v in c("Age", "Fare")) expect_identical(rel[[v]], ref[[v]][rows])
  }
  # a piece missing: refused
  expect_error(anonymise_rescale(pieces[-1], stats = st), class = "detanon_error_data")
})

test_that("the methods that do not run per stratum are refused with the reason", {
  chunks <- titanic_chunks(4)
  chunks <- lapply(chunks, function(ch) ch[stats::complete.cases(ch), ])
  for (method in c("stir", "keps", "nonsense", NA)) {
    expect_error(anonymise_partitioned(chunks, vars = c("Age", "Fare"), strata = "Sex", method = method,
                                       future = FALSE),
                 class = "detanon_error_argument")
  }
  expect_snapshot(error = TRUE, {
    anonymise_partitioned(chunks, vars = c("Age", "Fare"), strata = "Sex", method = "stir")
    anonymise_partitioned(chunks, vars = c("Age", "Fare"), strata = "Sex", method = "mdv")
  })
  # every method with a kernel runs partitioned
  ok <- names(Filter(function(m) m$per_stratum, masking_methods()))
  expect_setequal(ok, c("anonymise", "stratum", "mdav", "keyed", "adaptive"))
})

# ---- the keyed method: its budget and noise centre over all strata -------------------------
test_that("method = \"keyed\": strata of several blocks, any chunking, group size, size and noise", {
  set.seed(11)
  n <- 2600
  # numeric strata whose text keys sort otherwise than their values (2, 10, 100), one stratum
  # above 1000 records (split into blocks), ties, a tiny column and an integer one
  d <- data.frame(x = round(stats::rnorm(n), 1), y = stats::rexp(n) * 1e-200, w = sample(1:50, n, TRUE),
                  g = sample(c(2, 10, 100), n, TRUE, prob = c(0.6, 0.3, 0.1)),
                  h = factor(sample(c("b", "a"), n, TRUE), levels = c("b", "a")))
  d$x[1:40] <- 0.5
  for (i in 1:3) {
    size <- c(5, 9.5, 20)[i]
    noise <- i != 2L
    for (n_chunks in c(1L, 4L)) {
      chunks <- part_chunks(d[sample(n), ], n_chunks)
      for (strata in list("g", c("h", "g"))) {
        r <- part_compare(chunks, vars = c("x", "y", "w"), strata = strata, k = 3, size = size, noise = noise,
                          format = c("natural", "none", "precision")[i], group_size = c(1, 1500, 1e6)[i],
                          method = "keyed")
        expect_false(inherits(r$ref, "error"))
        expect_identical(r$out, r$ref, label = paste("size", size, "chunks", n_chunks, toString(strata)))
      }
    }
  }
  # another key, another release
  chunks <- part_chunks(d, 3)
  r <- part_compare(chunks, vars = c("x", "w"), strata = "g", k = 3, method = "keyed", key = "another-secret-key-0123")
  expect_identical(r$out, r$ref)
  expect_false(identical(r$out$x, part_compare(chunks, vars = c("x", "w"), strata = "g", k = 3,
                                               method = "keyed")$out$x))
})

test_that("method = \"keyed\": equal drops of two strata go to the first in the verb's order", {
  # two strata with the same values: every drop of one equals the other's, and an odd budget
  # gives the first (by stratum_ids(): "aa" before "b", though the keys sort "b" first) one
  # group more
  set.seed(12)
  half <- data.frame(x = stats::rnorm(150), y = stats::runif(150))
  d <- rbind(cbind(half, s = "b"), cbind(half, s = "aa"))
  chunks <- part_chunks(d, 3)
  firsts <- character()
  for (size in c(9, 10, 11, 13)) {
    r <- part_compare(chunks, vars = c("x", "y"), strata = "s", k = 3, size = size, noise = FALSE,
                      format = "none", method = "keyed")
    expect_identical(r$out, r$ref, label = paste("size", size))
    groups <- tapply(paste(r$out$x, r$out$y), r$out$s, function(v) length(unique(v)))
    if (groups[["aa"]] != groups[["b"]]) firsts <- c(firsts, names(which.max(groups)))
  }
  expect_true(length(firsts) > 0L)
  expect_true(all(firsts == "aa"))
})

test_that("method = \"keyed\" with no varying column releases the values as they are, without groups", {
  d <- data.frame(a = rep(1.5, 30), b = rep(2L, 30), g = rep(c("x", "y"), 15))
  r <- part_compare(part_chunks(d, 2), vars = c("a", "b"), strata = "g", k = 3, method = "keyed")
  expect_identical(r$out, r$ref)
  expect_identical(release_info(r$out)$counts$n_groups, NA_integer_)
})

test_that("method = \"keyed\" needs its key; other methods take none", {
  chunks <- lapply(titanic_chunks(3), function(ch) ch[stats::complete.cases(ch), ])
  run <- function(...) anonymise_partitioned(chunks, vars = c("Age", "Fare"), strata = "Sex", future = FALSE, ...)
  expect_error(run(method = "keyed"), class = "detanon_error_argument")
  expect_error(run(method = "keyed", key = "short"), class = "detanon_error_argument")
  expect_error(run(method = "keyed", key = part_key, size = 2), class = "detanon_error_argument")
  expect_error(run(method = "keyed", key = part_key, noise = NA), class = "detanon_error_argument")
  expect_error(run(method = "mdav", key = part_key), class = "detanon_error_argument")
  expect_snapshot(error = TRUE, {
    run(method = "keyed", key = "short")
    run(method = "mdav", key = part_key)
  })
})

# ---- the adaptive method: its rounds join all strata ------------------------------------------
# 900 records of x, y, w (whole numbers) and t (tiny) in strata g x h, with duplicated records,
# a missing g, tiny strata of 4 records ("four": k = 4 makes their centroids all equal) and 6.
part_grown_data <- function(seed) {
  set.seed(seed)
  n <- 900
  d <- data.frame(x = round(stats::rnorm(n), 1), y = stats::rexp(n), w = sample(1:40, n, TRUE),
                  t = stats::runif(n) * 1e-200, g = sample(c("a", "b", NA), n, TRUE, prob = c(0.5, 0.3, 0.2)),
                  h = sample(c(1L, 2L), n, TRUE))
  d[1:40, c("x", "y", "w", "t")] <- d[41:80, c("x", "y", "w", "t")]
  d$g[81:84] <- "four"
  d$h[81:84] <- 1L
  d$g[85:90] <- "six"
  d$h[85:90] <- 2L
  d
}

# Every setting on d (part_grown_data()) in 1 and 5 chunks of its rows shuffled, in groups
# of 1, 250 (on two threads) and 1e6 records: identical() to the verb. Returns the verb's
# release of each setting.
part_grown_check <- function(d, method, settings) {
  lapply(seq_along(settings), function(i) {
    for (n_chunks in c(1L, 5L)) {
      chunks <- part_chunks(d[sample(nrow(d)), ], n_chunks)
      for (group_size in c(1, 250, 1e6)) {
        nt <- if (group_size == 250) 2L else 1L
        r <- do.call(part_compare, c(list(chunks, vars = c("x", "y", "w", "t"), strata = c("g", "h"),
                                          group_size = group_size, method = method, nthreads = nt), settings[[i]]))
        expect_false(inherits(r$ref, "error"))
        expect_identical(r$out, r$ref, label = paste(method, "setting", i, "chunks", n_chunks, "group size", group_size))
      }
    }
    r$ref
  })
}

test_that("method = \"adaptive\": stages, k, k_max, m, NA and tiny strata, many groups, chunks, threads", {
  d <- part_grown_data(21)
  settings <- list(list(k = 3, m = 1, rate = 0, format = "natural"),
                   list(k = 2, m = 2, rate = 0.1, k_max = 20, format = "none"),
                   list(k = 4, m = 3, rate = c(0.4, 0.2, 0.05), k_max = c(10, 20, 40), format = "precision"),
                   list(k = 3, m = 5, rate = 0.02, k_max = 12, format = "natural"),
                   list(k = 4, m = 0, format = "natural"))
  refs <- part_grown_check(d, "adaptive", settings)
  rounds <- vapply(refs, function(r) release_info(r)$counts$rounds, 0L)
  grown <- vapply(refs, function(r) release_info(r)$counts$n_grown, 0L)
  # the settings grow records over many rounds (m = 0: one round, nothing grown)
  expect_true(all(rounds[-5] > 3L) && all(grown[-5] > 0L))
  expect_identical(c(rounds[5], grown[5]), c(1L, 0L))
  # the indexes of the rounds (original values) are not left in temporary files
  expect_length(list.files(tempdir(), "^detanon-adaptive-"), 0L)
})

test_that("method = \"adaptive\": centroids all equal, no varying column, one stratum", {
  set.seed(22)
  # k = the stratum's size: every centroid equal, the rounds stop at once (the verb warns)
  d <- data.frame(x = stats::rnorm(12), y = stats::rnorm(12))
  r <- part_compare(part_chunks(d, 3), vars = c("x", "y"), k = 12, method = "adaptive")
  expect_false(inherits(r$ref, "error"))
  expect_identical(r$out, r$ref)
  expect_warning(anonymise_partitioned(list(d), vars = c("x", "y"), k = 12, method = "adaptive", future = FALSE,
                                       check_identifiers = FALSE), class = "detanon_warning_data")
  # no column varies: released as they are (the plain method failed there with an unclassed
  # error: its pieces had no range of centroids)
  d <- data.frame(a = rep(1.5, 30), b = rep(2L, 30), g = rep(c("x", "y"), 15))
  for (method in c("adaptive", "anonymise")) {
    r <- part_compare(part_chunks(d, 2), vars = c("a", "b"), strata = "g", k = 3, method = method)
    expect_false(inherits(r$out, "error"))
    expect_identical(r$out, r$ref)
  }
  # one stratum, grown by stages
  d <- data.frame(x = round(stats::rnorm(400), 1), y = stats::runif(400))
  r <- part_compare(part_chunks(d, 4), vars = c("x", "y"), k = 2, m = 3, rate = c(0.3, 0.1), k_max = c(8, 30),
                    method = "adaptive", group_size = 1)
  expect_identical(r$out, r$ref)
  expect_gt(release_info(r$out)$counts$n_grown, 0L)
})

test_that("method = \"adaptive\": a failure during the rounds leaves no temporary file", {
  chunks <- lapply(titanic_chunks(5), function(ch) ch[stats::complete.cases(ch), ])
  calls <- 0L
  orig <- NULL
  orig <- local_detanon_binding("adaptive_step", function(...) {
    calls <<- calls + 1L
    if (calls >= 4L) stop("interrupted (injected by the test)")
    orig(...)
  })
  expect_error(anonymise_partitioned(chunks, vars = c("Age", "Fare"), strata = "Sex", method = "adaptive", m = 2,
                                     future = FALSE, check_identifiers = FALSE), "injected")
  expect_gte(calls, 4L)
  expect_length(list.files(tempdir(), "^detanon-adaptive-"), 0L)
})

test_that("method = \"adaptive\": the settings that cannot run are classed errors", {
  chunks <- lapply(titanic_chunks(3), function(ch) ch[stats::complete.cases(ch), ])
  run <- function(...) {
    anonymise_partitioned(chunks, vars = c("Age", "Fare"), strata = "Sex", method = "adaptive", future = FALSE,
                          check_identifiers = FALSE, ...)
  }
  expect_error(run(w1 = 0.01), class = "detanon_error_argument")
  expect_error(run(na = "median"), class = "detanon_error_argument")
  expect_error(run(small_strata = "suppress"), class = "detanon_error_argument")
  expect_error(run(k = 5, k_max = 4), class = "detanon_error_argument")
  expect_error(run(rate = c(0.1, 0.2)), class = "detanon_error_argument")
  expect_error(run(m = -1), class = "detanon_error_argument")
  expect_error(run(k = data.frame(Sex = c("male", "female"), k = 3:4)), class = "detanon_error_argument")
  expect_snapshot(error = TRUE, {
    run(w1 = 0.01)
    run(na = "median")
  })
  # (the registry says what does not run partitioned)
  expect_match(masking_methods()$adaptive$why_not, "robust covariance")
  # the passes by hand need the rounds between the statistics and the masking
  st <- anonymise_stats(chunks, vars = c("Age", "Fare"), strata = "Sex", method = "adaptive")
  expect_error(anonymise_stratum(do.call(rbind, chunks), stats = st), class = "detanon_error_argument")
})

# ---- the stratum method: one k per stratum, a table (tune_release()'s) -----------------------
test_that("method = \"stratum\": a table of k per stratum, NA and tiny strata, many groups, chunks, threads", {
  d <- part_grown_data(23)
  tab <- unique(d[c("g", "h")])
  rownames(tab) <- NULL
  tab$k <- rep_len(c(3L, 7L, 12L, 5L, 40L), nrow(tab))
  tab$k[tab$g %in% "four"] <- 4L
  tab$k[tab$g %in% "six"] <- 2L
  # the same table in another order, k as doubles, with a row of a stratum absent from the data
  other <- rbind(tab[rev(seq_len(nrow(tab))), ], data.frame(g = "absent", h = 1L, k = 3L))
  other$k <- as.double(other$k)
  settings <- list(list(k = tab, k_max = 40, format = "natural"),
                   list(k = other, k_max = c(40, 60), rate = c(0.3, 0.1), format = "none"),
                   list(k = tab, k_max = 50, m = 0, format = "precision"),
                   list(k = 4, format = "natural"))
  part_grown_check(d, "stratum", settings)
  # the table of the metadata: the data's strata and their k; nothing grown
  info <- release_info(part_compare(list(d), vars = c("x", "y", "w", "t"), strata = c("g", "h"), k = other,
                                    k_max = 40, method = "stratum")$out)
  expect_identical(nrow(info$settings$k), nrow(tab))
  expect_setequal(paste(info$settings$k$g, info$settings$k$k), paste(tab$g, tab$k))
  expect_identical(info$counts[c("n_grown", "n_capped", "rounds")], list(n_grown = 0L, n_capped = 0L, rounds = 1L))
  expect_identical(info$counts$max_k, max(tab$k))
  expect_gt(length(unique(tab$k)), 3L)
})

test_that("method = \"stratum\" releases tune_release()'s choice of k per stratum from chunks", {
  d <- titanic_paper()[-1]
  vars <- c("Age", "Fare")
  strata <- c("Pclass", "Sex", "Family")
  tu <- tune_release(d, intruder = intruder(), vars = vars, strata = strata, methods = "stratum", worst = 0.2,
                     top_m = 0.5, verify = c("linkage_released", "linkage_original"))
  expect_identical(tu$chosen$method, "stratum")
  set <- release_info(tu$release)$settings
  expect_gt(length(unique(set$k$k)), 1L)
  # the chosen release itself, from one chunk in the order of the data
  run <- function(chunks, ...) {
    anonymise_partitioned(chunks, vars = vars, strata = strata, k = set$k, k_max = set$k_max, m = set$m,
                          rate = set$rate, method = "stratum", future = FALSE, check_identifiers = FALSE, ...)
  }
  expect_identical(run(list(d)), tu$release)
  # and in any chunks, without `m` (the method's 0)
  chunks <- part_chunks(d, 4)
  r <- part_compare(chunks, vars = vars, strata = strata, k = set$k, k_max = set$k_max, method = "stratum",
                    group_size = 100)
  expect_identical(r$out, r$ref)
  expect_identical(release_info(r$out)$settings, set)
})

test_that("method = \"stratum\": a bad table of k is the verb's classed error, and the other settings that cannot run", {
  chunks <- lapply(titanic_chunks(3), function(ch) ch[stats::complete.cases(ch), ])
  full <- do.call(rbind, chunks)
  tab <- data.frame(Sex = c("female", "male"), k = c(3L, 5L))
  run <- function(...) {
    anonymise_partitioned(chunks, vars = c("Age", "Fare"), strata = "Sex", method = "stratum", future = FALSE,
                          check_identifiers = FALSE, ...)
  }
  verb <- function(...) anonymise_adaptive(full, vars = c("Age", "Fare"), strata = "Sex", m = 0, check_identifiers = FALSE, ...)
  bad_tables <- list(missing = tab[1, ], na = within(tab, k[2] <- NA), fraction = within(tab, k[2] <- 4.5),
                     below_2 = within(tab, k[1] <- 1L), too_large = within(tab, k[1] <- 1e4),
                     twice = rbind(tab, tab[1, ]), no_k = tab["Sex"], no_strata = tab["k"])
  for (nm in names(bad_tables)) {
    ref <- tryCatch(verb(k = bad_tables[[nm]]), error = function(e) e)
    expect_s3_class(ref, "detanon_error")
    out <- tryCatch(run(k = bad_tables[[nm]]), error = function(e) e)
    expect_identical(class(out), class(ref), label = nm)
    # the same message, but for the function named
    expect_identical(sub("^[a-z_]+\\(\\): ", "", conditionMessage(out)),
                     sub("^[a-z_]+\\(\\): ", "", conditionMessage(ref)), label = nm)
  }
  # k above k_max, as the verb
  expect_error(run(k = within(tab, k[2] <- 40L)), class = "detanon_error_argument")
  expect_error(verb(k = within(tab, k[2] <- 40L)), class = "detanon_error_argument")
  # growing records is the adaptive method; no interval test, na or small_strata policy
  expect_error(run(k = tab, m = 1), class = "detanon_error_argument")
  expect_error(run(k = tab, w1 = 0.01), class = "detanon_error_argument")
  expect_error(run(k = tab, na = "median"), class = "detanon_error_argument")
  expect_error(run(k = tab, small_strata = "suppress"), class = "detanon_error_argument")
  # a table k is the stratum method's only
  expect_error(anonymise_partitioned(chunks, vars = c("Age", "Fare"), strata = "Sex", k = tab, future = FALSE),
               class = "detanon_error_argument")
  expect_snapshot(error = TRUE, {
    run(k = tab[1, ])
    run(k = within(tab, k[1] <- 1e4))
    run(k = tab, m = 2)
  })
})

test_that("the class of the chunks is kept", {
  skip_if_not_installed("tibble")
  chunks <- lapply(titanic_chunks(6), function(ch) tibble::as_tibble(ch[stats::complete.cases(ch), ]))
  r <- part_compare(chunks, vars = c("Age", "Fare"), strata = "Sex", k = 3, future = FALSE)
  expect_s3_class(r$out, "tbl_df")
  expect_identical(r$out, r$ref)
})

# ---- the future framework ------------------------------------------------------------------
future_run <- function(chunks, method = "anonymise", ...) {
  suppressMessages(anonymise_partitioned(chunks, vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = 3,
                                         method = method, na = "median", group_size = 50, future = TRUE,
                                         check_identifiers = FALSE, ...))
}

test_that("results do not depend on the plan or the number of workers", {
  skip_if_not_installed("future")
  skip_if_not_installed("future.apply")
  chunks <- titanic_chunks(7)
  ref <- suppressMessages(anonymise(do.call(rbind, chunks), vars = c("Age", "Fare"), strata = c("Sex", "Pclass"),
                                    k = 3, na = "median", check_identifiers = FALSE))
  old <- future::plan(future::sequential)
  on.exit(future::plan(old), add = TRUE)
  expect_identical(future_run(chunks), ref)
  ok <- tryCatch({
    future::plan(future::multisession, workers = 2)
    TRUE
  }, error = function(e) FALSE)
  if (ok) {
    expect_identical(future_run(chunks), ref)
    expect_identical(future_run(chunks, "mdav"),
                     suppressMessages(anonymise_mdav(do.call(rbind, chunks), vars = c("Age", "Fare"),
                                                     strata = c("Sex", "Pclass"), k = 3, na = "median",
                                                     check_identifiers = FALSE)))
    expect_identical(future_run(chunks, "keyed", key = part_key),
                     suppressMessages(anonymise_keyed(do.call(rbind, chunks), vars = c("Age", "Fare"),
                                                      strata = c("Sex", "Pclass"), k = 3, na = "median",
                                                      key = part_key, check_identifiers = FALSE)))
    complete <- lapply(chunks, function(ch) ch[stats::complete.cases(ch), ])
    expect_identical(anonymise_partitioned(complete, vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = 3,
                                           method = "adaptive", m = 2, rate = 0.1, group_size = 50, future = TRUE,
                                           check_identifiers = FALSE),
                     anonymise_adaptive(do.call(rbind, complete), vars = c("Age", "Fare"), strata = c("Sex", "Pclass"),
                                        k = 3, m = 2, rate = 0.1, check_identifiers = FALSE))
    k_tab <- data.frame(Sex = rep(c("male", "female"), 3), Pclass = rep(1:3, each = 2), k = c(3L, 8L, 5L, 2L, 20L, 4L))
    expect_identical(anonymise_partitioned(complete, vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = k_tab,
                                           method = "stratum", group_size = 50, future = TRUE, check_identifiers = FALSE),
                     anonymise_adaptive(do.call(rbind, complete), vars = c("Age", "Fare"), strata = c("Sex", "Pclass"),
                                        k = k_tab, m = 0, check_identifiers = FALSE))
  }
  future::plan(future::sequential)
  skip_if_not_installed("parallelly")
  cl <- tryCatch(parallelly::makeClusterPSOCK(2, verbose = FALSE), error = function(e) NULL)
  skip_if(is.null(cl), "a two-worker PSOCK cluster on localhost could not start")
  on.exit(parallel::stopCluster(cl), add = TRUE)
  future::plan(future::cluster, workers = cl)
  expect_identical(future_run(chunks), ref)
})

test_that("progress is reported through progressr, one step per group", {
  skip_if_not_installed("progressr")
  skip_if_not_installed("future.apply")
  old <- future::plan(future::sequential)
  on.exit(future::plan(old), add = TRUE)
  old_opt <- options(progressr.enable = TRUE) # FALSE by default outside interactive sessions
  on.exit(options(old_opt), add = TRUE)
  steps <- 0
  chunks <- titanic_chunks(8)
  st <- suppressMessages(anonymise_stats(chunks, vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = 3,
                                         na = "median"))
  n_groups <- length(strata_groups(st, group_size = 50))
  withCallingHandlers(future_run(chunks), progression = function(p) {
    if (identical(p$type, "update")) steps <<- steps + p$amount
  })
  expect_equal(steps, n_groups)
})

test_that("a failed worker gives a classed error naming its strata", {
  skip_if_not_installed("future.apply")
  old <- future::plan(future::sequential)
  on.exit(future::plan(old), add = TRUE)
  chunks <- lapply(titanic_chunks(9), function(ch) ch[stats::complete.cases(ch), ])
  full <- do.call(rbind, chunks)
  source <- function(strata) {
    if (any(strata$Pclass == "2" & strata$Sex == "male")) stop("the connection was lost")
    full[paste(full$Sex, full$Pclass) %in% paste(strata$Sex, strata$Pclass), ]
  }
  err <- tryCatch(anonymise_partitioned(chunks, vars = c("Age", "Fare"), strata = c("Sex", "Pclass"), k = 3,
                                        group_size = 1, strata_source = source, future = TRUE,
                                        check_identifiers = FALSE),
                  error = function(e) e)
  expect_s3_class(err, "detanon_error_worker")
  expect_match(conditionMessage(err), "Sex=male, Pclass=2.*the connection was lost")
})

test_that("future = TRUE without future.apply is a clear error", {
  skip_if(requireNamespace("future.apply", quietly = TRUE), "future.apply is installed")
  expect_error(anonymise_partitioned(titanic_chunks(1), vars = "Fare", future = TRUE),
               class = "detanon_error_argument")
})

test_that("a worker carries only its own task, not the others' records", {
  st <- suppressMessages(anonymise_stats(titanic_chunks(10), vars = c("Age", "Fare"), strata = "Sex", k = 3,
                                         na = "median"))
  w <- detanon:::stratum_worker(NULL, st, 1L, function(...) NULL)
  expect_setequal(ls(environment(w), all.names = TRUE), c("source", "st", "nthreads", "p", "fun"))
  expect_identical(environmentName(parent.env(environment(w))), "detanon")
})

test_that("strata are keyed by their exact values, not their printed form (issue 34, item 4)", {
  set.seed(34)
  run <- function(strata_cols, chunk_at) {
    n <- length(strata_cols[[1L]])
    d <- data.frame(x = stats::rnorm(n), y = stats::rnorm(n))
    for (v in names(strata_cols)) d[[v]] <- strata_cols[[v]]
    chunks <- list(d[seq_len(chunk_at), ], d[-seq_len(chunk_at), ])
    ref <- anonymise(d, vars = c("x", "y"), strata = names(strata_cols), k = 3, check_identifiers = FALSE)
    out <- anonymise_partitioned(chunks, vars = c("x", "y"), strata = names(strata_cols), k = 3,
                                 check_identifiers = FALSE, future = FALSE)
    expect_identical(out, ref)
    st <- anonymise_stats(chunks, vars = c("x", "y"), strata = names(strata_cols), k = 3)
    # as many strata as anonymise() finds
    expect_identical(release_info(out)$counts$n_strata, nrow(st$strata_table))
    st$strata_table
  }
  t0 <- as.POSIXct("2024-01-01 10:00:00", tz = "UTC")
  # the reported inputs: each pair prints alike (or pastes alike) but is two strata
  expect_identical(nrow(run(list(s = rep(t0 + c(0, 0.4), each = 4)), 3)), 2L)
  expect_identical(nrow(run(list(s = rep(c(0.1 + 0.2, 0.3), each = 4)), 5)), 2L)
  expect_identical(nrow(run(list(s = rep(c(1e17, 1e17 + 16), each = 4)), 2)), 2L)
  expect_identical(nrow(run(list(s = rep(c("a\r=b", "a"), each = 4), s2 = rep(c("c", "b\r=c"), each = 4)), 3)), 2L)
  # variants: sub-millisecond times, NA and NaN apart, the string "NA" apart from NA, a
  # separator inside a factor label; 0 and -0 are one stratum, as in anonymise()
  expect_identical(nrow(run(list(s = rep(t0 + c(0, 1e-4, 2e-4), each = 3)), 4)), 3L)
  expect_identical(nrow(run(list(s = rep(c(NA, NaN, 1), each = 3)), 4)), 3L)
  expect_identical(nrow(run(list(s = rep(c(NA, "NA", "\001"), each = 3)), 4)), 3L)
  expect_identical(nrow(run(list(s = factor(rep(c("x\ry", "x"), each = 4)), s2 = rep(c("z", "y\rz"), each = 4)), 5)), 2L)
  expect_identical(nrow(run(list(s = rep(c(0, -0), each = 4)), 3)), 1L)
})

test_that("chunks with other columns are a classed error naming the chunk (issue 34, item 9)", {
  d <- titanic_paper()[1:120, c("Age", "Fare", "Pclass", "Sex", "Survived")]
  a <- d[1:60, c("Age", "Fare", "Pclass", "Sex")]
  b <- d[61:120, ]
  expect_snapshot(error = TRUE, {
    anonymise_partitioned(list(a, b), vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3, future = FALSE)
    anonymise_partitioned(list(b, a), vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3, future = FALSE)
  })
  # the same columns in another order are bound by name, as rbind() does
  b2 <- b[c("Survived", "Sex", "Pclass", "Fare", "Age")]
  out <- anonymise_partitioned(list(d[1:60, ], b2), vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3,
                               future = FALSE, check_identifiers = FALSE)
  expect_identical(out, anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex"), k = 3,
                                  check_identifiers = FALSE))
})
