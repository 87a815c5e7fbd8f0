//===- GradientNorms.cpp - Global norms and clipping as linalg ------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Utils/GradientNorms.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

static Value constantOf(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

Value ga::sumOfSquares(OpBuilder &b, Location loc, ValueRange inputs,
                       Type element) {
  MLIRContext *ctx = b.getContext();
  Value acc = filledTensor(b, loc, {}, b.getZeroAttr(element));
  for (Value input : inputs) {
    auto type = cast<RankedTensorType>(input.getType());
    unsigned rank = type.getRank();
    acc = linalg::GenericOp::create(
              b, loc, TypeRange{acc.getType()}, ValueRange{input},
              ValueRange{acc},
              ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, ctx),
                                  AffineMap::get(rank, 0, {}, ctx)},
              SmallVector<utils::IteratorType>(rank,
                                               utils::IteratorType::reduction),
              [&](OpBuilder &nb, Location nloc, ValueRange args) {
                Value x = convertScalar(nb, nloc, args[0], element);
                Value sq = arith::MulFOp::create(nb, nloc, x, x);
                linalg::YieldOp::create(
                    nb, nloc,
                    ValueRange{arith::AddFOp::create(nb, nloc, sq, args[1])
                                   .getResult()});
              })
              .getResult(0);
  }
  return acc;
}

Value ga::squareRoot(OpBuilder &b, Location loc, Value squares) {
  Type element = cast<RankedTensorType>(squares.getType()).getElementType();
  return mapScalars(
      b, loc, ValueRange{squares}, element,
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        return math::SqrtOp::create(nb, nloc, args[0]).getResult();
      });
}

Value ga::wideNorm(OpBuilder &b, Location loc, ValueRange inputs, Type element,
                   function_ref<Value(Value)> reduce) {
  Value squares = sumOfSquares(b, loc, inputs, b.getF64Type());
  if (reduce)
    squares = reduce(squares);
  Value root = squareRoot(b, loc, squares);
  return mapScalars(b, loc, ValueRange{root}, element,
                    [&](OpBuilder &nb, Location nloc, ValueRange args) {
                      return convertScalar(nb, nloc, args[0], element);
                    });
}

Value ga::clipScale(OpBuilder &b, Location loc, Value norm, Type element,
                    double maxNorm) {
  return mapScalars(b, loc, ValueRange{norm}, element,
                    [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                      Value denom = arith::AddFOp::create(
                          nb, l, args[0], constantOf(nb, l, element, 1e-6));
                      Value ratio = arith::DivFOp::create(
                          nb, l, constantOf(nb, l, element, maxNorm), denom);
                      return arith::MinimumFOp::create(
                          nb, l, ratio, constantOf(nb, l, element, 1.0));
                    });
}

Value ga::scaleBy(OpBuilder &b, Location loc, Value input, Value scale,
                  Type element) {
  auto type = cast<RankedTensorType>(input.getType());
  Type inElement = type.getElementType();
  return elementwise(
      b, loc, type.getShape(), ValueRange{input}, ValueRange{scale},
      TypeRange{inElement}, [&](OpBuilder &nb, Location l, ValueRange args) {
        Value x = convertScalar(nb, l, args[0], element);
        Value y = arith::MulFOp::create(nb, l, x, args[1]);
        return SmallVector<Value>{convertScalar(nb, l, y, inElement)};
      })[0];
}
