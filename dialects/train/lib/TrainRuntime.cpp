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

std::string ga::train::getAllReduceFunctionName(Type elementType) {
  if (elementType.isF32())
    return "ga_all_reduce_f32";
  if (elementType.isF64())
    return "ga_all_reduce_f64";
  if (elementType.isInteger(32))
    return "ga_all_reduce_i32";
  if (elementType.isInteger(64))
    return "ga_all_reduce_i64";
  return "";
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
    std::string name = getAllReduceFunctionName(elementType);
    if (name.empty())
      return op->emitOpError()
             << "cannot be lowered to a runtime call: the runtime reduces "
                "f32, f64, i32 and i64 buffers, not "
             << elementType;
    FailureOr<Value> buffer =
        getBuffer(rewriter, reduce.getInput(), options, state);
    if (failed(buffer))
      return failure();
    Value target = *buffer;
    auto memrefType = cast<MemRefType>(target.getType());
    // The runtime reduces a contiguous buffer.
    if (!memrefType.getLayout().isIdentity()) {
      auto contiguous = MemRefType::get(memrefType.getShape(), elementType,
                                        MemRefLayoutAttrInterface(),
                                        memrefType.getMemorySpace());
      target = memref::AllocOp::create(rewriter, loc, contiguous);
      if (failed(options.createMemCpy(rewriter, loc, *buffer, target)))
        return failure();
      memrefType = contiguous;
    }
    auto unranked =
        UnrankedMemRefType::get(elementType, memrefType.getMemorySpace());
    auto fnType =
        rewriter.getFunctionType({unranked, rewriter.getI32Type()}, {});
    func::FuncOp fn = getOrInsertRuntimeFunction(rewriter, op, name, fnType);
    if (!fn)
      return failure();
    Value cast = memref::CastOp::create(rewriter, loc, unranked, target);
    Value kind = arith::ConstantIntOp::create(
        rewriter, loc, static_cast<int64_t>(reduce.getKind()), 32);
    func::CallOp::create(rewriter, loc, fn, ValueRange{cast, kind});
    replaceOpWithBufferizedValues(rewriter, op, target);
    return success();
  }
};
} // namespace

void ga::train::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, TrainDialect *) {
    AllReduceOp::attachInterface<AllReduceOpInterface>(*ctx);
  });
}
