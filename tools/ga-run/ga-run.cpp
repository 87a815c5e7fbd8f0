//===- ga-run.cpp - Run a training step on the CPU ------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Compiles a function of an MLIR file with --ga-pipeline=target=cpu (or
// takes IR that is already lowered), JIT-compiles it with MLIR's
// ExecutionEngine, runs it on .npy inputs and writes its results as .npy.
//
//===----------------------------------------------------------------------===//

#include "Collectives.h"

#include "ga/InitAll.h"
#include "ga/Pipelines/Pipelines.h"
#include "ga/Runtime/Errors.h"
#include "ga/Runtime/Npy.h"
#include "train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <thread>
#ifdef __GLIBC__
#include <malloc.h>
#endif

using namespace mlir;
namespace cl = llvm::cl;

using llvm::Error;
using llvm::errs;
using llvm::Expected;
using llvm::format;
using llvm::InitLLVM;
using llvm::MemoryBuffer;
using llvm::outs;
using llvm::raw_string_ostream;
using llvm::SmallString;
using llvm::SMLoc;
using llvm::SourceMgr;
using llvm::Twine;
using llvm::WithColor;

static cl::OptionCategory gaRunCategory("ga-run options");

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<file.mlir>"),
                                      cl::cat(gaRunCategory));
static cl::list<std::string> inputArrays(cl::Positional, cl::ZeroOrMore,
                                         cl::desc("<argument.npy>..."),
                                         cl::cat(gaRunCategory));
static cl::opt<std::string>
    entryName("entry",
              cl::desc("The function to run (default: the only function "
                       "with a body)"),
              cl::value_desc("name"), cl::cat(gaRunCategory));
static cl::opt<std::string>
    outDir("out-dir",
           cl::desc("Write result i to <dir>/result<i>.npy (created if "
                    "missing); without it nothing is written"),
           cl::value_desc("dir"), cl::cat(gaRunCategory));
static cl::opt<int> repeat("repeat",
                           cl::desc("Run the function N times (N >= 1) and "
                                    "report the mean and minimum run time"),
                           cl::init(1), cl::value_desc("N"),
                           cl::cat(gaRunCategory));
static cl::opt<bool>
    vectorize("vectorize",
              cl::desc("Compile high-level IR with the pipeline's vector code "
                       "(default true; --vectorize=false keeps scalar loops)"),
              cl::init(true), cl::cat(gaRunCategory));
static cl::opt<bool>
    naive("naive",
          cl::desc("Split the batch the usual, inexact way (per-micro-batch "
                   "means averaged): --ga-pipeline option naive"),
          cl::init(false), cl::cat(gaRunCategory));
static cl::opt<bool>
    outline("outline",
            cl::desc("Compile each distinct linalg operation once, as a "
                     "kernel function (default true): --ga-pipeline option "
                     "outline"),
            cl::init(true), cl::cat(gaRunCategory));
static cl::opt<bool>
    parallel("parallel",
             cl::desc("Run the step's parallel tile loops on OpenMP threads "
                      "(default true): --ga-pipeline option parallel"),
             cl::init(true), cl::cat(gaRunCategory));
static cl::opt<int> threadCount(
    "num-threads", cl::init(0),
    cl::desc("Threads of the step (default: OMP_NUM_THREADS if set, else the "
             "cores divided among the MPI ranks); results are bitwise the "
             "same for any count"),
    cl::cat(gaRunCategory));
static cl::opt<bool>
    timePasses("time-stages",
               cl::desc("Print the time of every pass of the pipeline "
                        "(MLIR's pass timing report, on stderr)"),
               cl::init(false), cl::cat(gaRunCategory));
static cl::opt<int> optLevel("O", cl::desc("LLVM optimization level (0 to 3)"),
                             cl::init(2), cl::cat(gaRunCategory));
static cl::opt<bool> checkLabels(
    "check-labels",
    cl::desc("Check every cross-entropy label against [0, V) and "
             "ignore_index when the step runs (default true; "
             "--check-labels=false skips the check, and an invalid label is "
             "then clamped, not reported)"),
    cl::init(true), cl::cat(gaRunCategory));
static cl::opt<bool> failOnNonFinite(
    "fail-on-nonfinite",
    cl::desc("Exit with status 1, writing no result, when the loss or the "
             "gradient norm is NaN or infinite (default: a warning)"),
    cl::init(false), cl::cat(gaRunCategory));

static const char *kOverview =
    R"(ga-run: run a function of an MLIR file on the CPU

  ga-run FILE.mlir [--entry NAME] ARG0.npy ARG1.npy ... [--out-dir DIR]

FILE.mlir holds either high-level IR (a func.func, typically with a
train.step: it is compiled with --ga-pipeline=target=cpu, which
differentiates it) or IR already lowered by that pipeline (an llvm.func
carrying the train.signature attribute).

Inputs: one .npy file per function argument, in argument order. Each must
have exactly the argument's shape and element type: float32 (f32), float64
(f64), int32 (i32) or int64 (i64), little-endian, C order (what numpy.save
writes for such arrays). A 0-d tensor is a .npy of shape ().

Outputs: with --out-dir DIR, result i is written to DIR/result<i>.npy.

Data parallelism: a step with data_parallel = r compiles to a program for r
ranks (the function's train.data_parallel attribute). Run it with
`mpirun -np r ga-run FILE.mlir ...`: every rank reads the same .npy files
and takes its own rows of the batch; the ranks sum the counts, the loss and
the gradients with MPI; rank 0 prints and writes the results. Launched with
another number of ranks, or without mpirun, ga-run stops with an error.

Threads: the step's parallel loops (tiles of output rows and columns,
never a reduction) run on OpenMP threads: --num-threads N, else
OMP_NUM_THREADS, else all cores (divided among the ranks of a data-parallel
run). Each result element is computed by one thread in a fixed order, so
results are bitwise the same for any thread count.

Printed: the compile time (pipeline and JIT; compile_stages_ms splits the
JIT into translation to LLVM IR with LLVM's optimizer, and code generation;
--time-stages adds the time of every pass), the run time, the loss (the
step's loss result, or the first 0-d float result) and the global gradient
norm sqrt(sum of squares of all gradient results), in float64.

Errors (a wrong number of inputs, a wrong shape or dtype, a missing or
malformed .npy file) name the argument, the expected and the actual, and
exit with status 1.

Runtime errors: every cross-entropy label must be in [0, V) or equal to
ignore_index. The compiled step checks them (unless --check-labels=false);
an invalid label stops ga-run with status 1, a message naming the argument,
the position and the value, and no result written. A NaN or infinite loss
or gradient norm is reported as a warning (an error with
--fail-on-nonfinite).
)";

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

int fail(const Twine &message) {
  WithColor::error(errs(), "ga-run") << message << "\n";
  return 1;
}

/// The .npy dtype of a tensor element type, if ga-run exchanges it.
std::optional<ga::NpyDType> dtypeOf(Type element) {
  if (element.isF32())
    return ga::NpyDType::F32;
  if (element.isF64())
    return ga::NpyDType::F64;
  if (element.isInteger(32))
    return ga::NpyDType::I32;
  if (element.isInteger(64))
    return ga::NpyDType::I64;
  return std::nullopt;
}

/// "tensor<4x3xf32> (float32 (4, 3))" for an exchangeable tensor, the
/// type alone otherwise.
std::string describe(Type type) {
  std::string text;
  raw_string_ostream os(text);
  os << type;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return text;
  if (auto dtype = dtypeOf(tensor.getElementType()))
    os << " (" << ga::npyDTypeName(*dtype) << " "
       << ga::npyShapeString(tensor.getShape()) << ")";
  return text;
}

/// A memref descriptor laid out as the LLVM lowering passes it: allocated
/// pointer, aligned pointer, offset, sizes, strides; every field 8 bytes.
struct Descriptor {
  std::vector<int64_t> fields;
  static size_t numFields(unsigned rank) { return 3 + 2 * rank; }
};

} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::HideUnrelatedOptions(gaRunCategory);
  cl::ParseCommandLineOptions(argc, argv, kOverview);
  if (repeat < 1)
    return fail("--repeat must be at least 1, got " + Twine(repeat.getValue()));
  if (optLevel < 0 || optLevel > 3)
    return fail("-O must be 0, 1, 2 or 3, got " + Twine(optLevel.getValue()));
  if (threadCount < 0)
    return fail("--num-threads must be at least 1 (or 0: the default), got " +
                Twine(threadCount.getValue()));

  registerAllPasses();
  ga::registerGaPasses();
  DialectRegistry registry;
  ga::registerGaDialects(registry);
  ga::registerGaUpstreamDialects(registry);
  registerAllToLLVMIRTranslations(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  // Parse.
  std::string errorMessage;
  std::unique_ptr<MemoryBuffer> buffer =
      openInputFile(inputFile, &errorMessage);
  if (!buffer)
    return fail("cannot read '" + inputFile + "': " + errorMessage);
  SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), SMLoc());
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  // Find the entry function.
  SmallVector<Operation *> candidates;
  module->walk([&](Operation *op) {
    if (auto func = dyn_cast<func::FuncOp>(op); func && !func.isExternal())
      candidates.push_back(op);
    if (auto func = dyn_cast<LLVM::LLVMFuncOp>(op);
        func && !func.isExternal() &&
        func->hasAttr(
            ga::train::TrainDialect::SignatureAttrHelper::getNameStr()))
      candidates.push_back(op);
  });
  Operation *entry = nullptr;
  if (!entryName.empty()) {
    for (Operation *op : candidates)
      if (SymbolTable::getSymbolName(op) == entryName)
        entry = op;
    if (!entry)
      return fail("no function @" + entryName + " with a body in '" +
                  inputFile + "'");
  } else if (candidates.size() == 1) {
    entry = candidates.front();
  } else {
    std::string names;
    for (Operation *op : candidates)
      names += " @" + SymbolTable::getSymbolName(op).str();
    return fail(
        Twine(candidates.size() ? "several functions in '"
                                : "no function with a body in '") +
        inputFile + "'" +
        (candidates.size() ? "; choose one with --entry:" + names : ""));
  }
  std::string name = SymbolTable::getSymbolName(entry).str();

  // Compile.
  auto compileStart = Clock::now();
  double pipelineMs = 0;
  if (isa<func::FuncOp>(entry)) {
    PassManager pm(&context);
    std::string errors;
    raw_string_ostream os(errors);
    ga::GaPipelineOptions options;
    options.vectorize = vectorize;
    options.naive = naive;
    options.outline = outline;
    options.parallel = parallel;
    options.checkLabels = checkLabels;
    if (failed(ga::buildCPUPipeline(pm, os, options)))
      return fail("cannot build the CPU pipeline: " + errors);
    if (timePasses)
      pm.enableTiming();
    if (failed(pm.run(*module)))
      return fail("compiling '" + inputFile + "' failed (see above)");
    pipelineMs = msSince(compileStart);
  }
  auto llvmFunc = module->lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (!llvmFunc)
    return fail("@" + name + " was not lowered to an llvm.func");
  auto signatureAttr = llvmFunc->getAttrOfType<TypeAttr>(
      ga::train::TrainDialect::SignatureAttrHelper::getNameStr());
  if (!signatureAttr)
    return fail("@" + name +
                " has no train.signature attribute: lower it with "
                "ga-opt --ga-pipeline=target=cpu, or pass the high-level IR");
  auto signature = cast<FunctionType>(signatureAttr.getValue());

  // Data parallelism: join the MPI run, whose size must be the program's.
  int64_t ranks = 1;
  if (auto attr = llvmFunc->getAttrOfType<IntegerAttr>(
          ga::train::TrainDialect::DataParallelAttrHelper::getNameStr()))
    ranks = attr.getInt();
  struct LeaveRun {
    ~LeaveRun() { ga_run::stopCollectives(); }
  } leaveRun;
  if (Error err = ga_run::startCollectives(ranks, name)) {
    // Every rank finds the same mismatch; one of them reports it.
    if (ga_run::worldRank() != 0) {
      llvm::consumeError(std::move(err));
      return 1;
    }
    return fail(llvm::toString(std::move(err)));
  }
  bool reporter = ga_run::worldRank() == 0;

  // Check the inputs before compiling further.
  for (auto [i, type] : llvm::enumerate(signature.getInputs())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape() ||
        !dtypeOf(tensor.getElementType()))
      return fail("argument #" + Twine(i) + " of @" + name + " has type " +
                  describe(type) +
                  "; ga-run passes statically shaped f32/f64/i32/i64 tensors");
  }
  for (auto [i, type] : llvm::enumerate(signature.getResults())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape() ||
        !dtypeOf(tensor.getElementType()))
      return fail("result #" + Twine(i) + " of @" + name + " has type " +
                  describe(type) +
                  "; ga-run returns statically shaped f32/f64/i32/i64 tensors");
  }
  if (inputArrays.size() != signature.getNumInputs())
    return fail("@" + name + " takes " + Twine(signature.getNumInputs()) +
                " argument(s), got " + Twine(inputArrays.size()) +
                " .npy file(s)");
  std::vector<ga::NpyArray> arrays;
  for (auto [i, path] : llvm::enumerate(inputArrays)) {
    auto expected = cast<RankedTensorType>(signature.getInput(i));
    Expected<ga::NpyArray> array = ga::readNpy(path);
    if (!array)
      return fail("argument #" + Twine(i) + ": " +
                  llvm::toString(array.takeError()));
    ga::NpyDType want = *dtypeOf(expected.getElementType());
    if (array->dtype != want ||
        ArrayRef<int64_t>(array->shape) != expected.getShape())
      return fail("argument #" + Twine(i) + " ('" + path + "'): expected " +
                  describe(expected) + ", got " +
                  ga::npyDTypeName(array->dtype) + " " + array->shapeString());
    arrays.push_back(std::move(*array));
  }

#ifdef __GLIBC__
  // The step allocates and frees the same large buffers at every call.
  // glibc would map each one afresh and return it to the kernel when freed,
  // and every call would then fault in and clear its pages again (about a
  // fifth of the medium benchmark step): keep freed memory for reuse.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif

  // Threads: the OpenMP runtime reads OMP_NUM_THREADS when the step first
  // forks, after this. Without a choice, the ranks of a data-parallel run
  // share the cores instead of each taking all of them.
  if (threadCount > 0)
    setenv("OMP_NUM_THREADS", std::to_string(threadCount).c_str(), 1);
  else if (!getenv("OMP_NUM_THREADS") && ranks > 1)
    setenv("OMP_NUM_THREADS",
           std::to_string(std::max<unsigned>(
                              1, std::thread::hardware_concurrency() / ranks))
               .c_str(),
           1);

  // JIT.
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto jitStart = Clock::now();
  ExecutionEngineOptions engineOptions;
  auto transformer = makeOptimizingTransformer(optLevel, 0, nullptr);
  engineOptions.transformer = transformer;
  // memrefCopy and friends, which bufferized code calls; the OpenMP runtime
  // that the parallel loops call.
  llvm::StringRef runtimeLibs[] = {GA_MLIR_C_RUNNER_UTILS, GA_OPENMP_RUNTIME};
  engineOptions.sharedLibPaths = runtimeLibs;
  auto engine = ExecutionEngine::create(*module, engineOptions);
  if (!engine)
    return fail("JIT compilation failed: " +
                llvm::toString(engine.takeError()));
  double optimizeMs = msSince(jitStart);
  // ga_rank and ga_all_reduce_*, which lowered collectives call.
  (*engine)->registerSymbols(ga_run::runtimeSymbols);
  // Materialize the code now, so that the first run is not charged for it.
  if (auto fn = (*engine)->lookupPacked(name); !fn)
    return fail("JIT compilation failed: " + llvm::toString(fn.takeError()));
  double jitMs = msSince(jitStart);
  double codegenMs = jitMs - optimizeMs;
  double compileMs = msSince(compileStart);

  // Arguments: memref descriptors, one pointer per field.
  std::vector<Descriptor> argDescs(arrays.size());
  SmallVector<void *> packed;
  for (auto [array, desc] : llvm::zip(arrays, argDescs)) {
    unsigned rank = array.shape.size();
    desc.fields.assign(Descriptor::numFields(rank), 0);
    desc.fields[0] = reinterpret_cast<int64_t>(array.data.data());
    desc.fields[1] = desc.fields[0];
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      desc.fields[3 + d] = array.shape[d];
      desc.fields[3 + rank + d] = stride;
      stride *= array.shape[d];
    }
  }
  for (Descriptor &desc : argDescs)
    for (int64_t &field : desc.fields)
      packed.push_back(&field);
  size_t resultFields = 0;
  for (Type type : signature.getResults())
    resultFields +=
        Descriptor::numFields(cast<RankedTensorType>(type).getRank());
  // A single result is returned as a descriptor; several as a struct of
  // descriptors. Both have the same flat layout of 8-byte fields, which the
  // packed wrapper stores through its last argument.
  std::vector<int64_t> results(resultFields, 0);
  if (resultFields)
    packed.push_back(results.data());

  auto freeResults = [&]() {
    SmallVector<int64_t> freed;
    size_t offset = 0;
    for (Type type : signature.getResults()) {
      int64_t allocated = results[offset];
      offset += Descriptor::numFields(cast<RankedTensorType>(type).getRank());
      bool isInput = llvm::any_of(argDescs, [&](const Descriptor &d) {
        return d.fields[0] == allocated;
      });
      // 0xdeadbeef marks a descriptor of a global constant.
      if (!allocated || allocated == 0xdeadbeef || isInput ||
          llvm::is_contained(freed, allocated))
        continue;
      freed.push_back(allocated);
      std::free(reinterpret_cast<void *>(allocated));
    }
  };

  double totalMs = 0, minMs = 0;
  for (int r = 0; r < repeat; ++r) {
    if (r)
      freeResults();
    auto runStart = Clock::now();
    if (Error err = (*engine)->invokePacked(name, packed))
      return fail("running @" + name +
                  " failed: " + llvm::toString(std::move(err)));
    // A step that reported a runtime error has no valid result.
    ga_error error;
    if (ga_take_error(&error) != GA_OK) {
      freeResults();
      if (!reporter)
        return 1;
      std::string where;
      if (error.argument >= 0 && error.argument < (int64_t)arrays.size()) {
        const ga::NpyArray &array = arrays[error.argument];
        int64_t rest = error.position;
        SmallVector<int64_t> index(array.shape.size());
        for (int d = (int)array.shape.size() - 1; d >= 0; --d) {
          index[d] = array.shape[d] ? rest % array.shape[d] : 0;
          rest = array.shape[d] ? rest / array.shape[d] : 0;
        }
        where = "[";
        for (auto [k, i] : llvm::enumerate(index))
          where += (k ? ", " : "") + std::to_string(i);
        where += "]";
      }
      std::string message = ga::describeError(error, where);
      if (error.argument >= 0 && error.argument < (int64_t)inputArrays.size())
        message += " ('" + inputArrays[error.argument] + "')";
      return fail("@" + name + ": " + message + "; no result written");
    }
    double ms = msSince(runStart);
    totalMs += ms;
    minMs = r ? std::min(minMs, ms) : ms;
  }
  unsigned runs = repeat;

  // Read the results back (strided copy into C order).
  std::vector<ga::NpyArray> outputs;
  size_t offset = 0;
  for (Type type : signature.getResults()) {
    auto tensor = cast<RankedTensorType>(type);
    unsigned rank = tensor.getRank();
    ga::NpyArray out;
    out.dtype = *dtypeOf(tensor.getElementType());
    out.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    size_t elemSize = ga::npyDTypeSize(out.dtype);
    out.data.resize(out.numElements() * elemSize);
    const char *base = reinterpret_cast<const char *>(results[offset + 1]);
    int64_t baseOffset = results[offset + 2];
    ArrayRef<int64_t> strides(&results[offset + 3 + rank], rank);
    SmallVector<int64_t> index(rank, 0);
    for (int64_t e = 0, n = out.numElements(); e < n; ++e) {
      int64_t linear = baseOffset;
      for (unsigned d = 0; d < rank; ++d)
        linear += index[d] * strides[d];
      std::memcpy(out.data.data() + e * elemSize, base + linear * elemSize,
                  elemSize);
      for (int d = rank - 1; d >= 0; --d) {
        if (++index[d] < tensor.getDimSize(d))
          break;
        index[d] = 0;
      }
    }
    outputs.push_back(std::move(out));
    offset += Descriptor::numFields(rank);
  }
  freeResults();

  auto asDouble = [](const ga::NpyArray &a, int64_t i) -> double {
    switch (a.dtype) {
    case ga::NpyDType::F32:
      return reinterpret_cast<const float *>(a.data.data())[i];
    case ga::NpyDType::F64:
      return reinterpret_cast<const double *>(a.data.data())[i];
    case ga::NpyDType::I32:
      return reinterpret_cast<const int32_t *>(a.data.data())[i];
    case ga::NpyDType::I64:
      return static_cast<double>(
          reinterpret_cast<const int64_t *>(a.data.data())[i]);
    }
    return 0;
  };

  // Every rank holds the same results; rank 0 reports and writes them.
  if (!reporter)
    return 0;
  outs() << "ga-run: @" << name << " from " << inputFile << "\n";
  if (ranks > 1)
    outs() << "ranks: " << ranks << " (data-parallel, MPI)\n";
  outs() << format("compile_ms: %.1f (pipeline %.1f, jit %.1f)\n", compileMs,
                   pipelineMs, jitMs);
  outs() << format("compile_stages_ms: pipeline %.1f, llvm-ir+optimize %.1f, "
                   "codegen %.1f\n",
                   pipelineMs, optimizeMs, codegenMs);
  outs() << format("run_ms: %.3f (mean of %u, min %.3f)\n", totalMs / runs,
                   runs, minMs);
  std::optional<int64_t> lossIndex;
  if (auto attr = llvmFunc->getAttrOfType<IntegerAttr>(
          ga::train::TrainDialect::LossResultAttrHelper::getNameStr()))
    lossIndex = attr.getInt();
  else
    for (auto [i, out] : llvm::enumerate(outputs))
      if (out.shape.empty() &&
          (out.dtype == ga::NpyDType::F32 || out.dtype == ga::NpyDType::F64)) {
        lossIndex = i;
        break;
      }
  // NaN or infinite values name themselves; --fail-on-nonfinite makes them
  // an error before any result is written.
  SmallVector<std::string> nonFinite;
  if (lossIndex) {
    double loss = asDouble(outputs[*lossIndex], 0);
    outs() << format("loss: %.9g\n", loss);
    if (!std::isfinite(loss))
      nonFinite.push_back(
          llvm::formatv("the loss (result #{0}) is {1}", *lossIndex, loss)
              .str());
  }
  if (auto grads = llvmFunc->getAttrOfType<DenseI64ArrayAttr>(
          ga::train::TrainDialect::GradientResultsAttrHelper::getNameStr())) {
    double sum = 0;
    for (int64_t i : grads.asArrayRef())
      for (int64_t e = 0, n = outputs[i].numElements(); e < n; ++e) {
        double v = asDouble(outputs[i], e);
        sum += v * v;
      }
    double norm = std::sqrt(sum);
    outs() << format("grad_norm: %.9g\n", norm);
    if (!std::isfinite(norm))
      nonFinite.push_back(
          llvm::formatv("the gradient norm is {0}", norm).str() +
          " (a NaN or infinite input, or an overflow, reaches the gradients)");
  }
  outs().flush();
  for (const std::string &what : nonFinite) {
    if (failOnNonFinite)
      return fail("@" + name + ": " + what + "; no result written");
    WithColor::warning(errs(), "ga-run") << "@" << name << ": " << what << "\n";
  }

  if (!outDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(outDir))
      return fail("cannot create '" + outDir + "': " + ec.message());
    for (auto [i, out] : llvm::enumerate(outputs)) {
      SmallString<128> path(outDir);
      llvm::sys::path::append(path, "result" + std::to_string(i) + ".npy");
      if (Error err = ga::writeNpy(path, out))
        return fail(llvm::toString(std::move(err)));
    }
    outs() << "wrote " << outputs.size() << " result(s) to " << outDir << "\n";
  }
  return 0;
}
