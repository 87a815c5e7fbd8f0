//===- Cudnn.cpp - The fused attention on cuDNN's SDPA --------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// libga_cudnn_attention.so: the backend of the CUDA runtime's fused
// attention (AttentionBackend.h) on cuDNN's scaled dot-product attention,
// forward and backward (flash attention: the backward pass from the saved
// output and log-sum-exp statistics), through cudnn-frontend's graph API.
// cuDNN itself (libcudnn.so.9) is loaded with dlopen on the first call
// (GA_CUDNN_LIBRARY, else the loader's path, else the CUDA toolkit's
// lib64), as the runtime loads cuBLAS: the library builds where the
// frontend's headers and cuDNN's and the CUDA runtime's headers are, and
// loads where neither cuDNN nor a GPU is.
//
// Each graph (pass, shapes, strides, causal) is built once and its plan
// cached; the workspace comes from the runtime's allocator on the step's
// stream. Operands and results are bfloat16 with float32 arithmetic
// inside, the statistics float32 ([B, H, S, 1]): the form
// ga-mixed-precision gives the step's attention (precision=bf16-mixed).
//
//===----------------------------------------------------------------------===//

#include "AttentionBackend.h"

#include <cudnn_frontend.h>

#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cudnn_frontend {
/// The handle of libcudnn.so.9 through which the frontend calls cuDNN
/// (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING).
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend

namespace {

namespace fe = cudnn_frontend;

enum Uid : int64_t { Q, K, V, O, Stats, DO, DQ, DK, DV, Scale };

struct Backend {
  std::mutex mutex;
  bool tried = false;
  std::string unavailable;
  cudnnHandle_t handle = nullptr;
  /// By pass (0 forward, 1 backward), causal, and every tensor's sizes
  /// and strides.
  std::map<std::vector<int64_t>, std::shared_ptr<fe::graph::Graph>> graphs;
};

Backend &backend() {
  static Backend *b = new Backend; // lives until exit
  return *b;
}

std::string cudnnVersion() {
  try {
    int64_t v = fe::detail::get_backend_version();
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) +
           "." + std::to_string(v % 100);
  } catch (...) {
    return "unknown";
  }
}

/// Loads cuDNN and makes the handle, once; false with the reason in
/// `b.unavailable`.
bool ensureCudnn(Backend &b) {
  if (b.tried)
    return b.handle != nullptr;
  b.tried = true;
  std::vector<std::string> candidates;
  if (const char *path = std::getenv("GA_CUDNN_LIBRARY"))
    candidates.push_back(path);
  candidates.push_back("libcudnn.so.9");
  if (const char *home = std::getenv("CUDA_HOME"))
    candidates.push_back(std::string(home) + "/lib64/libcudnn.so.9");
  candidates.push_back("/usr/local/cuda/lib64/libcudnn.so.9");
  std::string why;
  for (const std::string &candidate : candidates) {
    if ((fe::cudnn_dlhandle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)))
      break;
    if (const char *e = dlerror())
      why = e;
  }
  if (!fe::cudnn_dlhandle) {
    b.unavailable = "cuDNN (libcudnn.so.9) cannot be loaded (" + why +
                    "; set GA_CUDNN_LIBRARY, for example to PyTorch's "
                    "nvidia/cudnn/lib/libcudnn.so.9)";
    return false;
  }
  try {
    cudnnStatus_t rc = fe::detail::create_handle(&b.handle);
    if (rc != CUDNN_STATUS_SUCCESS) {
      b.unavailable = "cudnnCreate failed with cuDNN " + cudnnVersion() + ": " +
                      fe::detail::get_error_string(rc);
      b.handle = nullptr;
      return false;
    }
  } catch (const std::exception &e) {
    b.unavailable = std::string("cuDNN ") + cudnnVersion() +
                    " could not be set up: " + e.what();
    b.handle = nullptr;
    return false;
  }
  return true;
}

/// `t` ([B, S, H, D] or, for statistics, [B, H, S, 1]) as cuDNN's [B, H,
/// S, D] tensor attributes.
fe::graph::Tensor_attributes attributes(const char *name, int64_t uid,
                                        const GaAttentionTensor &t,
                                        bool stats) {
  std::vector<int64_t> dims, strides;
  if (stats) {
    dims = {t.sizes[0], t.sizes[1], t.sizes[2], 1};
    strides = {t.strides[0], t.strides[1], t.strides[2], 1};
  } else {
    dims = {t.sizes[0], t.sizes[2], t.sizes[1], t.sizes[3]};
    strides = {t.strides[0], t.strides[2], t.strides[1], t.strides[3]};
  }
  auto a = fe::graph::Tensor_attributes()
               .set_name(name)
               .set_uid(uid)
               .set_dim(dims)
               .set_stride(strides);
  if (stats)
    a.set_data_type(fe::DataType_t::FLOAT);
  return a;
}

void appendKey(std::vector<int64_t> &key, const GaAttentionTensor &t) {
  key.insert(key.end(), t.sizes, t.sizes + 4);
  key.insert(key.end(), t.strides, t.strides + 4);
}

/// The graph of `call`'s pass, built and planned on its first use.
std::shared_ptr<fe::graph::Graph> graphFor(Backend &b, bool backward,
                                           const GaAttentionCall &c,
                                           std::string &error) {
  std::vector<int64_t> key = {backward, c.causal};
  for (const GaAttentionTensor *t : {&c.q, &c.k, &c.v, &c.out, &c.lse})
    appendKey(key, *t);
  if (backward)
    for (const GaAttentionTensor *t : {&c.dout, &c.dq, &c.dk, &c.dv})
      appendKey(key, *t);
  if (auto it = b.graphs.find(key); it != b.graphs.end())
    return it->second;
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto q = graph->tensor(attributes("Q", Q, c.q, false));
  auto k = graph->tensor(attributes("K", K, c.k, false));
  auto v = graph->tensor(attributes("V", V, c.v, false));
  auto scale = graph->tensor(fe::graph::Tensor_attributes()
                                 .set_name("scale")
                                 .set_uid(Scale)
                                 .set_dim({1, 1, 1, 1})
                                 .set_stride({1, 1, 1, 1})
                                 .set_is_pass_by_value(true)
                                 .set_data_type(fe::DataType_t::FLOAT));
  auto output = [](const std::shared_ptr<fe::graph::Tensor_attributes> &t,
                   const fe::graph::Tensor_attributes &like) {
    t->set_output(true)
        .set_uid(like.get_uid())
        .set_dim(like.get_dim())
        .set_stride(like.get_stride());
  };
  if (!backward) {
    auto options = fe::graph::SDPA_attributes()
                       .set_name("ga_attention_forward")
                       .set_generate_stats(true)
                       .set_attn_scale(scale)
                       .set_causal_mask(c.causal != 0);
    auto [o, stats] = graph->sdpa(q, k, v, options);
    output(o, attributes("O", O, c.out, false));
    output(stats, attributes("Stats", Stats, c.lse, true));
    stats->set_data_type(fe::DataType_t::FLOAT);
  } else {
    auto o = graph->tensor(attributes("O", O, c.out, false));
    auto dout = graph->tensor(attributes("dO", DO, c.dout, false));
    auto stats = graph->tensor(attributes("Stats", Stats, c.lse, true));
    auto options = fe::graph::SDPA_backward_attributes()
                       .set_name("ga_attention_backward")
                       .set_deterministic_algorithm(true)
                       .set_attn_scale(scale)
                       .set_causal_mask(c.causal != 0);
    auto [dq, dk, dv] = graph->sdpa_backward(q, k, v, o, dout, stats, options);
    output(dq, attributes("dQ", DQ, c.dq, false));
    output(dk, attributes("dK", DK, c.dk, false));
    output(dv, attributes("dV", DV, c.dv, false));
  }
  auto failed = [&](fe::error_object e, const char *stage) {
    if (e.is_good())
      return false;
    error = std::string(stage) + ": " + e.get_message();
    return true;
  };
  if (failed(graph->validate(), "validate") ||
      failed(graph->build_operation_graph(b.handle), "build_operation_graph") ||
      failed(graph->create_execution_plans({fe::HeurMode_t::A}),
             "create_execution_plans") ||
      failed(graph->check_support(b.handle), "check_support") ||
      failed(graph->build_plans(b.handle), "build_plans"))
    return nullptr;
  b.graphs.emplace(std::move(key), graph);
  return graph;
}

int report(char *error, size_t bytes, const std::string &message) {
  if (bytes)
    std::snprintf(error, bytes, "%s", message.c_str());
  return 1;
}

int run(bool backward, const GaAttentionCall *c, char *error, size_t bytes) {
  if (c->version != GA_ATTENTION_BACKEND_VERSION)
    return report(error, bytes,
                  "the attention backend's ABI is version " +
                      std::to_string(GA_ATTENTION_BACKEND_VERSION) +
                      ", the runtime's " + std::to_string(c->version));
  Backend &b = backend();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (!ensureCudnn(b))
    return report(error, bytes, b.unavailable);
  try {
    std::string why;
    auto graph = graphFor(b, backward, *c, why);
    if (!graph)
      return report(error, bytes,
                    "cuDNN " + cudnnVersion() + " has no " +
                        (backward ? "backward" : "forward") +
                        " fused attention for this shape on this GPU (" + why +
                        ")");
    cudnnStatus_t rc = fe::detail::set_stream(
        b.handle, reinterpret_cast<cudaStream_t>(c->stream));
    if (rc != CUDNN_STATUS_SUCCESS)
      return report(error, bytes,
                    std::string("cudnnSetStream failed: ") +
                        fe::detail::get_error_string(rc));
    float scale = static_cast<float>(c->scale);
    std::unordered_map<int64_t, void *> pack = {
        {Q, c->q.data},   {K, c->k.data},       {V, c->v.data},
        {O, c->out.data}, {Stats, c->lse.data}, {Scale, &scale}};
    if (backward) {
      pack[DO] = c->dout.data;
      pack[DQ] = c->dq.data;
      pack[DK] = c->dk.data;
      pack[DV] = c->dv.data;
    }
    int64_t workspaceBytes = graph->get_workspace_size();
    uint64_t workspace = 0;
    if (workspaceBytes > 0) {
      workspace =
          c->allocate(c->allocatorContext, static_cast<size_t>(workspaceBytes));
      if (!workspace)
        return report(error, bytes,
                      "the fused attention's workspace of " +
                          std::to_string(workspaceBytes) +
                          " bytes could not be allocated");
    }
    fe::error_object done =
        graph->execute(b.handle, pack, reinterpret_cast<void *>(workspace));
    if (workspace)
      c->release(c->allocatorContext, workspace);
    if (!done.is_good())
      return report(
          error, bytes,
          "cuDNN " + cudnnVersion() +
              " failed to run the fused attention: " + done.get_message());
  } catch (const std::exception &e) {
    return report(error, bytes,
                  "cuDNN " + cudnnVersion() + ": " + std::string(e.what()));
  }
  return 0;
}

} // namespace

extern "C" {
int ga_attention_backend_forward(const GaAttentionCall *call, char *error,
                                 size_t errorBytes) {
  return run(false, call, error, errorBytes);
}
int ga_attention_backend_backward(const GaAttentionCall *call, char *error,
                                  size_t errorBytes) {
  return run(true, call, error, errorBytes);
}
}
