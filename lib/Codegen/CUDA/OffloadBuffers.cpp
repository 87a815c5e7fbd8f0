//===- OffloadBuffers.cpp - Saved buffers to host memory and back ---------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-offload-buffers: on the bufferized step (deallocations placed after
// each buffer's last use), a buffer that is not read for a long stretch of
// the step (an activation between its last forward reader and its first
// backward reader) may leave the device for that stretch: after its last
// reader before the stretch, `ga_cuda_offload` copies it to pinned host
// memory on the runtime's copy stream and the device buffer is freed; a new
// buffer is allocated some operations before its next reader,
// `ga_cuda_reload` copies it back on the copy stream, and
// `ga_cuda_reload_wait` orders its reader after the copy. The readers after
// the stretch read the new buffer (views of the old one are made again).
//
// What is offloaded: the device memory the CUDA runtime's caching
// allocator holds is, for each block size, the most blocks of that size
// alive at once (ga/Analysis/BufferMemory.h). While the step's device bytes
// (that, the inputs and `fixed-bytes`) exceed `budget`, the pass takes the
// block size whose most-alive count it can lower with the fewest copies
// (a greedy cover of the positions where the count is reached, by the
// stretches of buffers of that size), largest blocks first among equals,
// and offloads those buffers. First only stretches whose two copies hide
// behind the stretch's estimated compute (`host-bandwidth` against
// `device-tflops`, at least `launch-microseconds` per kernel), while all
// copies together take less than the step's compute; then (`copies=priced`,
// the default) any buffer's longest stretch. Either way the copies' delay
// of the step is estimated (two streams simulated) and recorded, and the
// remat planner, which compiles its candidates through this pass, weighs it
// against the work a plan recomputes.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "ga/Analysis/BufferMemory.h"
#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace ga {
#define GEN_PASS_DEF_GAGPUOFFLOADBUFFERSPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

/// The trip count of `loop` (1 when its bounds are not constants).
double tripsOf(scf::ForOp loop) {
  std::optional<APInt> trips = loop.getStaticTripCount();
  return trips ? double(trips->getZExtValue()) : 1.0;
}

/// The arithmetic of `op`: iterations times body operations for linalg,
/// summed over nested operations, loops multiplied by their trip counts.
double workOf(Operation *op) {
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    double iterations = 1;
    for (int64_t range : linalgOp.getStaticLoopRanges())
      iterations *= ShapedType::isDynamic(range) ? 1 : double(range);
    double body = 0;
    for (Operation &inner : linalgOp.getBlock()->without_terminator())
      body += inner.getNumResults() ? 1 : 0;
    return iterations * std::max(1.0, body);
  }
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    auto type = cast<MemRefType>(copy.getSource().getType());
    return type.hasStaticShape() ? double(type.getNumElements()) : 1.0;
  }
  double trips = 1;
  if (auto loop = dyn_cast<scf::ForOp>(op))
    trips = tripsOf(loop);
  double sum = 0;
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (Operation &inner : block)
        sum += workOf(&inner);
  return trips * sum;
}

/// Whether `op` becomes device work (a kernel or a GEMM) somewhere inside.
bool launches(Operation *op) {
  return op
      ->walk([](Operation *inner) {
        return isa<linalg::LinalgOp, memref::CopyOp>(inner)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// One buffer allocated in a block and freed there once, with the block
/// positions of the operations that read or write it (through views too).
struct Buffer {
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  int64_t bytes = 0; // what the copies move
  int64_t block = 0; // the allocator's block size (its class)
  unsigned allocAt = 0, deallocAt = 0;
  SmallVector<unsigned> accesses;
  /// The buffer and its views (views of views after their sources).
  SmallVector<Value> aliases;
  /// The stretch chosen: the buffer is off the device strictly between
  /// `from` (its last access before) and `to` (the reload's position).
  unsigned from = 0, to = 0, next = 0;
  bool offloadable = false, offloaded = false;
  /// Whether the stretch's copies are estimated to hide behind its work.
  bool hides = true;
};

struct GaGpuOffloadBuffersPass
    : ga::impl::GaGpuOffloadBuffersPassBase<GaGpuOffloadBuffersPass> {
  using Base::Base;

  void runOnOperation() override {
    if (hostBandwidth <= 0 || deviceTflops <= 0 || launchMicroseconds < 0) {
      getOperation().emitError()
          << "ga-gpu-offload-buffers: host-bandwidth and device-tflops must "
             "be positive and launch-microseconds not negative";
      return signalPassFailure();
    }
    if (budget <= 0)
      return;
    SmallVector<func::FuncOp> functions;
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (!function.isExternal() && function.isPublic())
        functions.push_back(function);
    for (func::FuncOp function : functions)
      if (failed(runOnFunction(function)))
        return signalPassFailure();
  }

  /// Seconds of device work of `op`, as estimated.
  double secondsOf(Operation *op) {
    if (!launches(op))
      return 0;
    return std::max(launchMicroseconds * 1e-6,
                    workOf(op) / (deviceTflops * 1e12));
  }
  double copySeconds(int64_t bytes) {
    return double(bytes) / (hostBandwidth * 1e9) + launchMicroseconds * 1e-6;
  }

  /// The step's device bytes as the runtime's caching allocator holds them.
  FailureOr<int64_t> deviceBytes(func::FuncOp function) {
    FailureOr<ga::BufferMemoryProfile> profile =
        ga::simulateBufferMemory(function);
    if (failed(profile))
      return failure();
    SmallVector<int64_t> inputs;
    for (Type type : function.getArgumentTypes())
      if (auto memref = dyn_cast<MemRefType>(type))
        inputs.push_back(ga::allocationBytes(memref, 0).value_or(0));
    return ga::cachingAllocatorBytes(*profile, inputs) + fixedBytes;
  }

  LogicalResult runOnFunction(func::FuncOp function) {
    FailureOr<int64_t> bytes = deviceBytes(function);
    if (failed(bytes))
      return failure();
    if (*bytes <= budget)
      return success();
    // The blocks that allocate, each with its operations' positions.
    SetVector<Block *> blocks;
    function.walk(
        [&](memref::AllocOp alloc) { blocks.insert(alloc->getBlock()); });
    int64_t offloads = 0, copied = 0;
    double exposed = 0;
    for (Block *block : blocks) {
      if (failed(
              offloadIn(function, *block, *bytes, offloads, copied, exposed)))
        return failure();
      if (*bytes <= budget)
        break;
    }
    if (offloads) {
      Builder b(function.getContext());
      function->setAttr(
          "ga.host_offload",
          b.getDictionaryAttr(
              {b.getNamedAttr("buffers", b.getI64IntegerAttr(offloads)),
               b.getNamedAttr("bytes", b.getI64IntegerAttr(copied)),
               b.getNamedAttr("exposed_seconds", b.getF64FloatAttr(exposed)),
               b.getNamedAttr(
                   "exposed_work",
                   b.getF64FloatAttr(exposed * deviceTflops * 1e12))}));
    }
    return success();
  }

  /// The seconds by which the copies of `moved` delay the work of `ops`
  /// (`before`: the work's prefix sums): the work runs in order on one
  /// stream and the copies in the order issued on another; an offload
  /// starts after its last reader before the stretch, a reload where it is
  /// placed but not before the copies issued earlier end, and the reader
  /// after the stretch waits for the reload.
  double stallOf(ArrayRef<Buffer *> moved, ArrayRef<Operation *> ops,
                 ArrayRef<double> before) {
    unsigned n = ops.size();
    std::vector<SmallVector<Buffer *>> offAfter(n), reloadAt(n), waitAt(n);
    for (Buffer *buffer : moved) {
      offAfter[buffer->from].push_back(buffer);
      reloadAt[buffer->to].push_back(buffer);
      waitAt[buffer->next].push_back(buffer);
    }
    DenseMap<Buffer *, double> back;
    double now = 0, copyFree = 0;
    for (unsigned p = 0; p < n; ++p) {
      for (Buffer *buffer : reloadAt[p]) {
        copyFree = std::max(now, copyFree) + copySeconds(buffer->bytes);
        back[buffer] = copyFree;
      }
      for (Buffer *buffer : waitAt[p])
        now = std::max(now, back[buffer]);
      now += before[p + 1] - before[p];
      for (Buffer *buffer : offAfter[p])
        copyFree = std::max(now, copyFree) + copySeconds(buffer->bytes);
    }
    return std::max(0.0, now - before[n]);
  }

  /// Chooses `buffer`'s longest stretch between two accesses whose copies
  /// hide behind the work (`before`: seconds of work before each
  /// position), or, with `hiding` false, its longest stretch.
  void chooseStretch(Buffer &buffer, bool hiding, ArrayRef<double> before) {
    double copy = copySeconds(buffer.bytes);
    double best = 0;
    for (unsigned i = 0; i + 1 < buffer.accesses.size(); ++i) {
      unsigned from = buffer.accesses[i], next = buffer.accesses[i + 1];
      if (next <= from + 2)
        continue;
      double stretch = before[next] - before[from + 1];
      if ((hiding && stretch < 2 * copy) || stretch <= best)
        continue;
      // The reload starts where the work left before the reader covers
      // its copy (where none does, right before the reader).
      unsigned to = next;
      while (to > from + 1 && before[next] - before[to] < copy)
        --to;
      if (to <= from + 1) {
        if (hiding)
          continue;
        to = next;
      }
      best = stretch;
      buffer.from = from;
      buffer.to = to;
      buffer.next = next;
      buffer.offloadable = true;
      buffer.hides = hiding;
    }
  }

  /// The fewest buffers of one block size (`sized`) whose stretches cover
  /// every position where its live `count` is at its most, chosen
  /// greedily into `cover`; false where they do not cover them all.
  /// Stretches that do not hide count only when `exposing`.
  bool coverPeaks(ArrayRef<Buffer *> sized, ArrayRef<int64_t> count,
                  bool exposing, SmallVector<Buffer *> &cover) {
    int64_t most = *std::max_element(count.begin(), count.end());
    SmallVector<unsigned> peaks;
    for (unsigned t = 0; t < count.size(); ++t)
      if (count[t] == most)
        peaks.push_back(t);
    SmallVector<bool> covered(peaks.size(), false);
    size_t left = peaks.size();
    while (left) {
      // Uncovered peaks before each index of `peaks` (prefix sums).
      SmallVector<unsigned> uncovered(peaks.size() + 1, 0);
      for (size_t i = 0; i < peaks.size(); ++i)
        uncovered[i + 1] = uncovered[i] + !covered[i];
      Buffer *pick = nullptr;
      unsigned pickCovers = 0;
      for (Buffer *other : sized) {
        if (other->offloaded || llvm::is_contained(cover, other) ||
            (!other->hides && !exposing))
          continue;
        size_t lo = std::upper_bound(peaks.begin(), peaks.end(), other->from) -
                    peaks.begin();
        size_t hi = std::lower_bound(peaks.begin(), peaks.end(), other->to) -
                    peaks.begin();
        unsigned covers = hi > lo ? uncovered[hi] - uncovered[lo] : 0;
        if (covers > pickCovers) {
          pick = other;
          pickCovers = covers;
        }
      }
      if (!pick)
        break;
      cover.push_back(pick);
      for (size_t i = 0; i < peaks.size(); ++i)
        if (!covered[i] && peaks[i] > pick->from && peaks[i] < pick->to) {
          covered[i] = true;
          --left;
        }
    }
    return left == 0;
  }

  /// Of the block sizes not `exhausted`, the one whose peaks the fewest
  /// buffers cover (the larger size on a tie), with those buffers in
  /// `bestCover`; 0 where none can be covered (sizes that cannot are added
  /// to `exhausted`).
  int64_t
  bestCoverOf(const std::map<int64_t, SmallVector<Buffer *>> &candidates,
              std::map<int64_t, SmallVector<int64_t>> &counts,
              std::set<int64_t> &exhausted, bool exposing,
              SmallVector<Buffer *> &bestCover) {
    int64_t bestSize = 0;
    for (auto &[size, sized] : candidates) {
      if (exhausted.count(size))
        continue;
      SmallVector<Buffer *> cover;
      bool complete = coverPeaks(sized, counts[size], exposing, cover);
      if (!complete || cover.empty()) {
        exhausted.insert(size);
        continue;
      }
      if (!bestSize || cover.size() < bestCover.size() ||
          (cover.size() == bestCover.size() && size > bestSize)) {
        bestSize = size;
        bestCover = cover;
      }
    }
    return bestSize;
  }

  /// How often `block` runs in one call of `function` (a micro-batch
  /// loop's body: k times), for the bytes copied per call.
  static double runsPerCall(func::FuncOp function, Block &block) {
    double runs = 1;
    for (Operation *parent = block.getParentOp(); parent && parent != function;
         parent = parent->getParentOp())
      if (auto loop = dyn_cast<scf::ForOp>(parent))
        runs *= tripsOf(loop);
    return runs;
  }

  /// The live blocks of each size at each of the `n` positions (alive
  /// while the operation runs), and the buffers that may be offloaded, by
  /// size.
  static void
  countBlocks(std::vector<Buffer> &buffers, unsigned n,
              std::map<int64_t, SmallVector<int64_t>> &counts,
              std::map<int64_t, SmallVector<Buffer *>> &candidates) {
    for (Buffer &buffer : buffers) {
      SmallVector<int64_t> &count = counts[buffer.block];
      count.resize(n, 0);
      for (unsigned t = buffer.allocAt; t <= buffer.deallocAt && t < n; ++t)
        ++count[t];
      if (buffer.offloadable)
        candidates[buffer.block].push_back(&buffer);
    }
  }

  /// Offloads buffers of `block` while `bytes` (the function's device
  /// bytes, updated) exceed the budget and a block size can be lowered.
  LogicalResult offloadIn(func::FuncOp function, Block &block, int64_t &bytes,
                          int64_t &offloads, int64_t &copied, double &exposed) {
    SmallVector<Operation *> ops;
    DenseMap<Operation *, unsigned> position;
    for (Operation &op : block) {
      position[&op] = ops.size();
      ops.push_back(&op);
    }
    unsigned n = ops.size();
    double runs = runsPerCall(function, block);
    // Seconds of work before each position (prefix sums).
    SmallVector<double> before(n + 1, 0);
    for (unsigned i = 0; i < n; ++i)
      before[i + 1] = before[i] + secondsOf(ops[i]);
    double copyBudget = before[n];
    std::vector<Buffer> buffers;
    for (Operation *op : ops)
      if (auto alloc = dyn_cast<memref::AllocOp>(op))
        if (std::optional<Buffer> buffer = describe(alloc, block, position))
          buffers.push_back(*buffer);
    // Choose each buffer's longest stretch whose copies hide; priced, where
    // none does, its longest stretch.
    bool priced = copies == ga::OffloadCopies::Priced;
    for (Buffer &buffer : buffers) {
      chooseStretch(buffer, /*hiding=*/true, before);
      if (!buffer.offloadable && priced)
        chooseStretch(buffer, /*hiding=*/false, before);
    }
    // Priced, the stretches that do not hide are taken once those that do
    // no longer lower the device bytes.
    bool exposing = false;
    // Live blocks of each size at each position, kept up to date as
    // buffers are offloaded, and the buffers that may be, by size.
    std::map<int64_t, SmallVector<int64_t>> counts;
    std::map<int64_t, SmallVector<Buffer *>> candidates;
    countBlocks(buffers, n, counts, candidates);
    std::set<int64_t> exhausted;
    // A bound below the function's device bytes: each round lowers them by
    // at most what it lowers this block's counts; the memory model runs
    // only when the bound reaches the budget.
    int64_t atLeast = bytes;
    bool stale = false;
    while (bytes > budget) {
      // For each block size, the fewest buffers whose stretches cover every
      // position where its count is at its most.
      SmallVector<Buffer *> bestCover;
      int64_t bestSize =
          bestCoverOf(candidates, counts, exhausted, exposing, bestCover);
      double seconds = 0;
      for (Buffer *buffer : bestCover)
        seconds += 2 * copySeconds(buffer->bytes);
      // The copies would no longer hide behind the step's work.
      if (bestSize && !exposing && seconds > copyBudget)
        bestSize = 0;
      if (!bestSize) {
        if (!priced || exposing)
          break;
        exposing = true;
        exhausted.clear();
        continue;
      }
      copyBudget -= seconds;
      SmallVector<int64_t> &count = counts[bestSize];
      int64_t most = *std::max_element(count.begin(), count.end());
      for (Buffer *buffer : bestCover) {
        buffer->offloaded = true;
        for (unsigned t = buffer->from + 1; t < buffer->to; ++t)
          --count[t];
        rewrite(*buffer, ops);
        ++offloads;
        copied += static_cast<int64_t>(runs) * buffer->bytes;
      }
      atLeast -=
          bestSize * (most - *std::max_element(count.begin(), count.end()));
      stale = true;
      if (atLeast > budget)
        continue;
      FailureOr<int64_t> now = deviceBytes(function);
      if (failed(now))
        return failure();
      bytes = atLeast = *now;
      stale = false;
    }
    if (stale) {
      FailureOr<int64_t> now = deviceBytes(function);
      if (failed(now))
        return failure();
      bytes = *now;
    }
    SmallVector<Buffer *> moved;
    for (Buffer &buffer : buffers)
      if (buffer.offloaded)
        moved.push_back(&buffer);
    if (!moved.empty())
      exposed += runs * stallOf(moved, ops, before);
    return success();
  }

  /// The buffer `alloc` makes, when the pass can follow every use of it
  /// (views, accesses in `block`, one deallocation there).
  std::optional<Buffer> describe(memref::AllocOp alloc, Block &block,
                                 DenseMap<Operation *, unsigned> &position) {
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
        !type.getElementType().isIntOrFloat() ||
        type.getElementTypeBitWidth() % 8 != 0)
      return std::nullopt;
    Buffer buffer;
    buffer.alloc = alloc;
    buffer.bytes = ga::allocationBytes(type, 0).value_or(0);
    if (buffer.bytes < minBytes || buffer.bytes == 0)
      return std::nullopt;
    buffer.block = ga::deviceBlockBytes(
        ga::allocationBytes(type, alloc.getAlignment().value_or(0))
            .value_or(0));
    buffer.allocAt = position[alloc];
    SmallVector<Value> &aliases = buffer.aliases;
    aliases.push_back(alloc.getResult());
    for (unsigned i = 0; i < aliases.size(); ++i) {
      for (OpOperand &use : aliases[i].getUses()) {
        Operation *user = use.getOwner();
        if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
          if (i != 0 || dealloc->getBlock() != &block || buffer.dealloc)
            return std::nullopt;
          buffer.dealloc = dealloc;
          buffer.deallocAt = position[dealloc];
          continue;
        }
        if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
          if (view.getViewSource() == aliases[i]) {
            for (Value result : user->getResults())
              if (isa<BaseMemRefType>(result.getType()))
                aliases.push_back(result);
            continue;
          }
        }
        if (isa<memref::ExtractStridedMetadataOp>(user)) {
          aliases.push_back(user->getResult(0));
          continue;
        }
        // Anything else reads or writes it; it may not make a memref of it
        // (a loop's iteration argument, a result) nor leave the block.
        if (user->hasTrait<OpTrait::IsTerminator>() ||
            llvm::any_of(user->getResultTypes(),
                         [](Type t) { return isa<BaseMemRefType>(t); }))
          return std::nullopt;
        if (isa<RegionBranchOpInterface>(user) && !isa<scf::ForOp>(user))
          return std::nullopt;
        if (auto loop = dyn_cast<scf::ForOp>(user))
          if (llvm::is_contained(loop.getInitArgs(), aliases[i]))
            return std::nullopt;
        Operation *ancestor = block.findAncestorOpInBlock(*user);
        if (!ancestor)
          return std::nullopt;
        buffer.accesses.push_back(position[ancestor]);
      }
    }
    if (!buffer.dealloc || buffer.accesses.empty())
      return std::nullopt;
    llvm::sort(buffer.accesses);
    buffer.accesses.erase(llvm::unique(buffer.accesses), buffer.accesses.end());
    if (buffer.accesses.back() > buffer.deallocAt)
      return std::nullopt;
    return buffer;
  }

  /// Off the device after `ops[from]`, back before `ops[to]`, waited for
  /// before `ops[next]`.
  void rewrite(Buffer &buffer, ArrayRef<Operation *> ops) {
    MLIRContext *context = &getContext();
    Location loc = buffer.alloc.getLoc();
    Type index = IndexType::get(context), i64 = IntegerType::get(context, 64);
    ModuleOp module = getOperation();
    func::FuncOp offload = ga::cuda::declareRuntimeFunction(
        module, "ga_cuda_offload",
        FunctionType::get(context, {index, index}, {i64}), loc);
    func::FuncOp reload = ga::cuda::declareRuntimeFunction(
        module, "ga_cuda_reload", FunctionType::get(context, {i64, index}, {}),
        loc);
    func::FuncOp wait = ga::cuda::declareRuntimeFunction(
        module, "ga_cuda_reload_wait", FunctionType::get(context, {i64}, {}),
        loc);
    Value old = buffer.alloc.getResult();
    // Off: the copy, then the device buffer freed.
    OpBuilder b(ops[buffer.from]->getBlock(),
                std::next(ops[buffer.from]->getIterator()));
    Value pointer = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, old);
    Value size = arith::ConstantIndexOp::create(b, loc, buffer.bytes);
    Value handle =
        func::CallOp::create(b, loc, offload, ValueRange{pointer, size})
            .getResult(0);
    memref::DeallocOp::create(b, loc, old);
    // Back: a new buffer and the copy into it, then the wait before the
    // next reader.
    b.setInsertionPoint(ops[buffer.to]);
    auto fresh = memref::AllocOp::create(b, loc, buffer.alloc.getType(),
                                         buffer.alloc.getAlignmentAttr());
    Value target =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, fresh);
    func::CallOp::create(b, loc, reload, ValueRange{handle, target});
    OpBuilder views(fresh->getBlock(),
                    std::next(target.getDefiningOp()->getIterator()));
    OpBuilder waits(ops[buffer.next]);
    func::CallOp::create(waits, loc, wait, ValueRange{handle});
    // Every use from the reload on reads the new buffer; views made before
    // it are made again on the new one.
    Block *block = ops[buffer.from]->getBlock();
    Operation *boundary = fresh;
    ArrayRef<Value> aliases = buffer.aliases;
    DenseMap<Value, Value> rebased;
    rebased[old] = fresh.getResult();
    llvm::DenseSet<Value> isAlias(aliases.begin(), aliases.end());
    std::function<Value(Value)> rebase = [&](Value value) -> Value {
      auto it = rebased.find(value);
      if (it != rebased.end())
        return it->second;
      Operation *view = value.getDefiningOp();
      IRMapping map;
      for (Value operand : view->getOperands())
        if (isAlias.contains(operand))
          map.map(operand, rebase(operand));
      Operation *clone = views.clone(*view, map);
      for (auto [from, to] : llvm::zip(view->getResults(), clone->getResults()))
        rebased[from] = to;
      return rebased[value];
    };
    for (Value alias : aliases)
      for (OpOperand &use : llvm::make_early_inc_range(alias.getUses())) {
        Operation *ancestor = block->findAncestorOpInBlock(*use.getOwner());
        if (!ancestor || ancestor == boundary ||
            ancestor->isBeforeInBlock(boundary))
          continue;
        // A view made after the boundary is rebased through its own
        // operand: its uses stay.
        if (Operation *definer = alias.getDefiningOp()) {
          Operation *at = block->findAncestorOpInBlock(*definer);
          if (at && boundary->isBeforeInBlock(at))
            continue;
        }
        use.set(rebase(alias));
      }
    // Views of the old buffer that nothing reads any more go.
    for (Value alias : llvm::reverse(aliases.drop_front()))
      if (alias.use_empty())
        if (Operation *view = alias.getDefiningOp())
          if (llvm::all_of(view->getResults(),
                           [](Value r) { return r.use_empty(); }))
            view->erase();
  }
};

} // namespace
