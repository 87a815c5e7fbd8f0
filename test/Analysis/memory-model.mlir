// RUN: ga-opt %s --split-input-file --test-train-memory-model -verify-diagnostics -o /dev/null

// Bytes as the runtime counts them: the elements plus the alignment (the
// lowering over-allocates by it to align the pointer).
// expected-remark@+1 {{memory model: peak 160 bytes, 3 allocations, 48 bytes returned}}
func.func @straight() -> memref<2x3xf64> {
  // expected-note@+1 {{alive at the peak: 128 bytes in 1 buffer}}
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  // expected-note@+2 {{the peak is reached at this allocation}}
  // expected-note@+1 {{alive at the peak: 32 bytes in 1 buffer}}
  %b = memref.alloc() : memref<4xi64>
  memref.dealloc %a : memref<16xf32>
  %c = memref.alloc() : memref<2x3xf64>
  memref.dealloc %b : memref<4xi64>
  return %c : memref<2x3xf64>
}

// -----

// Loops run their trip counts; calls run their callees.
func.func private @kernel(%t: memref<10xf32>) {
  // expected-note@+2 {{the peak is reached at this allocation}}
  // expected-note@+1 {{alive at the peak: 32 bytes in 1 buffer}}
  %s = memref.alloc() : memref<8xf32>
  memref.dealloc %s : memref<8xf32>
  return
}

// expected-remark@+1 {{memory model: peak 72 bytes, 8 allocations, 0 bytes returned}}
func.func @loop() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    // expected-note@+1 {{alive at the peak: 40 bytes in 1 buffer}}
    %t = memref.alloc() : memref<10xf32>
    func.call @kernel(%t) : (memref<10xf32>) -> ()
    memref.dealloc %t : memref<10xf32>
  }
  return
}

// -----

// Ownership carried by a loop, as the deallocation pipeline writes it: the
// first iteration does not own its buffer, the later ones free the previous
// iteration's. Views belong to the buffer they view.
// expected-remark@+1 {{memory model: peak 48 bytes, 4 allocations, 0 bytes returned}}
func.func @ownership() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %false = arith.constant false
  %true = arith.constant true
  // expected-note@+1 {{alive at the peak: 16 bytes in 1 buffer}}
  %init = memref.alloc() : memref<4xf32>
  %cast = memref.cast %init : memref<4xf32> to memref<4xf32, strided<[?], offset: ?>>
  %r:2 = scf.for %i = %c0 to %c3 step %c1 iter_args(%x = %cast, %own = %false) -> (memref<4xf32, strided<[?], offset: ?>>, i1) {
    // expected-note@+2 {{the peak is reached at this allocation}}
    // expected-note@+1 {{alive at the peak: 32 bytes in 2 buffers}}
    %n = memref.alloc() : memref<4xf32>
    memref.copy %x, %n : memref<4xf32, strided<[?], offset: ?>> to memref<4xf32>
    %base, %offset, %size, %stride = memref.extract_strided_metadata %x : memref<4xf32, strided<[?], offset: ?>> -> memref<f32>, index, index, index
    scf.if %own {
      memref.dealloc %base : memref<f32>
    }
    %nc = memref.cast %n : memref<4xf32> to memref<4xf32, strided<[?], offset: ?>>
    scf.yield %nc, %true : memref<4xf32, strided<[?], offset: ?>>, i1
  }
  memref.dealloc %init : memref<4xf32>
  %base, %offset, %size, %stride = memref.extract_strided_metadata %r#0 : memref<4xf32, strided<[?], offset: ?>> -> memref<f32>, index, index, index
  scf.if %r#1 {
    memref.dealloc %base : memref<f32>
  }
  return
}

// -----

// A condition known only at run time: the then-branch frees what the
// function owns, and the remark says so.
// expected-remark@+1 {{memory model: peak 16 bytes, 1 allocations, 0 bytes returned (ownership assumed at run-time conditions)}}
func.func @unknown(%c: i1) {
  // expected-note@+2 {{the peak is reached at this allocation}}
  // expected-note@+1 {{alive at the peak: 16 bytes in 1 buffer}}
  %a = memref.alloc() : memref<4xf32>
  scf.if %c {
    memref.dealloc %a : memref<4xf32>
  }
  return
}

// -----

func.func @dynamic(%n: index) {
  // expected-error@+1 {{the memory model needs static allocation sizes; this one allocates 'memref<?xf32>'}}
  %a = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %a : memref<?xf32>
  return
}

// -----

func.func @argument(%a: memref<4xf32>) {
  // expected-error@+1 {{the memory model does not know the buffer this deallocates (not allocated by the function)}}
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

func.func @twice() {
  // expected-note@+1 {{allocated here}}
  %a = memref.alloc() : memref<4xf32>
  %v = memref.cast %a : memref<4xf32> to memref<?xf32>
  memref.dealloc %a : memref<4xf32>
  // expected-error@+1 {{the memory model sees this buffer freed twice}}
  memref.dealloc %v : memref<?xf32>
  return
}

// -----

// A loop bounded by its enclosing loop's induction variable (a causal
// attention's key tiles up to its query tile): run for each of its values,
// 0 + 1 + 2 + 3 = 6 allocations of the inner loop, 4 of the outer.
// expected-remark@+1 {{memory model: peak 56 bytes, 10 allocations, 0 bytes returned}}
func.func @triangle() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c4 step %c1 {
    // expected-note@+1 {{alive at the peak: 40 bytes in 1 buffer}}
    %t = memref.alloc() : memref<10xf32>
    %twice = arith.muli %i, %c2 : index
    %end = arith.divui %twice, %c2 : index
    %bound = arith.minui %end, %c8 : index
    scf.for %j = %c0 to %bound step %c1 {
      // expected-note@+2 {{the peak is reached at this allocation}}
      // expected-note@+1 {{alive at the peak: 16 bytes in 1 buffer}}
      %u = memref.alloc() : memref<4xf32>
      memref.dealloc %u : memref<4xf32>
    }
    memref.dealloc %t : memref<10xf32>
  }
  return
}

// -----

func.func @bounds(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error@+1 {{the memory model needs bounds it can compute (constants, enclosing loops' induction variables, index arithmetic of them) on a loop that allocates}}
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.alloc() : memref<4xf32>
    memref.dealloc %a : memref<4xf32>
  }
  return
}

// -----

func.func @while(%c: i1) {
  // expected-error@+1 {{the memory model does not follow the allocations inside 'scf.while'}}
  scf.while : () -> () {
    %a = memref.alloc() : memref<4xf32>
    memref.dealloc %a : memref<4xf32>
    scf.condition(%c)
  } do {
    scf.yield
  }
  return
}
