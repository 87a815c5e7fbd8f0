// RUN: ga-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -split-input-file -verify-diagnostics | FileCheck %s

// train.all_reduce bufferizes to a runtime call that reduces in place, in
// the buffer of its input when nothing reads that input afterwards.

// CHECK-DAG: func.func private @ga_all_reduce_f32(memref<*xf32>, i32)
// CHECK-LABEL: func.func @in_place
// CHECK: %[[A:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// CHECK: linalg.generic {{.*}} outs(%[[A]] : memref<4xf32>)
// CHECK-NOT: memref.copy
// CHECK: %[[U:.*]] = memref.cast %[[A]] : memref<4xf32> to memref<*xf32>
// CHECK: %[[SUM:.*]] = arith.constant 0 : i32
// CHECK: call @ga_all_reduce_f32(%[[U]], %[[SUM]]) : (memref<*xf32>, i32) -> ()
// CHECK: return %[[A]]
func.func @in_place(%t: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%t : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.addf %a, %a : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %r = train.all_reduce sum %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// The input is still read after the reduction: the reduction works on a
// copy. `avg` passes kind 1.
// CHECK-LABEL: func.func @read_after
// CHECK-SAME: (%[[T:.*]]: memref<2x3xf64>)
// CHECK: %[[A:.*]] = memref.alloc() {{.*}} : memref<2x3xf64>
// CHECK: memref.copy %[[T]], %[[A]]
// CHECK: %[[U:.*]] = memref.cast %[[A]] : memref<2x3xf64> to memref<*xf64>
// CHECK: %[[AVG:.*]] = arith.constant 1 : i32
// CHECK: call @ga_all_reduce_f64(%[[U]], %[[AVG]])
// CHECK: return %[[A]], %[[T]]
func.func @read_after(%t: tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>) {
  %r = train.all_reduce avg %t : tensor<2x3xf64>
  return %r, %t : tensor<2x3xf64>, tensor<2x3xf64>
}

// -----

// Integers have their own runtime function.
// CHECK-LABEL: func.func @ints
// CHECK: call @ga_all_reduce_i64
func.func @ints(%t: tensor<2xi64>) -> tensor<2xi64> {
  %r = train.all_reduce sum %t : tensor<2xi64>
  return %r : tensor<2xi64>
}

// -----

// The runtime has no bf16 reduction: an error on the op, not a crash.
func.func @bf16(%t: tensor<4xbf16>) -> tensor<4xbf16> {
  // expected-error @+2 {{failed to bufferize op}}
  // expected-error @+1 {{'train.all_reduce' op cannot be lowered to a runtime call: the runtime reduces f32, f64, i32 and i64 buffers, not 'bf16'}}
  %r = train.all_reduce sum %t : tensor<4xbf16>
  return %r : tensor<4xbf16>
}
