# The functions of detanon that a call runs, and the files they are defined in: every
# closure of the namespace is traced, the call is run, and the functions reached are mapped
# to R/*.R by their definitions (`name <- function`). Run from the package root with the
# version to measure installed:
#   R_LIBS=<lib> Rscript tools/trace-calls.R
suppressPackageStartupMessages(library(detanon))
ns <- asNamespace("detanon")
where_defined <- unlist(lapply(list.files("R", "\\.R$", full.names = TRUE), function(f) {
  top <- regmatches(readLines(f), regexpr("^[A-Za-z_.][A-Za-z0-9_.]* *<- *function", readLines(f)))
  nm <- sub(" *<-.*", "", top)
  stats::setNames(rep(basename(f), length(nm)), nm)
}))
reached <- new.env()
funs <- Filter(function(f) is.function(get(f, ns)) && !is.primitive(get(f, ns)), ls(ns, all.names = TRUE))
funs <- intersect(funs, names(where_defined))
for (f in funs) {
  suppressMessages(trace(f, tracer = bquote(assign(.(f), TRUE, envir = .(reached))), where = ns, print = FALSE))
}
exported <- getNamespaceExports("detanon")
report <- function(label, expr) {
  rm(list = ls(reached), envir = reached)
  force(expr)
  hit <- ls(reached)
  internal <- setdiff(hit, exported)
  cat(sprintf("%s: %d functions (%d internal) in %d files\n", label, length(hit), length(internal),
              length(unique(where_defined[hit]))))
  cat("  files:", paste(sort(unique(where_defined[hit])), collapse = ", "), "\n")
}
d <- titanic_paper()[-1]
q <- function(expr) suppressWarnings(suppressMessages(expr))
report("anonymise()", q(anonymise(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 3)))
report("tune_release()", q(tune_release(d, vars = c("Age", "Fare"), strata = c("Pclass", "Sex", "Family"), k = 2,
                                        small_strata = "suppress", key = "a key of at least sixteen characters")))
