//===- Shards.h - ga-train's moments held in shards -------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// With `shard >= 1` (train-shard-state), each of the r ranks holds c =
// ceil(n / r) elements of every AdamW moment of a parameter of n elements:
// elements [rank * c, (rank + 1) * c) of the flat moment padded with zeros
// to r * c. A checkpoint holds every moment whole, in its parameter's shape,
// so that it resumes on any rank count: the ranks gather their shards to
// write it, and each takes its shard of what it reads.
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

class MomentShards {
public:
  /// The moments of `entry` that the compiled `signature` takes as shards
  /// (a vector whose type is not its parameter's).
  MomentShards(const TrainEntry &entry, const StepSignature &signature);

  bool any() const { return !sharded.empty(); }
  /// `signature` with every sharded moment whole (its parameter's shape):
  /// what a checkpoint holds.
  const StepSignature &wholeSignature() const { return whole; }
  /// `args` with every sharded moment gathered whole from the ranks' shards
  /// (every rank must call it); empty with `error` set on failure.
  std::vector<NpyArray> gather(const std::vector<NpyArray> &args,
                               std::string &error) const;
  /// Replaces every whole moment in `args` (as read from a checkpoint) by
  /// this rank's shard of it.
  void scatter(std::vector<NpyArray> &args) const;

private:
  StepSignature whole;
  std::vector<unsigned> sharded;   ///< Arguments that are shards.
  std::vector<int64_t> shardSizes; ///< Their elements on this rank.
};

} // namespace ga

#endif // GA_TOOLS_GA_TRAIN_SHARDS_H
