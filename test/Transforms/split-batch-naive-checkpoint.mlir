// RUN: ga-opt %s --train-split-batch=naive=true | FileCheck %s
// The naive split keeps a batch count computed inside a train.checkpoint in
// the loop body (the naive mean per slice); the region's argument takes the
// slice's type (reproducer: shared/repro/naive-split-checkpoint.mlir).
// CHECK-LABEL: func.func @count_in_region
// CHECK: train.accumulate
// CHECK: train.checkpoint(%{{.+}} : tensor<4xi64>) -> tensor<f32>
// CHECK-NEXT: ^bb0(%{{.+}}: tensor<4xi64>):
// CHECK: train.all_reduce avg
func.func @count_in_region(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<4x3xf32>) {
  %loss, %gw = train.step params(%w : tensor<4x3xf32>) batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {data_parallel = 2 : i64} -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %bx: tensor<8x4xf32>, %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %s = train.cross_entropy sum %logits, %by ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    %e = tensor.empty() : tensor<f32>
    %n = train.checkpoint (%by : tensor<8xi64>) -> tensor<f32> {
    ^bb0(%labels: tensor<8xi64>):
      %z = arith.constant 0.0 : f32
      %one = arith.constant 1.0 : f32
      %e0 = tensor.empty() : tensor<f32>
      %zeros = linalg.fill ins(%z : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
      %c = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%labels : tensor<8xi64>) outs(%zeros : tensor<f32>) {
      ^bb0(%label: i64, %count: f32):
        %ignore = arith.constant -100 : i64
        %valid = arith.cmpi ne, %label, %ignore : i64
        %v = arith.select %valid, %one, %z : f32
        %sum = arith.addf %count, %v : f32
        linalg.yield %sum : f32
      } -> tensor<f32>
      train.yield %c : tensor<f32>
    }
    %l = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []} ins(%s, %n : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %q = arith.divf %a, %b : f32
      linalg.yield %q : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<4x3xf32>
}
