//===- Offload.cpp - Buffers to pinned host memory and back ---------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// What ga-gpu-offload-buffers calls (host-offload): a buffer the step does
// not read for a while is copied to pinned host memory and freed, then
// copied back into a new buffer before its next reader. The copies run on
// a second stream, so that they overlap the step's kernels; events order
// them:
//
//   offload   copy stream waits for the step's stream (the writers of the
//             buffer are done), copies to the host block, records `read`;
//             the device block goes back to the cache as the step frees it,
//             and the step's stream waits for `read` before the allocator
//             hands that block out again;
//   reload    copy stream waits for the step's stream (the new block's
//             earlier users are done), copies back, records `back`;
//   wait      the step's stream waits for `back` (the reader comes next).
//
// A step that offloads is not captured as a CUDA graph (GA_CUDA_GRAPH=1
// turns off at the first offload, with the reason in ga_cuda_graph_status).
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include "ga/Runtime/ga_cuda.h"

#include <cstdlib>

namespace ga::cuda {

/// CU_STREAM_NON_BLOCKING.
static constexpr unsigned kNonBlocking = 1;

/// Whether the copy stream exists (made on the first offload).
static bool ensureCopyStream(State &s) {
  if (s.offload.stream)
    return true;
  s.offload.unordered =
      std::getenv("GA_CUDA_OFFLOAD_UNORDERED") &&
      std::string(std::getenv("GA_CUDA_OFFLOAD_UNORDERED")) == "1";
  return check(s, s.cu.cuStreamCreate(&s.offload.stream, kNonBlocking),
               "cuStreamCreate (the copy stream)");
}

void waitForHostCopy(State &s, CUdeviceptr pointer) {
  auto it = s.offload.reading.find(pointer);
  if (it == s.offload.reading.end())
    return;
  check(s, s.cu.cuStreamWaitEvent(s.stream, it->second, 0),
        "cuStreamWaitEvent");
  s.offload.events.push_back(it->second);
  s.offload.reading.erase(it);
}

void releaseHostCopies(State &s) {
  Offload &o = s.offload;
  for (auto &[pointer, event] : o.reading)
    o.events.push_back(event);
  o.reading.clear();
  for (auto &[size, block] : o.pinned)
    s.cu.cuMemFreeHost(block);
  o.pinned.clear();
}

/// The host copy of `handle`, when the step has not failed and the copy is
/// in the state the call expects: copied back (the wait) or not yet (the
/// reload); else null, the misuse recorded.
static HostCopy *hostCopy(State &s, int64_t handle, bool copiedBack) {
  Offload &o = s.offload;
  if (!s.error.empty())
    return nullptr;
  if (handle < 0 || handle >= static_cast<int64_t>(o.copies.size()) ||
      !o.copies[handle].host || bool(o.copies[handle].back) != copiedBack) {
    recordError(s, copiedBack ? "ga_cuda_reload_wait of a handle without a "
                                "copy back"
                              : "ga_cuda_reload of a handle that "
                                "ga_cuda_offload did not return or that is "
                                "already copied back");
    return nullptr;
  }
  return &o.copies[handle];
}

} // namespace ga::cuda

using namespace ga::cuda;

extern "C" {

int64_t ga_cuda_offload(intptr_t pointer, int64_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.usable || !s.error.empty() || bytes <= 0)
    return -1;
  hostWaits(s, "the step copies buffers to host memory (host-offload)");
  if (!ensureCopyStream(s))
    return -1;
  Offload &o = s.offload;
  HostCopy copy;
  copy.bytes = static_cast<size_t>(bytes);
  auto cached = o.pinned.find(copy.bytes);
  if (cached != o.pinned.end()) {
    copy.host = cached->second;
    o.pinned.erase(cached);
  } else if (!check(s, s.cu.cuMemAllocHost_v2(&copy.host, copy.bytes),
                    ("cuMemAllocHost of " + std::to_string(bytes) + " bytes")
                        .c_str())) {
    return -1;
  }
  CUdeviceptr device = static_cast<CUdeviceptr>(pointer);
  CUevent read = takeEvent(s, o.events);
  if (!read || !follow(s, o.stream, s.stream, o.events) ||
      !check(s,
             s.cu.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(copy.host),
                                device, copy.bytes, o.stream),
             "cuMemcpyAsync (to host memory)") ||
      !check(s, s.cu.cuEventRecord(read, o.stream), "cuEventRecord"))
    return -1;
  // The block's next user waits for this copy (a block copied twice waits
  // for the later copy, which follows the earlier one on the stream).
  auto [it, inserted] = o.reading.emplace(device, read);
  if (!inserted) {
    o.events.push_back(it->second);
    it->second = read;
  }
  int64_t handle;
  if (!o.freeHandles.empty()) {
    handle = o.freeHandles.back();
    o.freeHandles.pop_back();
    o.copies[handle] = copy;
  } else {
    handle = static_cast<int64_t>(o.copies.size());
    o.copies.push_back(copy);
  }
  return handle;
}

void ga_cuda_reload(int64_t handle, intptr_t pointer) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Offload &o = s.offload;
  HostCopy *found = hostCopy(s, handle, /*copiedBack=*/false);
  if (!found)
    return;
  HostCopy &copy = *found;
  CUevent back = takeEvent(s, o.events);
  if (!back || !follow(s, o.stream, s.stream, o.events) ||
      !check(s,
             s.cu.cuMemcpyAsync(static_cast<CUdeviceptr>(pointer),
                                reinterpret_cast<CUdeviceptr>(copy.host),
                                copy.bytes, o.stream),
             "cuMemcpyAsync (from host memory)") ||
      !check(s, s.cu.cuEventRecord(back, o.stream), "cuEventRecord"))
    return;
  copy.back = back;
}

void ga_cuda_reload_wait(int64_t handle) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Offload &o = s.offload;
  HostCopy *found = hostCopy(s, handle, /*copiedBack=*/true);
  if (!found)
    return;
  HostCopy &copy = *found;
  if (!o.unordered)
    check(s, s.cu.cuStreamWaitEvent(s.stream, copy.back, 0),
          "cuStreamWaitEvent");
  o.events.push_back(copy.back);
  // The next copy into this host block runs on the copy stream after the
  // copy back, which has read it.
  o.pinned.emplace(copy.bytes, copy.host);
  copy = HostCopy();
  o.freeHandles.push_back(handle);
}

} // extern "C"
