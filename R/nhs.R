#' Check a data set against the NHS ISB 1523 individual-level plans
#'
#' Checks individual-level data against anonymisation plan 3 ("Derive individual-level
#' data to 'weak' k-anonymity") or plan 6 ("... 'strong' k-anonymity") of the NHS
#' Anonymisation Standard for Publishing Health and Social Care Data (ISB 1523, 2013) and
#' reports, item by item and in the standard's words, what conforms. The mandatory
#' techniques of both plans are "Suppression of direct identifiers", "Reduction in detail
#' in indirect identifiers (such as date of birth, postcode)" and weak or strong
#' k-anonymity:
#' * weak (plan 3): k = 3, and "the variables not controlled through k-anonymity must
#'   exclude: any derivation of date of birth (such as age range), gender, ethnic
#'   category, any derivation of postcode (such as area code), event dates (such as
#'   hospital admission date, whereas hospital admission month and year is acceptable),
#'   employer, occupation or staff group";
#' * strong (plan 6): k = 5, "all variables but one must be controlled through
#'   k-anonymity", and "the uncontrolled variable should not be full postcode, date of
#'   birth, or ethnic category".
#'
#' The standard allows a plan to be refined, e.g. "to set k-anonymity to 8": `k` may be
#' raised, not lowered. Besides the roles you declare, the check screens the columns of
#' role `"other"` with [detect_identifiers()] and marks suspicious ones for review.
#'
#' Dates of birth and event dates are judged by their form: Date and date-time columns
#' and strings such as `"2012-03-14"` or `"14/03/2012"` count as full dates (even if every
#' day is the 1st); ages, years, `"2012-03"` or bands pass. Postcodes fail when a value
#' has an inward code (`"LS1 4AP"`); districts (`"LS1"`) and areas (`"LS"`) pass.
#'
#' What the check cannot do: it relies on the roles you give (a column declared
#' `"other"` is not examined as a date of birth); it cannot assess the threat level or
#' the risk of extra information, which decide between the plans, nor the consultation
#' of the Caldicott Guardian; and k-anonymity of the controlled variables does not
#' protect against attribute disclosure (see `sensitive` in [strata_table()]). Masking
#' continuous variables with [anonymise()] replaces each value by a centroid of `k`
#' records, which is not k-anonymity in the standard's sense: masked variables count as
#' not controlled.
#'
#' @param data The data frame as it would be released (or as it goes into
#'   [anonymise()], whose masking leaves the categorical columns unchanged).
#' @param roles A named character vector (or list): names are columns, values their
#'   roles, one of `"direct"` (direct identifier), `"dob"` (date of birth or a
#'   derivation: age, age band, year of birth), `"gender"`, `"ethnicity"`, `"postcode"`
#'   (postcode or a derivation: district, area), `"event_date"`, `"employer"`,
#'   `"occupation"` (occupation or staff group), `"free_text"` or `"other"`. Columns not
#'   named are `"other"`.
#' @param strata Columns controlled through k-anonymity (the key variables).
#'   Default: the columns with an indirect-identifier role (`"dob"`, `"gender"`,
#'   `"ethnicity"`, `"postcode"`, `"event_date"`, `"employer"`, `"occupation"`).
#' @param k The k of the plan: 3 (weak) or 5 (strong) by default; may be raised.
#' @param plan `"weak"` (plan 3) or `"strong"` (plan 6).
#' @param controlled Deprecated name of `strata`.
#' @return An object of class `detanon_nhs_check`: a list with `plan`, `k`, `strata` (the
#'   controlled columns), `uncontrolled`, `items` (a data frame: `section` of the
#'   standard, `item`, `requirement` (the standard's words), `status` (`"pass"`,
#'   `"fail"`, `"review"` or `"n/a"`) and `detail`), `kanon` (the [kanon_check()] of the
#'   controlled variables) and `conforms` (no item fails). Items marked `"review"` need
#'   the custodian's judgement.
#' @seealso [nhs_gate()] to stop a pipeline unless the data conform.
#' @family checks
#' @examples
#' d <- titanic_paper()
#' d$Age <- generalise_bands(d$Age, width = 10, top = 60)
#' nhs_check(d, roles = c(PassengerId = "direct", Age = "dob", Sex = "gender"),
#'           plan = "weak")
#' @export
nhs_check <- function(data, roles, strata = NULL, k = NULL, plan = c("weak", "strong"), controlled) {
  if (!missing(controlled)) strata <- renamed_arg(controlled, "controlled", "strata", !is.null(strata))
  check_data_frame(data, "data")
  if (missing(roles)) {
    stop_arg("`roles` is missing: name the role of each identifying column, e.g. ",
             "c(nhs_no = \"direct\", age = \"dob\").")
  }
  roles <- check_roles(roles, data)
  if (is.character(strata) && length(strata) == 1L && strata %in% c("weak", "strong") &&
      !strata %in% names(data)) {
    # the old order (data, roles, plan, controlled, k), called by position
    warn_detanon("`plan` given by position is deprecated: `plan` now comes after `strata` and `k`; ",
                 "write `plan = \"", strata, "\"`.", kind = "deprecated")
    old_k <- if (is.numeric(plan)) plan
    plan <- strata
    strata <- if (is.character(k)) k
    k <- old_k
  }
  plan <- match_choice(plan, "plan")
  k_plan <- if (plan == "weak") 3L else 5L
  k <- if (is.null(k)) k_plan else check_whole(k, "k", min = k_plan, max = .Machine$integer.max)
  role_of <- stats::setNames(rep("other", ncol(data)), names(data))
  role_of[names(roles)] <- roles
  strata <- check_columns(strata, data, "strata", names(data)[role_of %in% nhs_indirect])
  if (any(role_of[strata] == "direct")) {
    stop_arg("`strata` includes direct identifiers (", quote_names(strata[role_of[strata] == "direct"]),
             "); they must be suppressed, not controlled. Remove them from `strata`.", kind = "column")
  }
  direct <- names(data)[role_of == "direct"]
  uncontrolled <- setdiff(names(data), c(strata, direct))
  df <- as.data.frame(data, stringsAsFactors = FALSE)

  ident <- nhs_items_identifiers(df, role_of, direct)
  reduced <- nhs_items_reduction(df, role_of)
  kan <- if (length(strata)) kanon_check(df, strata, k) else NULL
  items <- rbind(ident, reduced$items, nhs_item_kanon(kan, plan, k, strata),
                 nhs_items_uncontrolled(plan, uncontrolled, role_of, reduced$full_postcode,
                                        reduced$full_event_date))
  rownames(items) <- NULL
  structure(list(plan = plan, k = k, strata = strata, uncontrolled = uncontrolled,
                 items = items, kanon = kan, conforms = !any(items$status == "fail")),
            class = "detanon_nhs_check")
}

nhs_indirect <- c("dob", "gender", "ethnicity", "postcode", "event_date", "employer", "occupation")

nhs_item <- function(section, item, requirement, status, detail = "") {
  data.frame(section = section, item = item, requirement = requirement, status = status,
             detail = detail, stringsAsFactors = FALSE)
}

# nhs_check(), 6.4.3 and 6.4: direct identifiers, other unique items (screened), free text.
nhs_items_identifiers <- function(df, role_of, direct) {
  found <- detect_identifiers(df[names(df)[role_of == "other"]])
  ft <- names(df)[role_of == "free_text"]
  ft_found <- setdiff(found$column[found$free_text], ft)
  rbind(
    nhs_item("6.4.3", "Suppression of direct identifiers",
             paste("Suppression of name, address, widely-used unique person or record identifier (notably",
                   "National Insurance Number, NHS Number, Hospital Number), telephone number, email address,",
                   "and any other data item that on its own could uniquely identify the individual."),
             if (length(direct)) "fail" else "pass",
             if (length(direct)) paste("declared direct identifiers present:", quote_names(direct),
                                       "- drop or pseudonymise them (remove_identifiers())") else
               "no column is declared a direct identifier"),
    nhs_item("6.4.3", "Other data items that could uniquely identify (screen)",
             "... and any other data item that on its own could uniquely identify the individual.",
             if (nrow(found)) "review" else "pass",
             if (nrow(found)) paste0(found$column, ": ", found$reason, collapse = "; ") else
               "no other column looks like a direct identifier"),
    nhs_item("6.4", "Data suppression: free text", "Free-text data items, and human images, must be suppressed.",
             if (length(ft)) "fail" else if (length(ft_found)) "review" else "pass",
             if (length(ft)) paste("free-text columns present:", quote_names(ft)) else
               if (length(ft_found)) paste("columns that look like free text:", quote_names(ft_found)) else "")
  )
}

# nhs_check(), 6.4.2 reduction in detail: columns of a role that still hold full values
# fail; the full postcodes and event dates are returned for the uncontrolled-variable items.
nhs_items_reduction <- function(df, role_of) {
  full_of <- function(role, is_full) {
    cols <- names(df)[role_of == role]
    list(cols = cols, full = cols[vapply(cols, function(v) any(is_full(df[[v]])), logical(1))])
  }
  item <- function(f, item, requirement, what, fix) {
    nhs_item("6.4.2", item, requirement,
             if (!length(f$cols)) "n/a" else if (length(f$full)) "fail" else "pass",
             if (length(f$full)) paste(what, quote_names(f$full), fix) else "")
  }
  pc <- full_of("postcode", is_full_postcode)
  dob <- full_of("dob", is_full_date)
  ev <- full_of("event_date", is_full_date)
  items <- rbind(
    item(pc, "Reduction in detail: postcode", "Post code truncated to either area code or district code.",
         "full postcodes in", "- use generalise_postcode()"),
    item(dob, "Reduction in detail: date of birth",
         "No date of birth (e.g. transform to age, year of birth, or 5-year age band).",
         "full dates in", "- use age, year of birth or generalise_bands()"),
    item(ev, "Reduction in detail: event dates",
         "No event dates (e.g. transform admission date to admission year, or month and year).",
         "full dates in", "- use generalise_date()"))
  list(items = items, full_postcode = pc$full, full_event_date = ev$full)
}

# nhs_check(), 6.4.1: k-anonymity of the controlled variables.
nhs_item_kanon <- function(kan, plan, k, strata) {
  nhs_item("6.4.1", sprintf("%s k-anonymity: k", if (plan == "weak") "Weak" else "Strong"),
           if (plan == "weak") "k = 3" else "k = 5",
           if (is.null(kan)) "fail" else if (kan$conforms) "pass" else "fail",
           if (is.null(kan)) "no variable is controlled through k-anonymity: give `strata` or roles" else
             if (kan$n == 0L) "the data have no records" else
               if (kan$conforms) sprintf("%d-anonymous on %s (smallest class %d)", k, paste(strata, collapse = ", "),
                                         kan$min_size) else
                 sprintf("k = %d: %s of %s below k, %s (%.1f%%)", k,
                         plural(kan$n_small, "equivalence class", "equivalence classes"),
                         paste(strata, collapse = ", "), plural(kan$n_affected, "record"),
                         100 * kan$share_affected))
}

# nhs_check(), 6.4.1: what the plan allows among the variables not controlled.
nhs_items_uncontrolled <- function(plan, uncontrolled, role_of, full_pc, full_ev) {
  unc_role <- role_of[uncontrolled]
  if (plan == "weak") {
    banned <- uncontrolled[unc_role %in% c("dob", "gender", "ethnicity", "postcode", "employer", "occupation")]
    ev_unc <- uncontrolled[unc_role == "event_date"]
    ev_bad <- ev_unc[ev_unc %in% full_ev]
    bad <- c(banned, ev_bad)
    return(nhs_item("6.4.1", "Weak k-anonymity: variables not controlled",
        paste("The variables not controlled through k-anonymity must exclude: any derivation of date of",
              "birth (such as age range); gender; ethnic category; any derivation of postcode (such as",
              "area code); event dates (such as hospital admission date, whereas hospital admission",
              "month and year is acceptable); employer; occupation or staff group."),
        if (length(bad)) "fail" else "pass",
        paste0(if (length(bad)) paste0("not controlled but excluded: ",
                                       paste0("`", bad, "` (", role_label(role_of[bad]), ")", collapse = ", "), ". ")
               else "",
               if (length(setdiff(ev_unc, ev_bad))) paste0("event dates at month/year level, acceptable: ",
                                                          quote_names(setdiff(ev_unc, ev_bad)), ". ") else "",
               "not controlled: ", if (length(uncontrolled)) quote_names(uncontrolled, max = 12L) else "(none)")))
  }
  worst <- uncontrolled[unc_role %in% c("dob", "ethnicity") |
                          (unc_role == "postcode" & uncontrolled %in% full_pc)]
  other_ind <- setdiff(uncontrolled[unc_role %in% nhs_indirect], worst)
  rbind(
    nhs_item("6.4.1", "Strong k-anonymity: all variables but one controlled",
             "All variables but one must be controlled through k-anonymity.",
             if (length(uncontrolled) <= 1L) "pass" else "fail",
             paste0(length(uncontrolled), " not controlled",
                    if (length(uncontrolled)) paste0(": ", quote_names(uncontrolled, max = 12L)) else "")),
    nhs_item("6.4.1", "Strong k-anonymity: the uncontrolled variable",
             "The uncontrolled variable should not be full postcode, date of birth, or ethnic category.",
             if (length(worst)) "fail" else if (length(other_ind)) "review" else "pass",
             if (length(worst)) paste("not controlled:", paste0("`", worst, "` (", role_label(role_of[worst]), ")",
                                                               collapse = ", ")) else
               if (length(other_ind)) paste0("`", other_ind, "` is an indirect identifier: \"care should be taken ",
                                             "before any other indirect identifier is chosen as the uncontrolled ",
                                             "variable\"") else ""))
}

#' @rdname nhs_check
#' @description `nhs_gate()` runs the check and stops with the failing items unless the
#'   data conform; otherwise it returns `data` unchanged (invisibly), with a warning
#'   listing the items to review. Put it before [anonymise()] or before writing a release:
#'   `data |> nhs_gate(roles, plan = "weak") |> anonymise(...)`.
#' @export
nhs_gate <- function(data, roles, strata = NULL, k = NULL, plan = c("weak", "strong"), controlled) {
  if (!missing(controlled)) strata <- renamed_arg(controlled, "controlled", "strata", !is.null(strata))
  res <- nhs_check(data, roles, strata = strata, k = k, plan = plan)
  it <- res$items
  if (!res$conforms) {
    bad <- it[it$status == "fail", ]
    stop_arg(sprintf("The data do not conform to NHS ISB 1523 %s k-anonymity (plan %d); failing items:\n%s",
                     res$plan, if (res$plan == "weak") 3L else 6L,
                     paste0("  * ", bad$item, ": ", bad$detail, collapse = "\n")),
             "\nFix them (remove_identifiers(), generalise_*(), generalise_strata(), merge_small_strata()) ",
             "and run the check again; nhs_check() shows every item.", kind = "data")
  }
  rev <- it[it$status == "review", ]
  if (nrow(rev)) {
    warn_detanon("NHS ISB 1523 check passed, but review: ",
                 paste0(rev$item, " (", rev$detail, ")", collapse = "; "), kind = "review")
  }
  invisible(data)
}

#' @export
print.detanon_nhs_check <- function(x, ...) {
  cat(sprintf("NHS ISB 1523 plan %d: individual-level data, \"%s\" k-anonymity (k = %d)\n",
              if (x$plan == "weak") 3L else 6L, x$plan, x$k))
  cat("  controlled:", if (length(x$strata)) paste(x$strata, collapse = ", ") else "(none)", "\n")
  for (i in seq_len(nrow(x$items))) {
    it <- x$items[i, ]
    cat(sprintf("  [%s] %s (%s)\n", toupper(it$status), it$item, it$section))
    if (nzchar(it$detail)) cat(sprintf("         %s\n", it$detail))
  }
  n_rev <- sum(x$items$status == "review")
  cat(if (x$conforms) "  => conforms" else "  => does NOT conform",
      if (n_rev) paste0("; ", plural(n_rev, "item"), " to review") else "", "\n", sep = "")
  invisible(x)
}

nhs_roles <- c("direct", "dob", "gender", "ethnicity", "postcode", "event_date", "employer",
               "occupation", "free_text", "other")

role_label <- function(r) {
  c(direct = "direct identifier", dob = "date of birth or derivation", gender = "gender",
    ethnicity = "ethnic category", postcode = "postcode or derivation", event_date = "event date",
    employer = "employer", occupation = "occupation or staff group", free_text = "free text",
    other = "other")[r]
}

check_roles <- function(roles, data) {
  if (is.list(roles)) {
    ok <- all(vapply(roles, function(r) is.character(r) && length(r) == 1L, logical(1)))
    if (!ok) stop_arg("`roles` must be a named character vector, e.g. c(nhs_no = \"direct\", age = \"dob\").")
    roles <- unlist(roles)
  }
  if (!is.character(roles) || is.null(names(roles)) || any(!nzchar(names(roles))) || anyNA(roles)) {
    stop_arg("`roles` must be a named character vector, e.g. c(nhs_no = \"direct\", age = \"dob\"), not ",
             show_value(roles), ".")
  }
  check_columns(names(roles), data, "roles")
  bad <- setdiff(roles, nhs_roles)
  if (length(bad)) {
    stop_arg("`roles` has unknown roles: ", paste0("\"", bad, "\"", collapse = ", "), ". Use one of ",
             paste0("\"", nhs_roles, "\"", collapse = ", "), ".")
  }
  roles
}

is_full_postcode <- function(x) {
  if (is.factor(x)) x <- as.character(x)
  if (!is.character(x)) return(rep(FALSE, length(x)))
  grepl("^[A-Z]{1,2}[0-9][0-9A-Z]? ?[0-9][A-Z]{2}$", toupper(trimws(x)))
}

is_full_date <- function(x) {
  if (inherits(x, c("Date", "POSIXt"))) return(!is.na(x))
  if (is.factor(x)) x <- as.character(x)
  if (!is.character(x)) return(rep(FALSE, length(x)))
  grepl("^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}", x) | grepl("^[0-9]{1,2}[/.-][0-9]{1,2}[/.-][0-9]{2,4}", x)
}
