//===- BufferMemory.cpp - The memory model of a bufferized step -----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Analysis/BufferMemory.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace mlir;

std::optional<int64_t> ga::allocationBytes(MemRefType type, int64_t alignment) {
  if (!type.hasStaticShape())
    return std::nullopt;
  Type element = type.getElementType();
  int64_t elementBytes;
  if (element.isIndex())
    elementBytes = 8;
  else if (element.isIntOrFloat())
    elementBytes = (element.getIntOrFloatBitWidth() + 7) / 8;
  else if (auto complex = dyn_cast<ComplexType>(element);
           complex && complex.getElementType().isIntOrFloat())
    elementBytes =
        2 * ((complex.getElementType().getIntOrFloatBitWidth() + 7) / 8);
  else
    return std::nullopt;
  return type.getNumElements() * elementBytes + alignment;
}

namespace {

/// One call of a function, simulated.
class Simulator {
public:
  Simulator(ga::BufferMemoryProfile &profile,
            ga::BufferMemoryObserver *observer)
      : profile(profile), observer(observer) {}

  LogicalResult runFunction(func::FuncOp function, ValueRange operands,
                            SmallVectorImpl<int64_t> &resultRoots);
  int64_t heldBytes() const { return current; }

private:
  struct Buffer {
    Operation *alloc;
    int64_t bytes;
    bool live;
  };

  LogicalResult runBlock(Block &block, SmallVectorImpl<int64_t> *yieldRoots,
                         SmallVectorImpl<std::optional<bool>> *yieldBools);
  LogicalResult runOp(Operation &op);
  /// An allocation: its bytes live, the peak and the live set at it.
  LogicalResult runAlloc(memref::AllocOp alloc);
  LogicalResult runDealloc(memref::DeallocOp dealloc);
  /// Records the value of i1 constants and logic on known ones (forgets
  /// it where an operand is unknown): whether `op` is such.
  bool runBoolArithmetic(Operation &op);
  LogicalResult runFor(scf::ForOp loop);
  LogicalResult runIf(scf::IfOp branch);
  LogicalResult runCall(func::CallOp call);

  /// The buffer `value` views, or -1 for memory the function does not own
  /// (arguments, globals, stack buffers).
  int64_t rootOf(Value value) const {
    auto it = roots.find(value);
    return it == roots.end() ? -1 : it->second;
  }
  std::optional<bool> boolOf(Value value) const {
    auto it = bools.find(value);
    if (it == bools.end())
      return std::nullopt;
    return it->second;
  }
  /// An index known here: a constant, a loop's induction variable in the
  /// iteration being run, or arithmetic of known ones (a loop over the
  /// tiles of an attention that a causal mask bounds by the outer loop's
  /// tile).
  std::optional<int64_t> indexOf(Value value) const {
    if (auto constant = value.getDefiningOp<arith::ConstantIndexOp>())
      return constant.value();
    auto it = indices.find(value);
    if (it == indices.end())
      return std::nullopt;
    return it->second;
  }
  /// Records the value of index arithmetic on known indices (forgets it
  /// where an operand is unknown): whether `op` is such arithmetic.
  bool runIndexArithmetic(Operation &op);
  void bind(Value to, Value from) {
    if (isa<BaseMemRefType>(to.getType()))
      roots[to] = rootOf(from);
    else if (auto known = boolOf(from))
      bools[to] = *known;
    else
      bools.erase(to);
  }
  /// Whether running `op` can allocate or free (cached per operation).
  bool touchesHeap(Operation *op);

  ga::BufferMemoryProfile &profile;
  ga::BufferMemoryObserver *observer;
  llvm::DenseMap<Value, int64_t> roots;
  llvm::DenseMap<Value, bool> bools;
  llvm::DenseMap<Value, int64_t> indices;
  llvm::DenseMap<Operation *, bool> heapCache;
  std::vector<Buffer> buffers;
  int64_t current = 0;
  /// Blocks alive now, by size (deviceBlockBytes).
  std::map<int64_t, int64_t> liveBlocks;
  SmallVector<func::FuncOp> callStack;
};

} // namespace

bool Simulator::touchesHeap(Operation *op) {
  auto it = heapCache.find(op);
  if (it != heapCache.end())
    return it->second;
  bool touches = false;
  // Recursion through calls is cut by the cache entry written first.
  heapCache[op] = false;
  op->walk([&](Operation *inner) {
    if (isa<memref::AllocOp, memref::DeallocOp, memref::ReallocOp>(inner)) {
      touches = true;
      return WalkResult::interrupt();
    }
    if (auto call = dyn_cast<func::CallOp>(inner)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (callee && !callee.isExternal() && touchesHeap(callee)) {
        touches = true;
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  heapCache[op] = touches;
  return touches;
}

LogicalResult Simulator::runFunction(func::FuncOp function, ValueRange operands,
                                     SmallVectorImpl<int64_t> &resultRoots) {
  if (llvm::is_contained(callStack, function))
    return function.emitError("the memory model cannot follow the recursive "
                              "call of @")
           << function.getSymName();
  if (!function.getBody().hasOneBlock())
    return function.emitError("the memory model follows functions of one "
                              "block; @")
           << function.getSymName() << " has "
           << function.getBody().getBlocks().size();
  callStack.push_back(function);
  Block &body = function.getBody().front();
  for (auto [argument, operand] : llvm::zip(body.getArguments(), operands))
    bind(argument, operand);
  LogicalResult result = runBlock(body, &resultRoots, nullptr);
  callStack.pop_back();
  return result;
}

LogicalResult
Simulator::runBlock(Block &block, SmallVectorImpl<int64_t> *yieldRoots,
                    SmallVectorImpl<std::optional<bool>> *yieldBools) {
  for (Operation &op : block.without_terminator()) {
    if (observer)
      observer->beforeOperation(op, current,
                                [&](Value value) { return rootOf(value); });
    if (failed(runOp(op)))
      return failure();
  }
  Operation *terminator = block.getTerminator();
  if (yieldRoots) {
    yieldRoots->clear();
    for (Value value : terminator->getOperands())
      yieldRoots->push_back(rootOf(value));
  }
  if (yieldBools) {
    yieldBools->clear();
    for (Value value : terminator->getOperands())
      yieldBools->push_back(boolOf(value));
  }
  return success();
}

LogicalResult Simulator::runAlloc(memref::AllocOp alloc) {
  std::optional<int64_t> bytes =
      ga::allocationBytes(alloc.getType(), alloc.getAlignment().value_or(0));
  if (!bytes)
    return alloc.emitError("the memory model needs static allocation "
                           "sizes; this one allocates ")
           << alloc.getType();
  roots[alloc.getResult()] = static_cast<int64_t>(buffers.size());
  if (observer)
    observer->allocated(alloc, *bytes, static_cast<int64_t>(buffers.size()));
  buffers.push_back({alloc, *bytes, true});
  current += *bytes;
  int64_t block = ga::deviceBlockBytes(*bytes);
  int64_t &most = profile.mostBlocksBySize[block];
  most = std::max(most, ++liveBlocks[block]);
  ++profile.allocations;
  if (current > profile.peakBytes) {
    profile.peakBytes = current;
    profile.peakAt = alloc;
    // The live set at the new peak, by allocation site.
    llvm::DenseMap<Operation *, unsigned> index;
    profile.liveAtPeak.clear();
    for (const Buffer &buffer : buffers) {
      if (!buffer.live)
        continue;
      auto [it, inserted] =
          index.try_emplace(buffer.alloc, profile.liveAtPeak.size());
      if (inserted)
        profile.liveAtPeak.push_back({buffer.alloc, 0, 0});
      profile.liveAtPeak[it->second].bytes += buffer.bytes;
      profile.liveAtPeak[it->second].count += 1;
    }
  }
  return success();
}

LogicalResult Simulator::runDealloc(memref::DeallocOp dealloc) {
  int64_t root = rootOf(dealloc.getMemref());
  if (root < 0)
    return dealloc.emitError("the memory model does not know the buffer "
                             "this deallocates (not allocated by the "
                             "function)");
  Buffer &buffer = buffers[root];
  if (!buffer.live)
    return dealloc
               .emitError("the memory model sees this buffer freed "
                          "twice")
               .attachNote(buffer.alloc->getLoc())
           << "allocated here";
  buffer.live = false;
  current -= buffer.bytes;
  if (observer)
    observer->freed(root);
  --liveBlocks[ga::deviceBlockBytes(buffer.bytes)];
  return success();
}

bool Simulator::runBoolArithmetic(Operation &op) {
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    if (auto flag = dyn_cast<BoolAttr>(constant.getValue()))
      bools[constant.getResult()] = flag.getValue();
    else if (auto integer = dyn_cast<IntegerAttr>(constant.getValue());
             integer && integer.getType().isInteger(1))
      bools[constant.getResult()] = integer.getValue().getBoolValue();
    return true;
  }
  if (isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(op) &&
      op.getResult(0).getType().isInteger(1)) {
    std::optional<bool> a = boolOf(op.getOperand(0));
    std::optional<bool> b = boolOf(op.getOperand(1));
    if (a && b) {
      bool value = isa<arith::AndIOp>(op)  ? (*a && *b)
                   : isa<arith::OrIOp>(op) ? (*a || *b)
                                           : (*a != *b);
      bools[op.getResult(0)] = value;
    } else {
      bools.erase(op.getResult(0));
    }
    return true;
  }
  return false;
}

LogicalResult Simulator::runOp(Operation &op) {
  if (auto alloc = dyn_cast<memref::AllocOp>(op))
    return runAlloc(alloc);
  if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
    return runDealloc(dealloc);
  if (isa<memref::ReallocOp>(op))
    return op.emitError("the memory model does not follow memref.realloc");
  if (runBoolArithmetic(op) || runIndexArithmetic(op))
    return success();
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return runFor(loop);
  if (auto branch = dyn_cast<scf::IfOp>(op))
    return runIf(branch);
  if (auto call = dyn_cast<func::CallOp>(op))
    return runCall(call);
  if (auto cast = dyn_cast<memref::CastOp>(op)) {
    roots[cast.getResult()] = rootOf(cast.getSource());
    return success();
  }
  if (auto view = dyn_cast<ViewLikeOpInterface>(op)) {
    for (Value result : op.getResults())
      if (isa<BaseMemRefType>(result.getType()))
        roots[result] = rootOf(view.getViewSource());
    return success();
  }
  if (auto metadata = dyn_cast<memref::ExtractStridedMetadataOp>(op)) {
    roots[metadata.getBaseBuffer()] = rootOf(metadata.getSource());
    return success();
  }
  if (op.getNumRegions() != 0 && touchesHeap(&op))
    return op.emitError("the memory model does not follow the allocations "
                        "inside '")
           << op.getName() << "'";
  for (Value result : op.getResults()) {
    roots.erase(result);
    bools.erase(result);
  }
  return success();
}

bool Simulator::runIndexArithmetic(Operation &op) {
  if (op.getNumResults() != 1 || op.getNumOperands() != 2 ||
      !op.getResult(0).getType().isIndex() ||
      !isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivUIOp,
           arith::MinUIOp, arith::MaxUIOp, arith::MinSIOp, arith::MaxSIOp>(op))
    return false;
  Value result = op.getResult(0);
  std::optional<int64_t> a = indexOf(op.getOperand(0));
  std::optional<int64_t> b = indexOf(op.getOperand(1));
  if (!a || !b || (isa<arith::DivUIOp>(op) && *b == 0)) {
    indices.erase(result);
    return true;
  }
  auto ua = static_cast<uint64_t>(*a), ub = static_cast<uint64_t>(*b);
  int64_t value = 0;
  if (isa<arith::AddIOp>(op))
    value = *a + *b;
  else if (isa<arith::SubIOp>(op))
    value = *a - *b;
  else if (isa<arith::MulIOp>(op))
    value = *a * *b;
  else if (isa<arith::DivUIOp>(op))
    value = static_cast<int64_t>(ua / ub);
  else if (isa<arith::MinUIOp>(op))
    value = static_cast<int64_t>(std::min(ua, ub));
  else if (isa<arith::MaxUIOp>(op))
    value = static_cast<int64_t>(std::max(ua, ub));
  else if (isa<arith::MinSIOp>(op))
    value = std::min(*a, *b);
  else
    value = std::max(*a, *b);
  indices[result] = value;
  return true;
}

LogicalResult Simulator::runFor(scf::ForOp loop) {
  Block *body = loop.getBody();
  if (!touchesHeap(loop)) {
    // Nothing to follow inside: the results are the initial values (the
    // loop's memrefs are its iteration arguments, written in place).
    for (auto [result, init] : llvm::zip(loop.getResults(), loop.getInits())) {
      if (isa<BaseMemRefType>(result.getType()))
        roots[result] = rootOf(init);
      else
        bools.erase(result);
    }
    return success();
  }
  std::optional<int64_t> lower = indexOf(loop.getLowerBound());
  std::optional<int64_t> upper = indexOf(loop.getUpperBound());
  std::optional<int64_t> step = indexOf(loop.getStep());
  if (!lower || !upper || !step || *step <= 0)
    return loop.emitError("the memory model needs bounds it can compute "
                          "(constants, enclosing loops' induction "
                          "variables, index arithmetic of them) on a loop "
                          "that allocates");
  for (auto [argument, init] :
       llvm::zip(loop.getRegionIterArgs(), loop.getInits()))
    bind(argument, init);
  SmallVector<int64_t> yieldRoots;
  SmallVector<std::optional<bool>> yieldBools;
  for (int64_t i = *lower; i < *upper; i += *step) {
    indices[loop.getInductionVar()] = i;
    if (failed(runBlock(*body, &yieldRoots, &yieldBools)))
      return failure();
    for (auto [index, argument] : llvm::enumerate(loop.getRegionIterArgs())) {
      if (isa<BaseMemRefType>(argument.getType()))
        roots[argument] = yieldRoots[index];
      else if (yieldBools[index])
        bools[argument] = *yieldBools[index];
      else
        bools.erase(argument);
    }
  }
  for (auto [result, argument] :
       llvm::zip(loop.getResults(), loop.getRegionIterArgs()))
    bind(result, argument);
  return success();
}

LogicalResult Simulator::runIf(scf::IfOp branch) {
  std::optional<bool> condition = boolOf(branch.getCondition());
  if (!condition) {
    if (!touchesHeap(branch)) {
      for (Value result : branch.getResults()) {
        roots.erase(result);
        bools.erase(result);
      }
      return success();
    }
    // A condition known at run time only: the deallocation pipeline's
    // ownership of a buffer. The then-branch frees what the function owns.
    profile.assumedOwnership = true;
    condition = true;
  }
  Region &region = *condition ? branch.getThenRegion() : branch.getElseRegion();
  if (region.empty()) {
    return success();
  }
  SmallVector<int64_t> yieldRoots;
  SmallVector<std::optional<bool>> yieldBools;
  if (failed(runBlock(region.front(), &yieldRoots, &yieldBools)))
    return failure();
  for (auto [index, result] : llvm::enumerate(branch.getResults())) {
    if (isa<BaseMemRefType>(result.getType()))
      roots[result] = yieldRoots[index];
    else if (yieldBools[index])
      bools[result] = *yieldBools[index];
    else
      bools.erase(result);
  }
  return success();
}

LogicalResult Simulator::runCall(func::CallOp call) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  if (!callee || callee.isExternal() || !touchesHeap(callee)) {
    for (Value result : call.getResults()) {
      roots.erase(result);
      bools.erase(result);
    }
    return success();
  }
  SmallVector<int64_t> resultRoots;
  if (failed(runFunction(callee, call.getOperands(), resultRoots)))
    return failure();
  for (auto [result, root] : llvm::zip(call.getResults(), resultRoots))
    if (isa<BaseMemRefType>(result.getType()))
      roots[result] = root;
  return success();
}

int64_t ga::cachingAllocatorBytes(const BufferMemoryProfile &profile,
                                  ArrayRef<int64_t> residentBytes) {
  std::map<int64_t, int64_t> blocks = profile.mostBlocksBySize;
  for (int64_t bytes : residentBytes)
    ++blocks[deviceBlockBytes(bytes)];
  int64_t total = 0;
  for (auto [size, count] : blocks)
    total += size * count;
  return total;
}

ga::BufferMemoryObserver::~BufferMemoryObserver() = default;

FailureOr<ga::BufferMemoryProfile>
ga::simulateBufferMemory(func::FuncOp function,
                         BufferMemoryObserver *observer) {
  if (function.isExternal())
    return function.emitError("the memory model needs a function body");
  for (Type type : function.getArgumentTypes())
    if (isa<TensorType>(type))
      return function.emitError("the memory model runs on bufferized "
                                "functions; @")
             << function.getSymName() << " takes " << type;
  BufferMemoryProfile profile;
  Simulator simulator(profile, observer);
  SmallVector<int64_t> resultRoots;
  // The arguments are the caller's memory: no buffer of the function.
  if (failed(simulator.runFunction(function, ValueRange(), resultRoots)))
    return failure();
  profile.returnedBytes = simulator.heldBytes();
  llvm::stable_sort(profile.liveAtPeak,
                    [](const LiveAllocation &a, const LiveAllocation &b) {
                      return a.bytes > b.bytes;
                    });
  return profile;
}
