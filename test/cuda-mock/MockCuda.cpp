//===- MockCuda.cpp - A logging stand-in for the CUDA driver --------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Built as libcuda.so.1 in the test tree, loaded by libga_cuda_runtime in
// place of the real driver (LD_LIBRARY_PATH) on machines without a GPU. It
// runs no kernel; it checks and counts what the host code of a CUDA step
// asks for:
//
// - device memory is mapped PROT_NONE, so any access by host code to a
//   device buffer kills the process (the check that no host code touches
//   step memory); copies open it for the copy only;
// - every launch names a function of a loaded module, with a grid and a
//   block within CUDA's limits; a function is looked up by a name its
//   module's image defines (`.entry NAME` in PTX, the name in a cubin's
//   string table), or the lookup fails as CUDA's does;
// - module images must be cubins (ELF) or PTX text.
//
// It also stands in for cuBLAS (GA_CUBLAS_LIBRARY naming this library):
// a GEMM is counted, and checked to read and write device memory only,
// within the allocations its leading dimensions imply.
//
// It stands in for NCCL too (GA_NCCL_LIBRARY naming this library): the
// communicator's id must be the same on every rank and its rank and size
// the MPI run's; an all-reduce must be a sum, in place, on one device
// allocation; it sums through the CPU runtime's MPI all-reduce, so that the
// values can be checked. GA_MOCK_CUDA_DEVICES sets the number of devices
// (1 by default).
//
// It checks the order of work on several streams (host-offload's copy
// stream): each stream keeps a vector clock, events carry one, waits and
// host synchronizations merge them; every kernel, GEMM, memset and copy
// accesses the device allocations its pointers fall in (a kernel's: its
// 8-byte parameters, their sizes read from the PTX `.entry` or the cubin's
// `.nv.info` section; a kernel whose sizes are not found is counted as an
// unchecked launch), and an access on one
// stream not ordered after the last access of the same allocation (or
// pinned host block) on another stream is a race (counted, the first one
// named in the log).
//
// At exit, the counts go to the file named by GA_MOCK_CUDA_LOG (with
// .<rank> appended under mpirun).
//
//===----------------------------------------------------------------------===//

#include "AttentionBackend.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

struct Counts {
  std::mutex mutex;
  long modules = 0, cubins = 0, launches = 0, badLaunches = 0;
  long missingFunctions = 0;
  long allocations = 0, frees = 0, copiesToDevice = 0, copiesToHost = 0;
  long copiesOnDevice = 0, memsets = 0, synchronizations = 0;
  long gemms = 0, badGemms = 0, batchedGemms = 0, scaledGemms = 0;
  long bf16Gemms = 0, biasGemms = 0, gemmsFromZero = 0, ltHeuristics = 0;
  long pointerArrayGemms = 0, bf16OutputGemms = 0;
  // The fused attention's backend (GA_CUDA_ATTENTION_LIBRARY pointing
  // here): calls, those with a tensor outside the device allocations, and
  // the workspace blocks taken from and given back to the runtime.
  long attentionForward = 0, attentionBackward = 0, badAttention = 0;
  long attentionWorkspaces = 0;
  // Stream capture (GA_CUDA_GRAPH=1): the work captured counts as run, as
  // the runtime launches every graph it captures once.
  bool capturing = false;
  long captured = 0, captures = 0, graphLaunches = 0, instantiations = 0;
  long updates = 0, badCaptures = 0;
  long liveBytes = 0, peakBytes = 0;
  long ncclComms = 0, ncclAllReduces = 0, badNccl = 0;
  long ncclReduceScatters = 0, ncclAllGathers = 0;
  // The collectives enqueued on the first stream created (the step's: the
  // runtime runs them on a collective stream of their own); that stream.
  long ncclOnStepStream = 0;
  void *firstStream = nullptr;
  int ordinal = -1;
  std::map<uintptr_t, size_t> device; // base -> mapped size
  // base -> the bytes cuMemAlloc was asked for (a GEMM's bounds).
  std::map<uintptr_t, size_t> requested;
  std::set<std::string> functions;
  std::set<void *> handles;
  // Kernel parameter sizes by function handle (from PTX or a cubin).
  std::map<void *, std::vector<size_t>> parameters;
  // Pinned host memory: base -> size.
  std::map<uintptr_t, size_t> pinned;
  long hostAllocations = 0, streams = 0, accessesChecked = 0, races = 0;
  long uncheckedLaunches = 0;
  std::string firstRace;
  // The order of streams: a vector clock per stream (index 0: the legacy
  // stream, a barrier), per event, and the host's.
  std::map<void *, size_t> streamIndex;
  std::vector<std::vector<unsigned long>> clocks;
  std::map<void *, std::vector<unsigned long>> eventClocks;
  std::vector<unsigned long> host;
  // Per allocation base: the stream and clock of its last access there.
  std::map<uintptr_t, std::map<size_t, unsigned long>> lastAccess;
  void write() {
    const char *path = std::getenv("GA_MOCK_CUDA_LOG");
    if (!path)
      return;
    // Under mpirun, one log per rank: PATH.<rank>.
    std::string file = path;
    if (const char *rank = std::getenv("OMPI_COMM_WORLD_RANK"))
      file += std::string(".") + rank;
    FILE *f = std::fopen(file.c_str(), "w");
    if (!f)
      return;
    std::fprintf(f,
                 "modules: %ld (cubins %ld)\nfunctions: %zu\n"
                 "launches: %ld\nbad launches: %ld\nallocations: %ld\n"
                 "frees: %ld\ncopies to device: %ld\ncopies to host: %ld\n"
                 "copies on device: %ld\nmemsets: %ld\n"
                 "synchronizations: %ld\ngemms: %ld\nbad gemms: %ld\n"
                 "batched gemm calls: %ld\nscaled gemm calls: %ld\n"
                 "peak device bytes: %ld\ndevice: %d\nnccl comms: %ld\n"
                 "nccl all-reduces: %ld\nbad nccl calls: %ld\nbf16 gemms: %ld\n"
                 "captures: %ld\ngraph launches: %ld\n"
                 "graph instantiations: %ld\ngraph updates: %ld\n"
                 "bad captures: %ld\nbias gemms: %ld\n"
                 "gemms from zero: %ld\ncublasLt heuristics: %ld\n"
                 "missing functions: %ld\n"
                 "host allocations: %ld\nstreams: %ld\n"
                 "accesses checked: %ld\nraces: %ld\n"
                 "unchecked launches: %ld\n"
                 "nccl reduce-scatters: %ld\nnccl all-gathers: %ld\n"
                 "nccl on the step's stream: %ld\n"
                 "pointer-array gemm calls: %ld\n",
                 modules, cubins, functions.size(), launches, badLaunches,
                 allocations, frees, copiesToDevice, copiesToHost,
                 copiesOnDevice, memsets, synchronizations, gemms, badGemms,
                 batchedGemms, scaledGemms, peakBytes, ordinal, ncclComms,
                 ncclAllReduces, badNccl, bf16Gemms, captures, graphLaunches,
                 instantiations, updates, badCaptures, biasGemms, gemmsFromZero,
                 ltHeuristics, missingFunctions, hostAllocations, streams,
                 accessesChecked, races, uncheckedLaunches, ncclReduceScatters,
                 ncclAllGathers, ncclOnStepStream, pointerArrayGemms);
    std::fprintf(f,
                 "fused attention forward calls: %ld\n"
                 "fused attention backward calls: %ld\n"
                 "bad fused attention calls: %ld\n"
                 "fused attention workspaces: %ld\n",
                 attentionForward, attentionBackward, badAttention,
                 attentionWorkspaces);
    std::fprintf(f, "gemms writing bf16: %ld\n", bf16OutputGemms);
    if (!firstRace.empty())
      std::fprintf(f, "first race: %s\n", firstRace.c_str());
    std::fclose(f);
  }
};

// The counts outlive every static destructor: the step library unloads its
// modules from its own finalizer, which may run after this library's static
// objects are gone. The log is written when the first static object
// registered after the counts dies.
Counts &counts() {
  static Counts *c = new Counts;
  static struct LogAtExit {
    ~LogAtExit() { c->write(); }
  } log;
  return *c;
}

/// The device allocation holding `p`, if any: {base, size}.
std::pair<uintptr_t, size_t> deviceBlock(uintptr_t p) {
  auto &d = counts().device;
  auto it = d.upper_bound(p);
  if (it == d.begin())
    return {0, 0};
  --it;
  if (p >= it->first && p < it->first + it->second)
    return *it;
  return {0, 0};
}

void setAccess(uintptr_t base, size_t size, int prot) {
  mprotect(reinterpret_cast<void *>(base), size, prot);
}

/// The base of the device allocation or pinned host block holding `p`, or
/// 0.
uintptr_t blockBase(uintptr_t p) {
  if (uintptr_t base = deviceBlock(p).first)
    return base;
  auto &h = counts().pinned;
  auto it = h.upper_bound(p);
  if (it == h.begin())
    return 0;
  --it;
  return p >= it->first && p < it->first + it->second ? it->first : 0;
}

void merge(std::vector<unsigned long> &into,
           const std::vector<unsigned long> &from) {
  if (into.size() < from.size())
    into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i)
    into[i] = std::max(into[i], from[i]);
}

/// The index of `stream` (0: the legacy stream).
size_t streamOf(void *stream) {
  Counts &c = counts();
  if (c.clocks.empty())
    c.clocks.emplace_back(); // the legacy stream
  if (!stream)
    return 0;
  auto [it, inserted] = c.streamIndex.emplace(stream, c.clocks.size());
  if (inserted)
    c.clocks.emplace_back();
  return it->second;
}

/// An operation enqueued on `stream` (after what the host has waited for);
/// returns its stream's index. The legacy stream waits for every stream.
size_t enqueue(void *stream) {
  Counts &c = counts();
  size_t index = streamOf(stream);
  std::vector<unsigned long> &clock = c.clocks[index];
  merge(clock, c.host);
  if (index == 0)
    for (const auto &other : c.clocks)
      merge(clock, std::vector<unsigned long>(other));
  if (clock.size() <= index)
    clock.resize(index + 1, 0);
  ++clock[index];
  return index;
}

/// The operation just enqueued on stream `index` accesses the block
/// holding `p` (nothing when `p` is in no block).
void access(size_t index, uintptr_t p, const char *what) {
  Counts &c = counts();
  uintptr_t base = blockBase(p);
  if (!base)
    return;
  const std::vector<unsigned long> &clock = c.clocks[index];
  auto &last = c.lastAccess[base];
  for (auto [other, time] : last) {
    if (other == index)
      continue;
    bool ordered = other < clock.size() && clock[other] >= time;
    if (!ordered) {
      ++c.races;
      if (c.firstRace.empty())
        c.firstRace = std::string(what) + " on stream " +
                      std::to_string(index) + " is not ordered after an " +
                      "access of the same block on stream " +
                      std::to_string(other);
    }
  }
  ++c.accessesChecked;
  last[index] = clock[index];
}

} // namespace

extern "C" {

int cuInit(unsigned) { return 0; }
int cuDeviceGetCount(int *n) {
  const char *env = std::getenv("GA_MOCK_CUDA_DEVICES");
  *n = env ? std::atoi(env) : 1;
  return 0;
}
int cuDeviceGet(int *d, int ordinal) {
  std::lock_guard<std::mutex> lock(counts().mutex);
  counts().ordinal = ordinal;
  *d = ordinal;
  return 0;
}
int cuDeviceGetName(char *name, int len, int) {
  std::snprintf(name, len, "ga mock CUDA device");
  return 0;
}
int cuDevicePrimaryCtxRetain(void **ctx, int) {
  static int context;
  *ctx = &context;
  return 0;
}
int cuCtxSetCurrent(void *) { return 0; }
int cuGetErrorString(int, const char **s) {
  *s = "mock error";
  return 0;
}
int cuGetErrorName(int, const char **s) {
  *s = "CUDA_ERROR_MOCK";
  return 0;
}

struct MockModule {
  std::vector<std::unique_ptr<std::string>> functions;
  std::string image; // the module's bytes
};

/// The size of the ELF64 image at `bytes`: its section headers come last.
size_t elfSize(const char *bytes) {
  uint64_t shoff;
  uint16_t shentsize, shnum;
  std::memcpy(&shoff, bytes + 0x28, 8);
  std::memcpy(&shentsize, bytes + 0x3a, 2);
  std::memcpy(&shnum, bytes + 0x3c, 2);
  return shoff + uint64_t(shentsize) * shnum;
}

/// Whether `image` defines a kernel `name`: `.entry name(` in PTX, or
/// `name` as a whole string of a cubin's string table.
bool defines(const std::string &image, const char *name, bool elf) {
  std::string key = elf ? std::string(1, '\0') + name + std::string(1, '\0')
                        : std::string(".entry ") + name + "(";
  return image.find(key) != std::string::npos;
}

/// The sizes of kernel `name`'s parameters, in order: from PTX, its
/// `.entry name(.param .u64 name_param_0, ...)`; from a cubin, the
/// EIATTR_KPARAM_INFO attributes (0x17: ordinal, offset, size in bits
/// 18-31) of its `.nv.info.name` section. False when neither is found.
bool parameterSizes(const std::string &image, const char *name,
                    std::vector<size_t> &sizes) {
  if (image.compare(0, 4,
                    "\x7f"
                    "ELF") != 0) {
    std::string key = std::string(".entry ") + name + "(";
    size_t at = image.find(key);
    if (at == std::string::npos)
      return false;
    size_t end = image.find(')', at);
    std::string list = image.substr(at + key.size(), end - at - key.size());
    size_t p = 0;
    while ((p = list.find(".param", p)) != std::string::npos) {
      size_t comma = list.find(',', p);
      std::string param = list.substr(
          p, comma == std::string::npos ? std::string::npos : comma - p);
      size_t size = 1;
      if (param.find("64 ") != std::string::npos)
        size = 8;
      else if (param.find("32 ") != std::string::npos)
        size = 4;
      else if (param.find("16 ") != std::string::npos)
        size = 2;
      size_t bracket = param.find('[');
      if (bracket != std::string::npos)
        size = std::strtoul(param.c_str() + bracket + 1, nullptr, 10);
      sizes.push_back(size);
      p += 6;
    }
    return true;
  }
  const char *bytes = image.data();
  auto read = [&](size_t at, size_t n) {
    uint64_t v = 0;
    if (at + n <= image.size())
      std::memcpy(&v, bytes + at, n);
    return v;
  };
  uint64_t shoff = read(0x28, 8);
  uint64_t shentsize = read(0x3a, 2), shnum = read(0x3c, 2),
           shstrndx = read(0x3e, 2);
  uint64_t names = read(shoff + shstrndx * shentsize + 0x18, 8);
  std::string wanted = std::string(".nv.info.") + name;
  for (uint64_t i = 0; i < shnum; ++i) {
    uint64_t header = shoff + i * shentsize;
    uint64_t at = names + read(header, 4);
    if (at >= image.size() ||
        image.compare(at, wanted.size() + 1, wanted.c_str(),
                      wanted.size() + 1) != 0)
      continue;
    uint64_t offset = read(header + 0x18, 8), size = read(header + 0x20, 8);
    std::map<uint64_t, size_t> byOrdinal;
    for (uint64_t p = offset; p + 2 <= offset + size;) {
      uint64_t format = read(p, 1), attribute = read(p + 1, 1);
      uint64_t length = format == 4 ? read(p + 2, 2) : 0;
      if (format == 4 && attribute == 0x17 && length >= 12)
        byOrdinal[read(p + 4 + 4, 2)] = (read(p + 4 + 8, 4) >> 18) & 0x3fff;
      p += format == 4 ? 4 + length : format == 3 ? 4 : format == 2 ? 3 : 2;
    }
    for (size_t k = 0; k < byOrdinal.size(); ++k) {
      if (!byOrdinal.count(k))
        return false;
      sizes.push_back(byOrdinal[k]);
    }
    return true;
  }
  return false;
}

int cuModuleLoadData(void **module, const void *image) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  const char *bytes = static_cast<const char *>(image);
  bool elf = std::memcmp(bytes,
                         "\x7f"
                         "ELF",
                         4) == 0;
  bool ptx = std::strstr(bytes, ".target") != nullptr;
  if (!elf && !ptx)
    return 200; // CUDA_ERROR_INVALID_IMAGE
  ++c.modules;
  c.cubins += elf;
  auto *m = new MockModule();
  m->image.assign(bytes, elf ? elfSize(bytes) : std::strlen(bytes));
  *module = m;
  return 0;
}
// A module owns its function handles, as in CUDA: they die with it.
int cuModuleUnload(void *module) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto *m = static_cast<MockModule *>(module);
  for (const std::unique_ptr<std::string> &f : m->functions)
    c.handles.erase(f.get());
  delete m;
  return 0;
}
int cuModuleGetFunction(void **function, void *module, const char *name) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto *m = static_cast<MockModule *>(module);
  if (!defines(m->image, name,
               m->image.compare(0, 4,
                                "\x7f"
                                "ELF") == 0)) {
    ++c.missingFunctions;
    return 500; // CUDA_ERROR_NOT_FOUND
  }
  c.functions.insert(name);
  m->functions.push_back(std::make_unique<std::string>(name));
  c.handles.insert(m->functions.back().get());
  *function = m->functions.back().get();
  std::vector<size_t> sizes;
  if (parameterSizes(m->image, name, sizes))
    c.parameters[*function] = sizes;
  return 0;
}
/// The CUDA runtime's ga_gemm_pointer_arrays (lib/Runtime/CUDA/Blas.cpp),
/// run here, so that the pointer-array GEMMs after it read the arrays it
/// writes: out, a, b, c, count, total, then the outer and inner strides (in
/// bytes) of a, b and c.
static void writePointerArrays(void **params) {
  uint64_t v[12];
  for (int i = 0; i < 12; ++i)
    std::memcpy(&v[i], params[i], 8);
  uint64_t out = v[0], count = v[4], total = v[5];
  auto block = deviceBlock(out);
  if (!block.first || !count ||
      out + 3 * total * 8 > block.first + block.second)
    return; // Left unwritten: the GEMM's check of its arrays fails.
  setAccess(block.first, block.second, PROT_READ | PROT_WRITE);
  auto *p = reinterpret_cast<uint64_t *>(out);
  for (uint64_t t = 0; t < total; ++t) {
    uint64_t o = t / count, i = t % count;
    for (int m = 0; m < 3; ++m)
      p[m * total + t] = v[1 + m] + o * v[6 + 2 * m] + i * v[7 + 2 * m];
  }
  setAccess(block.first, block.second, PROT_NONE);
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned, void *stream,
                   void **params, void **) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  ++c.launches;
  size_t index = enqueue(stream);
  auto sizes = c.parameters.find(f);
  if (sizes == c.parameters.end() || !params) {
    ++c.uncheckedLaunches;
  } else {
    std::set<uintptr_t> blocks;
    for (size_t i = 0; i < sizes->second.size(); ++i)
      if (sizes->second[i] == 8) {
        uint64_t value;
        std::memcpy(&value, params[i], 8);
        if (uintptr_t base = blockBase(value))
          blocks.insert(base);
      }
    for (uintptr_t base : blocks)
      access(index, base, "a kernel");
  }
  if (c.handles.count(f) &&
      *static_cast<std::string *>(f) == "ga_gemm_pointer_arrays" && params)
    writePointerArrays(params);
  c.captured += c.capturing;
  bool ok = c.handles.count(f) && params && gx && gy && gz && bx && by && bz &&
            bx * by * bz <= 1024 && gy <= 65535 && gz <= 65535;
  c.badLaunches += !ok;
  return 0;
}
int cuStreamCreate(void **s, unsigned) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  *s = new int(0);
  ++c.streams;
  if (!c.firstStream)
    c.firstStream = *s;
  streamOf(*s);
  return 0;
}
/// The host waits for the context (what the Python binding does before a
/// step reads device arrays); counted as a synchronization.
int cuCtxSynchronize() {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (const auto &clock : c.clocks)
    merge(c.host, clock);
  ++c.synchronizations;
  c.badCaptures += c.capturing;
  return 0;
}
int cuStreamSynchronize(void *stream) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  merge(c.host, std::vector<unsigned long>(c.clocks[streamOf(stream)]));
  ++c.synchronizations;
  c.badCaptures += c.capturing; // Illegal while capturing.
  return 0;
}
// Stream capture and graphs: a graph is the number of operations captured.
int cuStreamBeginCapture_v2(void *, int mode) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.badCaptures += c.capturing || mode != 2; // relaxed mode expected
  c.capturing = true;
  c.captured = 0;
  ++c.captures;
  return 0;
}
int cuStreamEndCapture(void *, void **graph) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.capturing)
    return 900; // CUDA_ERROR_STREAM_CAPTURE_UNMATCHED
  c.capturing = false;
  *graph = new long(c.captured);
  return 0;
}
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  *exec = new long(*static_cast<long *>(graph));
  ++c.instantiations;
  return 0;
}
int cuGraphExecUpdate_v2(void *exec, void *graph, void *) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (*static_cast<long *>(exec) != *static_cast<long *>(graph))
    return 910; // CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
  ++c.updates;
  return 0;
}
int cuGraphLaunch(void *exec, void *) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.badCaptures += c.capturing || !exec;
  ++c.graphLaunches;
  return 0;
}
int cuGraphDestroy(void *graph) {
  delete static_cast<long *>(graph);
  return 0;
}
int cuGraphExecDestroy(void *exec) {
  delete static_cast<long *>(exec);
  return 0;
}
int cuStreamWaitEvent(void *stream, void *event, unsigned) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  size_t index = streamOf(stream);
  merge(c.clocks[index], c.eventClocks[event]);
  return 0;
}
int cuEventCreate(void **e, unsigned) {
  *e = new int(0);
  return 0;
}
int cuEventRecord(void *event, void *stream) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.eventClocks[event] = c.clocks[streamOf(stream)];
  return 0;
}
int cuEventSynchronize(void *event) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  merge(c.host, c.eventClocks[event]);
  c.badCaptures += c.capturing;
  return 0;
}
/// GA_MOCK_CUDA_EVENT_MS: the time between any two events (default 0), so
/// that what reads GA_CUDA_PROFILE's times can be checked.
int cuEventElapsedTime(float *ms, void *, void *) {
  const char *fixed = std::getenv("GA_MOCK_CUDA_EVENT_MS");
  *ms = fixed ? std::strtof(fixed, nullptr) : 0.0f;
  return 0;
}
int cuEventDestroy_v2(void *e) {
  delete static_cast<int *>(e);
  return 0;
}

int cuMemAlloc_v2(unsigned long long *p, size_t bytes) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  size_t size = (bytes + 4095) / 4096 * 4096;
  void *m = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return 2; // CUDA_ERROR_OUT_OF_MEMORY
  c.device[reinterpret_cast<uintptr_t>(m)] = size;
  c.requested[reinterpret_cast<uintptr_t>(m)] = bytes;
  ++c.allocations;
  c.liveBytes += bytes;
  c.peakBytes = c.liveBytes > c.peakBytes ? c.liveBytes : c.peakBytes;
  *p = reinterpret_cast<uintptr_t>(m);
  return 0;
}
int cuMemFree_v2(unsigned long long p) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.device.find(p);
  if (it == c.device.end())
    return 1;                   // CUDA_ERROR_INVALID_VALUE
  c.badCaptures += c.capturing; // Captured work may still read it.
  munmap(reinterpret_cast<void *>(p), it->second);
  c.lastAccess.erase(p);
  c.device.erase(it);
  c.requested.erase(p);
  ++c.frees;
  return 0;
}
int cuMemAllocHost_v2(void **p, size_t bytes) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  *p = std::malloc(bytes ? bytes : 1);
  c.pinned[reinterpret_cast<uintptr_t>(*p)] = bytes ? bytes : 1;
  ++c.hostAllocations;
  return 0;
}
int cuMemFreeHost(void *p) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.pinned.erase(reinterpret_cast<uintptr_t>(p)))
    return 1;
  c.lastAccess.erase(reinterpret_cast<uintptr_t>(p));
  std::free(p);
  return 0;
}
int cuMemcpyAsync(unsigned long long dst, unsigned long long src, size_t n,
                  void *stream) {
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  size_t index = enqueue(stream);
  access(index, src, "a copy's read");
  access(index, dst, "a copy's write");
  auto d = deviceBlock(dst), s = deviceBlock(src);
  if ((d.first && dst + n > d.first + d.second) ||
      (s.first && src + n > s.first + s.second))
    return 1; // Out of the allocation.
  if (d.first)
    setAccess(d.first, d.second, PROT_READ | PROT_WRITE);
  if (s.first)
    setAccess(s.first, s.second, PROT_READ | PROT_WRITE);
  std::memmove(reinterpret_cast<void *>(dst),
               reinterpret_cast<const void *>(src), n);
  if (d.first)
    setAccess(d.first, d.second, PROT_NONE);
  if (s.first)
    setAccess(s.first, s.second, PROT_NONE);
  // Only copies between device blocks, or from pinned host memory (which
  // a graph's copy reads at every launch), may be captured.
  c.badCaptures +=
      c.capturing && !(d.first && (s.first || c.pinned.count(src)));
  c.captured += c.capturing;
  if (d.first && s.first)
    ++c.copiesOnDevice;
  else if (d.first)
    ++c.copiesToDevice;
  else if (s.first)
    ++c.copiesToHost;
  return 0;
}
int cuMemsetD32Async(unsigned long long dst, unsigned, size_t, void *stream) {
  std::lock_guard<std::mutex> lock(counts().mutex);
  access(enqueue(stream), dst, "a memset");
  ++counts().memsets;
  counts().captured += counts().capturing;
  return 0;
}
int cuMemsetD16Async(unsigned long long dst, unsigned short, size_t,
                     void *stream) {
  std::lock_guard<std::mutex> lock(counts().mutex);
  access(enqueue(stream), dst, "a memset");
  ++counts().memsets;
  counts().captured += counts().capturing;
  return 0;
}
int cuMemGetInfo_v2(size_t *free, size_t *total) {
  *free = *total = size_t(1) << 34;
  return 0;
}

// cuBLAS (column-major).
int cublasCreate_v2(void **handle) {
  static int h;
  *handle = &h;
  return 0;
}
static void *blasStream = nullptr;
int cublasSetStream_v2(void *, void *stream) {
  blasStream = stream;
  return 0;
}
/// A GEMM on cuBLAS's stream reads A and B and writes C.
static void gemmAccesses(const void *a, const void *b, const void *c,
                         void *stream) {
  size_t index = enqueue(stream);
  access(index, reinterpret_cast<uintptr_t>(a), "a GEMM");
  access(index, reinterpret_cast<uintptr_t>(b), "a GEMM");
  access(index, reinterpret_cast<uintptr_t>(c), "a GEMM");
}
int cublasSetMathMode(void *, int) { return 0; }
int cublasSetWorkspace_v2(void *, void *workspace, size_t bytes) {
  std::lock_guard<std::mutex> lock(counts().mutex);
  auto block = deviceBlock(reinterpret_cast<uintptr_t>(workspace));
  return block.first && block.second >= bytes ? 0 : 7;
}
/// Whether a column-major rows x cols matrix of `element`-byte values at
/// `p` with leading dimension `ld` lies within one device allocation (the
/// bytes asked for, not the page that holds them).
static bool insideDevice(const void *p, long rows, long cols, long ld,
                         size_t element = sizeof(float)) {
  uintptr_t first = reinterpret_cast<uintptr_t>(p);
  uintptr_t last = first + ((cols - 1) * ld + rows - 1) * element;
  auto block = deviceBlock(first);
  return block.first && rows <= ld &&
         last + element <= block.first + counts().requested[block.first];
}

/// Whether one product's A, B (of `element`-byte values) and C (float32),
/// column-major as cuBLAS takes them, lie within device allocations.
static bool productInside(const void *a, const void *b, const void *c, int opA,
                          int opB, int m, int n, int k, long lda, long ldb,
                          long ldc, size_t element = sizeof(float)) {
  return insideDevice(a, opA ? k : m, opA ? m : k, lda, element) &&
         insideDevice(b, opB ? n : k, opB ? k : n, ldb, element) &&
         insideDevice(c, m, n, ldc);
}

int cublasSgemm_v2(void *, int opA, int opB, int m, int n, int k,
                   const float *alpha, const float *a, int lda, const float *b,
                   int ldb, const float *beta, float *c, int ldc) {
  Counts &c0 = counts();
  std::lock_guard<std::mutex> lock(c0.mutex);
  gemmAccesses(a, b, c, blasStream);
  ++c0.gemms;
  c0.scaledGemms += *alpha != 1.0f;
  // The step accumulates, C += alpha op(A) op(B) (beta 1), or starts from
  // zero, C = alpha op(A) op(B) (beta 0).
  c0.gemmsFromZero += *beta == 0.0f;
  bool ok = (*beta == 1.0f || *beta == 0.0f) &&
            productInside(a, b, c, opA, opB, m, n, k, lda, ldb, ldc);
  c0.badGemms += !ok;
  return 0;
}

/// Counted as `count` GEMMs, each checked as cublasSgemm_v2's.
int cublasSgemmStridedBatched(void *, int opA, int opB, int m, int n, int k,
                              const float *alpha, const float *a, int lda,
                              long long strideA, const float *b, int ldb,
                              long long strideB, const float *beta, float *c,
                              int ldc, long long strideC, int count) {
  Counts &c0 = counts();
  std::lock_guard<std::mutex> lock(c0.mutex);
  gemmAccesses(a, b, c, blasStream);
  ++c0.batchedGemms;
  c0.scaledGemms += *alpha != 1.0f;
  c0.badGemms += *beta != 1.0f && *beta != 0.0f;
  for (int i = 0; i < count; ++i) {
    ++c0.gemms;
    c0.gemmsFromZero += *beta == 0.0f;
    bool ok = productInside(a + i * strideA, b + i * strideB, c + i * strideC,
                            opA, opB, m, n, k, lda, ldb, ldc);
    c0.badGemms += !ok;
  }
  return 0;
}

/// cublasGemmEx and cublasGemmStridedBatchedEx as gpu-bf16 calls them:
/// bfloat16 A and B (CUDA_R_16BF, 14; the runtime rounds them), a float32 C
/// (CUDA_R_32F, 0), CUBLAS_COMPUTE_32F (68); counted as bf16 GEMMs, each of
/// the `count` products checked as cublasSgemm_v2's (A and B of 2-byte
/// elements). Any other type is a bad GEMM.
static int bf16Gemm(int opA, int opB, int m, int n, int k, const void *alpha,
                    const void *a, int typeA, int lda, long long strideA,
                    const void *b, int typeB, int ldb, long long strideB,
                    const void *beta, void *c, int typeC, int ldc,
                    long long strideC, int count, int computeType) {
  Counts &c0 = counts();
  std::lock_guard<std::mutex> lock(c0.mutex);
  gemmAccesses(a, b, c, blasStream);
  float alphaValue = *static_cast<const float *>(alpha),
        betaValue = *static_cast<const float *>(beta);
  bool typed = typeA == 14 && typeB == 14 && typeC == 0 && computeType == 68;
  c0.badGemms += !typed || (betaValue != 1.0f && betaValue != 0.0f);
  c0.scaledGemms += alphaValue != 1.0f;
  c0.batchedGemms += count > 1;
  c0.bf16Gemms += count;
  auto *ab = static_cast<const uint16_t *>(a);
  auto *bb = static_cast<const uint16_t *>(b);
  auto *cf = static_cast<float *>(c);
  for (int i = 0; i < count; ++i) {
    ++c0.gemms;
    c0.gemmsFromZero += betaValue == 0.0f;
    bool ok =
        productInside(ab + i * strideA, bb + i * strideB, cf + i * strideC, opA,
                      opB, m, n, k, lda, ldb, ldc, 2);
    c0.badGemms += !ok;
  }
  return 0;
}
int cublasGemmStridedBatchedEx(void *, int opA, int opB, int m, int n, int k,
                               const void *alpha, const void *a, int typeA,
                               int lda, long long strideA, const void *b,
                               int typeB, int ldb, long long strideB,
                               const void *beta, void *c, int typeC, int ldc,
                               long long strideC, int count, int computeType,
                               int) {
  return bf16Gemm(opA, opB, m, n, k, alpha, a, typeA, lda, strideA, b, typeB,
                  ldb, strideB, beta, c, typeC, ldc, strideC, count,
                  computeType);
}
int cublasGemmEx(void *, int opA, int opB, int m, int n, int k,
                 const void *alpha, const void *a, int typeA, int lda,
                 const void *b, int typeB, int ldb, const void *beta, void *c,
                 int typeC, int ldc, int computeType, int) {
  return bf16Gemm(opA, opB, m, n, k, alpha, a, typeA, lda, 0, b, typeB, ldb, 0,
                  beta, c, typeC, ldc, 0, 1, computeType);
}

/// cublasSgemmBatched and cublasGemmBatchedEx (pointer arrays on the
/// device, read here): counted as one batched call of `count` GEMMs, each
/// checked as cublasSgemm_v2's (A and B of `element` bytes); a pointer
/// array outside the device's memory is a bad GEMM.
static int pointerGemm(int opA, int opB, int m, int n, int k, float alpha,
                       const void *const *a, int lda, const void *const *b,
                       int ldb, float beta, void *const *c, int ldc, int count,
                       size_t element, bool typed) {
  Counts &c0 = counts();
  std::lock_guard<std::mutex> lock(c0.mutex);
  size_t index = enqueue(blasStream);
  const void *arrays[] = {a, b, c};
  for (const void *array : arrays)
    access(index, reinterpret_cast<uintptr_t>(array), "a GEMM's pointers");
  ++c0.batchedGemms;
  ++c0.pointerArrayGemms;
  c0.scaledGemms += alpha != 1.0f;
  c0.badGemms += !typed || (beta != 1.0f && beta != 0.0f);
  c0.bf16Gemms += element == 2 ? count : 0;
  if (!std::all_of(std::begin(arrays), std::end(arrays), [&](const void *p) {
        return insideDevice(p, count, 1, count, sizeof(void *));
      })) {
    ++c0.badGemms;
    return 0;
  }
  std::vector<std::pair<uintptr_t, size_t>> blocks;
  for (const void *array : arrays)
    blocks.push_back(deviceBlock(reinterpret_cast<uintptr_t>(array)));
  for (auto &block : blocks)
    setAccess(block.first, block.second, PROT_READ);
  std::vector<const void *> as(a, a + count), bs(b, b + count);
  std::vector<void *> cs(c, c + count);
  for (auto &block : blocks)
    setAccess(block.first, block.second, PROT_NONE);
  for (int i = 0; i < count; ++i) {
    ++c0.gemms;
    c0.gemmsFromZero += beta == 0.0f;
    access(index, reinterpret_cast<uintptr_t>(as[i]), "a GEMM");
    access(index, reinterpret_cast<uintptr_t>(bs[i]), "a GEMM");
    access(index, reinterpret_cast<uintptr_t>(cs[i]), "a GEMM");
    c0.badGemms += !productInside(as[i], bs[i], cs[i], opA, opB, m, n, k, lda,
                                  ldb, ldc, element);
  }
  return 0;
}
int cublasSgemmBatched(void *, int opA, int opB, int m, int n, int k,
                       const float *alpha, const float *const *a, int lda,
                       const float *const *b, int ldb, const float *beta,
                       float *const *c, int ldc, int count) {
  return pointerGemm(
      opA, opB, m, n, k, *alpha, reinterpret_cast<const void *const *>(a), lda,
      reinterpret_cast<const void *const *>(b), ldb, *beta,
      reinterpret_cast<void *const *>(c), ldc, count, sizeof(float), true);
}
int cublasGemmBatchedEx(void *, int opA, int opB, int m, int n, int k,
                        const void *alpha, const void *const *a, int typeA,
                        int lda, const void *const *b, int typeB, int ldb,
                        const void *beta, void *const *c, int typeC, int ldc,
                        int count, int computeType, int) {
  bool typed = typeA == 14 && typeB == 14 && typeC == 0 && computeType == 68;
  return pointerGemm(opA, opB, m, n, k, *static_cast<const float *>(alpha), a,
                     lda, b, ldb, *static_cast<const float *>(beta), c, ldc,
                     count, 2, typed);
}

// cuBLASLt (cublasLt.h's ABI), as the bias epilogue calls it: descriptors
// are records of what was set, checked by cublasLtMatmul.
struct LtDesc {
  int compute = -1, scale = -1, transA = 0, transB = 0;
  unsigned epilogue = 0;
  const float *bias = nullptr;
};
struct LtLayout {
  int type;
  unsigned long long rows, cols;
  long long ld;
};
int cublasLtCreate(void **handle) {
  static int h;
  *handle = &h;
  return 0;
}
int cublasLtMatmulDescCreate(void **desc, int compute, int scale) {
  *desc = new LtDesc{compute, scale};
  return 0;
}
int cublasLtMatmulDescSetAttribute(void *desc, int attr, const void *buf,
                                   size_t size) {
  auto *d = static_cast<LtDesc *>(desc);
  // TRANSA (3), TRANSB (4): int32; EPILOGUE (7): uint32; BIAS_POINTER (8).
  if ((attr == 3 || attr == 4) && size == sizeof(int))
    std::memcpy(attr == 3 ? &d->transA : &d->transB, buf, size);
  else if (attr == 7 && size == sizeof(unsigned))
    std::memcpy(&d->epilogue, buf, size);
  else if (attr == 8 && size == sizeof(void *))
    std::memcpy(&d->bias, buf, size);
  else
    return 7; // CUBLAS_STATUS_INVALID_VALUE
  return 0;
}
int cublasLtMatmulDescDestroy(void *desc) {
  delete static_cast<LtDesc *>(desc);
  return 0;
}
int cublasLtMatrixLayoutCreate(void **layout, int type, unsigned long long rows,
                               unsigned long long cols, long long ld) {
  *layout = new LtLayout{type, rows, cols, ld};
  return 0;
}
int cublasLtMatrixLayoutDestroy(void *layout) {
  delete static_cast<LtLayout *>(layout);
  return 0;
}
int cublasLtMatmulPreferenceCreate(void **pref) {
  *pref = new unsigned long long(0);
  return 0;
}
int cublasLtMatmulPreferenceSetAttribute(void *pref, int attr, const void *buf,
                                         size_t size) {
  // MAX_WORKSPACE_BYTES (1): uint64.
  if (attr != 1 || size != sizeof(unsigned long long))
    return 7;
  std::memcpy(pref, buf, size);
  return 0;
}
int cublasLtMatmulPreferenceDestroy(void *pref) {
  delete static_cast<unsigned long long *>(pref);
  return 0;
}
struct LtHeuristic {
  unsigned long long algo[8];
  size_t workspaceSize;
  int state;
  float waves;
  int reserved[4];
};
int cublasLtMatmulAlgoGetHeuristic(void *, void *, void *, void *, void *,
                                   void *, void *pref, int requested,
                                   LtHeuristic *results, int *count) {
  if (requested < 1)
    return 7;
  {
    std::lock_guard<std::mutex> lock(counts().mutex);
    ++counts().ltHeuristics;
  }
  results[0] = LtHeuristic{};
  results[0].algo[0] = 42;
  results[0].workspaceSize = *static_cast<unsigned long long *>(pref) / 2;
  *count = 1;
  return 0;
}
/// A bias GEMM: D = op(A) op(B) + bias, float32 matrices and scales, the
/// bias epilogue with its n-element bias, alpha 1 and beta 0, C the same
/// as D, every matrix within one device allocation, the algorithm the
/// heuristic found; A and B float32, or both bfloat16 (CUDA_R_16BF, 14:
/// gpu-bf16, CUBLAS_COMPUTE_32F). Counted as a GEMM and a bias GEMM (a
/// bf16 GEMM too with bfloat16 inputs); anything else is a bad GEMM. With
/// bfloat16 inputs, D may be bfloat16 too (precision=bf16), the bias then
/// bfloat16 (its type is D's), or absent (the default epilogue): counted
/// as a GEMM writing bf16 (and a bias GEMM where it has a bias).
int cublasLtMatmul(void *, void *desc, const void *alpha, const void *a,
                   void *layoutA, const void *b, void *layoutB,
                   const void *beta, const void *c, void *layoutC, void *d,
                   void *layoutD, const LtHeuristic *algo, void *workspace,
                   size_t workspaceSize, void *stream) {
  Counts &c0 = counts();
  std::lock_guard<std::mutex> lock(c0.mutex);
  gemmAccesses(a, b, d, stream);
  auto *o = static_cast<LtDesc *>(desc);
  auto *la = static_cast<LtLayout *>(layoutA);
  auto *lb = static_cast<LtLayout *>(layoutB);
  auto *ld = static_cast<LtLayout *>(layoutD);
  ++c0.gemms;
  bool bf16 = la->type == 14 && lb->type == 14;
  bool bf16Out = bf16 && ld->type == 14;
  bool withBias = o->epilogue == 4;
  c0.biasGemms += withBias;
  c0.bf16Gemms += bf16;
  c0.bf16OutputGemms += bf16Out;
  size_t inputBytes = bf16 ? 2 : 4, outputBytes = bf16Out ? 2 : 4;
  long m = ld->rows, n = ld->cols, k = o->transA ? la->rows : la->cols;
  auto block = deviceBlock(reinterpret_cast<uintptr_t>(workspace));
  bool ok =
      (bf16 ? o->compute == 68
            : (o->compute == 68 || o->compute == 77) && la->type == 0 &&
                  lb->type == 0) &&
      o->scale == 0 && (ld->type == 0 || bf16Out) &&
      (withBias || (bf16Out && o->epilogue == 1)) &&
      *static_cast<const float *>(alpha) == 1.0f &&
      *static_cast<const float *>(beta) == 0.0f && c == d &&
      layoutC == layoutD && algo->algo[0] == 42 &&
      (o->transA ? la->cols : la->rows) == static_cast<unsigned long long>(m) &&
      (o->transB ? lb->rows : lb->cols) == static_cast<unsigned long long>(n) &&
      (o->transB ? lb->cols : lb->rows) == static_cast<unsigned long long>(k) &&
      insideDevice(a, la->rows, la->cols, la->ld, inputBytes) &&
      insideDevice(b, lb->rows, lb->cols, lb->ld, inputBytes) &&
      insideDevice(d, m, n, ld->ld, outputBytes) &&
      (!withBias || insideDevice(o->bias, m, 1, m, outputBytes)) &&
      (workspaceSize == 0 || (block.first && block.second >= workspaceSize));
  c0.badGemms += !ok;
  return 0;
}

// NCCL (nccl.h's ABI). The CPU runtime's functions, found in the process.
using HostAllReduce = void (*)(int64_t, void *, int32_t);
static HostAllReduce hostAllReduce(const char *name) {
  return reinterpret_cast<HostAllReduce>(dlsym(RTLD_DEFAULT, name));
}
static int worldValue(const char *name) {
  auto fn = reinterpret_cast<int32_t (*)()>(dlsym(RTLD_DEFAULT, name));
  return fn ? fn() : -1;
}

struct MockNcclId {
  char internal[128];
};
int ncclGetUniqueId(MockNcclId *id) {
  std::memset(id->internal, 0, sizeof(id->internal));
  std::snprintf(id->internal, sizeof(id->internal), "mock nccl %ld",
                static_cast<long>(getpid()));
  return 0;
}
const char *ncclGetErrorString(int) { return "mock NCCL error"; }
int ncclCommInitRank(void **comm, int nranks, MockNcclId id, int rank) {
  Counts &c = counts();
  // The id's hash summed over the ranks is nranks times each rank's.
  // Kept below 2^40 so that the sum over any plausible rank count does
  // not overflow (unsigned arithmetic for the hash itself).
  uint64_t h = 0;
  for (char ch : id.internal)
    h = h * 131u + static_cast<unsigned char>(ch);
  int64_t hash[1] = {static_cast<int64_t>(h & ((uint64_t(1) << 40) - 1))};
  int64_t own = hash[0];
  int64_t descriptor[5] = {reinterpret_cast<int64_t>(hash),
                           reinterpret_cast<int64_t>(hash), 0, 1, 1};
  HostAllReduce sum = hostAllReduce("ga_all_reduce_i64");
  if (!sum)
    return 3; // ncclInternalError
  sum(1, descriptor, 0);
  std::lock_guard<std::mutex> lock(c.mutex);
  bool ok = id.internal[0] && hash[0] == own * nranks &&
            nranks == worldValue("ga_world_size") &&
            rank == worldValue("ga_world_rank");
  if (!ok) {
    ++c.badNccl;
    return 4; // ncclInvalidArgument
  }
  static int communicator;
  *comm = &communicator;
  ++c.ncclComms;
  return 0;
}
/// The CPU runtime's suffix of an NCCL data type (ncclFloat32, ncclFloat64,
/// ncclInt32, ncclInt64), or null for another.
static const char *ncclSuffix(int type) {
  return type == 7   ? "f32"
         : type == 8 ? "f64"
         : type == 2 ? "i32"
         : type == 4 ? "i64"
                     : nullptr;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op,
                  void *comm, void *stream) {
  Counts &c = counts();
  const char *suffix = ncclSuffix(type);
  std::string name = std::string("ga_all_reduce_") + (suffix ? suffix : "");
  size_t size = type == 8 || type == 4 ? 8 : 4;
  uintptr_t p = reinterpret_cast<uintptr_t>(recv);
  std::pair<uintptr_t, size_t> block;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    block = deviceBlock(p);
    if (!suffix || op != 0 || send != recv || !comm || !block.first ||
        p + count * size > block.first + block.second) {
      ++c.badNccl;
      return 4; // ncclInvalidArgument
    }
    ++c.ncclAllReduces;
    // On its stream, checked for order like a kernel.
    size_t index = enqueue(stream);
    c.ncclOnStepStream += index == streamOf(c.firstStream);
    access(index, p, "an ncclAllReduce");
    setAccess(block.first, block.second, PROT_READ | PROT_WRITE);
  }
  int64_t descriptor[5] = {static_cast<int64_t>(p), static_cast<int64_t>(p), 0,
                           static_cast<int64_t>(count), 1};
  hostAllReduce(name.c_str())(1, descriptor, 0);
  std::lock_guard<std::mutex> lock(c.mutex);
  setAccess(block.first, block.second, PROT_NONE);
  return 0;
}

/// ncclReduceScatter (`gather` false) and ncclAllGather (true): the CPU
/// runtime's ga_reduce_scatter_<type> and ga_all_gather_<type> on the two
/// device blocks, which must hold the elements the call names.
static int partition(bool gather, const void *send, void *recv, size_t count,
                     int type, int op, void *comm, void *stream) {
  Counts &c = counts();
  const char *suffix = ncclSuffix(type);
  size_t size = type == 8 || type == 4 ? 8 : 4;
  int ranks = worldValue("ga_world_size");
  size_t sendCount = gather ? count : count * ranks;
  size_t recvCount = gather ? count * ranks : count;
  uintptr_t in = reinterpret_cast<uintptr_t>(send);
  uintptr_t out = reinterpret_cast<uintptr_t>(recv);
  std::pair<uintptr_t, size_t> inBlock, outBlock;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    inBlock = deviceBlock(in);
    outBlock = deviceBlock(out);
    if (!suffix || op != 0 || !comm || ranks < 1 || !inBlock.first ||
        !outBlock.first ||
        in + sendCount * size > inBlock.first + inBlock.second ||
        out + recvCount * size > outBlock.first + outBlock.second) {
      ++c.badNccl;
      return 4; // ncclInvalidArgument
    }
    ++(gather ? c.ncclAllGathers : c.ncclReduceScatters);
    // The collective on its stream, checked for order like a kernel.
    size_t index = enqueue(stream);
    c.ncclOnStepStream += index == streamOf(c.firstStream);
    access(index, in,
           gather ? "an ncclAllGather's read" : "an ncclReduceScatter's read");
    access(index, out,
           gather ? "an ncclAllGather's write"
                  : "an ncclReduceScatter's write");
    setAccess(inBlock.first, inBlock.second, PROT_READ | PROT_WRITE);
    setAccess(outBlock.first, outBlock.second, PROT_READ | PROT_WRITE);
  }
  int64_t inDescriptor[5] = {static_cast<int64_t>(in), static_cast<int64_t>(in),
                             0, static_cast<int64_t>(sendCount), 1};
  int64_t outDescriptor[5] = {static_cast<int64_t>(out),
                              static_cast<int64_t>(out), 0,
                              static_cast<int64_t>(recvCount), 1};
  std::string name =
      std::string(gather ? "ga_all_gather_" : "ga_reduce_scatter_") + suffix;
  void *fn = dlsym(RTLD_DEFAULT, name.c_str());
  if (gather)
    reinterpret_cast<void (*)(int64_t, void *, int64_t, void *)>(fn)(
        1, inDescriptor, 1, outDescriptor);
  else
    reinterpret_cast<void (*)(int64_t, void *, int64_t, void *, int32_t)>(fn)(
        1, inDescriptor, 1, outDescriptor, 0);
  std::lock_guard<std::mutex> lock(c.mutex);
  setAccess(inBlock.first, inBlock.second, PROT_NONE);
  setAccess(outBlock.first, outBlock.second, PROT_NONE);
  return 0;
}

int ncclReduceScatter(const void *send, void *recv, size_t recvCount, int type,
                      int op, void *comm, void *stream) {
  return partition(false, send, recv, recvCount, type, op, comm, stream);
}

int ncclAllGather(const void *send, void *recv, size_t sendCount, int type,
                  void *comm, void *stream) {
  return partition(true, send, recv, sendCount, type, 0, comm, stream);
}

// The fused attention's backend (lib/Runtime/CUDA/AttentionBackend.h), as
// GA_CUDA_ATTENTION_LIBRARY=<this library> makes the runtime load it: each
// call's tensors must lie within device allocations (the element of the
// largest index of each), its accesses are ordered on the step's stream
// like a kernel's, and a workspace block is taken from the runtime's
// allocator and given back.
static bool attentionTensorInside(const GaAttentionTensor &t, size_t element) {
  uintptr_t first = reinterpret_cast<uintptr_t>(t.data);
  int64_t lastIndex = 0;
  for (int d = 0; d < 4; ++d) {
    if (t.sizes[d] < 1 || t.strides[d] < 0)
      return false;
    lastIndex += (t.sizes[d] - 1) * t.strides[d];
  }
  auto block = deviceBlock(first);
  return block.first && first + (lastIndex + 1) * element <=
                            block.first + counts().requested[block.first];
}

static int mockAttention(bool backward, const GaAttentionCall *call,
                         char *error, size_t bytes) {
  uint64_t workspace = call->allocate(call->allocatorContext, 1 << 20);
  Counts &c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (call->version != GA_ATTENTION_BACKEND_VERSION) {
    std::snprintf(error, bytes, "the stand-in takes version %d, got %d",
                  GA_ATTENTION_BACKEND_VERSION, call->version);
    return 1;
  }
  std::vector<const GaAttentionTensor *> tensors = {&call->q, &call->k,
                                                    &call->v, &call->out};
  if (backward)
    for (const GaAttentionTensor *t :
         {&call->dout, &call->dq, &call->dk, &call->dv})
      tensors.push_back(t);
  bool ok = attentionTensorInside(call->lse, sizeof(float)) && workspace;
  for (const GaAttentionTensor *t : tensors)
    ok = ok && attentionTensorInside(*t, 2);
  c.badAttention += !ok;
  ++(backward ? c.attentionBackward : c.attentionForward);
  size_t index = enqueue(call->stream);
  for (const GaAttentionTensor *t : tensors)
    access(index, reinterpret_cast<uintptr_t>(t->data), "a fused attention");
  access(index, reinterpret_cast<uintptr_t>(call->lse.data),
         "a fused attention");
  if (workspace) {
    access(index, workspace, "a fused attention's workspace");
    ++c.attentionWorkspaces;
  }
  c.mutex.unlock();
  if (workspace)
    call->release(call->allocatorContext, workspace);
  c.mutex.lock();
  return 0;
}

int ga_attention_backend_forward(const GaAttentionCall *call, char *error,
                                 size_t bytes) {
  return mockAttention(false, call, error, bytes);
}
int ga_attention_backend_backward(const GaAttentionCall *call, char *error,
                                  size_t bytes) {
  return mockAttention(true, call, error, bytes);
}

} // extern "C"
