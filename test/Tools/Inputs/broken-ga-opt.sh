#!/usr/bin/env bash
# A ga-opt that miscompiles on purpose, for difftest.test: with fuse=false
# in the pipeline's options, every arith.subf of the input becomes an
# arith.addf before the real ga-opt ($GA_REAL_OPT) compiles it.
set -euo pipefail
args=()
broken=0
for a in "$@"; do
  [[ "$a" == --ga-pipeline=*fuse=false* ]] && broken=1
  args+=("$a")
done
if ((broken)); then
  tmp="$(mktemp)"
  trap 'rm -f "$tmp"' EXIT
  sed 's/arith\.subf/arith.addf/g' "${args[0]}" > "$tmp"
  args[0]="$tmp"
fi
"$GA_REAL_OPT" "${args[@]}"
