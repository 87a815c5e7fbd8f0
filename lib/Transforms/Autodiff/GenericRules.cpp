//===- GenericRules.cpp - The adjoint of linalg.generic -------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// One rule covers elementwise ops, broadcasts, reductions and contractions:
// for an operand read through the projected permutation M, the adjoint is a
// new linalg.generic over the same loops that writes through M (the loops
// that M drops become reductions) and whose body is the reverse-mode
// derivative of the forward body, seeded with the result cotangents. A
// matmul's adjoints come out as contractions again (and are specialized back
// to named ops by the driver); a bias broadcast's adjoint is a reduction.
// A convolution's input, read through windows, gets the transposed
// convolution (ConvRules.cpp).
//
// Reductions must combine with an addition (the init's adjoint is then the
// result's) or with a minimum/maximum (the cotangent goes to the elements
// equal to the result). Tensors that the body reads from above with
// tensor.extract (an embedding lookup) get a scatter-add: a loop nest over
// the iteration space that adds each element's cotangent at the index read.
//
//===----------------------------------------------------------------------===//

#include "ADInternal.h"
#include "ga/Transforms/Autodiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::linalg;

namespace ga::ad {

namespace {

enum class Combiner { None, Add, MinMax };

/// How output j of a generic combines its init with the body's value.
struct OutputInfo {
  Combiner kind = Combiner::None;
  Operation *combiner = nullptr; ///< Skipped when the body is recomputed.
  Value contribution;            ///< h in `out = combine(out, h)`.
};

/// Classifies the outputs of `op`. Without reduction loops every output is
/// `None` (the init is read like an input). With reduction loops, each init
/// must be read only by the operation yielded for it, `combine(out, h)`.
/// Fails (with `why` set) when that is not the case.
LogicalResult classifyOutputs(linalg::LinalgOp op,
                              SmallVectorImpl<OutputInfo> &infos,
                              std::string &why) {
  infos.assign(op.getNumDpsInits(), OutputInfo{});
  if (op.getNumReductionLoops() == 0)
    return success();
  Block &body = *op.getBlock();
  Operation *yield = body.getTerminator();
  for (unsigned j = 0; j < op.getNumDpsInits(); ++j) {
    BlockArgument out = body.getArgument(op.getNumDpsInputs() + j);
    Value yielded = yield->getOperand(j);
    Operation *def = yielded.getDefiningOp();
    bool isFloat = isa<FloatType>(out.getType());
    if (out.use_empty()) {
      if (isFloat) {
        why = "a reduction that overwrites its init (output #" +
              std::to_string(j) + ") has no derivative";
        return failure();
      }
      continue;
    }
    if (!out.hasOneUse() || !def || def->getBlock() != &body ||
        def->getNumOperands() != 2 || *out.user_begin() != def ||
        def->getOperand(0) == def->getOperand(1)) {
      why = "the init of output #" + std::to_string(j) +
            " must be read once, by the combiner that the body yields";
      return failure();
    }
    OutputInfo &info = infos[j];
    info.combiner = def;
    info.contribution =
        def->getOperand(0) == out ? def->getOperand(1) : def->getOperand(0);
    if (isa<arith::AddFOp>(def))
      info.kind = Combiner::Add;
    else if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
                 arith::MinNumFOp>(def))
      info.kind = Combiner::MinMax;
    else if (isFloat) {
      why = "the reduction of output #" + std::to_string(j) +
            " combines with '" + def->getName().getStringRef().str() +
            "'; only additions, minima and maxima can be differentiated";
      return failure();
    }
  }
  return success();
}

SmallVector<Operation *> combiners(ArrayRef<OutputInfo> infos) {
  SmallVector<Operation *> ops;
  for (const OutputInfo &info : infos)
    if (info.combiner)
      ops.push_back(info.combiner);
  return ops;
}

/// The values of `map` (a projected permutation, possibly with constant
/// results) at the loop indices `ivs`.
SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                            ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      indices.push_back(ivs[dim.getPosition()]);
    else
      indices.push_back(arith::ConstantIndexOp::create(
          b, loc, cast<AffineConstantExpr>(expr).getValue()));
  }
  return indices;
}

/// Erases the recomputed body operations that the derivative does not use,
/// then rebuilds `op` without the inputs that its body no longer reads.
GenericOp pruneUnusedInputs(OpBuilder &b, GenericOp op) {
  Block &body = op.getRegion().front();
  SmallVector<Operation *> bodyOps;
  for (Operation &inner : body.without_terminator())
    bodyOps.push_back(&inner);
  for (Operation *inner : llvm::reverse(bodyOps))
    if (isOpTriviallyDead(inner))
      inner->erase();
  unsigned numInputs = op.getNumDpsInputs();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  llvm::BitVector dead(body.getNumArguments());
  for (unsigned i = 0; i < numInputs; ++i) {
    if (body.getArgument(i).use_empty()) {
      dead.set(i);
      continue;
    }
    inputs.push_back(op.getDpsInputs()[i]);
    maps.push_back(op.getIndexingMapsArray()[i]);
  }
  if (dead.none())
    return op;
  for (unsigned j = 0; j < op.getNumDpsInits(); ++j)
    maps.push_back(op.getIndexingMapsArray()[numInputs + j]);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  auto pruned =
      GenericOp::create(b, op.getLoc(), op.getResultTypes(), inputs,
                        op.getDpsInits(), maps, op.getIteratorTypesArray());
  pruned.getRegion().takeBody(op.getRegion());
  pruned.getRegion().front().eraseArguments(dead);
  op.erase();
  return pruned;
}

/// The forward operands that an adjoint body reads, in order: the inputs,
/// and the inits too when the generic has no reduction loops.
SmallVector<OpOperand *> readOperands(linalg::LinalgOp op) {
  SmallVector<OpOperand *> operands;
  bool reduces = op.getNumReductionLoops() != 0;
  for (OpOperand &operand : op->getOpOperands())
    if (!reduces || !op.isDpsInit(&operand))
      operands.push_back(&operand);
  return operands;
}

/// Seeds the scalar sweep of output j: dy_j (and y_j for min/max).
void seedOutputs(ScalarReverse &sr, OpBuilder &b, Location loc, GenericOp op,
                 ArrayRef<OutputInfo> infos, ArrayRef<Value> dy,
                 ArrayRef<Value> y, IRMapping &map) {
  Operation *yield = op.getRegion().front().getTerminator();
  for (auto [j, info] : llvm::enumerate(infos)) {
    if (!dy[j])
      continue;
    switch (info.kind) {
    case Combiner::None:
      sr.seed(yield->getOperand(j), dy[j]);
      break;
    case Combiner::Add:
      sr.seed(info.contribution, dy[j]);
      break;
    case Combiner::MinMax: {
      Value h = map.lookupOrDefault(info.contribution);
      Value hit =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, h, y[j]);
      Value zero =
          arith::ConstantOp::create(b, loc, b.getZeroAttr(h.getType()));
      sr.seed(info.contribution,
              arith::SelectOp::create(b, loc, hit, dy[j], zero));
      break;
    }
    }
  }
}

} // namespace

namespace {
/// The adjoint of one linalg.generic, built in phases: the cotangents of its
/// reductions' inits, one adjoint generic per active operand, and one
/// scatter-add loop nest per active tensor that the body reads from above.
class GenericAdjoint {
public:
  GenericAdjoint(GenericOp op, Sweep &sweep)
      : op(op), sweep(sweep), b(sweep.builder), loc(op.getLoc()),
        body(op.getRegion().front()) {}

  LogicalResult build();

private:
  LogicalResult passInitCotangents();
  void collectInputs();
  void mapArgs(ValueRange args, IRMapping &map, SmallVector<Value> &dyS,
               SmallVector<Value> &yS) const;
  LogicalResult adjointOfOperand(OpOperand *operand);
  LogicalResult scatterIntoCaptured();
  LogicalResult scatterInto(Value source, ValueRange lbs, ValueRange ubs,
                            ValueRange steps);

  GenericOp op;
  Sweep &sweep;
  OpBuilder &b;
  Location loc;
  Block &body;
  SmallVector<OutputInfo> infos;
  SmallVector<Operation *> skip;
  /// The adjoint of each result, null where it has none.
  SmallVector<Value> dy;
  /// The forward operands that the adjoint bodies read.
  SmallVector<OpOperand *> read;
  /// The inputs of every adjoint generic (forward operands, cotangents,
  /// results of min/max reductions) and their indexing maps.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> inputMaps;
};
} // namespace

LogicalResult GenericAdjoint::build() {
  std::string why;
  if (failed(classifyOutputs(op, infos, why)))
    return op.emitOpError() << "cannot be differentiated: " << why;
  skip = combiners(infos);
  for (Value result : op->getResults())
    dy.push_back(sweep.getAdjoint(result));
  if (llvm::none_of(dy, [](Value d) { return bool(d); }))
    return success();
  if (failed(passInitCotangents()))
    return failure();
  collectInputs();
  for (OpOperand *operand : read)
    if (failed(adjointOfOperand(operand)))
      return failure();
  return scatterIntoCaptured();
}

/// The init of an additive reduction passes its cotangent straight through.
LogicalResult GenericAdjoint::passInitCotangents() {
  for (auto [j, info] : llvm::enumerate(infos)) {
    if (!dy[j] || info.kind == Combiner::None)
      continue;
    Value init = op.getDpsInits()[j];
    if (info.kind == Combiner::MinMax && sweep.isActive(init))
      return op.emitOpError()
             << "cannot be differentiated: the init of a minimum/maximum "
                "reduction (output #"
             << j << ") depends on a parameter";
    sweep.addAdjoint(loc, init, dy[j]);
  }
  return success();
}

void GenericAdjoint::collectInputs() {
  read = readOperands(op);
  SmallVector<AffineMap> outMaps;
  for (OpOperand &init : op.getDpsInitsMutable())
    outMaps.push_back(op.getMatchingIndexingMap(&init));
  for (OpOperand *operand : read) {
    inputs.push_back(operand->get());
    inputMaps.push_back(op.getMatchingIndexingMap(operand));
  }
  for (auto [j, d] : llvm::enumerate(dy))
    if (d) {
      inputs.push_back(d);
      inputMaps.push_back(outMaps[j]);
    }
  for (auto [j, info] : llvm::enumerate(infos))
    if (dy[j] && info.kind == Combiner::MinMax) {
      inputs.push_back(op->getResult(j));
      inputMaps.push_back(outMaps[j]);
    }
}

/// Maps the adjoint body's arguments (in the order of `inputs`) to the
/// forward body's arguments, the cotangents `dyS` and the results `yS`.
void GenericAdjoint::mapArgs(ValueRange args, IRMapping &map,
                             SmallVector<Value> &dyS,
                             SmallVector<Value> &yS) const {
  unsigned idx = 0;
  for (OpOperand *operand : read)
    map.map(body.getArgument(operand->getOperandNumber()), args[idx++]);
  dyS.assign(dy.size(), Value());
  yS.assign(dy.size(), Value());
  for (auto [j, d] : llvm::enumerate(dy))
    if (d)
      dyS[j] = args[idx++];
  for (auto [j, info] : llvm::enumerate(infos))
    if (dy[j] && info.kind == Combiner::MinMax)
      yS[j] = args[idx++];
}

/// One generic over the forward loops that computes the cotangent of
/// `operand` and reduces it over the loops its map drops, continuing the
/// operand's adjoint so far where the sweep allows it.
LogicalResult GenericAdjoint::adjointOfOperand(OpOperand *operand) {
  Value value = operand->get();
  if (!isa<RankedTensorType>(value.getType()) || !sweep.isActive(value))
    return success();
  AffineMap map = op.getMatchingIndexingMap(operand);
  if (!map.isProjectedPermutation(/*allowZeroInResults=*/false)) {
    // A convolution's input, read through windows (ConvRules.cpp).
    if (isConvolutionInput(op, operand))
      return dy[0] ? adjointConvolutionInput(op, operand, dy[0], sweep)
                   : success();
    return op.emitOpError() << "cannot be differentiated: operand #"
                            << operand->getOperandNumber()
                            << " is read through " << AffineMapAttr::get(map)
                            << ", which is not a projected permutation";
  }

  unsigned numLoops = op.getNumLoops();
  llvm::SmallBitVector kept(numLoops);
  for (AffineExpr expr : map.getResults())
    kept.set(cast<AffineDimExpr>(expr).getPosition());
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0; d < numLoops; ++d)
    iterators.push_back(kept.test(d) ? utils::IteratorType::parallel
                                     : utils::IteratorType::reduction);
  bool reduces = !kept.all();

  Value existing = sweep.adjointToContinue(value);
  bool accumulate = existing || reduces;
  Value init = existing  ? existing
               : reduces ? zerosLike(b, loc, value.getType())
                         : tensor::EmptyOp::create(
                               b, loc, cast<RankedTensorType>(value.getType()),
                               ValueRange{})
                               .getResult();

  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(map);
  LogicalResult status = success();
  bool contributes = true;
  auto adjoint = GenericOp::create(
      b, loc, TypeRange{value.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        IRMapping bvm;
        SmallVector<Value> dyS, yS;
        mapArgs(args, bvm, dyS, yS);
        ScalarReverse sr(nb, bvm);
        sr.recompute(body, skip);
        seedOutputs(sr, nb, nloc, op, infos, dyS, yS, bvm);
        if (failed(sr.run(body, skip)))
          status = failure();
        Value c = sr.cotangent(body.getArgument(operand->getOperandNumber()));
        Value out = args.back();
        if (!c) {
          contributes = false;
          linalg::YieldOp::create(nb, nloc, out);
          return;
        }
        Value result = accumulate
                           ? arith::AddFOp::create(nb, nloc, out, c).getResult()
                           : c;
        linalg::YieldOp::create(nb, nloc, result);
      });
  if (failed(status))
    return failure();
  if (!contributes) {
    adjoint.erase();
    return success();
  }
  adjoint = pruneUnusedInputs(b, adjoint);
  sweep.created.push_back(adjoint);
  if (!existing && reduces)
    sweep.recordZeroInit(adjoint.getResult(0), adjoint.getDpsInitsMutable()[0]);
  if (existing)
    sweep.setAdjoint(value, adjoint.getResult(0));
  else
    sweep.addAdjoint(loc, value, adjoint.getResult(0));
  return success();
}

/// Scatter-adds into the tensors that the body reads from above (with
/// tensor.extract: an embedding's gather).
LogicalResult GenericAdjoint::scatterIntoCaptured() {
  SmallVector<Value> captured;
  body.walk([&](tensor::ExtractOp extract) {
    Value source = extract.getTensor();
    if (source.getParentBlock() != &body && sweep.isActive(source) &&
        !llvm::is_contained(captured, source))
      captured.push_back(source);
  });
  if (captured.empty())
    return success();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return op.emitOpError()
           << "cannot be differentiated: a tensor read with tensor.extract "
              "in the body needs static loop bounds";
  for (OpOperand *operand : read)
    if (!op.getMatchingIndexingMap(operand).isProjectedPermutation(true))
      return op.emitOpError() << "cannot be differentiated: operand #"
                              << operand->getOperandNumber()
                              << " is not read through a projected permutation";
  unsigned numLoops = op.getNumLoops();
  Value zeroIdx = arith::ConstantIndexOp::create(b, loc, 0);
  Value oneIdx = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> lbs(numLoops, zeroIdx), steps(numLoops, oneIdx), ubs;
  for (int64_t r : ranges)
    ubs.push_back(arith::ConstantIndexOp::create(b, loc, r));
  for (Value source : captured)
    if (failed(scatterInto(source, lbs, ubs, steps)))
      return failure();
  return success();
}

/// A loop nest over the forward loops that recomputes the body and adds the
/// cotangent of every element read from `source` into its adjoint.
LogicalResult GenericAdjoint::scatterInto(Value source, ValueRange lbs,
                                          ValueRange ubs, ValueRange steps) {
  Value existing = sweep.adjointToContinue(source);
  Value init = existing ? existing : zerosLike(b, loc, source.getType());
  LogicalResult status = success();
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, ValueRange{init},
      [&](OpBuilder &nb, Location nloc, ValueRange ivs,
          ValueRange iters) -> scf::ValueVector {
        IRMapping bvm;
        SmallVector<Value> args;
        auto readAt = [&](Value tensor, AffineMap map) -> Value {
          if (!isa<RankedTensorType>(tensor.getType()))
            return tensor;
          return tensor::ExtractOp::create(nb, nloc, tensor,
                                           applyMap(nb, nloc, map, ivs));
        };
        for (auto [v, m] : llvm::zip(inputs, inputMaps))
          args.push_back(readAt(v, m));
        SmallVector<Value> dyS, yS;
        mapArgs(args, bvm, dyS, yS);
        body.walk([&](linalg::IndexOp index) {
          bvm.map(index.getResult(), ivs[index.getDim()]);
        });
        ScalarReverse sr(nb, bvm);
        sr.recompute(body, skip);
        seedOutputs(sr, nb, nloc, op, infos, dyS, yS, bvm);
        if (failed(sr.run(body, skip)))
          status = failure();
        Value acc = iters[0];
        body.walk([&](tensor::ExtractOp extract) {
          if (extract.getTensor() != source)
            return;
          Value c = sr.cotangent(extract.getResult());
          if (!c)
            return;
          SmallVector<Value> indices;
          for (Value index : extract.getIndices())
            indices.push_back(bvm.lookupOrDefault(index));
          Value old = tensor::ExtractOp::create(nb, nloc, acc, indices);
          Value sum = arith::AddFOp::create(nb, nloc, old, c);
          acc = tensor::InsertOp::create(nb, nloc, sum, acc, indices);
        });
        return {acc};
      });
  if (failed(status))
    return failure();
  if (!existing)
    sweep.recordZeroInit(nest.results.front(),
                         nest.loops.front().getInitArgsMutable()[0]);
  if (existing)
    sweep.setAdjoint(source, nest.results.front());
  else
    sweep.addAdjoint(loc, source, nest.results.front());
  return success();
}

LogicalResult adjointGeneric(GenericOp op, Sweep &sweep) {
  return GenericAdjoint(op, sweep).build();
}

void genericAdjointNeeds(linalg::LinalgOp op, bool &differentiable,
                         SmallVectorImpl<bool> &operands,
                         SmallVectorImpl<bool> &results) {
  operands.assign(op->getNumOperands(), false);
  results.assign(op->getNumResults(), false);
  SmallVector<OutputInfo> infos;
  std::string why;
  differentiable = succeeded(classifyOutputs(op, infos, why));
  if (!differentiable)
    return;
  Block &body = *op.getBlock();
  SmallVector<Value> roots;
  for (auto [j, info] : llvm::enumerate(infos))
    if (info.kind == Combiner::MinMax) {
      results[j] = true;
      roots.push_back(info.contribution);
    }
  SmallVector<bool> args = scalarArgsNeeded(body, combiners(infos), roots);
  for (OpOperand *operand : readOperands(op))
    operands[operand->getOperandNumber()] = args[operand->getOperandNumber()];
}

} // namespace ga::ad
