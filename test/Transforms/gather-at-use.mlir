// RUN: ga-opt %s --train-gather-at-use | FileCheck %s
// RUN: ga-opt %s --train-gather-at-use --train-gather-at-use | FileCheck %s

// A stage-3 step as train-lower-accumulate leaves it (reduced): the shard
// %w of a 3x4 parameter (12 elements, 6 per rank) gathered at the entry,
// read through a reshape and a per-layer slice by the micro-batch loop's
// forward and backward, by a loop of the loss's chunks nested in it, by a
// loop whose bounds are not constants, under a conditional, and once more
// after the loop.

// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[W:[^:]*]]: tensor<6xf32>
// The entry's gather is gone; the loop's body gathers before each reader.
// CHECK-NOT: train.all_gather
// CHECK: scf.for
// CHECK: %[[G1:.*]] = train.all_gather %[[W]] : tensor<6xf32> -> tensor<12xf32>
// CHECK-NEXT: %[[E1:.*]] = tensor.expand_shape %[[G1]]
// CHECK-NEXT: %[[S1:.*]] = tensor.extract_slice %[[E1]][0, 0] [2, 4] [1, 1]
// CHECK-NEXT: %[[F:.*]] = linalg.add ins(%[[S1]], %{{.*}} :
// Some other work in between holds no gathered parameter.
// CHECK-NEXT: linalg.exp
// The backward gathers again.
// CHECK-NEXT: %[[G2:.*]] = train.all_gather %[[W]]
// CHECK-NEXT: %[[E2:.*]] = tensor.expand_shape %[[G2]]
// CHECK-NEXT: %[[S2:.*]] = tensor.extract_slice %[[E2]][0, 0] [2, 4] [1, 1]
// CHECK-NEXT: linalg.mul ins(%[[S2]], %{{.*}} :
// The chunk loop: one gather before it (the slice inside it stays there).
// CHECK-NEXT: %[[G3:.*]] = train.all_gather %[[W]]
// CHECK-NEXT: %[[E3:.*]] = tensor.expand_shape %[[G3]]
// CHECK-NEXT: scf.for
// CHECK-NOT: train.all_gather
// CHECK: tensor.extract_slice %[[E3]]
// CHECK: scf.yield
// CHECK: scf.yield
// The loop whose bounds are not constants and the conditional: gathered
// before them, on every rank alike.
// CHECK: %[[G4:.*]] = train.all_gather %[[W]]
// CHECK-NEXT: %[[E4:.*]] = tensor.expand_shape %[[G4]]
// CHECK-NEXT: scf.for %{{.*}} = %{{.*}} to %[[N:[^ ]*]]
// CHECK-NOT: train.all_gather
// CHECK: %[[G5:.*]] = train.all_gather %[[W]]
// CHECK-NEXT: %[[E5:.*]] = tensor.expand_shape %[[G5]]
// CHECK-NEXT: scf.if
// After the loop, in the entry block.
// CHECK: %[[G6:.*]] = train.all_gather %[[W]]
// CHECK-NEXT: %[[E6:.*]] = tensor.expand_shape %[[G6]]
// CHECK-NEXT: return %{{.*}}, %{{.*}}, %[[E6]]

func.func @step(%w: tensor<6xf32>, %x: tensor<2x4xf32>, %n: index,
                %flag: i1)
    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<3x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %g = train.all_gather %w : tensor<6xf32> -> tensor<12xf32>
  %whole = tensor.expand_shape %g [[0, 1]] output_shape [3, 4]
      : tensor<12xf32> into tensor<3x4xf32>
  %empty = tensor.empty() : tensor<2x4xf32>
  %r:2 = scf.for %i = %c0 to %c2 step %c1
      iter_args(%acc = %x, %acc2 = %x) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    %layer = tensor.extract_slice %whole[0, 0] [2, 4] [1, 1]
        : tensor<3x4xf32> to tensor<2x4xf32>
    %fwd = linalg.add ins(%layer, %acc : tensor<2x4xf32>, tensor<2x4xf32>)
        outs(%empty : tensor<2x4xf32>) -> tensor<2x4xf32>
    %act = linalg.exp ins(%fwd : tensor<2x4xf32>)
        outs(%empty : tensor<2x4xf32>) -> tensor<2x4xf32>
    %bwd = linalg.mul ins(%layer, %act : tensor<2x4xf32>, tensor<2x4xf32>)
        outs(%empty : tensor<2x4xf32>) -> tensor<2x4xf32>
    %chunks = scf.for %j = %c0 to %c2 step %c1 iter_args(%c = %bwd)
        -> (tensor<2x4xf32>) {
      %row = tensor.extract_slice %whole[%j, 0] [2, 4] [1, 1]
          : tensor<3x4xf32> to tensor<2x4xf32>
      %s = linalg.add ins(%row, %c : tensor<2x4xf32>, tensor<2x4xf32>)
          outs(%empty : tensor<2x4xf32>) -> tensor<2x4xf32>
      scf.yield %s : tensor<2x4xf32>
    }
    scf.yield %chunks, %bwd : tensor<2x4xf32>, tensor<2x4xf32>
  }
  %ragged = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %r#0)
      -> (tensor<2x4xf32>) {
    %layer = tensor.extract_slice %whole[1, 0] [2, 4] [1, 1]
        : tensor<3x4xf32> to tensor<2x4xf32>
    %s = linalg.add ins(%layer, %acc : tensor<2x4xf32>, tensor<2x4xf32>)
        outs(%empty : tensor<2x4xf32>) -> tensor<2x4xf32>
    scf.yield %s : tensor<2x4xf32>
  }
  %chosen = scf.if %flag -> (tensor<2x4xf32>) {
    %layer = tensor.extract_slice %whole[0, 0] [2, 4] [1, 1]
        : tensor<3x4xf32> to tensor<2x4xf32>
    scf.yield %layer : tensor<2x4xf32>
  } else {
    scf.yield %r#1 : tensor<2x4xf32>
  }
  return %ragged, %chosen, %whole
      : tensor<2x4xf32>, tensor<2x4xf32>, tensor<3x4xf32>
}

// A gather of a value computed in the function (stage 1's gather of an
// updated parameter) stays where it is.
// CHECK-LABEL: func.func @updated
// CHECK: %[[G:.*]] = train.all_gather
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: linalg.exp ins(%[[G]]
func.func @updated(%w: tensor<6xf32>) -> tensor<12xf32> {
  %e = tensor.empty() : tensor<6xf32>
  %u = linalg.exp ins(%w : tensor<6xf32>) outs(%e : tensor<6xf32>)
      -> tensor<6xf32>
  %g = train.all_gather %u : tensor<6xf32> -> tensor<12xf32>
  %e2 = tensor.empty() : tensor<12xf32>
  %x = linalg.exp ins(%g : tensor<12xf32>) outs(%e2 : tensor<12xf32>)
      -> tensor<12xf32>
  return %x : tensor<12xf32>
}

// A function of several blocks keeps its gathers: a reader in another
// block might not run on every rank.
// CHECK-LABEL: func.func @blocks
// CHECK-NEXT: train.all_gather
// CHECK-NEXT: cf.cond_br
func.func @blocks(%w: tensor<6xf32>, %flag: i1) -> tensor<12xf32> {
  %g = train.all_gather %w : tensor<6xf32> -> tensor<12xf32>
  cf.cond_br %flag, ^bb1, ^bb2
^bb1:
  %e = tensor.empty() : tensor<12xf32>
  %x = linalg.exp ins(%g : tensor<12xf32>) outs(%e : tensor<12xf32>)
      -> tensor<12xf32>
  return %x : tensor<12xf32>
^bb2:
  return %g : tensor<12xf32>
}
