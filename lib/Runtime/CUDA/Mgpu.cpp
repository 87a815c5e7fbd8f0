//===- Mgpu.cpp - The mgpu* functions of MLIR's gpu-to-llvm lowering ------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// What the host code of a step calls for the gpu dialect's operations (the
// ABI of MLIR 22's CudaRuntimeWrappers, on the runtime's one stream):
// modules, loaded by a global constructor when the step library is loaded
// (a failure there is recorded, never an abort); kernel launches; events;
// memory through the step's allocator. mgpuStreamSynchronize does not wait:
// every operation of a step is on one stream, in order, and the host waits
// only where it reads device memory (ga_cuda_read_*, ga_cuda_step_leave),
// so that a step is one asynchronous sequence.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include "ga/Runtime/ga_cuda.h"

#include <cstdio>
#include <cstdlib>

using namespace ga::cuda;

/// A memset of `count` elements of `value` on the step's stream, with the
/// driver's function of that element size.
template <typename T, typename Fn>
static void memset(void *dst, T value, size_t count, Fn DriverFunctions::*fn,
                   const char *call) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.usable)
    check(
        s,
        (s.cu.*fn)(reinterpret_cast<CUdeviceptr>(dst), value, count, s.stream),
        call);
}

extern "C" {

void *mgpuModuleLoad(void *data, size_t /*size*/) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!ensureInitialized(s))
    return nullptr;
  CUmodule module = nullptr;
  if (!check(s, s.cu.cuModuleLoadData(&module, data), "cuModuleLoadData"))
    return nullptr;
  int index = static_cast<int>(s.profile.moduleIndex.size());
  s.profile.moduleIndex[module] = index;
  return module;
}

void *mgpuModuleLoadJIT(void *data, int /*optLevel*/) {
  return mgpuModuleLoad(data, 0);
}

void mgpuModuleUnload(void *module) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (module && s.usable)
    s.cu.cuModuleUnload(module);
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!module || !s.usable)
    return nullptr;
  CUfunction function = nullptr;
  check(s, s.cu.cuModuleGetFunction(&function, module, name),
        (std::string("cuModuleGetFunction(") + name + ")").c_str());
  Profile &p = s.profile;
  if (p.enabled && function)
    p.functionLabel[function] =
        std::string(name) + " (module #" +
        std::to_string(p.moduleIndex.count(module) ? p.moduleIndex[module]
                                                   : -1) +
        ")";
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!function) {
    recordError(s, s.usable ? "a kernel of the step was not loaded"
                            : "no CUDA device");
    return;
  }
  if (!s.error.empty())
    return; // The step has failed already; its results are not used.
  long timed = -1;
  if (s.profile.enabled)
    timed = profileBegin(
        s, s.profile.functionLabel[function] + " grid " +
               std::to_string(gridX) + "x" + std::to_string(gridY) + "x" +
               std::to_string(gridZ) + " block " + std::to_string(blockX) +
               "x" + std::to_string(blockY) + "x" + std::to_string(blockZ));
  check(s,
        s.cu.cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY,
                            blockZ, smem, stream ? stream : s.stream, params,
                            extra),
        "cuLaunchKernel");
  profileEnd(s, timed);
  afterLaunch(s);
}

void *mgpuStreamCreate() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ensureInitialized(s);
  return s.stream;
}

void mgpuStreamDestroy(void * /*stream*/) {}

void mgpuStreamSynchronize(void * /*stream*/) {
  // Every operation of a step is on the one stream, in order; the host
  // waits where it reads device memory.
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.usable)
    check(s, s.cu.cuStreamWaitEvent(stream ? stream : s.stream, event, 0),
          "cuStreamWaitEvent");
}

void *mgpuEventCreate() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  CUevent event = nullptr;
  if (ensureInitialized(s))
    check(s, s.cu.cuEventCreate(&event, /*CU_EVENT_DISABLE_TIMING=*/2),
          "cuEventCreate");
  return event;
}

void mgpuEventDestroy(void *event) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (event && s.usable)
    s.cu.cuEventDestroy_v2(event);
}

void mgpuEventSynchronize(void *event) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (event && s.usable) {
    hostWaits(s, "the step waits for an event within itself");
    check(s, s.cu.cuEventSynchronize(event), "cuEventSynchronize");
  }
}

void mgpuEventRecord(void *event, void *stream) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (event && s.usable)
    check(s, s.cu.cuEventRecord(event, stream ? stream : s.stream),
          "cuEventRecord");
}

void *mgpuMemAlloc(uint64_t bytes, void * /*stream*/, bool /*hostShared*/) {
  return ga_cuda_alloc(bytes);
}

void mgpuMemFree(void *pointer, void * /*stream*/) { ga_cuda_free(pointer); }

void mgpuMemcpy(void *dst, void *src, size_t bytes, void * /*stream*/) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.usable)
    copy(s, dst, src, bytes);
}

void mgpuMemset32(void *dst, unsigned int value, size_t count,
                  void * /*stream*/) {
  memset(dst, value, count, &DriverFunctions::cuMemsetD32Async,
         "cuMemsetD32Async");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  void * /*stream*/) {
  memset(dst, value, count, &DriverFunctions::cuMemsetD16Async,
         "cuMemsetD16Async");
}

void mgpuSetDefaultDevice(int32_t device) {
  static char text[16];
  std::snprintf(text, sizeof(text), "%d", device);
  setenv("GA_CUDA_DEVICE", text, 1);
}

} // extern "C"
