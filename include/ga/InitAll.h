//===- InitAll.h - Register everything ga-opt provides ----------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// For tools and compilers that embed ga-opt: one call registers the train
// dialect, another the ga-opt passes and pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef GA_INITALL_H
#define GA_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace ga {

/// Inserts the dialects that ga-opt defines (the train dialect) into
/// `registry`.
void registerGaDialects(mlir::DialectRegistry &registry);

/// Inserts the upstream dialects and extensions that the ga-opt pipelines
/// produce or consume (func, linalg, tensor, arith, math, scf, memref,
/// bufferization, gpu, nvvm, llvm, ...) into `registry`.
void registerGaUpstreamDialects(mlir::DialectRegistry &registry);

/// Registers the ga-opt passes and pass pipelines with the global registry.
void registerGaPasses();

} // namespace ga

#endif // GA_INITALL_H
