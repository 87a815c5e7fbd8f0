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
//   * broadcast gathers: a tensor.extract from a splat or a broadcast reads
//                     the splat's value or the broadcast's source at the
//                     indices it keeps (a class weight gathered at
//                     (row, label) reads the label alone);
//   * powers:         math.fpowi with a constant exponent is the
//                     multiplications that its lowering would compute.
//
// Each rewrite is a local pattern (ShapePatterns.cpp, IndexPatterns.cpp,
// the power below); the greedy driver applies them to a fixed point.
//
//===----------------------------------------------------------------------===//

#include "Rewrites.h"

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

namespace ga::legalize {

/// A linalg.generic with the same body as `op` (moved out of it), and the
/// given operands and maps.
linalg::GenericOp rebuildGeneric(PatternRewriter &rewriter,
                                 linalg::GenericOp op, ValueRange inputs,
                                 ValueRange outputs, ArrayRef<AffineMap> maps) {
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
SmallVector<ReassociationIndices>
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
LogicalResult
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

/// The map from the indices of `value` to those of the tensor that it
/// reshapes by inserting or removing dimensions of extent 1 only (through
/// any number of such reshapes); `value` becomes that tensor. The identity
/// when `value` is no such reshape.
AffineMap peelUnitReshapes(Value &value) {
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

} // namespace ga::legalize

namespace {

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

struct GaLegalizeImportPass
    : ga::impl::GaLegalizeImportPassBase<GaLegalizeImportPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    MLIRContext *ctx = &getContext();
    ga::legalize::populateShapePatterns(patterns);
    ga::legalize::populateIndexPatterns(patterns);
    patterns.add<ExpandConstantFPowI>(ctx);
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
