//===- Decomposability.h - Batch decomposability of a step ------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The analysis behind `train-check-decomposable` and `train-split-batch`: it
// classifies every value of a `train.step` body along the batch dimension.
//
// * invariant:   does not depend on the batch (parameters, constants);
// * per-example: carries the batch in one dimension; the rows of example b
//                depend on example b only;
// * batch-sum:   a sum over the batch of per-example values, or a function
//                of such sums that a split can compute exactly (linear in
//                the sums that depend on the parameters; any function of the
//                sums that do not, since those are computed once for the
//                whole global batch: they are the *globals*);
// * mixed:       anything else. The operation where a value first becomes
//                mixed is recorded with the reason.
//
// Independently, every value records whether it depends on the parameters.
//
//===----------------------------------------------------------------------===//

#ifndef GA_ANALYSIS_DECOMPOSABILITY_H
#define GA_ANALYSIS_DECOMPOSABILITY_H

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <string>

namespace ga {
namespace train {
class StepOp;
class CheckpointOp;
class CrossEntropyOp;
class AttentionOp;
class CrossEntropyGradOp;
class AttentionGradOp;
} // namespace train

struct BatchClass {
  enum Kind { Invariant, PerExample, BatchSum, Mixed };
  Kind kind = Invariant;
  /// For PerExample: the dimension that carries the batch.
  int64_t batchDim = -1;
  /// The value depends on a parameter.
  bool paramDependent = false;
  /// A floating-point value with a gradient: it depends on a parameter
  /// through operations that differentiation follows (not through integer
  /// values such as an argmax's index, nor through train.stop_gradient).
  bool differentiable = false;

  /// A batch-sum that does not depend on the parameters: computed once for
  /// the whole global batch before the micro-batches run.
  bool isGlobal() const { return kind == BatchSum && !paramDependent; }
  std::string str() const;
};

/// Where and why a value became mixed.
struct MixedReason {
  mlir::Operation *op = nullptr;
  std::string why;
};

class Decomposability {
public:
  /// Classifies every value of `step`'s body (nested checkpoint bodies
  /// included). Never fails: problems become mixed values with reasons.
  /// A `train.cross_entropy {reduction = mean}` over the batch is mixed (a
  /// mean of micro-batch means is not the mean) unless `meansAreSums`, which
  /// the naive split sets: it averages the micro-batch means on purpose.
  ///
  /// With `statisticsPrepass`, a batch-sum that depends on the parameters
  /// but carries no gradient (a batch statistic such as a mixture's routing
  /// fractions) counts as a global: train-split-batch computes it, with
  /// what it needs, over the whole batch before the micro-batches (a
  /// pre-pass of that part of the forward), so that a split uses the whole
  /// batch's value as the full batch does.
  explicit Decomposability(train::StepOp step, bool meansAreSums = false,
                           bool statisticsPrepass = false);
  /// Classifies every value of `body`, a block of `owner` whose arguments
  /// have the classes `arguments` (one each): a differentiated step's or
  /// micro-batch's body, forward and backward (a cross-entropy's and an
  /// attention's gradients keep their operands' batch dimension). The
  /// queries about splitting the step (findSplitProblem,
  /// checkSplitIsExact) need the constructor above.
  Decomposability(mlir::Operation *owner, mlir::Block &body,
                  llvm::ArrayRef<BatchClass> arguments);

  /// The classes of the arguments of `body` (a step's or a micro-batch's):
  /// `params` depend on the parameters, `batch` carry it in dimension 0,
  /// `sums` (running accumulators) are parameter-dependent batch-sums,
  /// `globals` batch-sums computed once for the global batch; any other is
  /// invariant.
  static llvm::SmallVector<BatchClass>
  argumentClasses(mlir::Block &body, mlir::ValueRange params,
                  mlir::ValueRange batch, mlir::ValueRange sums = {},
                  mlir::ValueRange globals = {});

  BatchClass get(mlir::Value value) const;
  /// The operations where values first became mixed, in body order.
  llvm::ArrayRef<MixedReason> getMixedReasons() const { return reasons; }
  /// The first problem that makes a split of `step` inexact (a mixed value
  /// the results depend on, or a result that is not a batch-sum), or an
  /// empty reason when a split is exact.
  MixedReason findSplitProblem() const;
  /// Fails, with the error of train-check-decomposable on the operation
  /// that findSplitProblem names and a note on the step, when splitting the
  /// step by its schedule would change its results.
  mlir::LogicalResult checkSplitIsExact() const;

private:
  /// Gives the arguments of `body` their classes and classifies it.
  void visitBody(mlir::Block &body, llvm::ArrayRef<BatchClass> arguments);
  void visitBlock(mlir::Block &block);
  /// Classifies the results of `op` from its operands' classes, then
  /// whether each is differentiable.
  void visit(mlir::Operation *op);
  void classify(mlir::Operation *op);
  void visitCheckpoint(train::CheckpointOp checkpoint);
  void visitCrossEntropy(train::CrossEntropyOp ce, bool dep);
  void visitAttention(train::AttentionOp attention, bool dep);
  /// An operation over the rows of `rows` (an attention's operands, the
  /// cross-entropy's or the attention's gradient's): per-example when they
  /// all carry the batch in dimension 0, invariant when none does; mixed
  /// (`notExamples`) when one carries it elsewhere or is a batch-sum, and
  /// (`partly`) when only some carry it.
  void visitRows(mlir::Operation *op, mlir::ValueRange rows, bool dep,
                 llvm::StringRef notExamples, llvm::StringRef partly);
  /// `captured`: the values its body reads from above.
  void visitLinalg(mlir::linalg::LinalgOp op, bool dep, bool anySum,
                   llvm::ArrayRef<mlir::Value> captured);
  void visitBatchLoop(mlir::linalg::LinalgOp op, unsigned batchLoop, bool dep);
  void visitBatchSumInputs(mlir::linalg::LinalgOp op, bool dep);
  bool visitShapeOp(mlir::Operation *op, bool dep, bool anyPerExample);
  /// visitShapeOp's cases: slices taken and inserted, paddings and
  /// concatenations, reshapes (false when `op` is none of its kind).
  bool visitSliceOp(mlir::Operation *op, bool dep, bool anyPerExample);
  bool visitJoinOp(mlir::Operation *op, bool dep, bool anyPerExample);
  bool visitReshapeOp(mlir::Operation *op, bool dep);
  /// Gives every result of `op` the class `c`, parameter-dependent also
  /// when `dep`.
  void setAll(mlir::Operation *op, BatchClass c, bool dep);
  void setMixed(mlir::Operation *op, const std::string &why);
  /// The share of the step body's forward work (the iteration points of
  /// its linalg operations) that computing `statistics` takes: what a
  /// pre-pass repeats.
  double prepassShare(llvm::ArrayRef<mlir::Value> statistics) const;

  mlir::Operation *step;
  bool meansAreSums;
  bool statisticsPrepass;
  /// A body classified after the split (the second constructor): its
  /// classes describe the values, not what a split could do with them.
  bool differentiated = false;
  int64_t batchSize = 0;
  llvm::DenseMap<mlir::Value, BatchClass> classes;
  llvm::SmallVector<MixedReason> reasons;
};

/// How a scalar of a linalg body depends on the parameter-dependent
/// batch-sums it reads: not at all, proportionally (it scales with the part
/// of the batch summed so far, so micro-batch contributions add up), or in a
/// way a split would change.
enum class Linearity { Constant, Proportional, Other };

/// The linearity of the yielded values of `op` in the block arguments
/// `sumArgs`. `accumulators` are output arguments of an additive reduction:
/// they hold a partial sum of the same quantity. On `Other`, `why` names the
/// scalar operation at fault.
Linearity bodyLinearity(mlir::linalg::LinalgOp op,
                        const llvm::SmallDenseSet<mlir::Value> &sumArgs,
                        const llvm::SmallDenseSet<mlir::Value> &accumulators,
                        std::string &why);

/// The values `op` reads: its operands, and those that its regions read
/// from above (a gather's table).
llvm::SmallVector<mlir::Value> readValues(mlir::Operation *op);

/// The values that `op`'s regions read from above, each once.
llvm::SmallVector<mlir::Value> capturedValues(mlir::Operation *op);

/// The work of `op`'s linalg operations (nested ones included): the points
/// of their iteration spaces, twice for those that reduce (a multiply and
/// an add). What train-plan-remat weighs recomputation by and what a
/// statistics pre-pass repeats.
double linalgWork(mlir::Operation *op);

/// Whether output `j` of `op` is an additive reduction: the body yields
/// `init + h` and reads the init nowhere else, so the result is the init
/// plus a sum of terms.
bool isAdditiveReduction(mlir::linalg::LinalgOp op, unsigned j);

} // namespace ga

#endif // GA_ANALYSIS_DECOMPOSABILITY_H
