//===- Graph.cpp - A step captured as one CUDA graph ----------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
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

#include "Runtime.h"

#include "ga/Runtime/ga_cuda.h"

#include <cstdlib>
#include <cstring>

namespace ga::cuda {

void configureGraphs(State &s, void *lib) {
  GraphCapture &g = s.graph;
  const char *env = std::getenv("GA_CUDA_GRAPH");
  g.requested = env && std::strcmp(env, "0") != 0;
  if (!g.requested)
    return;
  if (std::string missing = g.fn.bind(lib); !missing.empty())
    g.off = "the CUDA driver has no " + missing;
  else if (s.profile.enabled)
    g.off = "GA_CUDA_PROFILE times every launch on its own";
  else if (s.syncEveryLaunch)
    g.off = "GA_CUDA_SYNC waits after every launch";
}

void beginCapture(State &s) {
  GraphCapture &g = s.graph;
  g.inStep = true;
  bool later = g.steps++ > 0;
  if (g.requested && g.off.empty() && later &&
      check(s, g.fn.cuStreamBeginCapture_v2(s.stream, /*relaxed*/ 2),
            "cuStreamBeginCapture"))
    g.capturing = true;
  else if (g.requested && !s.error.empty() && g.off.empty())
    g.off = "the capture cannot begin: " + s.error;
}

/// The graph captured is instantiated, or the last instantiation updated in
/// place, and launched.
void endCapture(State &s, const char *reason) {
  GraphCapture &g = s.graph;
  if (reason && g.off.empty())
    g.off = reason;
  if (!g.capturing)
    return;
  g.capturing = false;
  CUgraph graph = nullptr;
  if (!check(s, g.fn.cuStreamEndCapture(s.stream, &graph),
             "cuStreamEndCapture")) {
    g.off = "the capture failed: " + s.error;
    return;
  }
  bool updated = false;
  if (g.exec) {
    GraphUpdateInfo info{};
    updated = g.fn.cuGraphExecUpdate_v2(g.exec, graph, &info) == 0;
    if (!updated) {
      g.fn.cuGraphExecDestroy(g.exec);
      g.exec = nullptr;
    }
  }
  if (!g.exec && !check(s, g.fn.cuGraphInstantiateWithFlags(&g.exec, graph, 0),
                        "cuGraphInstantiate")) {
    g.exec = nullptr;
    g.off = "the graph cannot be instantiated: " + s.error;
  } else if (check(s, g.fn.cuGraphLaunch(g.exec, s.stream), "cuGraphLaunch")) {
    ++g.launches;
    g.updates += updated;
    g.instantiations += !updated;
  }
  g.fn.cuGraphDestroy(graph);
}

void hostWaits(State &s, const char *reason) {
  if (s.graph.requested && s.graph.inStep)
    endCapture(s, reason);
}

} // namespace ga::cuda

using namespace ga::cuda;

extern "C" const char *ga_cuda_graph_status(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  GraphCapture &g = s.graph;
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
