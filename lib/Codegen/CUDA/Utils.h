//===- Utils.h - Helpers of the CUDA passes ------------------------------*- C++
//-*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_CODEGEN_CUDA_UTILS_H
#define GA_LIB_CODEGEN_CUDA_UTILS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace ga::cuda {

/// Whether `op` is device code: inside a gpu.launch or a gpu.module.
bool insideKernel(mlir::Operation *op);

/// The buffer `value` is a view of (through every ViewLikeOpInterface
/// operation: subviews, reshapes, casts).
mlir::Value viewSource(mlir::Value value);

/// The private declaration of the runtime function `name` in `module`
/// (made, of `type`, on first use).
mlir::func::FuncOp declareRuntimeFunction(mlir::ModuleOp module,
                                          llvm::StringRef name,
                                          mlir::FunctionType type,
                                          mlir::Location loc);

/// Whether `launch` is synchronous, without shared or private memory and
/// without clusters: the launches the CUDA passes make, which the
/// emulation runs and adjacent single-thread ones merge.
bool isPlainLaunch(mlir::gpu::LaunchOp launch);

/// A gpu.launch of one thread before `op`; returns its terminator.
mlir::Operation *createSingleThreadLaunch(mlir::OpBuilder &b,
                                          mlir::Operation *op);

/// Fuses each parallel loop nest of the host code in `region` into the next
/// one where ga-gpu-fuse-parallel-loops' conditions hold (same iteration
/// space, only allocations, deallocations (moved after the fused loop, past
/// allocations of other block sizes only) and operations without memory
/// effects between them, shared buffers touched only at each iteration's
/// own element).
void fuseParallelLoops(mlir::Region &region);

/// Makes each run of parallel loop nests of the host code in `region` over
/// the same rows one gpu.launch where ga-gpu-fuse-parallel-loops'
/// row-groups conditions hold: a row per group of threads, at most
/// `blockSize` threads per block, barriers between the nests.
void fuseRowGroups(mlir::Region &region, int64_t blockSize);

/// Makes each run of adjacent single-thread gpu.launch operations of the
/// host code in `region` (one block of one thread, a body of one block;
/// only allocations, deallocations that may move after the run's last
/// launch with the device's peak the same, and operations without memory
/// effects between them) one launch running the bodies in order.
void fuseSingleThreadLaunches(mlir::Region &region);

} // namespace ga::cuda

#endif // GA_LIB_CODEGEN_CUDA_UTILS_H
