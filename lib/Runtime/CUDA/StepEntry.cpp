//===- StepEntry.cpp - The entry and exit of a CUDA step library ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga_cuda_step_enter and ga_cuda_step_leave, which a step library compiled
// for CUDA (ga-export-step runtime=cuda) calls around its compiled code:
// the CPU runtime's checks, the inputs copied to the device, and at the
// exit the results copied back (through a host copy where strided), the
// step's buffers freed, and the first failure of the step reported.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include "ga/Runtime/Errors.h"
#include "ga/Runtime/Runner.h"
#include "ga/Runtime/Signature.h"
#include "ga/Runtime/ga_cuda.h"

namespace ga::cuda {

static int64_t bytesOf(const TensorSpec &spec) {
  return spec.numElements() * npyDTypeSize(spec.dtype);
}

/// Copies the step's inputs to fresh device buffers; on failure, frees
/// them and returns the reason.
static std::string copyInputs(State &s, const StepSignature &sig,
                              const void *const *inputs, void **deviceInputs) {
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    int64_t bytes = bytesOf(sig.inputs[i]);
    CUdeviceptr device = allocate(s, bytes, /*counted=*/false);
    deviceInputs[i] = reinterpret_cast<void *>(device);
    if (!device || !copy(s, deviceInputs[i], inputs[i], bytes)) {
      for (size_t j = 0; j <= i; ++j)
        if (deviceInputs[j])
          release(s, reinterpret_cast<CUdeviceptr>(deviceInputs[j]));
      std::string message = s.error;
      s.error.clear();
      return "input #" + std::to_string(i) +
             " cannot be copied to the device: " + message;
    }
  }
  return {};
}

/// Copies result `spec` (the memref descriptor `fields`, on the device) to
/// the caller's `output` (host or device memory): directly where
/// contiguous, else through a host copy of the span its strides cover,
/// made dense on the host and copied to `output`.
static void copyResult(State &s, const TensorSpec &spec, const int64_t *fields,
                       void *output, std::vector<char> &staging) {
  int64_t rank = spec.shape.size();
  size_t elem = npyDTypeSize(spec.dtype);
  const char *aligned = reinterpret_cast<const char *>(fields[1]);
  const int64_t *sizes = fields + 3, *strides = fields + 3 + rank;
  bool contiguous = true;
  int64_t expected = 1, span = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    contiguous &= sizes[d] == 1 || strides[d] == expected;
    expected *= sizes[d];
    if (sizes[d] > 0)
      span += (sizes[d] - 1) * strides[d];
  }
  if (contiguous) {
    copy(s, output, aligned + fields[2] * elem, expected * elem);
    return;
  }
  staging.resize(span * elem);
  if (!copy(s, staging.data(), aligned + fields[2] * elem, span * elem) ||
      !synchronize(s))
    return;
  std::vector<int64_t> dense(rank);
  for (int64_t d = rank - 1, st = 1; d >= 0; --d) {
    dense[d] = st;
    st *= sizes[d];
  }
  std::vector<char> packed(expected * elem);
  copyStrided(packed.data(), 0, dense.data(), staging.data(), 0, strides, sizes,
              rank, elem);
  // The host waits: `packed` dies here.
  if (copy(s, output, packed.data(), packed.size()))
    synchronize(s);
}

/// Frees what the step allocated for its results (not the inputs, not
/// constants, each once), then the inputs' device copies.
static void releaseStepBuffers(State &s, const StepSignature &sig,
                               const std::vector<CUdeviceptr> &allocated,
                               void *const *deviceInputs) {
  for (CUdeviceptr pointer : allocated) {
    bool skip = !pointer || pointer == 0xdeadbeef || !s.live.count(pointer);
    for (size_t j = 0; j < sig.inputs.size(); ++j)
      skip |= reinterpret_cast<CUdeviceptr>(deviceInputs[j]) == pointer;
    if (!skip)
      release(s, pointer);
  }
  for (size_t j = 0; j < sig.inputs.size(); ++j)
    if (deviceInputs[j])
      release(s, reinterpret_cast<CUdeviceptr>(deviceInputs[j]));
}

} // namespace ga::cuda

using namespace ga::cuda;

extern "C" {

int32_t ga_cuda_step_enter(const char *signature, const void *const *inputs,
                           void *const *outputs, ga_status *status,
                           void **deviceInputs) {
  // The checks of the CPU runtime: signature, world size, null pointers.
  int32_t rc = ga_step_enter(signature, inputs, outputs, status);
  if (rc != GA_OK)
    return rc;
  const ga::StepSignature *sig = ga::stepSignature(signature, status);
  if (!sig)
    return GA_ERROR_SIGNATURE;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!ensureInitialized(s))
    return ga::setStatus(status, GA_ERROR_DEVICE,
                         "@" + sig->entry +
                             " runs on a CUDA device: " + s.error);
  // A failure of an earlier step (or of loading the modules) stops this
  // one: a module that failed to load has no kernels.
  if (!s.error.empty())
    return ga::setStatus(status, GA_ERROR_DEVICE,
                         "@" + sig->entry + ": " + s.error);
  if (std::string failed = copyInputs(s, *sig, inputs, deviceInputs);
      !failed.empty())
    return ga::setStatus(status, GA_ERROR_DEVICE,
                         "@" + sig->entry + ": " + failed);
  beginCapture(s);
  return GA_OK;
}

int32_t ga_cuda_step_leave(const char *signature, const int64_t *results,
                           void *const *deviceInputs, void *const *outputs,
                           ga_status *status) {
  if (status)
    *status = ga_status{};
  const ga::StepSignature *sig = ga::stepSignature(signature, status);
  if (!sig)
    return GA_ERROR_SIGNATURE;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  endCapture(s, nullptr);
  s.graph.inStep = false;
  // Copy every result before freeing any: results can share a buffer.
  std::vector<CUdeviceptr> allocated;
  std::vector<char> staging;
  size_t offset = 0;
  for (size_t i = 0; i < sig->results.size() && s.error.empty(); ++i) {
    const ga::TensorSpec &spec = sig->results[i];
    const int64_t *fields = results + offset;
    offset += 3 + 2 * spec.shape.size();
    copyResult(s, spec, fields, outputs[i], staging);
    allocated.push_back(static_cast<CUdeviceptr>(fields[0]));
  }
  synchronize(s);
  profileCollect(s);
  releaseStepBuffers(s, *sig, allocated, deviceInputs);
  if (!s.error.empty()) {
    std::string message = s.error;
    s.error.clear();
    ga_error stale;
    ga_take_error(&stale);
    return ga::setStatus(status, GA_ERROR_DEVICE,
                         "@" + sig->entry + ": " + message);
  }
  ga_error reported;
  if (ga_take_error(&reported) == GA_OK)
    return GA_OK;
  std::string where;
  if (reported.argument >= 0 && reported.argument < (int64_t)sig->inputs.size())
    where =
        ga::multiIndex(sig->inputs[reported.argument].shape, reported.position);
  return ga::setStatus(status, reported.code,
                       ga::describeError(reported, where));
}

} // extern "C"
