//===- TrainToSCF.cpp - train.accumulate to scf.for ----------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// A train.accumulate with explicit accumulators (what train-differentiate
// makes of it) becomes an scf.for over the micro-batches whose iteration
// arguments are its accumulators, followed by its finalize region. The body
// already computes each accumulator's next value in place (a gradient's
// reduction takes the accumulator as its init, a loss sum starts from it):
// the conversion only slices the batch and moves the code.
//
//===----------------------------------------------------------------------===//

#include "ga/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINLOWERACCUMULATEPASS
#include "ga/Conversion/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::train;

/// The first operation of `body` that a later pass of the pipeline would
/// still have to lower or inline: lowering the loop around it would keep its
/// code from being lowered in the micro-batch's order (convert-train-to-linalg
/// and train-inline-checkpoints must run first).
static Operation *findUnloweredTrainOp(Region &region) {
  Operation *found = nullptr;
  region.walk([&](Operation *nested) {
    if (isa<YieldOp>(nested) || !isa<TrainDialect>(nested->getDialect()))
      return WalkResult::advance();
    found = nested;
    return WalkResult::interrupt();
  });
  return found;
}

/// Rows [iv * B/k, (iv + 1) * B/k) of `full`, for the micro-batch argument
/// `arg`.
static Value microBatchOf(OpBuilder &b, Location loc, Value full,
                          BlockArgument arg, Value iv) {
  auto micro = cast<RankedTensorType>(arg.getType());
  Value rows = arith::ConstantIndexOp::create(b, loc, micro.getDimSize(0));
  Value offset = arith::MulIOp::create(b, loc, iv, rows);
  SmallVector<OpFoldResult> offsets(micro.getRank(), b.getIndexAttr(0));
  offsets[0] = offset;
  SmallVector<OpFoldResult> sizes, strides(micro.getRank(), b.getIndexAttr(1));
  for (int64_t d : micro.getShape())
    sizes.push_back(b.getIndexAttr(d));
  return tensor::ExtractSliceOp::create(b, loc, micro, full, offsets, sizes,
                                        strides)
      .getResult();
}

static LogicalResult lowerAccumulate(AccumulateOp op) {
  if (!op.isExplicit())
    return op.emitOpError()
           << "cannot be lowered before train-differentiate: its body yields "
              "contributions, not the next values of explicit accumulators";
  for (Region *region : {&op.getBody(), &op.getFinalize()})
    if (Operation *unlowered = findUnloweredTrainOp(*region)) {
      bool checkpoint = isa<CheckpointOp>(unlowered);
      InFlightDiagnostic diag =
          op.emitOpError()
          << "cannot be lowered while its "
          << (region == &op.getBody() ? "body" : "finalize region")
          << " holds '" << unlowered->getName() << "': run "
          << (checkpoint ? "train-inline-checkpoints"
                         : "convert-train-to-linalg")
          << " first, so that every gradient and metric is accumulated in "
             "place in the order of the full batch";
      diag.attachNote(unlowered->getLoc()) << "the operation still to lower";
      return diag;
    }

  OpBuilder b(op);
  Location loc = op.getLoc();
  Value lb = arith::ConstantIndexOp::create(b, loc, 0);
  Value ub = arith::ConstantIndexOp::create(
      b, loc, static_cast<int64_t>(op.getMicrobatches()));
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, lb, ub, one, op.getAccumulators());

  // The body, once per micro-batch: the accumulators are the loop's.
  OpBuilder inner = OpBuilder::atBlockBegin(loop.getBody());
  IRMapping mapping;
  mapping.map(op.getParamArgs(), op.getParams());
  mapping.map(op.getGlobalArgs(), op.getGlobals());
  mapping.map(op.getAccumulatorArgs(), loop.getRegionIterArgs());
  for (auto [arg, full] : llvm::zip(op.getBatchArgs(), op.getBatch()))
    mapping.map(arg,
                microBatchOf(inner, loc, full, arg, loop.getInductionVar()));
  Block &body = op.getBody().front();
  for (Operation &nested : body.without_terminator())
    inner.clone(nested, mapping);
  SmallVector<Value> next;
  for (Value v : op.getYield().getValues())
    next.push_back(mapping.lookupOrDefault(v));
  scf::YieldOp::create(inner, loc, next);

  // Then the finalize region, once, on the final accumulators.
  b.setInsertionPointAfter(loop);
  Block &finalize = op.getFinalize().front();
  IRMapping after;
  unsigned numAccumulators = op.getAccumulators().size();
  unsigned numParams = op.getParams().size();
  after.map(finalize.getArguments().take_front(numAccumulators),
            loop.getResults());
  after.map(finalize.getArguments().slice(numAccumulators, numParams),
            op.getParams());
  after.map(finalize.getArguments().drop_front(numAccumulators + numParams),
            op.getGlobals());
  for (Operation &nested : finalize.without_terminator())
    b.clone(nested, after);
  SmallVector<Value> results;
  for (Value v : op.getFinalizeYield().getValues())
    results.push_back(after.lookupOrDefault(v));
  op->replaceAllUsesWith(results);
  op.erase();
  return success();
}

namespace {
struct TrainLowerAccumulatePass
    : ga::impl::TrainLowerAccumulatePassBase<TrainLowerAccumulatePass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<AccumulateOp> ops;
    getOperation()->walk([&](AccumulateOp op) { ops.push_back(op); });
    for (AccumulateOp op : ops)
      if (failed(lowerAccumulate(op)))
        return signalPassFailure();
  }
};
} // namespace
