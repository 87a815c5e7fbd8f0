//===- Collectives.cpp - The data-parallel runtime -----------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The functions that lowered train.rank and train.all_reduce call (ABI:
// train/TrainRuntime.h), implemented with MPI, and the start and end of the
// MPI run around them (ga/Runtime/ga_step.h). Standard C++ and MPI only.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/Errors.h"
#include "ga/Runtime/Runner.h"
#include "ga/Runtime/ga_step.h"

#if defined(__SANITIZE_ADDRESS__)
#define GA_LEAK_CHECK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GA_LEAK_CHECK 1
#endif
#endif
#ifndef GA_LEAK_CHECK
#define GA_LEAK_CHECK 0
#endif
#if GA_LEAK_CHECK
#include <sanitizer/lsan_interface.h>
/// Open MPI's own allocations (made inside MPI calls) are not leaks of
/// the runtime's: LeakSanitizer ignores what is allocated in this scope.
#define GA_MPI_ALLOCATIONS_NOT_LEAKS __lsan::ScopedDisabler lsanDisabler
#else
#define GA_MPI_ALLOCATIONS_NOT_LEAKS
#endif

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef GA_HAVE_MPI
// The C API only (mpi.h would pull in the deprecated C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace {
int gRank = 0;
int gSize = 1;
bool gJoined = false;

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "%s: error: rank %d: %s\n",
               program_invocation_short_name, gRank, message.c_str());
  std::fflush(stderr);
#ifdef GA_HAVE_MPI
  if (gJoined)
    MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  std::exit(1);
}

/// The elements of the contiguous buffer that `descriptor` (a ranked memref
/// descriptor of rank `rank`) describes.
template <typename T>
T *contiguousData(int64_t rank, void *descriptor, int64_t &count,
                  const char *op = "train.all_reduce") {
  auto *fields = static_cast<int64_t *>(descriptor);
  T *aligned = reinterpret_cast<T *>(fields[1]);
  int64_t offset = fields[2];
  const int64_t *sizes = fields + 3, *strides = fields + 3 + rank;
  count = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != count)
      die(std::string(op) +
          " got a strided buffer; the runtime communicates contiguous ones");
    count *= sizes[d];
  }
  if (count > INT_MAX)
    die(std::string(op) + " of " + std::to_string(count) +
        " elements: MPI counts are limited to 2^31 - 1");
  return aligned + offset;
}

#ifdef GA_HAVE_MPI
template <typename T> MPI_Datatype mpiType();
template <> MPI_Datatype mpiType<float>() { return MPI_FLOAT; }
template <> MPI_Datatype mpiType<double>() { return MPI_DOUBLE; }
template <> MPI_Datatype mpiType<int32_t>() { return MPI_INT32_T; }
template <> MPI_Datatype mpiType<int64_t>() { return MPI_INT64_T; }
#endif

/// kind 0: sum; kind 1: sum divided by the number of ranks.
template <typename T>
void allReduce(int64_t rank, void *descriptor, int32_t kind) {
  int64_t count;
  T *data = contiguousData<T>(rank, descriptor, count);
  if (gSize == 1)
    return;
#ifdef GA_HAVE_MPI
  GA_MPI_ALLOCATIONS_NOT_LEAKS;
  int rc = MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count),
                         mpiType<T>(), MPI_SUM, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS)
    die("MPI_Allreduce failed with code " + std::to_string(rc));
#endif
  if (kind == 1)
    for (int64_t i = 0; i < count; ++i)
      data[i] /= static_cast<T>(gSize);
}

/// train.reduce_scatter: `in` holds gSize * count(out) elements; this rank
/// receives the sum (kind 1: the average) of its part across the ranks.
template <typename T>
void reduceScatter(int64_t inRank, void *in, int64_t outRank, void *out,
                   int32_t kind) {
  int64_t inCount, outCount;
  T *source = contiguousData<T>(inRank, in, inCount, "train.reduce_scatter");
  T *target = contiguousData<T>(outRank, out, outCount, "train.reduce_scatter");
  if (inCount != gSize * outCount)
    die("train.reduce_scatter of " + std::to_string(inCount) +
        " elements into parts of " + std::to_string(outCount) + " on " +
        std::to_string(gSize) + " rank(s): expected " +
        std::to_string(gSize * outCount) + " elements");
  if (gSize == 1) {
    std::memcpy(target, source, outCount * sizeof(T));
    return;
  }
#ifdef GA_HAVE_MPI
  GA_MPI_ALLOCATIONS_NOT_LEAKS;
  int rc = MPI_Reduce_scatter_block(source, target, static_cast<int>(outCount),
                                    mpiType<T>(), MPI_SUM, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS)
    die("MPI_Reduce_scatter_block failed with code " + std::to_string(rc));
#endif
  if (kind == 1)
    for (int64_t i = 0; i < outCount; ++i)
      target[i] /= static_cast<T>(gSize);
}

/// train.all_gather: `out` holds gSize * count(in) elements, rank i's `in`
/// at [i * count(in), (i + 1) * count(in)).
template <typename T>
void allGather(int64_t inRank, void *in, int64_t outRank, void *out) {
  int64_t inCount, outCount;
  T *source = contiguousData<T>(inRank, in, inCount, "train.all_gather");
  T *target = contiguousData<T>(outRank, out, outCount, "train.all_gather");
  if (outCount != gSize * inCount)
    die("train.all_gather of parts of " + std::to_string(inCount) +
        " elements into " + std::to_string(outCount) + " on " +
        std::to_string(gSize) + " rank(s): expected " +
        std::to_string(gSize * inCount) + " elements");
  if (gSize == 1) {
    std::memcpy(target, source, inCount * sizeof(T));
    return;
  }
#ifdef GA_HAVE_MPI
  GA_MPI_ALLOCATIONS_NOT_LEAKS;
  int rc =
      MPI_Allgather(source, static_cast<int>(inCount), mpiType<T>(), target,
                    static_cast<int>(inCount), mpiType<T>(), MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS)
    die("MPI_Allgather failed with code " + std::to_string(rc));
#endif
}
} // namespace

extern "C" {
int64_t ga_rank() { return gRank; }
// ga_all_reduce_<type>, and ga_host_all_reduce_<type>: the collectives of
// the CUDA target's device program run on the CPU (ga-gpu-emulate-on-host)
// are the CPU ones.
#define GA_ALL_REDUCE(SUFFIX, T)                                               \
  void ga_all_reduce_##SUFFIX(int64_t rank, void *descriptor, int32_t kind) {  \
    allReduce<T>(rank, descriptor, kind);                                      \
  }                                                                            \
  void ga_host_all_reduce_##SUFFIX(int64_t rank, void *descriptor,             \
                                   int32_t kind) {                             \
    allReduce<T>(rank, descriptor, kind);                                      \
  }
// ga_reduce_scatter_<type> and ga_all_gather_<type> (and their host_
// versions, for the emulated device program).
#define GA_PARTITIONS(SUFFIX, T)                                               \
  void ga_reduce_scatter_##SUFFIX(int64_t inRank, void *in, int64_t outRank,   \
                                  void *out, int32_t kind) {                   \
    reduceScatter<T>(inRank, in, outRank, out, kind);                          \
  }                                                                            \
  void ga_host_reduce_scatter_##SUFFIX(                                        \
      int64_t inRank, void *in, int64_t outRank, void *out, int32_t kind) {    \
    reduceScatter<T>(inRank, in, outRank, out, kind);                          \
  }                                                                            \
  void ga_all_gather_##SUFFIX(int64_t inRank, void *in, int64_t outRank,       \
                              void *out) {                                     \
    allGather<T>(inRank, in, outRank, out);                                    \
  }                                                                            \
  void ga_host_all_gather_##SUFFIX(int64_t inRank, void *in, int64_t outRank,  \
                                   void *out) {                                \
    allGather<T>(inRank, in, outRank, out);                                    \
  }                                                                            \
  int64_t ga_host_all_gather_start_##SUFFIX(int64_t inRank, void *in,          \
                                            int64_t outRank, void *out) {      \
    allGather<T>(inRank, in, outRank, out);                                    \
    return -1;                                                                 \
  }
#define GA_COLLECTIVES(SUFFIX, T)                                              \
  GA_ALL_REDUCE(SUFFIX, T)                                                     \
  GA_PARTITIONS(SUFFIX, T)
GA_COLLECTIVES(f32, float)
GA_COLLECTIVES(f64, double)
GA_COLLECTIVES(i32, int32_t)
GA_COLLECTIVES(i64, int64_t)
// The emulated device program's prefetched gathers ran in _start.
void ga_host_all_gather_wait(int64_t) {}
#undef GA_COLLECTIVES
#undef GA_PARTITIONS
#undef GA_ALL_REDUCE
}

namespace {
bool launchedByMPI() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name))
      return true;
  return false;
}

} // namespace

extern "C" int32_t ga_collectives_start(int64_t ranks, const char *program,
                                        const char *launcher,
                                        ga_status *status) {
  if (status)
    *status = ga_status{};
  std::string name = program ? program : "step";
  std::string launch = std::string("`mpirun -np ") + std::to_string(ranks) +
                       " " + (launcher ? launcher : "PROGRAM") + " ...`";
  // A process that joined the run already (an earlier step library, or
  // ga_opt's Python step before its tools ran without mpirun's variables)
  // is checked against the world it joined.
  bool launched = launchedByMPI() || gJoined;
  if (ranks > 1 && !launched)
    return ga::setStatus(status, GA_ERROR_WORLD_SIZE,
                         "@" + name + " runs on " + std::to_string(ranks) +
                             " data-parallel ranks (train.data_parallel = " +
                             std::to_string(ranks) + "): launch it with " +
                             launch);
  if (!launched)
    return GA_OK;
#ifdef GA_HAVE_MPI
  if (!gJoined) {
    GA_MPI_ALLOCATIONS_NOT_LEAKS;
    if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS)
      return ga::setStatus(status, GA_ERROR_WORLD_SIZE, "MPI_Init failed");
    gJoined = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &gRank);
    MPI_Comm_size(MPI_COMM_WORLD, &gSize);
  }
  if (gSize != ranks && ranks == 1)
    return ga::setStatus(status, GA_ERROR_WORLD_SIZE,
                         "@" + name +
                             " runs on one rank (its train.step has no "
                             "data_parallel), but mpirun started " +
                             std::to_string(gSize) +
                             ": run it without mpirun, or recompile it with "
                             "data_parallel = " +
                             std::to_string(gSize));
  if (gSize != ranks)
    return ga::setStatus(status, GA_ERROR_WORLD_SIZE,
                         "@" + name + " runs on " + std::to_string(ranks) +
                             " data-parallel ranks (train.data_parallel = " +
                             std::to_string(ranks) + "), but mpirun started " +
                             std::to_string(gSize) + ": launch it with " +
                             launch);
  return GA_OK;
#else
  return ga::setStatus(
      status, GA_ERROR_WORLD_SIZE,
      "this runtime was built without MPI (no MPI found at configure "
      "time), so it cannot run under mpirun or on several ranks");
#endif
}

extern "C" int32_t ga_world_rank(void) { return gRank; }
extern "C" int32_t ga_world_size(void) { return gSize; }

extern "C" int32_t ga_broadcast_bytes(void *data, int64_t bytes) {
  if (gSize == 1)
    return 0;
  if (bytes < 0 || bytes > INT_MAX)
    return 1;
#ifdef GA_HAVE_MPI
  GA_MPI_ALLOCATIONS_NOT_LEAKS;
  return MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0,
                   MPI_COMM_WORLD) == MPI_SUCCESS
             ? 0
             : 1;
#else
  (void)data;
  return 1;
#endif
}

extern "C" int32_t ga_all_gather_bytes(const void *data, int64_t bytes,
                                       void *out) {
  if (bytes < 0 || (gSize > 1 && bytes > INT_MAX))
    return 1;
  if (gSize == 1) {
    if (bytes)
      std::memmove(out, data, static_cast<size_t>(bytes));
    return 0;
  }
#ifdef GA_HAVE_MPI
  GA_MPI_ALLOCATIONS_NOT_LEAKS;
  return MPI_Allgather(data, static_cast<int>(bytes), MPI_BYTE, out,
                       static_cast<int>(bytes), MPI_BYTE,
                       MPI_COMM_WORLD) == MPI_SUCCESS
             ? 0
             : 1;
#else
  return 1;
#endif
}

extern "C" void ga_collectives_stop(void) {
#ifdef GA_HAVE_MPI
  if (gJoined) {
#if GA_LEAK_CHECK
    // MPI_Finalize unloads Open MPI's components, after which LeakSanitizer
    // can no longer name (nor suppress, test/sanitizers/lsan.supp) the
    // allocations they made: check for leaks while they are loaded.
    __lsan_do_leak_check();
#endif
    GA_MPI_ALLOCATIONS_NOT_LEAKS;
    MPI_Finalize();
  }
  gJoined = false;
#endif
}
