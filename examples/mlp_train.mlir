// The MLP example as a whole training step, for ga-train: the step of
// examples/mlp.mlir (loss and gradients on the padded batch), its gradients
// clipped to a global norm of 1 (torch.nn.utils.clip_grad_norm_), and one
// AdamW update per parameter (torch.optim.AdamW's defaults, weight decay
// 0.01).
//
// Arguments: the parameters w1 [32, 64], b1 [64], w2 [64, 64] (each with the
// `train.init` that ga-train initializes it with: the standard deviation of
// a normal draw, 1/sqrt(fan-in), or "zeros"), the batch x [8, 16, 32] and
// labels [8, 16] (-100 at padding), the first and second AdamW moments of
// every parameter, the learning rate and the step number (1 at the first
// step).
// Results: the new parameters, the new moments, the loss, the gradient norm
// before clipping and the number of valid tokens.
//
// ga-train finds these roles in the IR (which argument the step takes as a
// parameter, which the optimizer takes as a moment, ...), not from their
// order or names.

func.func @mlp_train_step(
    %w1: tensor<32x64xf32> {train.init = 0.17677669529663687 : f64},
    %b1: tensor<64xf32> {train.init = "zeros"},
    %w2: tensor<64x64xf32> {train.init = 0.125 : f64},
    %x: tensor<8x16x32xf32>,
    %labels: tensor<8x16xi64>,
    %m_w1: tensor<32x64xf32>,
    %m_b1: tensor<64xf32>,
    %m_w2: tensor<64x64xf32>,
    %v_w1: tensor<32x64xf32>,
    %v_b1: tensor<64xf32>,
    %v_w2: tensor<64x64xf32>,
    %lr: tensor<f32>,
    %t: tensor<i64>)
    -> (tensor<32x64xf32>,
        tensor<64xf32>,
        tensor<64x64xf32>,
        tensor<32x64xf32>,
        tensor<64xf32>,
        tensor<64x64xf32>,
        tensor<32x64xf32>,
        tensor<64xf32>,
        tensor<64x64xf32>,
        tensor<f32>,
        tensor<f32>,
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

    // Hidden layer: relu(x W1 + b1).
    %e1 = tensor.empty() : tensor<128x64xf32>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128x64xf32>)
        -> tensor<128x64xf32>
    %xw1 = linalg.matmul ins(%tokens, %pw1 : tensor<128x32xf32>,
                                             tensor<32x64xf32>)
        outs(%z1 : tensor<128x64xf32>) -> tensor<128x64xf32>
    %pre = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>,
                         affine_map<(i, j) -> (j)>,
                         affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%xw1, %pb1 : tensor<128x64xf32>, tensor<64xf32>)
        outs(%e1 : tensor<128x64xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<128x64xf32>
    %hidden = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>,
                         affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%pre : tensor<128x64xf32>) outs(%e1 : tensor<128x64xf32>) {
    ^bb0(%a: f32, %out: f32):
      %c0 = arith.constant 0.0 : f32
      %r = arith.maximumf %a, %c0 : f32
      linalg.yield %r : f32
    } -> tensor<128x64xf32>

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
  // Clip the gradients to a global norm of 1; %norm is the norm before.
  %cw1, %cb1, %cw2, %norm = train.clip_by_global_norm %gw1, %gb1, %gw2
      max_norm = 1.0 : tensor<32x64xf32>, tensor<64xf32>, tensor<64x64xf32> -> tensor<f32>
  %new_w1, %new_m_w1, %new_v_w1 = train.adamw %w1, %cw1, %m_w1, %v_w1, %lr, %t
      : tensor<32x64xf32>, tensor<32x64xf32>, tensor<f32>, tensor<i64>
  %new_b1, %new_m_b1, %new_v_b1 = train.adamw %b1, %cb1, %m_b1, %v_b1, %lr, %t
      : tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>
  %new_w2, %new_m_w2, %new_v_w2 = train.adamw %w2, %cw2, %m_w2, %v_w2, %lr, %t
      : tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64>
  return %new_w1, %new_b1, %new_w2, %new_m_w1, %new_m_b1, %new_m_w2, %new_v_w1, %new_v_b1, %new_v_w2, %loss, %norm, %count
      : tensor<32x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<f32>, tensor<i64>
}
