# Bad input over every exported function.
#
# Each case calls one exported function on hostile input and requires either
# * an error whose message matches `error` (a regexp naming the offending argument and the
#   fix), or
# * with `error = NA`, a result (documented behaviour) that passes `check`;
# and in both cases no warning, and the input object unchanged afterwards (compared with a
# deep copy, so data.table columns modified by reference are caught too).

# ---- fixtures -------------------------------------------------------------------------
set.seed(20261121)
bi_d <- data.frame(g = rep(c("a", "b"), each = 10), x = stats::rnorm(20), y = stats::rexp(20),
                   stringsAsFactors = FALSE)
bi_m <- suppressWarnings(anonymise(bi_d, k = 3, vars = c("x", "y"), strata = "g",
                                   check_identifiers = FALSE))
# an edited or subset copy of a release no longer carries its release metadata (a user
# would get a `detanon_warning_stale_release` from the measures that read it)
bi_plain <- function(data) {
  attr(data, "detanon") <- NULL
  data
}
bi_mod <- function(data, ...) {
  args <- list(...)
  for (nm in names(args)) data[[nm]] <- args[[nm]]
  bi_plain(data)
}
bi_pair <- function(o = bi_d, m = bi_m) list(o = o, m = m)
bi_dup <- stats::setNames(bi_d, c("g", "x", "x"))
bi_nonsyn <- stats::setNames(bi_d, c("my group", "x y", "2y"))
bi_list <- bi_mod(bi_d, x = I(as.list(bi_d$x)))
bi_fac <- bi_mod(bi_d, g = factor(bi_d$g, levels = c("a", "b", "unused")))
bi_chr <- bi_mod(bi_d, x = as.character(bi_d$x))
bi_na <- bi_mod(bi_d, x = NA_real_)
bi_inf <- bi_mod(bi_d, x = replace(bi_d$x, 3, Inf))
bi_nan <- bi_mod(bi_d, x = replace(bi_d$x, 3, NaN))
bi_const <- bi_mod(bi_d, x = 1)

# deep copy that survives modification by reference of data.table inputs
bi_copy <- function(x) {
  if (is.list(x) && !is.data.frame(x)) {
    y <- lapply(x, bi_copy)
    attributes(y) <- attributes(x) # classed lists (the pieces of a partitioned run) keep their class
    return(y)
  }
  if (inherits(x, "data.table")) return(data.table::copy(x))
  x
}

bi_cases <- list()
bad <- function(label, input, call, error, check = NULL, warning = NULL) {
  bi_cases[[length(bi_cases) + 1L]] <<- list(label = label, input = input, call = call,
                                              error = error, check = check, warning = warning)
}

# ---- anonymise() ----------------------------------------------------------------------
an <- function(...) function(x) anonymise(x, ..., check_identifiers = FALSE)
bad("anonymise: matrix", as.matrix(bi_d), an(), "`data` must be a data frame")
bad("anonymise: NULL", NULL, an(), "`data` must be a data frame.*not NULL")
bad("anonymise: zero rows", bi_d[0, ], an(), "`data` has no records")
bad("anonymise: one row", bi_d[1, ], an(k = 2, strata = character()),
    "fewer than k = 2. Lower `k`")
bad("anonymise: k = 0", bi_d, an(k = 0), "`k` must be a single whole number >= 2, not 0")
bad("anonymise: fractional k", bi_d, an(k = 2.5), "`k` must be a single whole number.*2.5")
bad("anonymise: negative k", bi_d, an(k = -3), "`k` must be a single whole number.*-3")
bad("anonymise: huge k", bi_d, an(k = 1e12), "`k` must be a single whole number")
bad("anonymise: k as character", bi_d, an(k = "3"), "`k` must be a single whole number.*\"3\"")
bad("anonymise: k = NA", bi_d, an(k = NA), "`k` must be a single whole number.*NA")
bad("anonymise: k > stratum size", bi_d, an(k = 11), "fewer than k = 11 records.*Lower `k`")
bad("anonymise: k = n, one stratum (documented warning)", bi_d, an(k = 20, strata = character()),
    NA, function(r) expect_equal(r$x, rep(mean(bi_d$x), 20)), warning = "All centroids of `x`, `y` are equal")
bad("anonymise: k = stratum size", bi_d, an(k = 10), NA,
    function(r) expect_identical(as.vector(tapply(r$x, r$g, function(v) length(unique(v)))), c(1L, 1L)))
bad("anonymise: all-NA column", bi_na, an(vars = "x"), "`vars` have missing values")
bad("anonymise: all-NA column imputed", bi_na, an(vars = "x", na = "median"),
    "`vars` column `x` has no observed value")
bad("anonymise: all-NA column, complete cases", bi_na, an(vars = "x", na = "complete"),
    "No records are left.*incomplete")
bad("anonymise: Inf", bi_inf, an(), "`vars` column `x` contains infinite values")
bad("anonymise: NaN", bi_nan, an(), "`vars` column `x` contains NaN")
bad("anonymise: overflowing SD would release originals", bi_mod(bi_d, x = bi_d$x * 1e300), an(),
    "`vars` column `x` has values too large to standardise")
bad("anonymise: duplicated names", bi_dup, an(), "`data` has duplicated column names \\(`x`\\)")
bad("anonymise: non-syntactic names", bi_nonsyn, an(vars = c("x y", "2y"), strata = "my group"), NA,
    function(r) expect_identical(names(r), names(bi_nonsyn)))
bad("anonymise: list column as vars", bi_list, an(vars = "x"), "`vars` must be numeric columns; `x`")
bad("anonymise: list column as strata", bi_list, an(vars = "y", strata = "x"),
    "`strata` columns must be atomic vectors")
bad("anonymise: character numbers as vars", bi_chr, an(vars = "x", strata = "g"),
    "`vars` must be numeric columns; `x` is not \\(character\\). Convert with as.numeric")
bad("anonymise: factor with unused levels (dropped from the release)", bi_fac, an(), NA,
    function(r) expect_identical(levels(r$g), c("a", "b")))
bad("anonymise: vars not in data", bi_d, an(vars = "zz"), "`vars` names columns that are not in the data: `zz`")
bad("anonymise: vars numeric index", bi_d, an(vars = 2), "`vars` must be a character vector of column names")
bad("anonymise: vars also strata", bi_d, an(vars = "g"), "both `vars` and `strata`: `g`")
bad("anonymise: bad na", bi_d, an(na = "drop"), "`na` must be one of \"fail\"")
bad("anonymise: bad small_strata", bi_d, an(small_strata = TRUE), "`small_strata` must be one of")
bad("anonymise: bad engine", bi_d, an(engine = "ann"), "`engine` must be one of \"kdtree\", \"rann\"")
bad("anonymise: nthreads = 0", bi_d, an(nthreads = 0), "`nthreads` must be a single whole number >= 1")
bad("anonymise: check_identifiers = NA", bi_d, function(x) anonymise(x, check_identifiers = NA),
    "`check_identifiers` must be TRUE or FALSE")
bad("anonymise: tibble", tibble::as_tibble(bi_d), an(k = 3), NA,
    function(r) expect_s3_class(r, "tbl_df"))
bad("anonymise: data.table (not modified by reference)", data.table::as.data.table(bi_d), an(k = 3), NA,
    function(r) expect_s3_class(r, "data.table"))
bad("anonymise: data.table with NA, imputed", data.table::as.data.table(bi_mod(bi_d, x = replace(bi_d$x, 1:2, NA))),
    an(k = 3, na = "median"), NA, function(r) expect_false(anyNA(r$x)))

# ---- strata, k-anonymity, merging -----------------------------------------------------
bad("strata_table: matrix", as.matrix(bi_d), function(x) strata_table(x), "`data` must be a data frame")
bad("strata_table: zero rows", bi_d[0, ], function(x) strata_table(x, "g"), NA,
    function(r) expect_identical(nrow(r), 0L))
bad("strata_table: k = 0", bi_d, function(x) strata_table(x, "g", k = 0), "`k` must be a single whole number >= 1")
bad("strata_table: no strata", bi_d[c("x", "y")], function(x) strata_table(x), "`strata` is empty")
bad("strata_table: list sensitive", bi_list, function(x) strata_table(x, "g", sensitive = "x"),
    "`sensitive` columns must be atomic vectors")
bad("strata_table: two sensitive", bi_d, function(x) strata_table(x, "g", sensitive = c("x", "y")),
    "`sensitive` must name a single column")
bad("strata_table: unused factor levels not listed", bi_fac, function(x) strata_table(x, "g"), NA,
    function(r) expect_identical(as.character(r$g), c("a", "b")))
bad("kanon_check: zero rows", bi_d[0, ], function(x) kanon_check(x, "g"), NA,
    function(r) expect_s3_class(r, "detanon_kanon"))
bad("kanon_check: keys empty", bi_d, function(x) kanon_check(x, character()), "`strata` is empty")
bad("kanon_check: list key", bi_list, function(x) kanon_check(x, "x"), "`strata` columns must be atomic")
bad("kanon_check: huge k", bi_d, function(x) kanon_check(x, "g", k = 1e10), "`k` must be a single whole number")
bad("merge_small_strata: no stratum reaches k", bi_d, function(x) merge_small_strata(x, k = 11),
    "No stratum has k = 11 or more records.*Lower `k`")
bad("merge_small_strata: NA in vars", bi_na, function(x) merge_small_strata(x, k = 3),
    "`vars` have missing values")
bad("merge_small_strata: fractional k", bi_d, function(x) merge_small_strata(x, k = 1.5),
    "`k` must be a single whole number")
bad("merge_small_strata: data.table", data.table::as.data.table(bi_d[c(1:10, 11:12), ]),
    function(x) suppressMessages(merge_small_strata(x, k = 3)), NA,
    function(r) { expect_s3_class(r, "data.table"); expect_identical(nrow(r), 12L) })
bad("generalise_strata: zero rows", bi_d[0, ], function(x) generalise_strata(x, "g"),
    "`data` has 0 records, fewer than `k`")
bad("generalise_strata: two vars", bi_d, function(x) generalise_strata(x, c("g", "x")),
    "`column` must name a single column")
bad("generalise_strata: var not a stratum", bi_d, function(x) generalise_strata(x, "g", strata = character()),
    "`column` \\(`g`\\) must be one of `strata`")

# ---- identifiers ----------------------------------------------------------------------
bad("detect_identifiers: list", as.list(bi_d), function(x) detect_identifiers(x), "`data` must be a data frame")
bad("detect_identifiers: zero rows", bi_d[0, ], function(x) detect_identifiers(x), NA,
    function(r) expect_true(is.data.frame(r)))
bad("detect_identifiers: duplicated names", bi_dup, function(x) detect_identifiers(x), "duplicated column names")
bad("remove_identifiers: cols not in data", bi_d, function(x) remove_identifiers(x, "zz"), "`cols` names columns")
bad("remove_identifiers: bad method", bi_d, function(x) remove_identifiers(x, "g", method = "hash"),
    "`method` must be one of \"drop\", \"pseudonymise\"")
bad("remove_identifiers: prefix NA", bi_d, function(x) remove_identifiers(x, "g", method = "pseudonymise", prefix = NA),
    "`prefix` must be a single string")
bad("remove_identifiers: pseudonymise list column", bi_list,
    function(x) remove_identifiers(x, "x", method = "pseudonymise"), "`cols` column `x` is not an atomic vector")
bad("remove_identifiers: key = 1", bi_d, function(x) remove_identifiers(x, "g", key = 1), "`key` must be TRUE or FALSE")

# ---- Mondrian and (k, epsilon) --------------------------------------------------------
bad("equivalence_classes: zero rows", bi_d[0, ], function(x) equivalence_classes(x, quasi = "x"),
    "`data` has no records")
bad("equivalence_classes: k > n", bi_d[1:2, ], function(x) equivalence_classes(x, k = 3, quasi = "x", strata = character()),
    "`k` \\(3\\) is larger than the number of records \\(2\\)")
bad("equivalence_classes: k = n", bi_d, function(x) equivalence_classes(x, k = 20, quasi = "x", strata = character()), NA,
    function(r) expect_identical(nrow(r$classes), 1L))
bad("equivalence_classes: bad small_strata", bi_d, function(x) equivalence_classes(x, small_strata = "merge"),
    "`small_strata` must be one of \"fail\", \"suppress\"")
bad("equivalence_classes: Inf quasi", bi_inf, function(x) equivalence_classes(x, quasi = "x"),
    "`quasi` column `x` contains NaN or infinite")
bad("anonymise_keps: zero rows", bi_d[0, ], function(x) anonymise_keps(x, epsilon = 1), "`data` has no records")
bad("anonymise_keps: epsilon = 0", bi_d, function(x) anonymise_keps(x, epsilon = 0), "`epsilon` must be a single finite number > 0")
bad("anonymise_keps: epsilon missing", bi_d, function(x) anonymise_keps(x), "`epsilon` is missing")
bad("anonymise_keps: negative budget", bi_d, function(x) anonymise_keps(x, epsilon = 1, budget = c(-1, 2)),
    "`budget` must be 2 positive numbers")
bad("anonymise_keps: confidence 1", bi_d, function(x) anonymise_keps(x, epsilon = 1, confidence = 1),
    "`confidence` must be below 1")
bad("anonymise_keps: character quasi", bi_d, function(x) anonymise_keps(x, epsilon = 1, quasi = "g"),
    "`quasi` must be numeric columns; `g`")
bad("anonymise_keps: NaN", bi_nan, function(x) anonymise_keps(x, epsilon = 1), "`vars` column `x` contains NaN")
bi_wide <- bi_mod(bi_d, x = sign(bi_d$x) * 1.5e308 + bi_d$x * 1e290) # finite, but the range overflows
bad("anonymise_keps: range overflow would release Inf", bi_wide,
    function(x) anonymise_keps(x, epsilon = 1), "`vars` column `x` has values too large to handle")
bad("equivalence_classes: range overflow", bi_wide,
    function(x) equivalence_classes(x, quasi = "x"), "`quasi` column `x` has values too large to handle")
bad("keps_error: epsilon with a zero", bi_d, function(x) keps_error(x, epsilon = c(1, 0)), "`epsilon` must be finite numbers > 0")
bad("keps_error: all NA", bi_na, function(x) keps_error(x, epsilon = 1), "`vars`/`quasi` have missing values")
bad("keps_error: tibble", tibble::as_tibble(bi_d), function(x) keps_error(x, epsilon = c(1, 2)), NA,
    function(r) expect_true(all(is.finite(r$error))))

# ---- risk -----------------------------------------------------------------------------
bad("risk_rmd: matrix", bi_pair(o = as.matrix(bi_d)), function(p) risk_rmd(p$o, p$m), "`original` must be a data frame")
bad("risk_rmd: mismatched rows", bi_pair(m = bi_m[-1, ]), function(p) risk_rmd(p$o, p$m),
    "`original` has 20 rows but `masked` has 19")
bad("risk_rmd: NA in masked", bi_pair(m = bi_mod(bi_m, x = replace(bi_m$x, 2, NA))), function(p) risk_rmd(p$o, p$m),
    "`vars` column `x` of `masked` has 1 missing")
bad("risk_rmd: NaN in original", bi_pair(o = bi_nan), function(p) risk_rmd(p$o, p$m),
    "`vars` column `x` of `original` has 1 missing or infinite")
bad("risk_rmd: one row", bi_pair(bi_d[1, ], bi_plain(bi_m[1, ])), function(p) risk_rmd(p$o, p$m),
    "more records than variables.*1 record for 2 variables in `vars`")
bad("risk_rmd: constant column", bi_pair(o = bi_const), function(p) risk_rmd(p$o, p$m),
    "`vars` column `x` is constant in `original`")
bad("risk_rmd: character numbers in masked", bi_pair(m = bi_mod(bi_m, x = as.character(bi_m$x))),
    function(p) risk_rmd(p$o, p$m, vars = c("x", "y")), "`vars` must name numeric columns; in `masked` `x`")
bad("risk_rmd: overflowing SD (covMcd warned, then a misleading error)", bi_pair(o = bi_mod(bi_d, x = bi_d$x * 1e307)),
    function(p) risk_rmd(p$o, p$m), "`vars` column `x` of `original` has values too large to standardise")
# ---- categorical risk measures (R/risk_categorical.R) ------------------------------------
bi_w <- bi_mod(bi_d, w = rep(c(10, 20), 10), h = rep(1:5, each = 4))
bad("risk_suda2: matrix", as.matrix(bi_d), function(x) risk_suda2(x, "g"), "`data` must be a data frame")
bad("risk_suda2: unknown key", bi_d, function(x) risk_suda2(x, "zz"), "`strata` names columns that are not in the data: `zz`")
bad("risk_suda2: dis_fraction = 2", bi_d, function(x) risk_suda2(x, "g", dis_fraction = 2),
    "`dis_fraction` must be a single finite number > 0 and <= 1, not 2")
bad("suppress_local: NULL", NULL, function(x) suppress_local(x, "g"), "`data` must be a data frame.*not NULL")
bad("suppress_local: unknown key", bi_d, function(x) suppress_local(x, "zz"),
    "`strata` names columns that are not in the data: `zz`")
bad("suppress_local: importance of the wrong length", bi_d, function(x) suppress_local(x, c("g", "y"), importance = c(1, 1, 2)),
    "`importance` must be NULL or 2 whole numbers")
bad("anonymise_pram: pd = 1.5", bi_d, function(x) anonymise_pram(x, "g", pd = 1.5), "`pd` must be one number between 0 and 1")
bad("anonymise_pram: unknown column", bi_d, function(x) anonymise_pram(x, "zz"),
    "`vars` names columns that are not in the data: `zz`")
bad("anonymise_pram: seed as text", bi_d, function(x) anonymise_pram(x, "g", seed = "a"), "`seed` must be a single whole number")
bad("risk_frequencies: matrix", as.matrix(bi_d), function(x) risk_frequencies(x, "g"), "`data` must be a data frame")
bad("risk_frequencies: zero rows", bi_d[0, ], function(x) risk_frequencies(x, "g"), NA,
    check = function(r) expect_identical(r$fk, numeric()))
bad("risk_frequencies: list key", bi_list, function(x) risk_frequencies(x, "x"), "`strata` columns must be atomic")
bad("risk_individual: zero weight", bi_mod(bi_w, w = replace(bi_w$w, 4, 0)),
    function(x) risk_individual(x, "g", weights = "w"), "`weights` column `w` must hold finite sampling weights >= 1")
bad("risk_individual: NaN weight", bi_mod(bi_w, w = replace(bi_w$w, 4, NaN)),
    function(x) risk_individual(x, "g", weights = "w"), "`weights` column `w` must hold finite sampling weights >= 1")
bad("risk_individual: text weights", bi_w, function(x) risk_individual(x, "x", weights = "g"),
    "`weights` column `g` must be numeric")
bad("risk_individual: household NA", bi_mod(bi_w, h = replace(bi_w$h, 1, NA)),
    function(x) risk_individual(x, "g", household = "h"), "`household` column `h` has 1 missing id")
bad("risk_individual: NA keys", bi_mod(bi_w, g = replace(bi_w$g, 1:3, NA)),
    function(x) risk_individual(x, "g", weights = "w"), NA,
    check = function(r) expect_equal(r$fk[1:3], rep(20, 3)))
bad("risk_ldiversity: sensitive missing", bi_d, function(x) risk_ldiversity(x, "g"), "`sensitive` is missing")
bad("risk_ldiversity: sensitive a key", bi_d, function(x) risk_ldiversity(x, "g", sensitive = "g"),
    "`sensitive` \\(g\\) must not be one of `strata`")
bad("risk_tcloseness: NA in ordered", bi_na, function(x) risk_tcloseness(x, "g", sensitive = "x"),
    "has 20 missing values.*distance = \"equal\"")
bad("risk_tcloseness: distance", bi_d, function(x) risk_tcloseness(x, "g", sensitive = "x", distance = "emd"),
    "`distance` must be one of")
bad("risk_population_uniques: no population", bi_d, function(x) risk_population_uniques(x, "g"),
    "give `population`")
bad("risk_population_uniques: population below n", bi_d, function(x) risk_population_uniques(x, "g", population = 5),
    "`population` must be a single finite number >= 20")

bad("risk_linkage: overflowing SD", bi_pair(m = bi_mod(bi_m, y = bi_m$y * 1e200)),
    function(p) risk_linkage(p$o, p$m), "`vars` column `y` of `masked` has values too large to standardise")
bad("risk_rmd: w1 negative", bi_pair(), function(p) risk_rmd(p$o, p$m, w1 = -1), "`w1` must be a single finite number > 0")
bad("risk_rmd: neighbours = 0", bi_pair(), function(p) risk_rmd(p$o, p$m, neighbours = 0), "`neighbours` must be a single whole number >= 1")
bad("risk_rmd: deterministic NA", bi_pair(), function(p) risk_rmd(p$o, p$m, deterministic = NA),
    "`deterministic` must be TRUE or FALSE")
bad("risk_linkage: vars not numeric", bi_pair(), function(p) risk_linkage(p$o, p$m, vars = "g"),
    "`vars` must name numeric columns; in `original` `g`")
bad("risk_linkage: strata differ", bi_pair(m = bi_mod(bi_m, g = replace(bi_m$g, 1, "c"))),
    function(p) risk_linkage(p$o, p$m, strata = "g"), "`strata` column `g` differs between `original` and `masked`")
bad("risk_linkage: zero rows", bi_pair(bi_d[0, ], bi_m[0, ]), function(p) risk_linkage(p$o, p$m, vars = c("x", "y"), strata = "g"), NA,
    function(r) expect_identical(r$n, 0L))
bad("risk_linkage: nthreads 1.5", bi_pair(), function(p) risk_linkage(p$o, p$m, nthreads = 1.5),
    "`nthreads` must be a single whole number")
bad("risk_linkage: data.table pair", bi_pair(data.table::as.data.table(bi_d), data.table::as.data.table(bi_m)),
    function(p) risk_linkage(p$o, p$m, strata = "g"), NA, function(r) expect_true(r$rate >= 0 && r$rate <= 1))
bad("risk_class_link: mismatched rows", bi_pair(m = bi_m[-1, ]), function(p) risk_class_link(p$o, p$m),
    "`original` and `masked` must have the same rows")
bad("risk_class_link: bad classes", bi_pair(), function(p) risk_class_link(p$o, p$m, classes = "zz"),
    "`classes` must be a vector with one class per row")
bad("risk_class_link: Inf", bi_pair(m = bi_mod(bi_m, x = replace(bi_m$x, 2, Inf))),
    function(p) risk_class_link(p$o, p$m), "`vars` column `x` contains NaN or infinite")
bad("risk_class_link: zero rows", bi_pair(bi_d[0, ], bi_m[0, ]), function(p) risk_class_link(p$o, p$m), NA,
    function(r) expect_identical(r$rate, NA_real_))

# ---- utility and assess ---------------------------------------------------------------
bad("utility_pmse: zero rows", bi_pair(bi_d[0, ], bi_m[0, ]), function(p) utility_pmse(p$o, p$m),
    "`original` and `masked` have no rows")
bad("utility_pmse: list column", bi_pair(o = bi_list), function(p) utility_pmse(p$o, p$m, vars = "x"),
    "`vars` column `x` must be numeric, factor, character or logical")
bad("utility_pmse: type mismatch", bi_pair(o = bi_chr), function(p) utility_pmse(p$o, p$m, vars = "x"),
    "`vars` column `x` is numeric in one data frame and not in the other")
bad("utility_pmse: interactions with one var", bi_pair(), function(p) utility_pmse(p$o, p$m, vars = "x", interactions = TRUE),
    "`interactions = TRUE` needs at least two columns in `vars`")
bad("utility_delta: one row", bi_pair(bi_d[1, ], bi_plain(bi_m[1, ])), function(p) utility_delta(p$o, p$m),
    "at least 2 records are needed")
bad("utility_delta: constant", bi_pair(o = bi_const), function(p) utility_delta(p$o, p$m), "`vars` column `x` is constant")
bad("utility_model: zero rows", bi_pair(bi_d[0, ], bi_m[0, ]), function(p) utility_model(p$o, p$m, x ~ y),
    "`original` has 0 complete records for the variables of `formula`")
bad("utility_model: one row", bi_pair(bi_d[1, ], bi_m[1, ]), function(p) utility_model(p$o, p$m, x ~ y),
    "`original` has 1 complete record for the variables of `formula`")
bad("utility_model: all-NA column", bi_pair(o = bi_na), function(p) utility_model(p$o, p$m, x ~ y),
    "`original` has 0 complete records")
bad("utility_model: saturated model", bi_pair(bi_d[1:2, ], bi_m[1:2, ]), function(p) utility_model(p$o, p$m, x ~ y),
    "no residual degrees of freedom on `original`")
bad("utility_model: formula as string", bi_pair(), function(p) utility_model(p$o, p$m, "x ~ y"),
    "`formula` must be a two-sided model formula")
bad("utility_model: unknown variable", bi_pair(), function(p) utility_model(p$o, p$m, x ~ zz),
    "`formula` uses variables that are not columns of `original`: `zz`")
bad("utility_model: level 1", bi_pair(), function(p) utility_model(p$o, p$m, x ~ y, level = 1), "`level` must be below 1")
bad("utility_model: bad family", bi_pair(), function(p) utility_model(p$o, p$m, x ~ y, family = "gauss"),
    "`family` must be a family")
bad("assess: NULL masked", bi_pair(m = NULL), function(p) assess(p$o, p$m), "`masked` must be a data frame.*NULL")
bad("assess: mismatched rows", bi_pair(m = bi_m[-1, ]), function(p) assess(p$o, p$m), "`original` has 20 rows but `masked` has 19")
bad("assess: formula as string", bi_pair(), function(p) assess(p$o, p$m, formula = "x ~ y"),
    "`formula` must be NULL or a model formula")
bad("assess: empty vars", bi_pair(), function(p) assess(p$o, p$m, vars = character()), "No continuous variable to assess")

# ---- tables and NHS checks ------------------------------------------------------------
bad("safe_table: strata missing", bi_d, function(x) safe_table(x), "`strata` is missing")
bad("safe_table: zero rows", bi_d[0, ], function(x) safe_table(x, "g"), "`data` has no records to tabulate")
bad("safe_table: k 0", bi_d, function(x) safe_table(x, "g", k = 0), "`k` must be a single whole number >= 1")
bad("safe_table: base 0", bi_d, function(x) safe_table(x, "g", method = "round", base = 0), "`base` must be a single whole number >= 1")
bad("safe_table: prob 2", bi_d, function(x) safe_table(x, "g", method = "barnardise", prob = 2), "`prob` must be a single finite number")
bad("safe_table: plan 3", bi_d, function(x) safe_table(x, "g", plan = 3), "`plan` must be one of the aggregate plans")
bad("safe_table: list column", bi_list, function(x) safe_table(x, "x"), "`strata` columns must be atomic vectors")
bad("safe_table: duplicated strata", bi_d, function(x) safe_table(x, c("g", "g")), "`strata` names a column more than once")
bad("nhs_check: roles missing", bi_d, function(x) nhs_check(x), "`roles` is missing")
bad("nhs_check: unknown role", bi_d, function(x) nhs_check(x, roles = c(g = "nope")), "`roles` has unknown roles: \"nope\"")
bad("nhs_check: unnamed roles", bi_d, function(x) nhs_check(x, roles = "direct"), "`roles` must be a named character vector")
bad("nhs_check: roles NA", bi_d, function(x) nhs_check(x, roles = c(g = NA)), "`roles` must be a named character vector")
bad("nhs_check: k = 1", bi_d, function(x) nhs_check(x, roles = c(g = "gender"), k = 1), "`k` must be a single whole number >= 3")
bad("nhs_check: strata not in data", bi_d, function(x) nhs_check(x, roles = c(g = "gender"), strata = "zz"),
    "`strata` names columns that are not in the data")
bad("nhs_check: zero rows", bi_d[0, ], function(x) nhs_check(x, roles = c(g = "gender")), NA,
    function(r) expect_s3_class(r, "detanon_nhs_check"))
bad("nhs_gate: bad plan", bi_d, function(x) nhs_gate(x, roles = c(g = "gender"), plan = "medium"),
    "`plan` must be one of \"weak\", \"strong\"")

# ---- generalisation of vectors --------------------------------------------------------
bad("generalise_bands: character numbers", c("1", "2"), function(x) generalise_bands(x), "`x` must be numeric")
bad("generalise_bands: Inf", c(1, Inf), function(x) generalise_bands(x), "`x` contains Inf or NaN")
bad("generalise_bands: width 0", 1:5, function(x) generalise_bands(x, width = 0), "`width` must be a single finite number > 0")
bad("generalise_bands: width too fine", c(0, 1e10), function(x) generalise_bands(x, width = 1e-10),
    "`width` \\(1e-10\\) would make .* bands")
bad("generalise_bands: below origin", c(-1, 3), function(x) generalise_bands(x), "`x` has values below `origin`")
bad("generalise_bands: empty", numeric(), function(x) generalise_bands(x), NA,
    function(r) expect_identical(length(r), 0L))
bad("generalise_date: numbers", c(1, 2), function(x) generalise_date(x), "`x` must be a Date, POSIXct or ISO date string")
bad("generalise_date: not ISO", "21/11/2026", function(x) generalise_date(x), "`x` must hold dates")
bad("generalise_date: bad to", as.Date("2026-11-21"), function(x) generalise_date(x, to = "day"),
    "`to` must be one of \"month\", \"year\"")
bad("generalise_postcode: junk", c("LS1 4AP", "???"), function(x) generalise_postcode(x), "`x` has values that are not UK postcodes")
bad("generalise_postcode: factor NA kept", factor(c("LS1 4AP", NA)), function(x) generalise_postcode(x), NA,
    function(r) expect_true(is.na(r[2])))
bad("generalise_rare: list", list("a", "b"), function(x) generalise_rare(x), "`x` must be an atomic vector")
bad("generalise_rare: k 0", c("a", "b"), function(x) generalise_rare(x, k = 0), "`k` must be a single whole number >= 1")
bad("generalise_rare: other clash", c("a", "a", "b"), function(x) generalise_rare(x, 2, other = "a"),
    "`other` \\(\"a\"\\) is already a common category")
bad("generalise_rare: factor with unused levels", factor(c("a", "a", "b"), levels = c("a", "b", "c")),
    function(x) generalise_rare(x, 2), NA, function(r) expect_false("c" %in% as.character(r)))

# ---- simulation and data --------------------------------------------------------------
bad("fleishman_coef: character", "1", function(x) fleishman_coef(x, 1), "`skewness` must be a single finite number")
bad("fleishman_coef: impossible moments", 3, function(x) fleishman_coef(x, 0), "No Fleishman polynomial.*raise `kurtosis`")
bad("fleishman_coef: tol 0", 1, function(x) fleishman_coef(x, 1.5, tol = 0), "`tol` must be a single finite number > 0")
bad("vale_maurelli_cor: not a correlation", matrix(c(1, 2, 2, 1), 2),
    function(x) vale_maurelli_cor(x, rbind(fleishman_coef(0, 0), fleishman_coef(0, 0))), "`cor` must be a symmetric")
bad("vale_maurelli_cor: coef rows", diag(2), function(x) vale_maurelli_cor(x, fleishman_coef(0, 0)),
    "`coef` must be a numeric matrix with one row per variable")
bad("rvale_maurelli: n = 0", 0, function(x) rvale_maurelli(x, 0, 1), "`n` must be a single whole number >= 1")
bad("rvale_maurelli: sd 0", 10, function(x) rvale_maurelli(x, 0, 0), "`sd` must be a numeric vector")
bad("rvale_maurelli: mean NA", 10, function(x) rvale_maurelli(x, NA, 1), "`mean` must be a numeric vector of finite means")
bad("rvale_maurelli: duplicated names", 10, function(x) rvale_maurelli(x, c(0, 1), c(1, 1), names = c("a", "a")),
    "`names` must be 2 distinct variable names")
bad("simulate_ncds: n = 3", 3, function(x) simulate_ncds(x), "`n` must be a single whole number between 4")
bad("simulate_ncds: seed 1.5", 10, function(x) simulate_ncds(x, seed = 1.5), "`seed` must be a single whole number")
bad("ncds_targets: takes no data", NULL, function(x) ncds_targets(), NA,
    function(r) expect_true(length(r) > 0))
bad("titanic_paper: missing columns", bi_d, function(x) titanic_paper(x), "`data` lacks the Titanic columns")
bad("titanic_paper: character Age", bi_mod(titanic, Age = as.character(titanic$Age)), function(x) titanic_paper(x),
    "`data` columns `Age` must be numeric")
bad("titanic_paper: zero rows", titanic[0, ], function(x) titanic_paper(x), NA,
    function(r) expect_identical(nrow(r), 0L))

bad("hierarchy: not a coarsening", data.frame(v = c("a", "b", "c"), g = c("x", "y", "x"), h = c("p", "q", "q")),
    function(x) hierarchy(x), "level 2 \\(`h`\\) is not a coarsening of level 1")
bad("hierarchy: NA label", data.frame(v = c("a", NA)), function(x) hierarchy(x), "missing labels")
bad("hierarchy_bands: character", c("1", "2"), function(x) hierarchy_bands(x, width = 2), "`x` must be numeric")
bad("hierarchy_bands: width 0", c(1, 5), function(x) hierarchy_bands(x, width = 0), "`width` must be a single finite number > 0")
bad("hierarchy_date: not dates", c("2012-03-14", "soon"), function(x) hierarchy_date(x), "ISO form")
bad("hierarchy_postcode: not postcodes", c("LS1 4AP", "12345"), function(x) hierarchy_postcode(x), "not UK postcodes")
bad("equivalence_classes: ola without quasi", bi_d, function(x) equivalence_classes(x, k = 3, method = "ola", strata = "g"),
    "`quasi` is empty")
bad("equivalence_classes: ola max_suppression 2", bi_d,
    function(x) equivalence_classes(x, k = 3, quasi = "g", method = "ola", max_suppression = 2),
    "`max_suppression` must be a single finite number >= 0 and <= 1")
bad("anonymise_keps: classes and strata", bi_d,
    function(x) anonymise_keps(x, epsilon = 1, vars = "y", strata = "g",
                               classes = equivalence_classes(x, k = 3, strata = "g")),
    "either `classes` or `quasi`/`strata`")
# ---- stirring (stir_clusters, distance_map, blend_outliers, stir) ---------------------
st <- function(...) function(x) stir(x, ...)
bad("stir: matrix", as.matrix(bi_d), st(vars = "x", strata = "g"), "`data` must be a data frame")
bad("stir: zero rows", bi_d[0, ], st(vars = "x", strata = "g"), "`data` has no records")
bad("stir: no clusters", bi_d, st(vars = "x"), "give the clusters: `strata`.*`classes`")
bad("stir: k = 1", bi_d, st(vars = "x", strata = "g", k = 1), "`k` must be a single whole number >= 2")
bad("stir: bad method", bi_d, st(vars = "x", strata = "g", method = "reflect"), "`method`")
bad("stir: seed 1.5", bi_d, st(vars = "x", strata = "g", seed = 1.5), "`seed` must be a single whole number")
bad("stir: classes too short", bi_d, st(vars = "x", classes = 1:3), "`classes` must be a vector with one class per record")
bad("stir: NA class", bi_d, st(vars = "x", classes = c(NA, rep(1L, 19))), "`classes` has 1 missing class")
bad("stir: NA in vars", bi_na, st(vars = "x", strata = "g"), "`vars` column `x` has 20 missing values")
bad("stir: Inf in vars", bi_inf, st(vars = "x", strata = "g"), "`vars` column `x` has infinite values")
bad("stir: list column", bi_list, st(vars = "x", strata = "g"), "`vars` column `x` must be numeric")
bad("stir: small clusters", bi_d, st(vars = "x", strata = "g", k = 11), "2 clusters have fewer than k = 11")
bad("stir: var in strata", bi_d, st(vars = "g", strata = "g"), "Columns cannot be in both `vars` and `strata`: `g`")
bad("stir: character column shuffled", bi_chr, st(vars = "x", strata = "g", seed = 1), NA,
    function(r) expect_setequal(r$x, bi_chr$x))
bad("stir: one cluster, flatten", bi_d, st(vars = c("x", "y"), classes = rep(1L, 20), method = "flatten"), NA,
    function(r) expect_length(unique(r$x), 1L))
bo <- function(...) function(x) suppressMessages(blend_outliers(x, ...))
bad("blend_outliers: no large cluster", bi_d, bo(vars = "x", strata = "g", k = 11),
    "no cluster has k = 11 or more records")
bad("blend_outliers: bad map", bi_d, bo(vars = "x", strata = "g", map = "m"), "`map` must be a distance_map")
bad("blend_outliers: map of other vars", bi_d, bo(vars = c("x", "y"), strata = "g",
                                                 map = distance_map(bi_d, "x")), "`map` must be a distance_map")
bad("blend_outliers: bad method", bi_d, bo(vars = "x", strata = "g", method = "median"), "`method`")
bad("blend_outliers: moves a small stratum", bi_mod(bi_d, g = c(rep("a", 18), "b", "b")),
    bo(vars = "x", strata = "g", k = 3, seed = 1), NA,
    function(r) expect_identical(unique(r$g), "a"))
bad("stir_clusters: radius missing", bi_d, function(x) stir_clusters(x, quasi = "x"), "`radius` must be 1 finite number")
bad("stir_clusters: radius negative", bi_d, function(x) stir_clusters(x, quasi = c("x", "y"), radius = c(1, -1)),
    "`radius` must be 2 finite numbers >= 0")
bad("stir_clusters: radius names", bi_d, function(x) stir_clusters(x, quasi = c("x", "y"), radius = c(x = 1, z = 1)),
    "the names of `radius` must be the `quasi` columns")
bad("stir_clusters: quasi empty", bi_d, function(x) stir_clusters(x, quasi = character(), radius = 1),
    "`quasi` is empty")
bad("stir_clusters: NA in quasi", bi_na, function(x) stir_clusters(x, quasi = "x", radius = 1),
    "`quasi` column `x` has 20 missing values")
bad("stir_clusters: one row", bi_d[1, ], function(x) stir_clusters(x, quasi = "x", radius = 0), NA,
    function(r) expect_identical(r$class, 1L))
bad("distance_map: vars empty", bi_d, function(x) distance_map(x, character()), "`vars` is empty")
bad("distance_map: one row", bi_d[1, ], function(x) distance_map(x, "x"), "a distance distribution needs at least 2")
bad("distance_map: n_sample 1", bi_d, function(x) distance_map(x, "x", n_sample = 1),
    "`n_sample` must be a single whole number >= 2")
bad("distance_map: constant column", bi_const, function(x) distance_map(x, c("x", "g")), NA,
    function(r) expect_identical(nrow(r$knots), 3L))
bad("data.table: stir", data.table::as.data.table(bi_d), st(vars = c("x", "y"), strata = "g", seed = 1), NA,
    function(r) expect_s3_class(r, "data.table"))
bad("data.table: blend_outliers", data.table::as.data.table(bi_d), bo(vars = "x", strata = "g", k = 2), NA,
    function(r) expect_s3_class(r, "data.table"))

# ---- hostile input, round three -------------------------------------------------------
bi_noname <- stats::setNames(bi_d, c("g", "x", ""))
bad("anonymise: empty column name", bi_noname, an(vars = "x"), "`data` has a column without a name \\(position 3\\)")
bad("anonymise_adaptive: empty column name", bi_noname,
    function(x) anonymise_adaptive(x, vars = "x", strata = "g", k = 3, check_identifiers = FALSE),
    "`data` has a column without a name \\(position 3\\)")
bad("tune_release: empty column name", bi_noname, function(x) tune_release(x, vars = "x", strata = "g"),
    "`data` has a column without a name \\(position 3\\)")
bad("distance_map: vars missing", bi_d, function(x) distance_map(x), "`vars` is missing: name the columns")
bad("hierarchy_bands: widest band overflows", c(0, 1e10),
    function(x) hierarchy_bands(x, width = 1e300, levels = 30), "the widest band, overflows.*lower `width` or `levels`")
bad("hierarchy_bands: 0.3 and 0.1 + 0.2 (one text)", c(0.3, 0.1 + 0.2, 0.7),
    function(x) hierarchy_bands(x, width = 0.1, levels = 2), NA,
    function(r) expect_identical(r$table[[1L]], c("0.3", "0.7")))
bi_na_g <- bi_mod(bi_d, g = replace(bi_d$g, 4, NA))
# a missing stratum value is a stratum of its own, as in anonymise(): here one record
bad("stir: NA in a strata column", bi_na_g, st(vars = "x", strata = "g", seed = 1),
    "1 cluster has fewer than k = 3 records")
bad("blend_outliers: NA in a strata column", bi_na_g, bo(vars = "x", strata = "g", seed = 1), NA,
    function(r) expect_identical(nrow(r), nrow(bi_na_g)))

# ---- data.table inputs must not be modified by reference ------------------------------
bi_dt <- data.table::as.data.table(bi_d)
bad("data.table: strata_table", bi_dt, function(x) strata_table(x, "g", sensitive = "y"), NA)
bad("data.table: kanon_check", bi_dt, function(x) kanon_check(x, "g"), NA)
bad("data.table: detect_identifiers", bi_dt, function(x) detect_identifiers(x), NA)
bad("data.table: remove_identifiers", bi_dt, function(x) remove_identifiers(x, "g", method = "pseudonymise"), NA,
    function(r) expect_s3_class(r, "data.table"))
bad("data.table: generalise_strata", bi_dt, function(x) generalise_strata(x, "g", k = 11), NA)
bad("data.table: equivalence_classes", bi_dt, function(x) equivalence_classes(x, k = 3, quasi = "x"), NA)
bad("data.table: anonymise_keps", bi_dt, function(x) anonymise_keps(x, epsilon = 2, k = 3, quasi = "x", vars = "y"), NA,
    function(r) expect_s3_class(r, "data.table"))
bad("data.table: safe_table", bi_dt, function(x) safe_table(x, "g", method = "round"), NA)
bad("data.table: nhs_check", bi_dt, function(x) nhs_check(x, roles = c(g = "gender")), NA)
bad("data.table: anonymise with merge", data.table::as.data.table(bi_d[c(1:10, 11:12), ]),
    an(k = 3, small_strata = "merge"), NA, function(r) expect_identical(nrow(r), 12L))
bad("data.table: utility_pmse", bi_pair(bi_dt, data.table::as.data.table(bi_m)), function(p) utility_pmse(p$o, p$m), NA)

# ---- silent results that leaked or misled ----------------------------------------------
bi_tiny <- bi_mod(bi_d, x = bi_d$x * 1e-200, y = abs(bi_d$y) * 1e-310) # SD underflows; subnormal
bad("anonymise: tiny values are masked, not released as constant", bi_tiny, an(), NA,
    function(r) {
      expect_false(any(r$x %in% bi_tiny$x))
      expect_gt(length(unique(r$x)), 2L)
      expect_gt(length(unique(r$y)), 2L)
    })
bad("anonymise: row names are not released", `rownames<-`(bi_d, sprintf("94347600%02d", 1:20)), an(), NA,
    function(r) expect_identical(rownames(r), as.character(1:20)))
bad("anonymise: suppressed category leaves no level", bi_mod(bi_d, g = factor(c(rep("a", 18), "rare", "rare"))),
    an(small_strata = "suppress"), NA, function(r) expect_identical(levels(r$g), "a"))
bad("anonymise: unknown format", bi_d, an(format = "round"), "`format` must be NULL or one of \"natural\"")
bad("anonymise: labelled codes are strata by default",
    bi_mod(bi_d, sex = structure(rep(c(1, 2), 10), labels = c(m = 1, f = 2),
                                 class = c("haven_labelled", "vctrs_vctr", "double"))),
    an(strata = NULL), NA, function(r) expect_identical(release_info(r)$settings$strata, c("g", "sex")))
bad("anonymise_keps: tiny epsilon would release Inf", bi_d,
    function(x) anonymise_keps(x, epsilon = 1e-320, quasi = "x", vars = "y"), "noise scale .* overflows")
bad("anonymise_keps: extreme budget would release Inf", bi_d,
    function(x) anonymise_keps(x, epsilon = 1, budget = c(1e-320, 1), quasi = "g", strata = character(),
                               vars = c("x", "y")),
    "noise scale|`quasi`")
bi_date <- bi_mod(bi_d, when = as.Date("2021-03-01") + rep(0:1, each = 10))
bad("safe_table: Date values are counted by date", bi_date, function(x) safe_table(x, "when", method = "none"), NA,
    function(r) {
      expect_identical(r$when, c("2021-03-01", "2021-03-02", "Total"))
      expect_identical(r$n, c(10, 10, 20))
    })
bad("safe_table: integer64 values are counted by value",
    bi_mod(bi_d, id = bit64::as.integer64(rep(c("9007199254740993", "0"), 10))),
    function(x) safe_table(x, "id", method = "none"), NA,
    function(r) {
      expect_identical(r$id, c("0", "9007199254740993", "Total"))
      expect_identical(r$n, c(10, 10, 20))
    })
bad("strata_table: a column named n", bi_mod(bi_d, n = rep(1:2, 10)), function(x) strata_table(x, c("g", "n")),
    "`strata` column `n` has the name of a column of the result")
bad("strata_table: a column named like a sensitive count", bi_mod(bi_d, n_1 = 1L, s = rep(0:1, 10)),
    function(x) strata_table(x, c("g", "n_1"), sensitive = "s"), "`strata` column `n_1` has the name")
bad("safe_table: a column named status", bi_mod(bi_d, status = "x"), function(x) safe_table(x, c("g", "status")),
    "`strata` column `status` has the name of a column of the result")
bad("kanon_check: a key named n", bi_mod(bi_d, n = 1L), function(x) kanon_check(x, c("g", "n")),
    "`strata` column `n` has the name")
bad("risk_linkage: a stratum named rate", bi_pair(bi_mod(bi_d, rate = "a"), bi_mod(bi_m, rate = "a")),
    function(p) risk_linkage(p$o, p$m, vars = c("x", "y"), strata = "rate"), "`strata` column `rate` has the name")
bad("risk_linkage: a stratum named rate_m", bi_pair(bi_mod(bi_d, rate_m = "a"), bi_mod(bi_m, rate_m = "a")),
    function(p) risk_linkage(p$o, p$m, vars = c("x", "y"), strata = "rate_m", m = 2),
    "`strata` column `rate_m` has the name")
bad("utility_pmse: identifier-like columns left out by default",
    bi_pair(bi_mod(bi_d, PatientID = 1:20), bi_mod(bi_m, PatientID = 1:20)),
    function(p) utility_pmse(p$o, p$m), NA, function(r) expect_identical(r$vars, c("g", "x", "y")))
bad("utility_pmse: unknown method", bi_pair(), function(p) utility_pmse(p$o, p$m, method = "forest"),
    "`method` must be one of \"logit\", \"cart\"")
bad("utility_pmse: cart with interactions", bi_pair(), function(p) utility_pmse(p$o, p$m, method = "cart",
                                                                               interactions = TRUE),
    "`interactions = TRUE` applies to `method = \"logit\"`")
bad("utility_model: y ~ . and functions of the formula's environment", bi_pair(),
    function(p) utility_model(p$o, p$m, y ~ . + offset(log(y + 1)) + poly(x, 2)), NA,
    function(r) expect_true(all(c("gb", "poly(x, 2)1", "poly(x, 2)2") %in% r$term)))

bad("anonymise_keps_with_key: epsilon missing", bi_d, function(x) anonymise_keps_with_key(x), "`epsilon` is missing")
bad("anonymise_keps_with_key: vars by position", bi_d, function(x) anonymise_keps_with_key(x, 2),
    "`vars` must be a character vector of column names, not 2")
bad("pseudonymise_with_table: list column", bi_list, function(x) pseudonymise_with_table(x, "x"),
    "cannot be pseudonymised")
bad("pseudonymise_with_table: prefix 1", bi_d, function(x) pseudonymise_with_table(x, "g", prefix = 1),
    "`prefix` must be a single string")
bad("pseudonymise_with_key (deprecated): prefix 1", bi_d, function(x) pseudonymise_with_key(x, "g", prefix = 1),
    "^pseudonymise_with_key\\(\\): `prefix` must be a single string", warning = "is deprecated")

# ---- top-m linkage, replay, adaptive k, tune_release() -----------------------------------
bad("risk_linkage: m = 0", bi_pair(), function(p) risk_linkage(p$o, p$m, m = 0),
    "`m` must be a single whole number >= 1, not 0")
bad("risk_linkage: m larger than every stratum", bi_pair(), function(p) risk_linkage(p$o, p$m, m = 50), NA,
    function(r) expect_equal(r$rate_m, 1))
bad("risk_replay: p = 0", bi_pair(), function(p) risk_replay(p$o, p$m, p = 0), "`p` must be distinct shares in \\(0, 1\\]")
bad("risk_replay: mask not a function", bi_pair(), function(p) risk_replay(p$o, p$m, mask = "anonymise"),
    "`mask` must be NULL or a function")
bad("risk_replay: edited release, no mask", bi_pair(m = bi_mod(bi_m, x = bi_m$x + 1)),
    function(p) risk_replay(p$o, p$m, vars = c("x", "y"), strata = "g"), "pass the intruder's replay as `mask`")
bad("risk_replay: zero rows", bi_pair(bi_d[0, ], bi_plain(bi_m[0, ])),
    function(p) risk_replay(p$o, p$m, vars = c("x", "y"), strata = "g", mask = function(d) d, p = 1), NA,
    function(r) expect_identical(r$n, 0L))
ad <- function(...) function(x) anonymise_adaptive(x, ..., check_identifiers = FALSE)
bad("anonymise_adaptive: matrix", as.matrix(bi_d), ad(), "`data` must be a data frame")
bad("anonymise_adaptive: zero rows", bi_d[0, ], ad(vars = c("x", "y"), strata = "g"), "`data` has no records")
bad("anonymise_adaptive: k_max < k", bi_d, ad(k = 3, k_max = 2), "`k_max` must be a whole number >= k \\(3\\), or one per stage of `rate`, not 2")
bad("anonymise_adaptive: rate 2", bi_d, ad(rate = 2), "`rate` must be a share from 0 to 1, or decreasing shares \\(stages\\), not 2")
bad("anonymise_adaptive: rates increasing", bi_d, ad(rate = c(0.1, 0.3)), "`rate` must be a share from 0 to 1, or decreasing shares")
bad("anonymise_adaptive: m = -1", bi_d, ad(m = -1), "`m` must be")
bad("anonymise_adaptive: format", bi_d, ad(format = "round"), "`format` must be one of")
bad("tune_release: methods", bi_d, function(d) tune_release(d, vars = "x", strata = "g", methods = "swap"), "`methods` must be some of")
bad("anonymise_adaptive: NA", bi_na, ad(vars = "x"), "`vars` have missing values \\(`x`: 20\\)")
bad("anonymise_adaptive: k > stratum size", bi_d, ad(k = 11), "fewer than k = 11 records")
tr <- function(...) function(x) tune_release(x, vars = c("x", "y"), strata = "g", ...)
bad("tune_release: limit 0", bi_d, tr(linkage = 0), "the limit `linkage` must be a single share in \\(0, 1\\]")
bad("tune_release: limit above 1", bi_d, tr(risk1 = 1.5), "the limit `risk1` must be a single share")
bad("tune_release: k above the strata", bi_d, tr(k = 11), "the limit `k_strata` = 11 cannot be met")
bad("tune_release: top_m impossible", bi_d, tr(m = 10, top_m = 0.5), "the limit `top_m` = 0.5 cannot be met with `m` = 10")
bad("tune_release: objective", bi_d, tr(objective = "mse"), "`objective` must be")
bad("tune_release: worst 0", bi_d, tr(worst = 0), "the limit `worst` must be a single share in \\(0, 1\\]")
bad("tune_release: tail 0", bi_d, tr(tail = 0), "the limit `tail` must be a single share in \\(0, 1\\]")
bad("tune_release: noise NA", bi_d, tr(noise = NA), "`noise` must be")
bad("tune_release: verify differencing", bi_d, tr(verify = "differencing"), "which compare two releases")
bad("tune_release: attacks", bi_d, tr(attacks = "nearest"), "`attacks` must name attacks of the battery")
bad("tune_release: verify NA", bi_d, tr(verify = NA_character_), "`verify` must name attacks of the battery")
bad("tune_release: inference without sensitive", bi_d, tr(attacks = "inference"), "needs a `sensitive` column")
bad("tune_release: small_strata", bi_d, tr(small_strata = "merge"), "`small_strata` must be one of")
bad("tune_release: sensitive", bi_d, tr(sensitive = 1), "`sensitive` must be NULL or the name of a column")
bad("tune_release: intruder", bi_d, tr(intruder = "all"), "`intruder` must be NULL or made by intruder\\(\\)")

# ---- release_report(), write_release(), detanon_app() ------------------------------------
rr <- function(...) function(p) release_report(p$o, p$m, tempfile(fileext = ".html"), ...)
bad("release_report: matrix original", bi_pair(o = as.matrix(bi_d)), rr(), "`original` must be a data frame")
bad("release_report: file NA", bi_pair(), function(p) release_report(p$o, p$m, NA), "`file` must be the path of the HTML file")
bad("release_report: no folder", bi_pair(), function(p) release_report(p$o, p$m, "/no-such-folder-detanon/r.html"),
    "`file`: the folder /no-such-folder-detanon does not exist")
bad("release_report: rows differ", bi_pair(m = bi_plain(bi_m[-1, ])), rr(vars = c("x", "y")),
    "`original` has 20 rows but `masked` has 19")
bad("release_report: k = 0", bi_pair(), rr(k = 0), "`k` must be a single whole number >= 1, not 0")
bad("release_report: worst = 0", bi_pair(), rr(worst = 0), "the limit `worst` must be a single share in \\(0, 1\\]")
bad("release_report: top_m text", bi_pair(), rr(top_m = "0.3"), "the limit `top_m` must be a single share in \\(0, 1\\]")
bad("release_report: formula text", bi_pair(), rr(formula = "x ~ y"), "`formula` must be NULL or a model formula")
bad("release_report: release_file", bi_pair(), rr(release_file = "no-such-release.csv"),
    "`release_file` must be the path of an existing file")
bad("write_release: matrix", as.matrix(bi_d), function(x) write_release(x, tempfile()), "`x` must be a data frame")
bad("write_release: file", bi_m, function(x) write_release(x, c("a.csv", "b.csv")), "`file` must be the path of the CSV file")
bad("write_release: a folder", bi_m, function(x) write_release(x, tempdir()), "`file` is a folder")
bad("write_release: no folder", bi_m, function(x) write_release(x, "/no-such-folder-detanon/r.csv"),
    "`file`: the folder /no-such-folder-detanon does not exist")
bad("write_release: list column", bi_list, function(x) write_release(x, tempfile()),
    "`x` has column `x` that is not a vector")
bad("write_release: seed", bi_m, function(x) write_release(x, tempfile(), seed = NA), "`seed` must be NULL or a single whole number")
bad("release_report: a folder", bi_pair(), function(p) release_report(p$o, p$m, tempdir()), "`file` is a folder")
bad("release_report: release_file a folder", bi_pair(), rr(release_file = tempdir()),
    "`release_file` must be the path of an existing file")
bad("utility_model: list column of masked", bi_pair(m = bi_list), function(p) utility_model(p$o, p$m, y ~ x + g),
    "`formula` uses column `x` of `masked` that is a list")
bad("utility_model: list columns of original", bi_pair(o = bi_mod(bi_list, g = I(as.list(bi_d$g)))),
    function(p) utility_model(p$o, p$m, y ~ x + g), "`formula` uses columns `x`, `g` of `original` that are lists")
bad("anonymise_stratum: list strata column", bi_mod(bi_d, g = I(as.list(bi_d$g))),
    function(x) anonymise_stratum(x, anonymise_stats(bi_d, vars = c("x", "y"), strata = "g", k = 3)),
    "`strata` columns must be atomic vectors")
bad("detanon_app: data not a frame", 1:3, function(x) detanon_app(data = x, run = FALSE), "`data` must be a data frame")
bad("detanon_app: run NA", bi_d, function(x) detanon_app(data = x, run = NA), "`run` must be TRUE or FALSE")
# ---- the risk battery -------------------------------------------------------------------
bi_it <- function(...) intruder(vars = c("x", "y"), strata = "g", ...)
bad("intruder: p = 0", bi_d, function(d) intruder(p = 0), "`p` must be")
bad("intruder: held not names", bi_d, function(d) intruder(held = 1), "`held` must be NULL or a character vector")
bad("intruder: knows", bi_d, function(d) intruder(knows = "everything"), "`knows` must be one of")
bad("intruder_published: sensitive not names", bi_d, function(d) intruder_published(sensitive = 1),
    "`sensitive` must be NULL or a character vector")
bad("intruder_published: p", bi_d, function(d) intruder_published(p = 2), "`p` must be")
bad("risk_battery: unknown attack", bi_pair(), function(p) risk_battery(p$o, p$m, intruder = bi_it(), attacks = "mdav"),
    "`attacks` must name attacks of the battery")
bad("risk_battery: intruder and vars", bi_pair(), function(p) risk_battery(p$o, p$m, vars = "x", intruder = bi_it()),
    "either in `intruder` or as `vars`/`strata`")
bad("risk_battery: not an intruder", bi_pair(), function(p) risk_battery(p$o, p$m, intruder = list(vars = "x")),
    "`intruder` must be made by intruder\\(\\)")
bad("risk_battery: held repeats vars", bi_pair(), function(p) risk_battery(p$o, p$m, intruder = bi_it(held = "x")),
    "`held` repeats columns of `vars` or `strata`")
bad("risk_battery: numeric key with NA", bi_pair(bi_mod(bi_d, z = c(NA, 2:20)), bi_mod(bi_m, z = 1:20)),
    function(p) risk_battery(p$o, p$m, intruder = bi_it(held = "z")), "Numeric key `z` has missing")
bad("risk_battery: zero rows", bi_pair(bi_d[0, ], bi_plain(bi_m[0, ])),
    function(p) risk_battery(p$o, p$m, intruder = bi_it(), sensitive = "g"), "`sensitive` column `g` is one of the intruder's keys")
bad("risk_battery: one row", bi_pair(bi_d[1, ], bi_plain(bi_m[1, ])),
    function(p) risk_battery(p$o, p$m, intruder = bi_it(), seed = 1), NA,
    function(r) expect_equal(as.data.frame(r)$rate[1:2], c(1, 1)))
bad("battery_attacks: the registry", bi_d, function(d) battery_attacks(), NA,
    function(r) expect_true(all(c("linkage_released", "singling_out", "inference") %in% names(r))))
bad("masking_methods: the registry", bi_d, function(d) masking_methods(), NA,
    function(r) expect_true(all(c("anonymise", "adaptive", "mdav", "keyed") %in% names(r))))
bad("attack_linkage: direction", bi_pair(), function(p) attack_linkage(p$o, p$m, intruder = bi_it(), direction = "both"),
    "`direction` must be one of")
bad("attack_linkage: m = 0", bi_pair(), function(p) attack_linkage(p$o, p$m, intruder = bi_it(), m = 0), "`m` must be")
bad("attack_singling_out: bins = 0", bi_pair(), function(p) attack_singling_out(p$o, p$m, intruder = bi_it(), bins = 0),
    "`bins` must be whole numbers >= 1")
bad("attack_singling_out: constant column", bi_pair(bi_const, bi_mod(bi_m, x = 1)),
    function(p) attack_singling_out(p$o, p$m, intruder = intruder(vars = "y", strata = "g", held = "x")), NA,
    function(r) expect_true(r$rate >= 0 && r$rate <= 1))
bad("attack_differencing: no previous", bi_pair(), function(p) attack_differencing(p$o, p$m, intruder = bi_it()),
    "`previous` must be another release of the same people")
bad("attack_differencing: previous_original of other rows", bi_pair(),
    function(p) attack_differencing(p$o, p$m, previous = p$m, previous_original = p$o[-1, ], intruder = bi_it()),
    "`previous_original` must have the rows of `previous`")
bad("attack_composition: previous a matrix", bi_pair(),
    function(p) attack_composition(p$o, p$m, previous = as.matrix(p$m), intruder = bi_it()),
    "`previous` must be another release of the same people \\(a data frame\\), not")
bad("risk_battery: previous without a column", bi_pair(),
    function(p) risk_battery(p$o, p$m, intruder = bi_it(), previous = p$m["x"]), "`previous` lacks columns of `masked`")
bad("attack_tails: part", bi_pair(), function(p) attack_tails(p$o, p$m, intruder = bi_it(), part = "all"),
    "`part` must be one of")
bad("attack_tails: n_extreme = 0", bi_pair(), function(p) attack_tails(p$o, p$m, intruder = bi_it(), part = "extremes", n_extreme = 0),
    "`n_extreme` must be a single whole number >= 1")
bad("attack_inference: holdout", bi_pair(), function(p) attack_inference(p$o, p$m, sensitive = "s", holdout = 0,
                                                                         intruder = bi_it()),
    "`holdout` must be a single finite number > 0 and <= 0.9")
bad("attack_inference: sensitive missing", bi_pair(), function(p) attack_inference(p$o, p$m, sensitive = "zz", intruder = bi_it()),
    "`sensitive`.*`zz`")
bad("attack_inference: sensitive is a key", bi_pair(), function(p) attack_inference(p$o, p$m, sensitive = "x", intruder = bi_it()),
    "`sensitive` column `x` is one of the intruder's keys")
bad("attack_inference: tolerance", bi_pair(bi_mod(bi_d, s = rep(1:4, 5)), bi_mod(bi_m, s = rep(1:4, 5))),
    function(p) attack_inference(p$o, p$m, sensitive = "s", intruder = bi_it(), tolerance = -1), "`tolerance` must be")
bad("attack_inference: type numeric on text", bi_pair(bi_mod(bi_d, s = letters[1:20]), bi_mod(bi_m, s = letters[1:20])),
    function(p) attack_inference(p$o, p$m, sensitive = "s", intruder = bi_it(), type = "numeric"),
    "is not numeric in both data sets")
# ---- attacks of the risk battery (assignment, Fellegi-Sunter, recipe) -------------------
bad("attack_assignment: limit 0", bi_pair(), function(p) attack_assignment(p$o, p$m, limit = 0),
    "`limit` must be a single whole number >= 1, not 0")
bad("attack_assignment: rounds -1", bi_pair(), function(p) attack_assignment(p$o, p$m, rounds = -1),
    "`rounds` must be a single whole number >= 0")
bad("attack_assignment: zero rows", bi_pair(bi_d[0, ], bi_plain(bi_m[0, ])),
    function(p) attack_assignment(p$o, p$m, intruder = intruder(vars = c("x", "y"), strata = "g")), NA,
    function(r) expect_identical(r$n, 0L))
bad("attack_assignment: sparse on one-record cells", bi_pair(bi_mod(bi_d, id = as.character(1:20)), bi_mod(bi_m, id = as.character(1:20))),
    function(p) attack_assignment(p$o, p$m, intruder = intruder(vars = c("x", "y"), strata = "g", held = "id"),
                                  limit = 1, control = FALSE),
    NA, function(r) expect_equal(r$success, rep(1, 20)))
bad("attack_fellegi_sunter: bands decreasing", bi_pair(), function(p) attack_fellegi_sunter(p$o, p$m, bands = c(1, 0.5)),
    "`bands` must be increasing positive distances")
bad("attack_fellegi_sunter: max_pairs 0", bi_pair(), function(p) attack_fellegi_sunter(p$o, p$m, max_pairs = 0),
    "`max_pairs` must be")
bad("attack_fellegi_sunter: zero rows", bi_pair(bi_d[0, ], bi_plain(bi_m[0, ])),
    function(p) attack_fellegi_sunter(p$o, p$m, intruder = intruder(vars = c("x", "y"), strata = "g")), NA,
    function(r) expect_identical(r$n, 0L))
bad("attack_recipe: k = 1", bi_pair(), function(p) attack_recipe(p$o, p$m, k = 1), "`k` must be NULL or whole numbers >= 2")
bad("attack_recipe: k_max 1", bi_pair(), function(p) attack_recipe(p$o, p$m, k_max = 1), "`k_max` must be a single whole number >= 2")
bad("attack_recipe: k above every stratum", bi_pair(), function(p) attack_recipe(p$o, p$m, k = 50, control = FALSE), NA,
    function(r) expect_identical(r$rate, 0))

# ---- anonymise_mdav() -----------------------------------------------------------------
am <- function(...) function(x) anonymise_mdav(x, ..., check_identifiers = FALSE)
bad("anonymise_mdav: matrix", as.matrix(bi_d), am(), "`data` must be a data frame")
bad("anonymise_mdav: zero rows", bi_d[0, ], am(), "`data` has no records")
bad("anonymise_mdav: k = 1", bi_d, am(k = 1), "`k` must be a single whole number >= 2, not 1")
bad("anonymise_mdav: k as character", bi_d, am(k = "3"), "`k` must be a single whole number.*\"3\"")
bad("anonymise_mdav: k table without k", bi_d, am(k = data.frame(g = c("a", "b"))),
    "`k` as a table needs the `strata` columns and a column `k`")
bad("anonymise_mdav: k table k too large", bi_d, am(vars = c("x", "y"), strata = "g",
                                                   k = data.frame(g = c("a", "b"), k = c(3L, 11L))),
    "fewer records than its `k`")
bad("anonymise_mdav: k > stratum size", bi_d, am(k = 11), "fewer than k = 11 records")
bad("anonymise_mdav: NA in vars", bi_na, am(vars = "x"), "`vars` have missing values")
bad("anonymise_mdav: format", bi_d, am(format = "round"), "`format` must be NULL or one of")
bad("anonymise_mdav: nthreads 0", bi_d, am(nthreads = 0), "`nthreads` must be a single whole number >= 1")
bad("anonymise_mdav: constant column", bi_const, am(vars = c("x", "y"), strata = "g"), NA,
    function(r) expect_identical(r$x, bi_const$x))
bad("anonymise_mdav: one group per stratum", bi_d, am(vars = c("x", "y"), strata = "g", k = 6, format = "none"),
    NA, function(r) expect_identical(as.vector(tapply(r$x, r$g, function(v) length(unique(v)))), c(1L, 1L)))
bad("anonymise_mdav: one record", bi_d[1, ], am(vars = c("x", "y"), strata = character(), k = 2),
    "fewer than k = 2")

# ---- anonymise_keyed() ----------------------------------------------------------------
bi_key <- "bad-input-test-key-0001"
ak <- function(...) function(x) anonymise_keyed(x, ..., check_identifiers = FALSE)
bad("anonymise_keyed: matrix", as.matrix(bi_d), ak(key = bi_key), "`data` must be a data frame")
bad("anonymise_keyed: zero rows", bi_d[0, ], ak(key = bi_key), "`data` has no records")
bad("anonymise_keyed: no key", bi_d, ak(), "`key` must be the custodian's secret.*nothing was given")
bad("anonymise_keyed: short key", bi_d, ak(key = "abc"), "`key` must be.*at least 16 characters.*its value is not shown")
bad("anonymise_keyed: NA key", bi_d, ak(key = NA_character_), "`key` must be the custodian's secret")
bad("anonymise_keyed: two keys", bi_d, ak(key = c(bi_key, bi_key)), "`key` must be.*a character of length 2")
bad("anonymise_keyed: numeric key", bi_d, ak(key = 1234567890123456789), "`key` must be the custodian's secret")
bad("anonymise_keyed: short raw key", bi_d, ak(key = as.raw(1:8)), "`key` must be.*raw vector of at least 16 bytes")
bad("anonymise_keyed: k = 1", bi_d, ak(key = bi_key, k = 1), "`k` must be a single whole number >= 2, not 1")
bad("anonymise_keyed: size < k", bi_d, ak(key = bi_key, k = 3, size = 2), "`size` must be a single finite number >= 3, not 2")
bad("anonymise_keyed: size NA", bi_d, ak(key = bi_key, size = NA), "`size` must be a single finite number")
bad("anonymise_keyed: held missing", bi_d, ak(key = bi_key, vars = "x", strata = "g", held = "nope"),
    "`held` names columns that are not in the data")
bad("anonymise_keyed: held in vars", bi_d, ak(key = bi_key, vars = c("x", "y"), strata = "g", held = "y"),
    "`held` repeats columns of `vars` or `strata`")
bad("anonymise_keyed: k > stratum size", bi_d, ak(key = bi_key, k = 11, size = 11, vars = c("x", "y"), strata = "g"),
    "fewer than k = 11 records")
bad("anonymise_keyed: NA in vars", bi_na, ak(key = bi_key, vars = "x"), "`vars` have missing values")
bad("anonymise_keyed: format", bi_d, ak(key = bi_key, format = "round"), "`format` must be NULL or one of")
bad("anonymise_keyed: noise NA", bi_d, ak(key = bi_key, noise = NA), "`noise` must be")
bad("anonymise_mdav: noise NA", bi_d, function(x) anonymise_mdav(x, noise = NA, check_identifiers = FALSE), "`noise` must be")
bad("anonymise_mdav: short key", bi_d, function(x) anonymise_mdav(x, noise = TRUE, key = "short", check_identifiers = FALSE),
    "`key` must be the custodian's secret")
bad("anonymise_keyed: noise as text", bi_d, ak(key = bi_key, noise = "yes"), "`noise` must be")
bad("anonymise_keyed: 65 variables", as.data.frame(matrix(stats::rnorm(650), 10)), ak(key = bi_key, strata = character()),
    "At most 64 varying `vars` can be masked together \\(65 given\\)")
bad("anonymise_keyed: constant column", bi_const, ak(key = bi_key, vars = c("x", "y"), strata = "g"), NA,
    function(r) expect_identical(r$x, bi_const$x))
bad("anonymise_keyed: one group per stratum", bi_d, ak(key = bi_key, vars = c("x", "y"), strata = "g", k = 10, size = 10),
    NA, function(r) expect_identical(as.vector(tapply(r$x, r$g, function(v) length(unique(v)))), c(1L, 1L)))
bad("anonymise_keyed: size above n", bi_d, ak(key = bi_key, vars = c("x", "y"), strata = "g", size = 1e6), NA,
    function(r) expect_identical(release_info(r)$counts$n_groups, 2L))

# ---- partitioned anonymise() (R/anonymise_stats.R, _stratum, _rescale, _release, _partitioned)
bi_st <- anonymise_stats(list(bi_d[1:7, ], bi_d[8:20, ]), vars = c("x", "y"), strata = "g", k = 3)
bi_pc <- lapply(split(bi_d, bi_d$g), anonymise_stratum, stats = bi_st)
bi_s5 <- anonymise_rescale(bi_pc, stats = bi_st)
bad("anonymise_stats: not chunks", 1:3, function(x) anonymise_stats(x, vars = "x"),
    "`chunks` must be a list of data frames or a function")
bad("anonymise_stats: no records", list(bi_d[0, ]), function(x) anonymise_stats(x, vars = "x"),
    "`chunks` holds no records")
bad("anonymise_stats: a chunk lacks a column", list(bi_d, bi_d[-2]), function(x) anonymise_stats(x, vars = c("x", "y")),
    "chunk 2 of `chunks` lacks the columns `x`")
bad("anonymise_stats: missing values", list(bi_d, bi_na), function(x) anonymise_stats(x, vars = c("x", "y")),
    "`vars` have missing values \\(chunk 2")
bad("anonymise_stats: na = median_stratum", list(bi_d), function(x) anonymise_stats(x, vars = "x", na = "median_stratum"),
    "`na = \"median_stratum\"` is not supported partitioned")
bad("anonymise_stats: small_strata = merge", list(bi_d), function(x) anonymise_stats(x, vars = "x", small_strata = "merge"),
    "`small_strata = \"merge\"` is not supported partitioned")
bad("anonymise_stats: small strata", list(bi_d), function(x) anonymise_stats(x, vars = "x", strata = "g", k = 11),
    "2 strata have fewer than k = 11 records")
bad("anonymise_stats: k = 1", list(bi_d), function(x) anonymise_stats(x, vars = "x", k = 1), "`k` must be a single whole number >= 2")
bad("anonymise_stats: unknown method", list(bi_d), function(x) anonymise_stats(x, vars = "x", method = "knn"),
    "`method` must be one of \"anonymise\"")
bad("anonymise_stats: a method not per stratum", list(bi_d),
    function(x) anonymise_stats(x, vars = "x", method = "stir"), "`method = \"stir\"` cannot run stratum by stratum")
bad("anonymise_stats: keyed without its key", list(bi_d),
    function(x) anonymise_stats(x, vars = "x", method = "keyed"), "`key` must be the custodian's secret")
bad("anonymise_stats: a key for another method", list(bi_d),
    function(x) anonymise_stats(x, vars = "x", key = "a-key-of-sixteen-chars"), "`key` is the secret of `method = \"keyed\"`")
bad("anonymise_stratum: part of a stratum", bi_d[1:5, ], function(x) anonymise_stratum(x, stats = bi_st),
    "`data` must hold whole strata: `g=a`")
bad("anonymise_stratum: not stats", bi_d, function(x) anonymise_stratum(x, stats = list()),
    "`stats` must be the statistics made by anonymise_stats\\(\\)")
bad("anonymise_stratum: unknown stratum", bi_mod(bi_d, g = "z"), function(x) anonymise_stratum(x, stats = bi_st),
    "holds a stratum that the statistics in `stats` do not know")
bad("anonymise_stratum: statistics of other data (same counts)", bi_mod(bi_d, x = rev(bi_d$x)),
    function(x) anonymise_stratum(x, stats = bi_st),
    "`data` holds other values than the statistics in `stats` were made of, in strata `g=a`, `g=b`")
bad("anonymise_rescale: a missing piece", bi_pc[1], function(x) anonymise_rescale(x, stats = bi_st),
    "`pieces` must hold every stratum kept by `stats` exactly once")
bad("anonymise_rescale: a repeated piece", bi_pc[c(1, 1, 2)], function(x) anonymise_rescale(x, stats = bi_st),
    "with repeats")
bad("anonymise_rescale: not a piece", list(bi_d), function(x) anonymise_rescale(x, stats = bi_st),
    "piece 1 of `pieces` must be a result of anonymise_stratum\\(\\)")
bad("anonymise_release: not a piece", bi_d, function(x) anonymise_release(x, stats = bi_st, step5 = bi_s5),
    "`piece` must be a result of anonymise_stratum\\(\\)")
bad("anonymise_release: not step5", bi_pc[[1]], function(x) anonymise_release(x, stats = bi_st, step5 = list()),
    "`step5` must be the result of anonymise_rescale\\(\\)")
bad("anonymise_partitioned: group_size 0", list(bi_d), function(x) anonymise_partitioned(x, vars = "x", group_size = 0),
    "`group_size` must be a single whole number >= 1")
bad("anonymise_partitioned: a function without strata_source", list(bi_d),
    function(x) anonymise_partitioned(function(i) x[i][[1]], vars = "x"), "`chunks` must be a list of data frames when")
bad("anonymise_partitioned: strata_source not a function", list(bi_d),
    function(x) anonymise_partitioned(x, vars = "x", strata_source = 1), "`strata_source` must be NULL or a function")
bad("anonymise_partitioned: future not a flag", list(bi_d),
    function(x) anonymise_partitioned(x, vars = "x", future = "yes"), "`future` must be TRUE or FALSE")
bad("anonymise_partitioned: a failing source", list(bi_d),
    function(x) anonymise_partitioned(x, vars = "x", strata = "g", future = FALSE, check_identifiers = FALSE,
                                      strata_source = function(s) stop("connection lost")),
    "Masking the strata g=.* failed: connection lost")
# method "stratum": its table of k per stratum checked as anonymise_adaptive() checks it
bi_kt <- data.frame(g = c("a", "b"), k = c(3L, 4L))
bi_ps <- function(...) function(x) anonymise_partitioned(x, vars = c("x", "y"), strata = "g", method = "stratum",
                                                         future = FALSE, check_identifiers = FALSE, ...)
bad("anonymise_partitioned: stratum, a stratum without k", list(bi_d), bi_ps(k = bi_kt[1, ]),
    "`k` has no row for 1 stratum of `data`")
bad("anonymise_partitioned: stratum, k = NA", list(bi_d), bi_ps(k = within(bi_kt, k[2] <- NA)),
    "the column `k` of `k` must hold whole numbers >= 2")
bad("anonymise_partitioned: stratum, k not whole", list(bi_d), bi_ps(k = within(bi_kt, k[2] <- 3.5)),
    "the column `k` of `k` must hold whole numbers >= 2")
bad("anonymise_partitioned: stratum, k above its stratum", list(bi_d), bi_ps(k = within(bi_kt, k[2] <- 11L)),
    "1 stratum has fewer records than its `k` in the table `k` \\(the smallest has 10 records for k = 11\\)")
bad("anonymise_partitioned: stratum, two rows of a stratum", list(bi_d), bi_ps(k = rbind(bi_kt, bi_kt[1, ])),
    "`k` has more than one row for a stratum")
bad("anonymise_partitioned: stratum, k_max below k", list(bi_d), bi_ps(k = within(bi_kt, k[2] <- 9L), k_max = 5),
    "`k_max` must be a whole number >= k \\(9\\)")
bad("anonymise_partitioned: stratum, m = 1", list(bi_d), bi_ps(k = bi_kt, m = 1),
    "`m` must be 0 \\(or NULL\\) for `method = \"stratum\"`, not 1")
bad("anonymise_partitioned: a table k for another method", list(bi_d),
    function(x) anonymise_partitioned(x, vars = c("x", "y"), strata = "g", k = bi_kt, method = "mdav", future = FALSE),
    "`k` must be a single whole number >= 2")
bad("anonymise_stats: stratum, a stratum without k", list(bi_d),
    function(x) anonymise_stats(x, vars = "x", strata = "g", method = "stratum", k = bi_kt[2, ]),
    "`k` has no row for 1 stratum of `data`")
bad("strata_groups: group_size", bi_st, function(x) strata_groups(x, group_size = -1), "`group_size` must be")
bad("strata_groups: not stats", bi_d, function(x) strata_groups(x), "`stats` must be the statistics")

bad("risk_partitioned: measure", bi_pair(), function(p) risk_partitioned(p$o, p$m, "rmd", future = FALSE),
    "`measure` must be one of")
bad("risk_partitioned: rows differ", bi_pair(), function(p) risk_partitioned(p$o, p$m[-1, ], future = FALSE),
    "`original` and `masked` must have the same rows")
bad("risk_partitioned: m = 0", bi_pair(), function(p) risk_partitioned(p$o, p$m, m = 0, future = FALSE),
    "`m` must be a single whole number >= 1")
bad("risk_partitioned: control", bi_pair(), function(p) risk_partitioned(p$o, p$m, "attack_assignment", control = TRUE,
                                                                         future = FALSE),
    "`control = TRUE` is not supported partitioned")

# ---- release_info() --------------------------------------------------------------------
bad("release_info: not a release", bi_d, function(x) release_info(x), NA, function(r) expect_null(r))
bad("release_info: a vector", 1:3, function(x) release_info(x), NA, function(r) expect_null(r))
bad("release_info: subset release", bi_m, function(x) release_info(x[-1, ]), NA, function(r) expect_null(r),
    warning = "release_info\\(\\): the rows of `x` were subset, reordered or edited after anonymise\\(\\)")

# ---- sdcMicro (R/sdcmicro.R; these need no sdcMicro: the input is not an sdcMicroObj) ----
bad("sdc_extract: a data frame", bi_d, function(x) sdc_extract(x), "`obj` must be an sdcMicroObj")
bad("sdc_attach: a data frame", bi_d, function(x) sdc_attach(x, risk_linkage(bi_d, bi_m)), "`obj` must be an sdcMicroObj")
bad("sdc_results: NULL", NULL, function(x) sdc_results(x), "`obj` must be an sdcMicroObj.*not NULL")
bad("sdc_report: a list", list(a = 1), function(x) sdc_report(x, report = FALSE), "`obj` must be an sdcMicroObj")

# ---- anonymise_db() (R/database.R): errors change nothing in the database ----------------
bad("verify_db: not a connection", bi_d,
    function(d) verify_db(d, "t", "r", by = "id", vars = "x", strata = "g"), "verify_db\\(\\): `con` ")
bad("anonymise_db: not a connection", bi_d,
    function(d) anonymise_db(d, "t", vars = "x", strata = "g", output = "o"), "anonymise_db\\(\\): `con` ")
if (requireNamespace("DBI", quietly = TRUE) && requireNamespace("RSQLite", quietly = TRUE)) {
  bi_con <- DBI::dbConnect(RSQLite::SQLite(), ":memory:")
  DBI::dbWriteTable(bi_con, "bi", bi_mod(bi_d, s = letters[1:20]))
  DBI::dbWriteTable(bi_con, "taken", data.frame(a = 1:2))
  DBI::dbExecute(bi_con, "CREATE VIEW bi_view AS SELECT * FROM bi")
  bi_closed <- DBI::dbConnect(RSQLite::SQLite(), ":memory:")
  DBI::dbDisconnect(bi_closed)
  bi_db_state <- function(con) {
    tabs <- sort(DBI::dbListTables(con))
    list(tabs, lapply(tabs, function(t) DBI::dbReadTable(con, t)),
         DBI::dbGetQuery(con, "SELECT name FROM sqlite_master WHERE type = 'index'"))
  }
  # anonymise_db() on bi_con, checking that an error leaves the database as it was
  bi_db <- function(...) {
    function(con) {
      before <- bi_db_state(con)
      on.exit(if (!identical(bi_db_state(con), before)) stop("the database changed"))
      anonymise_db(con, ..., check_identifiers = FALSE)
    }
  }
  bad("anonymise_db: closed connection", bi_closed,
      function(con) anonymise_db(con, "bi", vars = "x", strata = "g", output = "o"),
      "`con` is not a valid connection")
  bad("anonymise_db: no such table", bi_con, bi_db("nope", vars = "x", strata = "g", output = "o"),
      "`table` \"nope\" cannot be read")
  bad("anonymise_db: two table names", bi_con, bi_db(c("bi", "taken"), vars = "x", strata = "g", output = "o"),
      "`table` must be one table name")
  bad("anonymise_db: output missing", bi_con, bi_db("bi", vars = "x", strata = "g"), "`output` must be given")
  bad("anonymise_db: output is the input", bi_con, bi_db("bi", vars = "x", strata = "g", output = "bi"),
      "`output` must differ from `table`")
  bad("anonymise_db: output is the input in another case", bi_con,
      bi_db("bi", vars = "x", strata = "g", output = "BI", overwrite = TRUE),
      "`output` must differ from `table` \\(\"bi\"\\): SQLite compares table names regardless of case")
  bad("anonymise_db: output is a view", bi_con, bi_db("bi", vars = "x", strata = "g", output = "bi_view", overwrite = TRUE),
      "`output` \"bi_view\" is a view in the database, not a table")
  bad("anonymise_db: output exists", bi_con, bi_db("bi", vars = "x", strata = "g", output = "taken"),
      "`output` table \"taken\" exists.*overwrite = TRUE")
  bad("anonymise_db: vars missing", bi_con, bi_db("bi", strata = "g", output = "o"), "`vars` must be given")
  bad("anonymise_db: unknown column", bi_con, bi_db("bi", vars = c("x", "zz"), strata = "g", output = "o"),
      "`vars` names columns that are not in the data: `zz`")
  bad("anonymise_db: text column in vars", bi_con, bi_db("bi", vars = c("x", "s"), strata = "g", output = "o"),
      "`vars` must be numeric columns; `s`")
  bad("anonymise_db: k = 1", bi_con, bi_db("bi", vars = "x", strata = "g", k = 1, output = "o"),
      "`k` must be a single whole number >= 2")
  bad("anonymise_db: chunk = 0", bi_con, bi_db("bi", vars = "x", strata = "g", output = "o", chunk = 0),
      "`chunk` must be a single whole number >= 1")
  bad("anonymise_db: method not per stratum", bi_con,
      bi_db("bi", vars = "x", strata = "g", output = "o", method = "stir"),
      "`method = \"stir\"` cannot run stratum by stratum")
  bad("anonymise_db: stratum, a stratum without k", bi_con,
      bi_db("bi", vars = "x", strata = "g", output = "o", method = "stratum", k = bi_kt[1, ]),
      "anonymise_db\\(\\): `k` has no row for 1 stratum of `data`")
  bad("anonymise_db: stratum, k above its stratum", bi_con,
      bi_db("bi", vars = "x", strata = "g", output = "o", method = "stratum", k = within(bi_kt, k[1] <- 20L)),
      "1 stratum has fewer records than its `k` in the table `k`")
  bad("anonymise_db: stratum, m = 2", bi_con,
      bi_db("bi", vars = "x", strata = "g", output = "o", method = "stratum", k = bi_kt, m = 2),
      "`m` must be 0 \\(or NULL\\) for `method = \"stratum\"`")
  bad("anonymise_db: a table k for another method", bi_con,
      bi_db("bi", vars = "x", strata = "g", output = "o", k = bi_kt), "`k` must be a single whole number >= 2")
  bad("anonymise_db: read", bi_con, bi_db("bi", vars = "x", strata = "g", output = "o", read = "all"),
      "`read` must be one of \"order\", \"index\"")
  bad("anonymise_db: strata smaller than k", bi_con, bi_db("bi", vars = "x", strata = "s", output = "o", read = "index"),
      "fewer than k = 3|smaller than k = 3")
  bad("anonymise_db: na = median_stratum", bi_con,
      bi_db("bi", vars = "x", strata = "g", output = "o", na = "median_stratum"), "`na` must be one of")
  # verify_db() (R/verify_db.R): reads only, rolls back
  bi_vd <- function(...) {
    function(con) {
      before <- bi_db_state(con)
      on.exit(if (!identical(bi_db_state(con), before)) stop("the database changed"))
      verify_db(con, "bi", ...)
    }
  }
  bad("verify_db: no such release", bi_con, bi_vd("nope", by = "x", vars = "x", strata = "g"),
      "verify_db\\(\\): `release` \"nope\" cannot be read")
  bad("verify_db: by missing", bi_con, bi_vd("taken", vars = "x", strata = "g"), "`by` must be given")
  bad("verify_db: attack not within strata", bi_con,
      bi_vd("bi_view", by = "x", vars = "x", strata = "g", attacks = "recipe"),
      "`attacks` must name attacks that run within strata")
  bad("verify_db: top_m above 1", bi_con, bi_vd("bi_view", by = "x", vars = "x", strata = "g", top_m = 1.5),
      "`top_m` must be a single finite number >= 0 and <= 1")
}

# ---- the runner -----------------------------------------------------------------------
test_that("the bad-input suite covers every exported function with enough cases", {
  expect_gte(length(bi_cases), 40L)
  called <- unique(unlist(lapply(bi_cases, function(cs) all.names(body(cs$call)))))
  exported <- getNamespaceExports("detanon")
  expect_identical(setdiff(exported, called), character())
  expect_false(anyDuplicated(vapply(bi_cases, `[[`, "", "label")) > 0)
})

for (cs in bi_cases) {
  local({
    cs <- cs
    test_that(paste("bad input:", cs$label), {
      before <- bi_copy(cs$input)
      warned <- character()
      res <- withCallingHandlers(
        tryCatch(cs$call(cs$input), error = function(e) e),
        warning = function(w) {
          warned <<- c(warned, conditionMessage(w))
          invokeRestart("muffleWarning")
        },
        message = function(m) invokeRestart("muffleMessage")
      )
      if (is.na(cs$error)) {
        expect_false(inherits(res, "error"),
                     label = paste0("no error (got: ", if (inherits(res, "error")) conditionMessage(res) else "", ")"))
        if (!inherits(res, "error") && !is.null(cs$check)) cs$check(res)
      } else {
        expect_s3_class(res, "error")
        if (inherits(res, "error")) {
          expect_match(conditionMessage(res), cs$error)
          # the package's own errors are raised without a call (no "Error in f(x)" noise),
          # are classed and name the exported function that was called (none when the case
          # calls internal functions only)
          expect_null(conditionCall(res))
          expect_s3_class(res, "detanon_error")
          if (any(all.names(body(cs$call)) %in% getNamespaceExports("detanon"))) {
            expect_match(conditionMessage(res), "^[a-z0-9_.]+\\(\\): ")
          } else {
            expect_null(res$fn)
          }
        }
      }
      if (!is.null(cs$warning)) {
        expect_true(any(grepl(cs$warning, warned)), label = "the documented warning")
        warned <- warned[!grepl(cs$warning, warned)]
      }
      expect_identical(warned, character())
      expect_identical(cs$input, before)
    })
  })
}

if (exists("bi_con")) DBI::dbDisconnect(bi_con)
