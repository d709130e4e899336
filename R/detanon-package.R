#' detanon: deterministic anonymisation of personal data
#'
#' The package masks continuous variables by the five-step procedure of Avraam, Jones
#' and Burton (2022): standardise; stratify by the categorical variables; find each
#' record's k - 1 nearest neighbours inside its stratum; replace it by the centroid of
#' the k points; rescale to the original SDs and means. See [anonymise()].
#'
#' @keywords internal
#' @useDynLib detanon, .registration = TRUE, .fixes = "C_"
"_PACKAGE"
