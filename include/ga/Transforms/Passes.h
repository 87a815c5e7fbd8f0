//===- Passes.h - ga-opt transformation passes ------------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRANSFORMS_PASSES_H
#define GA_TRANSFORMS_PASSES_H

#include "ga/Utils/Choices.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "train/TrainDialect.h"

namespace ga {

#define GEN_PASS_DECL
#include "ga/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ga/Transforms/Passes.h.inc"

} // namespace ga

#endif // GA_TRANSFORMS_PASSES_H
