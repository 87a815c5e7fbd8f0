// RUN: ga-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -split-input-file -verify-diagnostics | FileCheck %s

// train.all_reduce bufferizes to a runtime call that reduces in place, in
// the buffer of its input when nothing reads that input afterwards;
// train.reduce_scatter and train.all_gather to calls that read their input's
// buffer (a contiguous copy of a strided one) and write a new one.

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
  // expected-error @+1 {{'train.all_reduce' op cannot be lowered to a runtime call: the runtime's collectives take f32, f64, i32 and i64 buffers, not 'bf16'}}
  %r = train.all_reduce sum %t : tensor<4xbf16>
  return %r : tensor<4xbf16>
}

// -----

// A reduce-scatter reads its input's buffer, through a contiguous copy when
// it is strided (every other element here); an all-gather writes a new
// buffer.
// CHECK-DAG: func.func private @ga_reduce_scatter_f32(memref<*xf32>, memref<*xf32>, i32)
// CHECK-DAG: func.func private @ga_all_gather_f32(memref<*xf32>, memref<*xf32>)
// CHECK-LABEL: func.func @partitions
// CHECK-SAME: (%[[G:.*]]: memref<16xf32>)
// CHECK: %[[EVEN:.*]] = memref.subview %[[G]][0] [8] [2] : memref<16xf32> to memref<8xf32, strided<[2]>>
// CHECK: %[[FLAT:.*]] = memref.alloc() : memref<8xf32>
// CHECK: memref.copy %[[EVEN]], %[[FLAT]]
// CHECK: %[[PART:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[IN:.*]] = memref.cast %[[FLAT]] : memref<8xf32> to memref<*xf32>
// CHECK: %[[OUT:.*]] = memref.cast %[[PART]] : memref<4xf32> to memref<*xf32>
// CHECK: %[[SUM:.*]] = arith.constant 0 : i32
// CHECK: call @ga_reduce_scatter_f32(%[[IN]], %[[OUT]], %[[SUM]])
// CHECK: %[[WHOLE:.*]] = memref.alloc() : memref<8xf32>
// CHECK: %[[FROM:.*]] = memref.cast %[[PART]] : memref<4xf32> to memref<*xf32>
// CHECK: %[[TO:.*]] = memref.cast %[[WHOLE]] : memref<8xf32> to memref<*xf32>
// CHECK: call @ga_all_gather_f32(%[[FROM]], %[[TO]]) : (memref<*xf32>, memref<*xf32>) -> ()
// CHECK: return %[[WHOLE]]
func.func @partitions(%g: tensor<16xf32>) -> tensor<8xf32> {
  %even = tensor.extract_slice %g[0] [8] [2] : tensor<16xf32> to tensor<8xf32>
  %part = train.reduce_scatter sum %even : tensor<8xf32> -> tensor<4xf32>
  %whole = train.all_gather %part : tensor<4xf32> -> tensor<8xf32>
  return %whole : tensor<8xf32>
}

// -----

func.func @partitions_bf16(%t: tensor<8xbf16>) -> tensor<4xbf16> {
  // expected-error @+2 {{failed to bufferize op}}
  // expected-error @+1 {{'train.reduce_scatter' op cannot be lowered to a runtime call: the runtime's collectives take f32, f64, i32 and i64 buffers, not 'bf16'}}
  %r = train.reduce_scatter sum %t : tensor<8xbf16> -> tensor<4xbf16>
  return %r : tensor<4xbf16>
}
