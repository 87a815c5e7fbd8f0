//===- Utils.h - Helpers of the CUDA passes ------------------------------*- C++
//-*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_LIB_CODEGEN_CUDA_UTILS_H
#define GA_LIB_CODEGEN_CUDA_UTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace ga::cuda {

/// Whether `op` is device code: inside a gpu.launch or a gpu.module.
bool insideKernel(mlir::Operation *op);

/// A gpu.launch of one thread before `op`; returns its terminator.
mlir::Operation *createSingleThreadLaunch(mlir::OpBuilder &b,
                                          mlir::Operation *op);

} // namespace ga::cuda

#endif // GA_LIB_CODEGEN_CUDA_UTILS_H
