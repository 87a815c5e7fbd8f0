//===- CudaRuntime.cpp - What a step compiled for CUDA calls --------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// libga_cuda_runtime: the `mgpu*` functions that MLIR's lowering of the gpu
// dialect calls (module loading, kernel launches, streams, events, memory),
// the step's device allocator (ga_cuda_alloc/free, which
// ga-gpu-device-allocations substitutes for the host allocator), the reads
// of single elements that host code needs (ga_cuda_read_*), and the entry
// and exit of a CUDA step library (ga_cuda_step_enter/leave: inputs copied
// to the device, results copied back).
//
// The CUDA driver is loaded with dlopen, so this library builds and links
// without the CUDA toolkit and loads on machines without a driver: there the
// first use records "no CUDA device" and the step returns GA_ERROR_DEVICE.
// The modules of a step library are loaded by a global constructor when the
// library is loaded; a failure there is recorded the same way, never an
// abort.
//
// Under mpirun, each rank takes the device of its local rank (modulo the
// devices: GA_CUDA_DEVICE overrides it). train.all_reduce of a sum runs on
// NCCL (loaded with dlopen: GA_NCCL_LIBRARY, else libnccl.so.2) when every
// rank of the node has a device of its own, in place on the step's stream;
// otherwise (ranks sharing a device, which NCCL refuses; no NCCL; GA_NCCL=0;
// an average) the buffer goes through host memory and the CPU runtime's MPI
// all-reduce. GA_NCCL=1 makes a missing NCCL an error.
//
// One stream per process runs every kernel, copy and allocation in order.
// mgpuStreamSynchronize on it does not wait: the host waits only where it
// reads device memory (ga_cuda_read_*, ga_cuda_step_leave), so that a step
// is one asynchronous sequence (GA_CUDA_SYNC=1 waits after every launch, to
// locate a failing kernel; GA_CUDA_PROFILE=1 times every kernel and GEMM
// with CUDA events and prints the most expensive at exit). A freed buffer goes
// back to a cache of blocks by size, reused by later allocations of the same
// size on the same stream.
//
// GA_CUDA_GRAPH=1: from the second step on, everything a step puts on the
// stream (kernels, GEMMs, memsets, device copies, NCCL sums) is captured
// into a CUDA graph and launched as one, so that the device runs the step
// without a gap per launch. The graph is captured again at every step (the
// host code runs as before, the buffers' addresses may differ) and the
// instantiated graph updated in place (cuGraphExecUpdate) while its shape
// stays the same. A step that waits for the device within itself (a read
// of device memory such as the label check's, a sum through host memory)
// cannot be captured: the graph is launched up to that point and the mode
// turns off, with the reason in ga_cuda_graph_status().
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/Errors.h"
#include "ga/Runtime/Npy.h"
#include "ga/Runtime/Runner.h"
#include "ga/Runtime/Signature.h"
#include "ga/Runtime/ga_step.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

// The few driver API types used, as the driver ABI defines them.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
using CUevent = void *;

#define GA_CUDA_FUNCTIONS(X)                                                   \
  X(cuInit, CUresult (*)(unsigned))                                            \
  X(cuDeviceGetCount, CUresult (*)(int *))                                     \
  X(cuDeviceGet, CUresult (*)(CUdevice *, int))                                \
  X(cuDeviceGetName, CUresult (*)(char *, int, CUdevice))                      \
  X(cuDevicePrimaryCtxRetain, CUresult (*)(CUcontext *, CUdevice))             \
  X(cuCtxSetCurrent, CUresult (*)(CUcontext))                                  \
  X(cuGetErrorString, CUresult (*)(CUresult, const char **))                   \
  X(cuGetErrorName, CUresult (*)(CUresult, const char **))                     \
  X(cuModuleLoadData, CUresult (*)(CUmodule *, const void *))                  \
  X(cuModuleUnload, CUresult (*)(CUmodule))                                    \
  X(cuModuleGetFunction, CUresult (*)(CUfunction *, CUmodule, const char *))   \
  X(cuLaunchKernel,                                                            \
    CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, \
                 unsigned, unsigned, CUstream, void **, void **))              \
  X(cuStreamCreate, CUresult (*)(CUstream *, unsigned))                        \
  X(cuStreamSynchronize, CUresult (*)(CUstream))                               \
  X(cuStreamWaitEvent, CUresult (*)(CUstream, CUevent, unsigned))              \
  X(cuEventCreate, CUresult (*)(CUevent *, unsigned))                          \
  X(cuEventRecord, CUresult (*)(CUevent, CUstream))                            \
  X(cuEventSynchronize, CUresult (*)(CUevent))                                 \
  X(cuEventElapsedTime, CUresult (*)(float *, CUevent, CUevent))               \
  X(cuEventDestroy_v2, CUresult (*)(CUevent))                                  \
  X(cuMemAlloc_v2, CUresult (*)(CUdeviceptr *, size_t))                        \
  X(cuMemFree_v2, CUresult (*)(CUdeviceptr))                                   \
  X(cuMemcpyAsync, CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream))   \
  X(cuMemsetD32Async, CUresult (*)(CUdeviceptr, unsigned, size_t, CUstream))   \
  X(cuMemsetD16Async,                                                          \
    CUresult (*)(CUdeviceptr, unsigned short, size_t, CUstream))               \
  X(cuMemGetInfo_v2, CUresult (*)(size_t *, size_t *))

using CUgraph = void *;
using CUgraphExec = void *;
/// CUgraphExecUpdateResultInfo.
struct GraphUpdateInfo {
  int result;
  void *errorNode, *errorFromNode;
};
/// The stream-capture and graph functions (GA_CUDA_GRAPH=1), loaded only
/// then.
#define GA_CUDA_GRAPH_FUNCTIONS(X)                                             \
  X(cuStreamBeginCapture_v2, CUresult (*)(CUstream, int))                      \
  X(cuStreamEndCapture, CUresult (*)(CUstream, CUgraph *))                     \
  X(cuGraphInstantiateWithFlags,                                               \
    CUresult (*)(CUgraphExec *, CUgraph, unsigned long long))                  \
  X(cuGraphExecUpdate_v2,                                                      \
    CUresult (*)(CUgraphExec, CUgraph, GraphUpdateInfo *))                     \
  X(cuGraphLaunch, CUresult (*)(CUgraphExec, CUstream))                        \
  X(cuGraphDestroy, CUresult (*)(CUgraph))                                     \
  X(cuGraphExecDestroy, CUresult (*)(CUgraphExec))

template <typename T> using Id = T;

struct Driver {
#define GA_DECLARE(name, type) Id<type> name = nullptr;
  GA_CUDA_FUNCTIONS(GA_DECLARE)
  GA_CUDA_GRAPH_FUNCTIONS(GA_DECLARE)
#undef GA_DECLARE
};

/// GA_CUDA_GRAPH=1: the state of the step's capture (see the file comment).
struct Graph {
  bool requested = false;
  /// Why the mode is off (empty while it may capture).
  std::string off;
  bool inStep = false, capturing = false;
  long steps = 0, launches = 0, instantiations = 0, updates = 0;
  CUgraphExec exec = nullptr;
  std::string status;
};

// cuBLAS, loaded on the first GEMM.
using CublasCreate = int (*)(void **);
using CublasSetStream = int (*)(void *, CUstream);
using CublasSetMathMode = int (*)(void *, int);
using CublasSgemm = int (*)(void *, int, int, int, int, int, const float *,
                            const float *, int, const float *, int,
                            const float *, float *, int);
using CublasSgemmStridedBatched = int (*)(void *, int, int, int, int, int,
                                          const float *, const float *, int,
                                          long long, const float *, int,
                                          long long, const float *, float *,
                                          int, long long, int);
/// cublasGemmEx and cublasGemmStridedBatchedEx (cudaDataType and
/// cublasComputeType_t as int): the bf16 products of gpu-bf16.
using CublasGemmEx = int (*)(void *, int, int, int, int, int, const void *,
                             const void *, int, int, const void *, int, int,
                             const void *, void *, int, int, int, int);
using CublasGemmStridedBatchedEx = int (*)(void *, int, int, int, int, int,
                                           const void *, const void *, int, int,
                                           long long, const void *, int, int,
                                           long long, const void *, void *, int,
                                           int, long long, int, int, int);

// NCCL, loaded on the first all-reduce (its ABI: nccl.h).
using NcclComm = void *;
struct NcclUniqueId {
  char internal[128];
};
using NcclGetUniqueId = int (*)(NcclUniqueId *);
using NcclCommInitRank = int (*)(NcclComm *, int, NcclUniqueId, int);
using NcclAllReduce = int (*)(const void *, void *, size_t, int, int, NcclComm,
                              CUstream);
using NcclGetErrorString = const char *(*)(int);

struct Nccl {
  bool tried = false;
  /// The path the step's sums take: "NCCL" or "MPI through host memory".
  const char *path = nullptr;
  NcclComm comm = nullptr;
  NcclAllReduce allReduce = nullptr;
  NcclGetErrorString errorString = nullptr;
};

struct Blas {
  bool tried = false;
  void *handle = nullptr;
  CublasSgemm sgemm = nullptr;
  CublasSgemmStridedBatched sgemmBatched = nullptr;
  CublasSetMathMode setMath = nullptr;
  /// Optional: looked up on load, required by the first bf16 product.
  CublasGemmEx gemmEx = nullptr;
  CublasGemmStridedBatchedEx gemmBatchedEx = nullptr;
  int mathMode = 0;
  /// The library loaded (cuBLASLt's functions are looked up there first).
  void *library = nullptr;
  /// The fixed workspace, shared with cuBLASLt.
  CUdeviceptr workspace = 0;
  size_t workspaceBytes = 0;
};

// cuBLASLt (cublasLt.h's ABI), loaded on the first GEMM with an epilogue:
// handles and descriptors are opaque pointers, enumerations ints.
struct CublasLtAlgo {
  uint64_t data[8];
};
struct CublasLtHeuristic {
  CublasLtAlgo algo;
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};
using CublasLtCreate = int (*)(void **);
using CublasLtMatmulDescCreate = int (*)(void **, int, int);
using CublasLtSetAttribute = int (*)(void *, int, const void *, size_t);
using CublasLtMatrixLayoutCreate = int (*)(void **, int, uint64_t, uint64_t,
                                           int64_t);
using CublasLtCreateOne = int (*)(void **);
using CublasLtDestroy = int (*)(void *);
using CublasLtAlgoGetHeuristic = int (*)(void *, void *, void *, void *, void *,
                                         void *, void *, int,
                                         CublasLtHeuristic *, int *);
using CublasLtMatmul = int (*)(void *, void *, const void *, const void *,
                               void *, const void *, void *, const void *,
                               const void *, void *, void *, void *,
                               const CublasLtAlgo *, void *, size_t, CUstream);

/// The descriptors and algorithm of one shape of bias GEMM (gemmBias).
struct BlasLtPlan {
  void *desc = nullptr, *layoutA = nullptr, *layoutB = nullptr,
       *layoutD = nullptr;
  CublasLtHeuristic found{};
};

struct BlasLt {
  bool tried = false;
  void *handle = nullptr;
  /// By precision, transA, transB, m, n, k, lda, ldb, ldd.
  std::map<std::array<int64_t, 9>, BlasLtPlan> plans;
  CublasLtMatmulDescCreate descCreate = nullptr;
  CublasLtSetAttribute descSet = nullptr;
  CublasLtDestroy descDestroy = nullptr;
  CublasLtMatrixLayoutCreate layoutCreate = nullptr;
  CublasLtDestroy layoutDestroy = nullptr;
  CublasLtCreateOne preferenceCreate = nullptr;
  CublasLtSetAttribute preferenceSet = nullptr;
  CublasLtDestroy preferenceDestroy = nullptr;
  CublasLtAlgoGetHeuristic heuristic = nullptr;
  CublasLtMatmul matmul = nullptr;
};

/// The arithmetic of a GEMM: float32 (the default), TF32 tensor cores
/// (gpu-tf32), or bfloat16 inputs with float32 products and sums
/// (gpu-bf16: CUBLAS_COMPUTE_32F_FAST_16BF).
enum class GemmPrecision { F32, TF32, BF16 };

/// GA_CUDA_PROFILE=1: every launch and GEMM timed with CUDA events; a table
/// of the most expensive ones goes to stderr at exit.
struct Timed {
  std::string label;
  CUevent start, end;
};
struct ProfileRow {
  double ms = 0;
  long calls = 0;
};

struct State {
  Blas blas;
  BlasLt blasLt;
  Nccl nccl;
  Graph graph;
  /// The devices the driver reports, and the one this process uses.
  int deviceCount = 0, ordinal = 0;
  bool profile = false;
  std::map<CUmodule, int> moduleIndex;
  std::map<CUfunction, std::string> functionLabel;
  std::vector<Timed> pending;
  std::map<std::string, ProfileRow> profileRows;
  double profileStepMs = 0;
  long profileSteps = 0;
  bool profileWarmedUp = false;
  std::mutex mutex;
  bool initialized = false;
  bool usable = false;
  Driver cu;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::string deviceName;
  /// The first failure since the last step began (empty: none).
  std::string error;
  bool syncEveryLaunch = false;
  // The allocator: live blocks and their sizes, free blocks by size.
  std::unordered_map<CUdeviceptr, size_t> live;
  std::multimap<size_t, CUdeviceptr> cached;
  int64_t currentBytes = 0, peakBytes = 0, allocations = 0;
  int64_t cachedBytes = 0;
};

State &state() {
  static State *s = new State; // Lives until exit: modules unload late.
  return *s;
}

/// Records the first failure (the CUDA call and its message).
void recordError(State &s, const std::string &message) {
  if (s.error.empty())
    s.error = message;
}

bool check(State &s, CUresult rc, const char *call) {
  if (rc == 0)
    return true;
  const char *name = nullptr, *text = nullptr;
  if (s.cu.cuGetErrorName)
    s.cu.cuGetErrorName(rc, &name);
  if (s.cu.cuGetErrorString)
    s.cu.cuGetErrorString(rc, &text);
  recordError(s, std::string(call) + " failed: " +
                     (name ? name : "CUDA error " + std::to_string(rc)) +
                     (text ? std::string(" (") + text + ")" : ""));
  return false;
}

/// This process's rank among the ranks of its node and their number, from
/// the launcher's environment (Open MPI, MPICH, Slurm): 0 outside one; -1
/// for a number the launcher does not give.
/// Read before the MPI run is joined: a step library selects its device
/// when it is loaded.
std::pair<int, int> localRanks() {
  auto number = [](std::initializer_list<const char *> names, int fallback) {
    for (const char *name : names)
      if (const char *value = std::getenv(name))
        return std::atoi(value);
    return fallback;
  };
  return {
      number({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"},
             0),
      number({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}, -1)};
}

/// Loads the driver and makes the primary context of the device of the
/// local rank (device 0 outside mpirun; GA_CUDA_DEVICE) current, once. Returns
/// whether CUDA is usable; when not, the reason is recorded.
bool ensureInitialized(State &s) {
  if (s.initialized) {
    if (s.usable && s.context)
      s.cu.cuCtxSetCurrent(s.context);
    return s.usable;
  }
  s.initialized = true;
  s.syncEveryLaunch = std::getenv("GA_CUDA_SYNC") &&
                      std::strcmp(std::getenv("GA_CUDA_SYNC"), "0") != 0;
  s.profile = std::getenv("GA_CUDA_PROFILE") &&
              std::strcmp(std::getenv("GA_CUDA_PROFILE"), "0") != 0;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    recordError(s, std::string("no CUDA device: the CUDA driver "
                               "(libcuda.so.1) cannot be loaded: ") +
                       dlerror());
    return false;
  }
#define GA_LOAD(name, type)                                                    \
  s.cu.name = reinterpret_cast<Id<type>>(dlsym(lib, #name));                   \
  if (!s.cu.name) {                                                            \
    recordError(s, "the CUDA driver has no " #name);                           \
    return false;                                                              \
  }
  GA_CUDA_FUNCTIONS(GA_LOAD)
#undef GA_LOAD
  const char *graphEnv = std::getenv("GA_CUDA_GRAPH");
  s.graph.requested = graphEnv && std::strcmp(graphEnv, "0") != 0;
  if (s.graph.requested) {
#define GA_LOAD_GRAPH(name, type)                                              \
  s.cu.name = reinterpret_cast<Id<type>>(dlsym(lib, #name));                   \
  if (!s.cu.name && s.graph.off.empty())                                       \
    s.graph.off = "the CUDA driver has no " #name;
    GA_CUDA_GRAPH_FUNCTIONS(GA_LOAD_GRAPH)
#undef GA_LOAD_GRAPH
    if (s.profile)
      s.graph.off = "GA_CUDA_PROFILE times every launch on its own";
    else if (s.syncEveryLaunch)
      s.graph.off = "GA_CUDA_SYNC waits after every launch";
  }
  if (!check(s, s.cu.cuInit(0), "cuInit"))
    return false;
  int count = 0;
  if (!check(s, s.cu.cuDeviceGetCount(&count), "cuDeviceGetCount"))
    return false;
  // Under mpirun, the device of the local rank, so that the ranks of a node
  // with as many devices each have their own.
  int ordinal = 0;
  if (int local = localRanks().first; local > 0 && count > 0)
    ordinal = local % count;
  if (const char *env = std::getenv("GA_CUDA_DEVICE"))
    ordinal = std::atoi(env);
  s.deviceCount = count;
  s.ordinal = ordinal;
  if (count == 0 || ordinal < 0 || ordinal >= count) {
    recordError(s, "no CUDA device: the driver reports " +
                       std::to_string(count) + " device(s)" +
                       (ordinal ? ", GA_CUDA_DEVICE=" + std::to_string(ordinal)
                                : std::string()));
    return false;
  }
  CUdevice device;
  if (!check(s, s.cu.cuDeviceGet(&device, ordinal), "cuDeviceGet") ||
      !check(s, s.cu.cuDevicePrimaryCtxRetain(&s.context, device),
             "cuDevicePrimaryCtxRetain") ||
      !check(s, s.cu.cuCtxSetCurrent(s.context), "cuCtxSetCurrent") ||
      !check(s, s.cu.cuStreamCreate(&s.stream, 0), "cuStreamCreate"))
    return false;
  char name[256] = {0};
  s.cu.cuDeviceGetName(name, sizeof(name) - 1, device);
  s.deviceName = name;
  s.usable = true;
  return true;
}

CUdeviceptr allocate(State &s, size_t bytes, bool counted) {
  if (!ensureInitialized(s))
    return 0;
  // Sizes rounded to 512 bytes, so that similar sizes share cached blocks.
  size_t size = ((bytes ? bytes : 1) + 511) / 512 * 512;
  CUdeviceptr pointer = 0;
  auto it = s.cached.find(size);
  if (it != s.cached.end()) {
    pointer = it->second;
    s.cached.erase(it);
    s.cachedBytes -= size;
  } else {
    CUresult rc = s.cu.cuMemAlloc_v2(&pointer, size);
    // (Not while a graph is captured: the stream cannot be waited for.)
    if (rc != 0 && !s.cached.empty() && !s.graph.capturing) {
      // Out of memory: give the cache back and try once more.
      s.cu.cuStreamSynchronize(s.stream);
      for (auto &[cachedSize, block] : s.cached)
        s.cu.cuMemFree_v2(block);
      s.cached.clear();
      s.cachedBytes = 0;
      rc = s.cu.cuMemAlloc_v2(&pointer, size);
    }
    if (!check(s, rc,
               ("cuMemAlloc of " + std::to_string(size) + " bytes").c_str()))
      return 0;
  }
  s.live[pointer] = counted ? size : size | (size_t(1) << 63);
  if (counted) {
    s.currentBytes += size;
    s.peakBytes = std::max(s.peakBytes, s.currentBytes);
    ++s.allocations;
  }
  return pointer;
}

void release(State &s, CUdeviceptr pointer) {
  auto it = s.live.find(pointer);
  if (it == s.live.end()) {
    recordError(s, "ga_cuda_free of a pointer the CUDA runtime did not "
                   "allocate");
    return;
  }
  size_t size = it->second & ~(size_t(1) << 63);
  if (!(it->second >> 63))
    s.currentBytes -= size;
  s.live.erase(it);
  s.cached.emplace(size, pointer);
  s.cachedBytes += size;
}

/// Copies `bytes` between any two pointers (device or host: the driver's
/// unified addressing tells them apart) on the step's stream.
bool copy(State &s, void *dst, const void *src, size_t bytes) {
  if (!bytes)
    return true;
  return check(s,
               s.cu.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                                  reinterpret_cast<CUdeviceptr>(src), bytes,
                                  s.stream),
               "cuMemcpyAsync");
}

/// Ends the capture of the step's graph, if one runs, and launches what
/// was captured (instantiated, or the last instantiation updated in
/// place). With `reason`, the mode turns off for good: the step is about
/// to wait for the device, which a capture cannot hold.
void endCapture(State &s, const char *reason) {
  Graph &g = s.graph;
  if (reason && g.off.empty())
    g.off = reason;
  if (!g.capturing)
    return;
  g.capturing = false;
  CUgraph graph = nullptr;
  if (!check(s, s.cu.cuStreamEndCapture(s.stream, &graph),
             "cuStreamEndCapture")) {
    g.off = "the capture failed: " + s.error;
    return;
  }
  bool updated = false;
  if (g.exec) {
    GraphUpdateInfo info{};
    updated = s.cu.cuGraphExecUpdate_v2(g.exec, graph, &info) == 0;
    if (!updated) {
      s.cu.cuGraphExecDestroy(g.exec);
      g.exec = nullptr;
    }
  }
  if (!g.exec && !check(s, s.cu.cuGraphInstantiateWithFlags(&g.exec, graph, 0),
                        "cuGraphInstantiate")) {
    g.exec = nullptr;
    g.off = "the graph cannot be instantiated: " + s.error;
  } else if (check(s, s.cu.cuGraphLaunch(g.exec, s.stream), "cuGraphLaunch")) {
    ++g.launches;
    g.updates += updated;
    g.instantiations += !updated;
  }
  s.cu.cuGraphDestroy(graph);
}

/// Where the host is about to wait for the device inside a step.
void hostWaits(State &s, const char *reason) {
  if (s.graph.requested && s.graph.inStep)
    endCapture(s, reason);
}

bool synchronize(State &s) {
  return check(s, s.cu.cuStreamSynchronize(s.stream), "cuStreamSynchronize");
}

void printProfile() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<std::pair<std::string, ProfileRow>> rows(s.profileRows.begin(),
                                                       s.profileRows.end());
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.ms > b.second.ms;
  });
  double total = 0;
  for (auto &row : rows)
    total += row.second.ms;
  std::fprintf(stderr,
               "ga-cuda-profile: %ld step(s) after the first, %.3f ms of "
               "kernels and GEMMs per step, %zu distinct\n",
               s.profileSteps, s.profileSteps ? total / s.profileSteps : 0.0,
               rows.size());
  std::fprintf(stderr, "ga-cuda-profile: %8s %6s %10s  %s\n", "ms/step",
               "share", "calls/step", "what (module: load order)");
  for (size_t i = 0; i < rows.size() && i < 25; ++i)
    std::fprintf(stderr, "ga-cuda-profile: %8.3f %5.1f%% %10.1f  %s\n",
                 rows[i].second.ms / std::max<long>(1, s.profileSteps),
                 total ? 100 * rows[i].second.ms / total : 0.0,
                 double(rows[i].second.calls) /
                     std::max<long>(1, s.profileSteps),
                 rows[i].first.c_str());
}

/// Starts timing `label` on the stream (GA_CUDA_PROFILE); returns the
/// index of its record, or -1.
long profileBegin(State &s, const std::string &label) {
  if (!s.profile)
    return -1;
  static bool registered = (std::atexit(printProfile), true);
  (void)registered;
  Timed t{label, nullptr, nullptr};
  s.cu.cuEventCreate(&t.start, 0);
  s.cu.cuEventCreate(&t.end, 0);
  s.cu.cuEventRecord(t.start, s.stream);
  s.pending.push_back(t);
  return static_cast<long>(s.pending.size()) - 1;
}

void profileEnd(State &s, long index) {
  if (index >= 0)
    s.cu.cuEventRecord(s.pending[index].end, s.stream);
}

/// After the stream has finished a step: its timings into the table. The
/// first step is left out: it loads cuBLAS's kernels and warms the caches.
void profileCollect(State &s) {
  if (!s.profile)
    return;
  bool warmUp = !s.profileWarmedUp;
  s.profileWarmedUp = true;
  for (Timed &t : s.pending) {
    if (warmUp) {
      s.cu.cuEventDestroy_v2(t.start);
      s.cu.cuEventDestroy_v2(t.end);
      continue;
    }
    float ms = 0;
    if (s.cu.cuEventElapsedTime(&ms, t.start, t.end) == 0) {
      ProfileRow &row = s.profileRows[t.label];
      row.ms += ms;
      ++row.calls;
    }
    s.cu.cuEventDestroy_v2(t.start);
    s.cu.cuEventDestroy_v2(t.end);
  }
  s.pending.clear();
  if (!warmUp)
    ++s.profileSteps;
}

/// cuBLAS on the step's stream, float32 arithmetic (CUBLAS_DEFAULT_MATH:
/// no TF32), loaded once: GA_CUBLAS_LIBRARY, else libcublas.so.13 or .12
/// on the loader's path or in the CUDA toolkit's lib64.
bool ensureBlas(State &s) {
  Blas &blas = s.blas;
  if (blas.tried)
    return blas.handle != nullptr;
  blas.tried = true;
  std::vector<std::string> candidates;
  if (const char *env = std::getenv("GA_CUBLAS_LIBRARY"))
    candidates.push_back(env);
  std::string home = std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME") : "";
  for (const char *name : {"libcublas.so.13", "libcublas.so.12"}) {
    candidates.push_back(name);
    if (!home.empty())
      candidates.push_back(home + "/lib64/" + name);
    candidates.push_back(std::string("/usr/local/cuda/lib64/") + name);
  }
  void *lib = nullptr;
  for (const std::string &candidate : candidates)
    if ((lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)))
      break;
  if (!lib) {
    recordError(s, "the step multiplies matrices with cuBLAS, which cannot "
                   "be loaded (libcublas.so.13 or .12; set "
                   "GA_CUBLAS_LIBRARY, or compile with "
                   "--pipeline-options gpu-blas=false)");
    return false;
  }
  auto create = reinterpret_cast<CublasCreate>(dlsym(lib, "cublasCreate_v2"));
  auto setStream =
      reinterpret_cast<CublasSetStream>(dlsym(lib, "cublasSetStream_v2"));
  auto setMath =
      reinterpret_cast<CublasSetMathMode>(dlsym(lib, "cublasSetMathMode"));
  blas.sgemm = reinterpret_cast<CublasSgemm>(dlsym(lib, "cublasSgemm_v2"));
  blas.sgemmBatched = reinterpret_cast<CublasSgemmStridedBatched>(
      dlsym(lib, "cublasSgemmStridedBatched"));
  blas.gemmEx = reinterpret_cast<CublasGemmEx>(dlsym(lib, "cublasGemmEx"));
  blas.gemmBatchedEx = reinterpret_cast<CublasGemmStridedBatchedEx>(
      dlsym(lib, "cublasGemmStridedBatchedEx"));
  if (!create || !setStream || !setMath || !blas.sgemm || !blas.sgemmBatched) {
    recordError(s, "the cuBLAS library lacks cublasCreate_v2, "
                   "cublasSetStream_v2, cublasSetMathMode, cublasSgemm_v2 or "
                   "cublasSgemmStridedBatched");
    return false;
  }
  void *handle = nullptr;
  int rc = create(&handle);
  if (rc != 0) {
    recordError(s, "cublasCreate failed: cuBLAS status " + std::to_string(rc));
    return false;
  }
  if ((rc = setStream(handle, s.stream)) != 0 ||
      (rc = setMath(handle, /*CUBLAS_DEFAULT_MATH=*/0)) != 0) {
    recordError(s, "cuBLAS setup failed: status " + std::to_string(rc));
    return false;
  }
  // A fixed workspace: without one, cuBLAS allocates and frees its own
  // around GEMMs that need it, which waits for the device (and makes
  // results depend on what memory it got).
  using CublasSetWorkspace = int (*)(void *, void *, size_t);
  if (auto setWorkspace = reinterpret_cast<CublasSetWorkspace>(
          dlsym(lib, "cublasSetWorkspace_v2"))) {
    const size_t bytes = size_t(32) << 20;
    CUdeviceptr workspace = allocate(s, bytes, /*counted=*/false);
    if (!workspace ||
        (rc = setWorkspace(handle, reinterpret_cast<void *>(workspace),
                           bytes)) != 0) {
      recordError(s, "cublasSetWorkspace failed: status " + std::to_string(rc));
      return false;
    }
    blas.workspace = workspace;
    blas.workspaceBytes = bytes;
  }
  blas.handle = handle;
  blas.setMath = setMath;
  blas.library = lib;
  return true;
}

/// cuBLASLt, for the GEMMs with a bias epilogue (ga-gpu-gemm-to-blas
/// bias-epilogue), loaded once after cuBLAS (whose workspace it shares):
/// GA_CUBLASLT_LIBRARY if set; else the cuBLAS library loaded, where its
/// functions are found (cuBLAS links cuBLASLt); else libcublasLt.so.13 or
/// .12 on the loader's path or in the CUDA toolkit's lib64.
bool ensureBlasLt(State &s) {
  BlasLt &lt = s.blasLt;
  if (lt.tried)
    return lt.handle != nullptr;
  lt.tried = true;
  if (!ensureBlas(s))
    return false;
  std::vector<std::string> candidates;
  void *lib = nullptr;
  if (const char *env = std::getenv("GA_CUBLASLT_LIBRARY"))
    candidates.push_back(env);
  else if (dlsym(s.blas.library, "cublasLtCreate"))
    lib = s.blas.library;
  std::string home = std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME") : "";
  for (const char *name : {"libcublasLt.so.13", "libcublasLt.so.12"}) {
    candidates.push_back(name);
    if (!home.empty())
      candidates.push_back(home + "/lib64/" + name);
    candidates.push_back(std::string("/usr/local/cuda/lib64/") + name);
  }
  for (const std::string &candidate : candidates)
    if (lib || (lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)))
      break;
  if (!lib) {
    recordError(s, "the step adds biases in cuBLASLt epilogues, and cuBLASLt "
                   "cannot be loaded (libcublasLt.so.13 or .12; set "
                   "GA_CUBLASLT_LIBRARY, or compile with --pipeline-options "
                   "gpu-bias-epilogue=false)");
    return false;
  }
  auto symbol = [&](const char *name) { return dlsym(lib, name); };
  auto create = reinterpret_cast<CublasLtCreate>(symbol("cublasLtCreate"));
  lt.descCreate = reinterpret_cast<CublasLtMatmulDescCreate>(
      symbol("cublasLtMatmulDescCreate"));
  lt.descSet = reinterpret_cast<CublasLtSetAttribute>(
      symbol("cublasLtMatmulDescSetAttribute"));
  lt.descDestroy =
      reinterpret_cast<CublasLtDestroy>(symbol("cublasLtMatmulDescDestroy"));
  lt.layoutCreate = reinterpret_cast<CublasLtMatrixLayoutCreate>(
      symbol("cublasLtMatrixLayoutCreate"));
  lt.layoutDestroy =
      reinterpret_cast<CublasLtDestroy>(symbol("cublasLtMatrixLayoutDestroy"));
  lt.preferenceCreate = reinterpret_cast<CublasLtCreateOne>(
      symbol("cublasLtMatmulPreferenceCreate"));
  lt.preferenceSet = reinterpret_cast<CublasLtSetAttribute>(
      symbol("cublasLtMatmulPreferenceSetAttribute"));
  lt.preferenceDestroy = reinterpret_cast<CublasLtDestroy>(
      symbol("cublasLtMatmulPreferenceDestroy"));
  lt.heuristic = reinterpret_cast<CublasLtAlgoGetHeuristic>(
      symbol("cublasLtMatmulAlgoGetHeuristic"));
  lt.matmul = reinterpret_cast<CublasLtMatmul>(symbol("cublasLtMatmul"));
  if (!create || !lt.descCreate || !lt.descSet || !lt.descDestroy ||
      !lt.layoutCreate || !lt.layoutDestroy || !lt.preferenceCreate ||
      !lt.preferenceSet || !lt.preferenceDestroy || !lt.heuristic ||
      !lt.matmul) {
    recordError(s, "the cuBLASLt library lacks one of cublasLtCreate, "
                   "cublasLtMatmulDesc*, cublasLtMatrixLayout*, "
                   "cublasLtMatmulPreference*, "
                   "cublasLtMatmulAlgoGetHeuristic, cublasLtMatmul");
    return false;
  }
  void *handle = nullptr;
  if (int rc = create(&handle)) {
    recordError(s, "cublasLtCreate failed: status " + std::to_string(rc));
    return false;
  }
  lt.handle = handle;
  return true;
}

template <typename T> T readElement(intptr_t pointer, int64_t index) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  T value{};
  if (!s.usable || !s.error.empty())
    return value;
  hostWaits(s, "the step reads device memory within itself (such as the "
               "label check's position; compile with check-labels=false)");
  if (copy(s, &value, reinterpret_cast<const T *>(pointer) + index, sizeof(T)))
    synchronize(s);
  return value;
}

/// The parsed signature of `text` (a step library's text lives as long as
/// the library).
const ga::StepSignature *signatureOf(const char *text, std::string &error) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<ga::StepSignature>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto &entry = cache[text ? text : ""];
  if (!entry) {
    auto parsed = std::make_unique<ga::StepSignature>();
    if (!ga::parseSignature(text ? text : "", *parsed, error)) {
      cache.erase(text ? text : "");
      return nullptr;
    }
    entry = std::move(parsed);
  }
  return entry.get();
}

int64_t bytesOf(const ga::TensorSpec &spec) {
  return spec.numElements() * ga::npyDTypeSize(spec.dtype);
}

} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// The step's allocator (ga-gpu-device-allocations).
//===----------------------------------------------------------------------===//

void *ga_cuda_alloc(size_t size) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return reinterpret_cast<void *>(allocate(s, size, /*counted=*/true));
}

void *ga_cuda_aligned_alloc(size_t alignment, size_t size) {
  // Device allocations are aligned to at least 256 bytes.
  (void)alignment;
  return ga_cuda_alloc(size);
}

void ga_cuda_free(void *pointer) {
  if (!pointer)
    return;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  release(s, reinterpret_cast<CUdeviceptr>(pointer));
}

float ga_cuda_read_f32(intptr_t p, int64_t i) {
  return readElement<float>(p, i);
}
double ga_cuda_read_f64(intptr_t p, int64_t i) {
  return readElement<double>(p, i);
}
int32_t ga_cuda_read_i32(intptr_t p, int64_t i) {
  return readElement<int32_t>(p, i);
}
int64_t ga_cuda_read_i64(intptr_t p, int64_t i) {
  return readElement<int64_t>(p, i);
}

/// The peak of the step's own device buffers (not its inputs and results
/// staging), as ga_memory_stats reports the CPU allocator's.
void ga_cuda_memory_stats(ga_memory *out) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  out->current_bytes = s.currentBytes;
  out->peak_bytes = s.peakBytes;
  out->allocations = s.allocations;
}

void ga_cuda_memory_reset_peak(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.peakBytes = s.currentBytes;
}

/// The name of the device steps run on, or NULL (with `*reason` set) when
/// there is none.
const char *ga_cuda_device_name(const char **reason) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!ensureInitialized(s)) {
    if (reason)
      *reason = s.error.c_str();
    return nullptr;
  }
  return s.deviceName.c_str();
}

/// C += op(A) op(B), or C = op(A) op(B) without `accumulate` (C is not
/// read: a product from zero), for row-major f32 matrices
/// (ga-gpu-gemm-to-blas):
/// C is m x n with leading dimension ldc; op(A) is m x k (A is k x m when
/// transA); op(B) is k x n (B is n x k when transB); offsets in elements
/// from the aligned pointers; `count` such products, the i-th at offsets
/// advanced by i times the strides; the products scaled by alpha. cuBLAS is
/// column-major: it computes the transposed product C^T += op(B)^T op(A)^T.
static void gemm(GemmPrecision precision, int32_t transA, int32_t transB,
                 int32_t accumulate, int64_t m, int64_t n, int64_t k,
                 int64_t count, float alpha, intptr_t a, int64_t offsetA,
                 int64_t lda, int64_t strideA, intptr_t b, int64_t offsetB,
                 int64_t ldb, int64_t strideB, intptr_t c, int64_t offsetC,
                 int64_t ldc, int64_t strideC) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.usable || !s.error.empty() || !ensureBlas(s))
    return;
  if (m == 0 || n == 0 || count == 0)
    return;
  bool bf16 = precision == GemmPrecision::BF16;
  if (bf16 && (!s.blas.gemmEx || !s.blas.gemmBatchedEx)) {
    recordError(s, "the step multiplies in bfloat16 (gpu-bf16), and the "
                   "cuBLAS library lacks cublasGemmEx or "
                   "cublasGemmStridedBatchedEx");
    return;
  }
  // CUBLAS_TF32_TENSOR_OP_MATH (3) or CUBLAS_DEFAULT_MATH (0); bf16 is
  // asked for by the compute type of the Ex calls.
  int mode = precision == GemmPrecision::TF32 ? 3 : 0;
  if (mode != s.blas.mathMode) {
    if (int rc = s.blas.setMath(s.blas.handle, mode)) {
      recordError(s, "cublasSetMathMode failed: status " + std::to_string(rc));
      return;
    }
    s.blas.mathMode = mode;
  }
  // beta: C += (accumulate) or C = (a product from zero, C not read).
  const float beta = accumulate ? 1.0f : 0.0f;
  // Named only for the profile and for errors: not on every call.
  const char *call =
      bf16 ? (count > 1 ? "cublasGemmStridedBatchedEx bf16"
                        : "cublasGemmEx bf16")
           : (count > 1 ? "cublasSgemmStridedBatched" : "cublasSgemm");
  auto shape = [&] {
    return std::to_string(m) + "x" + std::to_string(n) + "x" +
           std::to_string(k) + (count > 1 ? " x" + std::to_string(count) : "");
  };
  long timed = s.profile ? profileBegin(s, std::string(call) + " " + shape() +
                                               (transA ? " A^T" : "") +
                                               (transB ? " B^T" : ""))
                         : -1;
  const float *A = reinterpret_cast<const float *>(a) + offsetA;
  const float *B = reinterpret_cast<const float *>(b) + offsetB;
  float *C = reinterpret_cast<float *>(c) + offsetC;
  // cuBLAS's column-major sizes: the transposed product (see above).
  int opA = transB ? 1 : 0, opB = transA ? 1 : 0;
  int rows = static_cast<int>(n), cols = static_cast<int>(m),
      depth = static_cast<int>(k), ldA = static_cast<int>(ldb),
      ldB = static_cast<int>(lda), ldC = static_cast<int>(ldc),
      batches = static_cast<int>(count);
  // CUDA_R_32F matrices, CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_GEMM_DEFAULT.
  constexpr int r32f = 0, fast16bf = 75, defaultAlgo = -1;
  int rc;
  if (bf16 && count > 1)
    rc = s.blas.gemmBatchedEx(s.blas.handle, opA, opB, rows, cols, depth,
                              &alpha, B, r32f, ldA, strideB, A, r32f, ldB,
                              strideA, &beta, C, r32f, ldC, strideC, batches,
                              fast16bf, defaultAlgo);
  else if (bf16)
    rc = s.blas.gemmEx(s.blas.handle, opA, opB, rows, cols, depth, &alpha, B,
                       r32f, ldA, A, r32f, ldB, &beta, C, r32f, ldC, fast16bf,
                       defaultAlgo);
  else if (count > 1)
    rc = s.blas.sgemmBatched(s.blas.handle, opA, opB, rows, cols, depth, &alpha,
                             B, ldA, strideB, A, ldB, strideA, &beta, C, ldC,
                             strideC, batches);
  else
    rc = s.blas.sgemm(s.blas.handle, opA, opB, rows, cols, depth, &alpha, B,
                      ldA, A, ldB, &beta, C, ldC);
  profileEnd(s, timed);
  if (rc != 0)
    recordError(s, std::string(call) + " (" + shape() +
                       ") failed: cuBLAS status " + std::to_string(rc));
  else if (s.syncEveryLaunch)
    synchronize(s);
}

void ga_cuda_gemm_f32(int32_t transA, int32_t transB, int32_t accumulate,
                      int64_t m, int64_t n, int64_t k, intptr_t a,
                      int64_t offsetA, int64_t lda, intptr_t b, int64_t offsetB,
                      int64_t ldb, intptr_t c, int64_t offsetC, int64_t ldc) {
  gemm(GemmPrecision::F32, transA, transB, accumulate, m, n, k, 1, 1.0f, a,
       offsetA, lda, 0, b, offsetB, ldb, 0, c, offsetC, ldc, 0);
}

/// As ga_cuda_gemm_f32, with TF32 tensor-core products (gpu-tf32=true).
void ga_cuda_gemm_f32_tf32(int32_t transA, int32_t transB, int32_t accumulate,
                           int64_t m, int64_t n, int64_t k, intptr_t a,
                           int64_t offsetA, int64_t lda, intptr_t b,
                           int64_t offsetB, int64_t ldb, intptr_t c,
                           int64_t offsetC, int64_t ldc) {
  gemm(GemmPrecision::TF32, transA, transB, accumulate, m, n, k, 1, 1.0f, a,
       offsetA, lda, 0, b, offsetB, ldb, 0, c, offsetC, ldc, 0);
}

/// `count` products C_i += alpha op(A_i) op(B_i), the i-th matrix of each
/// operand `stride` elements after the previous (the attention's
/// contractions per head); otherwise as ga_cuda_gemm_f32. `order` says how
/// the step multiplied by alpha (the CPU emulation follows it; cuBLAS
/// scales the sum).
void ga_cuda_gemm_batched_f32(int32_t transA, int32_t transB,
                              int32_t accumulate, int64_t m, int64_t n,
                              int64_t k, int64_t count, float alpha,
                              int32_t order, intptr_t a, int64_t offsetA,
                              int64_t lda, int64_t strideA, intptr_t b,
                              int64_t offsetB, int64_t ldb, int64_t strideB,
                              intptr_t c, int64_t offsetC, int64_t ldc,
                              int64_t strideC) {
  gemm(GemmPrecision::F32, transA, transB, accumulate, m, n, k, count, alpha, a,
       offsetA, lda, strideA, b, offsetB, ldb, strideB, c, offsetC, ldc,
       strideC);
}

/// As ga_cuda_gemm_batched_f32, in TF32 (gpu-tf32=true).
void ga_cuda_gemm_batched_f32_tf32(int32_t transA, int32_t transB,
                                   int32_t accumulate, int64_t m, int64_t n,
                                   int64_t k, int64_t count, float alpha,
                                   int32_t order, intptr_t a, int64_t offsetA,
                                   int64_t lda, int64_t strideA, intptr_t b,
                                   int64_t offsetB, int64_t ldb,
                                   int64_t strideB, intptr_t c, int64_t offsetC,
                                   int64_t ldc, int64_t strideC) {
  gemm(GemmPrecision::TF32, transA, transB, accumulate, m, n, k, count, alpha,
       a, offsetA, lda, strideA, b, offsetB, ldb, strideB, c, offsetC, ldc,
       strideC);
}

/// As ga_cuda_gemm_f32, with bfloat16 inputs and float32 products and sums
/// (gpu-bf16=true).
void ga_cuda_gemm_f32_bf16(int32_t transA, int32_t transB, int32_t accumulate,
                           int64_t m, int64_t n, int64_t k, intptr_t a,
                           int64_t offsetA, int64_t lda, intptr_t b,
                           int64_t offsetB, int64_t ldb, intptr_t c,
                           int64_t offsetC, int64_t ldc) {
  gemm(GemmPrecision::BF16, transA, transB, accumulate, m, n, k, 1, 1.0f, a,
       offsetA, lda, 0, b, offsetB, ldb, 0, c, offsetC, ldc, 0);
}

/// As ga_cuda_gemm_batched_f32, with bfloat16 inputs (gpu-bf16=true).
void ga_cuda_gemm_batched_f32_bf16(int32_t transA, int32_t transB,
                                   int32_t accumulate, int64_t m, int64_t n,
                                   int64_t k, int64_t count, float alpha,
                                   int32_t order, intptr_t a, int64_t offsetA,
                                   int64_t lda, int64_t strideA, intptr_t b,
                                   int64_t offsetB, int64_t ldb,
                                   int64_t strideB, intptr_t c, int64_t offsetC,
                                   int64_t ldc, int64_t strideC) {
  gemm(GemmPrecision::BF16, transA, transB, accumulate, m, n, k, count, alpha,
       a, offsetA, lda, strideA, b, offsetB, ldb, strideB, c, offsetC, ldc,
       strideC);
}

/// A sequence of cuBLASLt calls that stops at the first failure:
/// `step(name, status)` records it and returns whether every call so far
/// succeeded.
struct LtCalls {
  std::string failed;
  bool operator()(const char *what, int rc) {
    if (rc != 0 && failed.empty())
      failed = std::string(what) + " failed: status " + std::to_string(rc);
    return failed.empty();
  }
};

/// Makes `plan` for the bias GEMMs of one shape (see gemmBias): the
/// descriptor with the transpositions and the bias epilogue, the three
/// layouts, and the algorithm cuBLASLt's heuristic chooses within the
/// shared workspace. On failure (recorded in `step`), what was made is
/// destroyed.
bool makeBiasPlan(State &s, GemmPrecision precision, int32_t transA,
                  int32_t transB, int64_t m, int64_t n, int64_t k, int64_t lda,
                  int64_t ldb, int64_t ldd, BlasLtPlan &plan, LtCalls &step) {
  BlasLt &lt = s.blasLt;
  // CUBLAS_COMPUTE_32F (68), _FAST_TF32 (77) or _FAST_16BF (75); CUDA_R_32F
  // (0) scales and matrices.
  int compute = precision == GemmPrecision::TF32   ? 77
                : precision == GemmPrecision::BF16 ? 75
                                                   : 68;
  constexpr int r32f = 0;
  constexpr int transAttr = 3, transBAttr = 4, epilogueAttr = 7,
                workspaceAttr = 1;
  int32_t opA = transB ? 1 : 0, opB = transA ? 1 : 0;
  uint32_t epilogue = 4; // CUBLASLT_EPILOGUE_BIAS
  uint64_t workspaceBytes = s.blas.workspaceBytes;
  void *preference = nullptr;
  int count = 0;
  // cuBLASLt's A is our B (stored n x k, or k x n when transposed, in
  // column-major terms), its B our A, its D ours transposed.
  bool ok =
      step("cublasLtMatmulDescCreate",
           lt.descCreate(&plan.desc, compute, r32f)) &&
      step("cublasLtMatmulDescSetAttribute",
           lt.descSet(plan.desc, transAttr, &opA, sizeof(opA))) &&
      step("cublasLtMatmulDescSetAttribute",
           lt.descSet(plan.desc, transBAttr, &opB, sizeof(opB))) &&
      step("cublasLtMatmulDescSetAttribute",
           lt.descSet(plan.desc, epilogueAttr, &epilogue, sizeof(epilogue))) &&
      step("cublasLtMatrixLayoutCreate",
           lt.layoutCreate(&plan.layoutA, r32f, transB ? k : n, transB ? n : k,
                           ldb)) &&
      step("cublasLtMatrixLayoutCreate",
           lt.layoutCreate(&plan.layoutB, r32f, transA ? m : k, transA ? k : m,
                           lda)) &&
      step("cublasLtMatrixLayoutCreate",
           lt.layoutCreate(&plan.layoutD, r32f, n, m, ldd)) &&
      step("cublasLtMatmulPreferenceCreate",
           lt.preferenceCreate(&preference)) &&
      step("cublasLtMatmulPreferenceSetAttribute",
           lt.preferenceSet(preference, workspaceAttr, &workspaceBytes,
                            sizeof(workspaceBytes))) &&
      step("cublasLtMatmulAlgoGetHeuristic",
           lt.heuristic(lt.handle, plan.desc, plan.layoutA, plan.layoutB,
                        plan.layoutD, plan.layoutD, preference, 1, &plan.found,
                        &count));
  if (preference)
    lt.preferenceDestroy(preference);
  if (ok && (count < 1 || plan.found.state != 0)) {
    step.failed = "cublasLtMatmulAlgoGetHeuristic found no algorithm";
    ok = false;
  }
  if (ok)
    return true;
  for (void *layout : {plan.layoutA, plan.layoutB, plan.layoutD})
    if (layout)
      lt.layoutDestroy(layout);
  if (plan.desc)
    lt.descDestroy(plan.desc);
  return false;
}

/// D = op(A) op(B) + bias for row-major f32 matrices, the bias (n elements,
/// contiguous) added to every row of D (m x n, leading dimension ldd):
/// one cuBLASLt matmul with the CUBLASLT_EPILOGUE_BIAS epilogue, which
/// writes D without reading it. cuBLASLt is column-major: it computes
/// D^T = op(B)^T op(A)^T + bias, the bias along D^T's n rows. The
/// descriptors and the algorithm of a shape are made once (the heuristic is
/// a host-side search); later calls only set the bias pointer.
static void gemmBias(GemmPrecision precision, int32_t transA, int32_t transB,
                     int64_t m, int64_t n, int64_t k, intptr_t a,
                     int64_t offsetA, int64_t lda, intptr_t b, int64_t offsetB,
                     int64_t ldb, intptr_t bias, int64_t offsetBias, intptr_t d,
                     int64_t offsetD, int64_t ldd) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.usable || !s.error.empty() || !ensureBlasLt(s))
    return;
  if (m == 0 || n == 0)
    return;
  BlasLt &lt = s.blasLt;
  auto shape = [&] {
    return std::to_string(m) + "x" + std::to_string(n) + "x" +
           std::to_string(k);
  };
  long timed = s.profile ? profileBegin(s, "cublasLtMatmul bias " + shape() +
                                               (transA ? " A^T" : "") +
                                               (transB ? " B^T" : ""))
                         : -1;
  LtCalls step;
  // The plan of this shape: made (and its algorithm chosen) on the first
  // call, reused by every later step; a plan that failed is not kept.
  std::array<int64_t, 9> key = {
      static_cast<int64_t>(precision), transA, transB, m, n, k, lda, ldb, ldd};
  auto [it, made] = lt.plans.try_emplace(key);
  BlasLtPlan &plan = it->second;
  if (made && !makeBiasPlan(s, precision, transA, transB, m, n, k, lda, ldb,
                            ldd, plan, step))
    lt.plans.erase(it);
  if (step.failed.empty()) {
    // The bias pointer is the only attribute that changes between calls.
    const float *A = reinterpret_cast<const float *>(a) + offsetA;
    const float *B = reinterpret_cast<const float *>(b) + offsetB;
    const float *biasPointer =
        reinterpret_cast<const float *>(bias) + offsetBias;
    float *D = reinterpret_cast<float *>(d) + offsetD;
    const float one = 1.0f, zero = 0.0f;
    constexpr int biasAttr = 8; // CUBLASLT_MATMUL_DESC_BIAS_POINTER
    if (step(
            "cublasLtMatmulDescSetAttribute",
            lt.descSet(plan.desc, biasAttr, &biasPointer, sizeof(biasPointer))))
      step("cublasLtMatmul",
           lt.matmul(lt.handle, plan.desc, &one, B, plan.layoutA, A,
                     plan.layoutB, &zero, D, plan.layoutD, D, plan.layoutD,
                     &plan.found.algo,
                     reinterpret_cast<void *>(s.blas.workspace),
                     plan.found.workspaceSize, s.stream));
  }
  profileEnd(s, timed);
  if (!step.failed.empty())
    recordError(s, step.failed + " (bias GEMM " + shape() + ")");
  else if (s.syncEveryLaunch)
    synchronize(s);
}

/// D = op(A) op(B) + bias (see gemmBias), float32.
void ga_cuda_gemm_bias_f32(int32_t transA, int32_t transB, int64_t m, int64_t n,
                           int64_t k, intptr_t a, int64_t offsetA, int64_t lda,
                           intptr_t b, int64_t offsetB, int64_t ldb,
                           intptr_t bias, int64_t offsetBias, intptr_t d,
                           int64_t offsetD, int64_t ldd) {
  gemmBias(GemmPrecision::F32, transA, transB, m, n, k, a, offsetA, lda, b,
           offsetB, ldb, bias, offsetBias, d, offsetD, ldd);
}

/// As ga_cuda_gemm_bias_f32, in TF32 (gpu-tf32=true).
void ga_cuda_gemm_bias_f32_tf32(int32_t transA, int32_t transB, int64_t m,
                                int64_t n, int64_t k, intptr_t a,
                                int64_t offsetA, int64_t lda, intptr_t b,
                                int64_t offsetB, int64_t ldb, intptr_t bias,
                                int64_t offsetBias, intptr_t d, int64_t offsetD,
                                int64_t ldd) {
  gemmBias(GemmPrecision::TF32, transA, transB, m, n, k, a, offsetA, lda, b,
           offsetB, ldb, bias, offsetBias, d, offsetD, ldd);
}

/// As ga_cuda_gemm_bias_f32, with bfloat16 inputs (gpu-bf16=true).
void ga_cuda_gemm_bias_f32_bf16(int32_t transA, int32_t transB, int64_t m,
                                int64_t n, int64_t k, intptr_t a,
                                int64_t offsetA, int64_t lda, intptr_t b,
                                int64_t offsetB, int64_t ldb, intptr_t bias,
                                int64_t offsetBias, intptr_t d, int64_t offsetD,
                                int64_t ldd) {
  gemmBias(GemmPrecision::BF16, transA, transB, m, n, k, a, offsetA, lda, b,
           offsetB, ldb, bias, offsetBias, d, offsetD, ldd);
}

} // extern "C"

namespace {
/// Decides, on the first all-reduce of a data-parallel run, whether sums go
/// through NCCL (see the file's comment) and, if so, makes its communicator
/// (rank 0's id broadcast with MPI). Returns whether NCCL is used; false
/// with an error recorded when it is required (GA_NCCL=1) but cannot be.
bool ensureNccl(State &s) {
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
  void *lib = dlopen(name ? name : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return refuse(std::string("the NCCL library cannot be loaded: ") +
                  dlerror());
  auto getId = reinterpret_cast<NcclGetUniqueId>(dlsym(lib, "ncclGetUniqueId"));
  auto init =
      reinterpret_cast<NcclCommInitRank>(dlsym(lib, "ncclCommInitRank"));
  nccl.allReduce = reinterpret_cast<NcclAllReduce>(dlsym(lib, "ncclAllReduce"));
  nccl.errorString =
      reinterpret_cast<NcclGetErrorString>(dlsym(lib, "ncclGetErrorString"));
  if (!getId || !init || !nccl.allReduce || !nccl.errorString)
    return refuse("the NCCL library lacks ncclGetUniqueId, ncclCommInitRank, "
                  "ncclAllReduce or ncclGetErrorString");
  // From here on, every rank has decided alike (same node layout and
  // environment), so that the broadcast and the communicator's creation,
  // which wait for all ranks, are reached by all.
  NcclUniqueId id{};
  if (ga_world_rank() == 0) {
    if (int rc = getId(&id)) {
      recordError(s, std::string("ncclGetUniqueId failed: ") +
                         nccl.errorString(rc));
      return false;
    }
  }
  if (ga_broadcast_bytes(&id, sizeof(id))) {
    recordError(s, "the broadcast of NCCL's communicator id failed");
    return false;
  }
  if (int rc = init(&nccl.comm, ranks, id, ga_world_rank())) {
    nccl.comm = nullptr;
    recordError(s, std::string("ncclCommInitRank failed: ") +
                       nccl.errorString(rc));
    return false;
  }
  nccl.path = "NCCL";
  return true;
}

template <typename T> int ncclType();
template <> int ncclType<float>() { return 7; }   // ncclFloat32
template <> int ncclType<double>() { return 8; }  // ncclFloat64
template <> int ncclType<int32_t>() { return 2; } // ncclInt32
template <> int ncclType<int64_t>() { return 4; } // ncclInt64

/// train.all_reduce of a device buffer (a ranked memref descriptor of rank
/// `rank`, on the host). A sum runs on NCCL, in place on the step's stream,
/// where ensureNccl allows; otherwise it is staged through host memory for
/// the CPU runtime's MPI all-reduce (Debian's Open MPI is not CUDA-aware).
template <typename T>
void deviceAllReduce(int64_t rank, void *descriptor, int32_t kind,
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
    if (int rc = s.nccl.allReduce(data, data, static_cast<size_t>(count),
                                  ncclType<T>(), /*ncclSum*/ 0, s.nccl.comm,
                                  s.stream))
      recordError(s, "ncclAllReduce of " + std::to_string(count) +
                         " elements failed: " + s.nccl.errorString(rc));
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
} // namespace

extern "C" {

// The CPU runtime's collectives (lib/Runtime/Collectives.cpp).
void ga_all_reduce_f32(int64_t rank, void *descriptor, int32_t kind);
void ga_all_reduce_f64(int64_t rank, void *descriptor, int32_t kind);
void ga_all_reduce_i32(int64_t rank, void *descriptor, int32_t kind);
void ga_all_reduce_i64(int64_t rank, void *descriptor, int32_t kind);

/// The first CUDA failure not yet reported by a step's exit (the call and
/// its message), or NULL.
const char *ga_cuda_last_error(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.error.empty() ? nullptr : s.error.c_str();
}

/// How the sums of a data-parallel step travel between ranks: "NCCL" or
/// "MPI through host memory"; NULL before the first all-reduce.
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

//===----------------------------------------------------------------------===//
// The mgpu* functions of MLIR's gpu-to-llvm lowering (LLVM 22).
//===----------------------------------------------------------------------===//

void *mgpuModuleLoad(void *data, size_t /*size*/) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!ensureInitialized(s))
    return nullptr;
  CUmodule module = nullptr;
  if (!check(s, s.cu.cuModuleLoadData(&module, data), "cuModuleLoadData"))
    return nullptr;
  int index = static_cast<int>(s.moduleIndex.size());
  s.moduleIndex[module] = index;
  return module;
}

void *mgpuModuleLoadJIT(void *data, int /*optLevel*/) {
  return mgpuModuleLoad(data, 0);
}

void mgpuModuleUnload(void *module) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (module && s.usable)
    s.cu.cuModuleUnload(module);
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!module || !s.usable)
    return nullptr;
  CUfunction function = nullptr;
  check(s, s.cu.cuModuleGetFunction(&function, module, name),
        (std::string("cuModuleGetFunction(") + name + ")").c_str());
  if (s.profile && function)
    s.functionLabel[function] =
        std::string(name) + " (module #" +
        std::to_string(s.moduleIndex.count(module) ? s.moduleIndex[module]
                                                   : -1) +
        ")";
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!function) {
    recordError(s, s.usable ? "a kernel of the step was not loaded"
                            : "no CUDA device");
    return;
  }
  if (!s.error.empty())
    return; // The step has failed already; its results are not used.
  long timed = -1;
  if (s.profile)
    timed = profileBegin(
        s, s.functionLabel[function] + " grid " + std::to_string(gridX) + "x" +
               std::to_string(gridY) + "x" + std::to_string(gridZ) + " block " +
               std::to_string(blockX) + "x" + std::to_string(blockY) + "x" +
               std::to_string(blockZ));
  check(s,
        s.cu.cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY,
                            blockZ, smem, stream ? stream : s.stream, params,
                            extra),
        "cuLaunchKernel");
  profileEnd(s, timed);
  if (s.syncEveryLaunch)
    synchronize(s);
}

void *mgpuStreamCreate() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ensureInitialized(s);
  return s.stream;
}

void mgpuStreamDestroy(void * /*stream*/) {}

void mgpuStreamSynchronize(void * /*stream*/) {
  // Every operation of a step is on the one stream, in order; the host
  // waits where it reads device memory.
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.usable)
    check(s, s.cu.cuStreamWaitEvent(stream ? stream : s.stream, event, 0),
          "cuStreamWaitEvent");
}

void *mgpuEventCreate() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  CUevent event = nullptr;
  if (ensureInitialized(s))
    check(s, s.cu.cuEventCreate(&event, /*CU_EVENT_DISABLE_TIMING=*/2),
          "cuEventCreate");
  return event;
}

void mgpuEventDestroy(void *event) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (event && s.usable)
    s.cu.cuEventDestroy_v2(event);
}

void mgpuEventSynchronize(void *event) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (event && s.usable) {
    hostWaits(s, "the step waits for an event within itself");
    check(s, s.cu.cuEventSynchronize(event), "cuEventSynchronize");
  }
}

void mgpuEventRecord(void *event, void *stream) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (event && s.usable)
    check(s, s.cu.cuEventRecord(event, stream ? stream : s.stream),
          "cuEventRecord");
}

void *mgpuMemAlloc(uint64_t bytes, void * /*stream*/, bool /*hostShared*/) {
  return ga_cuda_alloc(bytes);
}

void mgpuMemFree(void *pointer, void * /*stream*/) { ga_cuda_free(pointer); }

void mgpuMemcpy(void *dst, void *src, size_t bytes, void * /*stream*/) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.usable)
    copy(s, dst, src, bytes);
}

void mgpuMemset32(void *dst, unsigned int value, size_t count,
                  void * /*stream*/) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.usable)
    check(s,
          s.cu.cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                count, s.stream),
          "cuMemsetD32Async");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  void * /*stream*/) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.usable)
    check(s,
          s.cu.cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                count, s.stream),
          "cuMemsetD16Async");
}

void mgpuSetDefaultDevice(int32_t device) {
  static char text[16];
  std::snprintf(text, sizeof(text), "%d", device);
  setenv("GA_CUDA_DEVICE", text, 1);
}

//===----------------------------------------------------------------------===//
// The entry and exit of a CUDA step library (ga-export-step runtime=cuda).
//===----------------------------------------------------------------------===//

int32_t ga_cuda_step_enter(const char *signature, const void *const *inputs,
                           void *const *outputs, ga_status *status,
                           void **deviceInputs) {
  // The checks of the CPU runtime: signature, world size, null pointers.
  int32_t rc = ga_step_enter(signature, inputs, outputs, status);
  if (rc != GA_OK)
    return rc;
  std::string error;
  const ga::StepSignature *sig = signatureOf(signature, error);
  if (!sig)
    return ga::setStatus(status, GA_ERROR_SIGNATURE, error);
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
  for (size_t i = 0; i < sig->inputs.size(); ++i) {
    int64_t bytes = bytesOf(sig->inputs[i]);
    CUdeviceptr device = allocate(s, bytes, /*counted=*/false);
    deviceInputs[i] = reinterpret_cast<void *>(device);
    if (!device || !copy(s, deviceInputs[i], inputs[i], bytes)) {
      for (size_t j = 0; j <= i; ++j)
        if (deviceInputs[j])
          release(s, reinterpret_cast<CUdeviceptr>(deviceInputs[j]));
      std::string message = s.error;
      s.error.clear();
      return ga::setStatus(status, GA_ERROR_DEVICE,
                           "@" + sig->entry + ": input #" + std::to_string(i) +
                               " cannot be copied to the device: " + message);
    }
  }
  // From the second step on, the step's work goes into a graph.
  Graph &g = s.graph;
  g.inStep = true;
  bool later = g.steps++ > 0;
  if (g.requested && g.off.empty() && later &&
      check(s, s.cu.cuStreamBeginCapture_v2(s.stream, /*relaxed*/ 2),
            "cuStreamBeginCapture"))
    g.capturing = true;
  else if (g.requested && !s.error.empty() && g.off.empty())
    g.off = "the capture cannot begin: " + s.error;
  return GA_OK;
}

/// GA_CUDA_GRAPH=1: how the steps ran, for the tools to print; NULL
/// without it.
const char *ga_cuda_graph_status(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Graph &g = s.graph;
  if (!g.requested)
    return nullptr;
  g.status = std::to_string(g.launches) + " of " + std::to_string(g.steps) +
             " step(s) launched as one CUDA graph (" +
             std::to_string(g.instantiations) + " instantiated, " +
             std::to_string(g.updates) + " updated in place)";
  if (!g.off.empty())
    g.status += "; off: " + g.off;
  return g.status.c_str();
}

int32_t ga_cuda_step_leave(const char *signature, const int64_t *results,
                           void *const *deviceInputs, void *const *outputs,
                           ga_status *status) {
  if (status)
    *status = ga_status{};
  std::string error;
  const ga::StepSignature *sig = signatureOf(signature, error);
  if (!sig)
    return ga::setStatus(status, GA_ERROR_SIGNATURE, error);
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  endCapture(s, nullptr);
  s.graph.inStep = false;
  // Copy every result before freeing any: results can share a buffer.
  std::vector<CUdeviceptr> allocated;
  size_t offset = 0;
  std::vector<char> staging;
  for (size_t i = 0; i < sig->results.size() && s.error.empty(); ++i) {
    const ga::TensorSpec &spec = sig->results[i];
    int64_t rank = spec.shape.size();
    const int64_t *fields = results + offset;
    offset += 3 + 2 * rank;
    size_t elem = ga::npyDTypeSize(spec.dtype);
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
      copy(s, outputs[i], aligned + fields[2] * elem, expected * elem);
    } else {
      // Through a host copy of the span the strides cover.
      staging.resize(span * elem);
      if (copy(s, staging.data(), aligned + fields[2] * elem, span * elem) &&
          synchronize(s)) {
        std::vector<int64_t> dense(rank);
        for (int64_t d = rank - 1, st = 1; d >= 0; --d) {
          dense[d] = st;
          st *= sizes[d];
        }
        ga::copyStrided(static_cast<char *>(outputs[i]), 0, dense.data(),
                        staging.data(), 0, strides, sizes, rank, elem);
      }
    }
    allocated.push_back(static_cast<CUdeviceptr>(fields[0]));
  }
  synchronize(s);
  profileCollect(s);
  // Free what the step allocated (not the inputs, not constants, once).
  for (CUdeviceptr pointer : allocated) {
    bool skip = !pointer || pointer == 0xdeadbeef || !s.live.count(pointer);
    for (size_t j = 0; j < sig->inputs.size(); ++j)
      skip |= reinterpret_cast<CUdeviceptr>(deviceInputs[j]) == pointer;
    if (!skip)
      release(s, pointer);
  }
  for (size_t j = 0; j < sig->inputs.size(); ++j)
    if (deviceInputs[j])
      release(s, reinterpret_cast<CUdeviceptr>(deviceInputs[j]));
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
