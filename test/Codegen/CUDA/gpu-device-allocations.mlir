// RUN: ga-opt %s --split-input-file --ga-gpu-device-allocations --verify-diagnostics | FileCheck %s

// The step's host allocation functions become the CUDA runtime's.
// CHECK-LABEL: llvm.func @ga_cuda_alloc(i64) -> !llvm.ptr
// CHECK-LABEL: llvm.func @ga_cuda_free(!llvm.ptr)
// CHECK-LABEL: llvm.func @step
// CHECK: llvm.call @ga_cuda_alloc
// CHECK: llvm.call @ga_cuda_free
// CHECK-NOT: _mlir_memref_to_llvm
llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
llvm.func @step() {
  %n = llvm.mlir.constant(64 : i64) : i64
  %p = llvm.call @_mlir_memref_to_llvm_alloc(%n) : (i64) -> !llvm.ptr
  llvm.call @_mlir_memref_to_llvm_free(%p) : (!llvm.ptr) -> ()
  llvm.return
}

// -----

// A module that defines the allocation function itself is refused.
// expected-error @+1 {{ga-gpu-device-allocations: @_mlir_memref_to_llvm_free is defined in the module}}
llvm.func @_mlir_memref_to_llvm_free(%p: !llvm.ptr) {
  llvm.return
}
