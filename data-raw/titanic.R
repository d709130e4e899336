# Builds data/titanic.rda from the Kaggle Titanic training data (891 passengers) as
# packaged on CRAN in 'titanic' (CC0). Run from the package root:
#   Rscript data-raw/titanic.R
titanic <- utils::read.csv("data-raw/titanic_train.csv.gz", stringsAsFactors = FALSE)
stopifnot(nrow(titanic) == 891L, sum(is.na(titanic$Age)) == 177L)
save(titanic, file = "data/titanic.rda", compress = "xz")
