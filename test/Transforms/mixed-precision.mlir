// RUN: ga-opt %s --ga-mixed-precision --split-input-file --verify-diagnostics | FileCheck %s

// A forward product and the two products of its gradient, as
// differentiation writes them. A computed tensor gets one bfloat16 copy,
// made where it is defined and shared by all its products: the weight
// gradient reads the same copy of the activation as the forward product.
// A parameter (a function argument, or a slice of one) is rounded right
// before each product that reads it, so that no copy of it is held from
// the forward to the backward pass.

// CHECK-LABEL: func.func @forward_and_backward
// CHECK-SAME: (%[[X0:[^:]*]]: tensor<8x4xf32>, %[[W:[^:]*]]: tensor<4x6xf32>, %[[G0:[^:]*]]: tensor<8x6xf32>,
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%[[X0]] : tensor<8x4xf32>)
// CHECK: %[[X16:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<8x4xf32>) outs(%{{.*}} : tensor<8x4xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%[[G0]] : tensor<8x6xf32>)
// CHECK: %[[G16:.*]] = linalg.generic {{.*}} ins(%[[G]] : tensor<8x6xf32>) outs(%{{.*}} : tensor<8x6xbf16>)
// The forward product stays a linalg.matmul, of bfloat16 inputs (its body
// widens them), with float32 sums; the weight is rounded right before it.
// CHECK: %[[WA:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<4x6xf32>) outs(%{{.*}} : tensor<4x6xbf16>)
// CHECK-NOT: linalg.generic
// CHECK: %[[Y:.*]] = linalg.matmul ins(%[[X16]], %[[WA]] : tensor<8x4xbf16>, tensor<4x6xbf16>) outs(%{{.*}} : tensor<8x6xf32>)
// The input gradient (g w^T) rounds the weight again, and reads the
// gradient's one copy; a linalg.generic widens them in its body.
// CHECK: %[[WB:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<4x6xf32>) outs(%{{.*}} : tensor<4x6xbf16>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.truncf
// CHECK-NEXT: linalg.yield
// CHECK-NEXT: }
// CHECK-NEXT: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[G16]], %[[WB]] : tensor<8x6xbf16>, tensor<4x6xbf16>) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %[[C:.*]]: f32):
// CHECK-NEXT: %[[A32:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-NEXT: %[[B32:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[A32]], %[[B32]] : f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[C]], %[[P]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// The weight gradient (x^T g) reads the two shared copies: no rounding.
// CHECK-NOT: arith.truncf
// CHECK: linalg.generic {{.*}} ins(%[[X16]], %[[G16]] : tensor<8x4xbf16>, tensor<8x6xbf16>)
// A named product with transposed maps and a batched one keep their kind
// and maps; a slice of an argument is a parameter too.
// CHECK: %[[WC:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<4x6xf32>)
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[G16]], %[[WC]] : tensor<8x6xbf16>, tensor<4x6xbf16>) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK: %[[SLICE:.*]] = tensor.extract_slice
// CHECK: linalg.generic {{.*}} ins(%[[SLICE]] : tensor<2x4x6xf32>) outs(%{{.*}} : tensor<2x4x6xbf16>)
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<2x8x4xbf16>, tensor<2x4x6xbf16>) outs(%{{.*}} : tensor<2x8x6xf32>)
// CHECK: return
#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#km = affine_map<(m, n, k) -> (k, m)>
#kn = affine_map<(m, n, k) -> (k, n)>
#id2 = affine_map<(i, j) -> (i, j)>
func.func @forward_and_backward(%x0: tensor<8x4xf32>, %w: tensor<4x6xf32>,
                                %g0: tensor<8x6xf32>, %bx: tensor<2x8x4xf32>,
                                %stack: tensor<3x4x6xf32>)
    -> (tensor<8x6xf32>, tensor<8x4xf32>, tensor<4x6xf32>, tensor<8x4xf32>,
        tensor<2x8x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %ex = tensor.empty() : tensor<8x4xf32>
  %x = linalg.generic {indexing_maps = [#id2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x0 : tensor<8x4xf32>) outs(%ex : tensor<8x4xf32>) {
  ^bb0(%a: f32, %c: f32):
    %m = arith.mulf %a, %two : f32
    linalg.yield %m : f32
  } -> tensor<8x4xf32>
  %eg = tensor.empty() : tensor<8x6xf32>
  %g = linalg.generic {indexing_maps = [#id2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%g0 : tensor<8x6xf32>) outs(%eg : tensor<8x6xf32>) {
  ^bb0(%a: f32, %c: f32):
    %m = arith.mulf %a, %two : f32
    linalg.yield %m : f32
  } -> tensor<8x6xf32>
  %e0 = tensor.empty() : tensor<8x6xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x6xf32>) -> tensor<8x6xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>)
      outs(%z0 : tensor<8x6xf32>) -> tensor<8x6xf32>
  %e1 = tensor.empty() : tensor<8x4xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // dx[m, n] = sum_k g[m, k] w[n, k]
  %dx = linalg.generic {indexing_maps = [#mk, #nk, #mn],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%g, %w : tensor<8x6xf32>, tensor<4x6xf32>) outs(%z1 : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %e2 = tensor.empty() : tensor<4x6xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x6xf32>) -> tensor<4x6xf32>
  // dw[m, n] = sum_k x[k, m] g[k, n]
  %dw = linalg.generic {indexing_maps = [#km, #kn, #mn],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %g : tensor<8x4xf32>, tensor<8x6xf32>) outs(%z2 : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  // The input gradient again, as a named product with transposed maps.
  %dx2 = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%g, %w : tensor<8x6xf32>, tensor<4x6xf32>)
      outs(%z1 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %bw = tensor.extract_slice %stack[1, 0, 0] [2, 4, 6] [1, 1, 1]
      : tensor<3x4x6xf32> to tensor<2x4x6xf32>
  %e3 = tensor.empty() : tensor<2x8x6xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
  %by = linalg.batch_matmul ins(%bx, %bw : tensor<2x8x4xf32>, tensor<2x4x6xf32>)
      outs(%z3 : tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
  return %y, %dx, %dw, %dx2, %by
      : tensor<8x6xf32>, tensor<8x4xf32>, tensor<4x6xf32>, tensor<8x4xf32>,
        tensor<2x8x6xf32>
}

// -----

// A scaled batched product (attention's scores) keeps its scale; the copy
// of a computed input follows its definition. Row reductions that multiply
// two tensors without a dimension of each their own (softmax's backward
// row sum) and elementwise products are not matrix products: they stay
// float32.

// CHECK-LABEL: func.func @scaled_batch_and_not_products
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<2x4x8xf32>) outs(%{{.*}} : tensor<2x4x8xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: linalg.yield
// CHECK-NEXT: } -> tensor<2x4x8xf32>
// CHECK-NEXT: %{{.*}} = tensor.empty() : tensor<2x4x8xbf16>
// CHECK-NEXT: %[[Q16:.*]] = linalg.generic {{.*}} ins(%[[Q]] : tensor<2x4x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[Q16]], %{{.*}} : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) outs(%{{.*}} : tensor<2x4x4xf32>)
// CHECK: arith.extf
// CHECK: arith.extf
// CHECK: %[[QK:.*]] = arith.mulf
// CHECK: arith.mulf %[[QK]], %{{.*}} : f32
// The row sum of two [2, 4, 4] tensors and the elementwise product.
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%{{.*}} : tensor<2x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%{{.*}} : tensor<2x4x4xf32>)
// CHECK-NOT: bf16
// CHECK: return
#q = affine_map<(b, i, j, d) -> (b, i, d)>
#k = affine_map<(b, i, j, d) -> (b, j, d)>
#s = affine_map<(b, i, j, d) -> (b, i, j)>
#id3 = affine_map<(b, i, j) -> (b, i, j)>
#row = affine_map<(b, i, j) -> (b, i)>
func.func @scaled_batch_and_not_products(%x: tensor<2x4x8xf32>,
                                         %k: tensor<2x4x8xf32>,
                                         %p: tensor<2x4x4xf32>)
    -> (tensor<2x4x4xf32>, tensor<2x4xf32>, tensor<2x4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %scale = arith.constant 0.353553385 : f32
  %eq = tensor.empty() : tensor<2x4x8xf32>
  %q = linalg.generic {indexing_maps = [#id3, #id3],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x4x8xf32>) outs(%eq : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %c: f32):
    %m = arith.mulf %a, %two : f32
    linalg.yield %m : f32
  } -> tensor<2x4x8xf32>
  %e = tensor.empty() : tensor<2x4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %scores = linalg.generic {indexing_maps = [#q, #k, #s],
                            iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%z : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %ms = arith.mulf %m, %scale : f32
    %s = arith.addf %c, %ms : f32
    linalg.yield %s : f32
  } -> tensor<2x4x4xf32>
  %er = tensor.empty() : tensor<2x4xf32>
  %zr = linalg.fill ins(%zero : f32) outs(%er : tensor<2x4xf32>) -> tensor<2x4xf32>
  %rows = linalg.generic {indexing_maps = [#id3, #id3, #row],
                          iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%scores, %p : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%zr : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %prod = linalg.generic {indexing_maps = [#id3, #id3, #id3],
                          iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%scores, %p : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<2x4x4xf32>
  return %scores, %rows, %prod : tensor<2x4x4xf32>, tensor<2x4xf32>, tensor<2x4x4xf32>
}

// -----

// A tensor that something else reads after its last product (as the
// softmax's backward pass reads its probabilities after the product of the
// values' gradient) stays alive in float32 until then anyway: it is rounded
// right before each product, and no copy is kept beside it.

// CHECK-LABEL: func.func @read_after_products
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<8x4xf32>) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK-NOT: tensor<8x4xbf16>
// CHECK: linalg.fill
// CHECK: %[[C1:.*]] = linalg.generic {{.*}} ins(%[[P]] : tensor<8x4xf32>) outs(%{{.*}} : tensor<8x4xbf16>)
// CHECK: linalg.matmul ins(%[[C1]], %{{.*}} : tensor<8x4xbf16>, tensor<4x6xbf16>)
// CHECK: linalg.fill
// CHECK: %[[C2:.*]] = linalg.generic {{.*}} ins(%[[P]] : tensor<8x4xf32>) outs(%{{.*}} : tensor<8x4xbf16>)
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[C2]], %{{.*}} : tensor<8x4xbf16>, tensor<8x6xbf16>)
// CHECK: linalg.generic {{.*}} ins(%[[P]], %[[P]] : tensor<8x4xf32>, tensor<8x4xf32>)
#id2b = affine_map<(i, j) -> (i, j)>
func.func @read_after_products(%x: tensor<8x4xf32>, %w: tensor<4x6xf32>,
                               %g0: tensor<8x6xf32>)
    -> (tensor<8x6xf32>, tensor<4x6xf32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %ep = tensor.empty() : tensor<8x4xf32>
  %p = linalg.generic {indexing_maps = [#id2b, #id2b],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%ep : tensor<8x4xf32>) {
  ^bb0(%a: f32, %c: f32):
    %m = arith.mulf %a, %two : f32
    linalg.yield %m : f32
  } -> tensor<8x4xf32>
  %e0 = tensor.empty() : tensor<8x6xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x6xf32>) -> tensor<8x6xf32>
  %y = linalg.matmul ins(%p, %w : tensor<8x4xf32>, tensor<4x6xf32>)
      outs(%z0 : tensor<8x6xf32>) -> tensor<8x6xf32>
  %e1 = tensor.empty() : tensor<4x6xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x6xf32>) -> tensor<4x6xf32>
  %dw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                       affine_map<(m, n, k) -> (k, n)>,
                                       affine_map<(m, n, k) -> (m, n)>]
      ins(%p, %g0 : tensor<8x4xf32>, tensor<8x6xf32>)
      outs(%z1 : tensor<4x6xf32>) -> tensor<4x6xf32>
  %q = linalg.generic {indexing_maps = [#id2b, #id2b, #id2b],
                       iterator_types = ["parallel", "parallel"]}
      ins(%p, %p : tensor<8x4xf32>, tensor<8x4xf32>) outs(%ep : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<8x4xf32>
  return %y, %dw, %q : tensor<8x6xf32>, tensor<4x6xf32>, tensor<8x4xf32>
}

// -----

// Products already of bfloat16 inputs, or with a float64 result, are not
// this pass's: left as they are.

// CHECK-LABEL: func.func @other_types
// CHECK-NOT: arith.truncf
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x4xbf16>, tensor<4x6xbf16>) outs(%{{.*}} : tensor<8x6xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x4xf64>, tensor<4x6xf64>) outs(%{{.*}} : tensor<8x6xf64>)
func.func @other_types(%a: tensor<8x4xbf16>, %b: tensor<4x6xbf16>,
                       %c: tensor<8x6xf32>, %x: tensor<8x4xf64>,
                       %w: tensor<4x6xf64>, %d: tensor<8x6xf64>)
    -> (tensor<8x6xf32>, tensor<8x6xf64>) {
  %0 = linalg.matmul ins(%a, %b : tensor<8x4xbf16>, tensor<4x6xbf16>)
      outs(%c : tensor<8x6xf32>) -> tensor<8x6xf32>
  %1 = linalg.matmul ins(%x, %w : tensor<8x4xf64>, tensor<4x6xf64>)
      outs(%d : tensor<8x6xf64>) -> tensor<8x6xf64>
  return %0, %1 : tensor<8x6xf32>, tensor<8x6xf64>
}

// -----

// On buffers: refused at the product.

func.func @buffers(%x: memref<8x4xf32>, %w: memref<4x6xf32>,
                   %y: memref<8x6xf32>) {
  // expected-error @below {{ga-mixed-precision: rounds the inputs of products on tensors, before bufferization; this product reads or writes buffers}}
  linalg.matmul ins(%x, %w : memref<8x4xf32>, memref<4x6xf32>)
      outs(%y : memref<8x6xf32>)
  return
}

// -----

// A product of a tensor that widens a bfloat16 one (the fused attention's
// output with bf16-mixed) reads that bfloat16 tensor: rounding the widened
// values gives it back, so no copy is made; the other operand, a
// parameter, is rounded at the product.
// CHECK-LABEL: func.func @widened
// CHECK-SAME: %[[O:[^:]*]]: tensor<8x4xbf16>
// CHECK-COUNT-1: arith.truncf
// CHECK: linalg.matmul ins(%[[O]], %{{.*}} : tensor<8x4xbf16>, tensor<4x6xbf16>)
func.func @widened(%o: tensor<8x4xbf16>, %w: tensor<4x6xf32>) -> tensor<8x6xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %wide = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                          iterator_types = ["parallel", "parallel"]}
      ins(%o : tensor<8x4xbf16>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%x: bf16, %out: f32):
    %y = arith.extf %x : bf16 to f32
    linalg.yield %y : f32
  } -> tensor<8x4xf32>
  %zero = arith.constant 0.0 : f32
  %c = tensor.empty() : tensor<8x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%c : tensor<8x6xf32>) -> tensor<8x6xf32>
  %p = linalg.matmul ins(%wide, %w : tensor<8x4xf32>, tensor<4x6xf32>) outs(%z : tensor<8x6xf32>) -> tensor<8x6xf32>
  return %p : tensor<8x6xf32>
}
