# The paper's Titanic example: prepare the data, check the strata, anonymise, assess.
# Run with: Rscript inst/scripts/titanic-report.R (or `make demo`).
library(detanon)
d <- titanic_paper()
strata <- c("Pclass", "Sex", "Family")
cat("Strata (the paper's Table 2):\n")
print(strata_table(d, strata, k = 3, sensitive = "Survived"))
# PassengerId stays as the paper's pseudonym; a real release would replace a record
# number like it (see remove_identifiers()), which is what the identifier check warns about.
masked <- anonymise(d, k = 3, vars = c("Age", "Fare"), strata = strata, format = "none", check_identifiers = FALSE)
cat("\n")
print(release_info(masked))
cat("\nFirst records, original and masked:\n")
print(head(cbind(d[c("PassengerId", "Age", "Fare")],
                 masked_Age = round(masked$Age, 2), masked_Fare = round(masked$Fare, 2))))
cat("\n")
report <- assess(d, masked, vars = c("Age", "Fare"),
                 formula = Survived ~ Pclass + Sex + Age + Fare + Family,
                 family = binomial(), deterministic = TRUE)
print(report)
