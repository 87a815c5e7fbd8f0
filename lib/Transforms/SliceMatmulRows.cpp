//===- SliceMatmulRows.cpp - Compute only the rows a slice reads ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// A causal language model's loss reads the logits of positions 0..S-2 only:
// the LM head computes [B*S, V] logits, which are expanded to [B, S, V],
// sliced to [B, S-1, V] and flattened again. Computing the head on the
// sliced rows of its input instead gives the same logits (each row is the
// same dot products) without the unread rows, and, more importantly, the
// logits the loss reads are then a whole buffer: the cross-entropy's
// gradient can be computed in its place (convert-train-to-linalg), and the
// differentiated step never holds a second [N, V] tensor.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

namespace ga {
#define GEN_PASS_DEF_GASLICEMATMULROWSPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

/// A slice of the rows of a matmul's result, possibly through an
/// expand_shape that splits the rows into several dimensions.
struct RowSlice {
  linalg::MatmulOp matmul;
  /// The expand_shape between the matmul and the slice, or null.
  tensor::ExpandShapeOp expand;
  tensor::ExtractSliceOp slice;
};

} // namespace

/// Whether `matmul` reads its left operand's rows as the rows of its result:
/// the default maps (m, k), (k, n), (m, n), or any right-hand map with the
/// left and result maps as by default.
static bool rowsFollowLeftOperand(linalg::MatmulOp matmul) {
  SmallVector<AffineMap> maps = matmul.getIndexingMapsArray();
  MLIRContext *ctx = matmul.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  return maps.size() == 3 && maps[0] == AffineMap::get(3, 0, {m, k}, ctx) &&
         maps[2] == AffineMap::get(3, 0, {m, n}, ctx);
}

/// Matches `slice` as a slice of rows only (every column, unit strides) of
/// a matmul's result that nothing else reads.
static std::optional<RowSlice> matchRowSlice(tensor::ExtractSliceOp slice) {
  RowSlice match;
  match.slice = slice;
  Value source = slice.getSource();
  if (auto expand = source.getDefiningOp<tensor::ExpandShapeOp>()) {
    // The rows split into the leading dimensions, the columns kept last.
    SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
    if (groups.size() != 2 || groups[1].size() != 1 || !source.hasOneUse())
      return std::nullopt;
    match.expand = expand;
    source = expand.getSrc();
  }
  match.matmul = source.getDefiningOp<linalg::MatmulOp>();
  if (!match.matmul || !source.hasOneUse() ||
      match.matmul->getNumResults() != 1 ||
      !match.matmul.hasPureTensorSemantics() ||
      !rowsFollowLeftOperand(match.matmul))
    return std::nullopt;
  auto sourceType = cast<RankedTensorType>(slice.getSourceType());
  auto resultType = slice.getResultType();
  if (!sourceType.hasStaticShape() || !resultType.hasStaticShape() ||
      resultType.getRank() != sourceType.getRank() || resultType == sourceType)
    return std::nullopt;
  // Every column, unit strides.
  unsigned last = sourceType.getRank() - 1;
  if (!slice.hasUnitStride() || !isZeroInteger(slice.getMixedOffsets()[last]) ||
      resultType.getDimSize(last) != sourceType.getDimSize(last))
    return std::nullopt;
  return match;
}

/// The reassociation of a tensor of `rank` dimensions with a 2-D one: the
/// leading dimensions form the rows, the last one the columns.
static SmallVector<ReassociationIndices> rowsThenColumns(unsigned rank) {
  ReassociationIndices rows;
  for (unsigned d = 0; d + 1 < rank; ++d)
    rows.push_back(d);
  return {rows, {static_cast<int64_t>(rank - 1)}};
}

/// `value` [rows, cols] expanded as `expand` expands the matmul's result
/// (its rows split, `cols` kept), sliced as `slice` slices it, and flattened
/// back to 2-D.
static Value sliceRowsLike(OpBuilder &b, RowSlice match, Value value) {
  Location loc = match.slice.getLoc();
  auto type = cast<RankedTensorType>(value.getType());
  int64_t cols = type.getDimSize(1);
  RankedTensorType sliceType = match.slice.getResultType();
  unsigned rank = sliceType.getRank();
  if (match.expand) {
    SmallVector<int64_t> shape(match.expand.getResultType().getShape());
    shape.back() = cols;
    value = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), value,
        match.expand.getReassociationIndices());
  }
  SmallVector<OpFoldResult> offsets = match.slice.getMixedOffsets();
  SmallVector<OpFoldResult> sizes = match.slice.getMixedSizes();
  SmallVector<OpFoldResult> strides = match.slice.getMixedStrides();
  sizes.back() = b.getIndexAttr(cols);
  SmallVector<int64_t> shape(sliceType.getShape());
  shape.back() = cols;
  value = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), value,
      offsets, sizes, strides);
  if (rank == 2)
    return value;
  return tensor::CollapseShapeOp::create(b, loc, value, rowsThenColumns(rank));
}

/// The init of the narrowed matmul: a fill of the same value where the
/// matmul's init is a fill of a tensor.empty, else the init's rows sliced
/// like the result's.
static Value narrowInit(OpBuilder &b, RowSlice match, int64_t rows) {
  Value init = match.matmul.getDpsInits()[0];
  auto type = cast<RankedTensorType>(init.getType());
  Location loc = match.matmul.getLoc();
  if (auto fill = init.getDefiningOp<linalg::FillOp>())
    if (fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>()) {
      Value empty = tensor::EmptyOp::create(
          b, loc, ArrayRef<int64_t>{rows, type.getDimSize(1)},
          type.getElementType());
      return linalg::FillOp::create(b, loc, fill.getInputs()[0], empty)
          .getResult(0);
    }
  return sliceRowsLike(b, match, init);
}

static void narrow(RowSlice match) {
  OpBuilder b(match.slice);
  linalg::MatmulOp matmul = match.matmul;
  Value lhs = sliceRowsLike(b, match, matmul.getDpsInputs()[0]);
  int64_t rows = cast<RankedTensorType>(lhs.getType()).getDimSize(0);
  Value init = narrowInit(b, match, rows);
  auto narrowed = cast<linalg::MatmulOp>(b.clone(*matmul));
  narrowed->setOperand(0, lhs);
  narrowed->setOperand(2, init);
  narrowed->getResult(0).setType(init.getType());
  Value result = narrowed->getResult(0);
  RankedTensorType sliceType = match.slice.getResultType();
  if (sliceType.getRank() != 2)
    result = tensor::ExpandShapeOp::create(
        b, match.slice.getLoc(), sliceType, result,
        rowsThenColumns(sliceType.getRank()));
  match.slice.getResult().replaceAllUsesWith(result);
  match.slice->erase();
  if (match.expand)
    match.expand->erase();
  // With the full-size fill and its tensor.empty, if nothing else reads
  // them.
  ga::eraseWithDeadProducers(matmul);
}

namespace {
struct GaSliceMatmulRowsPass
    : ga::impl::GaSliceMatmulRowsPassBase<GaSliceMatmulRowsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<RowSlice> matches;
    getOperation()->walk([&](tensor::ExtractSliceOp slice) {
      if (std::optional<RowSlice> match = matchRowSlice(slice))
        matches.push_back(*match);
    });
    for (RowSlice match : matches)
      narrow(match);
  }
};
} // namespace
