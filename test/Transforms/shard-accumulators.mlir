// RUN: ga-opt %s --split-input-file "--train-shard-accumulators=only-where-smaller=false" | FileCheck %s
// RUN: ga-opt %s --split-input-file "--train-shard-accumulators=only-where-smaller=false" "--train-shard-accumulators=only-where-smaller=false" | FileCheck %s
// RUN: ga-opt %s --split-input-file --train-shard-accumulators | FileCheck %s --check-prefix=WHOLE
// RUN: ga-opt %s --split-input-file "--train-shard-accumulators=microbatch-shards=false" | FileCheck %s --check-prefix=WHOLE

// Steps of 2 ranks at shard = 2 as train-lower-accumulate leaves them
// (reduced): a 4x3 weight gradient (12 elements, 6 per rank) accumulated by
// a product, and a bias gradient of 5 elements (padded to 6, 3 per rank)
// whose first 3 elements a reduction accumulates through a slice.

// Four micro-batches: both accumulators become the rank's shards. Each
// micro-batch computes its gradients from zeros of its own, reduce-scatters
// them right after their last write and adds the shards in place.
// CHECK-LABEL: func.func @microbatches
// CHECK: %[[Z6:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<6xf32>)
// CHECK: %[[Z3:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3xf32>)
// CHECK: %[[R:.*]]:2 = scf.for %{{.*}} iter_args(%[[A:.*]] = %[[Z6]], %[[B:.*]] = %[[Z3]]) -> (tensor<6xf32>, tensor<3xf32>)
// CHECK: %[[ZW:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK-NEXT: %[[G:.*]] = linalg.matmul {{.*}} outs(%[[ZW]] : tensor<4x3xf32>)
// CHECK-NEXT: %[[GF:.*]] = tensor.collapse_shape %[[G]] {{\[\[}}0, 1]] : tensor<4x3xf32> into tensor<12xf32>
// CHECK-NEXT: %[[GS:.*]] = train.reduce_scatter sum %[[GF]] : tensor<12xf32> -> tensor<6xf32>
// CHECK-NEXT: %[[A2:.*]] = linalg.generic {{.*}} ins(%[[GS]] : tensor<6xf32>) outs(%[[A]] : tensor<6xf32>)
// CHECK: arith.addf
// CHECK: %[[ZB:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<5xf32>)
// CHECK-NEXT: %[[BS:.*]] = tensor.extract_slice %[[ZB]][0] [3] [1]
// CHECK-NEXT: %[[GB:.*]] = linalg.generic {{.*}} outs(%[[BS]] : tensor<3xf32>)
// CHECK: %[[B2:.*]] = tensor.insert_slice %[[GB]] into %[[ZB]][0] [3] [1]
// CHECK: %[[PAD:.*]] = tensor.insert_slice %[[B2]] into %{{.*}}[0] [5] [1] : tensor<5xf32> into tensor<6xf32>
// CHECK-NEXT: %[[BSH:.*]] = train.reduce_scatter sum %[[PAD]] : tensor<6xf32> -> tensor<3xf32>
// CHECK-NEXT: %[[B3:.*]] = linalg.generic {{.*}} ins(%[[BSH]] : tensor<3xf32>) outs(%[[B]] : tensor<3xf32>)
// CHECK: scf.yield %[[A2]], %[[B3]] : tensor<6xf32>, tensor<3xf32>
// CHECK-NOT: train.reduce_scatter
// CHECK: return %[[R]]#0, %[[R]]#1

// microbatch-shards=false: the loop accumulates the whole gradients, which
// are reduce-scattered once, after it. So does the default estimate here:
// the shards save 34 bytes, less than twice the weight's 48 that a
// micro-batch computes whole beside them.
// WHOLE-LABEL: func.func @microbatches
// WHOLE: scf.for {{.*}} -> (tensor<4x3xf32>, tensor<5xf32>)
// WHOLE-NOT: train.reduce_scatter
// WHOLE: scf.yield
// WHOLE: train.reduce_scatter sum %{{.*}} : tensor<12xf32> -> tensor<6xf32>
// WHOLE: train.reduce_scatter sum %{{.*}} : tensor<6xf32> -> tensor<3xf32>

#lhsT = affine_map<(d0, d1, d2) -> (d2, d0)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

func.func @microbatches(%x: tensor<4x2x4xf32>, %y: tensor<4x2x3xf32>)
    -> (tensor<6xf32>, tensor<3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %eb = tensor.empty() : tensor<5xf32>
  %zb = linalg.fill ins(%zero : f32) outs(%eb : tensor<5xf32>) -> tensor<5xf32>
  %r:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %z, %b = %zb)
      -> (tensor<4x3xf32>, tensor<5xf32>) {
    %xs = tensor.extract_slice %x[%i, 0, 0] [1, 2, 4] [1, 1, 1] : tensor<4x2x4xf32> to tensor<2x4xf32>
    %ys = tensor.extract_slice %y[%i, 0, 0] [1, 2, 3] [1, 1, 1] : tensor<4x2x3xf32> to tensor<2x3xf32>
    %g = linalg.matmul indexing_maps = [#lhsT, #rhs, #out]
        ins(%xs, %ys : tensor<2x4xf32>, tensor<2x3xf32>)
        outs(%a : tensor<4x3xf32>) -> tensor<4x3xf32>
    %bs = tensor.extract_slice %b[0] [3] [1] : tensor<5xf32> to tensor<3xf32>
    %gb = linalg.generic {indexing_maps = [#rows, #col],
                          iterator_types = ["reduction", "parallel"]}
        ins(%ys : tensor<2x3xf32>) outs(%bs : tensor<3xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %s = arith.addf %acc, %in : f32
      linalg.yield %s : f32
    } -> tensor<3xf32>
    %b2 = tensor.insert_slice %gb into %b[0] [3] [1] : tensor<3xf32> into tensor<5xf32>
    scf.yield %g, %b2 : tensor<4x3xf32>, tensor<5xf32>
  }
  %flat = tensor.collapse_shape %r#0 [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %s = train.reduce_scatter sum %flat : tensor<12xf32> -> tensor<6xf32>
  %pe = tensor.empty() : tensor<6xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<6xf32>) -> tensor<6xf32>
  %pad = tensor.insert_slice %r#1 into %pz[0] [5] [1] : tensor<5xf32> into tensor<6xf32>
  %sb = train.reduce_scatter sum %pad : tensor<6xf32> -> tensor<3xf32>
  return %s, %sb : tensor<6xf32>, tensor<3xf32>
}

// -----

// One micro-batch (no loop): the reduce-scatter moves right after the
// product that finishes the gradient, before the rest of the step, and the
// zeros it accumulates from move from the step's start to the product.
// CHECK-LABEL: func.func @one_microbatch
// CHECK: %[[X:.*]] = linalg.exp
// CHECK-NEXT: tensor.empty() : tensor<4x3xf32>
// CHECK-NEXT: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK-NEXT: %[[G:.*]] = linalg.matmul {{.*}} outs(%[[Z]] : tensor<4x3xf32>)
// CHECK-NEXT: %[[GF:.*]] = tensor.collapse_shape %[[G]]
// CHECK-NEXT: %[[S:.*]] = train.reduce_scatter sum %[[GF]]
// CHECK-NEXT: linalg.exp
// CHECK-NOT: train.reduce_scatter
// CHECK: return %[[S]]
// WHOLE-LABEL: func.func @one_microbatch
// WHOLE: linalg.matmul
// WHOLE-NEXT: tensor.collapse_shape
// WHOLE-NEXT: train.reduce_scatter

#lhsT = affine_map<(d0, d1, d2) -> (d2, d0)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

func.func @one_microbatch(%x: tensor<2x4xf32>, %y: tensor<2x3xf32>)
    -> (tensor<6xf32>, tensor<2x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %ex = tensor.empty() : tensor<2x4xf32>
  %x2 = linalg.exp ins(%x : tensor<2x4xf32>) outs(%ex : tensor<2x4xf32>) -> tensor<2x4xf32>
  %g = linalg.matmul indexing_maps = [#lhsT, #rhs, #out]
      ins(%x2, %y : tensor<2x4xf32>, tensor<2x3xf32>)
      outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %x3 = linalg.exp ins(%x2 : tensor<2x4xf32>) outs(%ex : tensor<2x4xf32>) -> tensor<2x4xf32>
  %flat = tensor.collapse_shape %g [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %s = train.reduce_scatter sum %flat : tensor<12xf32> -> tensor<6xf32>
  return %s, %x3 : tensor<6xf32>, tensor<2x4xf32>
}

// -----

// An embedding's gradient, added element by element in loops nested in the
// micro-batch loop: a shard too, the nested loops starting from the
// micro-batch's zeros.
// CHECK-LABEL: func.func @embedding_rows
// CHECK: scf.for {{.*}} -> (tensor<6xf32>)
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK-NEXT: scf.for {{.*}} iter_args(%{{.*}} = %[[Z]]) -> (tensor<4x3xf32>)
// CHECK: tensor.insert
// CHECK: train.reduce_scatter sum %{{.*}} : tensor<12xf32> -> tensor<6xf32>
// CHECK: scf.yield %{{.*}} : tensor<6xf32>

func.func @embedding_rows(%ids: tensor<4x2xindex>, %dy: tensor<4x2x3xf32>)
    -> tensor<6xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %z) -> (tensor<4x3xf32>) {
    %rows = scf.for %t = %c0 to %c2 step %c1 iter_args(%b = %a) -> (tensor<4x3xf32>) {
      %cols = scf.for %j = %c0 to %c3 step %c1 iter_args(%c = %b) -> (tensor<4x3xf32>) {
        %row = tensor.extract %ids[%i, %t] : tensor<4x2xindex>
        %d = tensor.extract %dy[%i, %t, %j] : tensor<4x2x3xf32>
        %old = tensor.extract %c[%row, %j] : tensor<4x3xf32>
        %new = arith.addf %old, %d : f32
        %w = tensor.insert %new into %c[%row, %j] : tensor<4x3xf32>
        scf.yield %w : tensor<4x3xf32>
      }
      scf.yield %cols : tensor<4x3xf32>
    }
    scf.yield %rows : tensor<4x3xf32>
  }
  %flat = tensor.collapse_shape %r [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %s = train.reduce_scatter sum %flat : tensor<12xf32> -> tensor<6xf32>
  return %s : tensor<6xf32>
}

// -----

// What stays whole (the accumulator is not only accumulated into, or not
// from zeros, or the loop's trip count is not a constant): the loop keeps
// its 4x3 accumulator and the reduce-scatter stays after it.
// CHECK-LABEL: func.func @read_in_the_body
// CHECK: scf.for {{.*}} -> (tensor<4x3xf32>)
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: tensor.collapse_shape
// CHECK-NEXT: train.reduce_scatter
// CHECK-LABEL: func.func @max_accumulation
// CHECK: scf.for {{.*}} -> (tensor<4x3xf32>)
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: tensor.collapse_shape
// CHECK-NEXT: train.reduce_scatter
// CHECK-LABEL: func.func @nonzero_start
// CHECK: scf.for {{.*}} -> (tensor<4x3xf32>)
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: tensor.collapse_shape
// CHECK-NEXT: train.reduce_scatter
// CHECK-LABEL: func.func @overwritten_slice
// CHECK: scf.for {{.*}} -> (tensor<4x3xf32>)
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: tensor.collapse_shape
// CHECK-NEXT: train.reduce_scatter
// CHECK-LABEL: func.func @element_moved
// CHECK: scf.for {{.*}} -> (tensor<4x3xf32>)
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: tensor.collapse_shape
// CHECK-NEXT: train.reduce_scatter
// CHECK-LABEL: func.func @element_read_only
// CHECK: scf.for {{.*}} -> (tensor<4x3xf32>)
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: tensor.collapse_shape
// CHECK-NEXT: train.reduce_scatter
// CHECK-LABEL: func.func @dynamic_trip_count
// CHECK: scf.for {{.*}} -> (tensor<4x3xf32>)
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: tensor.collapse_shape
// CHECK-NEXT: train.reduce_scatter

#id = affine_map<(d0, d1) -> (d0, d1)>

// The accumulator is also an input of the body's computation.
func.func @read_in_the_body(%x: tensor<4x3xf32>) -> tensor<6xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %z) -> (tensor<4x3xf32>) {
    %t = tensor.empty() : tensor<4x3xf32>
    %sq = linalg.mul ins(%a, %x : tensor<4x3xf32>, tensor<4x3xf32>) outs(%t : tensor<4x3xf32>) -> tensor<4x3xf32>
    scf.yield %sq : tensor<4x3xf32>
  }
  %flat = tensor.collapse_shape %r [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %s = train.reduce_scatter sum %flat : tensor<12xf32> -> tensor<6xf32>
  return %s : tensor<6xf32>
}

// A running maximum, not a sum.
func.func @max_accumulation(%x: tensor<4x3xf32>) -> tensor<6xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %z) -> (tensor<4x3xf32>) {
    %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<4x3xf32>) outs(%a : tensor<4x3xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %v = arith.maximumf %acc, %in : f32
      linalg.yield %v : f32
    } -> tensor<4x3xf32>
    scf.yield %m : tensor<4x3xf32>
  }
  %flat = tensor.collapse_shape %r [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %s = train.reduce_scatter sum %flat : tensor<12xf32> -> tensor<6xf32>
  return %s : tensor<6xf32>
}

// The accumulator starts from the argument, not from zeros.
func.func @nonzero_start(%x: tensor<4x3xf32>) -> tensor<6xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %x) -> (tensor<4x3xf32>) {
    %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<4x3xf32>) outs(%a : tensor<4x3xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %v = arith.addf %acc, %in : f32
      linalg.yield %v : f32
    } -> tensor<4x3xf32>
    scf.yield %m : tensor<4x3xf32>
  }
  %flat = tensor.collapse_shape %r [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %s = train.reduce_scatter sum %flat : tensor<12xf32> -> tensor<6xf32>
  return %s : tensor<6xf32>
}

// A row of the accumulator is overwritten, not added to.
func.func @overwritten_slice(%x: tensor<1x3xf32>) -> tensor<6xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %z) -> (tensor<4x3xf32>) {
    %w = tensor.insert_slice %x into %a[0, 0] [1, 3] [1, 1] : tensor<1x3xf32> into tensor<4x3xf32>
    scf.yield %w : tensor<4x3xf32>
  }
  %flat = tensor.collapse_shape %r [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %s = train.reduce_scatter sum %flat : tensor<12xf32> -> tensor<6xf32>
  return %s : tensor<6xf32>
}

// An element read at one place is written back at another.
func.func @element_moved(%x: tensor<4x3xf32>) -> tensor<6xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %z) -> (tensor<4x3xf32>) {
    %old = tensor.extract %a[%i, %c1] : tensor<4x3xf32>
    %d = tensor.extract %x[%i, %c1] : tensor<4x3xf32>
    %new = arith.addf %old, %d : f32
    %w = tensor.insert %new into %a[%i, %c2] : tensor<4x3xf32>
    scf.yield %w : tensor<4x3xf32>
  }
  %flat = tensor.collapse_shape %r [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %s = train.reduce_scatter sum %flat : tensor<12xf32> -> tensor<6xf32>
  return %s : tensor<6xf32>
}

// An element of it read into a sum that nothing reads.
func.func @element_read_only(%x: tensor<4x3xf32>) -> tensor<6xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %z) -> (tensor<4x3xf32>) {
    %old = tensor.extract %a[%i, %c1] : tensor<4x3xf32>
    %d = tensor.extract %x[%i, %c1] : tensor<4x3xf32>
    %unread = arith.addf %old, %d : f32
    scf.yield %a : tensor<4x3xf32>
  }
  %flat = tensor.collapse_shape %r [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %s = train.reduce_scatter sum %flat : tensor<12xf32> -> tensor<6xf32>
  return %s : tensor<6xf32>
}

// Ranks might not run the same number of iterations.
func.func @dynamic_trip_count(%x: tensor<4x3xf32>, %n: index) -> tensor<6xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> (tensor<4x3xf32>) {
    %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<4x3xf32>) outs(%a : tensor<4x3xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %v = arith.addf %acc, %in : f32
      linalg.yield %v : f32
    } -> tensor<4x3xf32>
    scf.yield %m : tensor<4x3xf32>
  }
  %flat = tensor.collapse_shape %r [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %s = train.reduce_scatter sum %flat : tensor<12xf32> -> tensor<6xf32>
  return %s : tensor<6xf32>
}
