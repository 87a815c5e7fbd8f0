//===- Checkpoint.h - ga-train's checkpoints ------------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// A checkpoint is DIR/step-NNNNNNNN/: one .npy per parameter and AdamW
// moment (the step's state arguments) and manifest.json (format, entry,
// source, step, seed, and per file its argument, role, parameter index,
// type and, for an imported model, the parameter's name); DIR/latest names
// the newest. Both are written atomically: a directory written under a
// temporary name and renamed, every file flushed to the disk, so that a
// crash leaves the previous checkpoint whole.
//
// A sharded checkpoint (ga-train --checkpoint-shards) holds each rank's
// shard of a sharded tensor as the rank wrote it, in argK.rankI.npy (the
// rank's c = ceil(n / R) elements of the flat tensor padded to R * c), the
// manifest listing the ranks' files in order under "shards" with the
// whole tensor's type; every rank writes its own files into the same
// directory (the ranks share its file system). Reading one assembles each
// tensor whole, so it resumes on any rank count and stage.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TOOLS_GA_TRAIN_CHECKPOINT_H
#define GA_TOOLS_GA_TRAIN_CHECKPOINT_H

#include "TrainEntry.h"

#include "ga/Runtime/Npy.h"
#include "ga/Runtime/Signature.h"

#include <functional>
#include <string>
#include <vector>

namespace ga {

/// What a checkpoint records besides the state.
struct CheckpointInfo {
  /// The model's source file, and the seed of its initialization.
  std::string source;
  uint64_t seed = 0;
  /// A test hook: exit abruptly in the middle of writing the checkpoint of
  /// this step, after its first file (what a crash would leave); 0: never.
  int64_t crashAtStep = 0;
};

/// How the ranks write a sharded checkpoint.
struct ShardedWrite {
  int64_t rank = 0, ranks = 1;
  /// The arguments that are shards on every rank.
  std::vector<unsigned> sharded;
  /// The tensors whole (types in the manifest; other state as it is).
  const StepSignature *whole = nullptr;
  /// Waits for every rank (a collective every rank calls).
  std::function<void()> barrier;
};

/// Writes the state arguments among `args` as the checkpoint of step
/// `step` in `dir`, then points DIR/latest at it. Returns "" or the reason.
/// With `sharded`, every rank calls it and writes its shards; rank 0
/// writes the rest and the manifest.
std::string writeCheckpoint(const std::string &dir, int64_t step,
                            const TrainEntry &entry,
                            const StepSignature &signature,
                            const std::vector<NpyArray> &args,
                            const CheckpointInfo &info,
                            const ShardedWrite *sharded = nullptr);

/// Reads the checkpoint `where` (a checkpoint directory, whose latest is
/// read, or one step directory) into the state arguments among `args`,
/// checking that it is one of this model; its step in `step`. Returns ""
/// or the reason.
std::string readCheckpoint(const std::string &where, const TrainEntry &entry,
                           const StepSignature &signature,
                           std::vector<NpyArray> &args, int64_t &step);

} // namespace ga

#endif // GA_TOOLS_GA_TRAIN_CHECKPOINT_H
