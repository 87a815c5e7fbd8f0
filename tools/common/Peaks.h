//===- Peaks.h - The two peaks every tool reports ---------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// One name for each peak in every tool (ga-run, ga-exec, ga-train) and in
// the docs:
//   step_peak_bytes    the step's own buffers at their most (intermediates
//                      and results until they are copied out);
//   budget_peak_bytes  what memory-budget bounds: on the CPU, those buffers
//                      plus the step's arguments; on a CUDA device, the
//                      device's high-water mark of what the runtime holds
//                      (the step's buffers, the inputs' copies, the caching
//                      allocator's free blocks, cuBLAS's workspace).
//
//===----------------------------------------------------------------------===//

#ifndef GA_TOOLS_COMMON_PEAKS_H
#define GA_TOOLS_COMMON_PEAKS_H

#include "ga/Runtime/Npy.h"
#include "ga/Runtime/ga_step.h"

#include <optional>
#include <string>
#include <vector>

namespace ga::tool {

/// The bytes of a step's arguments, as the tools hold them.
inline int64_t argumentBytes(const std::vector<ga::NpyArray> &arrays) {
  int64_t bytes = 0;
  for (const ga::NpyArray &array : arrays)
    bytes += static_cast<int64_t>(array.data.size());
  return bytes;
}

/// The lines "step_peak_bytes: ..." and "budget_peak_bytes: ...": `step`
/// is the step's buffers' count, `argumentBytes` the arguments' bytes (on
/// the CPU), `device` the CUDA runtime's device count where the step ran
/// on a device (nullopt on the CPU; a device runtime without that count
/// prints no budget line).
inline std::string peakLines(const ga_memory &step, int64_t argumentBytes,
                             bool onDevice,
                             std::optional<ga_memory> device = std::nullopt) {
  // (Standard C++ only: ga-exec links no LLVM.)
  std::string text = "step_peak_bytes: " + std::to_string(step.peak_bytes) +
                     (onDevice ? " (device memory)" : "") + "\n";
  if (!onDevice)
    text += "budget_peak_bytes: " +
            std::to_string(step.peak_bytes + argumentBytes) +
            " (step buffers " + std::to_string(step.peak_bytes) +
            " + arguments " + std::to_string(argumentBytes) +
            "; what memory-budget bounds)\n";
  else if (device)
    text += "budget_peak_bytes: " + std::to_string(device->peak_bytes) +
            " (the device's high-water mark: the step's buffers, the "
            "inputs' copies, cached blocks, cuBLAS's workspace; what "
            "memory-budget bounds)\n";
  return text;
}

} // namespace ga::tool

#endif // GA_TOOLS_COMMON_PEAKS_H
