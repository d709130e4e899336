# Benchmark: optimal lattice anonymisation (equivalence_classes(method = "ola")).
# Run once:  R_LIBS=<lib with detanon> Rscript bench/ola.R   (part (c) alone: ... bench/ola.R sdc)
# Prints (CPU times where the machine is shared; elapsed beside them in (a))
#   (a) the whole search at n = 1e6 on a lattice of 1,620 nodes (six quasi-identifiers),
#       for each loss;
#   (b) the cost of counting one lattice node in C against a plain R count (integer keys
#       and tabulate(), the fastest plain R way) on the same nodes, and the ratio;
#   (c) where sdcMicro is installed, its global recoding (globalRecode) plus local
#       suppression (kAnon) on the same data and k at n = 1e5, beside OLA on those data.
library(detanon)

sim <- function(n, seed = 1) {
  set.seed(seed)
  data.frame(age = sample(18:90, n, TRUE),
             sex = sample(c("f", "m"), n, TRUE),
             region = sample(sprintf("R%02d", 1:12), n, TRUE, prob = (1:12)^0.5),
             marital = sample(c("single", "married", "divorced", "widowed"), n, TRUE, prob = c(4, 5, 2, 1)),
             education = sample(sprintf("E%d", 1:8), n, TRUE),
             zip = sprintf("%05d", sample(10000:19999, n, TRUE)),
             stringsAsFactors = FALSE)
}

hier <- function(d) {
  zips <- sort(unique(d$zip))
  list(age = hierarchy_bands(d$age, width = 5, levels = 4),                      # 6 levels
       sex = hierarchy(data.frame(value = c("f", "m"))),                          # 2
       region = hierarchy(data.frame(value = sprintf("R%02d", 1:12),
                                     area = rep(c("North", "South", "West"), each = 4))),  # 3
       marital = hierarchy(data.frame(value = c("single", "married", "divorced", "widowed"),
                                      living = c("alone", "couple", "alone", "alone"))),   # 3
       education = hierarchy(data.frame(value = sprintf("E%d", 1:8), level = rep(c("low", "high"), each = 4))),  # 3
       zip = hierarchy(data.frame(value = zips, z4 = paste0(substr(zips, 1, 4), "*"),
                                  z3 = paste0(substr(zips, 1, 3), "**"), z2 = paste0(substr(zips, 1, 2), "***"),
                                  z1 = paste0(substr(zips, 1, 1), "****"))))      # 6
}

# Plain R count of one node: the same statistics as the C kernel for the precision loss.
r_count <- function(codes, gen, card, level, k) {
  key <- numeric(nrow(codes))
  mult <- 1
  for (j in seq_len(ncol(codes))) {
    key <- key + gen[[j]][codes[, j] + 1L, level[j] + 1L] * mult
    mult <- mult * card[[j]][level[j] + 1L]
  }
  id <- match(key, unique(key))
  size <- tabulate(id)
  c(n_suppressed = sum(size[size < k]), n_classes = sum(size >= k))
}

k <- 5
quasi <- c("age", "sex", "region", "marital", "education", "zip")
args <- commandArgs(trailingOnly = TRUE)
only_sdc <- length(args) >= 1L && args[1L] == "sdc"  # Rscript bench/ola.R sdc [n]: part (c) only
n <- 1e6
if (!only_sdc) {
d <- sim(n)
h <- hier(d)
quasi <- names(h)
cat(sprintf("(a) OLA, n = %g, k = %d, %d quasi-identifiers, lattice of %d nodes, max suppression 5%%\n",
            n, k, length(quasi), prod(vapply(h, function(x) ncol(x$table), 1L))))
for (loss in c("precision", "discernibility", "entropy")) {
  tt <- system.time(ec <- equivalence_classes(d, k = k, quasi = quasi, strata = character(), method = "ola",
                                              hierarchies = h, loss = loss))
  t <- tt[["elapsed"]]
  cat(sprintf("  %-15s %6.2f s (CPU %.2f s): levels %s, suppressed %.2f%%, %d nodes counted, %d tagged\n",
              loss, t, tt[["user.self"]] + tt[["sys.self"]],
              paste(ec$levels, collapse = ""), 100 * ec$n_suppressed / n, ec$lattice$n_evaluated,
              ec$lattice$n_tagged))
}

lat <- detanon:::ola_lattice(d, quasi, h, "precision")
set.seed(2)
nodes <- t(replicate(20, vapply(lat$h, function(x) sample(x, 1L) - 1L, 1L)))
cpu <- function(tt) tt[["user.self"]] + tt[["sys.self"]]
t_c <- cpu(system.time(for (i in seq_len(nrow(nodes)))
  st <- .Call(detanon:::C_ffi_ola_node, lat$c, as.integer(nodes[i, ]), as.integer(k), FALSE)))
t_r <- cpu(system.time(for (i in seq_len(nrow(nodes)))
  rr <- r_count(lat$c$codes, lat$c$gen, lat$c$card, nodes[i, ], k)))
chk <- vapply(seq_len(nrow(nodes)), function(i) {
  a <- .Call(detanon:::C_ffi_ola_node, lat$c, as.integer(nodes[i, ]), as.integer(k), FALSE)[[1L]][1:2]
  all(a == r_count(lat$c$codes, lat$c$gen, lat$c$card, nodes[i, ], k))
}, logical(1))
cat(sprintf("(b) one node at n = %g (CPU time): C %.1f ms, plain R %.1f ms: ratio %.1f (same counts: %s)\n",
            n, 1000 * t_c / nrow(nodes), 1000 * t_r / nrow(nodes), t_r / t_c, all(chk)))
cat(sprintf("    the whole lattice (%d nodes) counted in plain R would take about %.0f s\n",
            prod(lat$h), prod(lat$h) * t_r / nrow(nodes)))

}

cpu <- function(tt) tt[["user.self"]] + tt[["sys.self"]]
if (requireNamespace("sdcMicro", quietly = TRUE)) {
  n2 <- if (length(args) >= 2L) as.numeric(args[2L]) else 1e5
  d2 <- sim(n2, seed = 3)
  h2 <- hier(d2)
  t_ola <- cpu(system.time(ec2 <- equivalence_classes(d2, k = k, quasi = quasi, strata = character(),
                                                       method = "ola", hierarchies = h2)))
  # sdcMicro: the same age bands as OLA chose, then local suppression to k-anonymity
  band <- ec2$levels[["age"]]
  d3 <- d2
  for (v in setdiff(quasi, "age")) d3[[v]] <- factor(d3[[v]])
  t_sdc <- system.time({
    obj <- sdcMicro::createSdcObj(d3, keyVars = quasi)
    if (band > 0L) {
      w <- 5 * 2^(band - 1L)
      br <- seq(15, 95 + w, by = w)
      obj <- sdcMicro::globalRecode(obj, column = "age", breaks = br)
    }
    obj <- sdcMicro::kAnon(obj, k = k)
  }) |> cpu()
  ls <- tryCatch(sum(unlist(obj@localSuppression$supps)), error = function(e) NA)
  cat(sprintf("(c) n = %g, k = %d (CPU time): OLA %.2f s (levels %s, %d records suppressed); sdcMicro globalRecode + kAnon %.2f s (%s values suppressed): ratio %.1f\n",
              n2, k, t_ola, paste(ec2$levels, collapse = ""), ec2$n_suppressed, t_sdc,
              format(ls), t_sdc / t_ola))
} else {
  cat("(c) sdcMicro is not installed: skipped\n")
}
