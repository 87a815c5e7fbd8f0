// RUN: ga-opt %s --ga-mixed-precision=round-results --split-input-file | FileCheck %s
// RUN: ga-opt %s --ga-mixed-precision --split-input-file | FileCheck %s --check-prefix=MIXED

// precision=bf16: a product marked train.per_example stores its result as
// bfloat16. The product still sums in float32 (its init is float32); one
// rounding right after it is the tensor between kernels; the next product
// reads that bfloat16 tensor as its operand (no second rounding), and each
// other reader gets a widening of its own right before it, which fusion
// takes in. An unmarked product (a parameter's gradient, a sum over the
// batch) keeps its float32 result.

// CHECK-LABEL: func.func @chain
// CHECK: %[[H:.*]] = linalg.matmul {train.per_example} ins(%{{.*}}, %{{.*}} : tensor<8x4xbf16>, tensor<4x6xbf16>) outs(%{{.*}} : tensor<8x6xf32>)
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<8x6xbf16>
// CHECK-NEXT: %[[H16:.*]] = linalg.generic {{.*}} ins(%[[H]] : tensor<8x6xf32>) outs(%[[E]] : tensor<8x6xbf16>)
// CHECK: arith.truncf
// The elementwise reader widens the rounded tensor itself.
// CHECK: %[[WIDE:.*]] = linalg.generic {{.*}} ins(%[[H16]] : tensor<8x6xbf16>) outs(%{{.*}} : tensor<8x6xf32>)
// CHECK: arith.extf
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[WIDE]] : tensor<8x6xf32>)
// CHECK: math.tanh
// The second product reads the rounded tensor, not a copy of a widening.
// CHECK: linalg.matmul {train.per_example} ins(%[[H16]], %{{.*}} : tensor<8x6xbf16>, tensor<6x2xbf16>)
// The weight gradient (unmarked) keeps its float32 result.
// CHECK: %[[DW:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<6x8xbf16>, tensor<8x2xbf16>) outs(%{{.*}} : tensor<6x2xf32>)
// CHECK-NOT: ins(%[[DW]]
// CHECK: return
// Without round-results the marks change nothing.
// MIXED-LABEL: func.func @chain
// MIXED-NOT: arith.extf
// MIXED: return
func.func @chain(%x: tensor<8x4xf32>, %w1: tensor<4x6xf32>, %w2: tensor<6x2xf32>,
                 %g: tensor<8x2xf32>) -> (tensor<8x6xf32>, tensor<8x2xf32>, tensor<6x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x6xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x6xf32>) -> tensor<8x6xf32>
  %h = linalg.matmul {train.per_example} ins(%x, %w1 : tensor<8x4xf32>, tensor<4x6xf32>) outs(%z1 : tensor<8x6xf32>) -> tensor<8x6xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x6xf32>) outs(%e1 : tensor<8x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<8x6xf32>
  %e2 = tensor.empty() : tensor<8x2xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x2xf32>) -> tensor<8x2xf32>
  %y = linalg.matmul {train.per_example} ins(%h, %w2 : tensor<8x6xf32>, tensor<6x2xf32>) outs(%z2 : tensor<8x2xf32>) -> tensor<8x2xf32>
  %e3 = tensor.empty() : tensor<6x8xf32>
  %ht = linalg.transpose ins(%h : tensor<8x6xf32>) outs(%e3 : tensor<6x8xf32>) permutation = [1, 0]
  %e4 = tensor.empty() : tensor<6x2xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<6x2xf32>) -> tensor<6x2xf32>
  %dw = linalg.matmul ins(%ht, %g : tensor<6x8xf32>, tensor<8x2xf32>) outs(%z4 : tensor<6x2xf32>) -> tensor<6x2xf32>
  return %r, %y, %dw : tensor<8x6xf32>, tensor<8x2xf32>, tensor<6x2xf32>
}

// -----

// A product whose only reader adds a parameter (a bias) is rounded after
// the addition, which reads the bias rounded to bfloat16, as a bfloat16
// GEMM's bias epilogue computes; a product whose reader
// adds something else (a residual, computed in the step) is rounded before
// it.

// CHECK-LABEL: func.func @bias_and_residual
// The bias's rounding comes before the product, so that nothing runs
// between the product and its addition.
// CHECK: %[[BIAS16:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<6xf32>) outs(%{{.*}} : tensor<6xbf16>)
// CHECK: arith.truncf
// CHECK: %[[P:.*]] = linalg.matmul {train.per_example}
// CHECK-NEXT: %[[B:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[BIAS16]] : tensor<8x6xf32>, tensor<6xbf16>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[WB:.*]] = arith.extf
// CHECK-NEXT: arith.addf %{{.*}}, %[[WB]] : f32
// CHECK: linalg.generic {{.*}} ins(%[[B]] : tensor<8x6xf32>) outs(%{{.*}} : tensor<8x6xbf16>)
// CHECK: %[[Q:.*]] = linalg.matmul {train.per_example}
// CHECK-NEXT: tensor.empty() : tensor<8x6xbf16>
// CHECK-NEXT: %[[Q16:.*]] = linalg.generic {{.*}} ins(%[[Q]] : tensor<8x6xf32>) outs(%{{.*}} : tensor<8x6xbf16>)
// CHECK: %[[QW:.*]] = linalg.generic {{.*}} ins(%[[Q16]] : tensor<8x6xbf16>) outs(%{{.*}} : tensor<8x6xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[QW]], %{{.*}} : tensor<8x6xf32>, tensor<8x6xf32>)
func.func @bias_and_residual(%x: tensor<8x4xf32>, %w: tensor<4x6xf32>, %b: tensor<6xf32>,
                             %res: tensor<8x6xf32>) -> (tensor<8x6xf32>, tensor<8x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x6xf32>) -> tensor<8x6xf32>
  %p = linalg.matmul {train.per_example} ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>) outs(%z : tensor<8x6xf32>) -> tensor<8x6xf32>
  %pb = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p, %b : tensor<8x6xf32>, tensor<6xf32>) outs(%e : tensor<8x6xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x6xf32>
  %rn = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%res : tensor<8x6xf32>) outs(%e : tensor<8x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<8x6xf32>
  %q = linalg.matmul {train.per_example} ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>) outs(%z : tensor<8x6xf32>) -> tensor<8x6xf32>
  %qr = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%q, %rn : tensor<8x6xf32>, tensor<8x6xf32>) outs(%e : tensor<8x6xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x6xf32>
  return %pb, %qr : tensor<8x6xf32>, tensor<8x6xf32>
}

// -----

// The readers of a rounded result read the bfloat16 tensor: a view of it
// is taken of the bfloat16 tensor, and a rounding of that view is the
// view itself; an element read reads the bfloat16 element and widens it;
// a parallel operation that reads the result as its init (in place) reads
// it as an input instead; a reduction's init (its running value) reads a
// widening.

// CHECK-LABEL: func.func @readers
// CHECK: %[[P:.*]] = linalg.matmul {train.per_example}
// CHECK: %[[P16:.*]] = linalg.generic {{.*}} ins(%[[P]] : tensor<8x6xf32>) outs(%{{.*}} : tensor<8x6xbf16>)
// CHECK: %[[S16:.*]] = tensor.extract_slice %[[P16]][0, 0] [8, 3] [1, 1] : tensor<8x6xbf16> to tensor<8x3xbf16>
// CHECK: %[[E:.*]] = tensor.extract %[[P16]][%{{.*}}, %{{.*}}] : tensor<8x6xbf16>
// CHECK: %[[EW:.*]] = arith.extf %[[E]] : bf16 to f32
// CHECK: %[[G:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %[[P16]] : tensor<8x6xf32>, tensor<8x6xbf16>) outs(%{{.*}} : tensor<8x6xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[OLD:.*]]: bf16, %{{.*}}: f32):
// CHECK-NEXT: %[[OLDW:.*]] = arith.extf %[[OLD]] : bf16 to f32
// CHECK-NEXT: arith.addf %[[IN]], %[[OLDW]] : f32
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%[[P16]] : tensor<8x6xbf16>) outs(%{{.*}} : tensor<8x6xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<8x6xf32>) outs(%[[W]] : tensor<8x6xf32>)
// CHECK: return %[[S16]], %[[EW]], %[[G]]
func.func @readers(%x: tensor<8x4xf32>, %w: tensor<4x6xf32>, %d: tensor<8x6xf32>, %i: index)
    -> (tensor<8x3xbf16>, f32, tensor<8x6xf32>, tensor<8x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x6xf32>) -> tensor<8x6xf32>
  %p = linalg.matmul {train.per_example} ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>) outs(%z : tensor<8x6xf32>) -> tensor<8x6xf32>
  %s = tensor.extract_slice %p[0, 0] [8, 3] [1, 1] : tensor<8x6xf32> to tensor<8x3xf32>
  %e16 = tensor.empty() : tensor<8x3xbf16>
  %s16 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<8x3xf32>) outs(%e16 : tensor<8x3xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x3xbf16>
  %el = tensor.extract %p[%i, %i] : tensor<8x6xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%d : tensor<8x6xf32>) outs(%p : tensor<8x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<8x6xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "reduction"]}
      ins(%d : tensor<8x6xf32>) outs(%p : tensor<8x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<8x6xf32>
  return %s16, %el, %g, %r : tensor<8x3xbf16>, f32, tensor<8x6xf32>, tensor<8x6xf32>
}
