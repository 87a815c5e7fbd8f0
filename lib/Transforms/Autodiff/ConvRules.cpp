//===- ConvRules.cpp - The adjoint of a convolution's input ---------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// A convolution (a generic `y += x * w` whose input x is read through
// windows `s * o + d * k`: o an output position, k a kernel position, s the
// stride, d the dilation) has its weight's adjoint from the generic rule
// (w is read through a projected permutation) and its input's adjoint from
// this one, the transposed convolution:
//
//   dx[i] = sum_{o, k : s*o + d*k = i} dy[o] * w[k]
//         = sum_k' dyd[i + d*k'] * wf[k']
//
// where dyd is dy with s - 1 zeros between its elements and d * (K - 1)
// zeros before them (a tensor.insert_slice with stride s into zeros of
// extent I + d * (K - 1)), and wf is w flipped along its kernel dimensions
// (wf[k'] = w[K - 1 - k']). The adjoint is one generic over the forward
// loops, with each output position o read as the input position i: every
// map a projected permutation but dyd's window `i + d * k'`, so that the
// adjoint lowers as the forward convolution does. Padding is not the
// convolution's (torch-mlir pads its input with tensor.pad, whose own rule
// takes the slice back).
//
//===----------------------------------------------------------------------===//

#include "ADInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"

using namespace mlir;
using namespace mlir::linalg;

namespace ga::ad {

namespace {

/// One windowed result of the input's map: `stride * o + dilation * k`.
struct Window {
  unsigned result; ///< The position in the input's map.
  unsigned output; ///< o, a loop that the output's map reads.
  int64_t stride;
  unsigned kernel; ///< k, a loop that the weight's map reads.
  int64_t dilation;
};

/// `expr` as `coefficient * d` with a positive constant coefficient.
bool matchScaledDim(AffineExpr expr, unsigned &dim, int64_t &coefficient) {
  if (auto d = dyn_cast<AffineDimExpr>(expr)) {
    dim = d.getPosition();
    coefficient = 1;
    return true;
  }
  auto mul = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!mul || mul.getKind() != AffineExprKind::Mul)
    return false;
  auto d = dyn_cast<AffineDimExpr>(mul.getLHS());
  auto c = dyn_cast<AffineConstantExpr>(mul.getRHS());
  if (!d || !c || c.getValue() <= 0)
    return false;
  dim = d.getPosition();
  coefficient = c.getValue();
  return true;
}

/// Whether `op` is a convolution `y += x * w` of the input `x` (with the
/// other input `w`), static, in one float type, whose map for x is a
/// projected permutation but for its windows; fills `windows`.
bool matchConvolution(GenericOp op, OpOperand *x, OpOperand *&w,
                      SmallVectorImpl<Window> &windows) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumResults() != 1 || !op.hasPureTensorSemantics())
    return false;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != &body)
    return false;
  BlockArgument out = body.getArgument(2);
  Value product = add.getLhs() == out   ? add.getRhs()
                  : add.getRhs() == out ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul || mul->getBlock() != &body || !out.hasOneUse())
    return false;
  BlockArgument a = body.getArgument(0), bArg = body.getArgument(1);
  if (!((mul.getLhs() == a && mul.getRhs() == bArg) ||
        (mul.getLhs() == bArg && mul.getRhs() == a)))
    return false;
  if (body.getOperations().size() != 3)
    return false;
  unsigned xi = x->getOperandNumber();
  if (xi > 1)
    return false;
  w = op.getDpsInputOperand(1 - xi);
  Type element = out.getType();
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !type.hasStaticShape() || type.getElementType() != element)
      return false;
  }
  AffineMap xMap = op.getMatchingIndexingMap(x);
  AffineMap wMap = op.getMatchingIndexingMap(w);
  AffineMap yMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!wMap.isProjectedPermutation() || !yMap.isProjectedPermutation())
    return false;
  windows.clear();
  llvm::SmallBitVector used(op.getNumLoops());
  for (auto [r, expr] : llvm::enumerate(xMap.getResults())) {
    if (auto d = dyn_cast<AffineDimExpr>(expr)) {
      if (used.test(d.getPosition()))
        return false;
      used.set(d.getPosition());
      continue;
    }
    auto sum = dyn_cast<AffineBinaryOpExpr>(expr);
    if (!sum || sum.getKind() != AffineExprKind::Add)
      return false;
    unsigned d0, d1;
    int64_t c0, c1;
    if (!matchScaledDim(sum.getLHS(), d0, c0) ||
        !matchScaledDim(sum.getRHS(), d1, c1) || d0 == d1)
      return false;
    // o is read by the output and not the weight; k the other way round.
    if (yMap.isFunctionOfDim(d1) && wMap.isFunctionOfDim(d0)) {
      std::swap(d0, d1);
      std::swap(c0, c1);
    }
    if (!yMap.isFunctionOfDim(d0) || wMap.isFunctionOfDim(d0) ||
        !wMap.isFunctionOfDim(d1) || yMap.isFunctionOfDim(d1) ||
        used.test(d0) || used.test(d1))
      return false;
    used.set(d0);
    used.set(d1);
    windows.push_back(Window{(unsigned)r, d0, c0, d1, c1});
  }
  return !windows.empty();
}

/// The position of loop `dim` among the results of `map` (a projected
/// permutation that reads it).
unsigned resultOf(AffineMap map, unsigned dim) {
  for (auto [r, expr] : llvm::enumerate(map.getResults()))
    if (cast<AffineDimExpr>(expr).getPosition() == dim)
      return r;
  llvm_unreachable("the map does not read the loop");
}

} // namespace

bool isConvolutionInput(GenericOp op, OpOperand *operand) {
  OpOperand *w;
  SmallVector<Window> windows;
  return matchConvolution(op, operand, w, windows);
}

LogicalResult adjointConvolutionInput(GenericOp op, OpOperand *operand,
                                      Value dy, Sweep &sweep) {
  OpOperand *w;
  SmallVector<Window> windows;
  if (!matchConvolution(op, operand, w, windows))
    return op.emitOpError("cannot be differentiated: not a convolution");
  OpBuilder &b = sweep.builder;
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  Value x = operand->get();
  auto xType = cast<RankedTensorType>(x.getType());
  auto yType = cast<RankedTensorType>(dy.getType());
  auto wType = cast<RankedTensorType>(w->get().getType());
  AffineMap xMap = op.getMatchingIndexingMap(operand);
  AffineMap wMap = op.getMatchingIndexingMap(w);
  AffineMap yMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned numLoops = op.getNumLoops();

  // dyd: dy spread by the strides into zeros, d * (K - 1) before it.
  SmallVector<int64_t> spread(yType.getShape());
  SmallVector<OpFoldResult> offsets(yType.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(yType.getRank(), b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes;
  for (int64_t size : yType.getShape())
    sizes.push_back(b.getIndexAttr(size));
  for (const Window &win : windows) {
    unsigned p = resultOf(yMap, win.output);
    int64_t before = win.dilation * (ranges[win.kernel] - 1);
    spread[p] = xType.getDimSize(win.result) + before;
    offsets[p] = b.getIndexAttr(before);
    strides[p] = b.getIndexAttr(win.stride);
  }
  auto spreadType = RankedTensorType::get(spread, yType.getElementType());
  Value dyd = tensor::InsertSliceOp::create(
      b, loc, dy, zerosLike(b, loc, spreadType), offsets, sizes, strides);

  // wf: the weight flipped along its kernel dimensions.
  unsigned wRank = wType.getRank();
  SmallVector<AffineExpr> flipped;
  for (unsigned q = 0; q < wRank; ++q)
    flipped.push_back(getAffineDimExpr(q, ctx));
  for (const Window &win : windows) {
    unsigned q = resultOf(wMap, win.kernel);
    flipped[q] = getAffineConstantExpr(wType.getDimSize(q) - 1, ctx) -
                 getAffineDimExpr(q, ctx);
  }
  Value wf =
      GenericOp::create(
          b, loc, TypeRange{wType}, ValueRange{w->get()},
          ValueRange{tensor::EmptyOp::create(b, loc, wType, ValueRange{})},
          ArrayRef<AffineMap>{AffineMap::get(wRank, 0, flipped, ctx),
                              AffineMap::getMultiDimIdentityMap(wRank, ctx)},
          SmallVector<utils::IteratorType>(wRank,
                                           utils::IteratorType::parallel),
          [](OpBuilder &nb, Location nloc, ValueRange args) {
            linalg::YieldOp::create(nb, nloc, args[0]);
          })
          .getResult(0);

  // dx[i] += dyd[i + d * k'] * wf[k'], the loop of o now running over i.
  SmallVector<AffineExpr> dydResults(yMap.getResults());
  SmallVector<AffineExpr> dxResults(xMap.getResults());
  for (const Window &win : windows) {
    AffineExpr i = getAffineDimExpr(win.output, ctx);
    dydResults[resultOf(yMap, win.output)] =
        i + getAffineDimExpr(win.kernel, ctx) * win.dilation;
    dxResults[win.result] = i;
  }
  AffineMap dxMap = AffineMap::get(numLoops, 0, dxResults, ctx);
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0; d < numLoops; ++d)
    iterators.push_back(dxMap.isFunctionOfDim(d)
                            ? utils::IteratorType::parallel
                            : utils::IteratorType::reduction);
  Value existing = sweep.adjointToContinue(x);
  Value init = existing ? existing : zerosLike(b, loc, xType);
  auto adjoint = GenericOp::create(
      b, loc, TypeRange{xType}, ValueRange{dyd, wf}, ValueRange{init},
      ArrayRef<AffineMap>{AffineMap::get(numLoops, 0, dydResults, ctx), wMap,
                          dxMap},
      iterators, [](OpBuilder &nb, Location nloc, ValueRange args) {
        Value product = arith::MulFOp::create(nb, nloc, args[0], args[1]);
        linalg::YieldOp::create(
            nb, nloc,
            arith::AddFOp::create(nb, nloc, args[2], product).getResult());
      });
  if (!existing)
    sweep.recordZeroInit(adjoint.getResult(0), adjoint.getDpsInitsMutable()[0]);
  if (existing)
    sweep.setAdjoint(x, adjoint.getResult(0));
  else
    sweep.addAdjoint(loc, x, adjoint.getResult(0));
  return success();
}

} // namespace ga::ad
