#!/usr/bin/env bash
#===- scripts/demo.sh - The main job: build ga-opt and run it on the examples =#
#
# Sets up and builds (scripts/build.sh), then compiles examples/mlp.mlir for
# the CPU (--ga-pipeline=target=cpu: differentiate, bufferize, lower to LLVM)
# and runs one training step with ga-run on generated data with padding,
# printing the loss and the gradient norm; prints the table of batch splits
# (ranks under mpirun x micro-batches, naive vs exact). Then, for each
# example, prints a
# summary; fits the MLP step into memory budgets (checkpoints planned, then
# the micro-batch count chosen too, with the measured peak); shows the step
# read by Debian's stock mlir-opt through the ga-opt
# plugin; shows the diagnostic for a schedule that does not divide the
# batch; runs a short training run of the tiny GPT on real text (ga-train)
# under several schedules, naive vs exact, as a table; and ends with a
# PyTorch user's run: the ga_opt package installed into the front end's
# environment (pip install .), and a transformers GPT-2 trained on the
# corpus through ga_opt.compile_step with 4 exact micro-batches, beside
# PyTorch's full batch and its usual accumulation (examples/pytorch_loop.py;
# on the CPU, and on CUDA where a GPU is present). Without the front end
# (GA_NO_FRONTEND) that last part is skipped, saying so.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${GA_BUILD_DIR:-$ROOT/build}"
GA_OPT="$BUILD_DIR/bin/ga-opt"
GA_RUN="$BUILD_DIR/bin/ga-run"
PLUGIN="$BUILD_DIR/lib/libGaPlugin.so"
MLIR_OPT=/usr/lib/llvm-22/bin/mlir-opt

"$ROOT/scripts/build.sh"
cd "$ROOT"

rule() { printf '\n== %s ==\n' "$*"; }

# Debian's python3-numpy is installed for /usr/bin/python3.
PYTHON=/usr/bin/python3
[[ -x "$PYTHON" ]] || PYTHON=python3

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

rule "One training step of examples/mlp.mlir on the CPU"
"$PYTHON" scripts/mlp_data.py "$work/data"
"$GA_RUN" examples/mlp.mlir "$work"/data/{w1,b1,w2,x,labels}.npy \
  --out-dir "$work/out"
echo "(results: loss, d/dw1, d/db1, d/dw2, valid count as .npy;"
echo " the same with your data: ga-run examples/mlp.mlir W1 B1 W2 X LABELS --out-dir DIR)"

rule "Ranks x micro-batches of examples/mlp.mlir: naive vs exact (same global batch B = 8)"
"$PYTHON" scripts/split_table.py "$work/data" --ga-run "$GA_RUN"
echo "(naive: each micro-batch divides by its own token count, ranks average;"
echo " exact: ga-opt's default, one global count summed across ranks (MPI),"
echo " in-place accumulation: micro-batches alone give bitwise the full batch)"

rule "A memory budget: rematerialization and the micro-batch count chosen by ga-opt"
mlp_args=("$work"/data/{w1,b1,w2,x,labels}.npy)
peak_of() { grep -E '^budget_peak_bytes:' | sed -E 's/^budget_peak_bytes: ([0-9]+).*/\1/'; }
plain=$("$GA_RUN" examples/mlp.mlir "${mlp_args[@]}" | peak_of)
smallest=$({ "$GA_RUN" examples/mlp.mlir "${mlp_args[@]}" --memory-budget=1 2>&1 || true; } \
  | sed -nE 's/.*the smallest peak the planner reaches is ([0-9]+) bytes.*/\1/p')
if [[ -z "$plain" || -z "$smallest" ]]; then
  echo "demo: error: no peak or smallest budget from ga-run" >&2
  exit 1
fi
budget=$(( (plain + smallest) / 2 ))
echo "unplanned peak (step buffers + arguments): $plain bytes;" \
  "smallest budget one micro-batch fits with checkpoints: $smallest bytes"
echo "-- budget $budget bytes: fits only with rematerialization"
"$GA_RUN" examples/mlp.mlir "${mlp_args[@]}" --report-memory \
  --memory-budget=$budget 2>&1 | grep -E 'remark|^budget_peak_bytes|^loss' \
  | sed -E 's/^.*remark: //; s/^/  /'
tight=$(( smallest * 9 / 10 ))
echo "-- budget $tight bytes: below what one micro-batch reaches; ga-opt chooses k"
"$GA_RUN" examples/mlp.mlir "${mlp_args[@]}" --report-memory \
  --memory-budget=$tight --choose-microbatches 2>&1 \
  | grep -E 'remark|^budget_peak_bytes|^loss' | sed -E 's/^.*remark: //; s/^/  /'
echo "(the loss is the full batch's, bit for bit: checkpoints recompute, the"
echo " split is exact; budget_peak_bytes is what the runtime counted)"

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
bad="$work/mlp-with-3-microbatches.mlir"
sed 's|      -> tensor<f32>$|      attributes {microbatches = 3 : i64} -> tensor<f32>|' \
  examples/mlp.mlir > "$bad"
{ "$GA_OPT" "$bad" -o /dev/null 2>&1 || true; } | head -1 \
  | sed "s|$bad|mlp-with-3-microbatches.mlir|"
if "$GA_OPT" "$bad" -o /dev/null 2>/dev/null; then
  echo "demo: error: the invalid schedule was accepted" >&2
  exit 1
fi

rule "Training the tiny GPT on real text: ga-train, naive vs exact schedules"
# Debian's fortunes collection as byte sequences padded to 64 (scripts/setup.sh
# installs the package); 20 AdamW steps per schedule of the same global batch.
"$PYTHON" scripts/make_corpus.py --out "$work/corpus" --seq-len 64
reproduce=("$PYTHON" scripts/reproduce.py --ga-train "$BUILD_DIR/bin/ga-train"
  --data "$work/corpus" --out "$work/train" --steps 20 --check)
if ! command -v mpirun >/dev/null; then
  reproduce+=(--mpirun "")
fi
"${reproduce[@]}" | sed -n '/^20 steps/,$p'
echo "(the full run, 300 steps with plots: python3 scripts/reproduce.py"
echo " --plot docs/train_curves.png --table docs/train_table.md; one command"
echo " trains and logs: ga-train examples/tiny_gpt_train.mlir --data DIR ...)"

rule "From PyTorch: a transformers GPT-2 trained through ga_opt.compile_step"
FRONTEND=$("$ROOT/scripts/setup_frontend.sh" --locate)
if [[ -z "$FRONTEND" ]]; then
  echo "(skipped: no front-end environment; scripts/setup_frontend.sh makes it)"
else
  echo "\$ \$PY -m pip install ."
  "$FRONTEND" -m pip install -q --disable-pip-version-check . 2>&1 \
    | grep -v '^ga-opt build:' || true
  "$PYTHON" scripts/make_corpus.py --out "$work/corpus32" --seq-len 32 \
    --attention-mask
  echo "\$ \$PY examples/pytorch_loop.py --data corpus --steps 10"
  (cd "$work" && "$FRONTEND" "$ROOT/examples/pytorch_loop.py" \
    --data "$work/corpus32" --steps 10 2>&1 | grep -v 'Model config')
  echo "(three lines of the script are ga-opt's: import ga_opt, compile_step,"
  echo " step(batch); the split is the full batch's, the usual accumulation"
  echo " is not; a second run loads the compiled step from ~/.cache/ga-opt)"
fi

rule "done"
echo "Next: scripts/test.sh runs every test; scripts/bench.py measures the CPU"
echo "pipeline and step; docs/generated/ is the reference."
