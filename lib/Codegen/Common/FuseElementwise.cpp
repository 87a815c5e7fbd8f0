//===- FuseElementwise.cpp - Elementwise producer-consumer fusion ---------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Upstream's elementwise fusion, restricted to what keeps results bitwise
// and costs nothing: a single-use elementwise producer into an elementwise
// consumer (or, with into-reductions, a reducing one), which reads it
// through a permutation of its loops: each iteration of the consumer reads
// one producer element, and no two read the same. Fusion never makes a
// producer run more than once per element it writes:
//   - a consumer that reduces over a loop the producer's map does not read
//     (a product's k) would recompute the producer at every step of that
//     reduction: the permutation excludes it;
//   - a producer with several users would be computed several times:
//     only with recompute-cheap, for a few arithmetic operations, once
//     every user can take it in (then its tensor is neither written nor
//     read back, which costs more than the operations on a GPU);
//   - a consumer that reads the producer through a broadcast (a map that
//     drops or repeats loops) would compute each producer element once per
//     broadcast element. For a producer whose body reads its init (an
//     accumulation `acc + g`), upstream's fusion keeps that init as an output
//     of the fused op, indexed by the producer's map: under a broadcast the
//     accumulation then runs once per broadcast element, a wrong value, not
//     just a slower one.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"

namespace ga {
#define GEN_PASS_DEF_GAFUSEELEMENTWISEPASS
#include "ga/Codegen/Common/Passes.h.inc"
} // namespace ga

using namespace mlir;

static bool allParallel(linalg::LinalgOp op) {
  return op.getNumLoops() == op.getNumParallelLoops();
}

/// Whether `operand`'s owner may take in the producer of the value it reads:
/// a linalg.generic, parallel (or reducing, with `intoReductions`), reading
/// it through a permutation of its loops: one consumer iteration per
/// producer element, and the other way round. A consumer that also reads
/// its init (an accumulation `acc + g` into a loop's running value) is left
/// alone: fusing more inputs into it can keep bufferization from computing
/// it in place in the loop's buffer.
static bool fusibleUse(OpOperand *operand, bool intoReductions) {
  auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
  if (!consumer || !consumer.isDpsInput(operand) ||
      (!intoReductions && !allParallel(consumer)) ||
      !consumer.getMatchingIndexingMap(operand).isPermutation())
    return false;
  for (Value init : consumer.getDpsInits())
    if (llvm::is_contained(consumer.getDpsInputs(), init))
      return false;
  return linalg::areElementwiseOpsFusable(operand);
}

/// Whether `producer` costs less to compute again in each consumer than to
/// write and read back: at most three arithmetic operations (no math
/// function, no division), not reading its init, not adding to a product.
static bool cheapToRecompute(linalg::GenericOp producer) {
  Block *body = producer.getBlock();
  if (body->getOperations().size() > 4)
    return false;
  for (Operation &op : body->without_terminator())
    if (op.getDialect()->getNamespace() != "arith" ||
        isa<arith::DivFOp, arith::DivSIOp, arith::DivUIOp, arith::RemFOp,
            arith::RemSIOp, arith::RemUIOp>(op))
      return false;
  for (OpOperand &init : producer.getDpsInitsMutable())
    if (producer.payloadUsesValueFromOperand(&init))
      return false;
  // A bias added to a product stays one operation: the CUDA target puts it
  // into the GEMM's epilogue (ga-gpu-gemm-to-blas bias-epilogue).
  for (Value input : producer.getDpsInputs())
    if (auto op = input.getDefiningOp<linalg::LinalgOp>())
      if (linalg::isaContractionOpInterface(op))
        return false;
  return true;
}

/// Whether the producer of `operand` may be fused into its owner: an
/// elementwise linalg.generic with one result, read only there, or, with
/// `recomputeCheap`, a cheap one whose every user can take it in (each
/// computes it again; once all have, the producer and its tensor go).
static bool shouldFuse(OpOperand *operand, bool intoReductions,
                       bool recomputeCheap) {
  auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
  if (!producer || producer->getNumResults() != 1 || !allParallel(producer) ||
      !fusibleUse(operand, intoReductions))
    return false;
  if (operand->get().hasOneUse())
    return true;
  if (!recomputeCheap || !cheapToRecompute(producer))
    return false;
  return llvm::all_of(operand->get().getUses(), [&](OpOperand &use) {
    return fusibleUse(&use, intoReductions);
  });
}

/// Fuses one producer into its consumer somewhere in `root`; false when
/// nothing is left to fuse.
static bool fuseOne(Operation *root, RewriterBase &rewriter,
                    bool intoReductions, bool recomputeCheap) {
  OpOperand *found = nullptr;
  root->walk([&](linalg::GenericOp consumer) {
    for (OpOperand *operand : consumer.getDpsInputOperands())
      if (shouldFuse(operand, intoReductions, recomputeCheap)) {
        found = operand;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  if (!found)
    return false;
  Operation *consumer = found->getOwner();
  Operation *producer = found->get().getDefiningOp();
  rewriter.setInsertionPoint(consumer);
  // A producer with other users: this consumer fuses a copy of its own.
  Operation *shared = nullptr;
  if (!found->get().hasOneUse()) {
    shared = producer;
    producer = rewriter.clone(*producer);
    found->set(producer->getResult(0));
  }
  FailureOr<linalg::ElementwiseOpFusionResult> fused =
      linalg::fuseElementwiseOps(rewriter, found);
  if (failed(fused))
    return false;
  for (auto [original, replacement] : fused->replacements)
    if (original.getDefiningOp() == consumer)
      rewriter.replaceAllUsesWith(original, replacement);
  rewriter.eraseOp(consumer);
  if (producer->use_empty())
    rewriter.eraseOp(producer);
  if (shared && shared->use_empty())
    rewriter.eraseOp(shared);
  return true;
}

/// Drops the results of an elementwise `op` that nothing reads, where it
/// has others: an init that the body reads (a gradient computed in place
/// over the logits, whose bfloat16 copy was fused in and is the only
/// result read) becomes an input, so the element is read as before and not
/// written back. Returns whether `op` was replaced.
static bool dropUnusedResults(linalg::GenericOp op, RewriterBase &rewriter) {
  if (!op.hasPureTensorSemantics() || !allParallel(op) ||
      op->getNumResults() < 2 ||
      llvm::none_of(op->getResults(),
                    [](OpResult r) { return r.use_empty(); }) ||
      llvm::all_of(op->getResults(), [](OpResult r) { return r.use_empty(); }))
    return false;
  SmallVector<Value> inputs(op.getDpsInputs()), inits;
  SmallVector<AffineMap> inputMaps, initMaps;
  for (OpOperand *input : op.getDpsInputOperands())
    inputMaps.push_back(op.getMatchingIndexingMap(input));
  SmallVector<Type> types;
  Block *body = op.getBlock();
  // The new op's block arguments for the old ones, by position.
  SmallVector<std::pair<unsigned, bool>> place; // (position, among inits)
  for (unsigned i = 0; i < inputs.size(); ++i)
    place.push_back({i, false});
  for (OpOperand &init : op.getDpsInitsMutable()) {
    OpResult result = op.getTiedOpResult(&init);
    if (!result.use_empty()) {
      place.push_back({static_cast<unsigned>(inits.size()), true});
      inits.push_back(init.get());
      initMaps.push_back(op.getMatchingIndexingMap(&init));
      types.push_back(result.getType());
      continue;
    }
    place.push_back({static_cast<unsigned>(inputs.size()), false});
    inputs.push_back(init.get());
    inputMaps.push_back(op.getMatchingIndexingMap(&init));
  }
  SmallVector<AffineMap> maps(inputMaps);
  maps.append(initMaps);
  rewriter.setInsertionPoint(op);
  auto generic = linalg::GenericOp::create(
      rewriter, op.getLoc(), types, inputs, inits, maps,
      op.getIteratorTypesArray(),
      [&](OpBuilder &b, Location loc, ValueRange args) {
        IRMapping mapping;
        for (auto [old, at] : llvm::zip(body->getArguments(), place))
          mapping.map(old,
                      args[at.second ? inputs.size() + at.first : at.first]);
        for (Operation &inner : body->without_terminator())
          b.clone(inner, mapping);
        SmallVector<Value> yielded;
        for (OpOperand &value : body->getTerminator()->getOpOperands())
          if (!op->getResult(value.getOperandNumber()).use_empty())
            yielded.push_back(mapping.lookupOrDefault(value.get()));
        linalg::YieldOp::create(b, loc, yielded);
      });
  unsigned next = 0;
  for (OpResult result : op->getResults())
    if (!result.use_empty())
      rewriter.replaceAllUsesWith(result, generic->getResult(next++));
  rewriter.eraseOp(op);
  return true;
}

namespace {
// Upstream's fusion patterns come with a rewrite of inits that the body does
// not read into tensor.empty, which would keep an accumulation from
// bufferizing in place: the fusion is applied directly instead.
struct GaFuseElementwisePass
    : ga::impl::GaFuseElementwisePassBase<GaFuseElementwisePass> {
  using Base::Base;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    while (fuseOne(getOperation(), rewriter, intoReductions, recomputeCheap)) {
    }
    SmallVector<linalg::GenericOp> generics;
    getOperation()->walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics)
      dropUnusedResults(op, rewriter);
  }
};
} // namespace
