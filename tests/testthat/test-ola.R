# OLA against brute force over the whole lattice.

ola_random_case <- function(seed) {
  set.seed(seed)
  n <- sample(c(1L, 5L, 30L, 120L, 400L), 1L)
  d <- sample(1:3, 1L)
  df <- data.frame(row = seq_len(n))
  tabs <- list()
  for (j in seq_len(d)) {
    nv <- sample(c(1L, 2L, 5L, 12L), 1L)
    # skewed values with ties, sometimes constant
    df[[paste0("q", j)]] <- sample(seq_len(nv), n, replace = TRUE, prob = rev(seq_len(nv))^2)
    tabs[[j]] <- ref_random_table(seq_len(nv), sample(1:4, 1L))
  }
  quasi <- paste0("q", seq_len(d))
  list(df = df, quasi = quasi, tabs = stats::setNames(tabs, quasi),
       k = min(n, sample(c(2L, 3L, 5L, 10L), 1L)), max_suppression = sample(c(0, 0.02, 0.05, 0.2), 1L))
}

test_that("OLA finds the brute-force optimum, suppression and classes", {
  checked <- 0L
  for (seed in 1:40) {
    cs <- ola_random_case(seed)
    if (cs$k < 2L) next
    for (loss in c("precision", "discernibility", "entropy")) {
      h <- lapply(cs$tabs, hierarchy, top = FALSE)
      nodes <- ref_ola_nodes(cs$df, cs$quasi, cs$tabs, cs$k, loss)
      max_sup <- floor(cs$max_suppression * nrow(cs$df) + 1e-9)
      best <- ref_ola_best(nodes, length(cs$quasi), max_sup)
      call <- function() equivalence_classes(cs$df, k = cs$k, quasi = cs$quasi, strata = character(),
                                             method = "ola", hierarchies = h,
                                             max_suppression = cs$max_suppression, loss = loss)
      if (is.null(best)) {
        expect_error(call(), "No generalisation reaches k")
        next
      }
      ec <- call()
      info <- paste("seed", seed, loss)
      expect_equal(unname(ec$levels), unname(unlist(best[seq_along(cs$quasi)])), info = info)
      expect_equal(ec$n_suppressed, best$n_suppressed, info = info)
      expect_equal(unname(ec$loss), best$loss, tolerance = 1e-9, info = info)
      # the classes are the distinct generalised tuples of the kept records
      labs <- lapply(seq_along(cs$quasi), function(j) {
        t <- cs$tabs[[j]]
        t[[ec$levels[j] + 1L]][match(as.character(cs$df[[cs$quasi[j]]]), t[[1L]])]
      })
      key <- do.call(paste, c(labs, sep = "\r"))
      size <- as.vector(table(key)[key])
      expect_identical(is.na(ec$class), size < cs$k, info = info)
      kept <- !is.na(ec$class)
      expect_identical(match(ec$class[kept], unique(ec$class[kept])), match(key[kept], unique(key[kept])),
                       info = info)
      expect_identical(ec$classes$n, tabulate(ec$class, nrow(ec$classes)), info = info)
      checked <- checked + 1L
    }
  }
  expect_gt(checked, 60L)
})

test_that("predictive tagging never mislabels a node, and never skips the optimum", {
  for (seed in 101:130) {
    cs <- ola_random_case(seed)
    if (cs$k < 2L) next
    for (loss in c("precision", "discernibility", "entropy")) {
      df <- cs$df
      h <- lapply(cs$tabs, hierarchy, top = FALSE)
      lat <- detanon:::ola_lattice(df, cs$quasi, h, loss)
      max_sup <- floor(cs$max_suppression * nrow(df) + 1e-9)
      s <- detanon:::ola_search(lat, cs$k, max_sup, loss)
      nodes <- ref_ola_nodes(df, cs$quasi, cs$tabs, cs$k, loss)
      anon <- nodes$n_suppressed <= max_sup
      info <- paste("seed", seed, loss)
      expect_true(all(anon[s$status == 1L]), info = info)
      expect_true(!any(anon[s$status == -1L]), info = info)
      ev <- s$evaluated
      expect_equal(s$n_suppressed[ev], nodes$n_suppressed[ev], info = info)
      expect_equal(s$loss[ev], nodes$loss[ev], tolerance = 1e-9, info = info)
      best <- ref_ola_best(nodes, length(cs$quasi), max_sup)
      if (!is.null(best)) {
        expect_false(s$status[best$node] == -1L, info = info)
        expect_identical(s$best$idx, best$node, info = info)
      }
    }
  }
})

test_that("the C count agrees with brute force on the dense and the hash paths", {
  set.seed(7)
  for (nv in c(3L, 60L)) {  # 60^3 cells > the dense limit: hashing
    n <- 3000L
    df <- data.frame(a = sample(nv, n, TRUE), b = sample(nv, n, TRUE), c = sample(nv, n, TRUE))
    tabs <- lapply(df, function(x) ref_random_table(seq_len(nv), 3L))
    h <- lapply(tabs, hierarchy, top = FALSE)
    lat <- detanon:::ola_lattice(df, names(df), h, "discernibility")
    nodes <- ref_ola_nodes(df, names(df), tabs, 4L, "discernibility")
    for (i in c(1L, 5L, nrow(nodes))) {
      st <- .Call(detanon:::C_ffi_ola_node, lat$c, as.integer(unlist(nodes[i, 1:3])), 4L, FALSE)[[1L]]
      expect_equal(st[1L], nodes$n_suppressed[i])
      expect_equal(st[4L], nodes$loss[i])
    }
  }
})

test_that("the C count compresses keys whose radix product passes 2^62", {
  set.seed(11)
  n <- 2000L
  df <- as.data.frame(lapply(stats::setNames(1:7, paste0("v", 1:7)), function(j) sample(1500L, n, TRUE)))
  df$v1[1:40] <- 1L  # some duplicate tuples too
  df[1:40, 2:7] <- df[1, 2:7]
  tabs <- lapply(df, function(x) data.frame(value = as.character(seq_len(1500L)), top = "*"))
  h <- lapply(tabs, hierarchy, top = FALSE)
  lat <- detanon:::ola_lattice(df, names(df), h, "discernibility")
  key <- do.call(paste, df)
  size <- as.vector(table(key)[key])
  for (k in c(2L, 41L)) {
    st <- .Call(detanon:::C_ffi_ola_node, lat$c, rep(0L, 7), k, TRUE)
    expect_equal(st[[1L]][1L], sum(size < k))
    expect_equal(st[[1L]][5L], sum(as.numeric(table(key))^2))
    expect_identical(match(st[[2L]], unique(st[[2L]])), match(key, unique(key)))
  }
})

test_that("OLA is invariant to row order and keeps strata at their values", {
  set.seed(3)
  df <- data.frame(age = sample(20:70, 300, TRUE), sex = sample(c("f", "m"), 300, TRUE),
                   region = sample(c("n", "s", "e"), 300, TRUE))
  h <- list(age = hierarchy_bands(df$age, width = 5, levels = 3))
  ec <- equivalence_classes(df, k = 5, quasi = c("age", "region"), strata = "sex", method = "ola",
                            hierarchies = h)
  p <- sample(300)
  ec2 <- equivalence_classes(df[p, ], k = 5, quasi = c("age", "region"), strata = "sex", method = "ola",
                             hierarchies = h)
  expect_identical(ec2$class, ec$class[p])
  expect_identical(ec2$classes, ec$classes)
  kept <- !is.na(ec$class)
  # no class mixes the strata
  expect_true(all(tapply(df$sex[kept], ec$class[kept], function(x) length(unique(x))) == 1L))
  expect_true(all(ec$classes$n >= 5L))
  expect_lte(ec$n_suppressed, floor(0.05 * 300))
  expect_output(print(ec), "OLA \\(max suppression 5%\\)")
})

test_that("OLA reaches Table I levels on the Adult data", {
  a <- adult
  ms <- levels(a$marital_status)
  h <- list(year_of_birth = hierarchy_bands(a$year_of_birth, width = 2, levels = 3),
            sex = hierarchy(data.frame(value = levels(a$sex), person = "Person")),
            race = hierarchy(data.frame(value = levels(a$race))),
            marital_status = hierarchy(data.frame(value = ms, living = ifelse(grepl("^Married-(civ|AF)", ms),
                                                                              "In marriage", "Alone"))))
  ec <- equivalence_classes(a, k = 10, quasi = names(h), strata = character(), method = "ola", hierarchies = h)
  expect_identical(ec$lattice$n_nodes, 60L)
  expect_lte(ec$n_suppressed, floor(0.05 * nrow(a)))
  expect_true(all(ec$classes$n >= 10L))
})

test_that("OLA rejects bad input with clear errors", {
  df <- data.frame(a = c(1, 1, 2, 2, 3, 3), b = c("x", "y", "x", "y", "x", "y"))
  ola <- function(...) equivalence_classes(df, k = 2, method = "ola", strata = character(), ...)
  expect_error(ola(quasi = character()), "`quasi` is empty")
  expect_error(ola(quasi = "a", hierarchies = hierarchy(data.frame(v = 1:3))), "named list of hierarchies")
  expect_error(ola(quasi = "a", hierarchies = list(b = data.frame(v = c("x", "y")))), "not in `quasi`")
  expect_error(ola(quasi = "a", hierarchies = list(a = data.frame(v = 1:2))), "no entry for 1 value")
  expect_error(ola(quasi = "a", hierarchies = list(a = "x")), "must be a hierarchy")
  expect_error(ola(quasi = "a", max_suppression = 2), "`max_suppression` must be a single finite number >= 0 and <= 1")
  expect_error(ola(quasi = "a", loss = "gini"), "loss")
  expect_error(equivalence_classes(df, k = 2, quasi = "a", hierarchies = list(a = data.frame(v = 1:3))),
               "apply to `method = \"ola\"` only")
  # the coarsest node cannot reach k = 5 in the single stratum of 3 records without suppressing them
  expect_error(equivalence_classes(df, k = 4, quasi = "a", strata = "b", method = "ola", max_suppression = 0,
                                   small_strata = "suppress"),
               "No generalisation reaches k = 4")
  expect_error(equivalence_classes(df, k = 4, quasi = "a", strata = "b", method = "ola"), "fewer than k = 4")
  bad <- df
  bad$a[1] <- NA
  expect_error(equivalence_classes(bad, k = 2, quasi = "a", strata = character(), method = "ola"),
               "missing values")
  before <- df
  try(ola(quasi = "a", max_suppression = -1), silent = TRUE)
  expect_identical(df, before)
})

test_that("anonymise_keps_with_key() and keps_error() take OLA classes", {
  set.seed(5)
  df <- data.frame(age = sample(20:70, 400, TRUE), sex = sample(c("f", "m"), 400, TRUE),
                   height = rnorm(400, 170, 9))
  h <- list(age = hierarchy_bands(df$age, width = 5, levels = 3))
  ec <- equivalence_classes(df, k = 10, quasi = c("age", "sex"), strata = character(), method = "ola",
                            hierarchies = h, max_suppression = 0.05)
  set.seed(1)
  r <- anonymise_keps_with_key(df, epsilon = 4, vars = "height", classes = ec)
  expect_identical(r$info$n_released, sum(!is.na(ec$class)))
  expect_identical(r$info$n_suppressed, ec$n_suppressed)
  # the quasi-identifiers are released as their generalised labels
  expect_s3_class(r$data$age, "factor")
  expect_identical(as.character(r$data$age), ec$classes$age[r$class])
  expect_false(any(as.character(df$age) %in% levels(r$data$age)) && ec$levels[["age"]] > 0L)
  expect_true(all(!is.na(ec$class[r$origin_row])))
  e <- keps_error(df, epsilon = c(1, 4), vars = "height", classes = ec)
  expect_equal(e$error[2], r$info$expected_error[["height"]])
  expect_error(anonymise_keps_with_key(df, epsilon = 4, vars = "height", classes = ec, strata = "sex"),
               "either `classes` or `quasi`/`strata`")
  expect_error(anonymise_keps_with_key(df, epsilon = 4, k = 3, vars = "height", classes = ec), "differs from the `k`")
  expect_error(anonymise_keps_with_key(df[-1, ], epsilon = 4, vars = "height", classes = ec), "built on 400 records")
  expect_error(anonymise_keps_with_key(df, epsilon = 4, vars = "height", classes = rep(1:2, 200), k = 300),
               "fewer than `k`")
})

test_that("a class per record gives the same release as the strata it encodes", {
  set.seed(9)
  df <- data.frame(g = sample(c("a", "b", "c"), 200, TRUE), y = rexp(200) + 1)
  set.seed(2)
  r1 <- anonymise_keps_with_key(df, epsilon = 2, k = 5, vars = "y", strata = "g")
  set.seed(2)
  r2 <- anonymise_keps_with_key(df, epsilon = 2, k = 5, vars = "y", classes = match(df$g, sort(unique(df$g))))
  expect_identical(r2$data$y, r1$data$y)
  expect_identical(r2$origin_row, r1$origin_row)
})

test_that("risk_class_link() takes a classes object", {
  set.seed(8)
  df <- data.frame(g = sample(c("a", "b"), 100, TRUE), y = rnorm(100))
  ec <- equivalence_classes(df, k = 5, quasi = "g", strata = character(), method = "ola")
  m <- transform(df, y = y + rnorm(100, sd = 0.1))
  expect_equal(risk_class_link(df, m, vars = "y", classes = ec)$rate,
               risk_class_link(df, m, vars = "y", classes = ec$class)$rate)
  ec$class[1] <- NA
  expect_error(risk_class_link(df, m, vars = "y", classes = ec), "suppressed records")
})

test_that("an OLA result with every record suppressed prints", {
  d <- data.frame(a = c(1, 2, 3, 4), g = c("x", "y", "z", "w"))
  ec <- equivalence_classes(d, quasi = "a", strata = "g", k = 2, method = "ola", small_strata = "suppress",
                            max_suppression = 1)
  expect_identical(ec$n_suppressed, 4L)
  out <- expect_silent(utils::capture.output(print(ec)))
  expect_match(out[1L], "No equivalence class \\(k = 2\\): every record is suppressed")
  expect_true(any(grepl("suppressed 4 records", out)))
})

test_that("OLA's cost per node does not grow with the lattice (8^6 nodes on 5,000 rows)", {
  skip_on_cran()
  set.seed(23)
  n <- 5000
  d <- as.data.frame(replicate(6, sample(0:127, n, TRUE)))
  names(d) <- paste0("q", 1:6)
  h <- lapply(d, function(v) hierarchy_bands(v, width = 1, levels = 6))
  expect_identical(unname(lengths(lapply(h, `[[`, "n_groups"))), rep(8L, 6))
  t <- system.time(ec <- equivalence_classes(d, quasi = names(d), strata = character(), k = 5, method = "ola",
                                             hierarchies = h))[["elapsed"]]
  expect_identical(ec$lattice$n_nodes, 262144L)
  # tagging the whole lattice per visited node took over 60 s here; now a few seconds
  expect_lt(t, 30)
  expect_true(all(ec$classes$n >= 5))
})
