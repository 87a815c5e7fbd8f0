//===- CudaRuntime.h - The CUDA runtime's entry points for a JIT ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// What ga-run and ga-train, which JIT-compile a step for target=cuda, call
// in libga_cuda_runtime themselves (the step's code calls the rest): the
// step's entry (its inputs copied to the device) and exit (its results
// back), the device's name and its memory statistics. The tool defines
// GA_CUDA_RUNTIME_LIBRARY, where the build put the runtime (one beside the
// tool's own lib/ comes first: runtimeLibrary).
//
//===----------------------------------------------------------------------===//

#ifndef GA_TOOLS_COMMON_CUDARUNTIME_H
#define GA_TOOLS_COMMON_CUDARUNTIME_H

#include "Tool.h"
#include "ga/Runtime/ga_step.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <cstdint>
#include <optional>
#include <string>

#include <dlfcn.h>

namespace ga::tool {

/// The entry points of libga_cuda_runtime that a tool calls.
struct CudaRuntime {
  using Enter = int32_t (*)(const char *, const void *const *, void *const *,
                            ga_status *, void **);
  using Leave = int32_t (*)(const char *, const int64_t *, void *const *,
                            void *const *, ga_status *);
  using Name = const char *(*)(const char **);
  using Stats = void (*)(ga_memory *);
  Enter enter = nullptr;
  Leave leave = nullptr;
  Name name = nullptr;
  Stats stats = nullptr;
  /// The device's high-water mark (ga_cuda_device_memory_stats); null in a
  /// runtime that predates it.
  Stats deviceStats = nullptr;

  /// The device count, where the runtime has it.
  std::optional<ga_memory> device() const {
    if (!deviceStats)
      return std::nullopt;
    ga_memory memory;
    deviceStats(&memory);
    return memory;
  }
};

/// The shared libraries a JIT-compiled step calls: libga_runtime, the OpenMP
/// runtime and, for a step on a CUDA device, libga_cuda_runtime (found as
/// runtimeLibrary finds them). The strings live as long as the process, as
/// ExecutionEngineOptions::sharedLibPaths needs.
inline llvm::SmallVector<llvm::StringRef> jitRuntimeLibraries(bool cuda) {
  static const std::string runtime =
      runtimeLibrary("libga_runtime.so", GA_RUNTIME_LIBRARY);
  static const std::string cudaRuntime =
      runtimeLibrary("libga_cuda_runtime.so", GA_CUDA_RUNTIME_LIBRARY);
  llvm::SmallVector<llvm::StringRef> libraries = {runtime, GA_OPENMP_RUNTIME};
  if (cuda)
    libraries.push_back(cudaRuntime);
  return libraries;
}

/// Loads the CUDA runtime and checks that a device is there; "" on
/// success, else why not ("@STEP runs on a CUDA device: no CUDA device:
/// ...").
inline std::string loadCudaRuntime(const std::string &stepName,
                                   CudaRuntime &cuda) {
  std::string library =
      runtimeLibrary("libga_cuda_runtime.so", GA_CUDA_RUNTIME_LIBRARY);
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle)
    return (llvm::Twine("cannot load the CUDA runtime ") + library + ": " +
            dlerror())
        .str();
  cuda.enter =
      reinterpret_cast<CudaRuntime::Enter>(dlsym(handle, "ga_cuda_step_enter"));
  cuda.leave =
      reinterpret_cast<CudaRuntime::Leave>(dlsym(handle, "ga_cuda_step_leave"));
  cuda.name =
      reinterpret_cast<CudaRuntime::Name>(dlsym(handle, "ga_cuda_device_name"));
  cuda.stats = reinterpret_cast<CudaRuntime::Stats>(
      dlsym(handle, "ga_cuda_memory_stats"));
  cuda.deviceStats = reinterpret_cast<CudaRuntime::Stats>(
      dlsym(handle, "ga_cuda_device_memory_stats"));
  if (!cuda.enter || !cuda.leave || !cuda.name || !cuda.stats)
    return (llvm::Twine(library) +
            " lacks ga_cuda_step_enter, ga_cuda_step_leave, "
            "ga_cuda_device_name or ga_cuda_memory_stats")
        .str();
  const char *reason = nullptr;
  if (!cuda.name(&reason))
    return "@" + stepName +
           " runs on a CUDA device: " + (reason ? reason : "no CUDA device");
  return "";
}

} // namespace ga::tool

#endif // GA_TOOLS_COMMON_CUDARUNTIME_H
