//===- Passes.h - ga-opt conversion passes ----------------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_CONVERSION_PASSES_H
#define GA_CONVERSION_PASSES_H

#include "ga/Conversion/TrainToLinalg.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace ga {

#define GEN_PASS_DECL
#include "ga/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ga/Conversion/Passes.h.inc"

} // namespace ga

#endif // GA_CONVERSION_PASSES_H
