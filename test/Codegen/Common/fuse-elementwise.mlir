// RUN: ga-opt %s --ga-fuse-elementwise | FileCheck %s
// RUN: ga-opt %s --ga-fuse-elementwise="into-reductions=true recompute-cheap=true" | FileCheck %s --check-prefix=CUDA

#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
#row = affine_map<(i, j) -> (i)>

// The bias addition (single use, elementwise) is fused into the scaling
// that reads it: one generic computes both, with the same scalar ops.
// CHECK-LABEL: func.func @bias_then_scale(
// CHECK: linalg.matmul
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: arith.addf
// CHECK-NEXT: arith.mulf
// CHECK: return %[[R]]
// CHECK-NOT: linalg.generic
func.func @bias_then_scale(%x: tensor<8x4xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>, %z: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %m = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %biased = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %b : tensor<8x4xf32>, tensor<4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%biased : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %scaled : tensor<8x4xf32>
}

// Not fused: a reduction consumer and a producer with two users. With
// into-reductions (the CUDA target), the squares fuse into their row sum
// (each square still computed once, by the iteration that read it); the
// negation stays: one of its users (the return) cannot take it in.
// CHECK-LABEL: func.func @not_fused(
// CHECK-COUNT-4: linalg.generic
// CUDA-LABEL: func.func @not_fused(
// CUDA: linalg.generic
// CUDA-SAME: iterator_types = ["parallel", "reduction"]
// CUDA-NEXT: ^bb0
// CUDA-NEXT: arith.mulf
// CUDA-NEXT: arith.addf
// CUDA-COUNT-2: linalg.generic
// CUDA-NOT: linalg.generic
// CUDA: return
func.func @not_fused(%x: tensor<8x4xf32>, %acc: tensor<8xf32>) -> (tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %e = tensor.empty() : tensor<8x4xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%sq : tensor<8x4xf32>) outs(%acc : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.negf %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %twice = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%neg : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %sum, %neg, %twice : tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// A producer that adds into its init (`acc + g`, an adjoint's second
// contribution) under a consumer that broadcasts it over j: not fused.
// Fused, the accumulation into %acc would run once per j (upstream keeps
// the init as an output of the fused op, indexed by i only).
// CHECK-LABEL: func.func @accumulate_under_broadcast(
// CHECK: %[[P:.*]] = linalg.generic
// CHECK-SAME: ins(%{{.*}} : tensor<8xf32>) outs(%{{.*}} : tensor<8xf32>)
// CHECK: %[[B:.*]] = linalg.generic
// CHECK-SAME: ins(%[[P]], %{{.*}} : tensor<8xf32>, tensor<8x4xf32>)
// CHECK: return %[[B]]
func.func @accumulate_under_broadcast(%acc: tensor<8xf32>, %g: tensor<8xf32>, %x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %p = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%g : tensor<8xf32>) outs(%acc : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %b = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %x : tensor<8xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.mulf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %b : tensor<8x4xf32>
}

// A pure producer under a broadcast is not fused either: it would be
// computed once per j instead of once per element.
// CHECK-LABEL: func.func @pure_under_broadcast(
// CHECK-COUNT-2: linalg.generic
func.func @pure_under_broadcast(%v: tensor<8xf32>, %x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e8 = tensor.empty() : tensor<8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%v : tensor<8xf32>) outs(%e8 : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.exp %a : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %b = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %x : tensor<8xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.mulf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %b : tensor<8x4xf32>
}

// Under a transpose (a permutation: each producer element read once), an
// accumulating producer is fused; upstream keeps its init as an output of
// the fused op, and since nothing reads that result, the init becomes an
// input (read, not written back).
// CHECK-LABEL: func.func @accumulate_under_transpose(
// CHECK-SAME: %[[ACC:[^:]*]]: tensor<8x4xf32>, %[[G:[^:]*]]: tensor<8x4xf32>
// CHECK: %[[F:.*]] = linalg.generic
// CHECK-SAME: ins(%[[G]], %[[ACC]] : tensor<8x4xf32>, tensor<8x4xf32>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: arith.addf
// CHECK-NEXT: arith.mulf
// CHECK: return %[[F]] :
// CHECK-NOT: linalg.generic
func.func @accumulate_under_transpose(%acc: tensor<8x4xf32>, %g: tensor<8x4xf32>) -> tensor<4x8xf32> {
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<8x4xf32>) outs(%acc : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<8x4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %t : tensor<4x8xf32>
}

// A centering (one subtraction) read by a sum of squares and by the
// normalization: with recompute-cheap both compute it again and its tensor
// goes; an exponential with two users stays (not cheap).
// CHECK-LABEL: func.func @shared_producers(
// CHECK-COUNT-5: linalg.generic
// CUDA-LABEL: func.func @shared_producers(
// CUDA: linalg.generic
// CUDA-SAME: iterator_types = ["parallel", "reduction"]
// CUDA: arith.subf
// CUDA: arith.mulf
// CUDA: linalg.generic
// CUDA-SAME: iterator_types = ["parallel", "parallel"]
// CUDA: arith.subf
// CUDA: arith.mulf
// CUDA: math.exp
// CUDA-COUNT-2: linalg.generic
// CUDA-NOT: linalg.generic
// CUDA: return
func.func @shared_producers(%x: tensor<8x4xf32>, %mean: tensor<8xf32>, %acc: tensor<8xf32>, %r: tensor<8xf32>) -> (tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %e = tensor.empty() : tensor<8x4xf32>
  %c = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean : tensor<8x4xf32>, tensor<8xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %var = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%c : tensor<8x4xf32>) outs(%acc : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    %t = arith.addf %s, %o : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  %n = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %r : tensor<8x4xf32>, tensor<8xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %q: f32, %o: f32):
    %s = arith.mulf %a, %q : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %x2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.exp %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %y1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x2 : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %y2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x2 : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %var, %n, %y1, %y2 : tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// A gradient computed in place over its logits (its body reads the init)
// whose only reader is a bfloat16 copy: the fused operation's float32
// result is read by nobody, so the logits become an input and only the
// copy is written (same scalar operations, one output).
// CHECK-LABEL: func.func @in_place_then_copy(
// CHECK-SAME: %[[L:.*]]: tensor<4x8xf32>, %[[S:.*]]: tensor<4xf32>
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[S]], %[[L]] : tensor<4xf32>, tensor<4x8xf32>)
// CHECK-SAME: outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK-NEXT: ^bb0(%[[SV:.*]]: f32, %[[LV:.*]]: f32, %{{.*}}: bf16):
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[LV]], %[[SV]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[D]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[T]] : bf16
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @in_place_then_copy(%logits: tensor<4x8xf32>, %shift: tensor<4xf32>)
    -> tensor<4x8xbf16> {
  %g = linalg.generic {indexing_maps = [#row, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%shift : tensor<4xf32>) outs(%logits : tensor<4x8xf32>) {
  ^bb0(%s: f32, %l: f32):
    %d = arith.subf %l, %s : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x8xbf16>
  %c = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<4x8xf32>) outs(%e : tensor<4x8xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %t = arith.truncf %x : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  return %c : tensor<4x8xbf16>
}
