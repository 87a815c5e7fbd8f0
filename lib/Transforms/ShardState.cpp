//===- ShardState.cpp - Optimizer state and gradients sharded by rank -----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// train-shard-state: in a function split over r ranks (train.data_parallel)
// whose step asked for `shard = s` (train.shard, recorded by
// train-split-batch), every rank keeps 1/r of what the stage names.
//
// Each parameter of n elements is laid out flat and padded with zeros to
// r * c elements, c = ceil(n / r); rank i owns [i * c, (i + 1) * c).
//
//   stage 1: train.adamw %p, %g, %m, %v  becomes
//            %ps = shard(%p); %gs = shard(%g)
//            %ps', %m', %v' = train.adamw %ps, %gs, %m, %v   (m, v: [c])
//            %p' = unflatten(train.all_gather %ps')
//   stage 2: also the gradients: shard(train.all_reduce sum %a) becomes
//            train.reduce_scatter sum (flat(%a)); a clip of such gradients
//            takes the global norm from the shards' squared sums, summed
//            across the ranks (train.all_reduce sum of one scalar). Once
//            the micro-batch loop is lowered, train-shard-accumulators
//            reduce-scatters each micro-batch's gradient as it is made and
//            accumulates the shards.
//   stage 3: also the parameters: the function takes and returns the
//            rank's shard %ps (tensor<c x T>); the update reads it and its
//            result is returned as it is; every other reader reads
//            unflatten(train.all_gather %ps), gathered once at the
//            function's entry here and then, by train-gather-at-use after
//            the step is differentiated and its loops lowered, right before
//            each reader (so that a few layers' whole parameters exist at a
//            time).
//
// The moments (and at stage 3 the parameters) are arguments and results of
// the function: their types become [c]. Every element of the update is computed
// from the same inputs as without the shards, so the parameters agree with the
// replicated step's (stage 1 bitwise; stage 2 up to the order of the ranks'
// sums).
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"
#include "ga/Utils/GradientNorms.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Verifier.h"
#include "train/TrainDialect.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINSHARDSTATEPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga;
using namespace ga::train;

namespace {

/// The flat layout of one parameter across r ranks.
struct Layout {
  RankedTensorType shape; ///< The parameter's own type.
  int64_t n = 0;          ///< Its elements.
  int64_t c = 0;          ///< Elements per rank: ceil(n / r).
  int64_t padded = 0;     ///< r * c.
};

class Sharder {
public:
  Sharder(func::FuncOp fn, int64_t r, int64_t stage)
      : fn(fn), r(r), stage(stage) {}
  LogicalResult run();

private:
  LogicalResult checkUpdate(AdamWOp op);
  Value rankOffset(OpBuilder &b, Location loc, const Layout &layout);
  Value flatPadded(OpBuilder &b, Location loc, Value full,
                   const Layout &layout);
  Value shardOf(OpBuilder &b, Location loc, Value full, const Layout &layout);
  Value reduceScatterOf(AllReduceOp reduce, const Layout &layout);
  Value unflatten(OpBuilder &b, Location loc, Value gathered,
                  const Layout &layout);
  Value gatherWhole(OpBuilder &b, Location loc, Value shard,
                    const Layout &layout);
  FailureOr<DenseMap<Value, Value>>
  shardGradients(ArrayRef<AdamWOp> updates,
                 const DenseMap<Operation *, Layout> &layouts);
  LogicalResult shardClip(ClipByGlobalNormOp clip,
                          const DenseMap<Value, Layout> &gradLayouts,
                          DenseMap<Value, Value> &shards);
  void retypeState(ArrayRef<AdamWOp> updates,
                   const DenseMap<Operation *, Layout> &layouts);
  bool isSharded(AdamWOp op);

  func::FuncOp fn;
  int64_t r, stage;
  Value rank;
  /// The clips and all-reduces that stage 2's shards replace, in the order
  /// to erase them.
  SmallVector<Operation *> replaced;
};

Layout layoutOf(RankedTensorType type, int64_t r) {
  Layout layout;
  layout.shape = type;
  layout.n = type.getNumElements();
  layout.c = std::max<int64_t>(1, llvm::divideCeil(layout.n, r));
  layout.padded = layout.c * r;
  return layout;
}

RankedTensorType vectorType(int64_t size, Type element) {
  return RankedTensorType::get({size}, element);
}

/// `value` as the block argument of `fn`'s entry block it is, or null.
BlockArgument functionArgument(func::FuncOp fn, Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &fn.getBody().front())
    return {};
  return arg;
}

/// The results of the function that `value` is returned as; fails when it
/// has another user.
FailureOr<SmallVector<unsigned>> returnedOnly(Value value) {
  SmallVector<unsigned> positions;
  for (OpOperand &use : value.getUses()) {
    if (!isa<func::ReturnOp>(use.getOwner()))
      return failure();
    positions.push_back(use.getOperandNumber());
  }
  return positions;
}

LogicalResult Sharder::checkUpdate(AdamWOp op) {
  if (!functionArgument(fn, op.getParam()))
    return op.emitOpError()
           << "train-shard-state: shard = " << stage << " keeps 1/" << r
           << " of the state of parameters that are arguments of @"
           << fn.getSymName()
           << "; this update's parameter is computed in the function";
  for (auto [name, moment, next] :
       {std::tuple<StringRef, Value, Value>{"first moment", op.getM(),
                                            op.getNewM()},
        {"second moment", op.getV(), op.getNewV()}}) {
    BlockArgument arg = functionArgument(fn, moment);
    if (!arg || !arg.hasOneUse())
      return op.emitOpError()
             << "train-shard-state: the " << name << " must be an argument of @"
             << fn.getSymName()
             << " that only this update reads (each rank holds 1/" << r
             << " of it)";
    if (failed(returnedOnly(next)))
      return op.emitOpError()
             << "train-shard-state: the new " << name << " must only be "
             << "returned by @" << fn.getSymName() << " (each rank holds 1/"
             << r << " of it)";
  }
  if (!cast<RankedTensorType>(op.getParam().getType()).hasStaticShape())
    return op.emitOpError()
           << "train-shard-state: needs a parameter of static shape";
  if (stage >= 3) {
    if (failed(returnedOnly(op.getNewParam())))
      return op.emitOpError()
             << "train-shard-state: shard = 3 returns the rank's shard of the "
                "updated parameter, so the new parameter must only be "
                "returned by @"
             << fn.getSymName();
    for (Operation *user : op.getParam().getUsers())
      if (auto other = dyn_cast<AdamWOp>(user); other && other != op)
        return op.emitOpError()
               << "train-shard-state: shard = 3 holds one shard per "
                  "parameter; this parameter has another update";
  }
  return success();
}

Value Sharder::rankOffset(OpBuilder &b, Location loc, const Layout &layout) {
  return arith::MulIOp::create(
      b, loc, rank, arith::ConstantIndexOp::create(b, loc, layout.c));
}

/// `full` (of the parameter's shape) as a vector of r * c elements, zeros
/// after its n.
Value Sharder::flatPadded(OpBuilder &b, Location loc, Value full,
                          const Layout &layout) {
  Type element = cast<RankedTensorType>(full.getType()).getElementType();
  Value flat = full;
  int64_t rankOf = layout.shape.getRank();
  auto flatType = vectorType(layout.n, element);
  if (rankOf == 0)
    flat = tensor::ExpandShapeOp::create(b, loc, flatType, full,
                                         ArrayRef<ReassociationIndices>{});
  else if (rankOf > 1)
    flat = tensor::CollapseShapeOp::create(
        b, loc, flatType, full,
        ArrayRef<ReassociationIndices>{
            llvm::to_vector(llvm::seq<int64_t>(0, rankOf))});
  if (layout.padded == layout.n)
    return flat;
  Value zeros = zerosLike(b, loc, vectorType(layout.padded, element));
  return insertAlong(b, loc, flat, zeros, 0, b.getIndexAttr(0));
}

Value Sharder::shardOf(OpBuilder &b, Location loc, Value full,
                       const Layout &layout) {
  Value flat = flatPadded(b, loc, full, layout);
  Value offset = rankOffset(b, loc, layout);
  return sliceAlong(b, loc, flat, 0, offset, layout.c);
}

/// The r * c gathered elements as the parameter's shape.
Value Sharder::unflatten(OpBuilder &b, Location loc, Value gathered,
                         const Layout &layout) {
  Value flat = gathered;
  if (layout.padded != layout.n)
    flat = sliceAlong(b, loc, gathered, 0, b.getIndexAttr(0), layout.n);
  int64_t rankOf = layout.shape.getRank();
  if (rankOf == 1)
    return flat;
  if (rankOf == 0)
    return tensor::CollapseShapeOp::create(b, loc, layout.shape, flat,
                                           ArrayRef<ReassociationIndices>{});
  return tensor::ExpandShapeOp::create(
      b, loc, layout.shape, flat,
      ArrayRef<ReassociationIndices>{
          llvm::to_vector(llvm::seq<int64_t>(0, rankOf))});
}

/// The parameter of `layout` whole on every rank, from the ranks' shards.
Value Sharder::gatherWhole(OpBuilder &b, Location loc, Value shard,
                           const Layout &layout) {
  Value gathered = AllGatherOp::create(
      b, loc, vectorType(layout.padded, layout.shape.getElementType()), shard);
  return unflatten(b, loc, gathered, layout);
}

/// The gradient a sharded update reads, where stage 2 reduce-scatters it:
/// `train.all_reduce sum` of an accumulated gradient that nothing else
/// reads, directly or through a clip.
AllReduceOp summedGradient(Value grad) {
  auto reduce = grad.getDefiningOp<AllReduceOp>();
  if (!reduce || reduce.getKind() != ReduceKind::Sum)
    return {};
  return reduce;
}

/// The rank's shard of the gradient that `reduce` sums across the ranks:
/// a reduce-scatter of its flat, padded input, in its place (`reduce` is
/// erased once nothing reads it).
Value Sharder::reduceScatterOf(AllReduceOp reduce, const Layout &layout) {
  OpBuilder b(reduce);
  Location loc = reduce.getLoc();
  replaced.push_back(reduce);
  return ReduceScatterOp::create(
      b, loc, vectorType(layout.c, layout.shape.getElementType()),
      flatPadded(b, loc, reduce.getInput(), layout), ReduceKind::Sum);
}

/// Stage 2: the rank's shard of every gradient that an update in `updates`
/// reads, keyed by the value the update reads, from a reduce-scatter of
/// the accumulated sum (a clip's outputs from its inputs' shards).
FailureOr<DenseMap<Value, Value>>
Sharder::shardGradients(ArrayRef<AdamWOp> updates,
                        const DenseMap<Operation *, Layout> &layouts) {
  DenseMap<Value, Value> shards;
  DenseMap<Value, Layout> gradLayouts;
  SetVector<ClipByGlobalNormOp> clips;
  for (AdamWOp op : updates) {
    Value grad = op.getGrad();
    gradLayouts[grad] = layouts.lookup(op);
    if (auto clip = grad.getDefiningOp<ClipByGlobalNormOp>()) {
      clips.insert(clip);
      continue;
    }
    AllReduceOp reduce = summedGradient(grad);
    if (!reduce || !grad.hasOneUse())
      return op.emitOpError()
             << "train-shard-state: shard = 2 reduce-scatters the gradients "
                "that the updates read; this one is not a train.all_reduce "
                "sum that only this update reads";
    shards[grad] = reduceScatterOf(reduce, gradLayouts[grad]);
  }
  for (ClipByGlobalNormOp clip : clips) {
    replaced.insert(replaced.begin(), clip);
    if (failed(shardClip(clip, gradLayouts, shards)))
      return failure();
  }
  return shards;
}

/// A clip of gradients that are each reduce-scattered: the global norm is
/// sqrt of the sum over the ranks of the shards' squared sums (the padding
/// adds zeros), and each shard is scaled as the clip scales its gradient.
LogicalResult Sharder::shardClip(ClipByGlobalNormOp clip,
                                 const DenseMap<Value, Layout> &gradLayouts,
                                 DenseMap<Value, Value> &shards) {
  OpBuilder b(clip);
  Location loc = clip.getLoc();
  SmallVector<Value> parts;
  for (auto [input, clipped] : llvm::zip(clip.getInputs(), clip.getClipped())) {
    AllReduceOp reduce = summedGradient(input);
    if (!reduce || !input.hasOneUse() || !gradLayouts.count(clipped) ||
        !clipped.hasOneUse())
      return clip.emitOpError()
             << "train-shard-state: shard = 2 clips the shards of the "
                "gradients, so every input must be a train.all_reduce sum "
                "that only the clip reads, and every output read by one "
                "sharded update only";
    parts.push_back(reduceScatterOf(reduce, gradLayouts.lookup(clipped)));
  }
  // The squares are summed in float64, as the clip's lowering sums them:
  // each rank its shards', then across the ranks.
  Type element = clip.getNorm().getType().getElementType();
  Value norm = wideNorm(b, loc, parts, element, [&](Value squares) -> Value {
    return AllReduceOp::create(b, loc, squares.getType(), squares,
                               ReduceKind::Sum);
  });
  Value scale =
      clipScale(b, loc, norm, element, clip.getMaxNorm().convertToDouble());
  for (auto [part, clipped] : llvm::zip(parts, clip.getClipped()))
    shards[clipped] = scaleBy(b, loc, part, scale, element);
  clip.getNorm().replaceAllUsesWith(norm);
  return success();
}

/// The moments' (and at stage 3 the parameters') arguments and results of
/// the function become [c] vectors, in its type and in its recorded tensor
/// signature (train.signature of train-record-signatures, which ga-run,
/// ga-train and the step libraries call it with).
void Sharder::retypeState(ArrayRef<AdamWOp> updates,
                          const DenseMap<Operation *, Layout> &layouts) {
  SmallVector<Type> inputs(fn.getArgumentTypes());
  SmallVector<Type> results(fn.getResultTypes());
  StringRef name = TrainDialect::SignatureAttrHelper::getNameStr();
  FunctionType recorded;
  if (auto attr = fn->getAttrOfType<TypeAttr>(name))
    recorded = dyn_cast<FunctionType>(attr.getValue());
  SmallVector<Type> recordedInputs, recordedResults;
  if (recorded) {
    llvm::append_range(recordedInputs, recorded.getInputs());
    llvm::append_range(recordedResults, recorded.getResults());
  }
  for (AdamWOp op : updates) {
    const Layout &layout = layouts.lookup(op);
    SmallVector<std::pair<Value, Value>> state = {{op.getM(), op.getNewM()},
                                                  {op.getV(), op.getNewV()}};
    if (stage >= 3)
      state.emplace_back(op.getParam(), op.getNewParam());
    for (auto [value, next] : state) {
      auto type = vectorType(
          layout.c, cast<RankedTensorType>(value.getType()).getElementType());
      auto arg = cast<BlockArgument>(value);
      arg.setType(type);
      inputs[arg.getArgNumber()] = type;
      if (arg.getArgNumber() < recordedInputs.size())
        recordedInputs[arg.getArgNumber()] = type;
      next.setType(type);
      // Checked by checkUpdate: only returned.
      SmallVector<unsigned> positions = *returnedOnly(next);
      for (unsigned position : positions) {
        results[position] = type;
        if (position < recordedResults.size())
          recordedResults[position] = type;
      }
    }
  }
  fn.setFunctionType(FunctionType::get(fn.getContext(), inputs, results));
  if (recorded)
    fn->setAttr(name, TypeAttr::get(FunctionType::get(
                          fn.getContext(), recordedInputs, recordedResults)));
}

/// An update this pass made (on a second run): of a shard of the
/// parameter, sliced (stages 1 and 2) or an argument that is also gathered
/// (stage 3), with moments that are vectors.
bool Sharder::isSharded(AdamWOp op) {
  if (!functionArgument(fn, op.getM()) ||
      cast<RankedTensorType>(op.getM().getType()).getRank() != 1)
    return false;
  if (!functionArgument(fn, op.getParam()))
    return static_cast<bool>(
        op.getParam().getDefiningOp<tensor::ExtractSliceOp>());
  return llvm::any_of(op.getParam().getUsers(),
                      [](Operation *user) { return isa<AllGatherOp>(user); });
}

LogicalResult Sharder::run() {
  // Plain SGD keeps no state to shard and its parameter would stay whole:
  // the stage asked for cannot hold, so it is refused rather than ignored.
  WalkResult sgd = fn.walk([&](SgdOp op) {
    op.emitOpError() << "train-shard-state: shard = " << stage
                     << " shards the state of train.adamw updates; a "
                        "train.sgd update keeps none, and its parameter "
                        "stays whole (use shard = 0 with SGD)";
    return WalkResult::interrupt();
  });
  if (sgd.wasInterrupted())
    return failure();
  SmallVector<AdamWOp> updates;
  fn.walk([&](AdamWOp op) {
    // An update of a shard (this pass's, on a second run) is done.
    if (!isSharded(op))
      updates.push_back(op);
  });
  for (AdamWOp op : updates)
    if (failed(checkUpdate(op)))
      return failure();
  if (updates.empty())
    return success();
  OpBuilder b = OpBuilder::atBlockBegin(&fn.getBody().front());
  rank = RankOp::create(b, fn.getLoc(), b.getIndexType());
  DenseMap<Operation *, Layout> layouts;
  for (AdamWOp op : updates)
    layouts[op] = layoutOf(cast<RankedTensorType>(op.getParam().getType()), r);
  DenseMap<Value, Value> gradShards;
  if (stage >= 2) {
    FailureOr<DenseMap<Value, Value>> shards = shardGradients(updates, layouts);
    if (failed(shards))
      return failure();
    gradShards = std::move(*shards);
  }
  // Stage 3: every reader of a parameter but its update reads it gathered
  // from the shards, at the function's entry (train-gather-at-use moves each
  // gather to its readers).
  DenseMap<Operation *, SmallVector<OpOperand *>> readers;
  if (stage >= 3)
    for (AdamWOp op : updates)
      for (OpOperand &use : op.getParam().getUses())
        if (use.getOwner() != op)
          readers[op].push_back(&use);
  retypeState(updates, layouts);
  OpBuilder entry(fn.getContext());
  entry.setInsertionPointAfter(rank.getDefiningOp());
  for (AdamWOp op : updates) {
    const Layout &layout = layouts[op];
    OpBuilder at(op);
    Location loc = op.getLoc();
    Value param;
    if (stage >= 3) {
      param = op.getParam();
      Value whole = gatherWhole(entry, loc, param, layout);
      for (OpOperand *use : readers[op])
        use->set(whole);
    } else {
      param = shardOf(at, loc, op.getParam(), layout);
    }
    Value grad = gradShards.lookup(op.getGrad());
    if (!grad)
      grad = shardOf(at, loc, op.getGrad(), layout);
    auto update = AdamWOp::create(
        at, loc,
        TypeRange{param.getType(), op.getM().getType(), op.getV().getType()},
        param, grad, op.getM(), op.getV(), op.getLr(), op.getStep(),
        op.getBeta1Attr(), op.getBeta2Attr(), op.getEpsAttr(),
        op.getWeightDecayAttr());
    op.getNewParam().replaceAllUsesWith(
        stage >= 3 ? update.getNewParam()
                   : gatherWhole(at, loc, update.getNewParam(), layout));
    op.getNewM().replaceAllUsesWith(update.getNewM());
    op.getNewV().replaceAllUsesWith(update.getNewV());
    op.erase();
  }
  // What the shards replaced: the clips, then the full gradients' sums
  // (every rank drops the same ones).
  for (Operation *op : replaced)
    if (op->use_empty())
      eraseWithDeadProducers(op);
  return success();
}

struct TrainShardStatePass
    : ga::impl::TrainShardStatePassBase<TrainShardStatePass> {
  using Base::Base;
  void runOnOperation() override {
    // (function, ranks, stage) of every function split over several ranks
    // that asks for a stage.
    SmallVector<std::tuple<func::FuncOp, int64_t, int64_t>> functions;
    getOperation()->walk([&](func::FuncOp fn) {
      auto stage = fn->getAttrOfType<IntegerAttr>(
          TrainDialect::ShardAttrHelper::getNameStr());
      auto ranks = fn->getAttrOfType<IntegerAttr>(
          TrainDialect::DataParallelAttrHelper::getNameStr());
      if (stage && stage.getInt() > 0 && ranks && ranks.getInt() > 1)
        functions.emplace_back(fn, ranks.getInt(), stage.getInt());
    });
    for (auto [fn, r, stage] : functions) {
      if (failed(Sharder(fn, r, stage).run()) || failed(verify(fn)))
        return signalPassFailure();
    }
    // A step still to split asks for what this pass cannot see yet.
    WalkResult early = getOperation()->walk([](StepOp step) {
      if (step.getShard() > 0 && step.getDataParallel() > 1) {
        step.emitError() << "train-shard-state: the step's shard = "
                         << step.getShard()
                         << " needs its ranks split first (run "
                            "train-split-batch before this pass)";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (early.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
