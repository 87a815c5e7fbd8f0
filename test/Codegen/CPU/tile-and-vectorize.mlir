// RUN: ga-opt %s --pass-pipeline='builtin.module(func.func(ga-tile-and-vectorize),canonicalize)' | FileCheck %s
// RUN: not ga-opt %s --pass-pipeline='builtin.module(func.func(ga-tile-and-vectorize{vector-width=0}))' 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: ga-tile-and-vectorize: vector-width and register-rows must be positive (got 0 and 4)

// A matmul: 4x8 blocks of the result, the reduction in steps of 8, each tile
// one vector.contract.
// CHECK-LABEL: func.func @matmul
// CHECK: scf.for %[[I:.*]] = %c0 to %c8 step %c4
// CHECK:   scf.for %[[J:.*]] = %c0 to %c16 step %c8
// CHECK:     scf.for %[[K:.*]] = %c0 to %c16 step %c8
// CHECK:       vector.transfer_read {{.*}} : tensor<4x8xf32>, vector<4x8xf32>
// CHECK:       vector.transfer_read {{.*}} : tensor<8x8xf32>, vector<8x8xf32>
// CHECK:       vector.contract {{.*}} : vector<4x8xf32>, vector<8x8xf32> into vector<4x8xf32>
// CHECK-NOT: linalg.matmul
func.func @matmul(%a: tensor<8x16xf32>, %b: tensor<16x16xf32>, %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x16xf32>) outs(%c : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// The innermost result dimension (12) is not a multiple of the vector
// width: the op stays for the scalar loops.
// CHECK-LABEL: func.func @narrow
// CHECK-NOT: vector.
// CHECK: linalg.generic
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @narrow(%x: tensor<4x12xf32>) -> tensor<4x12xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x12xf32>) outs(%x : tensor<4x12xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<4x12xf32>
  return %0 : tensor<4x12xf32>
}

// A row reduction: 8 rows at a time, 8 reduced elements per tile.
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.for {{.*}} = %c0 to %c16 step %c8
// CHECK:   scf.for {{.*}} = %c0 to %c32 step %c8
// CHECK:     vector.multi_reduction <add>, {{.*}} [1] : vector<8x8xf32> to vector<8xf32>
// CHECK-NOT: linalg.generic
func.func @row_sum(%x: tensor<16x32xf32>, %init: tensor<16xf32>) -> tensor<16xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<16x32xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// Two reduction dimensions: only the inner one is vectorized, the outer one
// is a loop of step 1, so the elements are summed in the order of the
// scalar loops.
// CHECK-LABEL: func.func @bias_grad
// CHECK: scf.for {{.*}} = %c0 to %c4 step %c1
// CHECK:   scf.for {{.*}} = %c0 to %c16 step %c8
// CHECK:     vector.multi_reduction <add>, {{.*}} [0, 1] : vector<1x8x8xf32> to vector<8xf32>
#x3 = affine_map<(b, s, d) -> (b, s, d)>
#d3 = affine_map<(b, s, d) -> (d)>
func.func @bias_grad(%x: tensor<4x16x8xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  %0 = linalg.generic {indexing_maps = [#x3, #d3], iterator_types = ["reduction", "reduction", "parallel"]} ins(%x : tensor<4x16x8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// A gather (tensor.extract in the body) stays scalar.
// CHECK-LABEL: func.func @gather
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK: tensor.extract
#gidx = affine_map<(i, j) -> (i)>
func.func @gather(%table: tensor<32x16xf32>, %ids: tensor<8xindex>, %init: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = linalg.generic {indexing_maps = [#gidx, #id], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<8xindex>) outs(%init : tensor<8x16xf32>) {
  ^bb0(%id: index, %out: f32):
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%id, %j] : tensor<32x16xf32>
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// A contraction written as a generic with a transposed operand becomes the
// same vector.contract as a named matmul.
// CHECK-LABEL: func.func @generic_contraction
// CHECK: vector.contract {{.*}} : vector<8x4xf32>, vector<8x8xf32> into vector<4x8xf32>
// CHECK-NOT: vector.multi_reduction
#ma = affine_map<(m, n, k) -> (k, m)>
#mb = affine_map<(m, n, k) -> (k, n)>
#mc = affine_map<(m, n, k) -> (m, n)>
func.func @generic_contraction(%a: tensor<16x8xf32>, %b: tensor<16x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = linalg.generic {indexing_maps = [#ma, #mb, #mc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<16x8xf32>, tensor<16x8xf32>) outs(%c : tensor<8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// A reduction longer than 64 and not a multiple of the vector width (the
// tokens of a micro-batch: 252 = 4 x 63) is tiled by its largest divisor up
// to the width (7), so that it is vectorized whatever the micro-batch size:
// a contraction's tiles use fused multiply-adds, scalar loops do not, and a
// split batch must round as the full batch does.
// CHECK-LABEL: func.func @long_odd_reduction
// CHECK: scf.for %{{.*}} = %c0 to %c252 step %c7
// CHECK: vector.contract {{.*}} : vector<4x7xf32>, vector<7x8xf32> into vector<4x8xf32>
// CHECK-NOT: linalg.matmul
func.func @long_odd_reduction(%a: tensor<8x252xf32>, %b: tensor<252x16xf32>, %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<8x252xf32>, tensor<252x16xf32>) outs(%c : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// A one-dimensional fill of fewer than 1024 elements is stored whole (no
// loop); a longer one, and a two-dimensional one, are tiled.
// CHECK-LABEL: func.func @fills
// CHECK-NOT: scf.for
// CHECK: vector.transfer_write %{{.*}} : vector<256xf32>, tensor<256xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c1024 step %c8
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1
func.func @fills(%a: tensor<256xf32>, %b: tensor<1024xf32>, %c: tensor<4x64xf32>) -> (tensor<256xf32>, tensor<1024xf32>, tensor<4x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%zero : f32) outs(%a : tensor<256xf32>) -> tensor<256xf32>
  %1 = linalg.fill ins(%zero : f32) outs(%b : tensor<1024xf32>) -> tensor<1024xf32>
  %2 = linalg.fill ins(%zero : f32) outs(%c : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %0, %1, %2 : tensor<256xf32>, tensor<1024xf32>, tensor<4x64xf32>
}

// A tensor of i1 is one byte per element in memory, a vector of i1 packed
// bits: ops that write or read an i1 tensor keep their scalar loops (no
// vector<8xi1> transfer), while the compare inside a body that reads and
// writes only f32 and i64 tensors still vectorizes.
// CHECK-LABEL: func.func @masks
// CHECK-NOT: vector<8xi1>
// CHECK: return
func.func @masks(%l: tensor<128xi64>, %v: tensor<128xf32>) -> (tensor<128xi1>, tensor<128xf32>) {
  %ign = arith.constant -100 : i64
  %zero = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<128xi1>
  %m = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%l : tensor<128xi64>) outs(%eb : tensor<128xi1>) {
  ^bb0(%a: i64, %o: i1):
    %c = arith.cmpi ne, %a, %ign : i64
    linalg.yield %c : i1
  } -> tensor<128xi1>
  %e = tensor.empty() : tensor<128xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%m, %v : tensor<128xi1>, tensor<128xf32>) outs(%e : tensor<128xf32>) {
  ^bb0(%a: i1, %b: f32, %o: f32):
    %s = arith.select %a, %b, %zero : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  return %m, %r : tensor<128xi1>, tensor<128xf32>
}

// CHECK-LABEL: func.func @mask_in_registers
// CHECK: arith.cmpi ne, %{{.*}}, %{{.*}} : vector<8xi64>
// CHECK: arith.select %{{.*}} : vector<8xi1>, vector<8xf32>
func.func @mask_in_registers(%l: tensor<128xi64>, %v: tensor<128xf32>) -> tensor<128xf32> {
  %ign = arith.constant -100 : i64
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%l, %v : tensor<128xi64>, tensor<128xf32>) outs(%e : tensor<128xf32>) {
  ^bb0(%a: i64, %b: f32, %o: f32):
    %c = arith.cmpi ne, %a, %ign : i64
    %s = arith.select %c, %b, %zero : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  return %r : tensor<128xf32>
}
