//===- CheckAsserts.cpp - Front ends' asserts as runtime checks -----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// train-check-asserts: every `cf.assert` of a function (torch-mlir puts them
// around gathers, inside the bodies of linalg.generic, and on shapes at the
// function level) becomes a check on the runtime's error path, computed
// before the `train.step` it belongs to:
//
// - An assert inside a linalg.generic body becomes a reduction of its own:
//   the first iteration (row-major) whose condition is false, INT64_MAX
//   when there is none. Only the body's operations that the condition
//   depends on are copied, with the operands they read, and the reduction
//   loops over the dimensions those read (an embedding's ids, not its
//   features); the assert leaves the original body, which is then pure.
// - Any other assert is its condition, computed at the function level.
// - Either way, a failed check calls `ga_report_assertion(message,
//   position)` under `scf.if`. The message (the assert's text, its location
//   and the iteration space) is a constant string of the module.
// - The step runs on after a failed check (its caller discards the
//   results), so the indices of the gathers (tensor.extract) in a body
//   whose assert was removed are clamped into bounds: valid indices read
//   what they read, invalid ones never read out of bounds.
//
// What the condition depends on is computed again at the function level:
// values of the function as they are, block arguments of `train.step` and
// `train.checkpoint` as their operands, and operations without memory
// effects copied (with whatever their regions read from above). A condition
// that depends on anything else (a loop's induction variable, an operation
// that writes memory) is refused at the assert. So the check reads what the
// step reads, before the step: the step itself carries no side effects and
// is differentiated, split and planned as if the assert were not there.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "train/TrainOps.h"
#include "train/TrainRuntime.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

#include <limits>

namespace ga {
#define GEN_PASS_DEF_TRAINCHECKASSERTSPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::train;

namespace {

constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

/// Computes values of a function's nested regions again at its top level,
/// before `anchor` (the operation of the function's body that holds them).
class Hoister {
public:
  Hoister(func::FuncOp func, Operation *anchor) : func(func), builder(anchor) {}

  /// `value` at the function level, or null (then `blocker` says why).
  Value hoist(Value value) {
    if (Value known = mapping.lookupOrNull(value))
      return known;
    if (value.getParentRegion() == &func.getBody())
      return value;
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      Operation *owner = arg.getOwner()->getParentOp();
      Value outer;
      if (isa<StepOp>(owner) && arg.getOwner()->isEntryBlock() &&
          arg.getArgNumber() < owner->getNumOperands())
        outer = owner->getOperand(arg.getArgNumber());
      else if (auto checkpoint = dyn_cast<CheckpointOp>(owner);
               checkpoint && arg.getOwner()->isEntryBlock())
        outer = checkpoint.getInputs()[arg.getArgNumber()];
      if (!outer) {
        blocker = "a block argument of '" +
                  owner->getName().getStringRef().str() + "'";
        return {};
      }
      Value hoisted = hoist(outer);
      if (hoisted)
        mapping.map(value, hoisted);
      return hoisted;
    }
    Operation *def = value.getDefiningOp();
    if (!isMemoryEffectFree(def)) {
      blocker = "'" + def->getName().getStringRef().str() +
                "', which has memory effects";
      return {};
    }
    for (Value operand : def->getOperands())
      if (!hoist(operand))
        return {};
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(def->getRegions(), above);
    for (Value captured : above)
      if (!hoist(captured))
        return {};
    Operation *copy = builder.clone(*def, mapping);
    return copy->getResult(cast<OpResult>(value).getResultNumber());
  }

  IRMapping &getMapping() { return mapping; }
  OpBuilder &getBuilder() { return builder; }
  std::string blocker;

private:
  func::FuncOp func;
  OpBuilder builder;
  IRMapping mapping;
};

/// The operation of `func`'s body that holds `op` (or `op` itself).
Operation *topLevelAncestor(Operation *op, func::FuncOp func) {
  while (op->getParentOp() != func.getOperation())
    op = op->getParentOp();
  return op;
}

/// "[4, 32]" for a list of extents.
std::string extents(ArrayRef<int64_t> sizes) {
  std::string text = "[";
  for (auto [i, size] : llvm::enumerate(sizes))
    text += (i ? ", " : "") + std::to_string(size);
  return text + "]";
}

struct TrainCheckAssertsPass
    : ga::impl::TrainCheckAssertsPassBase<TrainCheckAssertsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cf::AssertOp> asserts;
    module.walk([&](cf::AssertOp op) { asserts.push_back(op); });
    for (cf::AssertOp op : asserts) {
      auto func = op->getParentOfType<func::FuncOp>();
      if (!func) {
        op.emitOpError() << "is outside a function: train-check-asserts "
                            "checks the asserts of functions";
        return signalPassFailure();
      }
      if (failed(lower(op, func)))
        return signalPassFailure();
    }
  }

  /// `message` as a constant string of the module, and its address.
  Value messageAddress(OpBuilder &b, Location loc, StringRef message) {
    ModuleOp module = getOperation();
    OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
    std::string text = message.str();
    text.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(mb.getI8Type(), text.size());
    std::string name = "__ga_assert_message";
    for (unsigned n = 0; module.lookupSymbol(name); ++n)
      name = "__ga_assert_message_" + std::to_string(n);
    auto global = LLVM::GlobalOp::create(mb, loc, type, /*isConstant=*/true,
                                         LLVM::Linkage::Internal, name,
                                         mb.getStringAttr(text));
    return LLVM::AddressOfOp::create(b, loc, global);
  }

  /// `if (position != none) ga_report_assertion(message, position)`.
  LogicalResult reportIf(OpBuilder &b, Operation *at, Value violated,
                         Value position, StringRef message) {
    Location loc = at->getLoc();
    MLIRContext *ctx = b.getContext();
    func::FuncOp callee = getOrInsertRuntimeFunction(
        b, at, kReportAssertionFunction,
        b.getFunctionType({LLVM::LLVMPointerType::get(ctx), b.getI64Type()},
                          {}));
    if (!callee)
      return failure();
    scf::IfOp::create(b, loc, violated, [&](OpBuilder &tb, Location l) {
      func::CallOp::create(
          tb, l, callee, ValueRange{messageAddress(tb, l, message), position});
      scf::YieldOp::create(tb, l);
    });
    return success();
  }

  std::string describe(cf::AssertOp op) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "'" << op.getMsg() << "' at " << op.getLoc();
    return text;
  }

  LogicalResult lower(cf::AssertOp op, func::FuncOp func) {
    // A condition that always holds needs no check.
    if (matchPattern(op.getArg(), m_One()) || !report) {
      auto generic = dyn_cast<linalg::GenericOp>(op->getParentOp());
      op.erase();
      if (generic)
        clampGathers(generic);
      return success();
    }
    Hoister hoister(func, topLevelAncestor(op, func));
    if (auto generic = dyn_cast<linalg::GenericOp>(op->getParentOp()))
      return lowerInGeneric(op, generic, hoister);
    Value condition = hoister.hoist(op.getArg());
    if (!condition)
      return op.emitOpError()
             << "cannot be checked before the step: its condition depends on "
             << hoister.blocker;
    OpBuilder &b = hoister.getBuilder();
    Location loc = op.getLoc();
    Value violated = arith::XOrIOp::create(
        b, loc, condition,
        arith::ConstantOp::create(b, loc, b.getBoolAttr(true)));
    Value position = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(-1));
    if (failed(reportIf(b, op, violated, position, describe(op))))
      return failure();
    op.erase();
    return success();
  }

  /// What the check of an assert in a generic reads and iterates over.
  struct Scan {
    /// The body's operations the condition depends on, in body order.
    llvm::SetVector<Operation *> slice;
    /// The hoisted operands whose block arguments the slice reads, the
    /// maps they are read with, and those block arguments.
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    SmallVector<BlockArgument> read;
    /// The generic's dimensions the check iterates over, their extents,
    /// and each dimension's position among them (-1: not iterated).
    llvm::SmallBitVector usedDims;
    SmallVector<int64_t> checkRanges, newDim;
  };

  /// The operations of `body` that the assert's condition depends on, in
  /// body order, into `slice`; fails where one has memory effects.
  static LogicalResult conditionSlice(cf::AssertOp op, Block *body,
                                      llvm::SetVector<Operation *> &slice) {
    SmallVector<Value> worklist{op.getArg()};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != body || slice.contains(def))
        continue;
      slice.insert(def);
      llvm::append_range(worklist, def->getOperands());
      llvm::SetVector<Value> above;
      getUsedValuesDefinedAbove(def->getRegions(), above);
      llvm::append_range(worklist, above);
    }
    for (Operation *def : slice)
      if (!isMemoryEffectFree(def))
        return op.emitOpError()
               << "cannot be checked before the step: its condition depends "
                  "on '"
               << def->getName() << "', which has memory effects";
    return success();
  }

  /// The dimensions the condition depends on (those its operands are
  /// read with and its linalg.index ops name), in order: the scan's
  /// extents, each old dimension's new position, the maps compressed.
  static void checkedDims(ArrayRef<int64_t> ranges, Scan &scan) {
    llvm::SmallBitVector &usedDims = scan.usedDims;
    SmallVector<AffineMap> &maps = scan.maps;
    SmallVector<int64_t> &checkRanges = scan.checkRanges;
    SmallVector<int64_t> &newDim = scan.newDim;
    usedDims.resize(ranges.size());
    newDim.assign(ranges.size(), -1);
    for (AffineMap map : maps)
      for (AffineExpr expr : map.getResults())
        expr.walk([&](AffineExpr e) {
          if (auto dim = dyn_cast<AffineDimExpr>(e))
            usedDims.set(dim.getPosition());
        });
    for (Operation *def : scan.slice)
      if (auto index = dyn_cast<linalg::IndexOp>(def))
        usedDims.set(index.getDim());
    for (unsigned d : usedDims.set_bits()) {
      newDim[d] = checkRanges.size();
      checkRanges.push_back(ranges[d]);
    }
    llvm::SmallBitVector unusedDims = usedDims;
    unusedDims.flip();
    for (AffineMap &map : maps)
      map = compressDims(map, unusedDims);
  }

  /// The reduction over the scan's iterations to the first position (in
  /// row-major order) where the condition fails, kNone where none does.
  static Value firstViolation(cf::AssertOp op, Block *body, Scan &scan,
                              Hoister &hoister) {
    SmallVector<Value> &inputs = scan.inputs;
    SmallVector<AffineMap> &maps = scan.maps;
    const SmallVector<int64_t> &checkRanges = scan.checkRanges;
    const SmallVector<int64_t> &newDim = scan.newDim;
    const llvm::SetVector<Operation *> &slice = scan.slice;
    const SmallVector<BlockArgument> &read = scan.read;
    OpBuilder &b = hoister.getBuilder();
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    int64_t rank = checkRanges.size();
    SmallVector<int64_t> rowStride(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      rowStride[d] = rowStride[d + 1] * checkRanges[d + 1];
    auto i64 = b.getI64Type();
    Value init = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, i64);
    init = linalg::FillOp::create(b, loc,
                                  ValueRange{arith::ConstantOp::create(
                                      b, loc, b.getI64IntegerAttr(kNone))},
                                  ValueRange{init})
               .getResult(0);
    // A dimension that only linalg.index names (a condition on the loop
    // indices alone) takes its extent from an operand of the iteration
    // space's shape, which the check does not read.
    llvm::SmallBitVector covered(rank);
    for (AffineMap map : maps)
      for (AffineExpr expr : map.getResults())
        if (auto dim = dyn_cast<AffineDimExpr>(expr))
          covered.set(dim.getPosition());
    if (!covered.all()) {
      inputs.push_back(
          tensor::EmptyOp::create(b, loc, checkRanges, b.getI8Type()));
      maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
    }
    maps.push_back(AffineMap::get(rank, 0, {}, ctx));
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::reduction);
    IRMapping &mapping = hoister.getMapping();
    return linalg::GenericOp::create(
               b, loc, TypeRange{init.getType()}, inputs, ValueRange{init},
               maps, iterators,
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 IRMapping local = mapping;
                 for (auto [arg, blockArg] : llvm::zip(read, args))
                   local.map(arg, blockArg);
                 for (Operation &inner : body->without_terminator()) {
                   if (!slice.contains(&inner))
                     continue;
                   if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
                     local.map(index.getResult(),
                               linalg::IndexOp::create(nb, l,
                                                       newDim[index.getDim()]));
                     continue;
                   }
                   nb.clone(inner, local);
                 }
                 Value holds = local.lookupOrDefault(op.getArg());
                 Value position = arith::ConstantIndexOp::create(nb, l, 0);
                 for (int64_t d = 0; d < rank; ++d)
                   position = arith::AddIOp::create(
                       nb, l, position,
                       arith::MulIOp::create(nb, l,
                                             linalg::IndexOp::create(nb, l, d),
                                             arith::ConstantIndexOp::create(
                                                 nb, l, rowStride[d])));
                 Value candidate = arith::SelectOp::create(
                     nb, l, holds,
                     arith::ConstantOp::create(nb, l,
                                               nb.getI64IntegerAttr(kNone)),
                     arith::IndexCastOp::create(nb, l, nb.getI64Type(),
                                                position));
                 linalg::YieldOp::create(nb, l,
                                         ValueRange{arith::MinSIOp::create(
                                             nb, l, candidate, args.back())});
               })
        .getResult(0);
  }

  /// The assert of a generic's body as a reduction over its iterations.
  LogicalResult lowerInGeneric(cf::AssertOp op, linalg::GenericOp generic,
                               Hoister &hoister) {
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      return op.emitOpError()
             << "cannot be checked: the iteration space of its linalg.generic "
                "is not static";
    Block *body = generic.getBody();
    Scan scan;
    if (failed(conditionSlice(op, body, scan.slice)))
      return failure();
    llvm::SetVector<Operation *> &slice = scan.slice;
    SmallVector<Value> &inputs = scan.inputs;
    SmallVector<AffineMap> &maps = scan.maps;
    SmallVector<BlockArgument> &read = scan.read;
    // The operands whose block arguments the slice reads, hoisted, and the
    // maps they are read with.
    auto usedBySlice = [&](BlockArgument arg) {
      if (op.getArg() == arg)
        return true;
      return llvm::any_of(arg.getUsers(), [&](Operation *user) {
        return slice.contains(user) || llvm::any_of(slice, [&](Operation *s) {
                 return s->isProperAncestor(user);
               });
      });
    };
    for (OpOperand &operand : generic->getOpOperands()) {
      BlockArgument arg = generic.getMatchingBlockArgument(&operand);
      if (!usedBySlice(arg))
        continue;
      Value hoisted = hoister.hoist(operand.get());
      if (!hoisted)
        return op.emitOpError()
               << "cannot be checked before the step: the operand #"
               << operand.getOperandNumber()
               << " of its linalg.generic depends on " << hoister.blocker;
      inputs.push_back(hoisted);
      maps.push_back(generic.getMatchingIndexingMap(&operand));
      read.push_back(arg);
    }
    // Values the slice reads from above the generic (as operands or inside
    // its operations' regions).
    llvm::SetVector<Value> used;
    for (Operation *def : slice) {
      used.insert(def->operand_begin(), def->operand_end());
      getUsedValuesDefinedAbove(def->getRegions(), used);
    }
    for (Value v : used)
      if (v.getParentBlock() != body && !hoister.hoist(v))
        return op.emitOpError()
               << "cannot be checked before the step: its condition depends on "
               << hoister.blocker;

    checkedDims(ranges, scan);
    OpBuilder &b = hoister.getBuilder();
    Location loc = op.getLoc();
    Value first = firstViolation(op, body, scan, hoister);
    Value position = tensor::ExtractOp::create(b, loc, first, ValueRange{});
    Value violated = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, position,
        arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(kNone)));
    std::string dims;
    for (auto [i, d] : llvm::enumerate(scan.usedDims.set_bits()))
      dims += (i ? ", " : "") + std::to_string(d);
    std::string message = describe(op) + " over the iterations " +
                          extents(scan.checkRanges) + " (dimensions " + dims +
                          " of a linalg.generic over " + extents(ranges) + ")";
    if (failed(reportIf(b, op, violated, position, message)))
      return failure();
    op.erase();
    clampGathers(generic);
    return success();
  }

  /// The step runs on after a failed check (its results are discarded), so
  /// the gathers the assert guarded must not read out of bounds: every
  /// index of a tensor.extract in `generic`'s body that is computed from
  /// data is clamped into its dimension. Valid indices are unchanged.
  void clampGathers(linalg::GenericOp generic) {
    generic.getBody()->walk([&](tensor::ExtractOp extract) {
      auto type = extract.getTensor().getType();
      OpBuilder b(extract);
      Location loc = extract.getLoc();
      for (auto [d, index] : llvm::enumerate(extract.getIndices())) {
        if (index.getDefiningOp<linalg::IndexOp>() ||
            matchPattern(index, m_Constant()) || type.isDynamicDim(d))
          continue;
        Value low = arith::ConstantIndexOp::create(b, loc, 0);
        Value high =
            arith::ConstantIndexOp::create(b, loc, type.getDimSize(d) - 1);
        Value clamped = arith::MinSIOp::create(
            b, loc, arith::MaxSIOp::create(b, loc, index, low), high);
        extract.getIndicesMutable()[d].set(clamped);
      }
    });
  }
};

} // namespace
