//===- ParallelCodegen.h - ga-compile's object code on several threads ----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_COMPILE_PARALLELCODEGEN_H
#define GA_COMPILE_PARALLELCODEGEN_H

#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ga {

/// Makes a target machine; called once per thread.
using TargetMachineFactory =
    std::function<std::unique_ptr<llvm::TargetMachine>()>;

/// Optimizes `module` at `optLevel` and emits it as object code, split into
/// at most `jobs` partitions of about equal size (whole functions; the
/// largest alone when it outweighs the rest) that are optimized and
/// compiled on their own threads, each in its own LLVM context. Local
/// functions called across partitions become hidden globals; local
/// constants are copied into every partition that uses them. Returns the
/// object files' bytes, one per partition.
llvm::Expected<std::vector<std::string>>
compileInPartitions(std::unique_ptr<llvm::Module> module, unsigned jobs,
                    unsigned optLevel, const TargetMachineFactory &factory);

} // namespace ga

#endif // GA_COMPILE_PARALLELCODEGEN_H
