//===- Pipelines.h - The ga-opt pass pipelines ------------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_PIPELINES_PIPELINES_H
#define GA_PIPELINES_PIPELINES_H

#include "ga/Utils/Choices.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include <optional>

namespace ga {

/// The tile of attention=tiles (and of what attention=library leaves over
/// tiles) where attention-key-tile is not given.
inline constexpr int64_t kDefaultAttentionKeyTile = 1024;

/// What target=cuda reads of ga-pipeline's options: the CUDA-only options
/// (chip, ptx-features, cuda-toolkit, gpu-*, host offload's), projected once
/// by GaPipelineOptions::cudaTarget(), so that the CUDA half of the pipeline
/// and the tools read them typed, in one place, and the CPU half never does.
struct CudaTargetOptions {
  std::string chip;
  std::string ptxFeatures;
  /// cuda-toolkit, else the toolkit found when ga-opt was configured (empty
  /// if none).
  std::string toolkit;
  GpuFormat format = GpuFormat::Bin;
  /// The matrix products (ga-gpu-gemm-to-blas): through cuBLAS, in TF32
  /// or from bfloat16 copies, a bias in the epilogue.
  struct Products {
    bool blas = true;
    bool tf32 = false;
    bool bf16 = false;
    bool biasEpilogue = true;
  } products;
  /// Reductions in two stages (ga-gpu-split-reductions).
  struct Reductions {
    bool split = true;
    int64_t minLength = 0;
    int64_t minThreads = 0;
    int64_t lanes = 0;
  } reductions;
  /// The kernels' mapping and fusion (ga-gpu-map-parallel-loops).
  struct Kernels {
    int64_t blockSize = 256;
    int64_t vectorWidth = 1;
    bool fusion = true;
    bool rowFusion = true;
  } kernels;
  bool emulate = false;
  /// Each all-gather started one reader ahead
  /// (ga-gpu-prefetch-gathers).
  bool prefetchGathers = true;
  /// The kernel report's file (empty: none) and device
  /// (ga-gpu-kernel-report).
  std::string kernelReport;
  std::string device = "h100";
  /// Host offload (with memory-budget).
  struct Offload {
    double hostBandwidth = 0;
    double deviceTflops = 0;
    OffloadCopies copies = OffloadCopies::Priced;
    int64_t minBytes = 0;
    /// The device bytes offloading aims for (offload-budget, else
    /// memory-budget).
    int64_t budget = 0;
  };
  std::optional<Offload> offload;

  /// Checks the values (architecture, ranges, options that exclude each
  /// other, or need another); on failure writes the reason to `errors`.
  mlir::LogicalResult verify(llvm::raw_ostream &errors) const;
};

/// Options of `--ga-pipeline`, and of buildGaPipeline for the tools that
/// build it in C++ (ga-run, ga-train, ga-compile).
struct GaPipelineOptions : mlir::PassPipelineOptions<GaPipelineOptions> {
  Option<Target> target{
      *this, "target",
      llvm::cl::desc("Code generation target: cpu (LLVM dialect for this "
                     "machine, ready for ga-run) or cuda (host code in the "
                     "LLVM dialect, kernels as a gpu.binary for `chip`)"),
      llvm::cl::init(Target::CPU)};
  Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("target=cuda: the GPU architecture the kernels are "
                     "compiled for (sm_90: H100/H200)"),
      llvm::cl::init("sm_90")};
  Option<std::string> ptxFeatures{
      *this, "ptx-features",
      llvm::cl::desc("target=cuda: the PTX features of the kernels (sm_90 "
                     "needs PTX 8.0 or later)"),
      llvm::cl::init("+ptx80")};
  Option<std::string> cudaToolkit{
      *this, "cuda-toolkit",
      llvm::cl::desc("target=cuda: the CUDA toolkit (ptxas, "
                     "nvvm/libdevice/libdevice.10.bc); default: the one "
                     "found when ga-opt was configured"),
      llvm::cl::init("")};
  Option<GpuFormat> gpuFormat{
      *this, "gpu-format",
      llvm::cl::desc("target=cuda: what the kernels become: bin (cubin, "
                     "assembled by ptxas), fatbin, isa (PTX text, no "
                     "ptxas needed; the driver compiles it when the step "
                     "library loads) or none (gpu.module operations left "
                     "for the caller to serialize)"),
      llvm::cl::init(GpuFormat::Bin)};
  Option<bool> gpuBlas{
      *this, "gpu-blas",
      llvm::cl::desc("target=cuda: matrix products through cuBLAS "
                     "(ga-gpu-gemm-to-blas, float32 arithmetic, no TF32); "
                     "false compiles them to kernels like every other "
                     "operation"),
      llvm::cl::init(true)};
  Option<bool> gpuTF32{
      *this, "gpu-tf32",
      llvm::cl::desc("target=cuda: let cuBLAS multiply in TF32 on tensor "
                     "cores (ga-gpu-gemm-to-blas allow-tf32; faster, 10-bit "
                     "mantissas in the products); default float32"),
      llvm::cl::init(false)};
  Option<AttentionForm> attention{
      *this, "attention",
      llvm::cl::desc(
          "How multi-head attention is computed: unfused (as written, the "
          "[B, H, S, T] scores stored for the backward pass), tiles "
          "(train-raise-attention, then tiles of attention-key-tile, "
          "default 1024, queries and keys with an online softmax, "
          "recomputed in the backward pass), library (raised, then one "
          "call of the runtime's fused attention forward and backward: "
          "cuDNN on target=cuda, which takes bfloat16 operands "
          "(precision=bf16-mixed) and causal masks; the CPU runtime's "
          "reference on the CPU and in gpu-emulate; an attention the "
          "library does not take stays over tiles), auto (target=cuda: "
          "tiles; the CPU: tiles where attention-key-tile is given, else "
          "unfused)"),
      llvm::cl::init(AttentionForm::Auto)};
  Option<bool> reportAttention{
      *this, "report-attention",
      llvm::cl::desc("A remark at each attention: raised or left as "
                     "written (train-raise-attention), then the fused call "
                     "or tiles and why (convert-train-to-linalg)"),
      llvm::cl::init(false)};
  Option<int64_t> attentionKeyTile{
      *this, "attention-key-tile",
      llvm::cl::desc("Raise causal attention to train.attention "
                     "(train-raise-attention), computed over tiles of at "
                     "most this many queries and keys with an online softmax "
                     "and recomputed tile by tile in the backward pass, so "
                     "that no [B, H, S, S] tensor is stored and a causal "
                     "attention skips the tiles after the diagonal; 0: off"),
      llvm::cl::init(0)};
  Option<int64_t> lossChunkRows{
      *this, "loss-chunk-rows",
      llvm::cl::desc("Compute the LM head, the loss and the products that "
                     "read the logits' gradient over chunks of at most this "
                     "many rows (ga-chunk-loss-head), so that the [N, V] "
                     "logits never exist whole; 0: off"),
      llvm::cl::init(0)};
  Option<Precision> precision{
      *this, "precision",
      llvm::cl::desc("The step's arithmetic: f32 (everything in float32) "
                     "or bf16-mixed (every matrix product reads its inputs "
                     "as bfloat16 and sums in float32, an activation kept "
                     "for a backward product is kept as its bfloat16 copy; "
                     "parameters, gradients, accumulators, optimizer state, "
                     "softmax, layer norm and the loss in float32: "
                     "ga-mixed-precision), or bf16 (bf16-mixed, and every "
                     "product whose result is per-example, an activation "
                     "or its gradient, stores its result as bfloat16: "
                     "ga-mixed-precision's round-results)"),
      llvm::cl::init(Precision::F32)};
  Option<bool> gpuBF16{
      *this, "gpu-bf16",
      llvm::cl::desc("target=cuda: let cuBLAS read the matrices of the "
                     "products as bfloat16 on tensor cores, with float32 "
                     "products and sums (ga-gpu-gemm-to-blas allow-bf16; "
                     "8-bit mantissas in the inputs); default float32"),
      llvm::cl::init(false)};
  Option<bool> gpuBiasEpilogue{
      *this, "gpu-bias-epilogue",
      llvm::cl::desc("target=cuda: a bias added to a product from zero "
                     "goes into the GEMM's epilogue (one cuBLASLt matmul "
                     "instead of a fill, a GEMM and an addition kernel; "
                     "ga-gpu-gemm-to-blas bias-epilogue)"),
      llvm::cl::init(true)};
  Option<bool> gpuSplitReductions{
      *this, "gpu-split-reductions",
      llvm::cl::desc("target=cuda: reductions with few results over many "
                     "elements (bias and gain gradients), and row "
                     "reductions (see gpu-reduction-lanes), in two stages "
                     "(ga-gpu-split-reductions), so that enough threads "
                     "share them; changes the summation order"),
      llvm::cl::init(true)};
  Option<int64_t> gpuSplitMinLength{
      *this, "gpu-split-min-length",
      llvm::cl::desc("target=cuda: split only reductions over at least "
                     "this many elements (ga-gpu-split-reductions "
                     "min-length)"),
      llvm::cl::init(256)};
  Option<int64_t> gpuSplitMinThreads{
      *this, "gpu-split-min-threads",
      llvm::cl::desc("target=cuda: split reductions with fewer results "
                     "than this into at most this many partial results "
                     "(ga-gpu-split-reductions min-threads; the default is "
                     "about the threads an H100 or H200 keeps resident)"),
      llvm::cl::init(262144)};
  Option<int64_t> gpuReductionLanes{
      *this, "gpu-reduction-lanes",
      llvm::cl::desc("target=cuda: row reductions (softmax, layer norm, "
                     "the loss's row statistics) over at least "
                     "gpu-split-min-length elements as this many interleaved "
                     "partial reductions per row, so that a warp reads "
                     "consecutive elements (ga-gpu-split-reductions lanes); "
                     "below 2: one thread per row"),
      llvm::cl::init(32)};
  Option<int64_t> gpuVectorWidth{
      *this, "gpu-vector-width",
      llvm::cl::desc("target=cuda: elements per thread of an elementwise "
                     "kernel, with aligned vector loads and stores "
                     "(ga-gpu-map-parallel-loops vector-width: 1, 2 or 4; "
                     "1: scalar code)"),
      llvm::cl::init(4)};
  Option<bool> gpuFusion{
      *this, "gpu-fusion",
      llvm::cl::desc("target=cuda: fewer kernels, bitwise the same results: "
                     "elementwise producers also fused into reductions, "
                     "and cheap ones with several users into each of them "
                     "(ga-fuse-elementwise into-reductions recompute-cheap, "
                     "with fuse), adjacent loop nests of the same "
                     "iteration space into one kernel "
                     "(ga-gpu-map-parallel-loops fuse-loops), and adjacent "
                     "single-thread kernels into one (ga-gpu-device-code "
                     "fuse-single-threads)"),
      llvm::cl::init(true)};
  Option<bool> gpuRowFusion{
      *this, "gpu-row-fusion",
      llvm::cl::desc("target=cuda, with gpu-fusion: runs of loop nests over "
                     "the same rows (a row's statistics and the "
                     "elementwise operations that read them) as one "
                     "kernel, a row per group of threads, barriers between "
                     "the nests (ga-gpu-map-parallel-loops fuse-rows)"),
      llvm::cl::init(true)};
  Option<bool> gpuPrefetchGathers{
      *this, "gpu-prefetch-gathers",
      llvm::cl::desc("target=cuda: each all-gather (shard=3's gathers of the "
                     "parameters before their readers) starts on the "
                     "collective stream while the previous one's reader "
                     "computes (ga-gpu-prefetch-gathers); off under a "
                     "memory-budget, whose plan does not count the buffer "
                     "gathered ahead"),
      llvm::cl::init(true)};
  Option<std::string> kernelReport{
      *this, "kernel-report",
      llvm::cl::desc("target=cuda: write the kernel report to this file "
                     "(ga-gpu-kernel-report: each kernel's launch shape, "
                     "bytes, FLOPs, load width and bound at the device's "
                     "bandwidth and peak, and the cuBLAS products'; JSON "
                     "for a name ending in .json; - for standard output)"),
      llvm::cl::init("")};
  Option<std::string> device{
      *this, "device",
      llvm::cl::desc("target=cuda: the GPU the kernel report's bounds "
                     "assume: h100 or h200"),
      llvm::cl::init("h100")};
  Option<bool> gpuEmulate{
      *this, "gpu-emulate",
      llvm::cl::desc("target=cuda: run the device program on the CPU "
                     "instead (ga-gpu-emulate-on-host: each launch a loop "
                     "nest over its blocks and threads), lowered for ga-run: "
                     "a test of the mapping without a GPU"),
      llvm::cl::init(false)};
  Option<int64_t> gpuBlockSize{
      *this, "gpu-block-size",
      llvm::cl::desc("target=cuda: threads per block along the innermost "
                     "parallel dimension (ga-gpu-map-parallel-loops)"),
      llvm::cl::init(256)};
  Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Tile and vectorize the linalg operations where vector "
                     "code pays (ga-tile-and-vectorize); false keeps scalar "
                     "loops, the baseline of scripts/bench.py"),
      llvm::cl::init(true)};
  Option<bool> naive{
      *this, "naive",
      llvm::cl::desc("Split batches the usual, inexact way (train-split-batch "
                     "naive=true), to measure the error the exact split "
                     "removes"),
      llvm::cl::init(false)};
  Option<BatchStatistics> batchStatistics{
      *this, "batch-statistics",
      llvm::cl::desc("A batch statistic that depends on the parameters but "
                     "carries no gradient (a mixture's routing fractions) in "
                     "a split step: refuse (the default: the split is "
                     "refused, at the operation) or prepass (computed over "
                     "the whole batch before the micro-batches, with the "
                     "part of the forward it needs: train-split-batch "
                     "statistics-prepass)"),
      llvm::cl::init(BatchStatistics::Refuse)};
  Option<bool> checkLabels{
      *this, "check-labels",
      llvm::cl::desc("Check every cross-entropy label against [0, V) and "
                     "ignore_index when the step runs (train-check-labels); "
                     "false skips the check: invalid labels are then "
                     "clamped, not reported"),
      llvm::cl::init(true)};
  Option<bool> checkAsserts{
      *this, "check-asserts",
      llvm::cl::desc("Check the asserts a front end put into the step "
                     "(cf.assert) when it runs, on the runtime's error path "
                     "(train-check-asserts); false drops them: the gathers "
                     "they guard are clamped, failures not reported"),
      llvm::cl::init(true)};
  Option<bool> sliceMatmulRows{
      *this, "slice-matmul-rows",
      llvm::cl::desc("Compute only the rows of a matmul that a slice reads, "
                     "such as the LM head's logits of positions 0..S-2 "
                     "(ga-slice-matmul-rows; bitwise the same values)"),
      llvm::cl::init(true)};
  Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Fuse single-use elementwise producers into elementwise "
                     "consumers (ga-fuse-elementwise; bitwise the same "
                     "results)"),
      llvm::cl::init(true)};
  Option<bool> approximateMath{
      *this, "approximate-math",
      llvm::cl::desc("Compute exp and erf with MLIR's vectorizable polynomial "
                     "approximations (ga-approximate-math) instead of C "
                     "library calls"),
      llvm::cl::init(true)};
  Option<bool> outline{
      *this, "outline",
      llvm::cl::desc("Compile each distinct linalg operation once, as a "
                     "kernel function that its occurrences call "
                     "(ga-outline-kernels); false compiles every occurrence "
                     "inline"),
      llvm::cl::init(true)};
  Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Run the tile loops over output rows and columns on "
                     "OpenMP threads (ga-parallelize-loops; thread count from "
                     "OMP_NUM_THREADS or ga-run --num-threads); results are "
                     "bitwise the same for any thread count"),
      llvm::cl::init(true)};
  Option<bool> releaseBuffers{
      *this, "release-buffers",
      llvm::cl::desc("Free each buffer right after its last use and drop the "
                     "copies of returned buffers (ga-release-buffers); false "
                     "keeps MLIR's deallocation at the end of each block, "
                     "the baseline of the memory benchmark"),
      llvm::cl::init(true)};
  Option<int64_t> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("Fit each step into this many bytes (its buffers at "
                     "their peak plus its arguments) by checkpointing units "
                     "of its forward pass (train-plan-remat); 0: no "
                     "planning"),
      llvm::cl::init(0)};
  Option<bool> hostOffload{
      *this, "host-offload",
      llvm::cl::desc("target=cuda with memory-budget: buffers the step does "
                     "not read for a while (saved activations) may go to "
                     "pinned host memory and come back, on a second stream "
                     "(ga-gpu-offload-buffers); the planner weighs the "
                     "copies' estimated delay against recomputation"),
      llvm::cl::init(false)};
  Option<double> hostBandwidth{
      *this, "host-bandwidth",
      llvm::cl::desc("With host-offload: the host-device copy bandwidth in "
                     "GB/s each way that decides which copies hide"),
      llvm::cl::init(20.0)};
  Option<double> deviceTflops{
      *this, "device-tflops",
      llvm::cl::desc("With host-offload: the device's arithmetic rate in "
                     "TFLOP/s, which estimates the work that hides a copy "
                     "and prices a copy's delay against recomputation"),
      llvm::cl::init(50.0)};
  Option<OffloadCopies> offloadCopies{
      *this, "offload-copies",
      llvm::cl::desc("With host-offload: 'priced' offloads where the copies "
                     "are estimated to hide behind the work, then anywhere, "
                     "the copies' estimated delay weighed by the planner "
                     "against recomputation; 'hidden' only where they hide"),
      llvm::cl::init(OffloadCopies::Priced)};
  Option<int64_t> offloadMinBytes{
      *this, "offload-min-bytes",
      llvm::cl::desc("With host-offload: smaller buffers stay on the device"),
      llvm::cl::init(65536)};
  Option<int64_t> offloadBudget{
      *this, "offload-budget",
      llvm::cl::desc("With host-offload: the device bytes that offloading "
                     "aims for (0: memory-budget; the planner sets it for "
                     "the candidates it compiles without a budget)"),
      llvm::cl::init(0)};
  Option<int64_t> microbatches{
      *this, "microbatches",
      llvm::cl::desc("Micro-batches per step: every train.step's count set "
                     "to K before the split (0: as written in the step); "
                     "the same K as ga-train's, ga-run's, ga-compile's and "
                     "ga-import's --microbatches; the planner's choice of the "
                     "count is choose-microbatches"),
      llvm::cl::init(0)};
  Option<int64_t> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Data-parallel ranks: every train.step's `data_parallel` "
                     "set to R before the split (0: as written in the step); "
                     "a library compiled for R ranks runs under mpirun -np R "
                     "(docs/distributed.md)"),
      llvm::cl::init(0)};
  Option<int64_t> shard{
      *this, "shard",
      llvm::cl::desc("Sharding stage of data-parallel steps: every rank "
                     "holds 1/r of the optimizer's state (1), also of the "
                     "gradients (2), also of the parameters (3); every "
                     "train.step's `shard` set before "
                     "the split (-1: as written in the step; "
                     "docs/distributed.md)"),
      llvm::cl::init(-1)};
  Option<bool> shardAccumulators{
      *this, "shard-accumulators",
      llvm::cl::desc("At shard=2 and 3 with several micro-batches, each "
                     "micro-batch's gradients are reduce-scattered and the "
                     "rank accumulates its shards (1/r of the accumulator; "
                     "k reduce-scatters per step, the ranks summed before "
                     "the micro-batches); false: the whole gradients are "
                     "accumulated and reduce-scattered once per step, in "
                     "the replicated step's order (docs/distributed.md)"),
      llvm::cl::init(true)};
  Option<bool> chooseMicrobatches{
      *this, "choose-microbatches",
      llvm::cl::desc("train-plan-remat chooses each step's micro-batch "
                     "count (a divisor of its batch per rank) with its "
                     "checkpoints, for the least estimated time under "
                     "memory-budget"),
      llvm::cl::init(false)};
  Option<bool> buffersOnly{
      *this, "buffers-only",
      llvm::cl::desc("Stop after bufferization and deallocation: the memref "
                     "IR that the memory model reads "
                     "(--test-train-memory-model)"),
      llvm::cl::init(false)};

  /// target=cuda: the CUDA-only options, typed; std::nullopt for any
  /// other target.
  std::optional<CudaTargetOptions> cudaTarget() const;

  /// How attention is computed: `attention` with auto resolved.
  AttentionForm attentionForm() const;
  /// Whether the products read bfloat16 operands that the step makes
  /// (precision=bf16-mixed or bf16).
  bool bf16Products() const { return precision != Precision::F32; }

  /// Checks the values that the options' types and parsers do not (ranges,
  /// options that exclude or need each other; the CUDA-only ones through
  /// CudaTargetOptions::verify); on failure writes the reason to `errors`.
  mlir::LogicalResult verify(llvm::raw_ostream &errors) const;

  /// Calls `fn` with the name and description of every option, in the
  /// order of their names (PipelineFlags offers them as a tool's flags).
  void forEachOption(
      llvm::function_ref<void(llvm::StringRef name, llvm::StringRef help)> fn)
      const;
};

/// The pipeline, for either target: records signatures, checks and splits
/// the batch schedule (normalizing mean losses first), differentiates,
/// removes checkpoints, lowers train ops to linalg and micro-batch loops to
/// scf, makes the target's kernels on tensors (target=cpu: outlined, tiled
/// and vectorized; target=cuda: reductions in two stages), bufferizes
/// (one-shot, function boundaries included, with each buffer freed after
/// its last use), and lowers everything to the LLVM dialect (target=cuda:
/// kernels to a gpu.binary), unless `buffersOnly`. Every pass is created
/// with its typed options; the ordering constraints are commented where
/// the pipeline is built (lib/Pipelines/: Pipelines.cpp, CPUPipeline.cpp,
/// CUDAPipeline.cpp). Fails, with the reason on `errors`, when
/// `options.verify` does.
mlir::LogicalResult buildGaPipeline(mlir::OpPassManager &pm,
                                    llvm::raw_ostream &errors,
                                    const GaPipelineOptions &options);

/// The former name of buildGaPipeline (it builds both targets).
inline mlir::LogicalResult buildCPUPipeline(mlir::OpPassManager &pm,
                                            llvm::raw_ostream &errors,
                                            const GaPipelineOptions &options) {
  return buildGaPipeline(pm, errors, options);
}

/// target=cuda: gpu-module-to-binary with the pipeline's toolkit, producing
/// `format` (bin, fatbin or isa), for tools that run the pipeline with
/// gpu-format=none.
void addGpuModuleToBinary(mlir::OpPassManager &pm,
                          const CudaTargetOptions &cuda, GpuFormat format);

/// The rest of the CPU pipeline after a `buffers-only` one: parallel loops,
/// and the lowering to the LLVM dialect.
void addCPULoweringFromBuffers(mlir::OpPassManager &pm,
                               const GaPipelineOptions &options);

/// Registers `--ga-pipeline` (both targets).
void registerGaPipelines();

} // namespace ga

#endif // GA_PIPELINES_PIPELINES_H
