//===- CollectivesCheck.cpp - The CUDA runtime's all-reduce, by value -----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga-cuda-collectives-check RANKS [partitions], under `mpirun -np RANKS`:
// on every rank,
// fills a device buffer of each element type (f32, f64, i32, i64) with
// values that depend on the rank, sums it across the ranks with the CUDA
// runtime's train.all_reduce entry points (ga_cuda_all_reduce_*), reads it
// back element by element and compares with the sum computed here. Prints
// the path the sums took (NCCL or MPI through host memory) and one line per
// type; exits 1 on any difference or CUDA failure. With `partitions`, it
// checks train.reduce_scatter and train.all_gather (ga_cuda_reduce_scatter_*,
// ga_cuda_all_gather_*) the same way instead. It runs against the
// driver and NCCL stand-in (test/cuda-mock) or a real machine with GPUs.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/ga_step.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
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
void ga_cuda_reduce_scatter_f32(int64_t, void *, int64_t, void *, int32_t);
void ga_cuda_reduce_scatter_i64(int64_t, void *, int64_t, void *, int32_t);
void ga_cuda_all_gather_f32(int64_t, void *, int64_t, void *);
void ga_cuda_all_gather_i64(int64_t, void *, int64_t, void *);
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

/// A device buffer holding `host`, or null.
template <typename T> void *onDevice(const std::vector<T> &host) {
  void *device = ga_cuda_alloc(host.size() * sizeof(T));
  if (device)
    mgpuMemcpy(device, const_cast<T *>(host.data()), host.size() * sizeof(T),
               nullptr);
  return device;
}

/// train.reduce_scatter: each rank's `count` elements of the sum of all
/// ranks' r * count; train.all_gather: every rank's `count` elements in rank
/// order. Both read back element by element.
template <typename T>
bool checkPartitions(const char *type, int64_t count,
                     void (*reduceScatter)(int64_t, void *, int64_t, void *,
                                           int32_t),
                     void (*allGather)(int64_t, void *, int64_t, void *),
                     T (*read)(intptr_t, int64_t)) {
  int rank = ga_world_rank(), ranks = ga_world_size();
  std::vector<T> whole(ranks * count), part(count);
  for (int64_t i = 0; i < ranks * count; ++i)
    whole[i] = contribution<T>(rank, i);
  for (int64_t i = 0; i < count; ++i)
    part[i] = contribution<T>(rank, i);
  void *in = onDevice(whole), *sums = onDevice(part);
  void *own = onDevice(part), *gathered = onDevice(whole);
  if (!in || !sums || !own || !gathered) {
    std::printf("rank %d: %s: no device buffer\n", rank, type);
    return false;
  }
  int64_t inDescriptor[5] = {reinterpret_cast<int64_t>(in),
                             reinterpret_cast<int64_t>(in), 0, ranks * count,
                             1};
  int64_t sumsDescriptor[5] = {reinterpret_cast<int64_t>(sums),
                               reinterpret_cast<int64_t>(sums), 0, count, 1};
  int64_t ownDescriptor[5] = {reinterpret_cast<int64_t>(own),
                              reinterpret_cast<int64_t>(own), 0, count, 1};
  int64_t gatheredDescriptor[5] = {reinterpret_cast<int64_t>(gathered),
                                   reinterpret_cast<int64_t>(gathered), 0,
                                   ranks * count, 1};
  reduceScatter(1, inDescriptor, 1, sumsDescriptor, /*sum*/ 0);
  allGather(1, ownDescriptor, 1, gatheredDescriptor);
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    T expected = 0;
    for (int r = 0; r < ranks; ++r)
      expected += contribution<T>(r, rank * count + i);
    wrong += read(reinterpret_cast<intptr_t>(sums), i) != expected;
  }
  for (int r = 0; r < ranks; ++r)
    for (int64_t i = 0; i < count; ++i)
      wrong += read(reinterpret_cast<intptr_t>(gathered), r * count + i) !=
               contribution<T>(r, i);
  for (void *buffer : {in, sums, own, gathered})
    ga_cuda_free(buffer);
  if (const char *error = ga_cuda_last_error()) {
    std::printf("rank %d: %s: CUDA failure: %s\n", rank, type, error);
    return false;
  }
  std::printf("rank %d: %s: %lld of %lld scattered sums and gathered "
              "elements differ\n",
              rank, type, static_cast<long long>(wrong),
              static_cast<long long>(count * (ranks + 1)));
  return !wrong;
}

} // namespace

int main(int argc, char **argv) {
  bool partitions = argc == 3 && std::string(argv[2]) == "partitions";
  if ((argc != 2 && !partitions) || std::atoi(argv[1]) < 1) {
    std::fprintf(stderr, "usage: mpirun -np RANKS %s RANKS [partitions]\n",
                 argv[0]);
    return 2;
  }
  ga_status status;
  if (ga_collectives_start(std::atoi(argv[1]), "collectives-check", argv[0],
                           &status) != GA_OK) {
    std::fprintf(stderr, "%s: %s\n", argv[0], status.message);
    return 1;
  }
  const int64_t count = 1000;
  if (partitions) {
    bool ok = checkPartitions<float>("f32", count, ga_cuda_reduce_scatter_f32,
                                     ga_cuda_all_gather_f32, ga_cuda_read_f32);
    ok &= checkPartitions<int64_t>("i64", count, ga_cuda_reduce_scatter_i64,
                                   ga_cuda_all_gather_i64, ga_cuda_read_i64);
    const char *path = ga_cuda_collectives();
    std::printf("rank %d: collectives: %s\n", ga_world_rank(),
                path ? path : "none (one rank)");
    ga_collectives_stop();
    return ok ? 0 : 1;
  }
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
