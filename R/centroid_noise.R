# The keyed noise of shared-centroid releases: the finishing step of anonymise_keyed() and
# of the MDAV releases of tune_release() (and of any verb that releases group means).
#
# Why. A release in which every record of a group releases the group's exact mean keeps
# every stratum's column sums exactly. Released again after one person is added or
# withdrawn (same settings, same or a new key), the difference of the two releases' sums
# is that person's values, exactly and with no background knowledge (the differencing
# attack, attack_differencing()).
#
# What. Every group's mean of every masked variable gets uniform noise on [-2 b, 2 b],
#     b = (unit + range + offset) / size,
# so that its sum (size x mean) gets noise of scale unit + range + offset:
# * `unit`: the variable's SD over the data rounded down to a power of two (one record more or
#   fewer almost never moves it, so the scale of an unchanged group does not change and
#   tells nothing about the record that came or went);
# * `range`: the spread of the group's own values (max - min);
# * `offset`: the distance of the group's mean from the variable's centre (its median
#   rounded to a multiple of `unit`), so that groups in the tails, whose members' values
#   are the most telling, get noise of the size of their values.
# The difference of two releases' sums then carries the noise of every group whose
# membership changed: the recovered value is off by about its own distance from the centre
# plus one SD, not within a few percent.
#
# Which noise. The noise of a group is drawn from keyed uniforms of its membership: the
# keyed hash (SipHash-2-4 under the custodian's secret) of the group's size and its
# records' values in a canonical order (src/keyed.c, keyed_group_uniforms()). So
# * a group whose members are the same in two releases under the same secret gets the same
#   noise: the difference of the two releases shows nothing new about it (fresh noise would
#   let an intruder average the group's true mean out of many re-releases);
# * a group that gained or lost a member gets independent noise: its difference is the
#   newcomer's values plus the noise of both versions of the group;
# * without the secret nobody can recompute the noise, even holding every original.
# The noise does not depend on the row order, on `nthreads`, or on R's random stream.
#
# Why uniform. What the differencing intruder gets right is the share of claims within a
# few percent of the truth: the density at 0 of the difference of two noises. For the same
# density there, uniform noise on [-2 b, 2 b] adds two thirds of the variance of Laplace
# noise of scale b, and none of its rare huge draws, which in a tail group of a few records
# dominate the loss (utility_delta() of the MDAV groups of 10 on Titanic, three secrets:
# Fare 0.35-0.40 with uniform noise, 0.43-0.73 with Laplace noise; the share of withdrawn
# persons' Age within 5% 2-3% with either).

# The noise's key from the custodian's secret (raw): a separate domain, so that the noise
# and the keyed partition never share uniforms.
noise_secret <- function(secret) c(secret, charToRaw("detanon centroid noise"))

# A secret for a release without a key (the MDAV releases of tune_release()): 32 bytes
# from R's random stream, so that `seed` reproduces it.
noise_secret_from_rng <- function() as.raw(floor(stats::runif(32L) * 256))

# The noisy group means: x the n x d originals of the masked columns (complete), group the
# group of every row (1..G, every group non-empty), means the G x d exact group means (on
# the scale of x), secret the raw secret, centre the noise's unit and centre of every column
# (noise_centre(); the partitioned path gives those of all the data). Returns the G x d
# noisy means.
centroid_noise <- function(x, group, means, secret, centre = noise_centre(x)) {
  x <- as.matrix(x)
  storage.mode(x) <- "double"
  means <- as.matrix(means)
  n_groups <- nrow(means)
  d <- ncol(x)
  if (!n_groups || !d) return(means)
  size <- tabulate(group, n_groups)
  # the rows of every group together, in a canonical order (the values), -0 as +0
  o <- do.call(order, c(list(group), unname(as.data.frame(x)), method = "radix"))
  u <- .Call(C_ffi_keyed_group_uniforms, x[o, , drop = FALSE] + 0, as.integer(c(0L, cumsum(size))), d,
             noise_secret(secret))
  scale <- noise_scale(x, group, means, size, centre)
  means + 2 * scale * (2 * u - 1)
}

# The noise scale of every group mean (G x d): (unit + range + offset) / size, as above;
# 0 for a constant column.
noise_scale <- function(x, group, means, size, centre = noise_centre(x)) {
  n_groups <- length(size)
  off <- c(0L, cumsum(size))
  out <- matrix(0, n_groups, ncol(x))
  for (j in which(is.finite(centre$unit))) {
    v <- x[, j]
    o <- order(group, v, method = "radix")
    range <- v[o[off[-1L]]] - v[o[off[-length(off)] + 1L]]
    out[, j] <- (centre$unit[j] + range + abs(means[, j] - centre$centre[j])) / size
  }
  out
}

# The noise's `unit` (the SD rounded down to a power of two; NA for a constant column) and
# `centre` (the median rounded to a multiple of unit) of the columns of x, from their SDs
# and medians.
noise_centre <- function(x, sd = apply(x, 2L, stats::sd), median = apply(x, 2L, stats::median)) {
  ok <- is.finite(sd) & sd > 0
  unit <- ifelse(ok, 2^floor(log2(sd)), NA_real_)
  list(unit = unit, centre = unit * round(median / unit))
}
