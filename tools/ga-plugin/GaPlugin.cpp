//===- GaPlugin.cpp - ga-opt as an mlir-opt plugin ------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Lets a stock mlir-opt (or any MlirOptMain-based tool linked against the
// shared libMLIR.so) use the train dialect and the ga-opt passes:
//
//   mlir-opt --load-dialect-plugin=libGaPlugin.so \
//            --load-pass-plugin=libGaPlugin.so \
//            --pass-pipeline='builtin.module(train-inline-checkpoints)' in.mlir
//
//===----------------------------------------------------------------------===//

#include "ga/InitAll.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "GaTrain", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            ga::registerGaDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "GaPasses", LLVM_VERSION_STRING,
          []() { ga::registerGaPasses(); }};
}
