#!/usr/bin/env bash
#===- scripts/check_build_cache.sh - The build cache across clones --------===#
#
# Clones this checkout's HEAD twice, into two directories of different names
# and depths, and builds each with scripts/build.sh. The second build must
# take at least GA_MIN_HIT_PERCENT (default 90) percent of its compilations
# from the compiler cache, which the first one filled (or found filled):
# ccache must not key on where a checkout lies. Prints both builds' times and
# hit rates; exits non-zero when the second falls short. Takes one full build
# when the cache is empty, about a minute per clone when it is not.
#
#   scripts/check_build_cache.sh [GA_SANITIZE=... in the environment]
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MIN="${GA_MIN_HIT_PERCENT:-90}"
work="$(mktemp -d /tmp/ga-cache-check.XXXXXX)"
trap 'rm -rf "$work"' EXIT

rate=""
for clone in "$work/first" "$work/second/deeper/clone"; do
  mkdir -p "$(dirname "$clone")"
  git clone -q "$ROOT" "$clone"
  echo "check-build-cache: building $clone"
  log="$work/$(basename "$clone").log"
  env -u GA_BUILD_DIR "$clone/scripts/build.sh" >"$log" 2>&1 || {
    tail -30 "$log"
    echo "check-build-cache: error: the build in $clone failed" >&2
    exit 1
  }
  grep '^build:' "$log" | sed "s|^|  $(basename "$clone"): |"
  rate="$(sed -n 's/^build: compiler cache: .*(\([0-9.]*\)% hits)$/\1/p' "$log")"
done

if [[ -z "$rate" ]]; then
  echo "check-build-cache: error: the second build printed no hit rate" >&2
  exit 1
fi
if awk -v r="$rate" -v m="$MIN" 'BEGIN { exit !(r >= m) }'; then
  echo "check-build-cache: ok: the second clone took $rate% from the cache" \
       "(at least $MIN%)"
else
  echo "check-build-cache: FAIL: the second clone took $rate% from the" \
       "cache (at least $MIN% expected)" >&2
  exit 1
fi
