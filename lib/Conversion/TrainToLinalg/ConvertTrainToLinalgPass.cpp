//===- ConvertTrainToLinalgPass.cpp - The convert-train-to-linalg pass ----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Conversion/Passes.h"
#include "ga/Conversion/TrainToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/DialectConversion.h"
#include "train/TrainOps.h"
#include "train/TrainRuntime.h"

namespace ga {
#define GEN_PASS_DEF_CONVERTTRAINTOLINALGPASS
#include "ga/Conversion/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {
struct ConvertTrainToLinalgPass
    : ga::impl::ConvertTrainToLinalgPassBase<ConvertTrainToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    // The compute ops of the train dialect are illegal after this pass: one
    // left behind is an error on that op. The structural ops (train.step,
    // train.accumulate, train.checkpoint, train.all_reduce) are lowered by
    // their own passes.
    ConversionTarget target(getContext());
    target.addIllegalOp<ga::train::CrossEntropyOp,
                        ga::train::CrossEntropyGradOp, ga::train::GlobalNormOp,
                        ga::train::ClipByGlobalNormOp, ga::train::SgdOp,
                        ga::train::AdamWOp, ga::train::StopGradientOp,
                        ga::train::AttentionOp, ga::train::AttentionGradOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    // The patterns need static shapes; say so on the op rather than leave
    // the conversion to report a bare failure to legalize it.
    WalkResult shapes = getOperation()->walk([&](Operation *op) {
      if (!target.isIllegal(op))
        return WalkResult::advance();
      for (auto [i, type] : llvm::enumerate(op->getOperandTypes()))
        if (auto shaped = dyn_cast<ShapedType>(type);
            shaped && !shaped.hasStaticShape()) {
          op->emitOpError() << "could not be lowered to linalg (only "
                               "static shapes are supported): operand #"
                            << i << " has the dynamic shape " << type;
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (shapes.wasInterrupted())
      return signalPassFailure();
    // A loss and its gradient on the same logits share their row
    // statistics, and the gradient may overwrite the logits: lowered as a
    // pair before the patterns lower what is left one op at a time.
    ga::lowerPairedCrossEntropies(getOperation());
    // attention-calls: the attentions the runtime's fused call takes; the
    // others are lowered over tiles by the patterns.
    FailureOr<std::optional<ga::AttentionCalls>> calls = attentionCallsOption();
    if (failed(calls))
      return signalPassFailure();
    if (reportAttention)
      reportAttentions(*calls);
    if (*calls && failed(ga::lowerAttentionToCalls(getOperation(), **calls)))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    ga::populateTrainToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    if (failed(lowerRanks()) || failed(lowerLabelChecks()))
      signalPassFailure();
  }

  /// The attention-calls options (nothing without calls); an error for an
  /// unknown kind.
  FailureOr<std::optional<ga::AttentionCalls>> attentionCallsOption() {
    if (attentionCalls.empty())
      return std::optional<ga::AttentionCalls>();
    ga::AttentionCalls calls;
    if (attentionCalls == "bf16") {
      calls.type = ga::AttentionCalls::Type::BF16;
    } else if (attentionCalls != "native") {
      getOperation()->emitError()
          << "convert-train-to-linalg: attention-calls must be native or "
             "bf16 (empty: none), got '"
          << attentionCalls << "'";
      return failure();
    }
    calls.keyMask = attentionCallMasks;
    calls.dlse = attentionCallDlse;
    return std::optional<ga::AttentionCalls>(calls);
  }

  /// report-attention: where each attention goes (`calls`: the fused
  /// call's, if any).
  void reportAttentions(const std::optional<ga::AttentionCalls> &calls) {
    getOperation()->walk([&](Operation *op) {
      if (!isa<ga::train::AttentionOp, ga::train::AttentionGradOp>(op))
        return;
      bool forward = isa<ga::train::AttentionOp>(op);
      std::optional<std::string> why;
      if (calls)
        why = ga::attentionCallUnsupported(op, *calls);
      InFlightDiagnostic remark = mlir::emitRemark(op->getLoc())
                                  << (forward ? "attention"
                                              : "attention's "
                                                "gradient");
      if (calls && !why) {
        remark << ": the runtime's fused attention ("
               << (calls->type == ga::AttentionCalls::Type::BF16
                       ? "bfloat16"
                       : "the operands' type")
               << ")";
        return;
      }
      auto keyTile = op->getAttrOfType<IntegerAttr>("key_tile");
      auto queryTile = op->getAttrOfType<IntegerAttr>("query_tile");
      remark << ": over tiles of " << queryTile.getInt() << " queries and "
             << keyTile.getInt() << " keys (0: all)";
      if (why)
        remark << "; not the fused call: " << *why;
    });
  }

  /// train.check_labels becomes a reduction and a call of ga_report_error.
  LogicalResult lowerLabelChecks() {
    SmallVector<ga::train::CheckLabelsOp> checks;
    getOperation()->walk(
        [&](ga::train::CheckLabelsOp op) { checks.push_back(op); });
    for (ga::train::CheckLabelsOp check : checks)
      if (failed(ga::lowerCheckLabels(check)))
        return failure();
    return success();
  }

  /// train.rank becomes a call of the runtime's `ga_rank() -> i64`.
  LogicalResult lowerRanks() {
    SmallVector<ga::train::RankOp> ranks;
    getOperation()->walk([&](ga::train::RankOp op) { ranks.push_back(op); });
    for (ga::train::RankOp rank : ranks) {
      OpBuilder b(rank);
      func::FuncOp fn = ga::train::getOrInsertRuntimeFunction(
          b, rank, ga::train::kRankFunction,
          b.getFunctionType({}, {b.getI64Type()}));
      if (!fn)
        return failure();
      Value call =
          func::CallOp::create(b, rank.getLoc(), fn, ValueRange{}).getResult(0);
      rank.replaceAllUsesWith(
          arith::IndexCastOp::create(b, rank.getLoc(), b.getIndexType(), call)
              .getResult());
      rank.erase();
    }
    return success();
  }
};
} // namespace
