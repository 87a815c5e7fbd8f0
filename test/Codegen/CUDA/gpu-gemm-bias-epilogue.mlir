// RUN: ga-opt %s --split-input-file --ga-gpu-gemm-to-blas --cse | FileCheck %s
// RUN: ga-opt %s --split-input-file --ga-gpu-gemm-to-blas=bias-epilogue=false | FileCheck %s --check-prefix=OFF
// RUN: ga-opt %s --split-input-file --ga-gpu-gemm-to-blas=allow-tf32=true | FileCheck %s --check-prefix=TF32
// RUN: ga-opt %s --split-input-file --ga-gpu-gemm-to-blas=allow-bf16=true | FileCheck %s --check-prefix=BF16

// A linear layer: a product from zero into a fresh C, read only by the
// bias addition into a fresh D. One cuBLASLt call writes D: the sizes, A
// and the weight slice (pointer, offset, leading dimension), the bias
// (pointer, offset), D (pointer, offset, leading dimension). The fill, the
// product, the addition and C are gone.
// CHECK-LABEL: func.func private @ga_cuda_gemm_bias_f32(i32, i32, index, index, index, index, index, index, index, index, index, index, index, index, index, index)
// CHECK-LABEL: func.func @linear
// CHECK-NOT: linalg.fill
// CHECK: %[[D:.*]] = memref.alloc() : memref<128x64xf32>
// CHECK-NOT: memref.alloc
// CHECK-DAG: %[[F:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK: %[[BASE_W:.*]], %[[OFF_W:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %arg1
// CHECK: %[[PW:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK: %[[BASE_B:.*]], %[[OFF_B:.*]], %{{.*}}, %{{.*}} = memref.extract_strided_metadata %arg2
// CHECK: %[[PB:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK: %[[PD:.*]] = memref.extract_aligned_pointer_as_index %[[D]]
// CHECK: call @ga_cuda_gemm_bias_f32(%[[F]], %[[F]], %[[C128]], %[[C64]], %[[C32]], %[[PA]], %{{.*}}, %[[C32]], %[[PW]], %[[OFF_W]], %[[C64]], %[[PB]], %[[OFF_B]], %[[PD]], %{{.*}}, %[[C64]])
// CHECK-NOT: linalg.
// CHECK-NOT: memref.dealloc
// CHECK: return %[[D]]
// OFF-LABEL: func.func @linear
// OFF: linalg.fill
// OFF: call @ga_cuda_gemm_f32(
// OFF: linalg.generic
// TF32-LABEL: func.func @linear
// TF32: call @ga_cuda_gemm_bias_f32_tf32(
// BF16-LABEL: func.func @linear
// BF16: call @ga_cuda_gemm_bias_f32_bf16(
func.func @linear(%x: memref<128x32xf32>, %w: memref<32x64xf32, strided<[64, 1], offset: ?>>,
                  %b: memref<64xf32, strided<[1], offset: ?>>) -> memref<128x64xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x64xf32>)
  linalg.matmul ins(%x, %w : memref<128x32xf32>, memref<32x64xf32, strided<[64, 1], offset: ?>>)
                outs(%c : memref<128x64xf32>)
  %d = memref.alloc() : memref<128x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : memref<128x64xf32>, memref<64xf32, strided<[1], offset: ?>>) outs(%d : memref<128x64xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<128x64xf32>
  return %d : memref<128x64xf32>
}

// -----

// The bias first in the addition and a transposed weight (x W^T, W stored
// 64 x 32): transB, W's leading dimension 32.
// CHECK-LABEL: func.func @linear_transposed
// CHECK-DAG: %[[F:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[T:.*]] = arith.constant 1 : i32
// CHECK: call @ga_cuda_gemm_bias_f32(%[[F]], %[[T]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[C32:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: linalg.
func.func @linear_transposed(%x: memref<128x32xf32>, %w: memref<64x32xf32>, %b: memref<64xf32>) -> memref<128x64xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<128x32xf32>, memref<64x32xf32>) outs(%c : memref<128x64xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  %d = memref.alloc() : memref<128x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%b, %c : memref<64xf32>, memref<128x64xf32>) outs(%d : memref<128x64xf32>) {
  ^bb0(%q: f32, %p: f32, %out: f32):
    %s = arith.addf %q, %p : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<128x64xf32>
  return %d : memref<128x64xf32>
}

// -----

// A bfloat16 weight copy made for this product alone (precision=bf16-mixed
// rounds a parameter right before each product) is freed right after the
// product: the deallocation moves after the bias GEMM, which reads the copy
// where the addition was. A buffer the product does not read, freed there,
// still keeps the product and the addition apart.
// CHECK-LABEL: func.func @copy_freed
// CHECK: %[[W16:.*]] = memref.alloc() : memref<32x64xbf16>
// CHECK: call @ga_cuda_gemm_bias_f32_bf16in(
// CHECK-NEXT: memref.dealloc %[[W16]]
// CHECK: call @ga_cuda_gemm_f32_bf16in(
// CHECK: memref.dealloc %arg3
// CHECK: linalg.generic
func.func @copy_freed(%x: memref<128x32xbf16>, %w: memref<32x64xf32>,
                      %b: memref<64xf32>, %other: memref<8xf32>)
    -> (memref<128x64xf32>, memref<128x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %w16 = memref.alloc() : memref<32x64xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%w : memref<32x64xf32>) outs(%w16 : memref<32x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  }
  %c = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x64xf32>)
  linalg.matmul ins(%x, %w16 : memref<128x32xbf16>, memref<32x64xbf16>)
                outs(%c : memref<128x64xf32>)
  memref.dealloc %w16 : memref<32x64xbf16>
  %d = memref.alloc() : memref<128x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : memref<128x64xf32>, memref<64xf32>) outs(%d : memref<128x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<128x64xf32>
  // Another buffer freed between the product and the addition.
  %v16 = memref.alloc() : memref<32x64xbf16>
  %c2 = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<128x64xf32>)
  linalg.matmul ins(%x, %v16 : memref<128x32xbf16>, memref<32x64xbf16>)
                outs(%c2 : memref<128x64xf32>)
  memref.dealloc %other : memref<8xf32>
  %d2 = memref.alloc() : memref<128x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c2, %b : memref<128x64xf32>, memref<64xf32>) outs(%d2 : memref<128x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c2 : memref<128x64xf32>
  memref.dealloc %v16 : memref<32x64xbf16>
  return %d, %d2 : memref<128x64xf32>, memref<128x64xf32>
}

// -----

// An activation copied to host memory after its last forward reader, the
// product (ga-gpu-offload-buffers), between the product and the addition:
// the copy and the free move after the bias GEMM, in their order (the GEMM
// reads the activation where the addition was).
// CHECK-LABEL: func.func @offloaded_operand
// CHECK: %[[X:.*]] = memref.alloc() : memref<128x32xf32>
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: call @ga_cuda_gemm_bias_f32(
// CHECK-NEXT: %[[H:.*]] = call @ga_cuda_offload(%[[P]],
// CHECK-NEXT: memref.dealloc %[[X]]
// CHECK-NOT: linalg.generic
func.func private @ga_cuda_offload(index, index) -> i64
func.func @offloaded_operand(%in: memref<128x32xf32>, %w: memref<32x64xf32>,
                             %b: memref<64xf32>) -> (memref<128x64xf32>, i64) {
  %zero = arith.constant 0.0 : f32
  %x = memref.alloc() : memref<128x32xf32>
  memref.copy %in, %x : memref<128x32xf32> to memref<128x32xf32>
  %c = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x64xf32>)
  linalg.matmul ins(%x, %w : memref<128x32xf32>, memref<32x64xf32>)
                outs(%c : memref<128x64xf32>)
  %p = memref.extract_aligned_pointer_as_index %x : memref<128x32xf32> -> index
  %n = arith.constant 16384 : index
  %h = call @ga_cuda_offload(%p, %n) : (index, index) -> i64
  memref.dealloc %x : memref<128x32xf32>
  %d = memref.alloc() : memref<128x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : memref<128x64xf32>, memref<64xf32>) outs(%d : memref<128x64xf32>) {
  ^bb0(%p0: f32, %q: f32, %o: f32):
    %s = arith.addf %p0, %q : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<128x64xf32>
  return %d, %h : memref<128x64xf32>, i64
}

// -----

// Left as a plain GEMM and an addition: C also returned; C filled with
// ones; a store between the product and the addition; a bias with stride
// 2; the addition reading its init; D an argument (it could alias A).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: ga_cuda_gemm_bias
// CHECK-COUNT-6: call @ga_cuda_gemm_f32(
// CHECK-NOT: ga_cuda_gemm_bias
func.func @kept(%x: memref<128x32xf32>, %w: memref<32x64xf32>, %b: memref<64xf32>,
                %b2: memref<64xf32, strided<[2]>>, %out: memref<128x64xf32>, %flag: memref<i32>)
    -> (memref<128x64xf32>, memref<128x64xf32>, memref<128x64xf32>, memref<128x64xf32>, memref<128x64xf32>, memref<128x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %i = arith.constant 7 : i32
  // C returned too.
  %c0 = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c0 : memref<128x64xf32>)
  linalg.matmul ins(%x, %w : memref<128x32xf32>, memref<32x64xf32>) outs(%c0 : memref<128x64xf32>)
  %d0 = memref.alloc() : memref<128x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c0, %b : memref<128x64xf32>, memref<64xf32>) outs(%d0 : memref<128x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  }
  // C filled with ones.
  %c1 = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%one : f32) outs(%c1 : memref<128x64xf32>)
  linalg.matmul ins(%x, %w : memref<128x32xf32>, memref<32x64xf32>) outs(%c1 : memref<128x64xf32>)
  %d1 = memref.alloc() : memref<128x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c1, %b : memref<128x64xf32>, memref<64xf32>) outs(%d1 : memref<128x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c1 : memref<128x64xf32>
  // A store between the product and the addition.
  %c2 = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<128x64xf32>)
  linalg.matmul ins(%x, %w : memref<128x32xf32>, memref<32x64xf32>) outs(%c2 : memref<128x64xf32>)
  memref.store %i, %flag[] : memref<i32>
  %d2 = memref.alloc() : memref<128x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c2, %b : memref<128x64xf32>, memref<64xf32>) outs(%d2 : memref<128x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c2 : memref<128x64xf32>
  // A bias with stride 2.
  %c3 = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c3 : memref<128x64xf32>)
  linalg.matmul ins(%x, %w : memref<128x32xf32>, memref<32x64xf32>) outs(%c3 : memref<128x64xf32>)
  %d3 = memref.alloc() : memref<128x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c3, %b2 : memref<128x64xf32>, memref<64xf32, strided<[2]>>) outs(%d3 : memref<128x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c3 : memref<128x64xf32>
  // The addition reads its init.
  %c4 = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c4 : memref<128x64xf32>)
  linalg.matmul ins(%x, %w : memref<128x32xf32>, memref<32x64xf32>) outs(%c4 : memref<128x64xf32>)
  %d4 = memref.alloc() : memref<128x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c4, %b : memref<128x64xf32>, memref<64xf32>) outs(%d4 : memref<128x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    %t = arith.addf %s, %o : f32
    linalg.yield %t : f32
  }
  memref.dealloc %c4 : memref<128x64xf32>
  // D an argument.
  %c5 = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c5 : memref<128x64xf32>)
  linalg.matmul ins(%x, %w : memref<128x32xf32>, memref<32x64xf32>) outs(%c5 : memref<128x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c5, %b : memref<128x64xf32>, memref<64xf32>) outs(%out : memref<128x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c5 : memref<128x64xf32>
  return %c0, %d0, %d1, %d2, %d3, %d4 : memref<128x64xf32>, memref<128x64xf32>, memref<128x64xf32>, memref<128x64xf32>, memref<128x64xf32>, memref<128x64xf32>
}


// -----

// precision=bf16: a product of bfloat16 operands whose C only its rounding
// to bfloat16 reads. One cuBLASLt call writes the bfloat16 D (no bias
// operands), with or without bias-epilogue; the fill, C and the rounding's
// kernel go.
// CHECK-LABEL: func.func private @ga_cuda_gemm_bf16_bf16in(i32, i32, index, index, index, index, index, index, index, index, index, index, index, index)
// CHECK-LABEL: func.func @rounded
// CHECK-NOT: linalg.fill
// CHECK: %[[D:.*]] = memref.alloc() : memref<128x64xbf16>
// CHECK-NOT: memref.alloc
// CHECK: %[[PD:.*]] = memref.extract_aligned_pointer_as_index %[[D]]
// CHECK: call @ga_cuda_gemm_bf16_bf16in(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PD]], %{{.*}}, %{{.*}})
// CHECK-NOT: linalg.
// CHECK: return %[[D]]
// OFF-LABEL: func.func @rounded
// OFF-NOT: linalg.
// OFF: call @ga_cuda_gemm_bf16_bf16in(
// OFF-NOT: linalg.
// OFF: return
func.func @rounded(%x: memref<128x32xbf16>, %w: memref<32x64xbf16>) -> memref<128x64xbf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x64xf32>)
  linalg.matmul ins(%x, %w : memref<128x32xbf16>, memref<32x64xbf16>)
                outs(%c : memref<128x64xf32>)
  %d = memref.alloc() : memref<128x64xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<128x64xf32>) outs(%d : memref<128x64xbf16>) {
  ^bb0(%p: f32, %out: bf16):
    %r = arith.truncf %p : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %c : memref<128x64xf32>
  return %d : memref<128x64xbf16>
}

// -----

// The same with a bias: the rounded addition of a bfloat16 bias, widened.
// One call with the bias operands; with bias-epilogue=false the product
// stays a float32 GEMM and the rounded addition a kernel.
// CHECK-LABEL: func.func private @ga_cuda_gemm_bias_bf16_bf16in(i32, i32, index, index, index, index, index, index, index, index, index, index, index, index, index, index)
// CHECK-LABEL: func.func @rounded_bias
// CHECK: %[[D:.*]] = memref.alloc() : memref<128x64xbf16>
// CHECK: %[[PB:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK: %[[PD:.*]] = memref.extract_aligned_pointer_as_index %[[D]]
// CHECK: call @ga_cuda_gemm_bias_bf16_bf16in(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PB]], %{{.*}}, %[[PD]], %{{.*}}, %{{.*}})
// CHECK-NOT: linalg.
// CHECK: return %[[D]]
// OFF-LABEL: func.func @rounded_bias
// OFF: call @ga_cuda_gemm_f32_bf16in(
// OFF: linalg.generic
func.func @rounded_bias(%x: memref<128x32xbf16>, %w: memref<32x64xbf16>, %b: memref<64xbf16>) -> memref<128x64xbf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x64xf32>)
  linalg.matmul ins(%x, %w : memref<128x32xbf16>, memref<32x64xbf16>)
                outs(%c : memref<128x64xf32>)
  %d = memref.alloc() : memref<128x64xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : memref<128x64xf32>, memref<64xbf16>) outs(%d : memref<128x64xbf16>) {
  ^bb0(%p: f32, %q: bf16, %out: bf16):
    %wq = arith.extf %q : bf16 to f32
    %s = arith.addf %p, %wq : f32
    %r = arith.truncf %s : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %c : memref<128x64xf32>
  return %d : memref<128x64xbf16>
}

// -----

// Not a rounding epilogue: C is also read after its rounding (the rounding
// must keep C), or the rounding adds something that is not a widened bias.
// CHECK-LABEL: func.func @rounded_kept
// CHECK: call @ga_cuda_gemm_f32_bf16in(
// CHECK: linalg.generic
// CHECK: call @ga_cuda_gemm_f32_bf16in(
// CHECK: linalg.generic
func.func @rounded_kept(%x: memref<128x32xbf16>, %w: memref<32x64xbf16>, %b: memref<64xf32>)
    -> (memref<128x64xbf16>, memref<128x64xf32>, memref<128x64xbf16>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x64xf32>)
  linalg.matmul ins(%x, %w : memref<128x32xbf16>, memref<32x64xbf16>)
                outs(%c : memref<128x64xf32>)
  %d = memref.alloc() : memref<128x64xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<128x64xf32>) outs(%d : memref<128x64xbf16>) {
  ^bb0(%p: f32, %out: bf16):
    %r = arith.truncf %p : f32 to bf16
    linalg.yield %r : bf16
  }
  %c2 = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<128x64xf32>)
  linalg.matmul ins(%x, %w : memref<128x32xbf16>, memref<32x64xbf16>)
                outs(%c2 : memref<128x64xf32>)
  %d2 = memref.alloc() : memref<128x64xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c2, %b : memref<128x64xf32>, memref<64xf32>) outs(%d2 : memref<128x64xbf16>) {
  ^bb0(%p: f32, %q: f32, %out: bf16):
    %s = arith.addf %p, %q : f32
    %r = arith.truncf %s : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %c2 : memref<128x64xf32>
  return %d, %c, %d2 : memref<128x64xbf16>, memref<128x64xf32>, memref<128x64xbf16>
}
