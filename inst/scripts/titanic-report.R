# The recommended path on the bundled Titanic data (the README's worked example): declare the
# roles of the columns, let tune_release() find the least damaging release within the default
# limits, read the verdict, then write the file to publish and the report for the committee.
# Run with: Rscript inst/scripts/titanic-report.R [OUTDIR] (or `make demo`); the release and
# the report are written to OUTDIR (default: a temporary folder).
library(detanon)
args <- commandArgs(trailingOnly = TRUE)
outdir <- if (length(args)) args[[1L]] else file.path(tempdir(), "titanic-release")
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)

d <- titanic_paper()[-1] # 891 passengers, without the passenger number (a direct identifier)
vars <- c("Age", "Fare") # masked
strata <- c("Pclass", "Sex", "Family") # released unchanged; records are masked within them
cat("The strata, with the number of passengers and the share who survived:\n")
print(strata_table(d, strata, k = 3, sensitive = "Survived"))

# The intruder holds every published column: the originals of the masked variables, the
# strata and Survived (released unchanged), and knows the algorithm and its settings, not the key.
# A custodian keeps the key secret (a file outside the release, an environment variable).
key <- Sys.getenv("DETANON_KEY", "a long secret phrase kept by the custodian")
# Survived leaves a few passengers alone in their cell: they are left out of the release
# (small_strata = "suppress"; the default, "fail", returns no release and names the column).
# The loss the search minimises is the change of the analysis the release is for (a survival
# model), in standard errors of its coefficients.
f <- Survived ~ Pclass + Sex + Age + Fare + Family
tuned <- tune_release(d, vars = vars, strata = strata, key = key, small_strata = "suppress",
                      objective = "model", formula = f, family = binomial())
cat("\n")
print(tuned)
if (is.null(tuned$release)) stop("no candidate met the limits; nothing to publish")

# the file to publish: its rows in a random order (write_release() never keeps the input's)
csv <- write_release(tuned$release, file.path(outdir, "titanic-release.csv"))
report <- release_report(d, tuned, file.path(outdir, "titanic-report.html"),
                         formula = f, family = binomial(),
                         release_file = csv)
cat("\nThe file to publish:  ", csv, "\n", sep = "")
cat("The report (verdict first): ", report, "\n", sep = "")
cat("SHA-256 of the release: ", attr(report, "sha256"), "\n", sep = "")
