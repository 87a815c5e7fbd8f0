//===- Memory.cpp - The step's allocator, with its peak measured ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The CPU pipeline lowers memref allocations to MLIR's generic allocation
// functions (finalize-memref-to-llvm use-generic-functions); this file
// defines them over malloc and counts the bytes they hold, so that a run
// reports the peak of the step's own buffers (ga_memory_stats in
// ga/Runtime/ga_step.h): the figure memory budgets are checked against.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/ga_step.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace {

std::atomic<int64_t> currentBytes{0};
std::atomic<int64_t> peakBytes{0};
std::atomic<int64_t> allocationCount{0};

/// Right before every pointer handed out: the block malloc returned and the
/// size asked for.
struct Header {
  void *block;
  int64_t size;
};

void *allocate(size_t size, size_t alignment) {
  if (alignment < alignof(std::max_align_t))
    alignment = alignof(std::max_align_t);
  void *block = std::malloc(size + alignment + sizeof(Header));
  if (!block)
    return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(block) + sizeof(Header);
  uintptr_t aligned = (start + alignment - 1) / alignment * alignment;
  Header *header = reinterpret_cast<Header *>(aligned) - 1;
  header->block = block;
  header->size = static_cast<int64_t>(size);
  int64_t now = currentBytes.fetch_add(header->size) + header->size;
  int64_t peak = peakBytes.load();
  while (now > peak && !peakBytes.compare_exchange_weak(peak, now)) {
  }
  allocationCount.fetch_add(1);
  return reinterpret_cast<void *>(aligned);
}

} // namespace

extern "C" void *_mlir_memref_to_llvm_alloc(size_t size) {
  return allocate(size, alignof(std::max_align_t));
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                    size_t size) {
  return allocate(size, alignment);
}

extern "C" void _mlir_memref_to_llvm_free(void *pointer) {
  if (!pointer)
    return;
  Header *header = static_cast<Header *>(pointer) - 1;
  currentBytes.fetch_sub(header->size);
  std::free(header->block);
}

extern "C" void ga_memory_stats(ga_memory *out) {
  out->current_bytes = currentBytes.load();
  out->peak_bytes = peakBytes.load();
  out->allocations = allocationCount.load();
}

extern "C" void ga_memory_reset_peak(void) {
  peakBytes.store(currentBytes.load());
}
