//===- Runtime.h - The state of the CUDA runtime, shared by its parts -----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// libga_cuda_runtime is what a step compiled for CUDA calls. Its parts,
// one file each:
//
//   Driver.cpp      the driver loaded, the device of this rank, errors
//   Allocator.cpp   the step's device allocator and reads of one element
//   Offload.cpp     host-offload: buffers to pinned host memory and back
//   Graph.cpp       GA_CUDA_GRAPH=1: the step captured as one CUDA graph
//   Profile.cpp     GA_CUDA_PROFILE=1: kernels and GEMMs timed
//   Blas.cpp        GEMMs on cuBLAS (float32, TF32, bf16)
//   BlasLt.cpp      GEMMs with a bias epilogue on cuBLASLt
//   Attention.cpp   the fused attention, on a backend loaded with dlopen
//                   (AttentionBackend.h; cuDNN's SDPA: Cudnn.cpp, its own
//                   library, libga_cudnn_attention.so)
//   Nccl.cpp        train.all_reduce: NCCL, or MPI through host memory
//   Mgpu.cpp        the mgpu* functions of MLIR's gpu-to-llvm lowering
//   StepEntry.cpp   the entry and exit of a CUDA step library
//
// The C functions they export are declared in ga/Runtime/ga_cuda.h. One
// process-wide State holds everything; every exported function takes its
// mutex, and the functions declared here expect it taken.
//
// The driver is loaded with dlopen, so that the library builds and links
// without the CUDA toolkit and loads on machines without a driver: there
// the first use records "no CUDA device" and the step returns
// GA_ERROR_DEVICE. The first failure is recorded (State::error) and stops
// the step's later work; the step's exit reports it. One stream per process
// runs every kernel, copy and allocation in order: the host waits only
// where it reads device memory.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_RUNTIME_CUDA_RUNTIME_H
#define GA_LIB_RUNTIME_CUDA_RUNTIME_H

#include "Libraries.h"

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

// Internal to libga_cuda_runtime: not exported.
#pragma GCC visibility push(hidden)
namespace ga::cuda {

/// GA_CUDA_GRAPH=1: the state of the step's capture (Graph.cpp).
struct GraphCapture {
  bool requested = false;
  GraphFunctions fn;
  /// Why the mode is off (empty while it may capture).
  std::string off;
  bool inStep = false, capturing = false;
  long steps = 0, launches = 0, instantiations = 0, updates = 0;
  CUgraphExec exec = nullptr;
  std::string status;
};

/// cuBLAS, loaded on the first GEMM (Blas.cpp).
struct Blas {
  bool tried = false;
  CublasFunctions fn;
  void *handle = nullptr;
  int mathMode = 0;
  /// The library loaded (cuBLASLt's functions are looked up there first).
  void *library = nullptr;
  /// The fixed workspace, shared with cuBLASLt.
  CUdeviceptr workspace = 0;
  size_t workspaceBytes = 0;
  /// The runtime's kernels, loaded on first use: those that round
  /// gpu-bf16's operands (a span as it lies, a batch of matrices into a
  /// compact block) and pointerKernel (below).
  CUmodule runtimeModule = nullptr;
  CUfunction roundToBf16 = nullptr;
  CUfunction roundMatrices = nullptr;
  /// The kernel that writes the arrays of pointers of two-level batches
  /// (ga_cuda_gemm_batched2), the last GA_CUDA_BLAS_POINTER_BYTES of the
  /// workspace block that holds them (a ring), and its next free byte.
  CUfunction pointerKernel = nullptr;
  CUdeviceptr pointerArea = 0;
  size_t pointerNext = 0;
};

/// The descriptors and algorithm of one shape of bias GEMM (BlasLt.cpp).
struct BlasLtPlan {
  void *desc = nullptr, *layoutA = nullptr, *layoutB = nullptr,
       *layoutD = nullptr;
  CublasLtHeuristic found{};
};

/// cuBLASLt, loaded on the first GEMM with a bias epilogue.
struct BlasLt {
  bool tried = false;
  CublasLtFunctions fn;
  void *handle = nullptr;
  /// By precision, transA, transB, m, n, k, lda, ldb, ldd.
  std::map<std::array<int64_t, 11>, BlasLtPlan> plans;
};

/// NCCL, loaded on the first all-reduce of a sum (Nccl.cpp).
struct Nccl {
  bool tried = false;
  NcclFunctions fn;
  /// The path the step's sums take: "NCCL" or "MPI through host memory".
  const char *path = nullptr;
  NcclComm comm = nullptr;
  /// The stream every NCCL operation runs on (Nccl.cpp); prefetched
  /// all-gathers (ga_cuda_all_gather_start_<type>): the event each one's
  /// reader waits for by handle; events free to reuse.
  /// GA_CUDA_GATHER_UNORDERED=1 leaves the reader's wait out, so that the
  /// driver stand-in's check of the order can be seen to fail.
  CUstream stream = nullptr;
  std::map<int64_t, CUevent> gathering;
  int64_t nextGather = 0;
  std::vector<CUevent> events;
  bool unordered = false;
};

/// GA_CUDA_PROFILE=1 (Profile.cpp): a launch or GEMM being timed, and the
/// table of what was timed.
struct Timed {
  std::string label;
  CUevent start, end;
};
struct ProfileRow {
  double ms = 0;
  long calls = 0;
};
struct Profile {
  bool enabled = false;
  /// GA_CUDA_PROFILE=all: every row at exit, not the 25 dearest.
  bool allRows = false;
  std::map<CUmodule, int> moduleIndex;
  std::map<CUfunction, std::string> functionLabel;
  std::vector<Timed> pending;
  std::map<std::string, ProfileRow> rows;
  long steps = 0;
  bool warmedUp = false;
};

/// The arithmetic of a GEMM: float32 (the default), TF32 tensor cores
/// (gpu-tf32), or bfloat16 inputs with float32 products and sums
/// (CUDA_R_16BF operands, CUBLAS_COMPUTE_32F), from float32 operands the
/// runtime rounds (gpu-bf16) or from operands stored as bfloat16
/// (precision=bf16-mixed).
enum class GemmPrecision { F32, TF32, BF16, BF16Inputs };

/// Whether cuBLAS reads the operands of a GEMM of `precision` as bfloat16.
inline bool readsBf16(GemmPrecision precision) {
  return precision == GemmPrecision::BF16 ||
         precision == GemmPrecision::BF16Inputs;
}

/// One buffer copied to pinned host memory (Offload.cpp): its host block,
/// and the event of the copy back once it is enqueued.
struct HostCopy {
  void *host = nullptr;
  size_t bytes = 0;
  CUevent back = nullptr; // the copy back has been enqueued
};

/// host-offload (Offload.cpp): the copy stream, the host copies by handle,
/// and the device blocks a copy still reads (reused only after it).
struct Offload {
  CUstream stream = nullptr;
  std::vector<HostCopy> copies;
  std::vector<int64_t> freeHandles;
  std::multimap<size_t, void *> pinned; // free pinned blocks by size
  std::unordered_map<CUdeviceptr, CUevent> reading;
  std::vector<CUevent> events; // recorded and waited for, free to reuse
  /// GA_CUDA_OFFLOAD_UNORDERED=1: the reload's wait left out, so that the
  /// driver stand-in's check of the order can be seen to fail.
  bool unordered = false;
};

struct State {
  std::mutex mutex;
  bool initialized = false;
  bool usable = false;
  DriverFunctions cu;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  /// The devices the driver reports, and the one this process uses.
  int deviceCount = 0, ordinal = 0;
  std::string deviceName;
  /// The first failure since the last step began (empty: none).
  std::string error;
  /// GA_CUDA_SYNC=1: the host waits after every launch.
  bool syncEveryLaunch = false;
  // The allocator: live blocks and their sizes, free blocks by size.
  std::unordered_map<CUdeviceptr, size_t> live;
  std::multimap<size_t, CUdeviceptr> cached;
  int64_t currentBytes = 0, peakBytes = 0, allocations = 0;
  int64_t cachedBytes = 0;
  /// Everything the runtime holds from the driver (cuMemAlloc'd, not yet
  /// freed: the step's blocks, the inputs' copies, cuBLAS's workspace and
  /// the cached free blocks), and its high-water mark: what a device
  /// memory budget bounds (ga_cuda_device_memory_stats).
  int64_t deviceBytes = 0, devicePeakBytes = 0, deviceAllocations = 0;
  Offload offload;
  Blas blas;
  BlasLt blasLt;
  Nccl nccl;
  GraphCapture graph;
  Profile profile;
};

/// The process's one State; lives until exit (modules unload late).
State &state();

// Driver.cpp.
/// Records the first failure (the CUDA call and its message).
void recordError(State &s, const std::string &message);
/// Whether `rc` is success; else records `call`'s failure.
bool check(State &s, CUresult rc, const char *call);
/// Loads the driver and makes the primary context of this rank's device
/// current, once. Returns whether CUDA is usable; when not, the reason is
/// recorded.
bool ensureInitialized(State &s);
/// This process's rank among the ranks of its node and their number, from
/// the launcher's environment: 0 outside one; -1 for a number the launcher
/// does not give.
std::pair<int, int> localRanks();
/// Copies `bytes` between any two pointers (device or host: the driver's
/// unified addressing tells them apart) on the step's stream.
bool copy(State &s, void *dst, const void *src, size_t bytes);
/// Waits for the step's stream.
bool synchronize(State &s);
/// An event from `pool` (events recorded and waited for, free to reuse),
/// else a new one without timing; null on failure, recorded.
CUevent takeEvent(State &s, std::vector<CUevent> &pool);
/// `waiter` waits for what `stream` has enqueued so far (through an event
/// of `pool`, which goes back to it once the wait is enqueued).
bool follow(State &s, CUstream waiter, CUstream stream,
            std::vector<CUevent> &pool);
/// Waits after a launch or GEMM under GA_CUDA_SYNC=1.
void afterLaunch(State &s);

// Allocator.cpp.
/// A device block of at least `bytes`, from the cache of freed blocks or
/// the driver; `counted` blocks make the step's peak (not its inputs'
/// staging or cuBLAS's workspace). 0 on failure, recorded.
CUdeviceptr allocate(State &s, size_t bytes, bool counted);
/// Returns a block of `allocate` to the cache.
void release(State &s, CUdeviceptr pointer);

// Offload.cpp.
/// Before a cached block is reused: the step's stream waits for a copy to
/// host memory that still reads it.
void waitForHostCopy(State &s, CUdeviceptr pointer);
/// With the stream done (emptying the cache): the copies' pinned blocks
/// back to the driver, their events dropped.
void releaseHostCopies(State &s);

// Graph.cpp.
/// Loads the graph functions when GA_CUDA_GRAPH=1 (from the driver `lib`).
void configureGraphs(State &s, void *lib);
/// At a step's entry: from the second step on, its work goes into a graph.
void beginCapture(State &s);
/// Ends the capture of the step's graph, if one runs, and launches what
/// was captured. With `reason`, the mode turns off for good.
void endCapture(State &s, const char *reason);
/// Where the host is about to wait for the device inside a step.
void hostWaits(State &s, const char *reason);

// Blas.cpp.
/// Loads cuBLAS once and makes its handle on the step's stream, with the
/// fixed workspace that cuBLASLt shares.
bool ensureBlas(State &s);
/// "MxNxK", and " xCOUNT" for several products: a GEMM in messages.
std::string gemmShape(int64_t m, int64_t n, int64_t k, int64_t count = 1);
/// A GEMM's label in the profile: the call, its shape, its transpositions.
std::string gemmLabel(const std::string &call, int64_t m, int64_t n, int64_t k,
                      int64_t count, bool transA, bool transB);
/// After a GEMM: its timing ended, and `failure` recorded (empty: none; the
/// host then waits under GA_CUDA_SYNC=1).
void endGemm(State &s, long timed, const std::string &failure);
/// gpu-bf16's operands of one product, row-major as the GEMM entry points
/// take them (A is m x k, or k x m when transA; B is k x n, or n x k when
/// transB; `count` copies of each, `stride` elements apart), rounded to the
/// nearest bfloat16 (ties to even, as the CPU emulation of gpu-bf16 rounds)
/// into blocks of the allocator, in their layout, on the step's stream:
/// cuBLAS then multiplies exactly these values (its FAST_16BF compute types
/// round otherwise). The blocks go back to the allocator's cache when this
/// goes out of scope, after the product is enqueued (the stream orders
/// their reuse after it).
class RoundedOperands {
public:
  RoundedOperands(State &s, int32_t transA, int32_t transB, int64_t m,
                  int64_t n, int64_t k, int64_t count, const float *a,
                  int64_t lda, int64_t strideA, const float *b, int64_t ldb,
                  int64_t strideB);
  ~RoundedOperands();
  RoundedOperands(const RoundedOperands &) = delete;
  RoundedOperands &operator=(const RoundedOperands &) = delete;
  /// Whether both are rounded (else the failure is recorded in the state).
  explicit operator bool() const { return a && b; }
  const void *roundedA() const { return reinterpret_cast<const void *>(a); }
  const void *roundedB() const { return reinterpret_cast<const void *>(b); }
  /// The rounded operands' leading dimensions and strides: the given ones
  /// for a single product (its span rounded as it lies), else those of the
  /// compact block when the batch's matrices lie apart (each call of a
  /// batch over sequences, say, would otherwise round every head of the
  /// [B S, 3 D] projection for one head's products).
  int64_t lda() const { return ldA; }
  int64_t strideA() const { return stA; }
  int64_t ldb() const { return ldB; }
  int64_t strideB() const { return stB; }

private:
  State &s;
  CUdeviceptr a = 0, b = 0;
  int64_t ldA = 0, stA = 0, ldB = 0, stB = 0;
};

// Profile.cpp.
/// Starts timing `label` on the stream (GA_CUDA_PROFILE); returns the index
/// of its record, or -1.
long profileBegin(State &s, const std::string &label);
void profileEnd(State &s, long index);
/// After the stream has finished a step: its timings into the table.
void profileCollect(State &s);

} // namespace ga::cuda
#pragma GCC visibility pop

#endif // GA_LIB_RUNTIME_CUDA_RUNTIME_H
