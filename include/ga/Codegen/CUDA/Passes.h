//===- Passes.h - ga-opt CUDA code generation passes ------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The passes of target=cuda (reference: docs/generated/CUDAPasses.md).
//
//===----------------------------------------------------------------------===//

#ifndef GA_CODEGEN_CUDA_PASSES_H
#define GA_CODEGEN_CUDA_PASSES_H

#include "ga/Utils/Choices.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace ga {

#define GEN_PASS_DECL
#include "ga/Codegen/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ga/Codegen/CUDA/Passes.h.inc"

} // namespace ga

#endif // GA_CODEGEN_CUDA_PASSES_H
