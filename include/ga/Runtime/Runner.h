//===- Runner.h - What ga-run and ga-exec share -----------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The steps of running a compiled step on .npy files, shared by the JIT
// runners (ga-run, ga-train) and the step library runner (ga-exec), so that
// they read, check, report and fail alike. Standard C++ only.
//
//===----------------------------------------------------------------------===//

#ifndef GA_RUNTIME_RUNNER_H
#define GA_RUNTIME_RUNNER_H

#include "ga/Runtime/Signature.h"
#include "ga/Runtime/ga_step.h"

#include <string>
#include <vector>

namespace ga {

/// Reads the .npy files `paths` as the arguments of `signature`'s step and
/// checks their count, dtypes and shapes. Returns an empty string, or the
/// first error ("argument #I: cannot read 'F': ...", "argument #I ('F'):
/// expected ..., got ...", "@NAME takes N argument(s), got M .npy
/// file(s)").
std::string readArguments(const StepSignature &signature,
                          const std::vector<std::string> &paths,
                          std::vector<NpyArray> &arrays);

/// C-order buffers for the results of `signature`'s step, and the pointers
/// to pass as its outputs.
std::vector<NpyArray> makeResultBuffers(const StepSignature &signature,
                                        std::vector<void *> &pointers);

/// What a runner prints when the step returned `status` (not GA_OK): for a
/// runtime error of the step, "@NAME: " and the file of the argument it
/// names (`paths`); "; no result written" after every message.
std::string stepFailure(const StepSignature &signature, const ga_status &status,
                        const std::vector<std::string> &paths);

/// Prepares a runner's process for steps: freed buffers are kept for reuse
/// (glibc would otherwise return every large one to the kernel and fault it
/// in again at the next step), and OMP_NUM_THREADS is `threads` when
/// positive, else left as set, else the cores divided among `ranks` ranks.
void prepareProcess(long threads, int64_t ranks);

/// Fills `status` (if not null) with `code` and `message`; returns `code`.
int32_t setStatus(ga_status *status, int32_t code, const std::string &message);

/// The parsed signature of a step library's `text` (cachedSignature), or
/// null with `status` set to GA_ERROR_SIGNATURE: what the entry and exit of
/// a step read.
const StepSignature *stepSignature(const char *text, ga_status *status);

/// The arguments of a JIT-compiled step's packed entry point
/// (ExecutionEngine::invokePacked): a memref descriptor (allocated and
/// aligned pointer, offset, sizes, strides; 8-byte fields) per argument over
/// a C-order buffer of the signature's shape, every field passed by pointer,
/// then the space where the step stores its results' descriptors (one
/// descriptor for one result, a struct of them for several: the same flat
/// layout), which ga_step_leave reads.
class PackedStepCall {
public:
  PackedStepCall(const StepSignature &signature,
                 const std::vector<const void *> &inputs);
  PackedStepCall(const PackedStepCall &) = delete;
  PackedStepCall &operator=(const PackedStepCall &) = delete;

  /// Points argument `i` at `data` instead (a device copy of it).
  void rebase(size_t i, const void *data);
  /// What invokePacked takes.
  std::vector<void *> &arguments() { return packed; }
  /// The results' descriptors, after a run.
  const int64_t *results() const { return resultFields.data(); }

private:
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<int64_t> resultFields;
  std::vector<void *> packed;
};

/// Copies a `rank`-d buffer of `sizes` elements of `elemSize` bytes from
/// `src` (offset and strides in elements) to `dst`; memmove per element, so
/// the two may overlap only where an element overlaps itself.
void copyStrided(char *dst, int64_t dstOffset, const int64_t *dstStrides,
                 const char *src, int64_t srcOffset, const int64_t *srcStrides,
                 const int64_t *sizes, int64_t rank, size_t elemSize);

} // namespace ga

#endif // GA_RUNTIME_RUNNER_H
