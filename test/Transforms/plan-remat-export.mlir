// train-plan-remat's export-graph: the chosen plan's chain of units as a
// ga-remat graph, each unit as its run (its work; what a saved unit keeps)
// and its boundary alone (no work), with the memory the chain model gives
// the held values and the plan's figures; ga-remat reads it back. An
// unwritable path is an error that names it.
// RUN: ga-opt %s --train-plan-remat="memory-budget=20000 export-graph=%t.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s --check-prefix=GRAPH < %t.json
// RUN: ga-remat %t.json --budget 16604 --milp-max-nodes 0 | FileCheck %s --check-prefix=READ
// RUN: ga-remat %t.json --budget 16604 --milp --milp-max-nodes 20 --stage-memory=computed | FileCheck %s --check-prefix=START
// RUN: not ga-opt %s --train-plan-remat="memory-budget=20000 export-graph=%t.missing/graph.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNWRITABLE

// REMARK: remark: train-plan-remat: budget 20000 bytes; 7 units; {{.*}}(recomputed 25.8% of the forward work); planned peak 19268 bytes

// The budget less the model's offset at the chosen plan (3396 bytes);
// each run with the stage bytes of its adjoints (its values and what its
// backward pass adds) and the bytes the forward pass holds while it runs,
// as measured on the compiled step (train-plan-remat measure-units).
// GRAPH: "budget": 16604,
// GRAPH: "forward_cost": 67584,
// GRAPH: "input_bytes": 0,
// GRAPH: "microbatches": 1,
// The first unit is marked "save": its run is held, never recomputed; the
// chosen plan holds it ("checkpoint": ga-remat's warm start).
// GRAPH: "bytes": 2112,
// GRAPH-NEXT: "checkpoint": true,
// GRAPH-NEXT: "cost": 16896,
// GRAPH-NEXT: "forward_bytes": 6336,
// GRAPH-NEXT: "must_save": true,
// GRAPH-NEXT: "name": "u0.run",
// GRAPH-NEXT: "stage_bytes": 4356
// GRAPH: "bytes": 2048,
// GRAPH-NEXT: "cost": 0,
// GRAPH-NEXT: "inputs": [
// GRAPH-NEXT: "u0.run"
// GRAPH-NEXT: ],
// GRAPH-NEXT: "name": "u0"
// GRAPH: "inputs": [
// GRAPH-NEXT: "u0"
// GRAPH-NEXT: ],
// GRAPH-NEXT: "name": "u1.run"
// The last tanh is marked "recompute".
// GRAPH: "must_recompute": true,
// GRAPH-NEXT: "name": "u5.run"
// The last boundary is reversed where the loss runs: its stage holds the
// loss's bytes.
// GRAPH: "name": "u6",
// GRAPH-NEXT: "stage_bytes": 964
// GRAPH: "planned_cost": 17408,
// GRAPH: "planned_peak": 19268

// READ: nodes: 14
// READ: budget: 16604 bytes (input 0)
// READ: status: heuristic

// UNWRITABLE: error: train-plan-remat: cannot write export-graph '{{.*}}.missing/graph.json': {{.*}}

#id = affine_map<(i, j) -> (i, j)>

func.func @marked(%w: tensor<16x16xf32>, %x: tensor<32x16xf32>,
                 %labels: tensor<32xi64>) -> (tensor<f32>, tensor<16x16xf32>) {
  %loss, %gw = train.step params(%w : tensor<16x16xf32>)
      batch(%x, %labels : tensor<32x16xf32>, tensor<32xi64>)
      -> tensor<f32> grads(tensor<16x16xf32>) {
  ^bb0(%pw: tensor<16x16xf32>, %bx: tensor<32x16xf32>, %bl: tensor<32xi64>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<32x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<32x16xf32>) -> tensor<32x16xf32>
    %m1 = linalg.matmul {train.remat = "save"} ins(%bx, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %h1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m1 : tensor<32x16xf32>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = math.tanh %a : f32
      linalg.yield %t : f32
    } -> tensor<32x16xf32>
    %m2 = linalg.matmul ins(%h1, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %h2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m2 : tensor<32x16xf32>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = math.tanh %a : f32
      linalg.yield %t : f32
    } -> tensor<32x16xf32>
    %m3 = linalg.matmul ins(%h2, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %h3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"], train.remat = "recompute"} ins(%m3 : tensor<32x16xf32>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = math.tanh %a : f32
      linalg.yield %t : f32
    } -> tensor<32x16xf32>
    %logits = linalg.matmul ins(%h3, %pw : tensor<32x16xf32>, tensor<16x16xf32>) outs(%z : tensor<32x16xf32>) -> tensor<32x16xf32>
    %l, %n = train.cross_entropy mean %logits, %bl ignore_index = -100 : (tensor<32x16xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<i64>)
    train.yield %l : tensor<f32>
  }
  return %loss, %gw : tensor<f32>, tensor<16x16xf32>
}

// The plan's held values as ga-remat's warm start: replayed in the stage
// form, the chosen plan holds 19012 bytes in a stage, over the exported
// budget (the stage form is not the chain model: it counts a recomputed
// boundary beside its unit's run, and not the temporaries of a
// recomputation; the MILP's share is a reference, not a plan the planner
// could apply), so the solver starts from the greedy plan alone.
// START: stage_memory: computed
// START: checkpoints_cost: none (the nodes marked "checkpoint" do not fit: stage 5 (adjoint of node 8): holds 19012 bytes, over the budget of 16604)
// START: status: optimal
