// RUN: ga-opt %s --split-input-file --ga-gpu-device-code --verify-diagnostics | FileCheck %s
// RUN: ga-opt %s --split-input-file --ga-gpu-device-code="fuse-single-threads=false" --verify-diagnostics | FileCheck %s --check-prefix=APART

// Host code left after convert-parallel-loops-to-gpu: a sequential reduction
// loop goes into a kernel of one thread; a scalar the host branches on is
// read through the runtime (the buffer's aligned pointer and the element's
// linear offset); the host call in the branch stays on the host, the load
// before it is read through the runtime too; a load nobody uses goes.
// CHECK-LABEL: func.func private @ga_cuda_read_i64(index, index) -> i64
// CHECK-LABEL: func.func @check
// CHECK-NOT: memref.load %{{.*}}[%c3]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE:.*]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]])
// CHECK-NEXT: scf.for
// CHECK: gpu.terminator
// CHECK: %[[BASE:.*]], %[[OFFSET:.*]] = memref.extract_strided_metadata %[[FIRST:.*]] : memref<i64>
// CHECK: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %[[FIRST]]
// CHECK: %[[VALUE:.*]] = call @ga_cuda_read_i64(%[[PTR]], %[[OFFSET]])
// CHECK: scf.if
// CHECK: %{{.*}}, %[[OFF2:.*]], %{{.*}}, %[[STRIDE:.*]] = memref.extract_strided_metadata %arg0
// CHECK: arith.muli %{{.*}}, %[[STRIDE]]
// CHECK: call @ga_cuda_read_i64
// CHECK: call @report
func.func private @report(i64)
func.func @check(%labels: memref<16xi64>, %first: memref<i64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  %unused = memref.load %labels[%c3] : memref<16xi64>
  scf.for %i = %c0 to %c16 step %c1 {
    %l = memref.load %labels[%i] : memref<16xi64>
    %m = memref.load %first[] : memref<i64>
    %s = arith.minsi %l, %m : i64
    memref.store %s, %first[] : memref<i64>
  }
  %v = memref.load %first[] : memref<i64>
  %zero = arith.constant 0 : i64
  %bad = arith.cmpi slt, %v, %zero : i64
  scf.if %bad {
    %i = arith.index_cast %v : i64 to index
    %l = memref.load %labels[%i] : memref<16xi64>
    func.call @report(%l) : (i64) -> ()
  }
  return
}

// -----

// A constant a kernel reads is re-created inside the kernel, so that
// outlining copies the global into the device module.
// CHECK-LABEL: func.func @constant
// CHECK: gpu.launch
// CHECK-NEXT: %[[G:.*]] = memref.get_global @one
// CHECK: memref.load %[[G]][]
memref.global "private" constant @one : memref<f32> = dense<1.0>
func.func @constant(%out: memref<f32>) {
  %g = memref.get_global @one : memref<f32>
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
             threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    %v = memref.load %g[] : memref<f32>
    memref.store %v, %out[] : memref<f32>
    gpu.terminator
  }
  return
}

// -----

// A collective takes device buffers on the CUDA runtime: the call goes to
// its staged version; step memory handed to any other host function is
// refused.
// CHECK-LABEL: func.func private @ga_cuda_all_reduce_f32(memref<*xf32>, i32)
// CHECK-NOT: @ga_all_reduce_f32
// CHECK-LABEL: func.func @collective
// CHECK: call @ga_cuda_all_reduce_f32(%{{.*}}, %{{.*}}) : (memref<*xf32>, i32) -> ()
func.func private @ga_all_reduce_f32(memref<*xf32>, i32)
func.func @collective(%g: memref<4xf32>) {
  %sum = arith.constant 0 : i32
  %u = memref.cast %g : memref<4xf32> to memref<*xf32>
  func.call @ga_all_reduce_f32(%u, %sum) : (memref<*xf32>, i32) -> ()
  return
}

// -----

// The fused attention's calls go to the CUDA runtime's (cuDNN's), which
// takes bfloat16 operands; a float32 call has no device form.
// CHECK-LABEL: func.func @fused_attention
// CHECK: call @ga_cuda_attention_fwd_bf16(
func.func private @ga_attention_fwd_bf16(memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, memref<*xf32>, f64, i32, f64)
func.func @fused_attention(%q: memref<1x4x1x8xbf16>, %l: memref<1x1x4xf32>) {
  %s = arith.constant 0.5 : f64
  %c = arith.constant 1 : i32
  %u = memref.cast %q : memref<1x4x1x8xbf16> to memref<*xbf16>
  %v = memref.cast %l : memref<1x1x4xf32> to memref<*xf32>
  func.call @ga_attention_fwd_bf16(%u, %u, %u, %u, %v, %s, %c, %s) : (memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, memref<*xf32>, f64, i32, f64) -> ()
  return
}

// -----

func.func private @ga_attention_fwd_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, f64, i32, f64)
func.func @fused_attention_f32(%q: memref<1x4x1x8xf32>, %l: memref<1x1x4xf32>) {
  %s = arith.constant 0.5 : f64
  %c = arith.constant 1 : i32
  %u = memref.cast %q : memref<1x4x1x8xf32> to memref<*xf32>
  %v = memref.cast %l : memref<1x1x4xf32> to memref<*xf32>
  // expected-error @+1 {{ga-gpu-device-code: the CUDA runtime's fused attention takes bfloat16 operands without a key mask or a cotangent of lse (ga_attention_fwd_bf16, ga_attention_bwd_bf16), not @ga_attention_fwd_f32}}
  func.call @ga_attention_fwd_f32(%u, %u, %u, %u, %v, %s, %c, %s) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, f64, i32, f64) -> ()
  return
}

// -----

func.func private @print_buffer(memref<4xf32>)
func.func @host(%g: memref<4xf32>) {
  // expected-error @+1 {{ga-gpu-device-code: the call to @print_buffer passes step memory to host code; the CUDA target runs every operation on the device}}
  func.call @print_buffer(%g) : (memref<4xf32>) -> ()
  return
}

// -----

// A host read of an element type the runtime does not read is refused.
func.func @bool(%m: memref<i1>) -> i1 {
  // expected-error @+1 {{ga-gpu-device-code: the host reads an element of type 'i1' from step memory}}
  %v = memref.load %m[] : memref<i1>
  return %v : i1
}

// -----

// A scatter-add whose innermost loop touches one element per iteration (the
// embedding gradient) runs one thread per innermost iteration, each running
// the outer loops in order; a sequential sum over the innermost index stays
// in one thread.
// CHECK-LABEL: func.func @scatter
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %c2, {{.*}}) threads(%[[TX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %c256,
// CHECK-NEXT: scf.for %[[T:[a-z0-9]+]] =
// CHECK-NEXT: %[[BI:.*]] = arith.muli %[[BX]], %{{.*}}
// CHECK-NEXT: %[[I:.*]] = arith.addi %[[BI]], %[[TX]]
// CHECK: scf.if
// CHECK: memref.load %{{.*}}[%[[T]]] : memref<8xi64>
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<32x300xf32>
// CHECK-LABEL: func.func @sum
// CHECK: gpu.launch
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for
func.func @scatter(%tokens: memref<8xi64>, %dx: memref<8x300xf32>, %grad: memref<32x300xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c300 = arith.constant 300 : index
  scf.for %t = %c0 to %c8 step %c1 {
    scf.for %d = %c0 to %c300 step %c1 {
      %tok = memref.load %tokens[%t] : memref<8xi64>
      %row = arith.index_cast %tok : i64 to index
      %g = memref.load %grad[%row, %d] : memref<32x300xf32>
      %x = memref.load %dx[%t, %d] : memref<8x300xf32>
      %s = arith.addf %g, %x : f32
      memref.store %s, %grad[%row, %d] : memref<32x300xf32>
    }
  }
  return
}
func.func @sum(%x: memref<8x300xf32>, %acc: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c300 = arith.constant 300 : index
  scf.for %t = %c0 to %c8 step %c1 {
    scf.for %d = %c0 to %c300 step %c1 {
      %a = memref.load %acc[%t] : memref<8xf32>
      %v = memref.load %x[%t, %d] : memref<8x300xf32>
      %s = arith.addf %a, %v : f32
      memref.store %s, %acc[%t] : memref<8xf32>
    }
  }
  return
}

// -----

// The runtime's read function clashes with a symbol of the module: an error
// on the host load that needs it, not a call of the wrong function.
func.func private @ga_cuda_read_i64(index) -> i64
func.func @clash(%first: memref<i64>) -> i64 {
  // expected-error @+1 {{the runtime function @ga_cuda_read_i64 : '(index, index) -> i64' clashes with a symbol of that name in the module}}
  %v = memref.load %first[] : memref<i64>
  return %v : i64
}

// -----

// Host code left after the mapping (a loss's sum, a token count, a scalar
// store), each in its own single-thread kernel, runs as one kernel, in the
// same order; the buffer freed between them (1,024 bytes, where the
// allocation between is 4 bytes: another block size of the caching
// allocator) is freed after it. With fuse-single-threads=false, three
// kernels.
// CHECK-LABEL: func.func @scalars
// CHECK:       memref.alloc() : memref<f32>
// CHECK:       gpu.launch
// CHECK-NEXT:    scf.for
// CHECK:           memref.store %{{.*}}, %[[LOSS:.*]][] : memref<f32>
// CHECK:         scf.for
// CHECK:           memref.store %{{.*}}, %{{.*}}[] : memref<i64>
// CHECK:         memref.store %{{.*}}, %[[LOSS]][] : memref<f32>
// CHECK-NEXT:    gpu.terminator
// CHECK-NEXT:  }
// CHECK-NEXT:  memref.dealloc %{{.*}} : memref<256xf32>
// CHECK-NOT:   gpu.launch
// APART-LABEL: func.func @scalars
// APART-COUNT-3: gpu.launch
func.func @scalars(%x: memref<256xf32>, %loss: memref<f32>, %count: memref<i64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %one = arith.constant 1 : i64
  %scale = arith.constant 0.5 : f32
  %copy = memref.alloc() : memref<256xf32>
  memref.copy %x, %copy : memref<256xf32> to memref<256xf32>
  scf.for %i = %c0 to %c256 step %c1 {
    %a = memref.load %loss[] : memref<f32>
    %v = memref.load %copy[%i] : memref<256xf32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %loss[] : memref<f32>
  }
  memref.dealloc %copy : memref<256xf32>
  %unused = memref.alloc() : memref<f32>
  scf.for %i = %c0 to %c256 step %c1 {
    %n = memref.load %count[] : memref<i64>
    %m = arith.addi %n, %one : i64
    memref.store %m, %count[] : memref<i64>
  }
  memref.store %scale, %loss[] : memref<f32>
  return
}

// -----

// An allocation between two single-thread kernels that could take the block
// freed between them (both 512 bytes in the caching allocator): two
// kernels.
// CHECK-LABEL: func.func @same_block
// CHECK-COUNT-2: gpu.launch
// CHECK-NOT:   gpu.launch
func.func @same_block(%x: memref<16xf32>, %loss: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %scale = arith.constant 0.5 : f32
  %copy = memref.alloc() : memref<16xf32>
  memref.copy %x, %copy : memref<16xf32> to memref<16xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    %a = memref.load %loss[] : memref<f32>
    %v = memref.load %copy[%i] : memref<16xf32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %loss[] : memref<f32>
  }
  memref.dealloc %copy : memref<16xf32>
  %unused = memref.alloc() : memref<f32>
  memref.store %scale, %loss[] : memref<f32>
  return
}
