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

#include "llvm/IR/Constants.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

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

void ga::hoistBlockLocalAllocas(llvm::Module &module) {
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    llvm::BasicBlock &entry = function.getEntryBlock();
    for (llvm::BasicBlock &block : function) {
      if (&block == &entry)
        continue;
      for (llvm::Instruction &inst : llvm::make_early_inc_range(block)) {
        auto *alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst);
        if (!alloca || !llvm::isa<llvm::ConstantInt>(alloca->getArraySize()) ||
            alloca->isUsedWithInAlloca())
          continue;
        // Every use, through address computations, in this block.
        llvm::SmallVector<llvm::Instruction *> work = {alloca};
        bool local = true;
        while (!work.empty() && local) {
          llvm::Instruction *value = work.pop_back_val();
          for (llvm::User *user : value->users()) {
            auto *use = llvm::dyn_cast<llvm::Instruction>(user);
            if (!use || use->getParent() != &block) {
              local = false;
              break;
            }
            if (llvm::isa<llvm::GetElementPtrInst, llvm::CastInst>(use))
              work.push_back(use);
          }
        }
        if (!local)
          continue;
        alloca->moveBefore(entry.getFirstInsertionPt());
      }
    }
  }
}
