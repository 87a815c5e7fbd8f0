//===- ga-remat.cpp - Plan checkpoints of a chain read from JSON ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-remat graph.json (--budget BYTES | --slots S) [--schedule]
//
// Plans the reversal of a chain (a forward pass whose every unit reads the
// one before it, then the backward pass) with ga/Remat/Chain.h, for graphs
// that other compilers or benchmarks write. The graph:
//
//   {"nodes": [{"name": "l0", "cost": 2.5, "bytes": 4096},
//              {"name": "l1", "cost": 2.5, "bytes": 4096, "inputs": ["l0"]},
//              ...]}
//
// `cost` is the work of a node's forward (any unit: FLOPs, seconds),
// `bytes` the size of the state it writes. A budget in bytes holds
// floor(budget / the largest state) states, the chain's input included.
//
//===----------------------------------------------------------------------===//

#include "ga/Remat/Chain.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>

using namespace llvm;

static cl::OptionCategory category("ga-remat options");
static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<graph.json>"),
                                      cl::cat(category));
static cl::opt<int64_t>
    budget("budget",
           cl::desc("Memory for states, in bytes (floor(budget / largest "
                    "state) states held at once, the input included)"),
           cl::init(0), cl::value_desc("bytes"), cl::cat(category));
static cl::opt<int64_t> slots("slots",
                              cl::desc("States held at once, the input "
                                       "included (instead of --budget)"),
                              cl::init(0), cl::cat(category));
static cl::opt<bool>
    printSchedule("schedule",
                  cl::desc("Print the schedule's actions (advance, store, "
                           "free, reverse), one a line"),
                  cl::init(false), cl::cat(category));

static int fail(const Twine &message) {
  WithColor::error(errs(), "ga-remat") << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "ga-remat: the least recomputation that reverses a chain within a "
      "memory budget (Revolve's optimum for uniform chains)\n");
  if ((budget > 0) == (slots > 0))
    return fail("give exactly one of --budget (bytes, > 0) and --slots "
                "(> 0)");
  auto buffer = MemoryBuffer::getFile(inputFile);
  if (!buffer)
    return fail("cannot read '" + inputFile +
                "': " + buffer.getError().message());
  Expected<json::Value> parsed = json::parse((*buffer)->getBuffer());
  if (!parsed)
    return fail("'" + inputFile +
                "' is not JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  const json::Array *nodes = root ? root->getArray("nodes") : nullptr;
  if (!nodes || nodes->empty())
    return fail("'" + inputFile +
                "': expected an object with a non-empty array \"nodes\"");

  std::vector<double> costs;
  int64_t largest = 0;
  std::map<std::string, size_t> index;
  std::string previous;
  for (size_t i = 0; i < nodes->size(); ++i) {
    const json::Object *node = (*nodes)[i].getAsObject();
    std::string where = "'" + inputFile + "': node #" + std::to_string(i);
    if (!node)
      return fail(where + ": expected an object");
    std::optional<StringRef> name = node->getString("name");
    std::optional<double> cost = node->getNumber("cost");
    std::optional<int64_t> bytes = node->getInteger("bytes");
    if (!name)
      return fail(where + ": expected a string \"name\"");
    where += " ('" + name->str() + "')";
    if (!cost || *cost < 0)
      return fail(where + ": expected a number \"cost\" >= 0");
    if (!bytes || *bytes < 0)
      return fail(where + ": expected an integer \"bytes\" >= 0");
    if (!index.emplace(name->str(), i).second)
      return fail(where + ": the name is taken by an earlier node");
    for (StringRef mark : {"must_save", "must_recompute"})
      if (node->get(mark))
        return fail(where + ": \"" + mark +
                    "\" is not supported by the chain planner");
    std::vector<std::string> inputs;
    if (const json::Array *list = node->getArray("inputs"))
      for (const json::Value &input : *list)
        if (std::optional<StringRef> text = input.getAsString())
          inputs.push_back(text->str());
        else
          return fail(where + ": \"inputs\" must be names (strings)");
    std::vector<std::string> expected;
    if (i)
      expected.push_back(previous);
    if (inputs != expected)
      return fail(where +
                  ": ga-remat plans chains, where each node reads "
                  "exactly the one before it; expected inputs [" +
                  (i ? "\"" + previous + "\"" : std::string()) + "], got " +
                  std::to_string(inputs.size()) + " input(s)");
    costs.push_back(*cost);
    largest = std::max(largest, *bytes);
    previous = name->str();
  }
  bool uniform = std::all_of(costs.begin(), costs.end(),
                             [&](double c) { return c == costs.front(); });
  if (!uniform && costs.size() > 160)
    return fail("'" + inputFile + "': " + std::to_string(costs.size()) +
                " nodes of different costs; the planner takes up to 160 "
                "(a uniform chain any length)");
  int64_t states = slots;
  if (budget > 0) {
    states = largest ? budget / largest : static_cast<int64_t>(costs.size());
    if (states < 1)
      return fail("a budget of " + std::to_string(budget) +
                  " bytes holds no state; the smallest feasible budget is " +
                  std::to_string(largest) +
                  " bytes (one state of the "
                  "largest, " +
                  std::to_string(largest) + " bytes)");
  }
  ga::remat::ChainPlan plan = ga::remat::planChain(costs, states);
  double forward = 0;
  for (double c : costs)
    forward += c;
  outs() << "steps: " << costs.size() << "\n";
  outs() << "states: " << states << " (peak " << plan.peakStates << ", "
         << plan.peakStates * largest << " bytes)\n";
  outs() << "recompute_cost: " << format("%g", plan.cost) << " ("
         << format("%.3f", forward ? plan.cost / forward : 0.0)
         << " of one forward pass)\n";
  if (printSchedule)
    for (const ga::remat::Action &action : plan.actions) {
      switch (action.kind) {
      case ga::remat::Action::Advance:
        outs() << "advance " << action.from << " " << action.to << "\n";
        break;
      case ga::remat::Action::Store:
        outs() << "store " << action.from << "\n";
        break;
      case ga::remat::Action::Free:
        outs() << "free " << action.from << "\n";
        break;
      case ga::remat::Action::Reverse:
        outs() << "reverse " << action.from << "\n";
        break;
      }
    }
  return 0;
}
