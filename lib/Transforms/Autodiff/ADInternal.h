//===- ADInternal.h - Shared pieces of train-differentiate ------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Not installed: the state of one reverse sweep and the rule entry points
// that the differentiation driver, the linalg rules and the scalar rules
// share.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_TRANSFORMS_AUTODIFF_ADINTERNAL_H
#define GA_LIB_TRANSFORMS_AUTODIFF_ADINTERNAL_H

#include "ga/Utils/TensorBuilders.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace ga::ad {

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

private:
  llvm::DenseSet<mlir::Value> active;
  llvm::DenseMap<mlir::Value, mlir::Value> adjoints;
};

/// The elementwise sum of two tensors of the same type (linalg.add).
mlir::Value addTensors(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                       mlir::Value rhs);

/// Adjoint rule of a linalg.generic whose results have adjoints in `sweep`.
mlir::LogicalResult adjointGeneric(mlir::linalg::GenericOp op, Sweep &sweep);
/// Adjoint rules of the tensor and train operations.
mlir::LogicalResult adjointTensorOp(mlir::Operation *op, Sweep &sweep);
/// True if adjointTensorOp has a rule for `op`.
bool hasTensorRule(mlir::Operation *op);

/// Reverse mode over the scalar body of a linalg.generic. The body is
/// recomputed at the builder's position (with `map` giving the new values of
/// the block arguments, and of anything else the caller maps first), seeded
/// with cotangents, and swept backwards.
class ScalarReverse {
public:
  ScalarReverse(mlir::OpBuilder &b, mlir::IRMapping &map) : b(b), map(map) {}

  /// Clones the body's operations except the terminator and `skip`.
  void recompute(mlir::Block &body,
                 llvm::ArrayRef<mlir::Operation *> skip = {});
  /// cotangent(orig) += cot.
  void seed(mlir::Value orig, mlir::Value cot);
  /// Sweeps the body backwards (skipping `skip`); fails with an error on an
  /// operation without a scalar rule that lies on a differentiated path.
  mlir::LogicalResult run(mlir::Block &body,
                          llvm::ArrayRef<mlir::Operation *> skip = {});
  /// The cotangent accumulated for the original body value `orig`, or null.
  mlir::Value cotangent(mlir::Value orig) const { return cot.lookup(orig); }

private:
  mlir::OpBuilder &b;
  mlir::IRMapping &map;
  llvm::DenseMap<mlir::Value, mlir::Value> cot;
};

/// For each block argument of a generic body: the scalar derivative reads
/// it (directly or to recompute a value it reads). `extraRoots` are body
/// values that the caller's own rule reads. Used by getAdjointNeeds.
llvm::SmallVector<bool>
scalarArgsNeeded(mlir::Block &body, llvm::ArrayRef<mlir::Operation *> skip,
                 llvm::ArrayRef<mlir::Value> extraRoots = {});

/// The adjoint needs of a linalg.generic (see ga::AdjointNeeds).
void genericAdjointNeeds(mlir::linalg::GenericOp op, bool &differentiable,
                         llvm::SmallVectorImpl<bool> &operands,
                         llvm::SmallVectorImpl<bool> &results);

} // namespace ga::ad

#endif // GA_LIB_TRANSFORMS_AUTODIFF_ADINTERNAL_H
