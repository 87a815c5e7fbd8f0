// train-plan-remat plan=...: a plan given by its checkpointed units is
// applied and measured instead of searched (how scripts/bench_remat.py
// checks the MILP's plans on the compiled step). Its peak is the one the
// search measures for the same plan (report-plans), it is applied
// (train.checkpoint regions), and a budget one byte below it is refused
// with the peak.
// RUN: ga-opt %ga_src/examples/tiny_gpt.mlir --train-plan-remat="memory-budget=330000 report-plans=true" --mlir-print-op-on-diagnostic=false -o /dev/null 2> %t.search
// RUN: ga-opt %ga_src/examples/tiny_gpt.mlir --train-plan-remat="memory-budget=330000 plan=2,6" --mlir-print-op-on-diagnostic=false -o %t.mlir 2> %t.given
// RUN: cat %t.search %t.given | FileCheck %s
// CHECK: plan {{[0-9]+}} at 1 micro-batch(es): 2 checkpoints over 2 units, recomputed [[SHARE:[0-9.]+]]%, pieces [2-2][6-6], model peak {{[0-9]+}} bytes, exact peak [[PEAK:[0-9]+]] bytes, fits
// CHECK: remark: train-plan-remat: budget 330000 bytes; 14 units; without new checkpoints {{[0-9]+}} bytes; 2 checkpoints over 2 units (recomputed [[SHARE]]% of the forward work); planned peak [[PEAK]] bytes
// RUN: FileCheck %s --check-prefix=APPLIED < %t.mlir
// APPLIED-COUNT-2: train.checkpoint
// APPLIED-NOT: train.checkpoint
// A range checkpoints its units as one segment.
// RUN: ga-opt %ga_src/examples/tiny_gpt.mlir --train-plan-remat="memory-budget=330000 plan=2-4" --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: 1 checkpoints over 3 units
// RUN: not ga-opt %ga_src/examples/tiny_gpt.mlir --train-plan-remat="memory-budget=262923 plan=2,6" --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=OVER
// OVER: error: train-plan-remat: plan='2,6' peaks at 262924 bytes, over the budget of 262923 bytes
// Malformed plans and plans with choose-microbatches=true are refused.
// RUN: not ga-opt %ga_src/examples/tiny_gpt.mlir --train-plan-remat="memory-budget=330000 plan=2-3,3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OVERLAP
// OVERLAP: error: train-plan-remat: plan='2-3,3': expected increasing, disjoint ranges of units 'a-b' or 'a' below 14 (the step's units), separated by commas; got '3'
// RUN: not ga-opt %ga_src/examples/tiny_gpt.mlir --train-plan-remat="memory-budget=330000 plan=14" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RANGEERR
// RANGEERR: got '14'
// RUN: not ga-opt %ga_src/examples/tiny_gpt.mlir --train-plan-remat="memory-budget=330000 plan=x" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NUMBER
// NUMBER: got 'x'
// RUN: not ga-opt %ga_src/examples/tiny_gpt.mlir --train-plan-remat="memory-budget=330000 plan=2 choose-microbatches=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=AUTO
// AUTO: error: train-plan-remat: plan='2' applies a plan at the step's micro-batch count; it cannot be given with choose-microbatches=true
