//===- PrefetchGathers.cpp - Stage 3's all-gathers one reader ahead -------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-prefetch-gathers: every `ga_cuda_all_gather_<type>` call (a
// train.all_gather lowered for the device) becomes
// `ga_cuda_all_gather_start_<type>`, which runs the gather on the
// runtime's collective stream and returns a handle, and
// `ga_cuda_all_gather_wait` at the call's place, which orders the gathered
// buffer's reader after it. Where the previous gather of the same block has
// waited, the next one starts right after (with its buffer's allocation and the
// casts it reads), so that it runs while the previous gather's reader computes:
// one gather in flight ahead of the compute, as FSDP2 prefetches the next
// layer.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace ga {
#define GEN_PASS_DEF_GAGPUPREFETCHGATHERSPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::cuda;

namespace {

constexpr StringLiteral kGather = "ga_cuda_all_gather_";

/// The element type suffix of a gather call (`f32`, ...), or empty for
/// another call.
StringRef gatherSuffix(func::CallOp call) {
  StringRef callee = call.getCallee();
  if (!callee.consume_front(kGather) || callee.contains('_'))
    return {};
  return callee;
}

struct GaGpuPrefetchGathersPass
    : ga::impl::GaGpuPrefetchGathersPassBase<GaGpuPrefetchGathersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::CallOp> gathers;
    module.walk([&](func::CallOp call) {
      if (!gatherSuffix(call).empty())
        gathers.push_back(call);
    });
    if (gathers.empty())
      return;
    // Every block's gathers in order: each one split into start and wait,
    // the start hoisted after the previous wait where it may be.
    llvm::MapVector<Block *, SmallVector<func::CallOp>> byBlock;
    for (func::CallOp call : gathers)
      byBlock[call->getBlock()].push_back(call);
    for (auto &[block, calls] : byBlock) {
      llvm::sort(calls, [](func::CallOp a, func::CallOp b) {
        return a->isBeforeInBlock(b);
      });
      Operation *previousWait = nullptr;
      for (func::CallOp call : calls) {
        auto [start, wait] = split(call);
        if (previousWait)
          hoist(start, previousWait);
        previousWait = wait;
      }
    }
  }

  func::FuncOp declare(StringRef name, FunctionType type, Location loc) {
    return declareRuntimeFunction(getOperation(), name, type, loc);
  }

  /// `%h = call @ga_cuda_all_gather_start_<type>(in, out)` and
  /// `call @ga_cuda_all_gather_wait(%h)` in place of the gather.
  std::pair<func::CallOp, func::CallOp> split(func::CallOp call) {
    OpBuilder builder(call);
    Location loc = call.getLoc();
    Type i64 = builder.getI64Type();
    func::FuncOp start =
        declare((Twine(kGather) + "start_" + gatherSuffix(call)).str(),
                builder.getFunctionType(call.getOperandTypes(), {i64}), loc);
    func::FuncOp wait = declare("ga_cuda_all_gather_wait",
                                builder.getFunctionType({i64}, {}), loc);
    auto startCall =
        func::CallOp::create(builder, loc, start, call.getOperands());
    auto waitCall =
        func::CallOp::create(builder, loc, wait, startCall.getResult(0));
    call->erase();
    return {startCall, waitCall};
  }

  /// Moves `start`, with the allocation of its gathered buffer and the
  /// casts of its operands, right after `after` (the previous gather's
  /// wait, in the same block), when nothing between them touches the
  /// gathered shard or the new buffer and the operands are defined before.
  void hoist(func::CallOp start, Operation *after) {
    Block *block = start->getBlock();
    SmallVector<Operation *> moved;
    auto between = [&](Operation *op) {
      return op && op->getBlock() == block && after->isBeforeInBlock(op) &&
             op->isBeforeInBlock(start);
    };
    // Each operand: a memref.cast (pure: it moves up with the start where
    // it lies between, whatever else uses it) of the shard, defined before
    // `after`, or of a buffer allocated for the gather, which nothing
    // between uses but the casts.
    auto dominatesAfter = [&](Operation *def) {
      return !def || def->getBlock() != block || def->isBeforeInBlock(after);
    };
    Value shard;
    for (auto [index, operand] : llvm::enumerate(start.getOperands())) {
      auto cast = operand.getDefiningOp<memref::CastOp>();
      if (!cast || (!between(cast) && !dominatesAfter(cast)))
        return;
      Value source = cast.getSource();
      Operation *def = source.getDefiningOp();
      if (index == 0) {
        if (!dominatesAfter(def))
          return;
        shard = viewSource(source);
      } else {
        auto alloc = dyn_cast_or_null<memref::AllocOp>(def);
        if (!alloc || alloc->getNumOperands() ||
            (!between(alloc) && !dominatesAfter(alloc)))
          return;
        auto afterStart = [&](Operation *user) {
          Operation *at = block->findAncestorOpInBlock(*user);
          return user == start || (at && start->isBeforeInBlock(at));
        };
        for (Operation *user : alloc->getUsers()) {
          if (isa<memref::CastOp>(user)
                  ? !llvm::all_of(user->getUsers(), afterStart)
                  : !afterStart(user))
            return;
        }
        if (between(alloc))
          moved.push_back(alloc);
      }
      if (between(cast))
        moved.push_back(cast);
    }
    // Nothing between reads or writes the shard (through any view of it).
    bool touched = false;
    for (Operation *op = after->getNextNode(); op && op != start && !touched;
         op = op->getNextNode()) {
      if (llvm::is_contained(moved, op))
        continue;
      op->walk([&](Operation *inner) {
        for (Value operand : inner->getOperands())
          if (viewSource(operand) == shard)
            touched = true;
      });
    }
    if (touched)
      return;
    Operation *at = after;
    for (Operation *op : moved) {
      op->moveAfter(at);
      at = op;
    }
    start->moveAfter(at);
  }
};

} // namespace
