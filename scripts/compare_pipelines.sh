#!/usr/bin/env bash
#===- scripts/compare_pipelines.sh - Same IR from two ga-opt builds -------===#
#
# For a restructuring that must not change what the compiler produces: runs
# two ga-opt binaries (an old build, a new one) on the examples' pipelines
# under memory budgets (the CPU and CUDA targets, budgets that checkpoint
# units, choose-microbatches=true, host offload, bf16-mixed; attention raised; the
# CUDA target's fusions on and off) and compares the IR
# (gpu.binary's timing properties aside) and the remarks (times aside).
# Prints one line per pipeline and "compare: N same, N differ"; exits 1
# when one differs.
#
#   scripts/compare_pipelines.sh OLD/bin/ga-opt NEW/bin/ga-opt [OUT_DIR]
#
# An old build: git worktree add /tmp/old REV && cmake -G Ninja -S /tmp/old
# -B /tmp/old/build -DCMAKE_BUILD_TYPE=Release
# -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir && ninja -C /tmp/old/build
# ga-opt (the compiler cache makes it quick).
#
#===----------------------------------------------------------------------===#
set -uo pipefail
old=$1; new=$2; out=${3:-$(mktemp -d)}; rm -rf "$out"; mkdir -p "$out"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
strip() { sed -E 's/[0-9]+\.[0-9]+ s\b/T s/g; s/in [0-9.]+ s/in T s/g'; }
cases=(
 "mlp-cpu-170k|examples/mlp.mlir|memory-budget=170000"
 "mlp-cpu-160k-auto|examples/mlp.mlir|memory-budget=160000 choose-microbatches=true"
 "gpt-cpu-250k|examples/tiny_gpt.mlir|memory-budget=250000"
 "gpt-cpu-300k|examples/tiny_gpt.mlir|memory-budget=300000"
 "gpt-cpu-200k-auto|examples/tiny_gpt.mlir|memory-budget=200000 choose-microbatches=true"
 "gpttrain-cpu-9m|examples/tiny_gpt_train.mlir|memory-budget=9000000"
 "gpttrain-cpu-8m-auto|examples/tiny_gpt_train.mlir|memory-budget=8000000 choose-microbatches=true"
 "mlp-cpu-300k|examples/mlp.mlir|memory-budget=300000"
 "mlp-cpu-190k-auto|examples/mlp.mlir|memory-budget=190000 choose-microbatches=true"
 "mlp-cpu-200k|examples/mlp.mlir|memory-budget=200000"
 "gpt-cpu-a|examples/tiny_gpt.mlir|memory-budget=3000000 choose-microbatches=true"
 "gpt-cpu-b|examples/tiny_gpt.mlir|memory-budget=1500000"
 "gpt-cpu-c|examples/tiny_gpt.mlir|memory-budget=2200000"
 "gpttrain-cpu|examples/tiny_gpt_train.mlir|memory-budget=4000000 choose-microbatches=true"
 "mlptrain-cuda|examples/mlp_train.mlir|target=cuda check-labels=false memory-budget=33870000"
 "gpt-cuda|examples/tiny_gpt.mlir|target=cuda check-labels=false memory-budget=36000000 choose-microbatches=true"
 "gpt-cuda-offload|examples/tiny_gpt.mlir|target=cuda check-labels=false memory-budget=33950000 host-offload=true offload-min-bytes=0"
 "gpt-cuda-bf16|examples/tiny_gpt.mlir|target=cuda precision=bf16-mixed memory-budget=35000000"
 "gpt-cpu-attention|examples/tiny_gpt.mlir|attention-key-tile=8"
 "gpt-cuda-attention|examples/tiny_gpt.mlir|target=cuda attention-key-tile=8"
 "gpt-cuda|examples/tiny_gpt.mlir|target=cuda"
 "gpttrain-cuda|examples/tiny_gpt_train.mlir|target=cuda"
 "gpt-cuda-nofusion|examples/tiny_gpt.mlir|target=cuda gpu-fusion=false"
)
same=0; differ=0
for c in "${cases[@]}"; do
  IFS='|' read -r name file opts <<< "$c"
  for which in old new; do
    bin=$old; [[ $which == new ]] && bin=$new
    $bin "$file" --ga-pipeline="$opts" -o $out/$name.$which.mlir 2> $out/$name.$which.err; echo "exit $?" >> $out/$name.$which.err
    strip < $out/$name.$which.err > $out/$name.$which.errs
    sed -E 's/properties = \{[^}]*\}//g' $out/$name.$which.mlir > $out/$name.$which.mlirs
  done
  if cmp -s $out/$name.old.mlirs $out/$name.new.mlirs && cmp -s $out/$name.old.errs $out/$name.new.errs; then
    same=$((same+1)); echo "same: $name ($(grep -o 'microbatches [0-9]* chosen\|[0-9]* checkpoints over' $out/$name.new.err | head -2 | tr '\n' ' ')$(tail -1 $out/$name.new.err))"
  else
    differ=$((differ+1)); echo "DIFFER: $name"; diff $out/$name.old.errs $out/$name.new.errs | head -5
  fi
done
echo "compare: $same same, $differ differ"
[[ $differ == 0 ]]
