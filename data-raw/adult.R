# Builds data/adult.rda from the UCI Adult training data (32,561 records) as stored in
# /work/shared/data/adult_train.csv (the first 32,561 rows of `AdultUCI` in CRAN's 'arules'):
# only the four k-quasi-identifiers of Holohan et al. (2017) and the age that the
# synthetic height of the experiments depends on. Run from the package root:
#   Rscript data-raw/adult.R [path/to/adult_train.csv]
args <- commandArgs(trailingOnly = TRUE)
path <- if (length(args)) args[1L] else "/work/shared/data/adult_train.csv"
a <- utils::read.csv(path, stringsAsFactors = FALSE, check.names = FALSE)
stopifnot(nrow(a) == 32561L, !anyNA(a[c("age", "sex", "race", "marital-status")]))
adult <- data.frame(
  age = as.integer(a$age),
  year_of_birth = 1994L - as.integer(a$age),  # the census year of the Adult data is 1994
  sex = factor(a$sex),
  race = factor(a$race),
  marital_status = factor(a[["marital-status"]])
)
save(adult, file = "data/adult.rda", compress = "xz")
