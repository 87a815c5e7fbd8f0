// RUN: ga-opt %s --split-input-file --ga-gpu-offload-buffers="budget=1 min-bytes=0" --verify-diagnostics | FileCheck %s
// RUN: ga-opt %s --split-input-file --ga-gpu-offload-buffers="budget=0 min-bytes=0" | FileCheck %s --check-prefix=NONE
// RUN: ga-opt %s --split-input-file --ga-gpu-offload-buffers="budget=1 min-bytes=2048" --verify-diagnostics | FileCheck %s --check-prefix=NONE
// RUN: not ga-opt %s --split-input-file --ga-gpu-offload-buffers="budget=1 host-bandwidth=0" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: ga-opt %s --split-input-file --ga-gpu-offload-buffers="budget=1 min-bytes=0 host-bandwidth=0.0001 copies=hidden" --verify-diagnostics | FileCheck %s --check-prefix=NONE
// RUN: ga-opt %s --split-input-file --ga-gpu-offload-buffers="budget=1 min-bytes=0 host-bandwidth=0.0001" --verify-diagnostics | FileCheck %s --check-prefix=PRICED
// RUN: not ga-opt %s --split-input-file --ga-gpu-offload-buffers="budget=1 copies=free" 2>&1 | FileCheck %s --check-prefix=BADCOPIES

// NONE-NOT: ga_cuda_offload
// BAD: ga-gpu-offload-buffers: host-bandwidth and device-tflops must be positive
// BADCOPIES: for the --copies option: copies must be priced or hidden, got 'free'

#id = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// %a is written first and read last, through a view made before the
// stretch between: it leaves the device after its writer (the copy, then
// the free), a new buffer is allocated and copied back two operations
// before the reader (the work left covers the copy), the wait comes right
// before the reader, and the view is made again on the new buffer. %b and
// %c are read back to back: they stay.
// CHECK-DAG: func.func private @ga_cuda_offload(index, index) -> i64
// CHECK-DAG: func.func private @ga_cuda_reload(i64, index)
// CHECK-DAG: func.func private @ga_cuda_reload_wait(i64)
// CHECK-LABEL: func.func @saved
// CHECK-SAME: ga.host_offload = {buffers = 1 : i64, bytes = 1024 : i64, exposed_seconds = 0.000000e+00 : f64, exposed_work = 0.000000e+00 : f64}
// CHECK:      %[[A:.*]] = memref.alloc() : memref<256xf32>
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[A]] : memref<256xf32>)
// CHECK:      %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK-NEXT: %[[N:.*]] = arith.constant 1024 : index
// CHECK-NEXT: %[[H:.*]] = call @ga_cuda_offload(%[[P]], %[[N]]) : (index, index) -> i64
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NOT:  %[[A]] :
// CHECK:      memref.dealloc
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: %[[A2:.*]] = memref.alloc() : memref<256xf32>
// CHECK-NEXT: %[[Q:.*]] = memref.extract_aligned_pointer_as_index %[[A2]]
// CHECK-NEXT: %[[V2:.*]] = memref.expand_shape %[[A2]]
// CHECK-NEXT: call @ga_cuda_reload(%[[H]], %[[Q]]) : (i64, index) -> ()
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: call @ga_cuda_reload_wait(%[[H]]) : (i64) -> ()
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[V2]] : memref<16x16xf32>)
// CHECK:      memref.dealloc %[[A2]]
// CHECK-NOT:  ga_cuda_offload
// CHECK:      return
//
// At 0.0001 GB/s a copy takes 10.244 ms (with its 4 us of launch), and the
// stretch holds 7 kernels of 4 us: the copies do not hide and the default
// mode keeps %a (NONE above). Priced, %a still leaves the device, the
// reload comes right before its reader (no work is left to cover it), and
// the delay is the two copies, in turn on the copy stream, less the
// stretch's work: 20.488 ms - 28 us = 20.460 ms; the work the device does
// in that time at 50 TFLOP/s is 1.023e12 operations.
// PRICED-LABEL: func.func @saved
// PRICED-SAME: ga.host_offload = {buffers = 1 : i64, bytes = 1024 : i64, exposed_seconds = {{0\.02046(0000)?[0-9]*}} : f64, exposed_work = {{1023000000000(\.0*[0-9]*)?|1\.023(0*[0-9]*)?e\+12}} : f64}
// PRICED:      %[[H:.*]] = call @ga_cuda_offload
// PRICED-NEXT: memref.dealloc
// PRICED:      memref.dealloc
// PRICED-NEXT: linalg.fill
// PRICED-NEXT: linalg.fill
// PRICED-NEXT: linalg.fill
// PRICED-NEXT: %[[A2:.*]] = memref.alloc() : memref<256xf32>
// PRICED-NEXT: %[[Q:.*]] = memref.extract_aligned_pointer_as_index %[[A2]]
// PRICED-NEXT: %[[V2:.*]] = memref.expand_shape %[[A2]]
// PRICED-NEXT: call @ga_cuda_reload(%[[H]], %[[Q]]) : (i64, index) -> ()
// PRICED-NEXT: call @ga_cuda_reload_wait(%[[H]]) : (i64) -> ()
// PRICED-NEXT: linalg.generic {{.*}} ins(%[[V2]] : memref<16x16xf32>)
// PRICED-LABEL: func.func @escapes
// PRICED-NOT: ga_cuda_offload
func.func @saved(%in: memref<256xf32>, %out: memref<16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<256xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%in : memref<256xf32>) outs(%a : memref<256xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  %v = memref.expand_shape %a [[0, 1]] output_shape [16, 16]
      : memref<256xf32> into memref<16x16xf32>
  %b = memref.alloc() : memref<256xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<256xf32>)
  %c = memref.alloc() : memref<256xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<256xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : memref<256xf32>) outs(%c : memref<256xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%c : memref<256xf32>) outs(%b : memref<256xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.mulf %x, %y : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<256xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<256xf32>)
  linalg.fill ins(%zero : f32) outs(%b : memref<256xf32>)
  linalg.fill ins(%zero : f32) outs(%b : memref<256xf32>)
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%v : memref<16x16xf32>) outs(%out : memref<16x16xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  memref.dealloc %b : memref<256xf32>
  memref.dealloc %a : memref<256xf32>
  return
}

// -----

#id = affine_map<(d0) -> (d0)>

// A buffer the function returns, and one read in a loop's iteration
// arguments, are not followed: nothing moves.
// CHECK-LABEL: func.func @escapes
// CHECK-NOT: ga_cuda_offload
// CHECK: return
func.func @escapes(%in: memref<256xf32>) -> memref<256xf32> {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<256xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<256xf32>)
  %b = memref.alloc() : memref<256xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<256xf32>)
  linalg.fill ins(%zero : f32) outs(%b : memref<256xf32>)
  linalg.fill ins(%zero : f32) outs(%b : memref<256xf32>)
  linalg.fill ins(%zero : f32) outs(%b : memref<256xf32>)
  memref.dealloc %b : memref<256xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%in : memref<256xf32>) outs(%a : memref<256xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return %a : memref<256xf32>
}

// -----

// Before bufferization the pass cannot measure the step: refused, located.
// expected-error @+1 {{the memory model runs on bufferized functions; @tensors takes 'tensor<4xf32>'}}
func.func @tensors(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
