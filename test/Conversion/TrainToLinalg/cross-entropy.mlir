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
// Logits narrower than f32 are read into f32, the statistics and losses
// computed in f32, and the losses rounded to f16 at the end.
// CHECK-LABEL: func.func @none_with_count
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : tensor<3x2xf16>) outs(%{{.+}} : tensor<3xf32>)
// CHECK: arith.extf %{{.+}} : f16 to f32
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<3x2xf16>, tensor<3xf32>) outs(%{{.+}} : tensor<3xf32>)
// CHECK: arith.extf %{{.+}} : f16 to f32
// CHECK: math.exp %{{.+}} : f32
// CHECK: %[[TOK:.+]]:2 = linalg.generic {{.*}} outs(%{{.+}}, %{{.+}} : tensor<3xf32>, tensor<3xi64>)
// CHECK: %[[COUNT:.+]] = linalg.generic {{.*}} ins(%[[TOK]]#1 : tensor<3xi64>)
// CHECK: %[[LOSS:.+]] = linalg.generic {{.*}} ins(%[[TOK]]#0 : tensor<3xf32>) outs(%{{.+}} : tensor<3xf16>)
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK: %[[F:.+]] = linalg.generic {{.*}} ins(%[[COUNT]] : tensor<i64>) outs(%{{.+}} : tensor<f16>)
// CHECK: arith.sitofp %{{.+}} : i64 to f16
// CHECK: return %[[LOSS]], %[[F]] : tensor<3xf16>, tensor<f16>
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

// A sum with an init continues it: the init is the reduction's init, so
// the tokens are added to it one by one (a micro-batch loop's running loss).
// CHECK-LABEL: func.func @sum_init
// CHECK-SAME: %[[R:[^:]+]]: tensor<f64>)
// CHECK: %[[TOK:.+]]:2 = linalg.generic
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[TOK]]#0 : tensor<3xf64>) outs(%[[R]] : tensor<f64>)
// CHECK: return %[[SUM]]
func.func @sum_init(%l: tensor<3x2xf64>, %y: tensor<3xi64>, %running: tensor<f64>) -> tensor<f64> {
  %r = train.cross_entropy sum %l, %y init(%running) ignore_index = -100
      : (tensor<3x2xf64>, tensor<3xi64>, tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}

// -----

// In bfloat16 the init is widened to the float32 the sum runs in, and the
// result rounded back.
// CHECK-LABEL: func.func @sum_init_bf16
// CHECK-SAME: %[[R:[^:]+]]: tensor<bf16>)
// CHECK: %[[WIDE:.+]] = linalg.generic {{.*}} ins(%[[R]] : tensor<bf16>)
// CHECK: arith.extf
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} outs(%[[WIDE]] : tensor<f32>)
// CHECK: arith.truncf
func.func @sum_init_bf16(%l: tensor<3x2xbf16>, %y: tensor<3xi64>, %running: tensor<bf16>) -> tensor<bf16> {
  %r = train.cross_entropy sum %l, %y init(%running) ignore_index = -100
      : (tensor<3x2xbf16>, tensor<3xi64>, tensor<bf16>) -> tensor<bf16>
  return %r : tensor<bf16>
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

// -----

// A loss and its gradient on the same logits (what train-differentiate
// leaves in a step) share the row statistics and the count of valid tokens;
// the gradient is computed in place of the logits (the generic's init, read
// through the init only) when no later operation reads them.

// CHECK-LABEL: func.func @pair_in_place
// CHECK-SAME: (%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4xi64>, %[[D:.+]]: tensor<f32>)
// CHECK: %[[L:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK: %[[MAX:.+]] = linalg.generic {{.*}} ins(%[[L]] : tensor<4x5xf32>)
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[L]], %[[MAX]] :
// CHECK: %[[TOK:.+]]:2 = linalg.generic {{.*}} ins(%[[Y]], %[[MAX]], %[[SUM]] :
// CHECK: %[[COUNT:.+]] = linalg.generic {{.*}} ins(%[[TOK]]#1 : tensor<4xi64>)
// CHECK-NOT: arith.maximumf
// CHECK: %[[SCALE:.+]] = linalg.generic {{.*}} ins(%[[D]], %[[COUNT]] : tensor<f32>, tensor<i64>)
// CHECK-NOT: arith.maximumf
// CHECK: %[[G:.+]] = linalg.generic {{.*}} ins(%[[Y]], %[[MAX]], %[[SUM]], %[[SCALE]] : {{.*}}) outs(%[[L]] : tensor<4x5xf32>)
// CHECK: ^bb0(%{{.+}}: i64, %[[M:.+]]: f32, %{{.+}}: f32, %{{.+}}: f32, %[[LOGIT:.+]]: f32):
// CHECK: arith.subf %[[LOGIT]], %[[M]]
// CHECK: return %{{.+}}, %[[G]]
func.func @pair_in_place(%x: tensor<4x5xf32>, %y: tensor<4xi64>, %d: tensor<f32>)
    -> (tensor<f32>, tensor<4x5xf32>) {
  %l = arith.mulf %x, %x : tensor<4x5xf32>
  %loss = train.cross_entropy mean %l, %y ignore_index = -100
      : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  %g = train.cross_entropy_grad mean %l, %y, %d ignore_index = -100
      : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
  return %loss, %g : tensor<f32>, tensor<4x5xf32>
}

// -----

// Logits read after the gradient keep their buffer: the gradient gets its
// own (a tensor.empty init), and reads the logits as an input.

// CHECK-LABEL: func.func @pair_logits_read_later
// CHECK-SAME: (%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4xi64>, %[[D:.+]]: tensor<f32>)
// CHECK: %[[L:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<4x5xf32>
// CHECK: %[[G:.+]] = linalg.generic {{.*}} ins(%[[L]], %[[Y]], %{{.+}}, %{{.+}}, %{{.+}} : {{.*}}) outs(%[[EMPTY]] : tensor<4x5xf32>)
// CHECK: %[[LATER:.+]] = arith.addf %[[L]], %[[G]]
// CHECK: return %{{.+}}, %[[LATER]]
func.func @pair_logits_read_later(%x: tensor<4x5xf32>, %y: tensor<4xi64>, %d: tensor<f32>)
    -> (tensor<f32>, tensor<4x5xf32>) {
  %l = arith.mulf %x, %x : tensor<4x5xf32>
  %loss = train.cross_entropy sum %l, %y ignore_index = -100
      : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  %g = train.cross_entropy_grad sum %l, %y, %d ignore_index = -100
      : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
  %later = arith.addf %l, %g : tensor<4x5xf32>
  return %loss, %later : tensor<f32>, tensor<4x5xf32>
}

// -----

// The gradient for bf16 logits: computed in f32 (the logit and the scale
// read into f32), rounded to bf16 when stored.
// CHECK-LABEL: func.func @grad_bf16
// CHECK: %[[SCALE:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<f32>, tensor<i64>)
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<4x5xbf16>)
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: math.exp %{{.+}} : f32
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK-NEXT: linalg.yield %{{.+}} : bf16
func.func @grad_bf16(%l: tensor<4x5xbf16>, %y: tensor<4xi64>, %d: tensor<bf16>) -> tensor<4x5xbf16> {
  %g = train.cross_entropy_grad mean %l, %y, %d ignore_index = -100
      : (tensor<4x5xbf16>, tensor<4xi64>, tensor<bf16>) -> tensor<4x5xbf16>
  return %g : tensor<4x5xbf16>
}
