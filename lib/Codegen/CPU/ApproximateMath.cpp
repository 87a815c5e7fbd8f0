//===- ApproximateMath.cpp - Polynomial exp and erf -----------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ga {
#define GEN_PASS_DEF_GAAPPROXIMATEMATHPASS
#include "ga/Codegen/CPU/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {
struct GaApproximateMathPass
    : ga::impl::GaApproximateMathPassBase<GaApproximateMathPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return name == math::ExpOp::getOperationName() || name == "exp";
    });
    populatePolynomialApproximateErfPattern(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
