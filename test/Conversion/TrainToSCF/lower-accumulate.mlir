// RUN: ga-opt %s --train-lower-accumulate | FileCheck %s

// The explicit form becomes an scf.for whose iteration arguments are the
// accumulators, with the micro-batch's rows sliced from the batch, then the
// finalize code once, on the loop's results: the body's code is moved, not
// rewritten.

// CHECK-LABEL: func.func @explicit
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4x3xf32>, %[[X:[^:]+]]: tensor<8x4xf32>, %[[N:[^:]+]]: tensor<f32>, %[[Z:[^:]+]]: tensor<f32>, %[[ZW:[^:]+]]: tensor<4x3xf32>)
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[R:.+]]:2 = scf.for %[[I:.+]] = %[[C0]] to %[[C2]] step %[[C1]] iter_args(%[[S:.+]] = %[[Z]], %[[G:.+]] = %[[ZW]]) -> (tensor<f32>, tensor<4x3xf32>) {
// CHECK: %[[OFF:.+]] = arith.muli %[[I]], %{{.+}} : index
// CHECK: %[[XI:.+]] = tensor.extract_slice %[[X]][%[[OFF]], 0] [4, 4] [1, 1] : tensor<8x4xf32> to tensor<4x4xf32>
// CHECK: %[[GN:.+]] = linalg.matmul ins(%[[XI]], %[[W]] : tensor<4x4xf32>, tensor<4x3xf32>) outs(%[[G]] : tensor<4x3xf32>)
// CHECK: %[[SN:.+]] = linalg.generic {{.*}} ins(%[[GN]] : tensor<4x3xf32>) outs(%[[S]] : tensor<f32>)
// CHECK: scf.yield %[[SN]], %[[GN]] : tensor<f32>, tensor<4x3xf32>
// CHECK: %[[A:.+]] = tensor.extract %[[R]]#0[] : tensor<f32>
// CHECK: %[[B:.+]] = tensor.extract %[[N]][] : tensor<f32>
// CHECK: %[[Q:.+]] = arith.divf %[[A]], %[[B]] : f32
// CHECK: %[[LOSS:.+]] = tensor.from_elements %[[Q]] : tensor<f32>
// CHECK-NOT: train.
// CHECK: return %[[LOSS]], %[[R]]#1
func.func @explicit(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %n: tensor<f32>,
                    %z: tensor<f32>, %zw: tensor<4x3xf32>) -> (tensor<f32>, tensor<4x3xf32>) {
  %loss, %gw = train.accumulate microbatches = 2 params(%w : tensor<4x3xf32>) batch(%x : tensor<8x4xf32>)
      globals(%n : tensor<f32>) accumulators(%z, %zw : tensor<f32>, tensor<4x3xf32>)
      -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<4x4xf32>, %n_: tensor<f32>, %s: tensor<f32>, %gacc: tensor<4x3xf32>):
    %g = linalg.matmul ins(%bx, %pw : tensor<4x4xf32>, tensor<4x3xf32>) outs(%gacc : tensor<4x3xf32>) -> tensor<4x3xf32>
    %s_next = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
                              iterator_types = ["reduction", "reduction"]}
        ins(%g : tensor<4x3xf32>) outs(%s : tensor<f32>) {
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %b, %a : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    train.yield %s_next, %g : tensor<f32>, tensor<4x3xf32>
  } finalize {
  ^bb0(%s: tensor<f32>, %gacc: tensor<4x3xf32>, %pw: tensor<4x3xf32>, %n_: tensor<f32>):
    %a = tensor.extract %s[] : tensor<f32>
    %b = tensor.extract %n_[] : tensor<f32>
    %q = arith.divf %a, %b : f32
    %l = tensor.from_elements %q : tensor<f32>
    train.yield %l, %gacc : tensor<f32>, tensor<4x3xf32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}
