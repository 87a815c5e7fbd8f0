//===- Driver.cpp - The CUDA driver, the device of this rank, errors ------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The driver (libcuda.so.1) is loaded on first use. Under mpirun, each rank
// takes the device of its local rank (modulo the devices; GA_CUDA_DEVICE
// overrides it). GA_CUDA_SYNC=1 waits after every launch, to locate a
// failing kernel.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include "ga/Runtime/ga_cuda.h"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace ga::cuda {

State &state() {
  static State *s = new State; // Lives until exit: modules unload late.
  return *s;
}

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

/// Read before the MPI run is joined: a step library selects its device
/// when it is loaded. Open MPI, MPICH and Slurm name them.
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

static bool envFlag(const char *name) {
  const char *value = std::getenv(name);
  return value && std::strcmp(value, "0") != 0;
}

/// The device of the local rank (device 0 outside mpirun; GA_CUDA_DEVICE),
/// its primary context current and the step's stream made.
static bool openDevice(State &s) {
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
  return true;
}

bool ensureInitialized(State &s) {
  if (s.initialized) {
    if (s.usable && s.context)
      s.cu.cuCtxSetCurrent(s.context);
    return s.usable;
  }
  s.initialized = true;
  s.syncEveryLaunch = envFlag("GA_CUDA_SYNC");
  s.profile.enabled = envFlag("GA_CUDA_PROFILE");
  if (const char *profile = std::getenv("GA_CUDA_PROFILE"))
    s.profile.allRows = std::string(profile) == "all";
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    recordError(s, std::string("no CUDA device: the CUDA driver "
                               "(libcuda.so.1) cannot be loaded: ") +
                       dlerror());
    return false;
  }
  if (std::string missing = s.cu.bind(lib); !missing.empty()) {
    recordError(s, "the CUDA driver has no " + missing);
    return false;
  }
  configureGraphs(s, lib);
  s.usable = openDevice(s);
  return s.usable;
}

bool copy(State &s, void *dst, const void *src, size_t bytes) {
  if (!bytes)
    return true;
  return check(s,
               s.cu.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                                  reinterpret_cast<CUdeviceptr>(src), bytes,
                                  s.stream),
               "cuMemcpyAsync");
}

CUevent takeEvent(State &s, std::vector<CUevent> &pool) {
  if (!pool.empty()) {
    CUevent event = pool.back();
    pool.pop_back();
    return event;
  }
  CUevent event = nullptr;
  if (!check(s, s.cu.cuEventCreate(&event, /*CU_EVENT_DISABLE_TIMING*/ 2),
             "cuEventCreate"))
    return nullptr;
  return event;
}

bool follow(State &s, CUstream waiter, CUstream stream,
            std::vector<CUevent> &pool) {
  CUevent event = takeEvent(s, pool);
  if (!event)
    return false;
  bool ok =
      check(s, s.cu.cuEventRecord(event, stream), "cuEventRecord") &&
      check(s, s.cu.cuStreamWaitEvent(waiter, event, 0), "cuStreamWaitEvent");
  // An event may be recorded again once a wait for it is enqueued.
  pool.push_back(event);
  return ok;
}

bool synchronize(State &s) {
  return check(s, s.cu.cuStreamSynchronize(s.stream), "cuStreamSynchronize");
}

void afterLaunch(State &s) {
  if (s.syncEveryLaunch)
    synchronize(s);
}

} // namespace ga::cuda

using namespace ga::cuda;

extern "C" {

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

const char *ga_cuda_last_error(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.error.empty() ? nullptr : s.error.c_str();
}

} // extern "C"
