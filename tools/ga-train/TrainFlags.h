//===- TrainFlags.h - ga-train's command line -------------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// ga-train's options (TrainFlags.cpp, with the overview --help prints),
// read by the phases of a run in ga-train.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TOOLS_GA_TRAIN_TRAINFLAGS_H
#define GA_TOOLS_GA_TRAIN_TRAINFLAGS_H

#include "ga/Pipelines/PipelineFlags.h"

#include "llvm/Support/CommandLine.h"

#include <string>

namespace ga::train_flags {
namespace cl = llvm::cl;

extern cl::OptionCategory category;
extern cl::opt<std::string> inputFile;
extern cl::opt<std::string> entryName;
extern cl::opt<std::string> dataDir;
extern cl::opt<int64_t> steps;
extern cl::opt<double> lr;
extern cl::opt<int64_t> warmup;
extern cl::opt<double> clip;
extern cl::opt<uint64_t> seed;
extern cl::opt<std::string> initDir;
extern cl::opt<int64_t> dataParallel;
extern cl::opt<std::string> logFile;
extern cl::opt<int64_t> printEvery;
extern cl::opt<std::string> checkpointDir;
extern cl::opt<int64_t> checkpointEvery;
extern cl::opt<bool> checkpointShards;
extern cl::opt<std::string> resumeDir;
extern cl::opt<ga::Target> target;
extern cl::opt<int> threadCount;
extern ga::PipelineFlags pipelineFlags;
extern cl::opt<int64_t> crashInCheckpoint;
extern const char *const kOverview;

} // namespace ga::train_flags

#endif // GA_TOOLS_GA_TRAIN_TRAINFLAGS_H
