//===- StepSignature.h - A lowered step's runtime signature -----*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRANSFORMS_STEPSIGNATURE_H
#define GA_TRANSFORMS_STEPSIGNATURE_H

#include "ga/Runtime/Signature.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace ga {

/// The runtime signature of `entry`, a function that carries the
/// train.signature attribute (and train.loss_result, train.gradient_results,
/// train.data_parallel where the pipeline recorded them). Returns an empty
/// string, or a sentence naming the first argument or result that is not a
/// statically shaped f32/f64/i32/i64 tensor, ending with "; `passer` passes
/// statically shaped f32/f64/i32/i64 tensors" (or "returns" for a result).
std::string buildStepSignature(mlir::Operation *entry, StepSignature &out,
                               llvm::StringRef passer);

/// The function of `module` a runner runs: `name` if given, else the only
/// func.func with a body or lowered llvm.func carrying train.signature. Null,
/// with the reason in `error` ("no function @NAME with a body in 'FILE'",
/// "several functions in 'FILE'; choose one with --entry: @a @b"), when
/// there is no such function or the choice is ambiguous.
mlir::Operation *findStepEntry(mlir::ModuleOp module, llvm::StringRef name,
                               llvm::StringRef file, std::string &error);

} // namespace ga

#endif // GA_TRANSFORMS_STEPSIGNATURE_H
