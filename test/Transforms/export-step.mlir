// ga-export-step: the C ABI of a step library on a lowered step, and the
// inputs it refuses.
// RUN: ga-opt --ga-pipeline="target=cpu" --ga-export-step %S/../Tools/Inputs/linear-ce.mlir | FileCheck %s
// RUN: ga-opt -split-input-file -verify-diagnostics --ga-export-step %s
// RUN: ga-opt --ga-pipeline="target=cpu" --ga-export-step %S/../Tools/Inputs/linear-ce-named.mlir | FileCheck %s --check-prefix=NAMED
// RUN: not ga-opt --ga-export-step="runtime=rocm" %s 2>&1 | FileCheck %s --check-prefix=RUNTIME
// RUNTIME: for the --runtime option: runtime must be cpu or cuda, got 'rocm'

// Named arguments (train.name, recorded through the lowering as
// train.argument_names) make a version 2 signature with name records.
// NAMED: @ga_step_signature_text("ga-step 2\0Aentry linear_ce\0Aranks 1\0Ainput 0 f32 4x3\0Ainput 1 f32 8x4\0Ainput 2 i64 8\0Aname 0 fc.weight\0Aname 1 x\0Aname 2 labels\0Aresult 0 f32 scalar loss

// The entry is no longer exported; the signature text names every argument
// and result.
// CHECK: llvm.func internal @linear_ce(
// CHECK: llvm.mlir.global internal constant @ga_step_signature_text("ga-step 1\0Aentry linear_ce\0Aranks 1\0Ainput 0 f32 4x3\0Ainput 1 f32 8x4\0Ainput 2 i64 8\0Aresult 0 f32 scalar loss\0Aresult 1 f32 4x3 gradient\0Aresult 2 i64 scalar aux\0A\00")
// CHECK: llvm.func @ga_step_signature() -> !llvm.ptr
// CHECK: llvm.func @ga_step_enter(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK: llvm.func @ga_step_leave(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK: llvm.func @ga_step_run(%[[IN:.+]]: !llvm.ptr, %[[OUT:.+]]: !llvm.ptr, %[[STATUS:.+]]: !llvm.ptr) -> i32
// CHECK:   %[[ENTER:.+]] = llvm.call @ga_step_enter(%{{.+}}, %[[IN]], %[[OUT]], %[[STATUS]])
// CHECK:   llvm.cond_br %{{.+}}, ^bb1, ^bb2(%[[ENTER]] : i32)
// CHECK: ^bb1:
// Argument #0 (tensor<4x3xf32>): its pointer twice, offset 0, sizes 4, 3,
// strides 3, 1.
// CHECK:   %[[P0ADDR:.+]] = llvm.getelementptr %[[IN]][0]
// CHECK:   %[[P0:.+]] = llvm.load %[[P0ADDR]] : !llvm.ptr -> !llvm.ptr
// CHECK:   %[[RES:.+]] = llvm.call @linear_ce(%[[P0]], %[[P0]],
// CHECK:   %[[SLOT:.+]] = llvm.alloca
// CHECK:   llvm.store %[[RES]], %[[SLOT]]
// CHECK:   %[[LEFT:.+]] = llvm.call @ga_step_leave(%{{.+}}, %[[SLOT]], %[[IN]], %[[OUT]], %[[STATUS]])
// CHECK:   llvm.br ^bb2(%[[LEFT]] : i32)
// CHECK: ^bb2(%[[RC:.+]]: i32):
// CHECK:   llvm.return %[[RC]] : i32

// A step without results hands the runtime a null results pointer.
module {
  llvm.func @no_results() attributes {train.signature = () -> ()} {
    llvm.return
  }
}

// -----

// expected-error @below {{ga-export-step: 0 lowered functions carry train.signature (lower the step with --ga-pipeline=target=cpu first)}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// expected-error @below {{ga-export-step: 2 lowered functions carry train.signature; choose one with entry=NAME}}
module {
  llvm.func @a() attributes {train.signature = () -> ()} {
    llvm.return
  }
  llvm.func @b() attributes {train.signature = () -> ()} {
    llvm.return
  }
}

// -----

module {
  // expected-error @below {{ga-export-step: the lowered arguments and results of @a are not the memref descriptors of its train.signature (a function lowered with another calling convention)}}
  llvm.func @a(%p: !llvm.ptr) attributes {train.signature = (tensor<4xf32>) -> ()} {
    llvm.return
  }
}

// -----

module {
  // expected-error @below {{ga-export-step: result #0 of @a has type i1; a step library returns statically shaped f32/f64/i32/i64 tensors}}
  llvm.func @a() -> i1 attributes {train.signature = () -> i1} {
    %0 = llvm.mlir.constant(true) : i1
    llvm.return %0 : i1
  }
}

// -----

module {
  llvm.func @a() attributes {train.signature = () -> ()} {
    llvm.return
  }
  // expected-error @below {{ga-export-step: the module already defines @ga_step_run, a name of the step library ABI}}
  llvm.func @ga_step_run() {
    llvm.return
  }
}
