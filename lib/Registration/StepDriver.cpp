//===- StepDriver.cpp - What ga-run and ga-compile share ------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/StepDriver.h"

#include "ga/InitAll.h"
#include "ga/Transforms/StepSignature.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

using namespace mlir;

std::unique_ptr<MLIRContext> ga::makeStepContext() {
  registerAllPasses();
  ga::registerGaPasses();
  DialectRegistry registry;
  ga::registerGaDialects(registry);
  ga::registerGaUpstreamDialects(registry);
  registerAllToLLVMIRTranslations(registry);
  auto context = std::make_unique<MLIRContext>(registry);
  context->loadAllAvailableDialects();
  // Diagnostics name the source location; the operation, often rewritten
  // halfway by then, would only add noise.
  context->printOpOnDiagnostic(false);
  return context;
}

ga::StepModule::~StepModule() = default;

std::unique_ptr<ga::StepModule> ga::loadStepModule(MLIRContext &context,
                                                   StringRef file,
                                                   StringRef entryName,
                                                   std::string &error) {
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      openInputFile(file, &errorMessage);
  if (!buffer) {
    error = ("cannot read '" + file + "': " + errorMessage).str();
    return nullptr;
  }
  auto step = std::make_unique<StepModule>();
  step->sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  step->diagnostics =
      std::make_unique<SourceMgrDiagnosticHandler>(step->sourceMgr, &context);
  step->module = parseSourceFile<ModuleOp>(step->sourceMgr, &context);
  if (!step->module) {
    error.clear();
    return nullptr;
  }
  step->entry = findStepEntry(*step->module, entryName, file, error);
  if (!step->entry)
    return nullptr;
  step->name = SymbolTable::getSymbolName(step->entry).str();
  return step;
}
