// A value that does not depend on the batch but is broadcast to its size
// (transformers' causal mask expanded to [B, 1, S, S] when no attention
// mask is given; a bias expanded over the batch): each micro-batch reads
// the first B/k rows of it, which are every row's values. Found through
// unit reshapes and structured operations whose batch loop only
// broadcasts; a parameter's broadcast is differentiated through the slice.
// Rows that differ (the row index, linalg.index) are refused at the
// operation that reads them.
// RUN: ga-opt %s --split-input-file --train-split-batch --mlir-print-op-on-diagnostic=false -verify-diagnostics | FileCheck %s
// RUN: ga-opt %s --split-input-file --ga-pipeline="target=cpu" --mlir-print-op-on-diagnostic=false -verify-diagnostics -o /dev/null

// CHECK-LABEL: func.func @broadcast_mask
// CHECK: train.accumulate microbatches = 2
// CHECK: %[[M:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8x1x4xf32>)
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[M]] {{.*}} into tensor<8x4xf32>
// CHECK: %[[B:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8x4xf32>)
// CHECK: %[[SB:.+]] = tensor.extract_slice %[[B]][0, 0] [4, 4] [1, 1] : tensor<8x4xf32> to tensor<4x4xf32>
// CHECK: %[[SM:.+]] = tensor.extract_slice %[[C]][0, 0] [4, 4] [1, 1] : tensor<8x4xf32> to tensor<4x4xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[SB]], %[[SM]] : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)

#id2 = affine_map<(i, j) -> (i, j)>
#id3 = affine_map<(i, u, j) -> (i, u, j)>
#col = affine_map<(i, j) -> (j)>
#col3 = affine_map<(i, u, j) -> (j)>
#to0 = affine_map<(i, j) -> ()>
func.func @broadcast_mask(%w: tensor<4x4xf32>, %bias: tensor<4xf32>, %x: tensor<8x4xf32>) -> (tensor<f32>, tensor<4x4xf32>, tensor<4xf32>) {
  %loss, %g:2 = train.step params(%w, %bias : tensor<4x4xf32>, tensor<4xf32>) batch(%x : tensor<8x4xf32>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x4xf32>, tensor<4xf32>) {
  ^bb0(%pw: tensor<4x4xf32>, %pb: tensor<4xf32>, %bx: tensor<8x4xf32>):
    %zero = arith.constant 0.0 : f32
    %cols = arith.constant dense<[1.0, 0.0, 1.0, 0.5]> : tensor<4xf32>
    %e = tensor.empty() : tensor<8x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
    %o = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
    // The mask: a constant row broadcast to [8, 1, 4], collapsed to [8, 4].
    %e3 = tensor.empty() : tensor<8x1x4xf32>
    %m3 = linalg.generic {indexing_maps = [#col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%cols : tensor<4xf32>) outs(%e3 : tensor<8x1x4xf32>) {
    ^bb0(%a: f32, %out: f32):
      linalg.yield %a : f32
    } -> tensor<8x1x4xf32>
    %m = tensor.collapse_shape %m3 [[0, 1], [2]] : tensor<8x1x4xf32> into tensor<8x4xf32>
    // The bias, a parameter, expanded over the batch.
    %b = linalg.generic {indexing_maps = [#col, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%pb : tensor<4xf32>) outs(%e : tensor<8x4xf32>) {
    ^bb0(%a: f32, %out: f32):
      linalg.yield %a : f32
    } -> tensor<8x4xf32>
    %y = linalg.generic {indexing_maps = [#id2, #id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%o, %b, %m : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
    ^bb0(%a: f32, %c: f32, %k: f32, %out: f32):
      %s = arith.addf %a, %c : f32
      %t = arith.mulf %s, %k : f32
      %u = arith.mulf %t, %t : f32
      linalg.yield %u : f32
    } -> tensor<8x4xf32>
    %es = tensor.empty() : tensor<f32>
    %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %sum = linalg.generic {indexing_maps = [#id2, #to0], iterator_types = ["reduction", "reduction"]}
        ins(%y : tensor<8x4xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %acc, %a : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    train.yield %sum : tensor<f32>
  }
  return %loss, %g#0, %g#1 : tensor<f32>, tensor<4x4xf32>, tensor<4xf32>
}

// -----

#id2 = affine_map<(i, j) -> (i, j)>
#to0 = affine_map<(i, j) -> ()>
func.func @rows_differ(%w: tensor<4x4xf32>, %x: tensor<8x4xf32>) -> (tensor<f32>, tensor<4x4xf32>) {
  %loss, %g = train.step params(%w : tensor<4x4xf32>) batch(%x : tensor<8x4xf32>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x4xf32>) {
  ^bb0(%pw: tensor<4x4xf32>, %bx: tensor<8x4xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
    %o = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
    // Each row its own index: not the same rows.
    %r = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
        outs(%e : tensor<8x4xf32>) {
    ^bb0(%out: f32):
      %i = linalg.index 0 : index
      %n = arith.index_cast %i : index to i32
      %f = arith.sitofp %n : i32 to f32
      linalg.yield %f : f32
    } -> tensor<8x4xf32>
    // expected-error @below {{cannot split: operand #1 of this operation does not depend on the batch but has the batch's size in its dimension 0, and its rows differ: a micro-batch cannot tell which of them are its own}}
    %y = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%o, %r : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
    ^bb0(%a: f32, %c: f32, %out: f32):
      %t = arith.mulf %a, %c : f32
      linalg.yield %t : f32
    } -> tensor<8x4xf32>
    %es = tensor.empty() : tensor<f32>
    %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %sum = linalg.generic {indexing_maps = [#id2, #to0], iterator_types = ["reduction", "reduction"]}
        ins(%y : tensor<8x4xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %acc, %a : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    train.yield %sum : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4x4xf32>
}

// -----

// A convolution as torch-mlir writes it: its input padded around each
// example's positions (tensor.pad, per-example) and its init the bias
// broadcast over the batch and the positions (linalg.broadcast), which the
// micro-batch re-creates at its own size.
// CHECK-LABEL: func.func @padded_conv_bias_init
// CHECK: train.accumulate microbatches = 2
// CHECK: tensor.pad %{{.*}} low[0, 0, 1] high[0, 0, 1]
// CHECK: } : tensor<2x3x6xf32> to tensor<2x3x8xf32>
// CHECK: %[[I:.+]] = linalg.broadcast ins(%{{.*}} : tensor<4xf32>) outs(%{{.*}} : tensor<2x4x6xf32>) dimensions = [0, 2]
// CHECK: linalg.conv_1d_ncw_fcw {{.*}} outs(%[[I]] : tensor<2x4x6xf32>)
func.func @padded_conv_bias_init(%w: tensor<4x3x3xf32>, %bias: tensor<4xf32>, %x: tensor<4x3x6xf32>) -> (tensor<f32>, tensor<4x3x3xf32>, tensor<4xf32>) {
  %loss, %g:2 = train.step params(%w, %bias : tensor<4x3x3xf32>, tensor<4xf32>) batch(%x : tensor<4x3x6xf32>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x3x3xf32>, tensor<4xf32>) {
  ^bb0(%pw: tensor<4x3x3xf32>, %pb: tensor<4xf32>, %bx: tensor<4x3x6xf32>):
    %zero = arith.constant 0.0 : f32
    %padded = tensor.pad %bx low[0, 0, 1] high[0, 0, 1] {
    ^bb0(%i: index, %j: index, %k: index):
      tensor.yield %zero : f32
    } : tensor<4x3x6xf32> to tensor<4x3x8xf32>
    %e = tensor.empty() : tensor<4x4x6xf32>
    %init = linalg.broadcast ins(%pb : tensor<4xf32>) outs(%e : tensor<4x4x6xf32>) dimensions = [0, 2]
    %y = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>}
        ins(%padded, %pw : tensor<4x3x8xf32>, tensor<4x3x3xf32>) outs(%init : tensor<4x4x6xf32>) -> tensor<4x4x6xf32>
    %es = tensor.empty() : tensor<f32>
    %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %sum = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> ()>], iterator_types = ["reduction", "reduction", "reduction"]}
        ins(%y : tensor<4x4x6xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %t = arith.addf %acc, %sq : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    train.yield %sum : tensor<f32>
  }
  return %loss, %g#0, %g#1 : tensor<f32>, tensor<4x3x3xf32>, tensor<4xf32>
}
