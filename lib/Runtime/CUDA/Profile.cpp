//===- Profile.cpp - Kernels and GEMMs timed on the device ----------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// GA_CUDA_PROFILE=1 times every kernel launch and GEMM with a pair of CUDA
// events and prints the most expensive at exit (GA_CUDA_PROFILE=all: every
// one, for scripts/ga_scripts/kernel_bandwidth.py), per step, the first step
// left out (it loads cuBLAS's kernels and warms the caches). Labels name
// the kernel and the module it came from (by load order), or the GEMM's
// call and shape.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace ga::cuda {

static void printProfile() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Profile &p = s.profile;
  std::vector<std::pair<std::string, ProfileRow>> rows(p.rows.begin(),
                                                       p.rows.end());
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.ms > b.second.ms;
  });
  double total = 0;
  for (auto &row : rows)
    total += row.second.ms;
  std::fprintf(stderr,
               "ga-cuda-profile: %ld step(s) after the first, %.3f ms of "
               "kernels and GEMMs per step, %zu distinct\n",
               p.steps, p.steps ? total / p.steps : 0.0, rows.size());
  std::fprintf(stderr, "ga-cuda-profile: %8s %6s %10s  %s\n", "ms/step",
               "share", "calls/step", "what (module: load order)");
  long steps = std::max<long>(1, p.steps);
  for (size_t i = 0; i < rows.size() && (p.allRows || i < 25); ++i)
    std::fprintf(stderr, "ga-cuda-profile: %8.3f %5.1f%% %10.1f  %s\n",
                 rows[i].second.ms / steps,
                 total ? 100 * rows[i].second.ms / total : 0.0,
                 double(rows[i].second.calls) / steps, rows[i].first.c_str());
}

long profileBegin(State &s, const std::string &label) {
  if (!s.profile.enabled)
    return -1;
  static bool registered = (std::atexit(printProfile), true);
  (void)registered;
  Timed t{label, nullptr, nullptr};
  s.cu.cuEventCreate(&t.start, 0);
  s.cu.cuEventCreate(&t.end, 0);
  s.cu.cuEventRecord(t.start, s.stream);
  s.profile.pending.push_back(t);
  return static_cast<long>(s.profile.pending.size()) - 1;
}

void profileEnd(State &s, long index) {
  if (index >= 0)
    s.cu.cuEventRecord(s.profile.pending[index].end, s.stream);
}

void profileCollect(State &s) {
  Profile &p = s.profile;
  if (!p.enabled)
    return;
  bool warmUp = !p.warmedUp;
  p.warmedUp = true;
  for (Timed &t : p.pending) {
    float ms = 0;
    if (!warmUp && s.cu.cuEventElapsedTime(&ms, t.start, t.end) == 0) {
      ProfileRow &row = p.rows[t.label];
      row.ms += ms;
      ++row.calls;
    }
    s.cu.cuEventDestroy_v2(t.start);
    s.cu.cuEventDestroy_v2(t.end);
  }
  p.pending.clear();
  if (!warmUp)
    ++p.steps;
}

} // namespace ga::cuda
