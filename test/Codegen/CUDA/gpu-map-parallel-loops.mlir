// RUN: ga-opt %s --split-input-file --ga-gpu-map-parallel-loops --verify-diagnostics | FileCheck %s
// RUN: ga-opt %s --split-input-file --ga-gpu-map-parallel-loops --convert-parallel-loops-to-gpu --canonicalize --verify-diagnostics | FileCheck %s --check-prefix=LAUNCH
// RUN: ga-opt %s --split-input-file --ga-gpu-map-parallel-loops=vector-width=1 --verify-diagnostics | FileCheck %s --check-prefix=SCALAR
// RUN: not ga-opt %s --ga-gpu-map-parallel-loops=vector-width=3 2>&1 | FileCheck %s --check-prefix=WIDTH
// WIDTH: error: ga-gpu-map-parallel-loops: vector-width must be 1, 2 or 4, got 3

// An elementwise operation: the innermost dimension (64) on threadIdx.x,
// 4 of its rows to a block of 256 threads on threadIdx.y, the 32 blocks of
// rows on blockIdx.y.
// CHECK-LABEL: func.func @elementwise
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: arith.addf
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_y, {{.*}}>, #gpu.loop_dim_map<processor = thread_x, {{.*}}>]}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_y, {{.*}}>, #gpu.loop_dim_map<processor = block_x, {{.*}}>]}
// CHECK-NOT: linalg.generic
// LAUNCH-LABEL: func.func @elementwise
// LAUNCH-DAG: %[[C1:.*]] = arith.constant 1 : index
// LAUNCH-DAG: %[[C32:.*]] = arith.constant 32 : index
// LAUNCH-DAG: %[[C64:.*]] = arith.constant 64 : index
// LAUNCH-DAG: %[[C4:.*]] = arith.constant 4 : index
// LAUNCH: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C1]], {{.*}} = %[[C32]], {{.*}} = %[[C1]]) threads({{.*}}) in ({{.*}} = %[[C64]], {{.*}} = %[[C4]], {{.*}} = %[[C1]])
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @elementwise(%a: memref<128x64xf32>, %b: memref<128x64xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<128x64xf32>) outs(%b : memref<128x64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Rows of 16 (a warp, half idle) and 3 of them: 2 rows to a block (no more
// than there are), the second block's second row guarded.
// CHECK-LABEL: func.func @short_rows
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.if
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_y, {{.*}}>, #gpu.loop_dim_map<processor = thread_x, {{.*}}>]}
// LAUNCH-LABEL: func.func @short_rows
// LAUNCH-DAG: %[[C1:.*]] = arith.constant 1 : index
// LAUNCH-DAG: %[[C2:.*]] = arith.constant 2 : index
// LAUNCH-DAG: %[[C32:.*]] = arith.constant 32 : index
// LAUNCH: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C1]], {{.*}} = %[[C2]], {{.*}} = %[[C1]]) threads({{.*}}) in ({{.*}} = %[[C32]], {{.*}} = %[[C2]], {{.*}} = %[[C1]])
#rows = affine_map<(d0, d1) -> (d0, d1)>
func.func @short_rows(%a: memref<3x16xf32>, %b: memref<3x16xf32>) {
  linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<3x16xf32>) outs(%b : memref<3x16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.mulf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A long dimension is tiled by 256 threads, with a guard for the last tile;
// a copy becomes a kernel too.
// CHECK-LABEL: func.func @copy
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.if
// CHECK: memref.store
// CHECK-NOT: memref.copy
// LAUNCH-LABEL: func.func @copy
// LAUNCH-DAG: %[[C4:.*]] = arith.constant 4 : index
// LAUNCH-DAG: %[[C256:.*]] = arith.constant 256 : index
// LAUNCH: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C4]], {{.*}}) threads({{.*}}) in ({{.*}} = %[[C256]],
func.func @copy(%a: memref<1000xf32>, %b: memref<1000xf32>) {
  memref.copy %a, %b : memref<1000xf32> to memref<1000xf32>
  return
}

// -----

// A 0-d fill has no loop: its store runs in a kernel of one thread. A full
// reduction keeps its sequential loops (no float atomics), for
// ga-gpu-device-code to move to the device.
// CHECK-LABEL: func.func @reduce
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %[[ACC:.*]][] : memref<f32>
// CHECK: gpu.terminator
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: scf.parallel
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> ()>
func.func @reduce(%a: memref<8x16xf32>, %acc: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%acc : memref<f32>)
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "reduction"]}
      ins(%a : memref<8x16xf32>) outs(%acc : memref<f32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Linalg on tensors is refused: the pass runs after bufferization.
func.func @tensors(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ga-gpu-map-parallel-loops: expects bufferized linalg operations}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%a : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Elementwise on the device allocator's buffers, rows of 256: each thread
// takes 4 consecutive elements with 16-byte-aligned vector loads and
// stores, the body on vector<4xf32>, the value read by row (a function
// argument: its alignment is not known, but it is read once per group)
// loaded once and broadcast, and the constant broadcast. 64 threads per
// row, 4 rows per block. With vector-width=1, scalar code.
// CHECK-LABEL: func.func @vectorized
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: %[[X:.*]] = vector.load %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<16x256xf32>, vector<4xf32>
// CHECK: %[[R:.*]] = memref.load %arg0[%{{.*}}] : memref<16xf32>
// CHECK: %[[RB:.*]] = vector.broadcast %[[R]] : f32 to vector<4xf32>
// CHECK: %[[S:.*]] = arith.addf %[[X]], %[[RB]] : vector<4xf32>
// CHECK: %[[C:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[CB:.*]] = vector.broadcast %[[C]] : f32 to vector<4xf32>
// CHECK: %[[M:.*]] = arith.mulf %[[S]], %[[CB]] : vector<4xf32>
// CHECK: %[[E:.*]] = math.exp %[[M]] : vector<4xf32>
// CHECK: vector.store %[[E]], %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<16x256xf32>, vector<4xf32>
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_y, {{.*}}>, #gpu.loop_dim_map<processor = thread_x, {{.*}}>]}
// LAUNCH-LABEL: func.func @vectorized
// LAUNCH-DAG: %[[C1:.*]] = arith.constant 1 : index
// LAUNCH-DAG: %[[C4:.*]] = arith.constant 4 : index
// LAUNCH-DAG: %[[C64:.*]] = arith.constant 64 : index
// LAUNCH: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C1]], {{.*}} = %[[C4]], {{.*}} = %[[C1]]) threads({{.*}}) in ({{.*}} = %[[C64]], {{.*}} = %[[C4]], {{.*}} = %[[C1]])
// SCALAR-LABEL: func.func @vectorized
// SCALAR-NOT: vector.
// SCALAR: return
#v = affine_map<(d0, d1) -> (d0, d1)>
#vrow = affine_map<(d0, d1) -> (d0)>
func.func @vectorized(%r: memref<16xf32>) -> memref<16x256xf32> {
  %a = memref.alloc() : memref<16x256xf32>
  %b = memref.alloc() : memref<16x256xf32>
  linalg.generic {indexing_maps = [#v, #vrow, #v], iterator_types = ["parallel", "parallel"]}
      ins(%a, %r : memref<16x256xf32>, memref<16xf32>) outs(%b : memref<16x256xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    %half = arith.constant 0.5 : f32
    %m = arith.mulf %s, %half : f32
    %e = math.exp %m : f32
    linalg.yield %e : f32
  }
  memref.dealloc %a : memref<16x256xf32>
  return %b : memref<16x256xf32>
}

// -----

// Scalar code: a function argument read by the innermost dimension (its
// alignment is not known); rows of 64 (16 groups: fewer than a warp); a
// slice at column 2 (not a multiple of 4); 64-bit elements; a reduction.
// CHECK-LABEL: func.func @scalar
// CHECK-NOT: vector.
// CHECK: return
#s2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @scalar(%arg: memref<16x256xf32>) {
  %a = memref.alloc() : memref<16x256xf32>
  linalg.generic {indexing_maps = [#s2, #s2], iterator_types = ["parallel", "parallel"]}
      ins(%arg : memref<16x256xf32>) outs(%a : memref<16x256xf32>) {
  ^bb0(%x: f32, %out: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  }
  %short = memref.alloc() : memref<16x64xf32>
  linalg.generic {indexing_maps = [#s2], iterator_types = ["parallel", "parallel"]}
      outs(%short : memref<16x64xf32>) {
  ^bb0(%out: f32):
    %n = arith.negf %out : f32
    linalg.yield %n : f32
  }
  %wide = memref.alloc() : memref<16x260xf32>
  %slice = memref.subview %wide[0, 2] [16, 256] [1, 1] : memref<16x260xf32> to memref<16x256xf32, strided<[260, 1], offset: 2>>
  linalg.generic {indexing_maps = [#s2], iterator_types = ["parallel", "parallel"]}
      outs(%slice : memref<16x256xf32, strided<[260, 1], offset: 2>>) {
  ^bb0(%out: f32):
    %n = arith.negf %out : f32
    linalg.yield %n : f32
  }
  %long = memref.alloc() : memref<16x256xi64>
  linalg.generic {indexing_maps = [#s2], iterator_types = ["parallel", "parallel"]}
      outs(%long : memref<16x256xi64>) {
  ^bb0(%out: i64):
    %n = arith.addi %out, %out : i64
    linalg.yield %n : i64
  }
  %sum = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#s2, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<16x256xf32>) outs(%sum : memref<16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %n = arith.addf %x, %out : f32
    linalg.yield %n : f32
  }
  return
}
