//===- TrainToLinalg.h - Lower train ops to linalg --------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_CONVERSION_TRAINTOLINALG_H
#define GA_CONVERSION_TRAINTOLINALG_H

#include "llvm/Support/LogicalResult.h"

namespace mlir {
class Operation;
class RewritePatternSet;
} // namespace mlir

#include <optional>
#include <string>

namespace ga::train {
class CheckLabelsOp;
} // namespace ga::train

namespace ga {

/// Adds the patterns that lower train.cross_entropy to linalg on tensors.
void populateTrainToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// train.attention and train.attention_grad as loops over key tiles
/// (AttentionToLinalg.cpp).
void populateAttentionToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// What the runtime's fused attention takes (AttentionToCalls.cpp): the
/// element type of its calls, and whether it takes key masks and the
/// log-sum-exp's cotangent.
struct AttentionCalls {
  enum class Type {
    /// The operands' own type (f32, f64 or bf16).
    Native,
    /// float32 operands rounded to bfloat16 copies, results widened back.
    BF16
  };
  Type type = Type::Native;
  bool keyMask = true;
  bool dlse = true;
};

/// Why `op` (a train.attention or train.attention_grad) cannot be one call
/// of the runtime's fused attention as `calls` describes it, or nothing.
std::optional<std::string>
attentionCallUnsupported(mlir::Operation *op, const AttentionCalls &calls);

/// Lowers every train.attention and train.attention_grad under `root` that
/// the runtime's fused attention takes (attentionCallUnsupported) to one
/// call of it, on the operands' buffers; the others stay.
llvm::LogicalResult lowerAttentionToCalls(mlir::Operation *root,
                                          const AttentionCalls &calls);

/// Lowers every `train.cross_entropy_grad` under `root` (static shapes)
/// together with the `train.cross_entropy` on the same logits, labels and
/// ignore_index before it in its block, if there is one: the row statistics
/// and the valid count are computed once, and the gradient is computed in
/// place of the logits where nothing after it reads them. Ops without such a
/// partner are left to populateTrainToLinalgPatterns.
void lowerPairedCrossEntropies(mlir::Operation *root);

/// Lowers `op` to a linalg reduction that finds the first invalid label and
/// a call of the runtime's `ga_report_error` under `scf.if` (declared in the
/// enclosing symbol table if missing), and erases it. Fails, with an error on
/// the op, for dynamic shapes or a conflicting declaration.
llvm::LogicalResult lowerCheckLabels(train::CheckLabelsOp op);

} // namespace ga

#endif // GA_CONVERSION_TRAINTOLINALG_H
