// RUN: ga-opt %s --convert-train-to-linalg --split-input-file -verify-diagnostics \
// RUN:   | FileCheck %s --implicit-check-not=train.cross_entropy --implicit-check-not=train.cross_entropy_grad

// CHECK-LABEL: func.func @mean
// CHECK-SAME: (%[[L:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4xi32>)
// Row maximum (from -inf), then the sum of exp(x - max).
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[MAX:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[L]] : tensor<4x5xf32>)
// CHECK: arith.maximumf
// CHECK: %[[SUMEXP:.+]] = linalg.generic {{.*}} ins(%[[L]], %[[MAX]] : tensor<4x5xf32>, tensor<4xf32>)
// CHECK: math.exp
// Per token: masked loss and validity flag.
// CHECK: %[[TOK:.+]]:2 = linalg.generic {{.*}} ins(%[[Y]], %[[MAX]], %[[SUMEXP]] : tensor<4xi32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: arith.constant -7 : i32
// CHECK: arith.cmpi ne
// CHECK: tensor.extract %[[L]]
// CHECK: math.log
// CHECK: linalg.yield {{.*}} : f32, i64
// CHECK: %[[COUNT:.+]] = linalg.generic {{.*}} ins(%[[TOK]]#1 : tensor<4xi64>)
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[TOK]]#0 : tensor<4xf32>)
// Mean: 0 when there is no valid token.
// CHECK: %[[MEAN:.+]] = linalg.generic {{.*}} ins(%[[SUM]], %[[COUNT]] : tensor<f32>, tensor<i64>)
// CHECK: arith.cmpi eq
// CHECK: arith.divf
// CHECK: arith.select
// CHECK: return %[[MEAN]]
func.func @mean(%l: tensor<4x5xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %r = train.cross_entropy mean %l, %y ignore_index = -7
      : (tensor<4x5xf32>, tensor<4xi32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// `none` keeps the per-token losses; the count converts to its own type.
// CHECK-LABEL: func.func @none_with_count
// CHECK: %[[TOK:.+]]:2 = linalg.generic
// CHECK: %[[COUNT:.+]] = linalg.generic {{.*}} ins(%[[TOK]]#1 : tensor<3xi64>)
// CHECK: %[[F:.+]] = linalg.generic {{.*}} ins(%[[COUNT]] : tensor<i64>) outs(%{{.+}} : tensor<f16>)
// CHECK: arith.sitofp %{{.+}} : i64 to f16
// CHECK: return %[[TOK]]#0, %[[F]] : tensor<3xf16>, tensor<f16>
func.func @none_with_count(%l: tensor<3x2xf16>, %y: tensor<3xi64>)
    -> (tensor<3xf16>, tensor<f16>) {
  %r, %n = train.cross_entropy none %l, %y ignore_index = -100
      : (tensor<3x2xf16>, tensor<3xi64>) -> (tensor<3xf16>, tensor<f16>)
  return %r, %n : tensor<3xf16>, tensor<f16>
}

// -----

// CHECK-LABEL: func.func @sum
// CHECK: %[[TOK:.+]]:2 = linalg.generic
// CHECK-NOT: arith.divf
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[TOK]]#0 : tensor<3xf64>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
// CHECK-NEXT: } -> tensor<f64>
// CHECK-NEXT: return %[[SUM]]
func.func @sum(%l: tensor<3x2xf64>, %y: tensor<3xi64>) -> tensor<f64> {
  %r = train.cross_entropy sum %l, %y ignore_index = -100
      : (tensor<3x2xf64>, tensor<3xi64>) -> tensor<f64>
  return %r : tensor<f64>
}

// -----

func.func @dynamic(%l: tensor<?x5xf32>, %y: tensor<?xi64>) -> tensor<f32> {
  // expected-error @below {{'train.cross_entropy' op could not be lowered to linalg (only static shapes are supported)}}
  %r = train.cross_entropy mean %l, %y ignore_index = -100
      : (tensor<?x5xf32>, tensor<?xi64>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A train op the conversion cannot lower is an error on that op, never left
// behind with exit 0.
func.func @dynamic_grad(%l: tensor<?x5xf32>, %y: tensor<?xi64>, %d: tensor<f32>) -> tensor<?x5xf32> {
  // expected-error @below {{'train.cross_entropy_grad' op could not be lowered to linalg (only static shapes are supported): operand #0 has the dynamic shape 'tensor<?x5xf32>'}}
  %g = train.cross_entropy_grad mean %l, %y, %d ignore_index = -100
      : (tensor<?x5xf32>, tensor<?xi64>, tensor<f32>) -> tensor<?x5xf32>
  return %g : tensor<?x5xf32>
}

// -----

// The gradient: (softmax - onehot) * s, s = dloss / count (0 if no valid
// token), masked to 0 for ignored labels.

// CHECK-LABEL: func.func @grad_mean
// CHECK-SAME: (%[[L:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4xi64>, %[[D:.+]]: tensor<f32>)
// CHECK: %[[MAX:.+]] = linalg.generic {{.*}} ins(%[[L]] : tensor<4x5xf32>)
// CHECK: arith.maximumf
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[L]], %[[MAX]] :
// CHECK: %[[SCALE:.+]] = linalg.generic {{.*}} ins(%[[D]], %{{.+}} : tensor<f32>, tensor<i64>)
// CHECK: arith.divf
// CHECK: %[[G:.+]] = linalg.generic {{.*}} ins(%[[L]], %[[Y]], %[[MAX]], %[[SUM]], %[[SCALE]] :
// CHECK: %[[VALID:.+]] = arith.cmpi ne, %{{.+}}, %c-100_i64
// CHECK: math.exp
// CHECK: linalg.index 1
// CHECK: %[[SCALED:.+]] = arith.mulf
// CHECK: arith.select %[[VALID]], %[[SCALED]]
// CHECK: return %[[G]]
func.func @grad_mean(%l: tensor<4x5xf32>, %y: tensor<4xi64>, %d: tensor<f32>) -> tensor<4x5xf32> {
  %g = train.cross_entropy_grad mean %l, %y, %d ignore_index = -100
      : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
  return %g : tensor<4x5xf32>
}

// -----

// With reduction = none the cotangent is per token.

// CHECK-LABEL: func.func @grad_none
// CHECK-SAME: (%[[L:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4xi64>, %[[D:.+]]: tensor<4xf32>)
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[ROW:.+]], #[[ROW]], #[[ROW]], #[[ROW]], #{{.+}}], {{.*}} ins(%[[L]], %[[Y]], %{{.+}}, %{{.+}}, %[[D]] :
func.func @grad_none(%l: tensor<4x5xf32>, %y: tensor<4xi64>, %d: tensor<4xf32>) -> tensor<4x5xf32> {
  %g = train.cross_entropy_grad none %l, %y, %d ignore_index = -100
      : (tensor<4x5xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x5xf32>
  return %g : tensor<4x5xf32>
}
