// A global (a parameter-independent sum over the batch, such as a prompt
// group's reward sum, keyed by group id) read through a body by
// tensor.extract at each example's key: the same table in every
// micro-batch, so the split reads the hoisted global. A parameter-dependent
// batch-sum read that way is still refused.
// RUN: ga-opt %s --split-input-file --train-split-batch --mlir-print-op-on-diagnostic=false -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @gather_global
// CHECK: %[[SUMS:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2xf32>)
// CHECK: train.accumulate microbatches = 2 {{.*}} globals(%[[SUMS]] : tensor<2xf32>)
// CHECK: ^bb0({{.*}}, %[[G:.+]]: tensor<2xf32>):
// CHECK: tensor.extract %[[G]]

#id1 = affine_map<(i) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#key = affine_map<(i, j) -> (j)>
#to0 = affine_map<(i, j) -> ()>
func.func @gather_global(%w: tensor<4x4xf32>, %x: tensor<8x4xf32>, %r: tensor<8xf32>, %k: tensor<8xi64>) -> (tensor<f32>, tensor<4x4xf32>) {
  %loss, %g = train.step params(%w : tensor<4x4xf32>) batch(%x, %r, %k : tensor<8x4xf32>, tensor<8xf32>, tensor<8xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x4xf32>) {
  ^bb0(%pw: tensor<4x4xf32>, %bx: tensor<8x4xf32>, %br: tensor<8xf32>, %bk: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    // The rewards summed per key: one-hot products over the batch.
    %e2 = tensor.empty() : tensor<2xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
    %sums = linalg.generic {indexing_maps = [#row, #row, #key], iterator_types = ["reduction", "parallel"]}
        ins(%br, %bk : tensor<8xf32>, tensor<8xi64>) outs(%z2 : tensor<2xf32>) {
    ^bb0(%a: f32, %key: i64, %acc: f32):
      %j = linalg.index 1 : index
      %jj = arith.index_cast %j : index to i64
      %hit = arith.cmpi eq, %key, %jj : i64
      %v = arith.select %hit, %a, %zero : f32
      %t = arith.addf %acc, %v : f32
      linalg.yield %t : f32
    } -> tensor<2xf32>
    // Each example's key's sum, gathered.
    %e8 = tensor.empty() : tensor<8xf32>
    %mine = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
        ins(%bk : tensor<8xi64>) outs(%e8 : tensor<8xf32>) {
    ^bb0(%key: i64, %out: f32):
      %i = arith.index_cast %key : i64 to index
      %v = tensor.extract %sums[%i] : tensor<2xf32>
      linalg.yield %v : f32
    } -> tensor<8xf32>
    %e = tensor.empty() : tensor<8x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
    %o = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
    %es = tensor.empty() : tensor<f32>
    %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {indexing_maps = [#id2, #row, #to0], iterator_types = ["reduction", "reduction"]}
        ins(%o, %mine : tensor<8x4xf32>, tensor<8xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %m: f32, %acc: f32):
      %p = arith.mulf %a, %m : f32
      %t = arith.addf %acc, %p : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4x4xf32>
}

// -----

#id1 = affine_map<(i) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#key = affine_map<(i, j) -> (j)>
#to0 = affine_map<(i, j) -> ()>
func.func @gather_parameter_dependent(%w: tensor<4x4xf32>, %x: tensor<8x4xf32>, %k: tensor<8xi64>) -> (tensor<f32>, tensor<4x4xf32>) {
  // expected-note @+1 {{the train.step being split}}
  %loss, %g = train.step params(%w : tensor<4x4xf32>) batch(%x, %k : tensor<8x4xf32>, tensor<8xi64>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x4xf32>) {
  ^bb0(%pw: tensor<4x4xf32>, %bx: tensor<8x4xf32>, %bk: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
    %o = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
    // The model's outputs summed per key: depends on the parameters.
    %e8r = tensor.empty() : tensor<8xf32>
    %z8 = linalg.fill ins(%zero : f32) outs(%e8r : tensor<8xf32>) -> tensor<8xf32>
    %s = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
        ins(%o : tensor<8x4xf32>) outs(%z8 : tensor<8xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %acc, %a : f32
      linalg.yield %t : f32
    } -> tensor<8xf32>
    %e2 = tensor.empty() : tensor<2xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
    %sums = linalg.generic {indexing_maps = [#row, #row, #key], iterator_types = ["reduction", "parallel"]}
        ins(%s, %bk : tensor<8xf32>, tensor<8xi64>) outs(%z2 : tensor<2xf32>) {
    ^bb0(%a: f32, %key: i64, %acc: f32):
      %j = linalg.index 1 : index
      %jj = arith.index_cast %j : index to i64
      %hit = arith.cmpi eq, %key, %jj : i64
      %v = arith.select %hit, %a, %zero : f32
      %t = arith.addf %acc, %v : f32
      linalg.yield %t : f32
    } -> tensor<2xf32>
    %e8 = tensor.empty() : tensor<8xf32>
    // expected-error @below {{cannot split this step into 1 rank(s) x 2 micro-batch(es) exactly: this operation reads a batch-sum through its body}}
    %mine = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
        ins(%bk : tensor<8xi64>) outs(%e8 : tensor<8xf32>) {
    ^bb0(%key: i64, %out: f32):
      %i = arith.index_cast %key : i64 to index
      %v = tensor.extract %sums[%i] : tensor<2xf32>
      linalg.yield %v : f32
    } -> tensor<8xf32>
    %es = tensor.empty() : tensor<f32>
    %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {indexing_maps = [#id1, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
        ins(%mine : tensor<8xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %acc, %a : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4x4xf32>
}
