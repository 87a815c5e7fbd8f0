// RUN: ga-opt %s --convert-train-to-linalg -split-input-file -verify-diagnostics | FileCheck %s --implicit-check-not=train.rank

// train.rank becomes a call of the runtime's ga_rank, declared once in the
// module; train.all_reduce is left for bufferization.
// CHECK: func.func private @ga_rank() -> i64
// CHECK-LABEL: func.func @rank
// CHECK: %[[C:.+]] = call @ga_rank() : () -> i64
// CHECK: %[[I:.+]] = arith.index_cast %[[C]] : i64 to index
// CHECK: %[[C2:.+]] = call @ga_rank() : () -> i64
// CHECK: arith.index_cast %[[C2]] : i64 to index
// CHECK: train.all_reduce sum
// CHECK: return %[[I]]
func.func @rank(%g: tensor<4xf32>) -> (index, index, tensor<4xf32>) {
  %r = train.rank : index
  %r2 = train.rank : index
  %s = train.all_reduce sum %g : tensor<4xf32>
  return %r, %r2, %s : index, index, tensor<4xf32>
}

// -----

// A symbol of the runtime's name with another type is an error, not a
// wrong call.
func.func private @ga_rank() -> i32

func.func @clash() -> index {
  // expected-error @+1 {{the runtime function @ga_rank : '() -> i64' clashes with a symbol of that name in the module}}
  %r = train.rank : index
  return %r : index
}
