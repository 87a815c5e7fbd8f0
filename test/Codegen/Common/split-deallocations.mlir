// RUN: ga-opt %s --split-input-file --ga-split-deallocations | FileCheck %s
// RUN: ga-opt %s --split-input-file --ga-split-deallocations --buffer-deallocation-simplification --bufferization-lower-deallocations --canonicalize | FileCheck %s --check-prefix=LOWERED

func.func private @use(memref<4xf32>)

// A fresh buffer that nothing returned can alias is freed on its own; the
// returned one stays with its retained value, and the ownership result is
// the remaining operation's.
// CHECK-LABEL: func.func @split
// CHECK:      %[[A:.*]] = memref.alloc()
// CHECK:      %[[B:.*]] = memref.alloc()
// CHECK:      %[[C:.*]] = memref.alloc()
// CHECK:      %[[T:.*]] = arith.constant true
// CHECK-NEXT: bufferization.dealloc (%[[A]] : memref<4xf32>) if (%[[T]]){{$}}
// CHECK-NEXT: bufferization.dealloc (%[[C]] : memref<4xf32>) if (%[[T]]){{$}}
// CHECK-NEXT: %[[R:.*]] = bufferization.dealloc (%[[B]] : memref<4xf32>) if (%{{.*}}) retain (%[[B]] : memref<4xf32>)
// CHECK-NEXT: return %[[B]], %[[R]]
// LOWERED-LABEL: func.func @split
// LOWERED-DAG: memref.dealloc %{{.*}} : memref<4xf32>
// LOWERED-DAG: memref.dealloc %{{.*}} : memref<4xf32>
// LOWERED-NOT: bufferization.dealloc
func.func @split() -> (memref<4xf32>, i1) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  %c = memref.alloc() : memref<4xf32>
  call @use(%a) : (memref<4xf32>) -> ()
  call @use(%c) : (memref<4xf32>) -> ()
  %r = bufferization.dealloc (%a, %b, %c : memref<4xf32>, memref<4xf32>, memref<4xf32>) if (%true, %true, %true) retain (%b : memref<4xf32>)
  return %b, %r : memref<4xf32>, i1
}

// -----

func.func private @use(memref<4xf32>)

// A buffer returned through a view is retained: it stays. A buffer freed
// under a condition stays too.
// CHECK-LABEL: func.func @stays
// CHECK:      %[[A:.*]] = memref.alloc()
// CHECK:      %[[B:.*]] = memref.alloc()
// CHECK:      %[[V:.*]] = memref.subview %[[A]]
// CHECK-NEXT: %{{.*}} = bufferization.dealloc (%[[A]], %[[B]] : memref<4xf32>, memref<4xf32>) if (%{{.*}}, %arg0) retain (%[[V]] :
// CHECK-NOT:  bufferization.dealloc
func.func @stays(%cond: i1) -> (memref<2xf32, strided<[1], offset: 1>>, i1) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  call @use(%b) : (memref<4xf32>) -> ()
  %v = memref.subview %a[1] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1], offset: 1>>
  %r = bufferization.dealloc (%a, %b : memref<4xf32>, memref<4xf32>) if (%true, %cond) retain (%v : memref<2xf32, strided<[1], offset: 1>>)
  return %v, %r : memref<2xf32, strided<[1], offset: 1>>, i1
}

// -----

func.func private @use(memref<4xf32>)

// Two memrefs of one allocation (a cast of it) might free it twice if taken
// apart: both stay. A memref of unknown origin (an argument) keeps the whole
// operation as it is.
// CHECK-LABEL: func.func @aliases
// CHECK:      bufferization.dealloc (%{{.*}}, %{{.*}} : memref<4xf32>, memref<?xf32>) if
// CHECK-NOT:  bufferization.dealloc
// CHECK-LABEL: func.func @unknown
// CHECK:      bufferization.dealloc (%arg0, %{{.*}} : memref<4xf32>, memref<4xf32>) if
// CHECK-NOT:  bufferization.dealloc
func.func @aliases() {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %d = memref.cast %a : memref<4xf32> to memref<?xf32>
  bufferization.dealloc (%a, %d : memref<4xf32>, memref<?xf32>) if (%true, %true)
  return
}
func.func @unknown(%arg0: memref<4xf32>, %own: i1) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  call @use(%a) : (memref<4xf32>) -> ()
  bufferization.dealloc (%arg0, %a : memref<4xf32>, memref<4xf32>) if (%own, %true)
  return
}

// -----

func.func private @use(memref<4xf32>)

// A retained loop result might be any buffer the loop yields: the analysis
// says which. %a is yielded and stays; %b is not and goes on its own.
// CHECK-LABEL: func.func @loop
// CHECK:      %[[A:.*]] = memref.alloc()
// CHECK:      %[[B:.*]] = memref.alloc()
// CHECK:      %[[L:.*]] = scf.for
// CHECK:      bufferization.dealloc (%[[B]] : memref<4xf32>) if (%{{.*}}){{$}}
// CHECK-NEXT: bufferization.dealloc (%[[A]] : memref<4xf32>) if (%{{.*}}) retain (%[[L]] : memref<4xf32>)
func.func @loop(%n: index) -> memref<4xf32> {
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  call @use(%b) : (memref<4xf32>) -> ()
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a) -> (memref<4xf32>) {
    func.call @use(%x) : (memref<4xf32>) -> ()
    scf.yield %x : memref<4xf32>
  }
  %r = bufferization.dealloc (%a, %b : memref<4xf32>, memref<4xf32>) if (%true, %true) retain (%l : memref<4xf32>)
  return %l : memref<4xf32>
}
