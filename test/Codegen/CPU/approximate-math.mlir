// RUN: ga-opt %s --ga-approximate-math | FileCheck %s

// exp and erf on vectors and scalars become arithmetic; other math
// operations are left to the lowering.
// CHECK-LABEL: func.func @approx(
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK: arith.mulf
// CHECK: math.rsqrt
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK: return
func.func @approx(%v: vector<8xf32>, %s: f32) -> (vector<8xf32>, f32, f32) {
  %e = math.exp %v : vector<8xf32>
  %r = math.erf %s : f32
  %q = math.rsqrt %s : f32
  return %e, %r, %q : vector<8xf32>, f32, f32
}
