//===- TrainDialect.cpp - The train dialect -------------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "train/TrainDialect.h"
#include "train/MemoryPlan.h"
#include "train/TrainOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;
using namespace ga::train;

#include "train/TrainDialect.cpp.inc"

namespace {
/// Calls inside the regions of train ops (a front end's forward function
/// called from a train.step body, as ga-import writes it) may be inlined,
/// and train ops may be inlined with the function that holds them: their
/// regions only read the values they are given.
struct TrainInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;

  bool isLegalToInline(Operation *call, Operation *callable,
                       bool wouldBeCloned) const final {
    return true;
  }
  bool isLegalToInline(Region *dest, Region *src, bool wouldBeCloned,
                       IRMapping &valueMapping) const final {
    return true;
  }
  bool isLegalToInline(Operation *op, Region *dest, bool wouldBeCloned,
                       IRMapping &valueMapping) const final {
    return true;
  }
};
} // namespace

void TrainDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "train/TrainOps.cpp.inc"
      >();
  addInterfaces<TrainInlinerInterface>();
}

/// The number of results of the function signature recorded on `op`, if
/// any.
static std::optional<unsigned> recordedResults(Operation *op) {
  auto signature = op->getAttrOfType<TypeAttr>(
      TrainDialect::SignatureAttrHelper::getNameStr());
  if (!signature)
    return std::nullopt;
  if (auto type = dyn_cast<FunctionType>(signature.getValue()))
    return type.getNumResults();
  return std::nullopt;
}

/// train.memory_plan: a dictionary with every entry of the plan record, on
/// a train.step.
static LogicalResult verifyMemoryPlan(Operation *op, StringRef name,
                                      Attribute value) {
  auto plan = dyn_cast<DictionaryAttr>(value);
  if (!plan)
    return op->emitError() << "'" << name << "' must be a dictionary, got "
                           << value;
  if (!isa<StepOp>(op))
    return op->emitError() << "'" << name << "' belongs on a train.step, "
                           << "not on '" << op->getName() << "'";
  std::string missing = MemoryPlanRecord::missingEntry(plan);
  if (!missing.empty())
    return op->emitError() << "'" << name << "' needs an integer '" << missing
                           << "', got " << value;
  return success();
}

/// train.argument_names: one name without whitespace per argument of the
/// recorded signature, on a function.
static LogicalResult verifyArgumentNames(Operation *op, StringRef name,
                                         Attribute value) {
  auto names = dyn_cast<ArrayAttr>(value);
  auto isName = [](Attribute a) {
    auto text = dyn_cast<StringAttr>(a);
    return text && llvm::none_of(text.getValue(),
                                 [](char c) { return llvm::isSpace(c); });
  };
  if (!names || !llvm::all_of(names, isName))
    return op->emitError() << "'" << name
                           << "' must be an array of strings without "
                              "whitespace, got "
                           << value;
  if (!isa<FunctionOpInterface>(op))
    return op->emitError() << "'" << name << "' belongs on a function, "
                           << "not on '" << op->getName() << "'";
  if (auto signature = op->getAttrOfType<TypeAttr>(
          TrainDialect::SignatureAttrHelper::getNameStr()))
    if (auto type = dyn_cast<FunctionType>(signature.getValue());
        type && type.getNumInputs() != names.size())
      return op->emitError() << "'" << name << "' names " << names.size()
                             << " argument(s), but train.signature takes "
                             << type.getNumInputs();
  return success();
}

/// An attribute of the train dialect that no operation takes: the error
/// lists those it knows.
static LogicalResult unknownAttribute(Operation *op, StringRef name) {
  return op->emitError()
         << "unknown attribute '" << name << "' of the train dialect (known: "
         << TrainDialect::SignatureAttrHelper::getNameStr() << ", "
         << TrainDialect::LossResultAttrHelper::getNameStr() << ", "
         << TrainDialect::GradientResultsAttrHelper::getNameStr() << ", "
         << TrainDialect::DataParallelAttrHelper::getNameStr() << ", "
         << TrainDialect::ShardAttrHelper::getNameStr() << ", "
         << TrainDialect::KernelAttrHelper::getNameStr() << ", "
         << TrainDialect::ParallelAttrHelper::getNameStr() << ", "
         << TrainDialect::PerExampleAttrHelper::getNameStr() << ", "
         << TrainDialect::RematAttrHelper::getNameStr() << ", "
         << TrainDialect::MemoryPlanAttrHelper::getNameStr() << ", "
         << TrainDialect::InitAttrHelper::getNameStr() << ", "
         << TrainDialect::NameAttrHelper::getNameStr() << ", "
         << TrainDialect::ArgumentNamesAttrHelper::getNameStr() << ")";
}

LogicalResult TrainDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto onFunction = [&]() -> LogicalResult {
    if (isa<FunctionOpInterface>(op))
      return success();
    return op->emitError() << "'" << name << "' belongs on a function, not on '"
                           << op->getName() << "'";
  };
  auto resultIndex = [&](int64_t index) -> LogicalResult {
    std::optional<unsigned> results = recordedResults(op);
    if (index < 0 || (results && index >= static_cast<int64_t>(*results)))
      return op->emitError()
             << "'" << name << "' names result #" << index
             << ", but the recorded signature has "
             << (results ? std::to_string(*results) : std::string("no"))
             << " result(s)";
    return success();
  };

  if (name == SignatureAttrHelper::getNameStr()) {
    auto type = dyn_cast<TypeAttr>(value);
    if (!type || !isa<FunctionType>(type.getValue()))
      return op->emitError()
             << "'" << name << "' must be a function type, got " << value;
    return onFunction();
  }
  if (name == LossResultAttrHelper::getNameStr()) {
    auto index = dyn_cast<IntegerAttr>(value);
    if (!index)
      return op->emitError()
             << "'" << name << "' must be an integer, got " << value;
    if (failed(onFunction()))
      return failure();
    return resultIndex(index.getInt());
  }
  if (name == GradientResultsAttrHelper::getNameStr()) {
    auto indices = dyn_cast<DenseI64ArrayAttr>(value);
    if (!indices)
      return op->emitError()
             << "'" << name << "' must be an array<i64>, got " << value;
    if (failed(onFunction()))
      return failure();
    for (int64_t index : indices.asArrayRef())
      if (failed(resultIndex(index)))
        return failure();
    return success();
  }
  if (name == DataParallelAttrHelper::getNameStr()) {
    auto ranks = dyn_cast<IntegerAttr>(value);
    if (!ranks || ranks.getInt() < 1)
      return op->emitError()
             << "'" << name << "' must be an integer >= 1, got " << value;
    return onFunction();
  }
  if (name == ShardAttrHelper::getNameStr()) {
    auto stage = dyn_cast<IntegerAttr>(value);
    if (!stage || stage.getInt() < 0 || stage.getInt() > 3)
      return op->emitError()
             << "'" << name << "' must be an integer from 0 to 3, got "
             << value;
    return onFunction();
  }
  if (name == ParallelAttrHelper::getNameStr()) {
    if (!isa<UnitAttr>(value))
      return op->emitError()
             << "'" << name << "' must be a unit attribute, got " << value;
    if (!isa<scf::ForOp>(op))
      return op->emitError() << "'" << name << "' belongs on an scf.for, not "
                             << "on '" << op->getName() << "'";
    return success();
  }
  if (name == PerExampleAttrHelper::getNameStr()) {
    if (!isa<UnitAttr>(value))
      return op->emitError()
             << "'" << name << "' must be a unit attribute, got " << value;
    if (op->getName().getDialectNamespace() != "linalg")
      return op->emitError()
             << "'" << name << "' belongs on a linalg operation, not on '"
             << op->getName() << "'";
    return success();
  }
  if (name == KernelAttrHelper::getNameStr()) {
    if (!isa<UnitAttr>(value))
      return op->emitError()
             << "'" << name << "' must be a unit attribute, got " << value;
    return onFunction();
  }
  if (name == RematAttrHelper::getNameStr()) {
    auto mark = dyn_cast<StringAttr>(value);
    if (!mark || (mark.getValue() != "save" && mark.getValue() != "recompute"))
      return op->emitError()
             << "'" << name << "' must be \"save\" or \"recompute\", got "
             << value;
    return success();
  }
  if (name == MemoryPlanAttrHelper::getNameStr())
    return verifyMemoryPlan(op, name, value);
  if (name == ArgumentNamesAttrHelper::getNameStr())
    return verifyArgumentNames(op, name, value);
  if (name == InitAttrHelper::getNameStr() ||
      name == NameAttrHelper::getNameStr())
    return op->emitError() << "'" << name
                           << "' belongs on a function argument, not on '"
                           << op->getName() << "'";
  return unknownAttribute(op, name);
}

LogicalResult TrainDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name != InitAttrHelper::getNameStr() &&
      name != NameAttrHelper::getNameStr())
    return op->emitError() << "unknown argument attribute '" << name
                           << "' of the train dialect (known: "
                           << InitAttrHelper::getNameStr() << ", "
                           << NameAttrHelper::getNameStr() << ")";
  if (!isa<FunctionOpInterface>(op) || regionIndex != 0)
    return op->emitError() << "'" << name
                           << "' belongs on an argument of a function, not "
                              "on a block argument of '"
                           << op->getName() << "'";
  Attribute value = attr.getValue();
  if (name == NameAttrHelper::getNameStr()) {
    auto text = dyn_cast<StringAttr>(value);
    if (text && !text.getValue().empty())
      return success();
    return op->emitError() << "'" << name << "' of argument #" << argIndex
                           << " must be a non-empty string, got " << value;
  }
  auto text = dyn_cast<StringAttr>(value);
  auto stddev = dyn_cast<FloatAttr>(value);
  if ((text && (text.getValue() == "zeros" || text.getValue() == "ones")) ||
      (stddev && stddev.getValueAsDouble() >= 0))
    return success();
  return op->emitError() << "'" << name << "' of argument #" << argIndex
                         << " must be \"zeros\", \"ones\" or a non-negative "
                            "standard deviation (a float), got "
                         << value;
}
