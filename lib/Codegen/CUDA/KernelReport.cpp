//===- KernelReport.cpp - Each kernel's bytes, FLOPs and bound ------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// ga-gpu-kernel-report: what each kernel of the step must move and compute
// for the step's static shapes, and the time that takes at least on a
// given device (see the pass's description in Passes.td), so that the
// speed of the generated code can be reasoned about without a GPU and
// checked against GA_CUDA_PROFILE's times on one.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "ga/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <array>
#include <cmath>
#include <limits>
#include <map>

namespace ga {
#define GEN_PASS_DEF_GAGPUKERNELREPORTPASS
#include "ga/Codegen/CUDA/Passes.h.inc"
} // namespace ga

using namespace mlir;

namespace {

/// A device's presets: the copy bandwidth (bytes/s) and the dense peaks
/// (FLOP/s) of float32 on CUDA cores, TF32 and bfloat16 on tensor cores.
struct Device {
  StringRef name;
  double bandwidth, f32, tf32, bf16;
};
constexpr Device kDevices[] = {
    {"h100", 3.0e12, 67e12, 494.7e12, 989.4e12},
    {"h200", 4.3e12, 67e12, 494.7e12, 989.4e12},
};

/// Constant index values the IR computes but has not folded yet (the
/// launches' grid sizes are affine.apply of constants at this point): a
/// constant, an affine.apply or integer arithmetic of such values, or, in a
/// kernel, an argument whose launch operand is one. Folding evaluates the
/// operation on the operands' values; the IR is not changed.
struct Evaluator {
  mutable gpu::LaunchFuncOp launch;
  mutable gpu::GPUFuncOp kernel;

  std::optional<int64_t> operator()(Value value, int depth = 0) const {
    if (std::optional<int64_t> constant = getConstantIntValue(value))
      return constant;
    if (depth > 16)
      return std::nullopt;
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      if (kernel && launch && arg.getOwner() == &kernel.front() &&
          arg.getArgNumber() < launch.getKernelOperands().size())
        return Evaluator{}(launch.getKernelOperands()[arg.getArgNumber()],
                           depth + 1);
      return std::nullopt;
    }
    Operation *def = value.getDefiningOp();
    if (!def || def->getNumResults() != 1 ||
        !isa<affine::AffineApplyOp, affine::AffineMinOp, affine::AffineMaxOp,
             arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivSIOp,
             arith::DivUIOp, arith::CeilDivSIOp, arith::CeilDivUIOp,
             arith::FloorDivSIOp, arith::RemSIOp, arith::RemUIOp,
             arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp,
             arith::IndexCastOp>(def))
      return std::nullopt;
    SmallVector<Attribute> operands;
    for (Value operand : def->getOperands()) {
      std::optional<int64_t> known = (*this)(operand, depth + 1);
      if (!known)
        return std::nullopt;
      operands.push_back(IntegerAttr::get(operand.getType(), *known));
    }
    SmallVector<OpFoldResult> results;
    if (failed(def->fold(operands, results)) || results.size() != 1)
      return std::nullopt;
    // A fold to one of the operands (x * 1 is x) names a value.
    if (auto folded = dyn_cast_if_present<Value>(results[0]))
      return (*this)(folded, depth + 1);
    if (auto attr = dyn_cast_if_present<IntegerAttr>(
            dyn_cast_if_present<Attribute>(results[0])))
      return attr.getInt();
    return std::nullopt;
  }
};

/// The thread dimension (0, 1, 2 for x, y, z) `value` is the index of in
/// its block, or -1.
int threadDim(Value value) {
  if (auto id = value.getDefiningOp<gpu::ThreadIdOp>())
    return static_cast<int>(id.getDimension());
  return -1;
}

/// How often `op` runs per run of `root`'s body, on average over the
/// threads of a block of `block` threads (host code: one thread): the
/// product of the trip counts of the scf.for loops between them (a loop
/// from a thread index in steps of at most the block's extent there, as a
/// row group's lanes stride a row, at its average over the threads), and
/// the share of the threads that pass each scf.if that tests a thread index
/// against a constant (`tid == c`, `tid < c`); other guards count as
/// passed. `exact` becomes false where a trip count is not known (counted
/// once) or another loop intervenes.
double runsWithin(Operation *op, Operation *root, const Evaluator &value,
                  const std::array<int64_t, 3> &block, bool &exact) {
  double runs = 1;
  Operation *child = op;
  for (Operation *parent = op->getParentOp(); parent && parent != root;
       child = parent, parent = parent->getParentOp()) {
    if (auto loop = dyn_cast<scf::ForOp>(parent)) {
      std::optional<int64_t> ub = value(loop.getUpperBound()),
                             step = value(loop.getStep());
      int dim = threadDim(loop.getLowerBound());
      if (dim >= 0 && ub && step && *step > 0) {
        // The average of ceil((ub - t) / step) over the block's t.
        int64_t extent = std::max<int64_t>(1, block[dim]), total = 0;
        for (int64_t t = 0; t < extent; ++t)
          total += std::max<int64_t>(0, (*ub - t + *step - 1) / *step);
        runs *= double(total) / double(extent);
      } else if (std::optional<int64_t> lb = value(loop.getLowerBound());
                 lb && ub && step && *step > 0) {
        runs *= double(std::max<int64_t>(0, (*ub - *lb + *step - 1) / *step));
      } else {
        exact = false;
      }
    } else if (auto branch = dyn_cast<scf::IfOp>(parent)) {
      auto test = branch.getCondition().getDefiningOp<arith::CmpIOp>();
      if (!test)
        continue;
      Value lhs = test.getLhs(), rhs = test.getRhs();
      arith::CmpIPredicate predicate = test.getPredicate();
      int dim = threadDim(lhs);
      std::optional<int64_t> bound = value(rhs);
      if (dim < 0 || !bound)
        continue;
      double extent = double(std::max<int64_t>(1, block[dim])), passed;
      if (predicate == arith::CmpIPredicate::eq)
        passed = *bound >= 0 && *bound < block[dim] ? 1 : 0;
      else if (predicate == arith::CmpIPredicate::ult ||
               predicate == arith::CmpIPredicate::slt)
        passed = double(std::clamp<int64_t>(*bound, 0, block[dim]));
      else
        continue;
      bool inThen = child->getParentRegion() == &branch.getThenRegion();
      runs *= inThen ? passed / extent : (extent - passed) / extent;
    } else if (isa<LoopLikeOpInterface>(parent)) {
      exact = false;
    }
  }
  return runs;
}

/// A value of `type` as its elements and their type (a scalar: one).
std::pair<int64_t, Type> elementsOf(Type type) {
  if (auto vector = dyn_cast<VectorType>(type))
    return {vector.getNumElements(), vector.getElementType()};
  return {1, type};
}

/// The bytes of one value of `type` (a scalar, or a vector's elements).
int64_t valueBytes(Type type) {
  auto [elements, element] = elementsOf(type);
  unsigned bits = element.isIndex() ? 64 : element.getIntOrFloatBitWidth();
  return elements * ((bits + 7) / 8);
}

/// The bytes of a memref's elements, or nullopt for a dynamic shape.
std::optional<int64_t> memrefBytes(MemRefType type) {
  if (!type.hasStaticShape())
    return std::nullopt;
  return type.getNumElements() * valueBytes(type.getElementType());
}

/// Whether a kernel reads and writes the buffer `arg` names (through any
/// views of it); `unknown` where a use is neither (counted as both).
struct Access {
  bool read = false, written = false, unknown = false;
};
Access accessOf(Value arg) {
  Access access;
  SmallVector<Value> worklist = {arg};
  while (!worklist.empty()) {
    Value buffer = worklist.pop_back_val();
    for (OpOperand &use : buffer.getUses()) {
      Operation *user = use.getOwner();
      if (isa<ViewLikeOpInterface, memref::CastOp>(user)) {
        for (Value result : user->getResults())
          if (isa<MemRefType>(result.getType()))
            worklist.push_back(result);
        continue;
      }
      if (isa<memref::LoadOp, vector::LoadOp, vector::TransferReadOp,
              vector::MaskedLoadOp, vector::GatherOp>(user)) {
        access.read = true;
      } else if (isa<memref::StoreOp, vector::StoreOp, vector::TransferWriteOp,
                     vector::MaskedStoreOp, vector::ScatterOp>(user)) {
        access.written = true;
      } else if (isa<memref::AtomicRMWOp, memref::GenericAtomicRMWOp>(user)) {
        access.read = access.written = true;
      } else if (auto copy = dyn_cast<memref::CopyOp>(user)) {
        (use.get() == copy.getSource() ? access.read : access.written) = true;
      } else if (!isa<memref::DimOp, memref::ExtractAlignedPointerAsIndexOp>(
                     user)) {
        access.read = access.written = access.unknown = true;
      }
    }
  }
  return access;
}

/// The bytes of the values a load operation reads, or 0 for another one.
int64_t loadBytes(Operation *op) {
  if (isa<memref::LoadOp, vector::LoadOp, vector::TransferReadOp,
          vector::MaskedLoadOp, vector::GatherOp>(op))
    return valueBytes(op->getResult(0).getType());
  return 0;
}

/// The floating-point operations `op` performs once: its result's elements
/// for arithmetic on floats, twice that for a fused multiply-add.
int64_t flopsOf(Operation *op) {
  if (op->getNumResults() != 1)
    return 0;
  auto [elements, type] = elementsOf(op->getResult(0).getType());
  if (!isa<FloatType>(type))
    return 0;
  if (isa<math::FmaOp>(op))
    return 2 * elements;
  if (isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
          arith::RemFOp, arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
          arith::MinNumFOp, arith::NegFOp>(op) ||
      isa<math::MathDialect>(op->getDialect()))
    return elements;
  return 0;
}

/// Where a launch came from, for people: the file names and lines of its
/// location (a fused kernel's first three lines, `file:l1,l2,l3 +N`), or a
/// name.
std::string where(Location loc) {
  SmallVector<std::pair<std::string, unsigned>> lines;
  std::string name;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      std::pair<std::string, unsigned> line = {
          llvm::sys::path::filename(file.getFilename().getValue()).str(),
          file.getLine()};
      if (!llvm::is_contained(lines, line))
        lines.push_back(line);
    } else if (auto named = dyn_cast<NameLoc>(inner)) {
      if (name.empty())
        name = named.getName().str();
    }
    return WalkResult::advance();
  });
  if (lines.empty())
    return name;
  std::string text;
  for (auto [i, line] : llvm::enumerate(lines)) {
    if (i == 3) {
      text += " +" + std::to_string(lines.size() - 3);
      break;
    }
    bool sameFile = i && lines[i - 1].first == line.first;
    text += (sameFile ? ","
             : i      ? " " + line.first + ":"
                      : line.first + ":") +
            std::to_string(line.second);
  }
  return text;
}

/// One kernel's work per launch, as the report lists it.
struct KernelRow {
  std::string kernel;
  /// Its device module's place among the step's (the order the runtime
  /// loads them in: GA_CUDA_PROFILE's "module #N").
  int64_t moduleIndex = -1;
  /// The first launch's source, and how many launch sites the row has.
  std::string where;
  int64_t sites = 0;
  std::array<int64_t, 3> grid{}, block{};
  int64_t launches = 0;
  int64_t readBytes = 0, writtenBytes = 0, issuedLoadBytes = 0, flops = 0;
  int64_t minLoad = 0, maxLoad = 0;
  bool exact = true;
  double boundUs = 0;
};

/// One shape of cuBLAS products, per call.
struct ProductRow {
  std::string call;
  int64_t m = 0, n = 0, k = 0, products = 0, calls = 0;
  int64_t readBytes = 0, writtenBytes = 0, flops = 0;
  double peak = 0, boundUs = 0;
};

struct GaGpuKernelReportPass
    : ga::impl::GaGpuKernelReportPassBase<GaGpuKernelReportPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const Device *preset = llvm::find_if(
        kDevices, [&](const Device &d) { return d.name == device; });
    if (preset == std::end(kDevices)) {
      module.emitError() << "ga-gpu-kernel-report: device must be h100 or "
                            "h200, got '"
                         << device << "'";
      return signalPassFailure();
    }
    if (bandwidthGBs < 0 || peakTflops < 0) {
      module.emitError() << "ga-gpu-kernel-report: bandwidth-gbs and "
                            "peak-tflops must not be negative, got "
                         << bandwidthGBs << " and " << peakTflops;
      return signalPassFailure();
    }
    Device dev = *preset;
    if (bandwidthGBs > 0)
      dev.bandwidth = bandwidthGBs * 1e9;
    if (peakTflops > 0)
      dev.f32 = peakTflops * 1e12;

    std::vector<KernelRow> kernels;
    std::map<std::string, size_t> kernelIndex;
    llvm::StringMap<int64_t> moduleIndex;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>())
      moduleIndex.try_emplace(gpuModule.getName(), moduleIndex.size());
    bool failed = false;
    module.walk([&](gpu::LaunchFuncOp launch) {
      if (failed)
        return;
      auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      if (!kernel) {
        launch.emitError("ga-gpu-kernel-report: the launched kernel ")
            << launch.getKernel() << " is not defined in the module";
        failed = true;
        return;
      }
      KernelRow row = analyze(launch, kernel, dev);
      row.moduleIndex =
          moduleIndex.lookup(launch.getKernelModuleName().getValue());
      bool exact = true;
      auto host = launch->getParentOfType<FunctionOpInterface>();
      auto runs = static_cast<int64_t>(
          runsWithin(launch, host, Evaluator{}, {1, 1, 1}, exact));
      std::string key;
      llvm::raw_string_ostream os(key);
      os << row.kernel << " " << row.grid[0] << "x" << row.grid[1] << "x"
         << row.grid[2] << " " << row.block[0] << "x" << row.block[1] << "x"
         << row.block[2];
      for (Value operand : launch.getKernelOperands())
        os << " " << operand.getType();
      auto [it, inserted] = kernelIndex.try_emplace(key, kernels.size());
      if (inserted) {
        row.where = where(launch.getLoc());
        kernels.push_back(row);
      }
      kernels[it->second].launches += runs;
      ++kernels[it->second].sites;
      kernels[it->second].exact &= exact;
    });
    if (failed)
      return signalPassFailure();

    std::vector<ProductRow> products;
    std::map<std::string, size_t> productIndex;
    module.walk([&](func::CallOp call) {
      std::optional<ProductRow> row = product(call, dev);
      if (!row)
        return;
      bool exact = true;
      auto host = call->getParentOfType<FunctionOpInterface>();
      auto runs = static_cast<int64_t>(
          runsWithin(call, host, Evaluator{}, {1, 1, 1}, exact));
      std::string key = row->call + " " + std::to_string(row->m) + "x" +
                        std::to_string(row->n) + "x" + std::to_string(row->k) +
                        "x" + std::to_string(row->products) + " " +
                        std::to_string(row->readBytes);
      auto [it, inserted] = productIndex.try_emplace(key, products.size());
      if (inserted)
        products.push_back(*row);
      products[it->second].calls += runs;
    });

    // Dearest first (launches times bound), then in the step's order.
    std::stable_sort(kernels.begin(), kernels.end(),
                     [](const KernelRow &a, const KernelRow &b) {
                       return a.launches * a.boundUs > b.launches * b.boundUs;
                     });
    std::stable_sort(products.begin(), products.end(),
                     [](const ProductRow &a, const ProductRow &b) {
                       return a.calls * a.boundUs > b.calls * b.boundUs;
                     });

    std::string error;
    auto file = openOutputFile(output, &error);
    if (!file) {
      module.emitError() << "ga-gpu-kernel-report: cannot write '" << output
                         << "': " << error;
      return signalPassFailure();
    }
    if (StringRef(output).ends_with(".json"))
      writeJson(file->os(), dev, kernels, products);
    else
      writeTable(file->os(), dev, kernels, products);
    file->keep();
    markAllAnalysesPreserved();
  }

  /// A launch's grid, block, bytes, FLOPs and bound.
  static KernelRow analyze(gpu::LaunchFuncOp launch, gpu::GPUFuncOp kernel,
                           const Device &dev) {
    KernelRow row;
    row.kernel = (launch.getKernelModuleName().getValue() +
                  "::" + launch.getKernelName().getValue())
                     .str();
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues(),
                    block = launch.getBlockSizeOperandValues();
    int64_t threads = 1;
    std::array<Value, 6> sizes = {grid.x,  grid.y,  grid.z,
                                  block.x, block.y, block.z};
    for (auto [i, value] : llvm::enumerate(sizes)) {
      std::optional<int64_t> size = Evaluator{}(value);
      if (!size)
        row.exact = false;
      int64_t v = size.value_or(1);
      (i < 3 ? row.grid[i] : row.block[i - 3]) = v;
      threads *= v;
    }
    // Bytes per buffer of the host: operands that are views of one buffer
    // (the logits whole and as [rows, steps, lanes] for a row's partial
    // sums) count its bytes at most once.
    struct Touched {
      int64_t read = 0, written = 0;
      std::optional<int64_t> whole;
    };
    llvm::MapVector<Value, Touched> buffers;
    for (auto [operand, arg] :
         llvm::zip(launch.getKernelOperands(), kernel.getArguments())) {
      auto type = dyn_cast<MemRefType>(operand.getType());
      if (!type)
        continue;
      std::optional<int64_t> bytes = memrefBytes(type);
      Access access = accessOf(arg);
      if (!bytes || access.unknown)
        row.exact = false;
      Value root = ga::cuda::viewSource(operand);
      Touched &touched = buffers[root];
      if (auto rootType = dyn_cast<MemRefType>(root.getType()))
        touched.whole = memrefBytes(rootType);
      if (access.read)
        touched.read += bytes.value_or(0);
      if (access.written)
        touched.written += bytes.value_or(0);
    }
    for (auto &[root, touched] : buffers) {
      int64_t whole =
          touched.whole.value_or(std::numeric_limits<int64_t>::max());
      row.readBytes += std::min(touched.read, whole);
      row.writtenBytes += std::min(touched.written, whole);
    }
    double perThreadLoads = 0, perThreadFlops = 0;
    Evaluator inKernel{launch, kernel};
    kernel.walk([&](Operation *op) {
      int64_t load = loadBytes(op), flops = flopsOf(op);
      if (!load && !flops)
        return;
      double runs = runsWithin(op, kernel, inKernel, row.block, row.exact);
      perThreadLoads += double(load) * runs;
      perThreadFlops += double(flops) * runs;
      if (load) {
        row.minLoad = row.minLoad ? std::min(row.minLoad, load) : load;
        row.maxLoad = std::max(row.maxLoad, load);
      }
    });
    row.issuedLoadBytes = std::llround(perThreadLoads * double(threads));
    row.flops = std::llround(perThreadFlops * double(threads));
    row.boundUs =
        1e6 * std::max(double(row.readBytes + row.writtenBytes) / dev.bandwidth,
                       double(row.flops) / dev.f32);
    return row;
  }

  /// A call of the fused attention (ga_cuda_attention_{fwd,bwd}_bf16):
  /// m the queries, n the keys, k the features, products the batch times
  /// the heads; FLOPs those of its products (forward: the scores and the
  /// output, 4 S T D per head; backward: the scores again, the output's
  /// and the scores' gradients and those of the three operands, 10 S T
  /// D), half of them for a causal attention (the tiles after the
  /// diagonal are skipped); bytes each operand and result once.
  static std::optional<ProductRow> attention(func::CallOp call,
                                             const Device &dev) {
    StringRef name = call.getCallee();
    if (!name.consume_front("ga_cuda_attention_"))
      return std::nullopt;
    bool backward = name.starts_with("bwd");
    auto shapeOf = [&](unsigned i) -> std::optional<MemRefType> {
      if (i >= call.getNumOperands())
        return std::nullopt;
      auto cast = call.getOperand(i).getDefiningOp<memref::CastOp>();
      if (!cast)
        return std::nullopt;
      auto type = dyn_cast<MemRefType>(cast.getSource().getType());
      if (!type || !type.hasStaticShape())
        return std::nullopt;
      return type;
    };
    unsigned memrefs = backward ? 9 : 5;
    ProductRow row;
    row.call = call.getCallee().str();
    for (unsigned i = 0; i < memrefs; ++i) {
      std::optional<MemRefType> type = shapeOf(i);
      if (!type)
        return std::nullopt;
      int64_t bytes =
          type->getNumElements() * type->getElementTypeBitWidth() / 8;
      // Forward: q, k, v read, out and lse written; backward: q, k, v,
      // out, lse and dout read, dq, dk, dv written.
      (i < (backward ? 6u : 3u) ? row.readBytes : row.writtenBytes) += bytes;
    }
    MemRefType q = *shapeOf(0), k = *shapeOf(1);
    row.m = q.getDimSize(1);
    row.n = k.getDimSize(1);
    row.k = q.getDimSize(3);
    row.products = q.getDimSize(0) * q.getDimSize(2);
    std::optional<int64_t> causal =
        Evaluator{}(call.getOperand(call.getNumOperands() - 2));
    int64_t perHead = (backward ? 10 : 4) * row.m * row.n * row.k;
    row.flops = row.products * perHead / (causal.value_or(0) ? 2 : 1);
    row.peak = dev.bf16;
    row.boundUs =
        1e6 * std::max(double(row.readBytes + row.writtenBytes) / dev.bandwidth,
                       double(row.flops) / row.peak);
    return row;
  }

  /// A call of the CUDA runtime's GEMMs with constant sizes, or of its
  /// fused attention, as a product row; nullopt for any other call.
  static std::optional<ProductRow> product(func::CallOp call,
                                           const Device &dev) {
    if (std::optional<ProductRow> row = attention(call, dev))
      return row;
    StringRef name = call.getCallee();
    if (!name.consume_front("ga_cuda_gemm_"))
      return std::nullopt;
    // (index of m, of the counts, how many counts, of accumulate or -1)
    unsigned mAt = 3, countsAt = 6, counts = 0;
    int accumulateAt = 2;
    // A bias (of D's type) read; D bfloat16 (precision=bf16).
    bool bias = false, bf16Out = false;
    if (name.consume_front("batched2_f32")) {
      counts = 2;
    } else if (name.consume_front("batched_f32")) {
      counts = 1;
    } else if (name.consume_front("bias_f32")) {
      mAt = 2;
      accumulateAt = -1;
      bias = true;
    } else if (name.consume_front("bias_bf16")) {
      mAt = 2;
      accumulateAt = -1;
      bias = bf16Out = true;
    } else if (name.consume_front("bf16")) {
      mAt = 2;
      accumulateAt = -1;
      bf16Out = true;
    } else if (!name.consume_front("f32")) {
      return std::nullopt;
    }
    auto constant = [&](unsigned i) -> std::optional<int64_t> {
      if (i >= call.getNumOperands())
        return std::nullopt;
      return Evaluator{}(call.getOperand(i));
    };
    ProductRow row;
    row.call = call.getCallee().str();
    std::optional<int64_t> m = constant(mAt), n = constant(mAt + 1),
                           k = constant(mAt + 2);
    if (!m || !n || !k)
      return std::nullopt;
    row.m = *m;
    row.n = *n;
    row.k = *k;
    row.products = 1;
    for (unsigned i = 0; i < counts; ++i)
      row.products *= constant(countsAt + i).value_or(1);
    bool accumulates =
        accumulateAt >= 0 && constant(accumulateAt).value_or(1) != 0;
    int64_t operandBytes = name == "_bf16in" ? 2 : 4;
    row.readBytes =
        row.products * ((row.m * row.k + row.k * row.n) * operandBytes +
                        (accumulates ? row.m * row.n * 4 : 0));
    int64_t outputBytes = bf16Out ? 2 : 4;
    if (bias) // of D's type
      row.readBytes += row.n * outputBytes;
    row.writtenBytes = row.products * row.m * row.n * outputBytes;
    row.flops = 2 * row.m * row.n * row.k * row.products;
    row.peak = name == "_tf32"                        ? dev.tf32
               : name == "_bf16" || name == "_bf16in" ? dev.bf16
                                                      : dev.f32;
    row.boundUs =
        1e6 * std::max(double(row.readBytes + row.writtenBytes) / dev.bandwidth,
                       double(row.flops) / row.peak);
    return row;
  }

  struct Totals {
    int64_t launches = 0, readBytes = 0, writtenBytes = 0, flops = 0;
    int64_t issuedLoadBytes = 0;
    int64_t productCalls = 0, productFlops = 0;
    double kernelUs = 0, productUs = 0;
  };
  static Totals totals(ArrayRef<KernelRow> kernels,
                       ArrayRef<ProductRow> products) {
    Totals t;
    for (const KernelRow &row : kernels) {
      t.launches += row.launches;
      t.readBytes += row.launches * row.readBytes;
      t.writtenBytes += row.launches * row.writtenBytes;
      t.issuedLoadBytes += row.launches * row.issuedLoadBytes;
      t.flops += row.launches * row.flops;
      t.kernelUs += row.launches * row.boundUs;
    }
    for (const ProductRow &row : products) {
      t.productCalls += row.calls;
      t.productFlops += row.calls * row.flops;
      t.productUs += row.calls * row.boundUs;
    }
    return t;
  }

  static void writeTable(raw_ostream &os, const Device &dev,
                         ArrayRef<KernelRow> kernels,
                         ArrayRef<ProductRow> products) {
    Totals t = totals(kernels, products);
    os << llvm::format("kernel report: %s, %.0f GB/s, float32 %.1f TFLOP/s "
                       "(products: TF32 %.1f, bfloat16 %.1f)\n",
                       dev.name.str().c_str(), dev.bandwidth / 1e9,
                       dev.f32 / 1e12, dev.tf32 / 1e12, dev.bf16 / 1e12);
    os << llvm::format("kernels: %zu distinct, %lld launches; bytes read "
                       "%lld, written %lld; FLOPs %lld; bound %.3f us; "
                       "loads issued %lld B\n",
                       kernels.size(), (long long)t.launches,
                       (long long)t.readBytes, (long long)t.writtenBytes,
                       (long long)t.flops, t.kernelUs,
                       (long long)t.issuedLoadBytes);
    os << llvm::format("products: %zu distinct, %lld calls; FLOPs %lld; "
                       "bound %.3f us\n",
                       products.size(), (long long)t.productCalls,
                       (long long)t.productFlops, t.productUs);
    double floor = t.kernelUs + t.productUs;
    os << llvm::format("step floor: %.3f us, the kernels %.1f%% of it\n", floor,
                       floor > 0 ? 100 * t.kernelUs / floor : 0.0);
    os << llvm::format("%8s %10s %10s %12s %12s %12s %7s %6s %10s  %s\n",
                       "launches", "grid", "block", "read B", "written B",
                       "FLOPs", "issued", "load B", "bound us", "kernel");
    auto dims = [](const std::array<int64_t, 3> &d) {
      return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" +
             std::to_string(d[2]);
    };
    for (const KernelRow &row : kernels) {
      std::string sites =
          row.sites > 1 ? ", " + std::to_string(row.sites) + " sites" : "";
      std::string load =
          std::to_string(row.minLoad) + (row.maxLoad != row.minLoad
                                             ? "-" + std::to_string(row.maxLoad)
                                             : std::string());
      os << llvm::format(
          "%8lld %10s %10s %12lld %12lld %12lld %7.2f %6s %10.3f  %s%s  "
          "[%s%s]\n",
          (long long)row.launches, dims(row.grid).c_str(),
          dims(row.block).c_str(), (long long)row.readBytes,
          (long long)row.writtenBytes, (long long)row.flops,
          row.readBytes ? double(row.issuedLoadBytes) / row.readBytes : 0.0,
          load.c_str(), row.boundUs, row.kernel.c_str(),
          row.exact ? "" : " (estimate)", row.where.c_str(), sites.c_str());
    }
    os << llvm::format("%8s %16s %10s %12s %12s %14s %10s  %s\n", "calls",
                       "m x n x k", "products", "read B", "written B", "FLOPs",
                       "bound us", "product");
    for (const ProductRow &row : products) {
      std::string shape = std::to_string(row.m) + "x" + std::to_string(row.n) +
                          "x" + std::to_string(row.k);
      os << llvm::format("%8lld %16s %10lld %12lld %12lld %14lld %10.3f  %s\n",
                         (long long)row.calls, shape.c_str(),
                         (long long)row.products, (long long)row.readBytes,
                         (long long)row.writtenBytes, (long long)row.flops,
                         row.boundUs, row.call.c_str());
    }
  }

  static void writeJson(raw_ostream &os, const Device &dev,
                        ArrayRef<KernelRow> kernels,
                        ArrayRef<ProductRow> products) {
    Totals t = totals(kernels, products);
    llvm::json::Array kernelRows, productRows;
    for (const KernelRow &row : kernels)
      kernelRows.push_back(llvm::json::Object{
          {"kernel", row.kernel},
          {"module_index", row.moduleIndex},
          {"where", row.where},
          {"sites", row.sites},
          {"launches", row.launches},
          {"grid", llvm::json::Array{row.grid[0], row.grid[1], row.grid[2]}},
          {"block",
           llvm::json::Array{row.block[0], row.block[1], row.block[2]}},
          {"read_bytes", row.readBytes},
          {"written_bytes", row.writtenBytes},
          {"issued_load_bytes", row.issuedLoadBytes},
          {"flops", row.flops},
          {"load_bytes", llvm::json::Array{row.minLoad, row.maxLoad}},
          {"bound_us", row.boundUs},
          {"exact", row.exact}});
    for (const ProductRow &row : products)
      productRows.push_back(
          llvm::json::Object{{"call", row.call},
                             {"calls", row.calls},
                             {"m", row.m},
                             {"n", row.n},
                             {"k", row.k},
                             {"products", row.products},
                             {"read_bytes", row.readBytes},
                             {"written_bytes", row.writtenBytes},
                             {"flops", row.flops},
                             {"bound_us", row.boundUs}});
    llvm::json::Object report{
        {"device", llvm::json::Object{{"name", dev.name},
                                      {"bandwidth_bytes_per_s", dev.bandwidth},
                                      {"f32_flops", dev.f32},
                                      {"tf32_flops", dev.tf32},
                                      {"bf16_flops", dev.bf16}}},
        {"kernels", std::move(kernelRows)},
        {"products", std::move(productRows)},
        {"totals", llvm::json::Object{{"launches", t.launches},
                                      {"read_bytes", t.readBytes},
                                      {"written_bytes", t.writtenBytes},
                                      {"issued_load_bytes", t.issuedLoadBytes},
                                      {"flops", t.flops},
                                      {"kernel_bound_us", t.kernelUs},
                                      {"product_calls", t.productCalls},
                                      {"product_flops", t.productFlops},
                                      {"product_bound_us", t.productUs}}}};
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(report))) << "\n";
  }
};

} // namespace
