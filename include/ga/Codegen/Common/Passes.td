//===- Passes.td - ga-opt code generation, both targets ----*- tablegen -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The code generation passes that both targets run, in the order ga-pipeline
// runs them: elementwise fusion, kernel outlining, bufferization, and the
// deallocation of each buffer after its last use.
//
//===----------------------------------------------------------------------===//

#ifndef GA_CODEGEN_COMMON_PASSES_TD
#define GA_CODEGEN_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

def GaFuseElementwisePass : Pass<"ga-fuse-elementwise"> {
  let summary = "Fuse elementwise linalg producers into elementwise consumers";
  let description = [{
    Fuses a `linalg.generic` into the `linalg.generic` that reads its
    result when the producer is elementwise (all loops parallel), its result
    has no other user, and the consumer's loops are all parallel too: a bias
    added to a matmul's result, GELU and its adjoint, the pieces of a layer
    norm and of their adjoints, residual additions. The fused operation
    computes the same scalar operations on the same values (no value is
    recomputed, no reduction is touched), so results are bitwise unchanged,
    and the intermediate tensor is neither written nor read back.

    With `into-reductions`, the consumer may also reduce (a row sum of
    squares, the sum of a softmax's exponentials): the producer's element is
    still read once, by the one iteration of the reduction that read it
    from memory, and computed by the same operations, so the results keep
    their bits; the reduction's body grows by the producer's, which suits a
    GPU thread that sums a row but can keep the CPU's vector code from
    applying (`target=cuda` sets it).

    With `recompute-cheap`, a producer of at most three arithmetic
    operations (a centering `x - mean`, a scaling, a mask) with several
    users is fused into each of them when all can take it in: every user
    computes it again from the same operands with the same operations (the
    same bits), and its tensor is neither written nor read back, which on
    a GPU costs more than the operations (`target=cuda` sets it).

    Last, an elementwise operation with several results drops those that
    nothing reads; an init the body reads becomes an input (a fused
    producer that computed in place over its init, such as the
    cross-entropy's gradient over the logits with bf16-mixed, whose
    bfloat16 copy is the only result read): the element is read as before
    and no longer written back (on GPT-2 124M at B 16, 3.3 GB a step).

    Run it after `train-lower-accumulate` (whose in-place accumulation looks
    at the producers of the gradients) and before `ga-outline-kernels`.
  }];
  let options = [
    Option<"intoReductions", "into-reductions", "bool", /*default=*/"false",
           "Also fuse into consumers with reduction loops (each producer "
           "element still computed once)">,
    Option<"recomputeCheap", "recompute-cheap", "bool", /*default=*/"false",
           "Also fuse a producer of at most three arithmetic operations "
           "(no math function, no division) with several users, when "
           "every user can take it in: each computes it again">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def GaOutlineKernelsPass : Pass<"ga-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Outline linalg operations into shared kernel functions";
  let description = [{
    Moves every linalg operation on tensors (except a `linalg.fill` of fewer
    than 1024 elements, a few vector stores inline, unless it is the init of
    an `scf.for`'s accumulator, whose buffer must have the kernels' layout
    to be carried without a copy per iteration) of the
    module's functions into a private kernel function
    (`ga_kernel_<n>`, marked `train.kernel`) and replaces it with a
    `func.call`. Operations that compute the same thing on the same types
    share one kernel: the kernel is the operation with its operands as
    arguments (its inits last), the values its body reads from above as
    further arguments, and the constants its body reads cloned into it.

    A model whose layers repeat the same shapes (a transformer's blocks)
    thus has one kernel per distinct operation of a layer, and everything
    after this pass (tiling, vectorization, lowering, LLVM's optimizer and
    code generator) works on that set once, however many layers there are:
    compile time stops growing with the code of each layer and grows only
    with the number of calls. The kernels are `noinline` in LLVM, so that it
    does not undo the sharing.

    Each kernel computes exactly what the operation computed, in the same
    order: results are bitwise those of the operations it replaces. Run it
    after `train-lower-accumulate` (whose in-place accumulation looks at the
    producers of the gradients) and before `ga-tile-and-vectorize`; bufferize
    with `ga-bufferize`, which lets a kernel write into its caller's buffers.

    Example: the two `linalg.matmul` of `tensor<8x4xf32>` by
    `tensor<4x4xf32>` below become two calls of one `@ga_kernel_0`.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect",
  ];
}

def GaBufferizePass : Pass<"ga-bufferize", "::mlir::ModuleOp"> {
  let summary = "One-shot bufferization of the module and its kernels";
  let description = [{
    One-Shot Bufferize across function boundaries, with the layouts that the
    CPU pipeline needs: a public function takes and returns identity-layout
    memrefs (the descriptors that `ga-run` and a C caller pass), a kernel of
    `ga-outline-kernels` takes memrefs with the row-major strides of their
    shape and any offset, so that a slice of a larger buffer (a layer of a
    stacked weight, a micro-batch of the batch, an accumulator) is passed
    without a copy and written in place. A non-contiguous operand is copied
    into a contiguous buffer first. Results of a kernel that are its init
    arguments, written in place, are dropped from its signature (the caller
    uses its own buffer).
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def GaSplitDeallocationsPass
    : Pass<"ga-split-deallocations", "::mlir::ModuleOp"> {
  let summary = "Free each buffer that no retained value can alias on its own";
  let description = [{
    Runs between MLIR's ownership-based deallocation and
    `buffer-deallocation-simplification`. The former ends each block with one
    `bufferization.dealloc` of every buffer the block owns, retaining the
    values the block passes on (a step's returned buffers): in a step body of
    N buffers and M returned values, one operation of N memrefs. The
    simplification takes it apart by testing every pair of them for
    aliasing, N^2 + N*M queries; its time grew as the square of a model's
    depth.

    This pass takes out of each such operation, in one pass over it, every
    memref that

    - is a `memref.alloc` of the operation's own block, freed unconditionally
      (its condition is the constant `true`);
    - shares its allocation with no other memref of the operation (each
      other memref is, through views, a distinct `memref.alloc`, or the
      result of a call whose callee returns a buffer it allocates itself,
      as the outlined kernels that compute into a fresh buffer do);
    - is no retained value's allocation (by MLIR's `BufferOriginAnalysis`:
      the retained values that are not themselves views of an allocation are
      asked one by one, and a "maybe" keeps the memref);

    and frees it by its own `bufferization.dealloc`, without retained values.
    The ownership results of the operation are unchanged: a memref that no
    retained value can alias never contributes to them. What is left (the
    buffers that are returned, and any whose origin is unknown) is for the
    simplification, as before.

    Example: `%r = bufferization.dealloc (%a, %b : ...) if (%true, %true)
    retain (%b : ...)` becomes `bufferization.dealloc (%a : ...) if (%true)`
    and `%r = bufferization.dealloc (%b : ...) if (%true) retain (%b : ...)`.
  }];
}

def GaReleaseBuffersPass : Pass<"ga-release-buffers", "::mlir::func::FuncOp"> {
  let summary = "Free each buffer right after its last use";
  let description = [{
    Runs on buffers, after MLIR's deallocation pipeline, which frees each
    buffer at the end of the block that allocates it: in a step, every
    activation would stay allocated until the step returns. This pass

    - moves each `memref.dealloc` of a buffer allocated in the same block
      right after the last operation of the block that uses the buffer or a
      view of it (a cast, subview, reshape or its strided metadata);
    - lets `%a` be `%b` where `%b = memref.alloc` is filled by
      `memref.copy %a, %b` from a buffer `%a` of the same type that the
      block allocates and frees and nothing reads after the copy (the copies
      of returned buffers): the copy, `%b` and the deallocation of `%a` go.

    A buffer whose views are returned, yielded, passed to a branch, taken as
    a pointer (ownership checks compare them) or given to an operation whose
    memref results might alias it is left alone. Values are never changed;
    the step's peak (ga-run's `step_peak_bytes`) drops to what its later
    operations still read.

    Example: `%a = memref.alloc(); call @k(%a); ...; memref.dealloc %a`
    becomes `%a = memref.alloc(); call @k(%a); memref.dealloc %a; ...` when
    nothing after the call uses `%a`.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

#endif // GA_CODEGEN_COMMON_PASSES_TD
