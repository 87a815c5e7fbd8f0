// RUN: ga-opt %s --split-input-file --test-train-decomposability -o /dev/null 2>&1 | FileCheck %s
// Values read inside a body: a parameter's table makes the gather depend on
// the parameters (a loss that depends on them only so is no global: a split
// that took it for one changed the loss); a per-example tensor gathered at
// each example's own row (torch-mlir's NLL loss) is per-example; one
// gathered at any other row is refused.

// CHECK: remark: per-example (batch dimension 0), parameter-dependent
// CHECK: remark: batch-sum, parameter-dependent
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @embedding_only(%wte: tensor<16x4xf32>, %ids: tensor<8xi64>) -> (tensor<f32>, tensor<16x4xf32>) {
  %loss, %g = train.step params(%wte : tensor<16x4xf32>) batch(%ids : tensor<8xi64>) attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<16x4xf32>) {
  ^bb0(%w: tensor<16x4xf32>, %bi: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x4xf32>
    %emb = linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%bi : tensor<8xi64>) outs(%e : tensor<8x4xf32>) {
    ^bb0(%in: i64, %o: f32):
      %r = arith.index_cast %in : i64 to index
      %c = linalg.index 1 : index
      %v = tensor.extract %w[%r, %c] : tensor<16x4xf32>
      linalg.yield %v : f32
    } -> tensor<8x4xf32>
    %es = tensor.empty() : tensor<f32>
    %z = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
        ins(%emb : tensor<8x4xf32>) outs(%z : tensor<f32>) {
    ^bb0(%in: f32, %o: f32):
      %sq = arith.mulf %in, %in : f32
      %a = arith.addf %o, %sq : f32
      linalg.yield %a : f32
    } -> tensor<f32>
    train.yield %s : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<16x4xf32>
}

// -----

// CHECK: remark: per-example (batch dimension 0), parameter-dependent
// CHECK: remark: per-example (batch dimension 0), parameter-dependent
// CHECK: remark: batch-sum, parameter-dependent
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @own_rows(%w: tensor<8x5xf32>, %x: tensor<8x5xf32>, %labels: tensor<8xi64>) -> (tensor<f32>, tensor<8x5xf32>) {
  %loss, %g = train.step params(%w : tensor<8x5xf32>) batch(%x, %labels : tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32> grads(tensor<8x5xf32>) {
  ^bb0(%pw: tensor<8x5xf32>, %bx: tensor<8x5xf32>, %bl: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x5xf32>
    %logp = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%bx, %pw : tensor<8x5xf32>, tensor<8x5xf32>) outs(%e : tensor<8x5xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<8x5xf32>
    %e1 = tensor.empty() : tensor<8x1xf32>
    %picked = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%bl : tensor<8xi64>) outs(%e1 : tensor<8x1xf32>) {
    ^bb0(%in: i64, %o: f32):
      %r = linalg.index 0 : index
      %c = arith.index_cast %in : i64 to index
      %v = tensor.extract %logp[%r, %c] : tensor<8x5xf32>
      linalg.yield %v : f32
    } -> tensor<8x1xf32>
    %es = tensor.empty() : tensor<f32>
    %z = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
        ins(%picked : tensor<8x1xf32>) outs(%z : tensor<f32>) {
    ^bb0(%in: f32, %o: f32):
      %a = arith.addf %o, %in : f32
      linalg.yield %a : f32
    } -> tensor<f32>
    train.yield %s : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<8x5xf32>
}

// -----

// CHECK: remark: mixed: reads a batch value through its body other than by tensor.extract of each example's own row
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @other_rows(%w: tensor<8x5xf32>, %x: tensor<8x5xf32>, %rows: tensor<8xi64>) -> (tensor<f32>, tensor<8x5xf32>) {
  %loss, %g = train.step params(%w : tensor<8x5xf32>) batch(%x, %rows : tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32> grads(tensor<8x5xf32>) {
  ^bb0(%pw: tensor<8x5xf32>, %bx: tensor<8x5xf32>, %br: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x5xf32>
    %p = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%bx, %pw : tensor<8x5xf32>, tensor<8x5xf32>) outs(%e : tensor<8x5xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<8x5xf32>
    %e2 = tensor.empty() : tensor<8x5xf32>
    %shuffled = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%br : tensor<8xi64>) outs(%e2 : tensor<8x5xf32>) {
    ^bb0(%in: i64, %o: f32):
      %r = arith.index_cast %in : i64 to index
      %c = linalg.index 1 : index
      %v = tensor.extract %p[%r, %c] : tensor<8x5xf32>
      linalg.yield %v : f32
    } -> tensor<8x5xf32>
    %es = tensor.empty() : tensor<f32>
    %z = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
        ins(%shuffled : tensor<8x5xf32>) outs(%z : tensor<f32>) {
    ^bb0(%in: f32, %o: f32):
      %a = arith.addf %o, %in : f32
      linalg.yield %a : f32
    } -> tensor<f32>
    train.yield %s : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<8x5xf32>
}
