// RUN: ga-opt --train-differentiate --split-input-file --verify-diagnostics %s

// An operation without an adjoint rule between the parameters and the loss.
func.func @no_rule(%w: tensor<4xf32>, %y: tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>) {
  %loss, %g = train.step params(%w : tensor<4xf32>) batch(%y : tensor<4xi64>)
      -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %by: tensor<4xi64>):
    %shape = arith.constant dense<[4, 1]> : tensor<2xi64>
    // expected-error @below {{'tensor.reshape' op cannot be differentiated: train-differentiate has no adjoint rule for it, and it lies between the parameters and the loss}}
    %e = tensor.reshape %pw(%shape) : (tensor<4xf32>, tensor<2xi64>) -> tensor<4x1xf32>
    %l = train.cross_entropy sum %e, %by ignore_index = -100
        : (tensor<4x1xf32>, tensor<4xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4xf32>
}

// -----

// A scalar operation without a derivative rule inside a generic body.
func.func @no_scalar_rule(%w: tensor<8x3xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<8x3xf32>) {
  %loss, %g = train.step params(%w : tensor<8x3xf32>) batch(%y : tensor<8xi64>)
      -> tensor<f32> grads(tensor<8x3xf32>) {
  ^bb0(%pw: tensor<8x3xf32>, %by: tensor<8xi64>):
    %e = tensor.empty() : tensor<8x3xf32>
    %s = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%pw : tensor<8x3xf32>) outs(%e : tensor<8x3xf32>) {
    ^bb0(%in: f32, %out: f32):
      // expected-error @below {{'math.acosh' op has no derivative rule: train-differentiate cannot differentiate a linalg.generic body through it}}
      %r = math.acosh %in : f32
      linalg.yield %r : f32
    } -> tensor<8x3xf32>
    %l = train.cross_entropy sum %s, %by ignore_index = -100
        : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<8x3xf32>
}

// -----

// A product reduction has no adjoint through the one rule.
func.func @product_reduction(%w: tensor<8x3xf32>) -> (tensor<f32>, tensor<8x3xf32>) {
  %loss, %g = train.step params(%w : tensor<8x3xf32>) batch(%w : tensor<8x3xf32>)
      -> tensor<f32> grads(tensor<8x3xf32>) {
  ^bb0(%pw: tensor<8x3xf32>, %bw: tensor<8x3xf32>):
    %one = arith.constant 1.0 : f32
    %e = tensor.empty() : tensor<f32>
    %i = linalg.fill ins(%one : f32) outs(%e : tensor<f32>) -> tensor<f32>
    // expected-error @below {{'linalg.generic' op cannot be differentiated: the reduction of output #0 combines with 'arith.mulf'; only additions, minima and maxima can be differentiated}}
    %p = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
        iterator_types = ["reduction", "reduction"]}
        ins(%pw : tensor<8x3xf32>) outs(%i : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.mulf %in, %out : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    train.yield %p : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<8x3xf32>
}

// -----

// A parameter read through a map that is not a projected permutation.
func.func @non_permutation_map(%w: tensor<8xf32>, %x: tensor<4x4xf32>) -> (tensor<f32>, tensor<8xf32>) {
  %loss, %g = train.step params(%w : tensor<8xf32>) batch(%x : tensor<4x4xf32>)
      -> tensor<f32> grads(tensor<8xf32>) {
  ^bb0(%pw: tensor<8xf32>, %bx: tensor<4x4xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<f32>
    %i = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    // expected-error @below {{'linalg.generic' op cannot be differentiated: operand #0 is read through affine_map<(d0, d1) -> (d0 + d1)>, which is not a projected permutation}}
    %s = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i + j)>, affine_map<(i, j) -> (i, j)>,
                         affine_map<(i, j) -> ()>],
        iterator_types = ["reduction", "reduction"]}
        ins(%pw, %bx : tensor<8xf32>, tensor<4x4xf32>) outs(%i : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %out, %m : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    train.yield %s : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<8xf32>
}

// -----

// The init of a max reduction may not depend on a parameter.
func.func @active_max_init(%w: tensor<3xf32>, %x: tensor<3x4xf32>) -> (tensor<f32>, tensor<3xf32>) {
  %loss, %g = train.step params(%w : tensor<3xf32>) batch(%x : tensor<3x4xf32>)
      -> tensor<f32> grads(tensor<3xf32>) {
  ^bb0(%pw: tensor<3xf32>, %bx: tensor<3x4xf32>):
    // expected-error @below {{'linalg.generic' op cannot be differentiated: the init of a minimum/maximum reduction (output #0) depends on a parameter}}
    %m = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
        iterator_types = ["parallel", "reduction"]}
        ins(%bx : tensor<3x4xf32>) outs(%pw : tensor<3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %out : f32
      linalg.yield %r : f32
    } -> tensor<3xf32>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<f32>
    %i = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {
        indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
        iterator_types = ["reduction"]}
        ins(%m : tensor<3xf32>) outs(%i : tensor<f32>) {
    ^bb0(%a: f32, %out: f32):
      %r = arith.addf %out, %a : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    train.yield %s : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<3xf32>
}

// -----

// A step that is still split must go through train-split-batch first.
func.func @split_step(%w: tensor<8x3xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<8x3xf32>) {
  // expected-error @below {{'train.step' op has microbatches = 2 and data_parallel = 1; split the batch first (train-split-batch), then train-differentiate differentiates the train.accumulate body}}
  %loss, %g = train.step params(%w : tensor<8x3xf32>) batch(%y : tensor<8xi64>)
      attributes {microbatches = 2 : i64}
      -> tensor<f32> grads(tensor<8x3xf32>) {
  ^bb0(%pw: tensor<8x3xf32>, %by: tensor<8xi64>):
    %l = train.cross_entropy sum %pw, %by ignore_index = -100
        : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<8x3xf32>
}

// -----

// Dynamic shapes are not supported.
func.func @dynamic(%w: tensor<?x3xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<?x3xf32>) {
  // expected-error @below {{'train.step' op cannot be differentiated: block argument #0 has a dynamic shape ('tensor<?x3xf32>'); train-differentiate needs static shapes}}
  %loss, %g = train.step params(%w : tensor<?x3xf32>) batch(%y : tensor<8xi64>)
      -> tensor<f32> grads(tensor<?x3xf32>) {
  ^bb0(%pw: tensor<?x3xf32>, %by: tensor<8xi64>):
    %l = train.cross_entropy sum %pw, %by ignore_index = -100
        : (tensor<?x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<?x3xf32>
}
