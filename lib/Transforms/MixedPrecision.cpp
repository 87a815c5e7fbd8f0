//===- MixedPrecision.cpp - bf16-mixed: products of bfloat16 inputs -------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-mixed-precision: every matrix product of the differentiated step reads
// its two float32 operands as bfloat16 and sums in float32 (a named product
// keeps its kind, its body widening the operands; any other becomes a
// linalg.generic that widens them). Each operand
// gets one bfloat16 copy, made where the operand is defined and shared by
// all the products that read it, so that an activation a forward product
// reads and a backward product reads again is held for the backward pass as
// that copy (half the bytes); a parameter (a function argument, or a slice
// of one), and a tensor that something else reads after its last product,
// are rounded at each product instead: they stay alive in float32 anyway,
// and a copy kept beside them would only add bytes. A tensor that widens a
// bfloat16 one (the fused attention's output) is read as that one, which
// rounding would give back. Everything else stays float32.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"
#include "ga/Utils/LinalgMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <array>

namespace ga {
#define GEN_PASS_DEF_GAMIXEDPRECISIONPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;

/// Whether `op` is a matrix product (a GEMM, possibly batched, possibly
/// scaled): two float32 inputs and one float32 output, each input with a
/// dimension of its own beside the summed ones (m, n and k all present),
/// and a body that reads each input element only as a factor of a
/// multiplication.
static bool isMatrixProduct(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op->getNumRegions() != 1)
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<ShapedType>(operand.get().getType());
    if (!type || !type.getElementType().isF32())
      return false;
  }
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
    return false;
  Block *body = op.getBlock();
  for (unsigned i = 0; i < 2; ++i) {
    BlockArgument arg = body->getArgument(i);
    if (arg.use_empty() || llvm::any_of(arg.getUsers(), [](Operation *user) {
          return !isa<arith::MulFOp>(user);
        }))
      return false;
  }
  return true;
}

/// Whether `value` is an argument of its function, or a slice or reshape
/// of one: a parameter, there for the whole step, which its products can
/// round again where they read it rather than keep a copy from the first
/// product to the last (a weight's forward and backward products are the
/// two ends of the step).
static bool isArgumentView(Value value) {
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
    Operation *def = value.getDefiningOp();
    if (!isa_and_nonnull<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
                         tensor::ExpandShapeOp>(def))
      return false;
    value = def->getOperand(0);
  }
}

/// Whether something other than `products` reads `value` at or after the
/// last of its products in its block: the float32 tensor is then alive
/// until its last product anyway (the softmax's probabilities, which its
/// backward pass reads after the product of the values' gradient), and a
/// bfloat16 copy kept beside it from its first product to its last would
/// only add bytes.
static bool
readAfterItsProducts(Value value,
                     const llvm::SmallPtrSetImpl<Operation *> &products) {
  Block *block = value.getParentBlock();
  Operation *lastProduct = nullptr, *lastOther = nullptr;
  for (OpOperand &use : value.getUses()) {
    Operation *at = block->findAncestorOpInBlock(*use.getOwner());
    if (!at)
      return false;
    Operation *&last =
        products.contains(use.getOwner()) ? lastProduct : lastOther;
    if (!last || last->isBeforeInBlock(at))
      last = at;
  }
  return lastOther && lastProduct && !lastOther->isBeforeInBlock(lastProduct);
}

/// The cast of `op`, where `op` converts its input elementwise with a
/// `CastOp` (the form convertElements makes: a linalg.generic of one input
/// and one init, identity maps, whose body's first operation casts the
/// input's element and is yielded); null otherwise.
template <typename CastOp> static CastOp elementwiseCast(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops() ||
      llvm::any_of(generic.getIndexingMapsArray(),
                   [](AffineMap m) { return !m.isIdentity(); }))
    return {};
  auto cast = dyn_cast<CastOp>(&generic.getBlock()->front());
  if (!cast || !ga::isArg(cast.getIn(), generic, 0) ||
      ga::yieldedOp(generic) != cast)
    return {};
  return cast;
}

/// The bfloat16 tensor that `value` widens, where `value` is an elementwise
/// arith.extf of one (the fused attention's results with bf16-mixed):
/// rounding it again gives that tensor back, bit for bit.
static Value widenedFrom(Value value) {
  Operation *widen = value.getDefiningOp();
  if (!elementwiseCast<arith::ExtFOp>(widen))
    return {};
  Value input = widen->getOperand(0);
  auto type = dyn_cast<RankedTensorType>(input.getType());
  return type && type.getElementType().isBF16() ? input : Value();
}

/// Whether `op` rounds a tensor to bfloat16 elementwise (arith.truncf, the
/// default rounding, no fast-math flags): of a rounded tensor, the rounded
/// tensor itself.
static bool isRoundingToBf16(Operation *op) {
  auto trunc = elementwiseCast<arith::TruncFOp>(op);
  auto type = dyn_cast_or_null<RankedTensorType>(
      trunc ? op->getResult(0).getType() : Type());
  return type && type.getElementType().isBF16() &&
         !trunc.getRoundingmodeAttr() && !trunc.getFastmathAttr();
}

/// `old` (a linalg operation on tensors) replaced by a linalg.generic of
/// its loops and body over `inputs` and `inits` (indexed by `maps`), each
/// argument i of the body reading the new block argument `argumentOf(i)`,
/// widened (arith.extf) where the new one is narrower: the new operation.
static linalg::GenericOp
rebuildWidening(linalg::LinalgOp old, ValueRange inputs, ValueRange inits,
                ArrayRef<AffineMap> maps,
                function_ref<unsigned(unsigned)> argumentOf) {
  OpBuilder b(old);
  Block *body = old.getBlock();
  auto generic = linalg::GenericOp::create(
      b, old.getLoc(), old->getResultTypes(), inputs, inits, maps,
      old.getIteratorTypesArray(),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        IRMapping mapping;
        for (BlockArgument arg : body->getArguments()) {
          Value value = args[argumentOf(arg.getArgNumber())];
          if (value.getType() != arg.getType())
            value = arith::ExtFOp::create(nb, nloc, arg.getType(), value);
          mapping.map(arg, value);
        }
        for (Operation &inner : *body)
          nb.clone(inner, mapping);
      });
  old->replaceAllUsesWith(generic->getResults());
  old->erase();
  return generic;
}

/// `value` converted elementwise to `elementType` (arith.truncf to a
/// narrower type, round to nearest even; arith.extf to a wider one, exact),
/// a linalg.generic at `b`'s insertion point.
static Value convertElements(OpBuilder &b, Location loc, Value value,
                             FloatType elementType) {
  auto type = cast<RankedTensorType>(value.getType());
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, value), elementType);
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext());
  bool narrow = elementType.getWidth() <
                cast<FloatType>(type.getElementType()).getWidth();
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type.clone(elementType)}, ValueRange{value},
      ValueRange{init}, ArrayRef<AffineMap>{identity, identity},
      SmallVector<utils::IteratorType>(type.getRank(),
                                       utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value converted =
            narrow ? arith::TruncFOp::create(nb, nloc, elementType, args[0])
                         .getResult()
                   : arith::ExtFOp::create(nb, nloc, elementType, args[0])
                         .getResult();
        linalg::YieldOp::create(nb, nloc, converted);
      });
  return generic.getResult(0);
}

/// Where `product`'s result is rounded (round-results): the result itself,
/// or, where the product's only reader adds a parameter to it elementwise
/// (a bias: one `arith.addf` of the result and a function argument's view,
/// the result read in place), that sum, as a GEMM's bias epilogue rounds
/// (the bias read as bfloat16: readBiasRounded).
static Value roundingPoint(linalg::LinalgOp product) {
  Value result = product->getResult(0);
  if (!result.hasOneUse())
    return result;
  OpOperand &use = *result.getUses().begin();
  auto add = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!add || add.getNumDpsInputs() != 2 || add.getNumDpsInits() != 1 ||
      add.getNumLoops() != add.getNumParallelLoops() || !add.isDpsInput(&use) ||
      add->getResult(0).getType() != result.getType() ||
      !add.getMatchingIndexingMap(&use).isIdentity())
    return result;
  OpOperand *other = add.getDpsInputOperand(1 - use.getOperandNumber());
  if (!isArgumentView(other->get()))
    return result;
  Block *body = add.getBlock();
  auto sum = dyn_cast<arith::AddFOp>(&body->front());
  if (!sum || &body->front() != body->getTerminator()->getPrevNode() ||
      body->getTerminator()->getOperand(0) != sum.getResult())
    return result;
  auto reads = [&](unsigned i) {
    return sum.getLhs() == body->getArgument(i) ||
           sum.getRhs() == body->getArgument(i);
  };
  if (!reads(0) || !reads(1))
    return result;
  return add->getResult(0);
}

namespace {

struct GaMixedPrecisionPass
    : ga::impl::GaMixedPrecisionPassBase<GaMixedPrecisionPass> {
  using Base::Base;

  /// The bfloat16 copies made so far: of each shared tensor (key: the
  /// tensor, no product) and of each other per product reading it.
  llvm::DenseMap<std::pair<Value, Operation *>, Value> copies;

  /// The bfloat16 copy of `value` (round to nearest even) that `product`
  /// reads: made right before the product where `eachProduct` (a
  /// parameter, or a tensor that stays alive until its last product
  /// anyway), else once, right after the tensor's definition (at the start
  /// of its block for a block argument), shared by all its products.
  Value bf16Copy(Value value, Operation *product, bool eachProduct) {
    if (Value narrow = widenedFrom(value))
      return narrow;
    std::pair<Value, Operation *> key{value, eachProduct ? product : nullptr};
    if (Value copy = copies.lookup(key))
      return copy;
    OpBuilder b(value.getContext());
    if (eachProduct)
      b.setInsertionPoint(product);
    else if (Operation *def = value.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(value).getOwner());
    Value copy = convertElements(b, value.getLoc(), value, b.getBF16Type());
    copies[key] = copy;
    return copy;
  }

  /// `sum`, the bias addition that roundingPoint found: the addition rebuilt to
  /// read the bias rounded to bfloat16 (widened in its body), as a bfloat16
  /// GEMM's bias epilogue reads it (its bias has the output's type) and as
  /// autocast's addmm does; the new sum is returned.
  ///
  /// The bias's rounding goes before the product where the bias is defined
  /// there already: nothing then runs between the product and its
  /// addition, which lets ga-gpu-gemm-to-blas make them one GEMM.
  Value readBiasRounded(Value sum, Operation *product) {
    auto add = sum.getDefiningOp<linalg::GenericOp>();
    unsigned biasIndex = isArgumentView(add.getDpsInputs()[1]) ? 1 : 0;
    Value bias = add.getDpsInputs()[biasIndex];
    OpBuilder b(add);
    if (DominanceInfo().properlyDominates(bias, product))
      b.setInsertionPoint(product);
    SmallVector<Value> inputs(add.getDpsInputs());
    inputs[biasIndex] = convertElements(b, add.getLoc(), bias, b.getBF16Type());
    return rebuildWidening(add, inputs, add.getDpsInits(),
                           add.getIndexingMapsArray(),
                           [](unsigned i) { return i; })
        ->getResult(0);
  }

  /// The widenings roundInPlace made, erased at the end where nothing
  /// reads them (a product reads the bfloat16 tensor instead).
  SmallVector<Operation *> widenings;

  /// round-results: `value` (a float32 tensor) rounded to bfloat16 right
  /// after its definition; each other reader reads the rounded tensor
  /// (rewire). No float32 copy is stored between kernels.
  void roundInPlace(Value value) {
    OpBuilder b(value.getContext());
    b.setInsertionPointAfter(value.getDefiningOp());
    Value narrow = convertElements(b, value.getLoc(), value, b.getBF16Type());
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : value.getUses())
      if (use.getOwner() != narrow.getDefiningOp())
        uses.push_back(&use);
    for (OpOperand *use : uses)
      rewire(*use, narrow);
  }

  /// Makes `use`, a read of a float32 tensor whose rounding to bfloat16 is
  /// `narrow`, read `narrow` instead: a rounding of it to bfloat16 is
  /// `narrow` itself; a view of it (a slice, a reshape) becomes the same
  /// view of `narrow`, its readers rewired in turn; an element read
  /// (`tensor.extract`) reads `narrow`'s and widens it; the init of a
  /// parallel operation becomes an input (readInitAsInput); any other
  /// reader gets a widening of its own right before it (in `narrow`'s
  /// block), which fusion takes into it. A product reads the bfloat16
  /// tensor itself (widenedFrom).
  void rewire(OpOperand &use, Value narrow) {
    Operation *owner = use.getOwner();
    OpBuilder b(owner);
    Location loc = owner->getLoc();
    if (isRoundingToBf16(owner)) {
      owner->getResult(0).replaceAllUsesWith(narrow);
      owner->erase();
      return;
    }
    if (auto extract = dyn_cast<tensor::ExtractOp>(owner)) {
      Value element =
          tensor::ExtractOp::create(b, loc, narrow, extract.getIndices());
      extract.replaceAllUsesWith(
          arith::ExtFOp::create(b, loc, b.getF32Type(), element).getResult());
      extract->erase();
      return;
    }
    if (isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
            tensor::ExpandShapeOp>(owner) &&
        use.getOperandNumber() == 0) {
      IRMapping mapping;
      mapping.map(use.get(), narrow);
      Operation *view = b.clone(*owner, mapping);
      auto type = cast<RankedTensorType>(owner->getResult(0).getType());
      view->getResult(0).setType(type.clone(b.getBF16Type()));
      SmallVector<OpOperand *> uses;
      for (OpOperand &next : owner->getResult(0).getUses())
        uses.push_back(&next);
      for (OpOperand *next : uses)
        rewire(*next, view->getResult(0));
      if (owner->use_empty())
        owner->erase();
      return;
    }
    // An init of a parallel operation holds each element's value before
    // the body (in a reduction it is the running value instead).
    if (auto generic = dyn_cast<linalg::GenericOp>(owner);
        generic && generic.isDpsInit(&use) &&
        generic.hasPureTensorSemantics() &&
        generic.getNumLoops() == generic.getNumParallelLoops()) {
      readInitAsInput(generic, use, narrow);
      return;
    }
    Block *block = narrow.getParentBlock();
    b.setInsertionPoint(block->findAncestorOpInBlock(*owner));
    Value wide = convertElements(b, loc, narrow, b.getF32Type());
    widenings.push_back(wide.getDefiningOp());
    use.set(wide);
  }

  /// `generic` with its init `use` (a float32 tensor whose rounding is
  /// `narrow`) read as an input: `narrow`, through the init's map, widened
  /// in the body where the body read the init; the init itself a fresh
  /// tensor (the cross-entropy's gradient, computed in place over the
  /// logits, then reads the bfloat16 logits and writes its own result).
  void readInitAsInput(linalg::GenericOp generic, OpOperand &use,
                       Value narrow) {
    OpBuilder b(generic);
    Location loc = generic.getLoc();
    unsigned numInputs = generic.getNumDpsInputs();
    unsigned initIndex = use.getOperandNumber() - numInputs;
    SmallVector<Value> inputs(generic.getDpsInputs());
    inputs.push_back(narrow);
    SmallVector<Value> inits(generic.getDpsInits());
    inits[initIndex] = tensor::EmptyOp::create(
        b, loc, tensor::getMixedSizes(b, loc, use.get()), b.getF32Type());
    SmallVector<AffineMap> maps(generic.getIndexingMapsArray());
    maps.insert(maps.begin() + numInputs, generic.getMatchingIndexingMap(&use));
    // The body's inputs, then `narrow` where it read the init, the others
    // one further on.
    rebuildWidening(generic, inputs, inits, maps, [&](unsigned i) {
      return i < numInputs ? i : i == numInputs + initIndex ? numInputs : i + 1;
    });
  }

  /// A named product (`linalg.matmul`, `linalg.batch_matmul`) of the same
  /// kind and maps over `inputs`: its body widens them to float32 itself.
  /// Named products stay named, so that the passes after this one that
  /// treat a linalg.generic and a named product apart (CUDA's reduction
  /// splitting, for one) see what they saw in float32.
  template <typename OpTy>
  Operation *renamed(OpBuilder &b, linalg::LinalgOp op, ValueRange inputs) {
    SmallVector<NamedAttribute> attributes;
    for (NamedAttribute attribute : op->getAttrs())
      if (attribute.getName() != "operandSegmentSizes")
        attributes.push_back(attribute);
    return OpTy::create(b, op.getLoc(), op->getResultTypes(), inputs,
                        op.getDpsInits(), attributes);
  }

  /// `op` over the bfloat16 copies of its inputs: a named product of the
  /// same kind, or else a linalg.generic of the same loops whose body
  /// widens each input element back to float32 where it reads it.
  void rewrite(linalg::LinalgOp op, std::array<bool, 2> eachProduct) {
    SmallVector<Value> inputs;
    for (auto [i, input] : llvm::enumerate(op.getDpsInputs()))
      inputs.push_back(bf16Copy(input, op, eachProduct[i]));
    OpBuilder b(op);
    Operation *named = nullptr;
    if (isa<linalg::MatmulOp>(op))
      named = renamed<linalg::MatmulOp>(b, op, inputs);
    else if (isa<linalg::BatchMatmulOp>(op))
      named = renamed<linalg::BatchMatmulOp>(b, op, inputs);
    if (named) {
      op->replaceAllUsesWith(named->getResults());
      op->erase();
      return;
    }
    rebuildWidening(op, inputs, op.getDpsInits(), op.getIndexingMapsArray(),
                    [](unsigned i) { return i; });
  }

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> products;
    WalkResult walk = getOperation()->walk([&](linalg::LinalgOp op) {
      if (!isMatrixProduct(op))
        return WalkResult::advance();
      if (!op.hasPureTensorSemantics()) {
        op->emitOpError("ga-mixed-precision: rounds the inputs of products "
                        "on tensors, before bufferization; this product "
                        "reads or writes buffers");
        return WalkResult::interrupt();
      }
      products.push_back(op);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    // The per-example products' results in bfloat16 first: the products
    // that read them then read the bfloat16 tensors (widenedFrom).
    if (roundResults)
      for (linalg::LinalgOp op : products)
        if (op->hasAttr("train.per_example") && op->getNumResults() == 1) {
          Value point = roundingPoint(op);
          if (point != op->getResult(0))
            point = readBiasRounded(point, op);
          roundInPlace(point);
        }
    // Where each operand's copy is made, decided on the float32 step
    // (rewriting replaces the products, and so their results' uses).
    llvm::SmallPtrSet<Operation *, 16> set;
    for (linalg::LinalgOp op : products)
      set.insert(op);
    SmallVector<std::array<bool, 2>> eachProduct;
    for (linalg::LinalgOp op : products) {
      std::array<bool, 2> each;
      for (auto [i, input] : llvm::enumerate(op.getDpsInputs()))
        each[i] = isArgumentView(input) || readAfterItsProducts(input, set);
      eachProduct.push_back(each);
    }
    copies.clear();
    for (auto [op, each] : llvm::zip(products, eachProduct))
      rewrite(op, each);
    for (Operation *widening : widenings) {
      if (!widening->use_empty())
        continue;
      Operation *init = widening->getOperand(1).getDefiningOp();
      widening->erase();
      if (init && init->use_empty())
        init->erase();
    }
    widenings.clear();
  }
};

} // namespace
