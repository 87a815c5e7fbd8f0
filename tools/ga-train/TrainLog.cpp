//===- TrainLog.cpp - ga-train's log of steps -----------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "TrainLog.h"

#include "../common/Tool.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

namespace ga {

std::string TrainLog::open(const std::string &file, bool resumed,
                           int64_t firstStep) {
  jsonl = llvm::StringRef(file).ends_with(".jsonl");
  std::string kept;
  resumed = resumed && llvm::sys::fs::exists(file);
  if (resumed) {
    std::string error, text = tool::readText(file, error);
    if (!error.empty())
      return "--log: " + error;
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(text).split(lines, '\n', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef line : lines) {
      llvm::StringRef field = line;
      if (jsonl && !field.consume_front("{\"step\": "))
        continue;
      int64_t step = 0;
      bool header = !jsonl && line.starts_with("step,");
      if (header || (!field.consumeInteger(10, step) && step < firstStep))
        kept += line.str() + "\n";
    }
  }
  std::error_code ec;
  os = std::make_unique<llvm::raw_fd_ostream>(file, ec);
  if (ec) {
    os.reset();
    return "cannot write --log '" + file + "': " + ec.message();
  }
  if (resumed)
    *os << kept;
  else if (!jsonl)
    *os << "step,loss,grad_norm,tokens,lr,step_ms\n";
  return "";
}

void TrainLog::row(int64_t step, double loss, std::optional<double> gradNorm,
                   int64_t tokens, double lr, double ms) {
  std::string normText =
      gradNorm ? llvm::formatv("{0:e9}", *gradNorm).str() : std::string();
  std::string tokenText = tokens >= 0 ? std::to_string(tokens) : "";
  if (jsonl)
    *os << llvm::formatv(
        "{{\"step\": {0}, \"loss\": {1:e9}, \"grad_norm\": {2}, "
        "\"tokens\": {3}, \"lr\": {4:e6}, \"step_ms\": {5:f3}}\n",
        step, loss, gradNorm ? normText : "null",
        tokens >= 0 ? tokenText : "null", lr, ms);
  else
    *os << llvm::formatv("{0},{1:e9},{2},{3},{4:e6},{5:f3}\n", step, loss,
                         normText, tokenText, lr, ms);
  os->flush();
}

} // namespace ga
