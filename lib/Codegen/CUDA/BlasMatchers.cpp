//===- BlasMatchers.cpp - Products as cuBLAS sees them --------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "BlasMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace ga::cuda;

namespace {

/// Whether `value` is `mulf(p, q)` or `mulf(q, p)` (no fast-math flags).
bool isProduct(Value value, Value p, Value q) {
  auto mul = value.getDefiningOp<arith::MulFOp>();
  if (!mul || mul.getFastmath() != arith::FastMathFlags::none)
    return false;
  return (mul.getLhs() == p && mul.getRhs() == q) ||
         (mul.getLhs() == q && mul.getRhs() == p);
}

/// The body `yield acc + P(x, y)` of a multiply-accumulate, with P one of
/// the products of BlasForm::order: sets `alpha` and `order` of `f`.
bool matchBody(linalg::LinalgOp op, BlasForm &f) {
  Block *body = op.getBlock();
  if (!body || body->getNumArguments() != 3 ||
      !llvm::hasSingleElement(body->getTerminator()->getOperands()))
    return false;
  Value x = body->getArgument(0), y = body->getArgument(1),
        acc = body->getArgument(2);
  // bf16-mixed: both inputs bfloat16, each widened to float32 once, the
  // widenings multiplied (ga-mixed-precision).
  int widenings = 0;
  if (x.getType().isBF16() && y.getType().isBF16()) {
    for (Value *input : {&x, &y}) {
      if (!input->hasOneUse())
        return false;
      auto ext = dyn_cast<arith::ExtFOp>(*input->getUsers().begin());
      if (!ext || !ext.getType().isF32())
        return false;
      *input = ext.getResult();
    }
    widenings = 2;
    f.bf16Inputs = true;
  }
  if (!x.getType().isF32() || !y.getType().isF32() || !acc.getType().isF32())
    return false;
  auto add =
      body->getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || add.getFastmath() != arith::FastMathFlags::none)
    return false;
  Value product = add.getLhs() == acc ? add.getRhs() : add.getLhs();
  if (product == acc || (add.getLhs() != acc && add.getRhs() != acc))
    return false;
  // Every operation of the body is the add, the products or the yield.
  if (std::distance(body->begin(), body->end()) > 4 + widenings)
    return false;
  if (isProduct(product, x, y)) {
    f.order = 0;
    return std::distance(body->begin(), body->end()) == 3 + widenings;
  }
  auto outer = product.getDefiningOp<arith::MulFOp>();
  if (!outer || outer.getFastmath() != arith::FastMathFlags::none)
    return false;
  auto outside = [&](Value v) {
    return v.getType().isF32() &&
           !op->isAncestor(v.getParentRegion()->getParentOp());
  };
  for (auto [inner, other] : {std::make_pair(outer.getLhs(), outer.getRhs()),
                              std::make_pair(outer.getRhs(), outer.getLhs())}) {
    if (isProduct(inner, x, y) && outside(other)) {
      f.alpha = other;
      f.order = 1;
      return true;
    }
    auto mul = inner.getDefiningOp<arith::MulFOp>();
    if (!mul || mul.getFastmath() != arith::FastMathFlags::none)
      continue;
    for (auto [first, second] : {std::make_pair(mul.getLhs(), mul.getRhs()),
                                 std::make_pair(mul.getRhs(), mul.getLhs())}) {
      if (!outside(second))
        continue;
      if (first == x && other == y) {
        f.alpha = second;
        f.order = 2;
        return true;
      }
      if (first == y && other == x) {
        f.alpha = second;
        f.order = 3;
        return true;
      }
    }
  }
  return false;
}

/// The stride of every loop dimension in `operand`'s buffer (0 for
/// dimensions it does not use), or failure when its map is not a projected
/// permutation of static strides over f32.
FailureOr<SmallVector<int64_t>>
loopStrides(linalg::LinalgOp op, OpOperand *operand, bool bf16 = false) {
  auto type = dyn_cast<MemRefType>(operand->get().getType());
  if (!type || !type.hasStaticShape() ||
      !(bf16 ? type.getElementType().isBF16() : type.getElementType().isF32()))
    return failure();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return failure();
  AffineMap map = op.getMatchingIndexingMap(operand);
  SmallVector<int64_t> result(op.getNumLoops(), 0);
  for (auto [r, expr] : llvm::enumerate(map.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim || result[dim.getPosition()] != 0)
      return failure();
    // A unit dimension's stride is irrelevant; 0 keeps batch strides exact.
    result[dim.getPosition()] = type.getDimSize(r) == 1 ? 0 : strides[r];
  }
  return result;
}

/// The leading dimension of a row-major rows x cols matrix whose rows are
/// `rowStride` apart and whose columns are `colStride` apart, or 0 when
/// cuBLAS cannot read it so (columns not contiguous, or rows overlapping).
int64_t leadingDimension(int64_t rows, int64_t cols, int64_t rowStride,
                         int64_t colStride) {
  if (cols > 1 && colStride != 1)
    return 0;
  if (rows <= 1)
    return std::max<int64_t>(cols, 1);
  return rowStride >= cols ? rowStride : 0;
}

/// How cuBLAS reads op(X), a rows x cols matrix whose rows and columns are
/// `rowStride` and `colStride` elements apart: as stored (false) or
/// transposed (true), with its leading dimension `ld`; failure when neither
/// dimension is contiguous.
FailureOr<bool> orient(int64_t rows, int64_t cols, int64_t rowStride,
                       int64_t colStride, int64_t &ld) {
  if ((ld = leadingDimension(rows, cols, rowStride, colStride)))
    return false;
  if ((ld = leadingDimension(cols, rows, colStride, rowStride)))
    return true;
  return failure();
}

} // namespace

std::optional<BlasForm> ga::cuda::matchBlas(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1)
    return std::nullopt;
  BlasForm f;
  if (!matchBody(op, f))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op.getIndexingMapsArray());
  if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
      dims->k.size() != 1)
    return std::nullopt;
  // k reduces; every other loop is parallel.
  for (auto [i, type] : llvm::enumerate(op.getIteratorTypesArray()))
    if ((type == utils::IteratorType::reduction) != (i == dims->k[0]))
      return std::nullopt;
  f.bounds = op.getStaticLoopRanges();
  if (llvm::any_of(f.bounds, ShapedType::isDynamic))
    return std::nullopt;
  f.m = dims->m[0];
  f.n = dims->n[0];
  f.k = dims->k[0];
  f.a = op.getDpsInputOperand(0);
  f.b = op.getDpsInputOperand(1);
  f.c = op.getDpsInitOperand(0);
  FailureOr<SmallVector<int64_t>> sa = loopStrides(op, f.a, f.bf16Inputs),
                                  sb = loopStrides(op, f.b, f.bf16Inputs),
                                  sc = loopStrides(op, f.c);
  if (failed(sa) || failed(sb) || failed(sc))
    return std::nullopt;
  f.strideA = *sa;
  f.strideB = *sb;
  f.strideC = *sc;
  // C with contiguous columns of m rather than rows of n: compute C^T =
  // op(B)^T op(A)^T instead, that is, exchange the roles of m and n.
  if (f.bounds[f.n] > 1 && f.strideC[f.n] != 1 && f.strideC[f.m] == 1) {
    std::swap(f.m, f.n);
    std::swap(f.a, f.b);
    std::swap(f.strideA, f.strideB);
    if (f.order >= 2)
      f.order = 5 - f.order; // x and y exchange
  }
  int64_t m = f.bounds[f.m], n = f.bounds[f.n], k = f.bounds[f.k];
  f.ldc = leadingDimension(m, n, f.strideC[f.m], f.strideC[f.n]);
  if (!f.ldc)
    return std::nullopt;
  FailureOr<bool> transA = orient(m, k, f.strideA[f.m], f.strideA[f.k], f.lda);
  FailureOr<bool> transB = orient(k, n, f.strideB[f.k], f.strideB[f.n], f.ldb);
  if (failed(transA) || failed(transB))
    return std::nullopt;
  f.transA = *transA;
  f.transB = *transB;
  f.batch.assign(dims->batch.begin(), dims->batch.end());
  // The batch dimension with the most iterations runs as cuBLAS's strided
  // batch; it goes last.
  if (!f.batch.empty()) {
    auto widest = llvm::max_element(f.batch, [&](unsigned x, unsigned y) {
      return f.bounds[x] < f.bounds[y];
    });
    std::rotate(widest, widest + 1, f.batch.end());
  }
  // cuBLAS takes int sizes, leading dimensions and batch strides.
  auto fits = [](int64_t v) {
    return v <= std::numeric_limits<int32_t>::max();
  };
  if (!fits(m) || !fits(n) || !fits(k) || !fits(f.lda) || !fits(f.ldb) ||
      !fits(f.ldc) || (!f.batch.empty() && !fits(f.bounds[f.batch.back()])))
    return std::nullopt;
  return f;
}

linalg::FillOp ga::cuda::zeroInit(linalg::LinalgOp op, const BlasForm &f) {
  Value c = f.c->get();
  if (!c.getDefiningOp<memref::AllocOp>())
    return {};
  linalg::FillOp init;
  for (Operation *nested : c.getUsers()) {
    // A use inside an operation of the product's block (a load in a later
    // linalg.generic's body: the cross-entropy's picked logit) is that
    // operation's.
    Operation *user = op->getBlock()->findAncestorOpInBlock(*nested);
    if (!user)
      return {};
    if (user == op.getOperation())
      continue;
    if (op->isBeforeInBlock(user))
      continue;
    auto fill = dyn_cast<linalg::FillOp>(user);
    if (init || !fill || fill.getOutputs()[0] != c ||
        !matchPattern(fill.getInputs()[0], m_PosZeroFloat()))
      return {};
    init = fill;
  }
  return init;
}

namespace {

/// The buffer `value` is a view of (through subviews, reshapes and
/// casts), or `value` itself.
Value baseBuffer(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// Whether the body of `add` is `yield x + y` of its two inputs (either
/// order, no fast-math flags), not reading its init.
bool isSumOfInputs(linalg::GenericOp add) {
  Block *body = add.getBlock();
  if (body->getNumArguments() != 3 || !body->getArgument(2).use_empty() ||
      std::distance(body->begin(), body->end()) != 2)
    return false;
  auto sum =
      body->getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!sum || sum.getFastmath() != arith::FastMathFlags::none)
    return false;
  Value x = body->getArgument(0), y = body->getArgument(1);
  return (sum.getLhs() == x && sum.getRhs() == y) ||
         (sum.getLhs() == y && sum.getRhs() == x);
}

/// Whether `value` is `arith.truncf` to bfloat16 (no fast-math flags, the
/// default rounding) of a float32 value, which it returns.
Value roundedToBf16(Value value) {
  auto trunc = value.getDefiningOp<arith::TruncFOp>();
  if (!trunc || !trunc.getType().isBF16() || !trunc.getIn().getType().isF32() ||
      trunc.getRoundingmodeAttr() || trunc.getFastmathAttr())
    return {};
  return trunc.getIn();
}

/// Whether the body of `add` is `yield bf16(x)` of its one input (`x` the
/// product), not reading its init.
bool isRoundingOfInput(linalg::GenericOp add) {
  Block *body = add.getBlock();
  return body->getNumArguments() == 2 && body->getArgument(1).use_empty() &&
         std::distance(body->begin(), body->end()) == 2 &&
         roundedToBf16(body->getTerminator()->getOperand(0)) ==
             body->getArgument(0);
}

/// Whether the body of `add` is `yield bf16(x + f32(y))` of its two inputs
/// (x the product's at `ci`, y the bfloat16 bias; either order of the
/// addition, no fast-math flags), not reading its init.
bool isRoundedBiasSum(linalg::GenericOp add, unsigned ci) {
  Block *body = add.getBlock();
  if (body->getNumArguments() != 3 || !body->getArgument(2).use_empty() ||
      std::distance(body->begin(), body->end()) != 4)
    return false;
  auto sum = roundedToBf16(body->getTerminator()->getOperand(0))
                 .getDefiningOp<arith::AddFOp>();
  if (!sum || sum.getFastmath() != arith::FastMathFlags::none)
    return false;
  Value x = body->getArgument(ci);
  Value other = sum.getLhs() == x ? sum.getRhs() : sum.getLhs();
  auto widen = other.getDefiningOp<arith::ExtFOp>();
  return (sum.getLhs() == x || sum.getRhs() == x) && widen &&
         widen.getIn() == body->getArgument(1 - ci) && widen.getType().isF32();
}

} // namespace

std::optional<BiasEpilogue> ga::cuda::matchBiasEpilogue(linalg::LinalgOp op,
                                                        const BlasForm &f,
                                                        bool biases) {
  if (!f.batch.empty() || f.alpha)
    return std::nullopt;
  Value c = f.c->get();
  auto cType = cast<MemRefType>(c.getType());
  int64_t m = f.bounds[f.m], n = f.bounds[f.n];
  if (!c.getDefiningOp<memref::AllocOp>() || cType.getRank() != 2 ||
      !cType.getLayout().isIdentity() || !cType.getElementType().isF32() ||
      cType.getShape() != ArrayRef<int64_t>{m, n} || f.strideC[f.n] != 1)
    return std::nullopt;
  // A product from zero whose C is then read by the addition alone
  // (zeroInit keeps every user in the product's block).
  BiasEpilogue e;
  e.fill = zeroInit(op, f);
  if (!e.fill)
    return std::nullopt;
  for (Operation *user : c.getUsers()) {
    if (user == op.getOperation() || user == e.fill.getOperation() ||
        isa<memref::DeallocOp>(user))
      continue;
    auto add = dyn_cast<linalg::GenericOp>(user);
    if (!add || e.add)
      return std::nullopt;
    e.add = add;
  }
  if (!e.add)
    return std::nullopt;
  linalg::GenericOp add = e.add;
  if (!add.hasPureBufferSemantics() || add.getNumDpsInputs() < 1 ||
      add.getNumDpsInputs() > 2 || add.getNumDpsInits() != 1 ||
      add.getNumLoops() != 2 || add.getNumReductionLoops() != 0)
    return std::nullopt;
  bool withBias = add.getNumDpsInputs() == 2;
  unsigned ci = add.getDpsInputs()[0] == c ? 0 : 1;
  if (add.getDpsInputs()[ci] != c ||
      (withBias && (!biases || add.getDpsInputs()[1 - ci] == c)))
    return std::nullopt;
  if (withBias && isSumOfInputs(add))
    e.rounded = false;
  else if (f.bf16Inputs &&
           (withBias ? isRoundedBiasSum(add, ci) : isRoundingOfInput(add)))
    e.rounded = true;
  else
    return std::nullopt;
  Type outputType = e.rounded ? Type(BFloat16Type::get(op.getContext()))
                              : Type(Float32Type::get(op.getContext()));
  MLIRContext *ctx = op.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap column = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
  SmallVector<AffineMap> maps = add.getIndexingMapsArray();
  if (maps[ci] != identity || maps.back() != identity ||
      (withBias && maps[1 - ci] != column))
    return std::nullopt;
  // The bias: n contiguous elements of D's type.
  SmallVector<int64_t> strides;
  int64_t offset;
  if (withBias) {
    e.bias = add.getDpsInputs()[1 - ci];
    auto biasType = cast<MemRefType>(e.bias.getType());
    if (biasType.getRank() != 1 || biasType.getElementType() != outputType ||
        biasType.getDimSize(0) != n ||
        failed(biasType.getStridesAndOffset(strides, offset)) ||
        strides[0] != 1)
      return std::nullopt;
  }
  // D: a fresh buffer (it cannot alias A or B), row-major.
  e.d = add.getDpsInits()[0];
  auto dType = cast<MemRefType>(e.d.getType());
  strides.clear();
  if (!e.d.getDefiningOp<memref::AllocOp>() ||
      dType.getElementType() != outputType ||
      dType.getShape() != cType.getShape() ||
      failed(dType.getStridesAndOffset(strides, offset)) || strides[1] != 1 ||
      ShapedType::isDynamic(strides[0]) || strides[0] < n ||
      strides[0] > std::numeric_limits<int32_t>::max())
    return std::nullopt;
  e.ldd = strides[0];
  // The product moves to the addition: nothing between them may write or
  // free memory (A and B must still hold what the product read), but the
  // deallocations of A and B themselves and the copies to host memory
  // before them (ga-gpu-offload-buffers), which move after it in their
  // order.
  Value a = baseBuffer(f.a->get()), b = baseBuffer(f.b->get());
  for (Operation *it = op->getNextNode(); it != add.getOperation();
       it = it->getNextNode()) {
    if (isa<memref::AllocOp>(it) || isMemoryEffectFree(it))
      continue;
    if (auto call = dyn_cast<func::CallOp>(it))
      if (call.getCallee() == "ga_cuda_offload") {
        e.deferred.push_back(call);
        continue;
      }
    auto dealloc = dyn_cast<memref::DeallocOp>(it);
    Value freed = dealloc ? baseBuffer(dealloc.getMemref()) : Value();
    if (!freed || (freed != a && freed != b))
      return std::nullopt;
    e.deferred.push_back(dealloc);
  }
  return e;
}
