//===- ga-opt.cpp - The ga-opt driver -------------------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// mlir-opt with the train dialect, the ga-opt passes and pipelines, and the
// upstream dialects and passes that the pipelines use.
//
//===----------------------------------------------------------------------===//

#include "ga/InitAll.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  ga::registerGaPasses();

  mlir::DialectRegistry registry;
  ga::registerGaDialects(registry);
  ga::registerGaUpstreamDialects(registry);
  // gpu-module-to-binary (target=cuda) translates kernels to LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "ga-opt: exact gradient accumulation and data parallelism on MLIR\n",
      registry));
}
