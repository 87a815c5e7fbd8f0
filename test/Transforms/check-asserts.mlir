// RUN: ga-opt %s --train-check-asserts -split-input-file -verify-diagnostics | FileCheck %s
// report=false drops the asserts: no check, no message, the gather clamped.
// RUN: ga-opt %s --train-check-asserts=report=false -split-input-file | FileCheck %s --check-prefix=DROP
// DROP-NOT: ga_report_assertion
// DROP-NOT: __ga_assert_message
// DROP-LABEL: func.func @gather_in_step
// DROP-NOT: linalg.generic
// DROP: train.step
// DROP: arith.maxsi
// DROP: arith.minsi
// DROP: tensor.extract
// DROP-NOT: cf.assert
// DROP-LABEL: func.func @scalar
// DROP-NOT: cf.assert
// DROP-NOT: scf.if
// DROP: return

// A gather guarded inside the body of a step's generic: the check is a
// reduction of the step's operand before the step; the body keeps no
// assert and its gather index is clamped.
// The message: text, location and iteration space.
// CHECK: llvm.mlir.global internal constant @__ga_assert_message{{.*}}("'index out of range' at loc({{.*}}check-asserts.mlir{{.*}}) over the iterations [6, 5] (dimensions 0, 1 of a linalg.generic over [6, 5, 4])\00")
// CHECK-LABEL: func.func @gather_in_step
// CHECK-SAME: (%[[W:.*]]: tensor<16x4xf32>, %[[IDS:.*]]: tensor<6x5xi64>)
// CHECK: %[[FIRST:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "reduction"]
// CHECK-SAME: ins(%[[IDS]] : tensor<6x5xi64>)
// CHECK: arith.cmpi slt
// CHECK: arith.select
// CHECK: arith.minsi
// CHECK: %[[POS:.*]] = tensor.extract %[[FIRST]][] : tensor<i64>
// CHECK: %[[BAD:.*]] = arith.cmpi ne, %[[POS]]
// CHECK: scf.if %[[BAD]] {
// CHECK:   %[[MSG:.*]] = llvm.mlir.addressof @__ga_assert_message
// CHECK:   func.call @ga_report_assertion(%[[MSG]], %[[POS]]) : (!llvm.ptr, i64) -> ()
// CHECK: }
// CHECK: train.step
// CHECK-NOT: cf.assert
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract
// CHECK: train.yield
func.func @gather_in_step(%wte: tensor<16x4xf32>, %ids: tensor<6x5xi64>) -> (tensor<f32>, tensor<16x4xf32>) {
  %loss, %gw = train.step params(%wte : tensor<16x4xf32>) batch(%ids : tensor<6x5xi64>)
      attributes {microbatches = 1 : i64} -> tensor<f32> grads(tensor<16x4xf32>) {
  ^bb0(%pw: tensor<16x4xf32>, %bids: tensor<6x5xi64>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<6x5x4xf32>
    %h = linalg.generic {indexing_maps = [affine_map<(b, s, d) -> (b, s)>, affine_map<(b, s, d) -> (b, s, d)>], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%bids : tensor<6x5xi64>) outs(%e : tensor<6x5x4xf32>) {
    ^bb0(%id: i64, %o: f32):
      %c16 = arith.constant 16 : i64
      %lt = arith.cmpi slt, %id, %c16 : i64
      cf.assert %lt, "index out of range"
      %i = arith.index_cast %id : i64 to index
      %d = linalg.index 2 : index
      %w = tensor.extract %pw[%i, %d] : tensor<16x4xf32>
      linalg.yield %w : f32
    } -> tensor<6x5x4xf32>
    %e0 = tensor.empty() : tensor<f32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {indexing_maps = [affine_map<(b, s, d) -> (b, s, d)>, affine_map<(b, s, d) -> ()>], iterator_types = ["reduction", "reduction", "reduction"]}
        ins(%h : tensor<6x5x4xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %acc, %v : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<16x4xf32>
}

// -----

// A scalar assert at the function level: its condition under scf.if, in
// place; one that always holds is dropped.
// CHECK-LABEL: func.func @scalar
// CHECK-NOT: cf.assert
// CHECK: %[[HOLDS:.*]] = arith.cmpi eq
// CHECK: %[[BAD:.*]] = arith.xori %[[HOLDS]], %{{.*}}
// CHECK: %[[NONE:.*]] = arith.constant -1 : i64
// CHECK: scf.if %[[BAD]] {
// CHECK:   func.call @ga_report_assertion(%{{.*}}, %[[NONE]])
// CHECK-NOT: cf.assert
// CHECK: return
func.func @scalar(%x: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %true = arith.constant true
  cf.assert %true, "always"
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %same = arith.cmpi eq, %n, %c8 : index
  cf.assert %same, "expected 8 rows"
  return %x : tensor<?xf32>
}

// -----

func.func @in_loop(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c5 = arith.constant 5 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %ok = arith.cmpi ult, %i, %c5 : index
    // expected-error @below {{'cf.assert' op cannot be checked before the step: its condition depends on a block argument of 'scf.for'}}
    cf.assert %ok, "small"
  }
  return %x : tensor<8xf32>
}

// -----

func.func @memory(%m: memref<4xi1>) {
  %c0 = arith.constant 0 : index
  scf.execute_region {
    %ok = memref.load %m[%c0] : memref<4xi1>
    // expected-error @below {{'cf.assert' op cannot be checked before the step: its condition depends on 'memref.load', which has memory effects}}
    cf.assert %ok, "loaded"
    scf.yield
  }
  return
}

// -----

// A condition on the loop indices alone: the check's reduction takes the
// extents of its loops from an operand of their shape, which it does not
// read.
// CHECK-LABEL: func.func @loop_indices_only
// CHECK: %[[SHAPE:.*]] = tensor.empty() : tensor<6xi8>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["reduction"]
// CHECK-SAME: ins(%[[SHAPE]] : tensor<6xi8>)
// CHECK: linalg.index 0
// CHECK: arith.cmpi slt
func.func @loop_indices_only(%w: tensor<5x4xf32>) -> tensor<6x4xf32> {
  %c5 = arith.constant 5 : index
  %e = tensor.empty() : tensor<6x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<6x4xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ok = arith.cmpi slt, %i, %c5 : index
    cf.assert %ok, "row in range"
    %v = tensor.extract %w[%i, %j] : tensor<5x4xf32>
    linalg.yield %v : f32
  } -> tensor<6x4xf32>
  return %y : tensor<6x4xf32>
}
