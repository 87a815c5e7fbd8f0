//===- TrainFlags.cpp - ga-train's command line ---------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "TrainFlags.h"

namespace ga::train_flags {

cl::OptionCategory category("ga-train options");

cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                               cl::desc("<train-step.mlir>"),
                               cl::cat(category));
cl::opt<std::string>
    entryName("entry",
              cl::desc("The training step to run (default: the only function "
                       "with a body)"),
              cl::value_desc("name"), cl::cat(category));
cl::opt<std::string>
    dataDir("data",
            cl::desc("The dataset: a directory with dataset.json and one .npy "
                     "file per batch operand (scripts/make_corpus.py)"),
            cl::value_desc("dir"), cl::cat(category));
cl::opt<int64_t> steps("steps",
                       cl::desc("Train until this step (a resumed run "
                                "stops at the same step)"),
                       cl::init(100), cl::value_desc("N"), cl::cat(category));
cl::opt<double> lr("lr", cl::desc("Peak learning rate (default 1e-3)"),
                   cl::init(1e-3), cl::cat(category));
cl::opt<int64_t>
    warmup("warmup",
           cl::desc("Steps of linear warm-up: step s uses lr * min(1, "
                    "s / warmup) (default 0: none)"),
           cl::init(0), cl::value_desc("N"), cl::cat(category));
cl::opt<double>
    clip("clip",
         cl::desc("max_norm of the step's train.clip_by_global_norm "
                  "(default: as written in the IR)"),
         cl::init(0), cl::cat(category));
cl::opt<uint64_t>
    seed("seed", cl::desc("Seed of the parameters' initialization (default 0)"),
         cl::init(0), cl::cat(category));
cl::opt<std::string>
    initDir("init",
            cl::desc("Start from these parameters: DIR/param<i>.npy for "
                     "parameter i of the train.step (moments start at zero)"),
            cl::value_desc("dir"), cl::cat(category));
cl::opt<int64_t> dataParallel(
    "data-parallel",
    cl::desc("Data-parallel ranks (default: as written in the train.step); "
             "run under `mpirun -np R`"),
    cl::init(0), cl::value_desc("R"), cl::cat(category));
cl::opt<std::string>
    logFile("log",
            cl::desc("Write one row per step: CSV (step,loss,grad_norm,"
                     "tokens,lr,step_ms), or JSON lines if FILE ends in "
                     ".jsonl; with --resume, the rows up to the checkpoint "
                     "are kept and the run's rows appended"),
            cl::value_desc("file"), cl::cat(category));
cl::opt<int64_t>
    printEvery("print-every",
               cl::desc("Print a progress line every N steps (default 10; 0: "
                        "only the last)"),
               cl::init(10), cl::value_desc("N"), cl::cat(category));
cl::opt<std::string>
    checkpointDir("checkpoint-dir",
                  cl::desc("Write checkpoints here (every --checkpoint-every "
                           "steps, and at the end)"),
                  cl::value_desc("dir"), cl::cat(category));
cl::opt<int64_t>
    checkpointEvery("checkpoint-every",
                    cl::desc("Steps between checkpoints (default 0: only at "
                             "the end)"),
                    cl::init(0), cl::value_desc("N"), cl::cat(category));
cl::opt<bool> checkpointShards(
    "checkpoint-shards",
    cl::desc("With --shard 1 or more on several ranks: every rank writes "
             "its own shards into the checkpoint (argK.rankI.npy, listed in "
             "the manifest) instead of gathering them whole on rank 0; the "
             "ranks need a file system they share. It resumes on any rank "
             "count and stage, like a whole one"),
    cl::init(false), cl::cat(category));
cl::opt<std::string>
    resumeDir("resume",
              cl::desc("Continue from a checkpoint: a --checkpoint-dir (its "
                       "latest checkpoint) or one step-NNNNNNNN directory"),
              cl::value_desc("dir"), cl::cat(category));
cl::opt<ga::Target>
    target("target",
           cl::desc("cpu (default) or cuda: compile with --ga-pipeline "
                    "target=cuda and run every step on the CUDA device "
                    "through libga_cuda_runtime (the arguments copied to the "
                    "device and the results back at each step); with "
                    "--pipeline-options gpu-emulate=true, the device program "
                    "runs on the CPU"),
           cl::init(ga::Target::CPU), cl::value_desc("cpu|cuda"),
           cl::cat(category));
cl::opt<int> threadCount(
    "num-threads", cl::init(0),
    cl::desc("Threads of the step (default: OMP_NUM_THREADS if set, else the "
             "cores divided among the ranks); results are bitwise the same "
             "for any count"),
    cl::cat(category));
// The pipeline's options: --pipeline-options, and --naive, --microbatches,
// --choose-microbatches, --memory-budget, --attention, --attention-key-tile,
// --precision and --host-offload declared from GaPipelineOptions itself.
ga::PipelineFlags pipelineFlags(category,
                                {"naive", "microbatches", "shard",
                                 "choose-microbatches", "memory-budget",
                                 "attention", "attention-key-tile", "precision",
                                 "host-offload"});
// A test hook: exit abruptly in the middle of writing the checkpoint of
// step N, after its first file (what a crash or a kill would leave).
cl::opt<int64_t> crashInCheckpoint("crash-in-checkpoint", cl::init(0),
                                   cl::Hidden, cl::cat(category));

const char *const kOverview =
    R"(ga-train: train a model with a training step compiled by ga-opt

  ga-train TRAIN_STEP.mlir --data DIR [--steps N] [--lr LR] [--warmup N]
           [--clip C] [--seed S] [--microbatches K] [--data-parallel R]
           [--shard S] [--naive] [--init DIR] [--log FILE.csv] [--checkpoint-dir DIR
           [--checkpoint-every N] [--checkpoint-shards]] [--resume DIR] [--memory-budget BYTES
           [--host-offload]]
           [--target cpu|cuda]

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
--shard 1 keeps 1/R of AdamW's moments on each rank, --shard 2 also of the
gradients (docs/distributed.md); the results are those of --shard 0.

Checkpoints: --checkpoint-dir DIR writes DIR/step-NNNNNNNN/ (one .npy per
parameter and moment, and manifest.json, which gives each its role and the
parameter's `train.name` where the argument has one) into a temporary
directory that is renamed into place, then DIR/latest is replaced
atomically: a run stopped during a write leaves the previous checkpoint as
the latest.
--resume DIR continues from DIR/latest (or from DIR itself when it is a
step directory) up to --steps, bitwise the same as an uninterrupted run.

CUDA: --target=cuda compiles with --ga-pipeline target=cuda (the chip and
the other gpu-* options through --pipeline-options) and runs each step on
the device: the arguments (parameters, moments, batch) are copied in and
the results back at every step, as ga-exec runs a step library.
--memory-budget is then a budget of device memory (the step's buffers,
its arguments' copies, cuBLAS's workspace: train-plan-remat
device-allocator), and the last line reports the device's peak of the
step's own buffers. Without a CUDA driver and device it stops with "no
CUDA device". With --pipeline-options gpu-emulate=true the device program
runs on the CPU, launch by launch (a check of the CUDA target without a
GPU).
)";

} // namespace ga::train_flags
