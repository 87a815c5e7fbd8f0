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

#include "TrainEntry.h"

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
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <unistd.h>

using namespace mlir;
namespace cl = llvm::cl;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;
using llvm::errs;
using llvm::outs;
using llvm::Twine;

static cl::OptionCategory category("ga-train options");

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<train-step.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string>
    entryName("entry",
              cl::desc("The training step to run (default: the only function "
                       "with a body)"),
              cl::value_desc("name"), cl::cat(category));
static cl::opt<std::string>
    dataDir("data",
            cl::desc("The dataset: a directory with dataset.json and one .npy "
                     "file per batch operand (scripts/make_corpus.py)"),
            cl::value_desc("dir"), cl::cat(category));
static cl::opt<int64_t> steps("steps",
                              cl::desc("Train until this step (a resumed run "
                                       "stops at the same step)"),
                              cl::init(100), cl::value_desc("N"),
                              cl::cat(category));
static cl::opt<double> lr("lr", cl::desc("Peak learning rate (default 1e-3)"),
                          cl::init(1e-3), cl::cat(category));
static cl::opt<int64_t>
    warmup("warmup",
           cl::desc("Steps of linear warm-up: step s uses lr * min(1, "
                    "s / warmup) (default 0: none)"),
           cl::init(0), cl::value_desc("N"), cl::cat(category));
static cl::opt<double>
    clip("clip",
         cl::desc("max_norm of the step's train.clip_by_global_norm "
                  "(default: as written in the IR)"),
         cl::init(0), cl::cat(category));
static cl::opt<uint64_t>
    seed("seed", cl::desc("Seed of the parameters' initialization (default 0)"),
         cl::init(0), cl::cat(category));
static cl::opt<std::string>
    initDir("init",
            cl::desc("Start from these parameters: DIR/param<i>.npy for "
                     "parameter i of the train.step (moments start at zero)"),
            cl::value_desc("dir"), cl::cat(category));
static cl::opt<int64_t>
    microbatches("microbatches",
                 cl::desc("Micro-batches per step (default: as written in the "
                          "train.step)"),
                 cl::init(0), cl::value_desc("K"), cl::cat(category));
static cl::opt<int64_t> dataParallel(
    "data-parallel",
    cl::desc("Data-parallel ranks (default: as written in the train.step); "
             "run under `mpirun -np R`"),
    cl::init(0), cl::value_desc("R"), cl::cat(category));
static cl::opt<std::string>
    logFile("log",
            cl::desc("Write one row per step: CSV (step,loss,grad_norm,"
                     "tokens,lr,step_ms), or JSON lines if FILE ends in "
                     ".jsonl; with --resume, the rows up to the checkpoint "
                     "are kept and the run's rows appended"),
            cl::value_desc("file"), cl::cat(category));
static cl::opt<int64_t>
    printEvery("print-every",
               cl::desc("Print a progress line every N steps (default 10; 0: "
                        "only the last)"),
               cl::init(10), cl::value_desc("N"), cl::cat(category));
static cl::opt<std::string>
    checkpointDir("checkpoint-dir",
                  cl::desc("Write checkpoints here (every --checkpoint-every "
                           "steps, and at the end)"),
                  cl::value_desc("dir"), cl::cat(category));
static cl::opt<int64_t>
    checkpointEvery("checkpoint-every",
                    cl::desc("Steps between checkpoints (default 0: only at "
                             "the end)"),
                    cl::init(0), cl::value_desc("N"), cl::cat(category));
static cl::opt<std::string>
    resumeDir("resume",
              cl::desc("Continue from a checkpoint: a --checkpoint-dir (its "
                       "latest checkpoint) or one step-NNNNNNNN directory"),
              cl::value_desc("dir"), cl::cat(category));
static cl::opt<int> threadCount(
    "num-threads", cl::init(0),
    cl::desc("Threads of the step (default: OMP_NUM_THREADS if set, else the "
             "cores divided among the ranks); results are bitwise the same "
             "for any count"),
    cl::cat(category));
// The pipeline's options: --pipeline-options, and --naive and
// --memory-budget declared from GaPipelineOptions itself.
static ga::PipelineFlags pipelineFlags(category, {"naive", "memory-budget"});
// A test hook: exit abruptly in the middle of writing the checkpoint of
// step N, after its first file (what a crash or a kill would leave).
static cl::opt<int64_t> crashInCheckpoint("crash-in-checkpoint", cl::init(0),
                                          cl::Hidden, cl::cat(category));

static const char *kOverview =
    R"(ga-train: train a model with a training step compiled by ga-opt

  ga-train TRAIN_STEP.mlir --data DIR [--steps N] [--lr LR] [--warmup N]
           [--clip C] [--seed S] [--microbatches K] [--data-parallel R]
           [--naive] [--init DIR] [--log FILE.csv] [--checkpoint-dir DIR
           [--checkpoint-every N]] [--resume DIR] [--memory-budget BYTES]

TRAIN_STEP.mlir holds a whole training step: a function with one
train.step followed by an optimizer update (train.adamw or train.sgd) of
every parameter, optionally train.clip_by_global_norm of the gradients
(examples/mlp_train.mlir; examples/gen_tiny_gpt.py --train). The roles of
its arguments and results are read from the IR: the train.step's
parameters and batch operands, the optimizers' moments, learning rate and
step number; among the results, the new parameters and moments (fed back
to the next step), the loss, the gradient norm (of the clip, or a
train.global_norm) and the valid-token count (an integer auxiliary output
of the train.step).

Parameters start from `train.init` on their argument: "zeros", "ones", or
a standard deviation (a normal draw from ga-train's own generator, seeded
by --seed and the parameter's position; 0.02 without the attribute).
--init DIR loads them instead from DIR/param<i>.npy (parameter i of the
train.step, its exact shape and dtype). Moments start at zero.

Data: DIR/dataset.json names one .npy file per batch operand of the
train.step, in order ({"arrays": ["tokens.npy", "labels.npy"]}); each
holds rows of that operand (its shape without the batch dimension, its
dtype). Step s (1 first) takes the B rows (s-1)*B, ..., s*B-1, modulo the
row count: every schedule (--microbatches, --data-parallel, --naive) sees
the same global batches.

Data parallelism: with data_parallel = R (in the IR or --data-parallel),
run under `mpirun -np R ga-train ...`: every rank reads the dataset and
takes its rows of each batch; rank 0 prints, logs and checkpoints.

Checkpoints: --checkpoint-dir DIR writes DIR/step-NNNNNNNN/ (one .npy per
parameter and moment, and manifest.json, which gives each its role and the
parameter's `train.name` where the argument has one) into a temporary
directory that is renamed into place, then DIR/latest is replaced
atomically: a run stopped during a write leaves the previous checkpoint as
the latest.
--resume DIR continues from DIR/latest (or from DIR itself when it is a
step directory) up to --steps, bitwise the same as an uninterrupted run.
)";

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

int fail(const Twine &message) {
  llvm::WithColor::error(errs(), "ga-train") << message << "\n";
  return 1;
}

/// The "format" of a checkpoint's manifest.
constexpr const char *kCheckpointFormat = "ga-train checkpoint 1";

/// SplitMix64: the generator of the initial parameters.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1).
  double uniform() { return ((next() >> 11) + 0.5) * 0x1.0p-53; }
  /// Standard normal (Box-Muller, one value per pair of draws).
  double normal() {
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
};

void store(ga::NpyArray &array, int64_t i, double value) {
  switch (array.dtype) {
  case ga::NpyDType::F32:
    reinterpret_cast<float *>(array.data.data())[i] = static_cast<float>(value);
    return;
  case ga::NpyDType::F64:
    reinterpret_cast<double *>(array.data.data())[i] = value;
    return;
  case ga::NpyDType::I32:
    reinterpret_cast<int32_t *>(array.data.data())[i] =
        static_cast<int32_t>(value);
    return;
  case ga::NpyDType::I64:
    reinterpret_cast<int64_t *>(array.data.data())[i] =
        static_cast<int64_t>(value);
    return;
  case ga::NpyDType::Bool:
    array.data[i] = value != 0;
    return;
  }
}

ga::NpyArray makeArray(const ga::TensorSpec &spec) {
  ga::NpyArray array;
  array.dtype = spec.dtype;
  array.shape = spec.shape;
  array.data.assign(spec.numBytes(), 0);
  return array;
}

std::string readText(const std::string &file, std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/true);
  if (!buffer) {
    error = "cannot read '" + file + "': " + buffer.getError().message();
    return "";
  }
  return (*buffer)->getBuffer().str();
}

/// Writes `text` to `file` and flushes it to the disk.
bool writeDurable(const std::string &file, const std::string &text,
                  std::string &error) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    error = "cannot write '" + file + "': " + std::strerror(errno);
    return false;
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      error = "cannot write '" + file + "': " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    done += n;
  }
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  if (!ok)
    error = "cannot flush '" + file + "': " + std::strerror(errno);
  return ok;
}

void syncPath(const std::string &file) {
  int fd = ::open(file.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

/// The dataset: one array of rows per batch operand.
struct Dataset {
  std::vector<ga::NpyArray> arrays;
  std::vector<std::string> files;
  int64_t rows = 0;
};

std::string loadDataset(const std::string &dir, const ga::TrainEntry &entry,
                        const ga::StepSignature &signature, Dataset &out) {
  std::string manifest = dir + "/dataset.json", error;
  std::string text = readText(manifest, error);
  if (!error.empty())
    return error + " (--data names a directory with dataset.json)";
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return "'" + manifest + "' is not JSON: " + toString(json.takeError());
  const llvm::json::Object *object = json->getAsObject();
  const llvm::json::Array *names =
      object ? object->getArray("arrays") : nullptr;
  if (!names)
    return "'" + manifest +
           "' must be an object with \"arrays\": a list of .npy file names";
  if (names->size() != entry.numBatch)
    return "'" + manifest + "' names " + std::to_string(names->size()) +
           " array(s), but the train.step of @" + signature.entry + " takes " +
           std::to_string(entry.numBatch) + " batch operand(s)";
  for (unsigned j = 0; j < entry.numBatch; ++j) {
    std::optional<llvm::StringRef> name = (*names)[j].getAsString();
    if (!name)
      return "'" + manifest + "': \"arrays\"[" + std::to_string(j) +
             "] must be a file name";
    std::string file = dir + "/" + name->str();
    ga::NpyArray array;
    if (!ga::readNpy(file, array, error))
      return "batch operand #" + std::to_string(j) + ": " + error;
    const ga::TensorSpec &spec = signature.inputs[entry.batchArg[j]];
    std::vector<int64_t> rowShape(spec.shape.begin() + 1, spec.shape.end());
    bool shapeOk =
        array.shape.size() == spec.shape.size() &&
        std::equal(rowShape.begin(), rowShape.end(), array.shape.begin() + 1);
    if (array.dtype != spec.dtype || !shapeOk) {
      std::vector<int64_t> expected = spec.shape;
      expected[0] = -1;
      std::string rows = ga::npyShapeString(expected);
      rows.replace(rows.find("-1"), 2, "N");
      return "batch operand #" + std::to_string(j) + " ('" + file +
             "'): expected rows of " + spec.describe() + ", that is " +
             ga::npyDTypeName(spec.dtype) + " " + rows + ", got " +
             ga::npyDTypeName(array.dtype) + " " + array.shapeString();
    }
    if (j && array.shape[0] != out.rows)
      return "batch operand #" + std::to_string(j) + " ('" + file + "') has " +
             std::to_string(array.shape[0]) + " rows, but '" + out.files[0] +
             "' has " + std::to_string(out.rows);
    if (array.shape[0] < spec.shape[0])
      return "'" + file + "' has " + std::to_string(array.shape[0]) +
             " rows, fewer than the global batch of @" + signature.entry +
             " (" + std::to_string(spec.shape[0]) + ")";
    out.rows = array.shape[0];
    out.files.push_back(file);
    out.arrays.push_back(std::move(array));
  }
  return "";
}

bool isState(ga::TrainArgKind kind) {
  return kind == ga::TrainArgKind::Param ||
         kind == ga::TrainArgKind::FirstMoment ||
         kind == ga::TrainArgKind::SecondMoment;
}

const char *roleToken(ga::TrainArgKind kind) {
  switch (kind) {
  case ga::TrainArgKind::Param:
    return "param";
  case ga::TrainArgKind::FirstMoment:
    return "m";
  case ga::TrainArgKind::SecondMoment:
    return "v";
  default:
    return "other";
  }
}

/// Writes the state arguments of step `step` as DIR/step-NNNNNNNN, then
/// points DIR/latest at it; both atomically.
std::string writeCheckpoint(const std::string &dir, int64_t step,
                            const ga::TrainEntry &entry,
                            const ga::StepSignature &signature,
                            const std::vector<ga::NpyArray> &state,
                            const std::string &source) {
  char stepName[32];
  std::snprintf(stepName, sizeof(stepName), "step-%08lld",
                static_cast<long long>(step));
  std::string name = stepName;
  std::string final = dir + "/" + name;
  std::string temp =
      dir + "/.tmp-" + name + "-" + std::to_string(static_cast<long>(getpid()));
  if (std::error_code ec = fs::create_directories(dir))
    return "cannot create '" + dir + "': " + ec.message();
  fs::remove_directories(temp, /*IgnoreErrors=*/true);
  if (std::error_code ec = fs::create_directory(temp))
    return "cannot create '" + temp + "': " + ec.message();
  llvm::json::Array files;
  bool first = true;
  for (unsigned k = 0; k < entry.args.size(); ++k) {
    if (!isState(entry.args[k].kind))
      continue;
    std::string file = "arg" + std::to_string(k) + ".npy", error;
    if (!ga::writeNpy(temp + "/" + file, state[k], error))
      return error;
    syncPath(temp + "/" + file);
    if (first && crashInCheckpoint.getNumOccurrences() &&
        crashInCheckpoint == step)
      ::_exit(86);
    first = false;
    llvm::json::Object record{{"argument", k},
                              {"role", roleToken(entry.args[k].kind)},
                              {"param", entry.args[k].index},
                              {"file", file},
                              {"type", signature.inputs[k].describe()}};
    // The parameter's name (train.name: a state_dict key from ga-import).
    if (const std::string &name = entry.names[entry.args[k].index];
        !name.empty())
      record["name"] = name;
    files.push_back(std::move(record));
  }
  llvm::json::Object manifest{{"format", kCheckpointFormat},
                              {"entry", signature.entry},
                              {"source", source},
                              {"step", step},
                              {"seed", static_cast<int64_t>(seed.getValue())},
                              {"state", std::move(files)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
  os.flush();
  std::string error;
  if (!writeDurable(temp + "/manifest.json", text, error))
    return error;
  syncPath(temp);
  fs::remove_directories(final, /*IgnoreErrors=*/true);
  if (std::error_code ec = fs::rename(temp, final))
    return "cannot rename '" + temp + "' to '" + final + "': " + ec.message();
  std::string latestTemp = dir + "/.latest.tmp";
  if (!writeDurable(latestTemp, name + "\n", error))
    return error;
  if (std::error_code ec = fs::rename(latestTemp, dir + "/latest"))
    return "cannot replace '" + dir + "/latest': " + ec.message();
  syncPath(dir);
  return "";
}

/// Reads the checkpoint `where` into the state arguments; its step in
/// `step`.
std::string readCheckpoint(const std::string &where,
                           const ga::TrainEntry &entry,
                           const ga::StepSignature &signature,
                           std::vector<ga::NpyArray> &state, int64_t &step) {
  std::string dir = where, error;
  if (fs::exists(where + "/latest")) {
    std::string name = readText(where + "/latest", error);
    if (!error.empty())
      return error;
    while (!name.empty() && (name.back() == '\n' || name.back() == ' '))
      name.pop_back();
    dir = where + "/" + name;
  }
  std::string manifestFile = dir + "/manifest.json";
  std::string text = readText(manifestFile, error);
  if (!error.empty())
    return error + " (--resume names a --checkpoint-dir or a step directory)";
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return "'" + manifestFile + "' is not JSON: " + toString(json.takeError());
  const llvm::json::Object *object = json->getAsObject();
  std::optional<llvm::StringRef> format =
      object ? object->getString("format") : std::nullopt;
  if (!format || *format != kCheckpointFormat)
    return "'" + manifestFile + "' is not a ga-train checkpoint (format \"" +
           (format ? format->str() : std::string("?")) + "\")";
  std::optional<int64_t> at = object->getInteger("step");
  const llvm::json::Array *files = object->getArray("state");
  if (!at || *at < 0 || !files)
    return "'" + manifestFile + "' lacks \"step\" or \"state\"";
  std::string entryName = object->getString("entry").value_or("?").str();
  std::vector<bool> seen(entry.args.size(), false);
  for (const llvm::json::Value &item : *files) {
    const llvm::json::Object *file = item.getAsObject();
    std::optional<int64_t> k =
        file ? file->getInteger("argument") : std::nullopt;
    std::optional<llvm::StringRef> name =
        file ? file->getString("file") : std::nullopt;
    if (!k || !name)
      return "'" + manifestFile +
             "': every \"state\" entry needs \"argument\" and \"file\"";
    if (*k < 0 || *k >= static_cast<int64_t>(entry.args.size()) ||
        !isState(entry.args[*k].kind))
      return "checkpoint '" + dir + "' (of @" + entryName +
             ") holds argument #" + std::to_string(*k) +
             ", which is no "
             "parameter or moment of @" +
             signature.entry + ": a checkpoint of another model";
    ga::NpyArray array;
    if (!ga::readNpy(dir + "/" + name->str(), array, error))
      return error;
    const ga::TensorSpec &spec = signature.inputs[*k];
    if (array.dtype != spec.dtype || array.shape != spec.shape)
      return "checkpoint '" + dir + "' (of @" + entryName +
             ") holds argument #" + std::to_string(*k) + " as " +
             ga::npyDTypeName(array.dtype) + " " + array.shapeString() +
             ", but @" + signature.entry + " takes " + spec.describe() +
             ": a checkpoint of another model";
    state[*k] = std::move(array);
    seen[*k] = true;
  }
  for (unsigned k = 0; k < entry.args.size(); ++k)
    if (isState(entry.args[k].kind) && !seen[k])
      return "checkpoint '" + dir + "' (of @" + entryName +
             ") has no value for argument #" + std::to_string(k) + " (a " +
             ga::TrainEntry::name(entry.args[k].kind) + ") of @" +
             signature.entry + ": a checkpoint of another model";
  step = *at;
  return "";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, kOverview);
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
  if (microbatches.getNumOccurrences() && microbatches < 1)
    return fail("--microbatches must be at least 1, got " +
                Twine(microbatches.getValue()));
  if (dataParallel.getNumOccurrences() && dataParallel < 1)
    return fail("--data-parallel must be at least 1, got " +
                Twine(dataParallel.getValue()));
  if (checkpointEvery && checkpointDir.empty())
    return fail("--checkpoint-every needs --checkpoint-dir");
  if (!initDir.empty() && !resumeDir.empty())
    return fail("--init and --resume both set the parameters; give one");

  std::unique_ptr<MLIRContext> context = ga::makeStepContext();
  std::string loadError;
  std::unique_ptr<ga::StepModule> stepModule =
      ga::loadStepModule(*context, inputFile, entryName, loadError);
  if (!stepModule)
    return loadError.empty() ? 1 : fail(loadError);
  std::string name = stepModule->name;
  auto function = dyn_cast<func::FuncOp>(stepModule->entry);
  if (!function)
    return fail("@" + name + " in '" + inputFile +
                "' is already lowered; ga-train compiles the high-level "
                "training step (a func.func with a train.step)");
  FailureOr<ga::TrainEntry> analyzed = ga::analyzeTrainEntry(function);
  if (failed(analyzed))
    return 1;
  ga::TrainEntry &entry = *analyzed;

  // The schedule and clipping the command line overrides.
  Builder builder(context.get());
  if (microbatches.getNumOccurrences())
    entry.step.setMicrobatchesAttr(builder.getI64IntegerAttr(microbatches));
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
  // What the header reports, read before the pipeline replaces the ops.
  int64_t microbatchCount = entry.step.getMicrobatches();
  int64_t rankCount = entry.step.getDataParallel();
  std::string clipText = "none";
  if (entry.clip) {
    char text[64];
    std::snprintf(text, sizeof(text), "max_norm %g",
                  entry.clip.getMaxNorm().convertToDouble());
    clipText = text;
  }
  entry.step = nullptr;
  entry.clip = nullptr;

  // Compile.
  auto compileStart = Clock::now();
  ga::GaPipelineOptions options;
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (failed(pipelineFlags.get(options, os)))
    return fail(errors);
  PassManager pm(context.get());
  if (failed(ga::buildGaPipeline(pm, os, options)))
    return fail("cannot build the CPU pipeline: " + errors);
  if (failed(pm.run(*stepModule->module)))
    return fail("compiling '" + inputFile + "' failed (see above)");
  double pipelineMs = msSince(compileStart);
  auto llvmFunc = stepModule->module->lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (!llvmFunc)
    return fail("@" + name + " was not lowered to an llvm.func");
  ga::StepSignature signature;
  if (std::string error =
          ga::buildStepSignature(llvmFunc, signature, "ga-train");
      !error.empty())
    return fail(error);
  if (signature.inputs.size() != entry.args.size() ||
      signature.results.size() != entry.results.size())
    return fail("the compiled @" + name +
                " does not have the arguments and results of its source");
  std::string signatureText = signature.format();

  // Join the MPI run (a data-parallel step), before reading anything.
  struct LeaveRun {
    ~LeaveRun() { ga_collectives_stop(); }
  } leaveRun;
  ga_status status;
  if (ga_collectives_start(signature.ranks, name.c_str(), "ga-train",
                           &status) != GA_OK) {
    if (ga_world_rank() != 0)
      return 1;
    return fail(status.message);
  }
  bool reporter = ga_world_rank() == 0;
  auto failAll = [&](const Twine &message) {
    return reporter ? fail(message) : 1;
  };

  Dataset data;
  if (std::string error = loadDataset(dataDir, entry, signature, data);
      !error.empty())
    return failAll(error);
  // What a runtime error (an invalid label) names: the dataset's file of a
  // batch argument.
  std::vector<std::string> argumentFiles(entry.args.size());
  for (unsigned j = 0; j < entry.numBatch; ++j)
    argumentFiles[entry.batchArg[j]] = data.files[j];

  // State: the arguments, initialized or resumed.
  std::vector<ga::NpyArray> args;
  for (const ga::TensorSpec &spec : signature.inputs)
    args.push_back(makeArray(spec));
  // Seeded parameters, unless --init or --resume supplies them.
  for (unsigned k = 0; k < entry.args.size(); ++k) {
    if (entry.args[k].kind != ga::TrainArgKind::Param || !initDir.empty() ||
        !resumeDir.empty())
      continue;
    ga::NpyArray &array = args[k];
    if (array.dtype != ga::NpyDType::F32 && array.dtype != ga::NpyDType::F64)
      return failAll("parameter #" + Twine(entry.args[k].index) +
                     " (argument #" + Twine(k) + ") is " +
                     signature.inputs[k].describe() +
                     "; ga-train initializes f32 and f64 parameters");
    const ga::ParamInit &init = entry.inits[entry.args[k].index];
    SplitMix64 rng{seed * 0x100000001B3ull + entry.args[k].index + 1};
    for (int64_t i = 0, n = array.numElements(); i < n; ++i)
      store(array, i,
            init.kind == ga::ParamInit::Zeros  ? 0.0
            : init.kind == ga::ParamInit::Ones ? 1.0
                                               : init.stddev * rng.normal());
  }
  if (!initDir.empty()) {
    for (unsigned i = 0; i < entry.numParams; ++i) {
      unsigned k = entry.paramArg[i];
      std::string file = initDir + "/param" + std::to_string(i) + ".npy";
      std::string error;
      ga::NpyArray array;
      if (!ga::readNpy(file, array, error))
        return failAll("--init: " + error);
      if (std::string mismatch = ga::checkArgument(signature, k, array, file);
          !mismatch.empty())
        return failAll("--init: parameter #" + Twine(i) + ": " + mismatch);
      args[k] = std::move(array);
    }
  }
  int64_t firstStep = 1;
  if (!resumeDir.empty()) {
    int64_t at = 0;
    if (std::string error =
            readCheckpoint(resumeDir, entry, signature, args, at);
        !error.empty())
      return failAll(error);
    firstStep = at + 1;
  }

  // Threads, then the JIT.
  ga::prepareProcess(threadCount, signature.ranks);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto jitStart = Clock::now();
  ExecutionEngineOptions engineOptions;
  auto transformer = makeOptimizingTransformer(2, 0, nullptr);
  engineOptions.transformer = transformer;
  SmallVector<llvm::StringRef> runtimeLibs = {GA_RUNTIME_LIBRARY,
                                              GA_OPENMP_RUNTIME};
  engineOptions.sharedLibPaths = runtimeLibs;
  auto engine = ExecutionEngine::create(*stepModule->module, engineOptions);
  if (!engine)
    return failAll("JIT compilation failed: " +
                   llvm::toString(engine.takeError()));
  if (auto fn = (*engine)->lookupPacked(name); !fn)
    return failAll("JIT compilation failed: " + llvm::toString(fn.takeError()));
  double jitMs = msSince(jitStart);

  // Descriptors of the arguments (their buffers never move), and the
  // outputs: a new parameter or moment is written over its argument.
  std::vector<const void *> inputPointers;
  for (const ga::NpyArray &array : args)
    inputPointers.push_back(array.data.data());
  ga::PackedStepCall call(signature, inputPointers);
  std::vector<void *> outputPointers;
  std::vector<ga::NpyArray> outputs =
      ga::makeResultBuffers(signature, outputPointers);
  std::optional<unsigned> lossAt, normAt, tokensAt;
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

  // The log. A resumed run keeps the rows up to its checkpoint (a run that
  // stopped after it may have logged later steps, which run again) and
  // appends.
  std::unique_ptr<llvm::raw_fd_ostream> log;
  bool jsonl = llvm::StringRef(logFile).ends_with(".jsonl");
  if (reporter && !logFile.empty()) {
    std::string kept;
    bool resumed = !resumeDir.empty() && fs::exists(logFile);
    if (resumed) {
      std::string error, text = readText(logFile, error);
      if (!error.empty())
        return fail("--log: " + error);
      llvm::SmallVector<llvm::StringRef> lines;
      llvm::StringRef(text).split(lines, '\n', -1, /*KeepEmpty=*/false);
      for (llvm::StringRef line : lines) {
        llvm::StringRef field = line;
        if (jsonl && !field.consume_front("{\"step\": "))
          continue;
        int64_t step = 0;
        bool header = !jsonl && line.starts_with("step,");
        if (header || (!field.consumeInteger(10, step) && step < firstStep))
          kept += line.str() + "\n";
      }
    }
    std::error_code ec;
    log = std::make_unique<llvm::raw_fd_ostream>(logFile, ec);
    if (ec)
      return fail("cannot write --log '" + logFile + "': " + ec.message());
    if (resumed)
      *log << kept;
    else if (!jsonl)
      *log << "step,loss,grad_norm,tokens,lr,step_ms\n";
  }

  int64_t batchRows = signature.inputs[entry.batchArg[0]].shape[0];
  if (reporter) {
    int64_t paramCount = 0;
    for (unsigned k = 0; k < entry.args.size(); ++k)
      if (entry.args[k].kind == ga::TrainArgKind::Param)
        paramCount += args[k].numElements();
    outs() << "ga-train: @" << name << " from " << inputFile << "\n";
    outs() << llvm::formatv(
        "model: {0} parameter tensors ({1} values), {2}; clip {3}\n",
        entry.numParams, paramCount, entry.adamw ? "AdamW" : "SGD", clipText);
    outs() << llvm::formatv(
        "schedule: {0} rank(s) x {1} micro-batch(es) x "
        "{2} rows, {3}\n",
        rankCount, microbatchCount, batchRows / (rankCount * microbatchCount),
        options.naive ? "naive (per-micro-batch means averaged)" : "exact");
    outs() << llvm::formatv("data: {0} rows from {1}, global batch {2}\n",
                            data.rows, dataDir, batchRows);
    outs() << llvm::formatv("compile_ms: {0:f1} (pipeline {1:f1}, jit "
                            "{2:f1})\n",
                            pipelineMs + jitMs, pipelineMs, jitMs);
    if (firstStep > 1)
      outs() << "resumed at step " << firstStep - 1 << " from " << resumeDir
             << "\n";
    outs().flush();
  }

  auto checkpoint = [&](int64_t step) -> std::string {
    if (!reporter || checkpointDir.empty())
      return "";
    return writeCheckpoint(checkpointDir, step, entry, signature, args,
                           inputFile);
  };

  double totalMs = 0;
  int64_t totalTokens = 0;
  for (int64_t step = firstStep; step <= steps; ++step) {
    // The batch, the learning rate and the step number.
    for (unsigned j = 0; j < entry.numBatch; ++j) {
      ga::NpyArray &dst = args[entry.batchArg[j]];
      const ga::NpyArray &src = data.arrays[j];
      size_t rowBytes = dst.data.size() / batchRows;
      for (int64_t i = 0; i < batchRows; ++i) {
        int64_t row = ((step - 1) * batchRows + i) % data.rows;
        std::memcpy(dst.data.data() + i * rowBytes,
                    src.data.data() + row * rowBytes, rowBytes);
      }
    }
    double rate =
        warmup > 0 ? lr * std::min(1.0, double(step) / double(warmup)) : lr;
    for (unsigned k = 0; k < entry.args.size(); ++k) {
      if (entry.args[k].kind == ga::TrainArgKind::LearningRate)
        store(args[k], 0, rate);
      else if (entry.args[k].kind == ga::TrainArgKind::StepNumber)
        store(args[k], 0, static_cast<double>(step));
    }

    auto start = Clock::now();
    if (ga_step_enter(signatureText.c_str(), inputPointers.data(),
                      outputPointers.data(), &status) != GA_OK)
      return failAll(status.message);
    if (llvm::Error err = (*engine)->invokePacked(name, call.arguments()))
      return failAll("running @" + name +
                     " failed: " + llvm::toString(std::move(err)));
    if (ga_step_leave(signatureText.c_str(), call.results(),
                      inputPointers.data(), outputPointers.data(),
                      &status) != GA_OK)
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
    if (!reporter)
      continue;
    if (log) {
      std::string normText =
          normAt ? llvm::formatv("{0:e9}", norm).str() : std::string();
      std::string tokenText = tokens >= 0 ? std::to_string(tokens) : "";
      if (jsonl)
        *log << llvm::formatv(
            "{{\"step\": {0}, \"loss\": {1:e9}, \"grad_norm\": {2}, "
            "\"tokens\": {3}, \"lr\": {4:e6}, \"step_ms\": {5:f3}}\n",
            step, loss, normAt ? normText : "null",
            tokens >= 0 ? tokenText : "null", rate, ms);
      else
        *log << llvm::formatv("{0},{1:e9},{2},{3},{4:e6},{5:f3}\n", step, loss,
                              normText, tokenText, rate, ms);
      log->flush();
    }
    bool last = step == steps;
    if (last || (printEvery > 0 && step % printEvery == 0)) {
      double eta = totalMs / (step - firstStep + 1) * (steps - step) / 1000;
      outs() << llvm::formatv("step {0}/{1}  loss {2:f4}", step, steps, loss);
      if (normAt)
        outs() << llvm::formatv("  grad_norm {0:f4}", norm);
      if (tokens >= 0)
        outs() << llvm::formatv("  tokens {0}  {1:f0} tok/s", tokens,
                                totalTokens / (totalMs / 1000));
      outs() << llvm::formatv("  {0:f1} ms/step  eta {1:f1} s\n",
                              totalMs / (step - firstStep + 1), eta);
      outs().flush();
    }
    if (checkpointEvery > 0 && step % checkpointEvery == 0 && !last)
      if (std::string error = checkpoint(step); !error.empty())
        return fail(error);
  }
  if (firstStep > steps && reporter)
    outs() << "already at step " << firstStep - 1 << " (--steps " << steps
           << "): nothing to run\n";
  // The final state (the initial one for --steps 0), unless a resumed run
  // had nothing to do.
  if (firstStep <= steps || resumeDir.empty())
    if (std::string error = checkpoint(steps); !error.empty())
      return fail(error);
  if (reporter && !checkpointDir.empty())
    outs() << "checkpoint: " << checkpointDir << "/latest\n";
  return 0;
}
