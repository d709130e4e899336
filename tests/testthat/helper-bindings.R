# Replaces the internal function `name` of detanon by `value` until the calling test ends
# (failures injected, limits lowered: the tests go through the functions the package really calls).
local_detanon_binding <- function(name, value, env = parent.frame()) {
  ns <- asNamespace("detanon")
  old <- get(name, envir = ns)
  set <- function(v) {
    unlockBinding(name, ns)
    assign(name, v, envir = ns)
    lockBinding(name, ns)
  }
  set(value)
  withr::defer(set(old), envir = env)
  old
}
