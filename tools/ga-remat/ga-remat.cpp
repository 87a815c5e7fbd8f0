//===- ga-remat.cpp - Plan checkpoints of a chain read from JSON ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-remat graph.json (--budget BYTES | --slots S) [--schedule] [--milp]
//
// Plans the reversal of a graph (a forward pass, then the backward pass)
// for graphs that other compilers or benchmarks write. The graph:
//
//   {"nodes": [{"name": "l0", "cost": 2.5, "bytes": 4096},
//              {"name": "l1", "cost": 2.5, "bytes": 4096, "inputs": ["l0"]},
//              ...],
//    "input_bytes": 4096}
//
// `cost` is the work of a node's forward (any unit: FLOPs, seconds),
// `bytes` the size of the output it writes, `inputs` earlier nodes (none:
// the graph's input, of `input_bytes`, by default the largest node's).
// `must_save` / `must_recompute` (booleans) mark nodes never recomputed /
// never held; `stage_bytes` (an integer, 0 by default) is what the stage
// that runs a node's adjoint holds besides the outputs held then (its own
// output, the adjoints' temporaries; train-plan-remat's export measures
// it), `forward_bytes` what the forward pass holds while the node runs
// besides the earlier outputs kept for the backward pass; `checkpoint`
// (boolean) marks outputs another planner holds, whose plan the MILP may start
// from. A chain (each node reads the one before it, no marks) is planned by the
// dynamic program of ga/Remat/Chain.h: a budget in bytes holds floor(budget /
// the largest output) states, the input included. Anything else, or any graph
// with --milp, by the MILP of ga/Remat/Graph.h (CBC, --time-limit seconds,
// warm-started from the greedy heuristic's plan); graphs of more than
// --milp-max-nodes nodes by that heuristic alone; --slots S then means a budget
// of S times the largest output.
//
//===----------------------------------------------------------------------===//

#include "../common/Tool.h"

#include "ga/Remat/Chain.h"
#include "ga/Remat/Graph.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <optional>

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

static cl::opt<bool>
    useMilp("milp",
            cl::desc("Solve with the MILP (ga/Remat/Graph.h) even on a "
                     "chain; on a chain, also print the dynamic program's "
                     "cost"),
            cl::init(false), cl::cat(category));
static cl::opt<double> timeLimit("time-limit",
                                 cl::desc("The MILP's time limit in seconds"),
                                 cl::init(60.0), cl::cat(category));
static cl::opt<int64_t> milpMaxNodes(
    "milp-max-nodes",
    cl::desc("Graphs of more nodes are planned by the greedy heuristic "
             "alone (the MILP's variables grow as the square of the nodes)"),
    cl::init(80), cl::cat(category));

static cl::opt<ga::remat::StageMemory> stageMemory(
    "stage-memory", cl::desc("What the MILP counts in a stage's memory"),
    cl::values(
        clEnumValN(ga::remat::StageMemory::Held, "held",
                   "the outputs held at its start or kept for the next "
                   "stage (values made and used within it do not count: a "
                   "lower bound)"),
        clEnumValN(ga::remat::StageMemory::Computed, "computed",
                   "also every output it computes, all alive at once (an "
                   "upper bound on any order of its computations)")),
    cl::init(ga::remat::StageMemory::Held), cl::cat(category));

using ga::tool::fail;

namespace {

/// The problem read from the input: the nodes, their costs and sizes.
struct Problem {
  std::vector<double> costs;
  std::vector<ga::remat::GraphNode> graph;
  int64_t largest = 0, inputBytes = 0;
  /// The first node that makes the graph something else than a chain, and
  /// why (empty for a chain).
  std::string notChain;
  double forward = 0;
  /// The nodes marked "checkpoint": another planner's held outputs, the
  /// MILP's warm start (empty when none is marked).
  std::vector<bool> checkpoint;
};

/// Reads node #i into `problem` (`index`: the earlier nodes by name;
/// `previous`: the name of the node before it). Returns "" or the reason.
std::string readNode(const json::Object *node, size_t i,
                     std::map<std::string, size_t> &index,
                     std::string &previous, Problem &problem) {
  std::string where = "'" + inputFile + "': node #" + std::to_string(i);
  if (!node)
    return where + ": expected an object";
  std::optional<StringRef> name = node->getString("name");
  std::optional<double> cost = node->getNumber("cost");
  std::optional<int64_t> bytes = node->getInteger("bytes");
  if (!name)
    return where + ": expected a string \"name\"";
  where += " ('" + name->str() + "')";
  if (!cost || *cost < 0)
    return where + ": expected a number \"cost\" >= 0";
  if (!bytes || *bytes < 0)
    return where + ": expected an integer \"bytes\" >= 0";
  if (!index.emplace(name->str(), i).second)
    return where + ": the name is taken by an earlier node";
  ga::remat::GraphNode graphNode;
  graphNode.cost = *cost;
  graphNode.bytes = *bytes;
  for (StringRef mark : {"must_save", "must_recompute"})
    if (const json::Value *value = node->get(mark)) {
      std::optional<bool> flag = value->getAsBoolean();
      if (!flag)
        return where + ": \"" + mark.str() + "\" must be a boolean";
      (mark == "must_save" ? graphNode.mustSave : graphNode.mustRecompute) =
          *flag;
      if (*flag && problem.notChain.empty())
        problem.notChain = where + ": marked \"" + mark.str() + "\"";
    }
  for (StringRef field : {"stage_bytes", "forward_bytes"})
    if (const json::Value *value = node->get(field)) {
      std::optional<int64_t> extra = value->getAsInteger();
      if (!extra || *extra < 0)
        return where + ": \"" + field.str() + "\" must be an integer >= 0";
      (field == "stage_bytes" ? graphNode.stageBytes : graphNode.forwardBytes) =
          *extra;
      if (*extra && problem.notChain.empty())
        problem.notChain = where + ": has \"" + field.str() + "\"";
    }
  if (graphNode.mustSave && graphNode.mustRecompute)
    return where + ": marked both \"must_save\" and \"must_recompute\"";
  if (const json::Value *value = node->get("checkpoint")) {
    std::optional<bool> flag = value->getAsBoolean();
    if (!flag)
      return where + ": \"checkpoint\" must be a boolean";
    if (*flag) {
      problem.checkpoint.resize(i + 1, false);
      problem.checkpoint[i] = true;
    }
  }
  std::vector<std::string> inputs;
  if (const json::Array *list = node->getArray("inputs")) {
    for (const json::Value &input : *list) {
      std::optional<StringRef> text = input.getAsString();
      if (!text)
        return where + ": \"inputs\" must be names (strings)";
      inputs.push_back(text->str());
    }
  }
  for (const std::string &input : inputs) {
    auto it = index.find(input);
    if (it == index.end() || it->second == i)
      return where + ": input '" + input +
             "' is not an earlier node (nodes are listed in topological "
             "order)";
    graphNode.inputs.push_back(static_cast<int64_t>(it->second));
  }
  std::vector<std::string> expected;
  if (i)
    expected.push_back(previous);
  if (inputs != expected && problem.notChain.empty())
    problem.notChain = where + ": reads " + std::to_string(inputs.size()) +
                       " input(s), not exactly the node before it";
  problem.costs.push_back(*cost);
  problem.forward += *cost;
  problem.graph.push_back(graphNode);
  problem.largest = std::max(problem.largest, *bytes);
  previous = name->str();
  return "";
}

/// Reads --input. Returns "" or the reason.
std::string readProblem(Problem &problem) {
  auto buffer = MemoryBuffer::getFile(inputFile);
  if (!buffer)
    return "cannot read '" + inputFile + "': " + buffer.getError().message();
  Expected<json::Value> parsed = json::parse((*buffer)->getBuffer());
  if (!parsed)
    return "'" + inputFile + "' is not JSON: " + toString(parsed.takeError());
  const json::Object *root = parsed->getAsObject();
  const json::Array *nodes = root ? root->getArray("nodes") : nullptr;
  if (!nodes || nodes->empty())
    return "'" + inputFile +
           "': expected an object with a non-empty array \"nodes\"";
  std::map<std::string, size_t> index;
  std::string previous;
  for (size_t i = 0; i < nodes->size(); ++i)
    if (std::string error =
            readNode((*nodes)[i].getAsObject(), i, index, previous, problem);
        !error.empty())
      return error;
  problem.inputBytes = problem.largest;
  if (const json::Value *value = root->get("input_bytes")) {
    std::optional<int64_t> bytes = value->getAsInteger();
    if (!bytes || *bytes < 0)
      return "'" + inputFile + "': \"input_bytes\" must be an integer >= 0";
    problem.inputBytes = *bytes;
    if (problem.notChain.empty() && problem.inputBytes != problem.largest)
      problem.notChain = "'" + inputFile +
                         "': \"input_bytes\" differs from the largest output";
  }
  return "";
}

/// A graph (or --milp): the MILP, or the greedy heuristic beyond
/// --milp-max-nodes.
int planGraph(const Problem &problem, int64_t states) {
  const auto &graph = problem.graph;
  if (timeLimit <= 0)
    return fail("--time-limit must be > 0 seconds");
  if (milpMaxNodes < 0)
    return fail("--milp-max-nodes must be >= 0, got " +
                Twine(milpMaxNodes.getValue()));
  bool heuristic = static_cast<int64_t>(graph.size()) > milpMaxNodes;
  if (heuristic && stageMemory == ga::remat::StageMemory::Computed)
    return fail("--stage-memory=computed needs the MILP, and the graph has " +
                Twine(graph.size()) + " nodes, more than --milp-max-nodes=" +
                Twine(milpMaxNodes.getValue()));
  if (!heuristic && !ga::remat::haveGraphSolver())
    return fail((problem.notChain.empty()
                     ? std::string("--milp")
                     : "this graph is not a chain (" + problem.notChain + ")") +
                " needs the MILP, and ga-remat was built without a MILP "
                "solver (install Debian's coinor-libcbc-dev and "
                "reconfigure)");
  int64_t memory = budget > 0 ? budget : slots * problem.largest;
  // The plan of the nodes marked "checkpoint", a warm start beside the
  // greedy one.
  std::optional<ga::remat::GraphPlan> given;
  if (!heuristic && !problem.checkpoint.empty()) {
    std::vector<bool> checkpoint(problem.checkpoint);
    checkpoint.resize(graph.size(), false);
    given = ga::remat::planGraphCheckpoints(graph, problem.inputBytes, memory,
                                            checkpoint, stageMemory);
  }
  ga::remat::GraphPlan plan =
      heuristic
          ? ga::remat::planGraphGreedy(graph, problem.inputBytes, memory)
          : ga::remat::solveGraph(graph, problem.inputBytes, memory, timeLimit,
                                  stageMemory, given ? &*given : nullptr);
  outs() << "nodes: " << graph.size() << "\n";
  outs() << "budget: " << memory << " bytes (input " << problem.inputBytes
         << ")\n";
  if (!heuristic)
    outs() << "stage_memory: "
           << (stageMemory == ga::remat::StageMemory::Held ? "held"
                                                           : "computed")
           << "\n";
  if (heuristic)
    outs() << "heuristic: more than " << milpMaxNodes
           << " nodes (--milp-max-nodes), " << format("%.3f", plan.seconds)
           << " s\n";
  else
    outs() << "milp: " << plan.variables << " variables, " << plan.constraints
           << " constraints, " << format("%.3f", plan.seconds) << " s\n";
  if (given) {
    if (given->status == ga::remat::GraphPlan::Heuristic)
      outs() << "checkpoints_cost: " << format("%g", given->cost)
             << " (the nodes marked \"checkpoint\" held)\n";
    else
      outs() << "checkpoints_cost: none (the nodes marked \"checkpoint\" "
             << "do not fit: " << given->message << ")\n";
  }
  if (plan.warmStartCost >= 0)
    outs() << "warm_start_cost: " << format("%g", plan.warmStartCost)
           << " (the greedy plan the solver started from)\n";
  switch (plan.status) {
  case ga::remat::GraphPlan::Optimal:
  case ga::remat::GraphPlan::Feasible:
  case ga::remat::GraphPlan::Heuristic:
    break;
  default:
    return fail("no plan within " + std::to_string(memory) +
                " bytes: " + plan.message);
  }
  if (heuristic)
    outs() << "status: heuristic\n";
  else
    outs() << "status: "
           << (plan.status == ga::remat::GraphPlan::Optimal ? "optimal"
                                                            : "feasible")
           << " (bound " << format("%g", plan.bound) << ")\n";
  outs() << "recompute_cost: " << format("%g", plan.cost) << " ("
         << format("%.3f", problem.forward ? plan.cost / problem.forward : 0.0)
         << " of one forward pass)\n";
  if (problem.notChain.empty() && states >= 1)
    outs() << "dp_cost: "
           << format("%g", ga::remat::planChain(problem.costs, states).cost)
           << "\n";
  if (printSchedule)
    for (size_t k = 0; k < graph.size(); ++k) {
      outs() << "stage " << k << " (adjoint of node " << graph.size() - 1 - k
             << "): held";
      for (size_t j = 0; j < graph.size(); ++j)
        if (plan.held[k][j])
          outs() << " " << j;
      outs() << "; computed";
      for (size_t j = 0; j < graph.size(); ++j)
        if (plan.computed[k][j])
          outs() << " " << j;
      outs() << "\n";
    }
  return 0;
}

/// A chain: Revolve's optimum by the dynamic program.
int planChain(const Problem &problem, int64_t states) {
  const auto &costs = problem.costs;
  bool uniform = std::all_of(costs.begin(), costs.end(),
                             [&](double c) { return c == costs.front(); });
  if (!uniform && costs.size() > 160)
    return fail("'" + inputFile + "': " + std::to_string(costs.size()) +
                " nodes of different costs; the planner takes up to 160 "
                "(a uniform chain any length)");
  int64_t largest = problem.largest;
  if (states < 1)
    return fail("a budget of " + std::to_string(budget) +
                " bytes holds no state; the smallest feasible budget is " +
                std::to_string(largest) + " bytes (one state of the largest, " +
                std::to_string(largest) + " bytes)");
  ga::remat::ChainPlan plan = ga::remat::planChain(costs, states);
  outs() << "steps: " << costs.size() << "\n";
  outs() << "states: " << states << " (peak " << plan.peakStates << ", "
         << plan.peakStates * largest << " bytes)\n";
  outs() << "recompute_cost: " << format("%g", plan.cost) << " ("
         << format("%.3f", problem.forward ? plan.cost / problem.forward : 0.0)
         << " of one forward pass)\n";
  if (!printSchedule)
    return 0;
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

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  ga::tool::name() = "ga-remat";
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "ga-remat: the least recomputation that reverses a graph within a "
      "memory budget (chains: Revolve's optimum by a dynamic program; "
      "graphs: a MILP)\n");
  if ((budget > 0) == (slots > 0))
    return fail("give exactly one of --budget (bytes, > 0) and --slots "
                "(> 0)");
  Problem problem;
  if (std::string error = readProblem(problem); !error.empty())
    return fail(error);
  // A budget in bytes holds whole states of the largest output.
  int64_t states = slots;
  if (budget > 0)
    states = problem.largest ? budget / problem.largest
                             : static_cast<int64_t>(problem.costs.size());
  if (useMilp || !problem.notChain.empty())
    return planGraph(problem, states);
  return planChain(problem, states);
}
