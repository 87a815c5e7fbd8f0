//===- PrintSummary.cpp - A readable summary of train.step ops ------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"
#include "ga/Utils/Location.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "train/MemoryPlan.h"
#include "train/TrainOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

namespace ga {
#define GEN_PASS_DEF_TRAINPRINTSUMMARYPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::train;

namespace {

int64_t numElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? tensor.getNumElements() : -1;
}

/// Counts the operations of `block` by name, looking into checkpoint regions
/// (they are part of the step's computation) but not into the payload regions
/// of structured ops such as linalg.generic.
void countOps(Block &block, llvm::StringMap<unsigned> &counts) {
  for (Operation &op : block.without_terminator()) {
    ++counts[op.getName().getStringRef()];
    if (auto checkpoint = dyn_cast<CheckpointOp>(op))
      countOps(checkpoint.getBody().front(), counts);
  }
}

void printStep(llvm::raw_ostream &os, StepOp step) {
  os << "train.step at ";
  ga::printLocation(os, step.getLoc());
  if (auto func = step->getParentOfType<FunctionOpInterface>())
    os << " (in @" << func.getName() << ")";
  os << "\n";

  std::optional<int64_t> batchSize = step.getBatchSize();
  int64_t k = step.getMicrobatches(), r = step.getDataParallel();
  os << "  schedule:   microbatches = " << k << ", data_parallel = " << r;
  if (batchSize)
    os << " (global batch " << *batchSize << ", " << *batchSize / (k * r)
       << " examples per micro-batch and rank)";
  os << "\n";

  int64_t totalValues = 0;
  bool allStatic = true;
  for (Type type : step.getParams().getTypes()) {
    int64_t n = numElements(type);
    allStatic &= n >= 0;
    totalValues += std::max<int64_t>(n, 0);
  }
  os << "  parameters: " << step.getParams().size() << " tensor(s), ";
  if (allStatic)
    os << totalValues << " trainable values\n";
  else
    os << "dynamic size\n";
  for (auto [i, type] : llvm::enumerate(step.getParams().getTypes()))
    os << "    #" << i << "  " << type << "\n";

  os << "  batch:      " << step.getBatch().size() << " operand(s)\n";
  for (auto [i, type] : llvm::enumerate(step.getBatch().getTypes()))
    os << "    #" << i << "  " << type << "\n";

  step.getBody().walk([&](CrossEntropyOp ce) {
    os << "  loss:       train.cross_entropy "
       << stringifyReduction(ce.getReduction())
       << " (ignore_index = " << static_cast<int64_t>(ce.getIgnoreIndex())
       << ") over " << ce.getLogits().getType() << " at ";
    ga::printLocation(os, ce.getLoc());
    os << "\n";
  });
  if (!step.getAux().empty()) {
    os << "  auxiliary:  ";
    llvm::interleaveComma(step.getAux().getTypes(), os);
    os << "\n";
  }

  llvm::StringMap<unsigned> counts;
  countOps(step.getBody().front(), counts);
  SmallVector<std::pair<StringRef, unsigned>> sorted;
  unsigned total = 0;
  for (auto &entry : counts) {
    sorted.emplace_back(entry.getKey(), entry.getValue());
    total += entry.getValue();
  }
  llvm::sort(sorted, [](auto &a, auto &b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  os << "  body:       " << total << " operations: ";
  llvm::interleaveComma(sorted, os, [&](auto entry) {
    os << entry.second << " " << entry.first;
  });
  os << "\n";
  unsigned checkpoints = 0;
  step.getBody().walk([&](CheckpointOp) { ++checkpoints; });
  if (checkpoints)
    os << "  remat:      " << checkpoints << " train.checkpoint region(s)\n";
  if (auto attr =
          step->getAttrOfType<DictionaryAttr>(MemoryPlanRecord::attrName())) {
    MemoryPlanRecord plan = MemoryPlanRecord::fromAttr(attr);
    os << "  memory:     budget " << plan.budget << " bytes, planned peak "
       << plan.peak << " bytes (without new checkpoints " << plan.unplanned
       << "), " << plan.checkpoints << " checkpoint(s) chosen, "
       << (plan.recomputed.empty() ? "?" : plan.recomputed)
       << " of the forward work recomputed, micro-batches "
       << (plan.choice == "auto" ? "chosen by train-plan-remat" : "as written")
       << "\n";
  }
}

struct TrainPrintSummaryPass
    : ga::impl::TrainPrintSummaryPassBase<TrainPrintSummaryPass> {
  using Base::Base;

  void runOnOperation() override {
    unsigned numSteps = 0;
    getOperation()->walk([&](StepOp step) {
      if (numSteps++)
        llvm::outs() << "\n";
      printStep(llvm::outs(), step);
    });
    if (!numSteps)
      llvm::outs() << "no train.step found\n";
    llvm::outs().flush();
    markAllAnalysesPreserved();
  }
};

} // namespace
