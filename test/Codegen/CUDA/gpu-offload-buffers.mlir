// RUN: ga-opt %s --split-input-file --ga-gpu-offload-buffers="budget=1 min-bytes=0" --verify-diagnostics | FileCheck %s
// RUN: ga-opt %s --split-input-file --ga-gpu-offload-buffers="budget=0 min-bytes=0" | FileCheck %s --check-prefix=NONE
// RUN: ga-opt %s --split-input-file --ga-gpu-offload-buffers="budget=1 min-bytes=2048" --verify-diagnostics | FileCheck %s --check-prefix=NONE
// RUN: not ga-opt %s --split-input-file --ga-gpu-offload-buffers="budget=1 host-bandwidth=0" 2>&1 | FileCheck %s --check-prefix=BAD

// NONE-NOT: ga_cuda_offload
// BAD: ga-gpu-offload-buffers: host-bandwidth and device-tflops must be positive

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
