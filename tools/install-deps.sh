#!/usr/bin/env bash
# Installs everything detanon needs to build, check and test, from the project's own lists:
# Debian packages (tools/debian-packages.txt: R packages built for Debian, pandoc for the
# vignettes, qpdf and tidy for R CMD check --as-cran), then the suggested CRAN packages that
# Debian does not ship (tools/install-cran.R). Safe to run again: it installs only what is
# missing, says what that is, and is quiet when nothing is. On any failure it prints the
# reason (the tail of the apt or R log) and exits non-zero.
#
# Works on a machine that has none, some or all of the packages. tests/setup/test-install-deps.sh
# runs it against stub dpkg-query/apt-get/Rscript commands to prove that.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "install-deps: $*"; }
die() { say "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo > /dev/null || die "not root and no sudo: run as root or install sudo"
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

wanted=$(grep -v '^[[:space:]]*#' tools/debian-packages.txt | tr -s ' \t' '\n' | grep . | sort -u)

# dpkg-query exits 1 when any named package is unknown (never installed): that is the normal
# case on a fresh machine, not an error, so its status is ignored and its output read.
installed=$(dpkg-query -W -f='${db:Status-Status} ${Package}\n' $wanted 2> /dev/null || true)
installed=$(printf '%s\n' "$installed" | awk '$1 == "installed" {print $2}' | sed 's/:.*//' | sort -u)
need=$(comm -23 <(printf '%s\n' "$wanted") <(printf '%s\n' "$installed") | tr '\n' ' ' | sed 's/ *$//')

if [ -n "$need" ]; then
  say "installing $(wc -w <<< "$need") Debian packages: $need"
  log=$(mktemp /tmp/detanon-apt.XXXXXX)
  if ! { $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends $need; } \
       > "$log" 2>&1; then
    tail -n 25 "$log" >&2
    die "apt-get failed (full log: $log)"
  fi
  rm -f "$log"
  say "Debian packages installed"
fi

Rscript tools/install-cran.R
