//===- Allocator.cpp - The step's device memory ---------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga_cuda_alloc and ga_cuda_free, which ga-gpu-device-allocations
// substitutes for the host allocator, and the reads of single elements
// that host code needs (ga_cuda_read_*). A freed block goes back to a cache
// of blocks by size, reused by later allocations of the same size on the
// same stream; the step's own blocks are counted for its peak
// (ga_cuda_memory_stats), as ga_memory_stats counts the CPU allocator's.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include "ga/Runtime/ga_cuda.h"

#include <algorithm>

namespace ga::cuda {

/// Marks a live block that is not counted in the step's bytes.
static constexpr size_t kUncounted = size_t(1) << 63;

/// Frees every cached block once the stream is done with them; returns
/// their bytes.
static size_t emptyCache(State &s) {
  size_t bytes = s.cachedBytes;
  if (s.cached.empty())
    return 0;
  s.cu.cuStreamSynchronize(s.stream);
  if (s.offload.stream)
    s.cu.cuStreamSynchronize(s.offload.stream);
  releaseHostCopies(s);
  for (auto &[cachedSize, block] : s.cached)
    s.cu.cuMemFree_v2(block);
  s.cached.clear();
  s.cachedBytes = 0;
  s.deviceBytes -= static_cast<int64_t>(bytes);
  return bytes;
}

CUdeviceptr allocate(State &s, size_t bytes, bool counted) {
  if (!ensureInitialized(s))
    return 0;
  size_t size = ga_cuda_block_bytes(bytes);
  CUdeviceptr pointer = 0;
  auto it = s.cached.find(size);
  if (it != s.cached.end()) {
    pointer = it->second;
    s.cached.erase(it);
    s.cachedBytes -= size;
    waitForHostCopy(s, pointer);
  } else {
    CUresult rc = s.cu.cuMemAlloc_v2(&pointer, size);
    // (Not while a graph is captured: the stream cannot be waited for.)
    if (rc != 0 && !s.cached.empty() && !s.graph.capturing) {
      // Out of memory: give the cache back and try once more.
      emptyCache(s);
      rc = s.cu.cuMemAlloc_v2(&pointer, size);
    }
    if (!check(s, rc,
               ("cuMemAlloc of " + std::to_string(size) + " bytes").c_str()))
      return 0;
    s.deviceBytes += static_cast<int64_t>(size);
    s.devicePeakBytes = std::max(s.devicePeakBytes, s.deviceBytes);
    ++s.deviceAllocations;
  }
  s.live[pointer] = counted ? size : size | kUncounted;
  if (counted) {
    s.currentBytes += size;
    s.peakBytes = std::max(s.peakBytes, s.currentBytes);
    ++s.allocations;
  }
  return pointer;
}

void release(State &s, CUdeviceptr pointer) {
  auto it = s.live.find(pointer);
  if (it == s.live.end()) {
    recordError(s, "ga_cuda_free of a pointer the CUDA runtime did not "
                   "allocate");
    return;
  }
  size_t size = it->second & ~kUncounted;
  if (!(it->second & kUncounted))
    s.currentBytes -= size;
  s.live.erase(it);
  s.cached.emplace(size, pointer);
  s.cachedBytes += size;
}

/// Element `index` of the device buffer at `pointer`, copied to the host
/// (the host waits: a step captured as a graph stops capturing here).
template <typename T> static T readElement(intptr_t pointer, int64_t index) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  T value{};
  if (!s.usable || !s.error.empty())
    return value;
  hostWaits(s, "the step reads device memory within itself (such as the "
               "label check's position; compile with check-labels=false)");
  if (copy(s, &value, reinterpret_cast<const T *>(pointer) + index, sizeof(T)))
    synchronize(s);
  return value;
}

} // namespace ga::cuda

using namespace ga::cuda;

extern "C" {

void *ga_cuda_alloc(size_t size) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return reinterpret_cast<void *>(allocate(s, size, /*counted=*/true));
}

void *ga_cuda_aligned_alloc(size_t alignment, size_t size) {
  // Device allocations are aligned to at least 256 bytes.
  (void)alignment;
  return ga_cuda_alloc(size);
}

void ga_cuda_free(void *pointer) {
  if (!pointer)
    return;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  release(s, reinterpret_cast<CUdeviceptr>(pointer));
}

float ga_cuda_read_f32(intptr_t p, int64_t i) {
  return readElement<float>(p, i);
}
double ga_cuda_read_f64(intptr_t p, int64_t i) {
  return readElement<double>(p, i);
}
int32_t ga_cuda_read_i32(intptr_t p, int64_t i) {
  return readElement<int32_t>(p, i);
}
int64_t ga_cuda_read_i64(intptr_t p, int64_t i) {
  return readElement<int64_t>(p, i);
}

void ga_cuda_memory_stats(ga_memory *out) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *out = {s.currentBytes, s.peakBytes, s.allocations};
}

void ga_cuda_memory_reset_peak(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.peakBytes = s.currentBytes;
  s.devicePeakBytes = s.deviceBytes;
}

void ga_cuda_device_memory_stats(ga_memory *out) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *out = {s.deviceBytes, s.devicePeakBytes, s.deviceAllocations};
}

size_t ga_cuda_empty_cache(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  // Not while a graph is captured (its stream cannot be waited for), nor
  // before the runtime has a context.
  if (!s.usable || s.graph.capturing)
    return 0;
  return emptyCache(s);
}

} // extern "C"
