// RUN: ga-opt %s --ga-gpu-gemm-to-blas --cse | FileCheck %s
// RUN: ga-opt %s --ga-gpu-gemm-to-blas=allow-tf32=true | FileCheck %s --check-prefix=TF32
// RUN: ga-opt %s --ga-gpu-gemm-to-blas=allow-bf16=true | FileCheck %s --check-prefix=BF16
// RUN: not ga-opt %s --ga-gpu-gemm-to-blas="allow-tf32=true allow-bf16=true" 2>&1 | FileCheck %s --check-prefix=BOTH

// With allow-tf32, the TF32 entry point.
// TF32-LABEL: func.func private @ga_cuda_gemm_f32_tf32(i32, i32, i32, index, index, index, index, index, index, index, index, index, index, index, index)
// TF32: call @ga_cuda_gemm_f32_tf32
// TF32-NOT: call @ga_cuda_gemm_f32(

// With allow-bf16, the bf16 entry points, batched and not.
// BF16-LABEL: func.func private @ga_cuda_gemm_batched_f32_bf16(i32, i32, i32, index, index, index, index, f32, i32, index, index, index, index, index, index, index, index, index, index, index, index)
// BF16-LABEL: func.func private @ga_cuda_gemm_f32_bf16(i32, i32, i32, index, index, index, index, index, index, index, index, index, index, index, index)
// BF16: call @ga_cuda_gemm_f32_bf16
// BF16-NOT: call @ga_cuda_gemm_f32(
// BF16-NOT: call @ga_cuda_gemm_batched_f32(

// BOTH: error: ga-gpu-gemm-to-blas: allow-tf32 and allow-bf16 exclude each other

// C += A B, C += A B^T and C += A^T B (the forms differentiation emits)
// become cuBLAS calls with the row-major sizes, the transpositions,
// accumulate = 1 (C is an argument: its value is read), and
// each matrix's aligned pointer, offset and leading dimension; a slice of a
// weight stack keeps its offset.
// The batched entry point (declared by @scores below) comes first.
// CHECK-LABEL: func.func private @ga_cuda_gemm_batched_f32(i32, i32, i32, index, index, index, index, f32, i32, index, index, index, index, index, index, index, index, index, index, index, index)
// CHECK-LABEL: func.func private @ga_cuda_gemm_f32(i32, i32, i32, index, index, index, index, index, index, index, index, index, index, index, index)
// CHECK-LABEL: func.func @forms
// CHECK-DAG: %[[F:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[T:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: call @ga_cuda_gemm_f32(%[[F]], %[[F]], %[[T]], %[[C128]], %[[C64]], %[[C32]],
// CHECK: call @ga_cuda_gemm_f32(%[[F]], %[[T]], %[[T]], %[[C128]], %[[C32]], %[[C64]],
// CHECK: %{{.*}}, %[[OFF:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %{{.*}} : memref<32x64xf32, strided<[64, 1], offset: 2048>>
// CHECK: call @ga_cuda_gemm_f32(%[[T]], %[[F]], %[[T]], %[[C32]], %[[C64]], %[[C128]], {{.*}}, %[[OFF]], %[[C64]])
// CHECK-NOT: linalg.matmul
func.func @forms(%a: memref<128x32xf32>, %b: memref<32x64xf32>,
                 %c: memref<128x64xf32>, %d: memref<128x32xf32>,
                 %stack: memref<2x32x64xf32>) {
  linalg.matmul ins(%a, %b : memref<128x32xf32>, memref<32x64xf32>)
                outs(%c : memref<128x64xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
                ins(%c, %b : memref<128x64xf32>, memref<32x64xf32>)
                outs(%d : memref<128x32xf32>)
  %slice = memref.subview %stack[1, 0, 0] [1, 32, 64] [1, 1, 1]
      : memref<2x32x64xf32> to memref<32x64xf32, strided<[64, 1], offset: 2048>>
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                 affine_map<(m, n, k) -> (k, n)>,
                                 affine_map<(m, n, k) -> (m, n)>]
                ins(%a, %c : memref<128x32xf32>, memref<128x64xf32>)
                outs(%slice : memref<32x64xf32, strided<[64, 1], offset: 2048>>)
  return
}

// A matrix stored column by column is read transposed (here A, with its
// columns 8 apart), and a C stored column by column makes cuBLAS compute
// C^T = B^T A^T: m and n exchange, A and B exchange.
// CHECK-LABEL: func.func @columns
// CHECK-DAG: %[[F:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[T:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK: %[[PB:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK: %[[PC:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK: call @ga_cuda_gemm_f32(%[[T]], %[[F]], %[[T]], %[[C8]], %[[C8]], %[[C4]], %[[PA]], %{{.*}}, %[[C8]], %[[PB]], %{{.*}}, %[[C8]], %[[PC]], %{{.*}}, %[[C8]])
// CHECK: %[[C6:.*]] = arith.constant 6 : index
// CHECK: %[[PB6:.*]] = memref.extract_aligned_pointer_as_index %arg3
// CHECK: %[[PD:.*]] = memref.extract_aligned_pointer_as_index %arg4
// CHECK: call @ga_cuda_gemm_f32(%[[T]], %[[F]], %[[T]], %[[C6]], %[[C8]], %[[C4]], %[[PB6]], %{{.*}}, %[[C8]], %[[PA]], %{{.*}}, %[[C8]], %[[PD]], %{{.*}}, %[[C8]])
func.func @columns(%a: memref<8x4xf32, strided<[1, 8]>>, %b: memref<4x8xf32>,
                   %c: memref<8x8xf32>, %b6: memref<4x6xf32, strided<[8, 1]>>,
                   %d: memref<8x6xf32, strided<[1, 8]>>) {
  linalg.matmul ins(%a, %b : memref<8x4xf32, strided<[1, 8]>>, memref<4x8xf32>)
                outs(%c : memref<8x8xf32>)
  linalg.matmul ins(%a, %b6 : memref<8x4xf32, strided<[1, 8]>>, memref<4x6xf32, strided<[8, 1]>>)
                outs(%d : memref<8x6xf32, strided<[1, 8]>>)
  return
}

// Neither dimension contiguous, rows that overlap, and f64 stay linalg
// (kernels).
// CHECK-LABEL: func.func @kept
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK-NOT: call
func.func @kept(%a: memref<8x4xf32, strided<[16, 2]>>, %b: memref<4x8xf32>,
                %c: memref<8x8xf32>, %x: memref<8x8xf64>,
                %o: memref<8x4xf32, strided<[2, 1]>>) {
  linalg.matmul ins(%a, %b : memref<8x4xf32, strided<[16, 2]>>, memref<4x8xf32>)
                outs(%c : memref<8x8xf32>)
  linalg.matmul ins(%o, %b : memref<8x4xf32, strided<[2, 1]>>, memref<4x8xf32>)
                outs(%c : memref<8x8xf32>)
  linalg.matmul ins(%x, %x : memref<8x8xf64>, memref<8x8xf64>)
                outs(%x : memref<8x8xf64>)
  return
}

// The attention's scaled scores, S[b, h, s, t] += (Q[b, s, h, d] K[b, t, h,
// d]) * scale, with Q and K slices of one fused projection [b, s, 3 * h *
// d]: the scale as cuBLAS's alpha, order 1 (product, then scale); no
// single stride reaches every (b, h) matrix of Q (768 apart along b, 8
// along h), so the 2 x 8 products are one two-level call, the widest
// dimension (b) inner: outer strides 8 (Q, K) and 256 (S), inner 768 and
// 512. No host loop.
// CHECK-LABEL: func.func @scores
// CHECK-NOT: scf.for
// CHECK-DAG: %[[F:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[T:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %{{.*}}, %[[OQ:.*]], %{{.*}}:4, %{{.*}}:4 = memref.extract_strided_metadata %arg0
// CHECK: %[[PQ:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK: %[[C48:.*]] = arith.constant 48 : index
// CHECK: %{{.*}}, %[[OK:.*]], %{{.*}}:4, %{{.*}}:4 = memref.extract_strided_metadata %arg1
// CHECK: %[[PK:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK: %{{.*}}, %[[OS:.*]], %{{.*}}:4, %{{.*}}:4 = memref.extract_strided_metadata %arg2
// CHECK: %[[PS:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK-DAG: %[[C768:.*]] = arith.constant 768 : index
// CHECK-DAG: %[[C512:.*]] = arith.constant 512 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-NOT: scf.for
// CHECK: call @ga_cuda_gemm_batched2_f32(%[[F]], %[[T]], %[[T]], %[[C16]], %[[C16]], %[[C8]], %[[C2]], %[[C8]], %arg3, %[[T]], %[[PQ]], %[[OQ]], %[[C48]], %[[C8]], %[[C768]], %[[PK]], %[[OK]], %[[C48]], %[[C8]], %[[C768]], %[[PS]], %[[OS]], %[[C16]], %[[C256]], %[[C512]])
// CHECK-NOT: linalg.generic
func.func @scores(%q: memref<8x16x2x8xf32, strided<[768, 48, 8, 1]>>,
                  %k: memref<8x16x2x8xf32, strided<[768, 48, 8, 1], offset: 16>>,
                  %s: memref<8x2x16x16xf32>, %scale: f32) {
  linalg.generic {indexing_maps = [affine_map<(b, h, s, t, d) -> (b, s, h, d)>,
                                   affine_map<(b, h, s, t, d) -> (b, t, h, d)>,
                                   affine_map<(b, h, s, t, d) -> (b, h, s, t)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<8x16x2x8xf32, strided<[768, 48, 8, 1]>>, memref<8x16x2x8xf32, strided<[768, 48, 8, 1], offset: 16>>)
      outs(%s : memref<8x2x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %ps = arith.mulf %p, %scale : f32
    %r = arith.addf %acc, %ps : f32
    linalg.yield %r : f32
  }
  return
}

// Without batch dimensions, a scaled product goes to the batched entry
// point with a count of 1. Here (y * 0.5) * x with C stored column by
// column: A and B exchange, so the order becomes 2, (x * alpha) * y.
// CHECK-LABEL: func.func @scaled
// CHECK-DAG: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[O2:.*]] = arith.constant 2 : i32
// CHECK: call @ga_cuda_gemm_batched_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[C1]], %[[HALF]], %[[O2]], {{.*}}, %[[C0]], {{.*}}, %[[C0]], {{.*}}, %[[C0]])
// CHECK-NOT: linalg.generic
func.func @scaled(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32, strided<[1, 4]>>) {
  %half = arith.constant 0.5 : f32
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (k, n)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c : memref<4x5xf32, strided<[1, 4]>>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %s = arith.mulf %y, %half : f32
    %p = arith.mulf %s, %x : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// A generic that is not a multiply-accumulate (here the product is
// subtracted) stays a kernel.
// CHECK-LABEL: func.func @not_a_gemm
// CHECK: linalg.generic
// CHECK-NOT: call
func.func @not_a_gemm(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (k, n)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%c : memref<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %r = arith.subf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// A product from zero: C a fresh buffer that only its zero fill touches
// before the product gets accumulate = 0 (cuBLAS does not read it) and the
// fill goes; reads of C after the product do not matter. C filled with
// ones, or read between its fill and the product, keeps its fill and
// accumulate = 1.
// CHECK-LABEL: func.func @from_zero
// CHECK-NOT: linalg.fill
// CHECK: %[[F:.*]] = arith.constant 0 : i32
// CHECK-NOT: linalg.fill
// CHECK: call @ga_cuda_gemm_f32(%[[F]], %[[F]], %[[F]],
// CHECK: memref.copy
// CHECK: linalg.fill
// CHECK: %[[T:.*]] = arith.constant 1 : i32
// CHECK: call @ga_cuda_gemm_f32(%[[F]], %[[F]], %[[T]],
// CHECK: linalg.fill
// CHECK: memref.copy
// CHECK: call @ga_cuda_gemm_f32(%[[F]], %[[F]], %[[T]],
func.func @from_zero(%a: memref<16x8xf32>, %b: memref<8x4xf32>, %seen: memref<16x4xf32>)
    -> (memref<16x4xf32>, memref<16x4xf32>, memref<16x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c0 = memref.alloc() : memref<16x4xf32>
  linalg.fill ins(%zero : f32) outs(%c0 : memref<16x4xf32>)
  linalg.matmul ins(%a, %b : memref<16x8xf32>, memref<8x4xf32>) outs(%c0 : memref<16x4xf32>)
  memref.copy %c0, %seen : memref<16x4xf32> to memref<16x4xf32>
  %c1 = memref.alloc() : memref<16x4xf32>
  linalg.fill ins(%one : f32) outs(%c1 : memref<16x4xf32>)
  linalg.matmul ins(%a, %b : memref<16x8xf32>, memref<8x4xf32>) outs(%c1 : memref<16x4xf32>)
  %c2 = memref.alloc() : memref<16x4xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<16x4xf32>)
  memref.copy %c2, %seen : memref<16x4xf32> to memref<16x4xf32>
  linalg.matmul ins(%a, %b : memref<16x8xf32>, memref<8x4xf32>) outs(%c2 : memref<16x4xf32>)
  return %c0, %c1, %c2 : memref<16x4xf32>, memref<16x4xf32>, memref<16x4xf32>
}

// Heads laid out as [b, h, s, d] blocks: b's stride (2 * 16 * 8 = 256 in Q
// and K, 2 * 16 * 16 = 512 in S) is h's times its 2 iterations in every
// matrix, so b and h merge into one strided batch of 16 (strides 128 and
// 256) with no host loop and no pointer arrays.
// CHECK-LABEL: func.func @merged_heads
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-NOT: scf.for
// CHECK: call @ga_cuda_gemm_batched_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[C16]], %[[C16]], %{{.*}}, %[[C16]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[C128]], %{{.*}}, %{{.*}}, %{{.*}}, %[[C128]], %{{.*}}, %{{.*}}, %[[C16]], %[[C256]])
// CHECK-NOT: ga_cuda_gemm_batched2
func.func @merged_heads(%q: memref<8x2x16x8xf32>, %k: memref<8x2x16x8xf32>,
                        %s: memref<8x2x16x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, h, s, t, d) -> (b, h, s, d)>,
                                   affine_map<(b, h, s, t, d) -> (b, h, t, d)>,
                                   affine_map<(b, h, s, t, d) -> (b, h, s, t)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<8x2x16x8xf32>, memref<8x2x16x8xf32>)
      outs(%s : memref<8x2x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// Three batch dimensions that no two matrices lay out alike (A holds h
// outermost and g innermost of them, B and C hold g outermost): the two
// widest (h: 4 outer, b: 8 inner) are one two-level call inside a host
// loop over g (3), which advances each offset by g's stride (A 8, B 4096,
// C 8192).
// CHECK-LABEL: func.func @three_levels
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C4096:.*]] = arith.constant 4096 : index
// CHECK-DAG: %[[C8192:.*]] = arith.constant 8192 : index
// CHECK: scf.for %[[G:.*]] = %{{.*}} to %[[C3]]
// CHECK:   arith.muli %[[G]], %[[C8]]
// CHECK:   arith.muli %[[G]], %[[C4096]]
// CHECK:   arith.muli %[[G]], %[[C8192]]
// CHECK:   call @ga_cuda_gemm_batched2_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[C4]], %[[C8]],
// CHECK-NOT: scf.for
func.func @three_levels(%a: memref<4x8x16x3x8xf32>, %b: memref<3x8x4x8x16xf32>,
                        %c: memref<3x8x4x16x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(g, b, h, s, t, d) -> (h, b, s, g, d)>,
                                   affine_map<(g, b, h, s, t, d) -> (g, b, h, d, t)>,
                                   affine_map<(g, b, h, s, t, d) -> (g, b, h, s, t)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8x16x3x8xf32>, memref<3x8x4x8x16xf32>)
      outs(%c : memref<3x8x4x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}
