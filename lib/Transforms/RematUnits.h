//===- RematUnits.h - A step's forward pass as a chain of units -*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// What train-plan-remat reads from and writes into the IR: the forward part
// of a step body cut into units where a single activation is alive (a
// transformer's residual stream between and inside blocks), each unit's
// work and bytes for the chain model (ga/Remat/Segments.h), and a plan's
// checkpointed segments wrapped in train.checkpoint regions.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_TRANSFORMS_REMATUNITS_H
#define GA_LIB_TRANSFORMS_REMATUNITS_H

#include "ga/Remat/Segments.h"
#include "train/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

namespace ga::remat_units {

/// Ops [first, last] of a step body, by position, and what the chain model
/// knows of them.
struct Unit : ga::remat::ChainUnit {
  unsigned first = 0, last = 0;
  /// The activation alive after the unit (its output).
  mlir::Value boundary;
  /// The values of savedBytes, each buffer once.
  llvm::SmallVector<mlir::Value> saved;
};

/// Cuts the forward part of `step`'s body into units: a unit ends after an
/// operation after which exactly one activation (a value that depends on
/// the batch) is still read later. The operations after the last cut (the
/// loss) form no unit.
llvm::SmallVector<Unit> findUnits(ga::train::StepOp step);

/// Checkpoints the checkpointed `segments` of the `index`-th train.step of
/// `module` (a copy of the module `units` were found in).
void applyPlan(mlir::ModuleOp module, unsigned index,
               llvm::ArrayRef<Unit> units,
               const ga::remat::SegmentPlan &segments);

/// The chain model of `units`, the loss's values `tailBytes`.
ga::remat::SegmentChain chainOf(llvm::ArrayRef<Unit> units, int64_t tailBytes);

/// The segments of `length` units (fewer at the end of a run) over the runs
/// of units that may be checkpointed (a unit marked "save" ends a run), the
/// units between them saved.
ga::remat::SegmentPlan segmentsOf(llvm::ArrayRef<Unit> units, unsigned length);

/// The bytes the runtime allocates for a tensor of `type` (0 if dynamic).
int64_t tensorBytes(mlir::Type type);

/// The bytes of a function's arguments (a budget covers them).
int64_t argumentBytes(mlir::func::FuncOp function);

/// The bytes of the values the ops after the last unit define (the loss).
int64_t tailBytesOf(ga::train::StepOp step, llvm::ArrayRef<Unit> units);

/// The forward work of all `units`.
double totalCostOf(llvm::ArrayRef<Unit> units);

/// The elements of a step's parameters.
int64_t parameterElements(ga::train::StepOp step);

} // namespace ga::remat_units

#endif // GA_LIB_TRANSFORMS_REMATUNITS_H
