//===- LoopFusion.h - What the two loop fusions of the CUDA host share ----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga-gpu-fuse-parallel-loops fuses adjacent parallel loop nests of the same
// iteration space (FuseParallelLoops.cpp) and, with row-groups, runs of
// nests over the same rows into one launch (RowGroups.cpp). Both walk the
// same runs of loops, read the same accesses and move the same
// deallocations: declared here, defined in FuseParallelLoops.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_CODEGEN_CUDA_LOOPFUSION_H
#define GA_LIB_CODEGEN_CUDA_LOOPFUSION_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Region.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <utility>

namespace ga::cuda::fusion {

/// Whether the buffers `a` and `b` (roots of views) may share memory:
/// distinct allocations do not, nor an allocation and a function's
/// argument or a global; anything else may.
bool mayAlias(mlir::Value a, mlir::Value b);

/// One load or store of a loop body.
struct Access {
  mlir::Value memref;
  mlir::ValueRange indices;
  /// The element or vector type accessed.
  mlir::Type type;
  bool write;
};

/// Every access of `loop`'s body, or nothing when the body holds an
/// operation whose memory effects are not loads and stores of memrefs (a
/// call, an allocation, an atomic) or a nested parallel loop.
std::optional<llvm::SmallVector<Access>> accessesOf(mlir::scf::ParallelOp loop);

/// The position of the induction variable of `loop` that `index` is, and
/// the constant it is multiplied by, or nothing.
std::optional<std::pair<unsigned, int64_t>>
scaledDimension(mlir::Value index, mlir::scf::ParallelOp loop);

/// Whether distinct indices of `type` address distinct elements.
bool elementsDoNotOverlap(mlir::MemRefType type);

/// What joinAdjacentLoops does with a run of candidate loops: `start` opens
/// a run at a loop, `extend` adds the next loop of the block to it (or
/// says it cannot), `finish` closes it.
struct RunJoiner {
  virtual ~RunJoiner() = default;
  virtual void start(mlir::scf::ParallelOp loop) = 0;
  virtual bool extend(mlir::scf::ParallelOp loop) = 0;
  virtual void finish() {}
};

/// Walks the blocks of host code in `region` and hands `joiner` each run of
/// candidate loops with only allocations, deallocations and operations
/// without memory effects between them.
void joinAdjacentLoops(mlir::Region &region, RunJoiner &joiner);

/// Whether the deallocations between `first` and `last`, operations of one
/// block, may move after `last` with the device's peak the same.
bool freesMayMoveAfter(mlir::Operation *first, mlir::Operation *last);

/// Moves the deallocations between `first` and `last` (freesMayMoveAfter)
/// right after `after`, in their order.
void moveFreesAfter(mlir::Operation *first, mlir::Operation *last,
                    mlir::Operation *after);

} // namespace ga::cuda::fusion

#endif // GA_LIB_CODEGEN_CUDA_LOOPFUSION_H
