#' Titanic passengers (Kaggle training data)
#'
#' The 891 passengers of the Kaggle "Titanic: Machine Learning from Disaster" training
#' set, as used by Avraam, Jones and Burton (2022) to illustrate deterministic
#' anonymisation. Built by `data-raw/titanic.R` from `data-raw/titanic_train.csv.gz`;
#' empty strings in `Cabin` and `Embarked` are kept as in the source.
#'
#' @format A data frame with 891 rows and 12 columns:
#' \describe{
#'   \item{PassengerId}{Row identifier, 1 to 891 (the paper's pseudonym).}
#'   \item{Survived}{0 = died, 1 = survived.}
#'   \item{Pclass}{Ticket class: 1, 2 or 3.}
#'   \item{Name}{Passenger name (a direct identifier).}
#'   \item{Sex}{"female" or "male".}
#'   \item{Age}{Age in years; 177 missing.}
#'   \item{SibSp}{Number of siblings and spouses aboard.}
#'   \item{Parch}{Number of parents and children aboard.}
#'   \item{Ticket}{Ticket number.}
#'   \item{Fare}{Passenger fare (pre-1970 British pounds).}
#'   \item{Cabin}{Cabin number ("" if unknown).}
#'   \item{Embarked}{Port: C = Cherbourg, Q = Queenstown, S = Southampton ("" for 2).}
#' }
#' @source Kaggle competition data, redistributed in the CRAN package 'titanic' (Paul
#'   Hendricks) under the CC0 public-domain dedication.
#' @family data
"titanic"

#' The Titanic data prepared as in the paper
#'
#' Applies the preparation of Avraam, Jones and Burton (2022, section "The Titanic
#' passengers' data"): the 177 missing ages are replaced by the median (28) of the 714
#' known ages; `Family` flags passengers with any sibling, spouse, parent or child aboard;
#' Name, Ticket, Cabin and Embarked are dropped and `PassengerId` stays as the pseudonym.
#'
#' @param data The [titanic] data or a data frame with the same columns.
#' @return A data frame with `PassengerId`, `Survived` (integer 0/1), `Pclass` (factor
#'   1/2/3), `Sex` (factor female/male), `Age`, `Fare` and `Family` (factor 0/1).
#' @examples
#' d <- titanic_paper()
#' table(d$Pclass, d$Family)
#' @family data
#' @export
titanic_paper <- function(data = detanon::titanic) {
  check_data_frame(data, "data")
  need <- c("PassengerId", "Survived", "Pclass", "Sex", "Age", "SibSp", "Parch", "Fare")
  missing <- setdiff(need, names(data))
  if (length(missing)) stop_arg("`data` lacks the Titanic columns ", quote_names(missing), ".", kind = "column")
  num <- c("PassengerId", "Survived", "Age", "SibSp", "Parch", "Fare")
  bad <- num[!vapply(data[num], is_continuous, logical(1))]
  if (length(bad)) {
    stop_arg("`data` columns ", quote_names(bad), " must be numeric, as in `titanic`; convert them ",
             "with as.numeric() first.", kind = "column")
  }
  age <- data$Age
  age[is.na(age)] <- stats::median(age, na.rm = TRUE)
  data.frame(
    PassengerId = data$PassengerId,
    Survived = as.integer(data$Survived),
    Pclass = factor(data$Pclass, levels = 1:3),
    Sex = factor(data$Sex, levels = c("female", "male")),
    Age = age,
    Fare = data$Fare,
    Family = factor(as.integer(data$SibSp + data$Parch > 0), levels = 0:1)
  )
}

#' UCI Adult census records: the k-quasi-identifiers of the (k, epsilon) experiments
#'
#' The 32,561 records of the UCI Adult training set (Becker and Kohavi 1996), reduced to
#' the columns that Holohan et al. (2017) use as k-quasi-identifiers, plus age. Built by
#' `data-raw/adult.R`. `inst/scripts/adult-keps.R` adds the synthetic height column of
#' the paper's experiments (see `vignette("adult-keps")`).
#'
#' @format A data frame with 32,561 rows and 5 columns:
#' \describe{
#'   \item{age}{Age in years (17 to 90), as in the source.}
#'   \item{year_of_birth}{`1994 - age` (the data come from the 1994 US Current Population
#'     Survey).}
#'   \item{sex}{Factor: Female, Male.}
#'   \item{race}{Factor with 5 levels, as in the source.}
#'   \item{marital_status}{Factor with 7 levels, as in the source.}
#' }
#' @source UCI Machine Learning Repository, \doi{10.24432/C5XW20}: Becker B, Kohavi R
#'   (1996). Adult. Licence: Creative Commons Attribution 4.0 International (CC BY 4.0).
#'   Taken from the first 32,561 rows of `AdultUCI` in the CRAN package 'arules' (the
#'   training set); the other 10 columns are not included.
#' @references Holohan N, Antonatos S, Braghin S, Mac Aonghusa P (2017).
#'   (k, epsilon)-anonymity: k-anonymity with epsilon-differential privacy.
#'   arXiv:1710.01615.
#' @family data
#' @examples
#' str(adult)
#' table(adult$marital_status)
"adult"
