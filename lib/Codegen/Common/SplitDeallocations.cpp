//===- SplitDeallocations.cpp - Free unaliased buffers on their own -------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Ownership-based deallocation ends a step's body with one
// bufferization.dealloc of all its buffers, retaining the returned ones, and
// buffer-deallocation-simplification takes it apart by pairwise alias
// queries: quadratic in the number of buffers, and so in the model's depth.
// Most of those buffers are fresh allocations that nothing returned can
// alias; this pass frees each of them by its own dealloc, in time linear in
// the operation's operands, and leaves the rest to the simplification. The
// buffers that outlined kernels allocate and return count as fresh
// allocations too (the pass reads the callees: it runs on the module).
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/Common/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace ga {
#define GEN_PASS_DEF_GASPLITDEALLOCATIONSPASS
#include "ga/Codegen/Common/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {
/// The operation that allocates the buffer a value views (through
/// view-like operations and the base buffer of a strided-metadata
/// extraction): a memref.alloc, or a call whose callee returns a buffer that
/// it allocates itself (an outlined kernel that computes into a fresh
/// buffer). Null when the value may come from anywhere else.
class Allocations {
public:
  Operation *of(Value value) {
    while (Operation *definer = value.getDefiningOp()) {
      if (isa<memref::AllocOp>(definer))
        return definer;
      if (auto call = dyn_cast<func::CallOp>(definer))
        return returnsFresh(call, cast<OpResult>(value).getResultNumber())
                   ? definer
                   : nullptr;
      if (auto metadata = dyn_cast<memref::ExtractStridedMetadataOp>(definer))
        value = metadata.getSource();
      else if (auto view = dyn_cast<ViewLikeOpInterface>(definer))
        value = view.getViewSource();
      else if (auto cast = dyn_cast<memref::CastOp>(definer))
        value = cast.getSource();
      else
        return nullptr;
    }
    return nullptr;
  }

private:
  /// Whether every return of `call`'s callee returns, as result `index`, a
  /// memref.alloc of the callee (asked once per callee and result).
  bool returnsFresh(func::CallOp call, unsigned index) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee || callee.isExternal())
      return false;
    auto key = std::make_pair(callee.getOperation(), index);
    if (auto it = fresh.find(key); it != fresh.end())
      return it->second;
    fresh[key] = false; // a recursive call asks again: not known fresh
    bool all = true;
    callee.walk([&](func::ReturnOp ret) {
      all &= isa_and_nonnull<memref::AllocOp>(of(ret.getOperand(index)));
    });
    return fresh[key] = all;
  }

  llvm::DenseMap<std::pair<Operation *, unsigned>, bool> fresh;
};
} // namespace

/// Splits out of `dealloc` every memref that it frees unconditionally, that
/// is a memref.alloc of its block aliasing no other of its memrefs, and that
/// no retained value can alias. Returns how many it split out.
static unsigned splitDealloc(bufferization::DeallocOp dealloc,
                             BufferOriginAnalysis &origins,
                             Allocations &allocations) {
  // How many memrefs of the operation each allocation is reached by; a
  // memref whose allocation is unknown might be any of them.
  llvm::DenseMap<Operation *, unsigned> readers;
  bool unknownMemref = false;
  for (Value memref : dealloc.getMemrefs()) {
    if (Operation *alloc = allocations.of(memref))
      ++readers[alloc];
    else
      unknownMemref = true;
  }
  if (unknownMemref)
    return 0;
  // The retained values' allocations; those whose allocation is not known
  // this way are asked of the analysis, memref by memref.
  llvm::DenseSet<Operation *> retainedAllocs;
  SmallVector<Value> unknownRetained;
  for (Value retained : dealloc.getRetained()) {
    if (Operation *alloc = allocations.of(retained))
      retainedAllocs.insert(alloc);
    else
      unknownRetained.push_back(retained);
  }

  SmallVector<Value> kept, keptConditions, split;
  for (auto [memref, condition] :
       llvm::zip(dealloc.getMemrefs(), dealloc.getConditions())) {
    auto alloc = memref.getDefiningOp<memref::AllocOp>();
    bool alone = alloc && alloc->getBlock() == dealloc->getBlock() &&
                 matchPattern(condition, m_One()) &&
                 readers.lookup(alloc) == 1 &&
                 !retainedAllocs.contains(alloc) &&
                 llvm::all_of(unknownRetained, [&](Value retained) {
                   return origins.isSameAllocation(memref, retained) == false;
                 });
    if (alone) {
      split.push_back(memref);
      continue;
    }
    kept.push_back(memref);
    keptConditions.push_back(condition);
  }
  if (split.empty())
    return 0;

  OpBuilder b(dealloc);
  Location loc = dealloc.getLoc();
  Value always = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  for (Value memref : split)
    bufferization::DeallocOp::create(b, loc, ValueRange{memref},
                                     ValueRange{always}, ValueRange{});
  // The ownership results depend only on the memrefs a retained value may
  // alias, all of which are kept.
  auto rest = bufferization::DeallocOp::create(b, loc, kept, keptConditions,
                                               dealloc.getRetained());
  dealloc->replaceAllUsesWith(rest);
  dealloc->erase();
  return split.size();
}

namespace {
struct GaSplitDeallocationsPass
    : ga::impl::GaSplitDeallocationsPassBase<GaSplitDeallocationsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<bufferization::DeallocOp> deallocs;
    getOperation().walk(
        [&](bufferization::DeallocOp op) { deallocs.push_back(op); });
    if (deallocs.empty())
      return markAllAnalysesPreserved();
    // Built once: splitting adds no views and frees nothing earlier.
    BufferOriginAnalysis origins(getOperation());
    Allocations allocations;
    for (bufferization::DeallocOp dealloc : deallocs)
      splitDealloc(dealloc, origins, allocations);
  }
};
} // namespace
