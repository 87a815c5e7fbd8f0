// RUN: ga-opt %s --ga-expand-integer-math | FileCheck %s
// RUN: ga-opt %s --ga-expand-integer-math --convert-math-to-llvm --convert-arith-to-llvm | FileCheck %s --check-prefix=LLVM

// math.absi becomes arith.maxsi(x, 0 - x), scalar and n-D vector alike (the
// vectorizer's vector<1x8xi64> of T5's relative positions).

// CHECK-LABEL: func.func @scalar
// CHECK-SAME: (%[[X:.*]]: i64)
// CHECK: %[[Z:.*]] = arith.constant 0 : i64
// CHECK: %[[N:.*]] = arith.subi %[[Z]], %[[X]] : i64
// CHECK: %[[A:.*]] = arith.maxsi %[[X]], %[[N]] : i64
// CHECK: return %[[A]]
// LLVM-LABEL: func.func @scalar
// LLVM-NOT: math.absi
func.func @scalar(%x: i64) -> i64 {
  %a = math.absi %x : i64
  return %a : i64
}

// CHECK-LABEL: func.func @vector
// CHECK: %[[Z:.*]] = arith.constant dense<0> : vector<1x8xi64>
// CHECK: arith.subi %[[Z]], %{{.*}} : vector<1x8xi64>
// CHECK: arith.maxsi {{.*}} : vector<1x8xi64>
// CHECK-NOT: math.absi
// LLVM-LABEL: func.func @vector
// LLVM-NOT: math.absi
func.func @vector(%x: vector<1x8xi64>) -> vector<1x8xi64> {
  %a = math.absi %x : vector<1x8xi64>
  return %a : vector<1x8xi64>
}
