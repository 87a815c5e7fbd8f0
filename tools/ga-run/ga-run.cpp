//===- ga-run.cpp - Run a training step on the CPU ------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Compiles a function of an MLIR file with --ga-pipeline=target=cpu (or
// takes IR that is already lowered), JIT-compiles it with MLIR's
// ExecutionEngine, runs it on .npy inputs and writes its results as .npy.
//
//===----------------------------------------------------------------------===//

#include "../common/CudaRuntime.h"
#include "../common/Peaks.h"
#include "../common/Tool.h"

#include "ga/Analysis/BufferMemory.h"
#include "ga/InitAll.h"
#include "ga/Pipelines/PipelineFlags.h"
#include "ga/Pipelines/Pipelines.h"
#include "ga/Runtime/Npy.h"
#include "ga/Runtime/Runner.h"
#include "ga/Runtime/Signature.h"
#include "ga/Runtime/ga_step.h"
#include "ga/StepDriver.h"
#include "ga/Transforms/StepSignature.h"
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

#include "llvm/IR/Module.h"
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
#include <dlfcn.h>
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
static cl::opt<ga::Target>
    target("target",
           cl::desc("cpu (default) or cuda: compile high-level IR with "
                    "--ga-pipeline target=cuda and run it on the CUDA device "
                    "through libga_cuda_runtime (inputs copied to the "
                    "device, results back)"),
           cl::init(ga::Target::CPU), cl::value_desc("cpu|cuda"),
           cl::cat(gaRunCategory));
// The pipeline's options: --pipeline-options, and the common ones as
// flags declared from GaPipelineOptions itself.
static ga::PipelineFlags pipelineFlags(
    gaRunCategory,
    {"naive", "check-labels", "vectorize", "outline", "parallel",
     "release-buffers", "loss-chunk-rows", "memory-budget", "microbatches",
     "choose-microbatches", "chip", "attention", "attention-key-tile",
     "precision", "data-parallel", "shard"});
static cl::opt<bool> reportMemory(
    "report-memory",
    cl::desc("Print the allocation count of one run, and the memory "
             "model's prediction of budget_peak_bytes and of the count "
             "(model_peak_bytes)"),
    cl::init(false), cl::cat(gaRunCategory));
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

CUDA: --target=cuda [--chip sm_90] compiles with --ga-pipeline target=cuda
(kernels for the chip, GEMMs through cuBLAS) and runs the step on the CUDA
device through libga_cuda_runtime: the inputs are copied to the device
before each run and the results back after it (both in run_ms),
step_peak_bytes is device memory, and budget_peak_bytes the device's
high-water mark (what memory-budget bounds there: the step's buffers, the
inputs' copies, the cached blocks, cuBLAS's workspace). Without a CUDA driver or device, ga-run
stops with "no CUDA device". The step must have been given as high-level
IR.

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
--time-stages adds the time of every pass), the run time, the peak bytes
of the buffers the step allocates (step_peak_bytes: intermediates and
results, not the inputs; the highest over the runs), what memory-budget
bounds (budget_peak_bytes: those buffers plus the arguments; the same
names in ga-exec and ga-train; --report-memory adds the allocation count
and the memory model's prediction), the loss (the
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

using ga::tool::Clock;
using ga::tool::CudaRuntime;
using ga::tool::fail;
using ga::tool::loadCudaRuntime;
using ga::tool::msSince;

/// The command line's values outside their ranges, or an empty string.
std::string checkOptions() {
  if (repeat < 1)
    return ("--repeat must be at least 1, got " + Twine(repeat.getValue()))
        .str();
  if (optLevel < 0 || optLevel > 3)
    return ("-O must be 0, 1, 2 or 3, got " + Twine(optLevel.getValue())).str();
  if (threadCount < 0)
    return ("--num-threads must be at least 1 (or 0: the default), got " +
            Twine(threadCount.getValue()))
        .str();
  return "";
}

/// What the pipeline stage leaves besides the lowered module.
struct PipelineResult {
  double ms = 0;
  /// The memory model's prediction (with --report-memory on the CPU).
  std::optional<ga::BufferMemoryProfile> model;
  /// Why there is no prediction.
  std::string modelError;
};

/// Runs ga-pipeline on high-level IR (nothing on IR that is lowered
/// already); on the CPU in two stages, so that the memory model reads the
/// buffers in between. An empty string on success.
std::string runPipeline(MLIRContext &context, ga::StepModule &step, bool cuda,
                        PipelineResult &result) {
  auto start = Clock::now();
  ModuleOp module = *step.module;
  if (!isa<func::FuncOp>(step.entry)) {
    if (cuda)
      return "--target=cuda compiles high-level IR (a func.func); @" +
             step.name + " is already lowered";
    return "";
  }
  // The pipeline's options from the command line (the target is
  // --target's).
  ga::GaPipelineOptions options;
  std::string errors;
  raw_string_ostream os(errors);
  options.target = target.getValue();
  if (failed(pipelineFlags.get(options, os)))
    return errors;
  if (options.target.getValue() != target.getValue())
    return ("--pipeline-options sets target=" +
            ga::choiceName(options.target.getValue()) + "; use --target")
        .str();
  std::string compileFailed =
      "compiling '" + inputFile + "' failed (see above)";
  if (cuda) {
    PassManager pm(&context);
    if (failed(ga::buildGaPipeline(pm, os, options)))
      return "cannot build the CUDA pipeline: " + errors;
    if (timePasses)
      pm.enableTiming();
    if (failed(pm.run(module)))
      return compileFailed;
    result.ms = msSince(start);
    result.modelError = "the memory model is the CPU pipeline's";
    return "";
  }
  PassManager buffers(&context), lowering(&context);
  options.buffersOnly = true;
  if (failed(ga::buildGaPipeline(buffers, os, options)))
    return "cannot build the CPU pipeline: " + errors;
  ga::addCPULoweringFromBuffers(lowering, options);
  if (timePasses) {
    buffers.enableTiming();
    lowering.enableTiming();
  }
  if (failed(buffers.run(module)))
    return compileFailed;
  if (reportMemory) {
    auto function = module.lookupSymbol<func::FuncOp>(step.name);
    // The model's refusal is a note, not a failure of the run.
    ScopedDiagnosticHandler keep(&context, [&](Diagnostic &diagnostic) {
      result.modelError = diagnostic.str();
      return success();
    });
    if (function)
      if (FailureOr<ga::BufferMemoryProfile> profile =
              ga::simulateBufferMemory(function);
          succeeded(profile))
        result.model = *profile;
  }
  if (failed(lowering.run(module)))
    return compileFailed;
  result.ms = msSince(start);
  return "";
}

/// The JIT stage's times.
struct JitTimes {
  double optimizeMs = 0, codegenMs = 0, totalMs = 0;
};

/// JIT-compiles the lowered module against libga_runtime (collectives, the
/// error path, memrefCopy: the one that step libraries link, and that ga-run
/// itself links, so the JIT-compiled code shares its state), the OpenMP
/// runtime of the parallel loops and, for a CUDA step, libga_cuda_runtime;
/// materializes the code so that the first run is not charged for it.
Expected<std::unique_ptr<ExecutionEngine>> jitCompile(ModuleOp module,
                                                      const std::string &name,
                                                      bool cuda,
                                                      JitTimes &times) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto start = Clock::now();
  ExecutionEngineOptions engineOptions;
  // After optimization, the functions other than the kernels and their
  // OpenMP bodies (the step: one straight line of allocations, descriptors
  // and kernel calls that grows with the model) are marked optnone, so that
  // the code generator takes its -O0 path (FastISel, no machine scheduling)
  // for them alone, as ga-compile does. At 24 layers this takes code
  // generation from 2.8 to 2.1 s; the step is no slower and its results
  // are bitwise the same.
  auto optimize = makeOptimizingTransformer(optLevel, 0, nullptr);
  auto transformer = [&optimize](llvm::Module *module) -> llvm::Error {
    // The launches' argument arrays, made in the micro-batch loop,
    // allocated once (see ga::hoistBlockLocalAllocas).
    ga::hoistBlockLocalAllocas(*module);
    if (llvm::Error error = optimize(module))
      return error;
    for (llvm::Function &function : *module)
      if (!function.isDeclaration() &&
          !function.getName().starts_with("ga_kernel_")) {
        function.removeFnAttr(llvm::Attribute::AlwaysInline);
        function.addFnAttr(llvm::Attribute::NoInline);
        function.addFnAttr(llvm::Attribute::OptimizeNone);
      }
    return llvm::Error::success();
  };
  // A function_ref: `transformer` outlives ExecutionEngine::create.
  engineOptions.transformer = transformer;
  SmallVector<llvm::StringRef> runtimeLibs =
      ga::tool::jitRuntimeLibraries(cuda);
  engineOptions.sharedLibPaths = runtimeLibs;
  auto engine = ExecutionEngine::create(module, engineOptions);
  if (!engine)
    return engine.takeError();
  times.optimizeMs = msSince(start);
  if (auto fn = (*engine)->lookupPacked(name); !fn)
    return fn.takeError();
  times.totalMs = msSince(start);
  times.codegenMs = times.totalMs - times.optimizeMs;
  return std::move(*engine);
}

/// The step's arguments, results and runtime entry points, for the runs.
struct StepRuns {
  const std::string &name;
  const ga::StepSignature &signature;
  const std::string &signatureText;
  const std::vector<ga::NpyArray> &arrays;
  /// Null for a CPU step.
  const CudaRuntime *cuda;
  bool reporter;
  double totalMs = 0, minMs = 0;
};

/// Runs the step --repeat times through the runtime's step entry and exit
/// (a CPU run times the step alone; a CUDA run its copies in and out too).
/// Returns an exit status when a run fails, nothing when all succeed.
std::optional<int> runSteps(ExecutionEngine &engine, StepRuns &runs,
                            ga::PackedStepCall &call,
                            std::vector<const void *> &inputPointers,
                            std::vector<void *> &outputPointers) {
  const char *signature = runs.signatureText.c_str();
  std::vector<void *> deviceInputs(runs.arrays.size(), nullptr);
  ga_status status;
  for (int r = 0; r < repeat; ++r) {
    if (!runs.cuda && ga_step_enter(signature, inputPointers.data(),
                                    outputPointers.data(), &status) != GA_OK)
      return fail(status.message);
    auto runStart = Clock::now();
    if (runs.cuda) {
      // The descriptors point at the device copies of the inputs.
      if (runs.cuda->enter(signature, inputPointers.data(),
                           outputPointers.data(), &status,
                           deviceInputs.data()) != GA_OK)
        return fail(status.message);
      for (auto [i, pointer] : llvm::enumerate(deviceInputs))
        call.rebase(i, pointer);
    }
    if (Error err = engine.invokePacked(runs.name, call.arguments()))
      return fail("running @" + runs.name +
                  " failed: " + llvm::toString(std::move(err)));
    double ms = msSince(runStart);
    // A step that reported a runtime error has no valid result.
    int32_t left =
        runs.cuda
            ? runs.cuda->leave(signature, call.results(), deviceInputs.data(),
                               outputPointers.data(), &status)
            : ga_step_leave(signature, call.results(), inputPointers.data(),
                            outputPointers.data(), &status);
    // A CUDA run waits for the device when it copies the results back.
    if (runs.cuda)
      ms = msSince(runStart);
    if (left != GA_OK) {
      if (!runs.reporter)
        return 1;
      return fail(ga::stepFailure(runs.signature, status,
                                  std::vector<std::string>(inputArrays)));
    }
    runs.totalMs += ms;
    runs.minMs = r ? std::min(runs.minMs, ms) : ms;
  }
  return std::nullopt;
}

/// Prints the memory lines of --report-memory: the allocations per run and
/// the model's prediction (`argumentBytes`: the arguments' bytes).
void reportMemoryLines(const ga_memory &memory, int64_t argumentBytes,
                       const PipelineResult &pipeline) {
  outs() << "allocations: " << memory.allocations / repeat << " per run\n";
  if (pipeline.model)
    outs() << "model_peak_bytes: " << pipeline.model->peakBytes + argumentBytes
           << " (step buffers " << pipeline.model->peakBytes << " + arguments "
           << argumentBytes
           << "), model_allocations: " << pipeline.model->allocations << "\n";
  else
    outs() << "model_peak_bytes: unavailable ("
           << (pipeline.modelError.empty() ? "the step was compiled already"
                                           : pipeline.modelError)
           << ")\n";
}

/// What rank 0 prints after the runs, and the results it writes.
int report(const std::string &name, const ga::StepSignature &signature,
           const StepRuns &runs, const PipelineResult &pipeline,
           const JitTimes &jit, double compileMs,
           const CudaRuntime *cudaRuntime,
           const std::vector<ga::NpyArray> &outputs) {
  outs() << "ga-run: @" << name << " from " << inputFile << "\n";
  if (signature.ranks > 1)
    outs() << "ranks: " << signature.ranks << " (data-parallel, MPI)\n";
  outs() << format("compile_ms: %.1f (pipeline %.1f, jit %.1f)\n", compileMs,
                   pipeline.ms, jit.totalMs);
  outs() << format("compile_stages_ms: pipeline %.1f, llvm-ir+optimize %.1f, "
                   "codegen %.1f\n",
                   pipeline.ms, jit.optimizeMs, jit.codegenMs);
  outs() << format("run_ms: %.3f (mean of %d, min %.3f)\n",
                   runs.totalMs / repeat, repeat.getValue(), runs.minMs);
  ga_memory memory;
  int64_t argumentBytes = ga::tool::argumentBytes(runs.arrays);
  if (cudaRuntime) {
    cudaRuntime->stats(&memory);
    outs() << "device: " << cudaRuntime->name(nullptr) << " (CUDA)\n";
    outs() << ga::tool::peakLines(memory, argumentBytes, /*onDevice=*/true,
                                  cudaRuntime->device());
  } else {
    ga_memory_stats(&memory);
    outs() << ga::tool::peakLines(memory, argumentBytes, /*onDevice=*/false);
  }
  if (reportMemory)
    reportMemoryLines(memory, argumentBytes, pipeline);
  ga::StepSummary summary = ga::summarize(signature, outputs);
  outs() << summary.text;
  outs().flush();
  for (const std::string &what : summary.nonFinite) {
    if (failOnNonFinite)
      return fail("@" + name + ": " + what + "; no result written");
    WithColor::warning(errs(), "ga-run") << "@" << name << ": " << what << "\n";
  }

  if (!outDir.empty()) {
    std::string error;
    if (!ga::writeResults(outDir, outputs, error))
      return fail(error);
    outs() << "wrote " << outputs.size() << " result(s) to " << outDir << "\n";
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  ga::tool::name() = "ga-run";
  cl::HideUnrelatedOptions(gaRunCategory);
  cl::ParseCommandLineOptions(argc, argv, kOverview);
  if (std::string error = checkOptions(); !error.empty())
    return fail(error);
  bool cuda = target == ga::Target::CUDA;

  // Load, then compile with the pipeline.
  std::unique_ptr<MLIRContext> contextOwner = ga::makeStepContext();
  MLIRContext &context = *contextOwner;
  std::string loadError;
  std::unique_ptr<ga::StepModule> step =
      ga::loadStepModule(context, inputFile, entryName, loadError);
  if (!step)
    return loadError.empty() ? 1 : fail(loadError);
  std::string name = step->name;
  auto compileStart = Clock::now();
  PipelineResult pipeline;
  if (std::string error = runPipeline(context, *step, cuda, pipeline);
      !error.empty())
    return fail(error);
  ModuleOp module = *step->module;
  auto llvmFunc = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (!llvmFunc)
    return fail("@" + name + " was not lowered to an llvm.func");
  ga::StepSignature signature;
  if (std::string error = ga::buildStepSignature(llvmFunc, signature, "ga-run");
      !error.empty())
    return fail(error);
  // The signature as a step library records it: the runtime's entry and
  // exit of a step (ga_step_enter, ga_step_leave) read it.
  std::string signatureText = signature.format();

  // Data parallelism: join the MPI run, whose size must be the program's.
  int64_t ranks = signature.ranks;
  struct LeaveRun {
    ~LeaveRun() { ga_collectives_stop(); }
  } leaveRun;
  ga_status status;
  if (ga_collectives_start(ranks, name.c_str(), "ga-run", &status) != GA_OK) {
    // Every rank finds the same mismatch; one of them reports it.
    if (ga_world_rank() != 0)
      return 1;
    return fail(status.message);
  }
  bool reporter = ga_world_rank() == 0;

  // Check the inputs before compiling further.
  std::vector<ga::NpyArray> arrays;
  if (std::string error = ga::readArguments(
          signature, std::vector<std::string>(inputArrays), arrays);
      !error.empty())
    return fail(error);

  // Threads: without a choice, the ranks of a data-parallel run share the
  // cores instead of each taking all of them.
  ga::prepareProcess(threadCount, ranks);

  // JIT.
  CudaRuntime cudaRuntime;
  if (cuda)
    if (std::string error = loadCudaRuntime(name, cudaRuntime); !error.empty())
      return fail(error);
  JitTimes jit;
  auto engine = jitCompile(module, name, cuda, jit);
  if (!engine)
    return fail("JIT compilation failed: " +
                llvm::toString(engine.takeError()));
  double compileMs = msSince(compileStart);

  // Run: memref descriptors over the inputs; the results in C order, where
  // ga_step_leave copies the step's buffers (and frees them), as a step
  // library's ga_step_run does.
  std::vector<const void *> inputPointers;
  for (const ga::NpyArray &array : arrays)
    inputPointers.push_back(array.data.data());
  ga::PackedStepCall call(signature, inputPointers);
  std::vector<void *> outputPointers;
  std::vector<ga::NpyArray> outputs =
      ga::makeResultBuffers(signature, outputPointers);
  StepRuns runs{
      name,    signature, signatureText, arrays, cuda ? &cudaRuntime : nullptr,
      reporter};
  if (std::optional<int> exitStatus =
          runSteps(**engine, runs, call, inputPointers, outputPointers))
    return *exitStatus;

  // Every rank holds the same results; rank 0 reports and writes them.
  if (!reporter)
    return 0;
  return report(name, signature, runs, pipeline, jit, compileMs,
                cuda ? &cudaRuntime : nullptr, outputs);
}
