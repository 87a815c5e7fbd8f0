//===- MemoryPlan.cpp - The record of train-plan-remat's plan -------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "train/MemoryPlan.h"
#include "train/TrainDialect.h"

using namespace mlir;
using ga::train::MemoryPlanRecord;

namespace {
// The entries of the dictionary, each spelled here only.
constexpr llvm::StringLiteral kBudget = "budget";
constexpr llvm::StringLiteral kPeak = "peak";
constexpr llvm::StringLiteral kUnplanned = "unplanned";
constexpr llvm::StringLiteral kCheckpoints = "checkpoints";
constexpr llvm::StringLiteral kUnits = "units";
constexpr llvm::StringLiteral kRecomputed = "recomputed";
constexpr llvm::StringLiteral kChoice = "choice";
constexpr llvm::StringLiteral kCopies = "copies";
} // namespace

StringRef MemoryPlanRecord::attrName() {
  return ga::train::TrainDialect::MemoryPlanAttrHelper::getNameStr();
}

DictionaryAttr MemoryPlanRecord::toAttr(Builder &builder) const {
  SmallVector<NamedAttribute> entries = {
      builder.getNamedAttr(kBudget, builder.getI64IntegerAttr(budget)),
      builder.getNamedAttr(kPeak, builder.getI64IntegerAttr(peak)),
      builder.getNamedAttr(kUnplanned, builder.getI64IntegerAttr(unplanned)),
      builder.getNamedAttr(kCheckpoints,
                           builder.getI64IntegerAttr(checkpoints)),
      builder.getNamedAttr(kUnits, builder.getI64IntegerAttr(units)),
      builder.getNamedAttr(kRecomputed, builder.getStringAttr(recomputed)),
      builder.getNamedAttr(kChoice, builder.getStringAttr(choice))};
  if (!copies.empty())
    entries.push_back(
        builder.getNamedAttr(kCopies, builder.getStringAttr(copies)));
  return builder.getDictionaryAttr(entries);
}

MemoryPlanRecord MemoryPlanRecord::fromAttr(DictionaryAttr plan) {
  auto integer = [&](StringRef key) -> int64_t {
    auto value = dyn_cast_or_null<IntegerAttr>(plan.get(key));
    return value ? value.getInt() : 0;
  };
  auto text = [&](StringRef key) -> std::string {
    auto value = dyn_cast_or_null<StringAttr>(plan.get(key));
    return value ? value.str() : "";
  };
  MemoryPlanRecord record;
  record.budget = integer(kBudget);
  record.peak = integer(kPeak);
  record.unplanned = integer(kUnplanned);
  record.checkpoints = integer(kCheckpoints);
  record.units = integer(kUnits);
  record.recomputed = text(kRecomputed);
  record.choice = text(kChoice);
  record.copies = text(kCopies);
  return record;
}

std::string MemoryPlanRecord::missingEntry(DictionaryAttr plan) {
  for (StringRef key : {kBudget, kPeak, kUnplanned, kCheckpoints})
    if (!isa_and_nonnull<IntegerAttr>(plan.get(key)))
      return key.str();
  return "";
}
