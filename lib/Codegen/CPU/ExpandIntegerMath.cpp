//===- ExpandIntegerMath.cpp - Integer math as arith ----------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// math.absi x -> arith.maxsi(x, 0 - x), at any vector shape: the lowering of
// math to LLVM does not take the n-D integer vectors that the vectorizer
// makes, arith's lowering does.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ga {
#define GEN_PASS_DEF_GAEXPANDINTEGERMATHPASS
#include "ga/Codegen/CPU/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {
struct ExpandAbsI : OpRewritePattern<math::AbsIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AbsIOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getOperand();
    Value zero = arith::ConstantOp::create(rewriter, loc, x.getType(),
                                           rewriter.getZeroAttr(x.getType()));
    Value negated = arith::SubIOp::create(rewriter, loc, zero, x);
    rewriter.replaceOpWithNewOp<arith::MaxSIOp>(op, x, negated);
    return success();
  }
};

struct GaExpandIntegerMathPass
    : ga::impl::GaExpandIntegerMathPassBase<GaExpandIntegerMathPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandAbsI>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
