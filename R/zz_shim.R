stop_arg <- function(..., kind = "argument") stop(structure(class = c(paste0("detanon_error_", kind), "detanon_error", "error", "condition"), list(message = paste0(...), call = NULL)))
plural <- function(n, singular, plural = paste0(singular, "s")) paste(format(n, scientific = FALSE, trim = TRUE), ifelse(n == 1, singular, plural))
inform_detanon <- function(..., kind) message(paste0(...))
as_release <- function(x, verb, settings = list(), counts = list(), ...) { attr(x, "detanon") <- structure(list(verb = verb, settings = settings, counts = counts), class = "detanon_release"); x }
release_info <- function(x) attr(x, "detanon")
