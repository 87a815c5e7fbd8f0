// RUN: ga-opt %s --split-input-file --ga-gpu-promote-accumulators | FileCheck %s

// A row's sum over a loop of constant bounds: the accumulator (the same
// element through two affine.apply of the same map) is loaded once before
// the loop, carried, and stored once after it; the input's loads stay, a
// load nothing reads goes.
// CHECK-LABEL: func.func @row_sum
// CHECK: gpu.launch
// CHECK-NOT: memref<128x64xf32>
// CHECK: %[[INIT:.*]] = memref.load %[[ACC:.*]][%[[ROW:.*]]] : memref<128xf32>
// CHECK-NEXT: %[[SUM:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A:.*]] = %[[INIT]]) -> (f32)
// CHECK-NEXT: %[[X:.*]] = memref.load %{{.*}} : memref<128x64xf32>
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[X]], %[[A]] : f32
// CHECK-NEXT: scf.yield %[[S]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: memref.store %[[SUM]], %[[ACC]][%[[ROW]]] : memref<128xf32>
// CHECK-NOT: memref.store
// CHECK: gpu.terminator
#id = affine_map<(d0) -> (d0)>
func.func @row_sum(%in: memref<128x64xf32>) -> memref<128xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloc() : memref<128xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c128, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %r0 = affine.apply #id(%bx)
    memref.store %zero, %acc[%r0] : memref<128xf32>
    %unused = memref.load %in[%r0, %r0] : memref<128x64xf32>
    scf.for %j = %c0 to %c64 step %c1 {
      %r1 = affine.apply #id(%bx)
      %x = memref.load %in[%r1, %j] : memref<128x64xf32>
      %r2 = affine.apply #id(%bx)
      %a = memref.load %acc[%r2] : memref<128xf32>
      %s = arith.addf %x, %a : f32
      %r3 = affine.apply #id(%bx)
      memref.store %s, %acc[%r3] : memref<128xf32>
    }
    gpu.terminator
  }
  return %acc : memref<128xf32>
}

// -----

// A lane's partial maximum over a loop whose bounds depend on the thread
// (it may run no iteration): the load, the loop and the store run only
// where the loop runs; the two accumulators of one loop (a maximum and a
// count, of two buffers) are both carried; the nested loop's accumulator
// moves out of the outer loop too, where the outer loop keeps its indices.
// (The buffers are allocations: two arguments of the function could share
// memory, and keep their loops as they are, as @kept shows.)
// CHECK-LABEL: func.func @lanes
// CHECK: gpu.launch
// CHECK: %[[RUNS:.*]] = arith.cmpi slt, %[[LB:.*]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[RUNS]] {
// CHECK-NEXT: memref.load %{{.*}} : memref<8x32xf32>
// CHECK-NEXT: memref.load %{{.*}} : memref<8x32xi64>
// CHECK-NEXT: %[[R:.*]]:2 = scf.for {{.*}} iter_args({{.*}}) -> (f32, i64)
// CHECK: arith.maximumf
// CHECK: arith.addi
// CHECK: scf.yield
// CHECK: memref.store %[[R]]#0, %{{.*}} : memref<8x32xf32>
// CHECK-NEXT: memref.store %[[R]]#1, %{{.*}} : memref<8x32xi64>
// CHECK-NEXT: }
// CHECK: %[[OUTER_INIT:.*]] = memref.load %{{.*}} : memref<8xf32>
// CHECK-NEXT: %[[OUTER:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[OUTER_INIT]]) -> (f32)
// CHECK-NEXT: scf.for {{.*}} iter_args
// CHECK: scf.yield
// CHECK: scf.yield
// CHECK: memref.store %[[OUTER]], %{{.*}} : memref<8xf32>
// CHECK: gpu.terminator
func.func @lanes(%in: memref<8x1024xf32>)
    -> (memref<8x32xf32>, memref<8x32xi64>, memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c1024 = arith.constant 1024 : index
  %one = arith.constant 1 : i64
  %maxes = memref.alloc() : memref<8x32xf32>
  %counts = memref.alloc() : memref<8x32xi64>
  %total = memref.alloc() : memref<8xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c8, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    scf.for %j = %tx to %c1024 step %c32 {
      %x = memref.load %in[%bx, %j] : memref<8x1024xf32>
      %m = memref.load %maxes[%bx, %tx] : memref<8x32xf32>
      %n = memref.load %counts[%bx, %tx] : memref<8x32xi64>
      %mm = arith.maximumf %x, %m : f32
      %nn = arith.addi %n, %one : i64
      memref.store %mm, %maxes[%bx, %tx] : memref<8x32xf32>
      memref.store %nn, %counts[%bx, %tx] : memref<8x32xi64>
    }
    scf.for %i = %c0 to %c4 step %c1 {
      scf.for %k = %c0 to %c8 step %c1 {
        %j = arith.addi %i, %k : index
        %x = memref.load %in[%bx, %j] : memref<8x1024xf32>
        %t = memref.load %total[%bx] : memref<8xf32>
        %s = arith.addf %x, %t : f32
        memref.store %s, %total[%bx] : memref<8xf32>
      }
    }
    gpu.terminator
  }
  return %maxes, %counts, %total
      : memref<8x32xf32>, memref<8x32xi64>, memref<8xf32>
}

// -----

// What keeps the accumulator in memory: a barrier in the loop (another
// thread may read it there), a read of the same buffer at another element,
// an index the loop moves, a buffer that may share memory with another
// the loop writes (two arguments), and a loop outside any kernel (the
// host's loops stay as written).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: iter_args
// CHECK: return
func.func @kept(%in: memref<8x64xf32>, %other: memref<8xf32>,
                %arg_acc: memref<8xf32>) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %acc = memref.alloc() : memref<8xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c8, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %x = memref.load %in[%bx, %j] : memref<8x64xf32>
      %a = memref.load %acc[%bx] : memref<8xf32>
      %s = arith.addf %x, %a : f32
      memref.store %s, %acc[%bx] : memref<8xf32>
      gpu.barrier
    }
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %acc[%bx] : memref<8xf32>
      %b = memref.load %acc[%c0] : memref<8xf32>
      %s = arith.addf %b, %a : f32
      memref.store %s, %acc[%bx] : memref<8xf32>
    }
    scf.for %j = %c0 to %c8 step %c1 {
      %a = memref.load %acc[%j] : memref<8xf32>
      %x = memref.load %in[%bx, %j] : memref<8x64xf32>
      %s = arith.addf %x, %a : f32
      memref.store %s, %acc[%j] : memref<8xf32>
    }
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %arg_acc[%bx] : memref<8xf32>
      %x = memref.load %in[%bx, %j] : memref<8x64xf32>
      %s = arith.addf %x, %a : f32
      memref.store %s, %arg_acc[%bx] : memref<8xf32>
      memref.store %s, %other[%c0] : memref<8xf32>
    }
    gpu.terminator
  }
  scf.for %j = %c0 to %c64 step %c1 {
    %a = memref.load %acc[%c0] : memref<8xf32>
    %x = memref.load %in[%c0, %j] : memref<8x64xf32>
    %s = arith.addf %x, %a : f32
    memref.store %s, %acc[%c0] : memref<8xf32>
  }
  return %acc : memref<8xf32>
}

// -----

// A loop that may run no iteration and has a result of its own: under the
// guard the loop carries both (its own first), the guard yields the loop's
// result where it runs and the result's init where it does not.
// CHECK-LABEL: func.func @guarded_result
// CHECK: %[[RUNS:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[G:.*]] = scf.if %[[RUNS]] -> (f32) {
// CHECK-NEXT: %[[A0:.*]] = memref.load %[[ACC:.*]][%{{.*}}, %{{.*}}] : memref<8x32xf32>
// CHECK-NEXT: %[[L:.*]]:2 = scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO:.*]], %{{.*}} = %[[A0]]) -> (f32, f32)
// CHECK: scf.yield
// CHECK: memref.store %[[L]]#1, %[[ACC]]
// CHECK-NEXT: scf.yield %[[L]]#0 : f32
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[ZERO]] : f32
// CHECK: memref.store %[[G]], %{{.*}} : memref<8x32xf32>
func.func @guarded_result(%in: memref<8x64xf32>)
    -> (memref<8x32xf32>, memref<8x32xf32>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloc() : memref<8x32xf32>
  %out = memref.alloc() : memref<8x32xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c8, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %r = scf.for %j = %tx to %c64 step %c32 iter_args(%c = %zero) -> (f32) {
      %x = memref.load %in[%bx, %j] : memref<8x64xf32>
      %a = memref.load %acc[%bx, %tx] : memref<8x32xf32>
      %s = arith.addf %x, %a : f32
      memref.store %s, %acc[%bx, %tx] : memref<8x32xf32>
      %c2 = arith.mulf %c, %x : f32
      scf.yield %c2 : f32
    }
    memref.store %r, %out[%bx, %tx] : memref<8x32xf32>
    gpu.terminator
  }
  return %acc, %out : memref<8x32xf32>, memref<8x32xf32>
}
