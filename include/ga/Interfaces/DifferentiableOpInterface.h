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
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <functional>

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

  /// The adjoint accumulated for `v`, or null if it has none (yet). When
  /// accumulating, a value of separateContributions has none here: its
  /// contributions are its accumulations (getAccumulations).
  mlir::Value getAdjoint(mlir::Value v) const { return adjoints.lookup(v); }
  /// Replaces the adjoint of `v` (a rule that folded the old one in).
  void setAdjoint(mlir::Value v, mlir::Value adjoint);
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
  /// contribution (addAdjoint). When accumulating, a value whose
  /// contributions stay apart gets a new accumulator for each contribution
  /// to continue.
  mlir::Value adjointToContinue(mlir::Value v);

  //===--------------------------------------------------------------------===//
  // Accumulating: the sweep of a micro-batch body
  //===--------------------------------------------------------------------===//

  /// Set for the body of a train.accumulate: makes a new accumulator of
  /// `type` (a block argument of the body, zero before the first
  /// micro-batch). Each contribution to a value of separateContributions
  /// then continues an accumulator of its own, its *initial adjoint*: a rule
  /// reduces into it (adjointToContinue), a contribution that is not a
  /// reduction is added to it (addAdjoint), and a slice of a stacked
  /// parameter reduces into its slice of the parameter's one slice
  /// accumulator (addIntoSlice). Without it, contributions start from zero.
  std::function<mlir::Value(mlir::Type)> newAccumulator;
  bool accumulating() const { return bool(newAccumulator); }

  /// One accumulator and the value the body yields as its next value.
  struct Accumulation {
    mlir::Value accumulator, next;
    /// Reshapes and permuting copies that take the accumulated value to
    /// the gradient's layout, after the last micro-batch (empty: the same
    /// layout). `next` is their source in the body.
    llvm::SmallVector<mlir::Operation *, 4> layouts = {};
  };
  /// When accumulating: the accumulations of `v` (one of
  /// separateContributions), in the order of their contributions. The
  /// gradient is their sum, in that order, after the last micro-batch.
  llvm::ArrayRef<Accumulation> getAccumulations(mlir::Value v) const {
    auto it = accumulations.find(v);
    return it == accumulations.end() ? llvm::ArrayRef<Accumulation>()
                                     : llvm::ArrayRef(it->second);
  }

  /// Records that `result` is a reduction (or a loop) that starts from the
  /// zeros in `init`, which a rule made for it: an accumulator may take
  /// their place.
  void recordZeroInit(mlir::Value result, mlir::OpOperand &init) {
    zeroInits[result] = &init;
  }
  /// adjoint(source)[slice] += dy, where `slice` reads `source`.
  void addIntoSlice(mlir::Location loc, mlir::Value source, mlir::Value dy,
                    mlir::tensor::ExtractSliceOp slice);

private:
  llvm::DenseSet<mlir::Value> active;
  llvm::DenseMap<mlir::Value, mlir::Value> adjoints;
  llvm::DenseMap<mlir::Value, llvm::SmallVector<Accumulation>> accumulations;
  /// The accumulator that a rule is continuing for a value of
  /// separateContributions (adjointToContinue, then setAdjoint).
  llvm::DenseMap<mlir::Value, mlir::Value> continuing;
  /// Per stacked parameter: the index in its accumulations of the one that
  /// its slices' contributions go to.
  llvm::DenseMap<mlir::Value, unsigned> sliceAccumulation;
  llvm::DenseMap<mlir::Value, mlir::OpOperand *> zeroInits;
};

} // namespace ad
} // namespace ga

#include "ga/Interfaces/DifferentiableOpInterface.h.inc"

#endif // GA_INTERFACES_DIFFERENTIABLEOPINTERFACE_H
