//===- Passes.h - ga-opt code generation passes -----------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The code generation passes both targets run (reference:
// docs/generated/CodegenPasses.md).
//
//===----------------------------------------------------------------------===//

#ifndef GA_CODEGEN_COMMON_PASSES_H
#define GA_CODEGEN_COMMON_PASSES_H

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

namespace ga {

#define GEN_PASS_DECL
#include "ga/Codegen/Common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ga/Codegen/Common/Passes.h.inc"

} // namespace ga

#endif // GA_CODEGEN_COMMON_PASSES_H
