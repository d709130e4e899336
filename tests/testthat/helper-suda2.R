# Slow, independent R reference for SUDA2 (?risk_suda2): every subset of the keys is
# enumerated; a record is unique on a subset when it has no missing value there and no
# other record shares its values on it; a unique subset is an MSU when no subset one key
# smaller is unique. An MSU of s keys weighs (m - s)!.
ref_suda2 <- function(x) {
  x <- as.data.frame(x)
  n <- nrow(x)
  m <- ncol(x)
  vals <- lapply(x, as.character)
  n_sub <- 2^m - 1
  uniq <- matrix(FALSE, n, n_sub)
  keys_of <- function(s) which(bitwAnd(s, 2^(seq_len(m) - 1)) > 0)
  for (s in seq_len(n_sub)) {
    v <- keys_of(s)
    ok <- Reduce(`&`, lapply(vals[v], function(z) !is.na(z)))
    key <- do.call(paste, c(vals[v], sep = "\r"))
    cnt <- vapply(seq_len(n), function(i) sum(ok & key == key[i]), numeric(1))
    uniq[, s] <- ok & cnt == 1
  }
  score <- numeric(n)
  raw <- matrix(0, n, m)
  for (s in seq_len(n_sub)) {
    v <- keys_of(s)
    msu <- uniq[, s]
    if (length(v) > 1) for (j in v) msu <- msu & !uniq[, s - 2^(j - 1)]
    w <- factorial(m - length(v))
    score[msu] <- score[msu] + w
    raw[msu, v] <- raw[msu, v] + w
  }
  full <- do.call(paste, c(lapply(vals, function(z) ifelse(is.na(z), "\001", z)), sep = "\r"))
  size <- as.vector(table(full)[full])
  list(score = score, raw = raw, share = raw / ifelse(score > 0, score, 1),
       n_pairs = sum(size == 2), n_unique = sum(size == 1))
}

# DIS-SUDA scores from SUDA scores by the documented formula (Q in single precision).
ref_dis <- function(score, n_pairs, m, f = 0.01) {
  q32 <- function(x) readBin(writeBin(x, raw(), size = 4), "double", size = 4)
  q <- q32(1 + q32(q32(8 - m) / 20))
  t <- n_pairs * (1 - f) / f
  a <- sum(score[score > 0]^-q)
  ifelse(score > 0, 1 / (1 + t / (score^q * a)), 0)
}

# Slow reference for the counts of suppress_local(), as sdcMicro's freqCalc(alpha = 1)
# counts: for each record, the records whose keys equal its own wherever both are present
# (a missing value matches anything), except that with two or more keys a record without
# missing keys does not count the records whose keys are all missing.
ref_wildcard_counts <- function(x) {
  x <- as.data.frame(x)
  v <- lapply(x, as.character)
  n <- nrow(x)
  n_na <- Reduce(`+`, lapply(v, is.na))
  vapply(seq_len(n), function(i) {
    ok <- rep(TRUE, n)
    for (z in v) ok <- ok & (is.na(z) | is.na(z[i]) | z == z[i])
    if (length(v) >= 2 && n_na[i] == 0) ok <- ok & n_na < length(v)
    sum(ok)
  }, numeric(1))
}

# Inputs of the saved-result test of risk_suda2() (fixtures/suda2-results.rds): mixed key
# types with missing values, many equal records, more key bits than fit one 64-bit word.
suda2_fixture_calls <- function() {
  set.seed(20261126)
  n <- 400
  mixed <- data.frame(
    i = sample(c(-2L, 0L, 5L, 7L), n, TRUE), d = sample(c(1, 2, 4), n, TRUE),
    s = sample(c("x", "y", "z", "?"), n, TRUE), f = factor(sample(c("u", "v"), n, TRUE), levels = c("w", "v", "u")),
    l = sample(c(TRUE, FALSE), n, TRUE), r = sample(c(0.5, 1.25, 3), n, TRUE), stringsAsFactors = FALSE)
  mixed[matrix(runif(n * 6) < 0.1, n)] <- NA
  # rare values of skewed keys among many equal records
  dense <- as.data.frame(lapply(c(2, 3, 6, 12), function(k) sample(seq_len(k), 2000, TRUE, prob = seq_len(k)^-2)))
  names(dense) <- c("a", "b", "c", "d")
  wide <- as.data.frame(matrix(sample(1:40, 40 * 14, TRUE), 40))
  wide[36:40, ] <- wide[1:5, ]
  list(
    mixed = function() risk_suda2(mixed, names(mixed), dis_fraction = 0.1, missing = "?"),
    dense = function() risk_suda2(dense, names(dense)),
    wide = function() risk_suda2(wide, names(wide))
  )
}
