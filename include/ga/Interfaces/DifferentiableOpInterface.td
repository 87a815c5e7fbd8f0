//===- DifferentiableOpInterface.td - Adjoints of operations -*- tablegen -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_INTERFACES_DIFFERENTIABLEOPINTERFACE_TD
#define GA_INTERFACES_DIFFERENTIABLEOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::ga";
  let description = [{
    The one source of truth for the adjoint of an operation: how
    `train-differentiate` builds it, and which forward values it reads
    (what a rematerialization planner must keep or recompute).

    Operations get it through external models, registered beside the
    bufferization models (`ga::registerDifferentiableOpInterfaceExternalModels`,
    called by `ga::registerGaDialects` and by the passes that differentiate):
    `linalg.generic`, every named linalg structured op (answered through the
    `LinalgOp` interface; the sweep generalizes them before it builds their
    adjoints), the `tensor` slicing and reshaping ops, `train.cross_entropy`,
    `train.checkpoint` and `train.stop_gradient` (no adjoint reaches it). An
    operation without the interface and without float tensor operands
    (constants, label arithmetic) needs no adjoint; one with float tensor
    operands on a path from the parameters to the loss is an error.
  }];
  let methods = [
    InterfaceMethod<[{
        Adds the contributions of this operation to the adjoints of its
        operands in `sweep`, from the adjoints of its results, building the
        backward code at the sweep's insertion point. Fails with an error on
        the operation when it cannot be differentiated.
      }],
      "::llvm::LogicalResult", "buildAdjoint",
      (ins "::ga::ad::Sweep &":$sweep)>,
    InterfaceMethod<[{
        Which operands and results of this operation its adjoint reads
        (one flag each), and whether it has an adjoint at all.
      }],
      "::ga::AdjointNeeds", "getAdjointNeeds", (ins)>,
  ];
}

#endif // GA_INTERFACES_DIFFERENTIABLEOPINTERFACE_TD
