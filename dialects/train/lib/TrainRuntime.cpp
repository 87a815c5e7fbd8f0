//===- TrainRuntime.cpp - Runtime calls and bufferization of collectives --===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "train/TrainRuntime.h"
#include "train/TrainDialect.h"
#include "train/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace ga::train;

std::string ga::train::getCollectiveFunctionName(StringRef collective,
                                                 Type elementType) {
  StringRef suffix = elementType.isF32()         ? "f32"
                     : elementType.isF64()       ? "f64"
                     : elementType.isInteger(32) ? "i32"
                     : elementType.isInteger(64) ? "i64"
                                                 : "";
  if (suffix.empty())
    return "";
  return ("ga_" + collective + "_" + suffix).str();
}

func::FuncOp ga::train::getOrInsertRuntimeFunction(OpBuilder &builder,
                                                   Operation *from,
                                                   StringRef name,
                                                   FunctionType type) {
  Operation *table = SymbolTable::getNearestSymbolTable(from->getParentOp());
  if (!table) {
    from->emitError() << "needs an enclosing symbol table (a module) to "
                         "declare the runtime function @"
                      << name;
    return {};
  }
  Operation *existing = SymbolTable::lookupSymbolIn(table, name);
  if (auto fn = dyn_cast_or_null<func::FuncOp>(existing)) {
    if (fn.getFunctionType() == type)
      return fn;
  }
  if (existing) {
    from->emitError() << "the runtime function @" << name << " : " << type
                      << " clashes with a symbol of that name in the module";
    return {};
  }
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&table->getRegion(0).front());
  auto fn = func::FuncOp::create(builder, from->getLoc(), name, type);
  fn.setPrivate();
  return fn;
}

namespace {
/// The runtime function `ga_<collective>_<type>` for `op`'s element type, or
/// an error at `op` naming the types the runtime has.
FailureOr<func::FuncOp> collectiveFunction(RewriterBase &rewriter,
                                           Operation *op, StringRef collective,
                                           Type elementType,
                                           FunctionType type) {
  std::string name = getCollectiveFunctionName(collective, elementType);
  if (name.empty())
    return op->emitOpError()
           << "cannot be lowered to a runtime call: the runtime's collectives "
              "take f32, f64, i32 and i64 buffers, not "
           << elementType;
  func::FuncOp fn = getOrInsertRuntimeFunction(rewriter, op, name, type);
  if (!fn)
    return failure();
  return fn;
}

/// `buffer` as a contiguous buffer, which the runtime's collectives take:
/// itself, or a copy.
FailureOr<Value> contiguous(RewriterBase &rewriter, Location loc, Value buffer,
                            const BufferizationOptions &options) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getLayout().isIdentity())
    return buffer;
  auto identity =
      MemRefType::get(type.getShape(), type.getElementType(),
                      MemRefLayoutAttrInterface(), type.getMemorySpace());
  Value copy = memref::AllocOp::create(rewriter, loc, identity);
  if (failed(options.createMemCpy(rewriter, loc, buffer, copy)))
    return failure();
  return copy;
}

/// train.all_reduce reduces in place: it reads and writes its input's
/// buffer, and its result is that buffer.
struct AllReduceOpInterface
    : public BufferizableOpInterface::ExternalModel<AllReduceOpInterface,
                                                    AllReduceOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto reduce = cast<AllReduceOp>(op);
    Location loc = op->getLoc();
    Type elementType = reduce.getInput().getType().getElementType();
    FailureOr<Value> buffer =
        getBuffer(rewriter, reduce.getInput(), options, state);
    if (failed(buffer))
      return failure();
    // The runtime reduces a contiguous buffer.
    FailureOr<Value> target = contiguous(rewriter, loc, *buffer, options);
    if (failed(target))
      return failure();
    auto unranked = UnrankedMemRefType::get(
        elementType, cast<MemRefType>(target->getType()).getMemorySpace());
    FailureOr<func::FuncOp> fn = collectiveFunction(
        rewriter, op, "all_reduce", elementType,
        rewriter.getFunctionType({unranked, rewriter.getI32Type()}, {}));
    if (failed(fn))
      return failure();
    Value cast = memref::CastOp::create(rewriter, loc, unranked, *target);
    Value kind = arith::ConstantIntOp::create(
        rewriter, loc, static_cast<int64_t>(reduce.getKind()), 32);
    func::CallOp::create(rewriter, loc, *fn, ValueRange{cast, kind});
    replaceOpWithBufferizedValues(rewriter, op, *target);
    return success();
  }
};

/// train.reduce_scatter and train.all_gather read their input's buffer and
/// write a new buffer of the result's type (the runtime copies nothing
/// else): `ga_<collective>_<type>(in, out[, kind])`.
template <typename OpTy>
struct PartitionCollectiveInterface
    : public BufferizableOpInterface::ExternalModel<
          PartitionCollectiveInterface<OpTy>, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto collective = cast<OpTy>(op);
    Location loc = op->getLoc();
    auto resultType = cast<RankedTensorType>(collective.getType());
    Type elementType = resultType.getElementType();
    FailureOr<Value> input =
        getBuffer(rewriter, collective.getInput(), options, state);
    if (failed(input))
      return failure();
    FailureOr<Value> source = contiguous(rewriter, loc, *input, options);
    if (failed(source))
      return failure();
    auto sourceType = cast<MemRefType>(source->getType());
    auto resultMemref = MemRefType::get(resultType.getShape(), elementType,
                                        MemRefLayoutAttrInterface(),
                                        sourceType.getMemorySpace());
    Value result = memref::AllocOp::create(rewriter, loc, resultMemref);
    auto unranked =
        UnrankedMemRefType::get(elementType, sourceType.getMemorySpace());
    SmallVector<Type> argTypes = {unranked, unranked};
    SmallVector<Value> args = {
        memref::CastOp::create(rewriter, loc, unranked, *source),
        memref::CastOp::create(rewriter, loc, unranked, result)};
    StringRef name = "all_gather";
    if constexpr (std::is_same_v<OpTy, ReduceScatterOp>) {
      name = "reduce_scatter";
      argTypes.push_back(rewriter.getI32Type());
      args.push_back(arith::ConstantIntOp::create(
          rewriter, loc, static_cast<int64_t>(collective.getKind()), 32));
    }
    FailureOr<func::FuncOp> fn =
        collectiveFunction(rewriter, op, name, elementType,
                           rewriter.getFunctionType(argTypes, {}));
    if (failed(fn))
      return failure();
    func::CallOp::create(rewriter, loc, *fn, args);
    replaceOpWithBufferizedValues(rewriter, op, result);
    return success();
  }
};
} // namespace

void ga::train::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, TrainDialect *) {
    AllReduceOp::attachInterface<AllReduceOpInterface>(*ctx);
    ReduceScatterOp::attachInterface<
        PartitionCollectiveInterface<ReduceScatterOp>>(*ctx);
    AllGatherOp::attachInterface<PartitionCollectiveInterface<AllGatherOp>>(
        *ctx);
  });
}
