#' The least damaging release within risk limits, searched on some attacks and verified on all
#'
#' A custodian's question is rarely "what does k = 3 do" but "what is the least damaging
#' release whose risk is below my limits". `tune_release()` searches a space of maskings
#' of `data`, measures every candidate with the attacks of the risk battery named in
#' `attacks` (and the older measures whose limits are set), and then verifies the candidate of least
#' loss on the whole battery ([risk_battery()], attacks it did not search with included).
#' It returns the candidate of least loss that meets the limits on both, with a report of
#' what it tried, the risk-utility frontier it found, the verification battery and why it
#' stopped.
#'
#' @section Search and verification:
#' A search that minimises exactly what it measures finds releases that beat that measure
#' and not others (Goodhart's law): a release tuned on nearest-neighbour linkage alone can
#' be re-identified by one-to-one assignment or by an intruder who knows the algorithm.
#' The search therefore measures each candidate with the attacks named in `attacks`
#' (cheap ones by default: linkage in both directions), and the candidates that meet the
#' limits there are verified, in order of loss, on the attacks named in `verify` (by
#' default every attack of [battery_attacks()] that applies, with the intruder `intruder`).
#' The first that meets the limits on the verification battery too is returned. A candidate
#' that passes the search but fails verification is reported as such (`verified = FALSE`
#' and the attack that broke it) and the next is verified. When no candidate passes
#' both, nothing is returned (`release = NULL`) and `stop` says which attack stopped the
#' closest candidates.
#'
#' The limits are stated on the battery: `tail`, the largest rate of the attacks on the
#' tails ([attack_tails()], verified only, and not counted in `worst` or `top_m`); `worst`, the largest one-record success rate of
#' any attack (the `rate` of [risk_battery()]: the expected share of records whose claim
#' is right), and `top_m`, the largest top-`m` rate (the own record among the intruder's
#' `m` best; linkage released -> original and original -> released, and the
#' algorithm-aware intruder of [attack_recipe()]). The rates are not corrected by the
#' control (the advantage); they are the share of records at risk.
#'
#' @section The search:
#' Six families of candidates (`methods`), the methods of [masking_methods()] in their
#' order, with the settings they list, all in the release form `format`, every one
#' with groups or centroids of at least `k` records:
#' 1. `"anonymise"`: one `k` for every record, [anonymise()] with `k` = 3, 5, 10, 20 (those
#'    not below `k`; `k` itself when it is above 3). When `keps_epsilon` is given,
#'    [anonymise_keps()] at those budgets too (with `k` = 3, or `k` if larger), measured on
#'    the rows aligned by the key of [anonymise_keps_with_key()]; being shuffled, they are
#'    measured but never returned.
#' 2. `"stratum"`: one `k` per stratum, from the ladder 3, 5, 10, 20, 40, 80, 160 (from
#'    `k`, capped by each stratum's size). The records each stratum has re-identified by
#'    each search attack (one-record and top-`m` claims, and the older measures whose limits
#'    are set) at every `k` of the ladder are measured on whole releases; then, while the
#'    summed counts predict a missed limit, the stratum with the most records behind the
#'    limit missed furthest moves one step up. The release ([anonymise_adaptive()] with a
#'    table `k` and `m = 0`) is measured; where it still misses, its own counts replace the
#'    prediction (at most `max_tries` candidates). [anonymise_db()] and
#'    [anonymise_partitioned()] make the same release with `method = "stratum"` and the
#'    settings of its [release_info()] (`k`, `k_max`, `m`, `rate`).
#' 3. `"adaptive"`: `k` per record, [anonymise_adaptive()] from `k` points, as one path of
#'    stages from light to strong masking, each stage starting from the neighbourhoods of the one before: the
#'    top-`m` rates 0.5, 0.3, 0.2 and the `top_m` limit, with the nearest-linked records
#'    always grown and, when a `risk1` or `risk2` limit is set, the records flagged by the
#'    risk1 interval (`w1 = 0.01`). While the candidate at the limit misses, another stage
#'    follows, at a rate lowered by a tenth, and with the cap `k_max` doubled when records
#'    at their cap remain (at most `max_tries` stages, and no more once a stage took off less
#'    than a quarter of the excess over the limits). Once the limits are met, two more
#'    stages at the rates 0.1 and 0.05 extend the frontier. Beside the path, the
#'    masking that grows only the nearest-linked records (k from 3, or `k`, to 33, `m = 1`).
#' 4. `"mdav"`: shared centroids, as sdcMicro's MDAV microaggregation: within each stratum,
#'    groups of `k` records (the last group of each stratum up to 2`k` - 1) formed around
#'    the records farthest from the centre, on the z-scale of the originals; every record
#'    of a group releases the group's mean ([anonymise_mdav()]). `k` = 3, 5, 10, 15, 20, 30
#'    (from `k`; capped by the stratum's size). The grouping is deterministic and
#'    recomputable by an intruder who holds all originals ([attack_recipe()] does), but
#'    recomputing it reveals only the group.
#'    With `noise = TRUE` every group mean gets the keyed noise of [anonymise_keyed()]
#'    (see its section Releasing the same people again), drawn from `key` when given, else
#'    from R's random stream under `seed`.
#' 5. `"keyed"`: shared centroids with the custodian's secret `key` ([anonymise_keyed()]):
#'    groups of mean size 5, 10, 14, 20 and 30 (of at least `k`, 2 and `1 / tail` records) formed by a
#'    keyed k-means within strata, every record releasing its group's mean. An intruder who
#'    knows the algorithm and its settings but not the key cannot recompute the groups.
#'    Left out when `key` is `NULL`. On more than `pilot` records (about 140 s of one
#'    core per size at 1,000,000 records), every size is first made and measured on a pilot
#'    sample: in every stratum a share `pilot / n` of its records (at least 30, or `k` if
#'    larger, or all of them), taken at evenly spaced positions in the order of their values (the same records
#'    for any row order; nothing random). Only the size the pilot ranks best (the least loss
#'    among the sizes that meet the search limits on the pilot, else the least excess over
#'    them) is then made on all records and measured; the others are not made, and
#'    `left_out`, `stop` and `print()` name them with the pilot's measures and their cost,
#'    estimated from the whole run's time and the pilot's times.
#' 6. `"stir"`: the four candidates of least loss from the centroid families above, each with its
#'    masked values shuffled inside Mondrian classes of at least 3 nearby released records
#'    within the strata ([stir()] after [equivalence_classes()] on the release). Asked
#'    for alone, it stirs the candidates of `"anonymise"`, which are then reported too.
#'
#' Every candidate is measured on its release: the `attacks` by [risk_battery()] (without
#' the control, whose rates the limits do not use), and the objective; [risk_linkage()]
#' (`m = 1` and `m`, overall and per stratum) and [risk_rmd()] (`deterministic = TRUE`,
#' risk1 and risk2) are reported beside them, computed by the kernels of those functions
#' from parts built once. Without a `risk1` or `risk2` limit those two only report, and on
#' more than 100,000 records their robust covariance is estimated on 100,000 of them, taken
#' at evenly spaced positions in the order of their values (the same records for any row
#' order; nothing random), as `rmd_records` and `print()` say; [risk_rmd()] measures them
#' on all records. With a limit, the search uses all records. The strata are released
#' unchanged, so the `k_strata` limit (k-anonymity of the released strata) is checked
#' once, on the data. A measure with a
#' limit that cannot be computed on a candidate (risk1 when a masked column became
#' constant) counts as a missed limit. The search stops when each family has met the
#' limits or used its tries; the reasons are reported.
#'
#' Same inputs, same release: the maskings are deterministic except stirring, the risk
#' measures use no random numbers (`deterministic = TRUE`), and stirring, the (k, epsilon)
#' candidates and the attacks' random parts draw from R's random number generator under `seed`.
#' The chosen release carries the metadata of the verb that made it (its settings and
#' aggregate counts), so a user can make it again.
#'
#' With `nthreads` of 2 or more, on Linux and with a `seed`, the search shares its work with
#' one forked process: the pieces that draw no random numbers (each candidate's measurement,
#' the k-per-stratum and adaptive families as a whole, each attack of the verification) are
#' queued, and whichever process is free takes the next one; the other candidates are made
#' in the search's process, in order (their random draws those of the serial search). Both
#' processes run on one thread each while both are busy. The report and the release are
#' those of `nthreads = 1`, which runs everything in one process, one candidate after the
#' other (as the search does on other systems and with `seed = NULL`). The forked process
#' shares the data with the search and adds the working memory of its own piece (see the
#' section Memory).
#'
#' @section Memory:
#' What the search holds grows with the number of records; measured at 1,000,000 records
#' of 3 masked variables in 4 strata (`bench/results/tune-scale.txt`):
#' * throughout, held once: the data, the originals' z-scores, their kd-trees and robust
#'   covariance, and the intruder's view of them (about 250 MiB with the data);
#' * the releases of the candidates that meet the search's limits, and of the four of least
#'   loss of each family that stirring may read (8 bytes per record and masked variable
#'   each, 23 MiB); the other candidates keep their row of the report only;
#' * while a candidate is measured, that measurement's working memory (its linkage original
#'   -> released about 0.6 GiB);
#' * in the verification: the release's view and its control (about 80 MiB), each attack's
#'   result (15-23 MiB) and, while an attack runs, its working memory, which grows with the
#'   records: the linkage 0.6 GiB in either direction, singling out 0.3 GiB, Fellegi-Sunter
#'   0.8 GiB, the algorithm-aware intruder 0.7 GiB, the extreme values 0.2 GiB; the attacks
#'   that reuse the trees of the released records and the linkage's ranks (the tails'
#'   linkage, the algorithm-aware intruder, inference) run in one piece with the linkage
#'   original -> released, which holds them until its last attack ends.
#' On tied data (Titanic resampled to 1,000,000 records, 38% duplicate rows; noisy MDAV
#' k = 30 in 12 strata), each attack alone on one thread above its process's memory: the
#' linkage 0.5 GiB in either direction (the tails' linkage too), singling out 0.3 GiB,
#' Fellegi-Sunter 0.8 GiB, the algorithm-aware intruder 0.5 GiB, the extreme values
#' 0.1 GiB, the one-to-one assignment 0.48 GiB; the view and its control 0.2 GiB.
#' With two processes (`nthreads` of 2 or more) both work at once, so their working memory
#' adds up: the forked process's pages not written since the fork are shared, and it adds
#' its own piece's working memory (in the verification, the one-to-one assignment's: the
#' forked process reached 1.4 GiB). The whole default search (`nthreads = 2`, no key)
#' peaked at 3.3 GiB with the forked process (the search's process alone 2.2 GiB).
#' Before each fork the search collects R's garbage and hands the memory its allocator keeps
#' free back to the system (glibc's `malloc_trim()`), so that the forked process does not
#' share freed pages that either process would copy on reuse: on the tied data at 300,000
#' records this halves what the search's process alone holds when it forks (about 450 to
#' 210 MiB) and lowers the peak with the forked processes in the candidates by 2%
#' (901 to 879 MiB); at 1,000,000 records the whole default search (two threads, no key)
#' peaked at 2.9 GiB with its forked processes, where it reached 4.2 GiB (each forked piece
#' at most 1.4 GiB, where one reached 1.8 GiB). Each forked process still
#' copies the search's pages that R's collector marks in it (its private pages: three
#' quarters of its PSS).
#' For an adaptive candidate (k grown per record) the algorithm-aware intruder who knows the
#' settings tries every k from the smallest to `k_max`, a block of k at a time (at most
#' 256 MiB of centroids), keeping per record only its best candidate so far: its memory does
#' not grow with the number of k (trying 158 k on Titanic resampled to 100,000 records, that
#' attack with its control peaked at 0.5 GB, 1.7 GB when it held every k's candidates; at
#' 1,000,000 records 1.2 GB, where holding every k had peaked at 17 GB; `bench/results/battery.txt`). A k-per-stratum
#' candidate (a k table, nothing grown) is replayed at its own k: 1.2 GB there.
#'
#' @section The published keys:
#' Before any masking, when the cells of the strata and the keys (the published columns the
#' default intruder holds) leave records in cells of fewer than `max(k_strata, 1 / worst, m
#' / top_m)` records (below that, even one released value for the whole cell lets the
#' intruder guess among too few records; a stratum smaller than that caps it), the
#' categorical family changes the keys, as sdcMicro's users do before the continuous
#' masking: it walks up the rungs of generalisation of each key (a numeric key of 10 or
#' more values, such as an age, in bands of width 2, 5, 10, 20, 50, ... ([generalise_bands()]);
#' any other key with its categories of fewer than k, 2k, 4k, ... records merged
#' ([generalise_rare()]); the last rung a single category), raising at each step the key
#' that takes the most records out of small cells per unit of loss, and at each node of
#' that path tries local suppression: [suppress_local()] within the strata (k-anonymity with
#' a missing value matching any value, as sdcMicro counts), then, for the records still in
#' small cells counted exactly (a suppressed value a value of its own, since the masking
#' forms its groups within the cells and the intruder searches the cell the released values
#' name), the suppression of the key that moves each into the largest cell; or that second
#' part alone. It keeps the candidate of least loss (Iyengar's loss metric: a value
#' recoded into a category merging `g` of the key's `C` values loses `(g - 1) / (C - 1)`, a
#' suppressed one 1, averaged over the keys' cells) that leaves no record in a small cell.
#' With `"pram"`, the keys are then post-randomised within the strata, and the cells PRAM
#' left small completed by suppression. With `weights` and `risk_threshold`, the records
#' whose individual risk (the negative-binomial risk of [risk_individual()] on the strata
#' and the keys, a suppressed value matching any value) is still above `risk_threshold`
#' then have keys suppressed locally to it ([suppress_local()] with `threshold` and
#' `weights`, within the strata), and the cells this leaves small are completed by
#' suppression; the verification also checks that no record of the release is above
#' `risk_threshold`. (Cells of `c` records already bound the risk by `1 / c`: the
#' threshold suppresses cells only below that.) The result's `categorical` says what changed, and
#' the continuous masking forms its groups within the changed cells. The verification
#' battery counts a suppressed key as matching any value (singling out) and bounds the
#' keys' global risk (the expected share of records re-identified by the keys alone,
#' [risk_individual()]) by `worst`.
#'
#' @section What the limits cover and what they do not:
#' The limits bound the success of the attacks of the verification battery, for the
#' intruder `intruder` (by default [intruder_published()]: one who holds the original values
#' of `vars` and `strata` of everyone, every other published column that is not
#' `sensitive` exactly, and knows the algorithm and its settings), on the returned release: linkage
#' by distance in both directions, singling out, one-to-one assignment, probabilistic
#' record linkage, the algorithm-aware intruder, the tails (`tail`) and (with `sensitive`)
#' attribute inference. They do not cover attacks not in the battery, other background
#' knowledge, attribute disclosure beyond the inference attack, rare categorical
#' combinations of columns that are not published (the keys are changed as above),
#' membership disclosure, or linking with other
#' releases: run [risk_battery()] with `previous` on the release and an earlier release of
#' the same people for composition and differencing (against which the noise of the
#' shared-centroid candidates, `noise = TRUE`, is the defence), and publish the rows in a
#' random order. A release tuned
#' to the search attacks can still fail others (that is why it is verified), and one that
#' meets every limit of the battery may fail an attack the battery does not hold: meeting
#' the limits is not a proof of safety, and the report never says so.
#'
#' @inheritParams anonymise_adaptive
#' @param k The smallest number of points in a centroid or group of any candidate, a whole number
#'   of at least 2 (as in [anonymise()]): the adaptive path starts from it, the fixed,
#'   per-stratum and MDAV `k` are not below it.
#' @param worst Limit of the worst one-record attack: the largest success rate (`rate` of
#'   [risk_battery()]) over the attacks, in (0, 1]. Default 0.1.
#' @param top_m Limit of the top-`m` rates (`rate_m`) of the attacks that report one
#'   (linkage in both directions, the algorithm-aware intruder), in (0, 1]. Default 0.3.
#'   (Before this release: the limit of the top-`m` linkage rate released -> original only.)
#' @param m The list length of the top-m claims, a whole number >= 1.
#' @param attacks The attacks of the search: names from [battery_attacks()]. Default the
#'   linkage in both directions.
#' @param verify The attacks the chosen release is verified on: names from
#'   [battery_attacks()], or `NULL` (the default) for every attack of the battery that
#'   applies (`"inference"` only with `sensitive`).
#' @param intruder The intruder of the attacks, made by [intruder_published()] or
#'   [intruder()]; default `intruder_published(vars, strata, sensitive = sensitive)`: all
#'   originals of `vars` and `strata` known, every other column of `data` (each one is
#'   published) held exactly unless it is `sensitive`, the algorithm and its settings known.
#'   The search then forms every candidate's groups within the strata *and* those published
#'   columns (they are added to the strata of every masking), so that a group shares them.
#'   When they leave records in cells of fewer than `k_strata` records (or make the `top_m`
#'   limit unreachable), no candidate can meet the limits: with `small_strata = "fail"`
#'   nothing is returned, and `stop` and `unique_on` name the columns that make records
#'   unique, in the order an intruder adding them one at a time gains most, with the share
#'   of records unique on them. Pass [intruder()] for a narrower intruder (the default
#'   before this release), who holds only `vars` and `strata`.
#' @param sensitive Column whose value the inference attack guesses, or `NULL` (that attack
#'   left out).
#' @param weights The column of sampling weights (a name; each weight >= 1), or `NULL`.
#'   It is published as given: never masked, changed by the categorical family, or a key of
#'   the intruder, and the battery's categorical risk is the negative-binomial individual
#'   risk of [risk_individual()] with these weights (see [risk_battery()], whose help says
#'   when a weight column can itself identify). With an `sdcMicroObj`, its weight variable.
#' @param k_strata The smallest stratum size allowed in the release (k-anonymity of the
#'   released `strata`), a whole number >= `k`. Default: the larger of 3 and `k`.
#' @param linkage Limit of the nearest-neighbour linkage rate released -> original
#'   ([risk_linkage()], `m = 1`), in (0, 1]; default 1, no limit (before this release 0.01).
#' @param linkage_stratum Limit of that rate in every stratum, in (0, 1] (1: no limit).
#' @param top_m_stratum Limit of the top-`m` linkage rate released -> original in every
#'   stratum, in (0, 1] (1: no limit).
#' @param tail Limit of the attacks on the tails ([attack_tails()]: the linkage of the most
#'   outlying records and the share of extreme values recovered within 5%), verified on the
#'   chosen release like `worst`, in (0, 1] (1: no limit). Default 0.2. The keyed candidates
#'   form groups of at least `1 / tail` records.
#' @param risk1,risk2 Limits of [risk_rmd()]'s risk1 (in (0, 1]) and risk2 (from 0 to 1: 0
#'   asks for no risk2 record); default 1, no limit (before this release 0.005 and 0).
#' @param objective The loss to minimise: `"delta"` (the largest [utility_delta()] over
#'   `vars`), `"U"` ([utility_pmse()]'s U) or `"model"` (the largest standardised
#'   coefficient difference of [utility_model()] for `formula`).
#' @param formula,family The model of `objective = "model"`.
#' @param methods The families of candidates to search (see the section The search):
#'   some of the methods of [masking_methods()] that a search can be asked for
#'   (`"anonymise"`, `"stratum"`, `"adaptive"`, `"mdav"`, `"keyed"` and `"stir"`), or `NULL`
#'   (the default) for all of them.
#' @param format The release form of every candidate, as in [anonymise()]: `"natural"`
#'   (the few values beyond k-record bounds of the range moved inside, whole-number
#'   variables of SD 500 or more rounded; see [anonymise()]) or `"none"` (the values as
#'   computed).
#' @param keps_epsilon `NULL`, or budgets of [anonymise_keps()] to try as single methods.
#' @param max_tries Candidates per family beyond its first that the search may make to
#'   meet a missed limit, a whole number >= 1.
#' @param key The custodian's secret key of the `"keyed"` candidates ([anonymise_keyed()]: a
#'   string of at least 16 characters or a raw vector of at least 16 bytes), or `NULL` (no
#'   keyed candidates). It is passed to [anonymise_keyed()] only: never printed, and not
#'   stored in the result or the releases' metadata.
#' @param small_strata What to do with records in cells (combinations of the strata and the
#'   published columns the default intruder holds) of fewer than `k_strata` records once
#'   the categorical family (`categorical`) has changed the keys:
#'   `"fail"` (the default: no release, the columns named) or `"suppress"` (leave them out
#'   of the release, with a classed message; the release then has fewer rows than `data`,
#'   and `n_suppressed` counts them).
#' @param categorical The categorical family: what the search may do to the published
#'   columns the default intruder holds (the keys) when cells of the strata and the keys hold
#'   fewer records than the limits need (see the section The published keys): some of
#'   `"generalise"` (global recoding), `"suppress"` (local suppression of cells) and `"pram"`
#'   (post-randomisation of the keys within the strata, [anonymise_pram()], from `seed`),
#'   or `"none"` (the keys released unchanged: `small_strata` decides). Default
#'   `c("generalise", "suppress")`.
#' @param risk_threshold `NULL` (the default: the keys are changed for the cell sizes
#'   only), or the largest individual risk of a record on the strata and the published
#'   keys, a number in (0, 1]: with `weights` and `"suppress"` in `categorical`, the keys of
#'   the records above it are suppressed locally (see the section The published keys), and
#'   a release with a record above it fails the verification.
#' @param noise If `TRUE` (the default), the shared-centroid candidates (`"mdav"`,
#'   `"keyed"`) release noisy group means, so that a second release of the same people
#'   with one person more or fewer does not give that person's values away (see
#'   [anonymise_keyed()]); `FALSE`: exact group means.
#' @param pilot The number of records above which the keyed family is piloted (see the
#'   section The search, item 5): a whole number >= 100, or `Inf` to make every size on all
#'   records. Default 100,000: searches of up to 100,000 records are not piloted.
#' @param seed Seed for R's random number generator (stirring, the (k, epsilon) candidates,
#'   the attacks, and the noise of the MDAV candidates when `key` is `NULL`: keep it as
#'   secret as a key then); the caller's random stream is left as it was.
#' @return An object of class `detanon_tuned`: a list with
#'   * `release`: the chosen release, a masked copy of `data`, or `NULL` when no candidate
#'     met every limit on the search and the verification;
#'   * `chosen`: its row of `tried`;
#'   * `tried`: a data frame, one row per candidate in the order tried (the row number
#'     being the candidate number that stirred candidates refer to): `method`, `settings`,
#'     the search measures `worst` (largest rate over `attacks`), `worst_attack`, `top_m`
#'     (largest top-`m` rate over `attacks`), the older measures `linkage`,
#'     `linkage_stratum`, `top_m_stratum` (released -> original), `risk1`, `risk2`, `reid`
#'     (the mean expected re-identification probability of nearest linkage), `loss`, `meets`
#'     (every search limit met), `fails` (the limits it missed), `verified` (`TRUE` or
#'     `FALSE` for the candidates verified, `NA` for the others), `verify_worst`,
#'     `verify_worst_attack`, `verify_top_m`, `verify_tail` (the largest rate of the attacks on
#'     the tails), `verify_fails` and `seconds` (the time to make
#'     and measure it);
#'   * `frontier`: the candidates not beaten on both the search's `worst` and the loss;
#'   * `battery`: the [risk_battery()] of the chosen release (when none passed, of the
#'     verified candidate of least excess; `NULL` when none was verified);
#'   * `attacks`, `verify`: the attacks of the search and of the verification;
#'   * `limits`, `objective`, `stop` (why the search stopped) and `seconds` (the time of the
#'     whole search);
#'   * `categorical`: `NULL` when the keys were left unchanged, else the changes of the
#'     categorical family: `changes` (per key `column`, `categories_before`,
#'     `categories_after`, `n_recoded` (values recoded into a merged category), `n_suppressed`
#'     (cells set to `NA`), `n_pram` (records whose value PRAM changed)), `settings`, `k` (the
#'     cell size aimed at), `loss`, `n_small` (records left in small cells),
#'     `risk_threshold`, `n_threshold` (the cells suppressed for it) and, with `weights`,
#'     `risk`: the individual risk of the changed keys (`expected`, `global_risk`, `n_above`
#'     (records above `risk_threshold`, or 0.1), `max_risk`);
#'   * `intruder`, `keys` (the published columns it holds, within which the groups were
#'     formed), `n_suppressed` (records left out by `small_strata = "suppress"`; `kept`: the
#'     rows of `data` the release holds, a logical vector, for the custodian), `rmd_records`
#'     (the number of records whose robust covariance gave risk1 and risk2, when a sample;
#'     else `NULL`), `left_out` (`NULL`, or the settings not made on all records because a
#'     pilot ranked another best: `method`, `settings`, `why`, the pilot's `pilot_worst`,
#'     `pilot_top_m`, `pilot_loss` and `pilot_meets`, and `seconds`, the estimated time of
#'     making and measuring each on all records) and, when the search could not start,
#'     `unique_on` (`column`, `unique`: the published columns that make records unique, and
#'     the share of records unique once each is added).
#'
#'   The verification battery gives every rate with its 95% Wilson interval; `print()`
#'   says when the interval of the worst attack (or top-`m` rate) straddles its limit.
#'
#'   `print()` and `plot()` methods show the report and the frontier (see
#'   [plot.detanon_tuned()]).
#' @family reports
#' @seealso [risk_battery()], [anonymise_adaptive()], [risk_linkage()], [assess()].
#' @examples
#' \donttest{
#' d <- titanic_paper()[-1] # without the identifier PassengerId
#' tuned <- tune_release(d, vars = c("Age", "Fare"),
#'                       strata = c("Pclass", "Sex", "Family"), k = 2,
#'                       worst = 0.1, top_m = 0.3, m = 3)
#' # Survived, published unchanged, is a key of the default intruder: the search
#' # suppressed it where the cells of it and the strata were too small
#' tuned$categorical$changes
#' # left unchanged, no release: three passengers are alone or in pairs on it
#' none <- tune_release(d, vars = c("Age", "Fare"),
#'                      strata = c("Pclass", "Sex", "Family"), k = 2,
#'                      categorical = "none")
#' none$stop
#' tuned
#' plot(tuned)
#' }
#' @section sdcMicro: `data` may be an `sdcMicroObj`; `release` is then one too ([sdc_extract()]).
#'   Its key variables are left to sdcMicro (`categorical = "none"`).
#' @export
tune_release <- function(data, vars = NULL, strata = NULL, k = 2, worst = 0.1, top_m = 0.3, m = 3,
                         attacks = c("linkage_released", "linkage_original"), verify = NULL,
                         intruder = NULL, sensitive = NULL, weights = NULL, k_strata = NULL,
                         linkage = 1, linkage_stratum = 1, top_m_stratum = 1, risk1 = 1, risk2 = 1,
                         tail = 0.2, objective = c("delta", "U", "model"), formula = NULL,
                         family = stats::gaussian(),
                         methods = NULL,
                         format = c("natural", "none"), keps_epsilon = NULL, max_tries = 4, key = NULL,
                         small_strata = c("fail", "suppress"), categorical = c("generalise", "suppress"),
                         risk_threshold = NULL, noise = TRUE, pilot = 100000,
                         nthreads = getOption("detanon.nthreads", 1L), seed = 1) {
  if (is_sdc(data)) {
    if (match_choice(small_strata, "small_strata") == "suppress") {
      stop_arg("`small_strata = \"suppress\"` cannot be used with an sdcMicroObj, whose release keeps ",
               "every record; suppress the records in sdcMicro, or pass the data frame.")
    }
    # the object's key variables are sdcMicro's to recode or suppress: the search leaves them
    if (!missing(categorical) && !identical(check_categorical(categorical), "none")) {
      stop_arg("`categorical` must be \"none\" with an sdcMicroObj, whose key variables the release keeps; ",
               "recode or suppress them in sdcMicro (sdcMicro::globalRecode(), sdcMicro::localSuppression()), ",
               "or pass the data frame.")
    }
    cl <- match.call()
    cl$categorical <- "none"
    return(sdc_verb(tune_release, data, cl, parent.frame())) # R/sdcmicro.R
  }
  started <- proc.time()[[3L]]
  objective <- match_choice(objective, "objective")
  format <- match_choice(format, "format")
  small_strata <- match_choice(small_strata, "small_strata")
  noise <- check_flag(noise, "noise")
  pilot <- check_pilot(pilot)
  if (!is.null(seed)) seed <- check_whole(seed, "seed", min = -.Machine$integer.max)
  ctx <- tune_setup(data, vars, strata, k, k_strata, m, objective, formula, family, methods, format, keps_epsilon,
                    max_tries, nthreads,
                    limits = c(list(worst = check_limit(worst, "worst"), top_m = check_limit(top_m, "top_m"),
                                    linkage = check_limit(linkage, "linkage"),
                                    linkage_stratum = check_limit(linkage_stratum, "linkage_stratum"),
                                    top_m_stratum = check_limit(top_m_stratum, "top_m_stratum"),
                                    risk1 = check_limit(risk1, "risk1"),
                                    risk2 = check_limit(risk2, "risk2", zero = TRUE),
                                    tail = check_limit(tail, "tail")),
                               if (!is.null(risk_threshold)) {
                                 list(risk_threshold = check_limit(risk_threshold, "risk_threshold"))
                               }),
                    attacks = attacks, verify = verify, intruder = intruder, sensitive = sensitive, seed = seed,
                    secret = if (!is.null(key)) check_key(key), small_strata = small_strata,
                    categorical = check_categorical(categorical), weights = weights, pilot = pilot)
  if (!is.null(ctx$unique_on)) return(tune_none(ctx, started))
  ctx$noise <- noise
  # the families of the registry in order (method_registry()), each run when asked for or
  # read by one asked for; each returns its candidates (a report row and the release) and
  # why it stopped
  reg <- method_registry()
  # on two cores (tune_forks()) the search's pieces go to a pool (tune_pool()), and the
  # candidates are made here on one thread (the forked process runs the other)
  pool <- if (tune_forks(ctx)) tune_pool(ctx$nthreads)
  on.exit(tune_pool_close(pool), add = TRUE)
  sctx <- ctx
  if (!is.null(pool)) {
    sctx$pool <- pool
    sctx$ev <- tune_polled(ctx$ev, pool)
    sctx$nthreads <- 1L
  }
  found <- with_seed(seed, {
    runs <- list()
    pending <- list() # the families run as pieces of the pool, until their runs are read
    read <- function(names) {
      for (f in intersect(names(pending), names)) {
        runs[[f]] <<- tune_value(pool, pending[[f]])
        pending[[f]] <<- NULL
      }
    }
    stir <- if ("stir" %in% ctx$run) reg$stir$settings
    for (name in names(reg)) {
      entry <- reg[[name]]
      if (!name %in% ctx$run && !isFALSE(entry$choice)) next
      # (stirring reads the candidates of the families it stirs)
      read(c(entry$needs, entry$settings$stirred))
      # the releases kept: those the verification or the stirring may read (tune_needed())
      keep <- if (name %in% stir$stirred) stir$candidates else 0L
      if (!is.null(pool) && name %in% tune_piece_families()) {
        pending[[name]] <- tune_submit(pool, tune_family_piece(sctx, entry, runs, key, keep), 1L)
        runs[name] <- list(NULL)
      } else {
        runs[[name]] <- tune_needed(entry$tune(sctx, entry, runs, key), keep)
      }
    }
    read(names(pending))
    cands <- unlist(lapply(runs, `[[`, "cands"), recursive = FALSE, use.names = FALSE)
    list(cands = tune_needed(list(cands = cands))$cands,
         stop = unlist(lapply(runs, `[[`, "stop"), use.names = FALSE),
         left_out = do.call(rbind, lapply(runs, `[[`, "left_out")))
  })
  ctx$pool <- pool # (the verification's attacks are pieces too)
  out <- tune_result(ctx, found$cands, found$stop, seed, started)
  out$left_out <- found$left_out
  out$categorical <- ctx$categorical
  out$weights <- ctx$weights
  out
}

# ---- the search's parts -----------------------------------------------------------------

# Validate the arguments and build what every candidate shares: the originals' z-scores,
# their kd-trees (one rank index, queried by the adaptive kernel and by every
# measurement) and their robust covariance (risk1/risk2), and the evaluator.
tune_setup <- function(data, vars, strata, k, k_strata, m, objective, formula, family, methods, format,
                       keps_epsilon, max_tries, nthreads, limits, attacks, verify, intruder, sensitive, seed,
                       secret, small_strata = "fail", categorical = "none", weights = NULL, pilot = Inf) {
  force(secret) # the key checked before the search (by check_key(), which never shows it), not kept
  # the sampling weights are published as given: never a masked variable by default
  if (is.null(vars) && is.character(weights) && is.data.frame(data)) {
    vars <- setdiff(default_vars(data), c(weights, strata))
  }
  f <- check_masking_args(data, vars, strata, k, nthreads = nthreads)
  vars <- f$vars
  strata <- f$strata
  k <- f$k
  nthreads <- f$nthreads
  m <- check_whole(m, "m", min = 1)
  k_strata <- if (is.null(k_strata)) max(3L, k) else check_whole(k_strata, "k_strata", min = 2)
  if (k_strata < k) {
    stop_arg("`k_strata` (", k_strata, ") must be at least `k` (", k, "): a centroid of `k` points ",
             "needs a stratum of at least `k` records.")
  }
  if (objective == "model" && !inherits(formula, "formula")) {
    stop_arg("`objective = \"model\"` needs a model `formula`, such as `y ~ x1 + x2`.")
  }
  family <- check_family(family)
  all_methods <- search_methods()
  if (is.null(methods)) methods <- all_methods
  if (!is.character(methods) || !length(methods) || anyNA(methods) || !all(methods %in% all_methods)) {
    stop_arg("`methods` must be some of ", paste0("\"", all_methods, "\"", collapse = ", "),
             ", not ", show_value(methods), ".")
  }
  # stirring works on the candidates of the other families: alone, it stirs those of fixed k
  if (identical(unique(methods), "stir")) methods <- c("anonymise", "stir")
  # keyed candidates need the key: without it and without another family, nothing to search
  if (is.null(secret) && all(methods %in% c("keyed", "stir"))) {
    stop_arg("`methods = ", deparse1(unique(methods)), "` needs the custodian's `key` (the secret of ",
             "anonymise_keyed()); give `key`, or add other methods.")
  }
  if (!is.null(keps_epsilon) && (!is.numeric(keps_epsilon) || anyNA(keps_epsilon) ||
                                 any(keps_epsilon <= 0) || any(!is.finite(keps_epsilon)))) {
    stop_arg("`keps_epsilon` must be NULL or positive budgets, not ", show_value(keps_epsilon), ".")
  }
  max_tries <- check_whole(max_tries, "max_tries", min = 1)
  df <- as.data.frame(data, stringsAsFactors = FALSE)
  if (!is.null(sensitive) && (!is.character(sensitive) || length(sensitive) != 1L || is.na(sensitive) ||
                              !sensitive %in% names(df))) {
    stop_arg("`sensitive` must be NULL or the name of a column of `data`, not ", show_value(sensitive), ".")
  }
  if (!is.null(weights)) {
    check_weights(df, weights, strata)
    if (weights %in% c(vars, sensitive)) {
      stop_arg("`weights` (", weights, ") must not be one of `vars` or `sensitive`: sampling weights are ",
               "published as given.", kind = "column")
    }
    warn_unique_weights(df, weights)
  }
  if (!is.null(limits$risk_threshold) && (is.null(weights) || !"suppress" %in% categorical)) {
    stop_arg("`risk_threshold` (the individual risk of the published keys) needs the sampling `weights` and ",
             "a `categorical` family with \"suppress\".")
  }
  reg <- names(battery_attacks())
  # the attacks on two releases need a previous release, which a search does not have
  pair <- names(Filter(function(a) !is.null(a$needs_previous), battery_attacks()))
  usable <- setdiff(if (is.null(sensitive)) setdiff(reg, "inference") else reg, pair)
  check_names <- function(x, arg) {
    if (!is.character(x) || !length(x) || anyNA(x) || !all(x %in% reg)) {
      stop_arg("`", arg, "` must name attacks of the battery (battery_attacks()): ",
               paste0("\"", reg, "\"", collapse = ", "), "; not ", show_value(x), ".")
    }
    if (any(x %in% pair)) {
      stop_arg("`", arg, "` names ", quote_names(intersect(x, pair)), ", which compare two releases ",
               "of the same people: run them with risk_battery(previous = ) on the release returned.")
    }
    if (!all(x %in% usable)) {
      stop_arg("`", arg, "` names the attack \"inference\", which needs a `sensitive` column.")
    }
    unique(x)
  }
  attacks <- check_names(attacks, "attacks")
  verify <- if (is.null(verify)) usable else check_names(verify, "verify")
  if (is.null(intruder)) {
    intruder <- intruder_published(vars = vars, strata = strata, sensitive = sensitive)
  } else if (!inherits(intruder, "detanon_intruder")) {
    stop_arg("`intruder` must be NULL or made by intruder(), not ", class_label(intruder), ".")
  }
  n <- nrow(df)
  n_suppressed <- 0L
  kept <- rep(TRUE, n)
  # the intruder of intruder_published() holds every published column exactly: the search
  # forms its groups within them (as within the strata), or returns no release when they
  # leave records in cells too small for the limits
  keys <- if (is_published_intruder(intruder)) {
    published_keys(df, df, vars, strata, c(sensitive, intruder$sensitive, weights))
  } else character()
  if (length(keys)) {
    # a limit the strata alone break is the caller's to fix (an error); one that only the
    # cells of the published columns break ends the search without a release, or with
    # `small_strata = "suppress"` leaves their records out (below)
    check_tune_limits(limits, k_strata, m, tabulate(stratum_ids(df, strata)), n)
    # the categorical family (R/tune_categorical.R): the keys generalised, suppressed or
    # post-randomised until every cell can meet the limits
    cat_step <- tune_categorical(df, data, strata, keys, categorical_k(limits, k_strata, m), categorical, seed,
                                 threshold = limits$risk_threshold, weights = weights)
    if (!is.null(cat_step)) {
      df <- cat_step$df
      data <- cat_step$data
    }
    cells <- stratum_ids(df, c(strata, keys))
    why <- tryCatch({
      check_tune_limits(limits, k_strata, m, tabulate(cells), n)
      NULL
    }, detanon_error = function(e) conditionMessage(e))
    if (!is.null(why) && small_strata == "suppress") {
      # the records of cells too small for the limits left out of the release
      keep <- tabulate(cells)[cells] >= k_strata
      n_suppressed <- sum(!keep)
      kept <- keep
      if (any(keep)) {
        df <- df[keep, , drop = FALSE]
        data <- data[keep, , drop = FALSE]
        rownames(df) <- NULL
        if (identical(class(data), "data.frame")) rownames(data) <- NULL
        inform_detanon(plural(n_suppressed, "record"), " in cells of fewer than ", k_strata, " records on ",
                       "the strata and the published columns (", paste(keys, collapse = ", "), ") left ",
                       "out of the release.", kind = "suppress")
        n <- nrow(df)
        cells <- stratum_ids(df, c(strata, keys))
        why <- tryCatch({
          check_tune_limits(limits, k_strata, m, tabulate(cells), n)
          NULL
        }, detanon_error = function(e) conditionMessage(e))
      }
    }
    if (!is.null(why)) {
      return(list(df = df, vars = vars, strata = strata, keys = keys, k = k, k_strata = k_strata, m = m,
                  limits = limits, objective = objective, attacks = attacks, verify = verify,
                  intruder = intruder, sensitive = sensitive, why = why, categorical = cat_step,
                  unique_on = published_uniques(df, strata, keys)))
    }
    strata <- c(strata, keys)
  }
  if (n < length(vars) + 2L) {
    stop_arg("`data` needs more records than variables to measure risk1 and risk2: ",
             plural(n, "record"), " for ", plural(length(vars), "variable"), ".", kind = "data")
  }
  check_not_constant(numeric_matrix(df, vars), "data")
  # without a risk1 or risk2 limit the robust covariance only reports: above
  # tune_rmd_sample() records it is estimated on that many (see the section The search)
  no_rmd_limit <- limits$risk1 == 1 && limits$risk2 == 1
  p <- adaptive_setup(df, vars, strata, rmd = TRUE, nthreads = nthreads,
                      rmd_sample = if (no_rmd_limit) tune_rmd_sample())
  floor_m <- check_tune_limits(limits, k_strata, m, p$sizes, n)
  list(data = data, df = df, vars = vars, strata = strata, keys = keys, n_suppressed = n_suppressed,
       kept = kept, categorical = if (length(keys)) cat_step, k = k, k_strata = k_strata, m = m,
       limits = limits, objective = objective, formula = formula, family = family, methods = methods,
       format = format,
       # the families to run: those asked for and those whose candidates they read
       run = union(methods, unlist(lapply(method_registry()[methods], `[[`, "needs"), use.names = FALSE)),
       keps_epsilon = keps_epsilon, max_tries = max_tries, pilot = pilot, nthreads = nthreads, p = p,
       sizes = p$sizes, n = n, floor_m = floor_m, attacks = attacks, verify = verify, intruder = intruder,
       sensitive = sensitive, weights = weights, seed = seed,
       # the risk1 test of the adaptive kernel, when a risk1 or risk2 limit is set
       w1 = if (limits$risk1 < 1 || limits$risk2 < 1) rmd_defaults()$w1,
       ev = tune_evaluator(df, vars, strata, p, m, objective, formula, family, nthreads,
                           attacks, intruder, sensitive, seed, limits, weights))
}

# The published columns that make records unique, in the order a greedy search adds them
# to the strata (the column that makes the most records unique first, until the share
# unique on every published column is reached): a data frame of `column` and `unique`, the
# share of records alone in their cell on the strata and the columns up to it.
published_uniques <- function(df, strata, keys) {
  share <- function(cols) {
    id <- stratum_ids(df, cols)
    mean(tabulate(id)[id] == 1L)
  }
  full <- share(c(strata, keys))
  chosen <- character()
  got <- numeric()
  left <- keys
  now <- share(strata)
  while (length(left) && now < full) {
    sh <- vapply(left, function(v) share(c(strata, chosen, v)), numeric(1))
    j <- which.max(sh)
    if (sh[j] <= now) break
    chosen <- c(chosen, left[j])
    got <- c(got, sh[[j]])
    now <- sh[[j]]
    left <- left[-j]
  }
  data.frame(column = chosen, unique = got, stringsAsFactors = FALSE)
}

# The most records whose robust covariance (risk1, risk2) a search without a risk1 or risk2
# limit estimates: above, a sample of that many (rmd_sample_rows()).
tune_rmd_sample <- function() 100000L

# The result of a search that cannot start: the intruder's published columns leave records
# in cells too small for the limits. No release; the columns that make records unique named.
tune_none <- function(ctx, started) {
  u <- ctx$unique_on
  cells <- stratum_ids(ctx$df, c(ctx$strata, ctx$keys))
  size <- tabulate(cells)[cells]
  n_uniq <- sum(size == 1L)
  n_small <- sum(size < ctx$k_strata)
  n <- nrow(ctx$df)
  named <- if (nrow(u)) {
    paste0(" The columns that make records unique, as an intruder adds them: ",
           paste(sprintf("%s (%.1f%% of the records unique)", u$column, 100 * u$unique), collapse = ", "), ".")
  } else ""
  stop <- paste0(
    "No release: the default intruder holds every published column that is not masked or sensitive (",
    paste(ctx$keys, collapse = ", "), "); on them and the strata, ", plural(n_small, "record"),
    sprintf(" (%.1f%%)", 100 * n_small / n), " are in cells of fewer than ", ctx$k_strata, " records (unique: ",
    plural(n_uniq, "record"), sprintf(", %.1f%%)", 100 * n_uniq / n), ", so no masking of `vars` ",
    "within those cells can meet the limits",
    if (n_small) "." else paste0(" (", sub("\\.$", "", sub("^[^:]*\\(\\): ", "", ctx$why)), ")."), named,
    " Mask those columns (add them to `vars`), generalise or suppress them (or let the search do it: ",
    "`categorical`), leave them out of the release, declare ",
    "them `sensitive`, leave the records of the small cells out (`small_strata = \"suppress\"`), or pass ",
    "a narrower `intruder` (intruder()) if no intruder can hold them.")
  tried <- tune_row(list(worst = NA_real_, worst_attack = NA_character_, top_m = NA_real_, linkage = NA_real_,
                         linkage_stratum = NA_real_, top_m_released = NA_real_, top_m_stratum = NA_real_,
                         risk1 = NA_real_, risk2 = NA_real_, reid = NA_real_, loss = NA_real_),
                    ctx$limits, "none", "none")[0L, , drop = FALSE]
  tried$seconds <- numeric()
  structure(list(release = NULL, chosen = NULL, tried = tried, frontier = tried, battery = NULL,
                 attacks = ctx$attacks, verify = ctx$verify,
                 limits = c(ctx$limits, m = ctx$m, k = ctx$k, k_strata = ctx$k_strata),
                 objective = ctx$objective, stop = stop, unique_on = u, keys = ctx$keys, n_suppressed = 0L,
                 categorical = ctx$categorical,
                 intruder = ctx$intruder, seconds = proc.time()[[3L]] - started),
            class = "detanon_tuned")
}

# One candidate: its row of the report (measured by ctx$ev) and its release (NULL:
# measured, not returned). `since`: when its making began (its `seconds` cover the making
# and the measuring), or `seconds` itself.
tune_candidate <- function(ctx, e, method, settings, release, since, seconds = proc.time()[[3L]] - since) {
  row <- tune_row(e, ctx$limits, method, settings)
  row$seconds <- seconds
  list(row = row, release = release)
}

# Candidates made by make(x) for each x of `xs` (a release, or NULL: none), one after the
# other (so that their random draws come in the order of the serial search), each measured
# by `ev` as a piece of the search's pool (tune_submit(): at once when the search runs
# serially, else by whichever process is free, while the next is made). Returns per x NULL,
# or its `release`, its evaluation `e` and `seconds` (the time to make and measure it).
tune_made <- function(ctx, xs, make, ev = ctx$ev) {
  out <- lapply(xs, function(x) {
    since <- proc.time()[[3L]]
    rel <- make(x)
    if (is.null(rel)) return(NULL)
    list(release = rel, e = tune_submit(ctx$pool, function(nthreads) tune_timed(ev(rel, nthreads = nthreads)),
                                        ctx$nthreads),
         seconds = proc.time()[[3L]] - since)
  })
  for (j in which(!vapply(out, is.null, NA))) {
    got <- tune_value(ctx$pool, out[[j]]$e)
    out[[j]]$e <- got$e
    out[[j]]$seconds <- out[[j]]$seconds + got$seconds
  }
  out
}

# The value of `expr` (`e`) and the `seconds` it took.
tune_timed <- function(expr) {
  since <- proc.time()[[3L]]
  list(e = expr, seconds = proc.time()[[3L]] - since)
}

# Whether a search shares its work with a forked process (tune_pool()): with two or more
# threads, on Linux (where a forked child may run OpenMP code on one thread), and with a
# `seed` (so that the measurements draw nothing from the caller's random stream, which a
# child could not advance). Elsewhere, and with one thread, one piece after the other.
tune_forks <- function(ctx) {
  ctx$nthreads >= 2L && !is.null(ctx$seed) && identical(Sys.info()[["sysname"]], "Linux") &&
    requireNamespace("parallel", quietly = TRUE)
}

# ---- the pool: the search on two cores ---------------------------------------------------
# The pieces of a search that draw no random numbers (a candidate's measurement; a family
# whose maskings are deterministic, tune_piece_families()) are queued, first in first out.
# One forked process takes the next piece whenever it is free (the pool is polled by
# tune_submit(), tune_value() and every measurement made here: tune_polled()), and this
# process takes the queued pieces itself while it waits for one, so that no core idles while
# the other has queued work. A piece is run(nthreads): in the child on one thread, here on
# the search's threads when the child is idle, else on one. The numbers are the same for any
# number of threads, so every piece gives the serial search's result, whichever process ran
# it. A child that returns nothing (killed: out of memory; or an error) has its piece run
# again here, so that an error is raised as the serial search raises it.
tune_pool <- function(threads) {
  pool <- new.env(parent = emptyenv())
  pool$pid <- Sys.getpid() # (polled by this process only, not by its children's copies)
  pool$threads <- threads
  pool$queue <- list() # pieces not started, by id: list(id, run)
  pool$job <- NULL # the piece the child runs, with its job
  pool$done <- list() # by id: list(value), or list(again = run) when the child returned nothing
  pool$n <- 0L
  pool
}

# The families run as one piece each: neither draws random numbers (their maskings are
# deterministic and, with a seed, their measurements draw none).
tune_piece_families <- function() c("stratum", "adaptive")

# A piece queued: a handle for tune_value(). Without a pool, run at once on `threads`.
tune_submit <- function(pool, run, threads) {
  if (is.null(pool)) return(list(value = run(threads)))
  pool$n <- pool$n + 1L
  id <- paste0("p", pool$n)
  pool$queue[[id]] <- list(id = id, run = run)
  tune_poll(pool)
  list(id = id)
}

# The value of a piece: the queued pieces are run here in turn (the child taking the next
# whenever it is free) until it is done; waited for only when the child runs it and
# nothing is queued.
tune_value <- function(pool, h) {
  if (is.null(h$id)) return(h$value)
  repeat {
    tune_poll(pool)
    d <- pool$done[[h$id]]
    if (!is.null(d)) break
    if (length(pool$queue)) {
      piece <- pool$queue[[1L]]
      pool$queue[[1L]] <- NULL
      pool$done[[piece$id]] <- list(value = piece$run(tune_threads(pool)))
    } else {
      tune_took(pool, parallel::mccollect(pool$job$job, wait = TRUE))
    }
  }
  pool$done[[h$id]] <- NULL
  if (is.null(d$again)) d$value else d$again(tune_threads(pool))
}

# The threads of a piece run here: the search's while the child is idle, else one.
tune_threads <- function(pool) if (is.null(pool$job) && pool$pid == Sys.getpid()) pool$threads else 1L

# The child's piece collected when it has ended, and the next queued piece given to the child.
tune_poll <- function(pool) {
  if (is.null(pool) || pool$pid != Sys.getpid()) return(invisible())
  if (!is.null(pool$job)) {
    got <- parallel::mccollect(pool$job$job, wait = FALSE)
    if (!is.null(got)) tune_took(pool, got)
  }
  if (is.null(pool$job) && length(pool$queue)) {
    piece <- pool$queue[[1L]]
    pool$queue[[1L]] <- NULL
    tune_fork_trim()
    piece$job <- parallel::mcparallel(piece$run(1L), mc.set.seed = FALSE)
    pool$job <- piece
  }
  invisible()
}

# Before a fork: R's garbage collected and the memory the allocator then keeps free handed
# back to the system (ffi_heap_trim(): glibc's malloc_trim()), so that the child does not
# share the search's garbage and freed pages and copy them on reuse (a shared page that
# either process writes is copied: memory free at the fork and reused after it is held twice).
tune_fork_trim <- function() {
  gc(verbose = FALSE)
  invisible(.Call(C_ffi_heap_trim))
}

tune_took <- function(pool, got) {
  v <- got[[1L]]
  piece <- pool$job
  pool$job <- NULL
  pool$done[[piece$id]] <- if (is.list(v) && !inherits(v, "try-error")) list(value = v) else list(again = piece$run)
}

# The child stopped (the search ended by an error or an interrupt).
tune_pool_close <- function(pool) {
  if (is.null(pool) || is.null(pool$job)) return(invisible())
  tools::pskill(pool$job$job$pid)
  suppressWarnings(parallel::mccollect(pool$job$job, wait = FALSE)) # (the warning of a killed child)
  pool$job <- NULL
  invisible()
}

# The evaluator `ev` polling the pool before each measurement made here, on the threads of
# tune_threads().
tune_polled <- function(ev, pool) {
  function(release, origin_row = NULL, nthreads = tune_threads(pool)) {
    tune_poll(pool)
    ev(release, origin_row, nthreads = nthreads)
  }
}

# A family (`entry`) as a piece: run on the piece's threads, its measurements made inline;
# returned with the releases of tune_needed(, keep) only.
tune_family_piece <- function(ctx, entry, runs, key, keep = 0L) {
  force(entry)
  force(runs)
  force(key)
  force(keep)
  ev <- ctx$ev
  function(nthreads) {
    one <- ctx
    one$pool <- NULL
    one$nthreads <- nthreads
    one$ev <- function(release, origin_row = NULL, nthreads = one$nthreads) ev(release, origin_row, nthreads = nthreads)
    tune_needed(entry$tune(one, entry, runs, key), keep)
  }
}

# A family's run with only the releases the search may still read: those of the candidates
# that meet the search's limits (verified in order of loss, one returned) and of the `keep`
# others of least loss (bar the nearest-only masking), among which tune_stir() takes its
# bases. The other candidates keep their rows in the report; their releases are let go.
tune_needed <- function(run, keep = 0L) {
  rows <- lapply(run$cands, `[[`, "row")
  if (!length(rows) || any(vapply(rows, is.null, NA))) return(run) # (no report rows: nothing to let go)
  base <- tune_stir_bases(rows, keep)
  for (j in setdiff(which(!vapply(rows, `[[`, NA, "meets")), base)) run$cands[[j]]["release"] <- list(NULL)
  run
}

tune_quiet <- function(expr) suppressMessages(suppressWarnings(expr))

# A release of anonymise_adaptive() from the shared parts, with the settings that make it
# again (so that the algorithm-aware intruder and the user can read them from its metadata).
tune_adaptive_release <- function(ctx, k_start, k0, k_max, m, rate, w1, fit = NULL) {
  if (is.null(fit)) fit <- adaptive_fit(ctx$p, k0, k_max, m, rate, w1, ctx$nthreads)
  tune_quiet(adaptive_release(ctx$data, ctx$df, ctx$p, fit, ctx$format, min(k0),
                              settings = list(k = k_start, k_max = k_max, m = m, rate = rate, w1 = w1,
                                              format = ctx$format, vars = ctx$vars, strata = ctx$strata)))
}

# The ladder of k of the single methods and of k per stratum: 3, 5, 10, 20, ... from `k`.
tune_ladder <- function(k, rungs) {
  l <- sort(unique(c(max(3L, k), rungs)))
  l[l >= k]
}

# 1. Fixed k: anonymise() with one k for every record. Also the first counts of the k per
# stratum ladder (`evals`, by k), measured even when only "stratum" is searched.
tune_fixed_k <- function(ctx, entry, runs, key) {
  out <- list(cands = list(), evals = list())
  ks <- tune_ladder(ctx$k, entry$settings$k)
  ks <- ks[ks <= min(ctx$sizes)]
  made <- tune_made(ctx, ks, function(kk) {
    tune_quiet(anonymise(ctx$data, vars = ctx$vars, strata = ctx$strata, k = kk,
                         format = ctx$format, check_identifiers = FALSE, nthreads = ctx$nthreads))
  })
  for (j in seq_along(ks)) {
    e <- made[[j]]$e
    out$evals[[as.character(ks[j])]] <- e
    if ("anonymise" %in% ctx$methods) {
      out$cands[[length(out$cands) + 1L]] <-
        tune_candidate(ctx, e, "anonymise", paste0("k = ", ks[j]), made[[j]]$release, seconds = made[[j]]$seconds)
    }
  }
  out
}

# 1b. (k, epsilon): anonymise_keps() at the budgets `keps_epsilon`, measured on the rows
# aligned by the key of anonymise_keps_with_key(); shuffled, so measured but never returned.
tune_keps <- function(ctx, entry, runs, key) {
  out <- list(cands = list())
  for (eps in ctx$keps_epsilon) {
    since <- proc.time()[[3L]]
    kk <- min(max(3L, ctx$k), min(ctx$sizes)) # (at least k: the strata hold k_strata >= k records)
    res <- tune_quiet(anonymise_keps_with_key(ctx$data, vars = ctx$vars, strata = ctx$strata, k = kk,
                                              epsilon = eps))
    rel <- as.data.frame(res$data)
    attr(rel, "detanon") <- NULL
    e <- ctx$ev(rel, origin_row = res$origin_row)
    out$cands[[length(out$cands) + 1L]] <-
      tune_candidate(ctx, e, "keps", paste0("k = ", kk, ", epsilon = ", format(eps)), NULL, since)
  }
  out
}

# 2. k per stratum. The records each stratum has linked, top-m linked and flagged at each
# k of a ladder are counted on whole releases (the fixed-k releases of `evals`, and
# releases with that k in every stratum that holds it); then, while the summed counts
# predict a missed limit, the stratum with the most records behind the limit missed
# furthest moves one k up. The candidate is measured; where it still misses, its own
# counts replace the prediction and the search goes on (at most `max_tries` candidates).
tune_per_stratum <- function(ctx, entry, runs, key) {
  evals <- runs$anonymise$evals
  p <- ctx$p
  sizes <- ctx$sizes
  limits <- ctx$limits
  out <- list(cands = list(), stop = character())
  # (up to the ladder's top, k = 160: beyond, one k per stratum spends more than any
  # candidate here)
  ladder <- tune_ladder(ctx$k, entry$settings$k)
  ladder <- ladder[ladder <= max(ctx$k, min(max(entry$settings$k), max(sizes)))]
  # a stratum's centroids (before step 5) depend on its own records and k only: those of
  # each rung are computed once (kept in `memo`), and a candidate takes every stratum's
  # rows from the rung it was given. The rungs not yet computed come from one neighbour
  # search at the largest of them (adaptive_rungs()): those of the candidate's choice, and
  # when a climb first needs a rung that no fixed-k release measured, every rung (a climb
  # past the fixed-k ladder goes on up it).
  memo <- new.env(parent = emptyenv())
  rung_k <- function(r) pmin(ladder[r], sizes)
  fit_rungs <- function(rs) {
    rs <- rs[vapply(rs, function(r) is.null(memo[[paste0("c", r)]]), NA)]
    if (!length(rs)) return(invisible())
    k <- matrix(as.integer(vapply(rs, function(r) rung_k(r)[p$id], numeric(length(p$id)))), ncol = length(rs))
    fits <- adaptive_rungs(p, k, ctx$nthreads)
    for (j in seq_along(rs)) memo[[paste0("c", rs[j])]] <- fits[[j]]
  }
  # the release of a choice of rungs, one per stratum
  release_of <- function(choice_r, every = FALSE) {
    choice <- pmin(ladder[choice_r], sizes)
    fit_rungs(if (every) seq_along(ladder) else sort(unique(choice_r)))
    fit <- memo[[paste0("c", choice_r[1L])]]
    for (r in unique(choice_r)) {
      rows <- choice_r[p$id] == r
      fit$centroids[rows, ] <- memo[[paste0("c", r)]]$centroids[rows, ]
    }
    fit$k <- fit$k0 <- choice[p$id]
    tune_adaptive_release(ctx, k_table_of(ctx$df, ctx$strata, p, choice[p$id]), choice[p$id], max(choice),
                          0L, 0, NULL, fit = fit)
  }
  counts <- function(r) { # per-stratum counts with ladder[r] (capped by each stratum's size)
    key <- paste0("n", r)
    if (is.null(memo[[key]])) {
      e <- evals[[as.character(ladder[r])]]
      if (is.null(e)) { # (no fixed-k release has a k above the smallest stratum)
        rel <- release_of(rep(r, length(sizes)), every = TRUE)
        e <- ctx$ev(rel)
        # the candidate with this rung in every stratum: this release and its measures
        memo[[paste0("e", r)]] <- list(release = rel, e = e)
      }
      memo[[key]] <- tune_counts(e)
    }
    memo[[key]]
  }
  lim_n <- attr(counts(1L), "limits") # the counts allowed over all strata
  choice_r <- rep(1L, length(sizes))
  top_r <- vapply(sizes, function(sz) which(ladder >= sz)[1L], integer(1))
  top_r[is.na(top_r)] <- length(ladder)
  measured <- NULL # measured counts of the last candidate, per stratum
  for (try in seq_len(ctx$max_tries)) {
    since <- proc.time()[[3L]]
    repeat {
      cnt <- vapply(seq_along(sizes), function(i) {
        if (!is.null(measured) && measured$r[i] == choice_r[i]) return(measured$c[i, ])
        counts(choice_r[i])[i, ]
      }, numeric(ncol(counts(1L))))
      over <- c(rowSums(cnt[names(lim_n), , drop = FALSE]) / pmax(lim_n, 0.5),
                linkage_stratum = max(cnt["linkage", ] / sizes) / limits$linkage_stratum,
                top_m_stratum = max(cnt["top_m_released", ] / sizes) / limits$top_m_stratum)
      can <- choice_r < top_r
      if (all(over <= 1) || !any(can)) break
      worst <- names(which.max(over))
      row <- switch(worst, linkage_stratum = cnt["linkage", ] / sizes,
                    top_m_stratum = cnt["top_m_released", ] / sizes, cnt[worst, ])
      row[!can] <- -Inf
      i <- which.max(row)
      choice_r[i] <- choice_r[i] + 1L
    }
    choice <- pmin(ladder[choice_r], sizes)
    done <- if (all(choice_r == choice_r[1L])) memo[[paste0("e", choice_r[1L])]]
    rel <- if (is.null(done)) release_of(choice_r) else done$release
    e <- if (is.null(done)) ctx$ev(rel) else done$e
    cand <- tune_candidate(ctx, e, "stratum", tune_k_label(choice), rel, since)
    out$cands[[length(out$cands) + 1L]] <- cand
    if (cand$row$meets) break
    if (!any(choice_r < top_r)) {
      out$stop <- sprintf("k per stratum: %s missed with every stratum at its largest k (its size, at most %d)",
                          cand$row$fails, max(ladder))
      break
    }
    measured <- list(r = choice_r, c = tune_counts(e))
  }
  out
}

# 3. Adaptive k per record, as one path of stages from light to strong masking, each
# starting from the neighbourhoods of the one before: the top-m rates 0.5, 0.3, 0.2 and the
# limit, then the limit lowered by a tenth while the measured rate misses it; the cap
# k_max doubled while records at their cap keep a limit from being met; stopped when a
# stage takes off less than a quarter of the excess over the limits. Beside the path, the
# nearest-only masking (k from max(3, k) to 33, m = 1).
tune_adaptive <- function(ctx, entry, runs, key) {
  limits <- ctx$limits
  sizes <- ctx$sizes
  out <- list(cands = list(), stop = character())
  rates <- sort(unique(c(entry$settings$rate, limits$top_m)), decreasing = TRUE)
  rates <- rates[rates >= limits$top_m & rates > ctx$floor_m]
  k_max <- min(max(33L, 3L * ctx$k), max(sizes))
  k0 <- rep(ctx$k, ctx$n)
  stage <- list(k = k0, rate = numeric(), k_max = integer(), rounds = 0L)
  i <- 0L
  tries <- 0L
  last_excess <- Inf
  row <- NULL
  # one more stage of the path at `rate`, measured: the stage reached and its candidate
  step <- function(stage, rate, k_max) {
    since <- proc.time()[[3L]]
    fit <- adaptive_fit(ctx$p, stage$k, k_max, ctx$m, rate, ctx$w1, ctx$nthreads, state = stage$state,
                        keep_state = TRUE)
    stage <- list(k = fit$k, rate = c(stage$rate, rate), k_max = c(stage$k_max, k_max),
                  rounds = stage$rounds + fit$rounds, state = fit$state)
    fit$k0 <- k0
    fit$rounds <- stage$rounds
    rel <- tune_adaptive_release(ctx, ctx$k, k0, stage$k_max, ctx$m, stage$rate, ctx$w1, fit = fit)
    cand <- tune_candidate(ctx, ctx$ev(rel), "adaptive", tune_stage_label(stage, ctx$k, ctx$m, ctx$w1), rel, since)
    cand$n_capped <- fit$n_capped
    list(stage = stage, cand = cand)
  }
  repeat {
    i <- i + 1L
    rate <- if (i <= length(rates)) rates[i] else stage$rate[length(stage$rate)] * 0.9
    s <- step(stage, rate, k_max)
    stage <- s$stage
    out$cands[[length(out$cands) + 1L]] <- s$cand
    row <- s$cand$row
    if (rate > limits$top_m) next
    if (row$meets) break
    tries <- tries + 1L
    if (tries >= ctx$max_tries) {
      out$stop <- sprintf("adaptive k: %s still missed after %s", row$fails,
                          plural(ctx$max_tries, "try", "tries"))
      break
    }
    # how far the limits are missed: stop when a try took off less than a quarter of it
    excess <- tune_excess(row, limits)
    if (tries > 1L && excess > 0.75 * last_excess) {
      out$stop <- sprintf(paste0("adaptive k: %s missed, and the last stage took off less than a quarter ",
                                 "of the excess over the limits (%.3g of %.3g)"),
                          row$fails, last_excess - excess, last_excess)
      break
    }
    last_excess <- excess
    if (s$cand$n_capped > 0 && k_max < max(sizes)) {
      k_max <- min(2L * k_max, max(sizes))
    } else if (!grepl("top_m|worst|linkage", row$fails)) {
      out$stop <- sprintf("adaptive k: %s missed and no setting left to raise", row$fails)
      break
    }
  }
  # for the frontier: the path goes on below the limit it met (lower top-m rates)
  if (row$meets) {
    below <- entry$settings$below
    for (rate in below[below < min(stage$rate) & below > ctx$floor_m]) {
      s <- step(stage, rate, k_max)
      stage <- s$stage
      out$cands[[length(out$cands) + 1L]] <- s$cand
    }
  }
  # the nearest-only masking: k from max(3, k) to 33, the nearest-neighbour test only
  since <- proc.time()[[3L]]
  k_near <- min(max(3L, ctx$k), min(sizes))
  k_top <- max(k_near, min(entry$settings$near_k_max, max(sizes)))
  near <- tune_adaptive_release(ctx, k_near, rep(k_near, ctx$n), k_top, 1L, 0, NULL)
  out$cands[[length(out$cands) + 1L]] <-
    tune_candidate(ctx, ctx$ev(near), "adaptive", sprintf("k = %d..%d, m = 1 (nearest only)", k_near, k_top),
                   near, since)
  out
}

# 4. Shared centroids: MDAV microaggregation within each stratum at k = 3, 5, 10, 15, 20,
# 30 (from k; capped by each stratum's size: a table k), every record releasing its
# group's mean: anonymise_mdav(), whose metadata let the algorithm-aware intruder replay it.
tune_mdav <- function(ctx, entry, runs, key) {
  out <- list(cands = list(), stop = character())
  p <- ctx$p
  ks <- tune_ladder(ctx$k, entry$settings$k)
  ks <- ks[ks <= max(ctx$sizes)]
  made <- tune_made(ctx, ks, function(kk) {
    k_rows <- pmin(kk, ctx$sizes)[p$id]
    k_arg <- if (all(k_rows == kk)) kk else k_table_of(ctx$df, ctx$strata, p, k_rows)
    # the keyed noise of the group means (centroid_noise()): from the key, else drawn under `seed`
    tune_quiet(anonymise_mdav(ctx$data, vars = ctx$vars, strata = ctx$strata, k = k_arg,
                              noise = ctx$noise, key = key, format = ctx$format, check_identifiers = FALSE,
                              nthreads = ctx$nthreads))
  })
  for (j in seq_along(ks)) {
    out$cands[[j]] <- tune_candidate(ctx, made[[j]]$e, "mdav", sprintf("MDAV groups of k = %d within strata", ks[j]),
                                     made[[j]]$release, seconds = made[[j]]$seconds)
  }
  out
}

# 4b. Shared centroids with a secret key: anonymise_keyed() at the mean group sizes 5, 10,
# 14, 20 and 30 (groups of at least max(2, k) records). Left out without a key. The key
# is passed to the verb and kept nowhere else (the releases' metadata do not hold it).
# Above `pilot` records, every size is first made and measured on a pilot sample of `pilot`
# records (tune_pilot_rows()), and the whole data at the size the pilot ranks best only;
# the other sizes are reported in `left_out`, with their cost estimated from the pilot.
tune_keyed <- function(ctx, entry, runs, key) {
  out <- list(cands = list(), stop = character())
  if (is.null(key)) {
    out$stop <- "keyed: left out (no `key`)"
    return(out)
  }
  # groups of at least k, and of at least 1 / tail records (capped by the smallest stratum,
  # which no group can outgrow): the k-means gives the sparse tails small groups, whose
  # records the tail attacks re-identify at about 1 / group size
  kk <- max(2L, ctx$k, min(as.integer(ceiling(1 / ctx$limits$tail - 1e-9)), min(ctx$sizes)))
  sizes <- entry$settings$size
  sizes <- sizes[sizes >= kk & sizes <= max(ctx$sizes)]
  label <- function(size) sprintf("keyed groups of mean size %d, k = %d", size, kk)
  make <- function(data, size) {
    tune_quiet(anonymise_keyed(data, vars = ctx$vars, strata = ctx$strata, k = kk, key = key, size = size,
                               noise = ctx$noise, format = ctx$format, check_identifiers = FALSE,
                               nthreads = ctx$nthreads))
  }
  pilot <- if (ctx$n > ctx$pilot && length(sizes) > 1L) tune_pilot(ctx, sizes, make, least = max(kk, 30L))
  run <- if (is.null(pilot)) sizes else pilot$size
  made <- tune_made(ctx, run, function(size) make(ctx$data, size))
  for (j in seq_along(run)) {
    out$cands[[j]] <- tune_candidate(ctx, made[[j]]$e, "keyed", label(run[j]), made[[j]]$release,
                                     seconds = made[[j]]$seconds)
  }
  if (!is.null(pilot)) {
    # the cost of each size left out: the whole run's, scaled by the pilot's times
    secs <- out$cands[[1L]]$row$seconds
    tab <- pilot$tab
    left <- tab$size != pilot$size
    out$left_out <- data.frame(method = "keyed", settings = label(tab$size[left]),
                               why = sprintf("piloted on %s of the %s records; the pilot ranked mean size %d best",
                                             format(pilot$records, big.mark = ","),
                                             format(ctx$n, big.mark = ","), pilot$size),
                               pilot_worst = tab$worst[left], pilot_top_m = tab$top_m[left],
                               pilot_loss = tab$loss[left], pilot_meets = tab$meets[left],
                               seconds = secs * tab$seconds[left] / tab$seconds[!left],
                               stringsAsFactors = FALSE)
    out$stop <- sprintf(paste0("keyed: %s records, above `pilot`; every size measured on a pilot sample of %s ",
                               "records, the whole data at mean size %d only (the pilot's %s); sizes %s left ",
                               "out, about %s s in all"),
                        format(ctx$n, big.mark = ","), format(pilot$records, big.mark = ","), pilot$size,
                        if (any(tab$meets)) "least loss meeting the search limits" else "least excess over the limits",
                        paste(tab$size[left], collapse = ", "), format(signif(sum(out$left_out$seconds), 2)))
  }
  out
}

# The pilot of a family too costly to run at every setting on all records: every size made
# by make() on the records of tune_pilot_rows() (at least `least` of every stratum, or all
# its records) and measured by an evaluator of those records (as tune_setup() builds one).
# The size the pilot ranks best: the least loss among those that meet the search limits,
# else the least excess over them (the first on ties).
tune_pilot <- function(ctx, sizes, make, least) {
  df <- ctx$df[tune_pilot_rows(ctx$df, ctx$p$id, ctx$pilot, least), , drop = FALSE]
  rownames(df) <- NULL
  no_rmd_limit <- ctx$limits$risk1 == 1 && ctx$limits$risk2 == 1
  p <- adaptive_setup(df, ctx$vars, ctx$strata, rmd = TRUE, nthreads = ctx$nthreads,
                      rmd_sample = if (no_rmd_limit) tune_rmd_sample())
  ev <- tune_evaluator(df, ctx$vars, ctx$strata, p, ctx$m, ctx$objective, ctx$formula, ctx$family, ctx$nthreads,
                       ctx$attacks, ctx$intruder, ctx$sensitive, ctx$seed, ctx$limits, ctx$weights)
  made <- tune_made(ctx, sizes, function(size) make(df, size), ev = ev)
  tab <- do.call(rbind, lapply(seq_along(sizes), function(j) {
    row <- tune_row(made[[j]]$e, ctx$limits, "keyed", "")
    cbind(size = sizes[j], row[c("worst", "top_m", "loss", "meets")],
          excess = tune_excess(row, ctx$limits), seconds = made[[j]]$seconds)
  }))
  best <- if (any(tab$meets)) which(tab$meets)[which.min(tab$loss[tab$meets])] else which.min(tab$excess)
  list(size = tab$size[best], tab = tab, records = nrow(df))
}

# The records of a pilot of about `size` records: in every stratum (`id`), a share size / n
# of its records, at least `least` (or all), taken at evenly spaced positions in the order
# of their values (every column): the same records, in the same order, for any row order of
# the data; nothing random.
tune_pilot_rows <- function(df, id, size, least) {
  n <- nrow(df)
  o <- do.call(order, c(list(id), unname(as.list(df)), method = "radix"))
  ns <- tabulate(id)
  take <- pmin(ns, pmax(ceiling(as.double(ns) * size / n), least))
  start <- c(0, cumsum(ns))[seq_along(ns)]
  unlist(lapply(seq_along(ns), function(s) o[start[s] + floor(seq(0, take[s] - 1) * as.double(ns[s]) / take[s]) + 1]),
         use.names = FALSE)
}

# `pilot`: a whole number of records of at least 100, or Inf (no pilot).
check_pilot <- function(pilot) {
  if (identical(pilot, Inf)) return(Inf)
  check_whole(pilot, "pilot", min = 100)
}

# The candidates (report rows `rows`) stirring may take as bases: the `n` of least loss,
# bar the nearest-only masking.
tune_stir_bases <- function(rows, n) {
  ok <- which(!grepl("nearest only", vapply(rows, `[[`, "", "settings")))
  ok[order(vapply(rows[ok], `[[`, 0, "loss"))][seq_len(min(n, length(ok)))]
}

# 5. Stirring: the values of the four candidates of least loss (fixed k, k per stratum,
# adaptive k) shuffled inside Mondrian classes of at least 3 nearby released records
# within the strata.
tune_stir <- function(ctx, entry, runs, key) {
  out <- list(cands = list())
  cands <- unlist(lapply(runs, `[[`, "cands"), recursive = FALSE, use.names = FALSE)
  rows <- lapply(cands, `[[`, "row")
  ok <- which(vapply(rows, function(r) r$method %in% entry$settings$stirred, NA))
  base <- ok[tune_stir_bases(rows[ok], entry$settings$candidates)]
  kc <- entry$settings$class_k
  made <- tune_made(ctx, base, function(b) {
    rel <- cands[[b]]$release
    cl <- tune_quiet(equivalence_classes(rel, strata = ctx$strata, quasi = ctx$vars, k = kc))$class
    if (!anyNA(cl)) tune_quiet(stir(rel, vars = ctx$vars, strata = ctx$strata, classes = cl, k = kc, method = "shuffle"))
  })
  for (j in which(!vapply(made, is.null, NA))) {
    out$cands[[length(out$cands) + 1L]] <-
      tune_candidate(ctx, made[[j]]$e, "stir",
                     sprintf("candidate %d (%s), shuffled in classes of >= 3", base[j], rows[[base[j]]]$method),
                     made[[j]]$release, seconds = made[[j]]$seconds)
  }
  out
}

# The report: the candidates; those meeting every limit of the search verified on the
# verification battery in order of loss until one passes (the chosen release); the
# frontier; why the search stopped.
tune_result <- function(ctx, cands, stop_reason, seed, started) {
  tried <- do.call(rbind, lapply(cands, `[[`, "row"))
  rownames(tried) <- NULL
  releases <- lapply(cands, `[[`, "release")
  limits <- ctx$limits
  ok <- which(tried$meets & !vapply(releases, is.null, NA))
  best <- NA_integer_
  battery <- NULL
  closest <- NULL # the verified candidate of least excess, when none passes
  for (i in ok[order(tried$loss[ok])]) {
    b <- tune_verify(ctx, releases[[i]], seed, ctx$pool)
    v <- tune_verdict(b, limits)
    tried$verified[i] <- v$pass
    tried$verify_worst[i] <- v$worst
    tried$verify_worst_attack[i] <- v$worst_attack
    tried$verify_top_m[i] <- v$top_m
    tried$verify_tail[i] <- v$tail
    tried$verify_fails[i] <- v$fails
    if (v$pass) {
      best <- i
      battery <- b
      break
    }
    ex <- tune_excess(tried[i, ], limits, prefix = "verify_")
    if (is.null(closest) || ex < closest$excess) closest <- list(i = i, excess = ex, battery = b)
  }
  front <- pareto(tried$worst, tried$loss)
  chosen <- if (!is.na(best)) tried[best, , drop = FALSE] else NULL
  release <- if (!is.na(best)) releases[[best]] else NULL
  n_failed <- sum(tried$verified %in% FALSE)
  failed_by <- if (n_failed) {
    att <- table(tried$verify_worst_attack[tried$verified %in% FALSE])
    paste0(" (worst attack: ", paste(sprintf("%s %d", names(att), as.integer(att)), collapse = ", "), ")")
  } else ""
  stop <- if (!is.na(best)) {
    sprintf(paste0("%d candidates tried; %d met every limit of the search; %d of them failed the verification%s; ",
                   "the least loss that passes both (%s = %.4g) is %s (%s). %s"),
            nrow(tried), length(ok), n_failed, failed_by, ctx$objective, tried$loss[best], tried$method[best],
            tried$settings[best], paste(stop_reason, collapse = "; "))
  } else if (length(ok)) {
    battery <- closest$battery
    sprintf(paste0("%d candidates tried; %d met every limit of the search, and every one failed the ",
                   "verification%s; none is returned. Closest on the verification: %s (%s), which misses %s. %s"),
            nrow(tried), length(ok), failed_by, tried$method[closest$i], tried$settings[closest$i],
            tried$verify_fails[closest$i], paste(stop_reason, collapse = "; "))
  } else {
    cl <- which.min(vapply(seq_len(nrow(tried)), function(i) tune_excess(tried[i, ], limits), 0))
    sprintf("%d candidates tried; none met every limit of the search. Closest (least excess over the limits): %s (%s), which misses %s. %s",
            nrow(tried), tried$method[cl], tried$settings[cl],
            tried$fails[cl], paste(stop_reason, collapse = "; "))
  }
  structure(list(release = release, chosen = chosen, tried = tried,
                 frontier = tried[front, , drop = FALSE], battery = battery,
                 attacks = ctx$attacks, verify = ctx$verify,
                 limits = c(limits, m = ctx$m, k = ctx$k, k_strata = ctx$k_strata),
                 objective = ctx$objective, stop = trimws(stop), keys = ctx$keys, intruder = ctx$intruder,
                 n_suppressed = ctx$n_suppressed, kept = ctx$kept,
                 rmd_records = if (ctx$p$rmd$n_cov < ctx$n) ctx$p$rmd$n_cov,
                 seconds = proc.time()[[3L]] - started),
            class = "detanon_tuned")
}

# The verification of a candidate on its battery: the worst one-record rate and the worst
# top-m rate over the attacks, against the limits `worst` and `top_m`.
tune_verdict <- function(b, limits) {
  tab <- as.data.frame(b)
  # the attacks on the tails have a limit of their own (`tail`)
  tails <- tab[tab$name %in% tail_attacks(), , drop = FALSE]
  tab <- tab[!tab$name %in% tail_attacks(), , drop = FALSE]
  tl <- if (nrow(tails) && any(!is.na(tails$rate))) which.max(tails$rate) else NA_integer_
  tail_rate <- if (is.na(tl)) NA_real_ else tails$rate[tl]
  w <- if (any(!is.na(tab$rate))) which.max(tab$rate) else NA_integer_
  worst <- if (is.na(w)) NA_real_ else tab$rate[w]
  top <- if (any(!is.na(tab$rate_m))) max(tab$rate_m, na.rm = TRUE) else NA_real_
  fails <- character()
  if (!is.na(worst) && worst > limits$worst) fails <- c(fails, sprintf("worst (%s %.4f)", tab$name[w], worst))
  if (!is.na(top) && top > limits$top_m) {
    wm <- which.max(ifelse(is.na(tab$rate_m), -Inf, tab$rate_m))
    fails <- c(fails, sprintf("top_m (%s %.4f)", tab$name[wm], top))
  }
  if (!is.na(tail_rate) && !is.null(limits$tail) && tail_rate > limits$tail) {
    fails <- c(fails, sprintf("tail (%s %.4f)", tails$name[tl], tail_rate))
  }
  # the expected re-identifications by the categorical keys alone (NA matching any value)
  cr <- b$categorical
  if (!is.null(cr) && cr$global_risk > limits$worst) {
    fails <- c(fails, sprintf("worst (categorical keys' global risk %.4f)", cr$global_risk))
  }
  if (!is.null(cr) && !is.null(limits$risk_threshold) && any(cr$risk > limits$risk_threshold)) {
    fails <- c(fails, sprintf("risk_threshold (%s above it on the categorical keys)",
                              plural(sum(cr$risk > limits$risk_threshold), "record")))
  }
  list(pass = !length(fails), worst = worst, worst_attack = if (is.na(w)) NA_character_ else tab$name[w],
       tail = tail_rate,
       top_m = top, fails = paste(fails, collapse = ", "))
}

# The attacks of a battery whose 95% interval straddles a limit (the rate's interval holds
# `worst`, or the top-m rate's holds `top_m`) when no other attack's interval lies wholly
# above it: text for the verdicts, "" when none does.
battery_straddles <- function(b, worst, top_m) {
  if (is.null(b)) return("")
  tab <- as.data.frame(b)
  tab <- tab[!tab$name %in% tail_attacks(), , drop = FALSE] # bounded by `tail`, not by these
  on <- function(p, lo, hi, lim) !is.na(p) & !is.na(lo) & lo <= lim & hi > lim
  # only where the verdict could change: not when another attack misses the limit for sure
  w <- on(tab$rate, tab$lower, tab$upper, worst) & !any(tab$lower > worst, na.rm = TRUE)
  t <- on(tab$rate_m, tab$lower_m, tab$upper_m, top_m) & !any(tab$lower_m > top_m, na.rm = TRUE)
  out <- c(sprintf("%s %.4f [%.4f, %.4f] (limit %s)", tab$name[w], tab$rate[w], tab$lower[w], tab$upper[w],
                   format(worst)),
           sprintf("%s top-m %.4f [%.4f, %.4f] (limit %s)", tab$name[t], tab$rate_m[t], tab$lower_m[t],
                   tab$upper_m[t], format(top_m)))
  paste(out, collapse = "; ")
}

# Limits no release of these strata can meet; returns the share of records in strata of
# at most m records (whose top-m rate is 1 whatever the masking).
check_tune_limits <- function(limits, k_strata, m, sizes, n) {
  if (min(sizes) < k_strata) {
    stop_arg("the limit `k_strata` = ", k_strata, " cannot be met: the strata are released unchanged ",
             "and the smallest has ", plural(min(sizes), "record"), ". Coarsen or merge the strata ",
             "(merge_small_strata()) or lower `k_strata` (its default is the larger of 3 and `k`).")
  }
  floor_m <- sum(sizes[sizes <= m]) / n
  if (floor_m > limits$top_m) {
    stop_arg("the limit `top_m` = ", format(limits$top_m), " cannot be met with `m` = ", m,
             ": in strata of at most ", m, " records every record's own original is among the ",
             m, " nearest, which alone gives a rate of ", format(signif(floor_m, 3)), ".")
  }
  if (limits$top_m_stratum < 1 && min(sizes) <= m) {
    stop_arg("the limit `top_m_stratum` = ", format(limits$top_m_stratum), " cannot be met with `m` = ",
             m, ": in a stratum of at most ", m, " records every record's own original is among the ",
             m, " nearest (the smallest stratum has ", plural(min(sizes), "record"), ").")
  }
  floor_m
}

# The measurements of a candidate: the search attacks of the battery (risk_battery()
# without control, per record: the counts per stratum of the k-per-stratum search), and
# those of the public functions a user would call (risk_linkage() with m = 1 and with m,
# risk_rmd(deterministic = TRUE) at its default settings, the objective), computed by their
# own kernels (linkage_rates(), rmd_result()) from the shared parts in `p` and a single
# rank query per candidate: the same code, so the same numbers.
tune_evaluator <- function(df, vars, strata, p, m, objective, formula, family, nthreads, attacks, intruder,
                           sensitive, seed, limits, weights = NULL) {
  s <- linkage_setup(df, df, vars, strata)
  # the originals' z-scores and their trees are held once: the released side of `s` and of
  # the view are the originals themselves here (replaced by each candidate's)
  s$zm <- s$zo
  same_trees <- identical(unname(s$zo), p$z) && identical(s$order, p$order) && identical(s$offsets, p$offsets)
  index <- if (same_trees) p$index else rank_index(s$zo, s)
  rmd_set <- rmd_defaults()
  n <- nrow(df)
  # the cells the intruder matches exactly (NULL: the battery searches linkage released ->
  # original itself), when its search is the evaluator's
  link_cells <- if ("linkage_released" %in% attacks) same_link_view(df, s, intruder, seed, sensitive)
  view <- tune_view(df, intruder, seed, sensitive, weights)
  if (!is.null(view) && identical(view$zo, s$zo) && identical(view$zm, s$zo)) view$zo <- view$zm <- s$zo
  threads <- nthreads
  # (nthreads: the threads of this measurement; the same numbers for any; the attribute
  # `view`: the originals' view, for the verification)
  structure(function(release, origin_row = NULL, nthreads = threads) {
    own <- character()
    if (is.null(origin_row)) {
      orig <- df
      ss <- s
      zm <- s$z(numeric_matrix(release, vars))
      ranks <- link_ranks(s, s$zo, zm, rep(TRUE, n), m, nthreads, index = index)
      if (!is.null(link_cells) && all(vapply(link_cells, function(v) identical(release[[v]], df[[v]]), NA))) {
        own <- "linkage_released"
      }
    } else {
      # a shuffled release, measured against its originals aligned by the key
      orig <- df[origin_row, , drop = FALSE]
      ss <- linkage_setup(orig, release, vars, strata)
      ranks <- link_ranks(ss, ss$zo, ss$zm, rep(TRUE, n), m, nthreads)
    }
    l1 <- linkage_rates(ss, ranks, 1L)
    lm <- linkage_rates(ss, ranks, m)
    xm <- numeric_matrix(release, vars)
    r <- if (is.null(origin_row) && !any(vapply(seq_len(ncol(xm)), function(j) all(xm[, j] == xm[1L, j]), NA))) {
      # risk_rmd(): the originals' part built once (p$rmd), the same pow2 scaling of tiny columns
      for (j in which(p$tiny$e != 0)) xm[, j] <- times_pow2(xm[, j], p$tiny$e[j])
      rmd_result(p$rmd, xm, rmd_set$w1, rmd_set$w2, rmd_set$neighbours, vars, TRUE, nthreads)
    } else {
      # a constant masked column cannot be measured: risk1 and risk2 unknown (NA, a missed limit)
      tryCatch(risk_rmd(orig, release, vars = vars, deterministic = TRUE, nthreads = nthreads),
               detanon_error = function(e) list(risk1 = NA_real_, risk2 = NA_real_,
                                                 rows_risk1 = integer(), rows_risk2 = integer()))
    }
    loss <- switch(objective,
      delta = max(utility_delta(orig, release, vars = vars)$delta),
      U = utility_pmse(orig, release)$U,
      model = max(suppressMessages(utility_model(orig, release, formula, family = family))$std_diff, na.rm = TRUE))
    # the search attacks, on the release as returned (its rows aligned with `orig`)
    rest <- setdiff(attacks, own)
    bat <- if (!length(rest)) {
      list(attacks = list())
    } else if (is.null(origin_row) && !is.null(view) && tune_view_fits(view, release)) {
      list(attacks = tune_quiet(tune_view_attacks(view, release, rest, m, sensitive, nthreads, seed)))
    } else {
      tune_quiet(risk_battery(orig, release, intruder = intruder, attacks = rest, m = m,
                              sensitive = sensitive, weights = weights, control = FALSE, seed = seed,
                              nthreads = nthreads))
    }
    if (length(own)) bat$attacks$linkage_released <- linkage_released_rates(ranks, index, zm, m, nthreads)
    per <- function(v) as.vector(rowsum(v, ss$id, reorder = TRUE))
    flag1 <- flag2 <- numeric(n)
    flag1[r$rows_risk1] <- 1
    flag2[r$rows_risk2] <- 1
    # a stratum's risk1/risk2 counts are unknown when the release's are (every record counts)
    if (is.na(r$risk1)) flag1[] <- 1
    if (is.na(r$risk2)) flag2[] <- 1
    counts <- cbind(linkage = l1$by_rate * ss$sizes, top_m_released = lm$by_rate * ss$sizes,
                    risk1 = per(flag1), risk2 = per(flag2))
    lim_n <- c(linkage = limits$linkage, risk1 = limits$risk1, risk2 = limits$risk2) * n
    lim_n <- lim_n[c(limits$linkage, limits$risk1, limits$risk2) < 1]
    rate <- rate_m <- stats::setNames(rep(NA_real_, length(attacks)), attacks)
    for (a in attacks) {
      at <- bat$attacks[[a]]
      rate[a] <- at$rate
      rate_m[a] <- at$rate_m
      zero_na <- function(v) replace(v, is.na(v), 0)
      if (!is.na(at$rate)) {
        counts <- cbind(counts, per(zero_na(at$success)))
        colnames(counts)[ncol(counts)] <- paste0("rate:", a)
        lim_n[paste0("rate:", a)] <- limits$worst * at$n_attacked
      }
      if (!is.na(at$rate_m)) {
        counts <- cbind(counts, per(zero_na(at$success_m)))
        colnames(counts)[ncol(counts)] <- paste0("top_m:", a)
        lim_n[paste0("top_m:", a)] <- limits$top_m * at$n_attacked
      }
    }
    w <- if (any(!is.na(rate))) which.max(rate) else NA_integer_
    list(worst = if (is.na(w)) NA_real_ else unname(rate[w]),
         worst_attack = if (is.na(w)) NA_character_ else names(rate)[w],
         top_m = if (any(!is.na(rate_m))) max(rate_m, na.rm = TRUE) else NA_real_,
         rates = rate, rates_m = rate_m,
         linkage = l1$rate, linkage_stratum = max(l1$by_rate), top_m_released = lm$rate,
         top_m_stratum = max(lm$by_rate), risk1 = r$risk1, risk2 = r$risk2, reid = l1$reid_mean,
         loss = loss, counts = counts, count_limits = lim_n, sizes = ss$sizes)
  }, view = view)
}

# The columns the intruder matches exactly (strata and categorical keys) when its attack
# linkage released -> original searches what link_ranks() searches in tune_evaluator():
# every record known, no numeric key, the same z-scale and the same cells as the strata of
# `s`. NULL otherwise. A release whose columns are these of `df` has the same cells.
same_link_view <- function(df, s, intruder, seed, sensitive) {
  v <- tryCatch(intruder_view(df, df, intruder, seed = seed, sensitive = sensitive),
                detanon_error = function(e) NULL)
  if (is.null(v) || !all(v$known) || length(v$key_num) || !identical(v$zo, s$zo)) return(NULL)
  pairs <- unique(data.frame(cell = v$cell_o, id = s$id))
  if (nrow(pairs) != length(s$sizes) || anyDuplicated(pairs$cell)) return(NULL)
  v$cat_cols
}

# The intruder's view (intruder_view()) of the originals `df` beside a release that keeps
# their strata and categorical keys, the part of risk_battery()'s view that is the same
# for every such candidate: made once per search. NULL when the view cannot be made (the
# battery then raises the error on the candidate).
tune_view <- function(df, intruder, seed, sensitive, weights) {
  tryCatch(intruder_view(df, df, intruder, seed = seed, sensitive = sensitive, weights = weights),
           detanon_error = function(e) NULL)
}

# Whether `release` has the columns of the originals and keeps those the intruder matches
# exactly or by distance besides `vars`, so that its view is `view` with the release's
# masked part (tune_view_attacks()).
tune_view_fits <- function(view, release) {
  nrow(release) == view$n && identical(names(release), names(view$original)) &&
    all(vapply(c(view$cat_cols, view$key_num), function(v) identical(release[[v]], view$original[[v]]), NA))
}

# The attacks `attacks` of risk_battery(original, release, control = FALSE) (its field
# `attacks`) on the view of tune_view() with the release's part: what intruder_view()
# computes from a release that keeps the strata and keys (its masked values on the
# originals' z-scale; its cells are those of the originals).
tune_view_attacks <- function(view, release, attacks, m, sensitive, nthreads, seed) {
  checked <- check_attack_args(FALSE, seed, nthreads, m)
  view <- tune_view_of(view, release)
  attacks <- tune_sensitive_attacks(attacks, sensitive)
  stats::setNames(lapply(attacks, function(a) {
    run_attack(battery_attacks()[[a]], view, NULL, m = checked$m, sensitive = sensitive, nthreads = checked$nthreads,
               seed = checked$seed)
  }), attacks)
}

# The view of tune_view() with the release's part (a release that tune_view_fits()).
tune_view_of <- function(view, release) {
  view$masked <- release
  view$zm <- view$z(numeric_matrix(release, view$vars))
  view$shared <- new.env(parent = emptyenv())
  view
}

# `attacks` without those that need a sensitive column when there is none.
tune_sensitive_attacks <- function(attacks, sensitive) {
  reg <- battery_attacks()
  if (is.null(sensitive)) attacks <- setdiff(attacks, names(reg)[vapply(reg, `[[`, TRUE, "needs_sensitive")])
  attacks
}

# The verification battery of a candidate: risk_battery(ctx$df, release) with the attacks
# `ctx$verify` and its control. A release that keeps the originals' strata and keys
# (tune_view_fits()) is attacked on the search's view of the originals (the view
# risk_battery() builds), in the pieces of tune_verify_pieces() (on two cores, pieces of the
# pool: the forked process takes the first), each with its own memo of the work its attacks
# share (view_shared()), let go when it ends; the same battery as risk_battery()'s.
tune_verify <- function(ctx, release, seed, pool = NULL) {
  view <- attr(ctx$ev, "view")
  if (is.null(view) || !is.null(ctx$weights) || !tune_view_fits(view, release)) {
    return(tune_quiet(risk_battery(ctx$df, release, intruder = ctx$intruder, attacks = ctx$verify, m = ctx$m,
                                   sensitive = ctx$sensitive, weights = ctx$weights, seed = seed,
                                   nthreads = ctx$nthreads)))
  }
  checked <- check_attack_args(TRUE, seed, ctx$nthreads, ctx$m)
  s <- tune_view_of(view, release)
  ctrl <- battery_permute(s, seed = if (!is.null(checked$seed)) checked$seed + 1L)
  reg <- battery_attacks()
  attacks <- tune_sensitive_attacks(ctx$verify, ctx$sensitive)
  h <- lapply(tune_verify_pieces(attacks), function(piece) {
    tune_submit(pool, function(nthreads) {
      s$shared <- ctrl$shared <- new.env(parent = emptyenv())
      s$shared$control <- TRUE
      tune_quiet(lapply(stats::setNames(nm = piece), function(a) {
        run_attack(reg[[a]], s, ctrl, m = checked$m, sensitive = ctx$sensitive, nthreads = nthreads,
                   seed = checked$seed)
      }))
    }, checked$nthreads)
  })
  res <- unlist(lapply(h, function(x) tune_value(pool, x)), recursive = FALSE)
  new_battery(res[attacks], s, release, ctx$weights)
}

# The pieces of a verification: the attacks that reuse the trees of the released records and
# the ranks of the linkage original -> released (view_shared(): the tails' linkage, the
# algorithm-aware intruder, inference) form one piece with that linkage; every other attack
# is a piece of its own; the assignment first (the longest: the forked process takes it).
tune_verify_pieces <- function(attacks) {
  together <- intersect(c("linkage_original", "tail_outliers", "recipe", "inference"), attacks)
  pieces <- c(if (length(together)) list(together), as.list(setdiff(attacks, together)))
  pieces[order(!vapply(pieces, function(p) "assignment" %in% p, NA))]
}

# The attack linkage released -> original from the ranks of link_ranks() (the counts of
# linkage_core() on the trees of the originals; "at most as near" counted exactly where
# it stopped at 2^14 and a top-m share needs it): the fields tune_evaluator() reads.
linkage_released_rates <- function(ranks, index, zm, m, nthreads) {
  redo <- ranks[, 1L] < m & ranks[, 2L] >= 2^14
  if (any(redo)) ranks[redo, ] <- battery_ranks(index, zm, redo, max(m, 2L), nthreads)[redo, ]
  success <- top_m_share(ranks, 1)
  success_m <- top_m_share(ranks, m)
  list(rate = mean(success), rate_m = mean(success_m), success = success, success_m = success_m,
       n_attacked = length(success))
}

# How far a candidate misses its limits: the sum of its measures' relative excess over
# them (a limit of 0, as risk2 = 0 allows, counts the excess per record of 1/1000; a
# measure with a limit that could not be computed counts as 1, the largest share).
tune_excess <- function(row, limits, prefix = "") {
  lim <- tune_limit_vector(limits)
  nm <- names(lim)
  if (nzchar(prefix)) nm[nm %in% c("worst", "top_m")] <- paste0(prefix, nm[nm %in% c("worst", "top_m")])
  got <- unlist(row[nm])
  names(got) <- names(lim)
  got[is.na(got) & lim < 1] <- 1
  got[is.na(got)] <- 0
  ex <- sum(pmax(0, got - lim) / pmax(lim, 1e-3))
  # the verification's tail limit (the tail attacks are verified, not searched)
  if (nzchar(prefix) && !is.null(limits$tail) && !is.null(row$verify_tail) && !is.na(row$verify_tail)) {
    ex <- ex + max(0, row$verify_tail - limits$tail) / limits$tail
  }
  ex
}

# The attacks of the battery on the tails (bounded by the `tail` limit, not by `worst`).
tail_attacks <- function() names(Filter(function(a) isTRUE(a$tail), battery_attacks()))

tune_limit_vector <- function(limits) {
  unlist(limits[c("worst", "top_m", "linkage", "linkage_stratum", "top_m_stratum", "risk1", "risk2")])
}

# Per stratum (rows): the expected numbers of records re-identified by each search attack
# (one-record and top-m), linked by nearest linkage, and flagged by risk1 and risk2, and
# the stratum sizes; attribute "limits": the counts allowed over all strata.
tune_counts <- function(e) {
  structure(cbind(e$counts, size = e$sizes), limits = e$count_limits)
}

# One row of the report from an evaluation.
tune_row <- function(e, limits, method, settings) {
  got <- c(worst = e$worst, top_m = e$top_m, linkage = e$linkage, linkage_stratum = e$linkage_stratum,
           top_m_stratum = e$top_m_stratum, risk1 = e$risk1, risk2 = e$risk2)
  lim <- tune_limit_vector(limits)[names(got)]
  # an attack measure the search attacks do not give is not a failure (the verification
  # measures it); an older measure with a limit that cannot be computed is
  fails <- names(got)[(is.na(got) & lim < 1 & !names(got) %in% c("worst", "top_m")) | (!is.na(got) & got > lim)]
  data.frame(method = method, settings = settings, worst = e$worst, worst_attack = e$worst_attack,
             top_m = e$top_m, linkage = e$linkage, linkage_stratum = e$linkage_stratum,
             top_m_released = e$top_m_released, top_m_stratum = e$top_m_stratum, risk1 = e$risk1,
             risk2 = e$risk2, reid = e$reid, loss = e$loss,
             meets = !length(fails), fails = paste(fails, collapse = ", "),
             verified = NA, verify_worst = NA_real_, verify_worst_attack = NA_character_,
             verify_top_m = NA_real_, verify_tail = NA_real_, verify_fails = "", stringsAsFactors = FALSE)
}

tune_k_label <- function(choice) {
  u <- sort(unique(choice))
  if (length(u) == 1L) return(paste0("k = ", u, " in every stratum"))
  paste0("k per stratum: ", paste(vapply(u, function(v) paste0(v, " (", sum(choice == v), ")"), ""),
                                  collapse = ", "))
}

tune_stage_label <- function(stage, k, m, w1) {
  sprintf("k from %d, m = %d%s, stages rate/k_max: %s", k, m, if (!is.null(w1)) paste0(", w1 = ", format(w1)) else "",
          paste(sprintf("%s/%d", format(signif(stage$rate, 6), drop0trailing = TRUE, trim = TRUE), stage$k_max),
                collapse = " > "))
}

check_limit <- function(x, arg, zero = FALSE) {
  ok <- is.numeric(x) && length(x) == 1L && !is.na(x) && x <= 1 && (if (zero) x >= 0 else x > 0)
  if (!ok) {
    stop_arg("the limit `", arg, "` must be a single share in ", if (zero) "[0, 1]" else "(0, 1]",
             " (1: no limit), not ", show_value(x), ".")
  }
  as.numeric(x)
}

# Rows not beaten on both x and y (lower is better), ordered by x.
pareto <- function(x, y) {
  o <- order(x, y)
  keep <- logical(length(x))
  best <- Inf
  for (i in o) {
    if (y[i] < best) { keep[i] <- TRUE; best <- y[i] }
  }
  o[keep[o]]
}

#' @export
print.detanon_tuned <- function(x, ...) {
  l <- x$limits
  wrap <- function(..., indent = 0, exdent = indent + 2) {
    cat(strwrap(paste0(...), width = 78, indent = indent, exdent = exdent), sep = "\n")
  }
  k_strata <- if (is.null(l$k_strata)) l$k else l$k_strata
  if (!nrow(x$tried)) {
    wrap("tune_release(): no candidate tried; nothing is returned as a release.")
    wrap("Stopped: ", x$stop)
    return(invisible(x))
  }
  wrap(sprintf("tune_release(): %s tried in %.1f s; loss: %s (lower is better)",
               plural(nrow(x$tried), "candidate"), if (is.null(x$seconds)) NA_real_ else x$seconds, x$objective))
  older <- c(linkage = l$linkage, linkage_stratum = l$linkage_stratum, top_m_stratum = l$top_m_stratum,
             risk1 = l$risk1, risk2 = l$risk2)
  older <- older[older < 1]
  wrap(sprintf("Limits: worst one-record attack <= %s, top-%d (every attack that has one) <= %s%s%s, strata of >= %d records",
               format(l$worst), l$m, format(l$top_m),
               if (!is.null(l$tail) && l$tail < 1) paste0(", the tails <= ", format(l$tail)) else "",
               if (length(older)) paste0(", ", paste(sprintf("%s <= %s", names(older), format(older)), collapse = ", ")) else "",
               k_strata), exdent = 8)
  wrap("Search attacks: ", paste(x$attacks, collapse = ", "), exdent = 8)
  wrap("Verification attacks: ", paste(x$verify, collapse = ", "), exdent = 8)
  t <- x$tried
  num <- function(v, d) ifelse(is.na(v), "-", formatC(v, format = "f", digits = d))
  ver <- ifelse(is.na(t$verified), "-", ifelse(t$verified, "passes", "FAILS"))
  tab <- data.frame(`#` = seq_len(nrow(t)), method = t$method, worst = num(t$worst, 4),
                    top_m = num(t$top_m, 4), loss = formatC(t$loss, format = "g", digits = 4),
                    search = ifelse(t$meets, "meets", "misses"), verified = ver,
                    v_worst = num(t$verify_worst, 4), v_top_m = num(t$verify_top_m, 4),
                    check.names = FALSE, stringsAsFactors = FALSE)
  names(tab)[names(tab) == "top_m"] <- sprintf("top-%d", l$m)
  names(tab)[names(tab) == "v_top_m"] <- sprintf("v_top-%d", l$m)
  cat("\n")
  wrap("Search (worst and top-m over the search attacks) and verification (over the verification attacks):")
  print(tab, row.names = FALSE, right = TRUE)
  cat("\nSettings (and the limits each candidate misses):\n")
  for (i in seq_len(nrow(t))) {
    why <- c(if (nzchar(t$fails[i])) paste0("misses ", t$fails[i], " in the search"),
             if (isFALSE(t$verified[i])) paste0("passes the search, fails the verification: ", t$verify_fails[i]))
    lines <- strwrap(paste(c(t$settings[i], why), collapse = "; "), width = 72)
    cat(paste0(c(sprintf("%4d  ", i), rep(strrep(" ", 6L), length(lines) - 1L)), lines), sep = "\n")
  }
  cat("\n")
  if (!is.null(x$chosen)) {
    ch <- x$chosen
    wrap(sprintf("Chosen: candidate %d, %s (%s)", match(TRUE, t$verified), ch$method, ch$settings), exdent = 8)
    wrap(sprintf("search: worst %.4f (%s), top-%d %.4f; verification: worst %.4f (%s), top-%d %.4f; %s %.4g",
                 ch$worst, ch$worst_attack, l$m, ch$top_m, ch$verify_worst, ch$verify_worst_attack, l$m,
                 ch$verify_top_m, x$objective, ch$loss), indent = 2, exdent = 4)
  } else {
    cat("No candidate met every limit on the search and the verification; nothing is returned as a release.\n")
  }
  if (!is.null(x$battery)) {
    cat(if (!is.null(x$chosen)) "Verification battery of the chosen release:\n" else
      "Verification battery of the closest candidate verified:\n")
    print_battery_table(x$battery, indent = "  ")
    str <- battery_straddles(x$battery, l$worst, l$top_m)
    if (nzchar(str)) {
      wrap("Uncertain: the 95% interval of ", str, " straddles its limit; on this number of records ",
           "the verdict could go either way.", exdent = 2)
    }
  }
  if (!is.null(x$intruder) && is_published_intruder(x$intruder)) {
    wrap("Intruder: holds the masked variables, the strata and every published column not masked or ",
         "sensitive, exactly: ", if (length(x$keys)) paste(x$keys, collapse = ", ") else "none beyond the strata",
         "; the search formed its groups within them",
         if (isTRUE(x$n_suppressed > 0)) sprintf(" and left out %s of cells of fewer than %d records",
                                                 plural(x$n_suppressed, "record"), k_strata), ".", exdent = 2)
  }
  if (!is.null(x$categorical)) {
    cr <- x$categorical$risk
    wrap("Published keys changed before the masking (", x$categorical$settings, "; loss ",
         sprintf("%.4f", x$categorical$loss), "): ", paste(categorical_lines(x$categorical), collapse = "; "),
         if (!is.null(cr)) {
           sprintf("; individual risk with the weights: %.2f expected re-identifications (%.4f%%), largest %.4f",
                   cr$expected, 100 * cr$global_risk, cr$max_risk)
         }, ".", exdent = 2)
  }
  lo <- x$left_out
  if (!is.null(lo) && nrow(lo)) {
    wrap("Left out (", lo$why[1L], "): ",
         paste(sprintf("%s, about %s s", lo$settings, format(signif(lo$seconds, 2))), collapse = "; "),
         ". Pass `pilot = Inf` to run them.", exdent = 2)
  }
  if (!is.null(x$rmd_records)) {
    wrap("risk1 and risk2 (no limit set) use the robust covariance of a sample of ",
         format(x$rmd_records, big.mark = ","), " records taken by their values; risk_rmd() measures all.",
         exdent = 2)
  }
  wrap("Stopped: ", x$stop)
  wrap("The limits cover the attacks of the verification battery for its intruder, not other attacks, ",
       "other background knowledge, attribute disclosure beyond the inference attack, or linking with ",
       "other releases. Meeting them does not prove the release safe.", exdent = 0)
  invisible(x)
}

#' Plot the risk-utility frontier of a release search
#'
#' One point per candidate of [tune_release()]: its worst one-record attack over the
#' search attacks (x axis, the largest success rate, see [risk_battery()]) against its
#' loss (y axis, the `objective`, on a log scale). How to read it:
#' * the colour gives the family of the candidate (fixed `k`, `k` per stratum, adaptive
#'   `k`, MDAV, stirred, (k, epsilon));
#' * a filled point meets every limit of the search, an open point misses at least one
#'   (not only the `worst` limit: a point left of the dotted line may miss the top-m limit);
#' * a cross over a point marks a candidate that met the search limits but failed the
#'   verification on the whole battery;
#' * the dotted vertical line is the `worst` limit;
#' * the dashed line joins the frontier: the candidates that no other candidate beats on
#'   both axes (lower risk *and* lower loss). A point above it is dominated;
#' * the star marks the chosen release: the candidate of least loss that met the limits on
#'   the search and on the verification.
#'
#' @param x A `detanon_tuned` object from [tune_release()].
#' @param ... Further arguments to [graphics::plot()] (e.g. `ylim`).
#' @return `x`, invisibly.
#' @family reports
#' @export
plot.detanon_tuned <- function(x, ...) {
  t <- x$tried
  if (!nrow(t)) {
    stop_arg("`x` holds no candidate to plot: the search could not start (see its `stop`).", kind = "data")
  }
  reg <- method_registry()
  fam <- vapply(reg, `[[`, "", "colour")
  col <- fam[t$method]
  pch <- ifelse(t$meets, 19, 1)
  graphics::plot(t$worst, t$loss, col = col, pch = pch, log = "y",
                 xlab = "worst one-record attack (search)", ylab = paste0("loss (", x$objective, ")"),
                 main = "Risk-utility frontier", ...)
  f <- x$frontier
  graphics::lines(f$worst, f$loss, col = "firebrick", lty = 2)
  graphics::abline(v = x$limits$worst, lty = 3)
  bad <- t$verified %in% FALSE
  if (any(bad)) graphics::points(t$worst[bad], t$loss[bad], pch = 4, cex = 1.6)
  if (!is.null(x$chosen)) graphics::points(x$chosen$worst, x$chosen$loss, pch = 8, cex = 2)
  shown <- names(fam) %in% t$method
  graphics::legend("topright", bty = "n", pch = c(rep(19, sum(shown)), 1, 4, 8, NA, NA),
                   lty = c(rep(NA, sum(shown) + 3L), 2, 3),
                   col = c(fam[shown], "grey30", "black", "black", "firebrick", "black"),
                   legend = c(vapply(reg, `[[`, "", "legend")[shown], "misses a limit",
                              "fails verification", "chosen", "frontier", "worst limit"))
  invisible(x)
}
