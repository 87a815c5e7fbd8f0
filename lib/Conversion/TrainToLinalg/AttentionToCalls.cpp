//===- AttentionToCalls.cpp - train.attention as the runtime's fused call -===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// With convert-train-to-linalg's `attention-calls`, train.attention and
// train.attention_grad become one call each of the runtime's fused
// attention (attention=library in ga-pipeline): the CPU runtime's reference
// implementation, which the CUDA target's device program renames to the CUDA
// runtime's cuDNN entry points (ga-gpu-device-code) and the emulation back
// to the reference (ga-gpu-emulate-on-host). Nothing of size [S, T] is made
// in the step: the call reads the operands and writes the results, the
// backward call reads the saved output and log-sum-exp.
//
// The call takes each operand and result as an unranked memref (the
// runtime reads sizes and strides from the descriptor, as the collectives
// do), on tensors through bufferization.to_buffer and to_tensor, so that
// one-shot bufferization gives them the tensors' own buffers:
//
//   ga_attention_fwd[_masked]_<t>(q, k, v[, key_mask], out, lse,
//                                 f64 scale, i32 causal, f64 masked_score)
//   ga_attention_bwd[_dlse][_masked]_<t>(q, k, v, out, lse, dout[, dlse]
//                                        [, key_mask], dq, dk, dv,
//                                        f64 scale, i32 causal,
//                                        f64 masked_score)
//
// with <t> the operands' type, f32, f64 or bf16. With `attention-call-type
// = bf16`, float32 operands are rounded to bfloat16 copies for the call and
// its bfloat16 results widened back (the statistics, lse and dlse, stay
// float32): the form of cuDNN's fused attention.
//
//===----------------------------------------------------------------------===//

#include "ga/Conversion/TrainToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "train/TrainOps.h"
#include "train/TrainRuntime.h"

using namespace mlir;
using namespace ga;
using namespace ga::train;

namespace {

/// The runtime's name for element type `t`, empty where it has none.
StringRef typeSuffix(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isF64())
    return "f64";
  if (t.isBF16())
    return "bf16";
  return "";
}

/// The narrower copies (bfloat16 of float32) made so far, by tensor and
/// element type: the backward's operands are the forward's, and the
/// forward's bfloat16 result is the narrow form of its widened result, so
/// the backward reads the forward's copies (the same bits) instead of
/// rounding again, and the float32 operands need not live until the
/// backward.
using NarrowCopies = llvm::DenseMap<std::pair<Value, Type>, Value>;

struct CallBuilder {
  OpBuilder &b;
  Location loc;
  SmallVector<Value> args;
  SmallVector<Type> argTypes;
  NarrowCopies &narrow;
  DominanceInfo &dominance;
  Operation *at;

  /// `t` with its elements converted to `to` (arith.truncf or extf).
  Value converted(Value t, Type to) {
    auto type = cast<RankedTensorType>(t.getType());
    Type from = type.getElementType();
    if (from == to)
      return t;
    bool narrower = to.getIntOrFloatBitWidth() < from.getIntOrFloatBitWidth();
    if (narrower)
      if (Value copy = narrow.lookup({t, to});
          copy && dominance.properlyDominates(copy, at))
        return copy;
    auto resultType = RankedTensorType::get(type.getShape(), to);
    Value init = tensor::EmptyOp::create(b, loc, type.getShape(), to);
    AffineMap id = b.getMultiDimIdentityMap(type.getRank());
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    Value result =
        linalg::GenericOp::create(
            b, loc, TypeRange{resultType}, ValueRange{t}, ValueRange{init},
            ArrayRef<AffineMap>{id, id}, iterators,
            [&](OpBuilder &bb, Location bl, ValueRange a) {
              Value v =
                  narrower
                      ? arith::TruncFOp::create(bb, bl, to, a[0]).getResult()
                      : arith::ExtFOp::create(bb, bl, to, a[0]).getResult();
              linalg::YieldOp::create(bb, bl, v);
            })
            .getResult(0);
    if (narrower)
      narrow[{t, to}] = result;
    else
      // Rounding the widened tensor gives `t` back, bit for bit.
      narrow[{result, from}] = t;
    return result;
  }

  void pass(Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    auto unranked =
        UnrankedMemRefType::get(type.getElementType(), type.getMemorySpace());
    args.push_back(memref::CastOp::create(b, loc, unranked, buffer));
    argTypes.push_back(unranked);
  }

  /// An operand read by the call: `t` (converted to `elementType` first),
  /// through its buffer.
  void input(Value t, Type elementType) {
    Value v = converted(t, elementType);
    auto type = cast<RankedTensorType>(v.getType());
    auto memref = MemRefType::get(
        type.getShape(), type.getElementType(),
        StridedLayoutAttr::get(
            b.getContext(), ShapedType::kDynamic,
            SmallVector<int64_t>(type.getRank(), ShapedType::kDynamic)));
    pass(bufferization::ToBufferOp::create(b, loc, memref, v,
                                           /*read_only=*/true));
  }

  /// A result the call writes: a new buffer of `shape` and `elementType`.
  Value output(ArrayRef<int64_t> shape, Type elementType) {
    Value buffer =
        memref::AllocOp::create(b, loc, MemRefType::get(shape, elementType));
    pass(buffer);
    return buffer;
  }

  /// The tensor of the buffer `output` returned, as `elementType`.
  Value result(Value buffer, Type elementType) {
    auto type = cast<MemRefType>(buffer.getType());
    Value t = bufferization::ToTensorOp::create(
        b, loc, RankedTensorType::get(type.getShape(), type.getElementType()),
        buffer, /*restrict=*/true, /*writable=*/true);
    return converted(t, elementType);
  }

  LogicalResult call(Operation *op, StringRef name, bool causal, double scale,
                     double maskedScore) {
    args.push_back(arith::ConstantOp::create(b, loc, b.getF64FloatAttr(scale)));
    args.push_back(arith::ConstantIntOp::create(b, loc, causal ? 1 : 0, 32));
    args.push_back(
        arith::ConstantOp::create(b, loc, b.getF64FloatAttr(maskedScore)));
    argTypes.append({b.getF64Type(), b.getI32Type(), b.getF64Type()});
    func::FuncOp fn = getOrInsertRuntimeFunction(
        b, op, name, b.getFunctionType(argTypes, {}));
    if (!fn)
      return failure();
    func::CallOp::create(b, loc, fn, args);
    return success();
  }
};

} // namespace

std::optional<std::string>
ga::attentionCallUnsupported(Operation *op, const AttentionCalls &calls) {
  auto attention = dyn_cast<AttentionOp>(op);
  auto grad = dyn_cast<AttentionGradOp>(op);
  if (!attention && !grad)
    return std::string("not an attention");
  Type t = cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
  auto named = [&](StringRef why) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << why << t;
    return text;
  };
  if (calls.type == AttentionCalls::Type::BF16) {
    if (!t.isF32() && !t.isBF16())
      return named("bfloat16 calls round float32 operands, not ");
  } else if (typeSuffix(t).empty()) {
    return named("the runtime's attention takes f32, f64 and bf16 "
                 "operands, not ");
  }
  Value keyMask = attention ? attention.getKeyMask() : grad.getKeyMask();
  if (keyMask && !calls.keyMask)
    return std::string("a key mask (the fused attention of this target "
                       "takes causal masks only)");
  if (grad && grad.getDlse() && !calls.dlse)
    return std::string("a cotangent of the log-sum-exp (the fused backward "
                       "of this target reads the output's only)");
  return std::nullopt;
}

LogicalResult ga::lowerAttentionToCalls(Operation *root,
                                        const AttentionCalls &calls) {
  SmallVector<Operation *> ops;
  NarrowCopies narrow;
  DominanceInfo dominance(root);
  root->walk([&](Operation *op) {
    if (isa<AttentionOp, AttentionGradOp>(op) &&
        !attentionCallUnsupported(op, calls))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    Type operandType =
        cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
    Type callType = calls.type == AttentionCalls::Type::BF16
                        ? Type(b.getBF16Type())
                        : operandType;
    // The statistics in float32 where the operands are bfloat16.
    Type statType = callType.isBF16() ? Type(b.getF32Type()) : callType;
    CallBuilder c{b, loc, {}, {}, narrow, dominance, op};
    auto shapeOf = [](Value v) {
      return cast<RankedTensorType>(v.getType()).getShape();
    };
    auto lseType = [&](Value lse) {
      return cast<RankedTensorType>(lse.getType()).getElementType();
    };
    std::string suffix = typeSuffix(callType).str();
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      c.input(attention.getQuery(), callType);
      c.input(attention.getKey(), callType);
      c.input(attention.getValue(), callType);
      if (Value mask = attention.getKeyMask())
        c.input(mask, b.getI1Type());
      Value out = c.output(shapeOf(attention.getOut()), callType);
      Value lse = c.output(shapeOf(attention.getLse()), statType);
      std::string name = std::string("ga_attention_fwd") +
                         (attention.getKeyMask() ? "_masked_" : "_") + suffix;
      if (failed(c.call(op, name, attention.getCausal(),
                        attention.getScale().convertToDouble(),
                        attention.getMaskedScore().convertToDouble())))
        return failure();
      Value outT = c.result(out, operandType);
      Value lseT = c.result(lse, lseType(attention.getLse()));
      attention.getOut().replaceAllUsesWith(outT);
      attention.getLse().replaceAllUsesWith(lseT);
      op->erase();
      continue;
    }
    auto grad = cast<AttentionGradOp>(op);
    for (Value v :
         {grad.getQuery(), grad.getKey(), grad.getValue(), grad.getOut()})
      c.input(v, callType);
    c.input(grad.getLse(), statType);
    c.input(grad.getDout(), callType);
    if (Value dlse = grad.getDlse())
      c.input(dlse, statType);
    if (Value mask = grad.getKeyMask())
      c.input(mask, b.getI1Type());
    SmallVector<Value> buffers;
    for (Value r : grad.getResults())
      buffers.push_back(c.output(shapeOf(r), callType));
    std::string name = std::string("ga_attention_bwd") +
                       (grad.getDlse() ? "_dlse" : "") +
                       (grad.getKeyMask() ? "_masked_" : "_") + suffix;
    if (failed(c.call(op, name, grad.getCausal(),
                      grad.getScale().convertToDouble(),
                      grad.getMaskedScore().convertToDouble())))
      return failure();
    for (auto [r, buffer] : llvm::zip(grad.getResults(), buffers))
      r.replaceAllUsesWith(c.result(buffer, operandType));
    op->erase();
  }
  return success();
}
