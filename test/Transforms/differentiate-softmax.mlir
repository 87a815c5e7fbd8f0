// RUN: ga-opt --train-differentiate --split-input-file %s | FileCheck %s

// The softmax written as five generics (row maximum, exp(s - max), row
// sum, division) is differentiated as one function: with dp the
// probabilities' adjoint, r = sum_j dp_j p_j and ds = p * (dp - r). The
// backward pass reads the probabilities alone: not the scores (the
// maximum's gradient, zero in exact arithmetic, is not built: no compare),
// not the exponentials, not their sum.

// CHECK-LABEL: func.func @softmax_loss
// CHECK: %[[MAX:.+]] = linalg.generic {{.*}} ins(%[[S:[^ ]+]] : tensor<3x4xf32>)
// CHECK: arith.maximumf
// CHECK: %[[EXP:.+]] = linalg.generic {{.*}} ins(%[[S]], %[[MAX]] :
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[EXP]] :
// CHECK: %[[P:.+]] = linalg.generic {{.*}} ins(%[[EXP]], %[[SUM]] :
// CHECK: arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DP:.+]] = linalg.generic
// CHECK: %[[R:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[DP]], %[[P]] : tensor<3x4xf32>, tensor<3x4xf32>) outs(%{{.+}} : tensor<3xf32>)
// CHECK-NEXT: ^bb0(%[[A:.+]]: f32, %[[B:.+]]: f32, %[[O:.+]]: f32):
// CHECK-NEXT: %[[M:.+]] = arith.mulf %[[A]], %[[B]]
// CHECK-NEXT: arith.addf %[[M]], %[[O]]
// CHECK: %[[DS:.+]] = linalg.generic {{.*}} ins(%[[P]], %[[DP]], %[[R]] : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3xf32>)
// CHECK-NEXT: ^bb0(%[[PP:.+]]: f32, %[[D:.+]]: f32, %[[RR:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[C:.+]] = arith.subf %[[D]], %[[RR]]
// CHECK-NEXT: arith.mulf %[[PP]], %[[C]]
// CHECK-NOT: arith.cmpf
// CHECK-NOT: ins(%[[EXP]]
// CHECK-NOT: ins(%[[SUM]]
// CHECK: ins(%{{.+}}, %[[DS]] :
// CHECK: return
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#all = affine_map<(i, j) -> ()>
func.func @softmax_loss(%w: tensor<4xf32>, %x: tensor<3x4xf32>)
    -> (tensor<f32>, tensor<4xf32>) {
  %loss, %g = train.step params(%w : tensor<4xf32>) batch(%x : tensor<3x4xf32>)
      -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<3x4xf32>):
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant -3.40282347E+38 : f32
    %e0 = tensor.empty() : tensor<3x4xf32>
    %s = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
        ins(%bx, %pw : tensor<3x4xf32>, tensor<4xf32>) outs(%e0 : tensor<3x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<3x4xf32>
    %er = tensor.empty() : tensor<3xf32>
    %lo = linalg.fill ins(%lowest : f32) outs(%er : tensor<3xf32>) -> tensor<3xf32>
    %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
        ins(%s : tensor<3x4xf32>) outs(%lo : tensor<3xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.maximumf %a, %o : f32
      linalg.yield %m : f32
    } -> tensor<3xf32>
    %e1 = tensor.empty() : tensor<3x4xf32>
    %exp = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%s, %max : tensor<3x4xf32>, tensor<3xf32>) outs(%e1 : tensor<3x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.subf %a, %b : f32
      %x1 = math.exp %d : f32
      linalg.yield %x1 : f32
    } -> tensor<3x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%er : tensor<3xf32>) -> tensor<3xf32>
    %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
        ins(%exp : tensor<3x4xf32>) outs(%z : tensor<3xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.addf %a, %o : f32
      linalg.yield %m : f32
    } -> tensor<3xf32>
    %e2 = tensor.empty() : tensor<3x4xf32>
    %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%exp, %sum : tensor<3x4xf32>, tensor<3xf32>) outs(%e2 : tensor<3x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %q = arith.divf %a, %b : f32
      linalg.yield %q : f32
    } -> tensor<3x4xf32>
    %e3 = tensor.empty() : tensor<f32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {indexing_maps = [#id, #id, #all], iterator_types = ["reduction", "reduction"]}
        ins(%p, %bx : tensor<3x4xf32>, tensor<3x4xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %t = arith.addf %m, %o : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4xf32>
}


// -----

// The exponentials read outside the chain (here by the loss): no softmax
// function of the scores alone, so each generic has its own adjoint rule,
// the maximum's among them (its compare).

// CHECK-LABEL: func.func @exp_read_twice
// CHECK: arith.cmpf
// CHECK: return
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#all = affine_map<(i, j) -> ()>
func.func @exp_read_twice(%w: tensor<4xf32>, %x: tensor<3x4xf32>)
    -> (tensor<f32>, tensor<4xf32>) {
  %loss, %g = train.step params(%w : tensor<4xf32>) batch(%x : tensor<3x4xf32>)
      -> tensor<f32> grads(tensor<4xf32>) {
  ^bb0(%pw: tensor<4xf32>, %bx: tensor<3x4xf32>):
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant -3.40282347E+38 : f32
    %e0 = tensor.empty() : tensor<3x4xf32>
    %s = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
        ins(%bx, %pw : tensor<3x4xf32>, tensor<4xf32>) outs(%e0 : tensor<3x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<3x4xf32>
    %er = tensor.empty() : tensor<3xf32>
    %lo = linalg.fill ins(%lowest : f32) outs(%er : tensor<3xf32>) -> tensor<3xf32>
    %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
        ins(%s : tensor<3x4xf32>) outs(%lo : tensor<3xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.maximumf %a, %o : f32
      linalg.yield %m : f32
    } -> tensor<3xf32>
    %e1 = tensor.empty() : tensor<3x4xf32>
    %exp = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%s, %max : tensor<3x4xf32>, tensor<3xf32>) outs(%e1 : tensor<3x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.subf %a, %b : f32
      %x1 = math.exp %d : f32
      linalg.yield %x1 : f32
    } -> tensor<3x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%er : tensor<3xf32>) -> tensor<3xf32>
    %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
        ins(%exp : tensor<3x4xf32>) outs(%z : tensor<3xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.addf %a, %o : f32
      linalg.yield %m : f32
    } -> tensor<3xf32>
    %e2 = tensor.empty() : tensor<3x4xf32>
    %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%exp, %sum : tensor<3x4xf32>, tensor<3xf32>) outs(%e2 : tensor<3x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %q = arith.divf %a, %b : f32
      linalg.yield %q : f32
    } -> tensor<3x4xf32>
    %e3 = tensor.empty() : tensor<f32>
    %z0 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {indexing_maps = [#id, #id, #all], iterator_types = ["reduction", "reduction"]}
        ins(%p, %exp : tensor<3x4xf32>, tensor<3x4xf32>) outs(%z0 : tensor<f32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %t = arith.addf %m, %o : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  return %loss, %g : tensor<f32>, tensor<4xf32>
}
