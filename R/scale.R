# ---- the z-scale --------------------------------------------------------------------
# Every verb, measure and attack that standardises columns uses the scale of
# column_scale() and the arithmetic of z_scale(). The one rule:
# * a column whose values are all tiny (p-values, subnormals) is first multiplied by a power
#   of two `e` (pow2_normalise()), exactly, so that its SD does not underflow to 0;
# * its centre and spread are the exact mean and SD of those values (col_stats(): order-free
#   sums, the same bits for any row order and thread count);
# * a column is on the z-scale when its spread is finite and > 0. A constant column (SD 0)
#   carries no information and is left out: a masking verb copies it, a measure ignores it.
#   A near-constant column (values equal but for the last bits) varies, so it is kept and
#   standardised like any other; a masking verb refuses a column that varies with an SD of 0
#   or an infinite one (masked_columns()).
# The kernels of src/ that standardise take this scale from R (ffi_anonymise(), ffi_mdav():
# the columns' means and SDs; one with SD 0 is not on the scale); the chunked path
# (anonymise_stats()) merges exact sums into the same statistics bit for bit. Two paths
# keep another scale on purpose, to reproduce others' numbers bit for bit: the rann engine
# of anonymise() (the authors' sd(), through z_scale()) and risk_rmd() (sdcMicro's scale()
# in dRiskRMD).

# The z-scale of the columns of the numeric matrix `x`: list(mean, sd) of the columns
# after their power-of-two factors `e` (pow2_factors(); zeros for columns already scaled by
# pow2_normalise()), and `keep`, the columns on the scale.
column_scale <- function(x, nthreads = 1L, e = pow2_factors(x)) {
  for (j in which(e != 0)) x[, j] <- times_pow2(x[, j], e[j])
  st <- col_stats(x, nthreads)
  list(mean = st$mean, sd = st$sd, e = stats::setNames(e, colnames(x)), keep = is.finite(st$sd) & st$sd > 0)
}

# The columns of `x` (power-of-two factors already applied) as (x - centre) / spread.
z_scale <- function(x, centre, spread) sweep(sweep(x, 2L, centre), 2L, spread, "/")

# The z-scores of the columns of `x` (matrix, same columns as the scale) on `scale`
# (column_scale(), or a subset of one): the columns it keeps, power-of-two factors applied.
z_scores <- function(x, scale) {
  for (j in which(scale$e != 0 & scale$keep)) x[, j] <- times_pow2(x[, j], scale$e[j])
  keep <- which(scale$keep)
  z_scale(x[, keep, drop = FALSE], scale$mean[keep], scale$sd[keep])
}

# The columns `cols` of a scale.
scale_columns <- function(scale, cols) lapply(scale, `[`, cols)
