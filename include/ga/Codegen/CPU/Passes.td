//===- Passes.td - ga-opt CPU code generation --------------*- tablegen -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The passes of target=cpu, in the order ga-pipeline runs them: kernels tiled
// and vectorized, approximate math, parallel tile loops to OpenMP.
//
//===----------------------------------------------------------------------===//

#ifndef GA_CODEGEN_CPU_PASSES_TD
#define GA_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def GaTileAndVectorizePass : Pass<"ga-tile-and-vectorize"> {
  let summary = "Tile linalg operations on tensors and vectorize the tiles";
  let description = [{
    The vectorization stage of the CPU pipeline. It runs on linalg operations
    with tensor semantics, before bufferization, and only where vector code
    pays: the operation has static shapes, indexing maps that are projected
    permutations, no gather (`tensor.extract`) or `linalg.index` in its body,
    and the innermost dimension of its result is a parallel loop whose size is
    a multiple of `vector-width`. Everything else is left to the scalar loops
    of `convert-linalg-to-loops`.

    Such an operation is tiled with `scf.for` loops (`vector-width` along the
    result's innermost dimension; `register-rows` along the one before it
    when the operation reduces, so that a contraction keeps a block of
    accumulators in registers; `vector-width` along every reduction dimension
    whose size it divides, otherwise the whole dimension up to 64 and the
    largest divisor of a longer one up to `vector-width`; 1 elsewhere) and
    each tile becomes vector code (`vector.transfer_read`,
    `vector.contract`, `vector.multi_reduction`, elementwise vector
    arithmetic). Reductions keep their order within a tile row, so results
    can differ from the scalar loops only by floating-point reassociation
    across the tiled reduction and by fused multiply-adds. A reduction is
    vectorized whatever its length, so that a micro-batch sums its tokens
    with the same operations as the full batch.

    The outer tile loops over parallel dimensions (outside every reduction
    loop) of an operation of at least 16384 points are marked
    `train.parallel`, for `ga-parallelize-loops`; not those of `linalg.fill`,
    which stores at memory speed.

    Example: `ga-opt --ga-tile-and-vectorize` turns a `linalg.matmul` of
    `tensor<128x32xf32>` by `tensor<32x64xf32>` into a loop nest over 4x8
    blocks of the result whose body is a `vector.contract` of
    `vector<4x8xf32>` and `vector<8x8xf32>`.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"8",
           "Vector length along the innermost result dimension">,
    Option<"registerRows", "register-rows", "int64_t", /*default=*/"4",
           "Rows of a reduction's result computed together in one tile">,
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect",
  ];
}

def GaApproximateMathPass : Pass<"ga-approximate-math"> {
  let summary = "Vectorizable polynomial forms of exp and erf";
  let description = [{
    Rewrites `math.exp` and `math.erf` on `f32` (scalars and vectors) into
    MLIR's polynomial approximations (arith operations), so that the vector
    code of softmax, cross-entropy and GELU stays vector code instead of
    calling the C library once per lane. The approximations are accurate to
    a few units in the last place; they are deterministic, so results stay
    bitwise the same for any split, rank count and thread count.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::vector::VectorDialect",
    "::mlir::math::MathDialect",
  ];
}

def GaExpandIntegerMathPass : Pass<"ga-expand-integer-math"> {
  let summary = "Integer math operations as arith, for vector code";
  let description = [{
    Rewrites `math.absi x` (scalars and vectors of any rank) into
    `arith.maxsi(x, 0 - x)`, which the lowering to LLVM takes at every
    vector shape (`convert-math-to-llvm` does not take the n-D vectors that
    ga-tile-and-vectorize makes of it). PyTorch's `abs` of integer
    positions (T5's relative position buckets) imports as `math.absi`.
    Exact: the same values, also for the minimum integer (both wrap).

    ```mlir
    %a = math.absi %x : vector<1x8xi64>
    // becomes
    %zero = arith.constant dense<0> : vector<1x8xi64>
    %n = arith.subi %zero, %x : vector<1x8xi64>
    %a = arith.maxsi %x, %n : vector<1x8xi64>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def GaParallelizeLoopsPass : Pass<"ga-parallelize-loops"> {
  let summary = "Run the parallel tile loops on threads (scf.parallel)";
  let description = [{
    Turns every outermost `scf.for` marked `train.parallel` (by
    `ga-tile-and-vectorize`: a loop over tiles of a parallel dimension,
    outside every reduction loop of its nest, in an iteration space of at
    least 16384 points) into an `scf.parallel`, which `convert-scf-to-openmp`
    runs on OpenMP threads. The marks of the loops nested in it are
    dropped. A marked loop that still carries values (it runs before
    bufferization) stays a loop.

    Each iteration computes its own tile of the results, with the same
    instructions in the same order as on one thread: results are bitwise the
    same for any number of threads (`OMP_NUM_THREADS`, `ga-run --num-threads`).
    Reductions are never split between threads.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

#endif // GA_CODEGEN_CPU_PASSES_TD
