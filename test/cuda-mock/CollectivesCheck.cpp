//===- CollectivesCheck.cpp - The CUDA runtime's all-reduce, by value -----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga-cuda-collectives-check RANKS, under `mpirun -np RANKS`: on every rank,
// fills a device buffer of each element type (f32, f64, i32, i64) with
// values that depend on the rank, sums it across the ranks with the CUDA
// runtime's train.all_reduce entry points (ga_cuda_all_reduce_*), reads it
// back element by element and compares with the sum computed here. Prints
// the path the sums took (NCCL or MPI through host memory) and one line per
// type; exits 1 on any difference or CUDA failure. It runs against the
// driver and NCCL stand-in (test/cuda-mock) or a real machine with GPUs.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/ga_step.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" {
void *ga_cuda_alloc(size_t size);
void ga_cuda_free(void *pointer);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
float ga_cuda_read_f32(intptr_t p, int64_t i);
double ga_cuda_read_f64(intptr_t p, int64_t i);
int32_t ga_cuda_read_i32(intptr_t p, int64_t i);
int64_t ga_cuda_read_i64(intptr_t p, int64_t i);
void ga_cuda_all_reduce_f32(int64_t rank, void *d, int32_t kind);
void ga_cuda_all_reduce_f64(int64_t rank, void *d, int32_t kind);
void ga_cuda_all_reduce_i32(int64_t rank, void *d, int32_t kind);
void ga_cuda_all_reduce_i64(int64_t rank, void *d, int32_t kind);
const char *ga_cuda_last_error(void);
const char *ga_cuda_collectives(void);
}

namespace {

/// Rank r contributes (r + 1) * (i % 7) + i to element i (small integers:
/// every sum is exact in each type).
template <typename T> T contribution(int rank, int64_t i) {
  return static_cast<T>((rank + 1) * (i % 7) + i);
}

template <typename T>
bool check(const char *type, int64_t count,
           void (*allReduce)(int64_t, void *, int32_t),
           T (*read)(intptr_t, int64_t)) {
  int rank = ga_world_rank(), ranks = ga_world_size();
  std::vector<T> host(count);
  for (int64_t i = 0; i < count; ++i)
    host[i] = contribution<T>(rank, i);
  void *device = ga_cuda_alloc(count * sizeof(T));
  if (!device) {
    std::printf("rank %d: %s: no device buffer\n", rank, type);
    return false;
  }
  mgpuMemcpy(device, host.data(), count * sizeof(T), nullptr);
  int64_t descriptor[5] = {reinterpret_cast<int64_t>(device),
                           reinterpret_cast<int64_t>(device), 0, count, 1};
  allReduce(1, descriptor, /*sum*/ 0);
  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < count; ++i) {
    T expected = 0;
    for (int r = 0; r < ranks; ++r)
      expected += contribution<T>(r, i);
    if (read(reinterpret_cast<intptr_t>(device), i) != expected && !wrong++)
      first = i;
  }
  ga_cuda_free(device);
  if (const char *error = ga_cuda_last_error()) {
    std::printf("rank %d: %s: CUDA failure: %s\n", rank, type, error);
    return false;
  }
  if (wrong)
    std::printf("rank %d: %s: %lld of %lld elements differ (first: %lld)\n",
                rank, type, static_cast<long long>(wrong),
                static_cast<long long>(count), static_cast<long long>(first));
  else
    std::printf("rank %d: %s: %lld sums equal\n", rank, type,
                static_cast<long long>(count));
  return !wrong;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2 || std::atoi(argv[1]) < 1) {
    std::fprintf(stderr, "usage: mpirun -np RANKS %s RANKS\n", argv[0]);
    return 2;
  }
  ga_status status;
  if (ga_collectives_start(std::atoi(argv[1]), "collectives-check", argv[0],
                           &status) != GA_OK) {
    std::fprintf(stderr, "%s: %s\n", argv[0], status.message);
    return 1;
  }
  const int64_t count = 1000;
  bool ok =
      check<float>("f32", count, ga_cuda_all_reduce_f32, ga_cuda_read_f32);
  ok &= check<double>("f64", count, ga_cuda_all_reduce_f64, ga_cuda_read_f64);
  ok &= check<int32_t>("i32", count, ga_cuda_all_reduce_i32, ga_cuda_read_i32);
  ok &= check<int64_t>("i64", count, ga_cuda_all_reduce_i64, ga_cuda_read_i64);
  const char *path = ga_cuda_collectives();
  std::printf("rank %d: collectives: %s\n", ga_world_rank(),
              path ? path : "none (one rank)");
  ga_collectives_stop();
  return ok ? 0 : 1;
}
