//===- Attention.h - train-raise-attention's pieces -----------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// train-raise-attention recognizes attention written in linalg in two forms:
// the generator's seven generics (Chain.cpp) and the importer's transposes
// and batch matmuls (ImportForm.cpp), each with an optional mask on the
// scores checked by value (Mask.cpp); the pass (RaiseAttention.cpp)
// replaces each chain with one train.attention.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_TRANSFORMS_ATTENTION_ATTENTION_H
#define GA_LIB_TRANSFORMS_ATTENTION_ATTENTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Value.h"

#include <optional>

namespace ga::attention {

/// A generic over [B, H, S, T] whose maps are the identity (and, for a
/// second input, the row [B, H, S]).
bool isScoresRowwise(mlir::linalg::GenericOp g, unsigned inputs);

/// A reduction of [B, H, S, T] over its last loop into [B, H, S].
bool isScoresRowReduction(mlir::linalg::GenericOp g);

/// A mask on the scores [B, H, S, T] (Mask.cpp): the scores it reads, the
/// score it gives hidden keys, whether it is causal, and the key mask
/// [B, T] it reads (or null).
struct Mask {
  mlir::Value scores;
  double masked;
  bool causal;
  mlir::Value keyMask;
};
std::optional<Mask> matchMask(mlir::linalg::GenericOp g);

/// An operand of train.attention ([B, X, H, Y]) as the importer's matmuls
/// read it: `source` in that layout already (through a view, maybe times a
/// constant), head-major [B, H, X, Y] (transposed when raised: the queries
/// after rotary embeddings), or grouped [B, G, R, X, Y] (keys and values
/// of grouped-query attention, each repeated for R heads: collapsed to the
/// G R heads, then transposed).
struct HeadOperand {
  enum Layout { PositionMajor, HeadMajor, Grouped };
  Layout layout = PositionMajor;
  mlir::Value source;
  double scale = 1.0;
};

/// One attention: the op whose result the attention's output replaces,
/// and what train.attention takes.
struct Chain {
  mlir::Operation *last = nullptr;
  double scale = 1.0;
  std::optional<double> maskedScore;
  bool causal = false;
  HeadOperand query, key, value;
  mlir::Value keyMask;
  /// The scores the softmax reads (after the mask).
  mlir::Value maskedScores;
};

/// The softmax over the last loop of [B, H, S, T] that `probsValue` is,
/// used only by `user`: sets c.maskedScores to its scores, which only the
/// softmax and `moreReaders` read.
bool matchScoresSoftmax(mlir::Value probsValue, mlir::Operation *user, Chain &c,
                        llvm::ArrayRef<mlir::Operation *> moreReaders = {});

/// An optional mask on `scores`: steps over it (the scores must then have
/// no other reader) and sets what the attention takes of it.
bool unmask(mlir::Value &scores, Chain &c);

/// The chain, when its query, key, value and output are of one float type.
std::optional<Chain> oneFloatType(Chain &c);

/// The generator's form (examples/gen_tiny_gpt.py), ending at `context`.
std::optional<Chain> matchChain(mlir::linalg::GenericOp context);

/// The importer's form (PyTorch through torch-mlir), ending at `context`.
std::optional<Chain> matchImportChain(mlir::linalg::BatchMatmulOp context);

} // namespace ga::attention

#endif // GA_LIB_TRANSFORMS_ATTENTION_ATTENTION_H
