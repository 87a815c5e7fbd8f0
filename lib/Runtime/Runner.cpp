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

void copyStrided(char *dst, int64_t dstOffset, const int64_t *dstStrides,
                 const char *src, int64_t srcOffset, const int64_t *srcStrides,
                 const int64_t *sizes, int64_t rank, size_t elemSize) {
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    count *= sizes[d];
  if (count == 0)
    return;
  // Both row-major and contiguous: one copy.
  bool contiguous = true;
  int64_t expect = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (sizes[d] != 1 && (srcStrides[d] != expect || dstStrides[d] != expect))
      contiguous = false;
    expect *= sizes[d];
  }
  if (contiguous) {
    std::memmove(dst + dstOffset * elemSize, src + srcOffset * elemSize,
                 count * elemSize);
    return;
  }
  std::vector<int64_t> index(rank, 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t from = srcOffset, to = dstOffset;
    for (int64_t d = 0; d < rank; ++d) {
      from += index[d] * srcStrides[d];
      to += index[d] * dstStrides[d];
    }
    std::memmove(dst + to * elemSize, src + from * elemSize, elemSize);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace ga
