#!/usr/bin/env bash
# Installs everything detanon needs to build, check and test, from the project's own lists:
# Debian packages (tools/debian-packages.txt: R packages built for Debian, pandoc for the
# vignettes, qpdf and tidy for R CMD check --as-cran), then the suggested CRAN packages that
# Debian does not ship (tools/install-cran.R). Safe to run again: it installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
pkgs=$(grep -v '^[[:space:]]*#' tools/debian-packages.txt | grep -v '^[[:space:]]*$' | tr '\n' ' ')
installed=$(dpkg-query -W -f='${Status} ${Package}\n' $pkgs 2>/dev/null | awk '$3 == "installed" {print $4}' | sort)
need=$(comm -23 <(echo "$pkgs" | tr ' ' '\n' | grep . | sort) <(echo "$installed"))
if [ -n "$need" ]; then
  echo "install-deps: installing $(echo "$need" | wc -l) Debian packages"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends $need > /tmp/detanon-apt.log 2>&1 \
    || { tail -20 /tmp/detanon-apt.log; exit 1; }
fi
Rscript tools/install-cran.R
