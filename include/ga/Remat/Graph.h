//===- Graph.h - Optimal checkpointing of a graph by MILP -------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Reversing a computation graph (nodes in topological order, each reading
// the outputs of earlier nodes or the graph's input) within a memory budget,
// as a mixed-integer program in the stage form of Checkmate (Jain et al.,
// MLSys 2020), with the memory accounting of Revolve generalized to graphs.
//
// The backward pass has one stage per node, in reverse order: stage k runs
// the adjoint of node t = n-1-k, which reads the outputs of t's inputs (the
// graph's input is always held). In a stage, nodes before t may be
// (re)computed from values held or computed in that stage; t itself runs
// fused with its adjoint. Between stages, outputs are stored (held); the
// memory of a stage is the graph input plus every output held at its start
// or stored for a later stage, at most the budget. Values computed and
// consumed within a stage are not counted (they overwrite a working state,
// as an advance does in Revolve). Variables: R[k][i] (node i computed in
// stage k), S[k][j] (output j held at the start of stage k), H[k][j] (held
// during stage k); minimize the work of the computed nodes.
//
// On a chain with unit bytes and a budget of s states this is Revolve's
// problem: its optimum is the dynamic program's (Chain.h), which the tests
// check. The solver is CBC (Debian's coinor-libcbc-dev), time-limited and
// warm-started from planGraphGreedy's plan, so that it returns at least
// that plan when the time runs out; ga-opt builds without it, and then
// solveGraph reports that it cannot. planGraphGreedy alone plans graphs
// too large for the MILP (its variables grow as the square of the nodes).
//
//===----------------------------------------------------------------------===//

#ifndef GA_REMAT_GRAPH_H
#define GA_REMAT_GRAPH_H

#include <cstdint>
#include <string>
#include <vector>

namespace ga::remat {

struct GraphNode {
  double cost = 0;             ///< the work of its forward
  int64_t bytes = 0;           ///< the size of its output
  std::vector<int64_t> inputs; ///< earlier nodes (none: the graph input)
  bool mustSave = false;       ///< never recomputed
  bool mustRecompute = false;  ///< never held between stages
  /// Held in the stage that runs its adjoint besides the outputs held then
  /// (its own output, the adjoints' temporaries): the stage's budget is
  /// less by it.
  int64_t stageBytes = 0;
  /// Held while it runs in the forward pass besides the outputs of earlier
  /// nodes kept for the backward pass (its temporaries, its output).
  int64_t forwardBytes = 0;
};

struct GraphPlan {
  /// Optimal and Feasible: the solver's; Heuristic: planGraphGreedy's.
  enum Status {
    Optimal,
    Feasible,
    Heuristic,
    Infeasible,
    TimeLimit,
    Unavailable
  };
  Status status = Unavailable;
  double cost = 0;    ///< the work of every forward computation, fused
                      ///< ones excluded (Revolve's count on chains)
  double bound = 0;   ///< the solver's lower bound on the cost
  double seconds = 0; ///< solve time
  int64_t variables = 0, constraints = 0;
  /// computed[k][i]: node i computed in stage k (stage k reverses node
  /// n-1-k); held[k][j]: output j held at the start of stage k.
  std::vector<std::vector<bool>> computed, held;
  std::string message; ///< why there is no plan
  /// The cost of the plan the solver started from (planGraphGreedy's), or
  /// -1 when it started from none.
  double warmStartCost = -1;
};

/// What a stage's memory counts. Held: the outputs held at its start or
/// kept for the next stage (Checkmate's stage form; the values made and
/// used within a stage do not count, so the optimum is a lower bound on
/// what a schedule needs). Computed: also every output a stage of the
/// backward pass computes, as if all were alive at once (an upper bound on
/// any order of the stage's computations; on a chain of units, what
/// train-plan-remat's segment model counts for a checkpointed segment's
/// backward pass). Stage 0, the forward pass, counts what it keeps.
enum class StageMemory { Held, Computed };

/// Whether ga-opt was built with the MILP solver.
bool haveGraphSolver();

/// The least-work reversal of `nodes` (topologically ordered) whose memory
/// stays within `budget` bytes, the graph's input (`inputBytes`) included.
/// Stops after `seconds`. A plan is checked by checkGraphPlan before it is
/// returned; a violation is a bug and aborts.
/// `start`, when given: a plan the solver may start from besides the greedy
/// one (planGraphCheckpoints' plan of another planner's checkpoints), used
/// when it passes the check with `memory` and costs less.
GraphPlan solveGraph(const std::vector<GraphNode> &nodes, int64_t inputBytes,
                     int64_t budget, double seconds,
                     StageMemory memory = StageMemory::Held,
                     const GraphPlan *start = nullptr);

/// The plan of planGraphGreedy's form for a given set of held outputs
/// (`checkpoint[j]`: output j held from stage 0 until its last reader's
/// stage): status Heuristic, or Infeasible with the check's message when
/// it does not pass checkGraphPlan with `memory`.
GraphPlan planGraphCheckpoints(const std::vector<GraphNode> &nodes,
                               int64_t inputBytes, int64_t budget,
                               const std::vector<bool> &checkpoint,
                               StageMemory memory = StageMemory::Held);

/// A plan without a solver, for any graph, in time polynomial in its size:
/// one fixed set of outputs held from stage 0 until their last reader's
/// stage (checkpoints; the must_save nodes among them), every stage
/// recomputing from them what its adjoint reads. The set is grown greedily,
/// by work saved per byte held, while it fits (lazily: a candidate whose
/// gain is no longer positive is dropped for good, exact only when gains
/// never grow as others are added). Status Heuristic, or
/// Infeasible when even the must_save outputs do not fit. Checked by
/// checkGraphPlan.
GraphPlan planGraphGreedy(const std::vector<GraphNode> &nodes,
                          int64_t inputBytes, int64_t budget);

/// Replays a plan: every computation reads values held or computed in its
/// stage, every adjoint finds its inputs, held values were computed before,
/// memory stays within `budget`. Returns the cost; on a violation, `error`
/// says which stage and node.
bool checkGraphPlan(const std::vector<GraphNode> &nodes, int64_t inputBytes,
                    int64_t budget, const GraphPlan &plan, double &cost,
                    std::string &error, StageMemory memory = StageMemory::Held);

} // namespace ga::remat

#endif // GA_REMAT_GRAPH_H
