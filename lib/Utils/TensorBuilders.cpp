//===- TensorBuilders.cpp - Small linalg-on-tensors builders --------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using utils::IteratorType;

Value ga::filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                       TypedAttr value) {
  Value scalar = arith::ConstantOp::create(b, loc, value);
  Value empty = tensor::EmptyOp::create(b, loc, shape, value.getType());
  return linalg::FillOp::create(b, loc, scalar, empty).getResult(0);
}

Value ga::zerosLike(OpBuilder &b, Location loc, Type type) {
  auto tensorType = cast<RankedTensorType>(type);
  return filledTensor(b, loc, tensorType.getShape(),
                      b.getZeroAttr(tensorType.getElementType()));
}

bool ga::isZeroTensor(Value value) {
  auto isZero = [](Value v) {
    return matchPattern(v, m_AnyZeroFloat()) || matchPattern(v, m_Zero());
  };
  if (auto fill = value.getDefiningOp<linalg::FillOp>())
    return isZero(fill.getInputs()[0]);
  return isZero(value);
}

Value ga::convertScalar(OpBuilder &b, Location loc, Value value, Type type) {
  Type from = value.getType();
  if (from == type)
    return value;
  if (isa<IntegerType>(from) && isa<IntegerType>(type))
    return from.getIntOrFloatBitWidth() > type.getIntOrFloatBitWidth()
               ? arith::TruncIOp::create(b, loc, type, value).getResult()
               : arith::ExtSIOp::create(b, loc, type, value).getResult();
  if (isa<IntegerType>(from))
    return arith::SIToFPOp::create(b, loc, type, value);
  if (isa<IntegerType>(type))
    return arith::FPToSIOp::create(b, loc, type, value);
  return from.getIntOrFloatBitWidth() > type.getIntOrFloatBitWidth()
             ? arith::TruncFOp::create(b, loc, type, value).getResult()
             : arith::ExtFOp::create(b, loc, type, value).getResult();
}

Value ga::mapScalars(
    OpBuilder &b, Location loc, ValueRange inputs, Type resultElement,
    function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
  Value init =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, resultElement);
  SmallVector<AffineMap> maps(inputs.size() + 1,
                              AffineMap::get(0, 0, b.getContext()));
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
             ArrayRef<IteratorType>{},
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc,
                                       fn(nb, nloc, args.drop_back()));
             })
      .getResult(0);
}

SmallVector<Value> ga::elementwise(
    OpBuilder &b, Location loc, ArrayRef<int64_t> shape, ValueRange tensors,
    ValueRange scalars, TypeRange resultElements,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> fn) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = shape.size();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap broadcast = AffineMap::get(rank, 0, {}, ctx);
  SmallVector<AffineMap> maps(tensors.size(), identity);
  maps.append(scalars.size(), broadcast);
  SmallVector<Value> inits;
  SmallVector<Type> resultTypes;
  for (Type element : resultElements) {
    inits.push_back(tensor::EmptyOp::create(b, loc, shape, element));
    resultTypes.push_back(RankedTensorType::get(shape, element));
    maps.push_back(identity);
  }
  SmallVector<Value> inputs(tensors);
  llvm::append_range(inputs, scalars);
  auto generic = linalg::GenericOp::create(
      b, loc, resultTypes, inputs, inits, maps,
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc,
                                fn(nb, nloc, args.take_front(inputs.size())));
      });
  return SmallVector<Value>(generic.getResults());
}

void ga::eraseWithDeadProducers(Operation *op) {
  SmallVector<Operation *> worklist{op};
  while (!worklist.empty()) {
    Operation *next = worklist.pop_back_val();
    SmallVector<Value> operands(next->getOperands());
    next->erase();
    for (Value operand : operands)
      if (Operation *def = operand.getDefiningOp();
          def && def->use_empty() && isPure(def) &&
          !llvm::is_contained(worklist, def))
        worklist.push_back(def);
  }
}

/// The offsets (zero but `offset` along `dim`), sizes (`type`'s) and unit
/// strides of a slice of `type` along `dim`.
static void sliceAlongParts(OpBuilder &b, RankedTensorType type, unsigned dim,
                            OpFoldResult offset,
                            SmallVectorImpl<OpFoldResult> &offsets,
                            SmallVectorImpl<OpFoldResult> &sizes,
                            SmallVectorImpl<OpFoldResult> &strides) {
  offsets.assign(type.getRank(), b.getIndexAttr(0));
  strides.assign(type.getRank(), b.getIndexAttr(1));
  for (int64_t extent : type.getShape())
    sizes.push_back(b.getIndexAttr(extent));
  offsets[dim] = offset;
}

Value ga::sliceAlong(OpBuilder &b, Location loc, Value tensor, unsigned dim,
                     OpFoldResult offset, int64_t size) {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  sliceAlongParts(b, cast<RankedTensorType>(tensor.getType()), dim, offset,
                  offsets, sizes, strides);
  sizes[dim] = b.getIndexAttr(size);
  return tensor::ExtractSliceOp::create(b, loc, tensor, offsets, sizes,
                                        strides);
}

Value ga::insertAlong(OpBuilder &b, Location loc, Value part, Value into,
                      unsigned dim, OpFoldResult offset) {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  sliceAlongParts(b, cast<RankedTensorType>(part.getType()), dim, offset,
                  offsets, sizes, strides);
  return tensor::InsertSliceOp::create(b, loc, part, into, offsets, sizes,
                                       strides);
}
