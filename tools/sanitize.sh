#!/usr/bin/env bash
# Memory-safety checks of the C code, run by CI after `make check`:
#  1. a build with AddressSanitizer + UndefinedBehaviorSanitizer (abort on the first report)
#     running the test files that exercise native code;
#  2. a build without OpenMP running the same files (the serial fallback must agree);
#  3. valgrind memcheck with leak checking on tools/valgrind-smoke.R, which calls every
#     native entry point: no memory error and no definitely lost block.
# R itself is not instrumented, so libasan is preloaded and leak detection is left to
# valgrind: LeakSanitizer would report R's own allocations.
set -euo pipefail
cd "$(dirname "$0")/.."
files='anonymise|adaptive|risk|keps|mondrian|fuzz|invariants|strata|stir|ola|tune|battery|attack|intruder|keyed|centroid_noise'
work=$(mktemp -d)
trap 'rm -rf "$work"; rm -f src/*.o src/*.so' EXIT

run_tests() { # $1 = library, rest = env
  local lib=$1; shift
  env "$@" R_LIBS="$lib" NOT_CRAN=true Rscript -e "
    res <- as.data.frame(testthat::test_dir('tests/testthat', filter = '$files', package = 'detanon',
                                            load_package = 'installed', stop_on_failure = FALSE,
                                            reporter = 'summary'))
    failed <- sum(res\$failed) + sum(res\$error)
    cat(sprintf('sanitize: %d expectations, %d failed\n', sum(res\$nb), failed))
    if (failed > 0) quit(status = 1)"
}

echo "== AddressSanitizer + UndefinedBehaviorSanitizer"
cat > "$work/Makevars.asan" <<'MK'
CFLAGS = -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDFLAGS = -fsanitize=address,undefined
MK
mkdir -p "$work/lib-asan"
asan_preload="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
LD_PRELOAD="$asan_preload" ASAN_OPTIONS=detect_leaks=0 R_MAKEVARS_USER="$work/Makevars.asan" \
  R CMD INSTALL --preclean -l "$work/lib-asan" . > "$work/install-asan.log" 2>&1 \
  || { tail -30 "$work/install-asan.log"; exit 1; }
if ! grep -q -- "-fsanitize=address,undefined" "$work/install-asan.log"; then
  echo "sanitize: the sanitizer flags did not reach the compiler"; exit 1
fi
# alloc_dealloc_mismatch=0: sdcMicro's C++ (Suda2.h, called by the tests that compare with
# it) frees memory of new[] with delete; the package's C allocates no C++ memory, so the
# check cannot concern it.
run_tests "$work/lib-asan" LD_PRELOAD="$asan_preload" \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:alloc_dealloc_mismatch=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

echo "== without OpenMP"
cat > "$work/Makevars.noomp" <<'MK'
SHLIB_OPENMP_CFLAGS =
MK
mkdir -p "$work/lib-noomp"
R_MAKEVARS_USER="$work/Makevars.noomp" R CMD INSTALL --preclean -l "$work/lib-noomp" . \
  > "$work/install-noomp.log" 2>&1 || { tail -30 "$work/install-noomp.log"; exit 1; }
if grep -q -- "-fopenmp" "$work/install-noomp.log"; then echo "sanitize: OpenMP was not disabled"; exit 1; fi
run_tests "$work/lib-noomp"
echo "== valgrind memcheck"
mkdir -p "$work/lib-plain"
R CMD INSTALL --preclean -l "$work/lib-plain" . > "$work/install-plain.log" 2>&1 \
  || { tail -30 "$work/install-plain.log"; exit 1; }
if ! R_LIBS="$work/lib-plain" R -d "valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=3" \
     --vanilla --no-echo -f tools/valgrind-smoke.R > "$work/valgrind.log" 2>&1 \
   || ! grep -q "valgrind-smoke: done" "$work/valgrind.log"; then
  grep -E "^==[0-9]+==" "$work/valgrind.log" | head -60; exit 1
fi
grep -E "ERROR SUMMARY|definitely lost" "$work/valgrind.log"
echo "sanitize: clean"
