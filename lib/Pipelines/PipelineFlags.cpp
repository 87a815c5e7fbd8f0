//===- PipelineFlags.cpp - ga-pipeline's options as a tool's flags --------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Pipelines/PipelineFlags.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
namespace cl = llvm::cl;

ga::PipelineFlags::PipelineFlags(cl::OptionCategory &category,
                                 ArrayRef<StringRef> names) {
  text = std::make_unique<cl::opt<std::string>>(
      "pipeline-options",
      cl::desc("Options of --ga-pipeline, as ga-opt takes them, e.g. "
               "\"naive=true vectorize=false\" (the flags below override "
               "them)"),
      cl::value_desc("options"), cl::cat(category));
  // Each option's description and default, from the struct.
  GaPipelineOptions defaults;
  llvm::StringMap<std::string> help;
  defaults.forEachOption([&](StringRef name, StringRef description) {
    help[name] = description.str();
  });
  std::string printed;
  llvm::raw_string_ostream os(printed);
  defaults.print(os);
  // print() writes "{a=1 b=text c=}".
  llvm::StringMap<std::string> values;
  for (StringRef item :
       llvm::split(StringRef(printed).drop_front().drop_back(), ' ')) {
    auto [name, value] = item.split('=');
    values[name] = value.str();
  }
  for (StringRef name : names) {
    auto it = help.find(name);
    if (it == help.end())
      llvm::report_fatal_error("PipelineFlags: ga-pipeline has no option '" +
                               name + "'");
    std::string value = values.lookup(name);
    // cl::desc keeps a reference: the text lives as long as the flag.
    descriptions.push_back(std::make_unique<std::string>(
        it->second + " (default " + (value.empty() ? "none" : value) +
        "; --ga-pipeline option " + name.str() + ")"));
    flags.push_back(std::make_unique<cl::opt<std::string>>(
        name, cl::desc(*descriptions.back()),
        // A boolean (its default prints as true or false) may be given
        // without a value, as `--naive`; any other takes one, as
        // `--memory-budget=N` or `--memory-budget N`.
        value == "true" || value == "false" ? cl::ValueOptional
                                            : cl::ValueRequired,
        cl::value_desc("value"), cl::cat(category)));
  }
}

ga::PipelineFlags::~PipelineFlags() = default;

LogicalResult ga::PipelineFlags::get(GaPipelineOptions &options,
                                     llvm::raw_ostream &errors) const {
  std::string reason;
  llvm::raw_string_ostream os(reason);
  if (failed(options.parseFromString(*text, os))) {
    // A bad value is reported on stderr by the option's parser itself.
    errors << "--pipeline-options: "
           << (reason.empty() ? "cannot parse '" + *text + "'"
                              : StringRef(reason).trim().str());
    return failure();
  }
  for (const auto &flag : flags) {
    if (!flag->getNumOccurrences())
      continue;
    std::string value = flag->empty() ? "true" : flag->getValue();
    // One meaning of --microbatches: a count K (the planner's choice has a
    // flag of its own).
    if (flag->ArgStr == "microbatches" && value == "auto") {
      errors << "--microbatches takes a count K; the planner chooses the "
                "count with --choose-microbatches";
      return failure();
    }
    if (failed(
            options.parseFromString((flag->ArgStr + "=" + value).str(), os))) {
      errors << "--" << flag->ArgStr << ": "
             << (reason.empty() ? "invalid value '" + value + "'"
                                : StringRef(reason).trim().str());
      return failure();
    }
  }
  return options.verify(errors);
}
