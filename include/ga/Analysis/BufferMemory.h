//===- BufferMemory.h - The memory model of a bufferized step ---*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Simulates one call of a bufferized function (memrefs, deallocations
// placed) in program order and follows every heap buffer it allocates: the
// bytes held after each allocation, the peak, and which buffers are alive
// at the peak. Loops run their trip counts, calls run their callees; views
// (casts, subviews, reshapes, strided metadata) belong to the buffer they
// view. It counts what the runtime counts (ga_memory_stats): each
// `memref.alloc` as the bytes of its elements plus its alignment (the
// lowering over-allocates by the alignment to align the pointer), never the
// function's arguments, globals or stack buffers (`memref.alloca`).
//
// The model reads the IR that the target really runs, so it holds for any
// target that bufferizes the same way: the CUDA target plans device memory
// with it too.
//
//===----------------------------------------------------------------------===//

#ifndef GA_ANALYSIS_BUFFERMEMORY_H
#define GA_ANALYSIS_BUFFERMEMORY_H

#include "ga/Runtime/ga_cuda.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <map>
#include <optional>

namespace ga {

/// The buffers of one allocation site alive at the peak.
struct LiveAllocation {
  mlir::Operation *alloc;
  int64_t bytes; // all of this site's buffers together
  int64_t count;
};

/// What one simulated call of a function allocates.
struct BufferMemoryProfile {
  /// The most bytes held at once by the function's own buffers.
  int64_t peakBytes = 0;
  /// Buffers allocated over the call (every loop iteration counted).
  int64_t allocations = 0;
  /// Bytes still held when the function returns (its results).
  int64_t returnedBytes = 0;
  /// The allocation sites whose buffers are alive at the peak, largest
  /// first.
  llvm::SmallVector<LiveAllocation> liveAtPeak;
  /// The allocation that reached the peak (null when nothing is allocated).
  mlir::Operation *peakAt = nullptr;
  /// For each block size (bytes rounded up to the CUDA runtime's 512), the
  /// most blocks of that size alive at once: what a caching allocator that
  /// keeps freed blocks by size holds (cachingAllocatorBytes).
  std::map<int64_t, int64_t> mostBlocksBySize;
  /// Some `scf.if` had a condition known only at run time (a buffer's
  /// ownership, computed by the deallocation helpers) and deallocates or
  /// allocates: the model took its then-branch, which frees a buffer the
  /// function owns.
  bool assumedOwnership = false;
};

/// The bytes the runtime counts for an allocation of `type` with
/// `alignment` (0: none), or nothing for a dynamic shape.
std::optional<int64_t> allocationBytes(mlir::MemRefType type,
                                       int64_t alignment);

/// The block the CUDA runtime's allocator gives an allocation of `bytes`
/// (ga_cuda_block_bytes: rounded up to 512 bytes).
inline int64_t deviceBlockBytes(int64_t bytes) {
  return static_cast<int64_t>(
      ga_cuda_block_bytes(static_cast<size_t>(bytes > 0 ? bytes : 0)));
}

/// The device memory that the CUDA runtime's caching allocator holds over
/// a call profiled as `profile`: each block rounded to 512 bytes, a freed
/// block kept for the next allocation of its size (never given back, never
/// split), so that it holds, for every size, the most blocks of that size
/// alive at once; `residentBytes` (the inputs copied to the device, alive
/// over the whole call) add to their sizes. cuBLAS's workspace is not in it.
int64_t cachingAllocatorBytes(const BufferMemoryProfile &profile,
                              llvm::ArrayRef<int64_t> residentBytes);

/// Follows a simulation as it runs: every operation before it runs (in
/// every loop iteration and callee, the operations inside a loop or a call
/// after the loop's or the call's own), and every buffer as it is allocated
/// and freed. For analyses that attribute the bytes to parts of a program
/// (train-plan-remat measures its units with it).
class BufferMemoryObserver {
public:
  virtual ~BufferMemoryObserver();
  /// `op` runs next; the function's buffers hold `heldBytes`; `bufferOf`
  /// gives the buffer a value views (its `id`), -1 for memory the function
  /// does not own.
  virtual void
  beforeOperation(mlir::Operation &op, int64_t heldBytes,
                  llvm::function_ref<int64_t(mlir::Value)> bufferOf) {}
  /// `alloc` made a buffer of `bytes`, named `id` until it is freed.
  virtual void allocated(mlir::Operation *alloc, int64_t bytes, int64_t id) {}
  /// The buffer `id` is freed.
  virtual void freed(int64_t id) {}
};

/// Simulates one call of `function`, whose callees are looked up in its
/// symbol table (`observer`, when given, follows it). Fails, with an error at
/// the operation, on what the model cannot follow: a dynamic allocation size or
/// loop bound, a deallocation of a buffer the function does not hold, an
/// allocation inside an operation whose regions it does not run (scf.while,
/// scf.parallel, ...).
mlir::FailureOr<BufferMemoryProfile>
simulateBufferMemory(mlir::func::FuncOp function,
                     BufferMemoryObserver *observer = nullptr);

} // namespace ga

#endif // GA_ANALYSIS_BUFFERMEMORY_H
