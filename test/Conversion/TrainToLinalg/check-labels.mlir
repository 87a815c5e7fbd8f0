// RUN: ga-opt %s --convert-train-to-linalg --canonicalize -split-input-file -verify-diagnostics | FileCheck %s --implicit-check-not=train.check_labels

// A check of a box of i32 labels: one reduction over the box for the first
// invalid position (in the argument's row-major coordinates), then the report
// under scf.if with the label read back at that position.
// CHECK: func.func private @ga_report_error(i32, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @box
// CHECK-SAME: %[[Y:.+]]: tensor<8x4xi32>
// CHECK-DAG: %[[NONE:.+]] = arith.constant 9223372036854775807 : i64
// CHECK-DAG: %[[V:.+]] = arith.constant 3 : i64
// CHECK-DAG: %[[IGN:.+]] = arith.constant -1 : i64
// CHECK: %[[BOX:.+]] = tensor.extract_slice %[[Y]][1, 1] [4, 3] [2, 1]
// CHECK: %[[INIT:.+]] = linalg.fill ins(%[[NONE]] : i64)
// CHECK: %[[FIRST:.+]] = linalg.generic {{.+}} iterator_types = ["reduction", "reduction"]} ins(%[[BOX]] : tensor<4x3xi32>) outs(%[[INIT]] : tensor<i64>)
// CHECK: arith.extsi
// CHECK: arith.cmpi eq, %{{.+}}, %[[IGN]]
// CHECK: arith.cmpi ult, %{{.+}}, %[[V]]
// CHECK: arith.minsi
// CHECK: %[[POS:.+]] = tensor.extract %[[FIRST]][]
// CHECK: %[[FOUND:.+]] = arith.cmpi ne, %[[POS]], %[[NONE]]
// CHECK: scf.if %[[FOUND]]
// CHECK: %[[LABEL:.+]] = tensor.extract %[[Y]]
// CHECK: %[[VALUE:.+]] = arith.extsi %[[LABEL]] : i32 to i64
// CHECK: func.call @ga_report_error(%{{.+}}, %{{.+}}, %[[POS]], %[[VALUE]], %[[V]], %[[IGN]])
func.func @box(%y: tensor<8x4xi32>) {
  train.check_labels %y num_classes = 3 ignore_index = -1 argument = 1
      offsets = [1, 1] sizes = [4, 3] strides = [2, 1] : tensor<8x4xi32>
  return
}

// -----

// The cross-entropy and its adjoint read the logits with a clamped column.
// CHECK-LABEL: func.func @clamped
// CHECK-DAG: %[[LAST:.+]] = arith.constant 2 : i64
// CHECK: linalg.generic
// CHECK: arith.minsi %{{.+}}, %[[LAST]] : i64
// CHECK: arith.maxsi
// CHECK: tensor.extract
// CHECK: linalg.generic
// CHECK: arith.minsi %{{.+}}, %[[LAST]] : i64
// CHECK: arith.maxsi
func.func @clamped(%logits: tensor<4x3xf32>, %y: tensor<4xi64>, %d: tensor<f32>) -> (tensor<f32>, tensor<4x3xf32>) {
  %loss = train.cross_entropy sum %logits, %y ignore_index = -100 : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  %g = train.cross_entropy_grad sum %logits, %y, %d ignore_index = -100 : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x3xf32>
  return %loss, %g : tensor<f32>, tensor<4x3xf32>
}

// -----

// A declaration of ga_report_error with another type is an error on the check.
func.func private @ga_report_error(i64)
func.func @conflict(%y: tensor<4xi64>) {
  // expected-error @below {{the runtime function @ga_report_error : '(i32, i64, i64, i64, i64, i64) -> ()' clashes with a symbol of that name in the module}}
  train.check_labels %y num_classes = 3 ignore_index = -100 : tensor<4xi64>
  return
}
