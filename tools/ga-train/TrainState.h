//===- TrainState.h - ga-train's arguments and their first values ---------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The arguments of a training step live in one array each, in the types of
// the compiled step's signature; parameters start from a seed (each as its
// train.init says: zeros, ones, or normal draws of ga-train's own
// generator with the given standard deviation), from --init, or from a
// checkpoint (Checkpoint.h); AdamW's moments start at zero.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TOOLS_GA_TRAIN_TRAINSTATE_H
#define GA_TOOLS_GA_TRAIN_TRAINSTATE_H

#include "TrainEntry.h"

#include "ga/Runtime/Npy.h"
#include "ga/Runtime/Signature.h"

#include <string>
#include <vector>

namespace ga {

/// One zero-filled array per argument of `signature`.
std::vector<NpyArray> makeArguments(const StepSignature &signature);

/// Stores `value` at flat index `i` of `array`, converted to its dtype.
void store(NpyArray &array, int64_t i, double value);

/// Seeds the parameters among `args`: parameter p's draws come from
/// SplitMix64 seeded with `seed` and p, so that they do not depend on the
/// other parameters. Returns "" or the reason (a parameter that is not
/// f32 or f64).
std::string seedParameters(const TrainEntry &entry,
                           const StepSignature &signature, uint64_t seed,
                           std::vector<NpyArray> &args);

/// Reads parameter i from DIR/param<i>.npy, checked against its type.
/// Returns "" or the reason.
std::string readParameters(const std::string &dir, const TrainEntry &entry,
                           const StepSignature &signature,
                           std::vector<NpyArray> &args);

} // namespace ga

#endif // GA_TOOLS_GA_TRAIN_TRAINSTATE_H
