//===- TrainLog.h - ga-train's log of steps -------------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// One row per step: CSV (step,loss,grad_norm,tokens,lr,step_ms) or, for a
// file ending in .jsonl, JSON lines; an absent gradient norm or token count
// is an empty field (null). A resumed run keeps the rows up to its
// checkpoint (a run that stopped after it may have logged later steps,
// which run again) and appends.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TOOLS_GA_TRAIN_TRAINLOG_H
#define GA_TOOLS_GA_TRAIN_TRAINLOG_H

#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>

namespace ga {

class TrainLog {
public:
  /// Opens `file`; with `resumed`, keeps its rows of steps before
  /// `firstStep`. Returns "" or the reason.
  std::string open(const std::string &file, bool resumed, int64_t firstStep);

  /// Appends the row of one step (`tokens` < 0: none) and flushes it.
  void row(int64_t step, double loss, std::optional<double> gradNorm,
           int64_t tokens, double lr, double ms);

  explicit operator bool() const { return os != nullptr; }

private:
  std::unique_ptr<llvm::raw_fd_ostream> os;
  bool jsonl = false;
};

} // namespace ga

#endif // GA_TOOLS_GA_TRAIN_TRAINLOG_H
