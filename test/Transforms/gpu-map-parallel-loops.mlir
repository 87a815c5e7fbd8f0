// RUN: ga-opt %s --split-input-file --ga-gpu-map-parallel-loops --verify-diagnostics | FileCheck %s
// RUN: ga-opt %s --split-input-file --ga-gpu-map-parallel-loops --convert-parallel-loops-to-gpu --canonicalize --verify-diagnostics | FileCheck %s --check-prefix=LAUNCH

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
