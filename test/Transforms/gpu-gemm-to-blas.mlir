// RUN: ga-opt %s --ga-gpu-gemm-to-blas --cse | FileCheck %s
// RUN: ga-opt %s --ga-gpu-gemm-to-blas=allow-tf32=true | FileCheck %s --check-prefix=TF32

// With allow-tf32, the TF32 entry point.
// TF32-LABEL: func.func private @ga_cuda_gemm_f32_tf32(i32, i32, index, index, index, index, index, index, index, index, index, index, index, index)
// TF32: call @ga_cuda_gemm_f32_tf32
// TF32-NOT: call @ga_cuda_gemm_f32(

// C += A B, C += A B^T and C += A^T B (the forms differentiation emits)
// become cuBLAS calls with the row-major sizes, the transpositions, and
// each matrix's aligned pointer, offset and leading dimension; a slice of a
// weight stack keeps its offset.
// CHECK-LABEL: func.func private @ga_cuda_gemm_f32(i32, i32, index, index, index, index, index, index, index, index, index, index, index, index)
// CHECK-LABEL: func.func @forms
// CHECK-DAG: %[[F:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: call @ga_cuda_gemm_f32(%[[F]], %[[F]], %[[C128]], %[[C64]], %[[C32]],
// CHECK: %[[T:.*]] = arith.constant 1 : i32
// CHECK: call @ga_cuda_gemm_f32(%[[F]], %[[T]], %[[C128]], %[[C32]], %[[C64]],
// CHECK: %{{.*}}, %[[OFF:.*]], %{{.*}}:2, %[[LD:.*]]:2 = memref.extract_strided_metadata %{{.*}} : memref<32x64xf32, strided<[64, 1], offset: 2048>>
// CHECK: call @ga_cuda_gemm_f32(%[[T]], %[[F]], %[[C32]], %[[C64]], %[[C128]], {{.*}}, %[[OFF]], %[[LD]]#0)
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

// A matrix whose rows are not contiguous, and f64, stay linalg (kernels).
// CHECK-LABEL: func.func @kept
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK-NOT: call
func.func @kept(%a: memref<8x4xf32, strided<[1, 8]>>, %b: memref<4x8xf32>,
                %c: memref<8x8xf32>, %x: memref<8x8xf64>) {
  linalg.matmul ins(%a, %b : memref<8x4xf32, strided<[1, 8]>>, memref<4x8xf32>)
                outs(%c : memref<8x8xf32>)
  linalg.matmul ins(%x, %x : memref<8x8xf64>, memref<8x8xf64>)
                outs(%x : memref<8x8xf64>)
  return
}
