// RUN: ga-opt --test-train-adjoint-needs --verify-diagnostics %s -o /dev/null

// What each adjoint reads from the forward pass: the memory model of
// rematerialization planning.
func.func @needs(%w: tensor<4x3xf32>, %b: tensor<3xf32>, %s: tensor<2x4x3xf32>,
                 %x: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<4x3xf32>, tensor<3xf32>, tensor<2x4x3xf32>) {
  %loss, %g:3 = train.step params(%w, %b, %s : tensor<4x3xf32>, tensor<3xf32>, tensor<2x4x3xf32>)
      batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      -> tensor<f32> grads(tensor<4x3xf32>, tensor<3xf32>, tensor<2x4x3xf32>) {
  ^bb0(%w_: tensor<4x3xf32>, %b_: tensor<3xf32>, %s_: tensor<2x4x3xf32>,
       %x_: tensor<8x4xf32>, %y_: tensor<8xi64>):
    // expected-remark @below {{adjoint needs operands [], results []}}
    %zero = arith.constant 0.0 : f32
    // expected-remark @below {{adjoint needs operands [], results []}}
    %init = tensor.empty() : tensor<8x3xf32>
    // expected-remark @below {{adjoint needs operands [], results []}}
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>) -> tensor<8x3xf32>
    // A product needs both factors.
    // expected-remark @below {{adjoint needs operands [0, 1], results []}}
    %mm = linalg.matmul ins(%x_, %w_ : tensor<8x4xf32>, tensor<4x3xf32>)
        outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    // A bias addition needs nothing.
    // expected-remark @below {{adjoint needs operands [], results []}}
    %biased = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                         affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%mm, %b_ : tensor<8x3xf32>, tensor<3xf32>) outs(%init : tensor<8x3xf32>) {
    ^bb0(%a: f32, %c: f32, %out: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
    } -> tensor<8x3xf32>
    // tanh needs its input (its derivative recomputes tanh).
    // expected-remark @below {{adjoint needs operands [0], results []}}
    %t = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%biased : tensor<8x3xf32>) outs(%init : tensor<8x3xf32>) {
    ^bb0(%a: f32, %out: f32):
      %r = math.tanh %a : f32
      linalg.yield %r : f32
    } -> tensor<8x3xf32>
    // A max reduction needs its input and its result.
    // expected-remark @below {{adjoint needs operands [], results []}}
    %lo = tensor.empty() : tensor<8xf32>
    // expected-remark @below {{adjoint needs operands [0], results [0]}}
    %mx = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
        iterator_types = ["parallel", "reduction"]}
        ins(%t : tensor<8x3xf32>) outs(%lo : tensor<8xf32>) {
    ^bb0(%a: f32, %out: f32):
      %r = arith.maximumf %a, %out : f32
      linalg.yield %r : f32
    } -> tensor<8xf32>
    // Slices need nothing.
    // expected-remark @below {{adjoint needs operands [], results []}}
    %sl = tensor.extract_slice %s_[0, 0, 0] [1, 4, 3] [1, 1, 1] : tensor<2x4x3xf32> to tensor<4x3xf32>
    // The cross-entropy needs the logits and the labels.
    // expected-remark @below {{adjoint needs operands [0, 1], results []}}
    %l = train.cross_entropy mean %t, %y_ ignore_index = -100
        : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    // A checkpoint keeps exactly its inputs.
    // expected-remark @below {{adjoint needs operands [0, 1], results []}}
    %c = train.checkpoint (%t, %mx : tensor<8x3xf32>, tensor<8xf32>) -> tensor<8x3xf32> {
    ^bb0(%a: tensor<8x3xf32>, %m: tensor<8xf32>):
      train.yield %a : tensor<8x3xf32>
    }
    // A padding needs nothing (the slice back of its cotangent).
    // expected-remark @below {{adjoint needs operands [], results []}}
    %p = tensor.pad %b_ low[1] high[0] {
    ^bb0(%i: index):
      tensor.yield %zero : f32
    } : tensor<3xf32> to tensor<4xf32>
    // expected-remark @below {{adjoint needs operands [], results []}}
    %shape = arith.constant dense<[3, 1]> : tensor<2xi64>
    // expected-remark @below {{no adjoint rule}}
    %r = tensor.reshape %b_(%shape) : (tensor<3xf32>, tensor<2xi64>) -> tensor<3x1xf32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g#0, %g#1, %g#2 : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>, tensor<2x4x3xf32>
}
