//===- ga-exec.cpp - Run a compiled step library --------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The MLIR-free runner: loads a step library that ga-compile built, checks
// the .npy inputs against the signature recorded in it, runs it and prints
// and writes what ga-run prints and writes. Depends on libga_runtime, libc,
// libstdc++ and (through the runtime, optionally) MPI only.
//
//===----------------------------------------------------------------------===//

#include "../common/Peaks.h"

#include "ga/Runtime/Npy.h"
#include "ga/Runtime/Runner.h"
#include "ga/Runtime/Signature.h"
#include "ga/Runtime/ga_step.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <optional>
#include <string>
#include <vector>

namespace {

const char *kUsage =
    R"(ga-exec: run a step library compiled by ga-compile

  ga-exec LIBSTEP.so ARG0.npy ARG1.npy ... [--out-dir DIR] [--repeat N]
          [--num-threads N] [--fail-on-nonfinite]
  ga-exec LIBSTEP.so --signature

Inputs: one .npy file per argument of the step, in order, each of exactly
the shape and element type of the library's signature (--signature prints
it): float32, float64, int32 or int64 (little-endian), or bool (an i1
tensor, one byte of 0 or 1 per element); C order.

Outputs: with --out-dir DIR, result i is written to DIR/result<i>.npy.

A library compiled for r data-parallel ranks runs under
`mpirun -np r ga-exec ...`: every rank reads the same .npy files; rank 0
prints and writes the results.

Threads: --num-threads N, else OMP_NUM_THREADS, else all cores (divided
among the ranks); results are bitwise the same for any count.

A library compiled with --target=cuda runs on the CUDA device (device 0,
or GA_CUDA_DEVICE): the inputs are copied to it and the results back, and
both copies are in the run time; without a CUDA driver or device, ga-exec
says so and exits with status 1.

Printed, as ga-run prints them: the run time (mean and minimum of
--repeat N runs), the device of a CUDA library, the peak bytes of the buffers the step allocates
(step_peak_bytes; the inputs and the output buffers are the caller's), what
memory-budget bounds (budget_peak_bytes: those buffers plus the inputs; on
a CUDA device, the device's high-water mark), the
loss and the global gradient norm (float64). Errors
(a wrong number of inputs, a wrong shape or dtype, a malformed .npy file, an
invalid label, a wrong world size) name what is wrong and exit with status
1, writing no result. A NaN or infinite loss or gradient norm is a warning
(an error with --fail-on-nonfinite).
)";

using Clock = std::chrono::steady_clock;

int fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "ga-exec: error: %s\n", message.c_str());
  return 1;
}

/// A positive integer option value, or -1.
long parsePositive(const std::string &text) {
  if (text.empty() || text.size() > 9)
    return -1;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

/// One run of a step library, phase by phase (see main); each phase
/// returns 0 to go on, or the exit status to stop with (-1: stop with 0).
class Exec {
public:
  Exec(int argc, char **argv) : argc(argc), argv(argv) {}
  ~Exec() {
    if (joined)
      ga_collectives_stop();
  }

  int parseArguments();
  int loadLibrary();
  int findDevice();
  int joinRun();
  int readInputs();
  int run();
  int report();

private:
  int argc;
  char **argv;
  // The command line.
  std::string library, outDir;
  std::vector<std::string> inputs;
  long repeat = 1, threads = 0;
  bool failOnNonFinite = false, printSignature = false;
  // The library.
  using RunFn = int32_t (*)(const void *const *, void *const *, ga_status *);
  using DeviceNameFn = const char *(*)(const char **);
  using MemoryStatsFn = void (*)(ga_memory *);
  using TextFn = const char *(*)();
  void *handle = nullptr;
  RunFn runFn = nullptr;
  ga::StepSignature signature;
  // A step compiled for CUDA (ga-compile --target=cuda) links the CUDA
  // runtime, whose device and memory figures are printed instead.
  MemoryStatsFn deviceMemoryFn = nullptr, deviceHighWaterFn = nullptr;
  TextFn collectivesFn = nullptr, graphFn = nullptr;
  std::string deviceName;
  // The run.
  bool joined = false, reporter = true;
  std::vector<ga::NpyArray> arrays, outputs;
  std::vector<const void *> inputPointers;
  std::vector<void *> outputPointers;
  double totalMs = 0, minMs = 0;
};

int Exec::parseArguments() {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string &flag, std::string &out) {
      if (arg == flag) {
        if (i + 1 >= argc)
          return false;
        out = argv[++i];
        return true;
      }
      if (arg.rfind(flag + "=", 0) == 0) {
        out = arg.substr(flag.size() + 1);
        return true;
      }
      return false;
    };
    std::string text;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return -1;
    } else if (arg == "--fail-on-nonfinite") {
      failOnNonFinite = true;
    } else if (arg == "--signature") {
      printSignature = true;
    } else if (value("--out-dir", outDir)) {
    } else if (value("--repeat", text)) {
      repeat = parsePositive(text);
      if (repeat < 1)
        return fail("--repeat must be at least 1, got '" + text + "'");
    } else if (value("--num-threads", text)) {
      threads = parsePositive(text);
      if (threads < 1)
        return fail("--num-threads must be at least 1, got '" + text + "'");
    } else if (arg.size() > 1 && arg[0] == '-') {
      return fail("unknown option '" + arg + "' (see ga-exec --help)");
    } else if (library.empty()) {
      library = arg;
    } else {
      inputs.push_back(arg);
    }
  }
  if (library.empty())
    return fail("no step library given (see ga-exec --help)");
  return 0;
}

/// The library and its signature (--signature prints it and stops).
int Exec::loadLibrary() {
  // A path without '/' would be searched for by dlopen.
  std::string path =
      library.find('/') == std::string::npos ? "./" + library : library;
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return fail("cannot load '" + library + "': " + dlerror());
  auto signatureFn =
      reinterpret_cast<const char *(*)()>(dlsym(handle, "ga_step_signature"));
  runFn = reinterpret_cast<RunFn>(dlsym(handle, "ga_step_run"));
  if (!signatureFn || !runFn)
    return fail("'" + library +
                "' is not a step library (it exports no ga_step_signature "
                "and ga_step_run): build one with ga-compile");
  const char *signatureText = signatureFn();
  std::string error;
  if (!ga::parseSignature(signatureText ? signatureText : "", signature, error))
    return fail("'" + library + "': " + error);
  if (printSignature) {
    std::fputs(signatureText, stdout);
    return -1;
  }
  return 0;
}

int Exec::findDevice() {
  auto deviceNameFn =
      reinterpret_cast<DeviceNameFn>(dlsym(handle, "ga_cuda_device_name"));
  deviceMemoryFn =
      reinterpret_cast<MemoryStatsFn>(dlsym(handle, "ga_cuda_memory_stats"));
  deviceHighWaterFn = reinterpret_cast<MemoryStatsFn>(
      dlsym(handle, "ga_cuda_device_memory_stats"));
  collectivesFn =
      reinterpret_cast<TextFn>(dlsym(handle, "ga_cuda_collectives"));
  graphFn = reinterpret_cast<TextFn>(dlsym(handle, "ga_cuda_graph_status"));
  if (!deviceNameFn)
    return 0;
  const char *reason = nullptr;
  const char *device = deviceNameFn(&reason);
  if (!device)
    return fail("'" + library + "' runs on a CUDA device: " +
                (reason ? reason : "no CUDA device"));
  deviceName = device;
  return 0;
}

int Exec::joinRun() {
  ga_status status;
  joined = true;
  if (ga_collectives_start(signature.ranks, signature.entry.c_str(), "ga-exec",
                           &status) != GA_OK)
    return ga_world_rank() != 0 ? 1 : fail(status.message);
  reporter = ga_world_rank() == 0;
  return 0;
}

int Exec::readInputs() {
  if (std::string e = ga::readArguments(signature, inputs, arrays); !e.empty())
    return fail(e);
  for (const ga::NpyArray &array : arrays)
    inputPointers.push_back(array.data.data());
  outputs = ga::makeResultBuffers(signature, outputPointers);
  ga::prepareProcess(threads, signature.ranks);
  return 0;
}

int Exec::run() {
  ga_status status;
  for (long r = 0; r < repeat; ++r) {
    auto start = Clock::now();
    int32_t rc = runFn(inputPointers.data(), outputPointers.data(), &status);
    double ms =
        std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (rc != GA_OK)
      return reporter ? fail(ga::stepFailure(signature, status, inputs)) : 1;
    totalMs += ms;
    minMs = r ? std::min(minMs, ms) : ms;
  }
  return 0;
}

/// Rank 0 prints the run and writes the results.
int Exec::report() {
  if (!reporter)
    return 0;
  const std::string &name = signature.entry;
  std::printf("ga-exec: @%s from %s\n", name.c_str(), library.c_str());
  if (signature.ranks > 1)
    std::printf("ranks: %lld (data-parallel, MPI)\n",
                static_cast<long long>(signature.ranks));
  if (!deviceName.empty())
    std::printf("device: %s (CUDA)\n", deviceName.c_str());
  if (const char *path = collectivesFn ? collectivesFn() : nullptr)
    std::printf("collectives: %s\n", path);
  if (const char *graph = graphFn ? graphFn() : nullptr)
    std::printf("cuda graph: %s\n", graph);
  std::printf("run_ms: %.3f (mean of %ld, min %.3f)\n", totalMs / repeat,
              repeat, minMs);
  ga_memory memory;
  std::optional<ga_memory> device;
  if (deviceMemoryFn) {
    deviceMemoryFn(&memory);
    if (deviceHighWaterFn) {
      device.emplace();
      deviceHighWaterFn(&*device);
    }
  } else {
    ga_memory_stats(&memory);
  }
  int64_t argumentBytes = ga::tool::argumentBytes(arrays);
  std::fputs(ga::tool::peakLines(memory, argumentBytes,
                                 deviceMemoryFn != nullptr, device)
                 .c_str(),
             stdout);
  ga::StepSummary summary = ga::summarize(signature, outputs);
  std::fputs(summary.text.c_str(), stdout);
  std::fflush(stdout);
  for (const std::string &what : summary.nonFinite) {
    if (failOnNonFinite)
      return fail("@" + name + ": " + what + "; no result written");
    std::fprintf(stderr, "ga-exec: warning: @%s: %s\n", name.c_str(),
                 what.c_str());
  }
  if (!outDir.empty()) {
    std::string error;
    if (!ga::writeResults(outDir, outputs, error))
      return fail(error);
    std::printf("wrote %zu result(s) to %s\n", outputs.size(), outDir.c_str());
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Exec exec(argc, argv);
  for (int (Exec::*phase)() :
       {&Exec::parseArguments, &Exec::loadLibrary, &Exec::findDevice,
        &Exec::joinRun, &Exec::readInputs, &Exec::run, &Exec::report})
    if (int rc = (exec.*phase)())
      return rc < 0 ? 0 : rc;
  return 0;
}
