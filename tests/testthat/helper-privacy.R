# Leak detectors shared by test-invariants.R and test-privacy.R.

# Every atomic value reachable from `x`: list elements, data frame columns, attributes
# (names, row names, class, custom ones), and the objects in the environments of closures,
# formulas and environment components (package, global and base environments excluded).
reachable_values <- function(x) {
  seen_env <- list()
  out <- list()
  skip_env <- function(e) {
    identical(e, globalenv()) || identical(e, baseenv()) || identical(e, emptyenv()) ||
      isNamespace(e) || startsWith(environmentName(e), "package:")
  }
  walk <- function(v) {
    if (is.environment(v)) {
      if (skip_env(v) || any(vapply(seen_env, identical, TRUE, v))) return()
      seen_env[[length(seen_env) + 1L]] <<- v
      for (nm in ls(v, all.names = TRUE)) walk(get(nm, envir = v))
      walk(parent.env(v))
      return()
    }
    if (is.function(v)) {
      if (!is.primitive(v)) walk(environment(v))
    } else if (is.atomic(v)) {
      out[[length(out) + 1L]] <<- v
    } else if (is.list(v)) {
      for (el in v) walk(el)
    } else if (is.language(v)) {
      out[[length(out) + 1L]] <<- all.names(v)
    }
    a <- attributes(v)
    if (!is.null(a)) {
      if (!is.null(a$row.names)) out[[length(out) + 1L]] <<- as.character(a$row.names)
      a$row.names <- NULL
      for (el in a) walk(el)
    }
  }
  walk(x)
  out
}

# Which original values of `vars` in `original` appear in `obj` (as numbers, or as text
# with 15 or 17 significant digits)? Returned as text.
leaked_values <- function(obj, original, vars) {
  orig <- unlist(lapply(vars, function(v) original[[v]]), use.names = FALSE)
  orig <- unique(orig[is.finite(orig)])
  vals <- reachable_values(obj)
  num <- unlist(lapply(vals, function(v) if (is.numeric(v)) as.double(v)), use.names = FALSE)
  chr <- unlist(lapply(vals, function(v) if (is.character(v) || is.factor(v)) as.character(v)),
                use.names = FALSE)
  as_text <- function(o) unique(c(as.character(o), format(o, digits = 15), format(o, digits = 17)))
  found <- orig %in% num | vapply(orig, function(o) any(as_text(o) %in% chr), TRUE)
  format(orig[found], digits = 17)
}

# `d` with attributes a caller may have set: na.omit()'s (row names and positions of the
# dropped records), a label naming people and stored means of the originals.
with_caller_attributes <- function(d) {
  omitted <- c(NHS9434760011 = 5L, NHS9434760029 = 17L)
  attr(d, "na.action") <- structure(omitted, class = "omit")
  attr(d, "cohort") <- "patients of Dr Alice Example, ward 7"
  attr(d, "means") <- vapply(d[vapply(d, is.numeric, TRUE)], function(v) mean(v, na.rm = TRUE), 0)
  d
}

# Attributes of a release that the package does not put there: anything but the frame's
# own (names, row names, class), the release metadata, and what a tibble (groups) or a
# data.table (self-reference, key, indices) needs.
foreign_attributes <- function(x) {
  setdiff(names(attributes(x)), c("names", "row.names", "class", "detanon", "groups",
                                  ".internal.selfref", "sorted", "index"))
}

# Where a secret key (a string) shows in `obj`: "value" (a reachable character value or
# raw vector holding it), "print" (printed output, also of its release metadata) or
# "serialised" (the saved object, as text or bytes); character() when nowhere.
key_leaks <- function(obj, secret) {
  raw_key <- charToRaw(secret)
  hex <- function(r) paste(as.character(r), collapse = "")
  vals <- reachable_values(obj)
  out <- character()
  in_val <- vapply(vals, function(v) {
    (is.character(v) || is.factor(v)) && any(grepl(secret, as.character(v), fixed = TRUE)) ||
      is.raw(v) && grepl(hex(raw_key), hex(v), fixed = TRUE)
  }, TRUE)
  if (any(in_val)) out <- c(out, "value")
  printed <- c(utils::capture.output(print(obj)), utils::capture.output(print(attr(obj, "detanon"))),
               utils::capture.output(utils::str(attributes(obj))))
  if (any(grepl(secret, printed, fixed = TRUE))) out <- c(out, "print")
  if (grepl(secret, rawToChar(serialize(obj, NULL, ascii = TRUE)), fixed = TRUE) ||
      grepl(hex(raw_key), hex(serialize(obj, NULL)), fixed = TRUE)) out <- c(out, "serialised")
  out
}
