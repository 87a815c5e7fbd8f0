// RUN: ga-opt %s --train-normalize-loss --train-split-batch --train-shard-state | FileCheck %s
// RUN: ga-opt %s --train-set-schedule=shard=2 --train-normalize-loss --train-split-batch --train-shard-state | FileCheck %s --check-prefix=GRADS
// RUN: ga-opt %s --train-normalize-loss --train-split-batch --train-shard-state --train-shard-state | FileCheck %s
// RUN: ga-opt %s "--ga-pipeline=target=cpu shard=2" | FileCheck %s --check-prefix=LLVM
// RUN: ga-opt %s --train-set-schedule=shard=3 --train-normalize-loss --train-split-batch --train-shard-state | FileCheck %s --check-prefix=PARAMS
// RUN: ga-opt %s --train-set-schedule=shard=3 --train-normalize-loss --train-split-batch --train-shard-state --train-shard-state | FileCheck %s --check-prefix=PARAMS
// RUN: ga-opt %s "--ga-pipeline=target=cpu shard=3 microbatches=2" | FileCheck %s --check-prefix=LLVM3

// A step on 2 ranks with shard = 1, whose parameters have 12 elements
// (6 per rank) and 5 elements (padded to 6: 3 per rank), clipped, then
// AdamW.

// Stage 1: the moments are shards (6 and 3 elements, arguments and
// results); each rank slices its part of the flat (padded) parameter and
// gradient, updates it and gathers the whole parameter. The gradients are
// still all-reduced whole; the clip is the whole gradients'.
// CHECK-LABEL: func.func @train
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32>, %[[B:[^:]*]]: tensor<5xf32>
// CHECK-SAME: %[[MW:[^:]*]]: tensor<6xf32>, %[[MB:[^:]*]]: tensor<3xf32>, %[[VW:[^:]*]]: tensor<6xf32>, %[[VB:[^:]*]]: tensor<3xf32>
// CHECK-SAME: -> (tensor<4x3xf32>, tensor<5xf32>, tensor<6xf32>, tensor<3xf32>, tensor<6xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>)
// CHECK-SAME: train.data_parallel = 2 : i64, train.shard = 1 : i64
// CHECK: %[[RANK:.*]] = train.rank : index
// CHECK: %[[GW:.*]] = train.all_reduce sum %{{.*}} : tensor<4x3xf32>
// CHECK: %[[GB:.*]] = train.all_reduce sum %{{.*}} : tensor<5xf32>
// CHECK: %[[C:.*]]:2, %[[NORM:.*]] = train.clip_by_global_norm %[[GW]], %[[GB]]
// CHECK: %[[WF:.*]] = tensor.collapse_shape %[[W]] {{\[\[}}0, 1]] : tensor<4x3xf32> into tensor<12xf32>
// CHECK: %[[C6:.*]] = arith.constant 6 : index
// CHECK: %[[OFF:.*]] = arith.muli %[[RANK]], %[[C6]] : index
// CHECK: %[[WS:.*]] = tensor.extract_slice %[[WF]][%[[OFF]]] [6] [1] : tensor<12xf32> to tensor<6xf32>
// CHECK: %[[GWF:.*]] = tensor.collapse_shape %[[C]]#0
// CHECK: %[[GWS:.*]] = tensor.extract_slice %[[GWF]][%{{.*}}] [6] [1] : tensor<12xf32> to tensor<6xf32>
// CHECK: %[[NW:.*]], %[[NMW:.*]], %[[NVW:.*]] = train.adamw %[[WS]], %[[GWS]], %[[MW]], %[[VW]], %{{.*}}, %{{.*}} : tensor<6xf32>, tensor<6xf32>
// CHECK: %[[AW:.*]] = train.all_gather %[[NW]] : tensor<6xf32> -> tensor<12xf32>
// CHECK: %[[NEWW:.*]] = tensor.expand_shape %[[AW]] {{\[\[}}0, 1]] output_shape [4, 3] : tensor<12xf32> into tensor<4x3xf32>
// CHECK: %[[BP:.*]] = tensor.insert_slice %[[B]] into %{{.*}}[0] [5] [1] : tensor<5xf32> into tensor<6xf32>
// CHECK: %[[BS:.*]] = tensor.extract_slice %[[BP]][%{{.*}}] [3] [1] : tensor<6xf32> to tensor<3xf32>
// CHECK: %[[NB:.*]], %[[NMB:.*]], %[[NVB:.*]] = train.adamw %[[BS]], %{{.*}}, %[[MB]], %[[VB]]
// CHECK: %[[AB:.*]] = train.all_gather %[[NB]] : tensor<3xf32> -> tensor<6xf32>
// CHECK: %[[NEWB:.*]] = tensor.extract_slice %[[AB]][0] [5] [1] : tensor<6xf32> to tensor<5xf32>
// CHECK: return %[[NEWW]], %[[NEWB]], %[[NMW]], %[[NMB]], %[[NVW]], %[[NVB]], %{{.*}}, %[[NORM]]

// Stage 2: each rank's accumulated gradients are reduce-scattered (the
// bias's padded to 6 first); the norm is the square root of the shards'
// squared sums (in float64) summed across the ranks; no whole gradient is
// all-reduced or clipped.
// GRADS-LABEL: func.func @train
// GRADS-SAME: train.data_parallel = 2 : i64, train.shard = 2 : i64
// GRADS: %[[LOSS:.*]], %[[A:.*]]:2 = train.accumulate
// GRADS-NOT: train.all_reduce sum %[[A]]
// GRADS: %[[AWF:.*]] = tensor.collapse_shape %[[A]]#0 {{\[\[}}0, 1]] : tensor<4x3xf32> into tensor<12xf32>
// GRADS: %[[SW:.*]] = train.reduce_scatter sum %[[AWF]] : tensor<12xf32> -> tensor<6xf32>
// GRADS: %[[ABP:.*]] = tensor.insert_slice %[[A]]#1 into %{{.*}}[0] [5] [1] : tensor<5xf32> into tensor<6xf32>
// GRADS: %[[SB:.*]] = train.reduce_scatter sum %[[ABP]] : tensor<6xf32> -> tensor<3xf32>
// GRADS-NOT: train.clip_by_global_norm
// GRADS: %[[SQ:.*]] = linalg.generic {{.*}} ins(%[[SB]] : tensor<3xf32>)
// GRADS: %[[TOTAL:.*]] = train.all_reduce sum %[[SQ]] : tensor<f64>
// GRADS: %[[ROOT:.*]] = linalg.generic {{.*}} ins(%[[TOTAL]] : tensor<f64>)
// GRADS: math.sqrt %{{.*}} : f64
// GRADS: %[[NORM:.*]] = linalg.generic {{.*}} ins(%[[ROOT]] : tensor<f64>) outs(%{{.*}} : tensor<f32>)
// GRADS: arith.truncf
// GRADS: train.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<6xf32>, tensor<6xf32>
// GRADS: train.all_gather {{.*}} : tensor<6xf32> -> tensor<12xf32>
// GRADS: train.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>
// GRADS: train.all_gather {{.*}} : tensor<3xf32> -> tensor<6xf32>
// GRADS: return {{.*}}, %[[NORM]] :

// Stage 3: the function takes and returns each parameter's shard (6 and 3
// elements, in its type and, through the pipeline, its recorded signature
// that the tools call it with); the step reads the whole
// parameters gathered at the entry (train-gather-at-use moves the gathers
// later); the gradients are reduce-scattered as at stage 2 and each update
// reads and returns the shard itself.
// PARAMS-LABEL: func.func @train
// PARAMS-SAME: %[[W:[^:]*]]: tensor<6xf32>, %[[B:[^:]*]]: tensor<3xf32>
// PARAMS-SAME: -> (tensor<6xf32>, tensor<3xf32>, tensor<6xf32>, tensor<3xf32>, tensor<6xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>)
// PARAMS-SAME: train.shard = 3 : i64
// PARAMS: %[[GW:.*]] = train.all_gather %[[W]] : tensor<6xf32> -> tensor<12xf32>
// PARAMS: %[[WW:.*]] = tensor.expand_shape %[[GW]] {{\[\[}}0, 1]] output_shape [4, 3] : tensor<12xf32> into tensor<4x3xf32>
// PARAMS: %[[GB:.*]] = train.all_gather %[[B]] : tensor<3xf32> -> tensor<6xf32>
// PARAMS: %[[WB:.*]] = tensor.extract_slice %[[GB]][0] [5] [1] : tensor<6xf32> to tensor<5xf32>
// PARAMS: train.accumulate {{.*}} params(%[[WW]], %[[WB]] :
// PARAMS-COUNT-2: train.reduce_scatter sum
// PARAMS-NOT: train.all_gather
// PARAMS: %[[NW:.*]], %{{.*}}, %{{.*}} = train.adamw %[[W]], %{{.*}} : tensor<6xf32>, tensor<6xf32>
// PARAMS: %[[NB:.*]], %{{.*}}, %{{.*}} = train.adamw %[[B]], %{{.*}} : tensor<3xf32>, tensor<3xf32>
// PARAMS-NOT: train.all_gather
// PARAMS: return %[[NW]], %[[NB]],

// Through the CPU pipeline at stage 3 with two micro-batches: each
// parameter is gathered in the micro-batch loop before each operation that
// reads it (the weight by the forward's product, the bias by its add; the
// backward reads neither), none at the entry.
// LLVM3: llvm.func @train
// LLVM3-SAME: train.signature = (tensor<6xf32>, tensor<3xf32>, tensor<8x4xf32>, tensor<8xi64>, tensor<6xf32>, tensor<3xf32>, tensor<6xf32>, tensor<3xf32>, tensor<f32>, tensor<i64>) -> (tensor<6xf32>, tensor<3xf32>,
// LLVM3-NOT: llvm.call @ga_all_gather_f32
// LLVM3: llvm.br
// LLVM3-COUNT-2: llvm.call @ga_all_gather_f32
// LLVM3-NOT: llvm.call @ga_all_gather_f32
// LLVM3: llvm.call @ga_reduce_scatter_f32

// The CPU pipeline: the collectives are runtime calls.
// LLVM-DAG: llvm.func @ga_reduce_scatter_f32(i64, !llvm.ptr, i64, !llvm.ptr, i32)
// LLVM-DAG: llvm.func @ga_all_gather_f32(i64, !llvm.ptr, i64, !llvm.ptr)
// LLVM: llvm.func @train
// LLVM-COUNT-2: llvm.call @ga_reduce_scatter_f32
// LLVM-COUNT-2: llvm.call @ga_all_gather_f32

func.func @train(%w: tensor<4x3xf32>, %b: tensor<5xf32>, %x: tensor<8x4xf32>,
                 %y: tensor<8xi64>,
                 %mw: tensor<4x3xf32>, %mb: tensor<5xf32>,
                 %vw: tensor<4x3xf32>, %vb: tensor<5xf32>,
                 %lr: tensor<f32>, %t: tensor<i64>)
    -> (tensor<4x3xf32>, tensor<5xf32>, tensor<4x3xf32>, tensor<5xf32>,
        tensor<4x3xf32>, tensor<5xf32>, tensor<f32>, tensor<f32>) {
  %loss, %gw, %gb = train.step params(%w, %b : tensor<4x3xf32>, tensor<5xf32>)
      batch(%x, %y : tensor<8x4xf32>, tensor<8xi64>)
      attributes {data_parallel = 2 : i64, shard = 1 : i64}
      -> tensor<f32> grads(tensor<4x3xf32>, tensor<5xf32>) {
  ^bb0(%pw: tensor<4x3xf32>, %pb: tensor<5xf32>, %bx: tensor<8x4xf32>,
       %by: tensor<8xi64>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x3xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x3xf32>)
        -> tensor<8x3xf32>
    %xw = linalg.matmul ins(%bx, %pw : tensor<8x4xf32>, tensor<4x3xf32>)
        outs(%z : tensor<8x3xf32>) -> tensor<8x3xf32>
    %bias = tensor.extract_slice %pb[0] [3] [1]
        : tensor<5xf32> to tensor<3xf32>
    %logits = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>,
                         affine_map<(i, j) -> (j)>,
                         affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%xw, %bias : tensor<8x3xf32>, tensor<3xf32>)
        outs(%e : tensor<8x3xf32>) {
    ^bb0(%a: f32, %c: f32, %out: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<8x3xf32>
    %l = train.cross_entropy mean %logits, %by ignore_index = -100
        : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
    train.yield %l : tensor<f32>
  }
  %cw, %cb, %norm = train.clip_by_global_norm %gw, %gb max_norm = 1.0
      : tensor<4x3xf32>, tensor<5xf32> -> tensor<f32>
  %nw, %nmw, %nvw = train.adamw %w, %cw, %mw, %vw, %lr, %t
      : tensor<4x3xf32>, tensor<4x3xf32>, tensor<f32>, tensor<i64>
  %nb, %nmb, %nvb = train.adamw %b, %cb, %mb, %vb, %lr, %t
      : tensor<5xf32>, tensor<5xf32>, tensor<f32>, tensor<i64>
  return %nw, %nb, %nmw, %nmb, %nvw, %nvb, %loss, %norm
      : tensor<4x3xf32>, tensor<5xf32>, tensor<4x3xf32>, tensor<5xf32>,
        tensor<4x3xf32>, tensor<5xf32>, tensor<f32>, tensor<f32>
}
