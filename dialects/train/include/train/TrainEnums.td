//===- TrainEnums.td - Enumerations of the train dialect ---*- tablegen -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRAIN_TRAINENUMS_TD
#define GA_TRAIN_TRAINENUMS_TD

include "mlir/IR/EnumAttr.td"

def Train_ReductionAttr : I32EnumAttr<"Reduction",
    "how a per-token loss is reduced", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Sum", 1, "sum">,
      I32EnumAttrCase<"Mean", 2, "mean">
    ]> {
  let cppNamespace = "::ga::train";
}

def Train_ReduceKindAttr : I32EnumAttr<"ReduceKind",
    "how values are combined across data-parallel ranks", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Avg", 1, "avg">
    ]> {
  let cppNamespace = "::ga::train";
}

#endif // GA_TRAIN_TRAINENUMS_TD
