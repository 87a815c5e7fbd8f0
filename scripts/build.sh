#!/usr/bin/env bash
#===- scripts/build.sh - Set up and build ga-opt ---------------------------===#
#
# Runs scripts/setup.sh, then builds every target (ga-opt, the plugin, the
# unit tests) with ninja, $GA_JOBS jobs (default 2).
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${GA_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/setup.sh"
start=$(date +%s)
ninja -C "$BUILD_DIR" -j"${GA_JOBS:-2}" all ga-test-depends
echo "build: done in $(( $(date +%s) - start )) s"
