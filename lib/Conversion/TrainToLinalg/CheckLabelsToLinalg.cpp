//===- CheckLabelsToLinalg.cpp - Lower train.check_labels -----------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// train.check_labels becomes one linalg.generic reduction that finds the
// first invalid label (its row-major position in the checked tensor, or
// INT64_MAX when there is none) and an scf.if that reads that label and calls
// the runtime's ga_report_error with it.
//
//===----------------------------------------------------------------------===//

#include "ga/Conversion/TrainToLinalg.h"
#include "ga/Runtime/Errors.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "train/TrainOps.h"
#include "train/TrainRuntime.h"

#include <limits>

using namespace mlir;
using namespace ga::train;

namespace {

/// `value` (a signless integer) as i64, signed.
Value toI64(OpBuilder &b, Location loc, Value value) {
  unsigned width = value.getType().getIntOrFloatBitWidth();
  Type i64 = b.getI64Type();
  if (width < 64)
    return arith::ExtSIOp::create(b, loc, i64, value);
  if (width > 64)
    return arith::TruncIOp::create(b, loc, i64, value);
  return value;
}

Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

} // namespace

/// The window of the labels that a check reads (the whole tensor, or the
/// slice of its offsets, sizes and strides), and the labels' row-major
/// strides, which positions are counted in.
struct LabelWindow {
  SmallVector<int64_t> offsets, sizes, strides, rowStride;
};

static LabelWindow windowOf(CheckLabelsOp op, RankedTensorType type) {
  int64_t rank = type.getRank();
  ArrayRef<int64_t> shape = type.getShape();
  LabelWindow w;
  w.offsets.assign(rank, 0);
  w.strides.assign(rank, 1);
  w.sizes.assign(shape.begin(), shape.end());
  if (op.getOffsets()) {
    w.offsets.assign(op.getOffsets()->begin(), op.getOffsets()->end());
    w.sizes.assign(op.getSizes()->begin(), op.getSizes()->end());
    w.strides.assign(op.getStrides()->begin(), op.getStrides()->end());
  }
  w.rowStride.assign(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    w.rowStride[d] = w.rowStride[d + 1] * shape[d + 1];
  return w;
}

/// The first invalid position of `checked` (the window `w` of the labels),
/// as a 0-d i64 tensor: INT64_MAX when every label is valid. A minimum is
/// order-independent: the result does not depend on how the loops are
/// tiled or run.
static Value firstInvalid(OpBuilder &b, Location loc, CheckLabelsOp op,
                          Value checked, const LabelWindow &w, int64_t none) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = w.offsets.size();
  Value init = ga::filledTensor(b, loc, {}, b.getI64IntegerAttr(none));
  SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(rank, ctx),
                              AffineMap::get(rank, 0, {}, ctx)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  int64_t numClasses = op.getNumClasses(), ignore = op.getIgnoreIndex();
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{checked},
             ValueRange{init}, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value label = toI64(nb, l, args[0]);
               Value ignored = arith::CmpIOp::create(
                   nb, l, arith::CmpIPredicate::eq, label,
                   arith::ConstantOp::create(nb, l,
                                             nb.getI64IntegerAttr(ignore)));
               // Unsigned: negative labels compare as huge.
               Value inRange = arith::CmpIOp::create(
                   nb, l, arith::CmpIPredicate::ult, label,
                   arith::ConstantOp::create(nb, l,
                                             nb.getI64IntegerAttr(numClasses)));
               Value valid = arith::OrIOp::create(nb, l, ignored, inRange);
               Value position = indexConstant(nb, l, 0);
               for (int64_t d = 0; d < rank; ++d) {
                 Value i = linalg::IndexOp::create(nb, l, d);
                 Value coord = arith::AddIOp::create(
                     nb, l, indexConstant(nb, l, w.offsets[d]),
                     arith::MulIOp::create(nb, l, i,
                                           indexConstant(nb, l, w.strides[d])));
                 position = arith::AddIOp::create(
                     nb, l, position,
                     arith::MulIOp::create(
                         nb, l, coord, indexConstant(nb, l, w.rowStride[d])));
               }
               Value candidate = arith::SelectOp::create(
                   nb, l, valid,
                   arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(none)),
                   arith::IndexCastOp::create(nb, l, nb.getI64Type(),
                                              position));
               linalg::YieldOp::create(nb, l,
                                       ValueRange{arith::MinSIOp::create(
                                           nb, l, candidate, args[1])});
             })
      .getResult(0);
}

/// The report of the label at `position` (a flat row-major position of the
/// labels): its multi-index's value and the check's bounds, to the
/// runtime's error record.
static void reportLabel(OpBuilder &tb, Location l, CheckLabelsOp op,
                        func::FuncOp report, Value position,
                        const LabelWindow &w) {
  Value labels = op.getLabels();
  ArrayRef<int64_t> shape = cast<RankedTensorType>(labels.getType()).getShape();
  Value linear = arith::IndexCastOp::create(tb, l, tb.getIndexType(), position);
  SmallVector<Value> index;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    index.push_back(arith::RemUIOp::create(
        tb, l,
        arith::DivUIOp::create(tb, l, linear,
                               indexConstant(tb, l, w.rowStride[d])),
        indexConstant(tb, l, shape[d])));
  Value value = toI64(tb, l, tensor::ExtractOp::create(tb, l, labels, index));
  auto i64 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(tb, l, tb.getI64IntegerAttr(v));
  };
  Value code = arith::ConstantOp::create(
      tb, l, tb.getI32IntegerAttr(GA_ERROR_LABEL_OUT_OF_RANGE));
  func::CallOp::create(tb, l, report,
                       ValueRange{code, i64(op.getArgument().value_or(-1)),
                                  position, value, i64(op.getNumClasses()),
                                  i64(op.getIgnoreIndex())});
  scf::YieldOp::create(tb, l);
}

LogicalResult ga::lowerCheckLabels(CheckLabelsOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value labels = op.getLabels();
  auto type = cast<RankedTensorType>(labels.getType());
  if (!type.hasStaticShape())
    return op.emitOpError()
           << "could not be lowered: the labels need a static shape, got "
           << type;
  LabelWindow w = windowOf(op, type);
  func::FuncOp report = getOrInsertRuntimeFunction(
      b, op, kReportErrorFunction,
      b.getFunctionType({b.getI32Type(), b.getI64Type(), b.getI64Type(),
                         b.getI64Type(), b.getI64Type(), b.getI64Type()},
                        {}));
  if (!report)
    return failure();
  MLIRContext *ctx = b.getContext();
  Value checked = labels;
  if (op.getOffsets())
    checked = tensor::ExtractSliceOp::create(
        b, loc, labels, getAsIndexOpFoldResult(ctx, w.offsets),
        getAsIndexOpFoldResult(ctx, w.sizes),
        getAsIndexOpFoldResult(ctx, w.strides));
  const int64_t none = std::numeric_limits<int64_t>::max();
  Value first = firstInvalid(b, loc, op, checked, w, none);
  Value position = tensor::ExtractOp::create(b, loc, first, ValueRange{});
  Value found = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, position,
      arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(none)));
  scf::IfOp::create(b, loc, found, [&](OpBuilder &tb, Location l) {
    reportLabel(tb, l, op, report, position, w);
  });
  op.erase();
  return success();
}
