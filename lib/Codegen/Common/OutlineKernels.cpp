//===- OutlineKernels.cpp - Shared kernel functions for linalg ops --------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-outline-kernels moves each linalg operation into a private function and
// shares that function between the operations that compute the same thing on
// the same types; ga-bufferize bufferizes the module so that a kernel writes
// into its caller's buffers. A transformer's layers repeat the same
// operations: after outlining, everything downstream (tiling, vectorization,
// lowering, LLVM) compiles each distinct operation once, and compile time no
// longer grows with the code of every layer.
//
//===----------------------------------------------------------------------===//

#include "ga/Codegen/Common/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

namespace ga {
#define GEN_PASS_DEF_GAOUTLINEKERNELSPASS
#define GEN_PASS_DEF_GABUFFERIZEPASS
#include "ga/Codegen/Common/Passes.h.inc"
} // namespace ga

using namespace mlir;

/// The unit attribute that marks a kernel function.
static constexpr llvm::StringLiteral kKernelAttr = "train.kernel";

static bool isKernel(func::FuncOp fn) { return fn->hasAttr(kKernelAttr); }

/// Fills of fewer elements stay inline: a few vector stores, cheaper than a
/// call. Larger ones become loops, and loops left in the step function
/// (which grows with the model) make LLVM's loop passes, which revisit the
/// whole function for each loop, grow with the square of its depth.
static constexpr int64_t kMinOutlinedFill = 1024;

/// Whether `op` is outlined: a linalg operation on tensors that does work
/// (a small fill is cheaper inline than called), not nested in another one.
static bool shouldOutline(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op->getNumResults() == 0)
    return false;
  if (isa<linalg::FillOp>(op)) {
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || !type.hasStaticShape())
      return false;
    // The zero init of a loop's accumulator is a kernel whatever its size:
    // its buffer then has the kernels' layout, as the values the loop
    // yields do, and the loop carries it without a copy per iteration.
    bool initsLoop = llvm::any_of(op->getUses(), [](OpOperand &use) {
      auto loop = dyn_cast<scf::ForOp>(use.getOwner());
      return loop && llvm::is_contained(loop.getInitArgsMutable(), use);
    });
    if (type.getNumElements() < kMinOutlinedFill && !initsLoop)
      return false;
  }
  return !op->getParentOfType<linalg::LinalgOp>();
}

namespace {
/// Builds kernels and remembers them by their text, which holds everything
/// that determines what they compute (ops, attributes, types, constants) and
/// nothing else (no names, no locations).
class KernelTable {
public:
  KernelTable(ModuleOp module) : module(module), symbols(module) {}

  /// Replaces `op` with a call of its kernel.
  void outline(linalg::LinalgOp op) {
    Operation *operation = op.getOperation();
    Location loc = operation->getLoc();
    // Arguments: the operands, then the values the body reads from above
    // (constants are cloned instead: they let the kernel fold them). A value
    // passed twice (an accumulator read as an input and written as the
    // init) is one argument: the kernel's bufferization then sees the
    // elementwise update it is and writes it in place.
    SetVector<Value> argumentSet(operation->getOperands().begin(),
                                 operation->getOperands().end());
    SmallVector<Value> constants;
    SetVector<Value> above;
    getUsedValuesDefinedAbove(operation->getRegions(), above);
    for (Value v : above) {
      if (matchPattern(v, m_Constant()))
        constants.push_back(v);
      else
        argumentSet.insert(v);
    }
    SmallVector<Value> arguments(argumentSet.begin(), argumentSet.end());
    MLIRContext *ctx = module.getContext();
    auto type = FunctionType::get(ctx, TypeRange(ValueRange(arguments)),
                                  operation->getResultTypes());
    auto kernel = func::FuncOp::create(loc, "ga_kernel", type);
    kernel.setPrivate();
    kernel->setAttr(kKernelAttr, UnitAttr::get(ctx));
    // Kept apart in LLVM: inlining them back would compile every copy again.
    // (func-to-llvm carries `passthrough` and `llvm.linkage` over.)
    kernel->setAttr("passthrough",
                    ArrayAttr::get(ctx, {StringAttr::get(ctx, "noinline")}));
    kernel->setAttr("llvm.linkage",
                    LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));
    Block *entry = kernel.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    IRMapping mapping;
    for (auto [v, arg] : llvm::zip(arguments, entry->getArguments()))
      mapping.map(v, arg);
    for (Value c : constants)
      b.clone(*c.getDefiningOp(), mapping);
    Operation *body = b.clone(*operation, mapping);
    func::ReturnOp::create(b, loc, body->getResults());

    std::string key;
    llvm::raw_string_ostream os(key);
    kernel->print(os, OpPrintingFlags().printGenericOpForm());
    auto [it, inserted] = kernels.try_emplace(key, kernel);
    if (inserted) {
      kernel.setName(("ga_kernel_" + Twine(kernels.size() - 1)).str());
      symbols.insert(kernel);
    } else {
      kernel->erase();
    }
    OpBuilder caller(operation);
    auto call = func::CallOp::create(caller, loc, it->second, arguments);
    operation->replaceAllUsesWith(call.getResults());
    operation->erase();
  }

private:
  ModuleOp module;
  SymbolTable symbols;
  std::map<std::string, func::FuncOp> kernels;
};

struct GaOutlineKernelsPass
    : ga::impl::GaOutlineKernelsPassBase<GaOutlineKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> ops;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!isKernel(fn) && !fn.isExternal())
        fn.walk([&](linalg::LinalgOp op) {
          if (shouldOutline(op))
            ops.push_back(op);
        });
    KernelTable table(module);
    for (linalg::LinalgOp op : ops)
      table.outline(op);
  }
};

/// The buffer type of a kernel argument: the row-major strides of its shape
/// and any offset (a slice of a larger buffer along its leading dimensions
/// is passed as it is).
static BaseMemRefType kernelArgumentType(TensorType tensor,
                                         Attribute memorySpace) {
  auto ranked = dyn_cast<RankedTensorType>(tensor);
  if (!ranked || !ranked.hasStaticShape())
    return bufferization::getMemRefTypeWithFullyDynamicLayout(tensor,
                                                              memorySpace);
  SmallVector<int64_t> strides(ranked.getRank(), 1);
  for (int64_t d = ranked.getRank() - 1; d > 0; --d)
    strides[d - 1] = strides[d] * ranked.getDimSize(d);
  auto layout = StridedLayoutAttr::get(tensor.getContext(),
                                       ShapedType::kDynamic, strides);
  return MemRefType::get(ranked.getShape(), ranked.getElementType(), layout,
                         memorySpace);
}

struct GaBufferizePass : ga::impl::GaBufferizePassBase<GaBufferizePass> {
  using Base::Base;
  void runOnOperation() override {
    bufferization::OneShotBufferizationOptions options;
    options.bufferizeFunctionBoundaries = true;
    options.setFunctionBoundaryTypeConversion(
        bufferization::LayoutMapOption::IdentityLayoutMap);
    options.functionArgTypeConverterFn =
        [](bufferization::TensorLikeType tensor, Attribute memorySpace,
           func::FuncOp fn, const bufferization::BufferizationOptions &)
        -> bufferization::BufferLikeType {
      auto type = cast<TensorType>(tensor);
      if (isKernel(fn))
        return cast<bufferization::BufferLikeType>(
            kernelArgumentType(type, memorySpace));
      return cast<bufferization::BufferLikeType>(
          bufferization::getMemRefTypeWithStaticIdentityLayout(type,
                                                               memorySpace));
    };
    // A copy made for a kernel argument (of a non-contiguous operand) has
    // the argument's type, whose offset is dynamic: it is allocated with the
    // identity layout and cast.
    options.allocationFn = [](OpBuilder &b, Location loc, MemRefType type,
                              ValueRange dynamicSizes,
                              unsigned alignment) -> FailureOr<Value> {
      auto plain =
          MemRefType::get(type.getShape(), type.getElementType(),
                          MemRefLayoutAttrInterface(), type.getMemorySpace());
      Value alloc = memref::AllocOp::create(b, loc, plain, dynamicSizes,
                                            b.getI64IntegerAttr(alignment));
      if (plain == type)
        return alloc;
      if (!memref::CastOp::areCastCompatible(plain, type))
        return failure();
      return memref::CastOp::create(b, loc, type, alloc).getResult();
    };
    bufferization::BufferizationState state;
    if (failed(bufferization::runOneShotModuleBufferize(getOperation(), options,
                                                        state)))
      return signalPassFailure();
  }
};
} // namespace
