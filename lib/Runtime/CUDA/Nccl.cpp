//===- Nccl.cpp - train.all_reduce of device buffers ----------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// train.all_reduce of a sum runs on NCCL (loaded with dlopen:
// GA_NCCL_LIBRARY, else libnccl.so.2) when every rank of the node has a
// device of its own, in place on the step's stream; otherwise (ranks
// sharing a device, which NCCL refuses; no NCCL; GA_NCCL=0; an average) the
// buffer goes through host memory and the CPU runtime's MPI all-reduce
// (Debian's Open MPI is not CUDA-aware). GA_NCCL=1 makes a missing NCCL an
// error.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include "ga/Runtime/ga_cuda.h"
#include "ga/Runtime/ga_step.h"

#include <cstdlib>
#include <cstring>

extern "C" {
// The CPU runtime's collectives (lib/Runtime/Collectives.cpp).
void ga_all_reduce_f32(int64_t rank, void *descriptor, int32_t kind);
void ga_all_reduce_f64(int64_t rank, void *descriptor, int32_t kind);
void ga_all_reduce_i32(int64_t rank, void *descriptor, int32_t kind);
void ga_all_reduce_i64(int64_t rank, void *descriptor, int32_t kind);
#define GA_HOST_PARTITIONS(T)                                                  \
  void ga_reduce_scatter_##T(int64_t inRank, void *in, int64_t outRank,        \
                             void *out, int32_t kind);                         \
  void ga_all_gather_##T(int64_t inRank, void *in, int64_t outRank, void *out);
GA_HOST_PARTITIONS(f32)
GA_HOST_PARTITIONS(f64)
GA_HOST_PARTITIONS(i32)
GA_HOST_PARTITIONS(i64)
#undef GA_HOST_PARTITIONS
}

namespace ga::cuda {

/// Decides, on the first all-reduce of a data-parallel run, whether sums go
/// through NCCL and, if so, makes its communicator (rank 0's id broadcast
/// with MPI). Returns whether NCCL is used; false with an error recorded
/// when it is required (GA_NCCL=1) but cannot be.
static bool ensureNccl(State &s) {
  Nccl &nccl = s.nccl;
  if (nccl.tried)
    return nccl.comm != nullptr;
  nccl.tried = true;
  nccl.path = "MPI through host memory";
  const char *env = std::getenv("GA_NCCL");
  bool required = env && std::strcmp(env, "0") != 0;
  if (env && !required)
    return false;
  int ranks = ga_world_size();
  int local = localRanks().second;
  if (local < 0)
    local = ranks; // Unknown: the ranks may all share this node.
  auto refuse = [&](const std::string &why) {
    if (required)
      recordError(s, "GA_NCCL=1, but NCCL cannot be used: " + why);
    return false;
  };
  if (local > s.deviceCount)
    return refuse(std::to_string(local) + " ranks on this node share " +
                  std::to_string(s.deviceCount) + " device(s)");
  const char *name = std::getenv("GA_NCCL_LIBRARY");
  std::string error;
  void *lib = openFirst({name ? name : "libnccl.so.2"}, &error);
  if (!lib)
    return refuse("the NCCL library cannot be loaded: " + error);
  NcclFunctions &fn = nccl.fn;
  if (std::string missing = fn.bind(lib); !missing.empty())
    return refuse("the NCCL library lacks " + missing);
  // From here on, every rank has decided alike (same node layout and
  // environment), so that the broadcast and the communicator's creation,
  // which wait for all ranks, are reached by all.
  NcclUniqueId id{};
  if (ga_world_rank() == 0) {
    if (int rc = fn.ncclGetUniqueId(&id)) {
      recordError(s, std::string("ncclGetUniqueId failed: ") +
                         fn.ncclGetErrorString(rc));
      return false;
    }
  }
  if (ga_broadcast_bytes(&id, sizeof(id))) {
    recordError(s, "the broadcast of NCCL's communicator id failed");
    return false;
  }
  if (int rc = fn.ncclCommInitRank(&nccl.comm, ranks, id, ga_world_rank())) {
    nccl.comm = nullptr;
    recordError(s, std::string("ncclCommInitRank failed: ") +
                       fn.ncclGetErrorString(rc));
    return false;
  }
  nccl.path = "NCCL";
  return true;
}

namespace {
template <typename T> int ncclType();
template <> int ncclType<float>() { return 7; }   // ncclFloat32
template <> int ncclType<double>() { return 8; }  // ncclFloat64
template <> int ncclType<int32_t>() { return 2; } // ncclInt32
template <> int ncclType<int64_t>() { return 4; } // ncclInt64
} // namespace

/// Every NCCL operation of the step runs on one stream of its own, the
/// collective stream, in the order the host issues them: NCCL does not
/// promise that operations of one communicator on two streams make
/// progress concurrently, so on two streams the ranks could run them in
/// different orders and wait for each other. Each operation first makes
/// the collective stream wait for what the step's stream has enqueued
/// (forkCollective); joinCollective makes the step's stream wait for what the
/// collective stream has enqueued, at once for a plain collective, before the
/// reader for a prefetched all-gather (ga_cuda_all_gather_wait).
///
/// The collective stream, waiting for the step's stream; null on failure.
static CUstream forkCollective(State &s) {
  Nccl &n = s.nccl;
  if (!n.stream) {
    const char *env = std::getenv("GA_CUDA_GATHER_UNORDERED");
    n.unordered = env && std::string(env) == "1";
    if (!check(s, s.cu.cuStreamCreate(&n.stream, /*non-blocking*/ 1),
               "cuStreamCreate (the collective stream)"))
      return nullptr;
  }
  return follow(s, n.stream, s.stream, n.events) ? n.stream : nullptr;
}

/// The step's stream waits for the collective stream.
static void joinCollective(State &s) {
  follow(s, s.stream, s.nccl.stream, s.nccl.events);
}

/// train.all_reduce of a device buffer (a ranked memref descriptor of rank
/// `rank`, on the host). A sum runs on NCCL, in place on the collective
/// stream, where ensureNccl allows; otherwise it is staged through host memory
/// for the CPU runtime's MPI all-reduce.
template <typename T>
static void deviceAllReduce(int64_t rank, void *descriptor, int32_t kind,
                            void (*hostAllReduce)(int64_t, void *, int32_t)) {
  if (ga_world_size() == 1)
    return;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.usable || !s.error.empty())
    return;
  auto *fields = static_cast<int64_t *>(descriptor);
  T *data = reinterpret_cast<T *>(fields[1]) + fields[2];
  const int64_t *sizes = fields + 3, *strides = fields + 3 + rank;
  int64_t count = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != count) {
      recordError(s, "train.all_reduce of a strided device buffer; the "
                     "runtime reduces contiguous ones");
      return;
    }
    count *= sizes[d];
  }
  // kind 0 is a sum; an average (the naive lowering's) takes the host path,
  // which divides as the CPU runtime does.
  if (kind == 0 && ensureNccl(s)) {
    CUstream stream = forkCollective(s);
    if (!stream)
      return;
    if (int rc = s.nccl.fn.ncclAllReduce(data, data, static_cast<size_t>(count),
                                         ncclType<T>(),
                                         /*ncclSum*/ 0, s.nccl.comm, stream))
      recordError(s,
                  "ncclAllReduce of " + std::to_string(count) +
                      " elements failed: " + s.nccl.fn.ncclGetErrorString(rc));
    joinCollective(s);
    return;
  }
  if (!s.error.empty())
    return;
  hostWaits(s, "the step's sums go through host memory (NCCL needs a "
               "device per rank)");
  std::vector<T> host(count);
  if (!copy(s, host.data(), data, count * sizeof(T)) || !synchronize(s))
    return;
  int64_t hostDescriptor[5] = {reinterpret_cast<int64_t>(host.data()),
                               reinterpret_cast<int64_t>(host.data()), 0, count,
                               1};
  hostAllReduce(1, hostDescriptor, kind);
  copy(s, data, host.data(), count * sizeof(T));
  synchronize(s); // `host` goes out of scope.
}

/// The elements of the contiguous device buffer that `descriptor`
/// describes, or null with an error recorded for a strided one.
template <typename T>
static T *contiguousDevice(State &s, int64_t rank, void *descriptor,
                           int64_t &count, const char *op) {
  auto *fields = static_cast<int64_t *>(descriptor);
  const int64_t *sizes = fields + 3, *strides = fields + 3 + rank;
  count = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != count) {
      recordError(s, std::string(op) + " of a strided device buffer; the "
                                       "runtime communicates contiguous ones");
      return nullptr;
    }
    count *= sizes[d];
  }
  return reinterpret_cast<T *>(fields[1]) + fields[2];
}

/// train.reduce_scatter (`gather` false) or train.all_gather (true) of
/// device buffers: on NCCL where the all-reduce uses it, otherwise through
/// host memory for the CPU runtime's MPI collective `host`.
template <typename T>
static int64_t devicePartition(
    bool gather, int64_t inRank, void *in, int64_t outRank, void *out,
    int32_t kind,
    void (*hostReduceScatter)(int64_t, void *, int64_t, void *, int32_t),
    void (*hostAllGather)(int64_t, void *, int64_t, void *),
    bool prefetch = false) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.usable || !s.error.empty())
    return -1;
  const char *op = gather ? "train.all_gather" : "train.reduce_scatter";
  int64_t inCount, outCount;
  T *source = contiguousDevice<T>(s, inRank, in, inCount, op);
  T *target = contiguousDevice<T>(s, outRank, out, outCount, op);
  if (!source || !target)
    return -1;
  int64_t ranks = ga_world_size();
  if ((gather ? outCount != ranks * inCount : inCount != ranks * outCount)) {
    recordError(s, std::string(op) + " of " + std::to_string(inCount) +
                       " into " + std::to_string(outCount) +
                       " elements does not match " + std::to_string(ranks) +
                       " rank(s)");
    return -1;
  }
  if (ranks == 1) {
    copy(s, target, source, outCount * sizeof(T));
    return -1;
  }
  // A sum takes NCCL; an average (the naive lowering's) the host path.
  if ((gather || kind == 0) && ensureNccl(s)) {
    CUstream stream = forkCollective(s);
    if (!stream)
      return -1;
    int rc = gather
                 ? s.nccl.fn.ncclAllGather(source, target,
                                           static_cast<size_t>(inCount),
                                           ncclType<T>(), s.nccl.comm, stream)
                 : s.nccl.fn.ncclReduceScatter(
                       source, target, static_cast<size_t>(outCount),
                       ncclType<T>(), /*ncclSum*/ 0, s.nccl.comm, stream);
    if (rc)
      recordError(s,
                  std::string(gather ? "ncclAllGather" : "ncclReduceScatter") +
                      " of " + std::to_string(inCount) +
                      " elements failed: " + s.nccl.fn.ncclGetErrorString(rc));
    if (!prefetch) {
      joinCollective(s);
      return -1;
    }
    // What the reader waits for (ga_cuda_all_gather_wait): the gather,
    // recorded on the collective stream.
    CUevent done = takeEvent(s, s.nccl.events);
    if (!done || !check(s, s.cu.cuEventRecord(done, stream), "cuEventRecord"))
      return -1;
    int64_t handle = s.nccl.nextGather++;
    s.nccl.gathering[handle] = done;
    return handle;
  }
  if (!s.error.empty())
    return -1;
  hostWaits(s, "the step's collectives go through host memory (NCCL needs "
               "a device per rank)");
  std::vector<T> hostIn(inCount), hostOut(outCount);
  if (!copy(s, hostIn.data(), source, inCount * sizeof(T)) || !synchronize(s))
    return -1;
  int64_t inDescriptor[5] = {reinterpret_cast<int64_t>(hostIn.data()),
                             reinterpret_cast<int64_t>(hostIn.data()), 0,
                             inCount, 1};
  int64_t outDescriptor[5] = {reinterpret_cast<int64_t>(hostOut.data()),
                              reinterpret_cast<int64_t>(hostOut.data()), 0,
                              outCount, 1};
  if (gather)
    hostAllGather(1, inDescriptor, 1, outDescriptor);
  else
    hostReduceScatter(1, inDescriptor, 1, outDescriptor, kind);
  copy(s, target, hostOut.data(), outCount * sizeof(T));
  synchronize(s); // `hostOut` goes out of scope.
  return -1;
}

/// ga_cuda_all_gather_wait: the step's stream waits for the prefetched
/// gather `handle` (nothing for -1, a gather that ran on the step's
/// stream).
static void waitForGather(int64_t handle) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (handle < 0 || !s.error.empty())
    return;
  Nccl &n = s.nccl;
  auto it = n.gathering.find(handle);
  if (it == n.gathering.end()) {
    recordError(s, "ga_cuda_all_gather_wait of a handle that "
                   "ga_cuda_all_gather_start did not return, or waited for "
                   "already");
    return;
  }
  if (!n.unordered)
    check(s, s.cu.cuStreamWaitEvent(s.stream, it->second, 0),
          "cuStreamWaitEvent");
  // An event may be recorded again once a wait for it is enqueued.
  n.events.push_back(it->second);
  n.gathering.erase(it);
}

} // namespace ga::cuda

using namespace ga::cuda;

extern "C" {

const char *ga_cuda_collectives(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.nccl.path;
}

void ga_cuda_all_reduce_f32(int64_t rank, void *d, int32_t kind) {
  deviceAllReduce<float>(rank, d, kind, ga_all_reduce_f32);
}
void ga_cuda_all_reduce_f64(int64_t rank, void *d, int32_t kind) {
  deviceAllReduce<double>(rank, d, kind, ga_all_reduce_f64);
}
void ga_cuda_all_reduce_i32(int64_t rank, void *d, int32_t kind) {
  deviceAllReduce<int32_t>(rank, d, kind, ga_all_reduce_i32);
}
void ga_cuda_all_reduce_i64(int64_t rank, void *d, int32_t kind) {
  deviceAllReduce<int64_t>(rank, d, kind, ga_all_reduce_i64);
}

#define GA_CUDA_PARTITIONS(SUFFIX, T)                                          \
  void ga_cuda_reduce_scatter_##SUFFIX(                                        \
      int64_t inRank, void *in, int64_t outRank, void *out, int32_t kind) {    \
    devicePartition<T>(false, inRank, in, outRank, out, kind,                  \
                       ga_reduce_scatter_##SUFFIX, ga_all_gather_##SUFFIX);    \
  }                                                                            \
  void ga_cuda_all_gather_##SUFFIX(int64_t inRank, void *in, int64_t outRank,  \
                                   void *out) {                                \
    devicePartition<T>(true, inRank, in, outRank, out, 0,                      \
                       ga_reduce_scatter_##SUFFIX, ga_all_gather_##SUFFIX);    \
  }                                                                            \
  int64_t ga_cuda_all_gather_start_##SUFFIX(int64_t inRank, void *in,          \
                                            int64_t outRank, void *out) {      \
    return devicePartition<T>(true, inRank, in, outRank, out, 0,               \
                              ga_reduce_scatter_##SUFFIX,                      \
                              ga_all_gather_##SUFFIX, /*prefetch=*/true);      \
  }
GA_CUDA_PARTITIONS(f32, float)
GA_CUDA_PARTITIONS(f64, double)
GA_CUDA_PARTITIONS(i32, int32_t)
GA_CUDA_PARTITIONS(i64, int64_t)
#undef GA_CUDA_PARTITIONS

void ga_cuda_all_gather_wait(int64_t handle) { waitForGather(handle); }

} // extern "C"
