//===- CheckLabels.cpp - Check cross-entropy labels at run time ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINCHECKLABELSPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::train;

namespace {

/// Where labels are read from: a function argument and the box of it
/// (offsets and strides per dimension of the argument; sizes too), or no
/// argument when the box cannot be followed there.
struct LabelSource {
  BlockArgument argument;
  SmallVector<int64_t> offsets, sizes, strides;
  bool wholeArgument() const {
    auto type = cast<RankedTensorType>(argument.getType());
    for (auto [d, size] : llvm::enumerate(type.getShape()))
      if (offsets[d] != 0 || strides[d] != 1 || sizes[d] != size)
        return false;
    return true;
  }
};

/// Follows `labels` back to an argument of `func`. Going up from the loss,
/// reshapes come first (they keep the row-major order, so the set of
/// elements read is the whole reshaped value), then static rank-preserving
/// slices, which compose into one box; region arguments of train.step and
/// train.checkpoint stand for their operands at any point.
std::optional<LabelSource> traceLabels(Value labels, func::FuncOp func) {
  Value value = labels;
  bool sliced = false;
  SmallVector<int64_t> offsets, sizes, strides;
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (owner == func.getOperation()) {
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        if (!type || !type.hasStaticShape())
          return std::nullopt;
        LabelSource source{arg, {}, {}, {}};
        if (sliced) {
          source.offsets = offsets;
          source.sizes = sizes;
          source.strides = strides;
        } else {
          source.offsets.assign(type.getRank(), 0);
          source.strides.assign(type.getRank(), 1);
          source.sizes.assign(type.getShape().begin(), type.getShape().end());
        }
        return source;
      }
      if (isa<StepOp>(owner) && arg.getOwner()->isEntryBlock() &&
          arg.getArgNumber() < owner->getNumOperands()) {
        value = owner->getOperand(arg.getArgNumber());
        continue;
      }
      if (auto checkpoint = dyn_cast<CheckpointOp>(owner)) {
        value = checkpoint.getInputs()[arg.getArgNumber()];
        continue;
      }
      return std::nullopt;
    }
    Operation *def = value.getDefiningOp();
    if (!sliced &&
        isa_and_nonnull<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def)) {
      value = def->getOperand(0);
      continue;
    }
    if (auto slice = dyn_cast_or_null<tensor::ExtractSliceOp>(def)) {
      if (slice.getSourceType().getRank() != slice.getType().getRank())
        return std::nullopt;
      ArrayRef<int64_t> so = slice.getStaticOffsets(),
                        ss = slice.getStaticSizes(),
                        st = slice.getStaticStrides();
      if (llvm::any_of(so, ShapedType::isDynamic) ||
          llvm::any_of(ss, ShapedType::isDynamic) ||
          llvm::any_of(st, ShapedType::isDynamic))
        return std::nullopt;
      if (!sliced) {
        offsets.assign(so.begin(), so.end());
        sizes.assign(ss.begin(), ss.end());
        strides.assign(st.begin(), st.end());
        sliced = true;
      } else {
        // The box so far is relative to the slice's result: move it into the
        // slice's source.
        for (size_t d = 0; d < offsets.size(); ++d) {
          offsets[d] = so[d] + offsets[d] * st[d];
          strides[d] *= st[d];
        }
      }
      value = slice.getSource();
      continue;
    }
    return std::nullopt;
  }
}

struct TrainCheckLabelsPass
    : ga::impl::TrainCheckLabelsPassBase<TrainCheckLabelsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &entry = func.getBody().front();

    // Label readers: the loss and its adjoint.
    SmallVector<std::tuple<Operation *, Value, Value, int64_t>> readers;
    func.walk([&](Operation *op) {
      if (auto ce = dyn_cast<CrossEntropyOp>(op))
        readers.emplace_back(op, ce.getLogits(), ce.getLabels(),
                             ce.getIgnoreIndex());
      else if (auto grad = dyn_cast<CrossEntropyGradOp>(op))
        readers.emplace_back(op, grad.getLogits(), grad.getLabels(),
                             grad.getIgnoreIndex());
    });

    OpBuilder builder(&getContext());
    for (auto [op, logits, labels, ignore] : readers) {
      auto logitsType = cast<RankedTensorType>(logits.getType());
      if (logitsType.getRank() != 2 || logitsType.isDynamicDim(1)) {
        op->emitWarning() << "the number of classes is not static: its "
                             "labels are not checked at run time";
        continue;
      }
      int64_t numClasses = logitsType.getDimSize(1);
      std::optional<LabelSource> source = traceLabels(labels, func);
      if (!source) {
        if (op->getParentOp() == func.getOperation() &&
            cast<RankedTensorType>(labels.getType()).hasStaticShape()) {
          builder.setInsertionPoint(op);
          bool present = false;
          for (Operation *prev = op->getPrevNode();
               prev && isa<CheckLabelsOp>(prev); prev = prev->getPrevNode())
            present |= matches(cast<CheckLabelsOp>(prev), labels, numClasses,
                               ignore, nullptr);
          if (!present)
            CheckLabelsOp::create(builder, op->getLoc(), labels, numClasses,
                                  ignore, nullptr, nullptr, nullptr, nullptr);
          continue;
        }
        op->emitWarning()
            << "its labels do not come from a function argument through "
               "reshapes and static slices (run train-check-labels before "
               "train-split-batch): an invalid label is clamped, not reported";
        continue;
      }
      // The checks stand first in the function, in the order of the losses
      // that need them; a check that is there already is not repeated.
      bool present = false;
      Block::iterator it = entry.begin();
      for (; it != entry.end() && isa<CheckLabelsOp>(*it); ++it)
        present |= matches(cast<CheckLabelsOp>(*it), source->argument,
                           numClasses, ignore, &*source);
      if (present)
        continue;
      builder.setInsertionPoint(&entry, it);
      DenseI64ArrayAttr offsets, sizes, strides;
      if (!source->wholeArgument()) {
        offsets = builder.getDenseI64ArrayAttr(source->offsets);
        sizes = builder.getDenseI64ArrayAttr(source->sizes);
        strides = builder.getDenseI64ArrayAttr(source->strides);
      }
      CheckLabelsOp::create(
          builder, op->getLoc(), source->argument, numClasses, ignore,
          builder.getI64IntegerAttr(source->argument.getArgNumber()), offsets,
          sizes, strides);
    }
  }

  /// Whether `check` checks `labels` with these bounds, over the box of
  /// `box` (the whole of `labels` when null or whole).
  static bool matches(CheckLabelsOp check, Value labels, int64_t numClasses,
                      int64_t ignore, const LabelSource *box) {
    if (check.getLabels() != labels || check.getNumClasses() != numClasses ||
        check.getIgnoreIndex() != ignore)
      return false;
    if (!box || box->wholeArgument())
      return !check.getOffsets();
    return check.getOffsets() &&
           ArrayRef<int64_t>(*check.getOffsets()) == ArrayRef(box->offsets) &&
           ArrayRef<int64_t>(*check.getSizes()) == ArrayRef(box->sizes) &&
           ArrayRef<int64_t>(*check.getStrides()) == ArrayRef(box->strides);
  }
};
} // namespace
