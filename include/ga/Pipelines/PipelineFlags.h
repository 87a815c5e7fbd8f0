//===- PipelineFlags.h - ga-pipeline's options as a tool's flags -*- C++
//-*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// One door from a tool's command line to GaPipelineOptions: the text of
// --pipeline-options (any option, as --ga-pipeline takes it), and, for the
// options a tool offers directly, flags declared from the struct itself
// (name, description and default), never restated by hand. The values are
// parsed by the struct's own parsers, so a flag and the same option in the
// text take the same values and give the same errors.
//
//===----------------------------------------------------------------------===//

#ifndef GA_PIPELINES_PIPELINEFLAGS_H
#define GA_PIPELINES_PIPELINEFLAGS_H

#include "ga/Pipelines/Pipelines.h"
#include "llvm/Support/CommandLine.h"

#include <memory>
#include <vector>

namespace ga {

class PipelineFlags {
public:
  /// Declares --pipeline-options and a flag `--NAME[=VALUE]` for each name
  /// of `names` (options of GaPipelineOptions; a boolean flag given without
  /// a value is true) in `category`. Construct it before the command line
  /// is parsed (a static of the tool).
  PipelineFlags(llvm::cl::OptionCategory &category,
                llvm::ArrayRef<llvm::StringRef> names);
  ~PipelineFlags();

  /// The options the command line gives: the defaults, then the text of
  /// --pipeline-options, then each flag given (a flag overrides the text).
  /// Fails, with the reason on `errors` ("--pipeline-options: ..." or
  /// "--NAME: ..."), when a value does not parse or the options do not
  /// verify.
  mlir::LogicalResult get(GaPipelineOptions &options,
                          llvm::raw_ostream &errors) const;

private:
  std::unique_ptr<llvm::cl::opt<std::string>> text;
  std::vector<std::unique_ptr<llvm::cl::opt<std::string>>> flags;
  std::vector<std::unique_ptr<std::string>> descriptions;
};

} // namespace ga

#endif // GA_PIPELINES_PIPELINEFLAGS_H
