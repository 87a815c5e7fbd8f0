//===- StepDriver.h - What ga-run and ga-compile share ----------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_STEPDRIVER_H
#define GA_STEPDRIVER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <string>

namespace llvm {
class Module;
} // namespace llvm
namespace mlir {
class SourceMgrDiagnosticHandler;
} // namespace mlir

namespace ga {

/// Registers every pass and pipeline, and makes a context with every dialect
/// and LLVM IR translation a step's IR may hold, loaded.
std::unique_ptr<mlir::MLIRContext> makeStepContext();

/// A parsed MLIR file and the function a tool compiles. Diagnostics of the
/// module are reported against the file while it lives.
struct StepModule {
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> diagnostics;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::Operation *entry = nullptr;
  std::string name;

  ~StepModule();
};

/// Parses `file` and finds its entry (`entryName`, else the only function;
/// see findStepEntry). Null on failure, with the reason in `error` (empty
/// when the parser already reported it).
std::unique_ptr<StepModule> loadStepModule(mlir::MLIRContext &context,
                                           llvm::StringRef file,
                                           llvm::StringRef entryName,
                                           std::string &error);

/// Moves each alloca of constant size that is not in its function's entry
/// block, and whose uses (through GEPs and casts) are all in its own block,
/// into the entry block: one slot reused by every execution of the block
/// instead of a new one each time. The host code of a CUDA step builds
/// each launch's argument array with such allocas (MLIR's lowering of
/// gpu.launch_func, at the launch); inside the micro-batch loop they grew
/// the stack by every launch's arrays at every micro-batch, until a large
/// step overflowed it. A use in another block (a pointer carried to the
/// next iteration) keeps the alloca where it is.
void hoistBlockLocalAllocas(llvm::Module &module);

} // namespace ga

#endif // GA_STEPDRIVER_H
