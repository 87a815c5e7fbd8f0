// RUN: ga-opt %s --split-input-file --ga-gpu-fuse-parallel-loops="row-groups=true" | FileCheck %s
// RUN: ga-opt %s --split-input-file --ga-gpu-fuse-parallel-loops | FileCheck %s --check-prefix=OFF
// RUN: not ga-opt %s --split-input-file --ga-gpu-fuse-parallel-loops="row-groups=true block-size=0" 2>&1 | FileCheck %s --check-prefix=BLOCK

// A softmax over rows of 32: the row maximum, the exponentials, their sum
// and the quotients, four loops over two iteration spaces, become one
// launch: 8 blocks of 8 rows, 32 threads per row; the loops without
// columns in the row's first thread, the columns strided over the row's
// threads, a barrier between two loops.
// CHECK-LABEL: func.func @softmax
// CHECK:       memref.alloc() : memref<64x32xf32>
// CHECK:       memref.alloc() : memref<64x32xf32>
// CHECK-NEXT:  %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:  %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT:  %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:  gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C8]], %{{.*}} = %[[C1]], %{{.*}} = %[[C1]]) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in (%{{.*}} = %[[C32]], %{{.*}} = %[[C8]], %{{.*}} = %[[C1]])
// CHECK:         %[[BASE:.*]] = arith.muli %[[BX]]
// CHECK:         %[[ROW:.*]] = arith.addi %[[BASE]], %[[TY]]
// CHECK:         %[[FIRST:.*]] = arith.cmpi eq, %[[TX]]
// CHECK:         scf.if %[[FIRST]] {
// CHECK:           memref.store %{{.*}}, %{{.*}}[%[[ROW]]] : memref<64xf32>
// CHECK:         gpu.barrier
// CHECK:         scf.for %[[J:.*]] = %[[TX]] to %{{.*}} step %{{.*}} {
// CHECK:           math.exp
// CHECK:           memref.store %{{.*}}, %{{.*}}[%[[ROW]], %[[J]]] : memref<64x32xf32>
// CHECK:         gpu.barrier
// CHECK:         scf.if %[[FIRST]] {
// CHECK:         gpu.barrier
// CHECK:         scf.for %{{.*}} = %[[TX]] to
// CHECK:           arith.divf
// CHECK:         gpu.terminator
// CHECK-NOT:   scf.parallel
// OFF-LABEL:   func.func @softmax
// OFF-COUNT-4: scf.parallel
// OFF-NOT:     gpu.launch
func.func @softmax(%x: memref<64x32xf32>) -> memref<64x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %lowest = arith.constant -3.40282347E+38 : f32
  %zero = arith.constant 0.0 : f32
  %max = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %lowest, %max[%i] : memref<64xf32>
    scf.for %k = %c0 to %c32 step %c1 {
      %v = memref.load %x[%i, %k] : memref<64x32xf32>
      %m = memref.load %max[%i] : memref<64xf32>
      %n = arith.maximumf %m, %v : f32
      memref.store %n, %max[%i] : memref<64xf32>
    }
    scf.reduce
  }
  %e = memref.alloc() : memref<64x32xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<64x32xf32>
    %m = memref.load %max[%i] : memref<64xf32>
    %d = arith.subf %v, %m : f32
    %x2 = math.exp %d : f32
    memref.store %x2, %e[%i, %j] : memref<64x32xf32>
    scf.reduce
  }
  %sum = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %zero, %sum[%i] : memref<64xf32>
    scf.for %k = %c0 to %c32 step %c1 {
      %v = memref.load %e[%i, %k] : memref<64x32xf32>
      %s = memref.load %sum[%i] : memref<64xf32>
      %t = arith.addf %s, %v : f32
      memref.store %t, %sum[%i] : memref<64xf32>
    }
    scf.reduce
  }
  memref.dealloc %max : memref<64xf32>
  %out = memref.alloc() : memref<64x32xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) {
    %v = memref.load %e[%i, %j] : memref<64x32xf32>
    %s = memref.load %sum[%i] : memref<64xf32>
    %q = arith.divf %v, %s : f32
    memref.store %q, %out[%i, %j] : memref<64x32xf32>
    scf.reduce
  }
  memref.dealloc %e : memref<64x32xf32>
  memref.dealloc %sum : memref<64xf32>
  return %out : memref<64x32xf32>
}

// -----

// Two loops over one iteration space that the first step keeps apart (the
// second reads its row backwards, elements another iteration wrote) run
// as one kernel over their rows, a barrier between them. (The results are
// a new buffer: an argument could be the argument %x.)
// CHECK-LABEL: func.func @reversed_rows
// CHECK:       gpu.launch
// CHECK:         scf.for
// CHECK:         gpu.barrier
// CHECK-NEXT:    scf.for
// CHECK:           arith.subi
// CHECK:         gpu.terminator
// CHECK-NOT:   scf.parallel
// OFF-LABEL:   func.func @reversed_rows
// OFF-COUNT-2: scf.parallel
func.func @reversed_rows(%x: memref<64x32xf32>) -> memref<64x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c31 = arith.constant 31 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %y = memref.alloc() : memref<64x32xf32>
  %out = memref.alloc() : memref<64x32xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<64x32xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %y[%i, %j] : memref<64x32xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) {
    %r = arith.subi %c31, %j : index
    %v = memref.load %y[%i, %r] : memref<64x32xf32>
    memref.store %v, %out[%i, %j] : memref<64x32xf32>
    scf.reduce
  }
  memref.dealloc %y : memref<64x32xf32>
  return %out : memref<64x32xf32>
}

// -----

// The second loop reads the next row's maximum, which another block
// computes: the loops stay apart.
// CHECK-LABEL: func.func @next_row
// CHECK-NOT:   gpu.launch
// CHECK-COUNT-2: scf.parallel
func.func @next_row(%x: memref<64x32xf32>, %out: memref<63x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %max = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %zero, %max[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c63, %c32) step (%c1, %c1) {
    %n = arith.addi %i, %c1 : index
    %m = memref.load %max[%n] : memref<64xf32>
    memref.store %m, %out[%i, %j] : memref<63x32xf32>
    scf.reduce
  }
  memref.dealloc %max : memref<64xf32>
  return
}

// -----

// A sum over rows (a bias gradient: one thread per column) reads what every
// row wrote: it stays its own loop after the group of the two loops before.
// CHECK-LABEL: func.func @column_sum
// CHECK:       gpu.launch
// CHECK:         gpu.barrier
// CHECK:         gpu.terminator
// CHECK:       scf.parallel
// CHECK-NOT:   gpu.launch
func.func @column_sum(%x: memref<64x32xf32>, %colsum: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %rowsum = memref.alloc() : memref<64xf32>
  %y = memref.alloc() : memref<64x32xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %zero, %rowsum[%i] : memref<64xf32>
    scf.for %k = %c0 to %c32 step %c1 {
      %v = memref.load %x[%i, %k] : memref<64x32xf32>
      %s = memref.load %rowsum[%i] : memref<64xf32>
      %t = arith.addf %s, %v : f32
      memref.store %t, %rowsum[%i] : memref<64xf32>
    }
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<64x32xf32>
    %s = memref.load %rowsum[%i] : memref<64xf32>
    %q = arith.mulf %v, %s : f32
    memref.store %q, %y[%i, %j] : memref<64x32xf32>
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%c32) step (%c1) {
    memref.store %zero, %colsum[%j] : memref<32xf32>
    scf.for %k = %c0 to %c64 step %c1 {
      %v = memref.load %y[%k, %j] : memref<64x32xf32>
      %s = memref.load %colsum[%j] : memref<32xf32>
      %t = arith.addf %s, %v : f32
      memref.store %t, %colsum[%j] : memref<32xf32>
    }
    scf.reduce
  }
  memref.dealloc %rowsum : memref<64xf32>
  memref.dealloc %y : memref<64x32xf32>
  return
}

// -----

// A stacked gradient: the whole [2, 16] buffer zeroed, then one layer's
// gradient copied into its row of layers through a subview that keeps the
// 16 columns whole. The rows are the 16 columns, each on its own thread
// (threadIdx.x: neighbouring threads touch neighbouring elements), the two
// layers the lanes on threadIdx.y: one block of 16 x 2 threads.
// CHECK-LABEL: func.func @stacked
// CHECK:       memref.subview
// CHECK-NEXT:  %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:  %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:  %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:  gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C1]], %{{.*}} = %[[C1]], %{{.*}} = %[[C1]]) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in (%{{.*}} = %[[C16]], %{{.*}} = %[[C2]], %{{.*}} = %[[C1]])
// CHECK:         %[[ROW:.*]] = arith.addi %{{.*}}, %[[TX]]
// CHECK:         scf.for %[[L:.*]] = %[[TY]] to
// CHECK:           memref.store %{{.*}}, %{{.*}}[%[[L]], %[[ROW]]] : memref<2x16xf32>
// CHECK:         gpu.barrier
// CHECK:         scf.if
// CHECK:           memref.store %{{.*}}, %{{.*}}[%[[ROW]]] : memref<16xf32, strided<[1], offset: 16>>
// CHECK-NOT:   scf.parallel
func.func @stacked(%g: memref<16xf32>) -> memref<2x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %stack = memref.alloc() : memref<2x16xf32>
  scf.parallel (%l, %j) = (%c0, %c0) to (%c2, %c16) step (%c1, %c1) {
    memref.store %zero, %stack[%l, %j] : memref<2x16xf32>
    scf.reduce
  }
  %layer = memref.subview %stack[1, 0] [1, 16] [1, 1] : memref<2x16xf32> to memref<16xf32, strided<[1], offset: 16>>
  scf.parallel (%j) = (%c0) to (%c16) step (%c1) {
    %v = memref.load %g[%j] : memref<16xf32>
    memref.store %v, %layer[%j] : memref<16xf32, strided<[1], offset: 16>>
    scf.reduce
  }
  return %stack : memref<2x16xf32>
}

// -----

// A subview that shifts the rows (row i of the view is row i + 1 of the
// buffer): the loops stay apart.
// CHECK-LABEL: func.func @shifted_view
// CHECK-NOT:   gpu.launch
// CHECK-COUNT-2: scf.parallel
func.func @shifted_view(%x: memref<63x32xf32>) -> memref<64x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c63 = arith.constant 63 : index
  %zero = arith.constant 0.0 : f32
  %buffer = memref.alloc() : memref<64x32xf32>
  %rows = memref.subview %buffer[0, 0] [63, 32] [1, 1] : memref<64x32xf32> to memref<63x32xf32, strided<[32, 1]>>
  %next = memref.subview %buffer[1, 0] [63, 32] [1, 1] : memref<64x32xf32> to memref<63x32xf32, strided<[32, 1], offset: 32>>
  scf.parallel (%i) = (%c0) to (%c63) step (%c1) {
    memref.store %zero, %rows[%i, %c0] : memref<63x32xf32, strided<[32, 1]>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c63, %c32) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<63x32xf32>
    memref.store %v, %next[%i, %j] : memref<63x32xf32, strided<[32, 1], offset: 32>>
    scf.reduce
  }
  return %buffer : memref<64x32xf32>
}

// -----

// Eight rows of 256 columns: 8 x 32 threads, each running 8 columns, where
// the loops' own kernels would run 2,048: the loops stay apart.
// CHECK-LABEL: func.func @few_rows
// CHECK-NOT:   gpu.launch
// CHECK-COUNT-2: scf.parallel
func.func @few_rows(%x: memref<8x256xf32>, %out: memref<8x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %zero, %sum[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c256) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<8x256xf32>
    %s = memref.load %sum[%i] : memref<8xf32>
    %t = arith.addf %v, %s : f32
    memref.store %t, %out[%i, %j] : memref<8x256xf32>
    scf.reduce
  }
  memref.dealloc %sum : memref<8xf32>
  return
}

// -----

// Rows of 256 summed by one thread each (not split into lanes): in a group
// the sum would run in one thread of each row's 32, where its own kernel
// runs a row in every thread of a warp. The loops stay apart.
// CHECK-LABEL: func.func @long_rows
// CHECK-NOT:   gpu.launch
// CHECK-COUNT-2: scf.parallel
func.func @long_rows(%x: memref<4096x256xf32>) -> memref<4096x256xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<4096xf32>
  %out = memref.alloc() : memref<4096x256xf32>
  scf.parallel (%i) = (%c0) to (%c4096) step (%c1) {
    memref.store %zero, %sum[%i] : memref<4096xf32>
    scf.for %k = %c0 to %c256 step %c1 {
      %v = memref.load %x[%i, %k] : memref<4096x256xf32>
      %s = memref.load %sum[%i] : memref<4096xf32>
      %t = arith.addf %s, %v : f32
      memref.store %t, %sum[%i] : memref<4096xf32>
    }
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4096, %c256) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<4096x256xf32>
    %s = memref.load %sum[%i] : memref<4096xf32>
    %q = arith.divf %v, %s : f32
    memref.store %q, %out[%i, %j] : memref<4096x256xf32>
    scf.reduce
  }
  memref.dealloc %sum : memref<4096xf32>
  return %out : memref<4096x256xf32>
}

// -----

// A buffer freed between the loops whose block an allocation between them
// could take (the same size) cannot move after the launch: the loops stay
// apart.
// CHECK-LABEL: func.func @same_block
// CHECK-NOT:   gpu.launch
// CHECK-COUNT-2: scf.parallel
func.func @same_block(%x: memref<64x32xf32>, %out: memref<64x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<64xf32>
  %old = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %v = memref.load %old[%i] : memref<64xf32>
    memref.store %v, %sum[%i] : memref<64xf32>
    scf.reduce
  }
  memref.dealloc %old : memref<64xf32>
  %new = memref.alloc() : memref<64xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<64x32xf32>
    %s = memref.load %sum[%i] : memref<64xf32>
    %t = arith.addf %v, %s : f32
    memref.store %t, %out[%i, %j] : memref<64x32xf32>
    scf.reduce
  }
  memref.dealloc %sum : memref<64xf32>
  memref.dealloc %new : memref<64xf32>
  return
}

// BLOCK: ga-gpu-fuse-parallel-loops: block-size must be in [1, 1024] (CUDA's threads per block), got 0
