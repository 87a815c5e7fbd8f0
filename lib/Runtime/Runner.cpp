//===- Runner.cpp - What ga-run and ga-exec share -------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/Runner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace ga {

std::string readArguments(const StepSignature &signature,
                          const std::vector<std::string> &paths,
                          std::vector<NpyArray> &arrays) {
  if (std::string error = checkArgumentCount(signature, paths.size());
      !error.empty())
    return error;
  arrays.assign(paths.size(), NpyArray());
  for (size_t i = 0; i < paths.size(); ++i) {
    std::string error;
    if (!readNpy(paths[i], arrays[i], error))
      return "argument #" + std::to_string(i) + ": " + error;
    error = checkArgument(signature, i, arrays[i], paths[i]);
    if (!error.empty())
      return error;
  }
  return "";
}

PackedStepCall::PackedStepCall(const StepSignature &signature,
                               const std::vector<const void *> &inputs) {
  descriptors.resize(signature.inputs.size());
  for (size_t i = 0; i < descriptors.size(); ++i) {
    const std::vector<int64_t> &shape = signature.inputs[i].shape;
    int64_t rank = shape.size();
    std::vector<int64_t> &desc = descriptors[i];
    desc.assign(3 + 2 * rank, 0);
    desc[0] = desc[1] = reinterpret_cast<int64_t>(inputs[i]);
    for (int64_t d = rank - 1, stride = 1; d >= 0; --d) {
      desc[3 + d] = shape[d];
      desc[3 + rank + d] = stride;
      stride *= shape[d];
    }
  }
  for (std::vector<int64_t> &desc : descriptors)
    for (int64_t &field : desc)
      packed.push_back(&field);
  size_t fields = 0;
  for (const TensorSpec &result : signature.results)
    fields += 3 + 2 * result.shape.size();
  resultFields.assign(fields, 0);
  if (fields)
    packed.push_back(resultFields.data());
}

void PackedStepCall::rebase(size_t i, const void *data) {
  descriptors[i][0] = descriptors[i][1] = reinterpret_cast<int64_t>(data);
}

std::vector<NpyArray> makeResultBuffers(const StepSignature &signature,
                                        std::vector<void *> &pointers) {
  // A result without elements still gets a valid pointer.
  static char empty[8];
  std::vector<NpyArray> results(signature.results.size());
  pointers.clear();
  for (size_t i = 0; i < results.size(); ++i) {
    results[i].dtype = signature.results[i].dtype;
    results[i].shape = signature.results[i].shape;
    results[i].data.resize(signature.results[i].numBytes());
    pointers.push_back(results[i].data.empty() ? empty
                                               : results[i].data.data());
  }
  return results;
}

std::string stepFailure(const StepSignature &signature, const ga_status &status,
                        const std::vector<std::string> &paths) {
  std::string message = status.message;
  if (status.code == GA_ERROR_LABEL_OUT_OF_RANGE) {
    for (size_t i = 0; i < paths.size(); ++i)
      if (message.find(" of argument #" + std::to_string(i) + " ") !=
          std::string::npos)
        message += " ('" + paths[i] + "')";
    message = "@" + signature.entry + ": " + message;
  }
  return message + "; no result written";
}

void prepareProcess(long threads, int64_t ranks) {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  // The OpenMP runtime reads OMP_NUM_THREADS when the step first forks.
  if (threads > 0)
    setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
  else if (!getenv("OMP_NUM_THREADS") && ranks > 1)
    setenv("OMP_NUM_THREADS",
           std::to_string(std::max<int64_t>(
                              1, std::thread::hardware_concurrency() / ranks))
               .c_str(),
           1);
}

int32_t setStatus(ga_status *status, int32_t code, const std::string &message) {
  if (status) {
    status->code = code;
    std::snprintf(status->message, sizeof status->message, "%s",
                  message.c_str());
  }
  return code;
}

const StepSignature *stepSignature(const char *text, ga_status *status) {
  std::string error;
  const StepSignature *sig = cachedSignature(text, error);
  if (!sig)
    setStatus(status, GA_ERROR_SIGNATURE, error);
  return sig;
}

void copyStrided(char *dst, int64_t dstOffset, const int64_t *dstStrides,
                 const char *src, int64_t srcOffset, const int64_t *srcStrides,
                 const int64_t *sizes, int64_t rank, size_t elemSize) {
  for (int64_t d = 0; d < rank; ++d)
    if (sizes[d] == 0)
      return;
  // The innermost dimensions that are contiguous in both buffers make one
  // run, copied at once; the outer ones are walked with running offsets.
  int64_t inner = rank, run = 1;
  while (inner > 0 &&
         (sizes[inner - 1] == 1 ||
          (srcStrides[inner - 1] == run && dstStrides[inner - 1] == run))) {
    run *= sizes[inner - 1];
    --inner;
  }
  size_t bytes = run * elemSize;
  char *to = dst + dstOffset * elemSize;
  const char *from = src + srcOffset * elemSize;
  if (inner == 0) {
    std::memmove(to, from, bytes);
    return;
  }
  std::vector<int64_t> index(inner, 0);
  while (true) {
    if (bytes == 4)
      std::memcpy(to, from, 4);
    else if (bytes == 8)
      std::memcpy(to, from, 8);
    else
      std::memmove(to, from, bytes);
    int64_t d = inner - 1;
    for (; d >= 0; --d) {
      int64_t s = srcStrides[d] * static_cast<int64_t>(elemSize);
      int64_t t = dstStrides[d] * static_cast<int64_t>(elemSize);
      if (++index[d] < sizes[d]) {
        from += s;
        to += t;
        break;
      }
      from -= s * (sizes[d] - 1);
      to -= t * (sizes[d] - 1);
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

} // namespace ga
