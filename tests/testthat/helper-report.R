# Helpers for the leak scans of release_report() (test-report.R, test-app.R).

# The text of a report without the embedded images, the style sheet and the hash (whose hex digits could
# match a number by chance).
report_text <- function(file) {
  txt <- paste(readLines(file, warn = FALSE, encoding = "UTF-8"), collapse = "\n")
  txt <- gsub("base64,[A-Za-z0-9+/=]+", "base64,", txt)
  txt <- gsub("<style>.*</style>", "<style></style>", txt) # colours such as #a40000
  gsub("class=\"hash\">[0-9a-f]+<", "class=\"hash\"><", txt)
}

# Every number written in `txt`, as written and without thousands separators.
report_number_tokens <- function(txt) {
  tok <- regmatches(txt, gregexpr("[0-9][0-9,]*(\\.[0-9]+)?([eE][-+]?[0-9]+)?", txt))[[1]]
  unique(c(tok, gsub(",", "", tok, fixed = TRUE)))
}

# The ways R (and a report) may print the values `v`: as.character(), format(), fixed
# decimals 0-4, 4-8 significant digits, scientific, and with a thousands separator.
report_printed_forms <- function(v) {
  v <- v[is.finite(v)]
  out <- c(as.character(v), vapply(v, format, ""), format(v, nsmall = 2), trimws(format(v, big.mark = ",")),
           vapply(v, format, "", big.mark = ","))
  for (d in 0:4) out <- c(out, sprintf(paste0("%.", d, "f"), v))
  for (d in 4:8) {
    out <- c(out, as.character(signif(v, d)), formatC(v, digits = d, format = "fg"),
             formatC(v, digits = d, format = "g"), format(v, digits = d, scientific = TRUE))
  }
  out <- trimws(out)
  unique(c(out, sub("^-", "", out)))
}

# Printed forms of `v` that occur as numbers in the report text.
report_leaks <- function(txt, v, min_digits = 5L) {
  forms <- report_printed_forms(v)
  # significant digits: no leading zeros, no trailing zeros (of "40000" or "1.0000")
  sig <- nchar(sub("0+$", "", sub("^0+", "", gsub("[^0-9]", "", sub("[eE].*$", "", forms)))))
  forms <- forms[sig >= min_digits]
  intersect(forms, report_number_tokens(txt))
}

html_escape_test <- function(x) {
  x <- gsub("&", "&amp;", x, fixed = TRUE)
  x <- gsub("<", "&lt;", x, fixed = TRUE)
  gsub(">", "&gt;", x, fixed = TRUE)
}

# expect_match(fixed = TRUE) without printing the whole report on failure.
expect_has <- function(txt, s) {
  expect_true(grepl(s, txt, fixed = TRUE), label = paste0("the report contains \"", substr(s, 1, 100), "\""))
}

# The SHA-256 of a file's bytes, as a plain string.
sha256_file <- function(path) unclass(as.character(openssl::sha256(readBin(path, "raw", file.size(path)))))
