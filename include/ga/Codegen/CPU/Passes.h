//===- Passes.h - ga-opt CPU code generation passes -------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The passes of target=cpu (reference: docs/generated/CPUPasses.md).
//
//===----------------------------------------------------------------------===//

#ifndef GA_CODEGEN_CPU_PASSES_H
#define GA_CODEGEN_CPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace ga {

#define GEN_PASS_DECL
#include "ga/Codegen/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ga/Codegen/CPU/Passes.h.inc"

} // namespace ga

#endif // GA_CODEGEN_CPU_PASSES_H
