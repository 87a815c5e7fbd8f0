// A batch statistic that depends on the parameters but carries no gradient
// (here detached; a mixture's routing fractions come from an argmax),
// multiplied by a batch-sum that has one: a split is refused, naming the
// option; with the pre-pass, the statistic and what it needs (the product
// below) are computed for the whole batch before the micro-batches, in a
// loop over them, and passed in as a global.
// RUN: ga-opt %s --train-split-batch --mlir-print-op-on-diagnostic=false -verify-diagnostics -o /dev/null
// RUN: ga-opt %s --train-split-batch=statistics-prepass=true | FileCheck %s
// RUN: ga-opt %s --test-train-decomposability="statistics-prepass=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CLASS
// RUN: not ga-opt %s --ga-pipeline="batch-statistics=sometimes" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPTION

// The pre-pass runs micro-batch by micro-batch (one micro-batch's
// activations at a time), its sum carried across them.
// CHECK: %[[F:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (tensor<f32>)
// CHECK: %[[X:.+]] = tensor.extract_slice %{{.+}}[%{{.+}}, 0] [4, 4] [1, 1] : tensor<8x4xf32> to tensor<4x4xf32>
// CHECK: %[[O:.+]] = linalg.matmul ins(%[[X]], {{.*}} -> tensor<4x4xf32>
// CHECK: %[[D:.+]] = train.stop_gradient %[[O]]
// CHECK: %[[S:.+]] = linalg.generic {{.*}} ins(%[[D]] : tensor<4x4xf32>) outs(%[[ACC]] : tensor<f32>)
// CHECK: scf.yield %[[S]]
// CHECK: train.accumulate microbatches = 2 {{.*}} globals(%[[F]] : tensor<f32>)
// CHECK: linalg.matmul {{.*}} tensor<4x4xf32>

// CLASS: remark: batch-sum, global
// CLASS-NEXT: %f = linalg.generic
// CLASS: remark: batch-sum, parameter-dependent
// CLASS-NEXT: %p = linalg.generic

// OPTION: for the --batch-statistics option: batch-statistics must be refuse or prepass, got 'sometimes'

#id2 = affine_map<(i, j) -> (i, j)>
#to0 = affine_map<(i, j) -> ()>
#s = affine_map<() -> ()>
func.func @statistic(%w: tensor<4x4xf32>, %x: tensor<8x4xf32>) -> (tensor<f32>, tensor<4x4xf32>) {
  // expected-note @+1 {{the train.step being split}}
  %loss, %g = train.step params(%w : tensor<4x4xf32>) batch(%x : tensor<8x4xf32>)
      attributes {microbatches = 2 : i64} -> tensor<f32> grads(tensor<4x4xf32>) {
  ^bb0(%pw: tensor<4x4xf32>, %bx: tensor<8x4xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
    %o = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
    %d = train.stop_gradient %o : tensor<8x4xf32>
    %es = tensor.empty() : tensor<f32>
    %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %f = linalg.generic {indexing_maps = [#id2, #to0], iterator_types = ["reduction", "reduction"]}
        ins(%d : tensor<8x4xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %acc, %a : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    %p = linalg.generic {indexing_maps = [#id2, #to0], iterator_types = ["reduction", "reduction"]}
        ins(%o : tensor<8x4xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %acc, %a : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    // expected-error @below {{cannot split this step into 1 rank(s) x 2 micro-batch(es) exactly: this operation multiplies two parameter-dependent batch-sums ('arith.mulf'): a product of sums is not the sum of the micro-batch products; one of them carries no gradient (a batch statistic, such as a mixture's routing fractions): batch-statistics=prepass computes it over the whole batch before the micro-batches, at the cost of one more forward pass of what it needs (84% of the step's forward work)}}
    %l = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []}
        ins(%f, %p : tensor<f32>, tensor<f32>) outs(%es : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %q = arith.mulf %a, %b : f32
      linalg.yield %q : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4x4xf32>
}
