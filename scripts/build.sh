#!/usr/bin/env bash
#===- scripts/build.sh - Set up and build ga-opt ---------------------------===#
#
# Runs scripts/setup.sh, then builds every target (ga-opt, the plugin, the
# unit tests) with ninja, $GA_JOBS jobs (default 2), and prints the time and
# the compiler cache's hit rate of this build.
#
# The compiler cache (ccache) is keyed independently of where the checkout
# lies: the build's compiler launcher (CMakeLists.txt) sets its base
# directory to the checkout's root and leaves the working directory out of
# the hashes. A fresh clone of a commit that any checkout on this machine
# has built compiles from the cache (scripts/check_build_cache.sh measures
# it with two clones).
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/build_dir.sh"

"$ROOT/scripts/setup.sh"

# This build's own counters (ccache's global ones mix every build).
export CCACHE_STATSLOG="$BUILD_DIR/ccache-stats.log"
rm -f "$CCACHE_STATSLOG"

start=$(date +%s)
ninja -C "$BUILD_DIR" -j"${GA_JOBS:-2}" all ga-test-depends
echo "build: done in $(( $(date +%s) - start )) s"
# One record per compiler call: "# source" and its counters.
if [[ -s "$CCACHE_STATSLOG" ]]; then
  awk '/^# /{n++} /^(direct|preprocessed)_cache_hit$/{h++} /^cache_miss$/{m++}
       END{printf "build: compiler cache: %d hits, %d misses of %d compilations (%.1f%% hits)\n",
                  h, m, h+m, (h+m) ? 100*h/(h+m) : 0}' "$CCACHE_STATSLOG"
elif command -v ccache >/dev/null; then
  echo "build: compiler cache: nothing compiled"
else
  echo "build: compiler cache: ccache not found (every object compiled)"
fi
