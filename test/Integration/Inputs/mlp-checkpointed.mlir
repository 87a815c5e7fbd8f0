// examples/mlp.mlir with its hidden layer in a train.checkpoint region
// (test/Integration/checkpoint-bitwise.test). The original example:
//
// The MLP example: one training step of a two-layer perceptron on padded
// token data.
//
//   x[B, S, D] -> relu(x W1 + b1) W2 -> logits[B*S, V]
//   loss = train.cross_entropy mean (ignore_index = -100)
//
// B = 8 sequences of S = 16 tokens, D = 32 features, a hidden layer of 64 and
// V = 64 classes. Padding positions carry the label -100: they are ignored by
// the loss and not counted, which is exactly what makes a naive split of the
// batch inexact. The step also returns the number of valid tokens (an
// auxiliary output).
//
// Parameters: w1 [32, 64], b1 [64], w2 [64, 64].
// Batch:      x [8, 16, 32] (f32), labels [8, 16] (i64).
// Results:    loss, d loss / d w1, d loss / d b1, d loss / d w2, valid count.

func.func @mlp_step_checkpointed(%w1: tensor<32x64xf32>, %b1: tensor<64xf32>,
                    %w2: tensor<64x64xf32>, %x: tensor<8x16x32xf32>,
                    %labels: tensor<8x16xi64>)
    -> (tensor<f32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64x64xf32>,
        tensor<i64>) {
  %loss, %gw1, %gb1, %gw2, %count = train.step
      params(%w1, %b1, %w2 : tensor<32x64xf32>, tensor<64xf32>,
                             tensor<64x64xf32>)
      batch(%x, %labels : tensor<8x16x32xf32>, tensor<8x16xi64>)
      -> tensor<f32>
      grads(tensor<32x64xf32>, tensor<64xf32>, tensor<64x64xf32>)
      aux(tensor<i64>) {
  ^bb0(%pw1: tensor<32x64xf32>, %pb1: tensor<64xf32>, %pw2: tensor<64x64xf32>,
       %bx: tensor<8x16x32xf32>, %blabels: tensor<8x16xi64>):
    %zero = arith.constant 0.0 : f32
    %tokens = tensor.collapse_shape %bx [[0, 1], [2]]
        : tensor<8x16x32xf32> into tensor<128x32xf32>

    // Hidden layer: relu(x W1 + b1), recomputed in the backward pass.
    %hidden = train.checkpoint (%tokens, %pw1, %pb1
        : tensor<128x32xf32>, tensor<32x64xf32>, tensor<64xf32>)
        -> tensor<128x64xf32> {
    ^bb0(%ct: tensor<128x32xf32>, %cw1: tensor<32x64xf32>,
         %cb1: tensor<64xf32>):
      %czero = arith.constant 0.0 : f32
      %e1 = tensor.empty() : tensor<128x64xf32>
      %z1 = linalg.fill ins(%czero : f32) outs(%e1 : tensor<128x64xf32>)
          -> tensor<128x64xf32>
      %xw1 = linalg.matmul ins(%ct, %cw1 : tensor<128x32xf32>,
                                               tensor<32x64xf32>)
          outs(%z1 : tensor<128x64xf32>) -> tensor<128x64xf32>
      %pre = linalg.generic {
          indexing_maps = [affine_map<(i, j) -> (i, j)>,
                           affine_map<(i, j) -> (j)>,
                           affine_map<(i, j) -> (i, j)>],
          iterator_types = ["parallel", "parallel"]}
          ins(%xw1, %cb1 : tensor<128x64xf32>, tensor<64xf32>)
          outs(%e1 : tensor<128x64xf32>) {
      ^bb0(%a: f32, %b: f32, %out: f32):
        %s = arith.addf %a, %b : f32
        linalg.yield %s : f32
      } -> tensor<128x64xf32>
      %relu = linalg.generic {
          indexing_maps = [affine_map<(i, j) -> (i, j)>,
                           affine_map<(i, j) -> (i, j)>],
          iterator_types = ["parallel", "parallel"]}
          ins(%pre : tensor<128x64xf32>) outs(%e1 : tensor<128x64xf32>) {
      ^bb0(%a: f32, %out: f32):
        %c0 = arith.constant 0.0 : f32
        %r = arith.maximumf %a, %c0 : f32
        linalg.yield %r : f32
      } -> tensor<128x64xf32>
      train.yield %relu : tensor<128x64xf32>
    }

    // Output layer: logits = hidden W2.
    %e2 = tensor.empty() : tensor<128x64xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<128x64xf32>)
        -> tensor<128x64xf32>
    %logits = linalg.matmul ins(%hidden, %pw2 : tensor<128x64xf32>,
                                                tensor<64x64xf32>)
        outs(%z2 : tensor<128x64xf32>) -> tensor<128x64xf32>

    // Token-level cross-entropy, mean over the valid tokens.
    %flat_labels = tensor.collapse_shape %blabels [[0, 1]]
        : tensor<8x16xi64> into tensor<128xi64>
    %l, %n = train.cross_entropy mean %logits, %flat_labels
        ignore_index = -100
        : (tensor<128x64xf32>, tensor<128xi64>) -> (tensor<f32>, tensor<i64>)
    train.yield %l, %n : tensor<f32>, tensor<i64>
  }
  return %loss, %gw1, %gb1, %gw2, %count
      : tensor<f32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64x64xf32>,
        tensor<i64>
}
