# Benchmark of the whole risk battery: every attack of battery_attacks() (linkage in both
# directions, singling out, attribute inference on a categorical column, one-to-one
# assignment, Fellegi-Sunter, the algorithm-aware intruder), each with its control and
# its default settings as risk_battery() runs them, on 1e5 records (2 masked variables,
# 4 strata) and 1e6 records x 4 masked variables in 4 strata; one core by default.
# Three releases of the same data: the plain kNN masking, anonymise(k = 3), and two
# shared-centroid releases, anonymise_mdav(k = 3) (3 records share every released point)
# and anonymise_keyed(k = 3, size = 20) (about 20 do): the ties the battery handles as
# groups. The MDAV release has its groups' keyed noise (noise = TRUE), as the search makes it.
# Prints one table per size and release: the time of the intruder's view and control
# permutation (shared by the attacks), of every attack with its control run (the steps of
# risk_battery(), timed one by one on the shared view), and of one call of risk_battery()
# with everything: elapsed seconds and CPU seconds (user + system; on a shared machine
# the CPU time is the steadier figure), each also as a multiple of anonymise() (k = 3,
# timed in the same run on the same data, best of 3: "x anon"), with the attack's rate, control and
# advantage. Above `limit` records per cell (2000) the assignment uses its sparse solver:
# its gap (cost - lower bound, 0 when proven optimal) is printed. The peak memory of the
# one call of risk_battery() is R's (gc()'s "max used", which holds the C kernels' R_alloc
# scratch), beyond what was held before it.
# Run from the package root with detanon installed:
#   Rscript bench/battery.R            (add nthreads as an argument, e.g. Rscript bench/battery.R 2;
#                                       add --small for the 1e5 case only, --large for 1e6 only,
#                                       --plain, --mdav or --keyed for one release only, --one for
#                                       the one call of risk_battery() without the steps,
#                                       --skip=NAME to leave the attack NAME out, e.g. --skip=assignment)
# The load average of the machine (other work on it) is printed at the start and after each table.
suppressPackageStartupMessages(library(detanon))
options(width = 160)
args <- commandArgs(trailingOnly = TRUE)
small <- "--small" %in% args
large <- "--large" %in% args
plain_only <- "--plain" %in% args
keyed_only <- "--keyed" %in% args
mdav_only <- "--mdav" %in% args
one_only <- "--one" %in% args
skip <- sub("^--skip=", "", grep("^--skip=", args, value = TRUE)) # attacks left out
args <- setdiff(args, c("--small", "--large", "--plain", "--keyed", "--mdav", "--one", paste0("--skip=", skip)))
nthreads <- if (length(args)) as.integer(args[1]) else 1L

make_data <- function(n, d, seed = 1) {
  set.seed(seed)
  x <- as.data.frame(matrix(round(stats::rnorm(n * d, 50, 10), 1), n, d))
  names(x) <- paste0("x", seq_len(d))
  x$g <- factor(sample(c("a", "b", "c", "d"), n, TRUE))
  x$y <- factor(ifelse(x$x1 + stats::rnorm(n, sd = 10) > 50, "yes", "no")) # sensitive, released unchanged
  vars <- paste0("x", seq_len(d))
  # the best of 3 (one run's CPU time moved 2-4x with the load of the shared machine)
  t <- lapply(1:3, function(r) system.time(m <<- anonymise(x, k = 3, vars = vars, strata = "g", nthreads = nthreads)))
  list(d = x, m = m, vars = vars, anonymise_s = min(vapply(t, `[[`, 1, "elapsed")),
       anonymise_cpu = min(vapply(t, function(ti) ti[["user.self"]] + ti[["sys.self"]], 1)))
}

# The shared-centroid releases of the same data (timed too: the releases a custodian wants).
shared_release <- function(p, method) {
  t <- system.time(m <- if (method == "keyed") {
    anonymise_keyed(p$d, k = 3, vars = p$vars, strata = "g", size = 20,
                    key = "the custodian's benchmark key", nthreads = nthreads)
  } else {
    anonymise_mdav(p$d, k = 3, vars = p$vars, strata = "g", noise = TRUE, nthreads = nthreads)
  })
  list(m = m, elapsed = t[["elapsed"]], cpu = t[["user.self"]] + t[["sys.self"]])
}

# Peak memory of an expression beyond what R held before it, in MB.
peak_mb <- function(expr) {
  before <- sum(gc(reset = TRUE)[, 2L])
  force(expr)
  sum(gc()[, 6L]) - before
}

timed <- function(expr) {
  t <- system.time(val <- force(expr))
  list(value = val, elapsed = t[["elapsed"]], cpu = t[["user.self"]] + t[["sys.self"]])
}

# risk_battery(), step by step: the view and its control once, then every attack.
battery_steps <- function(original, masked, sensitive, seed = 1, m = 3) {
  reg <- battery_attacks()
  reg <- reg[!vapply(reg, function(a) !is.null(a$needs_previous), TRUE)] # no previous release here
  reg <- reg[setdiff(names(reg), skip)]
  tv <- timed({
    detanon:::attack_view(original, masked, intruder(), control = TRUE, seed = seed)
  })
  rows <- list(data.frame(step = "intruder view + control", elapsed = tv$elapsed, cpu = tv$cpu,
                          rate = NA, control = NA, advantage = NA, note = ""))
  for (a in names(reg)) {
    t <- timed(detanon:::run_attack(reg[[a]], tv$value$s, tv$value$ctrl, m = m, sensitive = sensitive,
                                    nthreads = nthreads, seed = seed))
    r <- t$value
    note <- if (a == "assignment") sprintf("sparse cells %d, gap %.3g (%.2g%% of cost)", r$details$n_sparse,
                                           r$details$gap, 100 * r$details$gap / r$details$cost) else ""
    rows[[length(rows) + 1L]] <- data.frame(step = a, elapsed = t$elapsed, cpu = t$cpu, rate = r$rate,
                                            control = r$control_rate, advantage = r$advantage, note = note)
  }
  out <- do.call(rbind, rows)
  wo <- out$step != "recipe"
  rbind(out, data.frame(step = c("sum of the steps", "sum without the recipe"),
                        elapsed = c(sum(out$elapsed), sum(out$elapsed[wo])), cpu = c(sum(out$cpu), sum(out$cpu[wo])),
                        rate = NA, control = NA, advantage = NA, note = ""))
}

load_avg <- function() if (file.exists("/proc/loadavg")) paste(strsplit(readLines("/proc/loadavg"), " ")[[1]][1:3], collapse = " ") else "unknown"
cat(sprintf("detanon risk battery benchmark, nthreads = %d, %s, detanon from %s, load average %s\n", nthreads,
            format(Sys.time(), tz = "UTC", usetz = TRUE), dirname(find.package("detanon")), load_avg()))
w <- make_data(2000, 2)
invisible(risk_battery(w$d, w$m, sensitive = "y", seed = 1, nthreads = nthreads)) # warm up

cases <- list(c(n = 1e5, d = 2), c(n = 1e6, d = 4))
if (small) cases <- cases[1]
if (large) cases <- cases[2]
releases <- c("plain", "mdav", "keyed")
if (plain_only) releases <- "plain"
if (mdav_only) releases <- "mdav"
if (keyed_only) releases <- "keyed"
for (cs in cases) {
  p <- make_data(cs[["n"]], cs[["d"]])
  for (r in releases) {
    m <- p$m
    label <- "anonymise(k = 3)"
    if (r != "plain") {
      kr <- shared_release(p, r)
      m <- kr$m
      label <- sprintf("%s: %.1f s, %.1f s CPU, %d distinct released points",
                       if (r == "keyed") "anonymise_keyed(k = 3, size = 20)" else "anonymise_mdav(k = 3)",
                       kr$elapsed, kr$cpu, nrow(unique(m[c(p$vars, "g")])))
    }
    cat(sprintf("\nn = %g, %d masked variables, 4 strata; release %s\nanonymise(k = 3) in this run: %.2f s, %.2f s CPU\n",
                cs[["n"]], cs[["d"]], label, p$anonymise_s, p$anonymise_cpu))
    if (length(skip)) cat("attacks left out:", skip, "\n")
    tab <- if (!one_only) battery_steps(p$d, m, sensitive = "y")
    attacks <- setdiff(names(battery_attacks()), skip)
    mb <- peak_mb(t <- timed(risk_battery(p$d, m, sensitive = "y", attacks = attacks, seed = 1, nthreads = nthreads)))
    tab <- rbind(tab, data.frame(step = "risk_battery(), one call", elapsed = t$elapsed, cpu = t$cpu,
                                 rate = NA, control = NA, advantage = NA,
                                 note = sprintf("peak memory %.0f MB", mb)))
    if (!one_only) {
      # the step-by-step figures are those of the battery itself
      one <- as.data.frame(t$value)
      at <- seq(2, nrow(tab) - 3)
      stopifnot(isTRUE(all.equal(one$rate[match(tab$step[at], one$name)], tab$rate[at])))
    }
    tab$x_anon <- tab$elapsed / p$anonymise_s
    tab$x_anon_cpu <- tab$cpu / p$anonymise_cpu
    tab <- tab[c("step", "elapsed", "x_anon", "cpu", "x_anon_cpu", "rate", "control", "advantage", "note")]
    print(format(tab, digits = 3), row.names = FALSE)
    cat("load average after the table:", load_avg(), "\n")
  }
}
