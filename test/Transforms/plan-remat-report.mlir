// RUN: ga-opt %s --train-plan-remat="memory-budget=20000 report-plans=true measure-units=false" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: ga-opt %s --train-plan-remat="memory-budget=20000 report-plans=true" --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEASURED
// RUN: ga-opt %s --train-plan-remat="memory-budget=20000" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=QUIET

// report-plans: the units of the chain model, each at its first operation
// with a note at its boundary, then every plan measured, with the chain
// model's peak beside the exact one (the memory model's, which equals the
// runtime's count): the two differ by what the model does not see
// (parameters, their gradients, the arguments).
// CHECK: :[[# @LINE + 56]]:{{[0-9]+}}: remark: train-plan-remat: unit 0: ops 0..4, 20.0% of the forward work, keeps 0 bytes and a boundary of 2048 bytes, largest value 2048 bytes, at most 2048 bytes of its own alive while it runs
// CHECK: :[[# @LINE + 59]]:{{[0-9]+}}: note: its boundary
// CHECK: remark: train-plan-remat: unit 1: ops 5..5, 0.6% of the forward work
// CHECK: remark: train-plan-remat: unit 8: ops 15..15, 19.4% of the forward work
// CHECK-NOT: unit 9:
// CHECK: remark: train-plan-remat: plan 1 at 1 micro-batch(es): 0 checkpoints over 0 units, recomputed 0.0%, pieces none, model peak 22528 bytes, exact peak 25604 bytes, over the budget
// CHECK: remark: train-plan-remat: plan 2 at 1 micro-batch(es): 1 checkpoints over 4 units, recomputed 40.0%, pieces [2-5], model peak 16384 bytes, exact peak 19268 bytes, fits
// CHECK: remark: train-plan-remat: plan 3 at 1 micro-batch(es): 1 checkpoints over 3 units, recomputed 20.6%, pieces [3-5], model peak 18432 bytes, exact peak 21380 bytes, over the budget
// After the bisection (plans 1-3), the window of the distinct plans before
// the one found in the list (cheaper ones) is measured: plan 4 does not fit.
// CHECK: remark: train-plan-remat: plan 4 at 1 micro-batch(es): 1 checkpoints over 2 units, recomputed 20.0%, pieces [6-7], model peak 20480 bytes, exact peak 23492 bytes, over the budget
// CHECK-NOT: plan 5
// CHECK: remark: train-plan-remat: budget 20000 bytes; 9 units; without new checkpoints 25604 bytes; 1 checkpoints over 4 units (recomputed 40.0% of the forward work); planned peak 19268 bytes; {{.*}}; 4 plans compiled

// With the units measured (the default), the step compiled without new
// checkpoints gives each unit's bytes (its buffers at the loss, the most
// held while it runs and in its backward pass, and what the backward pass
// holds when it reaches it), the model's unplanned peak moves from 22528 to
// 22276 bytes, and its offset to the exact peak is 3328 bytes there and
// 3456 at the plan it chooses (3076, 3056 and 3012 above): the measured
// model orders the plans by what the compiled step holds.
// MEASURED: remark: train-plan-remat: plan 1 at 1 micro-batch(es): 0 checkpoints over 0 units, recomputed 0.0%, pieces none, model peak 22528 bytes, exact peak 25604 bytes
// MEASURED: remark: train-plan-remat: at 1 micro-batch(es), the units measured on the step without new checkpoints keep 19008 bytes (modelled 18432), the loss holds 964 bytes more; the model's unplanned peak is 22276 bytes (was 22528), the exact one 25604
// MEASURED: note: unit 0 measured: keeps 2112 bytes, 6336 while it runs, 2244 more in its backward pass, 3200 more alive when it is reached
// MEASURED: note: unit 8 measured: keeps 2112 bytes, 2112 while it runs, 3268 more in its backward pass, 0 more alive when it is reached
// MEASURED: pieces [1-2][3-5], model peak 15812 bytes, exact peak 19268 bytes, fits
// MEASURED: remark: train-plan-remat: budget 20000 bytes; 9 units; without new checkpoints 25604 bytes; 2 checkpoints over 5 units (recomputed 40.6% of the forward work); planned peak 19268 bytes

// QUIET-NOT: train-plan-remat: unit
// QUIET-NOT: train-plan-remat: plan
// QUIET: remark: train-plan-remat: budget 20000 bytes

// In the checkpoint, each rebuilt empty tensor and fill lies just before
// its first reader, as in the step body: a buffer is allocated where its
// tensor is made, and the backward pass replays the region, so empties
// gathered at its top would hold every buffer of the segment at once.
// CHECK: train.checkpoint
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: arith.constant
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.matmul
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: linalg.generic
// CHECK: linalg.matmul
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: linalg.generic
// CHECK: train.yield

#id = affine_map<(i, j) -> (i, j)>
func.func @chain(%w: tensor<16x16xf32>, %x: tensor<32x16xf32>,
                 %labels: tensor<32xi64>) -> (tensor<f32>, tensor<16x16xf32>) {
  %loss, %gw = train.step params(%w : tensor<16x16xf32>)
      batch(%x, %labels : tensor<32x16xf32>, tensor<32xi64>)
      -> tensor<f32> grads(tensor<16x16xf32>) {
  ^bb0(%pw: tensor<16x16xf32>, %bx: tensor<32x16xf32>, %bl: tensor<32xi64>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<32x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<32x16xf32>) -> tensor<32x16xf32>
    %t1 = tensor.empty() : tensor<32x16xf32>
    %m1 = linalg.matmul ins(%bx, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %h1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m1 : tensor<32x16xf32>) outs(%t1 : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = math.tanh %a : f32
      linalg.yield %t : f32
    } -> tensor<32x16xf32>
    %t2 = tensor.empty() : tensor<32x16xf32>
    %m2 = linalg.matmul ins(%h1, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %h2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m2 : tensor<32x16xf32>) outs(%t2 : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = math.tanh %a : f32
      linalg.yield %t : f32
    } -> tensor<32x16xf32>
    %t3 = tensor.empty() : tensor<32x16xf32>
    %m3 = linalg.matmul ins(%h2, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %h3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m3 : tensor<32x16xf32>) outs(%t3 : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = math.tanh %a : f32
      linalg.yield %t : f32
    } -> tensor<32x16xf32>
    %t4 = tensor.empty() : tensor<32x16xf32>
    %m4 = linalg.matmul ins(%h3, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %h4 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m4 : tensor<32x16xf32>) outs(%t4 : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = math.tanh %a : f32
      linalg.yield %t : f32
    } -> tensor<32x16xf32>
    %logits = linalg.matmul ins(%h4, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %l, %n = train.cross_entropy mean %logits, %bl ignore_index = -100 : (tensor<32x16xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<i64>)
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<16x16xf32>
}

// Each unit also names the values it keeps for the backward pass, and each
// plan where the compiled step reaches its peak, with the largest buffers
// alive then (in the tiny GPT, its first attention layer keeps the layer
// norm's centered input and output, the projections, the probabilities;
// a budget of one byte is refused after every plan is reported).
// RUN: not ga-opt %ga_src/examples/tiny_gpt.mlir --train-plan-remat="memory-budget=1 report-plans=true" --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPT
// GPT: tiny_gpt.mlir:53:20: remark: train-plan-remat: unit 2: ops 9..53, 20.6% of the forward work, keeps 66560 bytes and a boundary of 8192 bytes, largest value 24576 bytes, at most 82944 bytes of its own alive while it runs
// GPT: note: its boundary
// GPT: tiny_gpt.mlir:53:20: note: kept for the backward pass: 512 bytes
// GPT: tiny_gpt.mlir:64:25: note: kept for the backward pass: 8192 bytes
// GPT: tiny_gpt.mlir:126:14: note: kept for the backward pass: 24576 bytes
// GPT: tiny_gpt.mlir:202:16: note: kept for the backward pass: 16384 bytes
// GPT: remark: train-plan-remat: unit 3:
// GPT: remark: train-plan-remat: plan 1 at 1 micro-batch(es): 0 checkpoints over 0 units, recomputed 0.0%, pieces none, model peak 455680 bytes, exact peak 379276 bytes, over the budget; the peak reached at {{.*}}tiny_gpt.mlir:689:16 with 31 allocation sites alive, the largest: 32832 bytes (1) made at {{.*}}tiny_gpt.mlir:324:16, 32832 bytes (1) made at
