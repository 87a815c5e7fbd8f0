// REQUIRES: cuda-toolkit
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=isa" %ga_src/examples/mlp.mlir | FileCheck %s --implicit-check-not=llvm.load --implicit-check-not=llvm.store --implicit-check-not=_mlir_memref_to_llvm
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=isa chip=sm_80 ptx-features=+ptx75 gpu-block-size=128" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=SM80
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=isa gpu-tf32=true" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=TF32
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=isa gpu-bf16=true" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=BF16
// RUN: not ga-opt --ga-pipeline="target=cuda gpu-tf32=true gpu-bf16=true" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=PRECISION
// RUN: not ga-opt --ga-pipeline="target=cuda gpu-bf16=true memory-budget=100000000" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=BF16-BUDGET
// RUN: not ga-opt --ga-pipeline="target=cuda gpu-bf16=true precision=bf16-mixed" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=MIXED-BF16
// MIXED-BF16: ga-pipeline: precision=bf16-mixed with gpu-bf16: the products already read bfloat16 inputs
// RUN: not ga-opt --ga-pipeline="target=cuda gpu-tf32=true precision=bf16" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=BF16-TF32
// BF16-TF32: ga-pipeline: precision=bf16 with gpu-tf32: the products already read bfloat16 inputs
// RUN: ga-opt --ga-pipeline="target=cuda" --dump-pass-pipeline %ga_src/examples/mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=SPLIT-DEFAULT
// SPLIT-DEFAULT: ga-fuse-elementwise{into-reductions=true recompute-cheap=true}
// RUN: ga-opt --ga-pipeline="target=cuda gpu-split-min-threads=16384" --dump-pass-pipeline %ga_src/examples/mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=SPLIT-THREADS
// SPLIT-DEFAULT: ga-gpu-split-reductions{lanes=32 min-chunk=8 min-length=256 min-threads=262144}
// SPLIT-THREADS: ga-gpu-split-reductions{lanes=32 min-chunk=8 min-length=256 min-threads=16384}
// The CUDA target's fusion on by default; gpu-fusion=false turns it off
// (the MLP: 7 kernels a step with it, 18 without), gpu-row-fusion=false
// its row groups alone (8).
// RUN: ga-opt --ga-pipeline="target=cuda gpu-fusion=false" --dump-pass-pipeline %ga_src/examples/mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOFUSE
// RUN: ga-opt --ga-pipeline="target=cuda gpu-row-fusion=false" --dump-pass-pipeline %ga_src/examples/mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOROWS
// SPLIT-DEFAULT: ga-gpu-map-parallel-loops{block-size=256 fuse-loops=true fuse-rows=true vector-width=4}
// SPLIT-DEFAULT: ga-gpu-device-code{fuse-single-threads=true}
// SPLIT-DEFAULT-NEXT: ga-gpu-promote-accumulators
// SPLIT-DEFAULT-NEXT: ga-gpu-prefetch-gathers
// The gathers run ahead by default; not with gpu-prefetch-gathers=false, nor
// under a memory budget (whose plan does not count the buffer gathered ahead).
// RUN: ga-opt --ga-pipeline="target=cuda gpu-prefetch-gathers=false" --dump-pass-pipeline %ga_src/examples/mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOPREFETCH
// RUN: ga-opt --ga-pipeline="target=cuda memory-budget=100000000" --dump-pass-pipeline %ga_src/examples/mlp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOPREFETCH
// NOPREFETCH: ga-gpu-device-code
// NOPREFETCH-NOT: ga-gpu-prefetch-gathers
// NOFUSE: ga-fuse-elementwise{into-reductions=false recompute-cheap=false}
// NOFUSE: ga-gpu-map-parallel-loops{block-size=256 fuse-loops=false fuse-rows=false vector-width=4}
// NOFUSE: ga-gpu-device-code{fuse-single-threads=false}
// NOFUSE-NOT: ga-gpu-promote-accumulators
// NOROWS: ga-gpu-map-parallel-loops{block-size=256 fuse-loops=true fuse-rows=false vector-width=4}
// NOROWS: ga-gpu-device-code{fuse-single-threads=true}
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=none check-labels=false" %ga_src/examples/mlp.mlir | grep -c gpu.launch_func | FileCheck %s --check-prefix=FUSED
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=none check-labels=false gpu-fusion=false" %ga_src/examples/mlp.mlir | grep -c gpu.launch_func | FileCheck %s --check-prefix=UNFUSED
// FUSED: {{^}}7{{$}}
// UNFUSED: {{^}}18{{$}}
// The tiny GPT with its attention as written (attention=unfused): 72
// kernels a step, 117 without row groups, 204 without fusion (27 of its
// linalg operations are matrix products on cuBLAS; the logits' product
// starts from zero, its fill no kernel). By default the CUDA
// target raises the attention and computes it over one tile of the 16
// queries and keys (attention=tiles): 14 kernels more (the online
// softmax's running maxima, sums and rescalings, forward and backward).
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=none check-labels=false attention=unfused" %ga_src/examples/tiny_gpt.mlir | grep -c gpu.launch_func | FileCheck %s --check-prefix=GPT-FUSED
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=none check-labels=false gpu-fusion=false attention=unfused" %ga_src/examples/tiny_gpt.mlir | grep -c gpu.launch_func | FileCheck %s --check-prefix=GPT-UNFUSED
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=none check-labels=false gpu-row-fusion=false attention=unfused" %ga_src/examples/tiny_gpt.mlir | grep -c gpu.launch_func | FileCheck %s --check-prefix=GPT-NOROWS
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=none check-labels=false" %ga_src/examples/tiny_gpt.mlir | grep -c gpu.launch_func | FileCheck %s --check-prefix=GPT-DEFAULT
// GPT-FUSED: {{^}}72{{$}}
// GPT-UNFUSED: {{^}}204{{$}}
// GPT-NOROWS: {{^}}117{{$}}
// GPT-DEFAULT: {{^}}86{{$}}
// BF16-BUDGET: ga-pipeline: memory-budget with gpu-bf16: the runtime's bfloat16 copies of each product's operands are not in the memory model yet, so the budget could not be kept; precision=bf16-mixed makes the copies in the step, where the budget counts them
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=isa gpu-blas=false" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=NOBLAS
// RUN: ga-opt --ga-pipeline="target=cuda buffers-only=true" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=BUFFERS
// RUN: not ga-opt --ga-pipeline="target=cuda chip=gfx90a" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not ga-opt --ga-pipeline="target=cuda gpu-format=elf" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not ga-opt --ga-pipeline="target=cuda gpu-block-size=2048" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not ga-opt --ga-pipeline="target=cuda gpu-vector-width=8" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=WIDTH
// RUN: sed 's/batch(%%x, %%labels : tensor<8x16x32xf32>, tensor<8x16xi64>)/& attributes {data_parallel = 2 : i64}/' %ga_src/examples/mlp.mlir > %t.dp.mlir
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=isa" %t.dp.mlir | FileCheck %s --check-prefix=PARALLEL
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=none check-labels=false gpu-split-min-length=16 gpu-reduction-lanes=8" %ga_src/examples/tiny_gpt.mlir --mlir-print-ir-after=ga-gpu-split-reductions 2>&1 >/dev/null | FileCheck %s --check-prefix=LANES
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=none check-labels=false gpu-split-min-length=16 gpu-reduction-lanes=0" %ga_src/examples/tiny_gpt.mlir --mlir-print-ir-after=ga-gpu-split-reductions 2>&1 >/dev/null | FileCheck %s --check-prefix=NOLANES
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=none check-labels=false" %ga_src/examples/tiny_gpt.mlir | FileCheck %s --check-prefix=EPILOGUE
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=none check-labels=false gpu-bias-epilogue=false" %ga_src/examples/tiny_gpt.mlir | FileCheck %s --check-prefix=NOEPILOGUE

// gpu-reduction-lanes: the tiny GPT's row reductions over its 16 features
// (layer norms) read as [128, 2, 8] (row, step, lane) into [128, 8]
// partial results (row, lane), 8 lanes giving more threads than the 2
// chunks of 8 that a split in chunks would; with 0, chunks.
// LANES: tensor.expand_shape {{.*}} output_shape [128, 2, 8] : tensor<128x16xf32> into tensor<128x2x8xf32>
// LANES: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}} : tensor<128x2x8xf32>) outs(%{{.*}} : tensor<128x8xf32>)
// NOLANES-NOT: tensor<128x8xf32>
// gpu-bias-epilogue (on by default): each layer's first MLP product adds
// its bias in a cuBLASLt epilogue.
// EPILOGUE: llvm.func @ga_cuda_gemm_bias_f32(
// EPILOGUE-COUNT-2: llvm.call @ga_cuda_gemm_bias_f32(
// NOEPILOGUE-NOT: ga_cuda_gemm_bias_f32

// target=cuda: the host code is in the LLVM dialect and touches no step
// memory itself (no loads or stores: every operation is a kernel, and the
// scalars it branches on are read through the runtime); buffers are the
// CUDA runtime's device memory; each kernel is a gpu.binary for sm_90 with
// libdevice linked, here as PTX text (gpu-format=isa).
// CHECK-DAG: llvm.func @ga_cuda_alloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @ga_cuda_free(!llvm.ptr)
// CHECK-DAG: llvm.func @ga_cuda_read_i64(i64, i64) -> i64
// CHECK: llvm.func @mlp_step(
// CHECK-SAME: train.signature
// CHECK: llvm.call @ga_cuda_alloc
// CHECK: gpu.launch_func @mlp_step_kernel::@mlp_step_kernel
// CHECK: llvm.call @ga_cuda_read_i64
// CHECK: llvm.call @ga_report_error
// CHECK: llvm.call @ga_cuda_free
// CHECK: gpu.binary @mlp_step_kernel  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80", link = ["{{.*}}/nvvm/libdevice/libdevice.10.bc"]>, {{.*}}assembly = "
// CHECK-SAME: .version 8.0
// CHECK-SAME: .target sm_90

// SM80: gpu.binary @mlp_step_kernel  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx75"
// SM80-SAME: .target sm_80

// TF32: llvm.call @ga_cuda_gemm_f32_tf32
// BF16-NOT: llvm.call @ga_cuda_gemm_f32(
// BF16: llvm.call @ga_cuda_gemm_f32_bf16
// PRECISION: ga-pipeline: gpu-tf32 and gpu-bf16 exclude each other
// NOBLAS-NOT: ga_cuda_gemm
// NOBLAS: gpu.launch_func

// buffers-only stops on memrefs, as on the CPU: the memory model reads it.
// BUFFERS: func.func @mlp_step
// BUFFERS: memref.alloc
// BUFFERS-NOT: gpu.launch

// CHIP: ga-pipeline: chip must name an NVIDIA architecture such as sm_90, got 'gfx90a'
// FORMAT: for the --gpu-format option: gpu-format must be bin, fatbin, isa or none, got 'elf'
// BLOCK: ga-pipeline: gpu-block-size must be in [1, 1024], got 2048
// WIDTH: ga-pipeline: gpu-vector-width must be 1, 2 or 4, got 8
// A data-parallel step's collectives are the CUDA runtime's (device buffers
// staged through host memory for MPI).
// PARALLEL-NOT: @ga_all_reduce_
// PARALLEL: llvm.func @ga_cuda_all_reduce_f32(i64, !llvm.ptr, i32)
// PARALLEL: llvm.call @ga_rank
// PARALLEL: llvm.call @ga_cuda_all_reduce_f32
