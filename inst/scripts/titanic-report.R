# The paper's Titanic example: prepare the data, check the strata, anonymise, report.
# Run with: Rscript inst/scripts/titanic-report.R (or `make demo`).
library(detanon)
d <- titanic_paper()
strata <- c("Pclass", "Sex", "Family")
cat("Strata (the paper's Table 2):\n")
print(strata_table(d, strata, k = 3, sensitive = "Survived"))
masked <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = strata)
cat("\n")
print(attr(masked, "detanon"))
cat("\nFirst records, original and masked:\n")
print(head(cbind(d[c("PassengerId", "Age", "Fare")],
                 masked_Age = round(masked$Age, 2), masked_Fare = round(masked$Fare, 2))))
