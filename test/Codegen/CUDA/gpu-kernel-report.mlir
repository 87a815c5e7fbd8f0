// RUN: ga-opt %s --ga-gpu-kernel-report="device=h200" -o /dev/null | FileCheck %s
// RUN: ga-opt %s --ga-gpu-kernel-report="device=h100 bandwidth-gbs=1000 peak-tflops=0.001" -o /dev/null | FileCheck %s --check-prefix=OVERRIDE
// RUN: ga-opt %s --ga-gpu-kernel-report="output=%t.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: ga-opt %s --ga-gpu-kernel-report | FileCheck %s --check-prefix=IR
// RUN: not ga-opt %s --ga-gpu-kernel-report="device=a100" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: not ga-opt %s --ga-gpu-kernel-report="output=%t.missing/report.txt" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OUTPUT

// Hand-counted kernels and products on an H200 (4.3e12 B/s, 67e12 float32
// FLOP/s):
// - @scale: 1,024 threads each load one float32 of %in and store one of
//   %out, a multiply and an add: 4,096 B read, 4,096 B written, 2,048
//   FLOPs, issued loads 4,096 B (1.00 of the bytes read), loads of 4 B;
//   bound 8,192 B / 4.3e12 B/s = 0.0019 us. Launched once, then 3 times in
//   a host loop: 4 launches.
// - @rows: a warp per row of [64, 128]: each of the 2,048 lanes loads 4
//   elements to sum them (a loop from the lane's index in steps of 32),
//   then the same 4 again for the squares of their
//   differences from the mean (a row read twice: issued 65,536 B, 2.00 of
//   the 32,768 B read), 256 B written; FLOPs per lane: 4 adds, 1 multiply
//   (the mean), 4 x 3 (subtract, multiply, add): 17, 34,816 in all, and a
//   multiply by lane 0 of each row alone (the guard lane == 0 passes 1 of
//   32 lanes): 64 more, 34,880; bound 33,024 B / 4.3e12 B/s = 0.0077 us.
// - @vec: 256 threads each load a vector<4xf32> (16 B) and store one: 4,096
//   B each way, 4 FLOPs per thread (1,024); bound 0.0019 us.
// - a float32 GEMM 64 x 32 x 128 accumulating: 2 m n k = 524,288 FLOPs,
//   reads A, B and C ((8,192 + 4,096 + 2,048) x 4 = 57,344 B), writes C
//   (8,192 B); bound 65,536 B / 4.3e12 B/s = 0.0152 us (its FLOPs at 67
//   TFLOP/s take 0.0078 us).
// - a two-level batch of bfloat16 operands from zero, 2 x 8 products of 16
//   x 16 x 8: 65,536 FLOPs, (128 + 128) x 2 B read per product (8,192 B
//   in all), 16,384 B written; bound 24,576 B / 4.3e12 B/s = 0.0057 us.
// The step's floor: 0.0172 us of kernels and 0.0210 us of products; the
// kernels' loads issue 65,536 + 4 x 4,096 + 4,096 = 86,016 B.
// CHECK: kernel report: h200, 4300 GB/s, float32 67.0 TFLOP/s (products: TF32 494.7, bfloat16 989.4)
// CHECK-NEXT: kernels: 3 distinct, 6 launches; bytes read 53248, written 20736; FLOPs 44096; bound 0.017 us; loads issued 86016 B
// CHECK-NEXT: products: 2 distinct, 2 calls; FLOPs 589824; bound 0.021 us
// CHECK-NEXT: step floor: 0.038 us, the kernels 45.1% of it
// CHECK-NEXT: launches grid block read B written B FLOPs issued load B bound us kernel
// Each row ends with its launch's source line (and how many launch sites
// the row counts).
// CHECK-NEXT:        1   64x1x1   32x1x1   32768   256   34880   2.00   4   0.008  k2::rows [gpu-kernel-report.mlir:{{[0-9]+}}]
// CHECK-NEXT:        4    4x1x1  256x1x1    4096  4096    2048   1.00   4   0.002  k1::scale [gpu-kernel-report.mlir:{{[0-9]+}}, 2 sites]
// CHECK-NEXT:        1    1x1x1  256x1x1    4096  4096    1024   1.00  16   0.002  k3::vec [gpu-kernel-report.mlir:{{[0-9]+}}]
// CHECK-NEXT: calls m x n x k products read B written B FLOPs bound us product
// CHECK-NEXT:        1   64x32x128   1   57344   8192   524288   0.015  ga_cuda_gemm_f32
// CHECK-NEXT:        1   16x16x8    16    8192  16384    65536   0.006  ga_cuda_gemm_batched2_f32_bf16in

// A slow device: the FLOPs bound @rows (34,880 FLOPs at 1 GFLOP/s: 34.9
// us) where its bytes take 0.033 us at 1,000 GB/s.
// OVERRIDE: kernel report: h100, 1000 GB/s, float32 0.0 TFLOP/s
// OVERRIDE: 34.880  k2::rows

// JSON (keys in order): the dearest kernel first, its device module
// the second of the step's (the runtime's load order).
// JSON: "device": {
// JSON: "name": "h100"
// JSON: "kernels": [
// JSON: "flops": 34880
// JSON: "issued_load_bytes": 65536
// JSON: "kernel": "k2::rows"
// JSON: "load_bytes": [
// JSON-NEXT: 4,
// JSON-NEXT: 4
// JSON: "module_index": 1
// JSON: "read_bytes": 32768
// JSON: "sites": 1
// JSON: "where": "gpu-kernel-report.mlir:{{[0-9]+}}"
// JSON: "products": [
// JSON: "call": "ga_cuda_gemm_f32"
// JSON: "totals": {
// JSON: "issued_load_bytes": 86016
// JSON: "launches": 6

// The IR is left as it is.
// IR: gpu.launch_func @k2::@rows

// DEVICE: error: ga-gpu-kernel-report: device must be h100 or h200, got 'a100'
// OUTPUT: error: ga-gpu-kernel-report: cannot write '{{.*}}report.txt'

module attributes {gpu.container_module} {
  func.func private @ga_cuda_gemm_f32(i32, i32, i32, index, index, index, index, index, index, index, index, index, index, index, index)
  func.func private @ga_cuda_gemm_batched2_f32_bf16in(i32, i32, i32, index, index, index, index, index, f32, i32, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index)

  func.func @step(%a: memref<1024xf32>, %b: memref<1024xf32>,
                  %m: memref<64x128xf32>, %r: memref<64xf32>, %p: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %f0 = arith.constant 0 : i32
    %f1 = arith.constant 1 : i32
    %one = arith.constant 1.0 : f32
    gpu.launch_func @k1::@scale blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%a : memref<1024xf32>, %b : memref<1024xf32>)
    scf.for %i = %c0 to %c3 step %c1 {
      gpu.launch_func @k1::@scale blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
          args(%a : memref<1024xf32>, %b : memref<1024xf32>)
    }
    gpu.launch_func @k2::@rows blocks in (%c64, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%m : memref<64x128xf32>, %r : memref<64xf32>)
    gpu.launch_func @k3::@vec blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%a : memref<1024xf32>, %b : memref<1024xf32>)
    func.call @ga_cuda_gemm_f32(%f0, %f0, %f1, %c64, %c32, %c128, %p, %c0, %c128, %p, %c0, %c32, %p, %c0, %c32)
        : (i32, i32, i32, index, index, index, index, index, index, index, index, index, index, index, index) -> ()
    func.call @ga_cuda_gemm_batched2_f32_bf16in(%f0, %f1, %f0, %c16, %c16, %c8, %c2, %c8, %one, %f0, %p, %c0, %c8, %c8, %c128, %p, %c0, %c8, %c8, %c128, %p, %c0, %c16, %c256, %c256)
        : (i32, i32, i32, index, index, index, index, index, f32, i32, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index) -> ()
    return
  }

  gpu.module @k1 {
    gpu.func @scale(%in: memref<1024xf32>, %out: memref<1024xf32>) kernel {
      %block = gpu.block_id x
      %thread = gpu.thread_id x
      %c256 = arith.constant 256 : index
      %base = arith.muli %block, %c256 : index
      %i = arith.addi %base, %thread : index
      %x = memref.load %in[%i] : memref<1024xf32>
      %two = arith.constant 2.0 : f32
      %y = arith.mulf %x, %two : f32
      %z = arith.addf %y, %two : f32
      memref.store %z, %out[%i] : memref<1024xf32>
      gpu.return
    }
  }

  gpu.module @k2 {
    gpu.func @rows(%in: memref<64x128xf32>, %out: memref<64xf32>) kernel {
      %row = gpu.block_id x
      %lane = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c32 = arith.constant 32 : index
      %zero = arith.constant 0.0 : f32
      %inv = arith.constant 0.0078125 : f32
      %view = memref.subview %in[%row, 0] [1, 128] [1, 1]
          : memref<64x128xf32> to memref<128xf32, strided<[1], offset: ?>>
      %c128 = arith.constant 128 : index
      %sum = scf.for %col = %lane to %c128 step %c32 iter_args(%acc = %zero) -> f32 {
        %x = memref.load %view[%col] : memref<128xf32, strided<[1], offset: ?>>
        %next = arith.addf %acc, %x : f32
        scf.yield %next : f32
      }
      %total = gpu.subgroup_reduce add %sum : (f32) -> f32
      %mean = arith.mulf %total, %inv : f32
      %sq = scf.for %j = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> f32 {
        %jj = arith.muli %j, %c32 : index
        %col = arith.addi %jj, %lane : index
        %x = memref.load %in[%row, %col] : memref<64x128xf32>
        %d = arith.subf %x, %mean : f32
        %d2 = arith.mulf %d, %d : f32
        %next = arith.addf %acc, %d2 : f32
        scf.yield %next : f32
      }
      %var = gpu.subgroup_reduce add %sq : (f32) -> f32
      %first = arith.cmpi eq, %lane, %c0 : index
      scf.if %first {
        %scaled = arith.mulf %var, %inv : f32
        memref.store %scaled, %out[%row] : memref<64xf32>
      }
      gpu.return
    }
  }

  gpu.module @k3 {
    gpu.func @vec(%in: memref<1024xf32>, %out: memref<1024xf32>) kernel {
      %thread = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %i = arith.muli %thread, %c4 : index
      %x = vector.load %in[%i] : memref<1024xf32>, vector<4xf32>
      %y = arith.mulf %x, %x : vector<4xf32>
      vector.store %y, %out[%i] : memref<1024xf32>, vector<4xf32>
      gpu.return
    }
  }
}
