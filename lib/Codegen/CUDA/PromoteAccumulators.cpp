//===- PromoteAccumulators.cpp - A loop's accumulator in a register -------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-promote-accumulators: a sequential loop of a kernel that loads and
// stores one element of a buffer at the same place in every iteration (a
// reduction's accumulator: a row's maximum, a lane's partial sum, the
// loss's total) carries that element as an iter_arg instead: one load
// before the loop, one store after it. The kernels that linalg's lowering
// makes otherwise read and write the accumulator in memory once per element
// summed, a chain of dependent memory operations that no other thread
// shares and that LLVM cannot remove (the kernel's buffers are pointers it
// cannot tell apart). Here, before outlining, the buffers are the host's
// allocations, which ga-opt can tell apart (mayAlias).
//
//===----------------------------------------------------------------------===//

#include "LoopFusion.h"
#include "Utils.h"
#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace ga {
#define GEN_PASS_DEF_GAGPUPROMOTEACCUMULATORSPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

/// Whether `a` and `b` are the same index: the same value, or the results
/// of the same operation without memory effects or regions (an
/// affine.apply of the same map, a constant) on the same indices.
bool sameIndex(Value a, Value b, unsigned depth = 0) {
  if (a == b)
    return true;
  auto ra = dyn_cast<OpResult>(a), rb = dyn_cast<OpResult>(b);
  if (!ra || !rb || depth > 8 || ra.getResultNumber() != rb.getResultNumber())
    return false;
  Operation *x = ra.getOwner(), *y = rb.getOwner();
  if (x->getName() != y->getName() ||
      x->getAttrDictionary() != y->getAttrDictionary() ||
      x->getNumOperands() != y->getNumOperands() || x->getNumRegions() ||
      y->getNumRegions() || !isMemoryEffectFree(x) || !isMemoryEffectFree(y))
    return false;
  for (auto [p, q] : llvm::zip(x->getOperands(), y->getOperands()))
    if (!sameIndex(p, q, depth + 1))
      return false;
  return true;
}

bool sameIndices(ValueRange a, ValueRange b) {
  return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](auto pair) {
           return sameIndex(std::get<0>(pair), std::get<1>(pair));
         });
}

/// The buffer and indices of `op`, a scalar load or store, or nothing.
std::optional<std::pair<Value, ValueRange>> scalarAccess(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return std::make_pair(load.getMemRef(), load.getIndices());
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return std::make_pair(store.getMemRef(), store.getIndices());
  return std::nullopt;
}

/// The loads and stores, in the loop body's own block, of one element that
/// the loop does not move: the same buffer (defined outside the loop) at
/// the same indices (defined outside the loop), at least one store.
struct Accumulator {
  Value memref;
  ValueRange indices;
  SmallVector<Operation *> accesses;
};

/// Whether nothing in `loop` but `acc`'s accesses may touch its element:
/// every other operation's memory effects are on buffers that do not share
/// memory with it, and none is unknown (a barrier, a call) or nested
/// deeper than the loop's own block for the same buffer.
bool onlyAccessesOf(scf::ForOp loop, const Accumulator &acc) {
  Value root = ga::cuda::viewSource(acc.memref);
  llvm::SmallPtrSet<Operation *, 8> own(acc.accesses.begin(),
                                        acc.accesses.end());
  for (Operation &top : loop.getBody()->without_terminator()) {
    if (own.contains(&top))
      continue;
    std::optional<SmallVector<MemoryEffects::EffectInstance>> effects =
        getEffectsRecursively(&top);
    if (!effects)
      return false;
    for (const MemoryEffects::EffectInstance &effect : *effects) {
      if (isa<MemoryEffects::Allocate, MemoryEffects::Free>(
              effect.getEffect()) &&
          effect.getValue() && effect.getValue() != acc.memref)
        continue;
      Value touched = effect.getValue();
      if (!touched || !isa<BaseMemRefType>(touched.getType()) ||
          ga::cuda::fusion::mayAlias(ga::cuda::viewSource(touched), root))
        return false;
    }
  }
  return true;
}

/// The accumulators of `loop` that may live in registers.
SmallVector<Accumulator> findAccumulators(scf::ForOp loop) {
  SmallVector<Accumulator> candidates;
  for (Operation &op : loop.getBody()->without_terminator()) {
    std::optional<std::pair<Value, ValueRange>> access = scalarAccess(&op);
    if (!access || !loop.isDefinedOutsideOfLoop(access->first))
      continue;
    auto [memref, indices] = *access;
    if (!llvm::all_of(indices,
                      [&](Value i) { return loop.isDefinedOutsideOfLoop(i); }))
      continue;
    auto found = llvm::find_if(candidates, [&](const Accumulator &c) {
      return c.memref == memref && sameIndices(c.indices, indices);
    });
    if (found == candidates.end())
      candidates.push_back({memref, indices, {&op}});
    else
      found->accesses.push_back(&op);
  }
  SmallVector<Accumulator> found;
  for (Accumulator &acc : candidates)
    if (llvm::any_of(acc.accesses,
                     [](Operation *op) { return isa<memref::StoreOp>(op); }) &&
        onlyAccessesOf(loop, acc))
      found.push_back(acc);
  return found;
}

/// Each accumulator of `accs` carried by `loop` as an iter_arg: loaded
/// before the loop, each load in the body replaced by the last value stored
/// before it (the iteration's first value before any store), the last one
/// yielded, and stored after the loop. Where the loop may run no
/// iteration, the loads, the loop and the stores run only when it runs one
/// (the loads' indices may be valid only then, and a store the loop did
/// not make must not be made).
void promote(scf::ForOp loop, ArrayRef<Accumulator> accs) {
  IRRewriter rewriter(loop.getContext());
  std::optional<APInt> trips = loop.getStaticTripCount();
  if (!trips || trips->isZero()) {
    rewriter.setInsertionPoint(loop);
    Value runs =
        arith::CmpIOp::create(rewriter, loop.getLoc(),
                              loop.getUnsignedCmp() ? arith::CmpIPredicate::ult
                                                    : arith::CmpIPredicate::slt,
                              loop.getLowerBound(), loop.getUpperBound());
    auto guard =
        scf::IfOp::create(rewriter, loop.getLoc(), loop.getResultTypes(), runs,
                          /*withElseRegion=*/loop.getNumResults());
    // Without iterations the loop's results are its inits.
    if (loop.getNumResults()) {
      rewriter.setInsertionPointToEnd(guard.elseBlock());
      scf::YieldOp::create(rewriter, loop.getLoc(), loop.getInitArgs());
      rewriter.setInsertionPointToEnd(guard.thenBlock());
      scf::YieldOp::create(rewriter, loop.getLoc(), loop.getResults());
      for (auto [from, to] : llvm::zip(loop.getResults(), guard.getResults()))
        rewriter.replaceAllUsesExcept(from, to,
                                      guard.thenBlock()->getTerminator());
    }
    loop->moveBefore(guard.thenBlock()->getTerminator());
  }
  rewriter.setInsertionPoint(loop);
  SmallVector<Value> inits;
  for (const Accumulator &acc : accs)
    inits.push_back(memref::LoadOp::create(
        rewriter, acc.accesses.front()->getLoc(), acc.memref, acc.indices));
  auto yielded = [&](OpBuilder &, Location,
                     ArrayRef<BlockArgument> carried) -> SmallVector<Value> {
    SmallVector<Value> last;
    for (auto [acc, arg] : llvm::zip(accs, carried)) {
      Value current = arg;
      for (Operation *op : acc.accesses) {
        if (auto load = dyn_cast<memref::LoadOp>(op))
          rewriter.replaceAllUsesWith(load.getResult(), current);
        else
          current = cast<memref::StoreOp>(op).getValueToStore();
      }
      last.push_back(current);
    }
    return last;
  };
  FailureOr<LoopLikeOpInterface> replaced =
      cast<LoopLikeOpInterface>(loop.getOperation())
          .replaceWithAdditionalYields(rewriter, inits,
                                       /*replaceInitOperandUsesInLoop=*/false,
                                       yielded);
  assert(succeeded(replaced) && "scf.for takes iter_args");
  Operation *newLoop = replaced->getOperation();
  rewriter.setInsertionPointAfter(newLoop);
  ValueRange results =
      newLoop->getResults().take_back(static_cast<unsigned>(accs.size()));
  for (auto [acc, result] : llvm::zip(accs, results)) {
    memref::StoreOp::create(rewriter, acc.accesses.back()->getLoc(), result,
                            acc.memref, acc.indices);
    for (Operation *op : acc.accesses)
      rewriter.eraseOp(op);
  }
}

struct GaGpuPromoteAccumulatorsPass
    : ga::impl::GaGpuPromoteAccumulatorsPassBase<GaGpuPromoteAccumulatorsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Loads nothing reads go first (linalg's lowering loads an output's
    // element that the body does not read: a bfloat16 copy's destination).
    SmallVector<memref::LoadOp> unused;
    getOperation()->walk([&](memref::LoadOp load) {
      if (load.use_empty() && load->getParentOfType<gpu::LaunchOp>())
        unused.push_back(load);
    });
    for (memref::LoadOp load : unused)
      load.erase();
    SmallVector<scf::ForOp> loops;
    // Inner loops first: an inner loop's accumulator, once promoted, is a
    // load before it and a store after it in the outer loop's body.
    getOperation()->walk([&](scf::ForOp loop) {
      if (loop->getParentOfType<gpu::LaunchOp>())
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops) {
      // The indices' arithmetic first, so that indices computed in the
      // body from values outside it are values outside it.
      moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
      SmallVector<Accumulator> accs = findAccumulators(loop);
      if (!accs.empty())
        promote(loop, accs);
    }
  }
};

} // namespace
