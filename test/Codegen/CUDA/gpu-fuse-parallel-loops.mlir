// RUN: ga-opt %s --split-input-file --ga-gpu-fuse-parallel-loops | FileCheck %s

// The fill of a row sum's accumulator and the sum: one loop, the store of
// zero first. The bounds are other constant values of the same numbers, and
// an allocation between the loops stays before the fused loop. (The sums
// are a new buffer: an argument could be the argument %x.)
// CHECK-LABEL: func.func @fill_then_sum
// CHECK:       %[[SUM:.*]] = memref.alloc() : memref<128xf32>
// CHECK:       memref.alloc() : memref<4xf32>
// CHECK:       scf.parallel (%[[I:.*]]) =
// CHECK-NEXT:    memref.store %{{.*}}, %[[SUM]][%[[I]]]
// CHECK-NEXT:    scf.for
// CHECK:           memref.load %[[SUM]][
// CHECK:           memref.store %{{.*}}, %[[SUM]][%[[I]]]
// CHECK-NOT:   scf.parallel
func.func @fill_then_sum(%x: memref<128x64xf32>) -> memref<128xf32> {
  %sum = memref.alloc() : memref<128xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c128) step (%c1) {
    memref.store %zero, %sum[%i] : memref<128xf32>
    scf.reduce
  }
  %unused = memref.alloc() : memref<4xf32>
  %c0b = arith.constant 0 : index
  %c1b = arith.constant 1 : index
  %c128b = arith.constant 128 : index
  scf.parallel (%i) = (%c0b) to (%c128b) step (%c1b) {
    scf.for %k = %c0 to %c64 step %c1 {
      %a = affine.apply affine_map<(d0) -> (d0)>(%i)
      %v = memref.load %x[%a, %k] : memref<128x64xf32>
      %s = memref.load %sum[%a] : memref<128xf32>
      %t = arith.addf %s, %v : f32
      memref.store %t, %sum[%i] : memref<128xf32>
    }
    scf.reduce
  }
  return %sum : memref<128xf32>
}

// -----

// Three loops over the same rows: one loop.
// CHECK-LABEL: func.func @chain
// CHECK-COUNT-1: scf.parallel
// CHECK-NOT:   scf.parallel
func.func @chain(%a: memref<16x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %b = memref.alloc() : memref<16x32xf32>
  %c = memref.alloc() : memref<16x32xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c32) step (%c1, %c1) {
    %v = memref.load %a[%i, %j] : memref<16x32xf32>
    %w = arith.mulf %v, %v : f32
    memref.store %w, %b[%i, %j] : memref<16x32xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c32) step (%c1, %c1) {
    %v = memref.load %b[%i, %j] : memref<16x32xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %c[%i, %j] : memref<16x32xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c32) step (%c1, %c1) {
    %v = memref.load %c[%i, %j] : memref<16x32xf32>
    %u = memref.load %b[%i, %j] : memref<16x32xf32>
    %w = arith.subf %v, %u : f32
    memref.store %w, %a[%i, %j] : memref<16x32xf32>
    scf.reduce
  }
  return
}

// -----

// A buffer both loops only read, at any element: no conflict.
// CHECK-LABEL: func.func @shared_reads
// CHECK-COUNT-1: scf.parallel
// CHECK-NOT:   scf.parallel
func.func @shared_reads(%x: memref<128xf32>, %y: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c127 = arith.constant 127 : index
  %c128 = arith.constant 128 : index
  %p = memref.alloc() : memref<128xf32>
  %q = memref.alloc() : memref<128xf32>
  scf.parallel (%i) = (%c0) to (%c128) step (%c1) {
    %v = memref.load %x[%c127] : memref<128xf32>
    memref.store %v, %p[%i] : memref<128xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c128) step (%c1) {
    %v = memref.load %x[%c0] : memref<128xf32>
    memref.store %v, %q[%i] : memref<128xf32>
    scf.reduce
  }
  return
}

// -----

// Vector accesses of 4 elements at 4 times the index: each iteration's own
// group. Fused.
// CHECK-LABEL: func.func @vectors
// CHECK-COUNT-1: scf.parallel
// CHECK-NOT:   scf.parallel
func.func @vectors(%x: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %y = memref.alloc() : memref<256xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %e = arith.muli %i, %c4 : index
    %v = vector.load %x[%e] : memref<256xf32>, vector<4xf32>
    vector.store %v, %y[%e] : memref<256xf32>, vector<4xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %e = arith.muli %c4, %i : index
    %v = vector.load %y[%e] : memref<256xf32>, vector<4xf32>
    %w = arith.addf %v, %v : vector<4xf32>
    vector.store %w, %y[%e] : memref<256xf32>, vector<4xf32>
    scf.reduce
  }
  return
}

// -----

// Distinct allocations never share memory: the second loop reads another
// buffer at any element.
// CHECK-LABEL: func.func @distinct_allocations
// CHECK-COUNT-1: scf.parallel
// CHECK-NOT:   scf.parallel
func.func @distinct_allocations(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %a[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %b[%n] : memref<8xf32>
    memref.store %v, %b[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// The second loop reads the neighbouring element of what the first wrote:
// another iteration's. Not fused.
// CHECK-LABEL: func.func @shifted
// CHECK-COUNT-2: scf.parallel
func.func @shifted(%x: memref<129xf32>, %y: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %f = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<129xf32>
  scf.parallel (%i) = (%c0) to (%c128) step (%c1) {
    memref.store %f, %a[%i] : memref<129xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c128) step (%c1) {
    %n = arith.addi %i, %c1 : index
    %v = memref.load %a[%n] : memref<129xf32>
    memref.store %v, %y[%i] : memref<128xf32>
    scf.reduce
  }
  return
}

// -----

// A row sum (one iteration per row) and an operation over its elements:
// other iteration spaces. Not fused.
// CHECK-LABEL: func.func @other_space
// CHECK-COUNT-2: scf.parallel
func.func @other_space(%x: memref<16x8xf32>, %s: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %f, %s[%i] : memref<16xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c8) step (%c1, %c1) {
    %v = memref.load %s[%i] : memref<16xf32>
    memref.store %v, %x[%i, %j] : memref<16x8xf32>
    scf.reduce
  }
  return
}

// -----

// The second loop reads the transposed element: another iteration's.
// CHECK-LABEL: func.func @transposed
// CHECK-COUNT-2: scf.parallel
func.func @transposed(%y: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<8x8xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    memref.store %f, %a[%i, %j] : memref<8x8xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    %v = memref.load %a[%j, %i] : memref<8x8xf32>
    memref.store %v, %y[%i, %j] : memref<8x8xf32>
    scf.reduce
  }
  return
}

// -----

// Every iteration (i, j) writes element i: iterations share it. Not fused.
// CHECK-LABEL: func.func @partial_index
// CHECK-COUNT-2: scf.parallel
func.func @partial_index(%y: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<8xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    memref.store %f, %a[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    %v = memref.load %a[%i] : memref<8xf32>
    memref.store %v, %y[%i, %j] : memref<8x8xf32>
    scf.reduce
  }
  return
}

// -----

// Two views of one buffer (rows 0-7 and 1-8): the same indices are other
// elements. Not fused.
// CHECK-LABEL: func.func @two_views
// CHECK-COUNT-2: scf.parallel
func.func @two_views(%y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<9xf32>
  %lo = memref.subview %a[0] [8] [1] : memref<9xf32> to memref<8xf32, strided<[1]>>
  %hi = memref.subview %a[1] [8] [1] : memref<9xf32> to memref<8xf32, strided<[1], offset: 1>>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %lo[%i] : memref<8xf32, strided<[1]>>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %hi[%i] : memref<8xf32, strided<[1], offset: 1>>
    memref.store %v, %y[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// Two arguments may be one buffer. Not fused.
// CHECK-LABEL: func.func @arguments_may_alias
// CHECK-COUNT-2: scf.parallel
func.func @arguments_may_alias(%x: memref<8xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %x[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %y[%i] : memref<8xf32>
    %w = arith.addf %v, %f : f32
    memref.store %w, %y[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// A view whose elements overlap (stride 0: every index is one element).
// Not fused.
// CHECK-LABEL: func.func @overlapping_layout
// CHECK-COUNT-2: scf.parallel
func.func @overlapping_layout(%y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<1xf32>
  %b = memref.reinterpret_cast %a to offset: [0], sizes: [8], strides: [0] : memref<1xf32> to memref<8xf32, strided<[0]>>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %b[%i] : memref<8xf32, strided<[0]>>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %b[%i] : memref<8xf32, strided<[0]>>
    memref.store %v, %y[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// Vectors of 4 at the index itself overlap the next iteration's. Not
// fused.
// CHECK-LABEL: func.func @overlapping_vectors
// CHECK-COUNT-2: scf.parallel
func.func @overlapping_vectors(%x: memref<68xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %y = memref.alloc() : memref<68xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %v = vector.load %x[%i] : memref<68xf32>, vector<4xf32>
    vector.store %v, %y[%i] : memref<68xf32>, vector<4xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %v = vector.load %y[%i] : memref<68xf32>, vector<4xf32>
    vector.store %v, %x[%i] : memref<68xf32>, vector<4xf32>
    scf.reduce
  }
  return
}

// -----

// A call between the loops, an allocation after a deallocation of its
// block size (it could take the freed memory), a call inside a body
// (effects unknown): apart.
// CHECK-LABEL: func.func @barriers
// CHECK-COUNT-4: scf.parallel
func.func private @opaque()
func.func @barriers(%y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %y[%i] : memref<8xf32>
    scf.reduce
  }
  func.call @opaque() : () -> ()
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %y[%i] : memref<8xf32>
    scf.reduce
  }
  memref.dealloc %t : memref<8xf32>
  %u = memref.alloc() : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %u[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    func.call @opaque() : () -> ()
    scf.reduce
  }
  return
}

// -----

// Deallocations between the loops (the first loop's last use of %a) move
// after the fused loop, in their order; allocations before them stay.
// CHECK-LABEL: func.func @deallocations_move
// CHECK:       %[[A:.*]] = memref.alloc() : memref<8xf32>
// CHECK:       %[[B:.*]] = memref.alloc() : memref<8xf32>
// CHECK:       %[[C:.*]] = memref.alloc() : memref<4xf32>
// CHECK:       scf.parallel
// CHECK:         memref.load %[[A]]
// CHECK:         memref.store %{{.*}}, %[[B]]
// CHECK:         memref.store
// CHECK:       }
// CHECK-NEXT:  memref.dealloc %[[A]]
// CHECK-NEXT:  memref.dealloc %[[C]]
// CHECK-NOT:   scf.parallel
func.func @deallocations_move(%y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %a[%i] : memref<8xf32>
    memref.store %v, %b[%i] : memref<8xf32>
    scf.reduce
  }
  %c = memref.alloc() : memref<4xf32>
  memref.dealloc %a : memref<8xf32>
  memref.dealloc %c : memref<4xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %b[%i] : memref<8xf32>
    memref.store %v, %y[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// Loops already mapped to the GPU, and loops inside a micro-batch loop (the
// block of an scf.for is host code too: fused there).
// CHECK-LABEL: func.func @mapped_and_nested
// CHECK:       scf.parallel
// CHECK:       scf.parallel
// CHECK:       scf.for
// CHECK-COUNT-1: scf.parallel
// CHECK-NOT:   scf.parallel
func.func @mapped_and_nested(%y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %y[%i] : memref<8xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %y[%i] : memref<8xf32>
    scf.reduce
  }
  scf.for %k = %c0 to %c2 step %c1 {
    scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
      memref.store %f, %y[%i] : memref<8xf32>
      scf.reduce
    }
    scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
      %v = memref.load %y[%i] : memref<8xf32>
      %w = arith.addf %v, %f : f32
      memref.store %w, %y[%i] : memref<8xf32>
      scf.reduce
    }
  }
  return
}

// -----

// An allocation after a deallocation of another block size (2048 and 512
// bytes): the caching allocator would not give it the freed block, so the
// deallocation moves past it, after the fused loop.
// CHECK-LABEL: func.func @free_of_another_size
// CHECK:       memref.alloc() : memref<128xf32>
// CHECK:       scf.parallel
// CHECK:       }
// CHECK-NEXT:  memref.dealloc
// CHECK-NOT:   scf.parallel
func.func @free_of_another_size(%y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<512xf32>
  %b = memref.alloc() : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %a[%i] : memref<512xf32>
    memref.store %v, %b[%i] : memref<8xf32>
    scf.reduce
  }
  memref.dealloc %a : memref<512xf32>
  %c = memref.alloc() : memref<128xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %b[%i] : memref<8xf32>
    memref.store %v, %c[%i] : memref<128xf32>
    memref.store %v, %y[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// Block sizes as the runtime and the memory model count them, alignment
// included: 960 + 64 and 500 + 64 bytes are both 1024-byte blocks (without
// the alignment they would be 1024 and 512), so the deallocation cannot
// move past the allocation. Apart.
// CHECK-LABEL: func.func @aligned_same_block
// CHECK-COUNT-2: scf.parallel
func.func @aligned_same_block(%y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %a = memref.alloc() {alignment = 64 : i64} : memref<240xf32>
  %b = memref.alloc() : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %a[%i] : memref<240xf32>
    memref.store %v, %b[%i] : memref<8xf32>
    scf.reduce
  }
  memref.dealloc %a : memref<240xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<125xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %b[%i] : memref<8xf32>
    memref.store %v, %c[%i] : memref<125xf32>
    memref.store %v, %y[%i] : memref<8xf32>
    scf.reduce
  }
  return
}
