// RUN: ga-opt %s --ga-outline-kernels | FileCheck %s
// RUN: ga-opt %s --ga-outline-kernels --ga-bufferize --canonicalize --drop-equivalent-buffer-results | FileCheck %s --check-prefix=BUF

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// Two matmuls of the same types share one kernel; the fills stay in the
// caller; the generic whose body reads a constant and a tensor from above
// gets the constant cloned in and the tensor as a further argument.
// CHECK: func.func @two_layers(
// CHECK-SAME: %[[X:[^:]*]]: tensor<8x4xf32>, %[[W0:[^:]*]]: tensor<4x4xf32>, %[[W1:[^:]*]]: tensor<4x4xf32>, %[[T:[^:]*]]: tensor<3xf32>
// CHECK: %[[F:.*]] = linalg.fill
// CHECK: %[[H:.*]] = call @ga_kernel_0(%[[X]], %[[W0]], %[[F]])
// CHECK: %[[Y:.*]] = call @ga_kernel_0(%[[H]], %[[W1]], %[[F]])
// CHECK: %[[S:.*]] = call @ga_kernel_1(%[[Y]], %{{.*}}, %[[T]])
// CHECK: return %[[S]]

// After bufferization, the public function keeps identity layouts, a kernel
// takes row-major strides with any offset and writes its init in place
// (the result is dropped from its signature).
// BUF: func.func @two_layers(
// BUF-SAME: memref<8x4xf32>
// BUF: call @ga_kernel_0({{.*}}) : (memref<8x4xf32, strided<[4, 1], offset: ?>>, memref<4x4xf32, strided<[4, 1], offset: ?>>, memref<8x4xf32, strided<[4, 1], offset: ?>>) -> ()
func.func @two_layers(%x: tensor<8x4xf32>, %w0: tensor<4x4xf32>,
                      %w1: tensor<4x4xf32>, %t: tensor<3xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 2.5 : f32
  %c1 = arith.constant 1 : index
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %h = linalg.matmul ins(%x, %w0 : tensor<8x4xf32>, tensor<4x4xf32>)
                     outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul ins(%h, %w1 : tensor<8x4xf32>, tensor<4x4xf32>)
                     outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%y : tensor<8x4xf32>) outs(%s0 : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %b = tensor.extract %t[%c1] : tensor<3xf32>
    %p = arith.mulf %a, %scale : f32
    %q = arith.mulf %p, %b : f32
    %r = arith.addf %acc, %q : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// Operations inside loops are outlined too; a different shape is another
// kernel.
// CHECK: func.func @in_loop(
// CHECK: scf.for
// CHECK: call @ga_kernel_2(
// BUF: func.func @in_loop(
func.func @in_loop(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %x) -> tensor<2x4xf32> {
    %m = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>)
                       outs(%acc : tensor<2x4xf32>) -> tensor<2x4xf32>
    scf.yield %m : tensor<2x4xf32>
  }
  return %r : tensor<2x4xf32>
}

// A non-contiguous operand (a column slice) is copied for the kernel.
// BUF: func.func @strided(
// BUF: %[[SUB:.*]] = memref.subview
// BUF: %[[COPY:.*]] = memref.alloc() {{.*}} : memref<8x4xf32>
// BUF: memref.copy %[[SUB]], %[[COPY]]
// BUF: call @ga_kernel_0(
func.func @strided(%big: tensor<8x8xf32>, %w: tensor<4x4xf32>, %o: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %x = tensor.extract_slice %big[0, 2] [8, 4] [1, 1] : tensor<8x8xf32> to tensor<8x4xf32>
  %m = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x4xf32>)
                     outs(%o : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %m : tensor<8x4xf32>
}

// The kernels, after the functions.
// CHECK-NOT: linalg.matmul
// CHECK: func.func private @ga_kernel_0(%{{.*}}: tensor<8x4xf32>, %{{.*}}: tensor<4x4xf32>, %{{.*}}: tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-SAME: llvm.linkage = #llvm.linkage<internal>
// CHECK-SAME: passthrough = ["noinline"]
// CHECK-SAME: train.kernel
// CHECK-NEXT: linalg.matmul
// CHECK: func.func private @ga_kernel_1(%{{.*}}: tensor<8x4xf32>, %{{.*}}: tensor<8xf32>, %[[TA:.*]]: tensor<3xf32>) -> tensor<8xf32>
// CHECK-DAG: %[[C:.*]] = arith.constant 2.5
// CHECK: tensor.extract %[[TA]]
// CHECK: arith.mulf %{{.*}}, %[[C]]
// CHECK: func.func private @ga_kernel_2(%{{.*}}: tensor<2x4xf32>
// CHECK-NOT: func.func private @ga_kernel_3
// BUF: func.func private @ga_kernel_0(%{{.*}}: memref<8x4xf32, strided<[4, 1], offset: ?>>, %{{.*}}: memref<4x4xf32, strided<[4, 1], offset: ?>>, %{{.*}}: memref<8x4xf32, strided<[4, 1], offset: ?>>)
// BUF-NOT: ->
// BUF: linalg.matmul
