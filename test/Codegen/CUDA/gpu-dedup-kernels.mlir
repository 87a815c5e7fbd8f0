// RUN: ga-opt %s --split-input-file --ga-gpu-dedup-kernels | FileCheck %s

// Three launches of two distinct kernels: the second module holds the first
// one's code under other names and goes; its launch runs the first kernel,
// with its own grid and arguments. The third module differs (a
// multiplication) and stays.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: func.func @step(%[[A:[^:]*]]: memref<64xf32>, %[[B:[^:]*]]: memref<64xf32>)
// CHECK: gpu.launch_func @step_kernel::@step_kernel {{.*}} args(%[[A]] : memref<64xf32>)
// CHECK: gpu.launch_func @step_kernel::@step_kernel {{.*}} args(%[[B]] : memref<64xf32>)
// CHECK: gpu.launch_func @step_kernel_1::@step_kernel {{.*}} args(%[[A]] : memref<64xf32>)
// CHECK: gpu.module @step_kernel
// CHECK: arith.addf
// CHECK-NOT: gpu.module @step_kernel_0
// CHECK: gpu.module @step_kernel_1
// CHECK: arith.mulf
module attributes {gpu.container_module} {
  func.func @step(%a: memref<64xf32>, %b: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @step_kernel::@step_kernel blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<64xf32>)
    gpu.launch_func @step_kernel_0::@step_kernel blocks in (%c2, %c1, %c1) threads in (%c1, %c1, %c1) args(%b : memref<64xf32>)
    gpu.launch_func @step_kernel_1::@step_kernel blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<64xf32>)
    return
  }
  gpu.module @step_kernel {
    gpu.func @step_kernel(%x: memref<64xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<64xf32>
      %s = arith.addf %v, %v : f32
      memref.store %s, %x[%i] : memref<64xf32>
      gpu.return
    }
  }
  gpu.module @step_kernel_0 {
    gpu.func @step_kernel(%y: memref<64xf32>) kernel {
      %j = gpu.thread_id x
      %w = memref.load %y[%j] : memref<64xf32>
      %t = arith.addf %w, %w : f32
      memref.store %t, %y[%j] : memref<64xf32>
      gpu.return
    }
  }
  gpu.module @step_kernel_1 {
    gpu.func @step_kernel(%x: memref<64xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<64xf32>
      %s = arith.mulf %v, %v : f32
      memref.store %s, %x[%i] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

// Kernels whose modules copied the same constant are the same; a module
// that copied another constant is not. Kernel names differ too.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.launch_func @k0::@f0
// CHECK: gpu.launch_func @k0::@f0
// CHECK: gpu.launch_func @k2::@f2
// CHECK: gpu.module @k0
// CHECK-NOT: gpu.module @k1
// CHECK: gpu.module @k2
module attributes {gpu.container_module} {
  func.func @step(%a: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k0::@f0 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.launch_func @k1::@f1 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.launch_func @k2::@f2 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    return
  }
  gpu.module @k0 {
    memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
    gpu.func @f0(%x: memref<4xf32>) kernel {
      %t = memref.get_global @table : memref<4xf32>
      memref.copy %t, %x : memref<4xf32> to memref<4xf32>
      gpu.return
    }
  }
  gpu.module @k1 {
    memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
    gpu.func @f1(%x: memref<4xf32>) kernel {
      %t = memref.get_global @table : memref<4xf32>
      memref.copy %t, %x : memref<4xf32> to memref<4xf32>
      gpu.return
    }
  }
  gpu.module @k2 {
    memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 5.0]>
    gpu.func @f2(%x: memref<4xf32>) kernel {
      %t = memref.get_global @table : memref<4xf32>
      memref.copy %t, %x : memref<4xf32> to memref<4xf32>
      gpu.return
    }
  }
}
