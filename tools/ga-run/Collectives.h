//===- Collectives.h - ga-run's data-parallel runtime ----------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The runtime functions that lowered train.rank and train.all_reduce call
// (see train/TrainRuntime.h for their ABI), implemented with MPI, and the
// start and end of the MPI run around them.
//
//===----------------------------------------------------------------------===//

#ifndef GA_RUN_COLLECTIVES_H
#define GA_RUN_COLLECTIVES_H

#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/Error.h"

namespace ga_run {

/// Whether this process was started by an MPI launcher (mpirun, srun).
bool launchedByMPI();

/// Joins the MPI run when the process was launched by mpirun or the program
/// needs `ranks` > 1 ranks, and checks that the run has exactly `ranks`
/// ranks. The error says how to launch the program.
llvm::Error startCollectives(int64_t ranks, llvm::StringRef program);

/// This process's rank (0 outside an MPI run) and the number of ranks.
int worldRank();
int worldSize();

/// Leaves the MPI run, if this process joined one.
void stopCollectives();

/// The addresses of ga_rank and ga_all_reduce_*, for the JIT.
llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner interner);

} // namespace ga_run

#endif // GA_RUN_COLLECTIVES_H
