//===- LegalizeImport.cpp - Front ends' linalg in ga-opt's forms ----------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Linalg on tensors as front ends emit it (torch-mlir's FX importer) says
// the same computation as ga-opt's own inputs in forms that its analyses do
// not take. Each rewrite below states the same computation (the same scalar
// operations on the same elements) and removes one such form:
//
//   * unit maps:      an operand of extent 1 read through the constant 0
//                     (keepdim statistics, `(d0, d1, d2) -> (d0, d1, 0)`) is
//                     collapsed and read without that dimension; an output
//                     so written is collapsed and its result expanded back;
//   * dead results:   a result of a multi-result linalg.generic that nothing
//                     reads (the argmax that every max reduction computes)
//                     is dropped with the body's operations that only it
//                     needed;
//   * splats:         an input that is a splat constant becomes a scalar
//                     constant of the body;
//   * broadcasts:     a linalg op that only copies an input into a fresh
//                     tensor (a bias or a weight repeated over the batch's
//                     rows) is read by its generic consumers through its
//                     source: a value that has the batch's shape but does
//                     not depend on the batch is never materialized;
//   * transposes:     a matmul of a transposed operand (`nn.Linear`'s
//                     weight) reads the operand through a transposed map;
//   * batch matmuls:  a linalg.batch_matmul whose right operand is such a
//                     broadcast of one matrix over the batch is a
//                     linalg.matmul of the left operand's rows;
//   * iotas:          an input that holds each element's own index along a
//                     loop (`arange`) is that loop's linalg.index;
//   * loop gathers:   a tensor.extract at loop indices only (a position
//                     embedding at `arange` positions, a mask's rows at
//                     `arange(B)`) is a read of that tensor through a map,
//                     and the bounds checks of loop indices fold away;
//   * powers:         math.fpowi with a constant exponent is the
//                     multiplications that its lowering would compute.
//
// Each rewrite is a local pattern; the greedy driver applies them to a
// fixed point.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"

namespace ga {
#define GEN_PASS_DEF_GALEGALIZEIMPORTPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;

/// A linalg.generic with the same body as `op` (moved out of it), and the
/// given operands and maps.
static linalg::GenericOp rebuildGeneric(PatternRewriter &rewriter,
                                        linalg::GenericOp op, ValueRange inputs,
                                        ValueRange outputs,
                                        ArrayRef<AffineMap> maps) {
  SmallVector<Type> resultTypes;
  for (Value out : outputs)
    resultTypes.push_back(out.getType());
  auto generic = linalg::GenericOp::create(
      rewriter, op.getLoc(), resultTypes, inputs, outputs,
      rewriter.getAffineMapArrayAttr(maps), op.getIteratorTypes(),
      /*doc=*/nullptr, /*libraryCall=*/nullptr);
  rewriter.inlineRegionBefore(op.getRegion(), generic.getRegion(),
                              generic.getRegion().begin());
  return generic;
}

/// The reassociation that collapses away the dimensions `drop` of a shape
/// of rank `rank` (each dropped one joins a kept neighbour); empty when all
/// of them are dropped.
static SmallVector<ReassociationIndices>
collapseDropping(int64_t rank, const llvm::SmallBitVector &drop) {
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices current;
  for (int64_t d = 0; d < rank; ++d) {
    current.push_back(d);
    if (!drop.test(d)) {
      groups.push_back(current);
      current.clear();
    }
  }
  if (!current.empty() && !groups.empty())
    groups.back().append(current.begin(), current.end());
  return groups;
}

/// Replaces, in `op`'s body, the block argument of every input for which
/// `inBody` builds a value (at the body's start; null keeps the input), and
/// drops those inputs. Fails when it replaces none.
static LogicalResult
replaceInputsInBody(linalg::GenericOp op, PatternRewriter &rewriter,
                    function_ref<Value(OpOperand &, BlockArgument)> inBody) {
  if (!op.hasPureTensorSemantics())
    return failure();
  Block &body = op.getRegion().front();
  SmallVector<AffineMap> allMaps = op.getIndexingMapsArray();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  SmallVector<unsigned> erased;
  for (OpOperand *input : op.getDpsInputOperands()) {
    unsigned i = input->getOperandNumber();
    rewriter.setInsertionPointToStart(&body);
    Value value = inBody(*input, body.getArgument(i));
    if (!value) {
      inputs.push_back(input->get());
      maps.push_back(allMaps[i]);
      continue;
    }
    erased.push_back(i);
    rewriter.replaceAllUsesWith(body.getArgument(i), value);
  }
  if (erased.empty())
    return failure();
  maps.append(allMaps.begin() + op.getNumDpsInputs(), allMaps.end());
  rewriter.setInsertionPoint(op);
  linalg::GenericOp generic =
      rebuildGeneric(rewriter, op, inputs, op.getDpsInits(), maps);
  Block &moved = generic.getRegion().front();
  for (unsigned i : llvm::reverse(erased))
    moved.eraseArgument(i);
  rewriter.replaceOp(op, generic.getResults());
  return success();
}

namespace {
/// Operands of extent 1 read through the constant 0: collapsed.
struct FoldUnitExtentMaps : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    SmallVector<Value> operands;
    SmallVector<SmallVector<ReassociationIndices>> groups;
    bool changed = false;
    Location loc = op.getLoc();
    for (OpOperand &operand : op->getOpOperands()) {
      AffineMap map = maps[operand.getOperandNumber()];
      auto type = dyn_cast<RankedTensorType>(operand.get().getType());
      llvm::SmallBitVector drop(map.getNumResults());
      if (type)
        for (auto [d, expr] : llvm::enumerate(map.getResults()))
          if (auto c = dyn_cast<AffineConstantExpr>(expr))
            drop[d] = c.getValue() == 0 && type.getDimSize(d) == 1;
      groups.push_back({});
      operands.push_back(operand.get());
      if (drop.none())
        continue;
      changed = true;
      SmallVector<AffineExpr> kept;
      SmallVector<int64_t> shape;
      for (auto [d, expr] : llvm::enumerate(map.getResults()))
        if (!drop.test(d)) {
          kept.push_back(expr);
          shape.push_back(type.getDimSize(d));
        }
      maps[operand.getOperandNumber()] =
          AffineMap::get(map.getNumDims(), 0, kept, op.getContext());
      groups.back() = collapseDropping(map.getNumResults(), drop);
      operands.back() = tensor::CollapseShapeOp::create(
          rewriter, loc,
          RankedTensorType::get(shape, type.getElementType(),
                                type.getEncoding()),
          operand.get(), groups.back());
    }
    if (!changed)
      return failure();
    unsigned numInputs = op.getNumDpsInputs();
    SmallVector<Value> inputs(operands.begin(), operands.begin() + numInputs);
    SmallVector<Value> outputs(operands.begin() + numInputs, operands.end());
    linalg::GenericOp generic =
        rebuildGeneric(rewriter, op, inputs, outputs, maps);
    SmallVector<Value> results;
    for (auto [i, result] : llvm::enumerate(generic.getResults())) {
      Type want = op.getResult(i).getType();
      results.push_back(
          result.getType() == want
              ? Value(result)
              : tensor::ExpandShapeOp::create(rewriter, loc, want, result,
                                              groups[numInputs + i])
                    .getResult());
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// Results of a multi-result generic that nothing reads: dropped, when the
/// other results do not read their outputs' elements.
struct DropDeadResults : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getNumResults() < 2 || !op.hasPureTensorSemantics() ||
        op->use_empty())
      return failure();
    Block &body = op.getRegion().front();
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    unsigned numInputs = op.getNumDpsInputs();
    // What the read results' yielded values are computed from.
    llvm::SetVector<Operation *> needed;
    llvm::SmallDenseSet<Value> neededArgs;
    SmallVector<Value> work;
    for (OpResult result : op->getResults())
      if (!result.use_empty())
        work.push_back(yield.getOperand(result.getResultNumber()));
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        if (arg.getOwner() == &body)
          neededArgs.insert(arg);
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (def->getBlock() != &body || !needed.insert(def))
        continue;
      llvm::append_range(work, def->getOperands());
      def->walk([&](Operation *nested) {
        llvm::append_range(work, nested->getOperands());
      });
    }
    SmallVector<unsigned> dead;
    for (OpResult result : op->getResults())
      if (result.use_empty() && !neededArgs.contains(body.getArgument(
                                    numInputs + result.getResultNumber())))
        dead.push_back(result.getResultNumber());
    if (dead.empty())
      return failure();

    SmallVector<Value> outputs;
    SmallVector<AffineMap> maps;
    SmallVector<AffineMap> allMaps = op.getIndexingMapsArray();
    maps.append(allMaps.begin(), allMaps.begin() + numInputs);
    SmallVector<unsigned> kept;
    for (unsigned j = 0; j < op.getNumResults(); ++j)
      if (!llvm::is_contained(dead, j)) {
        kept.push_back(j);
        outputs.push_back(op.getDpsInits()[j]);
        maps.push_back(allMaps[numInputs + j]);
      }
    SmallVector<Type> resultTypes;
    for (Value out : outputs)
      resultTypes.push_back(out.getType());
    auto generic = linalg::GenericOp::create(
        rewriter, op.getLoc(), resultTypes, op.getDpsInputs(), outputs,
        rewriter.getAffineMapArrayAttr(maps), op.getIteratorTypes(),
        /*doc=*/nullptr, /*libraryCall=*/nullptr);
    Block *newBody = rewriter.createBlock(&generic.getRegion());
    IRMapping mapping;
    for (unsigned i = 0; i < numInputs; ++i)
      mapping.map(body.getArgument(i),
                  newBody->addArgument(body.getArgument(i).getType(),
                                       body.getArgument(i).getLoc()));
    for (unsigned j : kept) {
      BlockArgument arg = body.getArgument(numInputs + j);
      mapping.map(arg, newBody->addArgument(arg.getType(), arg.getLoc()));
    }
    rewriter.setInsertionPointToEnd(newBody);
    for (Operation &o : body.without_terminator())
      if (needed.contains(&o))
        rewriter.clone(o, mapping);
    SmallVector<Value> yielded;
    for (unsigned j : kept)
      yielded.push_back(mapping.lookupOrDefault(yield.getOperand(j)));
    linalg::YieldOp::create(rewriter, yield.getLoc(), yielded);
    for (auto [i, j] : llvm::enumerate(kept))
      rewriter.replaceAllUsesWith(op.getResult(j), generic.getResult(i));
    rewriter.eraseOp(op);
    return success();
  }
};

/// Splat constant inputs: scalar constants of the body.
struct InlineSplatInputs : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    return replaceInputsInBody(
        op, rewriter, [&](OpOperand &input, BlockArgument) -> Value {
          SplatElementsAttr splat;
          if (!matchPattern(input.get(), m_Constant(&splat)) ||
              llvm::is_contained(op.getDpsInits(), input.get()))
            return {};
          return arith::ConstantOp::create(
              rewriter, input.get().getLoc(),
              cast<TypedAttr>(splat.getSplatValue<Attribute>()));
        });
  }
};

/// The map from the indices of `value` to those of the tensor that it
/// reshapes by inserting or removing dimensions of extent 1 only (through
/// any number of such reshapes); `value` becomes that tensor. The identity
/// when `value` is no such reshape.
static AffineMap peelUnitReshapes(Value &value) {
  MLIRContext *ctx = value.getContext();
  auto rank = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank();
  };
  AffineMap total = AffineMap::getMultiDimIdentityMap(rank(value), ctx);
  while (true) {
    SmallVector<AffineExpr> exprs;
    Value source;
    bool ok = true;
    if (auto collapse = value.getDefiningOp<tensor::CollapseShapeOp>()) {
      // Result dimension j gathers source dimensions g_j: the one of extent
      // other than 1 takes j's index, the others 0.
      source = collapse.getSrc();
      ArrayRef<int64_t> shape = collapse.getSrcType().getShape();
      exprs.assign(shape.size(), getAffineConstantExpr(0, ctx));
      for (auto [j, group] :
           llvm::enumerate(collapse.getReassociationIndices())) {
        int64_t wide =
            llvm::count_if(group, [&](int64_t d) { return shape[d] != 1; });
        ok &= wide <= 1;
        for (int64_t d : group)
          if (shape[d] != 1 || wide == 0)
            exprs[d] = getAffineDimExpr(j, ctx);
      }
    } else if (auto expand = value.getDefiningOp<tensor::ExpandShapeOp>()) {
      // Source dimension s spreads over result dimensions g_s: its index is
      // that of the one of extent other than 1 (0 when all are 1).
      source = expand.getSrc();
      ArrayRef<int64_t> shape = expand.getResultType().getShape();
      for (ReassociationIndices group : expand.getReassociationIndices()) {
        AffineExpr e = getAffineConstantExpr(0, ctx);
        int64_t wide = 0;
        for (int64_t d : group)
          if (shape[d] != 1) {
            e = getAffineDimExpr(d, ctx);
            ++wide;
          }
        ok &= wide <= 1;
        exprs.push_back(e);
      }
    } else {
      return total;
    }
    if (!ok)
      return total;
    total = AffineMap::get(rank(value), 0, exprs, ctx).compose(total);
    value = source;
  }
}

/// Whether `value` is the result of a linalg operation that only copies
/// one of its inputs into a fresh tensor (a linalg.generic that yields an
/// input, linalg.broadcast, linalg.transpose); sets `source` and
/// `sourceMap` (the copy's indices to the source's).
static bool isCopyOfInput(Value value, Value &source, AffineMap &sourceMap) {
  AffineMap reshape = peelUnitReshapes(value);
  auto producer = value.getDefiningOp<linalg::LinalgOp>();
  if (!producer || producer->getNumResults() != 1 ||
      !producer.hasPureTensorSemantics() ||
      !isa<linalg::GenericOp, linalg::BroadcastOp, linalg::TransposeOp>(
          producer.getOperation()) ||
      producer.getNumLoops() != producer.getNumParallelLoops() ||
      !producer.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>())
    return false;
  Block *body = producer.getBlock();
  if (!body->without_terminator().empty())
    return false;
  auto arg = dyn_cast<BlockArgument>(body->getTerminator()->getOperand(0));
  if (!arg || arg.getOwner() != body ||
      arg.getArgNumber() >= producer.getNumDpsInputs())
    return false;
  AffineMap outMap = producer.getIndexingMapsArray().back();
  if (!outMap.isPermutation())
    return false;
  source = producer.getDpsInputs()[arg.getArgNumber()];
  sourceMap = producer.getIndexingMapsArray()[arg.getArgNumber()]
                  .compose(inversePermutation(outMap))
                  .compose(reshape);
  return true;
}

/// Generic consumers of a broadcast read its source.
struct ReadBroadcastSources : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    SmallVector<Value> inputs(op.getDpsInputs());
    bool changed = false;
    for (OpOperand *input : op.getDpsInputOperands()) {
      Value source;
      AffineMap sourceMap;
      if (llvm::is_contained(op.getDpsInits(), input->get()) ||
          !isCopyOfInput(input->get(), source, sourceMap))
        continue;
      unsigned i = input->getOperandNumber();
      maps[i] = sourceMap.compose(maps[i]);
      inputs[i] = source;
      changed = true;
    }
    if (!changed)
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getInputsMutable().assign(inputs);
      op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    });
    return success();
  }
};

/// linalg.batch_matmul(A, broadcast of W over the batch): a matmul of A's
/// rows with W.
struct BatchMatmulOfBroadcast : OpRewritePattern<linalg::BatchMatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::BatchMatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || op.hasUserDefinedMaps())
      return failure();
    Value source;
    AffineMap sourceMap;
    if (!isCopyOfInput(op.getDpsInputs()[1], source, sourceMap))
      return failure();
    // The source must be the matrix itself: (b, k, n) -> (k, n).
    MLIRContext *ctx = op.getContext();
    AffineMap matrix = AffineMap::get(
        3, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(2, ctx)}, ctx);
    if (sourceMap != matrix)
      return failure();
    Value lhs = op.getDpsInputs()[0], init = op.getDpsInits()[0];
    auto lhsType = cast<RankedTensorType>(lhs.getType());
    auto initType = cast<RankedTensorType>(init.getType());
    if (!lhsType.hasStaticShape() || !initType.hasStaticShape())
      return failure();
    SmallVector<ReassociationIndices> rows = {{0, 1}, {2}};
    Location loc = op.getLoc();
    auto flat = [&](RankedTensorType t) {
      return RankedTensorType::get(
          {t.getDimSize(0) * t.getDimSize(1), t.getDimSize(2)},
          t.getElementType());
    };
    Value a = tensor::CollapseShapeOp::create(rewriter, loc, flat(lhsType), lhs,
                                              rows);
    Value c = tensor::CollapseShapeOp::create(rewriter, loc, flat(initType),
                                              init, rows);
    Value product =
        linalg::MatmulOp::create(rewriter, loc, TypeRange{c.getType()},
                                 ValueRange{a, source}, ValueRange{c})
            .getResult(0);
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, initType, product,
                                                       rows);
    return success();
  }
};

/// Whether `value` is an iota: a generic that writes each element's own
/// index along one loop (`arange`) or a constant that holds them, possibly
/// reshaped by unit dimensions;
/// sets `element` to an element's value as a function of its indices.
static bool isIota(Value value, AffineExpr &element) {
  AffineMap reshape = peelUnitReshapes(value);
  // A constant that holds its indices along one dimension (a buffer of
  // position ids).
  DenseIntElementsAttr constant;
  if (matchPattern(value, m_Constant(&constant))) {
    auto type = cast<RankedTensorType>(constant.getType());
    if (!type.hasStaticShape() || type.getNumElements() > (1 << 20))
      return false;
    ArrayRef<int64_t> shape = type.getShape();
    SmallVector<APInt> values(constant.getValues<APInt>());
    for (int64_t dim = 0; dim < type.getRank(); ++dim) {
      // The stride of `dim` in the row-major order of the elements.
      int64_t stride = 1;
      for (int64_t d = dim + 1; d < type.getRank(); ++d)
        stride *= shape[d];
      bool holds = llvm::all_of(llvm::enumerate(values), [&](auto e) {
        return e.value().getSExtValue() ==
               static_cast<int64_t>(e.index()) / stride % shape[dim];
      });
      if (holds) {
        element = reshape.getResult(dim);
        return true;
      }
    }
    return false;
  }
  auto producer = value.getDefiningOp<linalg::GenericOp>();
  if (!producer || producer->getNumResults() != 1 ||
      producer.getNumDpsInputs() != 0 || !producer.hasPureTensorSemantics())
    return false;
  Block &body = producer.getRegion().front();
  Value yielded = body.getTerminator()->getOperand(0);
  if (auto cast = yielded.getDefiningOp<arith::IndexCastOp>())
    yielded = cast.getIn();
  auto index = yielded.getDefiningOp<linalg::IndexOp>();
  if (!index)
    return false;
  AffineMap out = producer.getIndexingMapsArray()[0];
  if (!out.isPermutation())
    return false;
  unsigned dim = inversePermutation(out).getDimPosition(index.getDim());
  element = reshape.getResult(dim);
  return true;
}

/// Inputs that are iotas: the loop index itself, in the body.
struct IotaInputsAsIndices : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    return replaceInputsInBody(
        op, rewriter, [&](OpOperand &input, BlockArgument arg) -> Value {
          AffineMap map = op.getMatchingIndexingMap(&input);
          AffineExpr element;
          if (!isIota(input.get(), element) ||
              !isa<IntegerType, IndexType>(arg.getType()))
            return {};
          // The element's value at the loops' indices.
          AffineExpr atLoops = AffineMap::get(map.getNumResults(), 0, element)
                                   .compose(map)
                                   .getResult(0);
          Location loc = arg.getLoc();
          Value index;
          if (auto dim = dyn_cast<AffineDimExpr>(atLoops))
            index = linalg::IndexOp::create(rewriter, loc, dim.getPosition());
          else if (auto constant = dyn_cast<AffineConstantExpr>(atLoops))
            index = arith::ConstantIndexOp::create(rewriter, loc,
                                                   constant.getValue());
          else
            return {};
          if (!arg.getType().isIndex())
            index =
                arith::IndexCastOp::create(rewriter, loc, arg.getType(), index);
          return index;
        });
  }
};

/// The loop whose index `value` is, through integer casts and the wrap of
/// negative indices (`x < 0 ? x + n : x`, which a loop index never takes).
static std::optional<unsigned> loopIndexOf(Value value) {
  while (true) {
    if (auto cast = value.getDefiningOp<arith::IndexCastOp>()) {
      value = cast.getIn();
      continue;
    }
    if (auto select = value.getDefiningOp<arith::SelectOp>()) {
      auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
      auto add = select.getTrueValue().getDefiningOp<arith::AddIOp>();
      Value x = select.getFalseValue();
      if (cmp && add && cmp.getPredicate() == arith::CmpIPredicate::slt &&
          cmp.getLhs() == x && matchPattern(cmp.getRhs(), m_Zero()) &&
          (add.getLhs() == x || add.getRhs() == x)) {
        value = x;
        continue;
      }
      return std::nullopt;
    }
    if (auto index = value.getDefiningOp<linalg::IndexOp>())
      return index.getDim();
    return std::nullopt;
  }
}

/// A tensor.extract in a body at loop indices only: a read of that tensor
/// through a map (sliced to the loops' extents).
struct GatherAtLoopIndices : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return failure();
    Block &body = op.getRegion().front();
    SmallVector<int64_t> extents = op.getStaticLoopRanges();
    for (Operation &o : body.without_terminator()) {
      auto extract = dyn_cast<tensor::ExtractOp>(&o);
      if (!extract || extract.getTensor().getParentRegion() == &op.getRegion())
        continue;
      auto type = extract.getTensor().getType();
      if (!type.hasStaticShape())
        continue;
      SmallVector<AffineExpr> exprs;
      SmallVector<int64_t> sizes;
      bool ok = true;
      for (auto [d, index] : llvm::enumerate(extract.getIndices())) {
        std::optional<unsigned> loop = loopIndexOf(index);
        if (!loop || ShapedType::isDynamic(extents[*loop]) ||
            extents[*loop] > type.getDimSize(d) ||
            llvm::is_contained(exprs, rewriter.getAffineDimExpr(*loop))) {
          ok = false;
          break;
        }
        exprs.push_back(rewriter.getAffineDimExpr(*loop));
        sizes.push_back(extents[*loop]);
      }
      if (!ok)
        continue;
      Location loc = extract.getLoc();
      rewriter.setInsertionPoint(op);
      Value source = extract.getTensor();
      if (ArrayRef<int64_t>(sizes) != type.getShape()) {
        SmallVector<OpFoldResult> offsets(sizes.size(),
                                          rewriter.getIndexAttr(0));
        SmallVector<OpFoldResult> strides(sizes.size(),
                                          rewriter.getIndexAttr(1));
        SmallVector<OpFoldResult> sliceSizes;
        for (int64_t size : sizes)
          sliceSizes.push_back(rewriter.getIndexAttr(size));
        source = tensor::ExtractSliceOp::create(rewriter, loc, source, offsets,
                                                sliceSizes, strides);
      }
      unsigned numInputs = op.getNumDpsInputs();
      BlockArgument arg =
          body.insertArgument(numInputs, type.getElementType(), loc);
      rewriter.replaceAllUsesWith(extract.getResult(), arg);
      rewriter.eraseOp(extract);
      SmallVector<Value> inputs(op.getDpsInputs());
      inputs.push_back(source);
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      maps.insert(maps.begin() + numInputs,
                  AffineMap::get(op.getNumLoops(), 0, exprs, getContext()));
      linalg::GenericOp generic =
          rebuildGeneric(rewriter, op, inputs, op.getDpsInits(), maps);
      rewriter.replaceOp(op, generic.getResults());
      return success();
    }
    return failure();
  }
};

/// Comparisons of a loop index with a constant that the loop's extent
/// decides (the bounds checks of gathers at loop indices): constants.
struct FoldLoopIndexBounds : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<int64_t> extents = op.getStaticLoopRanges();
    bool changed = false;
    op.getRegion().walk([&](arith::CmpIOp cmp) {
      std::optional<unsigned> loop = loopIndexOf(cmp.getLhs());
      APInt bound;
      if (!loop || ShapedType::isDynamic(extents[*loop]) ||
          !matchPattern(cmp.getRhs(), m_ConstantInt(&bound)))
        return;
      // The index lies in [0, extent - 1].
      int64_t c = bound.getSExtValue(), high = extents[*loop] - 1;
      std::optional<bool> value;
      switch (cmp.getPredicate()) {
      case arith::CmpIPredicate::slt:
        if (high < c)
          value = true;
        else if (c <= 0)
          value = false;
        break;
      case arith::CmpIPredicate::sge:
        if (c <= 0)
          value = true;
        else if (high < c)
          value = false;
        break;
      case arith::CmpIPredicate::ult:
        if (c > 0 && high < c)
          value = true;
        break;
      default:
        break;
      }
      if (!value)
        return;
      rewriter.setInsertionPoint(cmp);
      rewriter.replaceOpWithNewOp<arith::ConstantOp>(
          cmp, rewriter.getBoolAttr(*value));
      changed = true;
    });
    return success(changed);
  }
};

/// math.fpowi with a constant exponent: the multiplications by squaring
/// that LLVM's expansion of llvm.powi and compiler-rt's __powisf2 perform,
/// in their order (so the same bits), and a reciprocal for a negative
/// exponent. (A vectorized fpowi has no lowering to LLVM.)
struct ExpandConstantFPowI : OpRewritePattern<math::FPowIOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::FPowIOp op,
                                PatternRewriter &rewriter) const override {
    APInt exponent;
    if (!matchPattern(op.getRhs(), m_ConstantInt(&exponent)) ||
        !isa<FloatType>(op.getType()))
      return failure();
    int64_t n = exponent.getSExtValue();
    if (n < -64 || n > 64)
      return failure();
    Location loc = op.getLoc();
    Value square = op.getLhs(), result;
    for (int64_t b = n < 0 ? -n : n; b; b /= 2) {
      if (b & 1)
        result = result ? arith::MulFOp::create(rewriter, loc, result, square)
                              .getResult()
                        : square;
      if (b / 2)
        square = arith::MulFOp::create(rewriter, loc, square, square);
    }
    Value one = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(op.getType(), 1.0));
    if (!result)
      result = one;
    else if (n < 0)
      result = arith::DivFOp::create(rewriter, loc, one, result);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// linalg.matmul and linalg.batch_matmul of a transposed operand read the
/// operand itself through a transposed map (a weight of `nn.Linear`): the
/// product's adjoint then accumulates into the weight's own layout.
template <typename OpTy>
struct ContractTransposedOperands : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    SmallVector<Value> inputs(op.getDpsInputs());
    bool changed = false;
    for (unsigned i = 0; i < 2; ++i) {
      auto transpose = inputs[i].template getDefiningOp<linalg::TransposeOp>();
      if (!transpose)
        continue;
      // The transpose's result at indices e reads its input at
      // e o inverse(permutation).
      AffineMap toInput = transpose.getIndexingMapsArray()[0].compose(
          inversePermutation(transpose.getIndexingMapsArray()[1]));
      maps[i] = toInput.compose(maps[i]);
      inputs[i] = transpose.getInput();
      changed = true;
    }
    if (!changed)
      return failure();
    auto product = OpTy::create(
        rewriter, op.getLoc(), op->getResultTypes(), inputs, op.getDpsInits(),
        {rewriter.getNamedAttr("indexing_maps",
                               rewriter.getAffineMapArrayAttr(maps))});
    if (failed(mlir::verify(product))) {
      rewriter.eraseOp(product);
      return failure();
    }
    rewriter.replaceOp(op, product->getResults());
    return success();
  }
};

struct GaLegalizeImportPass
    : ga::impl::GaLegalizeImportPassBase<GaLegalizeImportPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    MLIRContext *ctx = &getContext();
    patterns
        .add<FoldUnitExtentMaps, DropDeadResults, InlineSplatInputs,
             ReadBroadcastSources, BatchMatmulOfBroadcast, IotaInputsAsIndices,
             GatherAtLoopIndices, FoldLoopIndexBounds, ExpandConstantFPowI,
             ContractTransposedOperands<linalg::MatmulOp>,
             ContractTransposedOperands<linalg::BatchMatmulOp>>(ctx);
    cf::AssertOp::getCanonicalizationPatterns(patterns, ctx);
    // The reshapes that the unit maps leave meet the front end's own.
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    // Inits reshaped with them stay fills of tensor.empty, which a batch
    // split re-types.
    linalg::FillOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::populateFoldTensorEmptyPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
