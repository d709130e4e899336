#!/usr/bin/env bash
# Tests the set-up path (tools/install-deps.sh) without touching the machine: stub dpkg-query,
# apt-get, sudo and Rscript commands go first on PATH and record how they were called. Cases:
#   - a fresh machine (no listed Debian package installed): apt-get install gets every package, exit 0;
#   - some installed: apt-get install gets exactly the missing ones;
#   - all installed: apt-get is not called and the script prints nothing;
#   - apt-get fails: the script exits non-zero and shows the tail of the apt log;
#   - not root and no sudo: a clear message, exit non-zero.
# Usage: bash tests/setup/test-install-deps.sh [SCRIPT]   (default tools/install-deps.sh)
# Prints one line "setup: N passed, N failed" and exits non-zero when any check failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$(cd "$(dirname "${1:-$root/tools/install-deps.sh}")" && pwd)/$(basename "${1:-tools/install-deps.sh}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0; failed=0
ok()   { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL [$case]: $*"; }

wanted=$(grep -v '^[[:space:]]*#' "$root/tools/debian-packages.txt" | tr -s ' \t' '\n' | grep . | sort -u)
n_wanted=$(wc -l <<< "$wanted")

# A copy of the repository's tools/ so the script runs from its own layout with a stub R step.
mkdir -p "$work/repo/tools" "$work/bin"
cp "$script" "$work/repo/tools/install-deps.sh"
cp "$root/tools/debian-packages.txt" "$work/repo/tools/"
echo '# stub' > "$work/repo/tools/install-cran.R"

# Stubs. $STUB_INSTALLED names the packages the fake dpkg database has; like the real dpkg-query
# -W, the stub prints the known ones and exits 1 when any named package is unknown.
cat > "$work/bin/dpkg-query" <<'STUB'
#!/usr/bin/env bash
echo "dpkg-query $*" >> "$STUB_LOG"
fmt=""; pkgs=()
while [ $# -gt 0 ]; do
  case "$1" in
    -W|--show) ;;
    -f) fmt=$2; shift ;;
    --showformat=*) fmt=${1#--showformat=} ;;
    -f*) fmt=${1#-f}; fmt=${fmt#=} ;;
    *) pkgs+=("$1") ;;
  esac
  shift
done
status=0
for p in "${pkgs[@]}"; do
  if grep -qx "$p" <<< "$STUB_INSTALLED"; then
    out=${fmt//'${db:Status-Status}'/installed}
    out=${out//'${Status}'/install ok installed}
    out=${out//'${Package}'/$p}
    printf '%b' "$out"
  else
    echo "dpkg-query: no packages found matching $p" >&2; status=1
  fi
done
exit $status
STUB
cat > "$work/bin/apt-get" <<'STUB'
#!/usr/bin/env bash
echo "apt-get $*" >> "$STUB_LOG"
if [ "${STUB_APT_FAIL:-}" = 1 ] && [ "$1" != update ]; then
  echo "E: Unable to locate package r-cran-imaginary"; exit 100
fi
echo "stub apt-get: $1 done"
STUB
cat > "$work/bin/Rscript" <<'STUB'
#!/usr/bin/env bash
echo "Rscript $*" >> "$STUB_LOG"
STUB
cat > "$work/bin/sudo" <<'STUB'
#!/usr/bin/env bash
echo "sudo $*" >> "$STUB_LOG"
"$@"
STUB
chmod +x "$work/bin/"*

# run_case NAME INSTALLED [ENV...]: runs the script, leaves $out, $status and $log.
run_case() {
  case=$1; local installed=$2; shift 2
  log="$work/$case.calls"; : > "$log"
  out=$(env PATH="$work/bin:$PATH" STUB_LOG="$log" STUB_INSTALLED="$installed" "$@" \
        bash "$work/repo/tools/install-deps.sh" 2>&1)
  status=$?
}
apt_install_args() { grep '^apt-get install' "$log" | tr ' ' '\n' | grep -v -e '^-' -e '^apt-get$' -e '^install$' | sort; }

run_case fresh ""
[ "$status" -eq 0 ] && ok || fail "exit status $status, output: $out"
[ "$(apt_install_args)" = "$wanted" ] && ok || fail "apt-get install did not get all $n_wanted packages"
grep -q '^apt-get update' "$log" && ok || fail "apt-get update was not run"
grep -q "installing $n_wanted Debian packages" <<< "$out" && ok || fail "does not say what it installs: $out"
grep -q '^Rscript tools/install-cran.R' "$log" && ok || fail "the CRAN step did not run"

some=$(head -n 5 <<< "$wanted"); missing=$(tail -n +6 <<< "$wanted")
run_case some "$some"
[ "$status" -eq 0 ] && ok || fail "exit status $status, output: $out"
[ "$(apt_install_args)" = "$missing" ] && ok || fail "apt-get install got other packages than the missing ones"

run_case all "$wanted"
[ "$status" -eq 0 ] && ok || fail "exit status $status, output: $out"
grep -q '^apt-get' "$log" && fail "apt-get was called although everything is installed" || ok
[ -z "$out" ] && ok || fail "not quiet when everything is installed: $out"
grep -q '^Rscript tools/install-cran.R' "$log" && ok || fail "the CRAN step did not run"

run_case aptfail "" STUB_APT_FAIL=1
[ "$status" -ne 0 ] && ok || fail "exit status 0 although apt-get failed"
grep -q 'Unable to locate package' <<< "$out" && ok || fail "the apt log tail is not shown: $out"
grep -q '^Rscript' "$log" && fail "went on after apt-get failed" || ok

# Not root: sudo is used when present; a clear message when it is not.
if [ "$(id -u)" -eq 0 ]; then
  printf '#!/usr/bin/env bash\necho 1000\n' > "$work/bin/id"; chmod +x "$work/bin/id"
  run_case sudo ""
  [ "$status" -eq 0 ] && grep -q '^sudo apt-get install' "$log" && ok || fail "did not use sudo when not root"
  mv "$work/bin/sudo" "$work/sudo.off"
  mkdir -p "$work/nosudo"
  for t in bash env dirname grep tr sort comm awk sed wc mktemp cat tail rm head printf; do
    p=$(command -v "$t") && ln -sf "$p" "$work/nosudo/$t"
  done
  case=nosudo; log="$work/nosudo.calls"; : > "$log"
  out=$(env PATH="$work/bin:$work/nosudo" STUB_LOG="$log" STUB_INSTALLED="" \
        "$(command -v bash)" "$work/repo/tools/install-deps.sh" 2>&1); status=$?
  [ "$status" -ne 0 ] && grep -q 'sudo' <<< "$out" && ok || fail "no clear message without root or sudo: $out"
  rm -f "$work/bin/id"
fi

echo "setup: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
