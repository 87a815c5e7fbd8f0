// RUN: ga-opt %s --ga-gpu-gemm-to-blas --cse --split-input-file | FileCheck %s
// RUN: ga-opt %s --ga-gpu-gemm-to-blas=allow-bf16=true --cse --split-input-file | FileCheck %s

// Products of bfloat16 operands widened in the body (precision=bf16-mixed,
// after bufferization) call the entry points that read A and B as stored
// bfloat16 (offsets and leading dimensions in bfloat16 elements), whatever
// the pass's precision for float32 operands.

// CHECK-LABEL: func.func private @ga_cuda_gemm_f32_bf16in(i32, i32, i32, index, index, index, index, index, index, index, index, index, index, index, index)
// CHECK-LABEL: func.func @product
// CHECK-DAG: %[[F:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[T:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// C += A B^T: B read transposed, its leading dimension 32 bfloat16 elements.
// CHECK: call @ga_cuda_gemm_f32_bf16in(%[[F]], %[[T]], %[[T]], %[[C128]], %[[C64]], %[[C32]], %{{.*}}, %{{.*}}, %[[C32]], %{{.*}}, %{{.*}}, %[[C32]], %{{.*}}, %{{.*}}, %[[C64]])
// CHECK-NOT: linalg.generic
func.func @product(%a: memref<128x32xbf16>, %b: memref<64x32xbf16>,
                   %c: memref<128x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (n, k)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<128x32xbf16>, memref<64x32xbf16>)
      outs(%c : memref<128x64xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %x32 = arith.extf %x : bf16 to f32
    %y32 = arith.extf %y : bf16 to f32
    %p = arith.mulf %x32, %y32 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A scaled batched product (the attention's scores) keeps its scale as
// alpha and its order.

// CHECK-LABEL: func.func @scaled_batch
// CHECK: %[[ALPHA:.*]] = arith.constant 2.500000e-01 : f32
// CHECK: call @ga_cuda_gemm_batched_f32_bf16in({{.*}}, %[[ALPHA]], %{{.*}},
// CHECK-NOT: linalg.generic
func.func @scaled_batch(%q: memref<4x16x8xbf16>, %k: memref<4x16x8xbf16>,
                        %s: memref<4x16x16xf32>) {
  %alpha = arith.constant 0.25 : f32
  linalg.generic {indexing_maps = [affine_map<(b, i, j, d) -> (b, i, d)>,
                                   affine_map<(b, i, j, d) -> (b, j, d)>,
                                   affine_map<(b, i, j, d) -> (b, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<4x16x8xbf16>, memref<4x16x8xbf16>)
      outs(%s : memref<4x16x16xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %x32 = arith.extf %x : bf16 to f32
    %y32 = arith.extf %y : bf16 to f32
    %p = arith.mulf %x32, %y32 : f32
    %ps = arith.mulf %p, %alpha : f32
    %r = arith.addf %acc, %ps : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Not products cuBLAS takes as stored: one operand bfloat16 and one float32,
// bfloat16 arithmetic (no widening), and a widened operand also read
// another way. They stay loops.

// CHECK-LABEL: func.func @not_blas
// CHECK-NOT: call @ga_cuda_gemm
// CHECK-COUNT-3: linalg.generic
func.func @not_blas(%a: memref<8x4xbf16>, %f: memref<4x6xf32>,
                    %b: memref<4x6xbf16>, %c: memref<8x6xf32>,
                    %h: memref<8x6xbf16>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (k, n)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %f : memref<8x4xbf16>, memref<4x6xf32>)
      outs(%c : memref<8x6xf32>) {
  ^bb0(%x: bf16, %y: f32, %acc: f32):
    %x32 = arith.extf %x : bf16 to f32
    %p = arith.mulf %x32, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (k, n)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x4xbf16>, memref<4x6xbf16>)
      outs(%h : memref<8x6xbf16>) {
  ^bb0(%x: bf16, %y: bf16, %acc: bf16):
    %p = arith.mulf %x, %y : bf16
    %s = arith.addf %acc, %p : bf16
    linalg.yield %s : bf16
  }
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (k, n)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x4xbf16>, memref<4x6xbf16>)
      outs(%c : memref<8x6xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %x32 = arith.extf %x : bf16 to f32
    %y32 = arith.extf %y : bf16 to f32
    %p = arith.mulf %x32, %y32 : f32
    %s = arith.addf %acc, %p : f32
    %x2 = arith.extf %x : bf16 to f32
    %t = arith.addf %s, %x2 : f32
    linalg.yield %t : f32
  }
  return
}
