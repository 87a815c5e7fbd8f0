// RUN: ga-opt %s --ga-parallelize-loops | FileCheck %s
// RUN: ga-opt %s --pass-pipeline='builtin.module(func.func(ga-tile-and-vectorize))' | FileCheck %s --check-prefix=MARK

// The outermost marked loop becomes an scf.parallel with the same bounds and
// body; the marks of the loops nested in it are dropped.
// CHECK-LABEL: func.func @rows(
// CHECK: scf.parallel (%[[I:.*]]) = (%c0) to (%c64) step (%c4) {
// CHECK: scf.for
// CHECK-NOT: train.parallel
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[I]], %{{.*}}]
// CHECK: scf.reduce
func.func @rows(%m: memref<64x8xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c4 {
    scf.for %j = %c0 to %c8 step %c1 {
      memref.store %v, %m[%i, %j] : memref<64x8xf32>
    } {train.parallel}
  } {train.parallel}
  return
}

// A loop that still carries values (before bufferization) and an unmarked
// loop stay loops.
// CHECK-LABEL: func.func @carried(
// CHECK-NOT: scf.parallel
// CHECK: scf.for {{.*}} iter_args
// CHECK: } {train.parallel}
// CHECK: scf.for
// CHECK-NOT: scf.parallel
func.func @carried(%t: tensor<8xf32>, %m: memref<8xf32>, %v: f32) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%a = %t) -> tensor<8xf32> {
    %n = tensor.insert %v into %a[%i] : tensor<8xf32>
    scf.yield %n : tensor<8xf32>
  } {train.parallel}
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %v, %m[%i] : memref<8xf32>
  }
  return %r : tensor<8xf32>
}

// ga-tile-and-vectorize marks the tile loops over a large enough
// operation's result rows (here 256 x 64 x 64 points), not over its
// reduction, and leaves small operations (8 x 8 x 8) on one thread.
// MARK-LABEL: func.func @big(
// MARK: scf.for
// MARK: scf.for
// MARK: scf.for
// MARK: vector.contract
// MARK: scf.yield
// MARK-NEXT: }{{$}}
// MARK: scf.yield
// MARK-NEXT: } {train.parallel}
// MARK: scf.yield
// MARK-NEXT: } {train.parallel}
func.func @big(%a: tensor<256x64xf32>, %b: tensor<64x64xf32>, %c: tensor<256x64xf32>) -> tensor<256x64xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x64xf32>)
                     outs(%c : tensor<256x64xf32>) -> tensor<256x64xf32>
  return %r : tensor<256x64xf32>
}

// MARK-LABEL: func.func @small(
// MARK-NOT: train.parallel
// MARK: return
func.func @small(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>)
                     outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
