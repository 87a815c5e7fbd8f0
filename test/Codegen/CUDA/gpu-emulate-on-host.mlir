// RUN: ga-opt %s --split-input-file --ga-gpu-emulate-on-host --verify-diagnostics | FileCheck %s

// A kernel with a barrier runs, in each block, its first phase in every
// thread, then its second: two thread loop nests inside the block loops.
// The row index that the second phase uses is computed again there.
// CHECK-LABEL: func.func @two_phases
// CHECK:       scf.for %[[BZ:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:    scf.for %[[BY:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:      scf.for %[[BX:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:        scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK-NEXT:          scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK-NEXT:            scf.for %[[T1:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:              %[[R1:.*]] = arith.addi %[[BX]], %[[T1]]
// CHECK-NEXT:              memref.store %{{.*}}, %{{.*}}[%[[R1]]]
// CHECK:               scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK-NEXT:          scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK-NEXT:            scf.for %[[T2:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:              %[[R2:.*]] = arith.addi %[[BX]], %[[T2]]
// CHECK-NEXT:              memref.load %{{.*}}[%[[R2]]]
// CHECK-NOT:   gpu.barrier
// CHECK-NOT:   gpu.launch
func.func @two_phases(%a: memref<64xf32>, %b: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %row = arith.addi %bx, %tx : index
    memref.store %zero, %a[%row] : memref<64xf32>
    gpu.barrier
    %v = memref.load %a[%row] : memref<64xf32>
    memref.store %v, %b[%row] : memref<64xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @barrier_in_branch(%a: memref<64xf32>, %p: i1) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    scf.if %p {
      // expected-error @below {{ga-gpu-emulate-on-host: a barrier inside a loop or branch of a kernel cannot be emulated (only barriers in the kernel's body itself split it into phases)}}
      gpu.barrier
    }
    gpu.terminator
  }
  return
}

// -----

func.func @load_across_barrier(%a: memref<64xf32>, %b: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %a[%tx] : memref<64xf32>
    gpu.barrier
    // expected-error @below {{ga-gpu-emulate-on-host: uses a value from before a barrier that an operation with memory effects or regions computes (only pure values are computed again after a barrier)}}
    memref.store %v, %b[%tx] : memref<64xf32>
    gpu.terminator
  }
  return
}
