//===- TrainEntry.cpp - The roles of a training step's arguments ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "TrainEntry.h"

#include "train/TrainOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace ga {

const char *TrainEntry::name(TrainArgKind kind) {
  switch (kind) {
  case TrainArgKind::Param:
    return "parameter";
  case TrainArgKind::Batch:
    return "batch operand";
  case TrainArgKind::FirstMoment:
    return "first moment";
  case TrainArgKind::SecondMoment:
    return "second moment";
  case TrainArgKind::LearningRate:
    return "learning rate";
  case TrainArgKind::StepNumber:
    return "step number";
  }
  return "argument";
}

namespace {

/// The analysis of one function, part by part (see analyzeTrainEntry).
class EntryAnalysis {
public:
  EntryAnalysis(func::FuncOp function, train::StepOp step, TrainEntry &entry)
      : function(function), step(step), entry(entry),
        body(function.getBody().front()), fn("@" + function.getSymName().str()),
        roles(function.getNumArguments()) {}

  LogicalResult readStepOperands();
  LogicalResult readUpdates();
  LogicalResult checkArguments();
  void readInitializers();
  LogicalResult readResults();

private:
  /// The argument `value` is, or a located failure.
  FailureOr<unsigned> argumentOf(Value value, Operation *user,
                                 const Twine &what);
  /// Gives argument `arg` its role (one learning rate or step number may be
  /// shared by every optimizer; any other second role is an error).
  LogicalResult assign(unsigned arg, TrainArg role, Operation *user);
  /// The parameter an optimizer updates.
  FailureOr<unsigned> paramOf(Value value, Operation *op);
  /// A learning rate or step number of an optimizer.
  LogicalResult scalar(Value value, Operation *op, TrainArgKind kind);
  /// Records `op` as the update of `param`, once.
  LogicalResult claim(unsigned param, Operation *op);
  LogicalResult readUpdate(Operation *op);

  func::FuncOp function;
  train::StepOp step;
  TrainEntry &entry;
  Block &body;
  std::string fn;
  SmallVector<std::optional<TrainArg>> roles;
  SmallVector<Operation *> updates;
};

FailureOr<unsigned> EntryAnalysis::argumentOf(Value value, Operation *user,
                                              const Twine &what) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &body) {
    user->emitError() << what << " is not an argument of " << fn
                      << ": ga-train feeds it from one step to the next";
    return failure();
  }
  return arg.getArgNumber();
}

LogicalResult EntryAnalysis::assign(unsigned arg, TrainArg role,
                                    Operation *user) {
  if (roles[arg] &&
      (roles[arg]->kind != role.kind || roles[arg]->index != role.index)) {
    bool shared = role.kind == roles[arg]->kind &&
                  (role.kind == TrainArgKind::LearningRate ||
                   role.kind == TrainArgKind::StepNumber);
    if (!shared)
      return user->emitError()
             << "argument #" << arg << " of " << fn << " is both a "
             << TrainEntry::name(roles[arg]->kind) << " and a "
             << TrainEntry::name(role.kind);
  }
  roles[arg] = role;
  return success();
}

/// The train.step's parameters and batch operands: arguments of the
/// function.
LogicalResult EntryAnalysis::readStepOperands() {
  entry.numParams = step.getParams().size();
  entry.numBatch = step.getBatch().size();
  for (auto [i, param] : llvm::enumerate(step.getParams())) {
    FailureOr<unsigned> arg = argumentOf(
        param, step, "parameter #" + Twine(i) + " of the train.step");
    if (failed(arg) ||
        failed(assign(*arg, {TrainArgKind::Param, unsigned(i)}, step)))
      return failure();
    entry.paramArg.push_back(*arg);
  }
  for (auto [j, operand] : llvm::enumerate(step.getBatch())) {
    FailureOr<unsigned> arg = argumentOf(
        operand, step, "batch operand #" + Twine(j) + " of the train.step");
    if (failed(arg) ||
        failed(assign(*arg, {TrainArgKind::Batch, unsigned(j)}, step)))
      return failure();
    entry.batchArg.push_back(*arg);
  }
  return success();
}

FailureOr<unsigned> EntryAnalysis::paramOf(Value value, Operation *op) {
  FailureOr<unsigned> arg = argumentOf(value, op, "the updated parameter");
  if (failed(arg))
    return failure();
  if (!roles[*arg] || roles[*arg]->kind != TrainArgKind::Param) {
    op->emitError() << "updates argument #" << *arg << " of " << fn
                    << ", which is not a parameter of the train.step";
    return failure();
  }
  return roles[*arg]->index;
}

LogicalResult EntryAnalysis::scalar(Value value, Operation *op,
                                    TrainArgKind kind) {
  FailureOr<unsigned> arg =
      argumentOf(value, op, Twine("the ") + TrainEntry::name(kind));
  if (failed(arg))
    return failure();
  return assign(*arg, {kind, 0}, op);
}

LogicalResult EntryAnalysis::claim(unsigned param, Operation *op) {
  if (updates[param])
    return op->emitError() << "parameter #" << param
                           << " is updated twice (first by "
                           << updates[param]->getName() << ")";
  updates[param] = op;
  return success();
}

/// An optimizer update (its parameter, moments, learning rate and step
/// number), or the one clip.
LogicalResult EntryAnalysis::readUpdate(Operation *op) {
  if (auto adamw = dyn_cast<train::AdamWOp>(op)) {
    entry.adamw = true;
    FailureOr<unsigned> p = paramOf(adamw.getParam(), op);
    if (failed(p) || failed(claim(*p, op)))
      return failure();
    FailureOr<unsigned> m = argumentOf(adamw.getM(), op, "the first moment");
    FailureOr<unsigned> v = argumentOf(adamw.getV(), op, "the second moment");
    return success(
        succeeded(m) && succeeded(v) &&
        succeeded(assign(*m, {TrainArgKind::FirstMoment, *p}, op)) &&
        succeeded(assign(*v, {TrainArgKind::SecondMoment, *p}, op)) &&
        succeeded(scalar(adamw.getLr(), op, TrainArgKind::LearningRate)) &&
        succeeded(scalar(adamw.getStep(), op, TrainArgKind::StepNumber)));
  }
  if (auto sgd = dyn_cast<train::SgdOp>(op)) {
    FailureOr<unsigned> p = paramOf(sgd.getParam(), op);
    return success(
        succeeded(p) && succeeded(claim(*p, op)) &&
        succeeded(scalar(sgd.getLr(), op, TrainArgKind::LearningRate)));
  }
  if (auto clip = dyn_cast<train::ClipByGlobalNormOp>(op)) {
    if (entry.clip)
      return op->emitError()
             << fn << " clips twice; ga-train's --clip sets one max_norm";
    entry.clip = clip;
  }
  return success();
}

/// Every parameter's optimizer update.
LogicalResult EntryAnalysis::readUpdates() {
  updates.assign(entry.numParams, nullptr);
  WalkResult walked = function.walk([&](Operation *op) {
    return failed(readUpdate(op)) ? WalkResult::interrupt()
                                  : WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();
  for (unsigned i = 0; i < entry.numParams; ++i)
    if (!updates[i])
      return step.emitError()
             << "parameter #" << i << " (argument #" << entry.paramArg[i]
             << " of " << fn
             << ") has no optimizer update (train.adamw or train.sgd)";
  return success();
}

/// Every argument has a role; learning rates and step numbers are 0-d.
LogicalResult EntryAnalysis::checkArguments() {
  for (unsigned k = 0; k < roles.size(); ++k) {
    if (!roles[k])
      return function.emitError()
             << "argument #" << k << " of " << fn
             << " is none of what ga-train feeds: a parameter or batch "
                "operand of the train.step, a moment, learning rate or step "
                "number of an optimizer";
    TrainArgKind kind = roles[k]->kind;
    auto type = cast<RankedTensorType>(function.getArgumentTypes()[k]);
    if ((kind == TrainArgKind::LearningRate ||
         kind == TrainArgKind::StepNumber) &&
        type.getRank() != 0)
      return function.emitError()
             << "the " << TrainEntry::name(kind) << " (argument #" << k
             << " of " << fn << ") must be a 0-d tensor, got " << type;
    entry.args.push_back(*roles[k]);
  }
  return success();
}

/// Parameters' initializers (the dialect's verifier has checked that
/// train.init is "zeros", "ones" or a non-negative float) and names.
void EntryAnalysis::readInitializers() {
  for (unsigned i = 0; i < entry.numParams; ++i) {
    ParamInit init;
    Attribute attr = function.getArgAttr(entry.paramArg[i], "train.init");
    if (auto text = dyn_cast_or_null<StringAttr>(attr))
      init.kind =
          text.getValue() == "ones" ? ParamInit::Ones : ParamInit::Zeros;
    else if (auto stddev = dyn_cast_or_null<FloatAttr>(attr))
      init.stddev = stddev.getValueAsDouble();
    entry.inits.push_back(init);
    auto name =
        function.getArgAttrOfType<StringAttr>(entry.paramArg[i], "train.name");
    entry.names.push_back(name ? name.str() : std::string());
  }
}

/// What each result is; the loss and every new value returned once.
LogicalResult EntryAnalysis::readResults() {
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<unsigned> newValues(3 * entry.numParams, 0);
  bool loss = false;
  auto paramIndex = [&](Value param) {
    return roles[cast<BlockArgument>(param).getArgNumber()]->index;
  };
  for (Value value : ret.getOperands()) {
    TrainResult result{TrainResultKind::Other, 0};
    auto opResult = dyn_cast<OpResult>(value);
    Operation *def = opResult ? opResult.getOwner() : nullptr;
    if (auto adamw = dyn_cast_or_null<train::AdamWOp>(def)) {
      unsigned which = opResult.getResultNumber();
      result = {which == 0   ? TrainResultKind::NewParam
                : which == 1 ? TrainResultKind::NewFirstMoment
                             : TrainResultKind::NewSecondMoment,
                paramIndex(adamw.getParam())};
      ++newValues[3 * result.index + which];
    } else if (auto sgd = dyn_cast_or_null<train::SgdOp>(def)) {
      result = {TrainResultKind::NewParam, paramIndex(sgd.getParam())};
      ++newValues[3 * result.index];
    } else if (def == step && value == step.getLoss()) {
      result.kind = TrainResultKind::Loss;
      loss = true;
    } else if ((isa_and_nonnull<train::GlobalNormOp>(def)) ||
               (def == entry.clip && def && value == entry.clip.getNorm())) {
      result.kind = TrainResultKind::GradNorm;
    } else if (def == step && llvm::is_contained(step.getAux(), value) &&
               cast<RankedTensorType>(value.getType()).getRank() == 0 &&
               isa<IntegerType>(
                   cast<RankedTensorType>(value.getType()).getElementType())) {
      result.kind = TrainResultKind::Tokens;
    }
    entry.results.push_back(result);
  }
  if (!loss)
    return ret.emitError() << fn
                           << " does not return the loss of its train.step";
  for (unsigned i = 0; i < entry.numParams; ++i) {
    static const char *const what[] = {"new value", "new first moment",
                                       "new second moment"};
    for (unsigned which = 0; which < (entry.adamw ? 3u : 1u); ++which) {
      if (which && !isa<train::AdamWOp>(updates[i]))
        continue;
      if (newValues[3 * i + which] != 1)
        return ret.emitError()
               << "the " << what[which] << " of parameter #" << i
               << " (argument #" << entry.paramArg[i] << ") is returned "
               << newValues[3 * i + which]
               << " times; ga-train feeds it back from exactly one result";
    }
  }
  return success();
}

} // namespace

FailureOr<TrainEntry> analyzeTrainEntry(func::FuncOp function) {
  std::string fn = "@" + function.getSymName().str();
  if (function.isExternal())
    return function.emitError() << fn << " has no body";
  SmallVector<train::StepOp> steps;
  function.walk([&](train::StepOp step) { steps.push_back(step); });
  if (steps.size() != 1)
    return function.emitError()
           << "ga-train runs a function with exactly one train.step; " << fn
           << " has " << steps.size();
  TrainEntry entry;
  entry.step = steps.front();
  EntryAnalysis analysis(function, steps.front(), entry);
  if (failed(analysis.readStepOperands()) || failed(analysis.readUpdates()) ||
      failed(analysis.checkArguments()))
    return failure();
  analysis.readInitializers();
  if (failed(analysis.readResults()))
    return failure();
  return entry;
}

} // namespace ga
