//===- Shards.h - ga-train's state held in shards ---------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// With `shard >= 1` (train-shard-state), each of the r ranks holds c =
// ceil(n / r) elements of every AdamW moment of a parameter of n elements
// (and with `shard = 3` of the parameter itself): elements [rank * c,
// (rank + 1) * c) of the flat tensor padded with zeros to r * c. A
// checkpoint holds every tensor whole, in its parameter's shape, so that it
// resumes on any rank count: the ranks gather their shards to write it, and
// each takes its shard of what it reads (or of the parameters it seeds).
//
//===----------------------------------------------------------------------===//

#ifndef GA_TOOLS_GA_TRAIN_SHARDS_H
#define GA_TOOLS_GA_TRAIN_SHARDS_H

#include "TrainEntry.h"

#include "ga/Runtime/Npy.h"
#include "ga/Runtime/Signature.h"

#include <string>
#include <vector>

namespace ga {

class StateShards {
public:
  /// The parameters and moments of `entry` that the compiled `signature`
  /// takes as shards: a vector whose shape is not the source's
  /// (`sourceShapes`, one per argument of the source function).
  StateShards(const TrainEntry &entry, const StepSignature &signature,
              const std::vector<std::vector<int64_t>> &sourceShapes);

  bool any() const { return !sharded.empty(); }
  /// Whether the parameters themselves are shards (stage 3).
  bool parameters() const { return shardedParams; }
  /// `signature` with every sharded tensor whole (its parameter's shape):
  /// what a checkpoint holds and what parameters are seeded in.
  const StepSignature &wholeSignature() const { return whole; }
  /// `args` with every sharded tensor gathered whole from the ranks' shards
  /// (every rank must call it); empty with `error` set on failure.
  std::vector<NpyArray> gather(const std::vector<NpyArray> &args,
                               std::string &error) const;
  /// Replaces every whole tensor in `args` (as read from a checkpoint or
  /// seeded) by this rank's shard of it.
  void scatter(std::vector<NpyArray> &args) const;
  /// The arguments that are shards.
  const std::vector<unsigned> &shardedArguments() const { return sharded; }
  /// Waits for every rank (every rank must call it).
  static void barrier();

private:
  StepSignature whole;
  std::vector<unsigned> sharded;   ///< Arguments that are shards.
  std::vector<int64_t> shardSizes; ///< Their elements on this rank.
  bool shardedParams = false;
};

} // namespace ga

#endif // GA_TOOLS_GA_TRAIN_SHARDS_H
