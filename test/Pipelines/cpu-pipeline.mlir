// RUN: ga-opt --ga-pipeline="target=cpu" %ga_src/examples/mlp.mlir | FileCheck %s
// RUN: ga-opt --ga-pipeline="target=cpu" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=VECTOR
// RUN: ga-opt --ga-pipeline="target=cpu vectorize=false" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=SCALAR
// RUN: ga-opt --ga-pipeline="target=cpu" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=KERNEL
// RUN: ga-opt --ga-pipeline="target=cpu outline=false" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=INLINE
// RUN: not ga-opt --ga-pipeline="target=tpu" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not ga-opt --ga-pipeline="precision=fp8" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=PRECISION
// PRECISION: for the --precision option: precision must be f32, bf16-mixed or bf16, got 'fp8'
// bf16-mixed runs ga-mixed-precision after train-lower-accumulate, before
// fusion; f32 (the default) does not run it.
// RUN: ga-opt --ga-pipeline="precision=bf16-mixed" --dump-pass-pipeline %ga_src/examples/mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=MIXED
// MIXED: train-lower-accumulate,
// MIXED-NEXT: canonicalize
// MIXED-NEXT: func.func(
// MIXED-NEXT: train-shard-accumulators{microbatch-shards=true only-where-smaller=true},
// MIXED-NEXT: train-gather-at-use
// MIXED-NEXT: ),
// MIXED-NEXT: ga-mixed-precision{round-results=false},
// MIXED-NEXT: ga-fuse-elementwise
// bf16 also marks the per-example reductions where it differentiates, and
// rounds the marked products' results.
// RUN: ga-opt --ga-pipeline="precision=bf16" --dump-pass-pipeline %ga_src/examples/mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=BF16
// BF16: train-differentiate{mark-per-example=true}
// BF16: ga-mixed-precision{round-results=true}
// RUN: ga-opt --ga-pipeline="target=cpu" --dump-pass-pipeline %ga_src/examples/mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=F32
// F32-NOT: ga-mixed-precision

// The whole step is in the LLVM dialect, and the entry function keeps its
// tensor signature and which results are the loss and the gradients.
// CHECK: llvm.func @mlp_step(
// CHECK-SAME: train.gradient_results = array<i64: 1, 2, 3>
// CHECK-SAME: train.loss_result = 0 : i64
// CHECK-SAME: train.signature = (tensor<32x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<8x16x32xf32>, tensor<8x16xi64>) -> (tensor<f32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<i64>)
// CHECK-NOT: {{= train\.|^ *train\.}}
// CHECK-NOT: linalg.
// CHECK-NOT: func.func

// Each distinct linalg operation is a kernel function that LLVM may not
// inline; the step calls it (ga-outline-kernels). outline=false keeps the
// operations in the step.
// KERNEL: llvm.func @mlp_step(
// KERNEL: llvm.call @ga_kernel_0(
// KERNEL: llvm.func internal @ga_kernel_0(
// KERNEL-SAME: passthrough = ["noinline"]
// KERNEL-SAME: train.kernel
// INLINE-NOT: ga_kernel

// The contractions become vector multiply-adds, unless vectorize=false.
// VECTOR: llvm.intr.fmuladd{{.*}} : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// SCALAR-NOT: vector<
// SCALAR: llvm.fmul
// SCALAR-NOT: vector<

// TARGET: for the --target option: target must be cpu or cuda, got 'tpu'
