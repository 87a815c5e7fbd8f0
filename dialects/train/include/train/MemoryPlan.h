//===- MemoryPlan.h - The record of train-plan-remat's plan -----*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// train-plan-remat records the plan it chose on the train.step it planned,
// as the discardable attribute `train.memory_plan` (a dictionary). The
// record is declared here once: the pass writes it, the dialect's verifier
// checks it, and `--train-print-summary` and the tools read it, all through
// this struct.
//
//===----------------------------------------------------------------------===//

#ifndef TRAIN_MEMORYPLAN_H
#define TRAIN_MEMORYPLAN_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cstdint>
#include <string>

namespace ga::train {

struct MemoryPlanRecord {
  /// The budget the plan was made for, in bytes.
  int64_t budget = 0;
  /// The plan's peak as the planner measured it, in bytes.
  int64_t peak = 0;
  /// The peak without new checkpoints, in bytes.
  int64_t unplanned = 0;
  /// The checkpointed segments, and the units they cover.
  int64_t checkpoints = 0;
  int64_t units = 0;
  /// The share of the forward work recomputed ("12.5%").
  std::string recomputed;
  /// "auto" (the planner chose the micro-batch count) or "fixed".
  std::string choice;
  /// Host offload's copies' estimated delay, as a share of the forward
  /// work ("3.1%"); empty without host offload.
  std::string copies;

  /// The attribute's name, train.memory_plan (the dialect's
  /// MemoryPlanAttrHelper).
  static llvm::StringRef attrName();
  /// The record as the attribute's dictionary.
  mlir::DictionaryAttr toAttr(mlir::Builder &builder) const;
  /// The record of a dictionary (a missing entry: 0 or "").
  static MemoryPlanRecord fromAttr(mlir::DictionaryAttr plan);
  /// The verifier's check of a dictionary: "" when it is a record, else
  /// the first integer entry it lacks.
  static std::string missingEntry(mlir::DictionaryAttr plan);
};

} // namespace ga::train

#endif // TRAIN_MEMORYPLAN_H
