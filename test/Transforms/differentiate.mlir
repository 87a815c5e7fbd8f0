// RUN: ga-opt --train-differentiate --split-input-file %s | FileCheck %s

// The adjoint of a reduction to a scalar is a generic over the same loops
// that writes through the parameter's map: d1 stays parallel, d0 becomes a
// reduction, and the body recomputes tanh and applies 1 - tanh^2.

// CHECK-LABEL: func.func @tanh_sum
// CHECK-SAME: (%[[W:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<8x4xf32>)
// CHECK-NOT: train.step
// CHECK: %[[LOSS:.+]] = linalg.generic {{.*}} ins(%[[X]], %[[W]] : {{.*}}) outs
// CHECK: %[[SEED:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[ZERO:.+]] = linalg.fill
// CHECK: %[[GRAD:.+]] = linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "parallel"]
// CHECK-SAME: ins(%[[X]], %[[W]], %[[SEED]] : tensor<8x4xf32>, tensor<4xf32>, tensor<f32>)
// CHECK-SAME: outs(%[[ZERO]] : tensor<4xf32>)
// CHECK: math.tanh
// CHECK: arith.subf
// CHECK: return %[[LOSS]], %[[GRAD]]
func.func @tanh_sum(%w: tensor<4xf32>, %x: tensor<8x4xf32>)
    -> (tensor<f32>, tensor<4xf32>) {
  %loss, %g = train.step params(%w : tensor<4xf32>) batch(%x : tensor<8x4xf32>)
      -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<8x4xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<f32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                         affine_map<(i, j) -> ()>],
        iterator_types = ["reduction", "reduction"]}
        ins(%bx, %pw : tensor<8x4xf32>, tensor<4xf32>) outs(%init : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %t = math.tanh %m : f32
      %s = arith.addf %acc, %t : f32
      linalg.yield %s : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4xf32>
}

// -----

// A matmul's adjoints are matmuls again (with transposed operand maps), and
// cross_entropy's adjoint is train.cross_entropy_grad with the same
// attributes; the integer labels get no gradient and the count stays an
// auxiliary result.

// CHECK-DAG: #[[A:.+]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[B:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[C:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @linear_ce
// CHECK-SAME: (%[[W:.+]]: tensor<4x3xf32>, %[[X:.+]]: tensor<8x4xf32>, %[[Y:.+]]: tensor<8xi64>)
// CHECK: %[[LOGITS:.+]] = linalg.matmul ins(%[[X]], %[[W]] :
// CHECK: %[[LOSS:.+]], %[[N:.+]] = train.cross_entropy mean %[[LOGITS]], %[[Y]] ignore_index = -100
// CHECK: %[[DL:.+]] = train.cross_entropy_grad mean %[[LOGITS]], %[[Y]], %{{.+}} ignore_index = -100
// CHECK: %[[DW:.+]] = linalg.matmul indexing_maps = [#[[A]], #[[B]], #[[C]]] ins(%[[X]], %[[DL]] : tensor<8x4xf32>, tensor<8x3xf32>)
// CHECK: return %[[LOSS]], %[[DW]], %[[N]]
func.func @linear_ce(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>)
    -> (tensor<f32>, tensor<4x3xf32>, tensor<i64>) {
  %loss, %g, %n = train.step params(%w : tensor<4x3xf32>)
      batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      -> tensor<f32> grads(tensor<4x3xf32>) aux(tensor<i64>) {
  ^bb0(%w_: tensor<4x3xf32>, %x_: tensor<8x4xf32>, %y_: tensor<8xi64>):
    %init = tensor.empty() : tensor<8x3xf32>
    %zero = arith.constant 0.0 : f32
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>)
        -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%x_, %w_ : tensor<8x4xf32>, tensor<4x3xf32>)
        outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l, %c = train.cross_entropy mean %logits, %y_ ignore_index = -100
        : (tensor<8x3xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<i64>)
    train.yield %l, %c : tensor<f32>, tensor<i64>
  }
  return %loss, %g, %n : tensor<f32>, tensor<4x3xf32>, tensor<i64>
}

// -----

// Shape ops move cotangents: the adjoint of a slice of a stacked parameter
// is an insertion into zeros; a collapse becomes an expand.

// CHECK-LABEL: func.func @slice_collapse
// CHECK: %[[DS:.+]] = tensor.expand_shape %{{.+}} {{\[\[}}0, 1]] output_shape [2, 3] : tensor<6xf32> into tensor<2x3xf32>
// CHECK: %[[Z:.+]] = linalg.fill
// CHECK: %[[DW:.+]] = tensor.insert_slice %[[DS]] into %[[Z]][1, 0, 0] [1, 2, 3] [1, 1, 1] : tensor<2x3xf32> into tensor<2x2x3xf32>
// CHECK: return %{{.+}}, %[[DW]]
func.func @slice_collapse(%w: tensor<2x2x3xf32>, %x: tensor<6xf32>)
    -> (tensor<f32>, tensor<2x2x3xf32>) {
  %loss, %g = train.step params(%w : tensor<2x2x3xf32>) batch(%x : tensor<6xf32>)
      -> tensor<f32> grads(tensor<2x2x3xf32>) {
  ^bb0(%w_: tensor<2x2x3xf32>, %x_: tensor<6xf32>):
    %s = tensor.extract_slice %w_[1, 0, 0] [1, 2, 3] [1, 1, 1]
        : tensor<2x2x3xf32> to tensor<2x3xf32>
    %f = tensor.collapse_shape %s [[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<f32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {
        indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                         affine_map<(i) -> ()>],
        iterator_types = ["reduction"]}
        ins(%f, %x_ : tensor<6xf32>, tensor<6xf32>) outs(%init : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<2x2x3xf32>
}

// -----

// An embedding lookup (tensor.extract of a parameter inside a generic) gets a
// scatter-add loop nest; a parameter that does not reach the loss gets zeros.

// CHECK-LABEL: func.func @embedding
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (tensor<5x3xf32>)
// CHECK: %[[OLD:.+]] = tensor.extract %[[ACC]][%{{.+}}, %{{.+}}] : tensor<5x3xf32>
// CHECK: %[[NEW:.+]] = arith.addf %[[OLD]], %{{.+}} : f32
// CHECK: tensor.insert %[[NEW]] into
// CHECK: %[[UNUSED:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<7xf32>)
// CHECK: return %{{.+}}, %{{.+}}, %[[UNUSED]]
func.func @embedding(%table: tensor<5x3xf32>, %unused: tensor<7xf32>,
                     %ids: tensor<4xi64>, %c: tensor<4x3xf32>)
    -> (tensor<f32>, tensor<5x3xf32>, tensor<7xf32>) {
  %loss, %g:2 = train.step params(%table, %unused : tensor<5x3xf32>, tensor<7xf32>)
      batch(%ids, %c : tensor<4xi64>, tensor<4x3xf32>)
      -> tensor<f32> grads(tensor<5x3xf32>, tensor<7xf32>) {
  ^bb0(%t: tensor<5x3xf32>, %u: tensor<7xf32>, %i: tensor<4xi64>,
       %cb: tensor<4x3xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<f32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {
        indexing_maps = [affine_map<(b, d) -> (b)>, affine_map<(b, d) -> (b, d)>,
                         affine_map<(b, d) -> ()>],
        iterator_types = ["reduction", "reduction"]}
        ins(%i, %cb : tensor<4xi64>, tensor<4x3xf32>) outs(%init : tensor<f32>) {
    ^bb0(%id: i64, %cv: f32, %acc: f32):
      %row = arith.index_cast %id : i64 to index
      %d = linalg.index 1 : index
      %v = tensor.extract %t[%row, %d] : tensor<5x3xf32>
      %m = arith.mulf %v, %cv : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g#0, %g#1 : tensor<f32>, tensor<5x3xf32>, tensor<7xf32>
}

// -----

// train.checkpoint: the forward region stays; the backward pass recomputes
// its body from the region's inputs (a second tanh outside any region) and
// differentiates the recomputed operations.

// CHECK-LABEL: func.func @checkpointed
// CHECK: train.checkpoint
// CHECK: math.tanh
// CHECK: train.yield
// CHECK: train.cross_entropy_grad sum
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK-NOT: train.checkpoint
// CHECK: return
func.func @checkpointed(%w: tensor<8x3xf32>, %y: tensor<8xi64>)
    -> (tensor<f32>, tensor<8x3xf32>) {
  %loss, %g = train.step params(%w : tensor<8x3xf32>) batch(%y : tensor<8xi64>)
      -> tensor<f32> grads(tensor<8x3xf32>) {
  ^bb0(%w_: tensor<8x3xf32>, %y_: tensor<8xi64>):
    %h = train.checkpoint (%w_ : tensor<8x3xf32>) -> tensor<8x3xf32> {
    ^bb0(%a: tensor<8x3xf32>):
      %e = tensor.empty() : tensor<8x3xf32>
      %t = linalg.generic {
          indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
          iterator_types = ["parallel", "parallel"]}
          ins(%a : tensor<8x3xf32>) outs(%e : tensor<8x3xf32>) {
      ^bb0(%in: f32, %out: f32):
        %r = math.tanh %in : f32
        linalg.yield %r : f32
      } -> tensor<8x3xf32>
      train.yield %t : tensor<8x3xf32>
    }
    %l = train.cross_entropy sum %h, %y_ ignore_index = -100
        : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<8x3xf32>
}

// -----

// train.accumulate gets explicit accumulators: the gradient contribution
// (not a reduction here) is added into its accumulator (in place, the
// accumulator as the init), the loss sum starts
// from its own, and the finalize region yields the results.

// CHECK-LABEL: func.func @accumulate
// CHECK: train.accumulate microbatches = 2 {{.*}} accumulators(%{{.+}}, %{{.+}} : tensor<f32>, tensor<4x3xf32>) -> tensor<f32> grads(tensor<4x3xf32>) {
// CHECK-NEXT: ^bb0(%[[W:.+]]: tensor<4x3xf32>, %[[Y:.+]]: tensor<4xi64>, %[[LACC:.+]]: tensor<f32>, %[[GACC:.+]]: tensor<4x3xf32>):
// CHECK: %[[L:.+]] = train.cross_entropy sum %[[W]], %[[Y]] init(%[[LACC]])
// CHECK: %[[DL:.+]] = train.cross_entropy_grad sum
// CHECK: %[[G:.+]] = linalg.generic {{.*}} ins(%[[DL]] : tensor<4x3xf32>) outs(%[[GACC]] : tensor<4x3xf32>)
// CHECK: arith.addf
// CHECK: train.yield %[[L]], %[[G]] : tensor<f32>, tensor<4x3xf32>
// CHECK-NEXT: } finalize {
// CHECK-NEXT: ^bb0(%[[FL:.+]]: tensor<f32>, %[[FG:.+]]: tensor<4x3xf32>, %{{.+}}: tensor<4x3xf32>):
// CHECK-NEXT: train.yield %[[FL]], %[[FG]] : tensor<f32>, tensor<4x3xf32>
func.func @accumulate(%w: tensor<4x3xf32>, %y: tensor<8xi64>)
    -> (tensor<f32>, tensor<4x3xf32>) {
  %loss, %g = train.accumulate microbatches = 2 params(%w : tensor<4x3xf32>)
      batch(%y : tensor<8xi64>) -> tensor<f32> grads(tensor<4x3xf32>) {
  ^bb0(%w_: tensor<4x3xf32>, %y_: tensor<4xi64>):
    %l = train.cross_entropy sum %w_, %y_ ignore_index = -100
        : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4x3xf32>
}

// -----

// A stacked parameter in a micro-batch body: each layer's weight gradient
// is computed into its slice of the parameter's one accumulator (no
// per-micro-batch gradient, no addition), the loss sum starts from its
// accumulator, and the division by the global count runs once, in the
// finalize region.

// CHECK-LABEL: func.func @accumulate_stacked
// CHECK: ^bb0(%[[W:.+]]: tensor<2x4x4xf32>, %[[X:.+]]: tensor<4x4xf32>, %[[N:.+]]: tensor<f32>, %[[SACC:.+]]: tensor<f32>, %[[GACC:.+]]: tensor<2x4x4xf32>):
// CHECK: %[[S:.+]] = linalg.generic {{.*}} outs(%[[SACC]] : tensor<f32>)
// CHECK: %[[P1:.+]] = tensor.extract_slice %[[GACC]][1, 0, 0] [1, 4, 4] [1, 1, 1]
// CHECK-NEXT: %[[G1:.+]] = linalg.matmul {{.*}} outs(%[[P1]] : tensor<4x4xf32>)
// CHECK-NEXT: %[[A1:.+]] = tensor.insert_slice %[[G1]] into %[[GACC]][1, 0, 0] [1, 4, 4] [1, 1, 1]
// CHECK-NEXT: %[[P0:.+]] = tensor.extract_slice %[[A1]][0, 0, 0] [1, 4, 4] [1, 1, 1]
// CHECK-NEXT: %[[G0:.+]] = linalg.matmul {{.*}} outs(%[[P0]] : tensor<4x4xf32>)
// CHECK-NEXT: %[[A0:.+]] = tensor.insert_slice %[[G0]] into %[[A1]][0, 0, 0] [1, 4, 4] [1, 1, 1]
// CHECK-NEXT: train.yield %[[S]], %[[A0]] : tensor<f32>, tensor<2x4x4xf32>
// CHECK-NEXT: } finalize {
// CHECK-NEXT: ^bb0(%[[FS:.+]]: tensor<f32>, %[[FG:.+]]: tensor<2x4x4xf32>, %{{.+}}: tensor<2x4x4xf32>, %[[FN:.+]]: tensor<f32>):
// CHECK: %[[L:.+]] = linalg.generic {{.*}} ins(%[[FS]], %[[FN]] : tensor<f32>, tensor<f32>)
// CHECK: train.yield %[[L]], %[[FG]] : tensor<f32>, tensor<2x4x4xf32>
#id2 = affine_map<(i, j) -> (i, j)>
#to0 = affine_map<(i, j) -> ()>
#s = affine_map<() -> ()>
func.func @accumulate_stacked(%w: tensor<2x4x4xf32>, %x: tensor<8x4xf32>, %n: tensor<f32>)
    -> (tensor<f32>, tensor<2x4x4xf32>) {
  %loss, %g = train.accumulate microbatches = 2 params(%w : tensor<2x4x4xf32>)
      batch(%x : tensor<8x4xf32>) globals(%n : tensor<f32>)
      -> tensor<f32> grads(tensor<2x4x4xf32>) {
  ^bb0(%w_: tensor<2x4x4xf32>, %x_: tensor<4x4xf32>, %n_: tensor<f32>):
    %w0 = tensor.extract_slice %w_[0, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<2x4x4xf32> to tensor<4x4xf32>
    %w1 = tensor.extract_slice %w_[1, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<2x4x4xf32> to tensor<4x4xf32>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %h = linalg.matmul ins(%x_, %w0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
    %o = linalg.matmul ins(%h, %w1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
    %es = tensor.empty() : tensor<f32>
    %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#id2, #to0], iterator_types = ["reduction", "reduction"]}
        ins(%o : tensor<4x4xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %acc, %a : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    %el = tensor.empty() : tensor<f32>
    %l = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []}
        ins(%s, %n_ : tensor<f32>, tensor<f32>) outs(%el : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %q = arith.divf %a, %b : f32
      linalg.yield %q : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<2x4x4xf32>
}

// -----

// A loss divided by a constant (Dr. GRPO's length, a mean's batch size):
// the division reads a constant from outside its body, which is cloned into
// the finalize region with it, so that it runs once on the accumulated sum,
// as in the full batch (bitwise), instead of once per micro-batch.

// CHECK-LABEL: func.func @accumulate_constant_divisor
// CHECK: train.yield %{{.+}}, %{{.+}} : tensor<f32>, tensor<4x4xf32>
// CHECK-NEXT: } finalize {
// CHECK-NEXT: ^bb0(%[[FS:.+]]: tensor<f32>, %[[FG:.+]]: tensor<4x4xf32>, %{{.+}}: tensor<4x4xf32>):
// CHECK: %[[C:.+]] = arith.constant 3.200000e+01 : f32
// CHECK: %[[L:.+]] = linalg.generic {{.*}} ins(%[[FS]] : tensor<f32>)
// CHECK: arith.divf %{{.+}}, %[[C]] : f32
// CHECK: train.yield %[[L]], %[[FG]] : tensor<f32>, tensor<4x4xf32>
#id2 = affine_map<(i, j) -> (i, j)>
#to0 = affine_map<(i, j) -> ()>
#s = affine_map<() -> ()>
func.func @accumulate_constant_divisor(%w: tensor<4x4xf32>, %x: tensor<8x4xf32>)
    -> (tensor<f32>, tensor<4x4xf32>) {
  %loss, %g = train.accumulate microbatches = 2 params(%w : tensor<4x4xf32>)
      batch(%x : tensor<8x4xf32>) -> tensor<f32> grads(tensor<4x4xf32>) {
  ^bb0(%w_: tensor<4x4xf32>, %x_: tensor<4x4xf32>):
    %zero = arith.constant 0.0 : f32
    %length = arith.constant 32.0 : f32
    %e = tensor.empty() : tensor<4x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %o = linalg.matmul ins(%x_, %w_ : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
    %es = tensor.empty() : tensor<f32>
    %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#id2, #to0], iterator_types = ["reduction", "reduction"]}
        ins(%o : tensor<4x4xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %acc, %a : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    %el = tensor.empty() : tensor<f32>
    %l = linalg.generic {indexing_maps = [#s, #s], iterator_types = []}
        ins(%s : tensor<f32>) outs(%el : tensor<f32>) {
    ^bb0(%a: f32, %out: f32):
      %q = arith.divf %a, %length : f32
      linalg.yield %q : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4x4xf32>
}

// -----

// A parameter's adjoint that a product computes from zeros and a reshape
// takes to the parameter's layout (torch-mlir's einsums): the accumulator
// is kept in the product's layout and is the product's init, so that the
// micro-batches continue the full batch's sum in its order of terms
// (bitwise); the reshape runs once, in finalize.

// CHECK-LABEL: func.func @accumulate_in_product_layout
// CHECK: train.accumulate {{.*}} accumulators(%{{.+}}, %{{.+}} : tensor<f32>, tensor<4x2xf32>)
// CHECK: ^bb0(%{{.+}}: tensor<8xf32>, %{{.+}}: tensor<4x4xf32>, %{{.+}}: tensor<f32>, %[[ACC:.+]]: tensor<4x2xf32>):
// CHECK: %[[G:.+]] = linalg.matmul {{.*}} outs(%[[ACC]] : tensor<4x2xf32>)
// CHECK: train.yield %{{.+}}, %[[G]] : tensor<f32>, tensor<4x2xf32>
// CHECK-NEXT: } finalize {
// CHECK-NEXT: ^bb0(%{{.+}}: tensor<f32>, %[[FG:.+]]: tensor<4x2xf32>, %{{.+}}: tensor<8xf32>):
// CHECK-NEXT: %[[C:.+]] = tensor.collapse_shape %[[FG]] {{\[}}[0, 1]] : tensor<4x2xf32> into tensor<8xf32>
// CHECK-NEXT: train.yield %{{.+}}, %[[C]] : tensor<f32>, tensor<8xf32>
#id2 = affine_map<(i, j) -> (i, j)>
#to0 = affine_map<(i, j) -> ()>
func.func @accumulate_in_product_layout(%w: tensor<8xf32>, %x: tensor<8x4xf32>)
    -> (tensor<f32>, tensor<8xf32>) {
  %loss, %g = train.accumulate microbatches = 2 params(%w : tensor<8xf32>)
      batch(%x : tensor<8x4xf32>) -> tensor<f32> grads(tensor<8xf32>) {
  ^bb0(%w_: tensor<8xf32>, %x_: tensor<4x4xf32>):
    %zero = arith.constant 0.0 : f32
    %wt = tensor.expand_shape %w_ [[0, 1]] output_shape [4, 2] : tensor<8xf32> into tensor<4x2xf32>
    %e = tensor.empty() : tensor<4x2xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
    %o = linalg.matmul ins(%x_, %wt : tensor<4x4xf32>, tensor<4x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
    %es = tensor.empty() : tensor<f32>
    %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#id2, #to0], iterator_types = ["reduction", "reduction"]}
        ins(%o : tensor<4x2xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %q = arith.mulf %a, %a : f32
      %t = arith.addf %acc, %q : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    train.yield %s : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<8xf32>
}

// -----

// train.stop_gradient: no gradient flows through it. The loss l * sg(l)
// has the gradient sg(l) * dl/dw (PyTorch's for l * l.detach()), not
// 2 l dl/dw: the product's adjoint reaches only its first operand, scaled
// by the detached value, and one backward generic accumulates dl/dw.

// CHECK-LABEL: func.func @detached_factor
// CHECK: %[[L:.+]] = linalg.generic
// CHECK: %[[D:.+]] = train.stop_gradient %[[L]] : tensor<f32>
// CHECK: %[[LOSS:.+]] = linalg.generic {{.*}} ins(%[[L]], %[[D]] : tensor<f32>, tensor<f32>)
// CHECK: %[[SEED:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DL:.+]] = linalg.generic {{.*}} ins(%[[D]], %[[SEED]] : tensor<f32>, tensor<f32>)
// CHECK: %[[GRAD:.+]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK-SAME: %[[DL]] : tensor<8x4xf32>, tensor<4xf32>, tensor<f32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[LOSS]], %[[GRAD]]
func.func @detached_factor(%w: tensor<4xf32>, %x: tensor<8x4xf32>)
    -> (tensor<f32>, tensor<4xf32>) {
  %loss, %g = train.step params(%w : tensor<4xf32>) batch(%x : tensor<8x4xf32>)
      -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<8x4xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<f32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                         affine_map<(i, j) -> ()>],
        iterator_types = ["reduction", "reduction"]}
        ins(%bx, %pw : tensor<8x4xf32>, tensor<4xf32>) outs(%init : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %t = math.tanh %m : f32
      %s = arith.addf %acc, %t : f32
      linalg.yield %s : f32
    } -> tensor<f32>
    %d = train.stop_gradient %l : tensor<f32>
    %p = linalg.generic {
        indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>],
        iterator_types = []}
        ins(%l, %d : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<f32>
    train.yield %p : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4xf32>
}

// -----

// A per-position mean over the batch, summed (a vector of batch sums
// reduced to the loss): the vector is accumulated as a vector, each
// micro-batch's sum over its rows continuing it in place, and divided and
// reduced once in the finalize region, as in the full batch (bitwise).

// CHECK-LABEL: func.func @accumulate_vector_of_sums
// CHECK: ^bb0(%{{.+}}: tensor<3xf32>, %{{.+}}: tensor<2x3xf32>, %[[VACC:.+]]: tensor<3xf32>, %{{.+}}: tensor<3xf32>):
// CHECK: %[[V:.+]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]{{.*}} outs(%[[VACC]] : tensor<3xf32>)
// CHECK: train.yield %[[V]], %{{.+}} : tensor<3xf32>, tensor<3xf32>
// CHECK-NEXT: } finalize {
// CHECK-NEXT: ^bb0(%[[FV:.+]]: tensor<3xf32>, %{{.+}}: tensor<3xf32>, %{{.+}}: tensor<3xf32>):
// CHECK: %[[M:.+]] = linalg.generic {{.*}} ins(%[[FV]] : tensor<3xf32>)
// CHECK: arith.divf
// CHECK: %[[L:.+]] = linalg.generic {{.*}} ins(%[[M]] : tensor<3xf32>)
// CHECK: train.yield %[[L]], %{{.+}} : tensor<f32>, tensor<3xf32>
#v_id = affine_map<(b, s) -> (b, s)>
#v_col = affine_map<(b, s) -> (s)>
#v_1 = affine_map<(s) -> (s)>
#v_0 = affine_map<(s) -> ()>
func.func @accumulate_vector_of_sums(%w: tensor<3xf32>, %x: tensor<4x3xf32>)
    -> (tensor<f32>, tensor<3xf32>) {
  %loss, %g = train.accumulate microbatches = 2 params(%w : tensor<3xf32>)
      batch(%x : tensor<4x3xf32>) -> tensor<f32> grads(tensor<3xf32>) {
  ^bb0(%w_: tensor<3xf32>, %x_: tensor<2x3xf32>):
    %zero = arith.constant 0.0 : f32
    %four = arith.constant 4.0 : f32
    %e = tensor.empty() : tensor<2x3xf32>
    %p = linalg.generic {indexing_maps = [#v_id, #v_col, #v_id], iterator_types = ["parallel", "parallel"]}
        ins(%x_, %w_ : tensor<2x3xf32>, tensor<3xf32>) outs(%e : tensor<2x3xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %t = math.tanh %m : f32
      linalg.yield %t : f32
    } -> tensor<2x3xf32>
    %ev = tensor.empty() : tensor<3xf32>
    %zv = linalg.fill ins(%zero : f32) outs(%ev : tensor<3xf32>) -> tensor<3xf32>
    %v = linalg.generic {indexing_maps = [#v_id, #v_col], iterator_types = ["reduction", "parallel"]}
        ins(%p : tensor<2x3xf32>) outs(%zv : tensor<3xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %acc, %a : f32
      linalg.yield %t : f32
    } -> tensor<3xf32>
    %mean = linalg.generic {indexing_maps = [#v_1, #v_1], iterator_types = ["parallel"]}
        ins(%v : tensor<3xf32>) outs(%ev : tensor<3xf32>) {
    ^bb0(%a: f32, %o: f32):
      %q = arith.divf %a, %four : f32
      linalg.yield %q : f32
    } -> tensor<3xf32>
    %es = tensor.empty() : tensor<f32>
    %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {indexing_maps = [#v_1, #v_0], iterator_types = ["reduction"]}
        ins(%mean : tensor<3xf32>) outs(%zs : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %acc, %a : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<3xf32>
}
