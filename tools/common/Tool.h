//===- Tool.h - What the ga-opt tools built on LLVM share -----------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// The preamble of ga-compile, ga-run, ga-train and ga-remat: the clock of
// their timings, the one way they fail ("TOOL: error: MESSAGE", exit status
// 1), a file read as text, and where the runtime libraries are. Each tool's
// main is a list of phases, each a function that returns 0 to go on or the exit
// status to stop with. (ga-exec links neither MLIR nor LLVM, so that it runs
// step libraries where neither is installed: it has its own few lines of the
// same.)
//
//===----------------------------------------------------------------------===//

#ifndef GA_TOOLS_COMMON_TOOL_H
#define GA_TOOLS_COMMON_TOOL_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <string>

namespace ga::tool {

using Clock = std::chrono::steady_clock;

/// Milliseconds since `start`.
inline double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

/// The tool's name in its messages ("ga-train"); set by main.
inline const char *&name() {
  static const char *toolName = "ga-opt";
  return toolName;
}

/// Prints "TOOL: error: MESSAGE" and returns the exit status of a failure.
inline int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), name()) << message << "\n";
  return 1;
}

/// The contents of `file`; on failure, "" with the reason in `error`.
inline std::string readText(const std::string &file, std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/true);
  if (!buffer) {
    error = "cannot read '" + file + "': " + buffer.getError().message();
    return "";
  }
  return (*buffer)->getBuffer().str();
}

/// A runtime library of ga-opt (libga_runtime.so, libga_cuda_runtime.so):
/// the one in the lib/ beside this executable's directory (an installed
/// tree, such as the ga_opt Python package's), else `builtIn` (where the
/// build put it).
inline std::string runtimeLibrary(llvm::StringRef fileName,
                                  llvm::StringRef builtIn) {
  std::string exe = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&runtimeLibrary));
  if (!exe.empty()) {
    llvm::SmallString<256> path(llvm::sys::path::parent_path(exe));
    llvm::sys::path::append(path, "..", "lib", fileName);
    llvm::SmallString<256> real;
    if (llvm::sys::fs::exists(path) && !llvm::sys::fs::real_path(path, real))
      return std::string(real);
  }
  return builtIn.str();
}

} // namespace ga::tool

#endif // GA_TOOLS_COMMON_TOOL_H
