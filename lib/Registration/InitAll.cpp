//===- InitAll.cpp - Register everything ga-opt provides ------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/InitAll.h"

#include "ga/Codegen/CPU/Passes.h"
#include "ga/Codegen/CUDA/Passes.h"
#include "ga/Codegen/Common/Passes.h"
#include "ga/Conversion/Passes.h"
#include "ga/Pipelines/Pipelines.h"
#include "ga/Transforms/Autodiff.h"
#include "ga/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "train/TrainDialect.h"
#include "train/TrainRuntime.h"

void ga::registerGaDialects(mlir::DialectRegistry &registry) {
  registry.insert<ga::train::TrainDialect>();
  // train.all_reduce bufferizes to a runtime call.
  ga::train::registerBufferizableOpInterfaceExternalModels(registry);
  // Adjoints of the train, linalg and tensor ops.
  ga::registerDifferentiableOpInterfaceExternalModels(registry);
}

void ga::registerGaUpstreamDialects(mlir::DialectRegistry &registry) {
  // The pipelines go from linalg/tensor through bufferization and scf down to
  // the llvm dialect on the CPU and through gpu/nvvm for CUDA; registering all
  // upstream dialects and their interface extensions keeps every intermediate
  // stage parseable by ga-opt.
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
}

void ga::registerGaPasses() {
  ga::registerGaTransformsPasses();
  ga::registerGaConversionPasses();
  ga::registerGaCodegenPasses();
  ga::registerGaCPUPasses();
  ga::registerGaCUDAPasses();
  ga::registerGaPipelines();
}
