// RUN: ga-opt %s -split-input-file --train-raise-attention="key-tile=3" | FileCheck %s
// RUN: not ga-opt %s -split-input-file --train-raise-attention="key-tile=0" 2>&1 | FileCheck %s --check-prefix=TILE

// The generator's attention (examples/gen_tiny_gpt.py) becomes one
// train.attention; the tile is the largest divisor of the 4 keys not above
// key-tile = 3. Chains that are not this attention stay as they are.

// TILE: error: train-raise-attention: key-tile must be positive, got 0

// CHECK-LABEL: func.func @causal
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x2x2xf32>, %[[K:.+]]: tensor<1x4x2x2xf32>, %[[V:.+]]: tensor<1x4x2x2xf32>)
// CHECK-NOT: linalg
// CHECK: %[[O:.+]], %{{.+}} = train.attention %[[Q]], %[[K]], %[[V]] {causal, key_tile = 2 : i64, query_tile = 2 : i64, scale = 0.70710676908493042 : f64} : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>, tensor<1x2x4xf32>)
// CHECK-NEXT: return %[[O]]

// The scores without a scale: scale = 1.
// CHECK-LABEL: func.func @no_scale
// CHECK-NOT: linalg
// CHECK: train.attention {{.*}} {causal, key_tile = 2 : i64, query_tile = 2 : i64, scale = 1.000000e+00 : f64}
// CHECK-NEXT: return

// No mask: not causal.
// CHECK-LABEL: func.func @no_mask
// CHECK-NOT: linalg
// CHECK: train.attention {{.*}} {key_tile = 2 : i64, query_tile = 2 : i64, scale = 0.70710676908493042 : f64}
// CHECK-NEXT: return

// The probabilities are also returned: they must exist, nothing is raised.
// CHECK-LABEL: func.func @probs_used
// CHECK-NOT: train.attention
// CHECK-COUNT-7: linalg.generic
// CHECK-NOT: train.attention

// A mask that hides the diagonal too (j >= i) is not the causal mask.
// CHECK-LABEL: func.func @mask_includes_diagonal
// CHECK-NOT: train.attention
// CHECK-COUNT-7: linalg.generic
// CHECK-NOT: train.attention

// causal
func.func @causal(%q: tensor<1x4x2x2xf32>, %k: tensor<1x4x2x2xf32>, %v: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant -3.40282347e+38 : f32
    %e0 = tensor.empty() : tensor<1x2x4x4xf32>
    %zs = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %scores = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j, d) -> (b, i, h, d)>, affine_map<(b, h, i, j, d) -> (b, j, h, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%q, %k : tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) outs(%zs : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.mulf %in0, %in1 : f32
      %scale = arith.constant 7.07106769e-01 : f32
      %ps = arith.mulf %p, %scale : f32
      %s = arith.addf %out, %ps : f32
      linalg.yield %s : f32
    } -> tensor<1x2x4x4xf32>
    %e1 = tensor.empty() : tensor<1x2x4x4xf32>
    %masked = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%scores : tensor<1x2x4x4xf32>) outs(%e1 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %i = linalg.index 2 : index
      %j = linalg.index 3 : index
      %future = arith.cmpi ugt, %j, %i : index
      %neg = arith.constant -1.0e+09 : f32
      %m = arith.select %future, %neg, %in0 : f32
      linalg.yield %m : f32
    } -> tensor<1x2x4x4xf32>
    %er = tensor.empty() : tensor<1x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%er : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %rowmax = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%masked : tensor<1x2x4x4xf32>) outs(%mx0 : tensor<1x2x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %m = arith.maximumf %in0, %out : f32
      linalg.yield %m : f32
    } -> tensor<1x2x4xf32>
    %e2 = tensor.empty() : tensor<1x2x4x4xf32>
    %exp = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%masked, %rowmax : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%e2 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %c = arith.subf %in0, %in1 : f32
      %x = math.exp %c : f32
      linalg.yield %x : f32
    } -> tensor<1x2x4x4xf32>
    %zr = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %den = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%exp : tensor<1x2x4x4xf32>) outs(%zr : tensor<1x2x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %s = arith.addf %in0, %out : f32
      linalg.yield %s : f32
    } -> tensor<1x2x4xf32>
    %e3 = tensor.empty() : tensor<1x2x4x4xf32>
    %probs = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%exp, %den : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%e3 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.divf %in0, %in1 : f32
      linalg.yield %p : f32
    } -> tensor<1x2x4x4xf32>
    %e4 = tensor.empty() : tensor<1x4x2x2xf32>
    %zq = linalg.fill ins(%zero : f32) outs(%e4 : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
    %ctx = linalg.generic {
        indexing_maps = [affine_map<(b, i, h, d, j) -> (b, h, i, j)>, affine_map<(b, i, h, d, j) -> (b, j, h, d)>, affine_map<(b, i, h, d, j) -> (b, i, h, d)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%probs, %v : tensor<1x2x4x4xf32>, tensor<1x4x2x2xf32>) outs(%zq : tensor<1x4x2x2xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.mulf %in0, %in1 : f32
      %s = arith.addf %out, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x4x2x2xf32>
    return %ctx : tensor<1x4x2x2xf32>
}

// -----

// no_scale
func.func @no_scale(%q: tensor<1x4x2x2xf32>, %k: tensor<1x4x2x2xf32>, %v: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant -3.40282347e+38 : f32
    %e0 = tensor.empty() : tensor<1x2x4x4xf32>
    %zs = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %scores = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j, d) -> (b, i, h, d)>, affine_map<(b, h, i, j, d) -> (b, j, h, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%q, %k : tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) outs(%zs : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.mulf %in0, %in1 : f32
      %s = arith.addf %out, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x2x4x4xf32>
    %e1 = tensor.empty() : tensor<1x2x4x4xf32>
    %masked = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%scores : tensor<1x2x4x4xf32>) outs(%e1 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %i = linalg.index 2 : index
      %j = linalg.index 3 : index
      %future = arith.cmpi ugt, %j, %i : index
      %neg = arith.constant -1.0e+09 : f32
      %m = arith.select %future, %neg, %in0 : f32
      linalg.yield %m : f32
    } -> tensor<1x2x4x4xf32>
    %er = tensor.empty() : tensor<1x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%er : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %rowmax = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%masked : tensor<1x2x4x4xf32>) outs(%mx0 : tensor<1x2x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %m = arith.maximumf %in0, %out : f32
      linalg.yield %m : f32
    } -> tensor<1x2x4xf32>
    %e2 = tensor.empty() : tensor<1x2x4x4xf32>
    %exp = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%masked, %rowmax : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%e2 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %c = arith.subf %in0, %in1 : f32
      %x = math.exp %c : f32
      linalg.yield %x : f32
    } -> tensor<1x2x4x4xf32>
    %zr = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %den = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%exp : tensor<1x2x4x4xf32>) outs(%zr : tensor<1x2x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %s = arith.addf %in0, %out : f32
      linalg.yield %s : f32
    } -> tensor<1x2x4xf32>
    %e3 = tensor.empty() : tensor<1x2x4x4xf32>
    %probs = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%exp, %den : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%e3 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.divf %in0, %in1 : f32
      linalg.yield %p : f32
    } -> tensor<1x2x4x4xf32>
    %e4 = tensor.empty() : tensor<1x4x2x2xf32>
    %zq = linalg.fill ins(%zero : f32) outs(%e4 : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
    %ctx = linalg.generic {
        indexing_maps = [affine_map<(b, i, h, d, j) -> (b, h, i, j)>, affine_map<(b, i, h, d, j) -> (b, j, h, d)>, affine_map<(b, i, h, d, j) -> (b, i, h, d)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%probs, %v : tensor<1x2x4x4xf32>, tensor<1x4x2x2xf32>) outs(%zq : tensor<1x4x2x2xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.mulf %in0, %in1 : f32
      %s = arith.addf %out, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x4x2x2xf32>
    return %ctx : tensor<1x4x2x2xf32>
}

// -----

// no_mask
func.func @no_mask(%q: tensor<1x4x2x2xf32>, %k: tensor<1x4x2x2xf32>, %v: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant -3.40282347e+38 : f32
    %e0 = tensor.empty() : tensor<1x2x4x4xf32>
    %zs = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %scores = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j, d) -> (b, i, h, d)>, affine_map<(b, h, i, j, d) -> (b, j, h, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%q, %k : tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) outs(%zs : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.mulf %in0, %in1 : f32
      %scale = arith.constant 7.07106769e-01 : f32
      %ps = arith.mulf %p, %scale : f32
      %s = arith.addf %out, %ps : f32
      linalg.yield %s : f32
    } -> tensor<1x2x4x4xf32>
    %er = tensor.empty() : tensor<1x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%er : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %rowmax = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%scores : tensor<1x2x4x4xf32>) outs(%mx0 : tensor<1x2x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %m = arith.maximumf %in0, %out : f32
      linalg.yield %m : f32
    } -> tensor<1x2x4xf32>
    %e2 = tensor.empty() : tensor<1x2x4x4xf32>
    %exp = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%scores, %rowmax : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%e2 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %c = arith.subf %in0, %in1 : f32
      %x = math.exp %c : f32
      linalg.yield %x : f32
    } -> tensor<1x2x4x4xf32>
    %zr = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %den = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%exp : tensor<1x2x4x4xf32>) outs(%zr : tensor<1x2x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %s = arith.addf %in0, %out : f32
      linalg.yield %s : f32
    } -> tensor<1x2x4xf32>
    %e3 = tensor.empty() : tensor<1x2x4x4xf32>
    %probs = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%exp, %den : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%e3 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.divf %in0, %in1 : f32
      linalg.yield %p : f32
    } -> tensor<1x2x4x4xf32>
    %e4 = tensor.empty() : tensor<1x4x2x2xf32>
    %zq = linalg.fill ins(%zero : f32) outs(%e4 : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
    %ctx = linalg.generic {
        indexing_maps = [affine_map<(b, i, h, d, j) -> (b, h, i, j)>, affine_map<(b, i, h, d, j) -> (b, j, h, d)>, affine_map<(b, i, h, d, j) -> (b, i, h, d)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%probs, %v : tensor<1x2x4x4xf32>, tensor<1x4x2x2xf32>) outs(%zq : tensor<1x4x2x2xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.mulf %in0, %in1 : f32
      %s = arith.addf %out, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x4x2x2xf32>
    return %ctx : tensor<1x4x2x2xf32>
}

// -----

// probs_used
func.func @probs_used(%q: tensor<1x4x2x2xf32>, %k: tensor<1x4x2x2xf32>, %v: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>, tensor<1x2x4x4xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant -3.40282347e+38 : f32
    %e0 = tensor.empty() : tensor<1x2x4x4xf32>
    %zs = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %scores = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j, d) -> (b, i, h, d)>, affine_map<(b, h, i, j, d) -> (b, j, h, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%q, %k : tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) outs(%zs : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.mulf %in0, %in1 : f32
      %scale = arith.constant 7.07106769e-01 : f32
      %ps = arith.mulf %p, %scale : f32
      %s = arith.addf %out, %ps : f32
      linalg.yield %s : f32
    } -> tensor<1x2x4x4xf32>
    %e1 = tensor.empty() : tensor<1x2x4x4xf32>
    %masked = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%scores : tensor<1x2x4x4xf32>) outs(%e1 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %i = linalg.index 2 : index
      %j = linalg.index 3 : index
      %future = arith.cmpi ugt, %j, %i : index
      %neg = arith.constant -1.0e+09 : f32
      %m = arith.select %future, %neg, %in0 : f32
      linalg.yield %m : f32
    } -> tensor<1x2x4x4xf32>
    %er = tensor.empty() : tensor<1x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%er : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %rowmax = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%masked : tensor<1x2x4x4xf32>) outs(%mx0 : tensor<1x2x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %m = arith.maximumf %in0, %out : f32
      linalg.yield %m : f32
    } -> tensor<1x2x4xf32>
    %e2 = tensor.empty() : tensor<1x2x4x4xf32>
    %exp = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%masked, %rowmax : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%e2 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %c = arith.subf %in0, %in1 : f32
      %x = math.exp %c : f32
      linalg.yield %x : f32
    } -> tensor<1x2x4x4xf32>
    %zr = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %den = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%exp : tensor<1x2x4x4xf32>) outs(%zr : tensor<1x2x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %s = arith.addf %in0, %out : f32
      linalg.yield %s : f32
    } -> tensor<1x2x4xf32>
    %e3 = tensor.empty() : tensor<1x2x4x4xf32>
    %probs = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%exp, %den : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%e3 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.divf %in0, %in1 : f32
      linalg.yield %p : f32
    } -> tensor<1x2x4x4xf32>
    %e4 = tensor.empty() : tensor<1x4x2x2xf32>
    %zq = linalg.fill ins(%zero : f32) outs(%e4 : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
    %ctx = linalg.generic {
        indexing_maps = [affine_map<(b, i, h, d, j) -> (b, h, i, j)>, affine_map<(b, i, h, d, j) -> (b, j, h, d)>, affine_map<(b, i, h, d, j) -> (b, i, h, d)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%probs, %v : tensor<1x2x4x4xf32>, tensor<1x4x2x2xf32>) outs(%zq : tensor<1x4x2x2xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.mulf %in0, %in1 : f32
      %s = arith.addf %out, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x4x2x2xf32>
    return %ctx, %probs : tensor<1x4x2x2xf32>, tensor<1x2x4x4xf32>
}

// -----

// mask_includes_diagonal
func.func @mask_includes_diagonal(%q: tensor<1x4x2x2xf32>, %k: tensor<1x4x2x2xf32>, %v: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant -3.40282347e+38 : f32
    %e0 = tensor.empty() : tensor<1x2x4x4xf32>
    %zs = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %scores = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j, d) -> (b, i, h, d)>, affine_map<(b, h, i, j, d) -> (b, j, h, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%q, %k : tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) outs(%zs : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.mulf %in0, %in1 : f32
      %scale = arith.constant 7.07106769e-01 : f32
      %ps = arith.mulf %p, %scale : f32
      %s = arith.addf %out, %ps : f32
      linalg.yield %s : f32
    } -> tensor<1x2x4x4xf32>
    %e1 = tensor.empty() : tensor<1x2x4x4xf32>
    %masked = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%scores : tensor<1x2x4x4xf32>) outs(%e1 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %i = linalg.index 2 : index
      %j = linalg.index 3 : index
      %future = arith.cmpi uge, %j, %i : index
      %neg = arith.constant -1.0e+09 : f32
      %m = arith.select %future, %neg, %in0 : f32
      linalg.yield %m : f32
    } -> tensor<1x2x4x4xf32>
    %er = tensor.empty() : tensor<1x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%er : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %rowmax = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%masked : tensor<1x2x4x4xf32>) outs(%mx0 : tensor<1x2x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %m = arith.maximumf %in0, %out : f32
      linalg.yield %m : f32
    } -> tensor<1x2x4xf32>
    %e2 = tensor.empty() : tensor<1x2x4x4xf32>
    %exp = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%masked, %rowmax : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%e2 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %c = arith.subf %in0, %in1 : f32
      %x = math.exp %c : f32
      linalg.yield %x : f32
    } -> tensor<1x2x4x4xf32>
    %zr = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %den = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%exp : tensor<1x2x4x4xf32>) outs(%zr : tensor<1x2x4xf32>) {
    ^bb0(%in0: f32, %out: f32):
      %s = arith.addf %in0, %out : f32
      linalg.yield %s : f32
    } -> tensor<1x2x4xf32>
    %e3 = tensor.empty() : tensor<1x2x4x4xf32>
    %probs = linalg.generic {
        indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>, affine_map<(b, h, i, j) -> (b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%exp, %den : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%e3 : tensor<1x2x4x4xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.divf %in0, %in1 : f32
      linalg.yield %p : f32
    } -> tensor<1x2x4x4xf32>
    %e4 = tensor.empty() : tensor<1x4x2x2xf32>
    %zq = linalg.fill ins(%zero : f32) outs(%e4 : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
    %ctx = linalg.generic {
        indexing_maps = [affine_map<(b, i, h, d, j) -> (b, h, i, j)>, affine_map<(b, i, h, d, j) -> (b, j, h, d)>, affine_map<(b, i, h, d, j) -> (b, i, h, d)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%probs, %v : tensor<1x2x4x4xf32>, tensor<1x4x2x2xf32>) outs(%zq : tensor<1x4x2x2xf32>) {
    ^bb0(%in0: f32, %in1: f32, %out: f32):
      %p = arith.mulf %in0, %in1 : f32
      %s = arith.addf %out, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x4x2x2xf32>
    return %ctx : tensor<1x4x2x2xf32>
}

