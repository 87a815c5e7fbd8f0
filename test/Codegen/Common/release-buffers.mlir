// RUN: ga-opt %s --split-input-file --ga-release-buffers | FileCheck %s

func.func private @use(memref<16xf32>)
func.func private @use_view(memref<4x4xf32>)

// A buffer is freed right after its last use, through its views; one used
// inside a loop is freed after the loop.
// CHECK-LABEL: func.func @early
// CHECK:      %[[A:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: call @use(%[[A]])
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: %[[V:.*]] = memref.expand_shape %[[B]]
// CHECK-NEXT: scf.for
// CHECK-NEXT:   call @use_view(%[[V]])
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: %[[C:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK-NEXT: call @use(%arg0)
// CHECK-NEXT: return
func.func @early(%arg0: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<16xf32>
  call @use(%a) : (memref<16xf32>) -> ()
  %b = memref.alloc() : memref<16xf32>
  %v = memref.expand_shape %b [[0, 1]] output_shape [4, 4] : memref<16xf32> into memref<4x4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    func.call @use_view(%v) : (memref<4x4xf32>) -> ()
  }
  %c = memref.alloc() : memref<16xf32>
  call @use(%arg0) : (memref<16xf32>) -> ()
  memref.dealloc %a : memref<16xf32>
  memref.dealloc %b : memref<16xf32>
  memref.dealloc %c : memref<16xf32>
  return
}

// -----

func.func private @use(memref<16xf32>)

// A buffer whose pointer is taken (an ownership check compares it) or that
// a loop carries keeps its deallocation where it is.
// CHECK-LABEL: func.func @kept
// CHECK:      %[[A:.*]] = memref.alloc()
// CHECK-NEXT: memref.extract_aligned_pointer_as_index %[[A]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc()
// CHECK:      scf.for
// CHECK:      %[[S:.*]] = memref.alloc()
// CHECK-NEXT: call @use(%[[S]])
// CHECK-NEXT: memref.dealloc %[[S]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: return
func.func @kept() -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<16xf32>
  %p = memref.extract_aligned_pointer_as_index %a : memref<16xf32> -> index
  %b = memref.alloc() : memref<16xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%x = %b) -> memref<16xf32> {
    scf.yield %x : memref<16xf32>
  }
  %s = memref.alloc() : memref<16xf32>
  call @use(%s) : (memref<16xf32>) -> ()
  memref.dealloc %a : memref<16xf32>
  memref.dealloc %b : memref<16xf32>
  memref.dealloc %s : memref<16xf32>
  return %p : index
}

// -----

func.func private @fill(memref<16xf32>)

// The copy of a dying buffer into a fresh one for the result goes: the
// buffer itself is returned.
// CHECK-LABEL: func.func @result
// CHECK:      %[[A:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
// CHECK-NEXT: call @fill(%[[A]])
// CHECK-NEXT: return %[[A]]
func.func @result() -> memref<16xf32> {
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  call @fill(%a) : (memref<16xf32>) -> ()
  %b = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  memref.copy %a, %b : memref<16xf32> to memref<16xf32>
  memref.dealloc %a : memref<16xf32>
  return %b : memref<16xf32>
}

// -----

func.func private @fill(memref<16xf32>)

// Not when the source is used after the copy, nor when the fresh buffer is
// less aligned than it must be.
// CHECK-LABEL: func.func @copies_kept
// CHECK:      memref.copy
// CHECK:      memref.copy
// CHECK:      return
func.func @copies_kept() -> (memref<16xf32>, memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  call @fill(%a) : (memref<16xf32>) -> ()
  %b = memref.alloc() : memref<16xf32>
  memref.copy %a, %b : memref<16xf32> to memref<16xf32>
  call @fill(%a) : (memref<16xf32>) -> ()
  memref.dealloc %a : memref<16xf32>
  %c = memref.alloc() : memref<16xf32>
  call @fill(%c) : (memref<16xf32>) -> ()
  %d = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  memref.copy %c, %d : memref<16xf32> to memref<16xf32>
  memref.dealloc %c : memref<16xf32>
  return %b, %d : memref<16xf32>, memref<16xf32>
}
