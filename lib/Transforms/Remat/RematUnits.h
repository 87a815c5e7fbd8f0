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

#include "ga/Analysis/BufferMemory.h"
#include "ga/Remat/Segments.h"
#include "train/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
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

/// Marks the operations of each of `units` (nested ones included) in the
/// `index`-th train.step of `module` (a copy of the module `units` were
/// found in) with their unit in their location, and those of the loss
/// after them, so that a UnitTrace can tell them apart once compiled.
void tagUnits(mlir::ModuleOp module, unsigned index,
              llvm::ArrayRef<Unit> units);

/// Follows the simulation of a step compiled from a module marked by
/// tagUnits (its first micro-batch: the units forward, the loss, the units
/// backward) and measures the chain model's bytes of each unit: what the
/// buffers its operations allocate hold when the loss starts (what it
/// keeps), the most bytes held during its forward operations, during its
/// adjoints (which carry their forward operation's location), and during
/// the loss.
class UnitTrace : public ga::BufferMemoryObserver {
public:
  explicit UnitTrace(unsigned numUnits);
  void
  beforeOperation(mlir::Operation &op, int64_t heldBytes,
                  llvm::function_ref<int64_t(mlir::Value)> bufferOf) override;
  void allocated(mlir::Operation *alloc, int64_t bytes, int64_t id) override;
  void freed(int64_t id) override;

  /// Writes the measured bytes into `units` (savedBytes, transientBytes,
  /// adjointBytes, liftBytes) and `tailBytes`, each relative to what the units
  /// before it keep; false (nothing written) when the simulation never reached
  /// the loss after the units.
  bool calibrate(llvm::MutableArrayRef<Unit> units, int64_t &tailBytes) const;

  /// What each unit's buffers held when the loss started.
  llvm::ArrayRef<int64_t> keptBytes() const { return kept; }

private:
  /// The unit of `op`'s location (the latest among fused ones), the number
  /// of units for the loss, -1 for none.
  int tagOf(mlir::Operation *op);

  unsigned numUnits;
  enum class Phase { Forward, Loss, Backward, Done } phase = Phase::Forward;
  /// Bytes held by each unit's buffers (the loss's last), now.
  llvm::SmallVector<int64_t> held;
  llvm::SmallVector<int64_t> kept, forward, backward;
  /// As the backward pass reaches each unit: the bytes held besides the
  /// buffers of the unit and those before it.
  llvm::SmallVector<int64_t> reached;
  int64_t loss = -1;
  /// What the forward pass holds at its end besides the units' buffers.
  int64_t base = 0;
  /// The latest unit seen in the forward pass, the earliest in the
  /// backward pass.
  int highest = -1, lowest;
  /// Each buffer alive: its unit (-1: none) and bytes.
  llvm::DenseMap<int64_t, std::pair<int, int64_t>> owners;
  /// Buffers allocated by no unit's operation, not yet computed on.
  llvm::DenseSet<int64_t> unclaimed;
  llvm::DenseMap<mlir::Location, int> tags;
};

/// The chain model of `units`, the loss's values `tailBytes`.
ga::remat::SegmentChain chainOf(llvm::ArrayRef<Unit> units, int64_t tailBytes);

/// The segments of `length` units (fewer at the end of a run) over the runs
/// of units that may be checkpointed (a unit marked "save" ends a run), the
/// units between them saved.
ga::remat::SegmentPlan segmentsOf(llvm::ArrayRef<Unit> units, unsigned length);

/// The bytes the runtime allocates for a tensor of `type` (0 if dynamic).
int64_t tensorBytes(mlir::Type type);

/// The bytes of a function's arguments (a budget covers them).
/// The tensor types that the compiled step `compiled` takes: its recorded
/// signature (train.signature: a rank's shards of the optimizer's state
/// where train-shard-state made them), or else the arguments of `source`,
/// the function before the pipeline.
llvm::SmallVector<mlir::Type> argumentTypes(mlir::func::FuncOp compiled,
                                            mlir::func::FuncOp source);

/// The bytes of arguments of `types` (a budget covers them).
int64_t argumentBytes(llvm::ArrayRef<mlir::Type> types);

/// The bytes of the values the ops after the last unit define (the loss).
int64_t tailBytesOf(ga::train::StepOp step, llvm::ArrayRef<Unit> units);

/// The forward work of all `units`.
double totalCostOf(llvm::ArrayRef<Unit> units);

/// The elements of a step's parameters.
int64_t parameterElements(ga::train::StepOp step);

} // namespace ga::remat_units

#endif // GA_LIB_TRANSFORMS_REMATUNITS_H
