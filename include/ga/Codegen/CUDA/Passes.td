//===- Passes.td - ga-opt CUDA code generation -------------*- tablegen -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The passes of target=cuda, in the order ga-pipeline runs them: reductions
// in two stages (on tensors); then, on the bufferized step, matrix products
// to cuBLAS, loops mapped to blocks and threads, the remaining host code
// moved to the device (or, with gpu-emulate, the device program run on the
// CPU), and, on the LLVM dialect, the step's buffers allocated by the CUDA
// runtime. The pipeline itself: lib/Pipelines/CUDAPipeline.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef GA_CODEGEN_CUDA_PASSES_TD
#define GA_CODEGEN_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def GaGpuSplitReductionsPass
    : Pass<"ga-gpu-split-reductions", "::mlir::func::FuncOp"> {
  let summary = "Split long reductions in two stages, so that enough GPU "
                "threads share them and neighbouring threads read "
                "neighbouring elements";
  let description = [{
    The CUDA target, on tensors, before bufferization. Each result of a
    reduction runs sequentially on one GPU thread (no float atomics), so a
    reduction with few results over many elements, such as the gradient of
    a bias or a layer-norm gain (one column sum per feature over every
    token), would run on a few hundred threads. Such a `linalg.generic`
    (one reduction dimension of static size `R`, fewer than `min-threads`
    results `P`, a combiner that `linalg::splitReduction` recognizes, such
    as `arith.addf`) becomes two: partial reductions over `c` chunks of `R /
    c` consecutive elements each (`c * P` threads, the chunk dimension
    outermost so that threads of a warp read consecutive results'
    elements), then the reduction of the `c` partial results onto the
    original output. `c` is the divisor of `R` that makes the longest
    sequential chain, `R / c + c` additions, shortest (the one nearest
    `sqrt(R)`), with `c * P <= min-threads` and chunks of at least
    `min-chunk` elements; reductions over fewer than `min-length` elements,
    and those where no such `c > 1` exists, are left alone.

    Row reductions (the reduced dimension is the last loop and the
    innermost, contiguous dimension of every input that reads it, as in a
    softmax's or a layer norm's row sums, or the cross-entropy's row maximum
    and sum of exponentials) with enough results otherwise run one row per
    thread, and the threads of a warp read elements a whole row apart. With
    `lanes = L` (default 32, a warp), such a reduction over `R >=
    min-length` elements (`R` a multiple of `L`) becomes `L` interleaved
    partial reductions per row: lane `l` sums elements `l, l + L, l + 2L,
    ...` (the lane dimension is the innermost parallel one, so the threads
    of a warp read `L` consecutive elements in each step), then each row's
    `L` partial results are reduced in lane order. Where both splits apply
    (few rows), lanes are taken unless chunks give more threads (`c > L`,
    as for a full reduction), with chunks of a row reduction counted up to
    16384 threads only (a warp's lanes read consecutive elements, chunks of
    rows a row apart). `lanes` below 2 turns this off.

    `min-threads` (default 262144, about the threads an H100 or H200 keeps
    resident): on GPT-2 124M's shape (4096 tokens) at the earlier 16384,
    the bias gradient of the 3072-wide MLP layer ran in 4 chunks of 1024
    rows on 48 blocks, 0.39 ms per layer on an H200; at 262144 (64 chunks
    of 64 rows) the step's kernels and GEMMs took 124.0 ms instead of
    130.5 ms (`GA_CUDA_PROFILE`, one campaign).

    A row's maximum followed by the sum of the row's exponentials shifted
    by it (`exp(x - max) + acc`, from zero: the cross-entropy's statistics,
    a softmax's), which read each row twice, become one pass where the row
    would be split into lanes: each lane keeps an online pair, its maximum
    and its sum rescaled to it (`m = max(m, x)`, `s = s exp(m_old - m) +
    exp(x - m)`), then the lanes' pairs are combined in lane order onto the
    maximum's init (`s = s1 exp(m1 - m) + s2 exp(m2 - m)`; 0 while the
    maximum is -inf). On GPT-2 124M at B 16 this reads the [N, V] logits
    once instead of twice (3.3 GB a step).

    The summation order changes (results differ from the CPU pipeline's
    in the last bits) but stays fixed: the same bits run to run. A maximum
    keeps its bits.

    Example: the column sums `linalg.generic {iterator_types = ["reduction",
    "parallel"]} ins(%g : tensor<1024x128xf32>) outs(%b : tensor<128xf32>)`
    become a generic over `[32, 32, 128]` with a `tensor<32x128xf32>`
    result (`4096` threads), then a reduction over the `32` partial sums.
    The row sums of a `tensor<16384x1024xf32>` become partial sums into a
    `tensor<16384x32xf32>` (each of `16384 * 32` threads sums `32`
    elements), then the `32` partial sums of each row.
  }];
  let options = [
    Option<"minThreads", "min-threads", "int64_t", /*default=*/"262144",
           "Split reductions with fewer results than this, into at most "
           "this many partial results (the default: about the threads an "
           "H100 or H200 keeps resident, 132 SMs x 2048)">,
    Option<"minChunk", "min-chunk", "int64_t", /*default=*/"8",
           "The fewest elements each partial reduction sums">,
    Option<"minLength", "min-length", "int64_t", /*default=*/"256",
           "Split only reductions over at least this many elements (below, "
           "the two extra launches cost more than the shorter chain saves)">,
    Option<"lanes", "lanes", "int64_t", /*default=*/"32",
           "Interleaved partial reductions per row of a row reduction (a "
           "warp's threads); below 2: row reductions are left alone">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def GaGpuGemmToBlasPass : Pass<"ga-gpu-gemm-to-blas", "::mlir::ModuleOp"> {
  let summary = "Run the step's matrix products with cuBLAS";
  let description = [{
    The CUDA target, on buffers, before `ga-gpu-map-parallel-loops`: every
    f32 multiply-accumulate `linalg` operation (`linalg.matmul` in any
    layout, or a `linalg.generic` whose body is `acc + x * y`) with one m,
    one n and one k dimension, static shapes and strides, and a contiguous
    dimension in each matrix, becomes a call of the CUDA runtime's
    `ga_cuda_gemm_f32(transA, transB, accumulate, m, n, k, A, offset, lda,
    B, offset, ldb, C, offset, ldc)`, which accumulates `C += op(A) op(B)`
    with cuBLAS on the step's stream, in float32 arithmetic (no TF32).
    Transpositions and leading dimensions come from the strides; a C
    stored column by column is computed as `C^T = op(B)^T op(A)^T`. A
    product from zero (C a fresh buffer that only a fill of zeros touches
    before it) gets `accumulate = 0`: cuBLAS writes C without reading it
    (beta 0) and the fill goes, one kernel and a read of C fewer, with the
    same results.

    Batch dimensions (the attention's contractions per sequence and head)
    and a scale (a body `acc + (x * y) * s`, `acc + (x * s) * y` or `acc +
    (y * s) * x` with `s` defined outside the operation) go to
    `ga_cuda_gemm_batched_f32(transA, transB, accumulate, m, n, k, count,
    alpha, order, A, offset, lda, strideA, B, ..., C, ...)`, the scale as
    alpha (`order` tells the CPU emulation in which order the step
    multiplied). Batch dimensions that every matrix lays out as one (a
    `[b, h, s, d]` block's `b` and `h`) merge into one strided batch. Two
    that do not (the heads of every sequence where Q, K and V are slices of
    one `[b, s, 3 h d]` projection) go to `ga_cuda_gemm_batched2_f32(...,
    outer, count, alpha, order, A, offset, lda, outerStrideA, strideA, B,
    ..., C, ...)`: one cuBLAS call over `outer x count` products on arrays
    of pointers, the widest dimension inner; host `scf.for` loops over any
    further ones advance the offsets. Other forms stay linalg operations
    and become kernels.

    With `allow-tf32`, the calls go to `ga_cuda_gemm_f32_tf32` and
    `ga_cuda_gemm_batched_f32_tf32` (same arguments), which let cuBLAS use
    TF32 tensor cores (10-bit mantissas in the products: faster, less
    exact). With `allow-bf16`, they go to `ga_cuda_gemm_f32_bf16` and
    `ga_cuda_gemm_batched_f32_bf16`: the float32 matrices are read as
    bfloat16 (8-bit mantissas, rounded to nearest) and multiplied on bf16
    tensor cores, products and sums in float32
    (`CUBLAS_COMPUTE_32F_FAST_16BF`); the CPU emulation rounds the inputs
    the same way. The two options exclude each other.

    With `bias-epilogue` (the default), a product without batch dimensions
    or scale whose C is a fresh buffer filled with zeros and read only by
    a bias addition (`linalg.generic` `D[i, j] = C[i, j] + bias[j]`, the
    bias contiguous, D a fresh row-major buffer, no write to memory between
    the two) becomes one call of `ga_cuda_gemm_bias_f32(transA, transB, m,
    n, k, A, offset, lda, B, offset, ldb, bias, offset, D, offset, ldd)`
    (or its `_tf32` and `_bf16` forms), a cuBLASLt matmul with the bias
    epilogue (`CUBLASLT_EPILOGUE_BIAS`): it writes D without reading it,
    and the zero fill, the read of C and the addition's kernel go. C
    (then unused) is not allocated. The results keep their bits: each
    element is the float32 sum of its products, rounded once more by the
    addition of its bias, as before.

    A product of bfloat16 operands whose C is read only by its rounding to
    bfloat16 (`D[i, j] = bf16(C[i, j])`, precision=bf16's per-example
    products), or with `bias-epilogue` by its rounded bias addition (`D[i,
    j] = bf16(C[i, j] + f32(bias[j]))`, a bfloat16 bias), becomes one call
    of `ga_cuda_gemm_bf16_bf16in(transA, transB, m, n, k, A, offset, lda,
    B, offset, ldb, D, offset, ldd)` or `ga_cuda_gemm_bias_bf16_bf16in`
    (the bias operands too): a cuBLASLt matmul that writes the bfloat16 D
    (the float32 sum, plus the bias, rounded once), under the same
    conditions; the float32 C and the rounding's kernel go.

    Example: `linalg.matmul ins(%a, %b : memref<128x32xf32>,
    memref<32x64xf32>) outs(%c : memref<128x64xf32>)` becomes
    `call @ga_cuda_gemm_f32(%c0_i32, %c0_i32, %c1_i32, %c128, %c64, %c32,
    ...)`.
  }];
  let options = [
    Option<"biasEpilogue", "bias-epilogue", "bool", /*default=*/"true",
           "Add a bias that only reads a product from zero in the GEMM's "
           "epilogue (cuBLASLt)">,
    Option<"allowTF32", "allow-tf32", "bool", /*default=*/"false",
           "Let cuBLAS multiply in TF32 (tensor cores) instead of float32">,
    Option<"allowBF16", "allow-bf16", "bool", /*default=*/"false",
           "Let cuBLAS read the matrices as bfloat16 (tensor cores), with "
           "float32 products and sums">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def GaGpuMapParallelLoopsPass : Pass<"ga-gpu-map-parallel-loops"> {
  let summary = "Lower a bufferized step's linalg operations to parallel "
                "loops mapped to GPU blocks and threads";
  let description = [{
    The first stage of the CUDA target after bufferization. Every
    `memref.copy` of host code becomes a `linalg.copy` and every linalg
    operation a parallel loop nest (its reduction dimensions as sequential
    `scf.for` inside, so that no float atomics are needed and results are
    the same run to run). Each outermost `scf.parallel` is then tiled: the
    innermost dimension by `block-size` threads (rounded up to whole warps
    for short dimensions), and, when that leaves room in the block, the next
    dimension by as many of those rows of threads as fit in `block-size`
    (a power of two, no more than the dimension's extent), the others by
    one; the tile loop is mapped to the grid (innermost dimension on
    `blockIdx.x`, the next two on `y` and `z` when they fit CUDA's limits,
    the rest sequential), the loops inside the tile to `threadIdx.x` and
    `threadIdx.y`, so that neighbouring threads touch neighbouring elements
    and short rows still fill blocks. `convert-parallel-loops-to-gpu` turns
    the mapped loops into `gpu.launch` operations.

    An elementwise `linalg.generic` (every loop parallel, the body only
    elementwise operations and constants) whose innermost extent holds at
    least 32 groups of `vector-width` elements (4 by default) runs each
    group in one thread: `vector.load` and `vector.store` of the group,
    aligned to its size (`ld.global.v4` for 4 floats), and the body's
    operations on vectors, each element computed as the scalar code does.
    Each operand that reads the innermost dimension must have it innermost
    and contiguous, 32-bit elements, and static strides and offset that
    are multiples of the width in a buffer of the device allocator (a view
    of a `memref.alloc`: 256-byte aligned), so that the alignment holds;
    operands that do not read it (a bias read by row) are loaded once and
    broadcast. Other operations keep one element per thread.

    With `fuse-loops` (the default), adjacent loop nests over the same
    iteration space are fused before they are mapped, as
    `ga-gpu-fuse-parallel-loops` fuses them: one kernel where the conditions
    of that pass hold. With `fuse-rows` (the default) too, runs of loop
    nests over the same rows then become one kernel each, as that pass's
    `row-groups` makes them.

    Example: a `linalg.generic` over `memref<128x64xf32>` becomes a launch of
    32 blocks of 64 x 4 threads.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block along the innermost parallel dimension">,
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"4",
           "Elements per thread of an elementwise operation, with vector "
           "loads and stores (1, 2 or 4; 1: scalar code)">,
    Option<"fuseLoops", "fuse-loops", "bool", /*default=*/"true",
           "Fuse adjacent loop nests of the same iteration space whose "
           "shared buffers each iteration touches only at its own element "
           "(ga-gpu-fuse-parallel-loops) before mapping them">,
    Option<"fuseRows", "fuse-rows", "bool", /*default=*/"true",
           "Then make each run of adjacent loop nests over the same rows "
           "whose shared buffers each row touches only in its own row one "
           "kernel, a row per group of threads, barriers between the loops "
           "(ga-gpu-fuse-parallel-loops row-groups)">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect"];
}

def GaGpuFuseParallelLoopsPass : Pass<"ga-gpu-fuse-parallel-loops"> {
  let summary = "Fuse adjacent parallel loop nests of the same iteration "
                "space into one (one GPU kernel instead of two)";
  let description = [{
    On host code of the bufferized step, before loops are mapped to blocks
    and threads (`ga-gpu-map-parallel-loops` runs this step itself with
    `fuse-loops`; this pass is the step alone, for other pipelines and for
    tests). An `scf.parallel` loop nest without results, mapping or nested
    parallel loop is fused into the next one of the same bounds and steps
    when only allocations, deallocations (moved after the fused loop, past
    allocations of other block sizes only, so that the caching allocator's
    peak stays the same) and operations without memory effects lie
    between them, and every buffer both touch and one writes is touched in
    both only at the iteration's own element. The fused loop runs the first
    body and then the second in each iteration: the results are bitwise the
    same, in one kernel instead of two (a reduction's fill and the
    reduction, a row's statistics and the elementwise operation that reads
    them, sibling operations over the same shape).

    With `row-groups`, each run of such nests is then partitioned into the
    fewest consecutive groups (of up to 16 nests) that run as one
    `gpu.launch` each: the nests share their rows (each nest over the rows
    alone or over the rows and its columns), and no two rows share an
    element that one writes. Each block runs up to `block-size` / lanes
    rows, each row on `lanes` threads (at most 32), the nests in turn with
    `gpu.barrier` between them: a softmax's or a layer norm's statistics
    and the elementwise operations that read them become one kernel.

    The conditions in full, and examples: [The CUDA target](../cuda.md#fusing-parallel-loops-in-detail)
    (docs/cuda.md).
  }];
  let options = [
    Option<"rowGroups", "row-groups", "bool", /*default=*/"false",
           "Then make runs of loop nests over the same rows one kernel "
           "each (a row per group of threads, barriers between the "
           "nests)">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "row-groups: threads per block">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect"];
}

def GaGpuDeviceCodePass : Pass<"ga-gpu-device-code", "::mlir::ModuleOp"> {
  let summary = "Move the host code that touches step memory to the device";
  let description = [{
    Runs after `convert-parallel-loops-to-gpu`. On the CUDA target every
    buffer of a step is device memory, so no host operation may read or
    write it:

    - host operations that touch memory and hold no kernel (loop nests
      without a parallel dimension, such as full reductions to the loss sum
      or the token count, and stores) are wrapped in single-thread
      `gpu.launch` operations, except a perfect `scf.for` nest whose
      innermost iterations touch disjoint elements (every store indexed by
      the innermost variable last, loads of stored buffers at the store's
      indices: the embedding gradient's scatter-add), which runs one thread
      per innermost iteration, each running the outer loops in order;
    - a scalar that host code reads (`memref.load` whose value decides a
      branch, such as the label check's first invalid position) is read
      through the runtime's `ga_cuda_read_{f32,f64,i32,i64}(pointer,
      offset)`, which waits for the step's stream;
    - `memref.get_global` values used by kernels are re-created inside them,
      so that `gpu-kernel-outlining` copies the constants into the device
      module.

    The collectives of a data-parallel step (`ga_all_reduce_*`) become the
    CUDA runtime's `ga_cuda_all_reduce_*`, which stage the device buffer
    through host memory for MPI. Any other call that passes a memref to a
    host function is refused with an error at the call.

    With `fuse-single-threads` (the default), adjacent single-thread
    launches (the loss's sum, the token count, the optimizer's scalars)
    with only allocations, deallocations and operations without memory
    effects between them become one launch running their bodies in order;
    the deallocations move after it where only allocations of other block
    sizes lie between (the device's peak stays the same).
  }];
  let options = [
    Option<"fuseSingleThreads", "fuse-single-threads", "bool",
           /*default=*/"true",
           "Run adjacent single-thread launches as one">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def GaGpuPromoteAccumulatorsPass : Pass<"ga-gpu-promote-accumulators"> {
  let summary = "Carry a kernel loop's accumulator in a register instead of "
                "loading and storing it in every iteration";
  let description = [{
    The CUDA target, on `gpu.launch` bodies before outlining (after
    `ga-gpu-device-code`). linalg's lowering of a reduction loads and stores
    its accumulator (a row's maximum, a lane's partial sum, the loss's
    total) in memory in every iteration of the reduced loop: a chain of
    dependent memory operations per element, which LLVM cannot remove from
    an outlined kernel because it cannot tell the kernel's buffers apart.
    Here the buffers are still the host's allocations.

    An `scf.for` of a kernel whose own block loads and stores one element
    (the same buffer, defined outside the loop, at the same indices,
    computed outside the loop: the same values, or the same operations
    without memory effects on the same values) carries it as an iter_arg:
    one `memref.load` before the loop, each load in the body replaced by
    the value last stored before it (the iteration's incoming value before
    any store), the last stored value yielded, and one `memref.store` after
    the loop. Condition: nothing else in the loop may touch the element:
    every other operation's memory effects are known and on buffers that
    do not share memory with it (distinct allocations, an allocation and an
    argument); a barrier, a call, an access nested deeper than the loop's
    block to the same buffer, or an access to another element of it keep
    the loop as it is. Where the loop may run no iteration (bounds not
    constant), the load, the loop and the store run under `scf.if` (lower
    bound below the upper): a loop that runs no iteration makes no store
    and no load. Inner loops first, so a nested reduction's accumulator
    moves out of every loop that does not move it.

    Loads in kernels whose value nothing uses go first (linalg's lowering
    loads an output's element that the body does not read, such as the
    destination of a bfloat16 copy; LLVM would drop them, but the emulation
    and `ga-gpu-kernel-report` would count them).

    The same operations on the same values in the same order: the results'
    bits do not change (the emulation's comparison with the CPU checks it).
    Loop-invariant operations without memory effects move out of each loop
    first (`moveLoopInvariantCode`).

    Example: `scf.for %j = %c0 to %c64 step %c1 { %a = memref.load
    %acc[%r]; %x = memref.load %in[%r, %j]; %s = arith.addf %x, %a;
    memref.store %s, %acc[%r] }` becomes `%a0 = memref.load %acc[%r]; %s =
    scf.for ... iter_args(%a = %a0) { ... scf.yield %s }; memref.store %s,
    %acc[%r]`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def GaGpuEmulateOnHostPass
    : Pass<"ga-gpu-emulate-on-host", "::mlir::ModuleOp"> {
  let summary = "Run the GPU-mapped step on the CPU, launches as loops";
  let description = [{
    A test of the CUDA target without a GPU: after `ga-gpu-device-code`,
    every `gpu.launch` becomes the loop nest its grid and blocks run
    (blocks z, y, x, then threads z, y, x, with the block and thread ids
    the loops' induction variables), and the runtime's reads of device
    memory (`ga_cuda_read_*`) become the host runtime's (`ga_host_read_*`).
    The kernels of the CUDA pipeline use no shared memory; a kernel's
    `gpu.barrier` operations (the row groups of
    `ga-gpu-fuse-parallel-loops`) must lie in its body itself, not in a
    loop or branch, and split it into phases: each block runs each phase in
    all its threads before the next phase, as the barrier orders them on
    the device (values that a phase uses from an earlier one are computed
    again, which operations without memory effects and regions allow;
    others are refused). So the emulated step computes what the device
    computes, element by element in the same order; `--ga-pipeline="target=cuda
    gpu-emulate=true"` lowers the result for the CPU, ready for `ga-run`.
    Launches with shared or private memory, clusters or async tokens are
    refused.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def GaGpuPrefetchGathersPass
    : Pass<"ga-gpu-prefetch-gathers", "::mlir::ModuleOp"> {
  let summary = "Start each all-gather on the collective stream one reader "
                "ahead";
  let description = [{
    At `shard = 3` every parameter is gathered right before each operation
    that reads it (`train-gather-at-use`); on the device each gather
    (`ga_cuda_all_gather_<type>`, NCCL's `ncclAllGather`) would run on the
    step's stream between the computations. This pass splits every gather
    into `ga_cuda_all_gather_start_<type>`, which enqueues it on the
    runtime's collective stream (where every NCCL operation runs, in the
    order the host issues them) after what the step's stream has enqueued
    so far and returns a handle, and `ga_cuda_all_gather_wait` at the gather's place, which makes
    the step's stream wait for it before the reader. Where the previous
    gather of the same block has waited, the next gather starts right after
    (its buffer's allocation and its operands' casts move with it), so that
    it runs while the previous gather's reader computes: one gather ahead,
    as FSDP2 prefetches the next layer's parameters. A start moves only
    where nothing in between reads or writes the gathered shard (through any
    view of it) and its buffer is allocated for the gather alone; the first
    gather of a block (of a micro-batch loop's body) is not moved. The
    prefetch holds one more gathered parameter at a time. Where the
    runtime gathers on the step's stream (one rank, the host path without
    NCCL) the start gathers and the wait does nothing.

    ```mlir
    %a = memref.alloc() : memref<128xf32>
    call @ga_cuda_all_gather_f32(%shard0, %a)   // then reader 0 of %a
    %b = memref.alloc() : memref<128xf32>
    call @ga_cuda_all_gather_f32(%shard1, %b)   // then reader 1 of %b
    ```

    becomes

    ```mlir
    %a = memref.alloc() : memref<128xf32>
    %h0 = call @ga_cuda_all_gather_start_f32(%shard0, %a)
    call @ga_cuda_all_gather_wait(%h0)
    %b = memref.alloc() : memref<128xf32>
    %h1 = call @ga_cuda_all_gather_start_f32(%shard1, %b)
    // reader 0 of %a: runs while %b is gathered
    call @ga_cuda_all_gather_wait(%h1)
    // reader 1 of %b
    ```
  }];
}

def GaGpuKernelReportPass
    : Pass<"ga-gpu-kernel-report", "::mlir::ModuleOp"> {
  let summary = "Report each kernel's launch shape, bytes, FLOPs, load "
                "width and bound at a device's bandwidth and peak";
  let description = [{
    An analysis of the step once its kernels are outlined (after
    `ga-gpu-dedup-kernels`, before the NVVM lowering), for the step's static
    shapes; the IR is left as it is. For every `gpu.launch_func`, counted as
    often as the constant host `scf.for` loops around it run it:

    - the grid and the block (constants);
    - the bytes read and written: each memref argument the kernel loads
      from (`memref.load`, `vector.load`, `vector.transfer_read`, through
      views) counts its launch operand's elements once as read, each it
      stores to once as written (the traffic of a kernel that touches every
      element once: its floor);
    - the bytes its loads issue (each load's width times how often it runs:
      the constant `scf.for` loops around it in the kernel, times the
      threads launched; guards are taken as passed, so this is an upper
      bound), and their ratio to the bytes read: a row read again by every
      nest of a row group shows as 2.0 or more;
    - its FLOPs (floating-point `arith` and `math` operations, a fused
      multiply-add as 2, vectors by their elements, counted as the loads);
    - its load widths (the narrowest and widest load, in bytes: 4 for
      scalar float32 loads, 16 for `vector<4xf32>`);
    - its bound: the larger of its bytes (read and written) at the device's
      bandwidth and its FLOPs at the device's float32 peak, in
      microseconds;
    - where it came from: its launch's source lines (`file:line`, a fused
      kernel's first three; for an imported model, the model's Python
      lines), and how many launch sites the row counts.

    Launches of the same kernel with the same shape and operand types are
    one row. The products that `ga-gpu-gemm-to-blas` handed to cuBLAS are
    listed beside them (`ga_cuda_gemm*` calls: 2 m n k FLOPs per product,
    the operands read and C written once, C read too where the product
    accumulates), bound at the tensor peak of their precision. The totals
    give the step's floor at the device: the kernels' share of it is what
    streaming kernels can win.

    For a kernel that scales 1,024 float32 values (4 blocks of 256
    threads, one load, a multiply and an add per thread, launched once and
    then 3 times in a host loop) on `device=h200`:

    ```
    launches       grid      block       read B    written B        FLOPs  issued load B   bound us  kernel
           4      4x1x1    256x1x1         4096         4096         2048    1.00      4      0.002  k1::scale  [step.mlir:95, 2 sites]
    ```

    (`test/Codegen/CUDA/gpu-kernel-report.mlir` counts this and two more
    kernels by hand.)

    `device` presets: `h100` (3.0 TB/s, the copy bandwidth measured on an
    H100 SXM; 67 TFLOP/s float32, 495 TF32, 989 bfloat16 dense) and `h200`
    (4.3 TB/s measured on an H200; the same peaks); `bandwidth-gbs` and
    `peak-tflops` (float32) override them. `output` is a file (a table, or
    JSON for a name ending in `.json`), `-` for standard output.
  }];
  let options = [
    Option<"output", "output", "std::string", "\"-\"",
           "Where the report goes: a file (JSON when its name ends in "
           "`.json`, else a table), or - for standard output">,
    Option<"device", "device", "std::string", "\"h100\"",
           "The device the bounds assume: h100 or h200">,
    Option<"bandwidthGBs", "bandwidth-gbs", "double", "0",
           "The device's memory bandwidth in GB/s (0: the preset's)">,
    Option<"peakTflops", "peak-tflops", "double", "0",
           "The device's float32 peak in TFLOP/s for the kernels (0: the "
           "preset's)">,
  ];
}

def GaGpuDedupKernelsPass
    : Pass<"ga-gpu-dedup-kernels", "::mlir::ModuleOp"> {
  let summary = "Keep one device module per distinct kernel";
  let description = [{
    Runs after `gpu-kernel-outlining`, which makes one `gpu.module` per
    `gpu.launch`: a model whose layers repeat the same operations then
    compiles the same kernel once per use. Two device modules whose printed
    form is the same once their own names are set aside (the module's
    symbol and its kernels' symbols) hold the same code; the
    `gpu.launch_func` operations of the second are redirected to the
    kernels of the first, and the second is erased (unless something other
    than a launch names it). Launch configurations and arguments stay as
    they are, so the step computes the same values with fewer kernels to
    compile: GPT-2 124M's step at B 1, S 128 had 1,931 launches and 118
    distinct kernels before `gpu-fusion`, 1,207 and 115 with it.

    ```mlir
    gpu.launch_func @step_kernel::@step_kernel ... args(%a : memref<64xf32>)
    gpu.launch_func @step_kernel_0::@step_kernel ... args(%b : memref<64xf32>)
    gpu.module @step_kernel { gpu.func @step_kernel(...) kernel { BODY } }
    gpu.module @step_kernel_0 { gpu.func @step_kernel(...) kernel { BODY } }
    ```

    becomes

    ```mlir
    gpu.launch_func @step_kernel::@step_kernel ... args(%a : memref<64xf32>)
    gpu.launch_func @step_kernel::@step_kernel ... args(%b : memref<64xf32>)
    gpu.module @step_kernel { gpu.func @step_kernel(...) kernel { BODY } }
    ```

    The pass never fails; modules that differ in anything but their names
    (another constant, another type) stay apart
    (`test/Codegen/CUDA/gpu-dedup-kernels.mlir`).
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def GaGpuOffloadBuffersPass
    : Pass<"ga-gpu-offload-buffers", "::mlir::ModuleOp"> {
  let summary = "Move buffers the step does not read for a while to host "
                "memory and back, to fit a device budget";
  let description = [{
    The CUDA target, on the bufferized step (each buffer freed after its
    last use, as the memory model reads it), when the step's device bytes
    exceed `budget`. The device bytes are what the CUDA runtime's caching
    allocator holds (for each 512-byte block size, the most blocks of that
    size alive at once), the inputs and `fixed-bytes` (cuBLAS's workspace).

    A buffer allocated and freed in one block whose uses the pass follows
    (views, reads and writes in that block) has stretches between two
    consecutive accesses. Its longest stretch whose two copies hide behind
    the stretch's estimated work (`host-bandwidth` GB/s for the copies,
    `device-tflops` for the work, at least `launch-microseconds` per
    kernel or copy) is where it may leave the device:

    ```mlir
    linalg.generic ... outs(%x : memref<...>)    // last access before
    %p = memref.extract_aligned_pointer_as_index %x : memref<...> -> index
    %h = func.call @ga_cuda_offload(%p, %bytes) : (index, index) -> i64
    memref.dealloc %x
    ...                                          // the stretch
    %y = memref.alloc() : memref<...>            // early enough to hide
    %q = memref.extract_aligned_pointer_as_index %y : memref<...> -> index
    func.call @ga_cuda_reload(%h, %q) : (i64, index) -> ()
    ...
    func.call @ga_cuda_reload_wait(%h) : (i64) -> ()
    linalg.generic ins(%y : memref<...>) ...     // next access
    ```

    The runtime copies on a second stream, ordered after what the step
    enqueued before each call; a block freed by an offload is reused only
    after its copy. The values do not change.

    While the device bytes exceed the budget, the pass lowers the count of
    one block size by one: the size whose most-alive positions the fewest
    stretches cover (greedily), the largest size among equals; it stops
    when no size can be lowered or when the copies together would take
    longer than the step's estimated work.

    With `copies=priced` (the default), once that stops, the buffers with
    no stretch whose copies hide may go too, each over its longest stretch
    (the reload placed where the work left covers it, else right before
    the reader), with no bound on the copies' total: the pass fits the
    budget whatever the copies cost, and says what they cost; with
    `copies=hidden` it stops there. Either way, the copies' delay is
    estimated by running the step's work on one stream and the copies, in
    the order issued, on another (an offload after its buffer's last
    access, a reload at its place once the copies before it end, the
    reader waiting for its reload): copies that each hide may still delay
    the step when they queue.

    The function gets `ga.host_offload = {buffers = N, bytes = B,
    exposed_seconds = S, exposed_work = W}`: N offloads in the code, B bytes
    copied each way per call (a micro-batch loop's body counted once per
    micro-batch), S the estimated seconds by which the copies delay a call,
    W the work the device does in that time at `device-tflops` (in
    operations: what train-plan-remat weighs against recomputation).
    With `budget` 0 the pass does nothing.
  }];
  let options = [
    Option<"budget", "budget", "int64_t", /*default=*/"0",
           "The device bytes to fit (0: offload nothing)">,
    Option<"fixedBytes", "fixed-bytes", "int64_t", /*default=*/"0",
           "Device bytes held beside the step (cuBLAS's workspace)">,
    Option<"hostBandwidth", "host-bandwidth", "double", /*default=*/"20.0",
           "Host-device copy bandwidth in GB/s, each way">,
    Option<"deviceTflops", "device-tflops", "double", /*default=*/"50.0",
           "The device's arithmetic rate in TFLOP/s, to estimate work">,
    Option<"launchMicroseconds", "launch-microseconds", "double",
           /*default=*/"4.0",
           "The least time of a kernel or a copy, in microseconds">,
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"65536",
           "Smaller buffers stay on the device">,
    Option<"copies", "copies", "::ga::OffloadCopies",
           /*default=*/"::ga::OffloadCopies::Priced",
           "'priced': copies that hide first, then any stretch, the "
           "delay estimated; 'hidden': only copies estimated to hide">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def GaGpuDeviceAllocationsPass
    : Pass<"ga-gpu-device-allocations", "::mlir::ModuleOp"> {
  let summary = "Allocate the step's buffers in device memory";
  let description = [{
    Runs on the LLVM dialect, after `finalize-memref-to-llvm` with
    `use-generic-functions`: the declarations and calls of
    `_mlir_memref_to_llvm_alloc`, `_mlir_memref_to_llvm_aligned_alloc` and
    `_mlir_memref_to_llvm_free` are renamed to `ga_cuda_alloc`,
    `ga_cuda_aligned_alloc` and `ga_cuda_free`, which `libga_cuda_runtime`
    implements with device memory (a caching allocator on the step's
    stream that counts the step's peak bytes).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // GA_CODEGEN_CUDA_PASSES_TD
