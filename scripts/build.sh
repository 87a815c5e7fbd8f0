#!/usr/bin/env bash
#===- scripts/build.sh - Set up and build ga-opt ---------------------------===#
#
# Runs scripts/setup.sh, then builds every target (ga-opt, the plugin, the
# unit tests) with ninja, $GA_JOBS jobs (default 2).
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# GA_SANITIZE=address,undefined builds an instrumented copy in its own
# directory (build-sanitize/ unless GA_BUILD_DIR says otherwise).
if [[ -n "${GA_SANITIZE:-}" ]]; then
  BUILD_DIR="${GA_BUILD_DIR:-$ROOT/build-sanitize}"
else
  BUILD_DIR="${GA_BUILD_DIR:-$ROOT/build}"
fi

"$ROOT/scripts/setup.sh"
start=$(date +%s)
ninja -C "$BUILD_DIR" -j"${GA_JOBS:-2}" all ga-test-depends
echo "build: done in $(( $(date +%s) - start )) s"
