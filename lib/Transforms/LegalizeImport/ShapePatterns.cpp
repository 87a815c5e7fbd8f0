//===- ShapePatterns.cpp - ga-legalize-import: shapes and layouts ---------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Unit maps, dead results, splats, broadcasts, batch matmuls of a
// broadcast and transposed operands (LegalizeImport.cpp lists what each
// removes).
//
//===----------------------------------------------------------------------===//

#include "Rewrites.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace ga::legalize;

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

/// Whether `value` is the result of a linalg operation that only copies
/// one of its inputs into a fresh tensor (a linalg.generic that yields an
/// input, linalg.broadcast, linalg.transpose); sets `source` and
/// `sourceMap` (the copy's indices to the source's).
bool isCopyOfInput(Value value, Value &source, AffineMap &sourceMap) {
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

} // namespace

void ga::legalize::populateShapePatterns(RewritePatternSet &patterns) {
  patterns.add<FoldUnitExtentMaps, DropDeadResults, InlineSplatInputs,
               ReadBroadcastSources, BatchMatmulOfBroadcast,
               ContractTransposedOperands<linalg::MatmulOp>,
               ContractTransposedOperands<linalg::BatchMatmulOp>>(
      patterns.getContext());
}
