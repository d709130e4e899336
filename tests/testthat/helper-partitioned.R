# Data for the partitioned anonymise() tests: ties, constant columns, tiny values, integer
# columns, skewed tails (squeezed by the release form, or left as a crowd), tie piles, strata
# of 1 to 3 records, NA strata.
part_data <- function(seed) {
  set.seed(seed)
  n <- sample(c(5, 20, 60, 300), 1)
  d <- data.frame(
    a = round(stats::rnorm(n, 50, 10)),
    b = sample(c(1.5, 2.25, 3), n, TRUE),
    c = rep(7.3, n),
    t = stats::runif(n) * 1e-200,
    i = sample(-5:5, n, TRUE),
    w = stats::rexp(n)^3 * 1000,
    s1 = sample(letters[1:sample(1:4, 1)], n, TRUE),
    s2 = sample(c("x", "y", NA), n, TRUE),
    stringsAsFactors = FALSE)
  if (stats::runif(1) < 0.5) d$s1 <- factor(d$s1)
  # a zero-inflated count (a tie pile at the minimum: no bound there) and whole numbers of
  # wide spread (SD 500 or more: rounded by the natural form); w's skewed tail is often a
  # crowd beyond its bound (left where it is)
  d$z <- stats::rpois(n, 0.4)
  d$big <- round(stats::rnorm(n, 5000, 3000))
  d
}

# Random chunks of the rows of d (one of them empty), as a list.
part_chunks <- function(d, n_chunks) {
  f <- sample(seq_len(n_chunks), nrow(d), TRUE)
  unname(split(d, factor(f, levels = seq_len(n_chunks + 1L))))
}

# anonymise() (or the verb of `method`) on all rows and anonymise_partitioned() on the
# chunks: the same result or an error of the same class.
# (the keyed method with the custodian's secret `part_key`, unless `key` is given)
part_compare <- function(chunks, ..., group_size = 1e6, future = FALSE, method = "anonymise") {
  full <- do.call(rbind, chunks)
  quiet <- function(expr) tryCatch(suppressWarnings(suppressMessages(expr)), error = function(e) e)
  args <- list(...)
  if (method == "keyed" && is.null(args$key)) args$key <- part_key
  # (the stratum method is the verb with m = 0)
  if (method == "stratum" && is.null(args$m)) args$m <- 0
  ref <- quiet(do.call(match.fun(masking_methods()[[method]]$verb), c(list(full), args, check_identifiers = FALSE)))
  out <- quiet(do.call(anonymise_partitioned, c(list(chunks), args, method = method, check_identifiers = FALSE,
                                                group_size = group_size, future = future)))
  list(ref = ref, out = out)
}

part_key <- "secret-of-the-partitioned-tests"

# A table of k per stratum of d (method "stratum"), k from 2 to 6, as given or, at random, with
# its rows in another order, a row of a stratum absent from d (ignored), a stratum missing, or
# a k that is NA, not whole or below 2 (errors).
part_k_table <- function(d, strata) {
  tab <- if (length(strata)) unique(d[strata]) else data.frame(row.names = 1L)
  rownames(tab) <- NULL
  tab$k <- sample(2:6, nrow(tab), TRUE)
  switch(sample(5L, 1L),
         tab,
         tab[sample(nrow(tab)), , drop = FALSE],
         if (length(strata)) {
           extra <- tab[1L, , drop = FALSE]
           extra[[strata[1L]]] <- if (is.factor(tab[[strata[1L]]])) factor("absent") else "absent"
           rbind(tab, extra)
         } else tab,
         tab[-1L, , drop = FALSE],
         within(tab, k[1L] <- sample(list(NA, 2.5, 1L), 1L)[[1L]]))
}

stratum_keys_for_test <- function(data, strata) detanon:::stratum_keys(data, strata)
