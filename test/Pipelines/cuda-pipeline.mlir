// REQUIRES: cuda-toolkit
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=isa" %ga_src/examples/mlp.mlir | FileCheck %s --implicit-check-not=llvm.load --implicit-check-not=llvm.store --implicit-check-not=_mlir_memref_to_llvm
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=isa chip=sm_80 ptx-features=+ptx75 gpu-block-size=128" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=SM80
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=isa gpu-tf32=true" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=TF32
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=isa gpu-bf16=true" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=BF16
// RUN: not ga-opt --ga-pipeline="target=cuda gpu-tf32=true gpu-bf16=true" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=PRECISION
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=isa gpu-blas=false" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=NOBLAS
// RUN: ga-opt --ga-pipeline="target=cuda buffers-only=true" %ga_src/examples/mlp.mlir | FileCheck %s --check-prefix=BUFFERS
// RUN: not ga-opt --ga-pipeline="target=cuda chip=gfx90a" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not ga-opt --ga-pipeline="target=cuda gpu-format=elf" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not ga-opt --ga-pipeline="target=cuda gpu-block-size=2048" %ga_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: sed 's/batch(%%x, %%labels : tensor<8x16x32xf32>, tensor<8x16xi64>)/& attributes {data_parallel = 2 : i64}/' %ga_src/examples/mlp.mlir > %t.dp.mlir
// RUN: ga-opt --ga-pipeline="target=cuda gpu-format=isa" %t.dp.mlir | FileCheck %s --check-prefix=PARALLEL

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
// FORMAT: ga-pipeline: gpu-format must be bin, fatbin, isa or none, got 'elf'
// BLOCK: ga-pipeline: gpu-block-size must be in [1, 1024], got 2048
// A data-parallel step's collectives are the CUDA runtime's (device buffers
// staged through host memory for MPI).
// PARALLEL-NOT: @ga_all_reduce_
// PARALLEL: llvm.func @ga_cuda_all_reduce_f32(i64, !llvm.ptr, i32)
// PARALLEL: llvm.call @ga_rank
// PARALLEL: llvm.call @ga_cuda_all_reduce_f32
