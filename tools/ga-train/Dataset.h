//===- Dataset.h - ga-train's token dataset -------------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// A dataset is a directory with dataset.json, {"arrays": [FILE, ...]}, one
// .npy file per batch operand of the train.step, in order; each holds rows
// of that operand (its shape without the batch dimension, its dtype). Step
// s (1 first) takes the B rows (s-1)*B, ..., s*B-1, modulo the row count.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TOOLS_GA_TRAIN_DATASET_H
#define GA_TOOLS_GA_TRAIN_DATASET_H

#include "TrainEntry.h"

#include "ga/Runtime/Npy.h"
#include "ga/Runtime/Signature.h"

#include <string>
#include <vector>

namespace ga {

/// One array of rows per batch operand.
struct Dataset {
  std::vector<NpyArray> arrays;
  std::vector<std::string> files;
  int64_t rows = 0;
};

/// Reads the dataset in `dir` for `entry`'s batch operands (their types in
/// `signature`). Returns "" or the reason it cannot be used.
std::string loadDataset(const std::string &dir, const TrainEntry &entry,
                        const StepSignature &signature, Dataset &out);

/// Copies the global batch of step `step` (1 first) into the batch
/// arguments among `args`.
void fillBatch(const Dataset &data, const TrainEntry &entry, int64_t step,
               std::vector<NpyArray> &args);

} // namespace ga

#endif // GA_TOOLS_GA_TRAIN_DATASET_H
