//===- TrainState.cpp - ga-train's arguments and their first values -------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "TrainState.h"

#include <cmath>

namespace ga {

namespace {
/// SplitMix64: the generator of the initial parameters.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1).
  double uniform() { return ((next() >> 11) + 0.5) * 0x1.0p-53; }
  /// Standard normal (Box-Muller, one value per pair of draws).
  double normal() {
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
};
} // namespace

std::vector<NpyArray> makeArguments(const StepSignature &signature) {
  std::vector<NpyArray> args;
  for (const TensorSpec &spec : signature.inputs) {
    NpyArray array;
    array.dtype = spec.dtype;
    array.shape = spec.shape;
    array.data.assign(spec.numBytes(), 0);
    args.push_back(std::move(array));
  }
  return args;
}

void store(NpyArray &array, int64_t i, double value) {
  switch (array.dtype) {
  case NpyDType::F32:
    reinterpret_cast<float *>(array.data.data())[i] = static_cast<float>(value);
    return;
  case NpyDType::F64:
    reinterpret_cast<double *>(array.data.data())[i] = value;
    return;
  case NpyDType::I32:
    reinterpret_cast<int32_t *>(array.data.data())[i] =
        static_cast<int32_t>(value);
    return;
  case NpyDType::I64:
    reinterpret_cast<int64_t *>(array.data.data())[i] =
        static_cast<int64_t>(value);
    return;
  case NpyDType::Bool:
    array.data[i] = value != 0;
    return;
  }
}

std::string seedParameters(const TrainEntry &entry,
                           const StepSignature &signature, uint64_t seed,
                           std::vector<NpyArray> &args) {
  for (unsigned k = 0; k < entry.args.size(); ++k) {
    if (entry.args[k].kind != TrainArgKind::Param)
      continue;
    NpyArray &array = args[k];
    if (array.dtype != NpyDType::F32 && array.dtype != NpyDType::F64)
      return "parameter #" + std::to_string(entry.args[k].index) +
             " (argument #" + std::to_string(k) + ") is " +
             signature.inputs[k].describe() +
             "; ga-train initializes f32 and f64 parameters";
    const ParamInit &init = entry.inits[entry.args[k].index];
    SplitMix64 rng{seed * 0x100000001B3ull + entry.args[k].index + 1};
    for (int64_t i = 0, n = array.numElements(); i < n; ++i)
      store(array, i,
            init.kind == ParamInit::Zeros  ? 0.0
            : init.kind == ParamInit::Ones ? 1.0
                                           : init.stddev * rng.normal());
  }
  return "";
}

std::string readParameters(const std::string &dir, const TrainEntry &entry,
                           const StepSignature &signature,
                           std::vector<NpyArray> &args) {
  for (unsigned i = 0; i < entry.numParams; ++i) {
    unsigned k = entry.paramArg[i];
    std::string file = dir + "/param" + std::to_string(i) + ".npy";
    std::string error;
    NpyArray array;
    if (!readNpy(file, array, error))
      return "--init: " + error;
    if (std::string mismatch = checkArgument(signature, k, array, file);
        !mismatch.empty())
      return "--init: parameter #" + std::to_string(i) + ": " + mismatch;
    args[k] = std::move(array);
  }
  return "";
}

} // namespace ga
