//===- ga-train.cpp - Train a model with a compiled training step ---------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Compiles a whole training step (a train.step and an optimizer update per
// parameter) with --ga-pipeline=target=cpu, JIT-compiles it, and runs it
// step after step over a token dataset: parameters initialized from a seed
// (or resumed from a checkpoint), the next global batch of rows each step,
// the new parameters and moments written back into the arrays the next step
// reads. Logs one row per step, prints progress, writes checkpoints
// atomically.
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"
#include "Dataset.h"
#include "Shards.h"
#include "TrainEntry.h"
#include "TrainFlags.h"
#include "TrainLog.h"
#include "TrainState.h"

#include "../common/CudaRuntime.h"
#include "../common/MemoryPlan.h"
#include "../common/Peaks.h"
#include "../common/Tool.h"

#include "ga/Pipelines/PipelineFlags.h"
#include "ga/Pipelines/Pipelines.h"
#include "ga/Runtime/Npy.h"
#include "ga/Runtime/Runner.h"
#include "ga/Runtime/Signature.h"
#include "ga/Runtime/ga_step.h"
#include "ga/StepDriver.h"
#include "ga/Transforms/StepSignature.h"
#include "train/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

using namespace mlir;
namespace cl = llvm::cl;
namespace fs = llvm::sys::fs;
using llvm::errs;
using llvm::outs;
using llvm::Twine;

using namespace ga::train_flags;

namespace {

using ga::tool::Clock;
using ga::tool::CudaRuntime;
using ga::tool::fail;
using ga::tool::msSince;

/// One training run, phase by phase (see main); each phase returns 0 to go
/// on, or the exit status to stop with.
class Trainer {
public:
  ~Trainer() {
    engine.reset();
    if (joined)
      ga_collectives_stop();
  }

  int checkFlags();
  int loadModel();
  int applyOverrides();
  int compile();
  int joinRun();
  int loadData();
  int initState();
  int jitCompile();
  int bindResults();
  int openLog();
  int printHeader();
  int train();
  int finalCheckpoint();

private:
  /// A failure reported by rank 0 alone (every rank stops).
  int failAll(const Twine &message) { return reporter ? fail(message) : 1; }
  /// Runs step `step` and reports it; `totals` accumulate over the run.
  int runStep(int64_t step);
  void printProgress(int64_t step, double loss, double norm, int64_t tokens);
  std::string checkpoint(int64_t step);

  std::unique_ptr<MLIRContext> context;
  std::unique_ptr<ga::StepModule> stepModule;
  std::string name;
  ga::TrainEntry entry;
  // What the header reports, read before the pipeline replaces the ops.
  int64_t microbatchCount = 1, rankCount = 1, shardStage = 0;
  /// What train-plan-remat chose, where a memory budget planned the step.
  std::optional<ga::tool::MemoryPlan> memoryPlan;
  std::string clipText = "none";
  ga::GaPipelineOptions options;
  double pipelineMs = 0, jitMs = 0;
  /// The CUDA runtime, for a step that runs on the device (--target=cuda
  /// without gpu-emulate).
  std::optional<CudaRuntime> cuda;
  std::vector<void *> deviceInputs;
  ga::StepSignature signature;
  /// The AdamW moments (and parameters) that each rank holds a shard of
  /// (shard >= 1).
  std::optional<ga::StateShards> shards;
  /// The shapes of the source function's arguments: a shard's whole one.
  std::vector<std::vector<int64_t>> sourceShapes;
  std::string signatureText;
  bool joined = false, reporter = true;
  ga::Dataset data;
  /// What a runtime error (an invalid label) names: the dataset's file of
  /// a batch argument.
  std::vector<std::string> argumentFiles;
  std::vector<ga::NpyArray> args;
  int64_t firstStep = 1, batchRows = 0;
  std::unique_ptr<ExecutionEngine> engine;
  std::vector<const void *> inputPointers;
  std::unique_ptr<ga::PackedStepCall> call;
  std::vector<void *> outputPointers;
  std::vector<ga::NpyArray> outputs;
  std::optional<unsigned> lossAt, normAt, tokensAt;
  ga::TrainLog log;
  double totalMs = 0;
  int64_t totalTokens = 0;
};

int Trainer::checkFlags() {
  if (dataDir.empty())
    return fail("--data DIR is required (scripts/make_corpus.py writes one)");
  if (steps < 0)
    return fail("--steps must be at least 0, got " + Twine(steps.getValue()));
  if (!(lr >= 0) || !std::isfinite(lr))
    return fail(llvm::formatv("--lr must be a non-negative number, got {0}",
                              lr.getValue()));
  if (warmup < 0 || printEvery < 0 || checkpointEvery < 0)
    return fail("--warmup, --print-every and --checkpoint-every must be at "
                "least 0");
  if (clip.getNumOccurrences() && !(clip > 0))
    return fail(
        llvm::formatv("--clip must be positive, got {0}", clip.getValue()));
  if (dataParallel.getNumOccurrences() && dataParallel < 1)
    return fail("--data-parallel must be at least 1, got " +
                Twine(dataParallel.getValue()));
  if (checkpointEvery && checkpointDir.empty())
    return fail("--checkpoint-every needs --checkpoint-dir");
  if (checkpointShards && checkpointDir.empty())
    return fail("--checkpoint-shards needs --checkpoint-dir");
  if (!initDir.empty() && !resumeDir.empty())
    return fail("--init and --resume both set the parameters; give one");
  return 0;
}

/// The step's module, and what its train.step and optimizer updates say.
int Trainer::loadModel() {
  context = ga::makeStepContext();
  std::string loadError;
  stepModule = ga::loadStepModule(*context, inputFile, entryName, loadError);
  if (!stepModule)
    return loadError.empty() ? 1 : fail(loadError);
  name = stepModule->name;
  auto function = dyn_cast<func::FuncOp>(stepModule->entry);
  if (!function)
    return fail("@" + name + " in '" + inputFile +
                "' is already lowered; ga-train compiles the high-level "
                "training step (a func.func with a train.step)");
  FailureOr<ga::TrainEntry> analyzed = ga::analyzeTrainEntry(function);
  if (failed(analyzed))
    return 1;
  entry = std::move(*analyzed);
  for (Type type : function.getArgumentTypes()) {
    auto shaped = dyn_cast<ShapedType>(type);
    sourceShapes.emplace_back();
    if (shaped && shaped.hasStaticShape())
      llvm::append_range(sourceShapes.back(), shaped.getShape());
  }
  return 0;
}

/// The pipeline's options, and the schedule and clipping the command line
/// overrides (--microbatches is the pipeline's, set here too so that the
/// step is checked with both counts).
int Trainer::applyOverrides() {
  std::string errors;
  llvm::raw_string_ostream os(errors);
  options.target = target.getValue();
  if (failed(pipelineFlags.get(options, os)))
    return fail(errors);
  if (options.target.getValue() != target.getValue())
    return fail("--pipeline-options sets target=" +
                ga::choiceName(options.target.getValue()) + "; use --target");
  if (options.dataParallel > 0)
    return fail("--pipeline-options sets data-parallel=" +
                Twine(options.dataParallel.getValue()) +
                "; use --data-parallel");
  Builder builder(context.get());
  if (options.microbatches > 0)
    entry.step.setMicrobatchesAttr(
        builder.getI64IntegerAttr(options.microbatches));
  if (dataParallel.getNumOccurrences())
    entry.step.setDataParallelAttr(builder.getI64IntegerAttr(dataParallel));
  if (clip.getNumOccurrences()) {
    if (!entry.clip)
      return fail("--clip: @" + name + " has no train.clip_by_global_norm");
    entry.clip.setMaxNormAttr(builder.getF64FloatAttr(clip));
  }
  if (failed(mlir::verify(entry.step)))
    return fail("the train.step of @" + name +
                " cannot run with this --microbatches / --data-parallel");
  microbatchCount = entry.step.getMicrobatches();
  rankCount = entry.step.getDataParallel();
  shardStage = options.shard >= 0 ? static_cast<int64_t>(options.shard)
                                  : entry.step.getShard();
  if (entry.clip) {
    char text[64];
    std::snprintf(text, sizeof(text), "max_norm %g",
                  entry.clip.getMaxNorm().convertToDouble());
    clipText = text;
  }
  entry.step = nullptr;
  entry.clip = nullptr;
  return 0;
}

/// The CPU pipeline, and the compiled step's signature checked against its
/// source.
int Trainer::compile() {
  auto start = Clock::now();
  std::string errors;
  llvm::raw_string_ostream os(errors);
  PassManager pm(context.get());
  if (failed(ga::buildGaPipeline(pm, os, options)))
    return fail("cannot build the " +
                Twine(target == ga::Target::CUDA ? "CUDA" : "CPU") +
                " pipeline: " + errors);
  // choose-microbatches: the count train-plan-remat chose (the step's, right
  // after the pass), for the header.
  auto *plans = ga::tool::MemoryPlanRecorder::attach(pm);
  if (failed(pm.run(*stepModule->module)))
    return fail("compiling '" + inputFile + "' failed (see above)");
  memoryPlan = plans->plan();
  if (memoryPlan && memoryPlan->choice == "auto")
    microbatchCount = memoryPlan->microbatches;
  pipelineMs = msSince(start);
  auto llvmFunc = stepModule->module->lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (!llvmFunc)
    return fail("@" + name + " was not lowered to an llvm.func");
  if (std::string error =
          ga::buildStepSignature(llvmFunc, signature, "ga-train");
      !error.empty())
    return fail(error);
  if (signature.inputs.size() != entry.args.size() ||
      signature.results.size() != entry.results.size())
    return fail("the compiled @" + name +
                " does not have the arguments and results of its source");
  signatureText = signature.format();
  // A device program emulated on the CPU is a CPU step.
  if (std::optional<ga::CudaTargetOptions> device = options.cudaTarget();
      device && !device->emulate) {
    cuda.emplace();
    if (std::string error = loadCudaRuntime(name, *cuda); !error.empty())
      return fail(error);
  }
  return 0;
}

/// Joins the MPI run (a data-parallel step), before reading anything.
int Trainer::joinRun() {
  ga_status status;
  joined = true;
  if (ga_collectives_start(signature.ranks, name.c_str(), "ga-train",
                           &status) != GA_OK)
    return ga_world_rank() != 0 ? 1 : fail(status.message);
  reporter = ga_world_rank() == 0;
  return 0;
}

int Trainer::loadData() {
  if (std::string error = ga::loadDataset(dataDir, entry, signature, data);
      !error.empty())
    return failAll(error);
  argumentFiles.assign(entry.args.size(), "");
  for (unsigned j = 0; j < entry.numBatch; ++j)
    argumentFiles[entry.batchArg[j]] = data.files[j];
  batchRows = signature.inputs[entry.batchArg[0]].shape[0];
  return 0;
}

/// The arguments: parameters seeded, read from --init, or resumed.
int Trainer::initState() {
  // The state is read or seeded whole, each rank keeping its shards.
  shards.emplace(entry, signature, sourceShapes);
  const ga::StepSignature &whole = shards->wholeSignature();
  args = ga::makeArguments(whole);
  std::string error;
  if (!resumeDir.empty()) {
    int64_t at = 0;
    error = ga::readCheckpoint(resumeDir, entry, whole, args, at);
    firstStep = at + 1;
  } else if (!initDir.empty()) {
    error = ga::readParameters(initDir, entry, whole, args);
  } else {
    error = ga::seedParameters(entry, whole, seed, args);
  }
  if (error.empty() && checkpointShards && !shards->any())
    error = "--checkpoint-shards writes the ranks' shards of the state: it "
            "needs --shard 1 or more on several ranks (this run holds every "
            "tensor whole)";
  if (error.empty())
    shards->scatter(args);
  return error.empty() ? 0 : failAll(error);
}

/// Threads, then the JIT.
int Trainer::jitCompile() {
  ga::prepareProcess(threadCount, signature.ranks);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto start = Clock::now();
  ExecutionEngineOptions engineOptions;
  auto optimize = makeOptimizingTransformer(2, 0, nullptr);
  auto transformer = [&optimize](llvm::Module *module) -> llvm::Error {
    // The launches' argument arrays, made in the micro-batch loop,
    // allocated once (see ga::hoistBlockLocalAllocas).
    ga::hoistBlockLocalAllocas(*module);
    return optimize(module);
  };
  engineOptions.transformer = transformer;
  SmallVector<llvm::StringRef> runtimeLibs =
      ga::tool::jitRuntimeLibraries(cuda.has_value());
  engineOptions.sharedLibPaths = runtimeLibs;
  auto created = ExecutionEngine::create(*stepModule->module, engineOptions);
  if (!created)
    return failAll("JIT compilation failed: " +
                   llvm::toString(created.takeError()));
  engine = std::move(*created);
  if (auto fn = engine->lookupPacked(name); !fn)
    return failAll("JIT compilation failed: " + llvm::toString(fn.takeError()));
  jitMs = msSince(start);
  return 0;
}

/// Descriptors of the arguments (their buffers never move), and the
/// outputs: a new parameter or moment is written over its argument.
int Trainer::bindResults() {
  for (const ga::NpyArray &array : args)
    inputPointers.push_back(array.data.data());
  call = std::make_unique<ga::PackedStepCall>(signature, inputPointers);
  outputs = ga::makeResultBuffers(signature, outputPointers);
  for (auto [i, result] : llvm::enumerate(entry.results)) {
    ga::TrainArgKind feeds;
    switch (result.kind) {
    case ga::TrainResultKind::NewParam:
      feeds = ga::TrainArgKind::Param;
      break;
    case ga::TrainResultKind::NewFirstMoment:
      feeds = ga::TrainArgKind::FirstMoment;
      break;
    case ga::TrainResultKind::NewSecondMoment:
      feeds = ga::TrainArgKind::SecondMoment;
      break;
    case ga::TrainResultKind::Loss:
      lossAt = i;
      continue;
    case ga::TrainResultKind::GradNorm:
      normAt = normAt ? normAt : std::optional<unsigned>(i);
      continue;
    case ga::TrainResultKind::Tokens:
      tokensAt = tokensAt ? tokensAt : std::optional<unsigned>(i);
      continue;
    default:
      continue;
    }
    for (unsigned k = 0; k < entry.args.size(); ++k)
      if (entry.args[k].kind == feeds && entry.args[k].index == result.index)
        outputPointers[i] = args[k].data.data();
  }
  return 0;
}

int Trainer::openLog() {
  if (!reporter || logFile.empty())
    return 0;
  std::string error = log.open(logFile, !resumeDir.empty(), firstStep);
  return error.empty() ? 0 : fail(error);
}

int Trainer::printHeader() {
  if (!reporter)
    return 0;
  int64_t paramCount = 0;
  for (unsigned k = 0; k < entry.args.size(); ++k)
    if (entry.args[k].kind == ga::TrainArgKind::Param)
      paramCount += shards->wholeSignature().inputs[k].numElements();
  outs() << "ga-train: @" << name << " from " << inputFile << "\n";
  outs() << llvm::formatv(
      "model: {0} parameter tensors ({1} values), {2}; clip {3}\n",
      entry.numParams, paramCount, entry.adamw ? "AdamW" : "SGD", clipText);
  outs() << llvm::formatv(
      "schedule: {0} rank(s) x {1} micro-batch(es) x "
      "{2} rows, {3}\n",
      rankCount, microbatchCount, batchRows / (rankCount * microbatchCount),
      options.naive ? "naive (per-micro-batch means averaged)" : "exact");
  if (shards->any())
    outs() << llvm::formatv(
        "sharded: each rank holds 1/{0} of the AdamW moments{1}\n", rankCount,
        shards->parameters() ? ", of the gradients and of the parameters "
                               "(gathered where they are read)"
        : shardStage >= 2    ? " and of the gradients"
                             : "");
  if (memoryPlan)
    outs() << memoryPlan->line() << "\n";
  outs() << llvm::formatv("data: {0} rows from {1}, global batch {2}\n",
                          data.rows, dataDir, batchRows);
  if (target == ga::Target::CUDA) {
    const char *reason = nullptr;
    const char *device = cuda ? cuda->name(&reason) : nullptr;
    outs() << "device: "
           << (device ? Twine(device) + " (CUDA)"
                      : Twine("the CPU (gpu-emulate: the device program, "
                              "launch by launch)"))
           << "\n";
  }
  outs() << llvm::formatv("compile_ms: {0:f1} (pipeline {1:f1}, jit "
                          "{2:f1})\n",
                          pipelineMs + jitMs, pipelineMs, jitMs);
  if (firstStep > 1)
    outs() << "resumed at step " << firstStep - 1 << " from " << resumeDir
           << "\n";
  outs().flush();
  return 0;
}

/// Every rank calls it: sharded moments are gathered whole first.
std::string Trainer::checkpoint(int64_t step) {
  if (checkpointDir.empty())
    return "";
  ga::CheckpointInfo info{inputFile, seed, crashInCheckpoint};
  if (!shards->any())
    return reporter ? ga::writeCheckpoint(checkpointDir, step, entry, signature,
                                          args, info)
                    : "";
  if (checkpointShards) {
    // Every rank writes its shards; rank 0 the rest and the manifest.
    ga::ShardedWrite write;
    write.rank = ga_world_rank();
    write.ranks = ga_world_size();
    write.sharded = shards->shardedArguments();
    write.whole = &shards->wholeSignature();
    write.barrier = &ga::StateShards::barrier;
    return ga::writeCheckpoint(checkpointDir, step, entry, signature, args,
                               info, &write);
  }
  std::string error;
  std::vector<ga::NpyArray> state = shards->gather(args, error);
  if (!error.empty() || !reporter)
    return error;
  return ga::writeCheckpoint(checkpointDir, step, entry,
                             shards->wholeSignature(), state, info);
}

void Trainer::printProgress(int64_t step, double loss, double norm,
                            int64_t tokens) {
  int64_t done = step - firstStep + 1;
  double eta = totalMs / done * (steps - step) / 1000;
  outs() << llvm::formatv("step {0}/{1}  loss {2:f4}", step, steps, loss);
  if (normAt)
    outs() << llvm::formatv("  grad_norm {0:f4}", norm);
  if (tokens >= 0)
    outs() << llvm::formatv("  tokens {0}  {1:f0} tok/s", tokens,
                            totalTokens / (totalMs / 1000));
  outs() << llvm::formatv("  {0:f1} ms/step  eta {1:f1} s\n", totalMs / done,
                          eta);
  outs().flush();
}

int Trainer::runStep(int64_t step) {
  // The batch, the learning rate and the step number.
  ga::fillBatch(data, entry, step, args);
  double rate =
      warmup > 0 ? lr * std::min(1.0, double(step) / double(warmup)) : lr;
  for (unsigned k = 0; k < entry.args.size(); ++k) {
    if (entry.args[k].kind == ga::TrainArgKind::LearningRate)
      ga::store(args[k], 0, rate);
    else if (entry.args[k].kind == ga::TrainArgKind::StepNumber)
      ga::store(args[k], 0, static_cast<double>(step));
  }

  auto start = Clock::now();
  ga_status status;
  const char *text = signatureText.c_str();
  if (cuda) {
    // The descriptors point at the device copies of the arguments.
    deviceInputs.assign(args.size(), nullptr);
    if (cuda->enter(text, inputPointers.data(), outputPointers.data(), &status,
                    deviceInputs.data()) != GA_OK)
      return failAll(status.message);
    for (auto [i, pointer] : llvm::enumerate(deviceInputs))
      call->rebase(i, pointer);
  } else if (ga_step_enter(text, inputPointers.data(), outputPointers.data(),
                           &status) != GA_OK) {
    return failAll(status.message);
  }
  if (llvm::Error err = engine->invokePacked(name, call->arguments()))
    return failAll("running @" + name +
                   " failed: " + llvm::toString(std::move(err)));
  int32_t left =
      cuda ? cuda->leave(text, call->results(), deviceInputs.data(),
                         outputPointers.data(), &status)
           : ga_step_leave(text, call->results(), inputPointers.data(),
                           outputPointers.data(), &status);
  if (left != GA_OK)
    return failAll("step " + Twine(step) + ": " +
                   ga::stepFailure(signature, status, argumentFiles));
  double ms = msSince(start);
  totalMs += ms;

  double loss = lossAt ? outputs[*lossAt].at(0) : NAN;
  double norm = normAt ? outputs[*normAt].at(0) : NAN;
  int64_t tokens =
      tokensAt ? static_cast<int64_t>(outputs[*tokensAt].at(0)) : -1;
  if (tokens > 0)
    totalTokens += tokens;
  if (!std::isfinite(loss) || (normAt && !std::isfinite(norm)))
    return failAll(llvm::formatv("step {0}: the loss is {1} and the "
                                 "gradient norm {2}; training stopped "
                                 "(lower --lr, or --clip)",
                                 step, loss, norm)
                       .str());
  bool last = step == steps;
  if (reporter) {
    if (log)
      log.row(step, loss, normAt ? std::optional<double>(norm) : std::nullopt,
              tokens, rate, ms);
    if (last || (printEvery > 0 && step % printEvery == 0))
      printProgress(step, loss, norm, tokens);
  }
  // Every rank: the moments' shards are gathered.
  if (checkpointEvery > 0 && step % checkpointEvery == 0 && !last)
    if (std::string error = checkpoint(step); !error.empty())
      return failAll(error);
  return 0;
}

int Trainer::train() {
  for (int64_t step = firstStep; step <= steps; ++step)
    if (int rc = runStep(step))
      return rc;
  if (firstStep > steps && reporter)
    outs() << "already at step " << firstStep - 1 << " (--steps " << steps
           << "): nothing to run\n";
  if (reporter && firstStep <= steps) {
    // The step's own buffers at their most, and what memory-budget bounds
    // (tools/common/Peaks.h).
    ga_memory memory;
    if (cuda)
      cuda->stats(&memory);
    else
      ga_memory_stats(&memory);
    int64_t argumentBytes = ga::tool::argumentBytes(args);
    outs() << ga::tool::peakLines(memory, argumentBytes, cuda.has_value(),
                                  cuda ? cuda->device() : std::nullopt);
  }
  return 0;
}

/// The final state (the initial one for --steps 0), unless a resumed run
/// had nothing to do.
int Trainer::finalCheckpoint() {
  if (firstStep <= steps || resumeDir.empty())
    if (std::string error = checkpoint(steps); !error.empty())
      return failAll(error);
  if (reporter && !checkpointDir.empty())
    outs() << "checkpoint: " << checkpointDir << "/latest\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  ga::tool::name() = "ga-train";
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, kOverview);
  Trainer trainer;
  for (int (Trainer::*phase)() :
       {&Trainer::checkFlags, &Trainer::loadModel, &Trainer::applyOverrides,
        &Trainer::compile, &Trainer::joinRun, &Trainer::loadData,
        &Trainer::initState, &Trainer::jitCompile, &Trainer::bindResults,
        &Trainer::openLog, &Trainer::printHeader, &Trainer::train,
        &Trainer::finalCheckpoint})
    if (int rc = (trainer.*phase)())
      return rc;
  return 0;
}
