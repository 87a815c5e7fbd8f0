// RUN: ga-opt %s -split-input-file --train-raise-attention="key-tile=3" | FileCheck %s
// RUN: ga-opt %s -split-input-file --train-raise-attention="key-tile=3 report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// report=true: a remark at each attention raised (its masks), and at each
// softmax over rank-4 scores left as written (the four refused forms below,
// the query mask, the key mask's guard).
// REPORT: remark: attention raised to train.attention (causal, 2 heads of 2 features)
// REPORT: remark: attention raised to train.attention (causal, 2 heads of 2 features)
// REPORT-COUNT-4: remark: attention left as written: a softmax over 'tensor<1x2x4x4xf32>' scores that train-raise-attention does not recognize as attention
// REPORT: remark: attention raised to train.attention (causal, key mask, 2 heads of 2 features)
// REPORT-COUNT-2: remark: attention left as written: a softmax over 'tensor<2x2x4x4xf32>' scores
// REPORT: remark: attention raised to train.attention (causal, 2 heads of 2 features)
// REPORT: remark: attention raised to train.attention (key mask, 2 heads of 2 features)

// The importer's attention (PyTorch through torch-mlir and
// ga-legalize-import, as test/Import/Inputs/export-nanogpt-sdpa.mlir has
// it): heads moved before positions, batch matmuls over [B * H, ...], a
// causal mask over [S, T] computed from linalg.index, the softmax with its
// subtraction in a generic of its own, the output moved back. Each mask is
// evaluated at every (query, key); only j <= i is causal.

// scaled_dot_product_attention: q and k each scaled by 0.5 on the way,
// the mask added (0 or -inf), the guard for rows without a key.
// CHECK-LABEL: func.func @sdpa
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x2x2xf32>, %[[K:.+]]: tensor<1x4x2x2xf32>, %[[V:.+]]: tensor<1x4x2x2xf32>)
// CHECK-NOT: linalg
// CHECK-NOT: tensor.
// CHECK: %[[O:.+]], %{{.+}} = train.attention %[[Q]], %[[K]], %[[V]] {causal, key_tile = 2 : i64, masked_score = 0xFFF0000000000000 : f64, query_tile = 2 : i64, scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[O]]

// nanoGPT's masked_fill: transposes, the scores scaled after the product,
// select(not (j - i <= 0), -inf, s).
// CHECK-LABEL: func.func @masked_fill
// CHECK-NOT: linalg
// CHECK-NOT: tensor.
// CHECK: %[[O:.+]], %{{.+}} = train.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, key_tile = 2 : i64, masked_score = 0xFFF0000000000000 : f64, query_tile = 2 : i64, scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[O]]

// j - i < 0: the diagonal is hidden too, not the causal mask.
// CHECK-LABEL: func.func @mask_hides_diagonal
// CHECK-NOT: train.attention
// CHECK-COUNT-2: linalg.batch_matmul
// CHECK-NOT: train.attention

// The guard without a mask could select (a row of -inf scores): kept.
// CHECK-LABEL: func.func @guard_without_mask
// CHECK-NOT: train.attention
// CHECK-COUNT-2: linalg.batch_matmul
// CHECK-NOT: train.attention

// The probabilities are returned too: they must exist.
// CHECK-LABEL: func.func @probs_returned
// CHECK-NOT: train.attention
// CHECK-COUNT-2: linalg.batch_matmul
// CHECK-NOT: train.attention

// A mask that hides the past (j - i >= 0 selects -inf): kept.
// CHECK-LABEL: func.func @mask_hides_past
// CHECK-NOT: train.attention
// CHECK-COUNT-2: linalg.batch_matmul
// CHECK-NOT: train.attention

// transformers' GPT-2: the batch's attention mask (i64, != 0) and the
// causal mask ([1, 1, S, T]) combined into [B, 1, S, T], 0 or the lowest
// float, collapsed and added to the scaled scores. The mask read at (b, j)
// becomes the key mask.
// CHECK-LABEL: func.func @key_mask
// CHECK-SAME: %[[AM:[^:]+]]: tensor<2x4xi64>)
// CHECK: %[[SEEN:.+]] = linalg.generic {{.*}} ins(%[[AM]] : tensor<2x4xi64>) outs(%{{.+}} : tensor<2x4xi1>)
// CHECK: } -> tensor<2x4xi1>
// CHECK-NOT: linalg
// CHECK: %[[O:.+]], %{{.+}} = train.attention %{{.+}}, %{{.+}}, %{{.+}} key_mask %[[SEEN]] {causal, key_tile = 2 : i64, masked_score = -3.4028234663852886E+38 : f64, query_tile = 2 : i64, scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[O]]

// The same mask read at (b, i): it hides queries, not keys. Kept.
// CHECK-LABEL: func.func @query_mask
// CHECK-NOT: train.attention
// CHECK-COUNT-2: linalg.batch_matmul
// CHECK-NOT: train.attention

// A key mask and scaled_dot_product_attention's guard: a row may see no
// key, where the guard selects. Kept.
// CHECK-LABEL: func.func @key_mask_guard
// CHECK-NOT: train.attention
// CHECK-COUNT-2: linalg.batch_matmul
// CHECK-NOT: train.attention

// transformers' Llama: the queries head-major after rotary embeddings
// (transposed back), grouped-query keys and values [B, G, R, T, D]
// (collapsed to the G R heads, then transposed).
// CHECK-LABEL: func.func @grouped
// CHECK-SAME: (%[[Q4:.+]]: tensor<2x2x4x2xf32>, %[[K5:.+]]: tensor<2x1x2x4x2xf32>, %[[V5:.+]]: tensor<2x1x2x4x2xf32>)
// CHECK: %[[K4:.+]] = tensor.collapse_shape %[[K5]] {{\[\[}}0], [1, 2], [3], [4]]
// CHECK: %[[Q:.+]] = linalg.transpose ins(%[[Q4]] : tensor<2x2x4x2xf32>) outs(%{{.+}} : tensor<2x4x2x2xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[K:.+]] = linalg.transpose ins(%[[K4]] : tensor<2x2x4x2xf32>) outs(%{{.+}} : tensor<2x4x2x2xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[V4:.+]] = tensor.collapse_shape %[[V5]] {{\[\[}}0], [1, 2], [3], [4]]
// CHECK: %[[V:.+]] = linalg.transpose ins(%[[V4]] : tensor<2x2x4x2xf32>) outs(%{{.+}} : tensor<2x4x2x2xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[O:.+]], %{{.+}} = train.attention %[[Q]], %[[K]], %[[V]] {causal, key_tile = 2 : i64, masked_score = 0xFFF0000000000000 : f64, query_tile = 2 : i64, scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[O]]

// transformers' BERT: the attention mask alone (its "causal" part all
// true): not causal, with a key mask.
// CHECK-LABEL: func.func @key_mask_only
// CHECK-SAME: %[[AM:[^:]+]]: tensor<2x4xi64>)
// CHECK: %[[SEEN:.+]] = linalg.generic {{.*}} ins(%[[AM]] : tensor<2x4xi64>) outs(%{{.+}} : tensor<2x4xi1>)
// CHECK: } -> tensor<2x4xi1>
// CHECK-NOT: linalg
// CHECK: %[[O:.+]], %{{.+}} = train.attention %{{.+}}, %{{.+}}, %{{.+}} key_mask %[[SEEN]] {key_tile = 2 : i64, masked_score = -3.4028234663852886E+38 : f64, query_tile = 2 : i64, scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[O]]

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#st4 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

func.func @sdpa(%q: tensor<1x4x2x2xf32>, %k: tensor<1x4x2x2xf32>, %v: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant 0xFF800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %ninf64 = arith.constant 0xFFF0000000000000 : f64
    %half = arith.constant 0.5 : f32
    %quarter = arith.constant 0.25 : f32
    %c0 = arith.constant 0 : i64
    %true = arith.constant true
    %qse = tensor.empty() : tensor<1x2x4x2xf32>
    %qs = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q : tensor<1x4x2x2xf32>) outs(%qse : tensor<1x2x4x2xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %half : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x2xf32>
    %kse = tensor.empty() : tensor<1x2x2x4xf32>
    %ks = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k : tensor<1x4x2x2xf32>) outs(%kse : tensor<1x2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %half : f32
      linalg.yield %y : f32
    } -> tensor<1x2x2x4xf32>
    %qkca = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %qkcb = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
    %qke = tensor.empty() : tensor<2x4x4xf32>
    %qkz = linalg.fill ins(%zero : f32) outs(%qke : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %qkm = linalg.batch_matmul ins(%qkca, %qkcb : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%qkz : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %qk = tensor.expand_shape %qkm [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
    %dme = tensor.empty() : tensor<4x4xi64>
    %dm = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%dme : tensor<4x4xi64>) {
    ^bb0(%out: i64):
      %i = linalg.index 0 : index
      %ii = arith.index_cast %i : index to i64
      %j = linalg.index 1 : index
      %jj = arith.index_cast %j : index to i64
      %y = arith.subi %jj, %ii : i64
      linalg.yield %y : i64
    } -> tensor<4x4xi64>
    %vme = tensor.empty() : tensor<4x4xi1>
    %vm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%dm : tensor<4x4xi64>) outs(%vme : tensor<4x4xi1>) {
    ^bb0(%in: i64, %out: i1):
      %y = arith.cmpi sle, %in, %c0 : i64
      linalg.yield %y : i1
    } -> tensor<4x4xi1>
    %fme = tensor.empty() : tensor<4x4xf32>
    %fm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%vm : tensor<4x4xi1>) outs(%fme : tensor<4x4xf32>) {
    ^bb0(%in: i1, %out: f32):
      %y = arith.select %in, %zero, %ninf : f32
      linalg.yield %y : f32
    } -> tensor<4x4xf32>
    %mse = tensor.empty() : tensor<1x2x4x4xf32>
    %ms = linalg.generic {indexing_maps = [#id4, #st4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk, %fm : tensor<1x2x4x4xf32>, tensor<4x4xf32>) outs(%mse : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.addf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %mxe = tensor.empty() : tensor<1x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%mxe : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x2x4x4xf32>) outs(%mx0 : tensor<1x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.maximumf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4xf32>
    %sube = tensor.empty() : tensor<1x2x4x4xf32>
    %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%sube : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.subf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %exe = tensor.empty() : tensor<1x2x4x4xf32>
    %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<1x2x4x4xf32>) outs(%exe : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %sme = tensor.empty() : tensor<1x2x4xf32>
    %sm0 = linalg.fill ins(%zero : f32) outs(%sme : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %sm = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x4x4xf32>) outs(%sm0 : tensor<1x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4xf32>
    %pre = tensor.empty() : tensor<1x2x4x4xf32>
    %pr = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%pre : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.divf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %isninfe = tensor.empty() : tensor<1x2x4x4xi1>
    %isninf = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms : tensor<1x2x4x4xf32>) outs(%isninfe : tensor<1x2x4x4xi1>) {
    ^bb0(%in: f32, %out: i1):
      %w = arith.extf %in : f32 to f64
      %y = arith.cmpf oeq, %w, %ninf64 : f64
      linalg.yield %y : i1
    } -> tensor<1x2x4x4xi1>
    %alle = tensor.empty() : tensor<1x2x4xi1>
    %all0 = linalg.fill ins(%true : i1) outs(%alle : tensor<1x2x4xi1>) -> tensor<1x2x4xi1>
    %all = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%isninf : tensor<1x2x4x4xi1>) outs(%all0 : tensor<1x2x4xi1>) {
    ^bb0(%in: i1, %out: i1):
      %y = arith.andi %in, %out : i1
      linalg.yield %y : i1
    } -> tensor<1x2x4xi1>
    %gde = tensor.empty() : tensor<1x2x4x4xf32>
    %gd = linalg.generic {indexing_maps = [#row4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%all, %pr : tensor<1x2x4xi1>, tensor<1x2x4x4xf32>) outs(%gde : tensor<1x2x4x4xf32>) {
    ^bb0(%in: i1, %in1: f32, %out: f32):
      %y = arith.select %in, %zero, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %vte = tensor.empty() : tensor<1x2x4x2xf32>
    %vt = linalg.transpose ins(%v : tensor<1x4x2x2xf32>) outs(%vte : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %pvca = tensor.collapse_shape %gd [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
    %pvcb = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %pve = tensor.empty() : tensor<2x4x2xf32>
    %pvz = linalg.fill ins(%zero : f32) outs(%pve : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %pvm = linalg.batch_matmul ins(%pvca, %pvcb : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%pvz : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %pv = tensor.expand_shape %pvm [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
    %oe = tensor.empty() : tensor<1x4x2x2xf32>
    %o = linalg.transpose ins(%pv : tensor<1x2x4x2xf32>) outs(%oe : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
    return %o : tensor<1x4x2x2xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#st4 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

func.func @masked_fill(%q: tensor<1x4x2x2xf32>, %k: tensor<1x4x2x2xf32>, %v: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant 0xFF800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %ninf64 = arith.constant 0xFFF0000000000000 : f64
    %half = arith.constant 0.5 : f32
    %quarter = arith.constant 0.25 : f32
    %c0 = arith.constant 0 : i64
    %true = arith.constant true
    %qse = tensor.empty() : tensor<1x2x4x2xf32>
    %qs = linalg.transpose ins(%q : tensor<1x4x2x2xf32>) outs(%qse : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %kse = tensor.empty() : tensor<1x2x2x4xf32>
    %ks = linalg.transpose ins(%k : tensor<1x4x2x2xf32>) outs(%kse : tensor<1x2x2x4xf32>) permutation = [0, 2, 3, 1]
    %qkca = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %qkcb = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
    %qke = tensor.empty() : tensor<2x4x4xf32>
    %qkz = linalg.fill ins(%zero : f32) outs(%qke : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %qkm = linalg.batch_matmul ins(%qkca, %qkcb : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%qkz : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %qk = tensor.expand_shape %qkm [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
    %sce = tensor.empty() : tensor<1x2x4x4xf32>
    %sc = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<1x2x4x4xf32>) outs(%sce : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %quarter : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %dme = tensor.empty() : tensor<4x4xi64>
    %dm = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%dme : tensor<4x4xi64>) {
    ^bb0(%out: i64):
      %i = linalg.index 0 : index
      %ii = arith.index_cast %i : index to i64
      %j = linalg.index 1 : index
      %jj = arith.index_cast %j : index to i64
      %y = arith.subi %jj, %ii : i64
      linalg.yield %y : i64
    } -> tensor<4x4xi64>
    %vme = tensor.empty() : tensor<4x4xi1>
    %vm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%dm : tensor<4x4xi64>) outs(%vme : tensor<4x4xi1>) {
    ^bb0(%in: i64, %out: i1):
      %y = arith.cmpi sle, %in, %c0 : i64
      linalg.yield %y : i1
    } -> tensor<4x4xi1>
    %hm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%vm : tensor<4x4xi1>) outs(%vme : tensor<4x4xi1>) {
    ^bb0(%in: i1, %out: i1):
      %y = arith.xori %in, %true : i1
      linalg.yield %y : i1
    } -> tensor<4x4xi1>
    %mse = tensor.empty() : tensor<1x2x4x4xf32>
    %ms = linalg.generic {indexing_maps = [#st4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%hm, %sc : tensor<4x4xi1>, tensor<1x2x4x4xf32>) outs(%mse : tensor<1x2x4x4xf32>) {
    ^bb0(%in: i1, %in1: f32, %out: f32):
      %y = arith.select %in, %ninf, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %mxe = tensor.empty() : tensor<1x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%mxe : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x2x4x4xf32>) outs(%mx0 : tensor<1x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.maximumf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4xf32>
    %sube = tensor.empty() : tensor<1x2x4x4xf32>
    %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%sube : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.subf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %exe = tensor.empty() : tensor<1x2x4x4xf32>
    %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<1x2x4x4xf32>) outs(%exe : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %sme = tensor.empty() : tensor<1x2x4xf32>
    %sm0 = linalg.fill ins(%zero : f32) outs(%sme : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %sm = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x4x4xf32>) outs(%sm0 : tensor<1x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4xf32>
    %pre = tensor.empty() : tensor<1x2x4x4xf32>
    %pr = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%pre : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.divf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %vte = tensor.empty() : tensor<1x2x4x2xf32>
    %vt = linalg.transpose ins(%v : tensor<1x4x2x2xf32>) outs(%vte : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %pvca = tensor.collapse_shape %pr [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
    %pvcb = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %pve = tensor.empty() : tensor<2x4x2xf32>
    %pvz = linalg.fill ins(%zero : f32) outs(%pve : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %pvm = linalg.batch_matmul ins(%pvca, %pvcb : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%pvz : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %pv = tensor.expand_shape %pvm [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
    %oe = tensor.empty() : tensor<1x4x2x2xf32>
    %o = linalg.transpose ins(%pv : tensor<1x2x4x2xf32>) outs(%oe : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
    return %o : tensor<1x4x2x2xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#st4 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

func.func @mask_hides_diagonal(%q: tensor<1x4x2x2xf32>, %k: tensor<1x4x2x2xf32>, %v: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant 0xFF800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %ninf64 = arith.constant 0xFFF0000000000000 : f64
    %half = arith.constant 0.5 : f32
    %quarter = arith.constant 0.25 : f32
    %c0 = arith.constant 0 : i64
    %true = arith.constant true
    %qse = tensor.empty() : tensor<1x2x4x2xf32>
    %qs = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q : tensor<1x4x2x2xf32>) outs(%qse : tensor<1x2x4x2xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %half : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x2xf32>
    %kse = tensor.empty() : tensor<1x2x2x4xf32>
    %ks = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k : tensor<1x4x2x2xf32>) outs(%kse : tensor<1x2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %half : f32
      linalg.yield %y : f32
    } -> tensor<1x2x2x4xf32>
    %qkca = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %qkcb = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
    %qke = tensor.empty() : tensor<2x4x4xf32>
    %qkz = linalg.fill ins(%zero : f32) outs(%qke : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %qkm = linalg.batch_matmul ins(%qkca, %qkcb : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%qkz : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %qk = tensor.expand_shape %qkm [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
    %dme = tensor.empty() : tensor<4x4xi64>
    %dm = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%dme : tensor<4x4xi64>) {
    ^bb0(%out: i64):
      %i = linalg.index 0 : index
      %ii = arith.index_cast %i : index to i64
      %j = linalg.index 1 : index
      %jj = arith.index_cast %j : index to i64
      %y = arith.subi %jj, %ii : i64
      linalg.yield %y : i64
    } -> tensor<4x4xi64>
    %vme = tensor.empty() : tensor<4x4xi1>
    %vm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%dm : tensor<4x4xi64>) outs(%vme : tensor<4x4xi1>) {
    ^bb0(%in: i64, %out: i1):
      %y = arith.cmpi slt, %in, %c0 : i64
      linalg.yield %y : i1
    } -> tensor<4x4xi1>
    %fme = tensor.empty() : tensor<4x4xf32>
    %fm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%vm : tensor<4x4xi1>) outs(%fme : tensor<4x4xf32>) {
    ^bb0(%in: i1, %out: f32):
      %y = arith.select %in, %zero, %ninf : f32
      linalg.yield %y : f32
    } -> tensor<4x4xf32>
    %mse = tensor.empty() : tensor<1x2x4x4xf32>
    %ms = linalg.generic {indexing_maps = [#id4, #st4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk, %fm : tensor<1x2x4x4xf32>, tensor<4x4xf32>) outs(%mse : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.addf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %mxe = tensor.empty() : tensor<1x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%mxe : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x2x4x4xf32>) outs(%mx0 : tensor<1x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.maximumf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4xf32>
    %sube = tensor.empty() : tensor<1x2x4x4xf32>
    %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%sube : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.subf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %exe = tensor.empty() : tensor<1x2x4x4xf32>
    %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<1x2x4x4xf32>) outs(%exe : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %sme = tensor.empty() : tensor<1x2x4xf32>
    %sm0 = linalg.fill ins(%zero : f32) outs(%sme : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %sm = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x4x4xf32>) outs(%sm0 : tensor<1x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4xf32>
    %pre = tensor.empty() : tensor<1x2x4x4xf32>
    %pr = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%pre : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.divf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %isninfe = tensor.empty() : tensor<1x2x4x4xi1>
    %isninf = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms : tensor<1x2x4x4xf32>) outs(%isninfe : tensor<1x2x4x4xi1>) {
    ^bb0(%in: f32, %out: i1):
      %w = arith.extf %in : f32 to f64
      %y = arith.cmpf oeq, %w, %ninf64 : f64
      linalg.yield %y : i1
    } -> tensor<1x2x4x4xi1>
    %alle = tensor.empty() : tensor<1x2x4xi1>
    %all0 = linalg.fill ins(%true : i1) outs(%alle : tensor<1x2x4xi1>) -> tensor<1x2x4xi1>
    %all = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%isninf : tensor<1x2x4x4xi1>) outs(%all0 : tensor<1x2x4xi1>) {
    ^bb0(%in: i1, %out: i1):
      %y = arith.andi %in, %out : i1
      linalg.yield %y : i1
    } -> tensor<1x2x4xi1>
    %gde = tensor.empty() : tensor<1x2x4x4xf32>
    %gd = linalg.generic {indexing_maps = [#row4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%all, %pr : tensor<1x2x4xi1>, tensor<1x2x4x4xf32>) outs(%gde : tensor<1x2x4x4xf32>) {
    ^bb0(%in: i1, %in1: f32, %out: f32):
      %y = arith.select %in, %zero, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %vte = tensor.empty() : tensor<1x2x4x2xf32>
    %vt = linalg.transpose ins(%v : tensor<1x4x2x2xf32>) outs(%vte : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %pvca = tensor.collapse_shape %gd [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
    %pvcb = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %pve = tensor.empty() : tensor<2x4x2xf32>
    %pvz = linalg.fill ins(%zero : f32) outs(%pve : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %pvm = linalg.batch_matmul ins(%pvca, %pvcb : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%pvz : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %pv = tensor.expand_shape %pvm [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
    %oe = tensor.empty() : tensor<1x4x2x2xf32>
    %o = linalg.transpose ins(%pv : tensor<1x2x4x2xf32>) outs(%oe : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
    return %o : tensor<1x4x2x2xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#st4 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

func.func @guard_without_mask(%q: tensor<1x4x2x2xf32>, %k: tensor<1x4x2x2xf32>, %v: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant 0xFF800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %ninf64 = arith.constant 0xFFF0000000000000 : f64
    %half = arith.constant 0.5 : f32
    %quarter = arith.constant 0.25 : f32
    %c0 = arith.constant 0 : i64
    %true = arith.constant true
    %qse = tensor.empty() : tensor<1x2x4x2xf32>
    %qs = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q : tensor<1x4x2x2xf32>) outs(%qse : tensor<1x2x4x2xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %half : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x2xf32>
    %kse = tensor.empty() : tensor<1x2x2x4xf32>
    %ks = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k : tensor<1x4x2x2xf32>) outs(%kse : tensor<1x2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %half : f32
      linalg.yield %y : f32
    } -> tensor<1x2x2x4xf32>
    %qkca = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %qkcb = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
    %qke = tensor.empty() : tensor<2x4x4xf32>
    %qkz = linalg.fill ins(%zero : f32) outs(%qke : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %qkm = linalg.batch_matmul ins(%qkca, %qkcb : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%qkz : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %qk = tensor.expand_shape %qkm [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
    %mxe = tensor.empty() : tensor<1x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%mxe : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qk : tensor<1x2x4x4xf32>) outs(%mx0 : tensor<1x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.maximumf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4xf32>
    %sube = tensor.empty() : tensor<1x2x4x4xf32>
    %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk, %mx : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%sube : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.subf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %exe = tensor.empty() : tensor<1x2x4x4xf32>
    %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<1x2x4x4xf32>) outs(%exe : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %sme = tensor.empty() : tensor<1x2x4xf32>
    %sm0 = linalg.fill ins(%zero : f32) outs(%sme : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %sm = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x4x4xf32>) outs(%sm0 : tensor<1x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4xf32>
    %pre = tensor.empty() : tensor<1x2x4x4xf32>
    %pr = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%pre : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.divf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %isninfe = tensor.empty() : tensor<1x2x4x4xi1>
    %isninf = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<1x2x4x4xf32>) outs(%isninfe : tensor<1x2x4x4xi1>) {
    ^bb0(%in: f32, %out: i1):
      %w = arith.extf %in : f32 to f64
      %y = arith.cmpf oeq, %w, %ninf64 : f64
      linalg.yield %y : i1
    } -> tensor<1x2x4x4xi1>
    %alle = tensor.empty() : tensor<1x2x4xi1>
    %all0 = linalg.fill ins(%true : i1) outs(%alle : tensor<1x2x4xi1>) -> tensor<1x2x4xi1>
    %all = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%isninf : tensor<1x2x4x4xi1>) outs(%all0 : tensor<1x2x4xi1>) {
    ^bb0(%in: i1, %out: i1):
      %y = arith.andi %in, %out : i1
      linalg.yield %y : i1
    } -> tensor<1x2x4xi1>
    %gde = tensor.empty() : tensor<1x2x4x4xf32>
    %gd = linalg.generic {indexing_maps = [#row4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%all, %pr : tensor<1x2x4xi1>, tensor<1x2x4x4xf32>) outs(%gde : tensor<1x2x4x4xf32>) {
    ^bb0(%in: i1, %in1: f32, %out: f32):
      %y = arith.select %in, %zero, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %vte = tensor.empty() : tensor<1x2x4x2xf32>
    %vt = linalg.transpose ins(%v : tensor<1x4x2x2xf32>) outs(%vte : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %pvca = tensor.collapse_shape %gd [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
    %pvcb = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %pve = tensor.empty() : tensor<2x4x2xf32>
    %pvz = linalg.fill ins(%zero : f32) outs(%pve : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %pvm = linalg.batch_matmul ins(%pvca, %pvcb : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%pvz : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %pv = tensor.expand_shape %pvm [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
    %oe = tensor.empty() : tensor<1x4x2x2xf32>
    %o = linalg.transpose ins(%pv : tensor<1x2x4x2xf32>) outs(%oe : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
    return %o : tensor<1x4x2x2xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#st4 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

func.func @probs_returned(%q: tensor<1x4x2x2xf32>, %k: tensor<1x4x2x2xf32>, %v: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>, tensor<1x2x4x4xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant 0xFF800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %ninf64 = arith.constant 0xFFF0000000000000 : f64
    %half = arith.constant 0.5 : f32
    %quarter = arith.constant 0.25 : f32
    %c0 = arith.constant 0 : i64
    %true = arith.constant true
    %qse = tensor.empty() : tensor<1x2x4x2xf32>
    %qs = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q : tensor<1x4x2x2xf32>) outs(%qse : tensor<1x2x4x2xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %half : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x2xf32>
    %kse = tensor.empty() : tensor<1x2x2x4xf32>
    %ks = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k : tensor<1x4x2x2xf32>) outs(%kse : tensor<1x2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %half : f32
      linalg.yield %y : f32
    } -> tensor<1x2x2x4xf32>
    %qkca = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %qkcb = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
    %qke = tensor.empty() : tensor<2x4x4xf32>
    %qkz = linalg.fill ins(%zero : f32) outs(%qke : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %qkm = linalg.batch_matmul ins(%qkca, %qkcb : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%qkz : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %qk = tensor.expand_shape %qkm [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
    %dme = tensor.empty() : tensor<4x4xi64>
    %dm = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%dme : tensor<4x4xi64>) {
    ^bb0(%out: i64):
      %i = linalg.index 0 : index
      %ii = arith.index_cast %i : index to i64
      %j = linalg.index 1 : index
      %jj = arith.index_cast %j : index to i64
      %y = arith.subi %jj, %ii : i64
      linalg.yield %y : i64
    } -> tensor<4x4xi64>
    %vme = tensor.empty() : tensor<4x4xi1>
    %vm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%dm : tensor<4x4xi64>) outs(%vme : tensor<4x4xi1>) {
    ^bb0(%in: i64, %out: i1):
      %y = arith.cmpi sle, %in, %c0 : i64
      linalg.yield %y : i1
    } -> tensor<4x4xi1>
    %fme = tensor.empty() : tensor<4x4xf32>
    %fm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%vm : tensor<4x4xi1>) outs(%fme : tensor<4x4xf32>) {
    ^bb0(%in: i1, %out: f32):
      %y = arith.select %in, %zero, %ninf : f32
      linalg.yield %y : f32
    } -> tensor<4x4xf32>
    %mse = tensor.empty() : tensor<1x2x4x4xf32>
    %ms = linalg.generic {indexing_maps = [#id4, #st4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk, %fm : tensor<1x2x4x4xf32>, tensor<4x4xf32>) outs(%mse : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.addf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %mxe = tensor.empty() : tensor<1x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%mxe : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x2x4x4xf32>) outs(%mx0 : tensor<1x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.maximumf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4xf32>
    %sube = tensor.empty() : tensor<1x2x4x4xf32>
    %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%sube : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.subf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %exe = tensor.empty() : tensor<1x2x4x4xf32>
    %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<1x2x4x4xf32>) outs(%exe : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %sme = tensor.empty() : tensor<1x2x4xf32>
    %sm0 = linalg.fill ins(%zero : f32) outs(%sme : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %sm = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x4x4xf32>) outs(%sm0 : tensor<1x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4xf32>
    %pre = tensor.empty() : tensor<1x2x4x4xf32>
    %pr = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%pre : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.divf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %isninfe = tensor.empty() : tensor<1x2x4x4xi1>
    %isninf = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms : tensor<1x2x4x4xf32>) outs(%isninfe : tensor<1x2x4x4xi1>) {
    ^bb0(%in: f32, %out: i1):
      %w = arith.extf %in : f32 to f64
      %y = arith.cmpf oeq, %w, %ninf64 : f64
      linalg.yield %y : i1
    } -> tensor<1x2x4x4xi1>
    %alle = tensor.empty() : tensor<1x2x4xi1>
    %all0 = linalg.fill ins(%true : i1) outs(%alle : tensor<1x2x4xi1>) -> tensor<1x2x4xi1>
    %all = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%isninf : tensor<1x2x4x4xi1>) outs(%all0 : tensor<1x2x4xi1>) {
    ^bb0(%in: i1, %out: i1):
      %y = arith.andi %in, %out : i1
      linalg.yield %y : i1
    } -> tensor<1x2x4xi1>
    %gde = tensor.empty() : tensor<1x2x4x4xf32>
    %gd = linalg.generic {indexing_maps = [#row4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%all, %pr : tensor<1x2x4xi1>, tensor<1x2x4x4xf32>) outs(%gde : tensor<1x2x4x4xf32>) {
    ^bb0(%in: i1, %in1: f32, %out: f32):
      %y = arith.select %in, %zero, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %vte = tensor.empty() : tensor<1x2x4x2xf32>
    %vt = linalg.transpose ins(%v : tensor<1x4x2x2xf32>) outs(%vte : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %pvca = tensor.collapse_shape %gd [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
    %pvcb = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %pve = tensor.empty() : tensor<2x4x2xf32>
    %pvz = linalg.fill ins(%zero : f32) outs(%pve : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %pvm = linalg.batch_matmul ins(%pvca, %pvcb : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%pvz : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %pv = tensor.expand_shape %pvm [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
    %oe = tensor.empty() : tensor<1x4x2x2xf32>
    %o = linalg.transpose ins(%pv : tensor<1x2x4x2xf32>) outs(%oe : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
    return %o, %pr : tensor<1x4x2x2xf32>, tensor<1x2x4x4xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#st4 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

func.func @mask_hides_past(%q: tensor<1x4x2x2xf32>, %k: tensor<1x4x2x2xf32>, %v: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant 0xFF800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %ninf64 = arith.constant 0xFFF0000000000000 : f64
    %half = arith.constant 0.5 : f32
    %quarter = arith.constant 0.25 : f32
    %c0 = arith.constant 0 : i64
    %true = arith.constant true
    %qse = tensor.empty() : tensor<1x2x4x2xf32>
    %qs = linalg.transpose ins(%q : tensor<1x4x2x2xf32>) outs(%qse : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %kse = tensor.empty() : tensor<1x2x2x4xf32>
    %ks = linalg.transpose ins(%k : tensor<1x4x2x2xf32>) outs(%kse : tensor<1x2x2x4xf32>) permutation = [0, 2, 3, 1]
    %qkca = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %qkcb = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<1x2x2x4xf32> into tensor<2x2x4xf32>
    %qke = tensor.empty() : tensor<2x4x4xf32>
    %qkz = linalg.fill ins(%zero : f32) outs(%qke : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %qkm = linalg.batch_matmul ins(%qkca, %qkcb : tensor<2x4x2xf32>, tensor<2x2x4xf32>) outs(%qkz : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %qk = tensor.expand_shape %qkm [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
    %sce = tensor.empty() : tensor<1x2x4x4xf32>
    %sc = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<1x2x4x4xf32>) outs(%sce : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %quarter : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %dme = tensor.empty() : tensor<4x4xi64>
    %dm = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%dme : tensor<4x4xi64>) {
    ^bb0(%out: i64):
      %i = linalg.index 0 : index
      %ii = arith.index_cast %i : index to i64
      %j = linalg.index 1 : index
      %jj = arith.index_cast %j : index to i64
      %y = arith.subi %jj, %ii : i64
      linalg.yield %y : i64
    } -> tensor<4x4xi64>
    %vme = tensor.empty() : tensor<4x4xi1>
    %vm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%dm : tensor<4x4xi64>) outs(%vme : tensor<4x4xi1>) {
    ^bb0(%in: i64, %out: i1):
      %y = arith.cmpi sge, %in, %c0 : i64
      linalg.yield %y : i1
    } -> tensor<4x4xi1>
    %hm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%vm : tensor<4x4xi1>) outs(%vme : tensor<4x4xi1>) {
    ^bb0(%in: i1, %out: i1):
      %y = arith.xori %in, %true : i1
      linalg.yield %y : i1
    } -> tensor<4x4xi1>
    %mse = tensor.empty() : tensor<1x2x4x4xf32>
    %ms = linalg.generic {indexing_maps = [#st4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%hm, %sc : tensor<4x4xi1>, tensor<1x2x4x4xf32>) outs(%mse : tensor<1x2x4x4xf32>) {
    ^bb0(%in: i1, %in1: f32, %out: f32):
      %y = arith.select %in, %ninf, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %mxe = tensor.empty() : tensor<1x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%mxe : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<1x2x4x4xf32>) outs(%mx0 : tensor<1x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.maximumf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4xf32>
    %sube = tensor.empty() : tensor<1x2x4x4xf32>
    %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%sube : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.subf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %exe = tensor.empty() : tensor<1x2x4x4xf32>
    %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<1x2x4x4xf32>) outs(%exe : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %sme = tensor.empty() : tensor<1x2x4xf32>
    %sm0 = linalg.fill ins(%zero : f32) outs(%sme : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %sm = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x4x4xf32>) outs(%sm0 : tensor<1x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4xf32>
    %pre = tensor.empty() : tensor<1x2x4x4xf32>
    %pr = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%pre : tensor<1x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.divf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<1x2x4x4xf32>
    %vte = tensor.empty() : tensor<1x2x4x2xf32>
    %vt = linalg.transpose ins(%v : tensor<1x4x2x2xf32>) outs(%vte : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %pvca = tensor.collapse_shape %pr [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
    %pvcb = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>
    %pve = tensor.empty() : tensor<2x4x2xf32>
    %pvz = linalg.fill ins(%zero : f32) outs(%pve : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %pvm = linalg.batch_matmul ins(%pvca, %pvcb : tensor<2x4x4xf32>, tensor<2x4x2xf32>) outs(%pvz : tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
    %pv = tensor.expand_shape %pvm [[0, 1], [2], [3]] output_shape [1, 2, 4, 2] : tensor<2x4x2xf32> into tensor<1x2x4x2xf32>
    %oe = tensor.empty() : tensor<1x4x2x2xf32>
    %o = linalg.transpose ins(%pv : tensor<1x2x4x2xf32>) outs(%oe : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
    return %o : tensor<1x4x2x2xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#st4 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#bst4 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>

func.func @key_mask(%q: tensor<2x4x2x2xf32>, %k: tensor<2x4x2x2xf32>, %v: tensor<2x4x2x2xf32>, %am: tensor<2x4xi64>) -> (tensor<2x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant 0xFF800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %ninf64 = arith.constant 0xFFF0000000000000 : f64
    %half = arith.constant 0.5 : f32
    %quarter = arith.constant 0.25 : f32
    %c0 = arith.constant 0 : i64
    %true = arith.constant true
    %min = arith.constant -3.40282347E+38 : f32
    %qse = tensor.empty() : tensor<2x2x4x2xf32>
    %qs = linalg.transpose ins(%q : tensor<2x4x2x2xf32>) outs(%qse : tensor<2x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %kse = tensor.empty() : tensor<2x2x2x4xf32>
    %ks = linalg.transpose ins(%k : tensor<2x4x2x2xf32>) outs(%kse : tensor<2x2x2x4xf32>) permutation = [0, 2, 3, 1]
    %qkca = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<2x2x4x2xf32> into tensor<4x4x2xf32>
    %qkcb = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<2x2x2x4xf32> into tensor<4x2x4xf32>
    %qke = tensor.empty() : tensor<4x4x4xf32>
    %qkz = linalg.fill ins(%zero : f32) outs(%qke : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %qkm = linalg.batch_matmul ins(%qkca, %qkcb : tensor<4x4x2xf32>, tensor<4x2x4xf32>) outs(%qkz : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %qk = tensor.expand_shape %qkm [[0, 1], [2], [3]] output_shape [2, 2, 4, 4] : tensor<4x4x4xf32> into tensor<2x2x4x4xf32>
    %sce = tensor.empty() : tensor<2x2x4x4xf32>
    %sc = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x2x4x4xf32>) outs(%sce : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %quarter : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %seene = tensor.empty() : tensor<2x4xi1>
    %seen = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%am : tensor<2x4xi64>) outs(%seene : tensor<2x4xi1>) {
    ^bb0(%in: i64, %out: i1):
      %y = arith.cmpi ne, %in, %c0 : i64
      linalg.yield %y : i1
    } -> tensor<2x4xi1>
    %cme = tensor.empty() : tensor<1x1x4x4xi1>
    %cm = linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%cme : tensor<1x1x4x4xi1>) {
    ^bb0(%out: i1):
      %i = linalg.index 2 : index
      %ii = arith.index_cast %i : index to i64
      %j = linalg.index 3 : index
      %jj = arith.index_cast %j : index to i64
      %y = arith.cmpi sle, %jj, %ii : i64
      linalg.yield %y : i1
    } -> tensor<1x1x4x4xi1>
    %bme = tensor.empty() : tensor<2x1x4x4xi1>
    %bm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cm, %seen : tensor<1x1x4x4xi1>, tensor<2x4xi1>) outs(%bme : tensor<2x1x4x4xi1>) {
    ^bb0(%in: i1, %in1: i1, %out: i1):
      %y = arith.andi %in, %in1 : i1
      linalg.yield %y : i1
    } -> tensor<2x1x4x4xi1>
    %fme = tensor.empty() : tensor<2x1x4x4xf32>
    %fm4 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bm : tensor<2x1x4x4xi1>) outs(%fme : tensor<2x1x4x4xf32>) {
    ^bb0(%in: i1, %out: f32):
      %y = arith.select %in, %zero, %min : f32
      linalg.yield %y : f32
    } -> tensor<2x1x4x4xf32>
    %fm = tensor.collapse_shape %fm4 [[0], [1, 2], [3]] : tensor<2x1x4x4xf32> into tensor<2x4x4xf32>
    %mse = tensor.empty() : tensor<2x2x4x4xf32>
    %ms = linalg.generic {indexing_maps = [#id4, #bst4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc, %fm : tensor<2x2x4x4xf32>, tensor<2x4x4xf32>) outs(%mse : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.addf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %mxe = tensor.empty() : tensor<2x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%mxe : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<2x2x4x4xf32>) outs(%mx0 : tensor<2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.maximumf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4xf32>
    %sube = tensor.empty() : tensor<2x2x4x4xf32>
    %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<2x2x4x4xf32>, tensor<2x2x4xf32>) outs(%sube : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.subf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %exe = tensor.empty() : tensor<2x2x4x4xf32>
    %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<2x2x4x4xf32>) outs(%exe : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %sme = tensor.empty() : tensor<2x2x4xf32>
    %sm0 = linalg.fill ins(%zero : f32) outs(%sme : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %sm = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x2x4x4xf32>) outs(%sm0 : tensor<2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4xf32>
    %pre = tensor.empty() : tensor<2x2x4x4xf32>
    %pr = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<2x2x4x4xf32>, tensor<2x2x4xf32>) outs(%pre : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.divf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %vte = tensor.empty() : tensor<2x2x4x2xf32>
    %vt = linalg.transpose ins(%v : tensor<2x4x2x2xf32>) outs(%vte : tensor<2x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %pvca = tensor.collapse_shape %pr [[0, 1], [2], [3]] : tensor<2x2x4x4xf32> into tensor<4x4x4xf32>
    %pvcb = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<2x2x4x2xf32> into tensor<4x4x2xf32>
    %pve = tensor.empty() : tensor<4x4x2xf32>
    %pvz = linalg.fill ins(%zero : f32) outs(%pve : tensor<4x4x2xf32>) -> tensor<4x4x2xf32>
    %pvm = linalg.batch_matmul ins(%pvca, %pvcb : tensor<4x4x4xf32>, tensor<4x4x2xf32>) outs(%pvz : tensor<4x4x2xf32>) -> tensor<4x4x2xf32>
    %pv = tensor.expand_shape %pvm [[0, 1], [2], [3]] output_shape [2, 2, 4, 2] : tensor<4x4x2xf32> into tensor<2x2x4x2xf32>
    %oe = tensor.empty() : tensor<2x4x2x2xf32>
    %o = linalg.transpose ins(%pv : tensor<2x2x4x2xf32>) outs(%oe : tensor<2x4x2x2xf32>) permutation = [0, 2, 1, 3]
    return %o : tensor<2x4x2x2xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#st4 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#bst4 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>

func.func @query_mask(%q: tensor<2x4x2x2xf32>, %k: tensor<2x4x2x2xf32>, %v: tensor<2x4x2x2xf32>, %am: tensor<2x4xi64>) -> (tensor<2x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant 0xFF800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %ninf64 = arith.constant 0xFFF0000000000000 : f64
    %half = arith.constant 0.5 : f32
    %quarter = arith.constant 0.25 : f32
    %c0 = arith.constant 0 : i64
    %true = arith.constant true
    %min = arith.constant -3.40282347E+38 : f32
    %qse = tensor.empty() : tensor<2x2x4x2xf32>
    %qs = linalg.transpose ins(%q : tensor<2x4x2x2xf32>) outs(%qse : tensor<2x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %kse = tensor.empty() : tensor<2x2x2x4xf32>
    %ks = linalg.transpose ins(%k : tensor<2x4x2x2xf32>) outs(%kse : tensor<2x2x2x4xf32>) permutation = [0, 2, 3, 1]
    %qkca = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<2x2x4x2xf32> into tensor<4x4x2xf32>
    %qkcb = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<2x2x2x4xf32> into tensor<4x2x4xf32>
    %qke = tensor.empty() : tensor<4x4x4xf32>
    %qkz = linalg.fill ins(%zero : f32) outs(%qke : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %qkm = linalg.batch_matmul ins(%qkca, %qkcb : tensor<4x4x2xf32>, tensor<4x2x4xf32>) outs(%qkz : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %qk = tensor.expand_shape %qkm [[0, 1], [2], [3]] output_shape [2, 2, 4, 4] : tensor<4x4x4xf32> into tensor<2x2x4x4xf32>
    %sce = tensor.empty() : tensor<2x2x4x4xf32>
    %sc = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x2x4x4xf32>) outs(%sce : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %quarter : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %seene = tensor.empty() : tensor<2x4xi1>
    %seen = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%am : tensor<2x4xi64>) outs(%seene : tensor<2x4xi1>) {
    ^bb0(%in: i64, %out: i1):
      %y = arith.cmpi ne, %in, %c0 : i64
      linalg.yield %y : i1
    } -> tensor<2x4xi1>
    %cme = tensor.empty() : tensor<1x1x4x4xi1>
    %cm = linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%cme : tensor<1x1x4x4xi1>) {
    ^bb0(%out: i1):
      %i = linalg.index 2 : index
      %ii = arith.index_cast %i : index to i64
      %j = linalg.index 3 : index
      %jj = arith.index_cast %j : index to i64
      %y = arith.cmpi sle, %jj, %ii : i64
      linalg.yield %y : i1
    } -> tensor<1x1x4x4xi1>
    %bme = tensor.empty() : tensor<2x1x4x4xi1>
    %bm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cm, %seen : tensor<1x1x4x4xi1>, tensor<2x4xi1>) outs(%bme : tensor<2x1x4x4xi1>) {
    ^bb0(%in: i1, %in1: i1, %out: i1):
      %y = arith.andi %in, %in1 : i1
      linalg.yield %y : i1
    } -> tensor<2x1x4x4xi1>
    %fme = tensor.empty() : tensor<2x1x4x4xf32>
    %fm4 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bm : tensor<2x1x4x4xi1>) outs(%fme : tensor<2x1x4x4xf32>) {
    ^bb0(%in: i1, %out: f32):
      %y = arith.select %in, %zero, %min : f32
      linalg.yield %y : f32
    } -> tensor<2x1x4x4xf32>
    %fm = tensor.collapse_shape %fm4 [[0], [1, 2], [3]] : tensor<2x1x4x4xf32> into tensor<2x4x4xf32>
    %mse = tensor.empty() : tensor<2x2x4x4xf32>
    %ms = linalg.generic {indexing_maps = [#id4, #bst4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc, %fm : tensor<2x2x4x4xf32>, tensor<2x4x4xf32>) outs(%mse : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.addf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %mxe = tensor.empty() : tensor<2x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%mxe : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<2x2x4x4xf32>) outs(%mx0 : tensor<2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.maximumf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4xf32>
    %sube = tensor.empty() : tensor<2x2x4x4xf32>
    %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<2x2x4x4xf32>, tensor<2x2x4xf32>) outs(%sube : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.subf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %exe = tensor.empty() : tensor<2x2x4x4xf32>
    %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<2x2x4x4xf32>) outs(%exe : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %sme = tensor.empty() : tensor<2x2x4xf32>
    %sm0 = linalg.fill ins(%zero : f32) outs(%sme : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %sm = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x2x4x4xf32>) outs(%sm0 : tensor<2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4xf32>
    %pre = tensor.empty() : tensor<2x2x4x4xf32>
    %pr = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<2x2x4x4xf32>, tensor<2x2x4xf32>) outs(%pre : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.divf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %vte = tensor.empty() : tensor<2x2x4x2xf32>
    %vt = linalg.transpose ins(%v : tensor<2x4x2x2xf32>) outs(%vte : tensor<2x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %pvca = tensor.collapse_shape %pr [[0, 1], [2], [3]] : tensor<2x2x4x4xf32> into tensor<4x4x4xf32>
    %pvcb = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<2x2x4x2xf32> into tensor<4x4x2xf32>
    %pve = tensor.empty() : tensor<4x4x2xf32>
    %pvz = linalg.fill ins(%zero : f32) outs(%pve : tensor<4x4x2xf32>) -> tensor<4x4x2xf32>
    %pvm = linalg.batch_matmul ins(%pvca, %pvcb : tensor<4x4x4xf32>, tensor<4x4x2xf32>) outs(%pvz : tensor<4x4x2xf32>) -> tensor<4x4x2xf32>
    %pv = tensor.expand_shape %pvm [[0, 1], [2], [3]] output_shape [2, 2, 4, 2] : tensor<4x4x2xf32> into tensor<2x2x4x2xf32>
    %oe = tensor.empty() : tensor<2x4x2x2xf32>
    %o = linalg.transpose ins(%pv : tensor<2x2x4x2xf32>) outs(%oe : tensor<2x4x2x2xf32>) permutation = [0, 2, 1, 3]
    return %o : tensor<2x4x2x2xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#st4 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#bst4 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>

func.func @key_mask_guard(%q: tensor<2x4x2x2xf32>, %k: tensor<2x4x2x2xf32>, %v: tensor<2x4x2x2xf32>, %am: tensor<2x4xi64>) -> (tensor<2x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant 0xFF800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %ninf64 = arith.constant 0xFFF0000000000000 : f64
    %half = arith.constant 0.5 : f32
    %quarter = arith.constant 0.25 : f32
    %c0 = arith.constant 0 : i64
    %true = arith.constant true
    %min = arith.constant -3.40282347E+38 : f32
    %qse = tensor.empty() : tensor<2x2x4x2xf32>
    %qs = linalg.transpose ins(%q : tensor<2x4x2x2xf32>) outs(%qse : tensor<2x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %kse = tensor.empty() : tensor<2x2x2x4xf32>
    %ks = linalg.transpose ins(%k : tensor<2x4x2x2xf32>) outs(%kse : tensor<2x2x2x4xf32>) permutation = [0, 2, 3, 1]
    %qkca = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<2x2x4x2xf32> into tensor<4x4x2xf32>
    %qkcb = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<2x2x2x4xf32> into tensor<4x2x4xf32>
    %qke = tensor.empty() : tensor<4x4x4xf32>
    %qkz = linalg.fill ins(%zero : f32) outs(%qke : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %qkm = linalg.batch_matmul ins(%qkca, %qkcb : tensor<4x4x2xf32>, tensor<4x2x4xf32>) outs(%qkz : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %qk = tensor.expand_shape %qkm [[0, 1], [2], [3]] output_shape [2, 2, 4, 4] : tensor<4x4x4xf32> into tensor<2x2x4x4xf32>
    %sce = tensor.empty() : tensor<2x2x4x4xf32>
    %sc = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x2x4x4xf32>) outs(%sce : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %quarter : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %seene = tensor.empty() : tensor<2x4xi1>
    %seen = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%am : tensor<2x4xi64>) outs(%seene : tensor<2x4xi1>) {
    ^bb0(%in: i64, %out: i1):
      %y = arith.cmpi ne, %in, %c0 : i64
      linalg.yield %y : i1
    } -> tensor<2x4xi1>
    %cme = tensor.empty() : tensor<1x1x4x4xi1>
    %cm = linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%cme : tensor<1x1x4x4xi1>) {
    ^bb0(%out: i1):
      %i = linalg.index 2 : index
      %ii = arith.index_cast %i : index to i64
      %j = linalg.index 3 : index
      %jj = arith.index_cast %j : index to i64
      %y = arith.cmpi sle, %jj, %ii : i64
      linalg.yield %y : i1
    } -> tensor<1x1x4x4xi1>
    %bme = tensor.empty() : tensor<2x1x4x4xi1>
    %bm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cm, %seen : tensor<1x1x4x4xi1>, tensor<2x4xi1>) outs(%bme : tensor<2x1x4x4xi1>) {
    ^bb0(%in: i1, %in1: i1, %out: i1):
      %y = arith.andi %in, %in1 : i1
      linalg.yield %y : i1
    } -> tensor<2x1x4x4xi1>
    %fme = tensor.empty() : tensor<2x1x4x4xf32>
    %fm4 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bm : tensor<2x1x4x4xi1>) outs(%fme : tensor<2x1x4x4xf32>) {
    ^bb0(%in: i1, %out: f32):
      %y = arith.select %in, %zero, %min : f32
      linalg.yield %y : f32
    } -> tensor<2x1x4x4xf32>
    %fm = tensor.collapse_shape %fm4 [[0], [1, 2], [3]] : tensor<2x1x4x4xf32> into tensor<2x4x4xf32>
    %mse = tensor.empty() : tensor<2x2x4x4xf32>
    %ms = linalg.generic {indexing_maps = [#id4, #bst4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc, %fm : tensor<2x2x4x4xf32>, tensor<2x4x4xf32>) outs(%mse : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.addf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %mxe = tensor.empty() : tensor<2x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%mxe : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<2x2x4x4xf32>) outs(%mx0 : tensor<2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.maximumf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4xf32>
    %sube = tensor.empty() : tensor<2x2x4x4xf32>
    %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<2x2x4x4xf32>, tensor<2x2x4xf32>) outs(%sube : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.subf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %exe = tensor.empty() : tensor<2x2x4x4xf32>
    %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<2x2x4x4xf32>) outs(%exe : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %sme = tensor.empty() : tensor<2x2x4xf32>
    %sm0 = linalg.fill ins(%zero : f32) outs(%sme : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %sm = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x2x4x4xf32>) outs(%sm0 : tensor<2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4xf32>
    %pre = tensor.empty() : tensor<2x2x4x4xf32>
    %pr = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<2x2x4x4xf32>, tensor<2x2x4xf32>) outs(%pre : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.divf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %isninfe = tensor.empty() : tensor<2x2x4x4xi1>
    %isninf = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms : tensor<2x2x4x4xf32>) outs(%isninfe : tensor<2x2x4x4xi1>) {
    ^bb0(%in: f32, %out: i1):
      %w = arith.extf %in : f32 to f64
      %y = arith.cmpf oeq, %w, %ninf64 : f64
      linalg.yield %y : i1
    } -> tensor<2x2x4x4xi1>
    %alle = tensor.empty() : tensor<2x2x4xi1>
    %all0 = linalg.fill ins(%true : i1) outs(%alle : tensor<2x2x4xi1>) -> tensor<2x2x4xi1>
    %all = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%isninf : tensor<2x2x4x4xi1>) outs(%all0 : tensor<2x2x4xi1>) {
    ^bb0(%in: i1, %out: i1):
      %y = arith.andi %in, %out : i1
      linalg.yield %y : i1
    } -> tensor<2x2x4xi1>
    %gde = tensor.empty() : tensor<2x2x4x4xf32>
    %gd = linalg.generic {indexing_maps = [#row4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%all, %pr : tensor<2x2x4xi1>, tensor<2x2x4x4xf32>) outs(%gde : tensor<2x2x4x4xf32>) {
    ^bb0(%in: i1, %in1: f32, %out: f32):
      %y = arith.select %in, %zero, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %vte = tensor.empty() : tensor<2x2x4x2xf32>
    %vt = linalg.transpose ins(%v : tensor<2x4x2x2xf32>) outs(%vte : tensor<2x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %pvca = tensor.collapse_shape %gd [[0, 1], [2], [3]] : tensor<2x2x4x4xf32> into tensor<4x4x4xf32>
    %pvcb = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<2x2x4x2xf32> into tensor<4x4x2xf32>
    %pve = tensor.empty() : tensor<4x4x2xf32>
    %pvz = linalg.fill ins(%zero : f32) outs(%pve : tensor<4x4x2xf32>) -> tensor<4x4x2xf32>
    %pvm = linalg.batch_matmul ins(%pvca, %pvcb : tensor<4x4x4xf32>, tensor<4x4x2xf32>) outs(%pvz : tensor<4x4x2xf32>) -> tensor<4x4x2xf32>
    %pv = tensor.expand_shape %pvm [[0, 1], [2], [3]] output_shape [2, 2, 4, 2] : tensor<4x4x2xf32> into tensor<2x2x4x2xf32>
    %oe = tensor.empty() : tensor<2x4x2x2xf32>
    %o = linalg.transpose ins(%pv : tensor<2x2x4x2xf32>) outs(%oe : tensor<2x4x2x2xf32>) permutation = [0, 2, 1, 3]
    return %o : tensor<2x4x2x2xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#st4 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

func.func @grouped(%q4: tensor<2x2x4x2xf32>, %k5: tensor<2x1x2x4x2xf32>, %v5: tensor<2x1x2x4x2xf32>) -> (tensor<2x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant 0xFF800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %ninf64 = arith.constant 0xFFF0000000000000 : f64
    %half = arith.constant 0.5 : f32
    %quarter = arith.constant 0.25 : f32
    %c0 = arith.constant 0 : i64
    %true = arith.constant true
    %k4 = tensor.collapse_shape %k5 [[0], [1, 2], [3], [4]] : tensor<2x1x2x4x2xf32> into tensor<2x2x4x2xf32>
    %kse = tensor.empty() : tensor<2x2x2x4xf32>
    %ks = linalg.transpose ins(%k4 : tensor<2x2x4x2xf32>) outs(%kse : tensor<2x2x2x4xf32>) permutation = [0, 1, 3, 2]
    %qkca = tensor.collapse_shape %q4 [[0, 1], [2], [3]] : tensor<2x2x4x2xf32> into tensor<4x4x2xf32>
    %qkcb = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<2x2x2x4xf32> into tensor<4x2x4xf32>
    %qke = tensor.empty() : tensor<4x4x4xf32>
    %qkz = linalg.fill ins(%zero : f32) outs(%qke : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %qkm = linalg.batch_matmul ins(%qkca, %qkcb : tensor<4x4x2xf32>, tensor<4x2x4xf32>) outs(%qkz : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %qk = tensor.expand_shape %qkm [[0, 1], [2], [3]] output_shape [2, 2, 4, 4] : tensor<4x4x4xf32> into tensor<2x2x4x4xf32>
    %sce = tensor.empty() : tensor<2x2x4x4xf32>
    %sc = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x2x4x4xf32>) outs(%sce : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %quarter : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %dme = tensor.empty() : tensor<4x4xi64>
    %dm = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%dme : tensor<4x4xi64>) {
    ^bb0(%out: i64):
      %i = linalg.index 0 : index
      %ii = arith.index_cast %i : index to i64
      %j = linalg.index 1 : index
      %jj = arith.index_cast %j : index to i64
      %y = arith.subi %jj, %ii : i64
      linalg.yield %y : i64
    } -> tensor<4x4xi64>
    %vme = tensor.empty() : tensor<4x4xi1>
    %vm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%dm : tensor<4x4xi64>) outs(%vme : tensor<4x4xi1>) {
    ^bb0(%in: i64, %out: i1):
      %y = arith.cmpi sle, %in, %c0 : i64
      linalg.yield %y : i1
    } -> tensor<4x4xi1>
    %hm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%vm : tensor<4x4xi1>) outs(%vme : tensor<4x4xi1>) {
    ^bb0(%in: i1, %out: i1):
      %y = arith.xori %in, %true : i1
      linalg.yield %y : i1
    } -> tensor<4x4xi1>
    %mse = tensor.empty() : tensor<2x2x4x4xf32>
    %ms = linalg.generic {indexing_maps = [#st4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%hm, %sc : tensor<4x4xi1>, tensor<2x2x4x4xf32>) outs(%mse : tensor<2x2x4x4xf32>) {
    ^bb0(%in: i1, %in1: f32, %out: f32):
      %y = arith.select %in, %ninf, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %mxe = tensor.empty() : tensor<2x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%mxe : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<2x2x4x4xf32>) outs(%mx0 : tensor<2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.maximumf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4xf32>
    %sube = tensor.empty() : tensor<2x2x4x4xf32>
    %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<2x2x4x4xf32>, tensor<2x2x4xf32>) outs(%sube : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.subf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %exe = tensor.empty() : tensor<2x2x4x4xf32>
    %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<2x2x4x4xf32>) outs(%exe : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %sme = tensor.empty() : tensor<2x2x4xf32>
    %sm0 = linalg.fill ins(%zero : f32) outs(%sme : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %sm = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x2x4x4xf32>) outs(%sm0 : tensor<2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4xf32>
    %pre = tensor.empty() : tensor<2x2x4x4xf32>
    %pr = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<2x2x4x4xf32>, tensor<2x2x4xf32>) outs(%pre : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.divf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %pvca = tensor.collapse_shape %pr [[0, 1], [2], [3]] : tensor<2x2x4x4xf32> into tensor<4x4x4xf32>
    %pvcb = tensor.collapse_shape %v5 [[0, 1, 2], [3], [4]] : tensor<2x1x2x4x2xf32> into tensor<4x4x2xf32>
    %pve = tensor.empty() : tensor<4x4x2xf32>
    %pvz = linalg.fill ins(%zero : f32) outs(%pve : tensor<4x4x2xf32>) -> tensor<4x4x2xf32>
    %pvm = linalg.batch_matmul ins(%pvca, %pvcb : tensor<4x4x4xf32>, tensor<4x4x2xf32>) outs(%pvz : tensor<4x4x2xf32>) -> tensor<4x4x2xf32>
    %pv = tensor.expand_shape %pvm [[0, 1], [2], [3]] output_shape [2, 2, 4, 2] : tensor<4x4x2xf32> into tensor<2x2x4x2xf32>
    %oe = tensor.empty() : tensor<2x4x2x2xf32>
    %o = linalg.transpose ins(%pv : tensor<2x2x4x2xf32>) outs(%oe : tensor<2x4x2x2xf32>) permutation = [0, 2, 1, 3]
    return %o : tensor<2x4x2x2xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#st4 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#bst4 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>

func.func @key_mask_only(%q: tensor<2x4x2x2xf32>, %k: tensor<2x4x2x2xf32>, %v: tensor<2x4x2x2xf32>, %am: tensor<2x4xi64>) -> (tensor<2x4x2x2xf32>) {
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant 0xFF800000 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %ninf64 = arith.constant 0xFFF0000000000000 : f64
    %half = arith.constant 0.5 : f32
    %quarter = arith.constant 0.25 : f32
    %c0 = arith.constant 0 : i64
    %true = arith.constant true
    %min = arith.constant -3.40282347E+38 : f32
    %qse = tensor.empty() : tensor<2x2x4x2xf32>
    %qs = linalg.transpose ins(%q : tensor<2x4x2x2xf32>) outs(%qse : tensor<2x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %kse = tensor.empty() : tensor<2x2x2x4xf32>
    %ks = linalg.transpose ins(%k : tensor<2x4x2x2xf32>) outs(%kse : tensor<2x2x2x4xf32>) permutation = [0, 2, 3, 1]
    %qkca = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<2x2x4x2xf32> into tensor<4x4x2xf32>
    %qkcb = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<2x2x2x4xf32> into tensor<4x2x4xf32>
    %qke = tensor.empty() : tensor<4x4x4xf32>
    %qkz = linalg.fill ins(%zero : f32) outs(%qke : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %qkm = linalg.batch_matmul ins(%qkca, %qkcb : tensor<4x4x2xf32>, tensor<4x2x4xf32>) outs(%qkz : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
    %qk = tensor.expand_shape %qkm [[0, 1], [2], [3]] output_shape [2, 2, 4, 4] : tensor<4x4x4xf32> into tensor<2x2x4x4xf32>
    %sce = tensor.empty() : tensor<2x2x4x4xf32>
    %sc = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x2x4x4xf32>) outs(%sce : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.mulf %in, %quarter : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %seene = tensor.empty() : tensor<2x4xi1>
    %seen = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%am : tensor<2x4xi64>) outs(%seene : tensor<2x4xi1>) {
    ^bb0(%in: i64, %out: i1):
      %y = arith.cmpi ne, %in, %c0 : i64
      linalg.yield %y : i1
    } -> tensor<2x4xi1>
    %cme = tensor.empty() : tensor<1x1x4x4xi1>
    %cm = linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%cme : tensor<1x1x4x4xi1>) {
    ^bb0(%out: i1):
      %i = linalg.index 2 : index
      %ii = arith.index_cast %i : index to i64
      %j = linalg.index 3 : index
      %jj = arith.index_cast %j : index to i64
      %y = arith.constant true
      linalg.yield %y : i1
    } -> tensor<1x1x4x4xi1>
    %bme = tensor.empty() : tensor<2x1x4x4xi1>
    %bm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cm, %seen : tensor<1x1x4x4xi1>, tensor<2x4xi1>) outs(%bme : tensor<2x1x4x4xi1>) {
    ^bb0(%in: i1, %in1: i1, %out: i1):
      %y = arith.andi %in, %in1 : i1
      linalg.yield %y : i1
    } -> tensor<2x1x4x4xi1>
    %fme = tensor.empty() : tensor<2x1x4x4xf32>
    %fm4 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bm : tensor<2x1x4x4xi1>) outs(%fme : tensor<2x1x4x4xf32>) {
    ^bb0(%in: i1, %out: f32):
      %y = arith.select %in, %zero, %min : f32
      linalg.yield %y : f32
    } -> tensor<2x1x4x4xf32>
    %fm = tensor.collapse_shape %fm4 [[0], [1, 2], [3]] : tensor<2x1x4x4xf32> into tensor<2x4x4xf32>
    %mse = tensor.empty() : tensor<2x2x4x4xf32>
    %ms = linalg.generic {indexing_maps = [#id4, #bst4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc, %fm : tensor<2x2x4x4xf32>, tensor<2x4x4xf32>) outs(%mse : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.addf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %mxe = tensor.empty() : tensor<2x2x4xf32>
    %mx0 = linalg.fill ins(%lowest : f32) outs(%mxe : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ms : tensor<2x2x4x4xf32>) outs(%mx0 : tensor<2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.maximumf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4xf32>
    %sube = tensor.empty() : tensor<2x2x4x4xf32>
    %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ms, %mx : tensor<2x2x4x4xf32>, tensor<2x2x4xf32>) outs(%sube : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.subf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %exe = tensor.empty() : tensor<2x2x4x4xf32>
    %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<2x2x4x4xf32>) outs(%exe : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %sme = tensor.empty() : tensor<2x2x4xf32>
    %sm0 = linalg.fill ins(%zero : f32) outs(%sme : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %sm = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x2x4x4xf32>) outs(%sm0 : tensor<2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4xf32>
    %pre = tensor.empty() : tensor<2x2x4x4xf32>
    %pr = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<2x2x4x4xf32>, tensor<2x2x4xf32>) outs(%pre : tensor<2x2x4x4xf32>) {
    ^bb0(%in: f32, %in1: f32, %out: f32):
      %y = arith.divf %in, %in1 : f32
      linalg.yield %y : f32
    } -> tensor<2x2x4x4xf32>
    %vte = tensor.empty() : tensor<2x2x4x2xf32>
    %vt = linalg.transpose ins(%v : tensor<2x4x2x2xf32>) outs(%vte : tensor<2x2x4x2xf32>) permutation = [0, 2, 1, 3]
    %pvca = tensor.collapse_shape %pr [[0, 1], [2], [3]] : tensor<2x2x4x4xf32> into tensor<4x4x4xf32>
    %pvcb = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<2x2x4x2xf32> into tensor<4x4x2xf32>
    %pve = tensor.empty() : tensor<4x4x2xf32>
    %pvz = linalg.fill ins(%zero : f32) outs(%pve : tensor<4x4x2xf32>) -> tensor<4x4x2xf32>
    %pvm = linalg.batch_matmul ins(%pvca, %pvcb : tensor<4x4x4xf32>, tensor<4x4x2xf32>) outs(%pvz : tensor<4x4x2xf32>) -> tensor<4x4x2xf32>
    %pv = tensor.expand_shape %pvm [[0, 1], [2], [3]] output_shape [2, 2, 4, 2] : tensor<4x4x2xf32> into tensor<2x2x4x2xf32>
    %oe = tensor.empty() : tensor<2x4x2x2xf32>
    %o = linalg.transpose ins(%pv : tensor<2x2x4x2xf32>) outs(%oe : tensor<2x4x2x2xf32>) permutation = [0, 2, 1, 3]
    return %o : tensor<2x4x2x2xf32>
}
