// RUN: ga-opt %s --ga-gpu-prefetch-gathers --split-input-file | FileCheck %s

// Every gather becomes a start and a wait at its place; the second one of
// the block starts right after the first one's wait (with its buffer and
// casts), before the first one's reader.

func.func private @ga_cuda_all_gather_f32(memref<*xf32>, memref<*xf32>)
func.func private @read(memref<8xf32>)

// CHECK-DAG: func.func private @ga_cuda_all_gather_start_f32(memref<*xf32>, memref<*xf32>) -> i64
// CHECK-DAG: func.func private @ga_cuda_all_gather_wait(i64)
// CHECK-LABEL: func.func @two_readers
// CHECK-SAME: (%[[S0:.*]]: memref<4xf32>, %[[S1:.*]]: memref<4xf32>)
// CHECK: %[[A:.*]] = memref.alloc() : memref<8xf32>
// CHECK: %[[H0:.*]] = call @ga_cuda_all_gather_start_f32(
// CHECK-NEXT: call @ga_cuda_all_gather_wait(%[[H0]])
// CHECK-NEXT: memref.cast %[[S1]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT: memref.cast %[[B]]
// CHECK-NEXT: %[[H1:.*]] = call @ga_cuda_all_gather_start_f32(
// CHECK-NEXT: call @read(%[[A]])
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: call @ga_cuda_all_gather_wait(%[[H1]])
// CHECK-NEXT: call @read(%[[B]])
// CHECK-NOT: call @ga_cuda_all_gather_f32
func.func @two_readers(%s0: memref<4xf32>, %s1: memref<4xf32>) {
  %a = memref.alloc() : memref<8xf32>
  %c0 = memref.cast %s0 : memref<4xf32> to memref<*xf32>
  %c1 = memref.cast %a : memref<8xf32> to memref<*xf32>
  call @ga_cuda_all_gather_f32(%c0, %c1) : (memref<*xf32>, memref<*xf32>) -> ()
  call @read(%a) : (memref<8xf32>) -> ()
  memref.dealloc %a : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  %c2 = memref.cast %s1 : memref<4xf32> to memref<*xf32>
  %c3 = memref.cast %b : memref<8xf32> to memref<*xf32>
  call @ga_cuda_all_gather_f32(%c2, %c3) : (memref<*xf32>, memref<*xf32>) -> ()
  call @read(%b) : (memref<8xf32>) -> ()
  memref.dealloc %b : memref<8xf32>
  return
}

// -----

// The shard is written between the two gathers (through a view of it):
// the second gather stays after the write.

func.func private @ga_cuda_all_gather_f32(memref<*xf32>, memref<*xf32>)
func.func private @read(memref<8xf32>)
func.func private @write(memref<2xf32, strided<[1], offset: 2>>)

// CHECK-LABEL: func.func @shard_written_between
// CHECK: call @ga_cuda_all_gather_wait
// CHECK: call @read
// CHECK: call @write
// CHECK: memref.alloc
// CHECK: call @ga_cuda_all_gather_start_f32
// CHECK-NEXT: call @ga_cuda_all_gather_wait
func.func @shard_written_between(%s0: memref<4xf32>, %s1: memref<4xf32>) {
  %v = memref.subview %s1[2] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1], offset: 2>>
  %a = memref.alloc() : memref<8xf32>
  %c0 = memref.cast %s0 : memref<4xf32> to memref<*xf32>
  %c1 = memref.cast %a : memref<8xf32> to memref<*xf32>
  call @ga_cuda_all_gather_f32(%c0, %c1) : (memref<*xf32>, memref<*xf32>) -> ()
  call @read(%a) : (memref<8xf32>) -> ()
  call @write(%v) : (memref<2xf32, strided<[1], offset: 2>>) -> ()
  %b = memref.alloc() : memref<8xf32>
  %c2 = memref.cast %s1 : memref<4xf32> to memref<*xf32>
  %c3 = memref.cast %b : memref<8xf32> to memref<*xf32>
  call @ga_cuda_all_gather_f32(%c2, %c3) : (memref<*xf32>, memref<*xf32>) -> ()
  call @read(%b) : (memref<8xf32>) -> ()
  return
}

// -----

// The gathered buffer is used before its gather (filled), and the shard of
// the third gather is computed after the second's wait: neither moves. A
// gather in a loop's body is the first of its block: it does not move
// either, above the loop or within it.

func.func private @ga_cuda_all_gather_f32(memref<*xf32>, memref<*xf32>)
func.func private @read(memref<8xf32>)
func.func private @shard() -> memref<4xf32>

// CHECK-LABEL: func.func @not_moved
// CHECK: %[[H0:.*]] = call @ga_cuda_all_gather_start_f32
// CHECK-NEXT: call @ga_cuda_all_gather_wait(%[[H0]])
// CHECK-NEXT: call @read
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: linalg.fill
// CHECK: %[[H1:.*]] = call @ga_cuda_all_gather_start_f32
// CHECK-NEXT: call @ga_cuda_all_gather_wait(%[[H1]])
// CHECK-NEXT: call @read
// CHECK-NEXT: call @shard()
// CHECK: %[[H2:.*]] = call @ga_cuda_all_gather_start_f32
// CHECK-NEXT: call @ga_cuda_all_gather_wait(%[[H2]])
// CHECK: scf.for
// CHECK-NEXT: memref.alloc
// CHECK: %[[H3:.*]] = func.call @ga_cuda_all_gather_start_f32
// CHECK-NEXT: func.call @ga_cuda_all_gather_wait(%[[H3]])
func.func @not_moved(%s0: memref<4xf32>, %s1: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<8xf32>
  %c0 = memref.cast %s0 : memref<4xf32> to memref<*xf32>
  %c1 = memref.cast %a : memref<8xf32> to memref<*xf32>
  call @ga_cuda_all_gather_f32(%c0, %c1) : (memref<*xf32>, memref<*xf32>) -> ()
  call @read(%a) : (memref<8xf32>) -> ()
  %b = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<8xf32>)
  %c2 = memref.cast %s1 : memref<4xf32> to memref<*xf32>
  %c3 = memref.cast %b : memref<8xf32> to memref<*xf32>
  call @ga_cuda_all_gather_f32(%c2, %c3) : (memref<*xf32>, memref<*xf32>) -> ()
  call @read(%b) : (memref<8xf32>) -> ()
  %s2 = call @shard() : () -> memref<4xf32>
  %d = memref.alloc() : memref<8xf32>
  %c4 = memref.cast %s2 : memref<4xf32> to memref<*xf32>
  %c5 = memref.cast %d : memref<8xf32> to memref<*xf32>
  call @ga_cuda_all_gather_f32(%c4, %c5) : (memref<*xf32>, memref<*xf32>) -> ()
  call @read(%d) : (memref<8xf32>) -> ()
  %lb = arith.constant 0 : index
  %ub = arith.constant 2 : index
  %st = arith.constant 1 : index
  scf.for %i = %lb to %ub step %st {
    %e = memref.alloc() : memref<8xf32>
    %c6 = memref.cast %s0 : memref<4xf32> to memref<*xf32>
    %c7 = memref.cast %e : memref<8xf32> to memref<*xf32>
    func.call @ga_cuda_all_gather_f32(%c6, %c7) : (memref<*xf32>, memref<*xf32>) -> ()
    func.call @read(%e) : (memref<8xf32>) -> ()
    memref.dealloc %e : memref<8xf32>
  }
  return
}
