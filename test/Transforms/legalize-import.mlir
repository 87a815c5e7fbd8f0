// RUN: ga-opt %s --ga-legalize-import -split-input-file | FileCheck %s
// The forms of torch-mlir's linalg, rewrite by rewrite, and the forms each
// rewrite leaves alone. The numbers of whole imported models are checked
// against PyTorch's float64 autograd in test/Import.

// Keepdim statistics: an operand of extent 1 read through the constant 0 is
// collapsed; an output written so is collapsed and its result expanded.
// CHECK-LABEL: func.func @unit_maps
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[INIT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[ROW:.*]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<4x8xf32>) outs(%[[INIT]] : tensor<4xf32>)
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[ROW]], #{{.*}}]
// CHECK-SAME: ins(%[[X]], %[[SUM]] : tensor<4x8xf32>, tensor<4xf32>)
// CHECK-NOT: affine_map<(d0, d1) -> (d0, 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#keep = affine_map<(d0, d1) -> (d0, 0)>
func.func @unit_maps(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x1xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #keep], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #keep, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<4x1xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The argmax beside a max: dropped with the operations only it needed.
// CHECK-LABEL: func.func @dead_argmax
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}} : tensor<4xf32>)
// CHECK-NOT: linalg.index
// CHECK-NOT: arith.select
// CHECK: arith.maximumf
// CHECK-NEXT: linalg.yield %{{.*}} : f32
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @dead_argmax(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<4xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %ei = tensor.empty() : tensor<4xi64>
  %i0 = linalg.fill ins(%c0 : i64) outs(%ei : tensor<4xi64>) -> tensor<4xi64>
  %r:2 = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%m0, %i0 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %m: f32, %i: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %mx = arith.maximumf %in, %m : f32
    %gt = arith.cmpf ogt, %in, %m : f32
    %sel = arith.select %gt, %ji, %i : i64
    linalg.yield %mx, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#0 : tensor<4xf32>
}

// -----

// A result that nothing reads but whose element the other result reads
// stays.
// CHECK-LABEL: func.func @dead_result_read_by_other
// CHECK: %{{.*}}:2 = linalg.generic
#id = affine_map<(d0) -> (d0)>
func.func @dead_result_read_by_other(%x: tensor<4xf32>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%a, %b : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%in: f32, %o0: f32, %o1: f32):
    %s = arith.addf %in, %o1 : f32
    linalg.yield %s, %in : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  return %r#0 : tensor<4xf32>
}

// -----

// A splat input is a constant of the body.
// CHECK-LABEL: func.func @splat_input
// CHECK: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<4x8xf32>) outs
// CHECK: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK: arith.mulf %[[IN]], %[[TWO]] : f32
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @splat_input(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = arith.constant dense<2.0> : tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %two : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// nn.Linear's bias broadcast over the rows: the add reads the bias.
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @bias_broadcast
// CHECK-SAME: (%[[MM:.*]]: tensor<8x4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[COL]], #{{.*}}]
// CHECK-SAME: ins(%[[MM]], %[[B]] : tensor<8x4xf32>, tensor<4xf32>)
// CHECK: return %[[Y]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @bias_broadcast(%mm: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %bb = linalg.generic {indexing_maps = [#col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  } -> tensor<8x4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bb : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// A broadcast whose consumer is not a generic stays.
// CHECK-LABEL: func.func @broadcast_into_named
// CHECK: %[[BB:.*]] = linalg.generic
// CHECK: linalg.add ins(%{{.*}}, %[[BB]] :
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @broadcast_into_named(%mm: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %bb = linalg.generic {indexing_maps = [#col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  } -> tensor<8x4xf32>
  %y = linalg.add ins(%mm, %bb : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// A weight broadcast over the batch for a batch_matmul, transposed first:
// one matmul of the rows, reading the weight through a transposed map.
// CHECK-LABEL: func.func @batch_matmul_of_broadcast
// CHECK-SAME: (%[[A:.*]]: tensor<2x3x4xf32>, %[[W:.*]]: tensor<5x4xf32>)
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %[[A]] {{\[\[}}0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: %[[P:.*]] = linalg.matmul indexing_maps = [#{{.*}}, #[[WT:.*]], #{{.*}}] ins(%[[ROWS]], %[[W]] : tensor<6x4xf32>, tensor<5x4xf32>) outs(%{{.*}} : tensor<6x5xf32>)
// CHECK: tensor.expand_shape %[[P]] {{\[\[}}0, 1], [2]] output_shape [2, 3, 5] : tensor<6x5xf32> into tensor<2x3x5xf32>
// CHECK-NOT: linalg.batch_matmul
#bcast = affine_map<(d0, d1, d2) -> (d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @batch_matmul_of_broadcast(%a: tensor<2x3x4xf32>, %w: tensor<5x4xf32>) -> tensor<2x3x5xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<4x5xf32>
  %wt = linalg.transpose ins(%w : tensor<5x4xf32>) outs(%et : tensor<4x5xf32>) permutation = [1, 0]
  %eb = tensor.empty() : tensor<2x4x5xf32>
  %wb = linalg.generic {indexing_maps = [#bcast, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%wt : tensor<4x5xf32>) outs(%eb : tensor<2x4x5xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  } -> tensor<2x4x5xf32>
  %e = tensor.empty() : tensor<2x3x5xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %y = linalg.batch_matmul ins(%a, %wb : tensor<2x3x4xf32>, tensor<2x4x5xf32>) outs(%init : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// -----

// An iota input is the loop index; a gather at loop indices is a read
// through a map, sliced to the loops' extents (positions 0..7 of a table
// of 16), and its bounds checks fold away.
// CHECK-DAG: #[[POS:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @position_embedding
// CHECK-SAME: (%[[WPE:.*]]: tensor<16x4xf32>)
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[WPE]][0, 0] [8, 4] [1, 1] : tensor<16x4xf32> to tensor<8x4xf32>
// CHECK: linalg.generic {indexing_maps = [#[[POS]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[ROWS]] : tensor<8x4xf32>)
// CHECK-NOT: cf.assert
// CHECK-NOT: tensor.extract
// CHECK: linalg.yield
#id1 = affine_map<(d0) -> (d0)>
#pos = affine_map<(d0, d1, d2) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @position_embedding(%wpe: tensor<16x4xf32>) -> tensor<2x8x4xf32> {
  %c0 = arith.constant 0 : i64
  %c16 = arith.constant 16 : index
  %ei = tensor.empty() : tensor<8xi64>
  %iota = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%ei : tensor<8xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<8xi64>
  %ex = tensor.expand_shape %iota [[0, 1]] output_shape [1, 8] : tensor<8xi64> into tensor<1x8xi64>
  %eb = tensor.empty() : tensor<2x8xi64>
  %ids = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%ex : tensor<1x8xi64>) outs(%eb : tensor<2x8xi64>) {
  ^bb0(%in: i64, %o: i64):
    linalg.yield %in : i64
  } -> tensor<2x8xi64>
  %e = tensor.empty() : tensor<2x8x4xf32>
  %y = linalg.generic {indexing_maps = [#pos, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<2x8xi64>) outs(%e : tensor<2x8x4xf32>) {
  ^bb0(%in: i64, %o: f32):
    %r = arith.index_cast %in : i64 to index
    %d = linalg.index 2 : index
    %lt = arith.cmpi slt, %r, %c16 : index
    cf.assert %lt, "index must be smaller than dim size"
    %ge = arith.cmpi sge, %in, %c0 : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %v = tensor.extract %wpe[%r, %d] : tensor<16x4xf32>
    linalg.yield %v : f32
  } -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

// A gather at data (token ids) stays a gather, with its checks.
// CHECK-LABEL: func.func @token_embedding
// CHECK: cf.assert
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<16x4xf32>
#tok = affine_map<(d0, d1) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @token_embedding(%wte: tensor<16x4xf32>, %ids: tensor<8xi64>) -> tensor<8x4xf32> {
  %c16 = arith.constant 16 : index
  %e = tensor.empty() : tensor<8x4xf32>
  %y = linalg.generic {indexing_maps = [#tok, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<8xi64>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %o: f32):
    %r = arith.index_cast %in : i64 to index
    %d = linalg.index 1 : index
    %lt = arith.cmpi slt, %r, %c16 : index
    cf.assert %lt, "index must be smaller than dim size"
    %v = tensor.extract %wte[%r, %d] : tensor<16x4xf32>
    linalg.yield %v : f32
  } -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// The rows of a mask at arange(B), with the wrap of negative indices: a
// read of the mask.
// CHECK-LABEL: func.func @mask_rows
// CHECK-SAME: (%[[MASK:.*]]: tensor<4x8xi1>)
// CHECK: linalg.generic {{.*}} ins(%[[MASK]] : tensor<4x8xi1>)
// CHECK-NOT: tensor.extract
// CHECK-NOT: arith.select
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#b = affine_map<(d0, d1) -> (d0)>
func.func @mask_rows(%mask: tensor<4x8xi1>) -> tensor<4x8xi1> {
  %c0 = arith.constant 0 : i64
  %c4 = arith.constant 4 : i64
  %ei = tensor.empty() : tensor<4xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%ei : tensor<4xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<4xi64>
  %e = tensor.empty() : tensor<4x8xi1>
  %y = linalg.generic {indexing_maps = [#b, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%iota : tensor<4xi64>) outs(%e : tensor<4x8xi1>) {
  ^bb0(%in: i64, %o: i1):
    %neg = arith.cmpi slt, %in, %c0 : i64
    %up = arith.addi %in, %c4 : i64
    %w = arith.select %neg, %up, %in : i64
    %r = arith.index_cast %w : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %mask[%r, %j] : tensor<4x8xi1>
    linalg.yield %v : i1
  } -> tensor<4x8xi1>
  return %y : tensor<4x8xi1>
}

// -----

// Constant powers: multiplications by squaring; a variable power stays.
// CHECK-LABEL: func.func @powers
// CHECK-SAME: (%[[X:.*]]: f32, %[[N:.*]]: i64)
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK: %[[CUBE:.*]] = arith.mulf %[[X]], %[[SQ]] : f32
// CHECK: %[[SQ2:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK: %[[INV:.*]] = arith.divf %[[ONE]], %[[SQ2]] : f32
// CHECK: %[[VAR:.*]] = math.fpowi %[[X]], %[[N]] : f32, i64
// CHECK: return %[[CUBE]], %[[INV]], %[[ONE]], %[[VAR]]
func.func @powers(%x: f32, %n: i64) -> (f32, f32, f32, f32) {
  %c3 = arith.constant 3 : i64
  %cm2 = arith.constant -2 : i32
  %c0 = arith.constant 0 : i64
  %cube = math.fpowi %x, %c3 : f32, i64
  %inv = math.fpowi %x, %cm2 : f32, i32
  %one = math.fpowi %x, %c0 : f32, i64
  %var = math.fpowi %x, %n : f32, i64
  return %cube, %inv, %one, %var : f32, f32, f32, f32
}

// -----

// A matmul of a transposed weight (nn.Linear) reads the weight.
// CHECK-DAG: #[[NK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[W:.*]]: tensor<5x4xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #[[NK]], #{{.*}}] ins(%[[X]], %[[W]] : tensor<8x4xf32>, tensor<5x4xf32>)
func.func @linear(%x: tensor<8x4xf32>, %w: tensor<5x4xf32>) -> tensor<8x5xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<4x5xf32>
  %wt = linalg.transpose ins(%w : tensor<5x4xf32>) outs(%et : tensor<4x5xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x5xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x5xf32>) -> tensor<8x5xf32>
  %y = linalg.matmul ins(%x, %wt : tensor<8x4xf32>, tensor<4x5xf32>) outs(%init : tensor<8x5xf32>) -> tensor<8x5xf32>
  return %y : tensor<8x5xf32>
}

// -----

// A constant that holds its indices along a dimension (BERT's position_ids
// buffer) is an iota too; one that does not stays a gather.
// CHECK-LABEL: func.func @position_buffer
// CHECK-SAME: (%[[WPE:.*]]: tensor<8x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[WPE]] : tensor<8x4xf32>)
// CHECK-NOT: tensor.extract
// CHECK-LABEL: func.func @shuffled_buffer
// CHECK: tensor.extract
#pos = affine_map<(d0, d1, d2) -> (0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @position_buffer(%wpe: tensor<8x4xf32>) -> tensor<2x8x4xf32> {
  %ids = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
  %e = tensor.empty() : tensor<2x8x4xf32>
  %y = linalg.generic {indexing_maps = [#pos, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<1x8xi64>) outs(%e : tensor<2x8x4xf32>) {
  ^bb0(%in: i64, %o: f32):
    %r = arith.index_cast %in : i64 to index
    %d = linalg.index 2 : index
    %v = tensor.extract %wpe[%r, %d] : tensor<8x4xf32>
    linalg.yield %v : f32
  } -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}
func.func @shuffled_buffer(%wpe: tensor<8x4xf32>) -> tensor<2x8x4xf32> {
  %ids = arith.constant dense<[[1, 0, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
  %e = tensor.empty() : tensor<2x8x4xf32>
  %y = linalg.generic {indexing_maps = [#pos, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<1x8xi64>) outs(%e : tensor<2x8x4xf32>) {
  ^bb0(%in: i64, %o: f32):
    %r = arith.index_cast %in : i64 to index
    %d = linalg.index 2 : index
    %v = tensor.extract %wpe[%r, %d] : tensor<8x4xf32>
    linalg.yield %v : f32
  } -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

// A gather from a zero buffer expanded over the batch (transformers' default
// token_type_ids), read at the batch loop's index: the extract of a splat is
// the splatted value, so that nothing reads a position within the batch.
// CHECK-LABEL: func.func @gather_from_splat
// CHECK-NOT: tensor.extract
// CHECK: linalg.yield %{{.*}} : i64
#id2s = affine_map<(b, s) -> (b, s)>
func.func @gather_from_splat(%pos: tensor<2x8xi64>) -> tensor<2x8xi64> {
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<2x16xi64>
  %zeros = linalg.generic {indexing_maps = [#id2s], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<2x16xi64>) {
  ^bb0(%o: i64):
    linalg.yield %c0 : i64
  } -> tensor<2x16xi64>
  %e2 = tensor.empty() : tensor<2x8xi64>
  %y = linalg.generic {indexing_maps = [#id2s, #id2s], iterator_types = ["parallel", "parallel"]}
      ins(%pos : tensor<2x8xi64>) outs(%e2 : tensor<2x8xi64>) {
  ^bb0(%in: i64, %o: i64):
    %b = linalg.index 0 : index
    %p = arith.index_cast %in : i64 to index
    %v = tensor.extract %zeros[%b, %p] : tensor<2x16xi64>
    linalg.yield %v : i64
  } -> tensor<2x8xi64>
  return %y : tensor<2x8xi64>
}

// -----

// cross-entropy's class weight broadcast over the batch's rows and gathered
// at (row, label): the extract reads the weight at the label alone, so that
// nothing reads a position within the batch.
// CHECK-LABEL: func.func @gather_from_broadcast
// CHECK-SAME: (%[[LABELS:.*]]: tensor<6xi64>, %[[W:.*]]: tensor<10xf32>)
// CHECK-NOT: linalg.index
// CHECK: %[[C:.*]] = arith.index_cast
// CHECK-NEXT: tensor.extract %[[W]][%[[C]]] : tensor<10xf32>
#bc_row = affine_map<(b, c) -> (c)>
#bc_id = affine_map<(b, c) -> (b, c)>
#bc_1 = affine_map<(b) -> (b)>
func.func @gather_from_broadcast(%labels: tensor<6xi64>, %w: tensor<10xf32>) -> tensor<6xf32> {
  %e = tensor.empty() : tensor<6x10xf32>
  %bw = linalg.generic {indexing_maps = [#bc_row, #bc_id], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<10xf32>) outs(%e : tensor<6x10xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  } -> tensor<6x10xf32>
  %e2 = tensor.empty() : tensor<6xf32>
  %y = linalg.generic {indexing_maps = [#bc_1, #bc_1], iterator_types = ["parallel"]}
      ins(%labels : tensor<6xi64>) outs(%e2 : tensor<6xf32>) {
  ^bb0(%in: i64, %o: f32):
    %b = linalg.index 0 : index
    %c = arith.index_cast %in : i64 to index
    %v = tensor.extract %bw[%b, %c] : tensor<6x10xf32>
    linalg.yield %v : f32
  } -> tensor<6xf32>
  return %y : tensor<6xf32>
}
