// RUN: ga-opt %s | ga-opt | FileCheck %s
// RUN: ga-opt %s --mlir-print-op-generic | ga-opt | FileCheck %s
// RUN: ga-opt %s --emit-bytecode | ga-opt | FileCheck %s

// CHECK-LABEL: func.func @step
// CHECK: %[[LOSS:.+]], %[[G:.+]], %[[AUX:.+]] = train.step params(%{{.+}} : tensor<4x3xf32>) batch(%{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<8xi64>) attributes {data_parallel = 2 : i64, microbatches = 4 : i64} -> tensor<f32> grads(tensor<4x3xf32>) aux(tensor<i64>) {
// CHECK-NEXT: ^bb0(%[[W:.+]]: tensor<4x3xf32>, %[[X:.+]]: tensor<8x4xf32>, %[[Y:.+]]: tensor<8xi64>):
// CHECK: train.cross_entropy mean %{{.+}}, %[[Y]] ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<i64>)
// CHECK: train.yield %{{.+}}, %{{.+}} : tensor<f32>, tensor<i64>
// CHECK: return %[[LOSS]], %[[G]], %[[AUX]]
func.func @step(%w: tensor<4x3xf32>, %x: tensor<8x4xf32>, %y: tensor<8xi64>)
    -> (tensor<f32>, tensor<4x3xf32>, tensor<i64>) {
  %loss, %gw, %n = train.step params(%w : tensor<4x3xf32>)
      batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {microbatches = 4 : i64, data_parallel = 2 : i64}
      -> tensor<f32> grads(tensor<4x3xf32>) aux(tensor<i64>) {
  ^bb0(%w_: tensor<4x3xf32>, %x_: tensor<8x4xf32>, %y_: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x3xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x3xf32>)
        -> tensor<8x3xf32>
    %logits = linalg.matmul ins(%x_, %w_ : tensor<8x4xf32>, tensor<4x3xf32>)
        outs(%acc : tensor<8x3xf32>) -> tensor<8x3xf32>
    %l, %c = train.cross_entropy mean %logits, %y_ ignore_index = -100
        : (tensor<8x3xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<i64>)
    train.yield %l, %c : tensor<f32>, tensor<i64>
  }
  return %loss, %gw, %n : tensor<f32>, tensor<4x3xf32>, tensor<i64>
}

// Default schedule attributes are elided; a step may have no parameter.
// CHECK-LABEL: func.func @step_defaults
// CHECK: train.step batch(%{{.+}} : tensor<2x3xf32>) -> tensor<f64> {
// CHECK-NOT: microbatches
func.func @step_defaults(%x: tensor<2x3xf32>) -> tensor<f64> {
  %loss = train.step batch(%x : tensor<2x3xf32>)
      attributes {microbatches = 1 : i64} -> tensor<f64> {
  ^bb0(%x_: tensor<2x3xf32>):
    %c = arith.constant dense<1.0> : tensor<f64>
    train.yield %c : tensor<f64>
  }
  return %loss : tensor<f64>
}

// CHECK-LABEL: func.func @cross_entropy
// CHECK: train.cross_entropy none %{{.+}}, %{{.+}} ignore_index = -1 : (tensor<6x5xf16>, tensor<6xi32>) -> tensor<6xf16>
// CHECK: train.cross_entropy sum %{{.+}}, %{{.+}} ignore_index = -100 : (tensor<6x5xf16>, tensor<6xi32>) -> (tensor<f16>, tensor<f32>)
// CHECK: train.cross_entropy mean %{{.+}}, %{{.+}} ignore_index = 7 : (tensor<?x5xf16>, tensor<?xi32>) -> tensor<f16>
func.func @cross_entropy(%logits: tensor<6x5xf16>, %labels: tensor<6xi32>,
                         %dl: tensor<?x5xf16>, %dy: tensor<?xi32>)
    -> (tensor<6xf16>, tensor<f16>, tensor<f32>, tensor<f16>) {
  %a = train.cross_entropy none %logits, %labels ignore_index = -1
      : (tensor<6x5xf16>, tensor<6xi32>) -> tensor<6xf16>
  %b, %n = train.cross_entropy sum %logits, %labels ignore_index = -100
      : (tensor<6x5xf16>, tensor<6xi32>) -> (tensor<f16>, tensor<f32>)
  %c = train.cross_entropy mean %dl, %dy ignore_index = 7
      : (tensor<?x5xf16>, tensor<?xi32>) -> tensor<f16>
  return %a, %b, %n, %c : tensor<6xf16>, tensor<f16>, tensor<f32>, tensor<f16>
}

// CHECK-LABEL: func.func @checkpoint
// CHECK: %[[R:.+]]:2 = train.checkpoint(%{{.+}}, %{{.+}} : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>, tensor<4xf32> {
// CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<4xf32>, %[[B:.+]]: tensor<4xf32>):
// CHECK: train.yield %{{.+}}, %[[B]] : tensor<4xf32>, tensor<4xf32>
// CHECK: train.checkpoint -> tensor<f32> {
func.func @checkpoint(%x: tensor<4xf32>, %y: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<f32>) {
  %r:2 = train.checkpoint (%x, %y : tensor<4xf32>, tensor<4xf32>)
      -> tensor<4xf32>, tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %t = math.tanh %a : tensor<4xf32>
    train.yield %t, %b : tensor<4xf32>, tensor<4xf32>
  }
  %c = train.checkpoint -> tensor<f32> {
    %k = arith.constant dense<2.0> : tensor<f32>
    train.yield %k : tensor<f32>
  }
  return %r#0, %r#1, %c : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @accumulate
// CHECK: train.accumulate microbatches = 2 params(%{{.+}} : tensor<3xf32>) batch(%{{.+}} : tensor<8x3xf32>) globals(%{{.+}} : tensor<f32>) -> tensor<f32> grads(tensor<3xf32>) {
// CHECK-NEXT: ^bb0(%{{.+}}: tensor<3xf32>, %{{.+}}: tensor<4x3xf32>, %{{.+}}: tensor<f32>):
// CHECK: train.accumulate microbatches = 4 params(%{{.+}} : tensor<3xf32>) batch(%{{.+}} : tensor<8x3xf32>) -> tensor<f32> grads(tensor<3xf32>) {
// CHECK: train.yield %{{.+}}, %{{.+}} : tensor<f32>, tensor<3xf32>
func.func @accumulate(%w: tensor<3xf32>, %x: tensor<8x3xf32>, %n: tensor<f32>)
    -> (tensor<f32>, tensor<3xf32>, tensor<f32>, tensor<3xf32>) {
  %loss, %gw = train.accumulate microbatches = 2 params(%w : tensor<3xf32>)
      batch(%x : tensor<8x3xf32>) globals(%n : tensor<f32>)
      -> tensor<f32> grads(tensor<3xf32>) {
  ^bb0(%w_: tensor<3xf32>, %x_: tensor<4x3xf32>, %n_: tensor<f32>):
    train.yield %n_ : tensor<f32>
  }
  // A body that already yields its gradient contributions.
  %loss2, %gw2 = train.accumulate microbatches = 4 params(%w : tensor<3xf32>)
      batch(%x : tensor<8x3xf32>) -> tensor<f32> grads(tensor<3xf32>) {
  ^bb0(%w_: tensor<3xf32>, %x_: tensor<2x3xf32>):
    %l = arith.constant dense<0.5> : tensor<f32>
    train.yield %l, %w_ : tensor<f32>, tensor<3xf32>
  }
  return %loss, %gw, %loss2, %gw2
      : tensor<f32>, tensor<3xf32>, tensor<f32>, tensor<3xf32>
}

// Metrics: accumulated by addition beside the loss, never differentiated.
// CHECK-LABEL: func.func @accumulate_metrics
// CHECK: train.accumulate microbatches = 2 params(%{{.+}} : tensor<3xf32>) batch(%{{.+}} : tensor<8x3xf32>) -> tensor<f32> grads(tensor<3xf32>) metrics(tensor<f32>, tensor<i64>) {
// CHECK: train.yield %{{.+}}, %{{.+}}, %{{.+}} : tensor<f32>, tensor<f32>, tensor<i64>
// CHECK: train.accumulate microbatches = 2 params(%{{.+}} : tensor<3xf32>) batch(%{{.+}} : tensor<8x3xf32>) -> tensor<f32> grads(tensor<3xf32>) metrics(tensor<i64>) {
// CHECK: train.yield %{{.+}}, %{{.+}}, %{{.+}} : tensor<f32>, tensor<3xf32>, tensor<i64>
func.func @accumulate_metrics(%w: tensor<3xf32>, %x: tensor<8x3xf32>)
    -> (tensor<f32>, tensor<3xf32>, tensor<f32>, tensor<i64>) {
  %loss, %gw, %sum, %n = train.accumulate microbatches = 2
      params(%w : tensor<3xf32>) batch(%x : tensor<8x3xf32>)
      -> tensor<f32> grads(tensor<3xf32>) metrics(tensor<f32>, tensor<i64>) {
  ^bb0(%w_: tensor<3xf32>, %x_: tensor<4x3xf32>):
    %l = arith.constant dense<0.5> : tensor<f32>
    %c = arith.constant dense<4> : tensor<i64>
    train.yield %l, %l, %c : tensor<f32>, tensor<f32>, tensor<i64>
  }
  // Differentiated: the gradients come between the loss and the metrics.
  %loss2, %gw2, %n2 = train.accumulate microbatches = 2
      params(%w : tensor<3xf32>) batch(%x : tensor<8x3xf32>)
      -> tensor<f32> grads(tensor<3xf32>) metrics(tensor<i64>) {
  ^bb0(%w_: tensor<3xf32>, %x_: tensor<4x3xf32>):
    %l = arith.constant dense<0.5> : tensor<f32>
    %c = arith.constant dense<4> : tensor<i64>
    train.yield %l, %w_, %c : tensor<f32>, tensor<3xf32>, tensor<i64>
  }
  return %loss, %gw, %sum, %n : tensor<f32>, tensor<3xf32>, tensor<f32>, tensor<i64>
}

// The explicit form: accumulators carried like iteration arguments, and a
// finalize region that maps the final ones to the results.
// CHECK-LABEL: func.func @accumulate_explicit
// CHECK: train.accumulate microbatches = 2 params(%{{.+}} : tensor<3xf32>) batch(%{{.+}} : tensor<8x3xf32>) globals(%{{.+}} : tensor<f32>) accumulators(%{{.+}}, %{{.+}} : tensor<f32>, tensor<3xf32>) -> tensor<f32> grads(tensor<3xf32>) {
// CHECK-NEXT: ^bb0(%{{.+}}: tensor<3xf32>, %{{.+}}: tensor<4x3xf32>, %{{.+}}: tensor<f32>, %[[S:.+]]: tensor<f32>, %[[G:.+]]: tensor<3xf32>):
// CHECK: train.yield %{{.+}}, %{{.+}} : tensor<f32>, tensor<3xf32>
// CHECK-NEXT: } finalize {
// CHECK-NEXT: ^bb0(%[[FS:.+]]: tensor<f32>, %[[FG:.+]]: tensor<3xf32>, %{{.+}}: tensor<3xf32>, %[[FN:.+]]: tensor<f32>):
// CHECK: train.yield %{{.+}}, %[[FG]] : tensor<f32>, tensor<3xf32>
func.func @accumulate_explicit(%w: tensor<3xf32>, %x: tensor<8x3xf32>, %n: tensor<f32>,
                               %z: tensor<f32>, %zw: tensor<3xf32>)
    -> (tensor<f32>, tensor<3xf32>) {
  %loss, %gw = train.accumulate microbatches = 2 params(%w : tensor<3xf32>)
      batch(%x : tensor<8x3xf32>) globals(%n : tensor<f32>)
      accumulators(%z, %zw : tensor<f32>, tensor<3xf32>)
      -> tensor<f32> grads(tensor<3xf32>) {
  ^bb0(%w_: tensor<3xf32>, %x_: tensor<4x3xf32>, %n_: tensor<f32>,
       %s: tensor<f32>, %g: tensor<3xf32>):
    train.yield %n_, %w_ : tensor<f32>, tensor<3xf32>
  } finalize {
  ^bb0(%s: tensor<f32>, %g: tensor<3xf32>, %w_: tensor<3xf32>, %n_: tensor<f32>):
    train.yield %n_, %g : tensor<f32>, tensor<3xf32>
  }
  return %loss, %gw : tensor<f32>, tensor<3xf32>
}

// A cross-entropy sum that continues a running sum.
// CHECK-LABEL: func.func @cross_entropy_init
// CHECK: train.cross_entropy sum %{{.+}}, %{{.+}} init(%{{.+}}) ignore_index = -100 : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<f32>
func.func @cross_entropy_init(%logits: tensor<4x3xf32>, %labels: tensor<4xi64>, %running: tensor<f32>) -> tensor<f32> {
  %l = train.cross_entropy sum %logits, %labels init(%running) ignore_index = -100
      : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @all_reduce
// CHECK: train.all_reduce sum %{{.+}} : tensor<4x5xf32>
// CHECK: train.all_reduce avg %{{.+}} : tensor<4x5xf32>
// CHECK: train.all_reduce sum %{{.+}} : tensor<i64>
func.func @all_reduce(%g: tensor<4x5xf32>, %n: tensor<i64>)
    -> (tensor<4x5xf32>, tensor<4x5xf32>, tensor<i64>) {
  %s = train.all_reduce sum %g : tensor<4x5xf32>
  %a = train.all_reduce avg %g : tensor<4x5xf32>
  %c = train.all_reduce sum %n : tensor<i64>
  return %s, %a, %c : tensor<4x5xf32>, tensor<4x5xf32>, tensor<i64>
}

// CHECK-LABEL: func.func @partitions
// CHECK-SAME: train.data_parallel = 4 : i64, train.shard = 2 : i64
// CHECK: %[[S:.+]] = train.reduce_scatter sum %{{.+}} : tensor<20xf32> -> tensor<5xf32>
// CHECK: train.reduce_scatter avg %{{.+}} : tensor<20xf32> -> tensor<5xf32>
// CHECK: train.all_gather %[[S]] : tensor<5xf32> -> tensor<20xf32>
// CHECK: train.all_gather %{{.+}} : tensor<1xi64> -> tensor<4xi64>
func.func @partitions(%g: tensor<20xf32>, %n: tensor<1xi64>)
    -> (tensor<20xf32>, tensor<5xf32>, tensor<4xi64>)
    attributes {train.data_parallel = 4 : i64, train.shard = 2 : i64} {
  %s = train.reduce_scatter sum %g : tensor<20xf32> -> tensor<5xf32>
  %a = train.reduce_scatter avg %g : tensor<20xf32> -> tensor<5xf32>
  %w = train.all_gather %s : tensor<5xf32> -> tensor<20xf32>
  %c = train.all_gather %n : tensor<1xi64> -> tensor<4xi64>
  return %w, %a, %c : tensor<20xf32>, tensor<5xf32>, tensor<4xi64>
}

// CHECK-LABEL: func.func @rank
// CHECK: %[[R:.+]] = train.rank : index
// CHECK: tensor.extract_slice %{{.+}}[%[[R]], 0] [2, 5] [1, 1]
func.func @rank(%x: tensor<4x5xf32>) -> tensor<2x5xf32> {
  %r = train.rank : index
  %s = tensor.extract_slice %x[%r, 0] [2, 5] [1, 1]
      : tensor<4x5xf32> to tensor<2x5xf32>
  return %s : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @norms
// CHECK: train.global_norm %{{.+}}, %{{.+}} : tensor<4x5xf32>, tensor<5xbf16> -> tensor<f32>
// CHECK: %{{.+}}:2, %{{.+}} = train.clip_by_global_norm %{{.+}}, %{{.+}} max_norm = 1.000000e+00 : tensor<4x5xf32>, tensor<5xbf16> -> tensor<f32>
func.func @norms(%a: tensor<4x5xf32>, %b: tensor<5xbf16>)
    -> (tensor<f32>, tensor<4x5xf32>, tensor<5xbf16>, tensor<f32>) {
  %n = train.global_norm %a, %b : tensor<4x5xf32>, tensor<5xbf16> -> tensor<f32>
  %ca, %cb, %m = train.clip_by_global_norm %a, %b max_norm = 1.0
      : tensor<4x5xf32>, tensor<5xbf16> -> tensor<f32>
  return %n, %ca, %cb, %m : tensor<f32>, tensor<4x5xf32>, tensor<5xbf16>, tensor<f32>
}

// CHECK-LABEL: func.func @optimizers
// CHECK: train.sgd %{{.+}}, %{{.+}}, %{{.+}} : tensor<4x5xf32>, tensor<f32>
// CHECK: train.sgd %{{.+}}, %{{.+}}, %{{.+}} {weight_decay = 1.000000e-01 : f64} : tensor<4x5xf32>, tensor<f32>
// CHECK: train.adamw %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<4x5xf32>, tensor<4x5xf32>, tensor<f32>, tensor<i64>
// CHECK: train.adamw %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {beta1 = 8.000000e-01 : f64, eps = 5.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : tensor<4x5xbf16>, tensor<4x5xf32>, tensor<f32>, tensor<f32>
func.func @optimizers(%p: tensor<4x5xf32>, %g: tensor<4x5xf32>,
                      %m: tensor<4x5xf32>, %v: tensor<4x5xf32>,
                      %lr: tensor<f32>, %t: tensor<i64>, %tf: tensor<f32>,
                      %pb: tensor<4x5xbf16>) {
  %p1 = train.sgd %p, %g, %lr : tensor<4x5xf32>, tensor<f32>
  %p2 = train.sgd %p, %g, %lr {weight_decay = 0.1} : tensor<4x5xf32>, tensor<f32>
  %p3, %m3, %v3 = train.adamw %p, %g, %m, %v, %lr, %t
      : tensor<4x5xf32>, tensor<4x5xf32>, tensor<f32>, tensor<i64>
  %p4, %m4, %v4 = train.adamw %pb, %pb, %m, %v, %lr, %tf
      {beta1 = 0.8, eps = 0.5, weight_decay = 0.0}
      : tensor<4x5xbf16>, tensor<4x5xf32>, tensor<f32>, tensor<f32>
  return
}

// CHECK-LABEL: func.func @cross_entropy_grad
// CHECK: train.cross_entropy_grad mean %{{.+}}, %{{.+}}, %{{.+}} ignore_index = -1 : (tensor<8x3xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x3xf32>
// CHECK: train.cross_entropy_grad none %{{.+}}, %{{.+}}, %{{.+}} ignore_index = -100 : (tensor<8x3xf32>, tensor<8xi64>, tensor<8xf32>) -> tensor<8x3xf32>
func.func @cross_entropy_grad(%l: tensor<8x3xf32>, %y: tensor<8xi64>, %d: tensor<f32>, %dn: tensor<8xf32>)
    -> (tensor<8x3xf32>, tensor<8x3xf32>) {
  %a = train.cross_entropy_grad mean %l, %y, %d ignore_index = -1
      : (tensor<8x3xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x3xf32>
  %b = train.cross_entropy_grad none %l, %y, %dn ignore_index = -100
      : (tensor<8x3xf32>, tensor<8xi64>, tensor<8xf32>) -> tensor<8x3xf32>
  return %a, %b : tensor<8x3xf32>, tensor<8x3xf32>
}

// CHECK-LABEL: func.func @attention
// CHECK: %{{.+}}, %{{.+}} = train.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, key_tile = 2 : i64, masked_score = -1.000000e+04 : f64, scale = 5.000000e-01 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x5xf32>) -> (tensor<2x4x3x5xf32>, tensor<2x3x4xf32>)
// CHECK: train.attention %{{.+}}, %{{.+}}, %{{.+}} {scale = 1.000000e+00 : f64} : (tensor<2x4x3x8xf32>, tensor<2x6x3x8xf32>, tensor<2x6x3x5xf32>)
// CHECK: train.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal, key_tile = 2 : i64, scale = 5.000000e-01 : f64}
// CHECK: train.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 5.000000e-01 : f64}
// CHECK: %[[O:.+]], %[[L:.+]] = train.attention %{{.+}}, %{{.+}}, %{{.+}} key_mask %[[M:.+]] {causal, scale = 5.000000e-01 : f64} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x5xf32>, tensor<2x4xi1>)
// CHECK: train.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %[[O]], %[[L]], %{{.+}}, %{{.+}} key_mask %[[M]] {causal, scale = 5.000000e-01 : f64}
func.func @attention(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x5xf32>,
                     %k6: tensor<2x6x3x8xf32>, %v6: tensor<2x6x3x5xf32>, %do: tensor<2x4x3x5xf32>, %dl: tensor<2x3x4xf32>,
                     %m: tensor<2x4xi1>)
    -> (tensor<2x4x3x5xf32>, tensor<2x4x3x5xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) {
  %o, %lse = train.attention %q, %k, %v {scale = 0.5 : f64, causal, masked_score = -1.0e4 : f64, key_tile = 2 : i64}
      : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x5xf32>) -> (tensor<2x4x3x5xf32>, tensor<2x3x4xf32>)
  %o6, %lse6 = train.attention %q, %k6, %v6 {scale = 1.0 : f64}
      : (tensor<2x4x3x8xf32>, tensor<2x6x3x8xf32>, tensor<2x6x3x5xf32>) -> (tensor<2x4x3x5xf32>, tensor<2x3x4xf32>)
  %dq, %dk, %dv = train.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.5 : f64, causal, key_tile = 2 : i64}
      : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x5xf32>, tensor<2x4x3x5xf32>, tensor<2x3x4xf32>, tensor<2x4x3x5xf32>)
      -> (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x5xf32>)
  %dq2, %dk2, %dv2 = train.attention_grad %q, %k, %v, %o, %lse, %do, %dl {scale = 0.5 : f64, causal}
      : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x5xf32>, tensor<2x4x3x5xf32>, tensor<2x3x4xf32>, tensor<2x4x3x5xf32>, tensor<2x3x4xf32>)
      -> (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x5xf32>)
  %om, %lm = train.attention %q, %k, %v key_mask %m {scale = 0.5 : f64, causal}
      : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x5xf32>, tensor<2x4xi1>) -> (tensor<2x4x3x5xf32>, tensor<2x3x4xf32>)
  %dq3, %dk3, %dv3 = train.attention_grad %q, %k, %v, %om, %lm, %do, %dl key_mask %m {scale = 0.5 : f64, causal}
      : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x5xf32>, tensor<2x4x3x5xf32>, tensor<2x3x4xf32>, tensor<2x4x3x5xf32>, tensor<2x3x4xf32>, tensor<2x4xi1>)
      -> (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x5xf32>)
  return %o, %o6, %dq, %dq2, %dq3 : tensor<2x4x3x5xf32>, tensor<2x4x3x5xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>
}

// CHECK-LABEL: func.func @check_labels
// CHECK: train.check_labels %{{.+}} num_classes = 64 ignore_index = -100 : tensor<8x16xi64>
// CHECK: train.check_labels %{{.+}} num_classes = 32 ignore_index = -1 argument = 4 offsets = [0, 1] sizes = [8, 15] strides = [1, 1] : tensor<8x16xi64>
// CHECK: train.check_labels %{{.+}} num_classes = 3 ignore_index = 3 argument = 0 : tensor<5xi32>
func.func @check_labels(%y: tensor<8x16xi64>, %z: tensor<5xi32>) {
  train.check_labels %y num_classes = 64 ignore_index = -100 : tensor<8x16xi64>
  train.check_labels %y num_classes = 32 ignore_index = -1 argument = 4
      offsets = [0, 1] sizes = [8, 15] strides = [1, 1] : tensor<8x16xi64>
  train.check_labels %z num_classes = 3 ignore_index = 3 argument = 0
      : tensor<5xi32>
  return
}

// The argument attributes that ga-train initializes and names parameters
// from.
// CHECK-LABEL: func.func @init
// CHECK-SAME: {train.init = "zeros"}
// CHECK-SAME: {train.init = "ones"}
// CHECK-SAME: {train.init = 2.000000e-02 : f64, train.name = "fc.weight"}
func.func @init(%a: tensor<4xf32> {train.init = "zeros"},
                %b: tensor<4xf32> {train.init = "ones"},
                %c: tensor<4x4xf32> {train.init = 0.02 : f64, train.name = "fc.weight"}) {
  return
}

// CHECK-LABEL: func.func @stop_gradient
// CHECK: %[[D:.+]] = train.stop_gradient %{{.+}} : tensor<4x8xf32>
// CHECK: return %[[D]]
func.func @stop_gradient(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %d = train.stop_gradient %x : tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}
