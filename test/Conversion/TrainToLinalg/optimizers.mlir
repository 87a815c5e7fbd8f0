// RUN: ga-opt %s --convert-train-to-linalg | FileCheck %s --implicit-check-not=train.

// CHECK-LABEL: func.func @sgd
// CHECK-SAME: (%[[P:.+]]: tensor<2x3xf32>, %[[G:.+]]: tensor<2x3xf32>, %[[LR:.+]]: tensor<f16>)
// CHECK: %[[R:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%[[P]], %[[G]], %[[LR]] : tensor<2x3xf32>, tensor<2x3xf32>, tensor<f16>)
// CHECK: arith.extf %{{.+}} : f16 to f32
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: arith.subf
// CHECK: return %[[R]]
func.func @sgd(%p: tensor<2x3xf32>, %g: tensor<2x3xf32>, %lr: tensor<f16>)
    -> tensor<2x3xf32> {
  %r = train.sgd %p, %g, %lr {weight_decay = 0.25} : tensor<2x3xf32>, tensor<f16>
  return %r : tensor<2x3xf32>
}

// AdamW of a bf16 parameter with f32 moments: computed in f32, the
// parameter rounded back to bf16.
// CHECK-LABEL: func.func @adamw
// CHECK: %[[R:.+]]:3 = linalg.generic {{.*}} outs(%{{.+}}, %{{.+}}, %{{.+}} : tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>)
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: arith.sitofp %{{.+}} : i64 to f32
// CHECK: math.powf
// CHECK: math.sqrt
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @adamw(%p: tensor<4xbf16>, %m: tensor<4xf32>, %v: tensor<4xf32>,
                 %lr: tensor<f32>, %t: tensor<i64>)
    -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>) {
  %a, %b, %c = train.adamw %p, %p, %m, %v, %lr, %t
      : tensor<4xbf16>, tensor<4xf32>, tensor<f32>, tensor<i64>
  return %a, %b, %c : tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @norms
// CHECK-COUNT-2: iterator_types = ["reduction"]
// CHECK: math.sqrt
// CHECK-COUNT-2: iterator_types = ["reduction"]
// CHECK: math.sqrt
// CHECK: arith.minimumf
// CHECK: arith.mulf
// CHECK: arith.mulf
func.func @norms(%a: tensor<3xf32>, %b: tensor<5xf32>)
    -> (tensor<f32>, tensor<3xf32>, tensor<5xf32>, tensor<f32>) {
  %n = train.global_norm %a, %b : tensor<3xf32>, tensor<5xf32> -> tensor<f32>
  %ca, %cb, %cn = train.clip_by_global_norm %a, %b max_norm = 1.0
      : tensor<3xf32>, tensor<5xf32> -> tensor<f32>
  return %n, %ca, %cb, %cn : tensor<f32>, tensor<3xf32>, tensor<5xf32>, tensor<f32>
}
