//===- DifferentiableOpInterface.h - Adjoints of operations -----*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The interface through which train-differentiate builds adjoints and the
// rematerialization planner learns what they read, with the state of one
// reverse sweep that its methods work on.
//
//===----------------------------------------------------------------------===//

#ifndef GA_INTERFACES_DIFFERENTIABLEOPINTERFACE_H
#define GA_INTERFACES_DIFFERENTIABLEOPINTERFACE_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

namespace ga {

/// What the adjoint of one operation reads from the forward pass.
struct AdjointNeeds {
  /// False when train-differentiate has no rule for the operation.
  bool differentiable = false;
  /// One flag per operand / result: the adjoint reads this value.
  llvm::SmallVector<bool> operands;
  llvm::SmallVector<bool> results;
};

namespace ad {

/// The state of one reverse sweep: which values depend on a parameter
/// (active), the adjoint accumulated so far for each value, and where the
/// backward code goes.
class Sweep {
public:
  explicit Sweep(mlir::OpBuilder &builder) : builder(builder) {}

  mlir::OpBuilder &builder;

  /// Marks `v` as depending on a parameter.
  void markActive(mlir::Value v) { active.insert(v); }
  /// Float tensors that depend on a parameter get adjoints; everything else
  /// (integers, labels, constants) gets none.
  bool isActive(mlir::Value v) const { return active.contains(v); }
  /// Forward activity through `ops` (recursing into checkpoint regions and
  /// counting tensors that generic bodies read from above).
  void propagateActivity(llvm::ArrayRef<mlir::Operation *> ops);

  /// The adjoint accumulated for `v`, or null if it has none (yet).
  mlir::Value getAdjoint(mlir::Value v) const { return adjoints.lookup(v); }
  /// Replaces the adjoint of `v` (a rule that folded the old one in).
  void setAdjoint(mlir::Value v, mlir::Value adjoint) { adjoints[v] = adjoint; }
  /// adjoint(v) += contribution; no-op for inactive values.
  void addAdjoint(mlir::Location loc, mlir::Value v, mlir::Value contribution);

  /// Visits `ops` last to first and applies the adjoint rule of each one
  /// whose results have adjoints.
  mlir::LogicalResult reverse(llvm::ArrayRef<mlir::Operation *> ops);

  /// Generics built by the sweep, to specialize back to named ops.
  llvm::SmallVector<mlir::linalg::GenericOp> created;

  /// Values (the step's parameters) whose contributions stay separate
  /// reductions, added after they are complete: a rule reduces into zeros
  /// and adds its result with addAdjoint instead of continuing the adjoint
  /// so far (adjointToContinue is null for them). A micro-batch split
  /// accumulates each contribution over the micro-batches on its own, and
  /// the additions run once, after the loop, as in the full batch: bitwise
  /// the same.
  llvm::DenseSet<mlir::Value> separateContributions;
  /// The adjoint of `v` so far, for a rule to continue (reduce into), or
  /// null when there is none or `v`'s contributions stay apart. A rule that
  /// continued it replaces it (setAdjoint); otherwise it adds its
  /// contribution (addAdjoint).
  mlir::Value adjointToContinue(mlir::Value v) const {
    return separateContributions.contains(v) ? mlir::Value() : getAdjoint(v);
  }

private:
  llvm::DenseSet<mlir::Value> active;
  llvm::DenseMap<mlir::Value, mlir::Value> adjoints;
};

} // namespace ad
} // namespace ga

#include "ga/Interfaces/DifferentiableOpInterface.h.inc"

#endif // GA_INTERFACES_DIFFERENTIABLEOPINTERFACE_H
