// A module not bufferized yet is compiled on a copy first (ga-pipeline with
// buffers-only=true and the given options). The figures equal the runtime's
// count (test/Integration/memory-model.test); here: freeing buffers after
// their last use lowers the modelled peak of the MLP example, and the
// gradients (returned) are the same bytes either way.
// RUN: ga-opt %ga_src/examples/mlp.mlir --test-train-memory-model --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=EARLY
// RUN: ga-opt %ga_src/examples/mlp.mlir --test-train-memory-model="pipeline-options='release-buffers=false'" --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=LATE
// RUN: not ga-opt %ga_src/examples/mlp.mlir --test-train-memory-model="pipeline-options=bogus=1" --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// EARLY: mlp.mlir:17:1: remark: memory model: peak 147916 bytes, 18 allocations, 25164 bytes returned
// EARLY: note: alive at the peak: 32832 bytes in 1 buffer
// LATE: mlp.mlir:17:1: remark: memory model: peak 217580 bytes, 23 allocations, 25164 bytes returned
// BAD: error: test-train-memory-model: cannot build 'ga-pipeline{buffers-only=true bogus=1}'
