//===- ExportStep.cpp - The C ABI of a step library -----------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Adds ga_step_signature and ga_step_run (ga/Runtime/ga_step.h) to a module
// lowered to the LLVM dialect. ga_step_run expands each input pointer into
// the memref descriptor of its recorded shape (identity layout: the
// pipeline's public functions take and return identity layouts), calls the
// entry, stores the returned descriptors to the stack and hands them to the
// runtime's ga_step_leave.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"
#include "ga/Transforms/StepSignature.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace ga {
#define GEN_PASS_DEF_GAEXPORTSTEPPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using ga::train::TrainDialect;

static std::optional<ga::NpyDType> dtypeOf(Type element) {
  if (element.isF32())
    return ga::NpyDType::F32;
  if (element.isF64())
    return ga::NpyDType::F64;
  if (element.isInteger(32))
    return ga::NpyDType::I32;
  if (element.isInteger(64))
    return ga::NpyDType::I64;
  if (element.isInteger(1))
    return ga::NpyDType::Bool;
  return std::nullopt;
}

std::string ga::buildStepSignature(Operation *entry, StepSignature &out,
                                   llvm::StringRef passer) {
  std::string name = SymbolTable::getSymbolName(entry).str();
  auto attr = entry->getAttrOfType<TypeAttr>(
      TrainDialect::SignatureAttrHelper::getNameStr());
  if (!attr || !isa<FunctionType>(attr.getValue()))
    return "@" + name +
           " has no train.signature attribute: lower it with "
           "ga-opt --ga-pipeline=target=cpu, or pass the high-level IR";
  auto type = cast<FunctionType>(attr.getValue());
  StepSignature sig;
  sig.entry = name;
  auto spec = [&](Type t, TensorSpec &s) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor || !tensor.hasStaticShape())
      return false;
    std::optional<NpyDType> dtype = dtypeOf(tensor.getElementType());
    if (!dtype)
      return false;
    s.dtype = *dtype;
    s.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    return true;
  };
  auto describe = [](Type t) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << t;
    return text;
  };
  // The arguments' and the results' specs, or why one has none.
  auto specsOf = [&](TypeRange types, StringRef what, StringRef verb,
                     std::vector<TensorSpec> &specs) -> std::string {
    for (auto [i, t] : llvm::enumerate(types)) {
      TensorSpec s;
      if (!spec(t, s))
        return (what + " #" + Twine(i) + " of @" + name + " has type " +
                describe(t) + "; " + passer + " " + verb +
                " statically shaped f32/f64/i32/i64 tensors")
            .str();
      specs.push_back(std::move(s));
    }
    return "";
  };
  if (std::string error =
          specsOf(type.getInputs(), "argument", "passes", sig.inputs);
      !error.empty())
    return error;
  if (std::string error =
          specsOf(type.getResults(), "result", "returns", sig.results);
      !error.empty())
    return error;
  if (auto loss = entry->getAttrOfType<IntegerAttr>(
          TrainDialect::LossResultAttrHelper::getNameStr()))
    if (loss.getInt() >= 0 && loss.getInt() < (int64_t)sig.results.size())
      sig.results[loss.getInt()].role = TensorRole::Loss;
  if (auto grads = entry->getAttrOfType<DenseI64ArrayAttr>(
          TrainDialect::GradientResultsAttrHelper::getNameStr()))
    for (int64_t i : grads.asArrayRef())
      if (i >= 0 && i < (int64_t)sig.results.size())
        sig.results[i].role = TensorRole::Gradient;
  if (auto ranks = entry->getAttrOfType<IntegerAttr>(
          TrainDialect::DataParallelAttrHelper::getNameStr()))
    sig.ranks = ranks.getInt();
  // The arguments' names, which train-record-signatures records beside
  // train.signature.
  if (auto names = entry->getAttrOfType<ArrayAttr>(
          TrainDialect::ArgumentNamesAttrHelper::getNameStr()))
    for (auto [i, name] : llvm::enumerate(names))
      if (i < sig.inputs.size())
        sig.inputs[i].name = cast<StringAttr>(name).str();
  out = std::move(sig);
  return "";
}

Operation *ga::findStepEntry(ModuleOp module, llvm::StringRef name,
                             llvm::StringRef file, std::string &error) {
  SmallVector<Operation *> candidates;
  module->walk([&](Operation *op) {
    if (auto func = dyn_cast<func::FuncOp>(op); func && !func.isExternal())
      candidates.push_back(op);
    if (auto func = dyn_cast<LLVM::LLVMFuncOp>(op);
        func && !func.isExternal() &&
        func->hasAttr(TrainDialect::SignatureAttrHelper::getNameStr()))
      candidates.push_back(op);
  });
  if (!name.empty()) {
    for (Operation *op : candidates)
      if (SymbolTable::getSymbolName(op) == name)
        return op;
    error = ("no function @" + name + " with a body in '" + file + "'").str();
    return nullptr;
  }
  if (candidates.size() == 1)
    return candidates.front();
  std::string names;
  for (Operation *op : candidates)
    names += " @" + SymbolTable::getSymbolName(op).str();
  error = (Twine(candidates.size() ? "several functions in '"
                                   : "no function with a body in '") +
           file + "'" +
           (candidates.size() ? "; choose one with --entry:" + names : ""))
              .str();
  return nullptr;
}

namespace {

constexpr llvm::StringLiteral kRunName = "ga_step_run";
constexpr llvm::StringLiteral kSignatureName = "ga_step_signature";
constexpr llvm::StringLiteral kSignatureText = "ga_step_signature_text";
constexpr llvm::StringLiteral kEnterName = "ga_step_enter";
constexpr llvm::StringLiteral kLeaveName = "ga_step_leave";
constexpr llvm::StringLiteral kCudaEnterName = "ga_cuda_step_enter";
constexpr llvm::StringLiteral kCudaLeaveName = "ga_cuda_step_leave";

/// The lowered (memref descriptor) type of a statically shaped memref of
/// rank `rank`, as FuncToLLVM passes and returns it.
Type descriptorType(MLIRContext *ctx, unsigned rank) {
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  SmallVector<Type> fields = {ptr, ptr, i64};
  if (rank) {
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
  }
  return LLVM::LLVMStructType::getLiteral(ctx, fields);
}

/// The entry's lowered calling convention: its arguments are the
/// descriptors of the signature's inputs, its result those of the results
/// (one, a struct of several, or void).
struct LoweredAbi {
  SmallVector<Type> args;
  SmallVector<Type> resultDescs;
  Type result;
};

LoweredAbi loweredAbiOf(MLIRContext *ctx, const ga::StepSignature &sig) {
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  LoweredAbi abi;
  for (const ga::TensorSpec &in : sig.inputs) {
    abi.args.append({ptr, ptr, i64});
    abi.args.append(2 * in.shape.size(), i64);
  }
  for (const ga::TensorSpec &r : sig.results)
    abi.resultDescs.push_back(descriptorType(ctx, r.shape.size()));
  abi.result = abi.resultDescs.empty() ? LLVM::LLVMVoidType::get(ctx)
               : abi.resultDescs.size() == 1
                   ? abi.resultDescs.front()
                   : LLVM::LLVMStructType::getLiteral(ctx, abi.resultDescs);
  return abi;
}

/// The arguments of the entry's call in ga_step_run: for each input, the
/// descriptor of a contiguous buffer of its shape at the pointer in
/// `inputs`.
SmallVector<Value> descriptorsOf(OpBuilder &b, Location loc,
                                 const ga::StepSignature &sig, Value inputs) {
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto i64 = b.getI64Type();
  auto constant = [&](int64_t v) -> Value {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
  };
  SmallVector<Value> args;
  for (auto [i, in] : llvm::enumerate(sig.inputs)) {
    Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, inputs,
                                     ArrayRef<LLVM::GEPArg>{(int32_t)i});
    Value pointer = LLVM::LoadOp::create(b, loc, ptr, slot);
    args.append({pointer, pointer, constant(0)});
    int64_t stride = 1;
    SmallVector<int64_t> strides(in.shape.size());
    for (int d = (int)in.shape.size() - 1; d >= 0; --d) {
      strides[d] = stride;
      stride *= in.shape[d];
    }
    for (int64_t size : in.shape)
      args.push_back(constant(size));
    for (int64_t s : strides)
      args.push_back(constant(s));
  }
  return args;
}

struct GaExportStepPass : ga::impl::GaExportStepPassBase<GaExportStepPass> {
  using Base::Base;

  /// The lowered function to export: `entry`, else the only one with a
  /// train.signature. Null, with an error, when there is none to choose.
  LLVM::LLVMFuncOp findEntry(ModuleOp module) {
    if (!entry.empty()) {
      auto entryFunc = module.lookupSymbol<LLVM::LLVMFuncOp>(entry);
      if (!entryFunc || entryFunc.isExternal()) {
        module.emitError() << "ga-export-step: no llvm.func @" << entry
                           << " with a body (lower the step with "
                              "--ga-pipeline=target=cpu first)";
        return nullptr;
      }
      return entryFunc;
    }
    SmallVector<LLVM::LLVMFuncOp> candidates;
    for (auto func : module.getOps<LLVM::LLVMFuncOp>())
      if (!func.isExternal() &&
          func->hasAttr(TrainDialect::SignatureAttrHelper::getNameStr()))
        candidates.push_back(func);
    if (candidates.size() == 1)
      return candidates.front();
    InFlightDiagnostic diag = module.emitError()
                              << "ga-export-step: " << candidates.size()
                              << " lowered functions carry train.signature";
    if (candidates.empty())
      diag << " (lower the step with --ga-pipeline=target=cpu first)";
    else
      diag << "; choose one with entry=NAME";
    return nullptr;
  }

  /// The preconditions: a signature, free ABI names, and the entry lowered
  /// with the memref descriptors of its signature (the runtime is a choice
  /// checked as the option is parsed).
  LogicalResult check(ModuleOp module, LLVM::LLVMFuncOp entryFunc,
                      ga::StepSignature &sig, LoweredAbi &abi) {
    std::string error =
        ga::buildStepSignature(entryFunc, sig, "a step library");
    if (!error.empty())
      return entryFunc.emitError() << "ga-export-step: " << error;
    for (StringRef name : {kRunName, kSignatureName, kSignatureText})
      if (Operation *taken = module.lookupSymbol(name))
        return taken->emitError()
               << "ga-export-step: the module already defines @" << name
               << ", a name of the step library ABI";
    abi = loweredAbiOf(module.getContext(), sig);
    LLVM::LLVMFunctionType fnType = entryFunc.getFunctionType();
    if (fnType.isVarArg() || fnType.getParams() != ArrayRef(abi.args) ||
        fnType.getReturnType() != abi.result)
      return entryFunc.emitError()
             << "ga-export-step: the lowered arguments and results of @"
             << entryFunc.getSymName()
             << " are not the memref descriptors of its train.signature (a "
                "function lowered with another calling convention)";
    return success();
  }

  /// The signature text, and ga_step_signature, which returns it.
  LLVM::GlobalOp emitSignature(OpBuilder &b, Location loc,
                               const ga::StepSignature &sig) {
    MLIRContext *ctx = b.getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    std::string text = sig.format();
    text.push_back('\0');
    auto textType =
        LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), text.size());
    auto global = LLVM::GlobalOp::create(b, loc, textType, /*isConstant=*/true,
                                         LLVM::Linkage::Internal,
                                         kSignatureText, b.getStringAttr(text));
    auto sigFunc = LLVM::LLVMFuncOp::create(
        b, loc, kSignatureName, LLVM::LLVMFunctionType::get(ptr, {}));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(sigFunc.addEntryBlock(b));
    Value address = LLVM::AddressOfOp::create(b, loc, global);
    LLVM::ReturnOp::create(b, loc, address);
    return global;
  }

  /// ga_step_run(inputs, outputs, status) -> i32: the runtime's entry, the
  /// step on descriptors of the inputs, the runtime's exit with the
  /// returned descriptors on the stack. On the CUDA runtime,
  /// ga_cuda_step_enter also copies the inputs to device buffers, whose
  /// pointers it writes to an array that the step reads its arguments
  /// from; ga_cuda_step_leave copies the results back and frees those
  /// buffers.
  void emitRun(ModuleOp module, OpBuilder &b, Location loc,
               LLVM::LLVMFuncOp entryFunc, const ga::StepSignature &sig,
               const LoweredAbi &abi, LLVM::GlobalOp text) {
    MLIRContext *ctx = b.getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto i32 = IntegerType::get(ctx, 32);
    auto declare = [&](StringRef name, LLVM::LLVMFunctionType type) {
      if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
        return existing;
      return LLVM::LLVMFuncOp::create(b, loc, name, type);
    };
    bool cuda = runtime == ga::Target::CUDA;
    SmallVector<Type> enterArgs = {ptr, ptr, ptr, ptr};
    if (cuda)
      enterArgs.push_back(ptr);
    LLVM::LLVMFuncOp enter =
        declare(cuda ? kCudaEnterName : kEnterName,
                LLVM::LLVMFunctionType::get(i32, enterArgs));
    LLVM::LLVMFuncOp leave =
        declare(cuda ? kCudaLeaveName : kLeaveName,
                LLVM::LLVMFunctionType::get(i32, {ptr, ptr, ptr, ptr, ptr}));

    auto run = LLVM::LLVMFuncOp::create(
        b, loc, kRunName, LLVM::LLVMFunctionType::get(i32, {ptr, ptr, ptr}));
    Block *body = run.addEntryBlock(b);
    Value inputs = body->getArgument(0), outputs = body->getArgument(1),
          status = body->getArgument(2);
    Block *call = b.createBlock(&run.getBody());
    Block *exit = b.createBlock(&run.getBody(), {}, {i32}, {loc});

    b.setInsertionPointToEnd(body);
    Value text0 = LLVM::AddressOfOp::create(b, loc, text);
    SmallVector<Value> enterOperands = {text0, inputs, outputs, status};
    if (cuda) {
      Value count = LLVM::ConstantOp::create(
          b, loc, i64,
          b.getI64IntegerAttr(std::max<int64_t>(sig.inputs.size(), 1)));
      inputs = LLVM::AllocaOp::create(b, loc, ptr, ptr, count,
                                      /*alignment=*/8);
      enterOperands.push_back(inputs);
    }
    Value entered =
        LLVM::CallOp::create(b, loc, enter, enterOperands).getResult();
    Value zero = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0));
    Value ok =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, entered, zero);
    LLVM::CondBrOp::create(b, loc, ok, call, ValueRange{}, exit,
                           ValueRange{entered});

    b.setInsertionPointToEnd(call);
    auto callOp = LLVM::CallOp::create(b, loc, entryFunc,
                                       descriptorsOf(b, loc, sig, inputs));
    Value resultsPtr;
    if (abi.resultDescs.empty()) {
      resultsPtr = LLVM::ZeroOp::create(b, loc, ptr);
    } else {
      Value one = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1));
      resultsPtr = LLVM::AllocaOp::create(b, loc, ptr, abi.result, one,
                                          /*alignment=*/8);
      LLVM::StoreOp::create(b, loc, callOp.getResult(), resultsPtr);
    }
    Value left = LLVM::CallOp::create(
                     b, loc, leave,
                     ValueRange{text0, resultsPtr, inputs, outputs, status})
                     .getResult();
    LLVM::BrOp::create(b, loc, ValueRange{left}, exit);

    b.setInsertionPointToEnd(exit);
    LLVM::ReturnOp::create(b, loc, exit->getArgument(0));
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    LLVM::LLVMFuncOp entryFunc = findEntry(module);
    ga::StepSignature sig;
    LoweredAbi abi;
    if (!entryFunc || failed(check(module, entryFunc, sig, abi)))
      return signalPassFailure();
    Location loc = entryFunc.getLoc();
    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    LLVM::GlobalOp text = emitSignature(b, loc, sig);
    emitRun(module, b, loc, entryFunc, sig, abi, text);
    // Only the ABI is exported.
    entryFunc.setLinkage(LLVM::Linkage::Internal);
  }
};

} // namespace
