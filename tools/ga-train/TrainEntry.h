//===- TrainEntry.h - The roles of a training step's arguments --*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga-train runs a whole training step (a train.step, then an optimizer
// update per parameter) step after step. What it feeds to each argument and
// where each result goes is read from the IR, not from names or order: the
// train.step's parameters and batch operands, the optimizers' moments,
// learning rate and step number, and the results that are their new values,
// the loss, the gradient norm and the valid-token count.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TOOLS_GA_TRAIN_TRAINENTRY_H
#define GA_TOOLS_GA_TRAIN_TRAINENTRY_H

#include "train/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace ga {

/// What ga-train feeds to an argument of the training step.
enum class TrainArgKind {
  Param,        ///< A parameter of the train.step (state, fed back).
  Batch,        ///< A batch operand of the train.step (from the dataset).
  FirstMoment,  ///< The first AdamW moment of a parameter (state).
  SecondMoment, ///< The second AdamW moment of a parameter (state).
  LearningRate, ///< The learning rate of an optimizer (0-d).
  StepNumber,   ///< The step number of an optimizer (0-d, 1 first).
};

/// How a parameter is initialized: `train.init` on its argument.
struct ParamInit {
  enum Kind { Zeros, Ones, Normal } kind = Normal;
  double stddev = 0.02;
};

struct TrainArg {
  TrainArgKind kind;
  /// The parameter (Param and moments) or batch operand (Batch) index.
  unsigned index = 0;
};

/// Where a result of the training step goes.
enum class TrainResultKind {
  NewParam,
  NewFirstMoment,
  NewSecondMoment,
  Loss,
  GradNorm,
  Tokens,
  Other,
};

struct TrainResult {
  TrainResultKind kind;
  unsigned index = 0; ///< The parameter of the new value.
};

/// The roles of the training step `@name`'s arguments and results.
struct TrainEntry {
  llvm::SmallVector<TrainArg> args;
  llvm::SmallVector<TrainResult> results;
  llvm::SmallVector<ParamInit> inits; ///< One per parameter.
  /// One per parameter: `train.name` on its argument, or empty.
  llvm::SmallVector<std::string> names;
  unsigned numParams = 0;
  unsigned numBatch = 0;
  bool adamw = false;
  /// The argument of parameter i and of batch operand j.
  llvm::SmallVector<unsigned> paramArg, batchArg;
  train::StepOp step;
  train::ClipByGlobalNormOp clip;

  /// "parameter", "batch", "first moment", ... for messages.
  static const char *name(TrainArgKind kind);
};

/// The roles of the arguments and results of `function`, which has been
/// verified; a located error (and failure) when it is not a training step
/// ga-train can run.
mlir::FailureOr<TrainEntry> analyzeTrainEntry(mlir::func::FuncOp function);

} // namespace ga

#endif // GA_TOOLS_GA_TRAIN_TRAINENTRY_H
