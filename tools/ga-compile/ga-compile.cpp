//===- ga-compile.cpp - Compile a training step into a shared library ----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Runs --ga-pipeline=target=cpu on a function of an MLIR file (or takes IR
// that is already lowered), exports it through the C ABI of a step library
// (ga-export-step, ga/Runtime/ga_step.h), translates it to LLVM IR, emits an
// object file with LLVM's TargetMachine and links a shared library with the
// system's C compiler driver. Writes a C header beside it.
//
//===----------------------------------------------------------------------===//

#include "ga/InitAll.h"
#include "ga/Pipelines/PipelineFlags.h"
#include "ga/Pipelines/Pipelines.h"
#include "ga/Runtime/Signature.h"
#include "ga/StepDriver.h"
#include "ga/Transforms/Passes.h"
#include "ga/Transforms/StepSignature.h"

#include "ParallelCodegen.h"

#include "../common/MemoryPlan.h"
#include "../common/Tool.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <chrono>
#include <thread>

using namespace mlir;
namespace cl = llvm::cl;
using llvm::errs;
using llvm::outs;
using llvm::SmallString;
using llvm::StringRef;
using llvm::Twine;

static cl::OptionCategory category("ga-compile options");

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<file.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string>
    outputFile("o", cl::Required,
               cl::desc("The shared library to write (libstep.so)"),
               cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string>
    entryName("entry",
              cl::desc("The function to compile (default: the only function "
                       "with a body)"),
              cl::value_desc("name"), cl::cat(category));
static cl::opt<ga::Target> target(
    "target",
    cl::desc("Code generation target: cpu, or cuda (kernels for the chip of "
             "--pipeline-options, sm_90 by default; the library needs a "
             "CUDA driver and device to run)"),
    cl::init(ga::Target::CPU), cl::value_desc("cpu|cuda"), cl::cat(category));
static cl::opt<std::string> dumpPtx(
    "dump-ptx",
    cl::desc("--target=cuda: also write the PTX of every GPU module of the "
             "step to DIR/<module>.ptx"),
    cl::value_desc("DIR"), cl::cat(category));
static cl::opt<std::string> cpu(
    "cpu",
    cl::desc("The CPU to compile for: native (default: this machine's CPU and "
             "features), or an LLVM CPU name; x86-64 is a portable baseline "
             "that runs on any x86-64 machine"),
    cl::init("native"), cl::value_desc("name"), cl::cat(category));
// The pipeline's options: --pipeline-options, and the common ones as flags
// declared from GaPipelineOptions itself, as ga-run and ga-train take them
// (target is --target).
static ga::PipelineFlags pipelineFlags(
    category,
    {"naive", "check-labels", "vectorize", "outline", "parallel",
     "loss-chunk-rows", "memory-budget", "microbatches", "choose-microbatches",
     "chip", "attention", "attention-key-tile", "report-attention", "precision",
     "data-parallel", "shard", "kernel-report", "device"});
static cl::opt<std::string>
    headerFile("header",
               cl::desc("The C header to write (default: the library's path "
                        "with .h instead of .so)"),
               cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string>
    linker("linker",
           cl::desc("The C compiler driver that links the library (default: "
                    "the first of cc, gcc, clang on PATH)"),
           cl::value_desc("program"), cl::cat(category));
static cl::opt<unsigned>
    jobs("jobs",
         cl::desc("Threads for LLVM's optimizer and code generation (default: "
                  "the cores); the step's functions are spread over them"),
         cl::init(0), cl::value_desc("N"), cl::cat(category));
static cl::opt<int> optLevel("O", cl::desc("LLVM optimization level (0 to 3)"),
                             cl::init(2), cl::cat(category));
static cl::opt<bool>
    timePasses("time-stages",
               cl::desc("Print the time of every pass of the pipeline "
                        "(MLIR's pass timing report, on stderr)"),
               cl::init(false), cl::cat(category));

static const char *kOverview =
    R"(ga-compile: compile a training step ahead of time into a shared library

  ga-compile FILE.mlir -o libstep.so [--entry NAME] [--cpu native|x86-64]
             [--pipeline-options "..."]

FILE.mlir holds high-level IR (a func.func, typically with a train.step,
compiled with --ga-pipeline=target=cpu) or IR that pipeline already lowered.
The library exports the step through the C ABI of ga_step.h:
ga_step_signature() (what it takes and returns) and ga_step_run(inputs,
outputs, status) (plain pointers to C-order buffers). It links
libga_runtime.so (found beside the library, then where this ga-compile's
runtime is) and, for parallel loops, the OpenMP runtime libomp.so.5. It
needs no MLIR or LLVM: run it with ga-exec, from Python (python/ga_step), or
from any C program.

A C header is written beside the library (--header): the ABI and the
step's signature.

Printed: the time of each stage (pipeline, translation to LLVM IR, LLVM's
optimizer and code generation, on --jobs threads, link) and the library's
size.
)";

namespace {

using ga::tool::Clock;
using ga::tool::fail;
using ga::tool::msSince;

/// The text of ga/Runtime/ga_step.h (GA_STEP_H_TEXT), embedded at build
/// time.
#include "StepHeader.inc"

/// A C identifier made of `name`, upper case.
std::string macroName(StringRef name) {
  std::string text;
  for (char c : name)
    text += std::isalnum(static_cast<unsigned char>(c))
                ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                : '_';
  return text;
}

std::string headerText(const ga::StepSignature &sig, StringRef source) {
  std::string m = "GA_STEP_" + macroName(sig.entry);
  std::string text = GA_STEP_H_TEXT;
  text += "\n/* Step @" + sig.entry + ", compiled by ga-compile from " +
          source.str() + ". Generated: do not edit. */\n";
  text += "#ifndef " + m + "_H\n#define " + m + "_H\n\n";
  text += "/* Its signature, as ga_step_signature() returns it:\n";
  std::string signature = sig.format();
  for (StringRef line : llvm::split(StringRef(signature).rtrim('\n'), '\n'))
    text += " *   " + line.str() + "\n";
  text += " */\n";
  text += "#define " + m + "_NUM_INPUTS " + std::to_string(sig.inputs.size()) +
          "\n";
  text += "#define " + m + "_NUM_RESULTS " +
          std::to_string(sig.results.size()) + "\n";
  text += "#define " + m + "_RANKS " + std::to_string(sig.ranks) + "\n";
  if (auto loss = sig.lossIndex())
    text += "#define " + m + "_LOSS_RESULT " + std::to_string(*loss) + "\n";
  auto elements = [](const std::vector<ga::TensorSpec> &list) {
    std::string t = "{";
    for (size_t i = 0; i < list.size(); ++i)
      t += (i ? ", " : "") + std::to_string(list[i].numElements());
    return t + (list.empty() ? "0}" : "}");
  };
  text += "/* Elements of each argument and result buffer, in order. */\n";
  text += "#define " + m + "_INPUT_ELEMENTS " + elements(sig.inputs) + "\n";
  text += "#define " + m + "_RESULT_ELEMENTS " + elements(sig.results) + "\n";
  text += "\n#endif /* " + m + "_H */\n";
  return text;
}

/// One compilation, stage by stage (see main); each stage returns 0 to go
/// on, or the exit status to stop with.
class StepCompiler {
public:
  int checkFlags();
  int loadModule();
  int runPipeline();
  /// What train-plan-remat chose, where a memory budget planned the step.
  std::optional<ga::tool::MemoryPlan> memoryPlan;
  int dumpKernels();
  int compileKernels();
  int readSignature();
  int translate();
  int makeTargetMachine();
  int optimizeAndCodegen();
  int link();
  int writeHeader();
  int report();

private:
  /// The C compiler driver that links: --linker, else cc, gcc or clang.
  int findLinker(std::string &driver);

  bool cuda = false;
  std::unique_ptr<ga::GaPipelineOptions> options;
  /// --target=cuda: the pipeline's CUDA options, projected once; `format`
  /// is the kernels' format in the library (the pipeline itself runs with
  /// gpu-format=none).
  std::optional<ga::CudaTargetOptions> device;
  std::unique_ptr<MLIRContext> context;
  std::unique_ptr<ga::StepModule> step;
  std::string name;
  Clock::time_point start = Clock::now();
  double pipelineMs = 0, translateMs = 0, codegenMs = 0, linkMs = 0;
  size_t gpuModules = 0;
  ga::StepSignature signature;
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;
  llvm::Triple triple;
  const llvm::Target *llvmTarget = nullptr;
  std::string cpuName, features;
  llvm::TargetOptions targetOptions;
  llvm::CodeGenOptLevel codeGenLevel = llvm::CodeGenOptLevel::Default;
  bool usesOpenMP = false;
  unsigned threads = 1;
  size_t partitions = 0;
  std::vector<std::string> objectPaths;
  std::vector<std::unique_ptr<llvm::FileRemover>> removeObjects;
  std::string header;
};

int StepCompiler::checkFlags() {
  cuda = target == ga::Target::CUDA;
  if (!dumpPtx.empty() && !cuda)
    return fail("--dump-ptx needs --target=cuda");
  if (optLevel < 0 || optLevel > 3)
    return fail("-O must be 0, 1, 2 or 3, got " + Twine(optLevel.getValue()));
  options = std::make_unique<ga::GaPipelineOptions>();
  options->target = target;
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (failed(pipelineFlags.get(*options, os)))
    return fail(errors);
  if (options->target.getValue() != target.getValue())
    return fail("--pipeline-options sets target=" +
                ga::choiceName(options->target.getValue()) + "; use --target");
  // ga-compile serializes the kernels itself (PTX for --dump-ptx first).
  device = options->cudaTarget();
  if (device && device->format == ga::GpuFormat::None)
    return fail("gpu-format=none leaves the kernels unserialized, and a "
                "step library needs them: give bin, fatbin or isa");
  if (device)
    options->gpuFormat = ga::GpuFormat::None;
  return 0;
}

int StepCompiler::loadModule() {
  context = ga::makeStepContext();
  std::string loadError;
  step = ga::loadStepModule(*context, inputFile, entryName, loadError);
  if (!step)
    return loadError.empty() ? 1 : fail(loadError);
  name = step->name;
  return 0;
}

/// Stage 1: the pipeline, and the export of the C ABI.
int StepCompiler::runPipeline() {
  start = Clock::now();
  PassManager pm(context.get());
  if (isa<func::FuncOp>(step->entry)) {
    std::string errors;
    llvm::raw_string_ostream os(errors);
    if (failed(ga::buildGaPipeline(pm, os, *options)))
      return fail("cannot build the " + ga::choiceName(target.getValue()) +
                  " pipeline: " + errors);
  }
  ga::GaExportStepPassOptions exportOptions;
  exportOptions.entry = name;
  exportOptions.runtime = cuda ? ga::Target::CUDA : ga::Target::CPU;
  pm.addPass(ga::createGaExportStepPass(exportOptions));
  if (timePasses)
    pm.enableTiming();
  auto *plans = ga::tool::MemoryPlanRecorder::attach(pm);
  if (failed(pm.run(*step->module)))
    return fail("compiling '" + inputFile + "' failed (see above)");
  memoryPlan = plans->plan();
  pipelineMs = msSince(start);
  step->module->walk([&](gpu::GPUModuleOp) { ++gpuModules; });
  if (cuda && gpuModules == 0 && isa<func::FuncOp>(step->entry))
    return fail("@" + name + " compiled for CUDA has no kernels");
  return 0;
}

/// --dump-ptx: the kernels as PTX, from a copy of the module.
int StepCompiler::dumpKernels() {
  if (!cuda || dumpPtx.empty())
    return 0;
  if (std::error_code ec = llvm::sys::fs::create_directories(dumpPtx))
    return fail("cannot create --dump-ptx directory '" + dumpPtx +
                "': " + ec.message());
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>((*step->module)->clone()));
  PassManager pm(context.get());
  ga::addGpuModuleToBinary(pm, *device, ga::GpuFormat::Isa);
  if (failed(pm.run(*copy)))
    return fail("translating the kernels of '" + inputFile +
                "' to PTX failed (see above)");
  for (auto binary : copy->getOps<gpu::BinaryOp>())
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      SmallString<128> path(dumpPtx.getValue());
      llvm::sys::path::append(path, binary.getSymName() + ".ptx");
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec);
      if (ec)
        return fail("cannot write '" + path + "': " + ec.message());
      os << object.getObject().getValue();
    }
  return 0;
}

/// The kernels in the library's format.
int StepCompiler::compileKernels() {
  if (!cuda || !gpuModules)
    return 0;
  PassManager pm(context.get());
  ga::addGpuModuleToBinary(pm, *device, device->format);
  if (timePasses)
    pm.enableTiming();
  if (failed(pm.run(*step->module)))
    return fail("compiling the kernels of '" + inputFile +
                "' failed (see above)");
  pipelineMs = msSince(start);
  return 0;
}

int StepCompiler::readSignature() {
  auto llvmFunc = step->module->lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (std::string error =
          ga::buildStepSignature(llvmFunc, signature, "ga-compile");
      !error.empty())
    return fail(error);
  return 0;
}

/// Stage 2: LLVM IR.
int StepCompiler::translate() {
  auto translateStart = Clock::now();
  llvmModule = translateModuleToLLVMIR(*step->module, llvmContext, name);
  if (!llvmModule)
    return fail("translating '" + inputFile + "' to LLVM IR failed");
  // The launches' argument arrays, made in the micro-batch loop, allocated
  // once (see ga::hoistBlockLocalAllocas).
  ga::hoistBlockLocalAllocas(*llvmModule);
  translateMs = msSince(translateStart);
  return 0;
}

/// Stage 3a: the target machine of --cpu and -O.
int StepCompiler::makeTargetMachine() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  triple = llvm::Triple(llvm::sys::getProcessTriple());
  std::string lookupError;
  llvmTarget = llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!llvmTarget)
    return fail("no LLVM target for " + triple.str() + ": " + lookupError);
  cpuName =
      cpu == "native" ? llvm::sys::getHostCPUName().str() : cpu.getValue();
  if (cpu == "native") {
    llvm::SubtargetFeatures list;
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      list.AddFeature(feature.first(), feature.second);
    features = list.getString();
  }
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      llvmTarget->createMCSubtargetInfo(triple, cpuName, ""));
  if (!subtarget || !subtarget->isCPUStringValid(cpuName))
    return fail("--cpu=" + cpu + ": LLVM does not know this CPU for " +
                triple.str() + " (try native or x86-64)");
  codeGenLevel = static_cast<llvm::CodeGenOptLevel>(optLevel.getValue());
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      triple, cpuName, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      codeGenLevel));
  if (!machine)
    return fail("cannot create an LLVM target machine for " + triple.str());
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);
  usesOpenMP = llvm::any_of(llvmModule->functions(), [](auto &f) {
    return f.getName().starts_with("__kmpc_");
  });
  return 0;
}

/// Stage 3b: LLVM's optimizer and code generation, whole functions spread
/// over threads (ParallelCodegen.h), into temporary object files.
int StepCompiler::optimizeAndCodegen() {
  auto codegenStart = Clock::now();
  threads = jobs > 0 ? jobs : std::max(1u, std::thread::hardware_concurrency());
  ga::TargetMachineFactory factory = [&]() {
    return std::unique_ptr<llvm::TargetMachine>(llvmTarget->createTargetMachine(
        triple, cpuName, features, targetOptions, llvm::Reloc::PIC_,
        std::nullopt, codeGenLevel));
  };
  llvm::Expected<std::vector<std::string>> objects = ga::compileInPartitions(
      std::move(llvmModule), threads, optLevel, factory);
  if (!objects)
    return fail("LLVM failed: " + toString(objects.takeError()));
  partitions = objects->size();
  for (const std::string &bytes : *objects) {
    SmallString<128> path;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("ga-compile", "o", path))
      return fail("cannot create a temporary object file: " + ec.message());
    removeObjects.push_back(std::make_unique<llvm::FileRemover>(path));
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return fail("cannot write '" + path + "': " + ec.message());
    os << bytes;
    objectPaths.push_back(std::string(path));
  }
  codegenMs = msSince(codegenStart);
  return 0;
}

int StepCompiler::findLinker(std::string &driver) {
  driver = linker;
  if (driver.empty()) {
    for (const char *candidate : {"cc", "gcc", "clang"})
      if (auto found = llvm::sys::findProgramByName(candidate)) {
        driver = *found;
        return 0;
      }
    return fail("no C compiler driver to link the library: none of cc, "
                "gcc, clang is on PATH; install one (Debian: gcc) or name "
                "one with --linker");
  }
  if (!llvm::sys::fs::can_execute(driver)) {
    auto found = llvm::sys::findProgramByName(driver);
    if (!found)
      return fail("--linker=" + driver + ": no such program");
    driver = *found;
  }
  return 0;
}

/// Stage 4: the shared library, linked against the runtime (and the CUDA
/// runtime, and OpenMP's when the code calls it).
int StepCompiler::link() {
  auto linkStart = Clock::now();
  std::string driver;
  if (int rc = findLinker(driver))
    return rc;
  std::string runtime =
      ga::tool::runtimeLibrary("libga_runtime.so", GA_RUNTIME_LIBRARY);
  if (!llvm::sys::fs::exists(runtime))
    return fail("the runtime library '" + runtime +
                "' does not exist: build the ga_runtime target");
  std::string runtimeDir = llvm::sys::path::parent_path(runtime).str();
  std::string cudaRuntime;
  if (cuda) {
    SmallString<256> path(runtimeDir);
    llvm::sys::path::append(path, "libga_cuda_runtime.so");
    cudaRuntime = std::string(path);
    if (!llvm::sys::fs::exists(cudaRuntime))
      return fail("the CUDA runtime library '" + cudaRuntime +
                  "' does not exist: build the ga_cuda_runtime target");
  }
  std::vector<std::string> args = {
      driver,        "-shared",        "-o",
      outputFile,    runtime,          "-Wl,-rpath,$ORIGIN:" + runtimeDir,
      "-Wl,-z,defs", "-Wl,--as-needed"};
  args.insert(args.begin() + 4, objectPaths.begin(), objectPaths.end());
  if (usesOpenMP)
    args.push_back(GA_OPENMP_RUNTIME);
  if (cuda)
    args.insert(args.begin() + 4 + objectPaths.size(), cudaRuntime);
  args.push_back("-lm");
  std::vector<StringRef> argRefs(args.begin(), args.end());
  SmallString<128> linkLog;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("ga-compile", "log", linkLog))
    return fail("cannot create a temporary file: " + ec.message());
  llvm::FileRemover removeLog(linkLog);
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(linkLog),
                                          StringRef(linkLog)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(driver, argRefs, std::nullopt, redirects,
                                     0, 0, &execError);
  if (rc != 0) {
    std::string command;
    for (StringRef a : argRefs)
      command += (command.empty() ? "" : " ") + a.str();
    auto log = llvm::MemoryBuffer::getFile(linkLog);
    return fail(
        "linking '" + outputFile + "' failed (" +
        (execError.empty() ? "exit status " + std::to_string(rc) : execError) +
        "): " + command + "\n" + (log ? (*log)->getBuffer() : ""));
  }
  linkMs = msSince(linkStart);
  return 0;
}

/// The C header beside the library (--header, else the library's name with
/// .h).
int StepCompiler::writeHeader() {
  header = headerFile;
  if (header.empty()) {
    SmallString<128> path(outputFile);
    llvm::sys::path::replace_extension(path, "h");
    header = std::string(path);
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(header, ec);
  if (ec)
    return fail("cannot write '" + header + "': " + ec.message());
  os << headerText(signature, llvm::sys::path::filename(inputFile));
  return 0;
}

int StepCompiler::report() {
  uint64_t size = 0;
  llvm::sys::fs::file_size(outputFile, size);
  outs() << "ga-compile: @" << name << " from " << inputFile << "\n";
  outs() << llvm::format(
      "compile_ms: %.1f (pipeline %.1f, llvm-ir %.1f, optimize+codegen "
      "%.1f, link %.1f)\n",
      msSince(start), pipelineMs, translateMs, codegenMs, linkMs);
  outs() << "target: " << triple.str() << ", cpu " << cpuName
         << (usesOpenMP ? ", OpenMP threads" : ", one thread") << "; "
         << partitions << " LLVM partition(s) on " << threads << " thread(s)\n";
  if (cuda)
    outs() << "kernels: " << gpuModules << " GPU module(s) for " << device->chip
           << " (" << ga::choiceName(device->format) << ")"
           << (dumpPtx.empty() ? "" : ", PTX in " + dumpPtx) << "\n";
  if (memoryPlan)
    outs() << memoryPlan->line() << "\n";
  outs() << "wrote " << outputFile << " (" << size << " bytes) and " << header
         << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  ga::tool::name() = "ga-compile";
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, kOverview);
  StepCompiler compiler;
  for (int (StepCompiler::*stage)() :
       {&StepCompiler::checkFlags, &StepCompiler::loadModule,
        &StepCompiler::runPipeline, &StepCompiler::dumpKernels,
        &StepCompiler::compileKernels, &StepCompiler::readSignature,
        &StepCompiler::translate, &StepCompiler::makeTargetMachine,
        &StepCompiler::optimizeAndCodegen, &StepCompiler::link,
        &StepCompiler::writeHeader, &StepCompiler::report})
    if (int rc = (compiler.*stage)())
      return rc;
  return 0;
}
