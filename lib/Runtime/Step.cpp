//===- Step.cpp - The entry and exit of a compiled step -------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga_step_enter and ga_step_leave, which a step library's ga_step_run calls
// around the compiled code (and ga-run around the JIT-compiled code), and
// memrefCopy, which bufferized code calls for strided copies. Standard C++
// only.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/Errors.h"
#include "ga/Runtime/Runner.h"
#include "ga/Runtime/Signature.h"
#include "ga/Runtime/ga_step.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

extern "C" void _mlir_memref_to_llvm_free(void *pointer);

using ga::setStatus;

/// A call's start: `status` cleared, the step's signature (null, with the
/// reason in `status`, where `signature` does not parse).
static const ga::StepSignature *signatureOfCall(const char *signature,
                                                ga_status *status) {
  if (status)
    *status = ga_status{};
  return ga::stepSignature(signature, status);
}

extern "C" int32_t ga_step_enter(const char *signature,
                                 const void *const *inputs,
                                 void *const *outputs, ga_status *status) {
  const ga::StepSignature *sig = signatureOfCall(signature, status);
  if (!sig)
    return GA_ERROR_SIGNATURE;
  if (ga_world_size() != sig->ranks)
    return setStatus(
        status, GA_ERROR_WORLD_SIZE,
        "@" + sig->entry + " runs on " + std::to_string(sig->ranks) +
            " data-parallel rank(s), but this process is in a world of " +
            std::to_string(ga_world_size()) +
            (sig->ranks > 1 ? ": launch it with `mpirun -np " +
                                  std::to_string(sig->ranks) + " ...`"
                            : ": run it without mpirun"));
  for (size_t i = 0; i < sig->inputs.size(); ++i)
    if (!inputs || !inputs[i])
      return setStatus(status, GA_ERROR_INVALID_ARGUMENT,
                       "@" + sig->entry + ": input #" + std::to_string(i) +
                           " is a null pointer");
  for (size_t i = 0; i < sig->results.size(); ++i)
    if (!outputs || !outputs[i])
      return setStatus(status, GA_ERROR_INVALID_ARGUMENT,
                       "@" + sig->entry + ": output #" + std::to_string(i) +
                           " is a null pointer");
  // An error left by an earlier step is not this step's.
  ga_error stale;
  ga_take_error(&stale);
  return GA_OK;
}

extern "C" int32_t ga_step_leave(const char *signature, const int64_t *results,
                                 const void *const *inputs,
                                 void *const *outputs, ga_status *status) {
  const ga::StepSignature *sig = signatureOfCall(signature, status);
  if (!sig)
    return GA_ERROR_SIGNATURE;
  // Copy every result before freeing any: results can share a buffer.
  std::vector<int64_t> allocated;
  size_t offset = 0;
  for (size_t i = 0; i < sig->results.size(); ++i) {
    const ga::TensorSpec &spec = sig->results[i];
    int64_t rank = spec.shape.size();
    const int64_t *fields = results + offset;
    offset += 3 + 2 * rank;
    std::vector<int64_t> contiguous(rank);
    for (int64_t d = rank - 1, stride = 1; d >= 0; --d) {
      contiguous[d] = stride;
      stride *= spec.shape[d];
    }
    ga::copyStrided(static_cast<char *>(outputs[i]), 0, contiguous.data(),
                    reinterpret_cast<const char *>(fields[1]), fields[2],
                    fields + 3 + rank, fields + 3, rank,
                    ga::npyDTypeSize(spec.dtype));
    allocated.push_back(fields[0]);
  }
  std::vector<int64_t> freed;
  for (int64_t pointer : allocated) {
    bool isInput = false;
    for (size_t j = 0; j < sig->inputs.size(); ++j)
      isInput |= reinterpret_cast<int64_t>(inputs[j]) == pointer;
    // 0xdeadbeef marks a descriptor of a global constant.
    bool seen = false;
    for (int64_t f : freed)
      seen |= f == pointer;
    if (!pointer || pointer == 0xdeadbeef || isInput || seen)
      continue;
    freed.push_back(pointer);
    // The step allocated it with the runtime's allocator (Memory.cpp).
    _mlir_memref_to_llvm_free(reinterpret_cast<void *>(pointer));
  }
  ga_error error;
  if (ga_take_error(&error) == GA_OK)
    return GA_OK;
  std::string where;
  if (error.argument >= 0 && error.argument < (int64_t)sig->inputs.size())
    where = ga::multiIndex(sig->inputs[error.argument].shape, error.position);
  return setStatus(status, error.code, ga::describeError(error, where));
}

namespace {
/// MLIR's unranked memref: the rank and a pointer to a ranked descriptor.
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};
} // namespace

/// Copies `src` into `dst` (same rank and sizes, any strides): the function
/// that MLIR's lowering of memref.copy calls for non-contiguous buffers.
extern "C" void memrefCopy(int64_t elemSize, UnrankedMemRef *src,
                           UnrankedMemRef *dst) {
  int64_t rank = src->rank;
  auto *s = static_cast<const int64_t *>(src->descriptor);
  auto *d = static_cast<const int64_t *>(dst->descriptor);
  ga::copyStrided(reinterpret_cast<char *>(d[1]), d[2], d + 3 + rank,
                  reinterpret_cast<const char *>(s[1]), s[2], s + 3 + rank,
                  s + 3, rank, elemSize);
}
