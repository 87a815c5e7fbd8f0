#!/usr/bin/env bash
#===- scripts/demo.sh - The main job: build ga-opt and run it on the examples =#
#
# Sets up and builds (scripts/build.sh), then, for each example training step
# under examples/, verifies it with ga-opt and prints a summary of it; shows
# the same step read by Debian's stock mlir-opt through the ga-opt plugin;
# and shows the diagnostic ga-opt gives for a schedule that does not divide
# the batch.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${GA_BUILD_DIR:-$ROOT/build}"
GA_OPT="$BUILD_DIR/bin/ga-opt"
PLUGIN="$BUILD_DIR/lib/libGaPlugin.so"
MLIR_OPT=/usr/lib/llvm-22/bin/mlir-opt

"$ROOT/scripts/build.sh"
cd "$ROOT"

rule() { printf '\n== %s ==\n' "$*"; }

for example in examples/mlp.mlir examples/tiny_gpt.mlir; do
  rule "ga-opt --train-print-summary $example"
  start=$(date +%s%N)
  "$GA_OPT" --train-print-summary -o /dev/null "$example"
  echo "  parsed and verified in $(( ($(date +%s%N) - start) / 1000000 )) ms"
done

rule "Debian's mlir-opt with the ga-opt plugin reads examples/mlp.mlir"
"$MLIR_OPT" --load-dialect-plugin="$PLUGIN" examples/mlp.mlir \
  | grep -E 'train\.(step|cross_entropy)' | cut -c1-110 | sed 's/$/ .../'

rule "A schedule that does not divide the batch is rejected (microbatches = 3, B = 8)"
bad="$(mktemp --suffix=.mlir)"
trap 'rm -f "$bad"' EXIT
sed 's|      -> tensor<f32>$|      attributes {microbatches = 3 : i64} -> tensor<f32>|' \
  examples/mlp.mlir > "$bad"
{ "$GA_OPT" "$bad" -o /dev/null 2>&1 || true; } | head -1 \
  | sed "s|$bad|mlp-with-3-microbatches.mlir|"
if "$GA_OPT" "$bad" -o /dev/null 2>/dev/null; then
  echo "demo: error: the invalid schedule was accepted" >&2
  exit 1
fi

rule "done"
echo "Next: scripts/test.sh runs every test; docs/generated/ is the reference."
