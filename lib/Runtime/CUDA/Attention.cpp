//===- Attention.cpp - The fused attention of a CUDA step -----------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga_cuda_attention_fwd_bf16 and ga_cuda_attention_bwd_bf16: the calls that
// train.attention and train.attention_grad become with attention=library
// on target=cuda (lib/Conversion/TrainToLinalg/AttentionToCalls.cpp has
// the ABI: unranked memref descriptors of device buffers). Each call reads
// its descriptors into the backend's C ABI (AttentionBackend.h) and calls
// the backend loaded on the first attention: libga_cudnn_attention.so
// beside this library (cuDNN's fused SDPA, Cudnn.cpp), or the library that
// GA_CUDA_ATTENTION_LIBRARY names. The backend's workspace comes from the
// step's allocator (outside the step's own peak, inside the device's
// high-water mark, as cuBLAS's workspace). A failure is recorded as the
// step's error, with the device's name.
//
//===----------------------------------------------------------------------===//

#include "AttentionBackend.h"
#include "Runtime.h"
#include "ga/Runtime/ga_cuda.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

using namespace ga::cuda;

namespace {

/// The backend, loaded on the first attention.
struct AttentionLibrary {
  bool tried = false;
  GaAttentionPass forward = nullptr, backward = nullptr;
};

AttentionLibrary &attentionLibrary() {
  static AttentionLibrary library;
  return library;
}

/// This library's directory (where libga_cudnn_attention.so is built and
/// installed beside it).
std::string ownDirectory() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&ownDirectory), &info) ||
      !info.dli_fname)
    return ".";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool ensureBackend(State &s) {
  AttentionLibrary &lib = attentionLibrary();
  if (lib.tried)
    return lib.forward != nullptr;
  lib.tried = true;
  std::string path;
  if (const char *env = std::getenv("GA_CUDA_ATTENTION_LIBRARY"))
    path = env;
  else
    path = ownDirectory() + "/libga_cudnn_attention.so";
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    recordError(s, "the step's attention runs on the fused attention "
                   "library (attention=library), which cannot be loaded: " +
                       std::string(why ? why : path) +
                       " (this runtime may have been built without "
                       "cudnn-frontend; compile with attention=tiles)");
    return false;
  }
  lib.forward = reinterpret_cast<GaAttentionPass>(
      dlsym(handle, "ga_attention_backend_forward"));
  lib.backward = reinterpret_cast<GaAttentionPass>(
      dlsym(handle, "ga_attention_backend_backward"));
  if (!lib.forward || !lib.backward) {
    lib.forward = nullptr;
    recordError(s, path + " lacks ga_attention_backend_forward or "
                          "ga_attention_backend_backward");
    return false;
  }
  return true;
}

/// A bfloat16 [B, S, H, D] operand (or, with `stats`, a float32 [B, H, S]
/// statistic) from its MLIR descriptor; false (recorded) for another rank
/// or a feature dimension that is not contiguous.
bool tensorOf(State &s, const char *name, int64_t rank, void *descriptor,
              bool stats, GaAttentionTensor &t) {
  if (rank != (stats ? 3 : 4)) {
    recordError(s, std::string("the fused attention's ") + name +
                       " must be of rank " + (stats ? "3" : "4") + ", got " +
                       std::to_string(rank));
    return false;
  }
  auto *fields = static_cast<int64_t *>(descriptor);
  size_t element = stats ? 4 : 2;
  t.data = reinterpret_cast<char *>(fields[1]) + fields[2] * element;
  for (int d = 0; d < 4; ++d) {
    t.sizes[d] = d < rank ? fields[3 + d] : 1;
    t.strides[d] = d < rank ? fields[3 + rank + d] : 1;
  }
  if (!stats && t.strides[3] != 1 && t.sizes[3] != 1) {
    recordError(s, std::string("the fused attention's ") + name +
                       " has features " + std::to_string(t.strides[3]) +
                       " elements apart; cuDNN reads them contiguous");
    return false;
  }
  return true;
}

uint64_t allocateWorkspace(void *context, size_t bytes) {
  return allocate(*static_cast<State *>(context), bytes, /*counted=*/false);
}

void releaseWorkspace(void *context, uint64_t pointer) {
  release(*static_cast<State *>(context), pointer);
}

void runAttention(bool backward, GaAttentionCall &call) {
  State &s = state();
  call.version = GA_ATTENTION_BACKEND_VERSION;
  call.stream = s.stream;
  call.allocate = allocateWorkspace;
  call.release = releaseWorkspace;
  call.allocatorContext = &s;
  AttentionLibrary &lib = attentionLibrary();
  std::string label =
      std::string("fused attention ") + (backward ? "backward " : "forward ") +
      std::to_string(call.q.sizes[0]) + "x" + std::to_string(call.q.sizes[1]) +
      "x" + std::to_string(call.q.sizes[2]) + "x" +
      std::to_string(call.q.sizes[3]) + (call.causal ? " causal" : "");
  long timed = s.profile.enabled ? profileBegin(s, label) : -1;
  char error[1024] = {0};
  int rc = (backward ? lib.backward : lib.forward)(&call, error, sizeof error);
  if (timed >= 0)
    profileEnd(s, timed);
  if (rc != 0) {
    recordError(s, label + " on " + s.deviceName + ": " + error);
    return;
  }
  afterLaunch(s);
}

/// One of a call's descriptors and where its tensor goes.
struct Operand {
  const char *name;
  int64_t rank;
  void *descriptor;
  bool stats;
  GaAttentionTensor GaAttentionCall::*field;
};

/// An entry point: the step's state taken, the backend loaded, the
/// descriptors read, the pass run.
void attentionEntry(bool backward, std::initializer_list<Operand> operands,
                    double scale, int32_t causal) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.usable || !s.error.empty() || !ensureBackend(s))
    return;
  GaAttentionCall call{};
  for (const Operand &o : operands)
    if (!tensorOf(s, o.name, o.rank, o.descriptor, o.stats, call.*o.field))
      return;
  call.scale = scale;
  call.causal = causal;
  runAttention(backward, call);
}

} // namespace

// masked_score is unused: the fused attention takes causal masks only,
// whose hidden keys are excluded from the softmax, not scored.
extern "C" {

void ga_cuda_attention_fwd_bf16(int64_t qr, void *q, int64_t kr, void *k,
                                int64_t vr, void *v, int64_t orr, void *o,
                                int64_t lr, void *l, double scale,
                                int32_t causal, double) {
  attentionEntry(false,
                 {{"query", qr, q, false, &GaAttentionCall::q},
                  {"key", kr, k, false, &GaAttentionCall::k},
                  {"value", vr, v, false, &GaAttentionCall::v},
                  {"output", orr, o, false, &GaAttentionCall::out},
                  {"log-sum-exp", lr, l, true, &GaAttentionCall::lse}},
                 scale, causal);
}

void ga_cuda_attention_bwd_bf16(int64_t qr, void *q, int64_t kr, void *k,
                                int64_t vr, void *v, int64_t orr, void *o,
                                int64_t lr, void *l, int64_t gr, void *g,
                                int64_t dqr, void *dq, int64_t dkr, void *dk,
                                int64_t dvr, void *dv, double scale,
                                int32_t causal, double) {
  attentionEntry(true,
                 {{"query", qr, q, false, &GaAttentionCall::q},
                  {"key", kr, k, false, &GaAttentionCall::k},
                  {"value", vr, v, false, &GaAttentionCall::v},
                  {"output", orr, o, false, &GaAttentionCall::out},
                  {"log-sum-exp", lr, l, true, &GaAttentionCall::lse},
                  {"output's gradient", gr, g, false, &GaAttentionCall::dout},
                  {"query's gradient", dqr, dq, false, &GaAttentionCall::dq},
                  {"key's gradient", dkr, dk, false, &GaAttentionCall::dk},
                  {"value's gradient", dvr, dv, false, &GaAttentionCall::dv}},
                 scale, causal);
}

} // extern "C"
